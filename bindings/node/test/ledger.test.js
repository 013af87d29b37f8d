'use strict';
// The purchase ledger from Node (Ledger) over Tests/support/lifecycles.py's signed lifecycles:
// - every expectation of the hand-written scenarios (written there from Apple's documentation, never from the
//   ledger's output), for each delivery it holds for: the notifications, the history catch-up, both;
// - the oracle: zero disagreements over every scenario and random lifecycle;
// - idempotence (everything again: stored false, nothing changed), order independence (reversed, shuffled);
// - refused input (forged, tampered, wrong bundle, wrong environment, malformed, wrong kind, oversized): the
//   verifier's VerificationException with its status and reason, the ledger unchanged;
// - Promises off the event loop, concurrent calls on one ledger, arguments, closing, reopening a database.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const { isDeepStrictEqual } = require('util');
const lib = require('..');
const { fixture, testpki, tmpdir, SUPPORT, CONFORMANCE } = require('./helpers.js');
const { execFileSync } = require('child_process');

const { Ledger, SignedDataVerifier, VerificationException, AppStoreServerError, Environment } = lib;

let doc;
function lifecycles() {
  if (!doc) {
    const out = fixture('lifecycles.py', testpki(), '{out}');
    doc = JSON.parse(fs.readFileSync(path.join(out, 'lifecycles.json'), 'utf8'));
  }
  return doc;
}

function verifier(bundleId = lifecycles().bundleId) {
  const root = fs.readFileSync(path.join(testpki(), 'root.der'));
  return new SignedDataVerifier([root], false, Environment.SANDBOX, bundleId);
}

let dbs = 0;
const dbUrl = () => `sqlite:${path.join(tmpdir(), `ledger-${process.pid}-${++dbs}.db`)}`;

const DELIVERIES = ['notifications', 'history', 'both'];
const SKIP = new Set(['at', 'asOf', 'subscription', 'customer', 'rule', 'deliveries']);

/** A lifecycle's signed values for one delivery, as [kind, jws]. */
function signed(lc, delivery) {
  const out = [];
  if (delivery !== 'history') for (const n of lc.notifications) out.push(['NOTIFICATION', n.signed]);
  if (delivery !== 'notifications') {
    for (const page of lc.history.pages) for (const t of page.signedTransactions) out.push(['TRANSACTION', t]);
    for (const r of lc.history.signedRenewalInfos) out.push(['RENEWAL_INFO', r]);
  }
  return out;
}

function ingest(ledger, kind, jws) {
  if (kind === 'TRANSACTION') return ledger.ingestTransaction(jws);
  if (kind === 'RENEWAL_INFO') return ledger.ingestRenewalInfo(jws);
  return ledger.ingestNotification(jws);
}

async function ingestAll(ledger, values) {
  const results = [];
  for (const [k, j] of values) results.push(await ingest(ledger, k, j));
  return results;
}

/** The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId). */
function mismatches(answer, want) {
  if (answer === null || answer === undefined) return ['no answer (unknown)'];
  const problems = [];
  for (const [key, w] of Object.entries(want)) {
    if (SKIP.has(key)) continue;
    const got = answer[key];
    if (w === 'absent') {
      if (key in answer) problems.push(`${key}: expected absent, got ${JSON.stringify(got)}`);
    } else if (Array.isArray(w)) {
      if (!Array.isArray(got) || got.length !== w.length) {
        problems.push(`${key}: expected ${w.length} entries, got ${JSON.stringify(got)}`);
        continue;
      }
      for (const x of w) {
        const same = got.filter((g) => g.productId === x.productId);
        if (same.length === 0) problems.push(`${key}: no entry for ${x.productId}`);
        for (const g of same) problems.push(...mismatches(g, x).map((p) => `${key}[${x.productId}].${p}`));
      }
    } else if (!isDeepStrictEqual(got, w)) {
      problems.push(`${key}: expected ${JSON.stringify(w)}, got ${JSON.stringify(got)}`);
    }
  }
  return problems;
}
/** The answer an expectation is about; its asOf: absent = the default (now), "now" = the current time given
 * explicitly (a Date), a number = that knowledge time. */
