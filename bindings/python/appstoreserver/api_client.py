"""The App Store Server API clients (Apple's appstoreserverlibrary.api_client) on libappstoreserver.

The library (the "core") runs every call: its call driver (appstore_api_call_*) builds each request (method,
percent-encoded URL, headers with a fresh ES256 bearer token, body, after checking the parameters against Apple's
limits), decodes each answer, and decides what comes next: whether and when a failed attempt is retried (HTTP 429
and Apple's retryable codes, honouring Retry-After), whether a Production lookup is asked again in Sandbox
(sandbox_fallback), how long an attempt waits for the client-side rate limit (rate_limit), and the following pages of
iter_*. Python moves the bytes through `_execute_request` (urllib by default; override it to use your own HTTP, as
with Apple's library), sleeps when the core says wait, and gives the core its clock (`_now_ms`).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json as _json
import time
from ctypes import byref, c_int32, c_int64, c_size_t, c_void_p, string_at
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Tuple, TypeVar, Union
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from . import _args, _http
from ._generated import abi
from ._generated.api_errors import AdvancedCommerceAPIError, APIError
from ._generated.endpoints import ENDPOINTS, AsyncEndpointMethods, EndpointMethods, GetTransactionHistoryVersion
from ._generated.errors import AppStoreStatus, FailureReason
from ._native import ErrorInfo, LIBRARY_VERSION, free_error, lib, new_handle, read_error, take_string
from ._signing import (ExternalSigner, Signer, SigningError, SigningKeyArg, _SignerBridge, api_token, error_from,
                       is_signer)
from ._signing import signing_key as _new_signing_key
from .models.Environment import Environment
from .signed_data_verifier import environment_code

__all__ = ["APIError", "AdvancedCommerceAPIError", "APIException", "GetTransactionHistoryVersion",
           "BaseAppStoreServerAPIClient", "AppStoreServerAPIClient", "AsyncAppStoreServerAPIClient", "ExternalSigner",
           "Signer", "SigningError"]

T = TypeVar("T")

# Apple's base URLs, from the core (appstore_api_base_url): Apple's url property and the URL _execute_request gets.
_BASE_URLS = {env: lib.appstore_api_base_url(environment_code(env)[1], 0).decode()
              for env in (Environment.PRODUCTION, Environment.SANDBOX, Environment.LOCAL_TESTING)}
_UNSET = object()
_RATE_LIMIT_MAX_WAIT = 10.0  # one slot of Apple's slowest Sandbox endpoints (1/s in Production: one per 10 s)


class APIException(Exception):
    """An App Store Server API call failed: Apple answered with an error status (or, with status 2xx, a body that
    does not decode into the endpoint's model).

    Apple's attributes: http_status_code, api_error (APIError, or AdvancedCommerceAPIError for the Advanced Commerce
    endpoints; None when the code is unknown or absent), raw_api_error (Apple's errorCode, also when unknown),
    error_message (Apple's errorMessage). Beyond Apple's Python library:
    retry_after          Retry-After as Apple documents it and Apple's newest libraries expose it (Java's
                         getRetryAfter()): a UNIX time in milliseconds; None without Retry-After. Read in all three
                         forms Apple and proxies send (UNIX milliseconds, delta-seconds, an HTTP-date).
    retry_after_seconds  the seconds from the answer to that time (rounded up; 0 when it has passed), or None
    retry_at_ms          the same as retry_after (its name before 0.2.0)
    headers              the failed answer's headers, a case-insensitive mapping (e.headers["x-apple-request-id"];
                         multi_items() keeps every header in order); empty when there was no answer
    api_error_name, status (AppStoreStatus), reason (FailureReason), message (what failed, in words).
    The client's own rate limit refuses a call with status RATE_LIMITED, reason LOCAL_RATE_LIMIT, http_status_code 0
    (nothing was sent) and retry_after (UNIX ms) / retry_after_seconds of the next free slot.
    """

    def __init__(self, http_status_code: int, raw_api_error: Optional[int] = _UNSET,  # type: ignore[assignment]
                 error_message: Optional[str] = _UNSET):  # type: ignore[assignment]
        args: Tuple[Any, ...] = (http_status_code,)
        if raw_api_error is not _UNSET:
            args += (raw_api_error,)
        if error_message is not _UNSET:
            args += (error_message,)
        super().__init__(*args)
        self.http_status_code = http_status_code
        self.raw_api_error: Optional[int] = None if raw_api_error is _UNSET else raw_api_error
        self.error_message: Optional[str] = None if error_message is _UNSET else error_message
        self.api_error: Optional[Union[APIError, AdvancedCommerceAPIError]] = None
        if self.raw_api_error is not None:
            try:
                self.api_error = APIError(self.raw_api_error)
            except ValueError:
                pass
        self.api_error_name: Optional[str] = None
        self.retry_after: Optional[int] = None
        self.retry_after_seconds: Optional[int] = None
        self.headers: _http.Headers = _http.Headers()
        self.status: Optional[AppStoreStatus] = AppStoreStatus.API_ERROR
        self.reason: Optional[FailureReason] = None
        self.message: str = ""

    def __str__(self) -> str:
        # Apple's attributes stay as they are; the text says what failed and why (the core's message names the
        # endpoint, the HTTP status, Apple's error code and name, Apple's message and Retry-After).
        if not self.message:
            return super().__str__()
        return f"{self.message} [{self.reason.name}]" if self.reason is not None else self.message

    @property
    def retry_at_ms(self) -> Optional[int]:
        """retry_after (Retry-After as a UNIX time in milliseconds), by its name before 0.2.0."""
        return self.retry_after

    @retry_at_ms.setter
    def retry_at_ms(self, value: Optional[int]) -> None:
        self.retry_after = value

    def __repr__(self) -> str:
        return (f"APIException(http_status_code={self.http_status_code!r}, api_error={self.api_error!r}, "
                f"raw_api_error={self.raw_api_error!r}, error_message={self.error_message!r})")

    @classmethod
    def _from_info(cls, info: ErrorInfo, errors_enum: Any) -> "APIException":
        code = info.api_error_code or None
        if code is not None:
            e = cls(info.http_status, code, info.api_error_message or None)
        else:
            e = cls(info.http_status)
        if code is not None and errors_enum is not APIError:
            try:
                e.api_error = errors_enum(code)
            except ValueError:
                e.api_error = None
        e.api_error_name = info.api_error_name or None
        e.retry_after = info.retry_at_ms if info.retry_at_ms >= 0 else None
        e.retry_after_seconds = info.retry_after if info.retry_after >= 0 else None
        e.headers = _http.Headers(info.headers)
        try:
            e.status = AppStoreStatus(info.status)
        except ValueError:
            e.status = None
        try:
            e.reason = FailureReason(info.reason)
        except ValueError:
            e.reason = None
        e.message = info.message
        return e


# The headers Apple's library hands _execute_request, in its order (BaseAppStoreServerAPIClient._get_headers); the
# request's Content-Type is added only for a raw body (`data`, the image upload): for a JSON body, requests adds it.
_APPLE_HEADERS = ("User-Agent", "Authorization", "Accept")
_APPLE_LOWER = frozenset(n.lower() for n in _APPLE_HEADERS)
# Query parameters Apple's library passes as ints ([s.value for s in status]); every other value is a str.
_INT_QUERY = frozenset({"status"})


class _Prepared:
    """A request the core built, in both forms: as the core sent it (full URL, every header, body bytes) and as
    Apple's _execute_request hook receives it (URL without query; params as lists, Status values as ints; Apple's
    headers in Apple's order, Content-Type only with `data`; the JSON body as a dict or the raw body as bytes)."""

    __slots__ = ("method", "full_url", "core_headers", "headers", "body", "timeout", "url", "params", "json", "data",
                 "_snapshot")

    def __init__(self, method: str, full_url: str, headers: List[Tuple[str, str]], body: bytes, timeout: float):
        self.method = method
        self.full_url = full_url
        self.core_headers: Dict[str, str] = dict(headers)
        self.body = body
        self.timeout = timeout
        parts = urlsplit(full_url)
        self.url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        params: Dict[str, Union[str, List[str]]] = {}
        for k, v in parse_qsl(parts.query, keep_blank_values=True):
            value: Any = int(v) if k in _INT_QUERY and v.isdigit() else v
            params.setdefault(k, []).append(value)  # type: ignore[union-attr]
        self.params = params
        by_name = {k.lower(): k for k in self.core_headers}
        ctype = self.core_headers.get(by_name.get("content-type", ""), "")
        self.json: Optional[Any] = None
        self.data: Optional[bytes] = None
        if body:
            if ctype.startswith("application/json"):
                self.json = _json.loads(body)
            else:
                self.data = body
        hook = {n: self.core_headers[by_name[n.lower()]] for n in _APPLE_HEADERS if n.lower() in by_name}
        for k, v in self.core_headers.items():  # whatever else the core sends, after Apple's
            lk = k.lower()
            if lk not in _APPLE_LOWER and (lk != "content-type" or self.data is not None):
                hook[k] = v
        self.headers: Dict[str, str] = hook
        self._snapshot = (copy.deepcopy(self.params), copy.deepcopy(self.json), dict(self.headers))

    def unchanged(self, method: str, url: str, params: Any, headers: Any, json: Any, data: Any) -> bool:
        """Whether _execute_request got exactly this request (then the core's bytes go out as they are)."""
        p, j, h = self._snapshot
        return (method == self.method and url == self.url and params == p and json == j and data == self.data
                and dict(headers) == h)

    def rebuilt(self, method: str, url: str, params: Any, headers: Any, json: Any, data: Any
                ) -> Tuple[str, Dict[str, str], Optional[bytes]]:
        """URL, headers and body from (possibly changed) hook arguments, as requests sends them: a `json` body
        gets Content-Type application/json unless the headers name one."""
        full = url
        if params:
            full += "?" + urlencode(params, doseq=True, quote_via=quote)
        hdrs = dict(headers)
        if data is not None:
            body: Optional[bytes] = bytes(data)
        elif json is not None:
            body = _json.dumps(json, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            if not any(k.lower() == "content-type" for k in hdrs):
                hdrs["Content-Type"] = "application/json"
        else:
            body = None
        return full, hdrs, body


_current: "contextvars.ContextVar[Optional[_Prepared]]" = contextvars.ContextVar("appstoreserver_request", default=None)


def _response_parts(response: Any) -> Tuple[int, bytes, bytes]:
    """(status, header lines, body) of whatever _execute_request returned: our Response, a requests.Response, an
    httpx.Response, or anything with status_code, headers and content / text / json()."""
    status = response.status_code
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"_execute_request returned a response whose status_code is {status!r}")
    headers = response.headers
    items: Any
    if hasattr(headers, "multi_items"):
        items = headers.multi_items()
    elif hasattr(headers, "items"):
        items = headers.items()
    else:
        items = headers or ()
    lines = "".join(f"{k}: {v}\r\n" for k, v in items if "\x00" not in f"{k}{v}" and "\n" not in f"{k}{v}")
    content = getattr(response, "content", None)
    if content is None:
        text = getattr(response, "text", None)
        if text is not None:
            content = text.encode("utf-8")
        else:
            try:
                content = _json.dumps(response.json()).encode("utf-8")
            except Exception:  # noqa: BLE001 - no body
                content = b""
    return status, lines.encode("utf-8", "replace"), bytes(content)


