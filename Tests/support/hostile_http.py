#!/usr/bin/env python3
"""hostile_http.py -- an HTTP server on 127.0.0.1 that misbehaves the way an attacker on the path (or a hostile
server behind a base URL) would, for the hardening tests of every client and transport (Swift, C, Python, Node, the
tool): API calls and OCSP exchanges alike (the behaviour ignores the method and reads and drops any request body).

    hostile_http.py [--lifetime SECONDS]

Prints "PORT <main> <catcher>" on stdout once both ports listen; serves until standard input reaches end of file
(the test that started it exited or closed the pipe), SIGTERM, or the lifetime (default 300 s) passes. Every
misbehaviour is bounded in time (at most DRIP_LIMIT seconds) and in bytes, and stops when the client goes away.
A drip outlasts any test's time bound by far (DRIP_LIMIT = 600 s; the tests allow at most 120 s, >= 4x their slowest
run on a loaded 2-core machine), so a client that waits for it fails however slow the machine is.

The behaviour is the first path segment, so a client's base URL selects it: http://127.0.0.1:<main>/<behaviour>
(the rest of the path, e.g. /inApps/v1/transactions/1, is ignored).

  redirect-<code>   <code> (301, 302, 303, 307, 308) with Location: http://127.0.0.1:<catcher>/caught<rest of the
                    path>: a client must not follow it. The catcher answers every request 200 with
                    {"signedTransactionInfo": "caught"} (and an OCSP-looking body for POSTs) and records it.
  caught            GET /caught on the main port: {"count": N, "authorization": [...], "methods": [...]}: what the
                    catcher received so far (count 0 means no client followed a redirect).
  drip-<ms>         200, Content-Type application/json, Content-Length 1000000, then one byte of the body every <ms>
                    milliseconds: a per-read timeout never fires, a deadline for the whole exchange does.
  dripall-<ms>      the whole response, status line and headers included, one byte every <ms> milliseconds (a
                    1,000,000-byte body, so the drip lasts DRIP_LIMIT even at 1 ms a byte).
  huge-<MiB>        200, no Content-Length (the body ends when the connection closes), <MiB> MiB of JSON-looking
                    bytes sent as fast as the client reads them.
  hugecl-<MiB>      the same with an honest Content-Length.
  gzip-<MiB>        200, Content-Encoding: gzip, Content-Length of the compressed body: <MiB> MiB of spaces,
                    gzip-compressed (1024 MiB -> about 1 MiB on the wire): a bomb for clients that inflate first and
                    count afterwards.
  errmsg-<KiB>      400 with Apple's error payload whose errorCode is 4000006 and whose errorMessage holds terminal
                    escape sequences, control characters and <KiB> KiB of text ("Apple's" message, hostile).
  nostatus          closes the connection after reading the request without answering anything.
  status-<code>     <code> with an empty body.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import zlib

DRIP_LIMIT = 600.0  # seconds; far beyond every test's bound (see above)

caught: list[dict] = []
caught_lock = threading.Lock()
gzip_cache: dict[int, bytes] = {}
gzip_lock = threading.Lock()


def _deflated_spaces(mib: int) -> bytes:
    """<mib> MiB of spaces, raw deflate ended with a full flush: the blocks refer to no earlier data, so copies of them
    can follow each other in one stream."""
    d = zlib.compressobj(9, zlib.DEFLATED, -15)
    return d.compress(b" " * (mib << 20)) + d.flush(zlib.Z_FULL_FLUSH)


def gzip_body(mib: int) -> bytes:
    """<mib> MiB of spaces as one gzip member: 64 MiB deflated once and repeated (the rest one MiB at a time), an empty
    final block and the trailer; 1 GiB is ~1,044,000 bytes on the wire, under the 1 MiB OCSP limit as a single deflate
    of it is. Deflating the whole GiB took over 20 s on a loaded machine, long enough for a client's timeout to fire
    before the first byte; this takes a second or two."""
    with gzip_lock:
        if mib not in gzip_cache:
            big, rest = divmod(mib, 64)
            body = (_deflated_spaces(64) * big if big else b"") + (_deflated_spaces(1) * rest if rest else b"")
            final = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
            crc = 0
            chunk = b" " * (1 << 20)
            for _ in range(mib):
                crc = zlib.crc32(chunk, crc)
            gzip_cache[mib] = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + final
                               + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF))
        return gzip_cache[mib]


def read_request(conn: socket.socket) -> tuple[str, str, dict] | None:
    """Reads one request (head and Content-Length body); returns (method, path, headers) or None."""
    conn.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return None
        data += part
        if len(data) > 1 << 20:
            return None
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            part = conn.recv(65536)
            if not part:
                break
            rest += part
    else:
        length = int(headers.get("content-length", "0") or 0)
        while len(rest) < length:
            part = conn.recv(65536)
            if not part:
                break
            rest += part
    return method, path, headers


def send_all(conn: socket.socket, data: bytes) -> bool:
    try:
        conn.sendall(data)
        return True
    except OSError:
        return False


def answer(conn: socket.socket, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
    reason = {200: "OK", 301: "Moved Permanently", 302: "Found", 303: "See Other", 307: "Temporary Redirect",
              308: "Permanent Redirect", 400: "Bad Request"}.get(status, "Status")
    head = f"HTTP/1.1 {status} {reason}\r\n"
    names = {n.lower() for n, _ in headers}
    for n, v in headers:
        head += f"{n}: {v}\r\n"
    if "content-length" not in names:
        head += f"Content-Length: {len(body)}\r\n"
    head += "Connection: close\r\n\r\n"
    send_all(conn, head.encode("latin-1") + body)


def stream(conn: socket.socket, total: int, piece: bytes) -> None:
    sent = 0
    deadline = time.monotonic() + DRIP_LIMIT
    while sent < total and time.monotonic() < deadline:
        chunk = piece[: min(len(piece), total - sent)]
        if not send_all(conn, chunk):
            return
        sent += len(chunk)


def drip(conn: socket.socket, data: bytes, ms: int) -> None:
    deadline = time.monotonic() + DRIP_LIMIT
    for k in range(len(data)):
        if time.monotonic() > deadline or not send_all(conn, data[k:k + 1]):
            return
        time.sleep(ms / 1000)


def serve_main(conn: socket.socket, catcher_port: int) -> None:
    req = read_request(conn)
    if req is None:
        return
    method, path, _ = req
    segments = path.split("?", 1)[0].split("/")
    behaviour = segments[1] if len(segments) > 1 else ""
    rest = "/" + "/".join(segments[2:])
    name, _, arg = behaviour.partition("-")
    if behaviour == "caught":
        with caught_lock:
            body = json.dumps({"count": len(caught), "authorization": [c["authorization"] for c in caught],
                               "methods": [c["method"] for c in caught]}).encode()
        answer(conn, 200, body, [("Content-Type", "application/json")])
    elif name == "redirect":
        answer(conn, int(arg), b"", [("Location", f"http://127.0.0.1:{catcher_port}/caught{rest}")])
    elif name == "drip":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
        if send_all(conn, head):
            drip(conn, b" " * 1000000, int(arg))
    elif name == "dripall":
        body = b'{"signedTransactionInfo": "slow"}'.ljust(1000000)
        drip(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
             % (len(body), body), int(arg))
    elif name in ("huge", "hugecl"):
        total = int(arg) << 20
        head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {total}\r\n" if name == "hugecl" else ""
        head += "Connection: close\r\n\r\n"
        # No 10 s send timeout here: a client slowed by load must not see the connection closed early, which for
        # "huge" (the body ends at close) would be a complete, short answer instead of one over the limit.
        conn.settimeout(DRIP_LIMIT)
        if send_all(conn, head.encode()):
            stream(conn, total, b'{"a":' + b" " * 65531)
    elif name == "gzip":
        body = gzip_body(int(arg))
        answer(conn, 200, body, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
    elif name == "errmsg":
        message = "\x1b[2J\x1b]0;pwned\x07\r\nX-Injected: 1\x00\x08\x7f" + "A" * (int(arg) << 10)
        body = json.dumps({"errorCode": 4000006, "errorMessage": message}).encode()
        answer(conn, 400, body, [("Content-Type", "application/json")])
    elif name == "nostatus":
        return
    elif name == "status":
        answer(conn, int(arg), b"")
    else:
        answer(conn, 404, b"unknown behaviour")


def serve_catcher(conn: socket.socket) -> None:
    req = read_request(conn)
    if req is None:
        return
    method, path, headers = req
    with caught_lock:
        caught.append({"method": method, "path": path, "authorization": headers.get("authorization")})
    answer(conn, 200, b'{"signedTransactionInfo": "caught"}', [("Content-Type", "application/json")])


def accept_loop(sock: socket.socket, handler) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return

        def run(c=conn):
            try:
                handler(c)
            except Exception:
                pass
            finally:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
        threading.Thread(target=run, daemon=True).start()


def listen() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lifetime", type=float, default=300.0)
    args = ap.parse_args()
    main_sock, catcher_sock = listen(), listen()
    catcher_port = catcher_sock.getsockname()[1]
    threading.Thread(target=accept_loop, args=(main_sock, lambda c: serve_main(c, catcher_port)), daemon=True).start()
    threading.Thread(target=accept_loop, args=(catcher_sock, serve_catcher), daemon=True).start()
    print(f"PORT {main_sock.getsockname()[1]} {catcher_port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    stop = threading.Event()

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:
            pass
        stop.set()
    threading.Thread(target=watch_stdin, daemon=True).start()
    stop.wait(args.lifetime)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
