'use strict';
// The Node examples (examples/node/*.js) run as a user runs them: `node script.js`, requiring 'appstoreserver' as an
// installed package (NODE_PATH points at this package), against the own PKI, the mock App Store server and Apple's
// real data when ../shared is present.
const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { REPO, PKG, CONFORMANCE, MOCK, fixture, startMock, signingKeys, testpki, tmpdir } = require('./helpers.js');

const EXAMPLES = path.join(REPO, 'examples', 'node');
let modules;

/** A node_modules-like folder holding this package as 'appstoreserver' (NODE_PATH for the examples). */
function nodePath() {
  if (!modules) {
    modules = tmpdir();
    fs.symlinkSync(PKG, path.join(modules, 'appstoreserver'));
  }
  return modules;
}

function run(script, args, key) {
  const env = { ...process.env, NODE_PATH: nodePath() };
  if (key) env.APPSTORE_PRIVATE_KEY = fs.readFileSync(key, 'utf8');
  return spawnSync(process.execPath, [path.join(EXAMPLES, script), ...args], { env, encoding: 'utf8', timeout: 120000 });
}

test('verify-notification.js: the own PKI, and a forged chain refused with its reason', () => {
  const dir = testpki();
  const r = run('verify-notification.js', [path.join(dir, 'jws/notif-valid-did-renew.jws'), 'com.example.testpki', '--root',
    path.join(dir, 'root.der')]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^type: DID_RENEW/);
  assert.match(r.stdout, /transaction: \d+/);
  const forged = run('verify-notification.js', [path.join(dir, 'jws/notif-untrusted-forged-chain.jws'), 'com.example.testpki',
    '--root', path.join(dir, 'root.der')]);
  assert.equal(forged.status, 1);
  assert.match(forged.stderr, /NOT VERIFIED: VERIFICATION_FAILURE untrusted_chain/);
});

test('verify-notification.js: a real Apple notification with the bundled root', (t) => {
  const manifestPath = path.join(CONFORMANCE, 'manifest.json');
  if (!fs.existsSync(manifestPath)) return t.skip(`SKIPPED: ${CONFORMANCE} absent`);
  const f = JSON.parse(fs.readFileSync(manifestPath, 'utf8')).files
    .find((x) => x.kind === 'notification' && x.signedDate && x.environment === 'Sandbox');
  const r = run('verify-notification.js', [path.join(CONFORMANCE, f.path), f.bundleId]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^type: /);
});

test('refund-history.js: every page from the mock App Store server', async () => {
  const mock = await startMock();
  try {
    const r = await new Promise((resolve) => {
      // spawnSync would block the mock's output pipe reader in this process: run it asynchronously.
      const { spawn } = require('child_process');
      const env = { ...process.env, NODE_PATH: nodePath(),
        APPSTORE_PRIVATE_KEY: fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8') };
      const p = spawn(process.execPath, [path.join(EXAMPLES, 'refund-history.js'), '--key-id', MOCK.keyId, '--issuer-id',
        MOCK.issuerId, '--bundle-id', MOCK.bundleId, '--environment', 'Sandbox', '--base-url', mock.url, '2000000000000001'], { env });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { err += d; });
      p.on('exit', (status) => resolve({ status, stdout: out, stderr: err }));
    });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(lines.map((l) => l.split(':')[0]), ['page 1', 'page 2'], r.stdout);
    assert.match(lines[0], /more: true$/);
    assert.match(lines[1], /more: false$/);
  } finally {
    await mock.stop();
  }
});

test('offer-signature.js: a JWS that node:crypto verifies with the public key', () => {
  const keys = signingKeys();
  const r = run('offer-signature.js', ['--key-id', MOCK.keyId, '--issuer-id', MOCK.issuerId, '--bundle-id', MOCK.bundleId,
    'com.example.monthly', 'WINBACK'], path.join(keys, 'p256.p8'));
  assert.equal(r.status, 0, r.stderr);
  const [h, p, s] = r.stdout.trim().split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  assert.equal(claims.productId, 'com.example.monthly');
  assert.equal(claims.offerIdentifier, 'WINBACK');
  const ok = crypto.verify('sha256', Buffer.from(`${h}.${p}`), {
    key: fs.readFileSync(path.join(keys, 'p256_public.pem')), dsaEncoding: 'ieee-p1363',
  }, Buffer.from(s, 'base64url'));
  assert.ok(ok, 'the signature verifies');
});

test('notification-receiver.js: 200 once durable (a duplicate too), 4xx for what is not genuine, the customer', async () => {
  const { spawn } = require('child_process');
  const doc = JSON.parse(fs.readFileSync(path.join(fixture('lifecycles.py', testpki(), '{out}'), 'lifecycles.json'), 'utf8'));
  const p = spawn(process.execPath, [path.join(EXAMPLES, 'notification-receiver.js'), doc.bundleId, '--ledger',
    `sqlite:${path.join(tmpdir(), `receiver-${process.pid}.db`)}`, '--root', path.join(testpki(), 'root.der'), '--port', '0'],
  { env: { ...process.env, NODE_PATH: nodePath() } });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  try {
    const port = await new Promise((resolve, reject) => {
      let out = '';
      p.stdout.on('data', (d) => {
        out += d;
        const m = /^PORT (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      p.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    const post = async (body) => {
      const r = await fetch(`http://127.0.0.1:${port}/notifications`, { method: 'POST', body });
      return [r.status, await r.json()];
    };
    const scenario = doc.scenarios[0];
    for (const n of scenario.notifications) {
      const [status, r] = await post(JSON.stringify({ signedPayload: n.signed }));
      assert.equal(status, 200);
      assert.equal(r.stored, true);
    }
    const [again, r] = await post(JSON.stringify({ signedPayload: scenario.notifications[0].signed }));
    assert.equal(again, 200);
    assert.equal(r.stored, false);
    const bad = Object.fromEntries(doc.bad.map((b) => [b.name, b]));
    const [forged, f] = await post(JSON.stringify({ signedPayload: bad['forged-chain'].signed }));
    assert.equal(forged, 403);
    assert.equal(f.error, 'untrusted_chain');
    assert.equal((await post(JSON.stringify({ signedPayload: bad['wrong-bundle'].signed })))[0], 422);
    assert.deepEqual(await post('not json'), [400, { error: 'malformed_body' }]);
    const customer = scenario.expect.find((e) => e.customer).customer;
    const c = await (await fetch(`http://127.0.0.1:${port}/customers/${customer}`)).json();
    assert.equal(c.customerId, customer.toLowerCase());
  } finally {
    p.kill('SIGTERM');
  }
});

test('the examples say how to use them', () => {
  for (const script of ['verify-notification.js', 'refund-history.js', 'offer-signature.js', 'notification-receiver.js']) {
    const r = run(script, []);
    assert.equal(r.status, 2, `${script}: ${r.stderr}`);
    assert.match(r.stderr, /^usage: /, script);
  }
});
