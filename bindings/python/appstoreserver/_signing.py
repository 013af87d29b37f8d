"""The signing key every signature creator and API client holds: an App Store Connect key (PKCS#8 PEM .p8, EC P-256)
with its identifiers, parsed once by the library (appstore_signing_key). Key bytes never appear in errors."""

from __future__ import annotations

from ctypes import byref, c_void_p
from typing import Any

from . import _args
from ._native import Handle, lib, new_handle, read_error, take_string


class SigningError(ValueError):
    """A key that cannot be used (not PEM, encrypted, truncated, not EC P-256) or a request that breaks Apple's limits:
    .status (AppStoreStatus) / .reason (FailureReason) / .message say which."""

    def __init__(self, message: str, status: Any = None, reason: Any = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason


def error_from(info: Any) -> SigningError:
    from ._generated.errors import AppStoreStatus, FailureReason

    def enum(e: Any, v: int) -> Any:
        try:
            return e(v)
        except ValueError:
            return v

    return SigningError(info.message, enum(AppStoreStatus, info.status), enum(FailureReason, info.reason))


def signing_key(signing_key: Any, key_id: Any, issuer_id: Any, bundle_id: Any, *,
                issuer_required: bool = True) -> Handle:
    pem = _args.text_or_bytes(signing_key, "signing_key")
    kid = _args.text(key_id, "key_id")
    iss = _args.text(issuer_id, "issuer_id", optional=not issuer_required)
    bid = _args.text(bundle_id, "bundle_id")
    handle, info = new_handle("appstore_signing_key_new", pem, len(pem), kid, iss, bid)
    if handle is None:
        raise error_from(info)
    return handle


def call_string(fn: Any, *args: Any) -> str:
    """Calls a signing function whose last two parameters are (char **out, appstore_error **err)."""
    out = c_void_p()
    err = c_void_p()
    st = fn(*args, byref(out), byref(err))
    if st != 0:
        raise error_from(read_error(err, st))
    return take_string(out).decode("utf-8")


def api_token(key: Handle, issued_at: int = 0, lifetime_seconds: int = 0) -> str:
    return call_string(lib.appstore_signing_key_create_api_token, key.ptr, issued_at, lifetime_seconds)