class BaseAppStoreServerAPIClient:
    """What both clients share: the core's client (signing key, environment, timeout, retry policy, Sandbox
    fallback, rate limit).

    signing_key   the App Store Connect .p8 key (PEM bytes, or str); beyond Apple's: an ExternalSigner(sign,
                  public_key) for a key held in a KMS or an HSM, asked for every bearer token; when it fails (raises,
                  answers wrongly or too late), the call raises SigningError (reason SIGNER_FAILED)
    key_id, issuer_id, bundle_id, environment   as in Apple's library (Environment.XCODE is refused)

    Beyond Apple's, keyword-only:
    base_url          another server, e.g. a test server (http:// or https://)
    timeout           seconds (default 30): a deadline for the whole call (each page of iter_*), from its start: an
                      external signer's time, rate-limit waits, every exchange (connecting, sending, the status line,
                      headers and body), backoff and Retry-After waits and the Sandbox fallback all count against it.
                      Each exchange gets the time left as its timeout; a wait that would end past the deadline is not
                      waited for, and an external signer is waited for only until the deadline (its thread left to
                      finish, its signature discarded): APIException (status TRANSPORT_ERROR, reason
                      DEADLINE_EXCEEDED; the signer's TimeoutError as __cause__, the last answer as __context__).
                      An exchange that times out raises the transport's own exception (TimeoutError, httpx's), as
                      Apple's library does
    max_retries       default 0: no retries; initial_backoff and max_backoff (seconds): the wait doubles from
                      initial_backoff up to max_backoff; a Retry-After further away than max_backoff is not waited for
    sandbox_fallback  Production clients only: a lookup (transaction info, history, statuses, refund history, app
                      transaction info) that Production answers with transactionIdNotFound (4040010), after its
                      retries, is asked again in Sandbox, as Apple advises (App Review buys in Sandbox); so is one
                      Production answers with HTTP 401 (its answer for an app never released there, which App Review
                      and TestFlight purchases of a new app meet). Later pages of iter_* stay in the environment that
                      answered. When Sandbox answers with an error too, its APIException is raised (message starting
                      "Production answered transactionIdNotFound (4040010); then Sandbox: ", or "Production answered
                      HTTP 401 (an app never released there); then Sandbox: "), Production's APIException in its
                      __context__ chain (every answer a call went past, retried or Production's, is the __context__
                      of the next failure).
                      `client.with_environment.<method>(...)` returns (answer, Environment) to tell which answered.
    sandbox_base_url  the Sandbox base URL of the fallback (default: Apple's), e.g. a second test server
    rate_limit        slow down to Apple's published per-endpoint limits (docs/endpoints.md; Sandbox a tenth), one
                      budget per endpoint and environment per client, shared by its threads / tasks: every attempt
                      (retries and fallback requests too) waits for a free slot, up to rate_limit_max_wait seconds
                      (default 10); when the slot is further away, APIException (reason LOCAL_RATE_LIMIT) is raised
                      at once and nothing is sent (0: never wait)
    rate_limit_share_percent  1-100 (default 100): this client's share of Apple's limits, e.g. 50 when two
                      processes use the key
    """

    def __init__(self, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str,
                 environment: Environment, *, base_url: Optional[str] = None, timeout: float = 30.0,
                 max_retries: int = 0, initial_backoff: float = 0.5, max_backoff: float = 30.0,
                 sandbox_fallback: bool = False, sandbox_base_url: Optional[str] = None, rate_limit: bool = False,
                 rate_limit_max_wait: Optional[float] = None, rate_limit_share_percent: Optional[int] = None):
        if isinstance(environment, (Environment, str)) and not isinstance(environment, bool):
            if environment == Environment.XCODE:
                raise ValueError("Xcode is not a supported environment for an AppStoreServerAPIClient")
            if environment not in _BASE_URLS:
                raise ValueError("Invalid environment provided")
        env, env_code = environment_code(environment)
        url = _args.text(base_url, "base_url", optional=True)
        timeout_ms = _ms(timeout, "timeout", 1)
        retries = _args.integer(max_retries, "max_retries", (0, 100))
        initial_ms = _ms(initial_backoff, "initial_backoff", 0)
        max_ms = _ms(max_backoff, "max_backoff", 0)
        fallback = _args.boolean(sandbox_fallback, "sandbox_fallback")
        sandbox_url = _args.text(sandbox_base_url, "sandbox_base_url", optional=True)
        if sandbox_url is not None and not fallback:
            raise ValueError("sandbox_base_url is used only by the Sandbox fallback: pass sandbox_fallback=True")
        if fallback and env != Environment.PRODUCTION:
            raise ValueError(f"sandbox_fallback is for Production clients (this one is {env.value})")
        limited = _args.boolean(rate_limit, "rate_limit")
        if not limited and (rate_limit_max_wait is not None or rate_limit_share_percent is not None):
            raise ValueError("rate_limit_max_wait and rate_limit_share_percent are used only by the rate limit: pass "
                             "rate_limit=True")
        wait_ms = _ms(_RATE_LIMIT_MAX_WAIT if rate_limit_max_wait is None else rate_limit_max_wait,
                      "rate_limit_max_wait", 0)
        share = _args.integer(100 if rate_limit_share_percent is None else rate_limit_share_percent,
                              "rate_limit_share_percent", (1, 100))
        self._key = _new_signing_key(signing_key, key_id, issuer_id, bundle_id)
        self._key_id, self._issuer_id, self._bundle_id = key_id, issuer_id, bundle_id
        self._environment = env
        self._base_url = base_url if base_url is not None else _BASE_URLS[env]
        opts, info = new_handle("appstore_api_client_options_new")
        if opts is None:  # pragma: no cover
            raise MemoryError(info.message if info else "appstore_api_client_options_new failed")
        try:
            if url is not None:
                _options(opts.ptr, "appstore_api_client_options_set_base_url", url)
            _options(opts.ptr, "appstore_api_client_options_set_timeout_ms", timeout_ms)
            _options(opts.ptr, "appstore_api_client_options_set_retry", retries, initial_ms, max_ms)
            if fallback:
                _options(opts.ptr, "appstore_api_client_options_set_sandbox_fallback", 1, sandbox_url)
            if limited:
                _options(opts.ptr, "appstore_api_client_options_set_rate_limit", 1, wait_ms, share)
            # The client keeps the key handle: an external signer's callback must outlive the native client.
            handle, info = new_handle("appstore_api_client_new", self._key.ptr, env_code, opts.ptr, keep=self._key)
        finally:
            opts.close()
        if handle is None:
            raise ValueError(info.message if info else "appstore_api_client_new failed")
        self._client = handle
        self._h = handle.ptr
        self._external_signer = is_signer(signing_key)

    # ---- Apple's private helpers that subclasses use --------------------------------------------------------

    def _generate_token(self) -> str:
        """A fresh App Store Server API bearer token (ES256; iss, iat, exp = iat + 300, aud, bid)."""
        return api_token(self._key)

    def _get_full_url(self, path: str) -> str:
        return self._base_url + path

    def _get_headers(self) -> Dict[str, str]:
        return {"User-Agent": f"appstoreserver/{LIBRARY_VERSION}", "Authorization": f"Bearer {self._generate_token()}",
                "Accept": "application/json"}

    # ---- the call loops' clock and sleep (tests replace them) --------------------------------------------------

    def _now_ms(self) -> int:
        """Now, in UNIX milliseconds: what the core dates rate-limit slots and a delta-seconds Retry-After with."""
        return time.time_ns() // 1_000_000

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _send_default(self, method: str, url: str, params: Any, headers: Any, json: Any, data: Any
                      ) -> Tuple[str, str, Dict[str, str], Optional[bytes], float]:
        """What the default transports send: the core's bytes when the hook got them unchanged."""
        prepared = _current.get()
        timeout = prepared.timeout if prepared is not None else 30.0
        if prepared is not None and prepared.unchanged(method, url, params, headers, json, data):
            return method, prepared.full_url, dict(prepared.core_headers), prepared.body or None, timeout
        if prepared is None:
            prepared = _Prepared(method, url, [], b"", timeout)
        full, hdrs, body = prepared.rebuilt(method, url, params, headers, json, data)
        return method, full, hdrs, body, timeout


