"""The Markdown files' links inside the repository resolve: every `](#anchor)` names a heading of the
same file (as GitHub turns headings into anchors), and every relative `](path)` names a file or a
folder of the repository. Links to the web are not followed (the tests run offline). Checked: the
README and the READMEs of the folders it points readers to. Run by CTest: readme_links.py SOURCE_DIR."""
import os
import re
import sys

source = os.path.abspath(sys.argv[1])
FILES = ["README.md", "validate/cuda/README.md", "reports/validation/README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and underscores kept),
    each space a hyphen."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every heading's anchor, a repeated one numbered as GitHub numbers it (-1, -2, ...)."""
    seen, out = {}, set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        match = re.match(r"^#{1,6} (.*)$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            out.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return out


failures, checked = [], 0
for name in FILES:
    path = os.path.join(source, name)
    if not os.path.exists(path):
        failures.append(f"{name}: listed here but not in the repository")
        continue
    text = open(path, encoding="utf-8").read()
    known = anchors(text)
    folder = os.path.dirname(path)
    in_code = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):  # https:, mailto: ...
                continue
            checked += 1
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(folder, file_part))
                if not resolved.startswith(os.path.normpath(source)) or not os.path.exists(resolved):
                    failures.append(f"{name} line {number}: {target}: no such file in the repository")
                continue
            if anchor not in known:
                failures.append(f"{name} line {number}: #{anchor}: no heading of {name} has this anchor")

for failure in failures:
    print(failure)
if checked < 30:
    sys.exit(f"found only {checked} links to check")
print(f"{checked} links checked, {len(failures)} broken")
sys.exit(1 if failures else 0)
