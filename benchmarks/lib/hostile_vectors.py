#!/usr/bin/env python3
"""hostile_vectors.py OUTDIR -- inputs for `benchmarks/run hostile`: what an attacker with no key material sends.

Sizes 4 KiB .. 1 MiB (JWS: the verifier's default max_jws_bytes) and 4 KiB .. 16 MiB (API answers: the library's
APPSTORE_LIMIT_API_RESPONSE_BYTES), doubling by 4. Per size, files named <family>_<bytes>:
  payload_keys  a JWS whose payload is one object of short keys ({"k0000001":0,...}), signed by a self-made chain
                in Apple's shape (marker OIDs, P-256 leaf): the signature checks out, so the payload is parsed
                before the chain is found untrusted (the verifier is given another root: root.der)
  header_keys   the same keys in the JWS header (parsed before the signature; signature garbage)
  answer_keys   an App Store Server API answer to getTransactionInfo: {"signedTransactionInfo":"x", k...: 0}
Cost per byte must not grow with the size (benchmarks/c/hostile_linear.c).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Tests", "support"))

from testpki import PKI, b64u, der, header_for, jdump, sign_input  # noqa: E402

JWS_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
ANSWER_SIZES = JWS_SIZES + [4 << 20, 16 << 20]


def keys_object(budget: int, first: bytes = b"") -> bytes:
    """A JSON object of distinct short keys, at most `budget` bytes."""
    parts = [first] if first else []
    size = 2 + len(first)
    i = 0
    while True:
        member = b'"k%07d":0' % i
        if size + len(member) + 1 > budget:
            break
        parts.append(member)
        size += len(member) + 1
        i += 1
    return b"{" + b",".join(parts) + b"}"


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    pki = PKI()
    with open(os.path.join(out, "root.der"), "wb") as f:
        f.write(der(pki.root))
    chain = [pki.forged_leaf, pki.forged_inter, pki.other_root]
    header = b64u(jdump(header_for(chain)))
    for size in JWS_SIZES:
        # base64url grows 4/3: leave room for the header and the signature within `size` bytes of JWS.
        payload = keys_object((size - len(header) - 100) * 3 // 4)
        jws = sign_input(header + "." + b64u(payload), pki.forged_leaf_key)
        assert len(jws) <= size, (size, len(jws))
        open(os.path.join(out, f"payload_keys_{size}"), "w").write(jws)
        h = dict(header_for(chain))
        prefix = jdump(h)[1:-1]
        hjson = keys_object((size - 200) * 3 // 4, first=prefix)
        jws = b64u(hjson) + "." + b64u(b'{"a":0}') + "." + b64u(bytes(64))
        assert len(jws) <= size, (size, len(jws))
        open(os.path.join(out, f"header_keys_{size}"), "w").write(jws)
    for size in ANSWER_SIZES:
        body = keys_object(size, first=b'"signedTransactionInfo":"x"')
        open(os.path.join(out, f"answer_keys_{size}"), "wb").write(body)


if __name__ == "__main__":
    main(sys.argv[1])
