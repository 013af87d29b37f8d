"""The `appstoreserver` tool, run as a user runs it (a subprocess; stdout is a pipe, so JSON is compact):

- verify on every verify case of ../shared/conformance (real Apple data; SKIPPED loudly when absent) and of the
  project's own PKI (Tests/support/testpki.py): exit status, the payload printed exactly as signed, the status and
  reason on stderr; the payload's own identity used (and said) when none is given; Xcode data refused unless asked;
- decode: nothing verified and said so, certificates described (fingerprints checked with hashlib);
- sign: every signature checked independently with `cryptography` / `joserfc`; keys never from arguments;
- api: every endpoint of Tests/support/api_cases.json against the loopback mock server (which verifies the token
  and the request), pagination, Apple's error payloads, a dead server, --dry-run with the token redacted;
- receipt: ids and verify on the own-CA receipts (Tests/support/receipts.py);
- bad input: garbage, empty stdin, a terminal on stdin, wrong kind, missing key file, unknown options;
- the tool's own HTTP client (cli/Sources/CLIHTTP): hostile servers (Tests/support/hostile_http.py), HTTPS against
  a local TLS server whose CA comes from SSL_CERT_FILE / SSL_CERT_DIR (an untrusted certificate and one for another
  host refused), OCSP online checks against Tests/support/ocsp_harness.py's responders;
- what is shipped: glibc floor 2.28 (scripts/check-glibc), nothing but glibc needed, at most 30 MB stripped.

APPSTORESERVER_TOOL names the binary (cli/run-tests builds it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jws as jose_jws
from joserfc.jwk import ECKey

REPO = Path(__file__).resolve().parents[2]
SUPPORT = REPO / "Tests" / "support"
sys.path.insert(0, str(SUPPORT))
from served import served  # noqa: E402
TOOL = os.environ.get("APPSTORESERVER_TOOL") or str(REPO / "cli" / ".build" / "dist" / "appstoreserver")
CONFORMANCE = Path(os.environ.get("APPSTORESERVER_CONFORMANCE") or (REPO / ".." / "shared" / "conformance")).resolve()
KEY_ID, ISSUER, BUNDLE = "ABC123DEFG", "57246542-96fe-1a63-e053-0824d011072a", "com.example.app"
G3_SHA256 = "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"
INC_ROOT_SHA256 = "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"
USAGE, NO_INPUT, CONFIG = 64, 66, 78
ENVIRONMENTS = {"Production": "production", "Sandbox": "sandbox", "Xcode": "xcode", "LocalTesting": "local-testing"}
KINDS = {"verifyAndDecodeNotification": "notification", "verifyAndDecodeTransaction": "transaction",
         "verifyAndDecodeRenewalInfo": "renewal-info", "verifyAndDecodeAppTransaction": "app-transaction",
         "verifyAndDecodeRealtimeRequest": "realtime-request"}
# The shared manifest's error classes and the reasons that satisfy them (as Tests/capi/conformance.c).
ERROR_CLASSES = {
    "signature_invalid": {"bad_signature"}, "unsupported_alg": {"unsupported_alg"}, "missing_x5c": {"missing_x5c"},
    "chain_length": {"chain_length", "empty_x5c"}, "invalid_certificate": {"bad_certificate"},
    "chain_untrusted": {"untrusted_chain"},
    "chain_invalid": {"untrusted_chain", "expired", "missing_marker_oid", "chain_length"}, "expired": {"expired"},
    "no_trust_anchor": {"no_trust_anchor"}, "wrong_bundle": {"wrong_bundle"}, "wrong_app_apple_id": {"wrong_app_id"},
    "wrong_environment": {"wrong_environment"}, "wrong_kind": {"wrong_kind"}, "malformed_jws": {"malformed"},
}


class Run:
    def __init__(self, p: subprocess.CompletedProcess) -> None:
        self.code, self.out, self.err = p.returncode, p.stdout, p.stderr

    def json(self):
        return json.loads(self.out)

    def error_line(self) -> str:
        lines = [l for l in self.err.splitlines() if l.startswith("error: ")]
        assert len(lines) == 1, f"expected one error line on stderr, got: {self.err!r}"
        return lines[0]

    def __repr__(self) -> str:
        return f"exit {self.code}\nstdout: {self.out[:2000]}\nstderr: {self.err[:2000]}"


def tool(*args: str, stdin: Optional[bytes] = None, env: Optional[Dict[str, str]] = None, tty_stdin: bool = False) -> Run:
    e = {k: v for k, v in os.environ.items() if not k.startswith("APPSTORE_")}
    e.update(env or {})
    kw = {}
    if tty_stdin:
        import pty
        master, slave = pty.openpty()
        kw["stdin"] = slave
    else:
        kw["input"] = stdin if stdin is not None else b""
    p = subprocess.run([TOOL, *args], capture_output=True, env=e, timeout=120, **kw)
    if tty_stdin:
        os.close(master)
        os.close(slave)
    return Run(subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode()))


def payload_json(jws: str) -> dict:
    seg = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def payload_text(jws: str) -> str:
    seg = jws.split(".")[1]
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)).decode()


def sha256_colons(der: bytes) -> str:
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


@pytest.fixture(scope="session", autouse=True)
def built_tool() -> None:
    assert Path(TOOL).is_file(), f"{TOOL} not built (cli/run-tests builds it)"


@pytest.fixture(scope="session")
def testpki(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("testpki")
    subprocess.run([sys.executable, str(SUPPORT / "testpki.py"), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def keys(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("keys")
    subprocess.run([sys.executable, str(SUPPORT / "check_signatures.py"), "keys", str(out)], check=True, capture_output=True)
    return out


def need_conformance() -> Path:
    if not (CONFORMANCE / "manifest.json").is_file():
        pytest.skip(f"SKIPPED: {CONFORMANCE} not found; real Apple data NOT checked by the tool tests")
    return CONFORMANCE


# ---- verify: the manifests ------------------------------------------------------------------------------------------

def verify_args(case: dict, base: Path) -> Optional[List[str]]:
    """The command line of a manifest case, or None when the tool cannot express the verifier (no roots: the tool
    falls back to the bundled root; an unknown environment; Production without an App Apple ID: the tool uses the
    payload's)."""
    v = case["verifier"]
    env = ENVIRONMENTS.get(v["environment"])
    if env is None or (not v["rootCertificates"] and env in ("production", "sandbox")):
        return None
    if v["environment"] == "Production" and v.get("appAppleId") is None:
        return None
    args = ["verify", "--kind", KINDS[case["operation"]], "--bundle-id", v["bundleId"], "--environment", env]
    if v.get("appAppleId") is not None:
        args += ["--app-apple-id", str(v["appAppleId"])]
    for r in v["rootCertificates"]:
        args += ["--root", str(base / r)]
    return args + [str(base / case["path"])]


def check_case(case: dict, base: Path, reasons_of) -> str:
    args = verify_args(case, base)
    if args is None or case["expect"]["result"] == "config_error":
        return "skipped"
    r = tool(*args)
    jws = (base / case["path"]).read_text().strip()
    result = case["expect"]["result"]
    if result == "implementation-defined":
        assert r.code in (0, 1), r
    elif result == "valid":
        assert r.code == 0, f"{case['id']}: {r}"
        assert r.out.rstrip("\n") == payload_text(jws), f"{case['id']}: not the payload exactly as signed"
    else:
        assert r.code == 1, f"{case['id']}: {r}"
        line = r.error_line()
        reason = line.split("(", 1)[1].split(")", 1)[0]
        assert reason in reasons_of(case), f"{case['id']}: {line}"
        if "status" in case["expect"]:
            assert line.startswith(f"error: {case['expect']['status']} ("), f"{case['id']}: {line}"
    return "passed"


def test_verify_shared_conformance() -> None:
    base = need_conformance()
    cases = [c for c in json.loads((base / "manifest.json").read_text())["cases"] if c["operation"] in KINDS]
    tally = {"passed": 0, "skipped": 0}
    for c in cases:
        # "chain_invalid (why) / signature_invalid": any of the classes named.
        classes = [part.strip().split(" ")[0] for part in str(c["expect"].get("error_class", "")).split(" / ")]
        allowed = set().union(*(ERROR_CLASSES.get(cls, {cls}) for cls in classes))
        tally[check_case(c, base, lambda case, allowed=allowed: allowed)] += 1
    print(f"\ntool conformance: {tally['passed']} passed, {tally['skipped']} not expressible on a command line")
    assert tally["passed"] >= 70


def test_verify_testpki(testpki: Path) -> None:
    cases = json.loads((testpki / "manifest.json").read_text())["cases"]
    tally = {"passed": 0, "skipped": 0}
    for c in cases:
        tally[check_case(c, testpki, lambda case: {case["expect"].get("reason")})] += 1
    print(f"\ntool testpki: {tally['passed']} passed, {tally['skipped']} not expressible on a command line")
    assert tally["passed"] >= 150


# ---- verify: identity, bodies, summary, deep -------------------------------------------------------------------------

def test_real_notification_body_with_the_payloads_identity(tmp_path: Path) -> None:
    base = need_conformance()
    jws = (base / "real/jws/sandbox-notification-refund-2025-10-16.jws").read_text().strip()
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"signedPayload": jws}))
    r = tool("verify", str(body))
    assert r.code == 0, r
    assert r.json() == payload_json(jws)
    assert "taken from the payload, not checked against yours" in r.err and "com.loki-project.loki-messenger" in r.err
    s = tool("verify", "--summary", "-", stdin=body.read_bytes())
    assert s.code == 0, s
    assert s.out.startswith("VALID notification (nested signed data verified too), signed by Apple (chain to Apple Root CA - G3")
    assert "REFUND" in s.out and "transaction" in s.out and "REVOKED" in s.out, s.out
    deep = tool("verify", "--deep", str(body))
    assert deep.code == 0, deep
    d = deep.json()
    assert d["notification"] == payload_json(jws)
    assert d["transaction"] == payload_json(payload_json(jws)["data"]["signedTransactionInfo"])
    # With the user's own identity, a different bundle id is refused.
    wrong = tool("verify", "--bundle-id", "com.example.other", "--environment", "sandbox", str(body))
    assert wrong.code == 1 and "(wrong_bundle)" in wrong.error_line(), wrong
    prod = tool("verify", "--environment", "production", "--app-apple-id", str(payload_json(jws)["data"]["appAppleId"]), str(body))
    assert prod.code == 1 and "(wrong_environment)" in prod.error_line(), prod


