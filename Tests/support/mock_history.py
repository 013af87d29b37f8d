#!/usr/bin/env python3
"""A mock of the App Store Server API's two history endpoints, for `appstoreserver sync`'s tests: a real HTTP server
on 127.0.0.1 that serves Get Notification History and Get Transaction History (version 2) pages of signed data the
test gives it (Tests/support/lifecycles.py's own-PKI lifecycles), and checks what the client sends.

    mock_history.py --feed FEED.json --public-key p256_public.pem --key-id KEY --issuer-id ISSUER --bundle-id BUNDLE

Picks a free port and prints "PORT <n>"; serves until its stdin is closed. Every request's bearer token and headers
are checked as mock_app_store.py checks them (its Handler: ES256 with the public key, kid, iss, bid, aud, times;
User-Agent, Accept, Content-Type); a failed check is answered HTTP 400 with errorCode 9999999 and "mock: <what>".

FEED.json is read again for every request, so a test changes what "Apple" has between two runs by rewriting it
(atomically: write another file, rename):

  {"notifications": [{"signedPayload": JWS, "firstSendAttemptDate": ms}, ...],
   "pageSize": 3,                       notifications per page (default 20)
   "customers": [{"ids": [transactionId, ...], "signedTransactions": [JWS, ...]}, ...],
   "historyPageSize": 20,               transactions per page (default 20)
   "delay": {"endpoint": "notifications" | "transactions", "page": 3, "seconds": 30, "times": 1},
   "pageDelay": 0.05,                   seconds before every page is answered (default 0)
   "rateLimit": {"endpoint": ..., "page": 2, "retryAfter": 2, "times": 1}}

POST /inApps/v1/notifications/history: the body must be exactly {"startDate", "endDate"} (milliseconds; startDate no
more than 180 days back: else 400 errorCode 4000012; startDate < endDate: else 4000013; endDate not in the future:
else 4000016). The notifications with startDate <= firstSendAttemptDate < endDate, by that date, a page at a time.
paginationToken (query) is the mock's own: it names the offset and the window it was given for, and must be sent
with that same window (else 4000014 invalidPaginationToken).

GET /inApps/v2/history/{id}: the customer any of whose ids is {id} (else 404 errorCode 4040010); `revision` (query;
the only parameter taken) is "rev-<n>": the transactions from the n-th on, a page at a time; each page's revision
names the transaction after it, so the last page's revision asks later for what was added since.

"delay" holds the first `times` requests for that page (1-based, counted in every window and customer) for
`seconds` before answering; "rateLimit" answers them 429 errorCode 4290000 with Retry-After: `retryAfter` (seconds).

GET /mock/requests (no token): {"requests": [{"t": monotonic seconds, "method", "path", "query": [[k, v]...],
"body": JSON or null, "status": n}, ...]}, every request so far.
"""
import argparse
import base64
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_app_store as M  # noqa: E402

DAY_MS = 86_400_000


class State:
    def __init__(self, args):
        from joserfc.jwk import ECKey
        with open(args.public_key, "rb") as f:
            self.key = ECKey.import_key(f.read())
        self.key_id, self.issuer, self.bundle = args.key_id, args.issuer_id, args.bundle_id
        self.feed_path = args.feed
        self.lock = threading.Lock()
        self.requests = []
        self.hits = {}

    def feed(self):
        with open(self.feed_path, encoding="utf-8") as f:
            return json.load(f)

    def hit(self, key):
        with self.lock:
            self.hits[key] = self.hits.get(key, 0) + 1
            return self.hits[key]


def token(offset, start, end):
    raw = json.dumps({"offset": offset, "startDate": start, "endDate": end}).encode()
    return "nh." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def untoken(value):
    try:
        assert value.startswith("nh.")
        seg = value[3:]
        return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
    except Exception:  # noqa: BLE001
        return None


