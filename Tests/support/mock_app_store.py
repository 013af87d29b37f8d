#!/usr/bin/env python3
"""A mock App Store Server API for the API tests: a real HTTP server on 127.0.0.1 (Python standard library
http.server) that checks what the library sends and answers like Apple.

    mock_app_store.py --cases Tests/support/api_cases.json --public-key p256_public.pem \
                      --key-id KEY --issuer-id ISSUER --bundle-id BUNDLE

Picks a free port and prints "PORT <n>" on stdout; serves until its stdin is closed (the test that started it
exits or closes the pipe) or it gets SIGTERM.

Every request: the bearer token is verified with the public key (Python `joserfc` + `cryptography`, never the
library under test): ES256, header kid/typ JWT, claims iss, bid, aud "appstoreconnect-v1", iat <= now < exp,
lifetime at most 3600 s; User-Agent "appstoreserver/<version>", Accept "application/json", Content-Type exactly
when there is a body.

Canonical calls (api_cases.json, one per endpoint): method, path (raw, percent-encoded), query pairs in order, the
JSON body (compared as JSON, and its required keys) or the PNG bytes; answered with the canned status and body, or
the page named by the page key (revision / paginationToken) for paginated endpoints.

Scenarios, on GET /inApps/v1/transactions/<id> (Get Transaction Info):
  error-<http>-<code>     Apple's error payload {"errorCode": code, "errorMessage": ...} with that HTTP status
  ratelimit               429, Retry-After: 7 (delta-seconds), errorCode 4290000
  ratelimit-long          429, Retry-After: 3600, errorCode 4290000
  ratelimit-ms-<ms>       429, Retry-After: now + <ms> as a UNIX time in milliseconds (Apple's form)
  ratelimit-date-<s>      429, Retry-After: now + <s> seconds as an HTTP-date (IMF-fixdate)
  flaky<code>-<n>-<tag>   the first n requests for this id fail (code 429: 429 + Retry-After 0; 5000001: HTTP 500;
                          4040002/4040004/4040006: HTTP 404), then 200 with signedTransactionInfo "attempt-<k>"
  flakyms<ms>-<n>-<tag>   the first n requests fail with 429 + Retry-After now + <ms> in UNIX milliseconds, then 200
                          with signedTransactionInfo "attempt-<k> after <ms since the first failure>"
  flakydate<s>-<n>-<tag>  the same with an HTTP-date now + <s> seconds
  malformed               200 with a body that is not JSON
  badtype                 200 with signedTransactionInfo a number
  plain500                500 text/plain (no error payload)
  slow-<ms>               answers after <ms> milliseconds
A check that fails is answered with HTTP 400 and errorCode 9999999, errorMessage "mock: <what was wrong>", so the
test that sent the request fails with the reason.

--unauthorized-lookups SPEC: the same lookups are answered HTTP 401 with a plain-text body (Apple's answer to an app
never released in Production, which App Review meets), with an X-Apple-Request-Id header.

--not-found-lookups SPEC (spec/endpoints.json): this server plays a Production that knows none of the ids: every
request to an endpoint the spec marks sandboxFallback is answered 404 {"errorCode": 4040010} (after the checks
above); the Sandbox fallback tests point the fallback at a second, normal server.

GET /mock/arrivals (no token): {"arrivals": {"<METHOD path>": [t, ...]}}, the monotonic arrival times in seconds of
every request so far, for the rate-limit tests.
"""
import argparse
import email.utils
import base64
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from joserfc import jws as jose_jws
from joserfc.jwk import ECKey

MISMATCH = 9999999


def http_date(t: float) -> str:
    """IMF-fixdate, rounded up to the next whole second (the form has no fractions)."""
    return email.utils.formatdate(int(t) + (0 if t == int(t) else 1), usegmt=True)


class Mismatch(Exception):
    pass


def parse_query(raw):
    pairs = []
    if not raw:
        return pairs
    for part in raw.split("&"):
        k, _, v = part.partition("=")
        pairs.append([unquote(k), unquote(v)])
    return pairs


def has_key(obj, dotted):
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", dotted):
        if part.startswith("["):
            i = int(part[1:-1])
            if not isinstance(obj, list) or i >= len(obj):
                return False
            obj = obj[i]
        else:
            if not isinstance(obj, dict) or part not in obj:
                return False
            obj = obj[part]
    return True


