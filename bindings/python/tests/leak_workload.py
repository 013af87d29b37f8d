"""The Python workload of the leak check (Tests/support/leakcheck.py judges it; scripts/leak-check python runs the long
form, tests/test_leak.py the short one).

    python leak_workload.py TESTPKI_DIR CALLS none|handles|malloc

CALLS verifications through the package, as an application makes them: valid transactions, a failure after the
signature (error objects), deep notifications, and every 100th call a verifier made and dropped and an offer
signature. At the start and after every thirtieth of the calls, after gc.collect(), it prints
"leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE". Self-test modes: `handles` makes a verifier options handle per call
through the C ABI and never frees it; `malloc` keeps 1,024 bytes of libc malloc per call.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from pathlib import Path

from appstoreserver._native import lib
from appstoreserver.jws_signature_creator import PromotionalOfferV2SignatureCreator
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException

BUNDLE = "com.example.testpki"


def main() -> int:
    pki, calls, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if mode not in ("none", "handles", "malloc"):
        print("leak_workload: MODE is none, handles or malloc", file=sys.stderr)
        return 2
    root = (pki / "root.der").read_bytes()
    good = (pki / "jws" / "tx-valid.jws").read_text().strip()
    bad = (pki / "jws" / "tx-wrong-bundle.jws").read_text().strip()
    notification = (pki / "jws" / "notif-valid-did-renew.jws").read_text().strip()
    key = (pki / "leaf_key.pem").read_bytes()  # a PKCS#8 P-256 key, as App Store Connect hands out
    v = SignedDataVerifier([root], False, Environment.SANDBOX, BUNDLE)
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    kept = []
    failures = 0

    def sample(done: int) -> None:
        gc.collect()
        print(f"leak-sample {done} {lib.appstore_debug_live_objects()} {lib.appstore_debug_malloc_in_use()}",
              flush=True)

    sample(0)
    for i in range(1, calls + 1):
        k = i % 10
        if k == 0:
            try:
                v.verify_and_decode_signed_transaction(bad)
                print("leak_workload: a wrong-bundle transaction verified", file=sys.stderr)
                return 1
            except VerificationException:
                failures += 1
        elif k == 5:
            if v.verify_and_decode_notification(notification).data.bundleId != BUNDLE:
                return 1
        else:
            v.verify_and_decode_signed_transaction(good)
        if i % 100 == 0:
            SignedDataVerifier([root], True, Environment.SANDBOX, "b")
            PromotionalOfferV2SignatureCreator(key, "KEYID", "issuer", BUNDLE).create_signature("p", "o", None)
        if mode == "handles":
            h = ctypes.c_void_p()
            lib.appstore_verifier_options_new(ctypes.byref(h), None)
        elif mode == "malloc":
            p = libc.malloc(1024)
            ctypes.memset(p, 1, 1)
            kept.append(p)
        if i * 30 // calls != (i - 1) * 30 // calls:
            sample(i)
    if failures != calls // 10:
        print(f"leak_workload: {failures} failures, {calls // 10} expected", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
