"""tests/readme_examples.py, the checker itself, on READMEs written here: figures that match pass;
a stale time, a stale analyze ratio, a time beside a command that prints several layouts and a
figure in a form it does not check each fail, named with their line; so do a printed output block
that no longer matches and a marker standing apart from its block. Run by CTest:
test_readme_examples.py BINARY SOURCE_DIR."""
import csv
import io
import pathlib
import subprocess
import sys
import tempfile

binary, source = sys.argv[1], pathlib.Path(sys.argv[2])
checker = source / "tests" / "readme_examples.py"
failures = []


def check(text):
    with tempfile.TemporaryDirectory() as tmp:
        readme = pathlib.Path(tmp) / "README.md"
        readme.write_text(text)
        r = subprocess.run([sys.executable, str(checker), binary, str(source), str(readme)], capture_output=True,
                           text=True, timeout=300)
        return r.returncode, r.stdout


def time_ms(args):
    out = subprocess.run([binary, *args.split(), "--format", "csv"], capture_output=True, text=True, check=True,
                         cwd=source).stdout
    return float(next(csv.DictReader(io.StringIO(out)))["time_us"]) / 1000


ARGS = "simulate -N 4 -n 16k --layouts zigzag"
true_ms = f"{time_ms(ARGS):.1f}"
stale_ms = f"{float(true_ms) + 0.1:.1f}"
VAR = 'C="-N 4 -n 16k"\n'
# Two lines `stripesim simulate` prints for ARGS: its table's header and its zigzag row.
OUTPUT = [line.rstrip() for line in subprocess.run([binary, *ARGS.split()], capture_output=True, text=True, check=True,
                                                    cwd=source).stdout.split("\n")
          if line.startswith(("layout ", "zigzag "))]
ANALYZE = "stripesim analyze -n 64k -N 4 --tile 128x128 --mask documents:16k,16k,16k,16k:window=8k\n"

cases = [
    ("matching figures", f"```sh\n{VAR}stripesim simulate $C --layouts zigzag   # {true_ms} ms\n{ANALYZE}"
                         "#  tiles lockstep vs contiguous: striped 0.96x, zigzag 0.75x\n```\n", 0, []),
    ("a stale time", f"text\n```sh\nstripesim {ARGS}   # {stale_ms} ms\n```\n", 1,
     [f"README line 3: {stale_ms} ms, the CLI gives {true_ms} ms"]),
    ("a stale ratio", f"```sh\n{ANALYZE}#  tiles lockstep vs contiguous: zigzag 0.76x\n```\n", 1,
     ["README line 3: zigzag 0.76x, the CLI gives 0.75x"]),
    ("several layouts", "```sh\nstripesim simulate -N 4 -n 16k   # 1.0 ms\n```\n", 1,
     ["README line 2: gives 3 layouts; a time in a comment needs exactly one"]),
    ("an unchecked form", f"```sh\nstripesim {ARGS}   # about {true_ms} ms on an A100\n```\n", 1,
     ["README line 2: a figure in this comment is not of the checked form"]),
    ("outside a sh block", f"```\nstripesim {ARGS}   # {stale_ms} ms\n```\n```sh\n{ANALYZE}"
                           "#  tiles lockstep vs contiguous: zigzag 0.75x\n```\n", 0, []),
    # Printed output: lines the command prints pass, blank lines aside; a line it no longer prints
    # fails with its own line number; the marker must stand right before its block.
    ("printed output", f"<!-- output of: stripesim {ARGS} -->\n```\n{OUTPUT[0]}\n\n{OUTPUT[1]}\n```\n{ANALYZE}", 0, []),
    ("stale printed output", f"<!-- output of: stripesim {ARGS} -->\n```\n{OUTPUT[0]}\n{OUTPUT[1]}x\n```\n", 1,
     ["README line 4: the CLI no longer prints this line (1 of 2 differ)"]),
    ("a marker without its block", f"<!-- output of: stripesim {ARGS} -->\n\n```\n{OUTPUT[0]}\n```\n", 1,
     ["README line 1: an 'output of' line must stand right before a ``` block"]),
]
for name, text, code, says in cases:
    got, out = check(text)
    if got != code or any(s not in out for s in says):
        failures.append(f"{name}: exit {got} (expected {code}), output {out!r}")

for failure in failures:
    print(f"FAIL: {failure}")
print(f"{len(cases)} cases; {len(failures)} failures")
sys.exit(1 if failures else 0)
