"""The spec of the whole surface, loaded and validated; language-neutral. Renderers (swift.py, header_regions.py, python.py,
typescript.py, docs.py) read the `Spec` this module returns and never the JSON files themselves.

    spec/models.json     enums and models (every JSON shape: Apple's payloads, request and response bodies, and the
                         library's own outputs, e.g. the deep-notification wrapper and the receipt JSON)
    spec/errors.json     statuses, reasons and the API error code enums (merged into the enums for renderers)
    spec/endpoints.json  every App Store Server API / Advanced Commerce endpoint
    spec/apple.json      Apple-compatibility facts per language (names where Apple's differ, Apple's VerificationStatus
                         and its status for each failure, the verify operations with Apple's names)

models.json:

    {"enums":  {Name: {"rawType": "String"|"Int32"|"Int64", "doc": str?, "caseNames": true?, "origin": "appstoreserver"?,
                       "cases": [{"name": str, "value": str|int, "retryable": true?, "doc": str?}, ...]}},
     "models": {Name: {"doc": str?, "origin": "appstoreserver"?, "fields": [{"name": str, "type": T, "key": str?,
                       "required": bool?, "doc": str?, ...limits}]}}}

    T = "String" | "Int32" | "Int64" | "Bool" | "Date" | "UUID" | <enum name> | <model name> | [T]  (one-element list)
        | {"map": T}   a JSON object with arbitrary string keys and values of type T (T a type name; Swift
                       [String: T]); e.g. counts keyed by an enum's raw values, which stay raw so unknown keys survive

enum "caseNames": true        the enum also gets `caseName: String?` (the case name of a known value, nil otherwise),
                              e.g. to name an API error code.
"origin": "appstoreserver"    a shape this library defines (not one of Apple's), e.g. a C ABI output.

"key" is given only when the JSON key differs from "name"; "required": true makes the field non-optional.
"Date" is milliseconds since 1970 on the wire.

Request-model attributes (Apple's client-side limits; decoding never checks them):

    field "maxLength": N         String field, or every element of a [String] field: at most N characters
                                 (a character is an extended grapheme cluster, Swift's `String.count`).
    field "range": [min, max]    Int32/Int64 field, or every element of a list of them: min <= value <= max.
    field "nonEmpty": true       list field: at least one element. On an optional list, absent/nil is fine but an
                                 explicit empty list is a violation (as in Apple's library).
    field "maxCount": N          list field: at most N elements.
    field "alwaysEncode": true   optional String field that is always encoded, as "" when nil (Apple requires the
                                 key, e.g. ConsumptionRequestV1.appAccountToken).
    field "encodeNull": true     optional field encoded as JSON null when nil (instead of being left out).
    field "queryName": "name"    the query parameter name when the model is sent as query parameters (lists are
                                 repeated keys), e.g. TransactionHistoryRequest.productIds -> productId.
    model "constants": [{"key": k, "value": "v"}, ...]
                                 JSON members the model always encodes with a fixed string value (e.g. operation,
                                 version); when decoding they may be absent or null, and otherwise must have that
                                 value; never stored.
    model "validate": true|false whether the model gets `validate()`. Absent: implied when the model has limits or
                                 constants, or a field (or list element) whose model validates. true forces it. false
                                 suppresses it for a decode-only model that nests request models (parents then do not
                                 recurse through it either); false on a model with its own limits or constants is an
                                 error.

validate() checks fields in spec order; per field: nonEmpty, maxCount, then maxLength/range of the value (or of each
element), then the nested model's validate() (or each element's). It reports the first violation with the JSON-key
path of the field, e.g. `items[0].SKU`, `descriptors.description`, `dependentSKUs[2]`.

errors.json, endpoints.json and apple.json: see the `doc` member of each file and validate_errors / validate_endpoints /
validate_apple below.
Python 3.9+ standard library only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field as dc_field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "spec"

# Primitive field types (Date: milliseconds since 1970 on the wire; UUID: text).
PRIMITIVES = ("String", "Int32", "Int64", "Bool", "Date", "UUID")
ENUM_RAW_TYPES = ("String", "Int32", "Int64")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Names the generated code of every language uses itself (members, or words no renderer can escape).
RESERVED_MEMBER_NAMES = frozenset({"init", "deinit", "subscript", "self", "Self", "Type", "Protocol"})
# Members every generated enum struct already declares.
ENUM_OWN_MEMBERS = frozenset({"rawValue", "knownValues", "isKnown", "description", "hashValue", "encode", "caseName"})
# Members a generated model struct already has (synthesized or declared).
MODEL_OWN_MEMBERS = frozenset({"hashValue", "encode", "validate", "CodingKeys"})
# Type names that would shadow what the generated code itself refers to.
RESERVED_TYPE_NAMES = frozenset(PRIMITIVES) | frozenset(
    """
    Any Array Bool Codable CodingKey CodingKeys CustomStringConvertible Decodable Decoder Dictionary Double Encodable
    Encoder Error Hashable Int Int8 Int16 UInt UInt8 UInt16 UInt32 UInt64 Optional Protocol RawRepresentable Self
    Sendable Set Type Void
    """.split()
)

TYPE_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
MEMBER_NAME_RE = re.compile(r"^[a-z_][A-Za-z0-9_]*$")
CASE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # PurchasePlatform has iOS, macOS, ...

TOP_KEYS = {"enums", "models"}
TOP_OPTIONAL_KEYS = {"doc"}
ENUM_KEYS = {"rawType", "doc", "cases", "caseNames", "origin"}
CASE_KEYS = {"name", "value"}
CASE_OPTIONAL_KEYS = {"retryable", "doc"}
MODEL_KEYS = {"doc", "fields", "constants", "validate", "origin"}
FIELD_KEYS = {"name", "key", "type", "required", "doc", "maxLength", "range", "nonEmpty", "maxCount", "alwaysEncode",
              "encodeNull", "queryName"}
CONSTANT_KEYS = {"key", "value"}
LIMIT_KEYS = ("maxLength", "range", "nonEmpty", "maxCount")
INTEGER_BOUNDS = {"Int32": (INT32_MIN, INT32_MAX), "Int64": (-(2**63), 2**63 - 1)}


class SpecError(Exception):
    """The spec is invalid; carries every problem found."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


