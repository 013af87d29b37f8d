#!/usr/bin/env node
// benchmarks/node/bench.js VECTORS --impl IMPL --only CASE [--seconds S] [--runs N]
//
// One case of the `node` group (benchmarks/run node), printing "RESULT <impl> <case> <calls/s> <JWS per call>":
//   --impl floor  transaction          node:crypto ES256 verify + base64url decode + JSON.parse per JWS, the leaf key
//                                      parsed once (chain already trusted)
//                 api_token            node:crypto signing the same JWT as the library's bearer token (header and
//                                      claims JSON, base64url, ES256 with a KeyObject made once)
//                 transaction_one_in_flight   the library's Promise API, one call in flight (the baseline of two)
//   --impl node   transaction_promise  verifyAndDecodeTransaction (Promise, libuv pool), one call in flight
//                 transaction_sync     verifyAndDecodeTransactionSync
//                 transaction_two_in_flight   two Promise calls in flight at all times
//                 api_token            AppStoreServerAPIClient.createBearerToken()
// Every call's result is checked (bundle id of the decoded transaction; token shape), after an untimed pass over all
// the vectors. The verifier trusts VECTORS/root.der, Production, the vectors' bundle id; its chain cache is warm.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { performance } = require('perf_hooks');

const REPO = path.resolve(__dirname, '..', '..');
const lib = require(path.join(REPO, 'bindings', 'node'));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? dflt : argv[i + 1];
};
const VECTORS = argv[0];
const IMPL = opt('impl');
const CASE = opt('only');
const SECONDS = Number(opt('seconds', '1.5'));
const RUNS = Number(opt('runs', '1'));
const BUNDLE = 'com.example.bench';
const APP_ID = 1234567890;

const transactions = fs.readFileSync(path.join(VECTORS, 'transactions.jws'), 'utf8').split('\n').filter(Boolean);
const root = fs.readFileSync(path.join(VECTORS, 'root.der'));
const keyPem = fs.readFileSync(path.join(VECTORS, 'api_key.p8'), 'utf8');

function die(msg) {
  console.error(`bench.js: ${msg}`);
  process.exit(1);
}

function checkTx(t) {
  if (!t || t.bundleId !== BUNDLE) die(`unexpected result ${JSON.stringify(t).slice(0, 200)}`);
}

// ---- floors --------------------------------------------------------------------------------------------------

const leafKey = (() => {
  const header = JSON.parse(Buffer.from(transactions[0].split('.')[0], 'base64url'));
  return new crypto.X509Certificate(Buffer.from(header.x5c[0], 'base64')).publicKey;
})();

function floorVerify(jws) {
  const a = jws.indexOf('.');
  const b = jws.indexOf('.', a + 1);
  const ok = crypto.verify('sha256', Buffer.from(jws.slice(0, b)), { key: leafKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(jws.slice(b + 1), 'base64url'));
  if (!ok) die('floor: signature does not verify');
  return JSON.parse(Buffer.from(jws.slice(a + 1, b), 'base64url').toString('utf8'));
}

const signKey = crypto.createPrivateKey(keyPem);
const KEY_ID = 'BENCHKEY01';
const ISSUER = '57246542-96fe-1a63-e053-0824d011072a';
const tokenHeader = Buffer.from(JSON.stringify({ alg: 'ES256', kid: KEY_ID, typ: 'JWT' })).toString('base64url');

function floorToken() {
  const iat = Math.floor(Date.now() / 1000);
  const claims = Buffer.from(JSON.stringify({ iss: ISSUER, iat, exp: iat + 300, aud: 'appstoreconnect-v1', bid: BUNDLE }))
    .toString('base64url');
  const input = `${tokenHeader}.${claims}`;
  const sig = crypto.sign('sha256', Buffer.from(input), { key: signKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${sig.toString('base64url')}`;
}

function checkToken(t) {
  if (typeof t !== 'string' || t.split('.').length !== 3 || t.length < 200) die(`unexpected token ${t}`);
}

// ---- measurement ---------------------------------------------------------------------------------------------

async function measure(step, perCall = 1) {
  // step(i) does one call (sync or async) and returns a promise or nothing.
  let best = 0;
  for (let r = 0; r < RUNS; r++) {
    let n = 0;
    const start = performance.now();
    const end = start + SECONDS * 1000;
    let now = start;
    while (now < end) {
      for (let k = 0; k < 64; k++) {
        const p = step(n++);
        if (p) await p;
      }
      now = performance.now();
    }
    best = Math.max(best, n / ((now - start) / 1000));
  }
  console.log(`RESULT ${IMPL} ${CASE} ${best.toFixed(1)} ${perCall}`);
}

async function measurePair(verifier) {
  // Two loops, each with one call in flight: two calls in flight at all times.
  let best = 0;
  for (let r = 0; r < RUNS; r++) {
    let n = 0;
    const start = performance.now();
    const end = start + SECONDS * 1000;
    const loop = async (offset) => {
      let i = offset;
      while (performance.now() < end) {
        checkTx(await verifier.verifyAndDecodeTransaction(transactions[i % transactions.length]));
        i += 2;
        n++;
      }
    };
    await Promise.all([loop(0), loop(1)]);
    best = Math.max(best, n / ((performance.now() - start) / 1000));
  }
  console.log(`RESULT ${IMPL} ${CASE} ${best.toFixed(1)} 1`);
}

async function main() {
  const verifier = new lib.SignedDataVerifier([root], false, lib.Environment.PRODUCTION, BUNDLE, APP_ID);
  const client = new lib.AppStoreServerAPIClient(keyPem, KEY_ID, ISSUER, BUNDLE, lib.Environment.PRODUCTION);
  const N = transactions.length;
  // Untimed pass: checks every vector, warms the JIT and the chain cache.
  for (const jws of transactions) {
    checkTx(floorVerify(jws));
    checkTx(verifier.verifyAndDecodeTransactionSync(jws));
    checkTx(await verifier.verifyAndDecodeTransaction(jws));
  }
  checkToken(floorToken());
  checkToken(client.createBearerToken());
  const tx = (i) => transactions[i % N];
  const key = `${IMPL} ${CASE}`;
  switch (key) {
    case 'floor transaction':
      return measure((i) => { checkTx(floorVerify(tx(i))); });
    case 'floor api_token':
      return measure(() => { checkToken(floorToken()); });
    case 'floor transaction_one_in_flight':
      return measure((i) => verifier.verifyAndDecodeTransaction(tx(i)).then(checkTx));
    case 'node transaction_promise':
      return measure((i) => verifier.verifyAndDecodeTransaction(tx(i)).then(checkTx));
    case 'node transaction_sync':
      return measure((i) => { checkTx(verifier.verifyAndDecodeTransactionSync(tx(i))); });
    case 'node transaction_two_in_flight':
      return measurePair(verifier);
    case 'node api_token':
      return measure(() => { checkToken(client.createBearerToken()); });
    default:
      return undefined; // this program has no such case for this impl: nothing to do
  }
}

main().catch((e) => die(e && e.stack ? e.stack : String(e)));
