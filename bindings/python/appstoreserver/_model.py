"""The base of the generated models (appstoreserver/models/) and the helpers their generated code calls.

A model keeps its fields as plain instance attributes named like Apple's (the JSON keys, camelCase), declared with
their types as class-level annotations (generated: what type checkers read; they create no class attribute). Every
enum-typed field has a raw twin (`type` / `rawType`): the raw value as Apple sent it, kept even when this version
does not know it (the main field is then None). Assigning either twin updates the other, as in Apple's library.
`from_dict` fills the attributes directly (no per-field setters), which keeps decoding cheap: it is on the path of
every verified payload. The fields Apple's attrs validators check (the Advanced Commerce request models: SKU,
description, displayName, periodCount, item lists) are checked as Apple's are, with Apple's messages, when the model is
built and when such a field is assigned (`_CHECKS`, generated with the limits of spec/models.json).
"""

from __future__ import annotations

from enum import Enum, EnumMeta
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Tuple, Type, TypeVar
from uuid import UUID

from ._generated import limits

T = TypeVar("T", bound="Model")

# Apple's metadata keys (appstoreserverlibrary.models.LibraryUtility); kept for code that imports them.
metadata_key = "correspondingFieldName"
metadata_type_key = "typeOfField"
metadata_required_key = "requiredField"


class AppStoreServerLibraryEnumMeta(EnumMeta):
    """The metaclass of the model enums: `value in Enum` tests raw values ("Sandbox" in Environment), as in Apple's
    library (plain Enum raises TypeError for non-members before Python 3.12)."""

    def __contains__(cls, value: object) -> bool:  # type: ignore[override]
        if isinstance(value, cls):
            return True
        try:
            return value in cls._value2member_map_
        except TypeError:
            return False


# ---------------------------------------------------------------------------------------------------------------
# helpers of the generated code


def enum_or_none(enum: Any, value: Any) -> Any:
    """The member whose value is `value`, or None (unknown or absent values stay in the raw twin only)."""
    if value is None:
        return None
    if isinstance(value, enum):
        return value
    try:
        return enum._value2member_map_.get(value)
    except TypeError:  # an unhashable value
        return None


def raw_value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def raw_list(values: Iterable[Any]) -> List[Any]:
    return [raw_value(v) for v in values]


def enum_list(enum: Any, values: Any) -> Any:
    """A list of enum values: members where known, the raw value otherwise."""
    if values is None:
        return None
    out = []
    for v in values:
        m = enum_or_none(enum, v)
        out.append(v if m is None else m)
    return out


def enum_keys(enum: Any, mapping: Any) -> Any:
    """A mapping keyed by enum raw values, with the keys this version knows as members; None when none is known."""
    if mapping is None:
        return None
    out = {}
    for k, v in mapping.items():
        m = enum_or_none(enum, k)
        if m is not None:
            out[m] = v
    return out or None


def ms(value: Any) -> Any:
    """Milliseconds since 1970 as int: Apple's libraries truncate fractional milliseconds."""
    if value.__class__ is float:
        return int(value)
    return value


def ms_list(values: Any) -> Any:
    return None if values is None else [ms(v) for v in values]


