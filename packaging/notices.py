#!/usr/bin/env python3
"""LICENSE and THIRD_PARTY_NOTICES in what the project ships: the Debian copyright files made from them, and the
checks that every artifact carries both.

  packaging/notices.py debian OUT_DIR     writes OUT_DIR/copyright (Debian's machine-readable format, DEP-5) and
                                          OUT_DIR/THIRD_PARTY_NOTICES.gz (reproducible); deb.cmake runs it when
                                          configuring and installs both into every package's /usr/share/doc/<package>/
  packaging/notices.py check KIND PATH    PATH carries LICENSE and THIRD_PARTY_NOTICES, byte for byte the repository's,
                                          and declares the licence; exit status 1 and one line per problem if not.
                                          KIND: wheel (a .whl: *.dist-info/licenses/, METADATA License-Expression: MIT
                                          and License-File), npm (a tarball of npm pack: package/LICENSE,
                                          package/THIRD_PARTY_NOTICES, package.json "license": "MIT"), deb (a .deb:
                                          /usr/share/doc/<package>/copyright is this script's, with LICENSE's text and
                                          every licence text of THIRD_PARTY_NOTICES, a Files paragraph for every
                                          binary in it, THIRD_PARTY_NOTICES.gz), install (a cmake --install prefix:
                                          share/doc/appstoreserver/)
  packaging/notices.py check-sources      THIRD_PARTY_NOTICES part 1 names every package of cli/Package.resolved
                                          (when the tool has been built), and no other: a dependency added or
                                          removed must update the notices; part 3 has a section for every
                                          licence BINARIES names, and none that no binary names
  packaging/notices.py self-test          the checks accept good artifacts and sources and refuse tampered ones

Used by packaging/deb.cmake, Tests/consumers/run (install tree, .debs, check-sources, self-test),
bindings/python/tests/test_wheel.py (the wheel) and bindings/node/test/pack.test.js (the npm tarball).
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parent.parent
LICENSE = REPO / "LICENSE"
NOTICES = REPO / "THIRD_PARTY_NOTICES"
DEP5_FORMAT = "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
OWN_COPYRIGHT = "2026 The appstoreserver authors"

# The Files paragraphs of the Debian copyright file (after "Files: *", which is MIT): one per binary that contains
# third-party code, with THIRD_PARTY_NOTICES part 1's list as a licence expression. Every licence named here must
# have a section in THIRD_PARTY_NOTICES part 3 (checked when writing).
_SWIFT = "Apache-2.0 with Swift-runtime-library exception"
_GCC = "GPL-3+ with GCC-runtime-library exception"
_GLIBC = "LGPL-2.1+ with glibc-link exception"
# SQLite is in the public domain, not under a licence: named as Debian's own copyright file for libsqlite3 names it
# (Copyright: D. Richard Hipp; License: public-domain, with a standalone paragraph saying so).
_SQLITE = "D. Richard Hipp <drh@hwaci.com>"
_PUBLIC_DOMAIN = "public-domain"
BINARIES = [
    {
        "files": "usr/lib/libappstoreserver.so.* usr/lib/*/libappstoreserver.so.*",
        "copyright": [OWN_COPYRIGHT, "1998-2026 The OpenSSL Project", "1995-1998 Eric A. Young, Tim J. Hudson",
                      "2014-2025 Apple Inc. and the Swift project authors", "Free Software Foundation, Inc.",
                      "2015-2016 Wojciech Muła, Alfred Klomp, Daniel Lemire", "2016 Nick Galbreath",
                      "Unicode, Inc.", _SQLITE],
        "licenses": ["MIT", "Apache-2.0", _SWIFT, _GCC, _GLIBC, "Unicode-3.0", "BSD-2-clause", _PUBLIC_DOMAIN],
        "comment": "The self-contained library (THIRD_PARTY_NOTICES, part 1 [A]): appstoreserver with OpenSSL 3's "
                   "libcrypto, SQLite (public domain), the Swift runtime and standard library, "
                   "FoundationEssentials, libdispatch, GCC's libstdc++ and libgcc and glibc's libc_nonshared.a "
                   "linked in statically.",
    },
    {
        "files": "usr/bin/appstoreserver",
        "copyright": [OWN_COPYRIGHT, "1998-2026 The OpenSSL Project", "1995-1998 Eric A. Young, Tim J. Hudson",
                      "2014-2025 Apple Inc. and the Swift project authors", "Free Software Foundation, Inc.",
                      "2015-2016 Wojciech Muła, Alfred Klomp, Daniel Lemire", "2016 Nick Galbreath",
                      "Unicode, Inc.", _SQLITE],
        "licenses": ["MIT", "Apache-2.0", _SWIFT, _GCC, _GLIBC, "Unicode-3.0", "BSD-2-clause", _PUBLIC_DOMAIN],
        "comment": "The command-line tool (THIRD_PARTY_NOTICES, part 1 [F]): appstoreserver and its HTTP client with "
                   "OpenSSL 3's libssl and libcrypto, SQLite (public domain), the Swift runtime and standard "
                   "library, FoundationEssentials, libdispatch, swift-argument-parser, GCC's libstdc++ and libgcc, "
                   "glibc's libc_nonshared.a and glibc 2.28's start file (from zig) linked in statically; it needs "
                   "only glibc at run time.",
    },
]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def licence_sections(notices: str) -> Dict[str, str]:
    """THIRD_PARTY_NOTICES part 3: {name: text}, each section opened by "License: <name>" between two lines of "="."""
    part3 = notices.split("\nPART 3.", 1)
    if len(part3) != 2:
        raise ValueError("THIRD_PARTY_NOTICES has no PART 3")
    rule = "=" * 78
    pieces = re.split(rf"^{rule}\nLicense: (.+)\n{rule}\n", part3[1], flags=re.M)
    sections = {}
    for name, body in zip(pieces[1::2], pieces[2::2]):
        sections[name.strip()] = body.strip("\n")
    if not sections:
        raise ValueError("THIRD_PARTY_NOTICES part 3 has no licence section")
    return sections


# --- Debian copyright (DEP-5) ----------------------------------------------------------------------------------------

def _field_text(text: str) -> str:
    """A multi-line field's continuation lines: each line indented by one space, an empty line as " ."."""
    return "\n".join(" " + line if line.strip() else " ." for line in text.split("\n"))


