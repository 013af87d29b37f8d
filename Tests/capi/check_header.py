#!/usr/bin/env python3
"""check_header.py HEADER GENERATED_HEADER LIB.so [LIB.so ...] [--cc CC ...] [--self-test]

Proves that the hand-written C header (include/appstoreserver.h) and the library agree:

 (a) symbols: for every LIB.so, the set of function prototypes in HEADER equals the set of GLOBAL (or WEAK)
     defined dynamic symbols of the library (readelf --dyn-syms), and each of them is a FUNC;
 (b) types: every prototype of HEADER is also declared in GENERATED_HEADER (the header swiftc emits from the @c
     exports), and a C compiler proves the two declarations have compatible types: a generated C file includes
     GENERATED_HEADER, re-declares HEADER's types with the opaque handles as `void` (Swift's OpaquePointer; the
     `const` on a handle's pointee is dropped for the same reason, it does not exist in Swift and is not part of
     the ABI), builds a function-pointer type from each hand-written prototype and asserts
         _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), hand_written_type), "ABI mismatch: fn");
     compiled with CC -fsyntax-only.

--self-test: instead, checks that the checker can fail. It writes two deliberately altered copies of HEADER to a
temporary directory (app_apple_id declared int32_t instead of int64_t; an extra prototype appstore_verifier_reset)
and requires that exactly these problems are reported, and nothing else; then requires the unaltered HEADER to
pass.

Output: one line per problem, then "header: N passed, M failed". Exit status 1 when anything failed.
Python 3 standard library only; needs readelf (binutils) and a C compiler (gcc or clang).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

# --------------------------------------------------------------------------------------------------------------
# parsing: the same parser as the ABI description (scripts/specgen/header_parser.py)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from specgen.header_parser import parse_header as _parse_header, strip_comments  # noqa: E402


def parse_header(path: str):
    """Returns (typedefs, prototypes, problems): prototypes = {name: (ret, params)} as the compiler sees them."""
    typedefs, protos, problems = _parse_header(path)
    return typedefs, {n: (p.ret, p.params) for n, p in protos.items()}, problems


def generated_functions(path: str) -> set[str]:
    with open(path, encoding="utf-8") as f:
        text = strip_comments(f.read())
    return set(re.findall(r"SWIFT_EXTERN\b[^;(]*?\b(appstore_\w+)\s*\(", text))


# --------------------------------------------------------------------------------------------------------------
# (a) exported symbols


def exported_symbols(lib: str):
    """{name: type} of the defined dynamic symbols with GLOBAL/WEAK/GNU_UNIQUE binding."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", lib], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        cols = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(cols) < 8 or not cols[0].endswith(":") or not cols[0][:-1].isdigit():
            continue
        typ, bind, ndx, name = cols[3], cols[4], cols[6], cols[7]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK", "GNU_UNIQUE") or not name:
            continue
        syms[name.split("@")[0]] = typ
    return syms


def check_symbols(protos: dict, lib: str, report) -> None:
    if not os.path.exists(lib):
        report(False, f"{lib}: not found")
        return
    syms = exported_symbols(lib)
    declared = set(protos)
    for name in sorted(declared - set(syms)):
        report(False, f"{lib}: {name} is declared in the header but not exported")
    for name in sorted(set(syms) - declared):
        report(False, f"{lib}: {name} is exported but not declared in the header")
    for name in sorted(declared & set(syms)):
        report(syms[name] == "FUNC", f"{lib}: {name} is exported as {syms[name]}, not FUNC")
    report(declared == set(syms), f"{lib}: exported symbol set differs from the header's prototypes")
    if declared == set(syms) and not getattr(report, "quiet", False):
        print(f"symbols: {lib}: the {len(syms)} exported functions are exactly the header's prototypes")


# --------------------------------------------------------------------------------------------------------------
# (b) compiler-proven type compatibility


def handle_names(typedefs) -> set[str]:
    return {name for name, text in typedefs if re.fullmatch(rf"typedef struct {name} {name}", text)}


def hand_written_type(ret: str, params: str, handles: set[str]) -> str:
    """Function-pointer type text; `const` on an opaque handle's pointee is dropped (no const in OpaquePointer)."""
    for h in handles:
        params = re.sub(rf"\bconst\s+{h}\b", h, params)
        params = re.sub(rf"\b{h}\s+const\b", h, params)
        ret = re.sub(rf"\bconst\s+{h}\b", h, ret)
    return f"{ret} (*)({params})"


