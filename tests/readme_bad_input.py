"""The README's table of bad input ("Exit codes and bad input") against the CLI: every row's
command, run from the source folder, must exit with the row's code and print the row's message
on stderr. In a message, "<repo>" stands for the source folder and a trailing "..." for the rest
of a long list. Run by CTest: readme_bad_input.py BINARY SOURCE_DIR."""
import re
import subprocess
import sys
import os

binary, source = sys.argv[1], sys.argv[2]
text = open(os.path.join(source, "README.md")).read()
start = text.index("### Exit codes and bad input")
end = text.index("\n## ", start)
rows = [line for line in text[start:end].splitlines() if line.startswith("| `stripesim ")]
if len(rows) < 100:
    sys.exit(f"found only {len(rows)} rows in the README's bad-input table")

failures = []
for line in rows:
    cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
    command, message, code = cells[0].strip("`"), cells[1], int(cells[2])
    message = re.sub(r"^`|`( \(.*\))?$", "", message).replace("<repo>", source)
    if message.endswith("..."):
        message = message[:-3]
    result = subprocess.run(binary + command[len("stripesim"):], shell=True, capture_output=True, text=True,
                            cwd=source, timeout=300)
    if result.returncode != code or message not in result.stderr:
        failures.append(f"{command}\n  README: exit {code}, {message}\n  CLI:    exit {result.returncode}, "
                        f"{result.stderr.strip()[:300]}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"all {len(rows)} rows of the README's bad-input table match the CLI")
