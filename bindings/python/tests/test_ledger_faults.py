"""The ledger under a full disk: no acknowledgement without durability, and a consistent ledger after.

A child process ingests with its file size limit (RLIMIT_FSIZE) just above the database's size, so SQLite's writes
fail the way they do on a full disk (EFBIG instead of ENOSPC: the same write(2) failure, and no root or mount needed);
SIGXFSZ is ignored so the write returns the error instead of killing the process. The child prints, per value, whether
it was acknowledged. The parent then reopens the file without the limit and checks what the docs promise
(docs/ledger.md, "Crash test"): every acknowledged value is there (giving it again stores nothing), the database
passes SQLite's integrity check, and the values that were refused can be given again and are stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

from appstoreserver.ledger import Ledger

from test_ledger import ingest, lifecycles, signed, verifier  # noqa: F401 (verifier: the module's fixture)

CHILD = textwrap.dedent("""
    import json, resource, signal, sys
    from appstoreserver.ledger import Ledger, LedgerError
    from appstoreserver.models.Environment import Environment
    from appstoreserver.signed_data_verifier import SignedDataVerifier
    url, limit, values, root, bundle = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    values = json.load(open(values))
    v = SignedDataVerifier([open(root, "rb").read()], False, Environment.SANDBOX, bundle)
    ledger = Ledger.open(url, v)  # before the limit: opening may write (the WAL, the shared-memory index)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for i, (kind, jws) in enumerate(values):
        try:
            {"TRANSACTION": ledger.ingest_transaction, "RENEWAL_INFO": ledger.ingest_renewal_info}.get(
                kind, ledger.ingest_notification)(jws)
            print(json.dumps({"i": i, "acked": True}), flush=True)
        except LedgerError as e:
            print(json.dumps({"i": i, "acked": False, "status": getattr(e.appstore_status, "name", str(e.appstore_status))}), flush=True)
""")


def _values() -> List[Tuple[str, str]]:
    doc = lifecycles()
    out: List[Tuple[str, str]] = []
    for lc in doc["scenarios"] + doc.get("random", []):
        out += signed(lc, "both")
    return out


def test_a_full_disk_acknowledges_nothing_and_leaves_a_consistent_ledger(verifier, tmp_path: Path) -> None:  # noqa: F811
    from conftest import get_testpki_dir
    values = _values()
    assert len(values) > 200, "too few values to fill the allowance"
    db = tmp_path / "ledger.db"
    url = f"sqlite://{db}"
    first, rest = values[:20], values[20:]
    with Ledger.open(url, verifier) as ledger:
        for k, j in first:
            ingest(ledger, k, j)
    # The allowance: a few values' worth above every file the database has now (the WAL included).
    size = max(p.stat().st_size for p in tmp_path.iterdir() if p.name.startswith("ledger.db"))
    limit = size + 48 * 1024
    (tmp_path / "values.json").write_text(json.dumps(rest))
    r = subprocess.run([sys.executable, "-c", CHILD, url, str(limit), str(tmp_path / "values.json"),
                        str(get_testpki_dir() / "root.der"), lifecycles()["bundleId"]],
                       capture_output=True, text=True, env=os.environ.copy())
    assert r.returncode == 0, f"the child failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    outcomes = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(outcomes) == len(rest)
    acked = [o["i"] for o in outcomes if o["acked"]]
    refused = [o for o in outcomes if not o["acked"]]
    # It can fail: a limit that did not bite (or a ledger that acknowledges without writing) shows here.
    assert refused, "no ingest failed: the file size limit never bit"
    assert {o["status"] for o in refused} == {"STORAGE_ERROR"}, refused[:3]

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    with Ledger.open(url, verifier) as ledger:
        for i in acked:  # every acknowledged value survived: giving it again stores nothing
            k, j = rest[i]
            assert ingest(ledger, k, j).stored is False, f"acknowledged value {i} ({k}) is missing"
        for o in refused:  # and the refused ones can be given again now that there is room
            k, j = rest[o["i"]]
            ingest(ledger, k, j)
        for i in acked:
            k, j = rest[i]
            assert ingest(ledger, k, j).stored is False
        distinct = {j for _, j in values}
        assert ledger.summary().to_dict()["events"] == len(distinct)