def compile_check(typedefs, protos: dict, generated: str, cc: str, workdir: str, report) -> None:
    gen_funcs = generated_functions(generated)
    for name in sorted(set(protos) - gen_funcs):
        report(False, f"types: {name} is declared in the header but not in {os.path.basename(generated)} "
                      f"(no @c export)")
    for name in sorted(gen_funcs - set(protos)):
        report(False, f"types: {name} is exported by Swift (@c) but not declared in the header")
    handles = handle_names(typedefs)
    lines = [
        "/* generated by Tests/capi/check_header.py: hand-written prototypes vs. swiftc's header */",
        f'#include "{os.path.abspath(generated)}"',
        "",
        "/* the hand-written header's types; opaque handles are void, as Swift's OpaquePointer */",
    ]
    for name, text in typedefs:
        lines.append(f"typedef void {name};" if name in handles else f"{text};")
    lines.append("")
    checked = sorted(set(protos) & gen_funcs)
    for name in checked:
        ret, params = protos[name]
        lines.append(f"typedef {hand_written_type(ret, params, handles).replace('(*)', f'(*hw_{name}_t)', 1)};")
        lines.append(f'_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), hw_{name}_t), '
                     f'"ABI mismatch: {name}");')
    src = os.path.join(workdir, "header_abi_check.c")
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    # Only the assertions matter: warnings about swiftc's header (clang pragmas under gcc, ...) are not fatal.
    cmd = [cc, "-std=gnu11", "-fsyntax-only", src]
    if "clang" in os.path.basename(cc):
        cmd.insert(1, "-ferror-limit=0")
    else:
        cmd[1:1] = ["-Wno-unknown-pragmas", "-Wno-attributes"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    diag = res.stdout + res.stderr
    mismatched = sorted(set(re.findall(r"ABI mismatch: (appstore_\w+)", diag)))
    for name in mismatched:
        ret, params = protos[name]
        report(False, f"types: {name}: the header's `{ret} {name}({params})` is not compatible with the "
                      f"generated declaration")
    other_errors = [line for line in diag.splitlines() if re.search(r"\berror\b", line)
                    and "ABI mismatch" not in line and not re.search(r"\d+ errors? generated", line)]
    if res.returncode != 0 and (other_errors or not mismatched):
        report(False, f"types: {cc} failed on {src}:\n{diag.strip()}")
    elif res.returncode == 0 and mismatched:
        report(False, "types: compiler reported mismatches but succeeded?")
    ok = res.returncode == 0
    report(ok or (bool(mismatched) and not other_errors), None)  # other failures were reported above
    if ok and not getattr(report, "quiet", False):
        print(f"types: {len(checked)} prototypes proven type-compatible with {os.path.basename(generated)} ({cc})")
    for name in checked:
        report(name not in mismatched, None)  # one check per compared function (problem already printed)


# --------------------------------------------------------------------------------------------------------------


class Tally:
    def __init__(self, quiet=False):
        self.passed = self.failed = 0
        self.problems: list[str] = []
        self.quiet = quiet

    def __call__(self, ok: bool, problem: str | None) -> None:
        if ok:
            self.passed += 1
            return
        self.failed += 1
        if problem:
            self.problems.append(problem)
            if not self.quiet:
                print("FAIL " + problem)


def run_checks(header, generated, libs, ccs, quiet=False) -> Tally:
    t = Tally(quiet)
    typedefs, protos, problems = parse_header(header)
    for p in problems:
        t(False, p)
    t(len(protos) > 0, f"{header}: no prototypes found")
    if not quiet:
        print(f"{header}: {len(protos)} prototypes, {len(typedefs)} typedefs")
    for lib in libs:
        check_symbols(protos, lib, t)
    for cc in ccs:  # (b) with every given compiler
        with tempfile.TemporaryDirectory(prefix="header_check_") as d:
            compile_check(typedefs, protos, generated, cc, d, t)
    return t


def self_test(header, generated, libs, ccs) -> int:
    """The checker must catch a wrong integer width and an extra prototype, and report nothing else."""
    with open(header, encoding="utf-8") as f:
        original = f.read()
    passed = failed = 0

    def expect(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("ok   " + what)
        else:
            failed += 1
            print("FAIL " + what)

    # One prototype's parameter narrowed (the first: appstore_verifier_options_set_app_apple_id), nothing else.
    width = original.replace("appstore_verifier_options *options, int64_t app_apple_id",
                             "appstore_verifier_options *options, int32_t app_apple_id", 1)
    expect(width != original, "altered copy 1 differs (int64_t app_apple_id -> int32_t in one prototype)")
    extra_proto = "appstore_status appstore_verifier_reset(appstore_verifier *verifier, appstore_error **err_out);\n"
    marker = "#ifdef __cplusplus\n}"
    extra = original.replace(marker, extra_proto + "\n" + marker)
    expect(extra != original, "altered copy 2 differs (extra prototype appstore_verifier_reset)")
    with tempfile.TemporaryDirectory(prefix="header_selftest_") as d:
        for label, text, want in (
            ("wrong integer width", width,
             {"types: appstore_verifier_options_set_app_apple_id: the header's"}),
            ("extra prototype", extra,
             {*(f"{lib}: appstore_verifier_reset is declared in the header but not exported" for lib in libs),
              "types: appstore_verifier_reset is declared in the header but not in"}),
        ):
            path = os.path.join(d, "appstoreserver.h")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            t = run_checks(path, generated, libs, ccs, quiet=True)
            for p in t.problems:
                print(f"     [{label}] reported: {p.splitlines()[0]}")
            matched = {w for w in want if any(p.startswith(w) for p in t.problems)}
            unexpected = [p for p in t.problems if not any(p.startswith(w) for w in want)
                          and "exported symbol set differs" not in p]
            expect(matched == want, f"{label}: all expected problems reported (missing: {sorted(want - matched)})")
            expect(not unexpected, f"{label}: nothing else reported (unexpected: {unexpected})")
            expect(t.failed > 0, f"{label}: the check fails")
    t = run_checks(header, generated, libs, ccs, quiet=True)
    expect(t.failed == 0 and t.passed > 0, f"the unaltered header passes ({t.problems})")
    print(f"header-selftest: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main(argv) -> int:
    args, ccs, selftest = [], [], False
    it = iter(argv[1:])
    for a in it:
        if a == "--cc":
            ccs.append(next(it, ""))
        elif a == "--self-test":
            selftest = True
        else:
            args.append(a)
    if len(args) < 3:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    header, generated, libs = args[0], args[1], args[2:]
    ccs = ccs or [os.environ.get("CC") or shutil.which("cc") or shutil.which("clang") or "cc"]
    for tool in ("readelf", *ccs):
        if not shutil.which(tool):
            print(f"FAIL {tool} not found\nheader: 0 passed, 1 failed")
            return 1
    if selftest:
        return self_test(header, generated, libs, ccs)
    t = run_checks(header, generated, libs, ccs)
    print(f"header: {t.passed} passed, {t.failed} failed")
    return 0 if t.failed == 0 and t.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