class State:
    def __init__(self, args):
        with open(args.cases, encoding="utf-8") as f:
            self.cases = json.load(f)["cases"]
        with open(args.public_key, "rb") as f:
            self.key = ECKey.import_key(f.read())
        self.key_id, self.issuer, self.bundle = args.key_id, args.issuer_id, args.bundle_id
        self.lock = threading.Lock()
        self.hits = {}
        self.first = {}
        self.arrivals = {}
        self.not_found = []  # path regexes of the lookups answered 4040010 (or 401, with --unauthorized-lookups)
        self.unauthorized = bool(args.unauthorized_lookups)
        spec = args.not_found_lookups or args.unauthorized_lookups
        if spec:
            with open(spec, encoding="utf-8") as f:
                for ep in json.load(f)["endpoints"]:
                    if ep.get("sandboxFallback"):
                        self.not_found.append((ep["method"], re.compile(
                            "^" + re.sub(r"\\\{[A-Za-z]+\\\}", "[^/]+", re.escape(ep["path"])) + "$")))

    def arrive(self, key):
        with self.lock:
            self.arrivals.setdefault(key, []).append(time.monotonic())

    def hit(self, name):
        with self.lock:
            self.hits[name] = self.hits.get(name, 0) + 1
            self.first.setdefault(name, time.monotonic())
            return self.hits[name]

    def first_seen(self, name):
        with self.lock:
            return self.first.get(name, time.monotonic())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "MockAppStore/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def reply(self, status, body=b"", content_type="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        if body:
            self.send_header("Content-Type", content_type)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.close_connection = True
        try:
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

    def error_payload(self, status, code, message, headers=()):
        self.reply(status, {"errorCode": code, "errorMessage": message}, headers=headers)

    def check_token(self, st):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            raise Mismatch(f"Authorization header is {auth!r}, expected 'Bearer <token>'")
        token = auth[len("Bearer "):]
        try:
            obj = jose_jws.deserialize_compact(token, st.key, algorithms=["ES256"])
        except Exception as e:  # noqa: BLE001
            raise Mismatch(f"bearer token signature does not verify: {e!r}")
        h = obj.protected
        if h.get("alg") != "ES256" or h.get("kid") != st.key_id or h.get("typ") != "JWT":
            raise Mismatch(f"bearer token header {h}")
        c = json.loads(obj.payload)
        now = time.time()
        if c.get("iss") != st.issuer or c.get("bid") != st.bundle or c.get("aud") != "appstoreconnect-v1":
            raise Mismatch(f"bearer token claims {c}")
        iat, exp = c.get("iat"), c.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or not (iat - 60 <= now < exp) or exp - iat > 3600:
            raise Mismatch(f"bearer token times iat={iat} exp={exp} now={int(now)}")

    def check_headers(self, body):
        ua = self.headers.get("User-Agent", "")
        if not re.fullmatch(r"appstoreserver/\d+\.\d+\.\d+", ua):
            raise Mismatch(f"User-Agent {ua!r}")
        if self.headers.get("Accept") != "application/json":
            raise Mismatch(f"Accept {self.headers.get('Accept')!r}")
        ct = self.headers.get("Content-Type")
        if body and not ct:
            raise Mismatch("body without Content-Type")
        if not body and ct:
            raise Mismatch(f"Content-Type {ct!r} without a body")

    def handle_any(self):
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, raw_query = self.path.partition("?")
        if self.command == "GET" and path == "/mock/arrivals":
            with st.lock:
                self.reply(200, {"arrivals": st.arrivals})
            return
        st.arrive(f"{self.command} {path}")
        try:
            self.check_token(st)
            self.check_headers(body)
            if any(m == self.command and r.match(path) for m, r in st.not_found):
                if st.unauthorized:  # as Production answers for an app never released there: no JSON body
                    self.reply(401, b"Unauthenticated\n\nRequest ID: MOCK.0.0\n", content_type="text/plain",
                               headers=[("X-Apple-Request-Id", "mock-401")])
                else:
                    self.error_payload(404, 4040010, "Transaction id not found.")
                return
            if self.command == "GET" and path.startswith("/inApps/v1/transactions/") and path.count("/") == 4:
                if self.scenario(st, path.rsplit("/", 1)[1]):
                    return
            self.canonical(st, path, parse_query(raw_query), body)
        except Mismatch as e:
            self.error_payload(400, MISMATCH, f"mock: {self.command} {self.path}: {e}")

    def scenario(self, st, tid):
        m = re.fullmatch(r"error-(\d{3})-(\d+)", tid)
        if m:
            self.error_payload(int(m.group(1)), int(m.group(2)), f"mock error {m.group(2)}")
            return True
        if tid == "ratelimit":
            self.error_payload(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", "7")])
            return True
        if tid == "ratelimit-long":
            self.error_payload(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", "3600")])
            return True
        m = re.fullmatch(r"ratelimit-ms-(\d+)", tid)
        if m:
            at = int(time.time() * 1000) + int(m.group(1))
            self.error_payload(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", str(at))])
            return True
        m = re.fullmatch(r"ratelimit-date-(\d+)", tid)
        if m:
            self.error_payload(429, 4290000, "Rate limit exceeded.",
                               headers=[("Retry-After", http_date(time.time() + int(m.group(1))))])
            return True
        m = re.fullmatch(r"flaky(ms|date)(\d+)-(\d+)-[\w.]+", tid)
        if m:
            form, amount, failures = m.group(1), int(m.group(2)), int(m.group(3))
            n = st.hit(tid)
            first = st.first_seen(tid)
            if n <= failures:
                value = str(int(time.time() * 1000) + amount) if form == "ms" else http_date(time.time() + amount)
                self.error_payload(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", value)])
            else:
                waited = int((time.monotonic() - first) * 1000)
                self.reply(200, {"signedTransactionInfo": f"attempt-{n} after {waited}"})
            return True
        m = re.fullmatch(r"flaky(\d+)-(\d+)-[\w.]+", tid)
        if m:
            code, failures = int(m.group(1)), int(m.group(2))
            n = st.hit(tid)
            if n <= failures:
                if code == 429:
                    self.error_payload(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", "0")])
                else:
                    self.error_payload(500 if code // 1000000 == 5 else 404, code, f"mock retryable {code}")
            else:
                self.reply(200, {"signedTransactionInfo": f"attempt-{n}"})
            return True
        if tid == "malformed":
            self.reply(200, b"{not json")
            return True
        if tid == "badtype":
            self.reply(200, {"signedTransactionInfo": 5})
            return True
        if tid == "plain500":
            self.reply(500, b"internal oops", content_type="text/plain")
            return True
        m = re.fullmatch(r"slow-(\d+)", tid)
        if m:
            time.sleep(int(m.group(1)) / 1000)
            self.reply(200, {"signedTransactionInfo": "slow"})
            return True
        return False

    def canonical(self, st, path, query, body):
        case = next((c for c in st.cases if c["method"] == self.command and c["path"] == path), None)
        if case is None:
            raise Mismatch("no endpoint has this method and path")
        page_key = case.get("pageKey")
        page = 0
        if page_key:
            value = None
            if page_key == "revision":
                value = next((v for k, v in query if k == "revision"), None)
                query = [q for q in query if q[0] != "revision"]
            else:
                value = next((v for k, v in query if k == "paginationToken"), None)
                query = [q for q in query if q[0] != "paginationToken"]
            if value is not None:
                page = next((i + 1 for i, p in enumerate(case["pages"][:-1]) if p.get(page_key) == value), None)
                if page is None:
                    raise Mismatch(f"unknown {page_key} {value!r}")
        if query != case["query"]:
            raise Mismatch(f"query {query} != expected {case['query']}")
        expected = case["body"]
        if expected is None:
            if body:
                raise Mismatch(f"unexpected body {body[:200]!r}")
        elif "base64" in expected and len(expected) == 1:
            if body != base64.b64decode(expected["base64"]):
                raise Mismatch("image bytes differ")
        else:
            try:
                got = json.loads(body)
            except ValueError:
                raise Mismatch(f"body is not JSON: {body[:200]!r}")
            for key in case.get("requiredBodyKeys", []):
                if not has_key(got, key):
                    raise Mismatch(f"required body key {key!r} missing")
            if got != expected:
                raise Mismatch(f"body {json.dumps(got, sort_keys=True)} != expected {json.dumps(expected, sort_keys=True)}")
        if case["contentType"] != self.headers.get("Content-Type"):
            raise Mismatch(f"Content-Type {self.headers.get('Content-Type')!r} != {case['contentType']!r}")
        answer = case["pages"][page] if page_key else case["response"]
        self.reply(case["status"], b"" if answer is None else answer)

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", required=True)
    ap.add_argument("--public-key", required=True)
    ap.add_argument("--key-id", required=True)
    ap.add_argument("--issuer-id", required=True)
    ap.add_argument("--bundle-id", required=True)
    ap.add_argument("--not-found-lookups", metavar="SPEC")
    ap.add_argument("--unauthorized-lookups", metavar="SPEC")
    args = ap.parse_args()
    serve(Handler, State(args))


def serve(handler, state):
    """Serves on a free loopback port (printed as "PORT <n>") until stdin is closed: this mock's and its kin's
    (mock_history.py) way of running."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.state = state
    print(f"PORT {server.server_address[1]}", flush=True)

    def watch_stdin():
        try:
            sys.stdin.read()
        finally:
            server.shutdown()

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
