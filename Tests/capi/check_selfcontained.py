#!/usr/bin/env python3
"""check_selfcontained.py LIB DEMO TESTPKI_DIR CONFORMANCE_DIR [--max-bytes N]

Checks the shipped self-contained library (build/dist/libappstoreserver.so.0):
  - ldd lists only linux-vdso, libc, libm, libpthread, libdl and ld-linux (and nothing "not found");
    the DT_NEEDED entries are within the same set;
  - its GLOBAL/WEAK defined dynamic symbols are exactly appstore_* functions (at least one);
  - its SONAME is libappstoreserver.so.0;
  - its size (printed in bytes and MB) is at most --max-bytes (default 19 MiB, 19,922,944);
  - the C demo runs against it: DEMO (linked to the system-linked library through its RUNPATH) is started with
    LD_LIBRARY_PATH=<dir of LIB> and LD_DEBUG=libs; the dynamic loader's own trace must show that
    libappstoreserver.so.0 was initialised from LIB and that neither libswiftCore nor libcrypto was loaded,
    and the demo must print "demo OK".
Prints one line per check and "selfcontained: N passed, M failed". Python 3 standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

# glibc only (its pre-2.34 split included): libstdc++ and libgcc are linked in statically (docs/platforms.md).
ALLOWED_LIBS = ("linux-vdso.so", "libc.so", "libm.so", "libpthread.so", "libdl.so", "ld-linux")


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))
        return ok


def allowed(name: str) -> bool:
    base = os.path.basename(name)
    return any(base.startswith(a) for a in ALLOWED_LIBS)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main(argv) -> int:
    args, max_bytes = [], 19 << 20
    it = iter(argv[1:])
    for a in it:
        if a == "--max-bytes":
            max_bytes = int(next(it))
        else:
            args.append(a)
    if len(args) != 4:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    lib, demo, testpki, conformance = args
    t = Tally()
    if not t(os.path.isfile(lib), f"{lib} exists"):
        print(f"selfcontained: {t.passed} passed, {t.failed} failed")
        return 1

    # --- dependencies
    res = run(["ldd", lib])
    entries = []
    for line in res.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        entries.append(line.split()[0])
        t("not found" not in line, f"ldd: {line.split()[0]} resolves", line)
    t(res.returncode == 0 and entries, "ldd ran", res.stderr.strip())
    bad = [e for e in entries if not allowed(e)]
    t(not bad, "ldd lists only linux-vdso, libc, libm, libpthread, libdl, ld-linux", f"also: {bad}")
    print("     ldd: " + ", ".join(entries))
    dyn = run(["readelf", "-d", "--wide", lib]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    bad = [n for n in needed if not allowed(n)]
    t(needed and not bad, "DT_NEEDED only from the allowed set", f"{needed}")

    # --- SONAME
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    t(soname == ["libappstoreserver.so.0"], "SONAME is libappstoreserver.so.0", f"{soname}")

    # --- exported symbols
    syms = {}
    for line in run(["readelf", "--dyn-syms", "--wide", lib]).stdout.splitlines():
        cols = line.split()
        if len(cols) < 8 or not cols[0].endswith(":") or not cols[0][:-1].isdigit():
            continue
        typ, bind, ndx, name = cols[3], cols[4], cols[6], cols[7].split("@")[0]
        if ndx != "UND" and bind in ("GLOBAL", "WEAK", "GNU_UNIQUE"):
            syms[name] = typ
    foreign = sorted(n for n in syms if not n.startswith("appstore_"))
    not_func = sorted(n for n, ty in syms.items() if ty != "FUNC")
    t(len(syms) > 0, "exports something", "no GLOBAL defined dynamic symbols")
    t(not foreign, f"all {len(syms)} exported symbols are appstore_*", f"also exported: {foreign[:20]}"
      + (f" and {len(foreign) - 20} more" if len(foreign) > 20 else ""))
    t(not not_func, "all exported symbols are functions", f"{not_func}")

    # --- size
    size = os.path.getsize(lib)
    print(f"     size: {size} bytes ({size / 1e6:.2f} MB, {size / 2**20:.2f} MiB)")
    t(size <= max_bytes, f"size {size} bytes <= {max_bytes} bytes ({max_bytes / 1e6:.0f} MB)",
      f"{size} bytes is {size - max_bytes} bytes over")

    # --- the demo against this library, proven by the dynamic loader's trace
    env = dict(os.environ)
    libdir = os.path.dirname(os.path.abspath(lib))
    env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["LD_DEBUG"] = "libs"
    try:
        res = run([os.path.abspath(demo), testpki, conformance], env=env, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        t(False, "demo runs", str(e))
        print(f"selfcontained: {t.passed} passed, {t.failed} failed")
        return 1
    inits = re.findall(r"calling init: (\S+)", res.stderr)
    ours = [p for p in inits if os.path.basename(p).startswith("libappstoreserver.so")]
    print("     demo loaded: " + ", ".join(os.path.basename(p) for p in inits))
    t(len(ours) == 1 and os.path.realpath(ours[0]) == os.path.realpath(lib),
      f"demo loaded libappstoreserver from {lib}", f"loader trace shows {ours}")
    foreign_loaded = [p for p in inits if re.search(r"libswift|libcrypto|libFoundation|libdispatch",
                                                    os.path.basename(p))]
    t(not foreign_loaded, "no Swift runtime / libcrypto shared library loaded", f"{foreign_loaded}")
    out = res.stdout
    sys.stdout.write("".join("     | " + line + "\n" for line in out.splitlines()))
    t(res.returncode == 0 and "demo OK" in out, "demo succeeds against the self-contained library",
      f"exit {res.returncode}; stderr (without loader trace): "
      + "\n".join(line for line in res.stderr.splitlines() if not re.match(r"\s*\d+:", line))[-2000:])
    real = "real Apple notification" in out
    if os.path.isdir(conformance):
        t(real and "real Apple notification: SKIPPED" not in out, "demo verified the real Apple notification too")
    else:
        print(f"     note: {conformance} absent; only the own-PKI part of the demo ran")

    print(f"selfcontained: {t.passed} passed, {t.failed} failed")
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