def test_tampered_real_payload_is_invalid() -> None:
    base = need_conformance()
    jws = (base / "real/jws/sandbox-transaction-refund-2025-10-16.jws").read_text().strip()
    h, p, s = jws.split(".")
    payload = payload_json(jws)
    payload["productId"] = "com.example.free-upgrade"
    forged = h + "." + base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode() + "." + s
    r = tool("verify", stdin=forged.encode())
    assert r.code == 1 and "(bad_signature)" in r.error_line(), r


def test_xcode_data_is_refused_unless_asked(testpki: Path) -> None:
    cases = {c["id"]: c for c in json.loads((testpki / "manifest.json").read_text())["cases"]}
    xcode = next(c for c in cases.values() if c["verifier"]["environment"] == "Xcode" and c["expect"]["result"] == "valid")
    path = testpki / xcode["path"]
    r = tool("verify", str(path))
    assert r.code == 1 and "(wrong_environment)" in r.error_line() and "--environment xcode" in r.err, r
    ok = tool("verify", "--environment", "xcode", "--bundle-id", xcode["verifier"]["bundleId"], str(path))
    assert ok.code == 0, ok
    assert "check no signature" in ok.err


def test_own_pki_needs_its_root(testpki: Path) -> None:
    path = testpki / "jws" / "tx-valid.jws"
    r = tool("verify", str(path))  # the bundled Apple root does not anchor the test PKI
    assert r.code == 1 and "(untrusted_chain)" in r.error_line(), r
    ok = tool("verify", "--root", str(testpki / "root.der"), str(path))
    assert ok.code == 0, ok
    pem = tempfile.NamedTemporaryFile(suffix=".pem", delete=False)
    from cryptography import x509
    pem.write(x509.load_der_x509_certificate((testpki / "root.der").read_bytes()).public_bytes(serialization.Encoding.PEM))
    pem.close()
    assert tool("verify", "--root", pem.name, str(path)).code == 0
    summary = tool("verify", "--summary", "--root", pem.name, str(path))
    assert summary.code == 0 and summary.out.startswith("VALID transaction"), summary
    assert "2000000912345678" in summary.out
    # Another root than Apple's: the summary does not say "signed by Apple".
    assert f"signed under the given root (chain to {pem.name}" in summary.out and "by Apple" not in summary.out, summary


