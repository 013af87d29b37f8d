#!/usr/bin/env python3
"""extract.py README SECTION FENCE N OUT -- write the N-th (1-based) fenced block whose info string is exactly FENCE,
inside the level-2 section SECTION of README (from its "## SECTION" heading to the next "## " heading), to OUT,
verbatim. Exit 1, naming what is missing, when there is no such block. Used by Tests/quickstart/run."""
import re
import sys


def fenced_blocks(text, section, fence):
    found, body, wanted, inside = [], None, False, False
    for line in text.splitlines(keepends=True):
        if body is not None:                       # inside a fence: collect until the closing ```
            if re.match(r"^```\s*$", line):
                if wanted:
                    found.append("".join(body))
                body = None
            else:
                body.append(line)
            continue
        if line.startswith("## "):
            inside = line[3:].strip() == section
            continue
        m = re.match(r"^```(\S*)", line)
        if m:
            body, wanted = [], inside and m.group(1) == fence
    return found


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    readme, section, fence, n, out = argv[1], argv[2], argv[3], int(argv[4]), argv[5]
    found = fenced_blocks(open(readme, encoding="utf-8").read(), section, fence)
    if len(found) < n:
        print(f"extract: {readme} has {len(found)} ```{fence} block(s) under '## {section}', not {n}", file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as f:
        f.write(found[n - 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
