"""The ledger's test values, shared by the Python scripts that drive the ledger through the Python binding
(Tests/capi/ledger_postgresql.py, Tests/capi/ledger_scale.py, benchmarks/lib/ledger_scale.py): every signed value of
lifecycles.py's output, a JWS's payload, and a ledger opened with the test PKI's verifier."""

import base64
import json
import os


def values_of(doc):
    """(kind, jws) of every scenario's and random lifecycle's notifications, history transactions and renewal infos."""
    out = []
    for lc in doc["scenarios"] + doc["random"]:
        out += [("NOTIFICATION", n["signed"]) for n in lc["notifications"]]
        out += [("TRANSACTION", t) for p in lc["history"]["pages"] for t in p["signedTransactions"]]
        out += [("RENEWAL_INFO", r) for r in lc["history"]["signedRenewalInfos"]]
    return out


def payload(jws):
    """A JWS's payload, decoded (not verified)."""
    seg = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def open_ledger(url, pki):
    """The ledger at `url` with a verifier of the test PKI in `pki` (Sandbox, com.example.testpki)."""
    from appstoreserver.ledger import Ledger
    from appstoreserver.models.Environment import Environment
    from appstoreserver.signed_data_verifier import SignedDataVerifier
    with open(os.path.join(pki, "root.der"), "rb") as f:
        root = f.read()
    return Ledger.open(url, SignedDataVerifier([root], False, Environment.SANDBOX, "com.example.testpki"))
