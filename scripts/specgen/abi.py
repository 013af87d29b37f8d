"""ABI renderer: include/appstoreserver.abi.json, the machine-readable description of the C ABI that the bindings
generate their glue from (ctypes prototypes, Node-API marshalling) instead of re-typing the header.

It is produced from the hand-written header by the parser the header check uses (header_parser.py), plus the header's
conventions, stated once here:
  - a parameter named *_out is an output; `char **` outputs are strings the caller frees with appstore_string_free,
    `appstore_T **` outputs are handles the caller frees with appstore_T_free, `appstore_error **err_out` is the
    optional error (written on failure only); other *_out pointers receive plain values;
  - `(const char *|const uint8_t *) X` followed by `size_t S_len`, where X is S or starts with S_ (receipt_b64 /
    receipt_len), is a byte buffer and its length (NULL allowed when the length is 0); other `const char *` inputs
    are NUL-terminated UTF-8;
  - `const uint8_t *const *S_ders`, `const size_t *S_lens` and `size_t S_count` are an array of byte buffers, their
    lengths and their count;
  - `const appstore_T *` / `appstore_T *` are handles (borrowed for the call); _free functions and accessors that do
    not return a status accept NULL;
  - a `const char *` / `const uint8_t *` result is owned by the library: static for functions without a handle
    argument, else it lives as long as the handle it came from;
  - APPSTORE_OPTIONAL marks a pointer that may be NULL; APPSTORE_JSON(Model) names the JSON shape (spec/models.json);
  - the comment above a prototype (or above the run of prototypes it belongs to) is its `doc`, and the comment's first
    paragraph its `summary`: what the function does in every language, carried into the Python docstrings and the
    TypeScript declarations (binding_docs.py).
An unknown parameter shape is an error, so a new kind of parameter makes the generator fail until a rule covers it.
"""

from __future__ import annotations

import json
import re

from .header_parser import parse_defines, parse_header, prototype_doc_paragraphs
from .spec import ROOT, Spec

HEADER = "include/appstoreserver.h"
OUTPUT = "include/appstoreserver.abi.json"
JSON_BY_ENDPOINT = {"endpoint_params": "params", "endpoint_response": "response", "endpoint_pages": "pages"}


class ABIError(ValueError):
    pass


def _handles(typedefs) -> list[str]:
    return [name for name, text in typedefs if re.fullmatch(rf"typedef struct {name} {name}", text)]


def _buffer_length(name: str, params) -> str | None:
    """The length parameter of buffer `name`: the next parameter, `size_t S_len` with name == S or S_... ."""
    i = [q.name for q in params].index(name)
    nxt = params[i + 1] if i + 1 < len(params) else None
    if nxt is None or nxt.ctype != "size_t" or not nxt.name.endswith("_len"):
        return None
    stem = nxt.name[:-4]
    return nxt.name if name == stem or name.startswith(stem + "_") else None


def _buffer_of(length: str, params) -> str | None:
    """The buffer whose length `length` is (the parameter before it), or None."""
    i = [q.name for q in params].index(length)
    if i == 0 or params[i - 1].ctype not in ("const char *", "const uint8_t *"):
        return None
    return params[i - 1].name if _buffer_length(params[i - 1].name, params) == length else None


def _describe_param(fn: str, p, params, handles: list[str], spec: Spec, accessor: bool, protos_names) -> dict:
    t = p.ctype
    d: dict = {"name": p.name, "type": t}
    base = t.replace("const ", "").replace(" ", "")
    names = [q.name for q in params]
    if p.name.endswith("_out"):
        d["direction"] = "out"
        if t == "appstore_error **":
            d.update(kind="error", ownership="caller", free="appstore_error_free")
        elif t == "char **":
            d.update(kind="string", ownership="caller", free="appstore_string_free")
        elif base.endswith("**") and base[:-2] in handles:
            d.update(kind="handle", handle=base[:-2], ownership="caller", free=f"{base[:-2]}_free")
            if f"{base[:-2]}_free" not in protos_names:
                raise ABIError(f"{fn}: {p.name} returns a {base[:-2]} that has no _free")
        elif re.fullmatch(r"(u?int(8|16|32|64)_t|size_t|appstore_(status|reason|environment|api_action))\*", base):
            d.update(kind="value", valueType=base[:-1])
        else:
            raise ABIError(f"{fn}: output {p.name} has no rule for type {t!r}")
    else:
        d["direction"] = "in"
        if base.endswith("*") and base[:-1] in handles:
            d.update(kind="handle", handle=base[:-1])
        elif t in ("const char *", "const uint8_t *") and _buffer_length(p.name, params) is not None:
            d.update(kind="buffer", length=_buffer_length(p.name, params), text=t == "const char *")
        elif t == "size_t" and p.name.endswith("_len") and _buffer_of(p.name, params) is not None:
            d.update(kind="length", of=_buffer_of(p.name, params))
        elif t == "size_t" and p.name.endswith("_count") and f"{p.name[:-6]}_ders" in names:
            d.update(kind="count", of=[f"{p.name[:-6]}_ders", f"{p.name[:-6]}_lens"])
        elif t == "const char *":
            d.update(kind="string")
        elif t == "const uint8_t * const *" and p.name.endswith("_ders") and f"{p.name[:-5]}_count" in names:
            d.update(kind="bufferArray", lengths=f"{p.name[:-5]}_lens", count=f"{p.name[:-5]}_count")
        elif t == "const size_t *" and p.name.endswith("_lens"):
            d.update(kind="lengthArray")
        elif t == "char *" and fn == "appstore_string_free":
            d.update(kind="freedString")
        elif t == "void *":
            d.update(kind="userData")
        elif re.fullmatch(r"appstore_\w+_fn", t):
            d.update(kind="callback", callback=t)
        elif re.fullmatch(r"u?int(8|16|32|64)_t|size_t|appstore_\w+", t) and "*" not in t:
            d.update(kind="value", valueType=t)
        else:
            raise ABIError(f"{fn}: input {p.name} has no rule for type {t!r}")
    nullable = p.optional or p.name == "err_out"
    if d["kind"] == "handle" and d["direction"] == "in" and (fn.endswith("_free") or accessor):
        nullable = True
    if fn.endswith("_free") and d["kind"] == "freedString":
        nullable = True
    if d["kind"] in ("handle", "string", "buffer", "error", "bufferArray", "lengthArray", "userData", "freedString") \
            or d["direction"] == "out":
        d["nullable"] = nullable
    elif p.optional:
        raise ABIError(f"{fn}: {p.name} is marked APPSTORE_OPTIONAL but is not a pointer")
    if p.json:
        if p.json in JSON_BY_ENDPOINT:
            d["json"] = {"byEndpoint": JSON_BY_ENDPOINT[p.json]}
        elif p.json in spec.models or p.json == "AdvancedCommerceInAppRequest":
            d["json"] = {"model": p.json}
        else:
            raise ABIError(f"{fn}: {p.name}: APPSTORE_JSON({p.json}) names no model of spec/models.json")
    return d


