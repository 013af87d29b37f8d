#!/usr/bin/env python3
"""Independent checks of the tokens and signatures appstoreserver produces (issue: signature creation).

  check_signatures.py keys OUTDIR      write test keys: p256.p8 (+ p256_public.pem), p384.p8, rsa.p8,
                                       encrypted.p8, truncated.p8, not_pem.txt
  check_signatures.py check FILE.json  verify every item of FILE.json (written by the Swift or C tests) with
                                       Python `cryptography` and `joserfc`, never with appstoreserver itself
  check_signatures.py sign-server KEY  an external signer for the tests of keys held outside the process: reads
                                       one hex SHA-256 digest per line on stdin, writes the DER ECDSA signature of
                                       that digest (Python `cryptography`, prehashed) in hex, one line each

FILE.json: {"public_key": PATH, "items": [{"kind": ..., "value": ..., "expect": {...}}, ...]} with kinds
  api_token          expect: kid, iss, bid, lifetime, iat (optional)
  (promo_v2, intro_eligibility, advanced_commerce also take an optional expected nonce: the caller's, lowercased)
  promo_v2           expect: kid, iss, bid, productId, offerIdentifier, transactionId (absent -> must be absent)
  intro_eligibility  expect: kid, iss, bid, productId, allowIntroductoryOffer (bool), transactionId
  advanced_commerce  expect: kid, iss, bid, request (the JSON object the request claim must decode to, exactly:
                     same keys at every level, same values and JSON types)
  promo_v1           expect: bundleId, keyId, productId, offerId, appAccountToken, nonce, timestamp
Prints one line per failure and a closing line 'signatures: N passed, M failed'; exits 1 on any failure.
"""
import base64
import json
import sys
import time
import uuid
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jws as jose_jws
from joserfc.jwk import ECKey

AUDIENCE = {"promo_v2": "promotional-offer", "intro_eligibility": "introductory-offer-eligibility",
            "advanced_commerce": "advanced-commerce-api", "api_token": "appstoreconnect-v1"}


