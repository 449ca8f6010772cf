#!/usr/bin/env python3
"""The validator's mpi backend run as a real MPI job (mpirun -np 4 --oversubscribe: one process per
ring device on however many cores there are).

  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR ring   the ring checked, fitted, compared;
                                                                   --devices other than the job's size refused
  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR hang   a hung rank ends the job (exit 3)

MPIEXEC "none" (stripesim built without MPI): prints why and exits 77, which ctest reports as skipped.
"""
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
mpiexec, stripesim, source, work, mode = sys.argv[1:6]
if mpiexec == "none":
    print("SKIPPED: stripesim was built without MPI (apt-get install openmpi-bin libopenmpi-dev, configure again)")
    sys.exit(SKIP)

shutil.rmtree(work, ignore_errors=True)
out_dir = os.path.join(work, "report")
# Small on purpose: four processes share CI's two cores. Two sequence lengths give the hand-off
# two block sizes, so its latency and bandwidth are a line through distinct points.
command = [mpiexec, "-np", "4", "--oversubscribe", stripesim, "validate", "--backend", "mpi",
           "--seq-len", "256,512", "--tile", "64x64", "--layouts", "striped,zigzag", "--warmup", "1", "--iterations", "3",
           "--compare", "--out-dir", out_dir, "--format", "json"]
env = dict(os.environ)
if mode == "hang":
    # TEST ONLY: rank 2 stops answering at round 1 (validate/mpi/mpi_backend.cpp, hangs_here).
    env["STRIPESIM_TEST_MPI_HANG_RANK"] = "2"
    command += ["--timeout", "2"]
    command[1:1] = ["-x", "STRIPESIM_TEST_MPI_HANG_RANK"]
run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def fail(why):
    print(f"FAILED: {why}\n--- command: {' '.join(command)}\n--- exit {run.returncode}\n--- stdout\n{run.stdout}"
          f"\n--- stderr\n{run.stderr}")
    sys.exit(1)


if mode == "hang":
    if run.returncode != 3:
        fail("expected exit code 3 from the job a hung rank ended")
    lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
    # Rank 3 misses the block rank 2 never sends, or rank 1 sees rank 2 never take its block (a
    # large block waits for the receiver): either way rank 2 is named, and one line is every rank's.
    wants = ["stripesim: error: rank 2: hand-off of round 1's K/V block to rank 3 failed: no answer within 2 s",
             "stripesim: error: rank 2: receive of round 1's K/V block from rank 1 failed: no answer within 2 s"]
    if not lines or len(set(lines)) != 1 or not any(lines[0].startswith(w) for w in wants):
        fail(f"expected every rank to print one same line starting with one of: {wants}")
    if os.path.exists(out_dir):
        fail("a job that failed left a report folder behind")
    print(f"hung rank 2 ended the job: exit 3, {len(lines)} ranks printed the line, no report")
    sys.exit(0)

if run.returncode != 0:
    fail("expected exit code 0")
doc = json.loads(run.stdout)
on_disk = json.load(open(os.path.join(out_dir, "validate.json")))
if doc != on_disk:
    fail("standard output and validate.json differ")
import jsonschema  # noqa: E402  (python3-jsonschema, like validate_outputs.py)
schema = json.load(open(os.path.join(source, "reports", "schema", "validate.schema.json")))
jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
if doc["backend"] != "mpi" or not doc["all_passed"] or len(doc["cases"]) != 4:
    fail("expected 4 mpi cases, all passed")
for case in doc["cases"]:
    if case["devices"] != 4 or not case["correctness"]["passed"]:
        fail(f"case {case['label']}: expected N = 4 and its output matching dense attention")
calibration = doc["calibration"]
if calibration["handoff_samples"] != 2 * 3 * 4 or calibration["hop_bandwidth_gbps"] <= 0:
    fail("expected the hand-off fitted on the calibration half's 24 hops")
if any(c["handoff_measured_us"] <= 0 or c["handoff_predicted_us"] <= 0 for c in doc["comparisons"]):
    fail("expected every case's hop predicted and measured")
# Bad input: a ring size other than the job's is refused by every rank, before anything runs.
wrong_dir = os.path.join(work, "wrong-devices")
command = [mpiexec, "-np", "2", "--oversubscribe", stripesim, "validate", "--backend", "mpi", "--devices", "4",
           "--out-dir", wrong_dir]
run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
want = ("stripesim: error: --devices 4: --backend mpi runs one process per device and this job has 2 "
        "(launch it with mpirun -np 4)")
lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
if run.returncode != 2 or not lines or any(l != want for l in lines) or os.path.exists(wrong_dir) or run.stdout:
    fail(f"expected exit 2, nothing written and only this line: {want}")
print(f"4 ranks: {len(doc['cases'])} cases match dense attention; hand-off fit "
      f"{calibration['hop_latency_us']:.1f} us + bytes at {calibration['hop_bandwidth_gbps']:.2f} GB/s")
