"""Checks the stripesim.measurements/1 and stripesim.block-costs/1 formats and the harness that writes
them, without PyTorch: every file under configs/measurements/ against its JSON Schema (by its
"schema" field) and the N x N shape the schema cannot express; bench/measure_kernels.py imported as a
module (it must not pull in torch) for its document builder, layouts, sdpa call plan, active-block
counter (against the measured flex files) and its bad-input contract. Run by CTest:
test_measurements_format.py SOURCE_DIR; exits 1 on any failure, listing them all."""
import copy
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import jsonschema

source = sys.argv[1]
started = time.monotonic()
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


def load_schema(name):
    schema = json.load(open(os.path.join(source, "reports", "schema", f"{name}.schema.json")))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


schemas = {"stripesim.measurements/1": load_schema("measurements"),
           "stripesim.block-costs/1": load_schema("block-costs")}


def schema_errors(doc, schema):
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}" for error in validator.iter_errors(doc)]


def shape_errors(doc):
    """What the schema cannot say: every table is [N rounds][N devices] with N = workload.devices."""
    devices = doc["workload"]["devices"]
    errors = []
    for name, tables in doc["layouts"].items():
        for key, table in tables.items():
            if len(table) != devices or any(len(row) != devices for row in table):
                errors.append(f"layouts/{name}/{key}: not {devices} x {devices}")
    return errors


# ---- (a) the files shipped under configs/measurements/ --------------------------------------------
measurement_dir = os.path.join(source, "configs", "measurements")
files = sorted(os.path.join(root, name) for root, _, names in os.walk(measurement_dir) for name in names
               if name.endswith(".json"))
expect(files, f"{measurement_dir}: missing or holds no .json file; the measured kernels must ship with the repo")
documents = {}
for path in files:
    relative = os.path.relpath(path, source)
    try:
        doc = json.load(open(path))
    except ValueError as error:
        failures.append(f"{relative}: not JSON: {error}")
        continue
    kind = doc.get("schema") if isinstance(doc, dict) else None
    if not expect(kind in schemas, f"{relative}: schema {kind!r} is not one of {sorted(schemas)}"):
        continue
    errors = schema_errors(doc, schemas[kind])
    if kind == "stripesim.measurements/1" and not errors:
        errors = shape_errors(doc)
    for error in errors:
        failures.append(f"{relative}: {error}")
    documents[relative] = doc

# The schema is strict: a few broken copies of a real file must be rejected.
flex_file = os.path.join("configs", "measurements", "h100", "flex", "causal-fwd-n32768-N4.json")
reference = documents.get(flex_file)
expect(reference is not None, f"{flex_file}: missing; the active-block cross-check needs it")
if reference is not None:
    def broken(change):
        doc = copy.deepcopy(reference)
        change(doc)
        return doc
    for what, doc in (
            ("an unknown top-level field", broken(lambda d: d.update(extra=1))),
            ("an unknown workload field", broken(lambda d: d["workload"].update(seqlen=1))),
            ("a tile without TK", broken(lambda d: d["workload"].update(tile="128"))),
            ("an unknown mask", broken(lambda d: d["workload"].update(mask="sliding"))),
            ("a negative time", broken(lambda d: d["layouts"]["striped"]["us"][0].__setitem__(0, -1.0))),
            ("a fractional block count", broken(lambda d: d["layouts"]["striped"]["active_blocks"][0].__setitem__(0, 1.5))),
            ("an unknown layout name", broken(lambda d: d["layouts"].update(spiral=d["layouts"]["striped"]))),
            ("no layouts", broken(lambda d: d.update(layouts={}))),
            ("a layout without us", broken(lambda d: d["layouts"]["striped"].pop("us")))):
        expect(schema_errors(doc, schemas["stripesim.measurements/1"]),
               f"measurements.schema.json accepts {what}")
    expect(shape_errors(broken(lambda d: d["layouts"]["zigzag"]["us"].pop())),
           "the shape check accepts a table with a missing round")

