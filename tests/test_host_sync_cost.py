"""bench/host_sync_cost.py without PyTorch: its self-test, the rounds it plays against the zigzag
ring's rule, the halves its masks pick, and bad input (one line naming the flag, exit 2, no file).
Run by CTest: test_host_sync_cost.py SOURCE_DIR."""
import importlib.util
import os
import subprocess
import sys
import tempfile

source = sys.argv[1]
script = os.path.join(source, "bench", "host_sync_cost.py")
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(source, "bench"))
spec = importlib.util.spec_from_file_location("host_sync_cost", script)
harness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(harness)
expect("torch" not in sys.modules, "bench/host_sync_cost.py imports torch at module level")
expect(not harness.self_test(), f"self_test: {harness.self_test()}")

# Zigzag's rule, counted here by hand: device r attends its own block, then r rounds of earlier
# devices' blocks (keys' early halves: k and v gathered) and N - 1 - r of later ones (queries' late
# halves, gathered once; the output and its log-sum-exp gathered and written back each round).
devices = 8
for rank in range(devices):
    late_rounds = devices - 1 - rank
    want = 2 * rank + 4 * late_rounds + (1 if late_rounds else 0)
    expect(harness.masked_ops(rank, devices, [2048, 59136, 4352]) == want, f"masked_ops rank {rank}")
    expect(harness.masked_ops(rank, devices, [65536]) == 0, f"one document, rank {rank}: slices, no masks")

# The halves: every local row in exactly one, each document's first half early, in order.
lengths = harness.local_lengths([2048, 59136, 4352], devices)
expect(lengths == [256, 7392, 544], f"local_lengths: {lengths}")
early, late = harness.half_rows(lengths, late=False), harness.half_rows(lengths, late=True)
expect(sorted(early + late) == list(range(sum(lengths))), "halves do not partition the rows")
expect(early[:128] == list(range(128)) and late[:128] == list(range(128, 256)), "first document's halves")
expect(len(early) == len(late) == sum(lengths) // 2, "halves of unequal size")

with tempfile.TemporaryDirectory() as scratch:
    out = os.path.join(scratch, "h.json")
    base = ["--devices", "8", "--out", out]
    for args, flag in (([*base, "--documents", "2001,63535"], "--documents"),
                       ([*base, "--documents", "65536", "--heads", "12"], "--heads"),
                       ([*base, "--documents", "65536", "--dtype", "fp32"], "--dtype"),
                       ([*base, "--documents", "65536", "--iters", "0"], "--iters"),
                       (["--devices", "8"], "--documents"),
                       ([*base, "--documents", "65536", "--rank", "3"], "--rank"),
                       (["--devices", "8", "--documents", "65536", "--out", os.path.join(scratch, "no", "h.json")],
                        "--out")):
        result = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        expect(result.returncode == 2 and len(lines) == 1 and flag in lines[0] and not result.stdout,
               f"host_sync_cost.py {' '.join(args)}: exit {result.returncode}, stderr {result.stderr!r}")
    expect(not os.listdir(scratch), f"host_sync_cost.py wrote {os.listdir(scratch)}")
result = subprocess.run([sys.executable, script, "--self-test"], capture_output=True, text=True)
expect(result.returncode == 0 and not result.stdout and not result.stderr, f"--self-test: {result.stderr!r}")

for failure in failures:
    print(f"FAIL {failure}", file=sys.stderr)
print(f"host_sync_cost.py: {len(failures)} failures")
sys.exit(1 if failures else 0)