# --------------------------------------------------------------------------------------------------------------------
# Loading and validation


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise SpecError([f"duplicate JSON key {key!r} in one object (a model, enum or attribute is defined twice)"])
        result[key] = value
    return result


def _check_doc(where: str, obj: dict, problems: list[str]) -> None:
    if "doc" not in obj:
        return
    doc = obj["doc"]
    if not isinstance(doc, str) or not doc.strip():
        problems.append(f"{where}: 'doc' must be a non-empty string")
    elif "\n" in doc or "\r" in doc:
        problems.append(f"{where}: 'doc' must be a single line")


def _check_keys(where: str, obj: object, allowed: set[str], required: set[str], problems: list[str]) -> bool:
    if not isinstance(obj, dict):
        problems.append(f"{where}: must be a JSON object")
        return False
    unknown = sorted(set(obj) - allowed)
    if unknown:
        problems.append(f"{where}: unknown attribute(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(obj))
    if missing:
        problems.append(f"{where}: missing attribute(s) {', '.join(map(repr, missing))}")
    return not missing


def _suggest(name: str, candidates: list[str]) -> str:
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return f" (did you mean {lowered[name.lower()]!r}?)"
    return ""


def _type_refs(ftype: object) -> tuple[str | None, bool]:
    """Return (element type name, is_container) for a well-formed field type, or (None, _) if malformed.
    Containers are lists [T] and maps {"map": T}; _is_map tells them apart."""
    if isinstance(ftype, str):
        return ftype, False
    if isinstance(ftype, list) and len(ftype) == 1 and isinstance(ftype[0], str):
        return ftype[0], True
    if _is_map(ftype):
        return ftype["map"], True
    return None, False


def _is_map(ftype: object) -> bool:
    return isinstance(ftype, dict) and set(ftype) == {"map"} and isinstance(ftype["map"], str)


def validate_models(spec: object) -> None:
    problems: list[str] = []
    if not _check_keys("spec", spec, TOP_KEYS | TOP_OPTIONAL_KEYS, TOP_KEYS, problems):
        raise SpecError(problems)
    enums, models = spec["enums"], spec["models"]
    if not isinstance(enums, dict) or not isinstance(models, dict):
        raise SpecError(problems + ["spec: 'enums' and 'models' must be JSON objects"])

    for name in sorted(set(enums) & set(models)):
        problems.append(f"{name!r} is defined both as an enum and as a model")
    for name in list(enums) + list(models):
        if not TYPE_NAME_RE.match(name):
            problems.append(f"type name {name!r} must be UpperCamelCase ASCII letters/digits")
        elif name in RESERVED_TYPE_NAMES:
            problems.append(f"type name {name!r} is reserved (built-in or used by the generated code)")

    # Enums
    for ename, enum in enums.items():
        where = f"enum {ename}"
        if not _check_keys(where, enum, ENUM_KEYS, {"rawType", "cases"}, problems):
            continue
        _check_doc(where, enum, problems)
        if "caseNames" in enum and enum["caseNames"] is not True:
            problems.append(f"{where}: 'caseNames' must be true (omit it otherwise)")
        raw = enum["rawType"]
        if raw not in ENUM_RAW_TYPES:
            problems.append(f"{where}: rawType {raw!r} is not one of {', '.join(ENUM_RAW_TYPES)}")
        cases = enum["cases"]
        if not isinstance(cases, list) or not cases:
            problems.append(f"{where}: 'cases' must be a non-empty list")
            continue
        seen_names: set[str] = set()
        seen_values: dict[object, str] = {}
        for i, case in enumerate(cases):
            cwhere = f"{where} case #{i + 1}"
            if isinstance(case, dict) and isinstance(case.get("name"), str):
                cwhere = f"{where} case {case['name']!r}"
            if not _check_keys(cwhere, case, CASE_KEYS | CASE_OPTIONAL_KEYS, CASE_KEYS, problems):
                continue
            cname, value = case["name"], case["value"]
            if not isinstance(cname, str) or not CASE_NAME_RE.match(cname):
                problems.append(f"{cwhere}: case name must be an ASCII identifier")
            elif cname in RESERVED_MEMBER_NAMES or cname in ENUM_OWN_MEMBERS:
                problems.append(f"{cwhere}: case name is reserved (clashes with a generated member)")
            elif cname in seen_names:
                problems.append(f"{cwhere}: duplicate case name")
            else:
                seen_names.add(cname)
            if raw == "String":
                if not isinstance(value, str):
                    problems.append(f"{cwhere}: value {json.dumps(value)} is not a string (rawType String)")
                    continue
            elif raw in ("Int32", "Int64"):
                if isinstance(value, bool) or not isinstance(value, int):
                    problems.append(f"{cwhere}: value {json.dumps(value)} is not an integer (rawType {raw})")
                    continue
                lo, hi = (INT32_MIN, INT32_MAX) if raw == "Int32" else (INT64_MIN, INT64_MAX)
                if not lo <= value <= hi:
                    problems.append(f"{cwhere}: value {value} does not fit in {raw}")
                    continue
            else:
                continue
            if value in seen_values:
                problems.append(f"{cwhere}: duplicate value {json.dumps(value)} (also case {seen_values[value]!r})")
            else:
                seen_values[value] = cname if isinstance(cname, str) else "?"

    # Models
    defined = list(PRIMITIVES) + list(enums) + list(models)
    for mname, model in models.items():
        where = f"model {mname}"
        if not _check_keys(where, model, MODEL_KEYS, {"fields"}, problems):
            continue
        _check_doc(where, model, problems)
        fields = model["fields"]
        if not isinstance(fields, list) or not fields:
            problems.append(f"{where}: 'fields' must be a non-empty list")
            continue
        seen_names: set[str] = set()
        seen_keys: dict[str, str] = {}
        for i, field in enumerate(fields):
            fwhere = f"{where} field #{i + 1}"
            if isinstance(field, dict) and isinstance(field.get("name"), str):
                fwhere = f"{where}.{field['name']}"
            if not _check_keys(fwhere, field, FIELD_KEYS, {"name", "type"}, problems):
                continue
            fname = field["name"]
            _check_doc(fwhere, field, problems)
            if not isinstance(fname, str) or not MEMBER_NAME_RE.match(fname):
                problems.append(f"{fwhere}: field name must be a lowerCamelCase ASCII identifier")
                fname = None
            elif fname in RESERVED_MEMBER_NAMES or fname in MODEL_OWN_MEMBERS:
                problems.append(f"{fwhere}: field name is reserved (clashes with a generated member)")
            elif fname in seen_names:
                problems.append(f"{fwhere}: duplicate field name")
            else:
                seen_names.add(fname)
            if "key" in field:
                key = field["key"]
                if not isinstance(key, str) or not key:
                    problems.append(f"{fwhere}: 'key' must be a non-empty string")
                    key = None
                elif key == fname:
                    problems.append(f"{fwhere}: 'key' equals 'name'; give 'key' only when the JSON key differs")
            else:
                key = fname
            if key is not None:
                if key in seen_keys and seen_keys[key] != fname:
                    problems.append(f"{fwhere}: JSON key {key!r} already used by field {seen_keys[key]!r}")
                elif key in seen_keys:
                    pass  # duplicate field name, reported above
                else:
                    seen_keys[key] = fname or "?"
            if "required" in field and not isinstance(field["required"], bool):
                problems.append(f"{fwhere}: 'required' must be true or false")
            elif field.get("required") is False:
                problems.append(f"{fwhere}: omit 'required' instead of writing false")
            ftype = field["type"]
            tname, _ = _type_refs(ftype)
            if tname is None:
                problems.append(
                    f"{fwhere}: unknown field type {json.dumps(ftype)} "
                    "(expected a type name, a one-element list [T] of a type name, or {\"map\": T})"
                )
            elif tname not in defined:
                if TYPE_NAME_RE.match(tname) and not _suggest(tname, defined):
                    problems.append(f"{fwhere}: type {tname!r} is referenced but not defined as an enum or model")
                else:
                    problems.append(
                        f"{fwhere}: unknown field type {tname!r}{_suggest(tname, defined)} "
                        f"(primitives: {', '.join(PRIMITIVES)})"
                    )
            _check_field_limits(fwhere, field, problems)
        _check_model_extras(where, model, seen_names, seen_keys, problems)

    if not problems:
        problems.extend(_value_type_cycles(models))
    if problems:
        raise SpecError(problems)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def has_limits(field: dict) -> bool:
    return any(k in field for k in LIMIT_KEYS)


def _check_field_limits(fwhere: str, field: dict, problems: list[str]) -> None:
    """maxLength / range / nonEmpty / maxCount / alwaysEncode: well-formed and on a field type they apply to."""
    tname, is_list = _type_refs(field["type"])
    if _is_map(field["type"]):
        limited = [k for k in LIMIT_KEYS + ("alwaysEncode",) if k in field]
        if limited:
            problems.append(f"{fwhere}: {', '.join(map(repr, limited))} do not apply to map fields")
        return
    if "maxLength" in field:
        n = field["maxLength"]
        if not _is_int(n) or not 1 <= n <= INT32_MAX:
            problems.append(f"{fwhere}: 'maxLength' must be a positive integer")
        elif tname is not None and tname != "String":
            problems.append(f"{fwhere}: 'maxLength' applies only to String or [String] fields")
    if "range" in field:
        rng = field["range"]
        if not (isinstance(rng, list) and len(rng) == 2 and all(_is_int(v) for v in rng)):
            problems.append(f"{fwhere}: 'range' must be a list [min, max] of two integers")
        elif rng[0] > rng[1]:
            problems.append(f"{fwhere}: 'range' min {rng[0]} is greater than max {rng[1]}")
        elif tname is None:
            pass  # malformed type, reported by the caller
        elif tname not in INTEGER_BOUNDS:
            problems.append(f"{fwhere}: 'range' applies only to {'/'.join(INTEGER_BOUNDS)} fields (or lists of them)")
        else:
            lo, hi = INTEGER_BOUNDS[tname]
            if not (lo <= rng[0] and rng[1] <= hi):
                problems.append(f"{fwhere}: 'range' {rng} does not fit in {tname}")
    if "nonEmpty" in field:
        if field["nonEmpty"] is False:
            problems.append(f"{fwhere}: omit 'nonEmpty' instead of writing false")
        elif field["nonEmpty"] is not True:
            problems.append(f"{fwhere}: 'nonEmpty' must be true")
        elif tname is not None and not is_list:
            problems.append(f"{fwhere}: 'nonEmpty' applies only to list fields")
    if "maxCount" in field:
        n = field["maxCount"]
        if not _is_int(n) or not 1 <= n <= INT32_MAX:
            problems.append(f"{fwhere}: 'maxCount' must be a positive integer")
        elif tname is not None and not is_list:
            problems.append(f"{fwhere}: 'maxCount' applies only to list fields")
    if "encodeNull" in field:
        if field["encodeNull"] is not True:
            problems.append(f"{fwhere}: 'encodeNull' must be true (omit it otherwise)")
        elif field.get("required") or field.get("alwaysEncode"):
            problems.append(f"{fwhere}: 'encodeNull' applies only to optional fields without alwaysEncode")
    if "queryName" in field and (not isinstance(field["queryName"], str) or not field["queryName"]):
        problems.append(f"{fwhere}: 'queryName' must be a non-empty string")
    if "alwaysEncode" in field:
        if field["alwaysEncode"] is not True:
            problems.append(f"{fwhere}: 'alwaysEncode' must be true (omit it otherwise)")
        elif field["type"] != "String" or field.get("required"):
            problems.append(f"{fwhere}: 'alwaysEncode' applies only to optional String fields")


def _check_model_extras(where: str, model: dict, field_names: set[str], field_keys: dict[str, str],
                        problems: list[str]) -> None:
    """The model-level 'validate' and 'constants' attributes."""
    if "validate" in model and not isinstance(model["validate"], bool):
        problems.append(f"{where}: 'validate' must be true or false")
    has_constants = False
    if "constants" in model:
        constants = model["constants"]
        if not isinstance(constants, list) or not constants:
            problems.append(f"{where}: 'constants' must be a non-empty list")
        else:
            has_constants = True
            seen: set[str] = set()
            for i, const in enumerate(constants):
                cwhere = f"{where} constant #{i + 1}"
                if isinstance(const, dict) and isinstance(const.get("key"), str):
                    cwhere = f"{where} constant {const['key']!r}"
                if not _check_keys(cwhere, const, CONSTANT_KEYS, CONSTANT_KEYS, problems):
                    continue
                key, value = const["key"], const["value"]
                if not isinstance(key, str) or not MEMBER_NAME_RE.match(key):
                    problems.append(f"{cwhere}: key must be a lowerCamelCase ASCII identifier (it names a static member)")
                elif key in RESERVED_MEMBER_NAMES or key in MODEL_OWN_MEMBERS:
                    problems.append(f"{cwhere}: key is reserved (clashes with a generated member)")
                elif key in seen:
                    problems.append(f"{cwhere}: duplicate constant key")
                elif key in field_names or key in field_keys:
                    problems.append(f"{cwhere}: key clashes with a field name or JSON key of the model")
                else:
                    seen.add(key)
                if not isinstance(value, str):
                    problems.append(f"{cwhere}: value {json.dumps(value)} must be a string")
    if model.get("validate") is False:
        if has_constants:
            problems.append(f"{where}: 'validate': false contradicts 'constants' (request models always validate)")
        fields = model["fields"] if isinstance(model.get("fields"), list) else []
        limited = [f["name"] for f in fields if isinstance(f, dict) and has_limits(f) and isinstance(f.get("name"), str)]
        if limited:
            problems.append(f"{where}: 'validate': false contradicts the limits on {', '.join(limited)}")


def validating_models(models: dict, bodies: set[str] = frozenset()) -> set[str]:
    """Models that get validate(): see the module docstring ("validate"); request bodies of endpoints always do."""
    result = {
        m for m, model in models.items()
        if model.get("validate") is True or model.get("constants") or any(has_limits(f) for f in model["fields"])
        or m in bodies
    }
    changed = True
    while changed:
        changed = False
        for m, model in models.items():
            if m in result or model.get("validate") is False:
                continue
            if any(_type_refs(f["type"])[0] in result for f in model["fields"] if not _is_map(f["type"])):
                result.add(m)
                changed = True
    return result


def _value_type_cycles(models: dict) -> list[str]:
    """A model that contains itself through non-list fields would be an infinitely large Swift struct."""
    edges = {
        m: [t for t, is_list in (_type_refs(f["type"]) for f in model["fields"]) if not is_list and t in models]
        for m, model in models.items()
    }
    problems: list[str] = []
    state: dict[str, int] = {}  # 1 = on stack, 2 = done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                problems.append(f"models contain themselves without a list in between: {' -> '.join(cycle)}")
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for m in models:
        if m not in state:
            visit(m, [m])
    return problems




def _type_names_defined(enums: dict, models: dict) -> list[str]:
    return list(PRIMITIVES) + list(enums) + list(models)


# --------------------------------------------------------------------------------------------------------------------
# errors.json

ERRORS_KEYS = {"doc", "statuses", "reasons", "apiErrorCodes"}
STATUS_KEYS = {"value", "name", "doc"}
REASON_KEYS = {"value", "name", "swift", "statuses", "retryable", "doc"}
STATUS_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
REASON_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def validate_errors(errors: object) -> None:
    problems: list[str] = []
    if not _check_keys("errors.json", errors, ERRORS_KEYS, ERRORS_KEYS, problems):
        raise SpecError(problems)
    status_names: set[str] = set()
    seen_values: dict[int, str] = {}
    for i, st in enumerate(errors["statuses"]):
        where = f"errors.json status #{i + 1}"
        if not _check_keys(where, st, STATUS_KEYS, {"value", "name", "doc"}, problems):
            continue
        _check_doc(where, st, problems)
        if not _is_int(st["value"]) or not 0 <= st["value"] <= 127:
            problems.append(f"{where}: value must be an integer 0...127")
        elif st["value"] in seen_values:
            problems.append(f"{where}: value {st['value']} already used by {seen_values[st['value']]}")
        else:
            seen_values[st["value"]] = st["name"]
        if not isinstance(st["name"], str) or not STATUS_NAME_RE.match(st["name"]):
            problems.append(f"{where}: name must be UPPER_SNAKE_CASE")
        elif st["name"] in status_names:
            problems.append(f"{where}: duplicate name {st['name']}")
        else:
            status_names.add(st["name"])
    if "OK" not in status_names or seen_values.get(0) != "OK":
        problems.append("errors.json: status OK must have value 0")
    reason_names: set[str] = set()
    swift_names: set[str] = set()
    seen_values = {}
    for i, r in enumerate(errors["reasons"]):
        where = f"errors.json reason #{i + 1}"
        if not _check_keys(where, r, REASON_KEYS, REASON_KEYS, problems):
            continue
        _check_doc(where, r, problems)
        if not _is_int(r["value"]) or not 0 <= r["value"] <= 32767:
            problems.append(f"{where}: value must be an integer 0...32767")
        elif r["value"] in seen_values:
            problems.append(f"{where}: value {r['value']} already used by {seen_values[r['value']]}")
        else:
            seen_values[r["value"]] = r["name"]
        if not isinstance(r["name"], str) or not REASON_NAME_RE.match(r["name"]):
            problems.append(f"{where}: name must be snake_case")
        elif r["name"] in reason_names:
            problems.append(f"{where}: duplicate name {r['name']}")
        else:
            reason_names.add(r["name"])
        if not isinstance(r["swift"], str) or not MEMBER_NAME_RE.match(r["swift"]):
            problems.append(f"{where}: swift must be a lowerCamelCase identifier")
        elif r["swift"] in swift_names:
            problems.append(f"{where}: duplicate swift name {r['swift']}")
        else:
            swift_names.add(r["swift"])
        if not isinstance(r["statuses"], list) or not r["statuses"]:
            problems.append(f"{where}: statuses must be a non-empty list of status names")
        else:
            for s in r["statuses"]:
                if s not in status_names:
                    problems.append(f"{where}: unknown status {s!r}")
        if not isinstance(r["retryable"], bool):
            problems.append(f"{where}: retryable must be true or false")
    if seen_values.get(0) != "none":
        problems.append("errors.json: reason none must have value 0")
    codes = errors["apiErrorCodes"]
    if not isinstance(codes, dict) or not codes:
        problems.append("errors.json: apiErrorCodes must be an object of enums")
    else:
        for name, enum in codes.items():
            if not isinstance(enum, dict) or enum.get("rawType") != "Int64" or enum.get("caseNames") is not True:
                problems.append(f"errors.json apiErrorCodes.{name}: must be an Int64 enum with caseNames true")
            for case in enum.get("cases", []) if isinstance(enum, dict) else []:
                if "retryable" in case and case["retryable"] is not True:
                    problems.append(f"errors.json apiErrorCodes.{name} case {case.get('name')!r}: retryable must be true (omit it otherwise)")
    if problems:
        raise SpecError(problems)


# --------------------------------------------------------------------------------------------------------------------
# endpoints.json

ENDPOINTS_KEYS = {"doc", "rateLimits", "groups", "endpoints"}
GROUP_KEYS = {"doc", "errors"}
ENDPOINT_KEYS = {"name", "title", "group", "method", "path", "rateLimitPerSecond", "sandbox", "sandboxFallback", "pagination", "swiftClient",
                 "deprecated", "requestHook", "special", "response", "parameters", "doc"}
ENDPOINT_REQUIRED = {"name", "title", "group", "method", "path", "response", "parameters"}
PARAM_KEYS = {"name", "in", "type", "optional", "doc", "contentType"}
METHODS = ("GET", "POST", "PUT", "DELETE")
PATH_PARAM_TYPES = ("String", "UUID")
QUERY_SCALARS = ("String", "Int32", "Int64", "Bool", "Date", "UUID")
PATH_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z][A-Za-z0-9]*)\}")
PATH_RE = re.compile(r"^(/[A-Za-z0-9._~-]+|/\{[A-Za-z][A-Za-z0-9]*\})+$")