function answerFor(ledger, e) {
  const asOf = e.asOf === 'now' ? new Date() : e.asOf;
  return 'subscription' in e ? ledger.subscription(e.subscription, e.at, asOf) : ledger.customer(e.customer, e.at, asOf);
}

function applies(e, delivery, historyDate) {
  const deliveries = e.deliveries || (e.at >= historyDate ? DELIVERIES : ['notifications', 'both']);
  return deliveries.includes(delivery);
}

async function allAnswers(ledger, scenarios) {
  const out = [];
  for (const s of scenarios) for (const e of s.expect) out.push(await answerFor(ledger, e));
  return out;
}

// ---- Apple's documented states ------------------------------------------------------------------------------

test('bitemporal queries: asked now (default and explicit) and as known then (docs/ledger.md)', async (t) => {
  const v = verifier();
  const lifecycles_ = lifecycles().bitemporal;
  assert.equal(lifecycles_.length, 3);
  let checked = 0;
  const knowledge = new Set();
  for (const s of lifecycles_) {
    for (const delivery of DELIVERIES) {
      await t.test(`${s.name} [${delivery}]`, async () => {
        const ledger = await Ledger.open('sqlite::memory:', v);
        try {
          await ingestAll(ledger, signed(s, delivery));
          const failures = [];
          for (const e of s.expect) {
            if (!e.deliveries.includes(delivery)) continue;
            checked++;
            knowledge.add(e.asOf === undefined ? 'default' : e.asOf === 'now' ? 'now' : 'instant');
            for (const p of mismatches(await answerFor(ledger, e), e)) failures.push(`at ${e.at} as of ${e.asOf} (${e.rule}): ${p}`);
          }
          assert.deepEqual(failures, []);
          assert.deepEqual((await ledger.summary()).disagreements, []);
          if (s.name === 'bitemporal-refund-signed-late' && delivery === 'notifications') {
            // asOf before at (what was believed then about a later instant): the REFUND signed later is unknown.
            const e = s.expect.find((x) => 'subscription' in x);
            const early = await ledger.subscription(e.subscription, e.at, e.at - 2 * 86400000);
            assert.equal(early.status, 1);
            assert.equal(early.revocationDate, undefined);
            // the default equals asOf = now in whole answers
            assert.deepEqual(await ledger.subscription(e.subscription, e.at), await ledger.subscription(e.subscription, e.at, Date.now()));
          }
        } finally {
          ledger.close();
        }
      });
    }
  }
  assert.ok(checked >= 20, `${checked} checked`);
  assert.deepEqual([...knowledge].sort(), ['default', 'instant', 'now']);
});

test('every scenario matches Apple\'s documentation, in every delivery', async (t) => {
  const v = verifier();
  const scenarios = lifecycles().scenarios;
  assert.ok(scenarios.length >= 13, `${scenarios.length} scenarios`);
  let checked = 0;
  for (const s of scenarios) {
    for (const delivery of DELIVERIES) {
      await t.test(`${s.name} [${delivery}]`, async () => {
        const ledger = await Ledger.open(dbUrl(), v);
        try {
          for (const [kind, jws] of signed(s, delivery)) {
            const r = await ingest(ledger, kind, jws);
            assert.equal(r.stored, true);
            assert.equal(r.kind, kind);
            if (r.appleStatus !== undefined) assert.equal(r.agrees, true, JSON.stringify(r));
          }
          const failures = [];
          for (const e of s.expect) {
            if (!applies(e, delivery, s.historyDate)) continue;
            checked++;
            for (const p of mismatches(await answerFor(ledger, e), e)) failures.push(`at ${e.at} (${e.rule}): ${p}`);
          }
          assert.deepEqual(failures, []);
          if (delivery !== 'history') assert.deepEqual((await ledger.summary()).disagreements, []);
        } finally {
          ledger.close();
        }
      });
    }
  }
  assert.ok(checked >= 100, `${checked} expectations checked`);
  v.close();
});

