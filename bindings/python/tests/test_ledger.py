"""The purchase ledger from Python (appstoreserver.ledger) over Tests/support/lifecycles.py's signed lifecycles:

- every expectation of the hand-written scenarios (written there from Apple's documentation, never from the ledger's
  output), for each delivery it holds for: the notifications, the history catch-up, both;
- the oracle: zero disagreements over every scenario and random lifecycle;
- idempotence (everything again: stored False, nothing changed), order independence (reversed and shuffled);
- refused input (forged, tampered, wrong bundle, wrong environment, malformed, wrong kind, oversized): the verifier's
  VerificationException with its status and reason, the ledger unchanged;
- arguments, closing, reopening a database, threads sharing one ledger.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.ledger import Ledger, LedgerError
from appstoreserver.models.Environment import Environment
from appstoreserver.models.LedgerCustomer import LedgerCustomer
from appstoreserver.models.LedgerEntitlementReason import LedgerEntitlementReason
from appstoreserver.models.LedgerEventKind import LedgerEventKind
from appstoreserver.models.LedgerSubscription import LedgerSubscription
from appstoreserver.models.Status import Status
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException
from conftest import SUPPORT, get_testpki_dir

_docs: List[Dict[str, Any]] = []


def lifecycles() -> Dict[str, Any]:
    """lifecycles.json, generated once per run over the run's test PKI (at collection: the scenario list is fixed)."""
    if not _docs:
        out = Path(tempfile.mkdtemp(prefix="appstoreserver-lifecycles-"))
        r = subprocess.run([sys.executable, str(SUPPORT / "lifecycles.py"), str(get_testpki_dir()), str(out)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"lifecycles.py failed:\n{r.stdout}\n{r.stderr}")
        _docs.append(json.loads((out / "lifecycles.json").read_text(encoding="utf-8")))
    return _docs[0]


SCENARIOS = {s["name"]: s for s in lifecycles()["scenarios"]}
DELIVERIES = ("notifications", "history", "both")
SKIP = {"at", "asOf", "subscription", "customer", "rule", "deliveries"}
BITEMPORAL = {s["name"]: s for s in lifecycles()["bitemporal"]}


@pytest.fixture(scope="module")
def verifier() -> SignedDataVerifier:
    root = (get_testpki_dir() / "root.der").read_bytes()
    doc = lifecycles()
    return SignedDataVerifier([root], False, Environment.SANDBOX, doc["bundleId"])


def signed(lifecycle: Dict[str, Any], delivery: str) -> List[Tuple[str, str]]:
    """A lifecycle's signed values for one delivery, as (kind, jws)."""
    out: List[Tuple[str, str]] = []
    if delivery != "history":
        out += [("NOTIFICATION", n["signed"]) for n in lifecycle["notifications"]]
    if delivery != "notifications":
        h = lifecycle["history"]
        out += [("TRANSACTION", t) for page in h["pages"] for t in page["signedTransactions"]]
        out += [("RENEWAL_INFO", r) for r in h["signedRenewalInfos"]]
    return out


def ingest(ledger: Ledger, kind: str, jws: str) -> Any:
    if kind == "TRANSACTION":
        return ledger.ingest_transaction(jws)
    if kind == "RENEWAL_INFO":
        return ledger.ingest_renewal_info(jws)
    return ledger.ingest_notification(jws)


def mismatches(answer: Optional[Dict[str, Any]], want: Dict[str, Any]) -> List[str]:
    """The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId)."""
    if answer is None:
        return ["no answer (unknown)"]
    problems = []
    for key, w in want.items():
        if key in SKIP:
            continue
        got = answer.get(key)
        if w == "absent":
            if key in answer:
                problems.append(f"{key}: expected absent, got {got!r}")
        elif isinstance(w, list):
            if not isinstance(got, list) or len(got) != len(w):
                problems.append(f"{key}: expected {len(w)} entries, got {got!r}")
                continue
            for x in w:
                same = [g for g in got if g.get("productId") == x.get("productId")]
                if not same:
                    problems.append(f"{key}: no entry for {x.get('productId')}")
                for g in same:
                    problems += [f"{key}[{x.get('productId')}].{p}" for p in mismatches(g, x)]
        elif got != w:
            problems.append(f"{key}: expected {w!r}, got {got!r}")
    return problems


def answer_for(ledger: Ledger, e: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The answer an expectation is about; its "asOf": absent = the default (now), "now" = the current time given
    explicitly (as a datetime), a number = that knowledge time."""
    if e.get("asOf") == "now":
        kw: Dict[str, Any] = {"as_of": datetime.now(timezone.utc)}
    elif "asOf" in e:
        kw = {"as_of": e["asOf"]}
    else:
        kw = {}
    if "subscription" in e:
        s = ledger.subscription(e["subscription"], at=e["at"], **kw)
        return None if s is None else s.to_dict()
    return ledger.customer(e["customer"], at=e["at"], **kw).to_dict()


def applies(e: Dict[str, Any], delivery: str, history_date: int) -> bool:
    deliveries = e.get("deliveries") or (list(DELIVERIES) if e["at"] >= history_date else ["notifications", "both"])
    return delivery in deliveries


# ---- Apple's documented states --------------------------------------------------------------------------------


@pytest.mark.parametrize("delivery", DELIVERIES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_apples_documentation(verifier: SignedDataVerifier, tmp_path: Path, name: str,
                                               delivery: str) -> None:
    scenario = SCENARIOS[name]
    with Ledger.open(f"sqlite:{tmp_path / 'ledger.db'}", verifier) as ledger:
        for kind, jws in signed(scenario, delivery):
            r = ingest(ledger, kind, jws)
            assert r.stored is True and r.kind == LedgerEventKind(kind)
            if r.appleStatus is not None:  # the oracle, per notification
                assert r.agrees is True, f"{name}: {r}"
        checked = 0
        failures = []
        for e in scenario["expect"]:
            if not applies(e, delivery, scenario["historyDate"]):
                continue
            checked += 1
            failures += [f"at {e['at']} ({e['rule']}): {p}" for p in mismatches(answer_for(ledger, e), e)]
        assert not failures, "\n".join(failures)
        if delivery != "history":
            assert checked > 0
            assert ledger.summary().disagreements == []


@pytest.mark.parametrize("delivery", DELIVERIES)
@pytest.mark.parametrize("name", sorted(BITEMPORAL))
def test_bitemporal(verifier: SignedDataVerifier, name: str, delivery: str) -> None:
    """docs/ledger.md, "Bitemporal queries": a refund signed three days after its revocationDate, a backfill signed
    months after the purchases, a billing failure signed after the period ended; asked now (the default, and the
    current time given explicitly) and as known then (as_of = at)."""
    lifecycle = BITEMPORAL[name]
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        for kind, jws in signed(lifecycle, delivery):
            ingest(ledger, kind, jws)
        wanted = [e for e in lifecycle["expect"] if delivery in e["deliveries"]]
        failures = [f"at {e['at']} as of {e.get('asOf', 'default')} ({e['rule']}): {p}"
                    for e in wanted for p in mismatches(answer_for(ledger, e), e)]
        assert not failures, "\n".join(failures)
        assert wanted and ledger.summary().disagreements == []
        knowledge = {"now" if e.get("asOf") == "now" else "instant" if "asOf" in e else "default" for e in wanted}
        assert "default" in knowledge  # every lifecycle is asked now by default in every delivery


def test_bitemporal_arguments(verifier: SignedDataVerifier) -> None:
    lifecycle = BITEMPORAL["bitemporal-refund-signed-late"]
    sub = next(e for e in lifecycle["expect"] if "subscription" in e)
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        for kind, jws in signed(lifecycle, "notifications"):
            ingest(ledger, kind, jws)
        for bad in (-5, 0):
            with pytest.raises(ValueError, match="as_of"):
                ledger.subscription(sub["subscription"], at=sub["at"], as_of=bad)
            with pytest.raises(ValueError, match="as_of"):
                ledger.customer("x", as_of=bad)
        with pytest.raises(TypeError, match="as_of"):
            ledger.customer("x", as_of="yesterday")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            ledger.customer("x", sub["at"], sub["at"])  # type: ignore[call-arg]  # keyword only: never a swapped time
        # as_of before at is a question of its own (what was believed then about a later instant): the REFUND,
        # signed three days after the revocation, is unknown two days before `at`, and the period is ahead (S2).
        s = ledger.subscription(sub["subscription"], at=sub["at"], as_of=sub["at"] - 2 * 86_400_000)
        assert s is not None and s.status == Status.ACTIVE and s.entitled is True and s.revocationDate is None
        # datetimes work as for `at`; the default equals as_of=now in whole answers
        at = datetime.fromtimestamp(sub["at"] / 1000, tz=timezone.utc)
        assert (ledger.subscription(sub["subscription"], at=at).to_dict()
                == ledger.subscription(sub["subscription"], at=at, as_of=datetime.now(timezone.utc)).to_dict())


def test_oracle_agrees_with_apple_on_every_lifecycle(verifier: SignedDataVerifier) -> None:
    doc = lifecycles()
    everything = doc["scenarios"] + doc["random"]
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        stored = sum(ingest(ledger, k, j).stored for lc in everything for k, j in signed(lc, "both"))
        summary = ledger.summary()
    assert summary.disagreements == []
    assert summary.checkedNotifications is not None and summary.checkedNotifications > 300
    assert summary.events == stored
    assert summary.notifications == sum(len(lc["notifications"]) for lc in everything)


# ---- properties -----------------------------------------------------------------------------------------------


def _all_answers(ledger: Ledger, scenarios: List[Dict[str, Any]]) -> List[Optional[Dict[str, Any]]]:
    return [answer_for(ledger, e) for s in scenarios for e in s["expect"]]


def test_idempotent(verifier: SignedDataVerifier) -> None:
    doc = lifecycles()
    values = [v for lc in doc["scenarios"] + doc["random"][:5] for v in signed(lc, "both")]
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        for k, j in values:
            ingest(ledger, k, j)
        summary = ledger.summary().to_dict()
        answers = _all_answers(ledger, doc["scenarios"])
        again = [ingest(ledger, k, j) for k, j in values]
        assert [r.stored for r in again] == [False] * len(values)
        assert ledger.summary().to_dict() == summary
        assert _all_answers(ledger, doc["scenarios"]) == answers


def test_order_independent(verifier: SignedDataVerifier) -> None:
    doc = lifecycles()
    values = [v for lc in doc["scenarios"] for v in signed(lc, "both")]
    results = []
    for order in ("as delivered", "reversed", "shuffled"):
        vs = list(values)
        if order == "reversed":
            vs.reverse()
        elif order == "shuffled":
            random.Random(21).shuffle(vs)
        with Ledger.open("sqlite::memory:", verifier) as ledger:
            for k, j in vs:
                ingest(ledger, k, j)
            results.append((ledger.summary().to_dict(), _all_answers(ledger, doc["scenarios"])))
    assert results[1] == results[0]
    assert results[2] == results[0]


# ---- refused input --------------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_the_verifiers_reason(verifier: SignedDataVerifier) -> None:
    doc = lifecycles()
    first = doc["scenarios"][0]
    customer = next(e["customer"] for e in first["expect"] if "customer" in e)
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        for k, j in signed(first, "both"):
            ingest(ledger, k, j)
        before = (ledger.summary().to_dict(), ledger.customer(customer, at=1_900_000_000_000).to_dict())
        assert len(doc["bad"]) >= 9
        for bad in doc["bad"]:
            jws = "a" * bad["oversizedBytes"] if bad.get("oversizedBytes") else bad["signed"]
            with pytest.raises(VerificationException) as caught:
                ingest(ledger, bad["kind"], jws)
            x = caught.value
            assert x.appstore_status == AppStoreStatus[bad["status"]], f"{bad['name']}: {x!r}"
            assert x.reason == FailureReason[bad["reason"].upper()], f"{bad['name']}: {x!r}"
            assert x.message
        after = (ledger.summary().to_dict(), ledger.customer(customer, at=1_900_000_000_000).to_dict())
        assert after == before


def test_the_verifiers_identity_decides(tmp_path: Path) -> None:
    """A ledger whose verifier is for another app refuses every value with the verifier's reason."""
    root = (get_testpki_dir() / "root.der").read_bytes()
    other = SignedDataVerifier([root], False, Environment.SANDBOX, "com.example.other")
    jws = SCENARIOS["renewals-voluntary-expiry"]["notifications"][0]["signed"]
    with Ledger.open("sqlite::memory:", other) as ledger:
        with pytest.raises(VerificationException) as caught:
            ledger.ingest_notification(jws)
        assert caught.value.reason == FailureReason.WRONG_BUNDLE
        assert ledger.summary().events == 0


# ---- the surface ----------------------------------------------------------------------------------------------


def test_results_are_the_generated_models(verifier: SignedDataVerifier) -> None:
    s = SCENARIOS["renewals-voluntary-expiry"]
    e = next(x for x in s["expect"] if "subscription" in x and x.get("status") == 1)
    c = next(x for x in s["expect"] if "customer" in x and x.get("entitlements"))
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        r = ledger.ingest_notification(s["notifications"][0]["signed"])
        assert r.kind == LedgerEventKind.NOTIFICATION and r.notificationUUID
        for k, j in signed(s, "both"):
            ingest(ledger, k, j)
        sub = ledger.subscription(e["subscription"], at=e["at"])
        assert isinstance(sub, LedgerSubscription) and sub.status == Status.ACTIVE and sub.entitled is True
        cust = ledger.customer(c["customer"], at=c["at"])
        assert isinstance(cust, LedgerCustomer) and cust.entitlements
        assert cust.entitlements[0].reason in (LedgerEntitlementReason.ACTIVE,
                                               LedgerEntitlementReason.BILLING_GRACE_PERIOD)
        # at: milliseconds or a datetime (naive = UTC), the same instant
        when = datetime.fromtimestamp(c["at"] / 1000, tz=timezone.utc)
        assert ledger.customer(c["customer"], at=when).to_dict() == cust.to_dict()
        assert ledger.customer(c["customer"], at=when.replace(tzinfo=None)).to_dict() == cust.to_dict()
        # a token in any case
        assert ledger.customer(c["customer"].upper(), at=c["at"]).to_dict()["entitlements"] == \
            cust.to_dict()["entitlements"]
        # now
        assert ledger.customer(c["customer"]).at is not None
        assert ledger.subscription("no-such-subscription") is None
        unknown = ledger.customer("no-such-customer")
        assert unknown.entitlements == [] and unknown.subscriptions == [] and unknown.purchases == []


def test_arguments(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    for url in ("mysql://localhost/x", str(tmp_path / "no-scheme.db"), "sqlite:"):
        with pytest.raises(ValueError):
            Ledger.open(url, verifier)
    with pytest.raises(TypeError):
        Ledger.open(42, verifier)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Ledger.open("sqlite::memory:", "not a verifier")  # type: ignore[arg-type]
    with pytest.raises(LedgerError) as caught:
        Ledger.open("sqlite:/nonexistent-dir/a/b.db", verifier)
    assert caught.value.appstore_status == AppStoreStatus.STORAGE_ERROR and caught.value.message
    with pytest.raises(ValueError):
        Ledger.open("sqlite::memory:", SignedDataVerifier([], False, Environment.SANDBOX, "com.example.app"))
    ledger = Ledger.open("sqlite::memory:", verifier)
    assert ledger.url == "sqlite::memory:" and ledger.verifier is verifier
    with pytest.raises(TypeError):
        ledger.ingest_notification(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ledger.customer(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ledger.subscription("1", at="yesterday")  # type: ignore[arg-type]
    for at in (-5, 0):
        with pytest.raises(ValueError):
            ledger.subscription("1", at=at)
    with pytest.raises(ValueError):
        ledger.customer("a\x00b")
    ledger.close()
    ledger.close()  # twice is fine
    with pytest.raises(ValueError):
        ledger.summary()
    with pytest.raises(ValueError):
        ledger.ingest_transaction("a.b.c")


def test_reopened_database_gives_the_same_answers(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    doc = lifecycles()
    url = f"sqlite://{tmp_path / 'ledger.db'}"
    with Ledger.open(url, verifier) as ledger:
        for lc in doc["scenarios"]:
            for k, j in signed(lc, "notifications"):
                ingest(ledger, k, j)
        summary = ledger.summary().to_dict()
        answers = _all_answers(ledger, doc["scenarios"])
        with Ledger.open(url, verifier) as second:  # another handle on the same file, while the first is open
            assert second.summary().to_dict() == summary
    with Ledger.open(url, verifier) as reopened:
        assert reopened.summary().to_dict() == summary
        assert _all_answers(reopened, doc["scenarios"]) == answers


def test_threads_share_one_ledger(verifier: SignedDataVerifier) -> None:
    doc = lifecycles()
    values = [v for lc in doc["random"][:16] for v in signed(lc, "both")]
    with Ledger.open("sqlite::memory:", verifier) as one:
        for k, j in values:
            ingest(one, k, j)
        expected = one.summary().to_dict()
    errors: List[BaseException] = []
    with Ledger.open("sqlite::memory:", verifier) as shared:
        def work(seed: int) -> None:
            try:
                vs = list(values)
                random.Random(seed).shuffle(vs)
                for k, j in vs:
                    ingest(shared, k, j)
                    shared.summary()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert shared.summary().to_dict() == expected


# ---- identity, migration, re-verification, the oracle's verdicts (docs/ledger.md) ---------------------------------


def _bad(name: str) -> Tuple[str, str]:
    """A genuinely signed value of another app or environment (lifecycles.py's refused inputs), as (kind, jws)."""
    b = next(b for b in lifecycles()["bad"] if b["name"] == name)
    return b["kind"], b["signed"]


def _files(path: Path) -> List[Optional[bytes]]:
    return [p.read_bytes() if p.exists() else None for p in (path, Path(str(path) + "-wal"))]


def _expect_mismatch(url: str, v: SignedDataVerifier, mentions: str) -> None:
    with pytest.raises(LedgerError) as caught:
        Ledger.open(url, v)
    assert caught.value.appstore_status == AppStoreStatus.CONFIGURATION_ERROR, caught.value
    assert caught.value.reason == FailureReason.LEDGER_IDENTITY_MISMATCH, caught.value
    assert mentions in caught.value.message, caught.value.message


def test_a_ledger_is_bound_to_its_app_and_environment(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """A Sandbox ledger opened with a Production verifier, or with another app's: refused, nothing written."""
    root = (get_testpki_dir() / "root.der").read_bytes()
    bundle = lifecycles()["bundleId"]
    path = tmp_path / "ledger.db"
    with Ledger.open(f"sqlite:{path}", verifier) as ledger:
        for kind, jws in signed(SCENARIOS["renewals-voluntary-expiry"], "both"):
            ingest(ledger, kind, jws)
        events = ledger.summary().events
    before = _files(path)
    _expect_mismatch(f"sqlite:{path}", SignedDataVerifier([root], False, Environment.PRODUCTION, bundle, 1234), "Sandbox")
    _expect_mismatch(f"sqlite:{path}", SignedDataVerifier([root], False, Environment.SANDBOX, "com.example.other"),
                     "com.example.other")
    assert _files(path) == before
    with Ledger.open(f"sqlite:{path}", verifier) as ledger:
        assert ledger.summary().events == events


def test_a_030_ledger_is_migrated_in_place(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """A 0.3.0 file (Tests/support/ledger030.py, from that version's SQL): migrated, its identity from its events; one
    holding values of several apps or environments is refused with how to split it, and left as it was."""
    import sqlite3
    import ledger030
    values = signed(SCENARIOS["renewals-voluntary-expiry"], "both")
    path = tmp_path / "old.db"
    ledger030.write(path, values)
    with Ledger.open(f"sqlite:{path}", verifier) as ledger:
        assert ledger.summary().events == len({j for _, j in values})
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA user_version").fetchone()[0] == ledger030.schema_version()  # every migration applied
    assert db.execute("SELECT count(*) FROM events WHERE environment = 'Sandbox' AND bundle_id = ?",
                      (lifecycles()["bundleId"],)).fetchone()[0] == len({j for _, j in values})
    db.close()

    mixed = tmp_path / "mixed.db"
    ledger030.write(mixed, values + [_bad("wrong-environment")])
    before = _files(mixed)
    _expect_mismatch(f"sqlite:{mixed}", verifier, "Split it")
    assert _files(mixed) == before


def test_reverify(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """Every stored value verified again: all pass with the ledger's verifier; with one of the same identity that
    trusts Apple's root instead of the test PKI's, every one is refused (untrusted_chain)."""
    from appstoreserver.roots import apple_root_certificates
    path = tmp_path / "ledger.db"
    with Ledger.open(f"sqlite:{path}", verifier) as ledger:
        for kind, jws in signed(SCENARIOS["renewals-voluntary-expiry"], "both"):
            ingest(ledger, kind, jws)
        n = ledger.summary().events
        result = ledger.reverify()
        assert (result.checked, result.refused) == (n, [])
    apple = SignedDataVerifier(apple_root_certificates(), False, Environment.SANDBOX, lifecycles()["bundleId"])
    with Ledger.open(f"sqlite:{path}", apple) as ledger:
        result = ledger.reverify()
        assert result.checked == n and len(result.refused) == n
        assert {r.reason for r in result.refused} == {"untrusted_chain"}
        assert {r.status for r in result.refused} == {"VERIFICATION_FAILURE"}


def test_a_fresh_ledgers_first_renewal_is_incomplete_history(conformance: Path) -> None:
    """Real Apple data: the 2025-10-01 Sandbox DID_RENEW is signed 33 s before its new period's purchaseDate, so a
    ledger that never saw the previous period knows no transaction at its signedDate. Apple's data.status is 1 (a
    renewal is ACTIVE, apple-lifecycle.md section 1-2); that is missing history, not a contradiction."""
    from appstoreserver.models.LedgerOracleVerdict import LedgerOracleVerdict
    from appstoreserver.roots import apple_root_certificates
    jws = (conformance / "real/jws/sandbox-notification-did-renew-2025-10-01.jws").read_text().strip()
    v = SignedDataVerifier(apple_root_certificates(), False, Environment.SANDBOX, "com.loki-project.loki-messenger")
    with Ledger.open("sqlite::memory:", v) as ledger:
        r = ledger.ingest_notification(jws)
        assert r.appleStatus == Status.ACTIVE
        assert r.agrees is False
        assert r.verdict == LedgerOracleVerdict.INCOMPLETE_HISTORY
        assert r.missing and "catch-up" in r.missing
        assert ledger.summary().contradictions == 0
        again = ledger.ingest_notification(jws)
        assert again.stored is False and again.verdict == LedgerOracleVerdict.INCOMPLETE_HISTORY
        summary = ledger.summary()  # counted once, listed with what is missing
        assert (summary.contradictions, summary.incompleteHistories) == (0, 1)
        assert [d.verdict for d in summary.disagreements] == [LedgerOracleVerdict.INCOMPLETE_HISTORY]
        page = ledger.disagreements(limit=1)  # the same one, and no page after it
        assert page.disagreements == summary.disagreements and page.next is None


def test_disagreements_a_page_at_a_time_arguments(verifier: SignedDataVerifier) -> None:
    """Ledger.disagreements (C: appstore_ledger_query_disagreements): an empty ledger's one page, and the arguments
    refused as Python refuses them (the pages themselves: Swift's LedgerOracleVerdictTests, the tool's tests)."""
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        page = ledger.disagreements()
        assert page.disagreements == [] and page.next is None
        assert ledger.disagreements(after="", limit=10000).disagreements == []
        with pytest.raises(ValueError, match="not a cursor"):
            ledger.disagreements(after="CONTRADICTION:soon:x")
        for bad in (0, 10001):
            with pytest.raises(ValueError, match="limit"):
                ledger.disagreements(limit=bad)
        with pytest.raises(TypeError, match="after"):
            ledger.disagreements(after=5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="limit"):
            ledger.disagreements(limit="10")  # type: ignore[arg-type]


def _payload(jws: str) -> Dict[str, Any]:
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_subscription_and_customer_ids_a_page_at_a_time(verifier: SignedDataVerifier) -> None:
    """Ledger.subscription_ids / customer_ids (C: appstore_ledger_query_subscription_ids, _customer_ids): pages of any
    size hold every id once, in byte order, only the last without `next`; expected from the transactions' own
    payloads (a subscription is an auto-renewable originalTransactionId; a customer is the appAccountToken in
    lowercase, else the originalTransactionId)."""
    doc = lifecycles()
    values = [j for lc in doc["scenarios"] for k, j in signed(lc, "history") if k == "TRANSACTION"]
    payloads = [_payload(j) for j in values]
    subscriptions = sorted({p["originalTransactionId"] for p in payloads if p["type"] == "Auto-Renewable Subscription"},
                           key=lambda x: x.encode())
    customers = sorted({(p.get("appAccountToken") or "").lower() or p["originalTransactionId"] for p in payloads},
                       key=lambda x: x.encode())
    assert len(subscriptions) > 5 and len(customers) > 5
    with Ledger.open("sqlite::memory:", verifier) as ledger:
        assert ledger.subscription_ids().ids == [] and ledger.subscription_ids().next is None
        for j in values:
            ledger.ingest_transaction(j)
        for read, want in ((ledger.subscription_ids, subscriptions), (ledger.customer_ids, customers)):
            for limit in (1, 4, len(want), 10000):
                got: List[str] = []
                after: Optional[str] = None
                while True:
                    page = read(after=after, limit=limit)
                    assert len(page.ids) == limit or page.next is None
                    got += page.ids
                    if page.next is None:
                        break
                    assert page.next == page.ids[-1]
                    after = page.next
                assert got == want, limit
            assert read(after="", limit=2).ids == want[:2]
            assert read(after=want[-1]).ids == []
        for bad in (0, 10001):
            with pytest.raises(ValueError, match="limit"):
                ledger.customer_ids(limit=bad)
        with pytest.raises(TypeError, match="after"):
            ledger.subscription_ids(after=5)  # type: ignore[arg-type]


# ---- bulk import (docs/ledger.md, "Bulk import") ---------------------------------------------------------------


def test_import_jsonl(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """Every line format; bad lines listed with their line numbers (expected from the file written here); a second
    run stores nothing twice; the same ledger answers as one fed value by value."""
    values = [v for s in SCENARIOS.values() for v in signed(s, "both")]
    member = {"NOTIFICATION": "notification", "TRANSACTION": "transaction", "RENEWAL_INFO": "renewalInfo"}
    lines = [json.dumps({member[k]: j}) for k, j in values]
    lines.insert(3, "not json {")
    lines.insert(7, json.dumps({"transaction": 42}))
    lines.insert(9, "")  # skipped
    lines.insert(11, json.dumps({"signedPayload": values[0][1]}))  # the same payload again
    bad = {4: "malformed", 8: "malformed"}
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    distinct = len({j for _, j in values})
    with Ledger.open(f"sqlite:{tmp_path / 'ledger.db'}", verifier) as ledger:
        r = ledger.import_jsonl(path, batch_size=5)
        assert r.read == len(lines) - 1
        assert r.stored == distinct
        assert r.alreadyPresent == len(values) + 1 - distinct
        assert r.refusedCount == 2
        assert {x.line: x.reason for x in r.refused} == bad
        again = ledger.import_jsonl(str(path))
        assert (again.stored, again.alreadyPresent, again.refusedCount) == (0, len(values) + 1, 2)
        assert ledger.summary().events == distinct
        with Ledger.open("sqlite::memory:", verifier) as fed:  # the same values given one by one
            for k, j in values:
                ingest(fed, k, j)
            assert fed.summary() == ledger.summary()
            ids = fed.customer_ids(limit=10000).ids
            assert ids and all(fed.customer(c, at=1_800_000_000_000) == ledger.customer(c, at=1_800_000_000_000) for c in ids)
        with pytest.raises(ValueError):
            ledger.import_jsonl(tmp_path / "missing.jsonl")
        with pytest.raises(TypeError):
            ledger.import_jsonl(42)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            ledger.import_jsonl(path, batch_size=-1)


# ---- export (docs/ledger.md, "Export") ---------------------------------------------------------------------------


def test_export_jsonl(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """Every stored value exactly once, byte for byte as given, in import's format; imported into a new ledger it is
    the same ledger (its summary and every customer's answer); the file replaces an older one, mode 0600."""
    values = [v for s in list(SCENARIOS.values())[:6] for v in signed(s, "both")]
    member = {"NOTIFICATION": "notification", "TRANSACTION": "transaction", "RENEWAL_INFO": "renewalInfo"}
    out = tmp_path / "export.jsonl"
    out.write_text("an older export\n")
    with Ledger.open(f"sqlite:{tmp_path / 'a.db'}", verifier) as a, Ledger.open(f"sqlite:{tmp_path / 'b.db'}", verifier) as b:
        stored = [(k, j) for k, j in values + values[:4] if ingest(a, k, j).stored]
        r = a.export_jsonl(out)
        assert (r.exported, r.notifications, r.transactions, r.renewalInfos) == (
            len(stored), *(sum(1 for k, _ in stored if k == kind) for kind in ("NOTIFICATION", "TRANSACTION", "RENEWAL_INFO")))
        assert out.read_text(encoding="utf-8").splitlines() == [json.dumps({member[k]: j}, separators=(",", ":")) for k, j in stored]
        assert out.stat().st_mode & 0o777 == 0o600
        assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []
        i = b.import_jsonl(str(out))
        assert (i.stored, i.refusedCount) == (len(stored), 0)
        assert b.summary() == a.summary()
        ids = a.customer_ids(limit=10000).ids
        assert ids and all(b.customer(c, at=1_800_000_000_000) == a.customer(c, at=1_800_000_000_000) for c in ids)
        with pytest.raises(ValueError, match="cannot create the export file"):
            a.export_jsonl(tmp_path / "missing-dir" / "x.jsonl")
        with pytest.raises(TypeError):
            a.export_jsonl(42)  # type: ignore[arg-type]


EXPORT_CHILD = """
import resource, signal, sys
from appstoreserver.ledger import Ledger, LedgerError
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier
url, out, root, bundle = sys.argv[1:5]
ledger = Ledger.open(url, SignedDataVerifier([open(root, "rb").read()], False, Environment.SANDBOX, bundle))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # the export's file cannot grow past 4 KiB: a full disk
try:
    ledger.export_jsonl(out)
    print("exported")
except LedgerError as e:
    print(e.appstore_status.name, e.message)
"""


def test_export_on_a_full_disk_fails_and_leaves_the_old_file(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """A write that fails (the file size limit stands in for a full disk, EFBIG for ENOSPC) is STORAGE_ERROR; the
    older export at the path is untouched and no partial file is left."""
    from conftest import get_testpki_dir
    values = [v for s in list(SCENARIOS.values())[:3] for v in signed(s, "both")]
    url = f"sqlite:{tmp_path / 'a.db'}"
    with Ledger.open(url, verifier) as a:
        for k, j in values:
            ingest(a, k, j)
    out = tmp_path / "export.jsonl"
    out.write_text("an older export\n")
    r = subprocess.run([sys.executable, "-c", EXPORT_CHILD, url, str(out), str(get_testpki_dir() / "root.der"),
                        lifecycles()["bundleId"]], capture_output=True, text=True, timeout=120)
    assert r.stdout.startswith("STORAGE_ERROR cannot write the export file"), (r.stdout, r.stderr[-800:])
    assert out.read_text() == "an older export\n"
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []


def test_a_corrupt_row_is_a_storage_error_naming_it(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """A stored row whose text was damaged by other means (docs/ledger.md, "Storage layout"): the query that reads it
    is LedgerError STORAGE_ERROR naming the event, never a crash; the ledger's other answers stay available."""
    import sqlite3
    lc = SCENARIOS[next(iter(SCENARIOS))]
    db = tmp_path / "ledger.db"
    with Ledger.open(f"sqlite:{db}", verifier) as ledger:
        for k, j in signed(lc, "both"):
            ingest(ledger, k, j)
        customers = ledger.customer_ids().ids
    assert len(customers) == 1
    with sqlite3.connect(str(db)) as c:
        victim = c.execute("SELECT min(event_id) FROM event_keys WHERE kind = 'c'").fetchone()[0]
        c.execute("UPDATE events SET signed = 'not a stored value' WHERE id = ?", (victim,))
    with Ledger.open(f"sqlite:{db}", verifier) as ledger:
        with pytest.raises(LedgerError) as e:
            ledger.customer(customers[0])
        assert e.value.appstore_status == AppStoreStatus.STORAGE_ERROR and f"event {victim}" in e.value.message, e.value
        assert ledger.summary().events > 0  # counts are still read


def test_cache_size_out_of_range_is_refused(verifier: SignedDataVerifier, tmp_path: Path) -> None:
    """?cache_mib= (docs/ledger.md, "Queries"): 0 to 65536; anything else is refused naming the parameter."""
    for bad in ("-1", "65537", "lots"):
        with pytest.raises(ValueError, match="cache_mib"):
            Ledger.open(f"sqlite:{tmp_path / 'c.db'}?cache_mib={bad}", verifier)
    with Ledger.open(f"sqlite:{tmp_path / 'c.db'}?cache_mib=0", verifier) as ledger:
        assert ledger.summary().events == 0
