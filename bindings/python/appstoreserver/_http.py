"""HTTP with the standard library only: the default transport of the API clients (urllib) and the transport
callback the library calls for online (OCSP) checks.

The library never opens sockets: for OCSP it calls an appstore_transport, here a ctypes callback backed by urllib,
created once per process and shared by every verifier with online checks on.
"""

from __future__ import annotations

import json as _json
import socket
import threading
import time
import urllib.error
import urllib.request
from ctypes import byref, c_void_p, string_at
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ._generated import abi
from ._native import lib

# One opener for the process; urllib honours the usual proxy environment variables, like requests.
_opener = urllib.request.build_opener()
_MAX_BODY = 64 * 1024 * 1024  # the library's cap on a response body


class Headers(Mapping[str, str]):
    """Response headers, looked up case-insensitively (like requests' CaseInsensitiveDict / httpx.Headers)."""

    def __init__(self, items: Iterable[Tuple[str, str]] = ()):
        self._items: List[Tuple[str, str]] = list(items)
        self._map: Dict[str, str] = {}
        for k, v in self._items:
            lk = k.lower()
            self._map[lk] = self._map[lk] + ", " + v if lk in self._map else v

    def __getitem__(self, key: str) -> str:
        return self._map[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def multi_items(self) -> List[Tuple[str, str]]:
        return list(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class Response:
    """What the default _execute_request returns: the attributes Apple's library reads from a requests.Response
    (status_code, headers, json()) plus content and text."""

    def __init__(self, status_code: int, headers: Headers, content: bytes):
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return _json.loads(self.content)

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}]>"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # OCSP answers are not followed elsewhere
        return None


_ocsp_opener = urllib.request.build_opener(_NoRedirect)


def send(method: str, url: str, headers: Mapping[str, str], body: Optional[bytes], timeout: float,
         opener: Any = None) -> Response:
    """One HTTP exchange with urllib. An HTTP error status is a Response; no answer at all raises OSError
    (urllib.error.URLError, TimeoutError, ConnectionError)."""
    req = urllib.request.Request(url, data=body if body else None, method=method)
    for k, v in headers.items():
        req.add_header(k, v)
    deadline = time.monotonic() + timeout
    try:
        r = (opener or _opener).open(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        with e:
            return Response(e.code, Headers(e.headers.items() if e.headers else ()), _read(e, deadline))
    with r:
        return Response(r.status, Headers(r.headers.items()), _read(r, deadline))


def _read(r: Any, deadline: float) -> bytes:
    chunks: List[bytes] = []
    total = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the response took longer than the timeout")
        chunk = r.read(65536)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > _MAX_BODY:
            raise OSError("the response body is larger than 64 MiB")
        chunks.append(chunk)


def parse_header_lines(text: bytes) -> Dict[str, str]:
    """The library's "Name: value\\r\\n" header lines as a dict (insertion order kept)."""
    out: Dict[str, str] = {}
    for line in text.decode("utf-8", "replace").split("\r\n"):
        if line:
            k, _, v = line.partition(":")
            out[k.strip()] = v.strip()
    return out


# ---- the OCSP transport callback -------------------------------------------------------------------------------

OK, TIMEOUT, UNREACHABLE, FAILED = (abi.APPSTORE_TRANSPORT_RESULT_OK, abi.APPSTORE_TRANSPORT_RESULT_TIMEOUT,
                                    abi.APPSTORE_TRANSPORT_RESULT_UNREACHABLE, abi.APPSTORE_TRANSPORT_RESULT_FAILED)


def _classify(exc: BaseException) -> int:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, (socket.timeout, TimeoutError)) or isinstance(exc, (socket.timeout, TimeoutError)):
        return TIMEOUT
    if isinstance(reason, (ConnectionError, socket.gaierror, OSError)):
        return UNREACHABLE
    return FAILED


def _ocsp_exchange(method: Optional[bytes], url: Optional[bytes], headers: Optional[bytes], headers_len: int,
                   body: Optional[int], body_len: int, timeout_ms: int, response: Optional[int]) -> int:
    try:
        hdrs = parse_header_lines(string_at(headers, headers_len) if headers else b"")
        data = string_at(body, body_len) if body and body_len else None
        r = send((method or b"POST").decode(), (url or b"").decode(), hdrs, data, max(timeout_ms, 1) / 1000.0,
                 opener=_ocsp_opener)
    except BaseException as e:  # noqa: BLE001 - nothing may escape into C
        return _classify(e)
    try:
        if lib.appstore_http_response_set_status(response, r.status_code, None) != 0:
            return FAILED
        for k, v in r.headers.multi_items():
            if "\x00" in k or "\x00" in v:
                continue
            lib.appstore_http_response_add_header(response, k.encode("utf-8", "replace"), v.encode("utf-8", "replace"),
                                                  None)
        if r.content and lib.appstore_http_response_append_body(response, r.content, len(r.content), None) != 0:
            return FAILED
        return OK
    except BaseException:  # noqa: BLE001
        return FAILED


def _callback(user_data: Optional[int], method: Optional[bytes], url: Optional[bytes], headers: Optional[bytes],
              headers_len: int, body: Optional[int], body_len: int, timeout_ms: int, response: Optional[int]) -> int:
    try:
        return _ocsp_exchange(method, url, headers, headers_len, body, body_len, timeout_ms, response)
    except BaseException:  # noqa: BLE001
        return FAILED


# The callback object must outlive every verifier that uses it: it lives as long as the module.
_CALLBACK = abi.TRANSPORT_FN(_callback)
_transport: Optional[int] = None
_transport_lock = threading.Lock()


def default_transport() -> int:
    """The process-wide appstore_transport backed by urllib (created on first use, never freed)."""
    global _transport
    with _transport_lock:
        if _transport is None:
            out = c_void_p()
            err = c_void_p()
            st = lib.appstore_transport_new(_CALLBACK, None, byref(out), byref(err))
            if st != 0:  # pragma: no cover - only on resource exhaustion
                from ._native import read_error

                raise RuntimeError(f"appstore_transport_new failed: {read_error(err, st).message}")
            _transport = out.value
        return _transport  # type: ignore[return-value]
