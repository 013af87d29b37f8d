#!/usr/bin/env python3
"""Runs the C, Swift and Java examples (examples/c, examples/swift, examples/java through launcher scripts:
bindings/java ExamplesTest) as a user runs them and checks what they print:

    check_examples.py LABEL --refund-history EXE --offer-signature EXE [--verify-notification EXE] [--testpki DIR]

- refund history: every page of Get Refund History from the mock App Store server (Tests/support/mock_app_store.py,
  which verifies each bearer token with joserfc); the pages expected are the canned ones of api_cases.json; an
  unreachable server fails with exit 1 and a reason; so do a redirect (never followed: the token stays here) and an
  answer larger than the library accepts (Tests/support/hostile_http.py), as for every transport;
- offer signature: the JWS's claims, and its ES256 signature verified with the public key by Python `cryptography`
  (never by the library); a P-384 key is refused with a reason;
- verify notification (Swift, Java; the C one is examples/c/demo.c, ctest c_demo): the own-PKI notification and a forged
  chain (Tests/support/testpki.py), and Apple's real one with the bundled root when ../shared/conformance exists
  (else a loud SKIPPED);
- every program: --help prints its usage, bad arguments exit 2.

Closes with "examples (LABEL): N passed, M failed, K skipped"; exit 1 when a check failed.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
import uuid
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "Tests" / "support"
CONFORMANCE = Path(os.environ.get("APPSTORE_CONFORMANCE_DIR", ROOT.parent / "shared" / "conformance"))
KEY_ID, ISSUER, BUNDLE = "ABC123DEFG", "57246542-96fe-1a63-e053-0824d011072a", "com.example.app"
counts = {"passed": 0, "failed": 0, "skipped": 0}


def check(name, ok, shown=""):
    counts["passed" if ok else "failed"] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok or not shown else "\n     | " + shown.replace("\n", "\n     | ")))


def run(exe, *args, key=None):
    env = dict(os.environ)
    env.pop("APPSTORE_PRIVATE_KEY", None)
    if key is not None:
        env["APPSTORE_PRIVATE_KEY"] = key.read_text()
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=120)


def shown(r):
    return f"exit {r.returncode}\nstdout: {r.stdout.strip()}\nstderr: {r.stderr.strip()}"


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def refund_history(exe, keys, url):
    case = next(c for c in json.loads((SUPPORT / "api_cases.json").read_text())["cases"]
                if c["endpoint"] == "getRefundHistory")
    expected = [f"page {n}: {len(p['signedTransactions'])} refunded transactions, more: {str(p['hasMore']).lower()}"
                for n, p in enumerate(case["pages"], 1)]
    common = ["--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE]
    r = run(exe, *common, "--environment", "Sandbox", "--base-url", url, case["params"]["anyTransactionId"],
            key=keys / "p256.p8")
    check(f"refund history: every page from the mock server ({len(expected)} pages)",
          r.returncode == 0 and r.stdout.splitlines() == expected, shown(r) + f"\nexpected: {expected}")
    r = run(exe, *common, "--base-url", "http://127.0.0.1:1", "2000000000000001", key=keys / "p256.p8")
    check("refund history: an unreachable server fails with a reason (exit 1)",
          r.returncode == 1 and "failed:" in r.stderr and "unreachable" in r.stderr.lower(), shown(r))
    r = run(exe, *common, "2000000000000001")
    check("refund history: no APPSTORE_PRIVATE_KEY is a usage error (exit 2)", r.returncode == 2, shown(r))


def refund_history_hostile(exe, keys):
    common = ["--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--environment", "Sandbox"]
    server = subprocess.Popen([sys.executable, str(SUPPORT / "hostile_http.py")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        main = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"
        r = run(exe, *common, "--base-url", f"{main}/redirect-302", "2000000000000001", key=keys / "p256.p8")
        with urllib.request.urlopen(f"{main}/caught", timeout=30) as answer:
            caught = json.loads(answer.read())["count"]
        check("refund history: a redirect is not followed (the call fails naming it, nothing reaches its target)",
              r.returncode == 1 and "302" in r.stderr and caught == 0, shown(r) + f"\ncaught: {caught}")
        r = run(exe, *common, "--base-url", f"{main}/huge-20", "2000000000000001", key=keys / "p256.p8")
        check("refund history: a 20 MiB answer without Content-Length fails (the limit is 16 MiB)",
              r.returncode == 1 and "larger than" in r.stderr and not r.stdout, shown(r))
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def offer_signature(exe, keys):
    common = ["--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE]
    public = serialization.load_pem_public_key((keys / "p256_public.pem").read_bytes())
    for extra, transaction in (([], None), (["--transaction-id", "2000000000000001"], "2000000000000001")):
        r = run(exe, *common, *extra, "com.example.monthly", "WINBACK", key=keys / "p256.p8")
        try:
            header, payload, signature = r.stdout.strip().split(".")
            h, claims, raw = json.loads(b64url(header)), json.loads(b64url(payload)), b64url(signature)
            public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                          f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
            uuid.UUID(claims["nonce"])
            ok = (r.returncode == 0 and len(raw) == 64 and h == {"alg": "ES256", "kid": KEY_ID, "typ": "JWT"}
                  and claims["aud"] == "promotional-offer" and claims["iss"] == ISSUER and claims["bid"] == BUNDLE
                  and claims["productId"] == "com.example.monthly" and claims["offerIdentifier"] == "WINBACK"
                  and claims.get("transactionId") == transaction)
            why = shown(r) + f"\nheader {h}\nclaims {claims}"
        except Exception as e:  # noqa: BLE001 - any failure to parse or verify is the finding
            ok, why = False, f"{type(e).__name__}: {e}\n{shown(r)}"
        check(f"offer signature{' for one customer' if transaction else ''}: claims, ES256 verified by cryptography",
              ok, why)
    r = run(exe, *common, "com.example.monthly", "WINBACK", key=keys / "p384.p8")
    check("offer signature: a P-384 key is refused with its reason (exit 1)",
          r.returncode == 1 and "curve" in r.stderr.lower() and not r.stdout, shown(r))


def verify_notification(exe, testpki):
    root = str(testpki / "root.der")
    r = run(exe, str(testpki / "jws/notif-valid-did-renew.jws"), "com.example.testpki", "--root", root)
    lines = r.stdout.splitlines()
    check("verify notification: own PKI, DID_RENEW with its verified transaction",
          r.returncode == 0 and lines[:1] == ["type: DID_RENEW"] and
          "bundle: com.example.testpki, environment: Sandbox" in lines and
          any(line.startswith("transaction: ") for line in lines), shown(r))
    r = run(exe, str(testpki / "jws/notif-untrusted-forged-chain.jws"), "com.example.testpki", "--root", root)
    check("verify notification: a forged chain is NOT VERIFIED (untrusted_chain, exit 1)",
          r.returncode == 1 and "NOT VERIFIED" in r.stderr and "untrusted_chain" in r.stderr.lower() and not r.stdout,
          shown(r))
    manifest = CONFORMANCE / "manifest.json"
    if not manifest.is_file():
        counts["skipped"] += 1
        print(f"SKIPPED verify notification: Apple's real notification — {CONFORMANCE} not found")
        return
    case = next(c for c in json.loads(manifest.read_text())["cases"] if c["id"] == "verify-sbx-notif-did-renew-2025")
    fields = case["expect"]["fields"]
    with tempfile.TemporaryDirectory() as tmp:  # as Apple posts it: {"signedPayload": "..."}
        body = Path(tmp) / "notification.json"
        body.write_text(json.dumps({"signedPayload": (CONFORMANCE / case["path"]).read_text().strip()}))
        r = run(exe, str(body), case["verifier"]["bundleId"])  # no --root: Apple's root bundled with the library
    check("verify notification: Apple's real one (request body), with the bundled Apple Root CA - G3",
          r.returncode == 0 and r.stdout.splitlines()[:2] == [
              f"type: {fields['notificationType']}",
              f"bundle: {fields['data']['bundleId']}, environment: {fields['data']['environment']}"], shown(r))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("label")
    p.add_argument("--refund-history", required=True)
    p.add_argument("--offer-signature", required=True)
    p.add_argument("--verify-notification")
    p.add_argument("--testpki", help="Tests/support/testpki.py's output (made here when not given)")
    a = p.parse_args()
    programs = [a.refund_history, a.offer_signature] + ([a.verify_notification] if a.verify_notification else [])
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys"
        subprocess.run([sys.executable, str(SUPPORT / "check_signatures.py"), "keys", str(keys)], check=True,
                       stdout=subprocess.DEVNULL)
        mock = subprocess.Popen([sys.executable, str(SUPPORT / "mock_app_store.py"), "--cases",
                                 str(SUPPORT / "api_cases.json"), "--public-key", str(keys / "p256_public.pem"),
                                 "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            line = mock.stdout.readline()
            if not line.startswith("PORT "):
                check("the mock App Store server starts", False, line)
            else:
                refund_history(a.refund_history, keys, f"http://127.0.0.1:{int(line.split()[1])}")
        finally:
            mock.stdin.close()
            mock.wait(timeout=30)
        refund_history_hostile(a.refund_history, keys)
        offer_signature(a.offer_signature, keys)
        if a.verify_notification:
            testpki = Path(a.testpki) if a.testpki else Path(tmp) / "testpki"
            if not a.testpki:
                subprocess.run([sys.executable, str(SUPPORT / "testpki.py"), str(testpki)], check=True,
                               stdout=subprocess.DEVNULL)
            verify_notification(a.verify_notification, testpki)
    for exe in programs:
        r = run(exe, "--help")
        check(f"{Path(exe).name} --help prints its usage", r.returncode == 0 and r.stdout.startswith("usage: "), shown(r))
        r = run(exe)
        check(f"{Path(exe).name} without arguments: usage, exit 2", r.returncode == 2 and "usage: " in r.stderr, shown(r))
    print(f"examples ({a.label}): {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
