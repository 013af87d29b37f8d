#!/usr/bin/env python3
"""Writes a purchase ledger in 0.3.0's SQLite format (schema version 1), for the migration tests of every language.

The schema is read from Sources/AppStoreServer/Ledger/Storage/LedgerSchema.swift: its first migration is 0.3.0's
schema, kept verbatim (migrations are appended, never edited). Rows are what 0.3.0 stored: kind, payload_sha256 (the
SHA-256 of the JWS payload's bytes), the JWS as received, signed_date and received_at; the readable tables are
left empty (the state is rebuilt from `events` alone, and a newer version's migration does not need them).

    python3 Tests/support/ledger030.py OUT.db < values.jsonl     # lines: {"kind": "TRANSACTION", "signed": "..."}

postgres_schema_v1() gives the PostgreSQL side's 0.3.0 schema the same way (PostgresLedgerStore.swift).
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
import sys
import textwrap
from pathlib import Path

STORAGE = Path(__file__).resolve().parents[2] / "Sources/AppStoreServer/Ledger/Storage"


def _first_migration(swift: str) -> str:
    text = (STORAGE / swift).read_text()
    start = text.index('"""', text.index("static let migrations")) + 3
    end = text.index('"""', start)
    return textwrap.dedent(text[start:end].strip("\n"))


def schema_version() -> int:
    """The SQLite schema version this source writes: the number of migrations in LedgerSchema.swift."""
    text = (STORAGE / "LedgerSchema.swift").read_text()
    start = text.index("static let migrations")
    return text[start:text.index("static var version", start)].count('"""') // 2


def schema_v1() -> str:
    """0.3.0's SQLite schema (LedgerSchema.swift's first migration)."""
    return _first_migration("LedgerSchema.swift")


def postgres_schema_v1(schema: str = "appstore_ledger") -> str:
    """0.3.0's PostgreSQL schema (PostgresLedgerStore.swift's first migration) in `schema`, at version 1."""
    return (_first_migration("PostgresLedgerStore.swift").replace("appstore_ledger", schema)
            + f"\nUPDATE {schema}.schema_version SET version = 1;")


def _payload(signed: str) -> bytes:
    p = signed.split(".")[1]
    return base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))


def write(path: str | Path, values: list[tuple[str, str]], received_at: int = 1) -> None:
    """A 0.3.0 ledger at `path` holding `values` ((kind, compact JWS) pairs), as 0.3.0 stored them."""
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("BEGIN")
        for statement in _statements(schema_v1()):  # one by one: executescript would commit the transaction
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
        for kind, signed in values:
            payload = _payload(signed)
            signed_date = json.loads(payload).get("signedDate")
            db.execute("INSERT OR IGNORE INTO events (kind, payload_sha256, signed, signed_date, received_at) "
                       "VALUES (?, ?, ?, ?, ?)", (kind, hashlib.sha256(payload).hexdigest(), signed,
                                                  int(signed_date) if signed_date is not None else None, received_at))
        db.execute("COMMIT")
    finally:
        db.close()


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in re.split(r";\s*\n", sql) if s.strip()]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in sys.stdin if line.strip()]
    write(sys.argv[1], [(r["kind"], r["signed"]) for r in rows])
