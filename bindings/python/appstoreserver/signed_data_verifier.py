"""SignedDataVerifier: Apple's appstoreserverlibrary.signed_data_verifier on libappstoreserver.

Verifies and decodes App Store signed data (notifications V2, transactions, renewal info, app transactions,
Retention Messaging realtime requests). Failures raise VerificationException with Apple's `status` (the
VerificationStatus Apple's Python library reports for the case) plus this library's precise `appstore_status`,
`reason` and `message`.
"""

from __future__ import annotations

import json
from ctypes import byref, c_uint64, c_void_p, string_at
from typing import Any, List, Optional, Tuple

from . import _args
from ._docs import from_header
from ._generated import abi
from ._generated.errors import AppStoreStatus, FailureReason
from ._generated.verification import VERIFY_OPERATIONS, SignedDataVerifierOperations, VerificationStatus, apple_status
from ._native import ErrorInfo, lib, new_handle, read_error
from .models.Environment import Environment

__all__ = ["SignedDataVerifier", "VerificationException", "VerificationStatus", "AppStoreStatus", "FailureReason"]


class VerificationException(Exception):
    """Raised when signed data does not verify.

    status          Apple's VerificationStatus, as Apple's Python library reports the case
    appstore_status this library's precise status (AppStoreStatus; e.g. INVALID_JWT_FORMAT where Apple's Python
                    says VERIFICATION_FAILURE)
    reason          why (FailureReason, e.g. BAD_SIGNATURE, EXPIRED, WRONG_BUNDLE)
    message         what failed, in words
    """

    def __init__(self, status: VerificationStatus, reason: Optional[FailureReason] = None, message: str = "",
                 appstore_status: Optional[AppStoreStatus] = None):
        super().__init__("Verification failed with status " + status.name)
        self.status = status
        self.reason = reason
        self.message = message
        self.appstore_status = appstore_status

    def __str__(self) -> str:
        # Apple's text first (code matching on it keeps working), then why and what exactly failed.
        text = "Verification failed with status " + self.status.name
        if self.reason is not None:
            text += f" ({self.reason.name})"
        return text + (f": {self.message}" if self.message else "")

    def __repr__(self) -> str:
        return (f"VerificationException(status={self.status!s}, appstore_status={self.appstore_status!s}, "
                f"reason={self.reason!s}, message={self.message!r})")


def _enum_or_int(enum: Any, value: int) -> Any:
    try:
        return enum(value)
    except ValueError:
        return value


def exception_from(info: ErrorInfo) -> VerificationException:
    return VerificationException(apple_status(info.status, info.reason), _enum_or_int(FailureReason, info.reason),
                                 info.message, _enum_or_int(AppStoreStatus, info.status))


_ENVIRONMENTS = {
    Environment.SANDBOX: abi.APPSTORE_ENVIRONMENT_SANDBOX,
    Environment.PRODUCTION: abi.APPSTORE_ENVIRONMENT_PRODUCTION,
    Environment.XCODE: abi.APPSTORE_ENVIRONMENT_XCODE,
    Environment.LOCAL_TESTING: abi.APPSTORE_ENVIRONMENT_LOCAL_TESTING,
}


def environment_code(environment: Any, name: str = "environment") -> Tuple[Environment, int]:
    env = _args.enum_member(environment, Environment, name)
    return env, _ENVIRONMENTS[env]


def _options_call(opts: int, fn: str, *args: Any) -> None:
    err = c_void_p()
    st = getattr(lib, fn)(opts, *args, byref(err))
    if st != 0:
        info = read_error(err, st)
        raise ValueError(info.message)


_string_free = lib.appstore_string_free
_json_loads = json.loads