def debian_copyright(license_text: str, notices: str) -> str:
    sections = licence_sections(notices)
    paragraphs = [
        f"Format: {DEP5_FORMAT}\n"
        "Upstream-Name: appstoreserver\n"
        "Comment:\n" + _field_text(
            "appstoreserver is MIT-licensed. The library and the command-line tool contain\n"
            "third-party components linked in statically, listed below with their licences;\n"
            "THIRD_PARTY_NOTICES.gz (this file's directory) says which binary contains what and\n"
            "reproduces the NOTICE files of the Apache-2.0 components."),
        f"Files: *\nCopyright: {OWN_COPYRIGHT}\nLicense: MIT",
    ]
    for binary in BINARIES:
        missing = [name for name in binary["licenses"] if name not in sections and name != "MIT"]
        if missing:
            raise ValueError(f"THIRD_PARTY_NOTICES part 3 lacks {missing} (named for {binary['files']})")
        copyright_lines = binary["copyright"]
        paragraphs.append(
            f"Files: {binary['files']}\n"
            f"Copyright: {copyright_lines[0]}\n" + "".join(f" {c}\n" for c in copyright_lines[1:]) +
            f"License: {' and '.join(binary['licenses'])}\n"
            "Comment:\n" + _field_text(_wrap(binary["comment"])))
    paragraphs.append("License: MIT\n" + _field_text(license_text.strip("\n")))
    for name, text in sections.items():
        if name != "MIT":
            paragraphs.append(f"License: {name}\n" + _field_text(debian_licence_text(name, text)))
    return "\n\n".join(paragraphs) + "\n"


# Licences whose full text Debian keeps in /usr/share/common-licenses: the copyright file points there (Debian policy
# 12.5; lintian: copyright-file-contains-full-apache-2-license); THIRD_PARTY_NOTICES.gz beside it has the full text.
COMMON_LICENSES = {"Apache-2.0": "Apache License, Version 2.0"}


