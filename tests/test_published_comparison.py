"""scripts/published-comparison.py --readme, the checker itself (without running stripesim): every
one of the 199 published rows (85 of one attention layer, 30 of training steps, 16 read off
MagiAttention's H100 and B200 charts, 68 single-call kernel rates of its kernel benchmarks) is found in the README's tables with its predicted and error cells
(and the Llama rows' "without merges" cell); predictions equal to the cells pass, a changed cell
is named with its line, a row stripesim has no prediction for is named once; a README that cannot
be read or lacks the section gets one line and exit code 2 before anything is simulated.
Run by CTest: test_published_comparison.py SOURCE_DIR."""
import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile

source = pathlib.Path(sys.argv[1])
script = source / "scripts" / "published-comparison.py"
spec = importlib.util.spec_from_file_location("published_comparison", script)
comparison = importlib.util.module_from_spec(spec)
spec.loader.exec_module(comparison)
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


readme_path = source / "README.md"
readme = readme_path.read_text()
cells = comparison.readme_cells(readme)
rows = {key for _, key, _ in cells if key[-1] != "error"}
errors = {key[:-1] for _, key, _ in cells if key[-1] == "error"}
expect(set(comparison.PUBLISHED) <= rows, f"published rows missing from the tables: {sorted(set(comparison.PUBLISHED) - rows)}")
expect(set(comparison.PUBLISHED) == errors, "every published row has one error cell, and only those")
merges = {key for key in rows if key[3] == "llama without merges"}
expect(len(merges) == 8, f"the 8 Llama rows' 'without merges' cells, found {len(merges)}")
expect(len(rows) == len(comparison.PUBLISHED) + 8, "no other rows")
steps = {key for key in comparison.PUBLISHED if key[0] == comparison.STEP_TABLE}
charts = {key for key in comparison.PUBLISHED if key[0] == comparison.MAGI_TABLE}
kernels = {key for key in comparison.PUBLISHED if key[0] == comparison.KERNEL_TABLE}
expect(len(steps) == 30 and len(charts) == 16 and len(kernels) == 68 and len(comparison.PUBLISHED) == 199,
       f"30 training-step, 16 chart and 68 kernel rows of 199, found {len(steps)}, {len(charts)} and {len(kernels)} "
       f"of {len(comparison.PUBLISHED)}")

# Predictions that are the cells themselves: no predicted cell disagrees (the error cells may,
# by a rounding: they were taken from unrounded predictions).
predicted = {key: float(cell) for _, key, cell in cells if key[-1] != "error"}
mismatches = comparison.readme_mismatches(readme_path, readme, predicted)
expect(all(m.split(": ")[1].endswith(" error") for m in mismatches), f"predicted cells read back as printed: {mismatches}")

# One predicted cell moved by 0.01: named with its line and both values.
line, key, cell = next((n, k, c) for n, k, c in cells if k == ("usp", "a100", "fwd", "2x32 ring", "striped"))
moved = dict(predicted)
moved[key] = float(cell) + 0.01
found = [m for m in comparison.readme_mismatches(readme_path, readme, moved) if not m.split(": ")[1].endswith(" error")]
expect(found == [f"{readme_path}:{line}: usp a100 fwd 2x32 ring striped: the table says {cell}, stripesim gives {float(cell) + 0.01:.2f}"],
       f"a moved prediction is named: {found}")
# A row whose layout is misspelt in the table: named once.
lines = readme.split("\n")
lines[line - 1] = lines[line - 1].replace("| striped |", "| stripd |")
misspelt = comparison.readme_mismatches(readme_path, "\n".join(lines), predicted)
named = [m for m in misspelt if "stripd" in m]
expect(named == [f"{readme_path}:{line}: usp a100 fwd 2x32 ring stripd: a row stripesim has no prediction for"], f"{named}")

# Bad input: one line, exit 2, before any simulation (no stripesim is given to run).
with tempfile.TemporaryDirectory() as tmp:
    other = pathlib.Path(tmp) / "other.md"
    other.write_text("# Another README\n")
    for readme_flag, says in ((os.path.join(tmp, "missing.md"), "cannot be read"),
                              (str(other), "has no heading '### Predicted against published measurements'")):
        r = subprocess.run([sys.executable, str(script), "--readme", readme_flag, "--stripesim", "/nonexistent/stripesim"],
                           capture_output=True, text=True)
        expect(r.returncode == 2, f"--readme {readme_flag}: exit {r.returncode}")
        expect(r.stderr.count("\n") == 1 and says in r.stderr and f"--readme {readme_flag}" in r.stderr, f"--readme {readme_flag}: {r.stderr!r}")
        expect(r.stdout == "", f"--readme {readme_flag}: nothing on stdout")

for failure in failures:
    print(f"FAIL: {failure}")
print(f"{len(cells)} cells checked; {len(failures)} failures")
sys.exit(1 if failures else 0)