def validate_endpoints(endpoints: object, enums: dict, models: dict) -> None:
    problems: list[str] = []
    if not _check_keys("endpoints.json", endpoints, ENDPOINTS_KEYS, ENDPOINTS_KEYS, problems):
        raise SpecError(problems)
    groups = endpoints["groups"]
    for gname, group in groups.items():
        _check_keys(f"endpoints.json group {gname}", group, GROUP_KEYS, GROUP_KEYS, problems)
        if isinstance(group, dict) and group.get("errors") not in enums:
            problems.append(f"endpoints.json group {gname}: errors {group.get('errors')!r} is not an enum")
    names: set[str] = set()
    for i, ep in enumerate(endpoints["endpoints"]):
        where = f"endpoint #{i + 1}"
        if isinstance(ep, dict) and isinstance(ep.get("name"), str):
            where = f"endpoint {ep['name']}"
        if not _check_keys(where, ep, ENDPOINT_KEYS, ENDPOINT_REQUIRED, problems):
            continue
        name = ep["name"]
        if not isinstance(name, str) or not MEMBER_NAME_RE.match(name):
            problems.append(f"{where}: name must be a lowerCamelCase identifier")
        elif name in names:
            problems.append(f"{where}: duplicate endpoint name")
        else:
            names.add(name)
        if ep["group"] not in groups:
            problems.append(f"{where}: unknown group {ep['group']!r}")
        if ep["method"] not in METHODS:
            problems.append(f"{where}: method must be one of {', '.join(METHODS)}")
        path = ep["path"]
        if not isinstance(path, str) or not PATH_RE.match(path):
            problems.append(f"{where}: path must be /segment/{{param}}/... with unreserved characters")
            continue
        placeholders = PATH_PLACEHOLDER_RE.findall(path)
        if len(set(placeholders)) != len(placeholders):
            problems.append(f"{where}: a path parameter appears twice")
        if "rateLimitPerSecond" in ep and (not _is_int(ep["rateLimitPerSecond"]) or ep["rateLimitPerSecond"] < 1):
            problems.append(f"{where}: rateLimitPerSecond must be a positive integer")
        if "sandboxFallback" in ep and (ep["sandboxFallback"] is not True or ep.get("sandbox") is False):
            problems.append(f"{where}: sandboxFallback must be true (omit it otherwise), on an endpoint Sandbox serves")
        if "sandbox" in ep and ep["sandbox"] is not False:
            problems.append(f"{where}: sandbox must be false (omit it when the endpoint exists in Sandbox)")
        for flag in ("deprecated",):
            if flag in ep and ep[flag] is not True:
                problems.append(f"{where}: {flag} must be true (omit it otherwise)")
        if "swiftClient" in ep and ep["swiftClient"] != "manual":
            problems.append(f"{where}: swiftClient must be \"manual\" (omit it for a generated client method)")
        if ("swiftClient" in ep or "requestHook" in ep) and not ep.get("special"):
            problems.append(f"{where}: a hand-written part (swiftClient, requestHook) needs 'special' saying where it lives")
        if "requestHook" in ep and (not isinstance(ep["requestHook"], str) or not MEMBER_NAME_RE.match(ep["requestHook"])):
            problems.append(f"{where}: requestHook must be an identifier")
        response = ep["response"]
        if response is not None and response not in models:
            problems.append(f"{where}: response {response!r} is not a model")
        params = ep["parameters"]
        if not isinstance(params, list):
            problems.append(f"{where}: parameters must be a list")
            continue
        pnames: set[str] = set()
        bodies = 0
        path_params: list[str] = []
        for p in params:
            pwhere = f"{where} parameter {p.get('name') if isinstance(p, dict) else '?'}"
            if not _check_keys(pwhere, p, PARAM_KEYS, {"name", "in", "type"}, problems):
                continue
            _check_doc(pwhere, p, problems)
            pname, where_in, ptype = p["name"], p["in"], p["type"]
            if not isinstance(pname, str) or not MEMBER_NAME_RE.match(pname):
                problems.append(f"{pwhere}: name must be a lowerCamelCase identifier")
            elif pname in pnames or pname == "body":
                problems.append(f"{pwhere}: duplicate parameter name (or the reserved name 'body')")
            pnames.add(pname)
            if "optional" in p and p["optional"] is not True:
                problems.append(f"{pwhere}: optional must be true (omit it otherwise)")
            tname, is_list = _type_refs(ptype)
            if where_in == "path":
                path_params.append(pname)
                if ptype not in PATH_PARAM_TYPES or p.get("optional"):
                    problems.append(f"{pwhere}: a path parameter is a required String or UUID")
            elif where_in == "query":
                if tname in models and not is_list:
                    for f in models[tname]["fields"]:
                        ft, _ = _type_refs(f["type"])
                        if _is_map(f["type"]) or (ft not in QUERY_SCALARS and ft not in enums):
                            problems.append(f"{pwhere}: query model field {tname}.{f['name']} is not a scalar or a list of scalars")
                elif tname not in QUERY_SCALARS and tname not in enums:
                    problems.append(f"{pwhere}: a query parameter is a scalar, an enum, a list of them, or a model of them")
            elif where_in == "body":
                bodies += 1
                if ptype == "Bytes":
                    if not isinstance(p.get("contentType"), str):
                        problems.append(f"{pwhere}: a Bytes body needs its contentType")
                elif ptype not in models:
                    problems.append(f"{pwhere}: a body is a model or Bytes")
                if p.get("optional"):
                    problems.append(f"{pwhere}: a body is required")
            else:
                problems.append(f"{pwhere}: 'in' must be path, query or body")
            if "contentType" in p and ptype != "Bytes":
                problems.append(f"{pwhere}: contentType applies to a Bytes body only")
            if ptype != "Bytes" and where_in != "query" and tname not in _type_names_defined(enums, models):
                problems.append(f"{pwhere}: unknown type {ptype!r}")
        if bodies > 1:
            problems.append(f"{where}: at most one body parameter")
        if sorted(path_params) != sorted(placeholders):
            problems.append(f"{where}: path parameters {path_params} do not match the path's placeholders {placeholders}")
        pag = ep.get("pagination")
        if pag is not None:
            if not isinstance(pag, dict) or set(pag) != {"parameter", "field"}:
                problems.append(f"{where}: pagination must be {{\"parameter\": p, \"field\": f}}")
            else:
                param = next((p for p in params if isinstance(p, dict) and p.get("name") == pag["parameter"]), None)
                if param is None or not param.get("optional") or param.get("type") != "String":
                    problems.append(f"{where}: pagination parameter {pag['parameter']!r} must be an optional String parameter")
                rmodel = models.get(response) if response else None
                fields = {f["name"]: f for f in rmodel["fields"]} if rmodel else {}
                if pag["field"] not in fields or "hasMore" not in fields:
                    problems.append(f"{where}: the response model needs the pagination field {pag['field']!r} and hasMore")
    if problems:
        raise SpecError(problems)


