"""The numbers the README's shell examples promise in their comments, against the CLI: a figure
quoted beside a command is what that command gives today, not what it gave the day it was written.
Two forms are checked, wherever they stand in a ```sh block:

    stripesim simulate ARGS   # 29.0 ms          one layout: its time, to the comment's decimals
    stripesim analyze ARGS
    #  tiles lockstep vs contiguous: striped 0.96x, zigzag 0.75x

Shell variables assigned earlier in the block (`C="--hardware b200 ..."`) are expanded. Any other
comment with a number beside a `stripesim simulate` line is refused, so a figure cannot be added
unchecked. A third form checks printed output: a block right after a line

    <!-- output of: stripesim ARGS -->

(invisible where the README is rendered) must hold only lines the command prints, each whole. Run by CTest: readme_examples.py BINARY SOURCE_DIR [README] (the README defaults to
SOURCE_DIR's; commands run from SOURCE_DIR)."""
import csv
import io
import re
import shlex
import subprocess
import sys
import os

binary, source = sys.argv[1], sys.argv[2]
readme = sys.argv[3] if len(sys.argv) > 3 else os.path.join(source, "README.md")
lines = open(readme).read().split("\n")
minimum = 5 if len(sys.argv) <= 3 else 1  # the project's README quotes at least 5

ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")
SIMULATE_TIME = re.compile(r"^(stripesim simulate .*?)\s+#\s*(\d+(?:\.\d+)?) ms\s*$")
ANALYZE_SPEEDUPS = re.compile(r"^#\s+tiles lockstep vs contiguous: (.*)$")


def expand(line, variables):
    return re.sub(r"\$([A-Z][A-Z0-9_]*)", lambda m: variables.get(m.group(1), m.group(0)), line)


def run_csv(command):
    """The command's rows, run with --format csv from the source folder."""
    args = shlex.split(command)
    result = subprocess.run([binary, *args[1:], "--format", "csv"], capture_output=True, text=True, cwd=source,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[:300]}")
    return list(csv.DictReader(io.StringIO(result.stdout)))


def decimals(figure):
    return len(figure.split(".")[1]) if "." in figure else 0


failures, checked = [], 0
in_block, variables, previous = False, {}, None
for number, line in enumerate(lines, 1):
    if line.startswith("```"):
        in_block = line.strip() == "```sh"
        variables, previous = {}, None
        continue
    if not in_block:
        continue
    text = line.strip()
    assignment = ASSIGNMENT.match(text)
    if assignment:
        variables[assignment.group(1)] = expand(assignment.group(2).strip('"'), variables)
        continue
    try:
        simulate = SIMULATE_TIME.match(text)
        analyze = ANALYZE_SPEEDUPS.match(text)
        if simulate:
            command, figure = expand(simulate.group(1), variables), simulate.group(2)
            rows = run_csv(command)
            if len(rows) != 1:
                raise RuntimeError(f"gives {len(rows)} layouts; a time in a comment needs exactly one")
            got = f"{float(rows[0]['time_us']) / 1000:.{decimals(figure)}f}"
            checked += 1
            if got != figure:
                failures.append(f"README line {number}: {figure} ms, the CLI gives {got} ms\n  {command}")
        elif analyze:
            if previous is None or not previous.startswith("stripesim analyze "):
                raise RuntimeError("a 'tiles lockstep vs contiguous' comment must follow a stripesim analyze line")
            rows = {row["layout"]: row for row in run_csv(previous)}
            for item in analyze.group(1).split(", "):
                layout, figure = item.rsplit(" ", 1)
                if layout not in rows or not figure.endswith("x"):
                    raise RuntimeError(f"'{item}': no such layout in the output, or not a figure like 0.75x")
                got = f"{float(rows[layout]['tiles_lockstep_speedup_vs_contiguous']):.{decimals(figure[:-1])}f}x"
                checked += 1
                if got != figure:
                    failures.append(f"README line {number}: {layout} {figure}, the CLI gives {got}\n  {previous}")
        elif text.startswith("stripesim simulate ") and re.search(r"#.*\d", text) and "ms" in text.split("#", 1)[1]:
            raise RuntimeError("a figure in this comment is not of the checked form '# 12.3 ms'")
    except RuntimeError as error:
        failures.append(f"README line {number}: {error}\n  {text}")
    if text.startswith("stripesim "):
        previous = expand(text, variables)

# Output blocks: every non-blank line of the block is a line the command prints (trailing blanks aside).
OUTPUT_OF = re.compile(r"^<!-- output of: (stripesim .*) -->$")
for number, line in enumerate(lines, 1):
    marker = OUTPUT_OF.match(line.strip())
    if not marker:
        continue
    command = marker.group(1)
    if number >= len(lines) or not lines[number].startswith("```"):
        failures.append(f"README line {number}: an 'output of' line must stand right before a ``` block")
        continue
    block = []
    for following in lines[number + 1:]:
        if following.startswith("```"):
            break
        block.append(following.rstrip())
    result = subprocess.run([binary, *shlex.split(command)[1:]], capture_output=True, text=True, cwd=source, timeout=600)
    printed = {printed_line.rstrip() for printed_line in result.stdout.split("\n")}
    missing = [(number + 2 + i, text) for i, text in enumerate(block) if text and text not in printed]
    checked += 1
    if result.returncode != 0:
        failures.append(f"README line {number}: exit {result.returncode}: {result.stderr.strip()[:300]}\n  {command}")
    elif missing:
        at, text = missing[0]
        failures.append(f"README line {at}: the CLI no longer prints this line ({len(missing)} of {len(block)} differ)\n"
                        f"  {text}\n  {command}")

if checked < minimum:
    failures.append(f"found only {checked} figures in the README's examples; expected at least {minimum}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"all {checked} figures in the README's shell examples match the CLI")
