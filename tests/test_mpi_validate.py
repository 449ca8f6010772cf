#!/usr/bin/env python3
"""The validator's mpi backend run as a real MPI job (mpirun -np 4 --oversubscribe: one process per
ring device on however many cores there are).

  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR ring   the ring checked, fitted, compared;
                                                                   --devices other than the job's size refused
  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR hang   a hung rank ends the job (exit 3)
  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR nodes  ranks on two (pretended) hosts: hops between
                                                                   them fitted apart and predicted over the network;
                                                                   a --topology that places them otherwise refused
  ... collectives       --cp ring,allgather,ulysses: every output checked, each case's JSON as the cpu backend
                        gives it (same fields, bytes and work), one call and one collective per rank
  ... hang-collective   a rank that never reaches the all-gather ends the job (exit 3), named
  ... fwdbwd            --pass fwdbwd: the backward ring over the ranks, dQ, dK and dV checked against dense
                        gradients, a backward call timed where the work model counts tiles and a hand-off
                        (the dK/dV accumulator) every round, each case predicted forward + backward

  test_mpi_validate.py MPIEXEC STRIPESIM SOURCE_DIR WORK_DIR nccl   --backend nccl under mpirun -np 2: each rank its own
                                                                   GPU and NCCL communicator (on 2+ GPUs: the ring
                                                                   checked; without a GPU: every rank names itself)

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
# two block sizes, so its latency and bandwidth are a line through distinct points. The
# collectives run beside the ring: --compare fits on ring cases only and predicts the rest.
matrix = ["--seq-len", "256,512", "--tile", "64x64", "--layouts", "striped,zigzag"]
if mode == "collectives":
    matrix = ["--cp", "ring,allgather,ulysses", "--seq-len", "512,1024", "--heads", "4", "--kv-heads", "2", "--tile", "64x64",
              "--layouts", "striped,zigzag"]
if mode == "hang-collective":
    matrix = ["--cp", "allgather,ulysses", "--seq-len", "256", "--heads", "4", "--layouts", "zigzag"]
if mode == "fwdbwd":
    matrix += ["--pass", "fwdbwd"]
# --compare fits on ring cases: a matrix of collectives alone (hang-collective) is measured only.
compare = [] if mode == "hang-collective" else ["--compare"]
command = [mpiexec, "-np", "4", "--oversubscribe", stripesim, "validate", "--backend", "mpi", *matrix, "--warmup", "1",
           "--iterations", "3", *compare, "--out-dir", out_dir, "--format", "json"]
env = dict(os.environ)
if mode.startswith("hang"):
    # TEST ONLY: rank 2 stops answering at round 1 of the ring, before the collective of the
    # all-gather (validate/mpi/mpi_measure.hpp, hang_if_told).
    env["STRIPESIM_TEST_MPI_HANG_RANK"] = "2"
    command += ["--timeout", "2"]
    command[1:1] = ["-x", "STRIPESIM_TEST_MPI_HANG_RANK"]
if mode == "nccl":
    command = [mpiexec, "-np", "2", "--oversubscribe", stripesim, "validate", "--backend", "nccl", "--seq-len", "4096",
               "--format", "json"]
    run = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    if "built without" in run.stderr:
        print(f"SKIPPED: this stripesim has no nccl backend under MPI: {run.stderr.strip().splitlines()[0]}")
        sys.exit(SKIP)
    # Under mpirun the nccl backend runs the ring only: the collectives are refused on every rank
    # before anything runs.
    refused = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", stripesim, "validate", "--backend", "nccl", "--cp",
                              "allgather"], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    line = ("stripesim: error: --cp allgather: --backend nccl under mpirun runs the ring only; allgather and ulysses run "
            "on --backend nccl in one process (without mpirun), cuda or mpi")
    if refused.returncode != 2 or refused.stderr.count(line) != 2:
        print(f"FAILED: expected exit 2 and the refusal from both ranks\n--- exit {refused.returncode}\n--- stderr\n"
              f"{refused.stderr}")
        sys.exit(1)
    smi = shutil.which("nvidia-smi")
    gpus = 0
    if smi:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
        gpus = sum(1 for l in listed.stdout.splitlines() if l.startswith("GPU ")) if listed.returncode == 0 else 0
    if gpus == 1:
        print("SKIPPED: one GPU; two ranks of one NCCL communicator need a GPU each")
        sys.exit(SKIP)
    if gpus == 0:
        # Each rank runs its own backend: each names itself (the one-process backend would say rank 0 only).
        lines = sorted(set(l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")))
        ranks = [l.split(":")[2].strip() for l in lines]
        if run.returncode != 3 or ranks != ["rank 0", "rank 1"] or any("cudaGetDeviceCount" not in l for l in lines):
            print(f"FAILED: expected exit 3 and one cudaGetDeviceCount line from each of rank 0 and rank 1\n"
                  f"--- exit {run.returncode}\n--- stderr\n{run.stderr}")
            sys.exit(1)
        print("no GPU: both ranks ran the per-rank nccl backend and each named itself (exit 3)")
        sys.exit(0)
    if run.returncode != 0:
        print(f"FAILED: expected exit 0 on {gpus} GPUs\n--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}")
        sys.exit(1)
    doc = json.loads(run.stdout)
    if doc["backend"] != "nccl" or not doc["all_passed"] or any(c["devices"] != 2 for c in doc["cases"]):
        print(f"FAILED: expected every case of N = 2 on the nccl backend to match dense attention\n{run.stdout}")
        sys.exit(1)
    print(f"{len(doc['cases'])} cases on 2 ranks of one NCCL communicator match dense attention")
    sys.exit(0)

if mode == "nodes":
    # TEST ONLY: ranks 0-1 report host "a", 2-3 host "b" (validate/mpi/mpi_hosts.cpp, own_host), as
    # a job over two nodes of two GPUs would; the hostfile promises exactly that.
    env["STRIPESIM_TEST_MPI_HOSTS"] = "a,a,b,b"
    command[1:1] = ["-x", "STRIPESIM_TEST_MPI_HOSTS"]
    os.makedirs(work)
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("a slots=2\nb slots=2\n")
    command += ["--topology", f"hostfile:{hostfile}"]
run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def fail(why):
    print(f"FAILED: {why}\n--- command: {' '.join(command)}\n--- exit {run.returncode}\n--- stdout\n{run.stdout}"
          f"\n--- stderr\n{run.stderr}")
    sys.exit(1)


if mode.startswith("hang"):
    if run.returncode != 3:
        fail("expected exit code 3 from the job a hung rank ended")
    lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
    # Rank 3 misses the block rank 2 never sends, or rank 1 sees rank 2 never take its block (a
    # large block waits for the receiver): either way rank 2 is named, and one line is every rank's.
    # Before a collective every rank waits for every other's arrival by name.
    wants = ["stripesim: error: rank 2: hand-off of round 1's K/V block to rank 3 failed: no answer within 2 s",
             "stripesim: error: rank 2: receive of round 1's K/V block from rank 1 failed: no answer within 2 s"]
    if mode == "hang-collective":
        wants = ["stripesim: error: rank 2: arrival at the all-gather of iteration 0's K/V blocks failed: "
                 "no answer within 2 s"]
    if not lines or len(set(lines)) != 1 or not any(lines[0].startswith(w) for w in wants):
        fail(f"expected every rank to print one same line starting with one of: {wants}")
    if os.path.exists(out_dir):
        fail("a job that failed left a report folder behind")
    print(f"hung rank 2 ended the job: exit 3, {len(lines)} ranks printed the line, no report")
    sys.exit(0)

if mode == "nodes":
    if run.returncode != 0:
        fail("expected exit code 0")
    doc = json.loads(run.stdout)
    import jsonschema  # noqa: E402
    jsonschema.validate(doc, json.load(open(os.path.join(source, "reports", "schema", "validate.schema.json"))),
                        cls=jsonschema.Draft202012Validator)
    if doc["placement"] != {"nodes": 2, "hosts": ["a", "b"], "node_of_device": [0, 0, 1, 1]}:
        fail(f"expected ranks 0-1 on a, 2-3 on b, got {doc['placement']}")
    calibration = doc["calibration"]
    # Per case 3 rounds hand blocks on; of the 4 hops a round, 0->1 and 2->3 stay inside a node,
    # 1->2 and 3->0 cross. The ranks run at once, so each round gives one hop of each kind, its
    # shortest (the others waited for a neighbour): 3 x 2 calibration cases of each kind.
    if calibration["handoff_samples"] != 6 or calibration["inter_node_handoff_samples"] != 6:
        fail("expected 6 hops inside nodes and 6 between them in the calibration half (one a round of each kind)")
    if calibration["inter_node_hop_bandwidth_gbps"] <= 0:
        fail("expected a fitted network bandwidth")
    if not doc["comparisons"] or len(doc["comparisons"]) != len(doc["cases"]):
        fail(f"expected a comparison for every case, got {len(doc['comparisons'])} for {len(doc['cases'])}")
    for c in doc["comparisons"]:
        if min(c["handoff_measured_us"], c["handoff_predicted_us"], c["inter_node_handoff_measured_us"],
               c["inter_node_handoff_predicted_us"]) <= 0:
            fail(f"case {c['label']}: expected both kinds of hop predicted and measured")
    gpus = [n["id"] for n in doc["topology"]["nodes"] if n["kind"] == "gpu"]
    if gpus != ["a.gpu0", "a.gpu1", "b.gpu0", "b.gpu1"]:
        fail(f"expected the predicted topology's GPUs placed on a and b, got {gpus}")
    # The fitted network and profile are a topology and a profile simulate reads as they are.
    sim = subprocess.run([stripesim, "simulate", "--topology", os.path.join(out_dir, "topology.json"), "--hardware",
                          os.path.join(out_dir, "profile.json"), "--kernel", os.path.join(out_dir, "kernel.json"), "-N", "4", "-n", "1024", "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    if sim.returncode != 0:
        fail(f"simulate on the written topology.json and profile.json failed: {sim.stderr}")
    # A placement that contradicts where the ranks run: refused before anything runs.
    wrong_dir = os.path.join(work, "wrong-topology")
    command = [mpiexec, "-x", "STRIPESIM_TEST_MPI_HOSTS", "-np", "4", "--oversubscribe", stripesim, "validate", "--backend",
               "mpi", "--topology", "cluster:1x4", "--out-dir", wrong_dir]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    want = "stripesim: error: --topology cluster:1x4: places the ranks as node0: 0-3, but they run as a: 0-1, b: 2-3"
    lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
    # Every rank refuses; mpirun ends the job when the first one exits, so the others may not print.
    if run.returncode != 2 or not lines or any(l != want for l in lines) or os.path.exists(wrong_dir):
        fail(f"expected exit 2, nothing written and only this line: {want}")
    print(f"2 nodes x 2 ranks: hops inside a node {calibration['hop_latency_us']:.1f} us + bytes at "
          f"{calibration['hop_bandwidth_gbps']:.2f} GB/s, between nodes {calibration['inter_node_hop_latency_us']:.1f} us "
          f"+ bytes at {calibration['inter_node_hop_bandwidth_gbps']:.2f} GB/s")
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
cases = 12 if mode == "collectives" else 4
if doc["backend"] != "mpi" or not doc["all_passed"] or len(doc["cases"]) != cases:
    fail(f"expected {cases} mpi cases, all passed")
for case in doc["cases"]:
    if case["devices"] != 4 or not case["correctness"]["passed"]:
        fail(f"case {case['label']}: expected N = 4 and its output matching dense attention")
if mode == "collectives":
    # The cpu backend on the same matrix: every case has the same fields, the same bytes per
    # hand-off and the same work; a collective case is held out and predicted, and records one
    # kernel call and one collective per rank, at round 0.
    cpu_run = subprocess.run([stripesim, "validate", "--backend", "cpu", "--devices", "4", *matrix, "--warmup", "0",
                              "--iterations", "1", "--compare", "--format", "json"], capture_output=True, text=True,
                             timeout=120)
    if cpu_run.returncode != 0:
        fail(f"the cpu backend on the same matrix failed: {cpu_run.stderr}")
    cpu_cases = json.loads(cpu_run.stdout)["cases"]
    if len(cpu_cases) != len(doc["cases"]):
        fail(f"expected the cpu backend to run the same {len(doc['cases'])} cases, it ran {len(cpu_cases)}")
    for mine, cpu in zip(doc["cases"], cpu_cases):
        same = ("label", "cp", "handoff_bytes", "unmasked_pairs", "active_tiles")
        if mine.keys() != cpu.keys() or any(mine[k] != cpu[k] for k in same):
            fail(f"case {mine['label']}: expected the cpu backend's fields and values of {same}")
        if mine["rounds"][0].keys() != cpu["rounds"][0].keys():
            fail(f"case {mine['label']}: expected the cpu backend's per-cell fields")
        if mine["cp"] == "ring":
            continue
        if mine["role"] != "held-out" or mine["predicted_us"] <= 0:
            fail(f"case {mine['label']}: expected a held-out prediction")
        for cell in mine["rounds"]:
            timed = cell["kernel_us"]["median"] > 0 and cell["handoff_us"]["median"] > 0
            if timed != (cell["round"] == 0):
                fail(f"case {mine['label']}: expected a kernel and a collective time at round 0 only, got {cell}")
    # Bad input: heads that do not split over the job's ranks are refused by every rank, as the cpu
    # backend refuses them, before anything runs.
    wrong_dir = os.path.join(work, "wrong-heads")
    command = [mpiexec, "-np", "4", "--oversubscribe", stripesim, "validate", "--backend", "mpi", "--cp", "ulysses",
               "--heads", "2", "--kv-heads", "2", "--out-dir", wrong_dir]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    want = "stripesim: error: --cp ulysses: the all-to-all over 4 devices needs the 2 heads of a device divisible by 4"
    lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
    if run.returncode != 2 or not lines or any(l != want for l in lines) or os.path.exists(wrong_dir) or run.stdout:
        fail(f"expected exit 2, nothing written and only this line: {want}")
    print(f"4 ranks: {len(doc['cases'])} cases (ring, allgather, ulysses) match dense attention and the cpu backend's "
          f"fields; held-out collective errors " +
          ", ".join(f"{c['error']:+.0%}" for c in doc["cases"] if c["cp"] != "ring"))
    sys.exit(0)
if mode == "fwdbwd":
    for case in doc["cases"]:
        grads = case["correctness"]["gradients"]
        if case["pass"] != "fwdbwd" or any(grads[k] is None or grads[k] >= 1e-5 for k in grads):
            fail(f"case {case['label']}: expected dQ, dK and dV within 1e-5 of dense gradients, got {grads}")
        for cell in case["rounds"]:
            if (cell["backward_kernel_us"]["median"] > 0) != (cell["active_tiles"] > 0) or cell["backward_handoff_us"]["median"] <= 0:
                fail(f"case {case['label']}: expected a backward call exactly where tiles are active and a hand-off every round, got {cell}")
        if case["predicted_us"] <= 0:
            fail(f"case {case['label']}: expected a forward + backward prediction")
    kernel = json.load(open(os.path.join(out_dir, "kernel.json")))
    if kernel["fit"]["backward"] != "fitted" or kernel["fit"]["backward_samples"] <= 0:
        fail("expected the kernel's backward costs fitted on the backward calls")
    print(f"4 ranks: {len(doc['cases'])} fwdbwd cases, gradients match dense ones; total errors " +
          ", ".join(f"{c['error']:+.0%}" for c in doc["cases"]))
    sys.exit(0)
calibration = doc["calibration"]
# 2 calibration cases x 3 rounds, one hop a round: the ranks run at once, and only the round's
# shortest hand-off waited for no neighbour.
if calibration["handoff_samples"] != 2 * 3 or calibration["hop_bandwidth_gbps"] <= 0:
    fail("expected the hand-off fitted on the calibration half's 6 hops, one a round")
if not doc["comparisons"] or len(doc["comparisons"]) != len(doc["cases"]):
    fail(f"expected a comparison for every case, got {len(doc['comparisons'])} for {len(doc['cases'])}")
if any(c["handoff_measured_us"] <= 0 or c["handoff_predicted_us"] <= 0 for c in doc["comparisons"]):
    fail("expected every case's hop predicted and measured")
wrong_dir = os.path.join(work, "wrong-devices")


def expect_refused_on_two_ranks(flags, want):
    """A job of 2 ranks given `flags` exits 2, writes nothing, and every rank prints only `want`."""
    global command, run
    command = [mpiexec, "-np", "2", "--oversubscribe", stripesim, "validate", "--backend", "mpi", *flags, "--out-dir", wrong_dir]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    lines = [l for l in run.stderr.splitlines() if l.startswith("stripesim: error:")]
    if run.returncode != 2 or not lines or any(l != want for l in lines) or os.path.exists(wrong_dir) or run.stdout:
        fail(f"expected exit 2, nothing written and only this line: {want}")


# Bad input: a ring size other than the job's is refused by every rank, before anything runs.
expect_refused_on_two_ranks(["--devices", "4"], "stripesim: error: --devices 4: --backend mpi runs one process per device and "
                                                "this job has 2 (launch it with mpirun -np 4)")
# A length refused without --devices is named at the job's N, with lengths every listed layout
# takes there: 255 on 2 ranks (checked at N = 1 before MPI was up, it said zigzag's 2N = 2 and
# offered 254, which zigzag's 2N = 4 then refused).
expect_refused_on_two_ranks(["--seq-len", "255"], "stripesim: error: --seq-len 255: each of the N = 2 devices holds n/N tokens, so "
                                                  "N must divide it; the nearest lengths every listed layout takes are 252 and 256 "
                                                  "(pad 1 token to reach 256)")
print(f"4 ranks: {len(doc['cases'])} cases match dense attention; hand-off fit "
      f"{calibration['hop_latency_us']:.1f} us + bytes at {calibration['hop_bandwidth_gbps']:.2f} GB/s")
