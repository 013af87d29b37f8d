#!/usr/bin/env python3
"""Apple's base URLs have one home, the core (appstore_api_base_url): no hand-written binding source may type them.

    check_base_urls.py REPO            scans bindings/ (sources, not tests, docs or generated files); exit 1 naming each
    check_base_urls.py REPO --self-test   shows the scan finds a URL planted in a scratch binding file
"""
import re
import sys
import tempfile
from pathlib import Path

URL = re.compile(r"api\.storekit(-sandbox)?(\.itunes)?\.apple\.com|local-testing-base-url")
SOURCES = {".py", ".js", ".mjs", ".ts", ".java", ".c", ".h", ".go", ".php"}
SKIP_PARTS = {"test", "tests", "generated", "_generated", "node_modules", "build", "vendor", "examples", "typing"}


def offenders(bindings: Path) -> list:
    found = []
    for f in sorted(bindings.rglob("*")):
        rel = f.relative_to(bindings)
        if not f.is_file() or f.suffix not in SOURCES or SKIP_PARTS & set(rel.parts) or f.name.startswith("."):
            continue
        if "_test." in f.name or f.name.endswith("Test.php"):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if URL.search(line):
                found.append(f"{rel}:{n}: {line.strip()[:120]}")
    return found


def main() -> int:
    repo = Path(sys.argv[1])
    if "--self-test" in sys.argv:
        with tempfile.TemporaryDirectory() as d:
            planted = Path(d) / "python" / "appstoreserver" / "client.py"
            planted.parent.mkdir(parents=True)
            planted.write_text('BASE = "https://api.storekit-sandbox.apple.com"\n')
            caught = offenders(Path(d))
        print("base URLs self-test:", "caught" if caught else "MISSED")
        return 0 if caught else 1
    found = offenders(repo / "bindings")
    for line in found:
        print("FAIL Apple's base URL typed in a binding (read appstore_api_base_url instead):", line)
    print(f"base URLs: {0 if found else 1} passed, {1 if found else 0} failed")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