# --------------------------------------------------------------------------------------------------------------------
# apple.json

APPLE_LANGUAGES = ("swift", "python", "node", "java")
OPERATION_KEYS = {"model", "beyondApple"}  # the documentation is the header's (binding_docs.py)
OPERATION_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
APPLE_STATUS_KEYS = {"verificationStatus", "statusDoc", "statusByReason", "statusFromStatus", "statusByStatus", "otherwise"}
APPLE_VERIFY_KEYS = {"verify", "verifyParameterType"}
# The members of each language section: the shared ones (checked here), then the facts only that language's renderer
# reads (python.py, node.py, java.py check those against the spec).
APPLE_LANGUAGE_KEYS = {
    "swift": {"doc", "verificationStatus"},
    "python": {"doc", "classNames", "caseNames"} | APPLE_STATUS_KEYS | APPLE_VERIFY_KEYS | {
        "enumModules", "deprecations", "enumAliases", "mapKeyEnums", "models", "validatorLabels", "validatorConstants"},
    "node": {"doc", "classNames", "caseNames"} | APPLE_STATUS_KEYS | APPLE_VERIFY_KEYS | {
        "extraCases", "baseInterfaces", "mergedEndpoints"},
    "java": {"doc", "classNames", "caseNames"} | APPLE_STATUS_KEYS | APPLE_VERIFY_KEYS | {
        "nestedEnums", "interfaces", "signedDateFrom", "fieldTypes", "memberNames", "extraAccessors", "listAdders",
        "mapKeyEnums", "constructors", "rawConstructors", "parameterTypes"},
}


