"""scripts/derive-kernel-profile.py: a derivation written to a copy of the A100 profile runs the
published call at the published rates (checked against the rates, not the script's own factors),
--check accepts what it wrote and refuses a changed file (exit 1), --keep keeps the target's own
fields, and bad input gets one line naming the flag and exit code 2, with the target untouched.
Run by CTest: test_derive_kernel_profile.py STRIPESIM SOURCE_DIR."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

stripesim, source = sys.argv[1], sys.argv[2]
script = os.path.join(source, "scripts", "derive-kernel-profile.py")
h100 = os.path.join(source, "configs", "kernels", "h100", "fa2.json")
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


def run(*flags):
    return subprocess.run([sys.executable, script, "--stripesim", stripesim, *flags], capture_output=True, text=True)


def published_rates(target):
    """TFLOP/s, forward and backward, the derived profile gives a 16k-token call of 16 heads of 128
    on an A100 (unmasked)."""
    time_us = {}
    for p in ("fwd", "fwdbwd"):
        out = subprocess.run([stripesim, "simulate", "--hardware", "a100", "--kernel", target, "-N", "1", "-n", "16k",
                              "--heads", "16", "--mask", "bidirectional", "--topology", "ideal", "--pass", p,
                              "--layouts", "contiguous", "--summary-only", "--format", "json"], capture_output=True, text=True)
        time_us[p] = json.loads(out.stdout)["results"][0]["time_us"]
    flop = 4.0 * 16384 * 16384 * 16 * 128
    return flop / time_us["fwd"] / 1e6, 2.5 * flop / (time_us["fwdbwd"] - time_us["fwd"]) / 1e6


with tempfile.TemporaryDirectory() as tmp:
    target = os.path.join(tmp, "a100-fa2.json")
    shutil.copy(os.path.join(source, "configs", "kernels", "a100", "fa2.json"), target)
    rates = ["--hardware", "a100", "--call", "-n 16k --heads 16", "--forward-tflops", "200", "--backward-tflops", "150"]
    written = run("--from", h100, "--target", target, *rates)
    expect(written.returncode == 0 and written.stdout.startswith("forward x"), f"derive: {written.returncode} {written.stderr}")
    forward, backward = published_rates(target)
    expect(abs(forward - 200) < 0.01, f"forward rate {forward}, want 200")
    expect(abs(backward - 150) < 0.01, f"backward rate {backward}, want 150")
    derived, shipped = json.load(open(target)), json.load(open(h100))
    expect(derived["hardware"] == "a100-80gb" and derived["calibrated"] is False and "fit" not in derived,
           "the target's own fields kept, marked uncalibrated, no fit record")
    expect(derived["blocks_per_sm"] == shipped["blocks_per_sm"] and derived["merge"] == shipped["merge"], "the source's shape")
    expect(run("--check", "--from", h100, "--target", target, *rates).returncode == 0, "--check refuses what it wrote")
    expect(run("--check", "--from", h100, "--target", target, *rates[:-1], "151").returncode == 1, "--check accepts a change")
    before = open(target).read()
    for flags, names in [(["--from", os.path.join(tmp, "none.json"), "--target", target, *rates], "--from"),
                         (["--from", os.path.join(source, "README.md"), "--target", target, *rates], "--from"),
                         (["--from", h100, "--target", target, "--hardware", "a100", "--call", "--heads 16",
                           "--forward-tflops", "1", "--backward-tflops", "1"], "--call"),
                         (["--from", h100, "--target", target, "--hardware", "a100", "--call", "-n 16k",
                           "--forward-tflops", "0", "--backward-tflops", "1"], "--forward-tflops"),
                         (["--from", h100, "--target", target, "--hardware", "tpu-v9", "--call", "-n 16k",
                           "--forward-tflops", "1", "--backward-tflops", "1"], "--hardware")]:
        bad = run(*flags)
        lines = bad.stderr.strip().splitlines()
        expect(bad.returncode == 2 and len(lines) == 1 and names in lines[0], f"{flags}: {bad.returncode} {bad.stderr!r}")
    expect(open(target).read() == before, "a refused run changed the target")

    # --keep: the target's own fields survive the derivation (absent where the target has none);
    # anything but FIELD or PASS.FIELD is refused with one line and the target left alone.
    own = json.load(open(target))
    own["tiling"] = "fixed"
    own["forward"]["score_head_dims"] = 7
    own["backward"].pop("score_head_dims", None)
    own["forward"]["score_head_dims_up_to"] = 512
    json.dump(own, open(target, "w"), indent=2)
    kept = run("--from", h100, "--target", target, *rates,
               "--keep", "tiling,forward.score_head_dims,forward.score_head_dims_up_to,backward.score_head_dims")
    expect(kept.returncode == 0, f"--keep: {kept.returncode} {kept.stderr}")
    derived = json.load(open(target))
    expect(derived["tiling"] == "fixed" and shipped["tiling"] == "varlen", "--keep tiling: the target's")
    expect(derived["forward"]["score_head_dims"] == 7 and derived["forward"]["score_head_dims_up_to"] == 512,
           "--keep forward.*: the target's")
    expect("score_head_dims" not in derived["backward"] and "score_head_dims" in shipped["backward"],
           "--keep backward.score_head_dims: absent as in the target, not the source's")
    forward, backward = published_rates(target)
    expect(abs(forward - 200) < 0.01 and abs(backward - 150) < 0.01, f"rates with --keep {forward} {backward}")
    before = open(target).read()
    for keep in ("forward.score_head_dims.x", "sideways.score_head_dims", ".tiling", "forward."):
        bad = run("--from", h100, "--target", target, *rates, "--keep", keep)
        lines = bad.stderr.strip().splitlines()
        expect(bad.returncode == 2 and len(lines) == 1 and "--keep" in lines[0], f"--keep {keep}: {bad.returncode} {bad.stderr!r}")
    expect(open(target).read() == before, "a refused --keep changed the target")

for f in failures:
    print("FAIL:", f)
print(f"derive-kernel-profile: {len(failures)} failures")
sys.exit(1 if failures else 0)
