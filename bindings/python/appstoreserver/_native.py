"""Loads libappstoreserver (the self-contained flavour bundled in this package) and gives every C function its
generated ctypes prototype (_generated/abi.py). Everything else in the package calls the library through `lib`.

The library is looked up in this order: the file named by the environment variable APPSTORESERVER_LIB (for
development and tests), then libappstoreserver.so.0 next to this module (what the wheel carries).
ctypes.CDLL releases the GIL for the duration of every call, so threads verify in parallel.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import byref, c_void_p, string_at
from typing import NamedTuple, Optional, Tuple

from ._args import redact
from ._generated import abi

_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path() -> str:
    env = os.environ.get("APPSTORESERVER_LIB")
    if env:
        return env
    return os.path.join(_HERE, abi.SONAME)


def _load() -> ctypes.CDLL:
    path = library_path()
    if not os.path.isfile(path):
        raise ImportError(
            f"appstoreserver: the native library {path} is missing. Install the package from a wheel or with "
            "`pip install ./bindings/python` (which bundles it), or set APPSTORESERVER_LIB to a "
            "libappstoreserver.so.0 (the self-contained flavour, build/dist/libappstoreserver.so.0).")
    lib = ctypes.CDLL(path)
    missing = []
    for name, (restype, argtypes) in abi.PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    if missing:
        raise ImportError(f"appstoreserver: {path} lacks {', '.join(missing)} (an older library than this package)")
    return lib


lib = _load()
LIBRARY_VERSION: str = lib.appstore_version().decode()

_string_free = lib.appstore_string_free
_error_free = lib.appstore_error_free


def take_string(p: c_void_p) -> bytes:
    """The bytes of a library-owned string (a char ** output), which is then freed."""
    v = p.value
    if not v:
        return b""
    try:
        return string_at(v)
    finally:
        _string_free(v)


class ErrorInfo(NamedTuple):
    """Everything an appstore_error carries."""

    status: int
    reason: int
    message: str
    http_status: int
    api_error_code: int
    api_error_name: str
    api_error_message: str
    retry_after: int  # appstore_error_retry_after: seconds from the answer (APIException.retry_after_seconds)
    retry_at_ms: int  # appstore_error_retry_at_ms: UNIX milliseconds (APIException.retry_after)
    headers: Tuple[Tuple[str, str], ...] = ()  # the failed answer's headers, in the order received


def read_error(err: c_void_p, status: int, free: bool = True) -> ErrorInfo:
    """Reads (and by default frees) an appstore_error. A failure without an error object reports the status."""
    h = err.value
    if not h:
        return ErrorInfo(status, 0, lib.appstore_status_name(status).decode(), 0, 0, "", "", -1, -1)
    try:
        return ErrorInfo(
            lib.appstore_error_status(h), lib.appstore_error_reason(h),
            # The library describes key material instead of quoting it; redact() holds that line here too.
            redact((lib.appstore_error_message(h) or b"").decode("utf-8", "replace")),
            lib.appstore_error_http_status(h), lib.appstore_error_api_error_code(h),
            (lib.appstore_error_api_error_name(h) or b"").decode("utf-8", "replace"),
            (lib.appstore_error_api_error_message(h) or b"").decode("utf-8", "replace"),
            lib.appstore_error_retry_after(h), lib.appstore_error_retry_at_ms(h), _headers(h))
    finally:
        if free:
            _error_free(h)


def _headers(h: int) -> Tuple[Tuple[str, str], ...]:
    """The headers of the answer an API error came from (none for other errors)."""
    out = []
    for i in range(lib.appstore_error_header_count(h)):
        name, value = lib.appstore_error_header_name(h, i), lib.appstore_error_header_value(h, i)
        if name is not None:
            out.append((name.decode("utf-8", "replace"), (value or b"").decode("utf-8", "replace")))
    return tuple(out)


def free_error(err: c_void_p) -> None:
    if err.value:
        _error_free(err.value)


class Handle:
    """Owns one library handle and frees it (with its _free function) when collected or closed. `keep`: what the
    native object uses without owning it (a ctypes callback, another handle), kept alive as long as this handle."""

    __slots__ = ("_ptr", "_free", "keep", "__weakref__")

    def __init__(self, ptr: int, free_name: str, keep: object = None):
        self._ptr: Optional[int] = ptr
        self._free = getattr(lib, free_name)
        self.keep = keep

    @property
    def ptr(self) -> int:
        p = self._ptr
        if p is None:
            raise ValueError("the object was closed")
        return p

    def close(self) -> None:
        p, self._ptr = self._ptr, None
        if p:
            self._free(p)
        self.keep = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def new_handle(fn_name: str, *args: object, keep: object = None) -> "tuple[Optional[Handle], Optional[ErrorInfo]]":
    """Calls appstore_<type>_new(args..., &out, &err) (or appstore_<type>_new_with_<...>): (Handle, None) on success,
    (None, ErrorInfo) on failure. keep: as for Handle."""
    out = c_void_p()
    err = c_void_p()
    st = getattr(lib, fn_name)(*args, byref(out), byref(err))
    if st != 0:
        return None, read_error(err, st)
    handle_type = fn_name[: fn_name.rindex("_new")]
    return Handle(out.value, abi.HANDLES[handle_type], keep), None  # type: ignore[arg-type]
