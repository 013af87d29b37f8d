'use strict';
// Code written for Apple's Node library runs after changing its imports: every export of Apple's index (3.1.0), every
// enum member with its value, every public method with its parameters in Apple's order (test/fixtures: Apple's names,
// extracted from its declarations); require() and import give the same objects.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const native = require('../lib/native.js');

const APPLE = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'apple-node-3.1.0.json'), 'utf8'));
const ABI = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'include', 'appstoreserver.abi.json'), 'utf8'));

function params(fn) {
  const src = fn.toString();
  const m = src.startsWith('class') ? /\bconstructor\s*\(([^)]*)\)/.exec(src) : /^[^(]*\(([^)]*)\)/.exec(src);
  if (!m) return [];
  return m[1].split(',').map((p) => p.trim().split('=')[0].trim()).filter(Boolean);
}

test('every runtime export of Apple\'s index, of the same kind', () => {
  assert.equal(APPLE.runtimeExports.length, 58);
  for (const name of APPLE.runtimeExports) {
    assert.ok(name in lib, `${name} is exported`);
    const kind = APPLE.classes[name] ? 'function' : 'object';
    assert.equal(typeof lib[name], kind, name);
  }
});

test('every enum member of Apple\'s, with Apple\'s value (numeric enums with reverse mappings)', () => {
  for (const [name, members] of Object.entries(APPLE.enums)) {
    for (const [member, value] of Object.entries(members)) {
      assert.equal(lib[name][member], value, `${name}.${member}`);
      if (typeof value === 'number') assert.equal(lib[name][value], Object.keys(members).find((k) => members[k] === value) in lib[name] ? lib[name][value] : undefined);
    }
  }
  assert.equal(lib.Status[1], 'ACTIVE');
  assert.equal(lib.VerificationStatus[lib.VerificationStatus.INVALID_CERTIFICATE], 'INVALID_CERTIFICATE');
});

test('every public method of Apple\'s classes, with Apple\'s parameters in Apple\'s order', () => {
  for (const [cls, methods] of Object.entries(APPLE.classes)) {
    const C = lib[cls];
    for (const [method, want] of Object.entries(methods)) {
      const fn = method === 'constructor' ? C : C.prototype[method];
      assert.equal(typeof fn, 'function', `${cls}.${method}`);
      const got = params(fn);
      // Ours may take more (trailing options); Apple's come first, in order, with Apple's names.
      assert.deepEqual(got.slice(0, want.length), want, `${cls}.${method}(${got.join(', ')})`);
    }
  }
});

test('Apple\'s status semantics where its Node library differs from the C ABI\'s status', async () => {
  // A wrong chain length and an expired certificate: Apple's Node library reports INVALID_CERTIFICATE; a payload its
  // validator refuses: FAILURE; a non-JWS: VERIFICATION_FAILURE. The library's own status stays available.
  const { appleVerificationStatus } = require('../lib/errors.js');
  const S = lib.VerificationStatus;
  assert.equal(appleVerificationStatus({ reasonName: 'chain_length', statusName: 'INVALID_CHAIN_LENGTH' }), S.INVALID_CERTIFICATE);
  assert.equal(appleVerificationStatus({ reasonName: 'missing_x5c', statusName: 'INVALID_CHAIN_LENGTH' }), S.INVALID_CERTIFICATE);
  assert.equal(appleVerificationStatus({ reasonName: 'empty_x5c', statusName: 'INVALID_CHAIN_LENGTH' }), S.INVALID_CERTIFICATE);
  assert.equal(appleVerificationStatus({ reasonName: 'expired', statusName: 'VERIFICATION_FAILURE' }), S.INVALID_CERTIFICATE);
  assert.equal(appleVerificationStatus({ reasonName: 'undecodable_payload', statusName: 'INVALID_JWT_FORMAT' }), S.FAILURE);
  assert.equal(appleVerificationStatus({ reasonName: 'malformed', statusName: 'INVALID_JWT_FORMAT' }), S.VERIFICATION_FAILURE);
  assert.equal(appleVerificationStatus({ reasonName: 'wrong_kind', statusName: 'INVALID_ENVIRONMENT' }), S.INVALID_ENVIRONMENT);
  assert.equal(appleVerificationStatus({ reasonName: 'ocsp_timeout', statusName: 'RETRYABLE_VERIFICATION_FAILURE' }), S.RETRYABLE_VERIFICATION_FAILURE);
  // Every verification and online-check reason of the spec has a mapping (the renderer refuses a spec without one).
  for (const [value, r] of Object.entries(require('../generated/spec.js').REASONS)) {
    const v = Number(value);
    if ((v >= 1 && v <= 18) || v >= 80) {
      const st = appleVerificationStatus({ reasonName: r.name, statusName: 'VERIFICATION_FAILURE' });
      assert.ok(S[st], `${r.name} -> ${st}`);
    }
  }
  const e = new lib.VerificationException(S.VERIFICATION_FAILURE);
  assert.equal(e.status, S.VERIFICATION_FAILURE);
  assert.equal(e.cause, undefined);
  assert.ok(e instanceof Error);
  const a = new lib.APIException(404, 4040010, 'x');
  assert.deepEqual([a.httpStatusCode, a.apiError, a.errorMessage], [404, 4040010, 'x']);
  assert.deepEqual([new lib.APIException(500).apiError, new lib.APIException(500).errorMessage], [null, null]);
});