test('the oracle agrees with Apple\'s data.status on every lifecycle', async () => {
  const d = lifecycles();
  const everything = [...d.scenarios, ...d.random];
  const v = verifier();
  const ledger = await Ledger.open('sqlite::memory:', v);
  let stored = 0;
  for (const lc of everything) for (const r of await ingestAll(ledger, signed(lc, 'both'))) stored += r.stored ? 1 : 0;
  const summary = await ledger.summary();
  assert.deepEqual(summary.disagreements, []);
  assert.ok(summary.checkedNotifications > 300, JSON.stringify(summary));
  assert.equal(summary.events, stored);
  assert.equal(summary.notifications, everything.reduce((n, lc) => n + lc.notifications.length, 0));
  ledger.close();
  v.close();
});

// ---- properties ---------------------------------------------------------------------------------------------

test('idempotent: everything again is stored: false and changes nothing', async () => {
  const d = lifecycles();
  const values = [...d.scenarios, ...d.random.slice(0, 5)].flatMap((lc) => signed(lc, 'both'));
  const v = verifier();
  const ledger = await Ledger.open('sqlite::memory:', v);
  await ingestAll(ledger, values);
  const summary = await ledger.summary();
  const answers = await allAnswers(ledger, d.scenarios);
  const again = await ingestAll(ledger, values);
  assert.deepEqual(again.map((r) => r.stored), values.map(() => false));
  assert.deepEqual(await ledger.summary(), summary);
  assert.deepEqual(await allAnswers(ledger, d.scenarios), answers);
  ledger.close();
});

/** A seeded shuffle (mulberry32), so a failure repeats. */
function shuffled(values, seed) {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...values];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

test('order independent: reversed and shuffled deliveries give the same answers', async () => {
  const d = lifecycles();
  const values = d.scenarios.flatMap((lc) => signed(lc, 'both'));
  const v = verifier();
  const results = [];
  for (const vs of [values, [...values].reverse(), shuffled(values, 21)]) {
    const ledger = await Ledger.open('sqlite::memory:', v);
    await ingestAll(ledger, vs);
    results.push([await ledger.summary(), await allAnswers(ledger, d.scenarios)]);
    ledger.close();
  }
  assert.deepEqual(results[1], results[0]);
  assert.deepEqual(results[2], results[0]);
});

// ---- refused input ------------------------------------------------------------------------------------------

test('bad input is refused with the verifier\'s status and reason; the ledger is unchanged', async () => {
  const d = lifecycles();
  const first = d.scenarios[0];
  const customer = first.expect.find((e) => e.customer).customer;
  const v = verifier();
  const ledger = await Ledger.open('sqlite::memory:', v);
  await ingestAll(ledger, signed(first, 'both'));
  const before = [await ledger.summary(), await ledger.customer(customer, 1900000000000)];
  assert.ok(d.bad.length >= 9);
  for (const bad of d.bad) {
    const jws = bad.oversizedBytes ? 'a'.repeat(bad.oversizedBytes) : bad.signed;
    await assert.rejects(ingest(ledger, bad.kind, jws), (x) => {
      assert.ok(x instanceof VerificationException, `${bad.name}: ${x}`);
      assert.equal(x.libraryStatus, bad.status, `${bad.name}: ${x.message}`);
      assert.equal(x.reason, bad.reason, `${bad.name}: ${x.message}`);
      assert.equal(typeof x.status, 'number');
      assert.ok(x.message.length > 0);
      return true;
    });
  }
  assert.deepEqual([await ledger.summary(), await ledger.customer(customer, 1900000000000)], before);
  ledger.close();
});

test('a ledger over a verifier for another app refuses every value', async () => {
  const ledger = await Ledger.open('sqlite::memory:', verifier('com.example.other'));
  const jws = lifecycles().scenarios[0].notifications[0].signed;
  await assert.rejects(ledger.ingestNotification(jws), (x) => x instanceof VerificationException && x.reason === 'wrong_bundle');
  assert.equal((await ledger.summary()).events, 0);
  ledger.close();
});

// ---- the surface --------------------------------------------------------------------------------------------