def apple_vocabulary(apple: dict) -> list[str]:
    """The library statuses that are Apple's (Swift's VerificationError): the verification statuses."""
    return apple["swift"]["verificationStatus"]


def verification_reasons(reasons: list, apple: dict) -> list[str]:
    """The reasons that come with a status of Apple's vocabulary: each language gives Apple's status for them."""
    vocabulary = set(apple_vocabulary(apple))
    return [r["name"] for r in reasons if set(r["statuses"]) & vocabulary]


def resolve_apple_status(section: dict, status: str, reason: str) -> str:
    """Apple's status, in a language's terms, for a failure with this library status and reason: by reason, else by
    status, else `otherwise` (the rule every renderer implements)."""
    return section["statusByReason"].get(reason) or section["statusByStatus"].get(status) or section["otherwise"]


def verify_operation_problems(spec: "Spec", abi: dict) -> list[str]:
    """The ABI's appstore_verifier_verify_<operation> functions against apple.json verifyOperations: the same
    operations, each returning the model named there (its APPSTORE_JSON). For the renderers that read the ABI."""
    problems = []
    ops = spec.apple["verifyOperations"]
    seen = set()
    for f in abi["functions"]:
        m = re.fullmatch(r"appstore_verifier_verify_(\w+)", f["name"])
        if not m:
            continue
        seen.add(m.group(1))
        if m.group(1) not in ops:
            problems.append(f"{f['name']}: no entry in spec/apple.json verifyOperations")
            continue
        out = next((p for p in f["params"] if p["name"] == "json_out"), None)
        model = ((out or {}).get("json") or {}).get("model")
        if model != ops[m.group(1)]["model"]:
            problems.append(f"{f['name']} returns {model}; spec/apple.json verifyOperations says {ops[m.group(1)]['model']}")
    for op in ops:
        if op not in seen:
            problems.append(f"apple.json verifyOperations.{op}: the ABI has no appstore_verifier_verify_{op}")
    return problems