# ---- (b) the harness, imported as a module --------------------------------------------------------
sys.dont_write_bytecode = True  # importing must leave no __pycache__ in the source tree
spec = importlib.util.spec_from_file_location("measure_kernels", os.path.join(source, "bench", "measure_kernels.py"))
harness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(harness)
expect("torch" not in sys.modules, "bench/measure_kernels.py imports torch at module level")

expect(not harness.self_test(), f"measure_kernels self_test: {harness.self_test()}")

# Layout conventions of the files: n = 16, N = 2 (c = 8, zigzag chunks of 4).
expected_layouts = {
    "contiguous": [list(range(0, 8)), list(range(8, 16))],
    "striped": [list(range(0, 16, 2)), list(range(1, 16, 2))],
    "zigzag": [[0, 1, 2, 3, 12, 13, 14, 15], [4, 5, 6, 7, 8, 9, 10, 11]],
    "block-striped:2": [[0, 1, 4, 5, 8, 9, 12, 13], [2, 3, 6, 7, 10, 11, 14, 15]],
}
for name, want in expected_layouts.items():
    got = harness.layout_positions(name, 16, 2)
    expect(got == want, f"layout {name} n=16 N=2: {got}, expected {want}")
got = harness.layout_positions("zigzag", 32, 4)
expect(got[1] == [4, 5, 6, 7, 24, 25, 26, 27], f"zigzag n=32 N=4 device 1: {got[1]}")
expect(harness.ring_source(0, 1, 4) == 3 and harness.ring_source(3, 1, 4) == 2, "ring_source is not (d - r) mod N")


def allowed_pairs(mask, q_positions, k_positions):
    return {(i, j) for i, q in enumerate(q_positions) for j, k in enumerate(k_positions) if mask.allows(q, k)}


