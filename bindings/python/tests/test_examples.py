"""The Python examples (examples/python/*.py) run as a user would run them: as scripts, with the installed package,
against the project's own PKI, the mock App Store server, and Apple's real data when ../shared is present."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import BUNDLE, ISSUER, KEY_ID, REPO, shared_manifest

import pytest

EXAMPLES = REPO / "examples" / "python"


def run(script: str, *args: str, key: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if key is not None:
        env["APPSTORE_PRIVATE_KEY"] = key.read_text()
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_verify_notification_own_pki(testpki: Path) -> None:
    r = run("verify_notification.py", str(testpki / "jws/notif-valid-did-renew.jws"), "com.example.testpki",
            "--root", str(testpki / "root.der"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("type: DID_RENEW") and "transaction: " in r.stdout, r.stdout
    forged = run("verify_notification.py", str(testpki / "jws/notif-untrusted-forged-chain.jws"), "com.example.testpki",
                 "--root", str(testpki / "root.der"))
    assert forged.returncode == 1 and "NOT VERIFIED" in forged.stderr and "UNTRUSTED_CHAIN" in forged.stderr, forged.stderr


def test_verify_notification_real_apple_data_with_the_bundled_root(conformance: Path) -> None:
    f = next(f for f in shared_manifest()["files"] if f.get("kind") == "notification" and f.get("signedDate")
             and f.get("environment") == "Sandbox")
    r = run("verify_notification.py", str(conformance / f["path"]), f["bundleId"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("type: "), r.stdout


def test_refund_history_every_page(keys: Path, mock_url: str) -> None:
    r = run("refund_history.py", "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--environment",
            "Sandbox", "--base-url", mock_url, "2000000000000001", key=keys / "p256.p8")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["page 1", "page 2"], r.stdout
    assert lines[0].endswith("more: True") and lines[1].endswith("more: False"), r.stdout


def test_offer_signature_verifies_with_the_public_key(keys: Path) -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    r = run("offer_signature.py", "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE,
            "com.example.monthly", "WINBACK", key=keys / "p256.p8")
    assert r.returncode == 0, r.stderr
    header, payload, signature = r.stdout.strip().split(".")
    pad = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))  # noqa: E731
    claims = json.loads(pad(payload))
    assert claims["productId"] == "com.example.monthly" and claims["offerIdentifier"] == "WINBACK", claims
    assert json.loads(pad(header))["alg"] == "ES256"
    raw = pad(signature)
    public = serialization.load_pem_public_key((keys / "p256_public.pem").read_bytes())
    public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),  # type: ignore[union-attr,call-arg]
                  f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))  # type: ignore[call-arg]


def test_notification_receiver(testpki: Path, tmp_path: Path) -> None:
    """notification_receiver.py, posted at as Apple posts: 200 once durable (a duplicate too), 4xx for what is not
    genuine or not this app's, the ledger's answer for the customer."""
    import urllib.error
    import urllib.request

    from test_ledger import lifecycles

    doc = lifecycles()
    p = subprocess.Popen([sys.executable, str(EXAMPLES / "notification_receiver.py"), doc["bundleId"], "--ledger",
                          f"sqlite:{tmp_path / 'ledger.db'}", "--root", str(testpki / "root.der"), "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("PORT "), (line, p.stderr.read() if p.poll() is not None else "")  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{line.split()[1]}"

        def post(body: bytes) -> tuple:
            req = urllib.request.Request(f"{url}/notifications", data=body, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        scenario = doc["scenarios"][0]
        for n in scenario["notifications"]:
            status, r = post(json.dumps({"signedPayload": n["signed"]}).encode())
            assert status == 200 and r["stored"], r
        status, r = post(json.dumps({"signedPayload": scenario["notifications"][0]["signed"]}).encode())
        assert status == 200 and not r["stored"], r
        bad = {b["name"]: b for b in doc["bad"]}
        status, r = post(json.dumps({"signedPayload": bad["forged-chain"]["signed"]}).encode())
        assert status == 403 and r["error"] == "untrusted_chain" and r["message"], r
        assert post(json.dumps({"signedPayload": bad["wrong-bundle"]["signed"]}).encode())[0] == 422
        assert post(b"not json") == (400, {"error": "malformed_body"})
        assert post(b"x" * 70000)[0] == 413
        customer = next(e for e in scenario["expect"] if "customer" in e)["customer"]
        with urllib.request.urlopen(f"{url}/customers/{customer}", timeout=60) as r:
            assert json.loads(r.read())["customerId"] == customer.lower()
    finally:
        p.terminate()
        p.wait(timeout=30)


def test_examples_say_how_to_use_them() -> None:
    for script in ("verify_notification.py", "refund_history.py", "offer_signature.py", "notification_receiver.py"):
        r = run(script, "--help")
        assert r.returncode == 0 and "usage:" in r.stdout, (script, r.stderr)