def validate_apple(apple: object, errors: dict, enums: dict, models: dict) -> None:
    problems: list[str] = []
    if not isinstance(apple, dict):
        raise SpecError(["apple.json: must be a JSON object"])
    for key in apple:
        if key not in APPLE_LANGUAGES and key not in ("doc", "verifyOperations"):
            problems.append(f"apple.json: unknown language or attribute {key!r} (languages: {', '.join(APPLE_LANGUAGES)})")
    for key in ("doc", "verifyOperations") + APPLE_LANGUAGES:
        if key not in apple:
            problems.append(f"apple.json: missing {key!r}")
    if problems:
        raise SpecError(problems)
    _check_doc("apple.json", apple, problems)
    operations = apple["verifyOperations"]
    if not isinstance(operations, dict) or not operations:
        problems.append("apple.json verifyOperations: must be a non-empty object")
        operations = {}
    for name, op in operations.items():
        where = f"apple.json verifyOperations.{name}"
        if not OPERATION_NAME_RE.match(name):
            problems.append(f"{where}: the name must be the snake_case suffix of appstore_verifier_verify_<name>")
        if not _check_keys(where, op, OPERATION_KEYS, {"model"}, problems):
            continue
        if op["model"] not in models:
            problems.append(f"{where}: model {op['model']!r} is not a model")
        if "beyondApple" in op and op["beyondApple"] is not True:
            problems.append(f"{where}: beyondApple must be true (omit it otherwise)")
    statuses = [s["name"] for s in errors["statuses"]]
    reasons = [r["name"] for r in errors["reasons"]]
    sections = {}
    for lang in APPLE_LANGUAGES:
        where = f"apple.json {lang}"
        keys = APPLE_LANGUAGE_KEYS[lang]
        if _check_keys(where, apple[lang], keys, keys, problems):
            _check_doc(where, apple[lang], problems)
            sections[lang] = apple[lang]
    if problems:
        raise SpecError(problems)

    vocabulary = sections["swift"]["verificationStatus"]
    if not isinstance(vocabulary, list) or not vocabulary:
        raise SpecError(["apple.json swift.verificationStatus: must be a non-empty list of statuses"])
    for s in vocabulary:
        if s not in statuses or s == "OK":
            problems.append(f"apple.json swift.verificationStatus: {s!r} is not a failure status of errors.json")
    if len(set(vocabulary)) != len(vocabulary):
        problems.append("apple.json swift.verificationStatus: a status is listed twice")
    if problems:
        raise SpecError(problems)
    must_map = [r["name"] for r in errors["reasons"] if set(r["statuses"]) & set(vocabulary)]

    for lang in APPLE_LANGUAGES[1:]:
        sec, where = sections[lang], f"apple.json {lang}"
        vs = sec["verificationStatus"]
        if not isinstance(vs, list) or not vs or vs[0] != "OK" or not all(
                isinstance(s, str) and STATUS_NAME_RE.match(s) for s in vs) or len(set(vs)) != len(vs):
            problems.append(f"{where}.verificationStatus: must list Apple's members (UPPER_SNAKE_CASE, OK first) once each")
            continue
        if not isinstance(sec["statusDoc"], str) or not sec["statusDoc"].strip() or "\n" in sec["statusDoc"]:
            problems.append(f"{where}.statusDoc: must be a non-empty single line")

        def apple_status_ok(what: str, value: object) -> None:
            if value not in vs:
                problems.append(f"{where}.{what}: {value!r} is not one of {lang}'s verificationStatus ({', '.join(vs)})")

        by_reason, from_status, by_status = sec["statusByReason"], sec["statusFromStatus"], sec["statusByStatus"]
        if not isinstance(by_reason, dict) or not isinstance(by_status, dict) or not isinstance(from_status, list):
            problems.append(f"{where}: statusByReason and statusByStatus must be objects, statusFromStatus a list")
            continue
        for r, s in by_reason.items():
            if r not in reasons:
                problems.append(f"{where}.statusByReason: unknown reason {r!r}{_suggest(r, reasons)}")
            apple_status_ok(f"statusByReason.{r}", s)
        for r in from_status:
            if r not in reasons:
                problems.append(f"{where}.statusFromStatus: unknown reason {r!r}{_suggest(str(r), reasons)}")
            elif r in by_reason:
                problems.append(f"{where}.statusFromStatus: {r} also has a statusByReason entry")
        if len(set(map(str, from_status))) != len(from_status):
            problems.append(f"{where}.statusFromStatus: a reason is listed twice")
        for st, s in by_status.items():
            if st not in statuses:
                problems.append(f"{where}.statusByStatus: unknown status {st!r}{_suggest(st, statuses)}")
            apple_status_ok(f"statusByStatus.{st}", s)
        for st in vocabulary:
            if st not in by_status:
                problems.append(f"{where}.statusByStatus: no entry for {st} (a status of Apple's vocabulary)")
        apple_status_ok("otherwise", sec["otherwise"])
        for r in must_map:
            if r not in by_reason and r not in from_status:
                problems.append(f"reason {r}: no Apple {lang} status in apple.json (statusByReason, or statusFromStatus "
                                f"when statusByStatus gives it)")
        verify = sec["verify"]
        if not isinstance(verify, dict):
            problems.append(f"{where}.verify: must be an object")
        else:
            for op in operations:
                if op not in verify:
                    problems.append(f"{where}.verify: no method for the verify operation {op}")
            for op, names in verify.items():
                if op not in operations:
                    problems.append(f"{where}.verify: {op!r} is not a verify operation (verifyOperations)")
                if not (isinstance(names, list) and len(names) == 2 and all(
                        isinstance(n, str) and IDENTIFIER_RE.match(n) for n in names)):
                    problems.append(f"{where}.verify.{op}: must be [Apple's method name, Apple's parameter name]")
        if not isinstance(sec["verifyParameterType"], str) or not sec["verifyParameterType"]:
            problems.append(f"{where}.verifyParameterType: must be a type name")
        for name, apple_name in sec["classNames"].items():
            if name not in enums and name not in models:
                problems.append(f"{where}.classNames: {name!r} is not a spec type")
            if not isinstance(apple_name, str) or not TYPE_NAME_RE.match(apple_name):
                problems.append(f"{where}.classNames.{name}: {apple_name!r} is not a type name")
        for key, case in sec["caseNames"].items():
            enum, _, cname = key.partition(".")
            if enum not in enums or not any(c["name"] == cname for c in enums[enum]["cases"]):
                problems.append(f"{where}.caseNames: {key!r} is not an enum case of the spec (Enum.case)")
            if not isinstance(case, str) or not IDENTIFIER_RE.match(case):
                problems.append(f"{where}.caseNames.{key}: {case!r} is not an identifier")
    if problems:
        raise SpecError(problems)


