"""HTTP with the standard library only: the default transport of the API clients (urllib) and the transport
callback the library calls for online (OCSP) checks; and the exchange of the async client over httpx.

The library never opens sockets: for OCSP it calls an appstore_transport, here a ctypes callback backed by urllib,
created once per process and shared by every verifier with online checks on.

Every transport here holds the same line against a hostile server (or an attacker on the path):
- a redirect is never followed (Apple's API and OCSP responders never redirect; following one would carry the bearer
  token to another host): the 3xx answer goes to the library as it is;
- a body is read up to the library's limit (abi.APPSTORE_LIMIT_*_RESPONSE_BYTES, counted after content decoding)
  and no further: beyond it the exchange fails (ResponseTooLarge);
- the timeout is a deadline for the whole exchange (connect, send, status line, headers, body), not per socket
  read: a server dripping one byte at a time cannot hold a call past it (TimeoutError).
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import io
import json as _json
import socket
import threading
import time
import urllib.error
import urllib.request
import zlib
from ctypes import byref, c_void_p, string_at
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ._generated import abi
from ._native import lib

API_LIMIT = abi.APPSTORE_LIMIT_API_RESPONSE_BYTES
OCSP_LIMIT = abi.APPSTORE_LIMIT_OCSP_RESPONSE_BYTES


class BadResponse(OSError):
    """An answer that is not handed to the library: the exchange failed, a transport failure like a refused
    connection."""


class ResponseTooLarge(BadResponse):
    """A response body beyond the library's limit (counted after content decoding)."""


def _too_large(limit: int) -> ResponseTooLarge:
    size = f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"
    return ResponseTooLarge(f"the response body is larger than the library's limit of {size}: not read further")


class Deadline:
    """A timeout as a deadline for the whole exchange: every step waits at most the time that is left."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; TimeoutError when there are none."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> TimeoutError:
        return TimeoutError(_timed_out(self.seconds))


def _timed_out(seconds: float) -> str:
    return f"no complete answer within the timeout of {seconds:g} s"


_DECODED = ("gzip", "x-gzip", "deflate")


class _Body:
    """A response body collected up to `limit` bytes. With `encoding` gzip or deflate it is inflated here, never more
    than the limit at a time (a 1 GiB gzip bomb is 1 MiB on the wire); any other encoding is kept as received."""

    def __init__(self, limit: int, encoding: str = ""):
        self.limit = limit
        self.size = 0
        self.parts: List[bytes] = []
        self.decoded = encoding in _DECODED
        # 32 + MAX_WBITS: a gzip or zlib header, detected (servers mean either by "deflate").
        self._inflate = zlib.decompressobj(32 + zlib.MAX_WBITS) if self.decoded else None
        self._raw = 0

    def add(self, data: bytes) -> None:
        if self._inflate is None:
            self._keep(data)
            return
        self._raw += len(data)
        if self._raw > self.limit:
            raise _too_large(self.limit)
        try:
            while data and not self._inflate.eof:
                self._keep(self._inflate.decompress(data, self.limit + 1 - self.size))
                data = self._inflate.unconsumed_tail
        except zlib.error as e:
            raise BadResponse(f"the response body does not inflate: {e}") from None

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise _too_large(self.limit)
        if data:
            self.parts.append(data)

    def content(self) -> bytes:
        return b"".join(self.parts)


def _content_length(headers: Any) -> int:
    try:
        return int(headers.get("Content-Length") or -1)
    except ValueError:
        return -1


def _encoding(headers: Any) -> str:
    return (headers.get("Content-Encoding") or "").strip().lower()


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
    """Redirects are answers, never followed (urllib's default follows them, carrying Authorization to any host)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None

    def http_error_302(self, *args: Any, **kwargs: Any) -> None:  # the 3xx then raises HTTPError: a Response
        return None

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


class _DeadlineReader(io.RawIOBase):
    """The socket reads of one response (status line and headers included), each waiting at most the time left."""

    def __init__(self, raw: Any, sock: socket.socket, deadline: Deadline):
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> Optional[int]:
        self._sock.settimeout(self._deadline.left())
        try:
            return self._raw.readinto(b)
        except (socket.timeout, TimeoutError):
            raise self._deadline.expired() from None

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, deadline: Deadline, **kwargs: Any):
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline))


class _DeadlineConnection:
    """Mixed into http.client's connections: connecting, sending and every read wait at most the time left."""

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any):
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._deadline = deadline
        self.response_class = functools.partial(_DeadlineResponse, deadline=deadline)

    def connect(self) -> None:
        self.timeout = self._deadline.left()
        super().connect()  # type: ignore[misc]

    def send(self, data: Any) -> None:
        sock = getattr(self, "sock", None)
        if sock is not None:
            sock.settimeout(self._deadline.left())
        super().send(data)  # type: ignore[misc]


class _HTTPConnection(_DeadlineConnection, http.client.HTTPConnection):
    pass


_CONNECTIONS: Dict[Any, Any] = {http.client.HTTPConnection: _HTTPConnection}
if hasattr(http.client, "HTTPSConnection"):
    class _HTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
        pass

    _CONNECTIONS[http.client.HTTPSConnection] = _HTTPSConnection


