#!/usr/bin/env python3
"""seeds.py REPO DATA OUT -- seed corpora for the libFuzzer targets (scripts/fuzz), one folder per target:

  verify   every JWS of the own-PKI fixtures (DATA/testpki), of the OCSP test PKI, and of ../shared/conformance
  receipt  the own-CA receipts (DATA/receipts) and the real and Xcode receipts of ../shared/conformance (base64 text)
  signing  the test keys (PEM) and one request JSON per Advanced Commerce in-app operation
  api      each endpoint's canonical params_json and canned answer from Tests/support/api_cases.json
  ocsp     a genuine DER OCSP answer for the OCSP test PKI's intermediate (openssl ocsp, offline)

Standard library only (plus the openssl command for the OCSP seed)."""
import glob
import json
import os
import shutil
import subprocess
import sys


def main(repo: str, data: str, out: str) -> None:
    shared = os.path.join(repo, "..", "shared", "conformance")
    dirs = {t: os.path.join(out, t) for t in ("verify", "receipt", "signing", "api", "ocsp")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    n = 0

    def put(target: str, content: bytes) -> None:
        nonlocal n
        n += 1
        with open(os.path.join(dirs[target], f"seed-{n:05d}"), "wb") as f:
            f.write(content)

    for path in glob.glob(os.path.join(data, "testpki", "jws", "*.jws")) + \
            glob.glob(os.path.join(data, "ocspgen", "jws", "*.jws")) + \
            glob.glob(os.path.join(shared, "**", "*.jws"), recursive=True):
        put("verify", open(path, "rb").read().strip())
    for path in glob.glob(os.path.join(data, "receipts", "**", "*.b64"), recursive=True) + \
            glob.glob(os.path.join(shared, "**", "receipts", "**", "*.b64"), recursive=True):
        put("receipt", open(path, "rb").read())
    for path in glob.glob(os.path.join(data, "keys", "*.p8")) + glob.glob(os.path.join(data, "keys", "*.pem")):
        put("signing", open(path, "rb").read())
    info = {"requestReferenceId": "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"}
    offer = {"period": "P1M", "periodCount": 3, "price": 4990, "reason": "ACQUISITION"}
    for request in (
        {"operation": "CREATE_ONE_TIME_CHARGE", "currency": "USD", "taxCode": "C003-00-1", "requestInfo": info,
         "item": {"SKU": "sku.1", "description": "d", "displayName": "n", "price": 990}},
        {"operation": "CREATE_SUBSCRIPTION", "version": "1", "currency": "USD", "taxCode": "C003-00-1", "period": "P1M",
         "requestInfo": info, "descriptors": {"description": "d", "displayName": "n"},
         "items": [{"SKU": "sku.1", "description": "d", "displayName": "n", "price": 990, "offer": offer}]},
        {"operation": "MODIFY_SUBSCRIPTION", "requestInfo": info, "transactionId": "1", "currency": "USD",
         "taxCode": "C003-00-1", "retainBillingCycle": True,
         "addItems": [{"SKU": "sku.2", "description": "d", "displayName": "n", "price": 990}],
         "removeItems": [{"SKU": "sku.1"}]},
        {"operation": "REACTIVATE_SUBSCRIPTION", "requestInfo": info, "transactionId": "1",
         "items": [{"SKU": "sku.1"}]},
    ):
        put("signing", json.dumps(request).encode())
    with open(os.path.join(repo, "Tests", "support", "api_cases.json"), encoding="utf-8") as f:
        for case in json.load(f)["cases"]:
            put("api", json.dumps(case.get("params") or {}).encode())
            for answer in [case.get("response")] + list(case.get("pages") or []):
                if answer is not None:
                    put("api", json.dumps(answer).encode())
    put("api", b'{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}')
    gen = os.path.join(data, "ocspgen")
    try:
        req, resp = os.path.join(out, "ocsp-req.der"), os.path.join(out, "ocsp-resp.der")
        subprocess.run(["openssl", "ocsp", "-issuer", os.path.join(gen, "root.pem"), "-cert",
                        os.path.join(gen, "intermediate.pem"), "-reqout", req, "-no_nonce"],
                       check=True, capture_output=True)
        subprocess.run(["openssl", "ocsp", "-index", os.path.join(gen, "index_root.txt"), "-rsigner",
                        os.path.join(gen, "root.pem"), "-rkey", os.path.join(gen, "root.key.pem"), "-CA",
                        os.path.join(gen, "root.pem"), "-reqin", req, "-respout", resp, "-ndays", "1"],
                       check=True, capture_output=True)
        put("ocsp", open(resp, "rb").read())
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"seeds: no OCSP answer seed ({e})", file=sys.stderr)
    put("ocsp", b"\x30\x03\x0a\x01\x03")  # OCSPResponse { tryLater }
    counts = {t: len(os.listdir(d)) for t, d in dirs.items()}
    print("seeds: " + ", ".join(f"{t} {c}" for t, c in counts.items()))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    shutil.rmtree(sys.argv[3], ignore_errors=True)
    main(*sys.argv[1:])