test('answers: at as milliseconds or a Date, a token in any case, now, unknown ids', async () => {
  const s = lifecycles().scenarios[0];
  const c = s.expect.find((e) => e.customer && e.entitlements && e.entitlements.length);
  const ledger = Ledger.openSync('sqlite::memory:', verifier());
  assert.equal(ledger.url, 'sqlite::memory:');
  assert.ok(ledger.verifier instanceof SignedDataVerifier);
  await ingestAll(ledger, signed(s, 'both'));
  const byMs = await ledger.customer(c.customer, c.at);
  assert.deepEqual(await ledger.customer(c.customer, new Date(c.at)), byMs);
  assert.deepEqual(await ledger.customer(c.customer, BigInt(c.at)), byMs);
  assert.deepEqual((await ledger.customer(c.customer.toUpperCase(), c.at)).entitlements, byMs.entitlements);
  const now = await ledger.customer(c.customer);
  assert.ok(Math.abs(now.at - Date.now()) < 60000, `${now.at}`);
  assert.equal(await ledger.subscription('no-such-subscription'), null);
  const unknown = await ledger.customer('no-such-customer', null);
  assert.deepEqual([unknown.entitlements, unknown.subscriptions, unknown.purchases], [[], [], []]);
  ledger.close();
});

test('Promises: the event loop keeps running while ingests wait for the disk; concurrent calls on one ledger', async () => {
  const d = lifecycles();
  const values = d.random.slice(0, 12).flatMap((lc) => signed(lc, 'both'));
  const v = verifier();
  const reference = await Ledger.open('sqlite::memory:', v);
  await ingestAll(reference, values);
  const expected = await reference.summary();
  reference.close();

  const ledger = await Ledger.open(dbUrl(), v); // a file: every ingest waits for its fsync
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const p = ingest(ledger, ...values[0]);
  assert.ok(p instanceof Promise);
  // Four shuffled copies at once: every value ingested four times, from several pool threads.
  const all = [p, ...[1, 2, 3, 4].flatMap((seed) => shuffled(values, seed).map(([k, j]) => ingest(ledger, k, j)))];
  const results = await Promise.all(all);
  clearInterval(timer);
  assert.ok(ticks > 0, 'the event loop ran while the ingests were in flight');
  assert.equal(results.filter((r) => r.stored).length, values.length);
  assert.deepEqual(await ledger.summary(), expected);
  ledger.close();
});

test('arguments, closing', async () => {
  const v = verifier();
  for (const url of ['mysql://localhost/x', path.join(tmpdir(), 'no-scheme.db'), 'sqlite:']) {
    await assert.rejects(Ledger.open(url, v), (x) => x instanceof AppStoreServerError && x.libraryStatus === 'INVALID_ARGUMENT', url);
  }
  await assert.rejects(Ledger.open('sqlite:/nonexistent-dir/a/b.db', v),
    (x) => x instanceof AppStoreServerError && x.libraryStatus === 'STORAGE_ERROR' && x.reason === 'storage_failed' && x.message.length > 0);
  await assert.rejects(Ledger.open(42, v), TypeError);
  await assert.rejects(Ledger.open('sqlite::memory:', 'not a verifier'), TypeError);
  await assert.rejects(Ledger.open('sqlite::memory:', new SignedDataVerifier([], false, Environment.SANDBOX, 'b')), TypeError);
  assert.throws(() => Ledger.openSync('mysql://x', v), AppStoreServerError);
  assert.throws(() => new Ledger(null, 'x', v), TypeError);
  const ledger = await Ledger.open('sqlite::memory:', v);
  await assert.rejects(ledger.ingestNotification(null), TypeError);
  await assert.rejects(ledger.ingestTransaction(5), TypeError);
  await assert.rejects(ledger.customer(null), TypeError);
  await assert.rejects(ledger.subscription('1', 'yesterday'), TypeError);
  for (const at of [-5, 0, 1.5, new Date(NaN)]) await assert.rejects(ledger.subscription('1', at), RangeError, String(at));
  for (const asOf of [-5, 0, 1.5, new Date(NaN)]) {
    await assert.rejects(ledger.subscription('1', undefined, asOf), /asOf must be an instant/, String(asOf));
    await assert.rejects(ledger.customer('1', 1, asOf), RangeError, String(asOf));
  }
  await assert.rejects(ledger.customer('1', undefined, 'yesterday'), /asOf/);
  await assert.rejects(ledger.customer('a\u0000b'), (x) => x instanceof TypeError || x instanceof AppStoreServerError);
  // disagreements(after, limit): an empty ledger's one page; arguments refused as Node refuses them.
  assert.deepEqual(await ledger.disagreements(), { disagreements: [] });
  assert.deepEqual(await ledger.disagreements('', 10000), { disagreements: [] });
  await assert.rejects(ledger.disagreements(5), TypeError);
  await assert.rejects(ledger.disagreements(null, '10'), TypeError);
  for (const limit of [0, 10001]) await assert.rejects(ledger.disagreements(null, limit), RangeError, String(limit));
  await assert.rejects(ledger.disagreements('CONTRADICTION:soon:x'),
    (x) => x instanceof AppStoreServerError && x.libraryStatus === 'INVALID_ARGUMENT' && /not a cursor/.test(x.message));
  ledger.close();
  ledger.close(); // twice is fine
  await assert.rejects(ledger.summary(), /closed/);
  await assert.rejects(ledger.ingestTransaction('a.b.c'), /closed/);
  await assert.rejects(ledger.customer('x'), /closed/);
});

