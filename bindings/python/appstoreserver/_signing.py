"""The signing key every signature creator and API client holds: an App Store Connect key (PKCS#8 PEM .p8, EC P-256)
with its identifiers, parsed once by the library (appstore_signing_key), or a key held outside the process (a KMS or
an HSM) reached through a Python callable (appstore_signing_key_new_with_signer). Key bytes never appear in errors."""

from __future__ import annotations

import inspect
import threading
from ctypes import byref, c_size_t, c_void_p, memmove, string_at
from typing import Any, Callable, Optional, Union

from . import _args
from ._generated import abi
from ._native import Handle, lib, new_handle, read_error, take_string

Signer = Callable[[bytes, bytes], bytes]
"""An external signer: sign(message, digest) -> the ECDSA P-256 signature of SHA-256(message), as DER or as 64 bytes
r||s. `digest` is SHA-256(message), for signers that take a digest (KMS's MessageType DIGEST, PKCS#11 CKM_ECDSA).
A plain function, called on the thread that asks for the signature (possibly several at once); the async API client
calls it in a worker thread, so a KMS round trip does not stop the event loop."""

SigningKeyArg = Union[bytes, str, Signer]


class SigningError(ValueError):
    """A key that cannot be used (not PEM, encrypted, truncated, not EC P-256), an external signer that failed, or a
    request that breaks Apple's limits: .status (AppStoreStatus) / .reason (FailureReason) / .message say which. When
    an external signer raised, that exception is the __cause__."""

    def __init__(self, message: str, status: Any = None, reason: Any = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason


class _SignerBridge:
    """The ctypes callback of one external-signer key. It must outlive the native key (and every client made with
    it), so the key's Handle keeps it. The exception a failed call raised is kept per thread (the callback runs on
    the thread that asked for the signature) until the failing library call reports it."""

    def __init__(self, sign: Signer):
        self.sign = sign
        self.local = threading.local()
        self.callback = abi.SIGNER_FN(self._call)

    def _call(self, user_data: Optional[int], message: Optional[int], message_len: int, digest: Optional[int],
              signature: Optional[int], signature_cap: int, signature_len: Optional[int]) -> int:
        # Nothing may escape into C: ctypes would print the exception and return 0, i.e. "signed".
        try:
            msg = string_at(message, message_len) if message_len else b""
            sig = self.sign(msg, string_at(digest, 32) if digest else b"")
            if inspect.isawaitable(sig):
                close = getattr(sig, "close", None)
                if close:
                    close()
                raise TypeError("the signer returned an awaitable: it must be a plain function (the async client calls "
                                "it in a worker thread)")
            if not isinstance(sig, (bytes, bytearray, memoryview)):
                raise TypeError(f"the signer returned {type(sig).__name__}, not bytes")
            sig = bytes(sig)
            if not 0 < len(sig) <= signature_cap:
                raise ValueError(f"the signer returned {len(sig)} bytes; an ECDSA P-256 signature is 64 bytes r||s or "
                                 f"DER of at most {signature_cap}")
            memmove(signature, sig, len(sig))
            c_size_t.from_address(signature_len).value = len(sig)  # type: ignore[arg-type]
            self.local.error = None
            return 0
        except BaseException as e:  # noqa: BLE001 - a failed signature, reported by the library call that asked
            try:
                self.local.error = e
            except BaseException:  # noqa: BLE001
                pass
            return 1

    def take_error(self) -> Optional[BaseException]:
        e = getattr(self.local, "error", None)
        self.local.error = None
        return e


def error_from(info: Any, key: Optional[Handle] = None, prefix: str = "") -> SigningError:
    """The SigningError of a failed library call; with the key, an external signer's exception becomes its cause and
    is named in the message."""
    from ._generated.errors import AppStoreStatus, FailureReason

    def enum(e: Any, v: int) -> Any:
        try:
            return e(v)
        except ValueError:
            return v

    message = prefix + info.message
    cause = None
    bridge = key.keep if key is not None else None
    if isinstance(bridge, _SignerBridge):
        cause = bridge.take_error()
        if cause is not None and info.reason == FailureReason.SIGNER_FAILED:
            # The library only saw a non-zero return ("the signer callback returned 1"); the Python exception says
            # what failed.
            what = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
            head, sep, _ = info.message.partition("the external signer failed")
            message = prefix + (head + sep + f": it raised {what}" if sep else info.message + f" (it raised {what})")
        else:
            cause = None
    err = SigningError(message, enum(AppStoreStatus, info.status), enum(FailureReason, info.reason))
    err.__cause__ = cause
    return err


def is_signer(value: Any) -> bool:
    return callable(value) and not isinstance(value, (str, bytes, bytearray, memoryview))


def signing_key(signing_key: Any, key_id: Any, issuer_id: Any, bundle_id: Any, *,
                issuer_required: bool = True) -> Handle:
    """The native key of a .p8 PEM (bytes or str) or of an external signer (a callable, see Signer)."""
    signer = is_signer(signing_key)
    if not signer and not isinstance(signing_key, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"signing_key must be the .p8 PEM (str or bytes) or a signer callable "
                        f"sign(message, digest) -> bytes, not {_args._type_name(signing_key)}")
    kid = _args.text(key_id, "key_id")
    iss = _args.text(issuer_id, "issuer_id", optional=not issuer_required)
    bid = _args.text(bundle_id, "bundle_id")
    if signer:
        bridge = _SignerBridge(signing_key)
        handle, info = new_handle("appstore_signing_key_new_with_signer", bridge.callback, None, kid, iss, bid,
                                  keep=bridge)
        if handle is None:
            raise error_from(info)
        return handle
    pem = _args.text_or_bytes(signing_key, "signing_key")
    handle, info = new_handle("appstore_signing_key_new", pem, len(pem), kid, iss, bid)
    if handle is None:
        raise error_from(info)
    return handle


def call_string(key: Handle, fn: Any, *args: Any) -> str:
    """Calls a signing function of `key` whose last two parameters are (char **out, appstore_error **err)."""
    out = c_void_p()
    err = c_void_p()
    st = fn(key.ptr, *args, byref(out), byref(err))
    if st != 0:
        raise error_from(read_error(err, st), key)
    return take_string(out).decode("utf-8")


def api_token(key: Handle, issued_at: int = 0, lifetime_seconds: int = 0) -> str:
    return call_string(key, lib.appstore_signing_key_create_api_token, issued_at, lifetime_seconds)
