#!/usr/bin/env python3
"""benchmarks/python/bench.py VECTORS -- the Python binding (appstoreserver) and Apple's Python library
(appstoreserverlibrary, app-store-server-library from PyPI) side by side in one process, on the same inputs.

Cases (each call returns what users get: full model objects, or the token / signature text):
  transaction_cached       verify_and_decode_signed_transaction, one verifier, the chain seen before
  transaction_first_sight  the same with this library's chain cache off (Apple's library caches only with online
                           checks, so its numbers are those of every offline call)
  notification             verify_and_decode_notification
  api_token                the App Store Server API bearer token (both clients' _generate_token())
  promotional_offer_v2     PromotionalOfferV2SignatureCreator.create_signature(product, offer, transaction id)
and, for the two cached verify cases, bare ctypes (informational): the C call through the binding's prototypes,
returning the JSON text only, to show what the binding's models and checks cost on top.

Vectors: ../shared/tools/gen_vectors.py output (200 transactions and notifications on Apple's chain shape: P-384
root and intermediate, P-256 leaf; Production, bundle com.example.bench, app Apple ID 1234567890; api_key.p8).
Every vector is checked once per implementation before timing: both must decode the same ids; tokens and
signatures are verified with PyJWT (Apple's dependency, not this library) after every timed run.

Scheduling: RUNS rounds; in each, every case runs once for SECONDS per implementation, the two back to back, the
order alternating between rounds; the best run of each counts. Prints one line per case with ratio_to_apple and the
target. Options: --seconds S (1.5) --runs N (3) --only a,b
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

TARGETS = {"transaction_cached": 20.0, "transaction_first_sight": 1.5, "notification": 20.0, "api_token": 1.2}
CASES = ["transaction_cached", "transaction_first_sight", "notification", "api_token", "promotional_offer_v2"]
ISSUER = "57246542-96fe-1a63-e053-0824d011072a"
PRODUCT, OFFER, TRANSACTION = "com.example.bench.monthly", "WINBACK_50", "2000000123456789"


def load(vectors: Path) -> Dict[str, Any]:
    m = json.loads((vectors / "manifest.json").read_text())
    return {
        "root": (vectors / "root.der").read_bytes(),
        "bundle": m["bundle_id"], "app_id": m["app_apple_id"], "environment": m["environment"],
        "key": (vectors / m["api_key"]["file"]).read_bytes(), "key_id": m["api_key"]["key_id"],
        "transactions": (vectors / "transactions.jws").read_text().split(),
        "notifications": (vectors / "notifications.jws").read_text().split(),
    }


class Impl:
    """One library's callables for every case."""

    def __init__(self, name: str, v: Dict[str, Any]):
        self.name = name
        if name == "appstoreserver":
            from appstoreserver.api_client import AppStoreServerAPIClient
            from appstoreserver.jws_signature_creator import PromotionalOfferV2SignatureCreator
            from appstoreserver.models.Environment import Environment
            from appstoreserver.signed_data_verifier import SignedDataVerifier
            extra: Dict[str, Any] = {"chain_cache_size": 0}
        else:
            from appstoreserverlibrary.api_client import AppStoreServerAPIClient  # type: ignore[no-redef]
            from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator  # type: ignore
            from appstoreserverlibrary.models.Environment import Environment  # type: ignore[no-redef]
            from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier  # type: ignore[no-redef]
            extra = {}
        env = Environment(v["environment"])
        self.verifier = SignedDataVerifier([v["root"]], False, env, v["bundle"], v["app_id"])
        self.uncached = SignedDataVerifier([v["root"]], False, env, v["bundle"], v["app_id"], **extra)
        self.client = AppStoreServerAPIClient(v["key"], v["key_id"], ISSUER, v["bundle"], env)
        self.promo = PromotionalOfferV2SignatureCreator(v["key"], v["key_id"], ISSUER, v["bundle"])
        self.v = v

    def calls(self, case: str) -> Tuple[Callable[[Any], Any], List[Any]]:
        v = self.v
        if case == "transaction_cached":
            return self.verifier.verify_and_decode_signed_transaction, v["transactions"]
        if case == "transaction_first_sight":
            return self.uncached.verify_and_decode_signed_transaction, v["transactions"]
        if case == "notification":
            return self.verifier.verify_and_decode_notification, v["notifications"]
        if case == "api_token":
            gen = self.client._generate_token
            return (lambda _: gen()), [None]
        if case == "promotional_offer_v2":
            sign = self.promo.create_signature
            return (lambda _: sign(PRODUCT, OFFER, TRANSACTION)), [None]
        raise ValueError(case)


