"""Writes the spec files in their house layout: one line per enum case, model field, status, reason or endpoint
parameter, so that diffs stay readable. `python3 -m specgen.fmt` (from scripts/) rewrites every spec file in place."""

from __future__ import annotations

import json
from pathlib import Path


def _one(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _head(obj: dict, list_key: str) -> str:
    """`{"a": 1, "b": 2, "<list_key>": [` for an object whose list member is written one item per line."""
    head = {k: v for k, v in obj.items() if k != list_key}
    text = _one(head)[:-1]
    return (text + ", " if head else "{") + f'"{list_key}": ['


def _block(name: str, obj: dict, list_key: str, indent: str) -> str:
    items = obj.get(list_key, [])
    lines = [f"{indent}{_one(name)}: {_head(obj, list_key)}"]
    lines.append(",\n".join(f"{indent}  {_one(item)}" for item in items))
    lines.append(f"{indent}]}}")
    return "\n".join(lines)


def format_models(spec: dict) -> str:
    out = ["{"]
    parts = []
    if "doc" in spec:
        parts.append(f'  "doc": {_one(spec["doc"])}')
    enums = ",\n".join(_block(n, e, "cases", "    ") for n, e in spec["enums"].items())
    parts.append('  "enums": {\n' + enums + "\n  }")
    models = ",\n".join(_block(n, m, "fields", "    ") for n, m in spec["models"].items())
    parts.append('  "models": {\n' + models + "\n  }")
    out.append(",\n".join(parts))
    out.append("}")
    return "\n".join(out) + "\n"


def format_errors(spec: dict) -> str:
    parts = [f' "doc": {_one(spec["doc"])}']
    for key in ("statuses", "reasons"):
        parts.append(f' "{key}": [\n' + ",\n".join(f"  {_one(x)}" for x in spec[key]) + "\n ]")
    codes = ",\n".join(_block(n, e, "cases", "  ") for n, e in spec["apiErrorCodes"].items())
    parts.append(' "apiErrorCodes": {\n' + codes + "\n }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def format_endpoints(spec: dict) -> str:
    parts = [f' {_one(k)}: {_one(v)}' for k, v in spec.items() if k not in ("groups", "endpoints")]
    parts.append(' "groups": {\n' + ",\n".join(f"  {_one(k)}: {_one(v)}" for k, v in spec["groups"].items()) + "\n }")
    blocks = []
    for ep in spec["endpoints"]:
        head = {k: v for k, v in ep.items() if k != "parameters"}
        params = ep.get("parameters", [])
        if not params:
            blocks.append(f"  {_one(dict(head, parameters=[]))}")
            continue
        text = _one(head)[:-1] + ', "parameters": [\n'
        text += ",\n".join(f"    {_one(p)}" for p in params)
        text += "\n  ]}"
        blocks.append("  " + text)
    parts.append(' "endpoints": [\n' + ",\n".join(blocks) + "\n ]")
    return "{\n" + ",\n".join(parts) + "\n}\n"


FORMATTERS = {"models.json": format_models, "errors.json": format_errors, "endpoints.json": format_endpoints}


def main() -> None:
    spec_dir = Path(__file__).resolve().parents[2] / "spec"
    for name, fmt in FORMATTERS.items():
        path = spec_dir / name
        if path.exists():
            path.write_text(fmt(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")


if __name__ == "__main__":
    main()
