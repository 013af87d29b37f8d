"""The signing key every signature creator and API client holds: an App Store Connect key (PKCS#8 PEM .p8, EC P-256)
with its identifiers, parsed once by the library (appstore_signing_key), or a key held outside the process (a KMS or
an HSM) reached through a Python callable with its public key (ExternalSigner, appstore_signing_key_new_with_signer).
Key bytes never appear in errors."""

from __future__ import annotations

import inspect
import threading
from ctypes import byref, c_size_t, c_void_p, memmove, string_at
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from . import _args
from ._generated import abi
from ._native import Handle, lib, new_handle, read_error, take_string

if TYPE_CHECKING:  # imported where used at run time (error_from)
    from ._generated.errors import AppStoreStatus, FailureReason

Signer = Callable[[bytes, bytes], bytes]
"""An external signer's function: sign(message, digest) -> the ECDSA P-256 signature of SHA-256(message), as DER or
as 64 bytes r||s. `digest` is SHA-256(message), for signers that take a digest (KMS's MessageType DIGEST, PKCS#11
CKM_ECDSA). A plain function, called in a worker thread (possibly several at once), so a KMS round trip neither
stops the async client's event loop nor holds a call past the signer's timeout or an API call's deadline. One that
takes a `timeout` keyword (or **kwargs) is told the seconds it has: the signer's timeout, or what is left of the API
client's timeout when that is less; pass it on to the KMS client. Wrap it in an ExternalSigner."""

_SIGNER_TIMEOUT = 10.0  # the library's default (appstore_signing_key_new_with_signer's timeout_ms 0)


class ExternalSigner:
    """A key held outside the process (a KMS or an HSM), given wherever a .p8 PEM goes (`signing_key` of the API
    clients and of the signature creators).

    sign        sign(message, digest) -> bytes, see Signer
    public_key  the key's public half, as KMS and HSM APIs hand it out: PEM "-----BEGIN PUBLIC KEY-----" text (str or
                bytes) or DER SubjectPublicKeyInfo (bytes); required. The library verifies every signature with it
                before use: a signature made with another key, over another message (a replayed one) or random
                bytes fails the call (SigningError, INVALID_KEY / SIGNER_FAILED) instead of being sent to Apple.
    timeout     seconds one signature may take (default 10): the call stops waiting then and fails with SigningError
                (SIGNER_FAILED, a TimeoutError as __cause__); the signer's thread is left to finish on its own. In an
                API call, the client's timeout (a deadline for the whole call) bounds it too: the call stops waiting
                at its deadline and raises APIException (reason DEADLINE_EXCEEDED, the TimeoutError as __cause__).
    """

    __slots__ = ("sign", "public_key", "timeout", "takes_timeout")

    def __init__(self, sign: Signer, public_key: Union[str, bytes], *, timeout: Optional[float] = None):
        if not callable(sign) or isinstance(sign, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"sign must be a callable sign(message, digest) -> bytes, not {_args._type_name(sign)}")
        self.sign = sign
        self.takes_timeout = _takes_timeout(sign)
        self.public_key = _args.text_or_bytes(public_key, "public_key")
        if not self.public_key:
            raise ValueError("public_key is empty: the signer's public key is required")
        if timeout is None:
            timeout = _SIGNER_TIMEOUT
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, not {_args._type_name(timeout)}")
        if not 0.001 <= timeout <= (2**32 - 1) / 1000:
            raise ValueError(f"timeout must be between 0.001 and {(2**32 - 1) / 1000:g} seconds, got {timeout}")
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"ExternalSigner({self.sign!r}, timeout={self.timeout:g})"


def _takes_timeout(sign: Any) -> bool:
    """Whether sign accepts a `timeout` keyword (by name, or through **kwargs)."""
    try:
        params = inspect.signature(sign).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called with (message, digest)
        return False
    return any(p.kind == p.VAR_KEYWORD or (p.name == "timeout" and p.kind != p.POSITIONAL_ONLY) for p in params)


SigningKeyArg = Union[bytes, str, ExternalSigner]


