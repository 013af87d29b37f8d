"""Argument checks before anything reaches ctypes: a wrong type is a TypeError, a wrong value a ValueError, each
naming the parameter. ctypes itself would raise ctypes.ArgumentError, or pass a truncated string (a str with a
NUL byte ends early in C), or wrap an out-of-range integer silently."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, List, Optional, Sequence

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT32 = (0, 2**32 - 1)


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


_NOT_SHOWN = "<PEM key material, not shown>"
# From a PEM header to its footer, or, when there is none (a quoted or shortened copy), to the next quote or the end.
_PEM = re.compile(r"-----begin.*?(?:-----end[^\n\"']*?-----|(?=[\"'])|\Z)", re.IGNORECASE | re.DOTALL)


def shown(value: Any) -> str:
    """repr(value) for a message, except key material: a PEM key passed where text goes (a base URL, an id) is
    described, never quoted."""
    text = value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else value
    if isinstance(text, str) and _PEM.search(text):
        return _NOT_SHOWN
    return repr(value)


def redact(message: str) -> str:
    """A message with any PEM block in it (the library quoting caller text) replaced by a description."""
    return _PEM.sub(_NOT_SHOWN, message) if "-----" in message else message


def text(value: Any, name: str, *, optional: bool = False) -> Optional[bytes]:
    """A str parameter as NUL-terminated UTF-8 (no NUL inside)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {_type_name(value)}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain a NUL character")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{name} is not valid Unicode text (unpaired surrogate at {e.start})") from None


def blob(value: Any, name: str, *, optional: bool = False) -> Optional[bytes]:
    """A binary parameter (bytes, bytearray, memoryview); str is refused (DER, PNG, ... are not text)."""
    if value is None and optional:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        raise TypeError(f"{name} must be bytes, not str")
    raise TypeError(f"{name} must be bytes, not {_type_name(value)}")


def text_or_bytes(value: Any, name: str) -> bytes:
    """A parameter that is text on the wire but may come as str or bytes (a JWS, a receipt, a PEM key). NUL bytes
    are allowed: these cross with their length, and the library rejects what is malformed."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{name} is not valid Unicode text (unpaired surrogate at {e.start})") from None
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name} must be a str or bytes, not {_type_name(value)}")


def integer(value: Any, name: str, bounds: "tuple[int, int]" = INT64, *, optional: bool = False) -> Optional[int]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {_type_name(value)}")
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
    return int(value)


def boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {_type_name(value)}")
    return value


def blob_list(value: Any, name: str) -> List[bytes]:
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of bytes, not {_type_name(value)}")
    return [blob(v, f"{name}[{i}]") for i, v in enumerate(value)]  # type: ignore[misc]


def enum_member(value: Any, enum: Any, name: str) -> Any:
    """A member of `enum`, given as the member or its raw value."""
    if isinstance(value, enum):
        return value
    if isinstance(value, Enum) or value is None or isinstance(value, bool):
        raise TypeError(f"{name} must be a {enum.__name__}, not {_type_name(value)}")
    try:
        return enum(value)
    except (ValueError, TypeError):
        raise ValueError(f"{name}: {shown(value)} is not a {enum.__name__}") from None


def choose(value: Any, allowed: Sequence[Any], name: str) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {shown(value)}")
    return value