def test_online_checks_report_an_unreachable_responder_as_network(testpki: Path) -> None:
    # The test PKI's certificates name no OCSP responder that answers: --online must fail as a network failure or
    # an OCSP failure, never pass.
    r = tool("verify", "--online", "--ocsp-timeout", "2", "--root", str(testpki / "root.der"), str(testpki / "jws" / "tx-valid.jws"))
    assert r.code in (1, 3), r
    assert "ocsp" in r.error_line().lower(), r


def test_bundled_roots_match_apples_fingerprints() -> None:
    r = tool("roots")
    assert r.code == 0, r
    from cryptography import x509
    certs = x509.load_pem_x509_certificates(r.out.encode())
    fingerprints = [sha256_colons(c.public_bytes(serialization.Encoding.DER)) for c in certs]
    assert fingerprints == [G3_SHA256, INC_ROOT_SHA256]
    assert certs[0].subject.rfc4514_string() == "C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3"


# ---- decode -----------------------------------------------------------------------------------------------------------

def test_decode_says_nothing_was_verified(testpki: Path) -> None:
    path = testpki / "jws" / "tx-valid.jws"
    jws = path.read_text().strip()
    r = tool("decode", str(path))
    assert r.code == 0, r
    assert "NOT VERIFIED" in r.err
    d = r.json()
    assert d["verified"] is False and d["kind"] == "transaction"
    assert d["payload"] == payload_json(jws)
    x5c = json.loads(base64.urlsafe_b64decode(jws.split(".")[0] + "==="))["x5c"]
    assert [c["sha256"] for c in d["certificates"]] == [sha256_colons(base64.b64decode(x)) for x in x5c]
    from cryptography import x509
    leaf = x509.load_der_x509_certificate(base64.b64decode(x5c[0]))
    assert int(d["certificates"][0]["serialNumber"], 16) == leaf.serial_number
    assert d["certificates"][0]["notAfter"] == leaf.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    # A forged signature decodes just the same: decode proves nothing.
    h, p, s = jws.split(".")
    forged = tool("decode", stdin=f"{h}.{p}.{'A' * len(s)}".encode())
    assert forged.code == 0 and forged.json()["verified"] is False


def test_decode_real_notification_with_nested_values() -> None:
    base = need_conformance()
    jws = (base / "real/jws/sandbox-notification-refund-2025-10-16.jws").read_text().strip()
    d = tool("decode", stdin=json.dumps({"signedPayload": jws}).encode()).json()
    assert d["kind"] == "notification"
    assert d["certificates"][2]["sha256"] == G3_SHA256
    assert d["nested"]["data.signedTransactionInfo"]["kind"] == "transaction"
    assert d["nested"]["data.signedRenewalInfo"]["kind"] == "renewalInfo"


def test_pretty_and_compact(testpki: Path) -> None:
    path = str(testpki / "jws" / "tx-valid.jws")
    pretty = tool("verify", "--pretty", "--root", str(testpki / "root.der"), path)
    compact = tool("verify", "--compact", "--root", str(testpki / "root.der"), path)
    assert pretty.code == compact.code == 0
    assert json.loads(pretty.out) == json.loads(compact.out)
    assert "\n  \"" in pretty.out and compact.out.count("\n") == 1
    assert tool("verify", "--pretty", "--compact", path).code == USAGE


# ---- bad input --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, reason", [
    (b"garbage", "malformed"),
    (b"a.b", "malformed"),
    (b"{\"signedPayload\": 5}", "malformed"),
    (b"{\"notAPayload\": \"x\"}", "malformed"),
    (b"{not json", "malformed"),
    (b"\xff\xfe\x00", "malformed"),
    (b"eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.AAAA", "wrong_kind"),
])
def test_garbage_is_invalid(data: bytes, reason: str) -> None:
    r = tool("verify", stdin=data)
    assert r.code == 1, r
    assert f"({reason})" in r.error_line(), r


def test_empty_and_missing_input(tmp_path: Path) -> None:
    r = tool("verify", stdin=b"")
    assert r.code == NO_INPUT and "empty" in r.error_line(), r
    r = tool("verify", str(tmp_path / "nope.jws"))
    assert r.code == NO_INPUT and "cannot open" in r.error_line(), r
    r = tool("verify", tty_stdin=True)
    assert r.code == NO_INPUT and "pipe it into stdin" in r.error_line(), r
    r = tool("decode", stdin=b"   \n")
    assert r.code == 1, r


def test_wrong_kind(testpki: Path) -> None:
    r = tool("verify", "--kind", "notification", "--root", str(testpki / "root.der"), str(testpki / "jws" / "tx-valid.jws"))
    assert r.code == 1 and "(wrong_kind)" in r.error_line(), r
    r = tool("verify", "--deep", "--root", str(testpki / "root.der"), str(testpki / "jws" / "tx-valid.jws"))
    assert r.code == USAGE and "--deep is for notifications" in r.error_line(), r


def test_usage_errors() -> None:
    for args in (["verify", "--no-such-option"], ["verify", "--kind", "receipt"], ["frobnicate"],
                 ["verify", "--environment", "staging", "-"], ["api"], ["sign", "token", "--lifetime", "ten"]):
        r = tool(*args, stdin=b"x")
        assert r.code == USAGE, f"{args}: {r}"
        assert "Usage:" in r.err or "Error:" in r.err, f"{args}: {r}"