test('a reopened database (and a second handle on it) gives the same answers', async () => {
  const d = lifecycles();
  const v = verifier();
  const url = dbUrl();
  const ledger = await Ledger.open(url, v);
  for (const lc of d.scenarios) await ingestAll(ledger, signed(lc, 'notifications'));
  const summary = await ledger.summary();
  const answers = await allAnswers(ledger, d.scenarios);
  const second = await Ledger.open(url, v);
  assert.deepEqual(await second.summary(), summary);
  second.close();
  ledger.close();
  const reopened = await Ledger.open(url, v);
  assert.deepEqual(await reopened.summary(), summary);
  assert.deepEqual(await allAnswers(reopened, d.scenarios), answers);
  reopened.close();
});

// ---- identity, migration, re-verification, the oracle's verdicts (docs/ledger.md) -------------------------------

async function expectMismatch(url, v, mentions) {
  await assert.rejects(Ledger.open(url, v), (x) => x instanceof AppStoreServerError &&
    x.libraryStatus === 'CONFIGURATION_ERROR' && x.reason === 'ledger_identity_mismatch' && x.message.includes(mentions),
  mentions);
}

function files(url) {
  const p = url.slice('sqlite:'.length);
  return [p, `${p}-wal`].map((f) => (fs.existsSync(f) ? fs.readFileSync(f) : null));
}

test('a ledger is bound to its app and environment: another verifier is refused, nothing written', async () => {
  const url = dbUrl();
  const ledger = await Ledger.open(url, verifier());
  await ingestAll(ledger, signed(lifecycles().scenarios[0], 'both'));
  const { events } = await ledger.summary();
  ledger.close();
  const before = files(url);
  const root = fs.readFileSync(path.join(testpki(), 'root.der'));
  await expectMismatch(url, new SignedDataVerifier([root], false, Environment.PRODUCTION, lifecycles().bundleId, 1234), 'Sandbox');
  await expectMismatch(url, verifier('com.example.other'), 'com.example.other');
  assert.deepEqual(files(url), before);
  const again = await Ledger.open(url, verifier());
  assert.equal((await again.summary()).events, events);
  again.close();
});

test('a 0.3.0 ledger is migrated in place; one of several identities is refused with how to split it', async () => {
  const values = signed(lifecycles().scenarios[0], 'both');
  const write030 = (url, vals) => execFileSync('python3', [path.join(SUPPORT, 'ledger030.py'), url.slice('sqlite:'.length)],
    { input: vals.map(([kind, s]) => JSON.stringify({ kind, signed: s })).join('\n') });
  const url = dbUrl();
  write030(url, values);
  const ledger = await Ledger.open(url, verifier());
  assert.equal((await ledger.summary()).events, new Set(values.map((v) => v[1])).size);
  ledger.close();
  const mixed = dbUrl();
  const other = lifecycles().bad.find((b) => b.name === 'wrong-environment');
  write030(mixed, [...values, [other.kind, other.signed]]);
  const before = files(mixed);
  await expectMismatch(mixed, verifier(), 'Split it');
  assert.deepEqual(files(mixed), before);
});

