"""Checks real stripesim output against the documented formats: every JSON against its JSON
Schema under reports/schema/, every CSV header against the JSON field names, every SVG the
report writes as XML that rsvg-convert renders. Run by CTest: validate_outputs.py BINARY SOURCE_DIR."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

import jsonschema

binary, source = sys.argv[1], sys.argv[2]
schemas = {name: json.load(open(os.path.join(source, "reports", "schema", f"{name}.schema.json")))
           for name in ("analyze", "tms", "sweep", "simulate", "baseline", "balance", "validate", "kernel",
                        "kernel-accuracy", "step-fit", "plan", "layout")}
failures = []


def run(*args):
    result = subprocess.run([binary, *args], capture_output=True, text=True, cwd=source)
    if result.returncode != 0:
        failures.append(f"stripesim {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def check(kind, text, what):
    try:
        doc = json.loads(text)
        jsonschema.Draft202012Validator.check_schema(schemas[kind])
        jsonschema.validate(doc, schemas[kind], cls=jsonschema.Draft202012Validator)
        return doc
    except Exception as error:  # report every failure, not just the first
        failures.append(f"{what}: {error}")
        return None


for args in (["analyze", "--format", "json"],
             ["analyze", "--seq-len", "64k", "--devices", "16", "--tile", "128x128", "--mask", "window:4k",
              "--layouts", "contiguous,striped,zigzag,block-striped:8", "--format", "json"],
             ["analyze", "--seq-len", "4k", "--devices", "4", "--mask", "documents:1k,3k", "--tile", "64x64", "--format", "json"],
             ["analyze", "--seq-len", "4k", "--devices", "4", "--mask", "documents:1k,3k", "--tile", "64x64", "--tiling",
              "varlen", "--format", "json"],
             ["analyze", "--seq-len", "4k", "--devices", "4", "--mask", "documents:768+256,3k:window=512", "--tile", "64x64",
              "--format", "json"],
             ["analyze", "--seq-len", "16k", "--devices", "4", "--mask", "documents:1000,15384", "--tile", "64x64",
              "--layouts", "doc-zigzag,doc-striped", "--pad-documents", "--format", "json"]):
    analyze = check("analyze", run(*args), " ".join(args))
check("tms", run("tms", "--format", "json"), "tms")
check("tms", run("tms", "--model", "llama3-70b", "--hardware", "h100", "--convention", "exact", "--layouts",
                 "block-striped:64", "--format", "json"), "tms exact")
sweep = check("sweep", run("sweep", "--layouts", "block-striped:8", "--format", "json"), "sweep")
check("sweep", run("sweep", "--experiment", "configs/experiments/paper-tms.json", "--format", "json"), "sweep paper")
for args in (["simulate", "--format", "json"],
             ["simulate", "--pass", "fwdbwd", "--topology", "cluster:2x4", "--sync", "lockstep", "--format", "json"],
             ["simulate", "--summary-only", "--format", "json"],
             ["simulate", "--cp", "hybrid:2x4", "--pass", "fwdbwd", "--topology", "cluster:2x4", "--format", "json"],
             ["simulate", "--cp", "allgather:2", "--pass", "fwdbwd", "--format", "json"],
             ["simulate", "--cp", "ulysses", "--model", "llama3-8b", "--scope", "layer", "--format", "json"],
             ["simulate", "--model", "1b", "--scope", "step", "-M", "2", "-N", "4", "-n", "64k", "--recompute",
              "--summary-only", "--format", "json"],
             ["simulate", "--model", "llama3-8b", "--hardware", "h100", "--scope", "layer", "-N", "4", "-n", "32k",
              "--format", "json"],
             ["simulate", "--model", "llama3-8b", "--hardware", "h100", "--scope", "step", "-N", "4", "-D", "2", "-n", "32k",
              "--zero", "3", "--summary-only", "--format", "json"],
             ["simulate", "--hardware", "h200", "--kernel", "fa3", "--mask", "documents:1k,3k", "-n", "4k", "-N", "2",
              "--summary-only", "--format", "json"],
             # a window on a kernel fitted on causal calls only: the output carries its note
             ["simulate", "--hardware", "h100", "--mask", "window:4096", "-n", "64k", "-N", "8", "--format", "json"]):
    check("simulate", run(*args), " ".join(args))
check("sweep", run("sweep", "--experiment", "configs/experiments/paper-measured.json", "--format", "json"), "sweep paper step")
check("step-fit", run("calibrate-step", "--experiment", "configs/experiments/paper-measured.json", "--format", "json"),
      "calibrate-step")
check("plan", run("plan", "--model", "1b", "--hardware", "h100", "--gpus", "8", "-n", "64k", "--format", "json"), "plan")
check("plan", run("plan", "--model", "1b", "--hardware", "h100", "--gpus", "8", "-n", "64k", "--zero", "1", "--recompute",
                  "--format", "json"), "plan sharded")
simulate_csv = list(csv.DictReader(io.StringIO(run("simulate", "--model", "1b", "--scope", "step", "--format", "csv"))))
if [row["layout"] for row in simulate_csv] != ["contiguous", "striped", "zigzag"] or "mfu" not in simulate_csv[0]:
    failures.append(f"simulate --scope step --format csv: expected a row per layout with mfu, got {simulate_csv[:1]}")
check("layout", run("layout", "--layout", "zigzag", "-n", "64", "-N", "4"), "layout zigzag")
check("layout", run("layout", "--layout", "doc-striped", "-n", "4k", "-N", "2", "--mask", "documents:1000+24,3072"),
      "layout over padded documents")
check("plan", run("plan", "--model", "1b", "--hardware", "h100", "--gpus", "4", "-n", "16k", "--mask",
                  "documents:lognormal:1000:1.0:seed=1", "--layouts", "contiguous,doc-zigzag", "--pad-documents",
                  "--format", "json"), "plan over padded documents")
check("layout", run("layout", "--layout", "balanced", "-n", "1000", "-N", "4", "--tile", "16x16", "--mask", "documents:300,700",
                    "--pad-documents"), "layout balanced --pad-documents")
check("layout", run("layout", "--layout", "striped", "-n", "4k", "-N", "8", "--mask", "window:512"), "layout window")
check("balance", run("sweep", "--kind", "balance", "--seq-lens", "64k", "--devices", "8", "--masks",
                     "documents:lognormal:2048:1.0,window:4k", "--layouts", "contiguous,striped,zigzag,doc-zigzag,balanced",
                     "--pad-documents", "--format", "json"), "sweep --kind balance")
check("balance", run("sweep", "--kind", "balance", "--seq-lens", "64k", "--devices", "8", "--masks",
                     "documents:lognormal:2048:1.0", "--tiling", "varlen", "--format", "json"), "sweep --kind balance --tiling varlen")
check("tms", run("tms", "--hardware", "h100", "--mask", "documents:lognormal:2048:1.0", "--tiling", "varlen", "--format", "json"),
      "tms --tiling varlen")
check("balance", open(os.path.join(source, "reports", "documents", "documents.json")).read(), "reports/documents")
# The validator on the CPU backend: a small matrix, calibrated on half and predicted on the rest.
validate_args = ["validate", "--compare", "--seq-len", "256", "--devices", "2,4", "--tile", "16x16,32x32",
                 "--mask", "causal", "--mask", "window:40", "--warmup", "0", "--iterations", "1", "--format", "json"]
validated = check("validate", run(*validate_args), "validate --compare")
check("validate", run("validate", "--seq-len", "128", "--devices", "2", "--layouts", "zigzag", "--cp", "ring,allgather,ulysses",
                      "--iterations", "1", "--format", "json"), "validate --cp")
compared_cps = check("validate", run("validate", "--compare", "--seq-len", "128,256,512", "--devices", "2", "--layouts", "zigzag",
                                     "--cp", "ring,allgather,ulysses", "--iterations", "1", "--format", "json"),
                     "validate --cp --compare")
if compared_cps is not None and (sorted(compared_cps.get("errors_by_cp", {})) != ["allgather", "ring", "ulysses"]
                                 or not compared_cps.get("notes")):
    failures.append("validate --cp --compare: errors_by_cp of the three algorithms and a note expected")
check("validate", run("validate", "--seq-len", "128", "--devices", "2", "--layouts", "zigzag", "--no-check",
                      "--iterations", "1", "--format", "json"), "validate --no-check")
# Every committed run, GPU runs included: what the validator wrote on real hardware.
for folder, _, names in sorted(os.walk(os.path.join(source, "reports", "validation"))):
    if "validate.json" in names:
        path = os.path.join(folder, "validate.json")
        check("validate", open(path).read(), os.path.relpath(path, source))
check("baseline", open(os.path.join(source, "reports", "baseline", "imbalance.json")).read(), "baseline")
# Kernel profiles: every shipped one, and the fit and leave-one-out scores on the shipped sdpa files.
for folder, _, names in sorted(os.walk(os.path.join(source, "configs", "kernels"))):
    for name in sorted(names):
        check("kernel", open(os.path.join(folder, name)).read(), os.path.join(folder, name))
measured = os.path.join("configs", "measurements", "h100")
with tempfile.TemporaryDirectory() as folder:
    files = [arg for name in sorted(os.listdir(os.path.join(source, measured, "sdpa")))
             for arg in ("--measurements", os.path.join(measured, "sdpa", name))]
    check("kernel-accuracy", run("validate", "--compare", "--hardware", "h100", "--kernel", "sdpa", *files,
                                 "--out-dir", folder, "--format", "json"), "validate --compare --measurements")
    check("kernel-accuracy", run("validate", "--compare", "--no-fit", "--hardware", "h100", "--kernel", "sdpa", *files,
                                 "--format", "json"), "validate --compare --no-fit --measurements")
    written = os.path.join(folder, "kernel.json")
    if os.path.exists(written):
        check("kernel", open(written).read(), "validate --out-dir kernel.json")
for kernel in ("h100-sdpa", "h100-flex"):
    check("kernel-accuracy", open(os.path.join(source, "reports", "kernels", kernel, "accuracy.json")).read(),
          f"reports/kernels/{kernel}")

# CSV columns are the JSON field names.
header = next(csv.reader(io.StringIO(run("analyze", "--format", "csv", "--matrices"))))
if header != ["layout", "round", "device", "kv_source", "unmasked_elements", "active_tiles", "partial_tiles"]:
    failures.append(f"analyze CSV header {header}")
result_fields = schemas["analyze"]["properties"]["results"]["items"]["properties"]
missing = set(header) - {"layout", "round", "device", "kv_source"} - set(result_fields)
if missing:
    failures.append(f"analyze CSV columns not in the JSON: {missing}")
# The summary CSV: the config's fields, then metrics.<unit>.<key> as <unit>_<key>, then the result's own fields.
summary = next(csv.reader(io.StringIO(run("analyze", "--format", "csv"))))
metric_fields = result_fields["metrics"]["properties"]
known = set(schemas["analyze"]["properties"]["config"]["properties"]) | set(result_fields) | {
    f"{unit}_{key}" for unit in metric_fields for key in metric_fields[unit]["properties"]}
if set(summary) - known:
    failures.append(f"analyze summary CSV columns not in the JSON: {set(summary) - known}")
# tms CSV: the request's fields (config, flops) then the JSON's per-layout fields.
tms_csv = next(csv.reader(io.StringIO(run("tms", "--format", "csv"))))
tms_known = set(schemas["tms"]["properties"]["config"]["properties"]) | set(
    schemas["tms"]["properties"]["flops"]["required"]) | set(
    schemas["tms"]["properties"]["layouts"]["items"]["properties"])
if set(tms_csv) - tms_known:
    failures.append(f"tms CSV columns not in the JSON: {set(tms_csv) - tms_known}")
sweep_csv = next(csv.reader(io.StringIO(run("sweep", "--layouts", "block-striped:8"))))
if sweep and sweep_csv != list(sweep["rows"][0].keys()):
    failures.append(f"sweep CSV header {sweep_csv} differs from the JSON row keys")

# The report's SVGs parse as XML, render at their stated size, and keep everything they draw
# inside their view box (text measured here on its own, at DejaVu Sans' average glyph width).
SVG = "{http://www.w3.org/2000/svg}"


def png_size(path):
    with open(path, "rb") as f:
        header = f.read(24)
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def check_inside(name, root):
    vx, vy, vw, vh = (float(v) for v in root.get("viewBox").split())
    if (round(vw), round(vh)) != (round(float(root.get("width"))), round(float(root.get("height")))):
        failures.append(f"{name}: viewBox {vw}x{vh} differs from its size {root.get('width')}x{root.get('height')}")
    outside = []
    for text in root.iter(SVG + "text"):
        size = float(text.get("font-size"))
        width = len(text.text or "") * size * (0.6 if text.get("font-weight") == "bold" else 0.55)
        x, y = float(text.get("x")), float(text.get("y"))
        left = {"start": x, "middle": x - width / 2, "end": x - width}[text.get("text-anchor")]
        if left < vx or left + width > vx + vw or y - size < vy or y > vy + vh:
            outside.append(text.text)
    for rect in root.iter(SVG + "rect"):
        x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
        if x < vx - 0.01 or y < vy - 0.01 or x + w > vx + vw + 0.01 or y + h > vy + vh + 0.01:
            outside.append(f"rect at {x},{y}")
    if outside:
        failures.append(f"{name}: drawn outside its view box: {outside[:3]}")


def mesh_key(label):
    return tuple(int(part) for part in label.split("x"))


with tempfile.TemporaryDirectory() as folder:
    inputs = []
    # Beside the defaults: more meshes than the palette has colours (a long legend, numbers that
    # sort wrongly as text) and a single device (the narrowest heat map).
    for name, args in (("analyze", ["analyze", "--format", "json"]), ("tms", ["tms", "--format", "json"]),
                       ("sweep", ["sweep", "--format", "json"]),
                       ("sweep-meshes", ["sweep", "--devices", "1,2,4,8,16,32", "--model-parallel", "1,2",
                                         "--seq-lens", "16k,256k", "--hardware", "h100", "--format", "json"]),
                       ("analyze-one-device", ["analyze", "-N", "1", "-n", "16k", "--layouts", "zigzag", "--format", "json"]),
                       ("simulate", ["simulate", "--pass", "fwdbwd", "--format", "json"])):
        path = os.path.join(folder, f"{name}.json")
        with open(path, "w") as f:
            f.write(run(*args))
        inputs.append(path)
    validate = os.path.join(folder, "validate.json")
    with open(validate, "w") as f:
        json.dump(validated, f)
    inputs.append(validate)
    report = os.path.join(folder, "report")
    said = run("report", *inputs, "--out-dir", report)
    svgs = sorted(name for name in os.listdir(report) if name.endswith(".svg"))
    if len(svgs) < 10:
        failures.append(f"report wrote only {svgs}")
    if f"({len(svgs)} figures)" not in said:
        failures.append(f"report said {said.strip()!r} for {len(svgs)} figures")
    one = run("report", validate, "--out-dir", os.path.join(folder, "one"))
    if not one.strip().endswith("(1 figure)"):
        failures.append(f"report of one figure said {one.strip()!r}")
    for name in svgs:
        path = os.path.join(report, name)
        try:
            root = ElementTree.parse(path).getroot()
            if not root.tag.endswith("svg"):
                failures.append(f"{name}: root element {root.tag}")
            check_inside(name, root)
        except ElementTree.ParseError as error:
            failures.append(f"{name}: not XML: {error}")
            continue
        png = path + ".png"
        rendered = subprocess.run(["rsvg-convert", "-o", png, path], capture_output=True, text=True)
        if rendered.returncode != 0 or os.path.getsize(png) < 1000:
            failures.append(f"{name}: rsvg-convert failed: {rendered.stderr.strip()}")
        elif png_size(png) != (round(float(root.get("width"))), round(float(root.get("height")))):
            failures.append(f"{name}: rendered {png_size(png)}, not {root.get('width')}x{root.get('height')}")
        texts = [t.text or "" for t in root.iter(SVG + "text")]
        if name.startswith("tms-"):
            meshes = [t.removeprefix("mesh ") for t in texts if t.startswith("mesh ")]
            if meshes != sorted(meshes, key=mesh_key):
                failures.append(f"{name}: legend not in numeric order: {meshes}")
        if name.startswith("attention-matrix-"):
            promises_numbers = any("number = the round" in t for t in texts)
            numbers = sum(t.isdigit() for t in texts)
            titled = sum(1 for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None)
            if promises_numbers and numbers == 0 or not promises_numbers and titled == 0:
                failures.append(f"{name}: the caption promises round numbers the figure does not draw")
    markdown = open(os.path.join(report, "report.md")).read()
    for name in svgs:
        if f"]({name})" not in markdown:
            failures.append(f"report.md does not link {name}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"all outputs match their schemas; {len(svgs)} report figures parse and render")
