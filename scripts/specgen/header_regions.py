"""C header renderer: the regions of include/appstoreserver.h that come from the spec. The header is hand-written
around them; each region sits between `/* @generated NAME ... */` and `/* @end NAME */` lines and is rewritten whole.

    statuses    #define APPSTORE_<STATUS> value           (spec/errors.json statuses)
    reasons     #define APPSTORE_REASON_<NAME> value      (spec/errors.json reasons)
    endpoints   #define APPSTORE_ENDPOINT_<NAME> "name"   (spec/endpoints.json), with each one's params_json keys
    version     #define APPSTORE_VERSION_*                 (the VERSION file: the project's one version)
"""

from __future__ import annotations

import re

from .spec import Spec

HEADER_PATH = "include/appstoreserver.h"
WIDTH = 120


def macro_name(camel: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", camel).upper()


def _comment_lines(text: str, indent: str = "") -> list[str]:
    """A C comment of one or more lines, wrapped at WIDTH."""
    words = text.split()
    lines: list[str] = []
    current = f"{indent}/*"
    for w in words:
        if len(current) + 1 + len(w) > WIDTH - 3:
            lines.append(current)
            current = f"{indent} *"
        current += " " + w
    lines.append(current + " */")
    return lines


def _define(name: str, value: str, doc: str) -> list[str]:
    line = f"#define {name} {value}"
    tail = f" /* {doc} */" if doc else ""
    if len(line) + len(tail) <= WIDTH:
        return [line + tail]
    return _comment_lines(doc) + [line]


def region_statuses(spec: Spec) -> list[str]:
    out: list[str] = []
    for s in spec.statuses:
        out += _define(f"APPSTORE_{s['name']}", str(s["value"]), s["doc"])
    return out


def region_reasons(spec: Spec) -> list[str]:
    out: list[str] = []
    for r in spec.reasons:
        statuses = "/".join(r["statuses"])
        doc = f"{r['doc']} [{statuses}{', retryable' if r['retryable'] else ''}]"
        out += _define(f"APPSTORE_REASON_{r['name'].upper()}", str(r["value"]), doc)
    return out


def region_endpoints(spec: Spec) -> list[str]:
    out: list[str] = []
    for ep in spec.endpoints:
        req, opt = spec.endpoint_parameter_keys(ep)
        keys = ", ".join(req) if req else "(none)"
        if opt:
            keys += "; optional " + ", ".join(opt)
        doc = f"{ep['title']}: {ep['method']} {ep['path']}. Keys: {keys}."
        if ep["response"]:
            doc += f" Answer: {ep['response']}."
        if ep.get("sandboxFallback"):
            doc += " Sandbox fallback."
        if ep.get("deprecated"):
            doc += " Deprecated by Apple."
        out += _comment_lines(doc)
        out.append(f"#define APPSTORE_ENDPOINT_{macro_name(ep['name'])} \"{ep['name']}\"")
    return out


def version_parts() -> tuple[int, int, int]:
    """The VERSION file, MAJOR.MINOR.PATCH: the one place the version is typed (CMake reads it too)."""
    from .spec import ROOT

    text = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"VERSION: {text!r} is not MAJOR.MINOR.PATCH")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def region_version(spec: Spec) -> list[str]:
    major, minor, patch = version_parts()
    return ["/* The header's version (the VERSION file); appstore_version() is the loaded library's. */",
            f"#define APPSTORE_VERSION_MAJOR {major}", f"#define APPSTORE_VERSION_MINOR {minor}",
            f"#define APPSTORE_VERSION_PATCH {patch}", f'#define APPSTORE_VERSION_STRING "{major}.{minor}.{patch}"']


REGIONS = {"statuses": region_statuses, "reasons": region_reasons, "endpoints": region_endpoints,
           "version": region_version}
BEGIN = "/* @generated {name}: scripts/generate from spec/; do not edit by hand */"
END = "/* @end {name} */"


def render(header_text: str, spec: Spec) -> str:
    """The header with every region rewritten; raises ValueError when a region's markers are missing."""
    text = header_text
    for name, fn in REGIONS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        i = text.find(begin)
        j = text.find(end)
        if i < 0 or j < i:
            raise ValueError(f"{HEADER_PATH}: region markers for {name!r} are missing or out of order")
        body = "\n".join(fn(spec))
        text = text[: i + len(begin)] + "\n" + body + "\n" + text[j:]
    return text