test('reverify: every stored value verified again', async () => {
  const url = dbUrl();
  const ledger = await Ledger.open(url, verifier());
  await ingestAll(ledger, signed(lifecycles().scenarios[0], 'both'));
  const { events } = await ledger.summary();
  assert.deepEqual(await ledger.reverify(), { checked: events, refused: [] });
  ledger.close();
  // The same identity, trusting Apple's root instead of the test PKI's: every value refused.
  const apple = await Ledger.open(url, new SignedDataVerifier(lib.appleRootCertificates(), false, Environment.SANDBOX,
    lifecycles().bundleId));
  const r = await apple.reverify();
  assert.equal(r.checked, events);
  assert.equal(r.refused.length, events);
  assert.deepEqual(new Set(r.refused.map((x) => x.reason)), new Set(['untrusted_chain']));
  apple.close();
  await assert.rejects(apple.reverify());
});

test('real Apple data: a fresh ledger\'s first DID_RENEW is incomplete history, not a contradiction', async (t) => {
  const file = path.join(CONFORMANCE, 'real/jws/sandbox-notification-did-renew-2025-10-01.jws');
  if (!fs.existsSync(file)) {
    t.skip(`SKIPPED: ${CONFORMANCE} not found; real Apple data NOT checked`);
    return;
  }
  // Signed 33 s before its new period's purchaseDate; data.status 1 (a renewal is ACTIVE, apple-lifecycle.md 1-2).
  const v = new SignedDataVerifier(lib.appleRootCertificates(), false, Environment.SANDBOX, 'com.loki-project.loki-messenger');
  const ledger = await Ledger.open('sqlite::memory:', v);
  const jws = fs.readFileSync(file, 'utf8').trim();
  const r = await ledger.ingestNotification(jws);
  assert.equal(r.appleStatus, 1);
  assert.equal(r.agrees, false);
  assert.equal(r.verdict, 'INCOMPLETE_HISTORY');
  assert.match(r.missing, /catch-up/);
  assert.equal((await ledger.summary()).contradictions, 0);
  const again = await ledger.ingestNotification(jws);
  assert.equal(again.stored, false);
  const summary = await ledger.summary(); // counted once, listed with what is missing
  assert.deepEqual([summary.contradictions, summary.incompleteHistories], [0, 1]);
  assert.deepEqual(summary.disagreements.map((d) => d.verdict), ['INCOMPLETE_HISTORY']);
  assert.deepEqual(await ledger.disagreements(null, 1), { disagreements: summary.disagreements }); // no next page
  ledger.close();
});

// ---- bulk import (docs/ledger.md, "Bulk import") -----------------------------------------------------------------

test('subscriptionIds / customerIds: pages of any size hold every id once, in byte order', async () => {
  // Expected from the transactions' own payloads: a subscription is an auto-renewable originalTransactionId; a
  // customer is the appAccountToken in lowercase, else the originalTransactionId.
  const values = lifecycles().scenarios.flatMap((lc) => signed(lc, 'history')).filter(([k]) => k === 'TRANSACTION');
  const payloads = values.map(([, j]) => JSON.parse(Buffer.from(j.split('.')[1], 'base64url').toString('utf8')));
  const byteOrder = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const subscriptions = [...new Set(payloads.filter((p) => p.type === 'Auto-Renewable Subscription')
    .map((p) => p.originalTransactionId))].sort(byteOrder);
  const customers = [...new Set(payloads.map((p) => (p.appAccountToken || '').toLowerCase() || p.originalTransactionId))]
    .sort(byteOrder);
  assert.ok(subscriptions.length > 5 && customers.length > 5);
  const ledger = await Ledger.open('sqlite::memory:', verifier());
  assert.deepEqual(await ledger.subscriptionIds(), { ids: [] });
  await ingestAll(ledger, values);
  for (const [name, want] of [['subscriptionIds', subscriptions], ['customerIds', customers]]) {
    for (const limit of [1, 4, want.length, 10000]) {
      const got = [];
      let after = null;
      for (;;) {
        const page = await ledger[name](after, limit);
        assert.ok(page.ids.length === limit || page.next === undefined, `${name} ${limit}`);
        got.push(...page.ids);
        if (page.next === undefined) break;
        assert.equal(page.next, page.ids[page.ids.length - 1]);
        after = page.next;
      }
      assert.deepEqual(got, want, `${name} ${limit}`);
    }
    assert.deepEqual((await ledger[name]('', 2)).ids, want.slice(0, 2));
    assert.deepEqual(await ledger[name](want[want.length - 1]), { ids: [] });
    await assert.rejects(ledger[name](5), TypeError);
    await assert.rejects(ledger[name](null, '10'), TypeError);
    for (const limit of [0, 10001]) await assert.rejects(ledger[name](null, limit), RangeError, String(limit));
  }
  ledger.close();
});