class SignedDataVerifier(SignedDataVerifierOperations):
    """Verifies and decodes signed data from the App Store (Apple's constructor and methods).

    root_certificates     DER root certificates (Apple Root CA - G3): the only trust anchors
    enable_online_checks  check revocation (OCSP) at the responders the certificates name, over HTTP with urllib;
                          chains are then validated at the current time
    environment           Environment the data must come from
    bundle_id             the app's bundle identifier
    app_apple_id          the app's Apple ID; required for Environment.PRODUCTION

    Beyond Apple's, keyword-only: chain_cache_size / chain_cache_ttl (seconds) size the verified-chain cache (0
    entries disables it); online_timeout (seconds) bounds one OCSP exchange.

    One verifier may be shared by any number of threads; verification runs without the GIL.
    """

    def __init__(self, root_certificates: List[bytes], enable_online_checks: bool, environment: Environment,
                 bundle_id: str, app_apple_id: Optional[int] = None, *, chain_cache_size: Optional[int] = None,
                 chain_cache_ttl: Optional[int] = None, online_timeout: float = 30.0):
        roots = _args.blob_list(root_certificates, "root_certificates")
        online = _args.boolean(enable_online_checks, "enable_online_checks")
        env, env_code = environment_code(environment)
        bundle = _args.text(bundle_id, "bundle_id")
        app_id = _args.integer(app_apple_id, "app_apple_id", optional=True)
        if env == Environment.PRODUCTION and app_id is None:
            raise ValueError("appAppleId is required when the environment is Production")
        size = _args.integer(chain_cache_size, "chain_cache_size", _args.UINT32, optional=True)
        ttl = _args.integer(chain_cache_ttl, "chain_cache_ttl", (0, _args.INT64[1]), optional=True)
        if isinstance(online_timeout, bool) or not isinstance(online_timeout, (int, float)):
            raise TypeError(f"online_timeout must be a number of seconds, not {type(online_timeout).__name__}")
        if not 0.001 <= online_timeout <= 3600:
            raise ValueError(f"online_timeout must be between 0.001 and 3600 seconds, got {online_timeout}")
        self._environment = env
        self._bundle_id = bundle_id
        self._app_apple_id = app_id
        self._enable_online_checks = online
        self._failure: Optional[ErrorInfo] = None
        opts, info = new_handle("appstore_verifier_options_new")
        if opts is None:  # pragma: no cover - resource exhaustion
            raise MemoryError(info.message if info else "appstore_verifier_options_new failed")
        try:
            o = opts.ptr
            for i, der in enumerate(roots):
                err = c_void_p()
                st = lib.appstore_verifier_options_add_root(o, der, len(der), byref(err))
                if st != 0:
                    raise ValueError(f"root_certificates[{i}]: {read_error(err, st).message}")
            _options_call(o, "appstore_verifier_options_set_bundle_id", bundle)
            if app_id is not None:
                _options_call(o, "appstore_verifier_options_set_app_apple_id", app_id)
            _options_call(o, "appstore_verifier_options_set_environment", env_code)
            _options_call(o, "appstore_verifier_options_set_online_checks", 1 if online else 0)
            if size is not None or ttl is not None:
                _options_call(o, "appstore_verifier_options_set_chain_cache", 32 if size is None else size,
                              900 if ttl is None else ttl)
            if online:
                from ._http import default_transport

                _options_call(o, "appstore_verifier_options_set_transport", default_transport(),
                              int(round(online_timeout * 1000)))
            handle, info = new_handle("appstore_verifier_new", o)
        finally:
            opts.close()
        if handle is None:
            assert info is not None
            if info.reason == FailureReason.NO_TRUST_ANCHOR:
                # Apple's library accepts no roots and fails every verification with INVALID_CERTIFICATE.
                self._failure = info
                self._handle = None
            else:
                raise ValueError(info.message)
        else:
            self._handle = handle
            self._h = handle.ptr

    # Apple's verify methods, verify_and_decode_notification_deep (beyond Apple) and verify_and_decode_json come from
    # SignedDataVerifierOperations (_generated/verification.py, spec/apple.json); each calls _verify.

    @from_header("appstore_verifier_cache_stats")
    def cache_stats(self) -> Tuple[int, int, int]:
        """Returns (hits, misses, entries); (0, 0, 0) once the verifier is closed."""
        if self._handle is None:
            return (0, 0, 0)
        hits, misses, entries = c_uint64(), c_uint64(), c_uint64()
        err = c_void_p()
        st = lib.appstore_verifier_cache_stats(self._h, byref(hits), byref(misses), byref(entries), byref(err))
        if st != 0:  # pragma: no cover
            raise RuntimeError(read_error(err, st).message)
        return hits.value, misses.value, entries.value

    # ---- the call ---------------------------------------------------------------------------------------------

    def _verify(self, operation: str, signed: Any, name: str) -> Any:
        fn = _FUNCTIONS.get(operation) if isinstance(operation, str) else None
        if fn is None:
            raise ValueError(f"kind must be one of {', '.join(VERIFY_OPERATIONS)}, got {_args.shown(operation)}")
        if isinstance(signed, str):
            try:
                data = signed.encode("utf-8")
            except UnicodeEncodeError:
                data = signed.encode("utf-8", "replace")  # not a JWS: the library says so (malformed)
        else:
            data = _args.text_or_bytes(signed, name)
        if self._handle is None:
            assert self._failure is not None
            raise exception_from(self._failure)
        if operation == "notification" and getattr(self._verify_notification, "__func__", None) \
                is not SignedDataVerifier._verify_notification:
            return self._verify_leaving_identity(data)
        out = c_void_p()
        err = c_void_p()
        st = fn(self._h, data, len(data), byref(out), byref(err))
        if st != 0:
            raise exception_from(read_error(err, st)) from None
        p = out.value
        if not p:  # pragma: no cover - the library sets the output on success
            raise RuntimeError("the library returned no output")
        try:
            text = string_at(p)
        finally:
            _string_free(p)
        return _json_loads(text)


    @from_header("appstore_verifier_check_notification_identity")
    def _verify_notification(self, bundle_id: Optional[str], app_apple_id: Optional[int],
                             environment: Optional[Environment]) -> None:
        """Apple's extension point: called by verify_and_decode_notification after the signature, the chain and the
        payload passed, with the app the notification names (from data, summary, externalPurchaseToken or appData in
        Apple's order; None when absent). A subclass (or an instance attribute, as Apple's tests set it) may replace
        it, e.g. to accept several apps; the notification is returned only when it returns normally. The default is
        the library's check: raises VerificationException INVALID_APP_IDENTIFIER or INVALID_ENVIRONMENT."""
        if self._handle is None:
            assert self._failure is not None
            raise exception_from(self._failure)
        if app_apple_id is not None and (not isinstance(app_apple_id, int) or isinstance(app_apple_id, bool)):
            raise TypeError(f"app_apple_id must be an int or None, not {type(app_apple_id).__name__}")
        env = environment.value if isinstance(environment, Environment) else environment
        err = c_void_p()
        st = lib.appstore_verifier_check_notification_identity(
            self._h, _args.text(bundle_id, "bundle_id", optional=True), app_apple_id or 0,
            _args.text(env, "environment", optional=True), byref(err))
        if st != 0:
            info = read_error(err, st)
            if info.status == AppStoreStatus.INVALID_ARGUMENT:
                raise ValueError(info.message)
            raise exception_from(info) from None

    def _verify_leaving_identity(self, data: bytes) -> Any:
        """A notification whose app check is _verify_notification's (overridden): verified by the library but for
        the app, which the hook checks with what the library found."""
        out, ident, err = c_void_p(), c_void_p(), c_void_p()
        st = lib.appstore_verifier_notification_leaving_identity(self._h, data, len(data), byref(out), byref(ident),
                                                                 byref(err))
        if st != 0:
            raise exception_from(read_error(err, st)) from None
        try:
            payload = _json_loads(string_at(out.value))
            identity = json.loads(string_at(ident.value))
        finally:
            _string_free(out.value)
            _string_free(ident.value)
        env = identity.get("environment")
        try:
            env = Environment(env) if env is not None else None
        except ValueError:
            pass  # a value this version does not know: passed as Apple sent it
        self._verify_notification(identity.get("bundleId"), identity.get("appAppleId"), env)
        return payload


# The C function of each verify operation (appstore_verifier_verify_<operation>).
_FUNCTIONS = {op: getattr(lib, "appstore_verifier_verify_" + op) for op in VERIFY_OPERATIONS}

# The verify methods (generated, documented from the header) as SignedDataVerifier's own attributes: pdoc leaves out
# members inherited from a module outside the reference (_generated), and these are the class's main methods.
for _name, _method in list(vars(SignedDataVerifierOperations).items()):
    if _name.startswith("verify_and_decode"):
        setattr(SignedDataVerifier, _name, _method)
del _name, _method