def debian_licence_text(name: str, text: str) -> str:
    """The text of a standalone License paragraph: THIRD_PARTY_NOTICES' section (LICENSE's text for MIT, whose
    section there is that text with a note), or a pointer for the licences of COMMON_LICENSES."""
    if name in COMMON_LICENSES:
        return (f"The {COMMON_LICENSES[name]}. On Debian systems, its complete text is in\n"
                f"/usr/share/common-licenses/{name}, and in THIRD_PARTY_NOTICES.gz (part 3)\n"
                "beside this file.")
    return text


def _wrap(text: str, width: int = 78) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def parse_dep5(text: str) -> List[Dict[str, str]]:
    """Paragraphs of a DEP-5 file: {field: value}, a multi-line value unfolded (" ." -> empty line)."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        fields: Dict[str, str] = {}
        current = None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")):
                if current is None:
                    raise ValueError(f"continuation line without a field: {line!r}")
                piece = "" if line.strip() == "." else line[1:]
                fields[current] += "\n" + piece
            else:
                name, sep, value = line.partition(":")
                if not sep or not re.fullmatch(r"[A-Za-z0-9-]+", name):
                    raise ValueError(f"not a field: {line!r}")
                current = name
                fields[name] = value.strip()
        paragraphs.append(fields)
    return paragraphs


def write_debian(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "copyright").write_text(debian_copyright(_read(LICENSE), _read(NOTICES)), encoding="utf-8")
    # Debian compresses documentation (policy 12.3); mtime 0 and no file name keep the package reproducible.
    (out_dir / "THIRD_PARTY_NOTICES.gz").write_bytes(gzip.compress(NOTICES.read_bytes(), 9, mtime=0))


# --- checks ---------------------------------------------------------------------------------------------------------

class Problems(list):
    def same(self, what: str, data: bytes | None, expected: Path) -> None:
        if data is None:
            self.append(f"{what}: missing")
        elif data != expected.read_bytes():
            self.append(f"{what}: differs from the repository's {expected.name}")


def check_wheel(path: Path) -> Problems:
    problems = Problems()
    with zipfile.ZipFile(path) as whl:
        names = whl.namelist()
        dist_info = sorted({n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")})
        if len(dist_info) != 1:
            return Problems([f"{path.name}: {len(dist_info)} .dist-info folders"])
        di = dist_info[0]
        read = lambda n: whl.read(n) if n in names else None  # noqa: E731
        problems.same(f"{di}/licenses/LICENSE", read(f"{di}/licenses/LICENSE"), LICENSE)
        problems.same(f"{di}/licenses/THIRD_PARTY_NOTICES", read(f"{di}/licenses/THIRD_PARTY_NOTICES"), NOTICES)
        metadata = (read(f"{di}/METADATA") or b"").decode("utf-8").split("\n\n", 1)[0].splitlines()
        for want in ("License-Expression: MIT", "License-File: LICENSE", "License-File: THIRD_PARTY_NOTICES"):
            if want not in metadata:
                problems.append(f"{di}/METADATA: no '{want}'")
        record = (read(f"{di}/RECORD") or b"").decode("utf-8")
        for f in ("LICENSE", "THIRD_PARTY_NOTICES"):
            if f"{di}/licenses/{f}," not in record:
                problems.append(f"{di}/RECORD does not list licenses/{f}")
    return problems


def check_npm(path: Path) -> Problems:
    problems = Problems()
    with tarfile.open(path) as tgz:
        def read(name: str) -> bytes | None:
            try:
                member = tgz.getmember(name)
            except KeyError:
                return None
            f = tgz.extractfile(member)
            return f.read() if f else None
        problems.same("package/LICENSE", read("package/LICENSE"), LICENSE)
        problems.same("package/THIRD_PARTY_NOTICES", read("package/THIRD_PARTY_NOTICES"), NOTICES)
        manifest = read("package/package.json")
        licence = json.loads(manifest).get("license") if manifest else None
        if licence != "MIT":
            problems.append(f"package/package.json: \"license\" is {licence!r}, not \"MIT\"")
    return problems


def check_install(prefix: Path) -> Problems:
    problems = Problems()
    doc = prefix / "share" / "doc" / "appstoreserver"
    for f, expected in (("LICENSE", LICENSE), ("THIRD_PARTY_NOTICES", NOTICES)):
        p = doc / f
        problems.same(f"share/doc/appstoreserver/{f}", p.read_bytes() if p.is_file() else None, expected)
    return problems


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def check_deb(path: Path) -> Problems:
    package = subprocess.run(["dpkg-deb", "-f", str(path), "Package"], check=True, capture_output=True,
                             text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["dpkg-deb", "-x", str(path), str(root)], check=True)
        return _check_deb_tree(root, package)


def _check_deb_tree(root: Path, package: str) -> Problems:
    problems = Problems()
    doc = root / "usr" / "share" / "doc" / package
    notices_gz = doc / "THIRD_PARTY_NOTICES.gz"
    problems.same(f"/usr/share/doc/{package}/THIRD_PARTY_NOTICES.gz (uncompressed)",
                  gzip.decompress(notices_gz.read_bytes()) if notices_gz.is_file() else None, NOTICES)
    copyright_file = doc / "copyright"
    if not copyright_file.is_file():
        problems.append(f"/usr/share/doc/{package}/copyright: missing")
        return problems
    where = f"/usr/share/doc/{package}/copyright"
    try:
        paragraphs = parse_dep5(_read(copyright_file))
    except ValueError as e:
        problems.append(f"{where}: not in the machine-readable format ({e})")
        return problems
    if paragraphs[0].get("Format") != DEP5_FORMAT:
        problems.append(f"{where}: the first paragraph's Format is not {DEP5_FORMAT}")
    files = [p for p in paragraphs if "Files" in p]
    standalone = {p["License"].split("\n", 1)[0]: p["License"].split("\n", 1)[1] if "\n" in p["License"] else ""
                  for p in paragraphs if "License" in p and "Files" not in p and "Format" not in p}
    default = next((p for p in files if p["Files"] == "*"), None)
    if not default or default.get("License") != "MIT" or OWN_COPYRIGHT not in default.get("Copyright", ""):
        problems.append(f"{where}: no 'Files: *' paragraph with Copyright {OWN_COPYRIGHT} and License MIT")
    if standalone.get("MIT") != _read(LICENSE).strip("\n"):
        problems.append(f"{where}: its License: MIT paragraph is not the text of LICENSE")
    for name, text in licence_sections(_read(NOTICES)).items():
        if name != "MIT" and standalone.get(name) != debian_licence_text(name, text):
            problems.append(f"{where}: no License: {name} paragraph with THIRD_PARTY_NOTICES' text")
    for p in files:
        for name in p.get("License", "").split("\n", 1)[0].split(" and "):
            if name not in standalone:
                problems.append(f"{where}: Files: {p['Files']} names {name!r}, which has no License paragraph")
    # Every binary is covered by a paragraph of its own (the one naming what is linked into it), not only by "*".
    for f in sorted(root.rglob("*")):
        if f.is_file() and not f.is_symlink() and _is_elf(f):
            rel = f.relative_to(root).as_posix()
            if not any(p["Files"] != "*" and any(fnmatch.fnmatch(rel, pat) for pat in p["Files"].split())
                       for p in files):
                problems.append(f"{where}: no Files paragraph for the binary /{rel}")
    return problems


def check(kind: str, path: Path) -> Problems:
    if not path.exists():
        return Problems([f"{path}: no such file or folder"])
    return {"wheel": check_wheel, "npm": check_npm, "deb": check_deb, "install": check_install}[kind](path)


def check_sources(notices: str | None = None, resolved_path: Path = REPO / "cli" / "Package.resolved") -> Problems:
    """The packages the tool resolves (cli/Package.resolved, which cli/build writes; git-ignored) against the ones
    THIRD_PARTY_NOTICES part 1 names with a version: the same set. Versions are not compared (the notices give them
    as of writing; a patch release of a dependency changes no licence), names are: a package added or removed must
    update the notices. Without cli/Package.resolved (the tool not built here) only the licences are checked."""
    problems = Problems()
    notices = _read(NOTICES) if notices is None else notices
    part1 = notices.split("\nPART 1.", 1)[-1].split("\nPART 2.", 1)[0]
    part1 = " ".join(part1.split())
    if resolved_path.is_file():
        resolved = json.loads(_read(resolved_path))
        pinned = {pin["identity"] for pin in resolved.get("pins", [])}
        named = set(re.findall(r"(?<![\w-])((?:swift|async)-[a-z0-9-]+) [0-9]+\.[0-9]+\.[0-9]+", part1))
        for identity in sorted(pinned - named):
            problems.append(f"THIRD_PARTY_NOTICES part 1 does not name {identity} (cli/Package.resolved pins it)")
        for identity in sorted(named - pinned):
            problems.append(f"THIRD_PARTY_NOTICES part 1 names {identity}, which cli/Package.resolved does not pin")
    else:
        print(f"notices: {resolved_path} not found (the tool is not built here): its packages not compared")
    try:
        debian_copyright(_read(LICENSE), notices)
        # A licence no binary contains any more (a dependency dropped) leaves part 3 with it.
        named = {name for binary in BINARIES for name in binary["licenses"]}
        for name in licence_sections(notices):
            if name != "MIT" and name not in named:
                problems.append(f"THIRD_PARTY_NOTICES part 3 has License: {name}, which no binary of "
                                f"packaging/notices.py BINARIES names")
    except ValueError as e:
        problems.append(str(e))
    return problems


# --- self-test: the checks must be able to fail ---------------------------------------------------------------------

def self_test() -> Problems:
    failures = Problems()
    lic, notes = LICENSE.read_bytes(), NOTICES.read_bytes()
    tampered = notes.replace(b"Apache License", b"Apache Licence", 1)

    def expect(name: str, kind: str, path: Path, ok: bool) -> None:
        got = check(kind, path)
        if ok and got:
            failures.append(f"self-test: {name}: refused: {'; '.join(got)}")
        elif not ok and not got:
            failures.append(f"self-test: {name}: accepted, but it must be refused")

    text = notes.decode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        resolved = Path(tmp) / "Package.resolved"
        pins = re.findall(r"(?<![\w-])((?:swift|async)-[a-z0-9-]+) ([0-9]+\.[0-9]+\.[0-9]+)",
                          " ".join(text.split("\nPART 2.", 1)[0].split()))
        resolved.write_text(json.dumps({"pins": [{"identity": i, "state": {"version": v}} for i, v in pins]}))
        if check_sources(text, resolved):
            failures.append("self-test: check-sources refuses THIRD_PARTY_NOTICES with its own packages resolved")
        stale_licence = f"\n{'=' * 78}\nLicense: Zlib\n{'=' * 78}\n\nzlib\n"
        for name, changed in [("a package gone",
                               re.sub(r"swift-argument-parser [0-9.]+", "swift-argument-parser", text, count=1)),
                              ("a stale package", text.replace("\nPART 2.", "    swift-stale 1.0.0\n\nPART 2.", 1)),
                              ("a licence section no binary names", text + stale_licence)]:
            if not check_sources(changed, resolved):
                failures.append(f"self-test: check-sources, {name}: accepted, but it must be refused")

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)

        def wheel(name: str, files: Dict[str, bytes], metadata: str) -> Path:
            p = t / f"{name}.whl"
            di = "appstoreserver-0.0.0.dist-info"
            with zipfile.ZipFile(p, "w") as z:
                record = []
                for n, data in files.items():
                    z.writestr(f"{di}/licenses/{n}", data)
                    record.append(f"{di}/licenses/{n},,")
                z.writestr(f"{di}/METADATA", metadata)
                z.writestr(f"{di}/RECORD", "\n".join(record) + "\n")
            return p
        meta = "Metadata-Version: 2.4\nName: appstoreserver\nLicense-Expression: MIT\nLicense-File: LICENSE\n" \
               "License-File: THIRD_PARTY_NOTICES\n\nREADME\n"
        both = {"LICENSE": lic, "THIRD_PARTY_NOTICES": notes}
        expect("wheel", "wheel", wheel("good", both, meta), True)
        expect("wheel, notices altered", "wheel", wheel("t1", {**both, "THIRD_PARTY_NOTICES": tampered}, meta), False)
        expect("wheel without LICENSE", "wheel", wheel("t2", {"THIRD_PARTY_NOTICES": notes}, meta), False)
        expect("wheel, License-Expression missing", "wheel",
               wheel("t3", both, meta.replace("License-Expression: MIT\n", "")), False)

        def npm(name: str, files: Dict[str, bytes], licence: str) -> Path:
            p = t / f"{name}.tgz"
            with tarfile.open(p, "w:gz") as z:
                for n, data in {**files, "package.json": json.dumps({"license": licence}).encode()}.items():
                    info = tarfile.TarInfo(f"package/{n}")
                    info.size = len(data)
                    z.addfile(info, io.BytesIO(data))
            return p
        expect("npm", "npm", npm("good", both, "MIT"), True)
        expect("npm, notices altered", "npm", npm("t1", {**both, "THIRD_PARTY_NOTICES": tampered}, "MIT"), False)
        expect("npm, license ISC", "npm", npm("t2", both, "ISC"), False)

        good = t / "prefix"
        (good / "share" / "doc" / "appstoreserver").mkdir(parents=True)
        (good / "share" / "doc" / "appstoreserver" / "LICENSE").write_bytes(lic)
        (good / "share" / "doc" / "appstoreserver" / "THIRD_PARTY_NOTICES").write_bytes(notes)
        expect("install tree", "install", good, True)
        (good / "share" / "doc" / "appstoreserver" / "LICENSE").write_bytes(lic.replace(b"MIT", b"ISC"))
        expect("install tree, LICENSE altered", "install", good, False)

        # A package tree: a binary under /usr/lib, the files `debian` writes.
        deb = t / "deb"
        (deb / "usr" / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
        shutil.copyfile(sys.executable if _is_elf(Path(sys.executable)) else "/bin/true",
                        deb / "usr" / "lib" / "x86_64-linux-gnu" / "libappstoreserver.so.0.0.0")
        doc = deb / "usr" / "share" / "doc" / "libappstoreserver0"
        write_debian(doc)
        got = _check_deb_tree(deb, "libappstoreserver0")
        if got:
            failures.append(f"self-test: package tree: refused: {'; '.join(got)}")
        copyright_text = _read(doc / "copyright")
        for name, changed in [
                ("a licence text altered", copyright_text.replace("GCC RUNTIME", "GCC  RUNTIME", 1)),
                ("the MIT text altered", copyright_text.replace("Permission is hereby", "Permission is not", 1)),
                ("not DEP-5", copyright_text.replace("Format:", "Format", 1)),
                ("the library's paragraph gone",
                 re.sub(r"Files: usr/lib/.*\n(?:\S.*\n| .*\n)*\n", "", copyright_text))]:
            (doc / "copyright").write_text(changed, encoding="utf-8")
            if not _check_deb_tree(deb, "libappstoreserver0"):
                failures.append(f"self-test: package tree, {name}: accepted, but it must be refused")
        (doc / "copyright").write_text(copyright_text, encoding="utf-8")
        (doc / "THIRD_PARTY_NOTICES.gz").write_bytes(gzip.compress(tampered, mtime=0))
        if not _check_deb_tree(deb, "libappstoreserver0"):
            failures.append("self-test: package tree, notices altered: accepted, but it must be refused")
    return failures


def main(argv: List[str]) -> int:
    if len(argv) == 2 and argv[0] == "debian":
        write_debian(Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "check" and argv[1] in ("wheel", "npm", "deb", "install"):
        problems = check(argv[1], Path(argv[2]))
        label = f"{argv[1]} {Path(argv[2]).name}"
    elif argv == ["check-sources"]:
        problems, label = check_sources(), "sources"
    elif argv == ["self-test"]:
        problems, label = self_test(), "self-test"
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for p in problems:
        print(f"notices: {p}")
    print(f"notices: {label}: {'FAILED' if problems else 'LICENSE and THIRD_PARTY_NOTICES as they must be'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