test('importJsonl: every line format, bad lines by number, a second run stores nothing twice', async () => {
  const values = lifecycles().scenarios.flatMap((s) => signed(s, 'both'));
  const member = { NOTIFICATION: 'notification', TRANSACTION: 'transaction', RENEWAL_INFO: 'renewalInfo' };
  const lines = values.map(([k, j]) => JSON.stringify({ [member[k]]: j }));
  lines.splice(2, 0, '{"transaction": ');        // line 3: not JSON
  lines.splice(5, 0, '{"renewalInfo": null}');   // line 6: not a string
  const file = path.join(tmpdir(), `import-${process.pid}.jsonl`);
  fs.writeFileSync(file, lines.join('\n'));
  const distinct = new Set(values.map(([, j]) => j)).size;
  const ledger = await Ledger.open(dbUrl(), verifier());
  try {
    const r = await ledger.importJsonl(file, 4);
    assert.equal(r.read, lines.length);
    assert.equal(r.stored, distinct);
    assert.equal(r.alreadyPresent, values.length - distinct);
    assert.equal(r.refusedCount, 2);
    assert.deepEqual(r.refused.map((x) => [x.line, x.reason]), [[3, 'malformed'], [6, 'malformed']]);
    const again = await ledger.importJsonl(file);
    assert.deepEqual([again.stored, again.alreadyPresent, again.refusedCount], [0, values.length, 2]);
    assert.equal((await ledger.summary()).events, distinct);
    await assert.rejects(ledger.importJsonl(path.join(tmpdir(), 'missing.jsonl')), (x) => x instanceof AppStoreServerError);
    await assert.rejects(ledger.importJsonl(42), TypeError);
    await assert.rejects(ledger.importJsonl(file, -1), RangeError);
  } finally {
    ledger.close();
  }
});

test('exportJsonl: every stored value once, byte for byte, in import\'s format; imported back it is the same ledger', async () => {
  const values = lifecycles().scenarios.slice(0, 6).flatMap((s) => signed(s, 'both'));
  const member = { NOTIFICATION: 'notification', TRANSACTION: 'transaction', RENEWAL_INFO: 'renewalInfo' };
  const file = path.join(tmpdir(), `export-${process.pid}.jsonl`);
  fs.writeFileSync(file, 'an older export\n');
  const a = await Ledger.open(dbUrl(), verifier());
  const b = await Ledger.open(dbUrl(), verifier());
  try {
    const stored = [];
    for (const [k, j] of [...values, ...values.slice(0, 4)]) if ((await ingest(a, k, j)).stored) stored.push([k, j]);
    const r = await a.exportJsonl(file);
    const count = (kind) => stored.filter(([k]) => k === kind).length;
    assert.deepEqual(r, { exported: stored.length, notifications: count('NOTIFICATION'), transactions: count('TRANSACTION'),
      renewalInfos: count('RENEWAL_INFO') });
    assert.deepEqual(fs.readFileSync(file, 'utf8').split('\n'),
      [...stored.map(([k, j]) => JSON.stringify({ [member[k]]: j })), '']);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const i = await b.importJsonl(file);
    assert.deepEqual([i.stored, i.refusedCount], [stored.length, 0]);
    assert.deepEqual(await b.summary(), await a.summary());
    const ids = (await a.customerIds(null, 10000)).ids;
    assert.ok(ids.length > 0);
    for (const c of ids) assert.deepEqual(await b.customer(c, 1_800_000_000_000), await a.customer(c, 1_800_000_000_000));
    await assert.rejects(a.exportJsonl(path.join(tmpdir(), 'missing-dir', 'x.jsonl')),
      (x) => x instanceof AppStoreServerError && /cannot create the export file/.test(x.message));
    await assert.rejects(a.exportJsonl(42), TypeError);
  } finally {
    a.close();
    b.close();
    fs.rmSync(file, { force: true });
  }
});