def _constants(spec: Spec, header_text: str | None) -> dict:
    groups: dict[str, list] = {"version": [], "status": [], "reason": [], "environment": [], "transportResult": [],
                               "endpoint": [], "limit": [], "apiAction": []}
    prefixes = [("APPSTORE_VERSION_", "version"), ("APPSTORE_REASON_", "reason"), ("APPSTORE_ENVIRONMENT_", "environment"),
                ("APPSTORE_TRANSPORT_RESULT_", "transportResult"), ("APPSTORE_ENDPOINT_", "endpoint"),
                ("APPSTORE_LIMIT_", "limit"), ("APPSTORE_API_ACTION_", "apiAction")]
    statuses = {f"APPSTORE_{s['name']}" for s in spec.statuses}
    for name, value in parse_defines(str(ROOT / HEADER), header_text):
        if name in ("APPSTORE_OPTIONAL",) or name.startswith("APPSTORE_JSON") or name == "APPSTORESERVER_H":
            continue
        group = next((g for p, g in prefixes if name.startswith(p)), "status" if name in statuses else None)
        if group is None:
            raise ABIError(f"{HEADER}: #define {name} belongs to no constant group")
        parsed = json.loads(value) if value.startswith('"') else int(value)
        groups[group].append({"name": name, "value": parsed})
    return groups


def render(spec: Spec, header_text: str | None = None) -> str:
    """The ABI description of the header: `header_text` as scripts/generate is about to write it, or the file."""
    if header_text is None:
        header_text = (ROOT / HEADER).read_text(encoding="utf-8")
    typedefs, protos, problems = parse_header(str(ROOT / HEADER), header_text)
    docs = prototype_doc_paragraphs(header_text)
    if problems:
        raise ABIError("; ".join(problems))
    handles = _handles(typedefs)
    functions = []
    for name, proto in protos.items():
        accessor = proto.ret != "appstore_status"
        params = [_describe_param(name, p, proto.annotated, handles, spec, accessor, protos) for p in proto.annotated]
        ret: dict = {"type": proto.ret}
        if proto.ret == "appstore_status":
            ret["kind"] = "status"
        elif proto.ret in ("const char *", "const uint8_t *"):
            owner = next((p["handle"] for p in params if p["kind"] == "handle" and p["direction"] == "in"), None)
            ret.update(kind="borrowed", lifetime=f"until {owner}_free" if owner else "static")
        elif proto.ret == "void":
            ret["kind"] = "void"
        else:
            ret["kind"] = "value"
        entry = {"name": name, "returns": ret, "params": params}
        if name in docs:
            # doc: the whole comment; summary: its first paragraph, what the bindings carry (binding_docs.py).
            entry["doc"] = " ".join(docs[name])
            entry["summary"] = docs[name][0]
        functions.append(entry)
    callbacks = []
    for tname, text in typedefs:
        m = re.fullmatch(r"typedef (.+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)", text)
        if m:
            ps = [" ".join(x.split()) for x in m.group(3).split(",")]
            callbacks.append({"name": tname, "returns": m.group(1).strip(),
                              "params": [{"name": re.findall(r"\w+$", x)[0], "type": x[: -len(re.findall(r"\w+$", x)[0])].strip()}
                                         for x in ps]})
    plain = [{"name": n, "type": re.fullmatch(r"typedef (.+?)\s*\b(\w+)", t).group(1)} for n, t in typedefs
             if n not in handles and not any(c["name"] == n for c in callbacks)]
    doc = {
        "doc": "The C ABI of libappstoreserver, generated by scripts/generate from include/appstoreserver.h (parser: "
               "scripts/specgen/header_parser.py, rules: scripts/specgen/abi.py). Bindings generate their glue from it.",
        "library": "libappstoreserver",
        "soname": "libappstoreserver.so.0",
        "handles": [{"name": h, "free": f"{h}_free"} if f"{h}_free" in protos else
                    {"name": h, "free": None, "lifetime": "borrowed: valid only during the call that passes it"}
                    for h in handles],
        "typedefs": plain,
        "callbacks": callbacks,
        "constants": _constants(spec, header_text),
        "functions": functions,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def outputs(spec: Spec, header_text: str | None = None) -> dict[str, str]:
    return {OUTPUT: render(spec, header_text)}