# --------------------------------------------------------------------------------------------------------------------
# The loaded spec


def _load_json(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([f"cannot read {path}: {exc}"]) from exc
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SpecError([f"{path.name}: invalid JSON: {exc}"]) from exc


def type_refs(ftype: object) -> tuple[str | None, bool]:
    return _type_refs(ftype)


def is_map(ftype: object) -> bool:
    return _is_map(ftype)


@dataclass
class Spec:
    enums: dict        # every enum, the API error code enums of errors.json included
    models: dict
    statuses: list
    reasons: list
    api_error_enums: list  # names of the enums that came from errors.json
    endpoints: list
    groups: dict
    rate_limits: dict
    apple: dict = dc_field(default_factory=dict)  # apple.json: "verifyOperations" and one section per language
    validating: set = dc_field(default_factory=set)

    def status(self, name: str) -> dict:
        return next(s for s in self.statuses if s["name"] == name)

    def apple_vocabulary(self) -> list[str]:
        """The library statuses that are Apple's (Swift's VerificationError), in errors.json order."""
        vocabulary = set(apple_vocabulary(self.apple))
        return [s["name"] for s in self.statuses if s["name"] in vocabulary]

    def verification_reasons(self) -> list[str]:
        """The reasons each language's section of apple.json gives Apple's status for."""
        return verification_reasons(self.reasons, self.apple)

    def apple_status(self, lang: str, status: str, reason: str) -> str:
        """Apple's status in `lang` (python, node, java) for a failure with this library status and reason."""
        return resolve_apple_status(self.apple[lang], status, reason)

    def endpoint_parameter_keys(self, ep: dict) -> tuple[list[str], list[str]]:
        """The keys of the endpoint's params_json object: (required, optional), in spec order. A query model is
        flattened into its fields; a model body is "body"; a Bytes body keeps its name."""
        required: list[str] = []
        optional: list[str] = []
        for p in ep["parameters"]:
            tname, is_list = _type_refs(p["type"])
            if p["in"] == "query" and tname in self.models and not is_list:
                for f in self.models[tname]["fields"]:
                    (required if f.get("required") else optional).append(f["name"])
                continue
            key = "body" if p["in"] == "body" and p["type"] != "Bytes" else p["name"]
            (optional if p.get("optional") else required).append(key)
        return required, optional


def load(spec_dir: Path = SPEC_DIR) -> Spec:
    models_spec = _load_json(spec_dir / "models.json")
    errors = _load_json(spec_dir / "errors.json")
    endpoints = _load_json(spec_dir / "endpoints.json")
    apple = _load_json(spec_dir / "apple.json")
    validate_errors(errors)
    if not isinstance(models_spec, dict) or not isinstance(models_spec.get("enums"), dict):
        raise SpecError(["models.json: must be an object with enums and models"])
    clash = sorted(set(errors["apiErrorCodes"]) & set(models_spec["enums"]))
    if clash:
        raise SpecError([f"{', '.join(clash)}: defined in both errors.json and models.json"])
    merged = dict(models_spec)
    merged["enums"] = dict(errors["apiErrorCodes"], **models_spec["enums"])
    validate_models(merged)
    validate_endpoints(endpoints, merged["enums"], merged["models"])
    validate_apple(apple, errors, merged["enums"], merged["models"])
    return Spec(enums=merged["enums"], models=merged["models"], statuses=errors["statuses"], reasons=errors["reasons"],
                api_error_enums=list(errors["apiErrorCodes"]), endpoints=endpoints["endpoints"],
                groups=endpoints["groups"], rate_limits=endpoints["rateLimits"], apple=apple,
                validating=validating_models(merged["models"], {
                    p["type"] for ep in endpoints["endpoints"] for p in ep["parameters"]
                    if p["in"] == "body" and p["type"] in merged["models"]}))


def apple_section(lang: str, spec_dir: Path = SPEC_DIR) -> dict:
    """The section of apple.json for `lang`, for renderers' name helpers that run without a loaded Spec (load()
    validates the file; generate always loads first)."""
    return _load_json(spec_dir / "apple.json")[lang]