def brute_active_blocks(mask, q_positions, k_positions, tq, tk):
    return len({(i // tq, j // tk) for i, j in allowed_pairs(mask, q_positions, k_positions)})


# The sdpa call plan computes exactly the pairs the causal mask allows, and makes no call where none is.
for n, devices in ((16, 2), (48, 4), (24, 3), (64, 8), (32, 16)):
    causal = harness.parse_mask("causal", n)
    for layout in ("contiguous", "striped", "zigzag"):
        positions = harness.layout_positions(layout, n, devices)
        plan = harness.sdpa_call_plan(layout, n, devices)
        for r in range(devices):
            for d in range(devices):
                s = harness.ring_source(d, r, devices)
                want = allowed_pairs(causal, positions[d], positions[s])
                call = plan[r][d]
                if call is None:
                    expect(not want, f"sdpa plan {layout} n={n} N={devices} r={r} d={d}: no call, but "
                                     f"{len(want)} pairs have work")
                    continue
                expect(want, f"sdpa plan {layout} n={n} N={devices} r={r} d={d}: a call where no pair has work")
                # is_causal is top-left aligned: row a of the call sees columns b <= a.
                got = {(i, j) for i in range(call.q_start, call.q_stop) for j in range(call.k_start, call.k_stop)
                       if not call.causal or j - call.k_start <= i - call.q_start}
                expect(got == want, f"sdpa plan {layout} n={n} N={devices} r={r} d={d}: {call} computes "
                                    f"{len(got)} pairs, the mask allows {len(want)} (or different ones)")

# A window inside packed documents, against its definition written out: same document, 0 <= q - k < W.
windowed = harness.parse_mask("documents:5,20,11,28:window=6", 64)
expect(windowed.spec() == "documents:5,20,11,28:window=6", f"windowed documents spec: {windowed.spec()}")
doc_of = [j for j, length in enumerate((5, 20, 11, 28)) for _ in range(length)]
for q in range(64):
    for k in range(64):
        expect(windowed.allows(q, k) == (doc_of[q] == doc_of[k] and 0 <= q - k < 6), f"windowed documents ({q}, {k})")
# Prefix-LM, against its definition: causal, and the first P tokens see each other both ways.
prefix = harness.parse_mask("prefix:13", 64)
expect(prefix.spec() == "prefix:13", f"prefix spec: {prefix.spec()}")
for q in range(64):
    for k in range(64):
        expect(prefix.allows(q, k) == (k <= q or (q < 13 and k < 13)), f"prefix ({q}, {k})")
for bad in ("documents:32,32:window=0", "documents:32,32:window=x", "documents:32,32:window=", "prefix:0", "prefix:65",
            "prefix:x", "prefix:"):
    try:
        harness.parse_mask(bad, 64)
        expect(False, f"{bad}: accepted")
    except harness.UsageError:
        pass

# The block counter against pair-by-pair counting, for every mask kind and uneven tiles.
for n, devices, mask_text, tile in ((64, 4, "causal", (4, 4)), (64, 4, "window:9", (4, 8)),
                                    (64, 2, "documents:5,20,11,28", (8, 4)), (48, 3, "bidirectional", (4, 4)),
                                    (96, 4, "window:1", (6, 6)), (96, 4, "causal", (8, 3)),
                                    (64, 4, "documents:5,20,11,28:window=6", (4, 4)), (64, 4, "prefix:13", (4, 8)),
                                    (96, 4, "prefix:96", (6, 6))):
    mask = harness.parse_mask(mask_text, n)
    for layout in ("contiguous", "striped", "zigzag", "block-striped:2"):
        positions = harness.layout_positions(layout, n, devices)
        table = harness.active_block_table(mask, positions, *tile)
        want = [[brute_active_blocks(mask, positions[d], positions[harness.ring_source(d, r, devices)], *tile)
                 for d in range(devices)] for r in range(devices)]
        expect(table == want, f"active blocks {layout} n={n} N={devices} {mask_text} tile {tile}: {table}, "
                              f"pair by pair {want}")

# The counter reproduces what flex_attention's BlockMask kept on the H100, for every measured flex file
# (the causal n=32768 N=4 one is required above; window and documents check the mask parser too).
checked_flex = 0
for relative, doc in documents.items():
    if doc.get("schema") != "stripesim.measurements/1":
        continue
    workload = doc["workload"]
    if "tile" not in workload:
        continue
    n, devices = workload["seq_len"], workload["devices"]
    tq, tk = (int(side) for side in workload["tile"].split("x"))
    mask = harness.parse_mask(workload["mask"], n)
    for layout, tables in doc["layouts"].items():
        if "active_blocks" not in tables:
            continue
        table = harness.active_block_table(mask, harness.layout_positions(layout, n, devices), tq, tk)
        expect(table == tables["active_blocks"], f"{relative} {layout}: counted {table}, the BlockMask kept "
                                                 f"{tables['active_blocks']}")
        checked_flex += relative == flex_file
expect(reference is None or checked_flex == len(reference["layouts"]),
       f"{flex_file}: {checked_flex} layouts cross-checked, expected {len(reference['layouts']) if reference else 0}")

# The document builder: synthetic timings in, a valid file out, for each kernel's shape of file.
for kernel, tile, with_blocks in (("flex", "128x128", True), ("sdpa", None, False), ("flash_attn", None, False),
                                  ("fa3", None, False)):
    devices = 4
    workload = harness.build_workload(32768, devices, 16, 8, 128, 1, "bf16", tile, "window:4096", "fwdbwd")
    layouts = {}
    for layout in ("contiguous", "striped", "zigzag", "block-striped:16"):
        entry = {"us": [[100.0 + 10 * r + d for d in range(devices)] for r in range(devices)]}
        if with_blocks:
            entry["active_blocks"] = [[r * d for d in range(devices)] for r in range(devices)]
        layouts[layout] = entry
    method = (harness.flex_method(3, 10, tile, 0) if kernel == "flex"
              else harness.sdpa_method(3, 10, "auto", ["contiguous", "striped", "zigzag"], 0, kernel=kernel))
    # Passes over the calls, flex's as the call plans', are said in the method.
    passes = (harness.flex_method(3, 10, tile, 0, passes=3) if kernel == "flex"
              else harness.sdpa_method(3, 10, "auto", ["contiguous"], 0, passes=3, kernel=kernel))
    expect("3 passes over every" in passes and "the median of the passes" in passes,
           f"{kernel}'s method does not say its passes: {passes!r}")
    expect("passes" not in method, f"{kernel}'s method names passes it did not make: {method!r}")
    if kernel != "flex":  # the method names the function each call-plan kernel times
        expect(harness.CALL_PLAN_FUNCTIONS[kernel] in method, f"sdpa_method ({kernel}): {method!r}")
    doc = harness.build_document("Synthetic GPU", f"torch 2.5.0 {kernel}", method, workload, layouts,
                                 torch_version="2.5.0", notes="synthetic")
    errors = schema_errors(doc, schemas["stripesim.measurements/1"]) or shape_errors(doc)
    expect(not errors, f"build_document ({kernel}): {errors}")
    expect(("tile" in doc["workload"]) == (tile is not None), f"build_document ({kernel}): tile present iff given")
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "m.json")
        harness.write_document(doc, out)
        expect(json.load(open(out)) == doc, f"write_document ({kernel}) does not round-trip")
        expect(os.listdir(scratch) == ["m.json"], f"write_document ({kernel}) left {os.listdir(scratch)}")
try:
    harness.build_document("GPU", "k", "m", harness.build_workload(64, 2, 1, 1, 8, 1, "bf16", None, "causal", "fwd"),
                           {"striped": {"us": [[1.0, 2.0]]}})
    failures.append("build_document accepts a 1 x 2 table for N = 2")
except ValueError:
    pass

# The command line: bad input is one line on stderr naming the flag, exit 2, and no file; no torch needed.
script = os.path.join(source, "bench", "measure_kernels.py")
with tempfile.TemporaryDirectory() as scratch:
    out = os.path.join(scratch, "out.json")
    base = ["--seq-len", "32768", "--devices", "4", "--out", out]
    for args, flag in ((["--kernel", "flex", "--seq-len", "1000", "--devices", "3", "--out", out], "--seq-len"),
                       (["--kernel", "flex", "--seq-len", "20", "--devices", "4", "--layouts", "zigzag", "--tile",
                         "5", "--out", out], "--layouts"),
                       (["--kernel", "flex", *base, "--mask", "sliding:4"], "--mask"),
                       (["--kernel", "flex", *base, "--mask", "documents:100,200"], "--mask"),
                       (["--kernel", "flex", *base, "--tile", "100"], "--tile"),
                       (["--kernel", "flex", *base, "--pass", "backward"], "--pass"),
                       (["--kernel", "flex", *base, "--layouts", "spiral"], "--layouts"),
                       (["--kernel", "sdpa", *base, "--mask", "window:4096"], "--mask"),
                       (["--kernel", "sdpa", *base, "--layouts", "block-striped:8"], "--layouts"),
                       (["--kernel", "tpu", *base], "--kernel"),
                       (["--kernel", "flex", *base, "--warmup", "0"], "--warmup"),
                       (["--kernel", "sdpa", *base, "--passes", "0"], "--passes"),
                       (["--kernel", "flex", *base, "--passes", "0"], "--passes"),
                       # The FlashAttention package: the causal call plan, bf16 or fp16, heads up to 256.
                       (["--kernel", "flash_attn", *base, "--dtype", "fp32"], "--dtype"),
                       (["--kernel", "fa3", *base, "--head-dim", "320"], "--head-dim"),
                       (["--kernel", "flash_attn", *base, "--mask", "window:4"], "--mask"),
                       (["--kernel", "fa3", *base, "--tile", "128"], "--tile"),
                       (["--kernel", "flash_attn", *base, "--sdpa-backend", "flash"], "--sdpa-backend")):
        result = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        expect(result.returncode == 2 and len(lines) == 1 and flag in lines[0] and not result.stdout,
               f"measure_kernels.py {' '.join(args)}: exit {result.returncode}, stderr {result.stderr!r}; expected "
               f"exit 2 and one line naming {flag}")
        expect(not os.path.exists(out), f"measure_kernels.py {' '.join(args)}: wrote {out}")
result = subprocess.run([sys.executable, script, "--self-test"], capture_output=True, text=True)
expect(result.returncode == 0 and not result.stdout and not result.stderr,
       f"measure_kernels.py --self-test: exit {result.returncode}, {result.stdout!r} {result.stderr!r}")

# ---- (c) bench/retime_measurements.py: every shipped file can be timed again as it was -------------
# --check builds each file's measure_kernels.py command line and refuses any whose workload would come
# back different (no torch needed).
retime = os.path.join(source, "bench", "retime_measurements.py")
ring_files = [path for path in files if os.path.relpath(path, source) in documents
              and documents[os.path.relpath(path, source)]["schema"] == "stripesim.measurements/1"]
with tempfile.TemporaryDirectory() as scratch:
    # A folder at a time: folders share file names, and one --out-dir takes one file of a name.
    checked = []  # (file, its command line)
    for folder in sorted({os.path.dirname(path) for path in ring_files}):
        inside = [path for path in ring_files if os.path.dirname(path) == folder]
        result = subprocess.run([sys.executable, retime, "--check", "--out-dir", scratch, *inside],
                                capture_output=True, text=True)
        commands = result.stdout.splitlines()
        expect(result.returncode == 0 and not result.stderr and len(commands) == len(inside),
               f"retime_measurements.py --check {os.path.relpath(folder, source)}/*: exit {result.returncode}, "
               f"{len(commands)} commands for {len(inside)} files, stderr {result.stderr!r}")
        checked += zip(inside, commands)
    expect(len(checked) == len(ring_files), f"retime_measurements.py --check: {len(checked)} commands")
    for path, command in checked:
        doc = documents[os.path.relpath(path, source)]
        want_kernel = "--kernel flex" if "flex_attention" in doc["kernel"] else "--kernel sdpa --sdpa-backend"
        expect(want_kernel in command and " --passes 3 " in command and f"--mask {doc['workload']['mask']}" in command
               and command.endswith(os.path.join(scratch, os.path.basename(path)) +
                                    (f" --tile {doc['workload']['tile']}" if doc["workload"].get("tile") else "")),
               f"retime_measurements.py --check {os.path.relpath(path, source)}: {command}")
    expect(not os.listdir(scratch), f"retime_measurements.py --check wrote {os.listdir(scratch)}")
    # Bad input: one line naming the file or flag, exit 2, nothing timed or written.
    unknown_kernel = os.path.join(scratch, "unknown-kernel.json")
    with open(unknown_kernel, "w") as f:
        json.dump(dict(documents[os.path.relpath(ring_files[0], source)], kernel="triton 3.0 my_attention"), f)
    block_costs = next(path for path in files if os.path.basename(path) == "block-costs-sdpa-flex.json")
    for args, named in ((["--out-dir", scratch, block_costs], "block-costs-sdpa-flex.json"),
                        (["--out-dir", scratch, unknown_kernel], "unknown-kernel.json"),
                        (["--out-dir", scratch, os.path.join(scratch, "absent.json")], "absent.json"),
                        (["--out-dir", os.path.join(scratch, "absent"), ring_files[0]], "--out-dir"),
                        (["--out-dir", scratch, "--passes", "0", ring_files[0]], "--passes"),
                        # Two files of one name would be retimed into one --out-dir/NAME.
                        (["--out-dir", scratch] + [path for path in ring_files if path.endswith("/causal-fwd-n16384-N2.json")][:2],
                         "causal-fwd-n16384-N2.json: given twice"),
                        (["--out-dir", scratch], "FILE")):
        result = subprocess.run([sys.executable, retime, *args], capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        expect(result.returncode == 2 and len(lines) == 1 and named in lines[0] and not result.stdout,
               f"retime_measurements.py {' '.join(args)}: exit {result.returncode}, stderr {result.stderr!r}")
    expect(os.listdir(scratch) == ["unknown-kernel.json"], f"retime_measurements.py wrote {os.listdir(scratch)}")

elapsed = time.monotonic() - started
for failure in failures:
    print(f"FAIL {failure}", file=sys.stderr)
print(f"{len(files)} measurement files, {len(failures)} failures, {elapsed:.1f} s")
sys.exit(1 if failures else 0)