def test_help_and_version() -> None:
    r = tool("--help")
    assert r.code == 0 and "EXIT STATUS" in r.out and "verify" in r.out and "66" in r.out, r
    for sub in (["verify", "--help"], ["api", "--help"], ["sign", "token", "--help"], ["receipt", "verify", "--help"]):
        h = tool(*sub)
        assert h.code == 0 and "USAGE:" in h.out.upper(), h
    v = tool("--version")
    assert v.code == 0 and v.out.strip() == (REPO / "VERSION").read_text().strip()


def test_help_fits_80_columns() -> None:
    """Every command's --help wraps only prose at 80 columns: no preformatted line of a discussion (examples, the exit
    status table; indented in the text) is longer than 80 characters, so none is broken in the middle. The man pages
    (scripts/manpages) come from the same text."""
    def commands(cmd: Dict[str, Any], path: List[str]):
        yield path, cmd
        for sub in cmd.get("subcommands", []):
            if sub["commandName"] != "help":
                yield from commands(sub, path + [sub["commandName"]])
    dump = json.loads(tool("--experimental-dump-help").out)
    found = list(commands(dump["command"], ["appstoreserver"]))
    assert len(found) > 15 and sum("EXAMPLES" in (c.get("discussion") or "") for _, c in found) >= 8, len(found)
    for path, cmd in found:
        long = [line for line in (cmd.get("discussion") or "").splitlines() if line.startswith(" ") and len(line) > 78]
        assert not long, f"{' '.join(path)}: {long}"


def test_completion_scripts() -> None:
    for shell, marker in (("bash", "complete -"), ("zsh", "#compdef appstoreserver"), ("fish", "complete -c 'appstoreserver'")):
        r = tool("--generate-completion-script", shell)
        assert r.code == 0 and marker in r.out, f"{shell}: {r}"
        assert "verify" in r.out and "receipt" in r.out


# ---- sign -------------------------------------------------------------------------------------------------------------

def jws_verified(token: str, public_pem: bytes) -> dict:
    key = ECKey.import_key(public_pem)
    obj = jose_jws.deserialize_compact(token, key, algorithms=["ES256"])
    return {"header": obj.protected, "claims": json.loads(obj.payload)}


def sign_env(keys: Path) -> Dict[str, str]:
    return {"APPSTORE_KEY_ID": KEY_ID, "APPSTORE_ISSUER_ID": ISSUER, "APPSTORE_BUNDLE_ID": BUNDLE}


def test_sign_token_from_key_file_and_environment(keys: Path) -> None:
    public = (keys / "p256_public.pem").read_bytes()
    r = tool("sign", "token", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE)
    assert r.code == 0, r
    v = jws_verified(r.out.strip(), public)
    assert v["header"] == {"alg": "ES256", "kid": KEY_ID, "typ": "JWT"}
    c = v["claims"]
    assert (c["iss"], c["bid"], c["aud"]) == (ISSUER, BUNDLE, "appstoreconnect-v1")
    assert c["exp"] - c["iat"] == 300 and abs(c["iat"] - time.time()) < 60
    env = dict(sign_env(keys), APPSTORE_PRIVATE_KEY=(keys / "p256.p8").read_text())
    e = tool("sign", "token", "--lifetime", "3600", env=env)
    assert e.code == 0, e
    assert jws_verified(e.out.strip(), public)["claims"]["exp"] - jws_verified(e.out.strip(), public)["claims"]["iat"] == 3600
    assert tool("sign", "token", "--lifetime", "3601", env=env).code == USAGE


def test_sign_key_problems(keys: Path, tmp_path: Path) -> None:
    env = sign_env(keys)
    r = tool("sign", "token", env=env)
    assert r.code == USAGE and "--key FILE" in r.error_line() and "APPSTORE_PRIVATE_KEY" in r.error_line(), r
    r = tool("sign", "token", "--key", str(tmp_path / "missing.p8"), env=env)
    assert r.code == NO_INPUT and "missing.p8" in r.error_line(), r
    (tmp_path / "bad.p8").write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    r = tool("sign", "token", "--key", str(tmp_path / "bad.p8"), env=env)
    assert r.code == CONFIG, r
    r = tool("sign", "token", "--key", str(keys / "p384.p8"), env=env)
    assert r.code == CONFIG, r
    r = tool("sign", "token", "--key", str(keys / "p256.p8"))
    assert r.code == USAGE and "--key-id" in r.error_line(), r
    # The key itself is never an argument: there is no option that takes one.
    assert tool("sign", "token", "--private-key", "x", env=env).code == USAGE