class SigningError(ValueError):
    """A key that cannot be used (not PEM, encrypted, truncated, not EC P-256), an external signer that failed, or a
    request that breaks Apple's limits: .status (AppStoreStatus) / .reason (FailureReason) / .message say which. When
    an external signer raised, that exception is the __cause__."""

    def __init__(self, message: str, status: Optional[AppStoreStatus] = None,
                 reason: Optional[FailureReason] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason


class _SignerBridge:
    """The ctypes callback of one external-signer key. It must outlive the native key (and every client made with
    it), so the key's Handle keeps it. The exception a failed call raised is kept per thread (the callback runs on
    the thread that asked for the signature) until the failing library call reports it; a KeyboardInterrupt or
    SystemExit is raised again there (error_from), as if nothing had been in between."""

    def __init__(self, signer: ExternalSigner):
        self.sign = signer.sign
        self.timeout = signer.timeout
        self.takes_timeout = signer.takes_timeout
        self.local = threading.local()
        self.callback = abi.SIGNER_FN(self._call)

    def _sign(self, message: bytes, digest: bytes, timeout_ms: int = 0) -> Any:
        """sign() in a worker thread, waited for at most the time it has (timeout_ms: the key's timeout, or what is left
        of an API call's deadline when that is nearer): the library cannot interrupt its callback, and a hung KMS call
        must not hold the caller. A signature that comes later is discarded."""
        wait = timeout_ms / 1000 if timeout_ms else self.timeout
        done = threading.Event()
        out: List[Any] = []

        def work() -> None:
            try:
                sig = self.sign(message, digest, timeout=wait) if self.takes_timeout else self.sign(message, digest)
                out.append((True, sig))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                out.append((False, e))
            finally:
                done.set()

        threading.Thread(target=work, name="appstoreserver-signer", daemon=True).start()
        if not done.wait(wait):
            raise TimeoutError(f"no signature within the {wait:g} s it had")
        ok, value = out[0]
        if not ok:
            raise value
        return value

    def _call(self, user_data: Optional[int], message: Optional[int], message_len: int, digest: Optional[int],
              signature: Optional[int], signature_cap: int, signature_len: Optional[int], timeout_ms: int = 0) -> int:
        # Nothing may escape into C: ctypes would print the exception and return 0, i.e. "signed".
        try:
            msg = string_at(message, message_len) if message_len else b""
            sig = self._sign(msg, string_at(digest, 32) if digest else b"", timeout_ms)
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
            # A KeyboardInterrupt too: ctypes would swallow it here; the library call that asked raises it again.
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
    is named in the message (a KeyboardInterrupt or SystemExit it raised is raised here instead)."""
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
        if cause is not None and not isinstance(cause, Exception):
            raise cause  # KeyboardInterrupt, SystemExit: not a failed signature
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
    return isinstance(value, ExternalSigner)


def signing_key(signing_key: Any, key_id: Any, issuer_id: Any, bundle_id: Any, *,
                issuer_required: bool = True) -> Handle:
    """The native key of a .p8 PEM (bytes or str) or of an external signer (ExternalSigner)."""
    signer = is_signer(signing_key)
    if not signer and callable(signing_key):
        raise TypeError("an external signer needs its public key, which the library checks every signature with: pass "
                        "ExternalSigner(sign, public_key) as signing_key")
    if not signer and not isinstance(signing_key, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"signing_key must be the .p8 PEM (str or bytes) or an ExternalSigner, not "
                        f"{_args._type_name(signing_key)}")
    kid = _args.text(key_id, "key_id")
    iss = _args.text(issuer_id, "issuer_id", optional=not issuer_required)
    bid = _args.text(bundle_id, "bundle_id")
    if signer:
        bridge = _SignerBridge(signing_key)
        pub = signing_key.public_key
        handle, info = new_handle("appstore_signing_key_new_with_signer", bridge.callback, None, pub, len(pub),
                                  int(round(signing_key.timeout * 1000)), kid, iss, bid, keep=bridge)
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