def write_keys(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    p8 = lambda k, enc=serialization.NoEncryption(): k.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)
    p256 = ec.generate_private_key(ec.SECP256R1())
    (out / "p256.p8").write_bytes(p8(p256))
    (out / "p256_public.pem").write_bytes(p256.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (out / "p384.p8").write_bytes(p8(ec.generate_private_key(ec.SECP384R1())))
    (out / "rsa.p8").write_bytes(p8(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    (out / "encrypted.p8").write_bytes(p8(p256, serialization.BestAvailableEncryption(b"secret")))
    full = p8(p256).decode().splitlines()
    (out / "truncated.p8").write_text("\n".join(full[:2] + [full[-1]]) + "\n")
    (out / "not_pem.txt").write_text("this is not a key\n")
    # For external signers: the public key as DER too, another P-256 key (a signer answering with the wrong key).
    (out / "p256_public.der").write_bytes(p256.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    (out / "other_p256.p8").write_bytes(p8(ec.generate_private_key(ec.SECP256R1())))
    (out / "corrupt.p8").write_bytes(corrupt_scalar(p8(p256)))
    print(f"keys written to {out}")


def corrupt_scalar(pem: bytes) -> bytes:
    """The same PKCS#8 key with one bit of the private scalar flipped (the public key stored beside it unchanged):
    a .p8 damaged in storage, which still parses."""
    lines = pem.decode().splitlines()
    der = bytearray(base64.b64decode("".join(lines[1:-1])))
    at = der.find(b"\x04\x20", 20) + 2  # ECPrivateKey's privateKey OCTET STRING (32 bytes) inside the PKCS#8
    der[at + 7] ^= 0x10
    body = base64.b64encode(bytes(der)).decode()
    return ("\n".join([lines[0]] + [body[i:i + 64] for i in range(0, len(body), 64)] + [lines[-1]]) + "\n").encode()


def b64url_json(seg: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def canonical(value) -> str:
    """JSON text with sorted keys: equal only for equal keys, values and JSON types."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def shape_differences(got, want, path="request") -> list:
    """Missing / unexpected keys and type changes, by path (for readable failures)."""
    out = []
    if isinstance(got, dict) and isinstance(want, dict):
        out += [f"{path}.{k} missing" for k in sorted(set(want) - set(got))]
        out += [f"{path}.{k} unexpected" for k in sorted(set(got) - set(want))]
        for k in sorted(set(got) & set(want)):
            out += shape_differences(got[k], want[k], f"{path}.{k}")
    elif isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            out.append(f"{path} has {len(got)} elements, expected {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            out += shape_differences(g, w, f"{path}[{i}]")
    elif type(got) is not type(want):
        out.append(f"{path} is {type(got).__name__}, expected {type(want).__name__}")
    return out


def check_jws(item: dict, key: ECKey) -> list:
    problems = []
    value, expect, kind = item["value"], item["expect"], item["kind"]
    try:
        obj = jose_jws.deserialize_compact(value, key, algorithms=["ES256"])
    except Exception as e:  # noqa: BLE001 - any failure is a finding
        return [f"joserfc rejected the signature: {e!r}"]
    header, claims = obj.headers(), json.loads(obj.payload)
    if header != {"alg": "ES256", "kid": expect["kid"], "typ": "JWT"}:
        problems.append(f"header {header}")
    for k in ("iss", "bid"):
        if claims.get(k) != expect[k]:
            problems.append(f"claim {k}={claims.get(k)!r}, expected {expect[k]!r}")
    if claims.get("aud") != AUDIENCE[kind]:
        problems.append(f"aud={claims.get('aud')!r}")
    iat = claims.get("iat")
    if not isinstance(iat, int) or isinstance(iat, bool):
        problems.append(f"iat not an integer: {iat!r}")
    elif "iat" in expect and iat != expect["iat"]:
        problems.append(f"iat={iat}, expected {expect['iat']}")
    elif "iat" not in expect and abs(iat - time.time()) > 600:
        problems.append(f"iat {iat} is not now")
    if kind == "api_token":
        if claims.get("exp") != (iat or 0) + expect["lifetime"]:
            problems.append(f"exp={claims.get('exp')} != iat + {expect['lifetime']}")
        extra = set(claims) - {"iss", "iat", "exp", "aud", "bid"}
        if extra:
            problems.append(f"unexpected claims {extra}")
        return problems
    if "exp" in claims:
        problems.append("exp must be absent")
    nonce = claims.get("nonce")
    try:
        if str(uuid.UUID(nonce)) != nonce:
            problems.append(f"nonce {nonce!r} is not a lowercase UUID")
    except (TypeError, ValueError):
        problems.append(f"nonce {nonce!r} is not a UUID")
    if "nonce" in expect and nonce != expect["nonce"]:
        problems.append(f"nonce {nonce!r}, expected the caller's {expect['nonce']!r}")
    if kind == "promo_v2":
        feature = {"productId", "offerIdentifier"} | ({"transactionId"} if expect.get("transactionId") else set())
    elif kind == "intro_eligibility":
        feature = {"productId", "allowIntroductoryOffer", "transactionId"}
        if not isinstance(claims.get("allowIntroductoryOffer"), bool):
            problems.append("allowIntroductoryOffer must be a JSON boolean")
    else:
        feature = {"request"}
        try:
            raw = claims.get("request", "")
            if "-" in raw or "_" in raw:
                problems.append("request must be standard base64, not base64url")
            decoded = json.loads(base64.b64decode(raw, validate=True))
            # Exact shape: same keys at every level, same values, same JSON types (True is not 1 here).
            if canonical(decoded) != canonical(expect["request"]):
                problems.append(f"request decodes to {canonical(decoded)}, expected {canonical(expect['request'])}"
                                + "".join(f"; {d}" for d in shape_differences(decoded, expect["request"])))
        except ValueError as e:
            problems.append(f"request claim is not base64 JSON: {e}")
    for k in feature - {"request"}:
        if claims.get(k) != expect.get(k):
            problems.append(f"claim {k}={claims.get(k)!r}, expected {expect.get(k)!r}")
    extra = set(claims) - {"iss", "iat", "aud", "bid", "nonce"} - feature
    if extra:
        problems.append(f"unexpected claims {extra}")
    return problems


def check_v1(item: dict, public_key) -> list:
    e = item["expect"]
    text = "\u2063".join([e["bundleId"], e["keyId"], e["productId"], e["offerId"], e["appAccountToken"].lower(),
                          e["nonce"].lower(), str(e["timestamp"])])
    try:
        der = base64.b64decode(item["value"], validate=True)
        public_key.verify(der, text.encode("utf-8"), ec.ECDSA(hashes.SHA256()))
    except Exception as ex:  # noqa: BLE001
        return [f"v1 signature does not verify over the expected string: {ex!r}"]
    return []


def check(path: Path) -> int:
    doc = json.loads(path.read_text())
    pem = Path(doc["public_key"]).read_bytes()
    public_key = serialization.load_pem_public_key(pem)
    key = ECKey.import_key(pem)
    passed = failed = 0
    nonces = set()
    for item in doc["items"]:
        problems = check_v1(item, public_key) if item["kind"] == "promo_v1" else check_jws(item, key)
        # A fresh nonce must never repeat; a nonce the caller gave (expect.nonce) is the caller's to repeat.
        if item["kind"] in ("promo_v2", "intro_eligibility", "advanced_commerce") and not problems \
                and "nonce" not in item["expect"]:
            n = b64url_json(item["value"].split(".")[1])["nonce"]
            if n in nonces:
                problems.append(f"nonce {n} reused")
            nonces.add(n)
        if problems:
            failed += 1
            print(f"FAIL {item.get('name', item['kind'])}: " + "; ".join(problems))
        else:
            passed += 1
    if not doc["items"]:
        failed += 1
        print("FAIL no items to check")
    print(f"signatures: {passed} passed, {failed} failed")
    return 1 if failed else 0


def sign_server(key_path: Path) -> int:
    from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    for line in sys.stdin:
        digest = bytes.fromhex(line.strip())
        sys.stdout.write(key.sign(digest, ec.ECDSA(Prehashed(hashes.SHA256()))).hex() + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "sign-server":
        sys.exit(sign_server(Path(sys.argv[2])))
    elif len(sys.argv) == 3 and sys.argv[1] == "keys":
        write_keys(Path(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(Path(sys.argv[2])))
    else:
        print(__doc__)
        sys.exit(2)