_SEND, _WAIT, _DONE = abi.APPSTORE_API_ACTION_SEND, abi.APPSTORE_API_ACTION_WAIT, abi.APPSTORE_API_ACTION_DONE
_ENVIRONMENTS = {abi.APPSTORE_ENVIRONMENT_SANDBOX: Environment.SANDBOX,
                 abi.APPSTORE_ENVIRONMENT_PRODUCTION: Environment.PRODUCTION,
                 abi.APPSTORE_ENVIRONMENT_LOCAL_TESTING: Environment.LOCAL_TESTING}
# The statuses of an API call's own failures (Apple's answer, no answer, an undecodable answer, the rate limit): raised
# as APIException. Anything else is the caller's parameters (ValueError) or the bearer token (SigningError).
_API_STATUSES = frozenset({AppStoreStatus.API_ERROR, AppStoreStatus.TRANSPORT_ERROR, AppStoreStatus.INVALID_RESPONSE,
                           AppStoreStatus.RATE_LIMITED})


class _Call:
    """One call of the core's call driver (appstore_api_call_*), in Python terms, for the clients' loops. The core
    decides everything between two sends: the rate-limit slot of each attempt, a fresh bearer token per attempt,
    retries and Retry-After, the Sandbox fallback, the following pages of iter_*. Each answer the call went past (a
    retried one; Production's, when a lookup was asked again in Sandbox) becomes the __context__ of the next failure,
    so the exception finally raised carries what came before it."""

    __slots__ = ("client", "endpoint", "handle", "_received", "_passed")

    def __init__(self, client: "BaseAppStoreServerAPIClient", endpoint: str, params: Dict[str, Any]):
        try:
            params_json = _json.dumps(params, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{endpoint}: a parameter does not convert to JSON: {e}") from None
        try:
            pj = params_json.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{endpoint}: a parameter is not valid Unicode text (unpaired surrogate)") from e
        self.client, self.endpoint = client, endpoint
        self._received: Optional[Tuple[int, bytes, bytes]] = None  # the answer reported, until next() judges it
        self._passed: Optional[APIException] = None
        handle, info = new_handle("appstore_api_call_new", client._h, endpoint.encode(), pj)
        if handle is None:
            raise self._error(info)  # type: ignore[arg-type]
        self.handle = handle

    def close(self) -> None:
        self.handle.close()

    def next(self, now_ms: int) -> Tuple[int, int]:
        """(action, milliseconds to wait) from appstore_api_call_next; the call's final error is raised."""
        action, wait, err = c_int32(), c_int64(), c_void_p()
        st = lib.appstore_api_call_next(self.handle.ptr, now_ms, byref(action), byref(wait), byref(err))
        received, self._received = self._received, None
        if st != 0:
            info = read_error(err, st)
            if received is not None and info.http_status == 0:  # not that answer's error (nothing sent since)
                self._pass(received)
            raise self._error(info)
        if received is not None and action.value != _DONE:  # retried, or asked again in Sandbox
            self._pass(received)
        return action.value, wait.value

    def request(self) -> _Prepared:
        """After SEND: the request to send."""
        req, err = c_void_p(), c_void_p()
        st = lib.appstore_api_call_request(self.handle.ptr, byref(req), byref(err))
        if st != 0:  # pragma: no cover - next() answered SEND
            raise RuntimeError(read_error(err, st).message)
        r = req.value
        try:
            n = lib.appstore_api_request_header_count(r)
            headers = [(lib.appstore_api_request_header_name(r, i).decode(),
                        lib.appstore_api_request_header_value(r, i).decode()) for i in range(n)]
            size = c_size_t()
            ptr = lib.appstore_api_request_body(r, byref(size))
            body = string_at(ptr, size.value) if ptr and size.value else b""
            return _Prepared(lib.appstore_api_request_method(r).decode(), lib.appstore_api_request_url(r).decode(),
                             headers, body, lib.appstore_api_request_timeout_ms(r) / 1000.0)
        finally:
            lib.appstore_api_request_free(r)

    def receive(self, response: Any, now_ms: int) -> None:
        """The answer _execute_request returned, received at now_ms."""
        status, headers, body = _response_parts(response)
        err = c_void_p()
        st = lib.appstore_api_call_receive(self.handle.ptr, status, headers, len(headers), body, len(body), now_ms,
                                           byref(err))
        if st != 0:  # not an HTTP status, or a body beyond the library's limit
            raise ValueError(f"{self.endpoint}: _execute_request returned an answer the library refuses: "
                             f"{read_error(err, st).message}")
        self._received = (status, headers, body)

    def fail(self, exc: BaseException, now_ms: int) -> None:
        """_execute_request raised: reported to the core as the transport failure it is (final: never retried, the
        request may have reached Apple). The exception itself is raised on, unchanged; the core's account of the
        failure (naming the endpoint) is added to it as a note."""
        err = c_void_p()
        msg = str(exc).encode("utf-8", "replace")
        if lib.appstore_api_call_receive_failure(self.handle.ptr, _http._classify(exc), msg, byref(err)) != 0:
            free_error(err)  # pragma: no cover - next() answered SEND
            return
        action = c_int32()
        st = lib.appstore_api_call_next(self.handle.ptr, now_ms, byref(action), None, byref(err))
        if st != 0:
            info = read_error(err, st)
            _add_note(exc, f"{info.message} [{_member(FailureReason, info.reason)}]")

    def answer(self) -> Tuple[Any, Environment]:
        """After DONE: the answer, decoded into the endpoint's model (None for an endpoint without one), and the
        environment that gave it."""
        out, env, err = c_void_p(), c_int32(), c_void_p()
        st = lib.appstore_api_call_answer(self.handle.ptr, byref(out), byref(env), None, byref(err))
        if st != 0:  # pragma: no cover - next() answered DONE
            raise RuntimeError(read_error(err, st).message)
        text = take_string(out)
        resp_cls = ENDPOINTS[self.endpoint][0]
        return (None if resp_cls is None else resp_cls.from_dict(_json.loads(text))), _ENVIRONMENTS[env.value]

    def has_next_page(self) -> bool:
        return lib.appstore_api_call_has_next_page(self.handle.ptr) == 1

    def _pass(self, answer: Tuple[int, bytes, bytes]) -> None:
        """An answer the call went past, as the APIException it would have been (the core's decoding)."""
        status, headers, body = answer
        out, err = c_void_p(), c_void_p()
        st = lib.appstore_api_client_decode_response(self.client._h, self.endpoint.encode(), status, headers,
                                                     len(headers), body, len(body), byref(out), byref(err))
        if st == 0:  # pragma: no cover - a 2xx answer is never gone past
            take_string(out)
            return
        e = APIException._from_info(read_error(err, st), ENDPOINTS[self.endpoint][1])
        e.__context__, self._passed = self._passed, e

    def _error(self, info: ErrorInfo) -> Exception:
        if info.status in _API_STATUSES:
            e = APIException._from_info(info, ENDPOINTS[self.endpoint][1])
            e.__context__ = self._passed
            if info.reason == FailureReason.UNDECODABLE_RESPONSE:
                # As Apple's Java (its Python raises the decoder's error itself): the decoding failure is the cause.
                e.__cause__ = ValueError(info.message)
            elif info.reason == FailureReason.DEADLINE_EXCEEDED:
                # The deadline passed while an external signer was asked: its TimeoutError (or whatever it raised) says
                # so. Read on the thread that ran next(), where the signer bridge keeps it.
                bridge = self.client._key.keep
                cause = bridge.take_error() if isinstance(bridge, _SignerBridge) else None
                if isinstance(cause, Exception):
                    e.__cause__ = cause
            return e
        prefix = "" if info.message.startswith(f"{self.endpoint}: ") else f"{self.endpoint}: "  # named once
        if info.reason == FailureReason.SIGNER_FAILED:
            # A bearer token the external signer could not make: raised as the signature creators raise it.
            return error_from(info, self.client._key, prefix)
        return ValueError(prefix + info.message)


def _member(enum: Any, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _add_note(exc: BaseException, note: str) -> None:
    """PEP 678's add_note (Python 3.11+); before it, __notes__ by hand (read by tools, not printed)."""
    try:
        if hasattr(exc, "add_note"):
            exc.add_note(note)
        else:
            exc.__notes__ = [*getattr(exc, "__notes__", ()), note]  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an exception type that takes no attributes keeps its own text
        pass


def _ms(seconds: Any, name: str, minimum: int) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(seconds).__name__}")
    ms = int(round(seconds * 1000))
    if not minimum <= ms <= 2**32 - 1:
        raise ValueError(f"{name} must be between {minimum / 1000:g} and {(2**32 - 1) / 1000:g} seconds, got {seconds}")
    return ms


def _options(opts: int, fn: str, *args: Any) -> None:
    err = c_void_p()
    st = getattr(lib, fn)(opts, *args, byref(err))
    if st != 0:
        raise ValueError(read_error(err, st).message)


class AppStoreServerAPIClient(BaseAppStoreServerAPIClient, EndpointMethods):
    """The App Store Server API, synchronously (Apple's class): every endpoint as a method with Apple's name and
    parameters, plus iter_transaction_history / iter_refund_history / iter_notification_history (every page) and
    the Advanced Commerce endpoints. HTTP goes through _execute_request (urllib; override it to use your own)."""

    def _execute_request(self, method: str, url: str, params: Dict[str, Union[str, List[str]]],
                         headers: Dict[str, str], json: Optional[Dict[str, Any]], data: Optional[bytes]) -> Any:
        """Sends one request; returns an object with status_code, headers and content (or json()). Called
        positionally as Apple's library does: (method, url without query, query params as lists, headers, the JSON
        body as a dict or None, the raw body bytes or None)."""
        m, full, hdrs, body, timeout = self._send_default(method, url, params, headers, json, data)
        return _http.send(m, full, hdrs, body, timeout)

    @property
    def with_environment(self) -> Any:  # Any: the methods' annotations name the answer alone
        """The endpoint methods returning (answer, Environment that answered): Environment.SANDBOX when a Production
        lookup fell back (sandbox_fallback), else the client's. iter_* yield (page, Environment).

            info, env = client.with_environment.get_transaction_info(transaction_id)
        """
        return _EnvironmentView(self)

    def _call(self, endpoint: str, params: Dict[str, Any]) -> Any:
        return self._call_ext(endpoint, params)[0]

    def _call_ext(self, endpoint: str, params: Dict[str, Any]) -> Tuple[Any, Environment]:
        answers = self._pages_ext(endpoint, params)
        try:
            return next(answers)
        finally:
            answers.close()

    def _pages(self, endpoint: str, params: Dict[str, Any]) -> Iterator[Any]:
        return (page for page, _ in self._pages_ext(endpoint, params))

    def _pages_ext(self, endpoint: str, params: Dict[str, Any]) -> Iterator[Tuple[Any, Environment]]:
        """The call loop over the core's driver: sends what it says to send, sleeps as long as it says, yields each
        answer with its environment (the following pages too, for iter_*)."""
        call = _Call(self, endpoint, params)
        try:
            while True:
                action, wait_ms = call.next(self._now_ms())
                if action == _SEND:
                    p = call.request()
                    token = _current.set(p)
                    try:
                        response = self._execute_request(p.method, p.url, p.params, p.headers, p.json, p.data)
                    except Exception as e:  # raised on unchanged (a KeyboardInterrupt passes by: the call ends)
                        call.fail(e, self._now_ms())
                        raise
                    finally:
                        _current.reset(token)
                    if inspect.isawaitable(response):
                        _close(response)
                        raise TypeError("_execute_request of the synchronous client returned an awaitable; override "
                                        "it with a plain function, or use AsyncAppStoreServerAPIClient")
                    call.receive(response, self._now_ms())
                elif action == _WAIT:
                    self._sleep(wait_ms / 1000.0)
                else:
                    yield call.answer()
                    if not call.has_next_page():
                        return
        finally:
            call.close()


class _EnvironmentView(EndpointMethods):
    """AppStoreServerAPIClient.with_environment: every endpoint method of the client, returning (answer,
    Environment)."""

    def __init__(self, client: AppStoreServerAPIClient):
        self._client = client

    def _call(self, endpoint: str, params: Dict[str, Any]) -> Any:
        return self._client._call_ext(endpoint, params)

    def _pages(self, endpoint: str, params: Dict[str, Any]) -> Iterator[Any]:
        return self._client._pages_ext(endpoint, params)


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if close:
        close()


class AsyncAppStoreServerAPIClient(BaseAppStoreServerAPIClient, AsyncEndpointMethods):
    """The App Store Server API on asyncio (Apple's class). HTTP: httpx when it is installed (http_client, an
    httpx.AsyncClient; close it with async_close()), else urllib in a worker thread. _execute_request may be
    overridden by an async function (or a plain one)."""

    def __init__(self, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str,
                 environment: Environment, *, base_url: Optional[str] = None, timeout: float = 30.0,
                 max_retries: int = 0, initial_backoff: float = 0.5, max_backoff: float = 30.0,
                 sandbox_fallback: bool = False, sandbox_base_url: Optional[str] = None, rate_limit: bool = False,
                 rate_limit_max_wait: Optional[float] = None, rate_limit_share_percent: Optional[int] = None):
        super().__init__(signing_key, key_id, issuer_id, bundle_id, environment, base_url=base_url, timeout=timeout,
                         max_retries=max_retries, initial_backoff=initial_backoff, max_backoff=max_backoff,
                         sandbox_fallback=sandbox_fallback, sandbox_base_url=sandbox_base_url, rate_limit=rate_limit,
                         rate_limit_max_wait=rate_limit_max_wait, rate_limit_share_percent=rate_limit_share_percent)
        try:
            import httpx

            self.http_client: Any = httpx.AsyncClient()
        except ImportError:
            self.http_client = None

    async def async_close(self) -> None:
        """Closes the httpx client this client made (Apple's method); nothing to close with the urllib fallback."""
        if self.http_client is not None:
            await self.http_client.aclose()

    async def _execute_request(self, method: str, url: str, params: Dict[str, Union[str, List[str]]],
                               headers: Dict[str, str], json: Optional[Dict[str, Any]], data: Optional[bytes]) -> Any:
        m, full, hdrs, body, timeout = self._send_default(method, url, params, headers, json, data)
        if self.http_client is not None:
            return await _http.send_httpx(self.http_client, m, full, hdrs, body, timeout)
        return await asyncio.get_running_loop().run_in_executor(None, _http.send, m, full, hdrs, body, timeout)

    @property
    def with_environment(self) -> Any:  # Any: the methods' annotations name the answer alone
        """The endpoint methods returning (answer, Environment that answered), as AppStoreServerAPIClient's:

            info, env = await client.with_environment.get_transaction_info(transaction_id)
        """
        return _AsyncEnvironmentView(self)

    async def _acall(self, endpoint: str, params: Dict[str, Any]) -> Any:
        return (await self._acall_ext(endpoint, params))[0]

    async def _acall_ext(self, endpoint: str, params: Dict[str, Any]) -> Tuple[Any, Environment]:
        answers = self._apages_ext(endpoint, params)
        try:
            return await answers.__anext__()
        finally:
            await answers.aclose()

    async def _asleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _anext(self, call: _Call) -> Tuple[int, int]:
        # An external signer (a KMS round trip) may sign a bearer token in next(): in a worker thread, not on the
        # event loop.
        if self._external_signer:
            return await asyncio.get_running_loop().run_in_executor(None, call.next, self._now_ms())
        return call.next(self._now_ms())

    async def _apages(self, endpoint: str, params: Dict[str, Any]) -> AsyncIterator[Any]:
        async for page, _ in self._apages_ext(endpoint, params):
            yield page

    async def _apages_ext(self, endpoint: str, params: Dict[str, Any]) -> AsyncIterator[Tuple[Any, Environment]]:
        """The call loop over the core's driver, as AppStoreServerAPIClient's, awaiting the hook and asyncio.sleep."""
        call = _Call(self, endpoint, params)
        try:
            while True:
                action, wait_ms = await self._anext(call)
                if action == _SEND:
                    p = call.request()
                    token = _current.set(p)
                    try:
                        response = self._execute_request(p.method, p.url, p.params, p.headers, p.json, p.data)
                        if inspect.isawaitable(response):
                            response = await response
                    except Exception as e:  # raised on as it is
                        call.fail(e, self._now_ms())
                        raise
                    finally:
                        _current.reset(token)
                    call.receive(response, self._now_ms())
                elif action == _WAIT:
                    await self._asleep(wait_ms / 1000.0)
                else:
                    yield call.answer()
                    if not call.has_next_page():
                        return
        finally:
            call.close()


class _AsyncEnvironmentView(AsyncEndpointMethods):
    """AsyncAppStoreServerAPIClient.with_environment: every endpoint method of the client, returning (answer,
    Environment)."""

    def __init__(self, client: AsyncAppStoreServerAPIClient):
        self._client = client

    async def _acall(self, endpoint: str, params: Dict[str, Any]) -> Any:
        return await self._client._acall_ext(endpoint, params)

    def _apages(self, endpoint: str, params: Dict[str, Any]) -> AsyncIterator[Any]:
        return self._client._apages_ext(endpoint, params)