class Handler(M.Handler):
    server_version = "MockHistory/1"

    def handle_any(self):
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, raw_query = self.path.partition("?")
        if self.command == "GET" and path == "/mock/requests":
            with st.lock:
                self.reply(200, {"requests": st.requests})
            return
        query = M.parse_query(raw_query)
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("latin-1")
        record = {"t": time.monotonic(), "method": self.command, "path": path, "query": query, "body": parsed}
        with st.lock:
            st.requests.append(record)
        status = self.answer(st, path, query, body, parsed)
        record["status"] = status

    def fail(self, status, code, message, headers=()):
        self.error_payload(status, code, message, headers=headers)
        return status

    def hold(self, st, feed, endpoint, page):
        """The feed's delay and rate limit for this page; the HTTP status when the request was answered here."""
        for name in ("delay", "rateLimit"):
            rule = feed.get(name)
            if not rule or rule.get("endpoint") != endpoint or rule.get("page") != page:
                continue
            if st.hit(f"{name}:{endpoint}:{page}") > rule.get("times", 1):
                continue
            if name == "delay":
                time.sleep(rule["seconds"])
            else:
                return self.fail(429, 4290000, "Rate limit exceeded.", headers=[("Retry-After", str(rule["retryAfter"]))])
        return None

    def answer(self, st, path, query, body, parsed):
        try:
            self.check_token(st)
            self.check_headers(body)
            feed = st.feed()
            if self.command == "POST" and path == "/inApps/v1/notifications/history":
                return self.notification_history(st, feed, query, parsed)
            if self.command == "GET" and path.startswith("/inApps/v2/history/") and path.count("/") == 4:
                return self.transaction_history(st, feed, path.rsplit("/", 1)[1], query)
            raise M.Mismatch("no such endpoint in this mock")
        except M.Mismatch as e:
            return self.fail(400, M.MISMATCH, f"mock: {self.command} {self.path}: {e}")

    def notification_history(self, st, feed, query, body):
        if self.headers.get("Content-Type") != "application/json":
            raise M.Mismatch(f"Content-Type {self.headers.get('Content-Type')!r}")
        if not isinstance(body, dict) or set(body) != {"startDate", "endDate"}:
            raise M.Mismatch(f"body {body!r}: expected exactly startDate and endDate")
        start, end = body["startDate"], body["endDate"]
        if not isinstance(start, int) or not isinstance(end, int):
            raise M.Mismatch("startDate and endDate must be integers (milliseconds)")
        now = int(time.time() * 1000)
        if start < now - 180 * DAY_MS:
            return self.fail(400, 4000012, "Invalid request. The start date is earlier than the allowed start date.")
        if start >= end:
            return self.fail(400, 4000013, "Invalid request. The end date precedes the start date or the dates are the same.")
        if end > now + 5000:
            return self.fail(400, 4000016, "Invalid request. The end date is not valid.")
        names = [k for k, _ in query]
        if names not in ([], ["paginationToken"]):
            raise M.Mismatch(f"query {query}: only paginationToken is expected")
        offset = 0
        if names:
            t = untoken(query[0][1])
            if t is None or t["startDate"] != start or t["endDate"] != end:
                return self.fail(400, 4000014, "Invalid request. The pagination token is invalid.")
            offset = t["offset"]
        size = feed.get("pageSize", 20)
        page = offset // size + 1
        time.sleep(feed.get("pageDelay", 0))
        held = self.hold(st, feed, "notifications", page)
        if held:
            return held
        items = sorted((n for n in feed.get("notifications", []) if start <= n["firstSendAttemptDate"] < end),
                       key=lambda n: n["firstSendAttemptDate"])
        chunk = items[offset:offset + size]
        more = offset + size < len(items)
        self.reply(200, {
            "notificationHistory": [{"signedPayload": n["signedPayload"], "sendAttempts": [
                {"attemptDate": n["firstSendAttemptDate"], "sendAttemptResult": "TIMED_OUT"}]} for n in chunk],
            "hasMore": more, "paginationToken": token(offset + size if more else offset + len(chunk), start, end)})
        return 200

    def transaction_history(self, st, feed, tid, query):
        names = [k for k, _ in query]
        if names not in ([], ["revision"]):
            raise M.Mismatch(f"query {query}: only revision is expected")
        customer = next((c for c in feed.get("customers", []) if tid in c["ids"]), None)
        if customer is None:
            return self.fail(404, 4040010, "Transaction id not found.")
        offset = 0
        if names:
            rev = query[0][1]
            if not rev.startswith("rev-") or not rev[4:].isdigit():
                raise M.Mismatch(f"revision {rev!r} was not given by this mock")
            offset = int(rev[4:])
        size = feed.get("historyPageSize", 20)
        time.sleep(feed.get("pageDelay", 0))
        held = self.hold(st, feed, "transactions", offset // size + 1)
        if held:
            return held
        txs = customer["signedTransactions"]
        chunk = txs[offset:offset + size]
        self.reply(200, {"revision": f"rev-{offset + len(chunk)}", "hasMore": offset + len(chunk) < len(txs),
                         "bundleId": st.bundle, "appAppleId": feed.get("appAppleId", 1234), "environment": "Sandbox",
                         "signedTransactions": chunk})
        return 200

    do_GET = do_POST = handle_any


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--feed", required=True)
    ap.add_argument("--public-key", required=True)
    ap.add_argument("--key-id", required=True)
    ap.add_argument("--issuer-id", required=True)
    ap.add_argument("--bundle-id", required=True)
    args = ap.parse_args()
    M.serve(Handler, State(args))


if __name__ == "__main__":
    main()