def to_uuid(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            return value
    return value


def uuid_list(values: Any) -> Any:
    return None if values is None else [to_uuid(v) for v in values]


def uuid_str(value: Any) -> Any:
    return str(value).lower() if isinstance(value, UUID) else value


def uuid_list_str(values: Iterable[Any]) -> List[Any]:
    return [uuid_str(v) for v in values]


def sub(cls: Any, value: Any) -> Any:
    return None if value is None else cls.from_dict(value)


def sub_list(cls: Any, values: Any) -> Any:
    if values is None:
        return None
    f = cls.from_dict
    return [f(v) for v in values]


def to_json(value: Any) -> Any:
    return value.to_dict() if isinstance(value, Model) else value


def list_to_json(values: Iterable[Any]) -> List[Any]:
    return [to_json(v) for v in values]


def _pair_values(enum: Any, kind: str, main: Any, raw: Any, raw_given: bool) -> Tuple[Any, Any]:
    """(main, raw) after setting the raw twin (raw_given) or the main field."""
    if kind == "map":
        if raw_given:
            return enum_keys(enum, raw), (None if raw is None else dict(raw))
        if main is None:
            return None, None
        raw = {raw_value(k): v for k, v in main.items()}
        return enum_keys(enum, raw), raw
    if raw_given:
        return enum_or_none(enum, raw), raw
    raw = raw_value(main)
    return enum_or_none(enum, raw), raw


def set_pair(d: Dict[str, Any], main_name: str, raw_name: str, enum: Any, main: Any, raw: Any, kind: str) -> None:
    """Constructor: the raw twin wins when both are given (Apple's rule)."""
    d[main_name], d[raw_name] = _pair_values(enum, kind, main, raw, raw is not None)


def require_pair(d: Dict[str, Any], main_name: str, raw_name: str) -> None:
    if d.get(raw_name) is None:
        raise ValueError(f"Either {main_name} or {raw_name} must be provided")


# The checks of _CHECKS (Apple's HelperValidationUtils, with its messages). None is left to the library, which
# refuses a request without a required field when it is sent or signed; an item list Apple's constructor requires
# (`required`) is refused as Apple's validator refuses it.


def max_length(value: Any, limit: int, label: str) -> None:
    if value is not None and len(value) > limit:
        raise ValueError(f"{label} length cannot exceed {limit} characters")


def each_max_length(values: Any, limit: int, label: str) -> None:
    for v in values or ():
        max_length(v, limit, label)


def in_range(value: Any, low: int, high: int, label: str) -> None:
    if value is not None and (value < low or value > high):
        raise ValueError(f"{label} must be between {low} and {high}")


def item_list(values: Any, required: bool) -> None:
    if values is None and not required:
        return
    if not values:
        raise ValueError("Items list cannot be empty")
    for i, item in enumerate(values):
        if item is None:
            raise ValueError(f"Item at index {i} in the list cannot be None")


# ---------------------------------------------------------------------------------------------------------------


class Model:
    """Base of every generated model: equality by fields, Apple-style repr, raw twins kept in step, to_dict /
    from_dict (JSON objects with Apple's keys) and to_json / from_json (JSON text)."""

    _FIELDS: Tuple[str, ...] = ()
    _KEYS: Tuple[str, ...] = ()
    # attribute: (twin attribute, enum, "enum" | "map", is the raw twin)
    _TWINS: Dict[str, Tuple[str, Any, str, bool]] = {}
    # attribute: (check, its arguments...): what Apple's attrs validator of the field checks (generated)
    _CHECKS: Dict[str, Tuple[Any, ...]] = {}

    __hash__ = None  # type: ignore[assignment]  # mutable, like Apple's attrs models

    def _validate(self) -> None:
        """Apple's validators, in field order, at the end of the constructor (after the required raw twins)."""
        d = self.__dict__
        for name, (check, *args) in self._CHECKS.items():
            check(d.get(name), *args)

    # Hidden from type checkers (only there: at run time it is the same method), so that they read the generated
    # annotations alone: an attribute a model does not declare is an error, as with Apple's attrs classes.
    if not TYPE_CHECKING:

        def __setattr__(self, name: str, value: Any) -> None:
            check = self._CHECKS.get(name)
            if check is not None:  # attrs' define validates an assignment too
                check[0](value, *check[1:])
            twin = self._TWINS.get(name)
            if twin is None:
                object.__setattr__(self, name, value)
                return
            other, enum, kind, is_raw = twin
            d = self.__dict__
            if is_raw:
                d[other], d[name] = _pair_values(enum, kind, None, value, True)
            else:
                d[name], d[other] = _pair_values(enum, kind, value, None, False)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        a, b = self.__dict__, other.__dict__  # type: ignore[attr-defined]
        return all(a.get(f) == b.get(f) for f in self._FIELDS)

    def __repr__(self) -> str:
        d = self.__dict__
        return f"{type(self).__name__}(" + ", ".join(f"{f}={d.get(f)!r}" for f in self._FIELDS) + ")"

    @classmethod
    def from_dict(cls: Type[T], data: Mapping[str, Any]) -> T:  # pragma: no cover - every model defines it
        raise NotImplementedError

    def to_dict(self) -> Dict[str, Any]:  # pragma: no cover - every model defines it
        raise NotImplementedError

    @classmethod
    def from_json(cls: Type[T], text: Any) -> T:
        import json

        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__}: the JSON text is not an object")
        return cls.from_dict(data)

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


