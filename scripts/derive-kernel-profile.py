#!/usr/bin/env python3
"""A kernel profile for a GPU the kernel was not timed on: the profile fitted on another GPU (its
shape: placement, blocks per SM, the ratios between its costs, trimmed-call factors, head-size
shares) with each pass's costs multiplied by one factor, so that one published call runs at its
published rates on the target GPU. Every cost of a pass scales by the same factor, so a call's
blocks land where they did and its time scales by that factor: the factor is the published time
over the time `stripesim simulate` gives the call at factor 1.

The target file must exist: its name, hardware, description and sources are kept (the sources'
"shape" entry is rewritten with the new factors); everything else comes from --from.

    scripts/derive-kernel-profile.py --from configs/kernels/h100/fa2.json \\
        --target configs/kernels/a100/fa2.json --hardware a100 --call "-n 16k --heads 16" \\
        --forward-tflops 220 --backward-tflops 170

prints the factors and rewrites --target (`--check`: exit 1 if it would change instead).

Where the shape comes from another kernel of the same kind (FlashAttention-3 from cuDNN's Hopper
kernel, both warp-specialised and measured here only as cuDNN), what is the target kernel's own
and not the shape's stays the target's: `--keep tiling,forward.score_head_dims,...` keeps those
fields (top-level, or PASS.FIELD) as the target file has them, absent where it has none. Kept
fields must not move the published call: a head-size share leaves a call at the profile's own head
size unchanged, and tiling only moves packed documents. Bad input (a missing or malformed
profile, a --call without a size, a rate not above 0, a --keep field that is not FIELD or
PASS.FIELD) gets one line and exit code 2."""
import argparse
import copy
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
STRIPESIM = ROOT / "build" / "cli" / "stripesim"
# What a derived profile keeps of its own file; the rest is the source profile's.
OWN_FIELDS = ("name", "hardware", "description", "sources")
# A backward runs 2.5x the forward's FLOPs (FlashAttention's count: five matmuls to two).
BACKWARD_FLOP_RATIO = 2.5


def refuse(message):
    print(f"derive-kernel-profile.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_profile(path, flag):
    try:
        profile = json.loads(pathlib.Path(path).read_text())
    except OSError as e:
        refuse(f"{flag} {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        refuse(f"{flag} {path}: not JSON ({e.msg}, line {e.lineno})")
    if not isinstance(profile, dict) or not all(isinstance(profile.get(p), dict) for p in ("forward", "backward")):
        refuse(f"{flag} {path}: not a kernel profile (no forward and backward costs)")
    return profile


def call_time_us(stripesim, profile, hardware, call, pass_name):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(profile, f)
    command = [str(stripesim), "simulate", "--hardware", hardware, "--kernel", f.name, "-N", "1", *call.split(),
               "--mask", "bidirectional", "--topology", "ideal", "--pass", pass_name, "--layouts", "contiguous",
               "--summary-only", "--format", "json"]
    out = subprocess.run(command, capture_output=True, text=True)
    pathlib.Path(f.name).unlink()
    if out.returncode != 0:
        refuse(f"stripesim simulate --pass {pass_name} --call '{call}': {out.stderr.strip().removeprefix('stripesim: error: ')}")
    return json.loads(out.stdout)["results"][0]["time_us"]


def call_flop(call):
    """FLOPs of the forward of an unmasked call given as simulate flags (-n, --heads, --batch, --head-dim)."""
    flags = dict(re.findall(r"(--?[a-z-]+)\s+(\S+)", call))
    n = flags.get("-n", flags.get("--seq-len"))
    if n is None:
        refuse(f"--call '{call}': give the sequence length (-n)")
    try:
        tokens = int(n[:-1]) * 1024 if n.endswith("k") else int(n)
        heads, batch, head_dim = (int(flags.get(k, d)) for k, d in (("--heads", 16), ("--batch", 1), ("--head-dim", 128)))
    except ValueError:
        refuse(f"--call '{call}': -n, --heads, --batch and --head-dim take whole numbers (-n also 16k)")
    if min(tokens, heads, batch, head_dim) < 1:
        refuse(f"--call '{call}': sizes must be at least 1")
    return 4.0 * tokens * tokens * heads * head_dim * batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", required=True, help="the profile fitted on another GPU")
    parser.add_argument("--target", required=True, help="the derived profile (rewritten)")
    parser.add_argument("--hardware", required=True, help="the target GPU's hardware preset")
    parser.add_argument("--call", required=True, help="the published call as simulate flags (unmasked, one GPU)")
    parser.add_argument("--forward-tflops", type=float, required=True)
    parser.add_argument("--backward-tflops", type=float, required=True)
    parser.add_argument("--keep", default="", help="FIELD or PASS.FIELD, comma-separated: kept as the target has them")
    parser.add_argument("--stripesim", default=str(STRIPESIM))
    parser.add_argument("--check", action="store_true", help="exit 1 if --target would change; write nothing")
    args = parser.parse_args()
    for flag, rate in (("--forward-tflops", args.forward_tflops), ("--backward-tflops", args.backward_tflops)):
        if not rate > 0:
            refuse(f"{flag} {rate}: must be above 0")
    source = read_profile(args.source, "--from")
    target_path = pathlib.Path(args.target)
    target = read_profile(args.target, "--target")

    derived = {key: copy.deepcopy(value) for key, value in source.items() if key != "fit"}
    derived["calibrated"] = False
    for key in OWN_FIELDS:  # in the source's place where it has the key, so the key order is the source's
        if key in target:
            derived[key] = target[key]
    for field in filter(None, args.keep.split(",")):
        path = field.split(".")
        if len(path) > 2 or not all(path) or (len(path) == 2 and path[0] not in ("forward", "backward")):
            refuse(f"--keep {field}: expected FIELD or PASS.FIELD (PASS forward or backward)")
        into, mine = (derived, target) if len(path) == 1 else (derived[path[0]], target[path[0]])
        if path[-1] in mine:
            into[path[-1]] = copy.deepcopy(mine[path[-1]])
        else:
            into.pop(path[-1], None)
    flop = call_flop(args.call)
    forward_us = call_time_us(args.stripesim, derived, args.hardware, args.call, "fwd")
    backward_us = call_time_us(args.stripesim, derived, args.hardware, args.call, "fwdbwd") - forward_us
    factors = {"forward": flop / (args.forward_tflops * 1e6) / forward_us,
               "backward": BACKWARD_FLOP_RATIO * flop / (args.backward_tflops * 1e6) / backward_us}
    for pass_name, factor in factors.items():
        for cost in ("launch_us", "block_us", "full_tile_us", "partial_tile_us"):
            derived[pass_name][cost] *= factor
    shape = derived.get("sources", {}).get("shape", "")
    if shape:
        derived["sources"]["shape"] = re.sub(r"\(x[0-9.]+ forward, x[0-9.]+ backward\)",
                                             f"(x{factors['forward']:.4f} forward, x{factors['backward']:.4f} backward)", shape)
    text = json.dumps(derived, indent=2) + "\n"
    print(f"forward x{factors['forward']:.4f}, backward x{factors['backward']:.4f}")
    if args.check:
        if text != target_path.read_text():
            sys.exit(f"derive-kernel-profile.py: {args.target} is not {args.source} at those rates: run it without --check")
        return
    target_path.write_text(text)


if __name__ == "__main__":
    main()
