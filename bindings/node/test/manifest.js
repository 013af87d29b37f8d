'use strict';
// The manifest runner (the Node counterpart of Tests/capi/conformance.c and ManifestRunner.swift): builds a
// SignedDataVerifier from a case's "verifier", calls the case's operation through the Promise API and the Sync API,
// and compares the outcome with "expect".
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { readTrimmed, b64urlJson } = require('./helpers.js');

const OPERATIONS = new Set(['verifyAndDecodeNotification', 'verifyAndDecodeTransaction', 'verifyAndDecodeRenewalInfo',
  'verifyAndDecodeAppTransaction', 'verifyAndDecodeRealtimeRequest']);

// Semantic error classes of the shared manifest -> the reasons that satisfy them (as Tests/capi/conformance.c).
const CLASSES = {
  signature_invalid: ['bad_signature'], unsupported_alg: ['unsupported_alg'], missing_x5c: ['missing_x5c'],
  chain_length: ['chain_length', 'empty_x5c'], invalid_certificate: ['bad_certificate'], chain_untrusted: ['untrusted_chain'],
  chain_invalid: ['untrusted_chain', 'expired', 'missing_marker_oid', 'chain_length'], expired: ['expired'],
  no_trust_anchor: ['no_trust_anchor'], wrong_bundle: ['wrong_bundle'], wrong_app_apple_id: ['wrong_app_id'],
  wrong_environment: ['wrong_environment'], wrong_kind: ['wrong_kind'], malformed_jws: ['malformed'],
};

function verifyCases(manifest) {
  return manifest.cases.filter((c) => OPERATIONS.has(c.operation));
}

/** {kind: 'valid', value} | {kind: 'config', error} | {kind: 'error', error}, via the Promise or the Sync API. */
async function outcome(dir, c, sync) {
  const v = c.verifier;
  let verifier;
  try {
    const roots = v.rootCertificates.map((r) => fs.readFileSync(path.join(dir, r)));
    verifier = new lib.SignedDataVerifier(roots, !!v.enableOnlineChecks, v.environment,
      v.bundleId == null ? '' : v.bundleId, v.appAppleId == null ? undefined : v.appAppleId);
  } catch (error) {
    return { kind: 'config', error };
  }
  const jws = readTrimmed(path.join(dir, c.path));
  if (v.enableOnlineChecks) {
    // The C ABI refuses online checks without a transport (config_error, online_checks_unavailable); the Node binding
    // always has one (fetch), and refuses only the ...Sync calls, which cannot wait for fetch on this thread. Both
    // APIs are checked against that here (no network: the Promise call is not made).
    try {
      verifier[`${c.operation}Sync`](jws);
      return { kind: 'valid', value: null, jws };
    } catch (error) {
      return { kind: 'config', error };
    } finally {
      verifier.close();
    }
  }
  try {
    const value = sync ? verifier[`${c.operation}Sync`](jws) : await verifier[c.operation](jws);
    return { kind: 'valid', value, jws };
  } catch (error) {
    return { kind: 'error', error };
  } finally {
    verifier.close();
  }
}

function describe(o) {
  if (o.kind === 'valid') return 'valid';
  const e = o.error;
  return `${o.kind} ${e.name} ${e.libraryStatus}/${e.reason}: ${e.message}`;
}

function check(c, o) {
  const expect = c.expect;
  const result = expect.result || '';
  if (result === 'implementation-defined') return;
  if (o.kind !== 'valid') {
    assert.ok(o.error instanceof Error, `a failure is an Error (${describe(o)})`);
    assert.ok(o.error.message, 'a failure has a message');
  }
  if (result === 'valid') {
    assert.equal(o.kind, 'valid', `expected valid, got ${describe(o)}`);
    // The decoded payload exactly as signed (the C ABI returns the payload text byte for byte; JSON.parse of it).
    assert.deepEqual(o.value, b64urlJson(o.jws.split('.')[1]));
    const fields = expect.fields || c.fields || {};
    for (const [k, want] of Object.entries(fields)) {
      const got = o.value[k];
      if (want === null) {
        assert.ok(got == null, `field ${k}: expected null, got ${got}`);
        continue;
      }
      if (typeof want === 'object') continue;
      assert.ok(got !== undefined, `field ${k} missing`);
      if (typeof want === 'number' && typeof got === 'number') assert.equal(Math.trunc(got), Math.trunc(want), `field ${k}`);
      else assert.equal(String(got), String(want), `field ${k}`);
    }
    return;
  }
  const cls = expect.error_class;
  // Apple's Node library takes an empty list of roots and then fails the verification (VERIFICATION_FAILURE); so
  // does this binding (libraryStatus VERIFICATION_FAILURE, reason no_trust_anchor), where the C ABI refuses the
  // verifier (CONFIGURATION_ERROR).
  const noRoots = c.verifier.rootCertificates.length === 0 && (expect.reason === 'no_trust_anchor' || cls === 'no_trust_anchor');
  if (noRoots) {
    assert.equal(o.kind, 'error', `no roots: expected the verification to fail, got ${describe(o)}`);
    assert.ok(o.error instanceof lib.VerificationException, describe(o));
    assert.equal(o.error.status, lib.VerificationStatus.VERIFICATION_FAILURE, describe(o));
    assert.equal(o.error.libraryStatus, 'VERIFICATION_FAILURE', describe(o));
  } else if (result === 'config_error') {
    assert.equal(o.kind, 'config', `expected a configuration error, got ${describe(o)}`);
    assert.equal(o.error.libraryStatus, 'CONFIGURATION_ERROR');
  } else if (result.startsWith('error')) {
    assert.equal(o.kind, 'error', `expected an error, got ${describe(o)}`);
    if (o.kind === 'error') {
      assert.ok(o.error instanceof lib.VerificationException, `a verification failure is a VerificationException (${describe(o)})`);
      assert.equal(typeof o.error.status, 'number');
      assert.ok(lib.VerificationStatus[o.error.status], 'status is one of Apple\'s VerificationStatus values');
    }
  } else {
    assert.fail(`unknown expectation ${result}`);
  }
  if (expect.reason) assert.equal(o.error.reason, expect.reason, describe(o));
  if (expect.status) assert.equal(o.error.libraryStatus, expect.status, describe(o));
  if (expect.apple_status) assert.equal(o.error.libraryStatus, expect.apple_status, describe(o));
  if (cls) {
    const alternatives = cls.split('/').map((a) => a.trim().split(' ')[0]);
    const accepted = alternatives.flatMap((a) => {
      assert.ok(CLASSES[a], `unmapped error class ${a}`);
      return CLASSES[a];
    });
    assert.ok(accepted.includes(o.error.reason), `expected ${cls}, got ${describe(o)}`);
  }
}

/** Both APIs give the same outcome (same value, or same status and reason). */
function same(a, b) {
  assert.equal(a.kind, b.kind, `Promise ${describe(a)} vs Sync ${describe(b)}`);
  if (a.kind === 'valid') assert.deepEqual(a.value, b.value);
  else {
    assert.equal(a.error.reason, b.error.reason);
    assert.equal(a.error.libraryStatus, b.error.libraryStatus);
    assert.equal(a.error.status, b.error.status);
  }
}

/** Registers one subtest per verify case of dir/manifest.json under the test context t. */
async function runManifest(t, dir, manifest) {
  for (const c of verifyCases(manifest)) {
    await t.test(c.id, async () => {
      const a = await outcome(dir, c, false);
      check(c, a);
      const b = await outcome(dir, c, true);
      same(a, b);
    });
  }
}

module.exports = { runManifest, verifyCases, outcome, check };