# Apple's base class names (appstoreserverlibrary.models.LibraryUtility and the Advanced Commerce abstractions).
AttrsRawValueAware = Model


class AdvancedCommerceAPIInAppRequest:
    """Marker of the Advanced Commerce in-app request models (Apple's jws_signature_creator class)."""


class AdvancedCommerceRequest(Model):
    """Apple's abstract base of the Advanced Commerce request models."""


class AbstractAdvancedCommerceInAppRequest(AdvancedCommerceRequest, AdvancedCommerceAPIInAppRequest):
    """The in-app requests AdvancedCommerceAPIInAppSignatureCreator signs (they carry operation and version)."""


class AbstractAdvancedCommerceBaseItem(Model):
    """Apple's abstract base of Advanced Commerce items."""


class AbstractAdvancedCommerceItem(AbstractAdvancedCommerceBaseItem):
    """Apple's abstract base of Advanced Commerce items with descriptors."""


class AbstractAdvancedCommerceResponse(Model):
    """Apple's abstract base of the Advanced Commerce responses."""


class HelperValidationUtils:
    """Apple's client-side validators (appstoreserverlibrary.models.HelperValidationUtils), with Apple's limits and
    messages, for code that calls them; the models run the same checks (_CHECKS). The limits are spec/models.json's
    (_generated/limits.py)."""

    MAXIMUM_DESCRIPTION_LENGTH = limits.MAXIMUM_DESCRIPTION_LENGTH
    MAXIMUM_DISPLAY_NAME_LENGTH = limits.MAXIMUM_DISPLAY_NAME_LENGTH
    MAXIMUM_SKU_LENGTH = limits.MAXIMUM_SKU_LENGTH
    MIN_PERIOD = limits.MIN_PERIOD
    MAX_PERIOD = limits.MAX_PERIOD

    @staticmethod
    def description_validator(instance: Any, attribute: Any, value: Any) -> None:
        max_length(value, HelperValidationUtils.MAXIMUM_DESCRIPTION_LENGTH, "Description")

    @staticmethod
    def display_name_validator(instance: Any, attribute: Any, value: Any) -> None:
        max_length(value, HelperValidationUtils.MAXIMUM_DISPLAY_NAME_LENGTH, "Display name")

    @staticmethod
    def sku_validator(instance: Any, attribute: Any, value: Any) -> None:
        max_length(value, HelperValidationUtils.MAXIMUM_SKU_LENGTH, "SKU")

    @staticmethod
    def period_count_validator(instance: Any, attribute: Any, value: Any) -> None:
        in_range(value, HelperValidationUtils.MIN_PERIOD, HelperValidationUtils.MAX_PERIOD, "Period count")

    @staticmethod
    def items_validator(instance: Any, attribute: Any, value: Any) -> None:
        item_list(value, True)

    @staticmethod
    def dependent_skus_validator(instance: Any, attribute: Any, value: Any) -> None:
        each_max_length(value, HelperValidationUtils.MAXIMUM_SKU_LENGTH, "SKU")