class _DeadlineHandler:
    """urllib's HTTP(S) handler with the deadline of the request (Request.deadline) on its connection."""

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        conn = functools.partial(_CONNECTIONS.get(http_class, http_class), deadline=req.deadline)
        return super().do_open(conn, req, **kwargs)  # type: ignore[misc]


class _HTTPHandler(_DeadlineHandler, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_DeadlineHandler, urllib.request.HTTPSHandler):
    pass


# One opener for the process; urllib honours the usual proxy environment variables, like requests.
_opener = urllib.request.build_opener(_NoRedirect, _HTTPHandler, _HTTPSHandler)


def send(method: str, url: str, headers: Mapping[str, str], body: Optional[bytes], timeout: float,
         limit: int = API_LIMIT) -> Response:
    """One HTTP exchange with urllib, within `timeout` seconds in all. Any HTTP status is a Response (a 3xx too: it
    is never followed); no answer at all raises OSError: TimeoutError past the deadline, ResponseTooLarge for a body
    beyond `limit` (after inflating gzip or deflate), urllib.error.URLError, ConnectionError."""
    req = urllib.request.Request(url, data=body if body else None, method=method)
    for k, v in headers.items():
        req.add_header(k, v)
    deadline = Deadline(timeout)
    req.deadline = deadline  # type: ignore[attr-defined]
    try:
        try:
            r = _opener.open(req, timeout=deadline.left())
        except urllib.error.HTTPError as e:  # any status but 2xx
            with e:
                hdrs = e.headers if e.headers is not None else http.client.HTTPMessage()
                return _response(e.code, hdrs, _read(e, hdrs, deadline, limit))
        with r:
            return _response(r.status, r.headers, _read(r, r.headers, deadline, limit))
    except urllib.error.URLError as e:  # raised while connecting or sending
        if isinstance(e.reason, (socket.timeout, TimeoutError)):
            raise deadline.expired() from e
        raise


def _read(r: Any, headers: Any, deadline: Deadline, limit: int) -> _Body:
    body = _Body(limit, _encoding(headers))
    if not body.decoded and _content_length(headers) > limit:
        raise _too_large(limit)
    while True:
        deadline.left()
        chunk = r.read(65536)
        if not chunk:
            return body
        body.add(chunk)


def _response(status: int, headers: Any, body: _Body) -> Response:
    items = headers.items()
    if body.decoded:  # the headers describe the body handed on: inflated, its length is no longer the wire's
        items = [(k, v) for k, v in items if k.lower() not in ("content-encoding", "content-length")]
    return Response(status, Headers(items), body.content())


@functools.lru_cache(maxsize=None)
def _httpx_errors() -> Tuple[type, type]:
    """The async client's failures over httpx: httpx's exception kinds that are OSErrors as well (as urllib's)."""
    import httpx

    class DeadlineExceeded(httpx.TimeoutException, TimeoutError):
        pass

    class BodyTooLarge(httpx.TransportError, ResponseTooLarge):
        pass

    return DeadlineExceeded, BodyTooLarge


async def send_httpx(client: Any, method: str, url: str, headers: Mapping[str, str], body: Optional[bytes],
                     timeout: float, limit: int = API_LIMIT) -> Any:
    """One exchange with an httpx.AsyncClient, as send() does it with urllib: redirects not followed (whatever the
    client's follow_redirects), `timeout` a deadline for the whole exchange (httpx's own timeouts are per
    operation), the body read raw and inflated here up to `limit` (httpx inflates a whole network read at once: a
    64 KiB read of a gzip bomb is 64 MiB). An httpx.Response with the body read."""
    import httpx

    deadline_exceeded, body_too_large = _httpx_errors()
    hdrs = dict(headers)
    if not any(k.lower() == "accept-encoding" for k in hdrs):
        hdrs["Accept-Encoding"] = "gzip, deflate"  # what _Body inflates (httpx would add br / zstd when installed)

    async def exchange() -> Any:
        async with client.stream(method, url, headers=hdrs, content=body, timeout=timeout,
                                 follow_redirects=False) as r:
            collected = _Body(limit, _encoding(r.headers))
            if not collected.decoded and _content_length(r.headers) > limit:
                raise _too_large(limit)
            async for chunk in r.aiter_raw():
                collected.add(chunk)
        # Without Content-Encoding (and the wire's length) in any case: httpx.Response would decode the body again.
        items = [(k, v) for k, v in r.headers.multi_items()
                 if not (k.lower() == "content-encoding" or (collected.decoded and k.lower() == "content-length"))]
        return httpx.Response(r.status_code, headers=items, content=collected.content(), request=r.request,
                              extensions=r.extensions)

    try:
        return await asyncio.wait_for(exchange(), timeout)
    except asyncio.TimeoutError:
        raise deadline_exceeded(_timed_out(timeout)) from None
    except ResponseTooLarge as e:
        if isinstance(e, body_too_large):
            raise
        raise body_too_large(str(e)) from None


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
    if isinstance(exc, BadResponse):
        return FAILED
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
        # The exchange's own limit (OCSP's, when the library uses this transport for OCSP); 0 without a response.
        limit = lib.appstore_http_response_body_limit(response) or OCSP_LIMIT
        r = send((method or b"POST").decode(), (url or b"").decode(), hdrs, data, max(timeout_ms, 1) / 1000.0,
                 limit)
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
