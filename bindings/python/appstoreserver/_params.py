"""Checks and conversions of API method arguments into params_json values (used by _generated/endpoints.py). The
library validates the request itself (Apple's limits, UUIDs, unknown keys); these give Python's TypeError /
ValueError for what is the wrong kind of value before it is encoded."""

from __future__ import annotations

import base64
from enum import Enum
from typing import Any, Dict, List, Mapping
from uuid import UUID

from . import _args
from ._model import Model


def _tn(v: Any) -> str:
    return "None" if v is None else type(v).__name__


def path_str(value: Any, name: str) -> str:
    if isinstance(value, UUID):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {_tn(value)}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain a NUL character")
    return value


def path_uuid(value: Any, name: str) -> str:
    if isinstance(value, UUID):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a UUID or str, not {_tn(value)}")
    try:
        UUID(value)
    except ValueError:
        raise ValueError(f"{name} must be a UUID, got {_args.shown(value)}") from None
    return value


def query_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {_tn(value)}")
    if "\x00" in value:
        raise ValueError(f"{name} must not contain a NUL character")
    return value


def query_value(value: Any, name: str) -> Any:
    return value


def _raw(value: Any, enum: Any, name: str) -> Any:
    if isinstance(value, Enum):
        if not isinstance(value, enum):
            raise TypeError(f"{name} must be a {enum.__name__}, not {type(value).__name__}")
        return value.value
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"{name} must be a {enum.__name__}, not {_tn(value)}")
    return value


def query_enum(value: Any, enum: Any, name: str) -> Any:
    return _raw(value, enum, name)


def query_enum_list(values: Any, enum: Any, name: str) -> List[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of {enum.__name__}, not {_tn(values)}")
    return [_raw(v, enum, f"{name}[{i}]") for i, v in enumerate(values)]


def _model_dict(value: Any, cls: Any, name: str) -> Dict[str, Any]:
    if isinstance(value, cls):
        return value.to_dict()
    if isinstance(value, Model):
        raise TypeError(f"{name} must be a {cls.__name__}, not {type(value).__name__}")
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{name} must be a {cls.__name__}, not {_tn(value)}")


def query_model(value: Any, cls: Any, name: str) -> Dict[str, Any]:
    """A model sent as query parameters (TransactionHistoryRequest); None means no filter."""
    if value is None:
        return {}
    return _model_dict(value, cls, name)


def body_model(value: Any, cls: Any, name: str) -> Dict[str, Any]:
    return _model_dict(value, cls, name)


def body_bytes(value: Any, name: str) -> str:
    data = _args.blob(value, name)
    return base64.b64encode(data).decode("ascii")  # type: ignore[arg-type]


def version_value(value: Any, enum: Any) -> str:
    v = value.value if isinstance(value, Enum) else value
    if v not in ("v1", "v2"):
        raise ValueError(f"version must be {enum.__name__}.V1 or .V2, got {_args.shown(value)}")
    return v

