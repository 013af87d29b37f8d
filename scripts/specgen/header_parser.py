"""Parser of the hand-written C header (include/appstoreserver.h), shared by the header check
(Tests/capi/check_header.py: prototypes vs. exported symbols vs. swiftc's header) and the ABI description
(abi.py -> include/appstoreserver.abi.json), so both read the header the same way.

The annotation macros APPSTORE_OPTIONAL and APPSTORE_JSON(Model) expand to nothing; `parse_header` returns the
prototypes without them (what the compiler sees) and, separately, each parameter with its annotations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def drop_cplusplus_blocks(text: str) -> str:
    """Removes `#ifdef __cplusplus ... #endif` blocks (not nested), i.e. the extern "C" wrappers."""
    return re.sub(r"^[ \t]*#[ \t]*ifdef[ \t]+__cplusplus\b.*?^[ \t]*#[ \t]*endif[^\n]*", " ", text, flags=re.S | re.M)


def drop_preprocessor(text: str) -> str:
    text = re.sub(r"\\\n", " ", text)  # continuation lines
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


PROTO_RE = re.compile(r"^(?P<ret>.+?)\b(?P<name>appstore_\w+)\s*\((?P<params>.*)\)$", re.S)
OPTIONAL_RE = re.compile(r"\bAPPSTORE_OPTIONAL\b")
JSON_RE = re.compile(r"\bAPPSTORE_JSON\(\s*(\w+)\s*\)")


def strip_annotations(text: str) -> str:
    return " ".join(JSON_RE.sub(" ", OPTIONAL_RE.sub(" ", text)).split())


@dataclass
class Param:
    name: str
    ctype: str          # the C type, e.g. "const char *", "char **", "size_t"
    optional: bool      # APPSTORE_OPTIONAL
    json: str | None    # APPSTORE_JSON(Model)


@dataclass
class Prototype:
    name: str
    ret: str            # return type, annotations removed
    params: str         # parameter list as the compiler sees it
    annotated: list[Param] = field(default_factory=list)


def split_param(text: str) -> Param:
    optional = bool(OPTIONAL_RE.search(text))
    m = JSON_RE.search(text)
    plain = strip_annotations(text)
    pm = re.fullmatch(r"(.+?)\s*\b(\w+)", plain)
    if not pm or plain in ("void",):
        raise ValueError(f"cannot parse parameter {text!r}")
    ctype = " ".join(pm.group(1).replace("*", " * ").split()).replace("* *", "**").replace(" *", " *")
    ctype = re.sub(r"\s*\*", " *", ctype).replace("* *", "**").replace(" **", " **")
    ctype = re.sub(r"\*\s+\*", "**", ctype)
    return Param(name=pm.group(2), ctype=ctype, optional=optional, json=m.group(1) if m else None)


def parse_header(path: str, text: str | None = None):
    """Returns (typedefs, prototypes, problems): typedefs = [(name, text)], prototypes = {name: Prototype}. `text`:
    the header's text when it is not (yet) the file at `path` (scripts/generate renders before it writes)."""
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    text = drop_preprocessor(drop_cplusplus_blocks(strip_comments(text)))
    typedefs, protos, problems = [], {}, []
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        if stmt.startswith("typedef "):
            # function-pointer typedefs: typedef RET (*NAME)(PARAMS)
            m = re.fullmatch(r"typedef .+?\(\s*\*\s*(\w+)\s*\)\s*\(.*\)", stmt, re.S)
            if m:
                typedefs.append((m.group(1), stmt))
                continue
            m = re.fullmatch(r"typedef (.+?)\s*\b(\w+)", stmt)
            if not m:
                problems.append(f"{path}: cannot parse typedef: {stmt}")
                continue
            typedefs.append((m.group(2), stmt))
            continue
        m = PROTO_RE.match(stmt)
        if not m:
            problems.append(f"{path}: not a prototype, not a typedef: {stmt}")
            continue
        name = m.group("name")
        if name in protos:
            problems.append(f"{path}: {name} declared twice")
        raw_params = m.group("params").strip()
        proto = Prototype(name=name, ret=strip_annotations(m.group("ret")), params=strip_annotations(raw_params))
        if proto.params != "void":
            try:
                proto.annotated = [split_param(p) for p in _split_top_level(raw_params)]
            except ValueError as exc:
                problems.append(f"{path}: {name}: {exc}")
        protos[name] = proto
    return typedefs, protos, problems


def _split_top_level(params: str) -> list[str]:
    """Splits a parameter list on commas outside parentheses (APPSTORE_JSON(...) has none, but be safe)."""
    out, depth, current = [], 0, []
    for ch in params:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current))
            current = []
        else:
            current.append(ch)
    out.append("".join(current))
    return [p.strip() for p in out if p.strip()]


def parse_defines(path: str, text: str | None = None) -> list[tuple[str, str]]:
    """`#define NAME VALUE` lines of the header (annotation macros and the include guard excluded)."""
    out = []
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    for line in text.splitlines():
        if True:
            m = re.match(r"\s*#\s*define\s+(APPSTORE_\w+)\s+(.+?)\s*(/\*.*)?$", line)
            if m:
                out.append((m.group(1), m.group(2)))
    return out


def prototype_docs(text: str) -> dict[str, str]:
    """The documentation of each function: the comment right above it, or above the run of prototypes it belongs to
    (a comment documents the declarations that follow it up to the next blank line or comment), as one line of
    text."""
    return {name: " ".join(paragraphs) for name, paragraphs in prototype_doc_paragraphs(text).items()}


def prototype_summaries(text: str) -> dict[str, str]:
    """The summary of each documented function: the first paragraph of its comment (paragraphs are separated by an
    empty comment line, ` *`). By the header's rule (CONTRIBUTING.md, "Documenting a C export") it says what the
    function does in words that hold in every language; the bindings carry it into their docstrings."""
    return {name: paragraphs[0] for name, paragraphs in prototype_doc_paragraphs(text).items()}


def prototype_doc_paragraphs(text: str) -> dict[str, list[str]]:
    """The comment of each function (see prototype_docs) as its paragraphs, each one line of text."""
    docs: dict[str, list[str]] = {}
    comment: list[str] = []
    current: list[str] | None = None
    in_comment = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_comment:
            comment.append(stripped)
            if "*/" in stripped:
                in_comment = False
                current = _comment_paragraphs(comment)
            continue
        if stripped.startswith("/*"):
            comment = [stripped]
            if "*/" in stripped:
                current = _comment_paragraphs(comment)
            else:
                in_comment = True
            continue
        if not stripped:
            current = None
            continue
        m = re.match(r"[\w\s\*]*?\b(appstore_\w+)\s*\(", stripped)
        if m and not stripped.startswith(("#", "typedef")) and current:
            docs.setdefault(m.group(1), current)
    return docs


def _comment_paragraphs(lines: list[str]) -> list[str]:
    paragraphs: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        if i == 0:
            line = re.sub(r"^/\*+", "", line)
        if line.endswith("*/"):
            line = line[:-2].rstrip("*")
        if i > 0 and line.startswith("*"):
            line = line[1:]
        if not line.strip():
            if paragraphs[-1] and 0 < i < len(lines) - 1:
                paragraphs.append([])
            continue
        paragraphs[-1].append(line.strip())
    return [" ".join(" ".join(p).split()) for p in paragraphs if p]