def bare_calls(case: str, ours: Impl) -> Optional[Tuple[Callable[[Any], Any], List[Any]]]:
    """The C call alone (appstore_verifier_verify_*), through the binding's generated prototypes."""
    if case not in ("transaction_cached", "notification"):
        return None
    from ctypes import byref, c_void_p, string_at

    from appstoreserver._native import lib

    v = ours.v
    verifier = ours.verifier._h  # the binding's verifier (kept alive by `ours`), used through its handle
    fn = (lib.appstore_verifier_verify_transaction if case == "transaction_cached"
          else lib.appstore_verifier_verify_notification)
    free = lib.appstore_string_free
    inputs = [x.encode() for x in v["transactions" if case == "transaction_cached" else "notifications"]]

    def call(jws: bytes) -> bytes:
        out, err = c_void_p(), c_void_p()
        if fn(verifier, jws, len(jws), byref(out), byref(err)) != 0:
            raise RuntimeError("verification failed")
        text = string_at(out.value)
        free(out.value)
        return text

    return call, inputs


def check_vectors(ours: Impl, apple: Impl) -> None:
    """Both libraries decode every vector, to the same values."""
    for t in ours.v["transactions"]:
        a, b = ours.verifier.verify_and_decode_signed_transaction(t), apple.verifier.verify_and_decode_signed_transaction(t)
        assert (a.transactionId, a.bundleId, a.rawEnvironment, a.price) == \
            (b.transactionId, b.bundleId, b.rawEnvironment, b.price), (a, b)
        assert type(a).__name__ == type(b).__name__ == "JWSTransactionDecodedPayload"
    for n in ours.v["notifications"]:
        a, b = ours.verifier.verify_and_decode_notification(n), apple.verifier.verify_and_decode_notification(n)
        assert (a.notificationUUID, a.rawNotificationType, a.data.signedTransactionInfo) == \
            (b.notificationUUID, b.rawNotificationType, b.data.signedTransactionInfo)


def check_sample(case: str, value: Any, v: Dict[str, Any]) -> None:
    """Tokens and signatures verified with PyJWT and cryptography (Apple's dependencies), not with this library."""
    if case not in ("api_token", "promotional_offer_v2"):
        return
    import jwt  # PyJWT
    from cryptography.hazmat.primitives import serialization

    public = serialization.load_pem_private_key(v["key"], None).public_key()
    aud = "appstoreconnect-v1" if case == "api_token" else "promotional-offer"
    claims = jwt.decode(value, public, algorithms=["ES256"], audience=aud)
    assert claims["bid"] == v["bundle"] and claims["iss"] == ISSUER, claims
    assert jwt.get_unverified_header(value)["kid"] == v["key_id"]
    if case == "promotional_offer_v2":
        assert (claims["productId"], claims["offerIdentifier"], claims["transactionId"]) == (PRODUCT, OFFER, TRANSACTION)


def measure(fn: Callable[[Any], Any], inputs: List[Any], seconds: float) -> Tuple[float, Any]:
    """Calls per second over `seconds` (cycling through inputs), and the last result."""
    n = len(inputs)
    calls = 0
    last = None
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(16):
            last = fn(inputs[calls % n])
            calls += 1
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start), last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", type=Path)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or c in args.only.split(",")]
    v = load(args.vectors)
    import appstoreserver
    from importlib.metadata import version

    ours, apple = Impl("appstoreserver", v), Impl("apple", v)
    print(f"# Python {platform.python_version()}; appstoreserver {appstoreserver.__version__} "
          f"({appstoreserver.library_path()}); app-store-server-library {version('app-store-server-library')}")
    print(f"# {len(v['transactions'])} transactions, {len(v['notifications'])} notifications; best of {args.runs} runs x "
          f"{args.seconds} s per case and library, interleaved")
    check_vectors(ours, apple)
    print("# every vector verified by both libraries, same decoded values")
    best: Dict[Tuple[str, str], float] = {}
    for r in range(args.runs):
        for case in cases:
            order = [ours, apple] if r % 2 == 0 else [apple, ours]
            for impl in order:
                fn, inputs = impl.calls(case)
                for x in inputs:  # untimed warm-up pass (for the cache: every chain seen)
                    fn(x)
                gc.collect()
                rate, sample = measure(fn, inputs, args.seconds)
                check_sample(case, sample, v)
                key = (impl.name, case)
                best[key] = max(best.get(key, 0.0), rate)
            bare = bare_calls(case, ours)
            if bare is not None:
                for x in bare[1]:
                    bare[0](x)
                rate, _ = measure(bare[0], bare[1], args.seconds)
                best[("bare", case)] = max(best.get(("bare", case), 0.0), rate)
    for case in cases:
        a, b = best[("appstoreserver", case)], best[("apple", case)]
        ratio = a / b
        target = TARGETS.get(case)
        verdict = ""
        if target is not None:
            met = ratio >= target
            verdict = f"  target >= {target:g}x {'met' if met else 'MISSED'}"
        print(f"python {case:<24} appstoreserver {a:>9.0f}/s  apple {b:>8.0f}/s  ratio_to_apple={ratio:.2f}{verdict}")
        if ("bare", case) in best:
            c = best[("bare", case)]
            print(f"python {case + ' (bare ctypes)':<38} {c:>9.0f}/s  apple {b:>8.0f}/s  ratio_to_apple={c / b:.2f}  "
                  f"(informational: JSON text only; the models cost {100 * (1 - a / c):.0f} %)")
    return 0  # a measurement, not a test: exit 0 whether or not targets are met


if __name__ == "__main__":
    sys.exit(main())