test('ESM: import gives every name of require(), the same objects', async () => {
  const esm = await import('appstoreserver');
  const cjs = require('appstoreserver');
  assert.equal(cjs, lib);
  const names = Object.keys(esm).filter((k) => k !== 'default').sort();
  assert.deepEqual(names, Object.keys(lib).sort());
  for (const n of names) assert.equal(esm[n], lib[n], n);
  assert.equal(esm.default, lib);
});

test('the addon serves every function of the ABI description (the generated table is complete)', () => {
  // Not served by the generic marshalling (scripts/specgen/node.py C_MANUAL says why).
  const manual = new Set(['appstore_transport_new', 'appstore_string_free', 'appstore_signing_key_new_with_signer']);
  for (const f of ABI.functions) {
    const name = f.name.replace(/^appstore_/, '');
    if (manual.has(f.name) || f.name.endsWith('_free') || f.name.startsWith('appstore_http_response_')) continue;
    assert.equal(typeof native[name], 'function', f.name);
    if (f.params.some((p) => p.kind === 'error')) assert.equal(typeof native.async[name], 'function', `async ${f.name}`);
  }
  assert.equal(native.version(), lib.libraryVersion);
  assert.equal(lib.libraryVersion, ABI.constants.version.find((c) => c.name === 'APPSTORE_VERSION_STRING').value);
});

test('the loaded library is the self-contained one, from the package folder ($ORIGIN)', () => {
  const maps = fs.readFileSync('/proc/self/maps', 'utf8');
  const lines = maps.split('\n').filter((l) => l.includes('libappstoreserver.so.0'));
  assert.ok(lines.length > 0, 'libappstoreserver.so.0 is mapped');
  const where = path.resolve(__dirname, '..', 'build', 'Release', 'libappstoreserver.so.0');
  assert.ok(lines.every((l) => l.trim().endsWith(where)), lines[0]);
  assert.ok(!/libswiftCore|libFoundation/.test(maps), 'no shared Swift runtime is loaded');
});

test('lib/ takes statuses and reasons from the generated tables: no literal numbers', () => {
  const { detail } = require('../lib/errors.js');
  const spec = require('../generated/spec.js');
  const dir = path.join(__dirname, '..', 'lib');
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    const src = fs.readFileSync(path.join(dir, file), 'utf8');
    const literal = /\b(status|reason|libraryStatusCode|reasonCode|statusCode)\s*(:|===?|!==?)\s*\d/.exec(src);
    assert.equal(literal, null, `lib/${file}: ${literal && literal[0]}`);
  }
  assert.deepEqual(detail('TRANSPORT_ERROR', 'transport_timeout'), { statusName: 'TRANSPORT_ERROR',
    status: spec.LibraryStatus.TRANSPORT_ERROR, reasonName: 'transport_timeout', reason: spec.FailureReason.TRANSPORT_TIMEOUT });
  assert.equal(spec.STATUSES[spec.LibraryStatus.TRANSPORT_ERROR], 'TRANSPORT_ERROR');
  assert.throws(() => detail('TRANSPORT_ERROR', 'no_such_reason'), /no library status/);
  assert.throws(() => detail('NO_SUCH_STATUS', 'internal'), /no library status/);
  const e = new lib.AppStoreServerError('x');
  assert.deepEqual([e.libraryStatus, e.libraryStatusCode, e.reason, e.reasonCode],
    ['INTERNAL_ERROR', spec.LibraryStatus.INTERNAL_ERROR, 'internal', spec.FailureReason.INTERNAL]);
});