def test_sign_offers(keys: Path, tmp_path: Path) -> None:
    public = (keys / "p256_public.pem").read_bytes()
    key_args = ["--key", str(keys / "p256.p8")]
    env = sign_env(keys)
    v2 = tool("sign", "promotional-offer-v2", *key_args, "--product-id", "com.example.monthly", "--offer-id", "WINBACK",
              "--transaction-id", "2000000123", env=env)
    assert v2.code == 0, v2
    c = jws_verified(v2.out.strip(), public)["claims"]
    assert (c["productId"], c["offerIdentifier"], c["transactionId"], c["bid"], c["iss"]) == \
        ("com.example.monthly", "WINBACK", "2000000123", BUNDLE, ISSUER)
    intro = tool("sign", "introductory-offer-eligibility", *key_args, "--product-id", "com.example.monthly",
                 "--allow-introductory-offer", "false", "--transaction-id", "2000000123", env=env)
    assert intro.code == 0, intro
    assert jws_verified(intro.out.strip(), public)["claims"]["allowIntroductoryOffer"] is False
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"operation": "MODIFY_SUBSCRIPTION", "transactionId": "2000000000000001",
                                   "retainBillingCycle": True, "currency": "USD", "storefront": "USA", "taxCode": "C003-00-1",
                                   "requestInfo": {"requestReferenceId": "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"}}))
    ac = tool("sign", "advanced-commerce", *key_args, "--request", str(request), env=env)
    assert ac.code == 0, ac
    claims = jws_verified(ac.out.strip(), public)["claims"]
    signed = json.loads(base64.b64decode(claims["request"]))
    assert {k: signed[k] for k in ("operation", "transactionId", "requestInfo")} == \
        {k: json.loads(request.read_text())[k] for k in ("operation", "transactionId", "requestInfo")}
    v1 = tool("sign", "promotional-offer", *key_args, "--product-id", "com.example.monthly", "--offer-id", "WINBACK",
              "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138", env=env)
    assert v1.code == 0, v1
    s = v1.json()
    message = "\u2063".join([BUNDLE, KEY_ID, "com.example.monthly", "WINBACK", "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                             s["nonce"], str(s["timestamp"])])
    pub = serialization.load_pem_public_key(public)
    pub.verify(base64.b64decode(s["signature"]), message.encode(), ec.ECDSA(hashes.SHA256()))
    assert s["keyIdentifier"] == KEY_ID
    fixed = tool("sign", "promotional-offer", *key_args, "--product-id", "p", "--offer-id", "o",
                 "--nonce", "not-a-uuid", env=env)
    assert fixed.code == USAGE and "nonce" in fixed.error_line(), fixed


# ---- api against the loopback mock ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def mock_url(keys: Path):
    with served("mock_app_store.py", "--cases", str(SUPPORT / "api_cases.json"), "--public-key",
                str(keys / "p256_public.pem"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE) as ports:
        yield f"http://127.0.0.1:{int(ports[0])}"


def api_args(keys: Path, url: str, case: dict, tmp_path: Path) -> List[str]:
    args = ["api", case["endpoint"], "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
            "--bundle-id", BUNDLE, "--base-url", url, "--retries", "0"]
    for name, value in case["params"].items():
        if name == "body":
            f = tmp_path / f"{case['endpoint']}.json"
            f.write_text(json.dumps(value))
            args += ["--body", str(f)]
        elif name == "image":
            f = tmp_path / "image.png"
            f.write_bytes(base64.b64decode(value))
            args += ["--body", str(f)]
        else:
            args += ["--param", f"{name}:={json.dumps(value)}"]
    return args


API_CASES = json.loads((SUPPORT / "api_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", API_CASES, ids=[c["endpoint"] for c in API_CASES])
def test_every_endpoint(keys: Path, mock_url: str, case: dict, tmp_path: Path) -> None:
    r = tool(*api_args(keys, mock_url, case, tmp_path))
    assert r.code == 0, r
    expected = case["pages"][0] if "pages" in case else case["response"] if case["response"] is not None else {}
    assert r.json() == expected


def test_all_pages(keys: Path, mock_url: str, tmp_path: Path) -> None:
    case = next(c for c in API_CASES if c["endpoint"] == "getTransactionHistory")
    r = tool(*api_args(keys, mock_url, case, tmp_path), "--all-pages")
    assert r.code == 0, r
    assert r.json() == case["pages"]
    nope = tool(*api_args(keys, mock_url, API_CASES[0], tmp_path), "--all-pages")
    assert nope.code == USAGE and "not paginated" in nope.error_line(), nope


def test_api_errors(keys: Path, mock_url: str, tmp_path: Path) -> None:
    base = ["--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE,
            "--base-url", mock_url, "--retries", "0"]
    r = tool("api", "getTransactionInfo", "--param", "transactionId=error-404-4040010", *base)
    assert r.code == 2 and "4040010" in r.error_line(), r
    r = tool("api", "getTransactionInfo", "--param", "transactionId=ratelimit", *base)
    assert r.code == 2 and "Retry-After 7 s" in r.error_line(), r
    r = tool("api", "getTransactionInfo", "--param", "transactionId=flaky429-2-cli", *base[:-1], "2")
    assert r.code == 0 and r.json()["signedTransactionInfo"].startswith("attempt-3"), r
    r = tool("api", "getTransactionInfo", "--param", "transactionId=malformed", *base)
    assert r.code == 2 and "(undecodable_response)" in r.error_line(), r
    r = tool("api", "getTransactionInfo", "--param", "transactionld=1", *base)
    assert r.code == USAGE and "unknown parameter \"transactionld\"" in r.error_line(), r
    r = tool("api", "getTransactionInfo", *base)
    assert r.code == USAGE and "missing required parameter \"transactionId\"" in r.error_line(), r
    r = tool("api", "getTransactionHistory", "--param", "anyTransactionId=1", "--param", "revoked=yes", *base)
    assert r.code == USAGE and "revoked" in r.error_line(), r
    r = tool("api", "getTransactionInfoo", *base)
    assert r.code == USAGE and "api list" in r.error_line(), r
    r = tool("api", "getImageList", "--body", str(keys / "p256.p8"), *base)
    assert r.code == USAGE and "takes no request body" in r.error_line(), r


def test_dead_server_is_a_network_failure(keys: Path) -> None:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = tool("api", "getTransactionInfo", "--param", "transactionId=1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID,
             "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--base-url", f"http://127.0.0.1:{port}", "--retries", "0",
             "--timeout", "5")
    assert r.code == 3, r


def test_dry_run_redacts_the_token(keys: Path) -> None:
    r = tool("api", "extendSubscriptionRenewalDate", "--param", "originalTransactionId=2000000123",
             "--param", 'body:={"extendByDays": 3, "extendReasonCode": 1, "requestIdentifier": "7e3fb20b-4cdb-47cc-936d-99d65f608138"}',
             "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE,
             "--environment", "production", "--dry-run")
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert lines[0] == "PUT https://api.storekit.apple.com/inApps/v1/subscriptions/extend/2000000123"
    assert "Authorization: Bearer <token redacted>" in lines
    assert "eyJ" not in r.out
    assert json.loads(lines[-1])["extendByDays"] == 3


def test_api_list() -> None:
    r = tool("api", "list")
    assert r.code == 0, r
    endpoints = json.loads((REPO / "spec" / "endpoints.json").read_text())["endpoints"]
    names = [l.split()[0] for l in r.out.splitlines()]
    assert names == [e["name"] for e in endpoints]


def test_api_verify_signed_fields(testpki: Path, keys: Path, tmp_path: Path) -> None:
    # A tiny server answering Get Transaction Info with a transaction signed by the test PKI.
    import http.server
    import threading
    jws = (testpki / "jws" / "tx-valid.jws").read_text().strip()
    bad = jws[:-8] + ("AAAAAAAA" if not jws.endswith("AAAAAAAA") else "BBBBBBBB")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"signedTransactionInfo": bad if self.path.endswith("/bad") else jws}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = ["--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
                "--bundle-id", "com.example.testpki", "--base-url", f"http://127.0.0.1:{server.server_port}",
                "--root", str(testpki / "root.der"), "--verify"]
        r = tool("api", "getTransactionInfo", "--param", "transactionId=1", *base)
        assert r.code == 0, r
        assert r.json() == {"signedTransactionInfo": payload_json(jws)}
        r = tool("api", "getTransactionInfo", "--param", "transactionId=bad", *base)
        assert r.code == 1 and "signedTransactionInfo: " in r.error_line(), r
    finally:
        server.shutdown()


# ---- receipts ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def receipts(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("receipts")
    subprocess.run([sys.executable, str(SUPPORT / "receipts.py"), str(out)], check=True, capture_output=True)
    return out


def test_receipts(receipts: Path) -> None:
    cases = json.loads((receipts / "manifest.json").read_text())["cases"]
    for c in cases:
        args = ["receipt", "verify"]
        for root in c["verifier"]["roots"]:
            args += ["--root", str(receipts / root)]
        if c["verifier"]["bundleId"]:
            args += ["--bundle-id", c["verifier"]["bundleId"]]
        r = tool(*args, str(receipts / c["path"]))
        if c["expect"]["result"] == "valid":
            assert r.code == 0, f"{c['id']}: {r}"
            assert r.json()["bundleId"] == c["expect"]["json"]["bundleId"], f"{c['id']}: {r}"
            ids = tool("receipt", "ids", str(receipts / c["path"]))
            assert ids.code == 0, f"{c['id']}: {ids}"
            want = [p["transactionId"] for p in c["expect"]["json"]["inApp"] if "transactionId" in p]
            assert all(t in ids.out for t in want if "\x00" not in t), f"{c['id']}: {ids}"
        else:
            assert r.code == 1, f"{c['id']}: {r}"
            assert r.error_line().startswith(f"error: {c['expect']['status']} ({c['expect']['reason']}):"), f"{c['id']}: {r}"
    assert len(cases) >= 30
    # Binary DER from stdin works as base64 does.
    valid = next(c for c in cases if c["id"] == "valid-full")
    der = base64.b64decode((receipts / valid["path"]).read_text())
    r = tool("receipt", "verify", "--root", str(receipts / "root.der"), "-", stdin=der)
    assert r.code == 0 and "no --bundle-id" in r.err, r
    # The bundled Apple Inc. Root does not anchor the own-CA receipts.
    r = tool("receipt", "verify", str(receipts / valid["path"]))
    assert r.code == 1 and "(untrusted_chain)" in r.error_line(), r


def test_real_receipt_ids() -> None:
    base = need_conformance()
    cases = [c for c in json.loads((base / "manifest.json").read_text())["cases"]
             if c["operation"] == "extractTransactionIdFromAppReceipt" and c["expect"]["result"] == "value"]
    assert cases
    for c in cases:
        r = tool("receipt", "ids", str(base / c["path"]))
        assert r.code == 0, f"{c['id']}: {r}"
        want = c["expect"].get("any_of") or [v for v in (c["expect"].get("python_java_node"), c["expect"].get("swift")) if v]
        assert all(t in r.json()["transactionIds"] for t in want), f"{c['id']}: {r}"
        if not want:  # a receipt without purchases
            assert r.json()["transactionIds"] == [], f"{c['id']}: {r}"
    garbage = tool("receipt", "ids", stdin=b"not a receipt")
    assert garbage.code == 1 and "error: " in garbage.err, garbage


# ---- hostile servers and misuse (Tests/support/hostile_http.py) ------------------------------------------------------

@pytest.fixture(scope="session")
def hostile():
    """(main port, catcher port) of the hostile HTTP server."""
    with served("hostile_http.py", "--lifetime", "600") as (main, catcher):
        yield int(main), int(catcher)


def hostile_api(keys: Path, port: int, behaviour: str, *extra: str, endpoint: str = "getTransactionInfo",
                params: tuple = ("--param", "transactionId=1")) -> Run:
    return tool("api", endpoint, *params, "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
                "--bundle-id", BUNDLE, "--base-url", f"http://127.0.0.1:{port}/{behaviour}", "--retries", "0", *extra)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_redirects_are_refused_not_followed(keys: Path, hostile, code: int) -> None:
    port, catcher = hostile
    for endpoint, params in [("getTransactionInfo", ("--param", "transactionId=1")),
                             ("requestTestNotification", ())]:
        r = hostile_api(keys, port, f"redirect-{code}", endpoint=endpoint, params=params)
        assert r.code == 2, r
        line = r.error_line()
        assert f"HTTP {code} redirect" in line and f"127.0.0.1:{catcher}/caught" in line, r
    caught = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/caught", timeout=10).read())
    assert caught["count"] == 0, caught


def test_timeout_is_a_deadline_for_the_whole_exchange(keys: Path, hostile) -> None:
    port, _ = hostile
    for behaviour in ("drip-200", "dripall-200"):
        start = time.monotonic()
        r = hostile_api(keys, port, behaviour, "--timeout", "1.5")
        took = time.monotonic() - start
        # The drip lasts 600 s (hostile_http.py): a per-read timeout would wait it out. 60 s: 40x the deadline, so
        # load cannot break it, and far below the drip.
        assert r.code == 3 and took < 60, (behaviour, took, r)


@pytest.mark.parametrize("behaviour", ["huge-64", "hugecl-64", "gzip-1024"])
def test_bodies_are_bounded(keys: Path, hostile, behaviour: str) -> None:
    port, _ = hostile
    # The tool's peak memory, as the kernel counts it (GNU time is not everywhere: /proc of a child polled).
    r = hostile_api(keys, port, behaviour, "--timeout", "30")
    assert r.code in (2, 3), r
    if behaviour == "gzip-1024":
        assert "(undecodable_response)" in r.error_line() or r.code == 3, r  # never inflated: not JSON
    peak = max_rss_kib(["api", "getTransactionInfo", "--param", "transactionId=1", "--key", str(keys / "p256.p8"),
                        "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--base-url",
                        f"http://127.0.0.1:{port}/{behaviour}", "--retries", "0", "--timeout", "30"])
    assert peak < 200 * 1024, f"{behaviour}: peak RSS {peak} KiB"


def max_rss_kib(args: List[str]) -> int:
    """The peak resident memory of one run of the tool, from wait4's rusage for exactly that process."""
    p = subprocess.Popen([TOOL, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(p.pid, 0)
    p.returncode = 0  # reaped here
    return usage.ru_maxrss


def test_a_server_that_never_answers_is_a_network_failure(keys: Path, hostile) -> None:
    port, _ = hostile
    r = hostile_api(keys, port, "nostatus", "--timeout", "10")
    assert r.code == 3 and "without answering" in r.error_line(), r


def test_apples_error_message_is_cleaned(keys: Path, hostile) -> None:
    port, _ = hostile
    r = hostile_api(keys, port, "errmsg-64")
    assert r.code == 2, r
    line = r.error_line()
    assert "\x1b" not in r.err and "\x07" not in r.err and "\x00" not in r.err, repr(r.err[:300])
    assert len(r.err) < 4096 and "more characters not shown" in line, len(r.err)


def test_key_material_is_never_echoed(keys: Path) -> None:
    pem = (keys / "p256.p8").read_text()
    body = [l for l in pem.splitlines() if not l.startswith("-----")]
    env = sign_env(keys)
    runs = [
        tool("sign", "token", f"--key={pem}", env=env),
        tool("sign", "token", "--key", pem, env=env),  # parsed as an unknown option: ArgumentParser's message
        tool("sign", "token", "--key", str(keys / "p256.p8"), "--lifetime", pem, env=env),
        tool("sign", "token", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", pem,
             "--lifetime", "x"),
        tool("api", "getTransactionInfo", "--param", "transactionId=1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID,
             "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--base-url", pem),
        tool("api", "getTransactionInfo", "--param", f"transactionId:={pem}", "--key", str(keys / "p256.p8"),
             "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE),
        tool("verify", pem),
        tool("sign", "promotional-offer", "--key", str(keys / "p256.p8"), "--product-id", pem, "--offer-id", "o",
             "--nonce", pem, env=env),
    ]
    for r in runs:
        assert r.code != 0, r
        for text in (r.out, r.err):
            assert "PRIVATE KEY" not in text, r
            for line in body:
                assert line[:16] not in text, f"key material in {r!r}"
    assert "path of the .p8 file" in runs[0].error_line(), runs[0]


def test_a_corrupted_key_is_refused(keys: Path) -> None:
    r = tool("sign", "token", "--key", str(keys / "corrupt.p8"), env=sign_env(keys))
    assert r.code == CONFIG and "does not match the public key" in r.error_line(), r


# ---- what is shipped: glibc floor, dependencies, size ------------------------------------------------------------------

# The tool runs on glibc >= 2.28 (RHEL 8, Debian 10, Ubuntu 20.04 and newer) and needs nothing else from the system.
GLIBC_ONLY = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libutil.so.1", "libresolv.so.2",
              "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
MAX_TOOL_BYTES = 30_000_000  # stripped


def test_glibc_floor() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "check-glibc"), TOOL], capture_output=True, text=True)
    print("\n" + r.stdout.strip())
    assert r.returncode == 0, r.stdout + r.stderr
    dynamic = subprocess.run(["readelf", "-d", "-W", TOOL], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    assert needed and needed <= GLIBC_ONLY, f"the tool needs more than glibc: {sorted(needed - GLIBC_ONLY)}"


def test_size(tmp_path: Path) -> None:
    stripped = tmp_path / "appstoreserver"
    subprocess.run(["strip", "-o", str(stripped), TOOL], check=True)
    size = stripped.stat().st_size
    print(f"\ntool size: {size:,} bytes stripped (limit {MAX_TOOL_BYTES:,})")
    assert size <= MAX_TOOL_BYTES


# ---- the tool's HTTP client over TLS (cli/Sources/CLIHTTP) ------------------------------------------------------------

@pytest.fixture(scope="session")
def tls_pki(tmp_path_factory) -> Path:
    """A CA of its own (ca.pem) and two server certificates it issued: `localhost` (DNS localhost, IP 127.0.0.1)
    and `other` (DNS other.invalid only)."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    d = tmp_path_factory.mktemp("tls")
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def usage(ca: bool) -> x509.KeyUsage:
        return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                             data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                             encipher_only=False, decipher_only=False)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("appstoreserver cli test CA")).issuer_name(name("appstoreserver cli test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(usage(True), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for stem, sans in [("localhost", [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       ("other", [x509.DNSName("other.invalid")])]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(stem)).issuer_name(ca.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(usage(False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        (d / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (d / f"{stem}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    return d


class TLSServer:
    """An HTTPS server on 127.0.0.1 (Python's ssl module) answering every GET with a Get Transaction Info answer
    and recording the request headers."""

    def __init__(self, pki: Path, stem: str) -> None:
        import http.server
        import ssl
        import threading
        seen = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                seen.append({k.lower(): v for k, v in self.headers.items()})
                body = json.dumps({"signedTransactionInfo": "over-tls"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")  # the client's chunked decoding, over TLS
                self.end_headers()
                for part in (body[:7], body[7:]):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

            def log_message(self, *a) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(pki / f"{stem}.pem"), str(pki / f"{stem}.key"))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # The handshake happens in accept(); a client that refuses the certificate makes accept() raise an OSError
        # (SSLError), which the server ignores.
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def tls_servers(tls_pki: Path):
    good, other = TLSServer(tls_pki, "localhost"), TLSServer(tls_pki, "other")
    yield good, other
    good.close()
    other.close()


def tls_api(keys: Path, url: str, env: Dict[str, str]) -> Run:
    # SSL_CERT_FILE / SSL_CERT_DIR empty unless given: the tool's own search of the distribution's CA bundle.
    e = {"SSL_CERT_FILE": "", "SSL_CERT_DIR": "", **env}
    return tool("api", "getTransactionInfo", "--param", "transactionId=1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID,
                "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--base-url", url, "--retries", "0", "--timeout", "20", env=e)


def test_https_trusts_the_ca_of_ssl_cert_file(keys: Path, tls_pki: Path, tls_servers) -> None:
    good, _ = tls_servers
    for host in ("localhost", "127.0.0.1"):  # a DNS name and an IP address, each matched against the certificate
        before = len(good.requests)
        r = tls_api(keys, f"https://{host}:{good.port}", {"SSL_CERT_FILE": str(tls_pki / "ca.pem")})
        assert r.code == 0, r
        assert r.json() == {"signedTransactionInfo": "over-tls"}
        headers = good.requests[before]
        assert headers["host"] == f"{host}:{good.port}", headers
        assert "accept-encoding" not in headers and headers["authorization"].startswith("Bearer "), headers


def test_https_trusts_the_ca_of_ssl_cert_dir(keys: Path, tls_pki: Path, tls_servers, tmp_path: Path) -> None:
    good, _ = tls_servers
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "ca.pem").write_bytes((tls_pki / "ca.pem").read_bytes())
    if subprocess.run(["openssl", "rehash", str(certs)], capture_output=True).returncode != 0:
        pytest.skip("SKIPPED: `openssl rehash` is not available to make a hashed certificate folder")
    r = tls_api(keys, f"https://localhost:{good.port}", {"SSL_CERT_DIR": str(certs)})
    assert r.code == 0 and r.json() == {"signedTransactionInfo": "over-tls"}, r


def test_https_refuses_an_untrusted_certificate(keys: Path, tls_pki: Path, tls_servers) -> None:
    good, _ = tls_servers
    # The distribution's CA bundle does not hold the test CA.
    r = tls_api(keys, f"https://localhost:{good.port}", {})
    assert r.code == 3, r
    line = r.error_line()
    assert "is not trusted" in line and line.startswith("error: TRANSPORT_ERROR ("), line
    # Nor does another CA given by SSL_CERT_FILE (the server's own certificate is no anchor for the client either).
    r = tls_api(keys, f"https://localhost:{good.port}", {"SSL_CERT_FILE": str(tls_pki / "other.pem")})
    assert r.code == 3 and "is not trusted" in r.error_line(), r
    r = tls_api(keys, f"https://localhost:{good.port}", {"SSL_CERT_FILE": str(tls_pki / "missing.pem")})
    assert r.code == 3 and "SSL_CERT_FILE" in r.error_line(), r


def test_https_refuses_a_certificate_for_another_host(keys: Path, tls_pki: Path, tls_servers) -> None:
    _, other = tls_servers
    for host, why in (("localhost", "hostname mismatch"), ("127.0.0.1", "IP address mismatch")):
        r = tls_api(keys, f"https://{host}:{other.port}", {"SSL_CERT_FILE": str(tls_pki / "ca.pem")})
        assert r.code == 3, r
        assert why in r.error_line(), r
    assert other.requests == [], "a request was sent over a connection whose certificate names another host"


class UnframedTLSServer:
    """An HTTPS server answering one request at a time with a body without length (Connection: close), then ending
    the connection with TLS close_notify (`notify`) or with a bare TCP close (a truncation an attacker can cause)."""

    def __init__(self, pki: Path, notify: bool) -> None:
        import ssl
        import threading
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(pki / "localhost.pem"), str(pki / "localhost.key"))
        self.notify = notify
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                tls = self.ctx.wrap_socket(conn, server_side=True)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = tls.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                            + json.dumps({"signedTransactionInfo": "unframed"}).encode())
                if self.notify:
                    try:
                        tls.unwrap()  # close_notify (then the peer's, or its close)
                    except OSError:
                        pass
                else:
                    socket.socket.shutdown(tls, socket.SHUT_RDWR)  # TCP FIN below TLS: no close_notify
                tls.close()
            except OSError:
                conn.close()

    def close(self) -> None:
        self.listener.close()


def test_https_refuses_a_body_without_length_cut_without_close_notify(keys: Path, tls_pki: Path) -> None:
    ca = {"SSL_CERT_FILE": str(tls_pki / "ca.pem")}
    cut, closed = UnframedTLSServer(tls_pki, notify=False), UnframedTLSServer(tls_pki, notify=True)
    try:
        # Ended by close_notify: the body is complete (the TLS layer says so).
        r = tls_api(keys, f"https://localhost:{closed.port}", ca)
        assert r.code == 0 and r.json() == {"signedTransactionInfo": "unframed"}, r
        # Ended by a TCP FIN alone: as curl does, refused as a possible truncation, even though what arrived parses.
        r = tls_api(keys, f"https://localhost:{cut.port}", ca)
        assert r.code == 3, r
        assert "close_notify" in r.error_line() and "truncated" in r.error_line(), r
    finally:
        cut.close()
        closed.close()


# ---- online (OCSP) checks through the tool's HTTP client (Tests/support/ocsp_harness.py) -------------------------------

@pytest.fixture(scope="session")
def ocsp(tmp_path_factory):
    out = tmp_path_factory.mktemp("ocsp")
    try:
        with served("ocsp_harness.py", "serve", str(out), "--lifetime", "600", ready="READY", stop_seconds=30) as words:
            yield json.loads(Path(words[0]).read_text())
    except AssertionError as e:  # the harness needs openssl and faketime
        pytest.skip(f"SKIPPED: ocsp_harness.py did not start: {e}")


@pytest.mark.parametrize("case,code,reason", [("good", 0, None), ("leaf_revoked", 1, "revoked"),
                                              ("responder_down", 3, "ocsp_unreachable"),
                                              ("responder_slow", 3, "ocsp_timeout")])
def test_online_checks_over_the_tools_http_client(ocsp, case: str, code: int, reason: Optional[str]) -> None:
    c = ocsp["cases"][case]
    r = tool("verify", "--online", "--ocsp-timeout", "2", "--root", ocsp["root"], "--bundle-id", ocsp["bundleId"],
             "--environment", "sandbox", c["jws"][0])
    assert r.code == code, r
    if reason:
        assert f"({reason})" in r.error_line(), r
    else:
        assert json.loads(r.out)["bundleId"] == ocsp["bundleId"]
