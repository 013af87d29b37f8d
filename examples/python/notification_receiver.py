#!/usr/bin/env python3
"""Receive App Store Server Notifications V2 into a purchase ledger: `appstoreserver serve`'s delivery contract in a
page of standard-library Python (docs/serve.md).

    python3 notification_receiver.py com.example.app --ledger sqlite:ledger.db [--environment Production
        --app-apple-id 1234] [--root FILE] [--port 8080]

POST /notifications  the body Apple posts, {"signedPayload": ...}: 200 only once the ledger has made the
                     notification durable (a duplicate is 200 too); 400 / 403 / 422 when it is not a genuine
                     notification of this app and environment (nothing stored); 503 when storing failed, so that
                     Apple sends it again.
GET /customers/ID    the customer's entitlements (an appAccountToken). No authentication here: keep it on loopback.

Listens on 127.0.0.1 (put a TLS proxy in front); prints "PORT <n>" once listening (--port 0 picks a free one).
"""
import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from appstoreserver import apple_root_certificates
from appstoreserver.ledger import Ledger, LedgerError
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import AppStoreStatus, SignedDataVerifier, VerificationException

MAX_BODY = 64 * 1024  # Apple's notifications are 5-20 KB
# A refusal's HTTP status by the library's status (docs/serve.md): malformed 400, not genuine 403, another app or
# environment 422; an OCSP responder that could not be asked is ours to retry (503).
HTTP_STATUS = {AppStoreStatus.INVALID_JWT_FORMAT: 400, AppStoreStatus.VERIFICATION_FAILURE: 403,
               AppStoreStatus.INVALID_CHAIN_LENGTH: 403, AppStoreStatus.INVALID_CERTIFICATE: 403,
               AppStoreStatus.INVALID_APP_IDENTIFIER: 422, AppStoreStatus.INVALID_ENVIRONMENT: 422,
               AppStoreStatus.RETRYABLE_VERIFICATION_FAILURE: 503}


def handler(ledger: Ledger) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status: int, body: object) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            if self.path != "/notifications":
                return self.answer(404, {"error": "not found"})
            length = self.headers.get("Content-Length", "")
            if not length.isdigit() or int(length) > MAX_BODY:
                self.close_connection = True
                return self.answer(413 if length.isdigit() else 411, {"error": "a body of at most 64 KiB, with its length"})
            try:
                signed = json.loads(self.rfile.read(int(length)))["signedPayload"]
                assert isinstance(signed, str)
            except (ValueError, KeyError, TypeError, AssertionError):
                return self.answer(400, {"error": "malformed_body"})
            try:
                result = ledger.ingest_notification(signed)  # verifies deeply; returns once the event is durable
            except VerificationException as e:
                reason = getattr(e.reason, "name", str(e.reason)).lower()  # bad_signature, wrong_bundle, ...
                self.log_message("refused: %s (%s): %s", getattr(e.appstore_status, "name", e.appstore_status), reason, e.message)
                return self.answer(HTTP_STATUS.get(e.appstore_status, 500), {"error": reason, "message": e.message})
            except LedgerError as e:
                self.log_message("not stored: %s", e.message)
                return self.answer(503, {"error": "storage", "message": e.message})
            self.answer(200, result.to_json())

        def do_GET(self) -> None:
            if not self.path.startswith("/customers/"):
                return self.answer(404, {"error": "not found"})
            customer = ledger.customer(unquote(self.path[len("/customers/"):]))
            self.answer(200, customer.to_json())

    return Handler


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bundle_id")
    p.add_argument("--ledger", required=True, help="sqlite:/path/ledger.db (one ledger per environment)")
    p.add_argument("--environment", default="Sandbox", choices=["Sandbox", "Production"])
    p.add_argument("--app-apple-id", type=int, help="required for Production")
    p.add_argument("--root", help="a root certificate file (DER or PEM) instead of Apple's")
    p.add_argument("--port", type=int, default=8080)
    a = p.parse_args()

    roots = [open(a.root, "rb").read()] if a.root else apple_root_certificates()
    verifier = SignedDataVerifier(roots, False, Environment(a.environment), a.bundle_id, a.app_apple_id)
    with Ledger.open(a.ledger, verifier) as ledger:
        server = ThreadingHTTPServer(("127.0.0.1", a.port), handler(ledger))
        print(f"PORT {server.server_address[1]}", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
