'use strict';
// The TypeScript declarations: `tsc --noEmit --strict` on index.d.ts, the generated types.d.ts and TypeScript code
// written against Apple's Node library (every export of Apple's index imported by name; Apple's README usage), and a
// file with type errors must fail; the hand-written declarations compiled against the JavaScript they describe, both
// ways (the drift check, below). Without tsc (Debian node-typescript) the drift check fails and the rest is parsed.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { PKG, tmpdir } = require('./helpers.js');

const APPLE = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'apple-node-3.1.0.json'), 'utf8'));
const tsc = spawnSync('tsc', ['--version'], { encoding: 'utf8' });
const HAVE_TSC = tsc.status === 0;
if (!HAVE_TSC) console.log('*** tsc not found (Debian node-typescript): the declarations are parsed, not type-checked ***');

function project(files, pkgDir = PKG) {
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'ts-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(pkgDir, path.join(dir, 'node_modules', 'appstoreserver'));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2020', module: 'commonjs', moduleResolution: 'node',
      lib: ['es2020', 'dom'], types: [] },
    files: Object.keys(files),
  }));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

function check(dir) {
  return spawnSync('tsc', ['-p', dir], { encoding: 'utf8' });
}

const APPLE_STYLE = `
import { AppStoreServerAPIClient, Environment, SendTestNotificationResponse, SignedDataVerifier, VerificationException,
  VerificationStatus, APIException, APIError, ReceiptUtility, Order, ProductType, TransactionHistoryRequest,
  HistoryResponse, PromotionalOfferSignatureCreator, NotificationTypeV2, ResponseBodyV2DecodedPayload,
  JWSTransactionDecodedPayload, Status, GetTransactionHistoryVersion, Type } from 'appstoreserver';

async function main(issuerId: string, keyId: string, bundleId: string, encodedKey: string, appAppleId: number) {
  const environment = Environment.SANDBOX;
  const client = new AppStoreServerAPIClient(encodedKey, keyId, issuerId, bundleId, environment);
  try {
    const response: SendTestNotificationResponse = await client.requestTestNotification();
    console.log(response.testNotificationToken);
  } catch (e) {
    if (e instanceof APIException && e.apiError === APIError.RATE_LIMIT_EXCEEDED) console.log(e.httpStatusCode);
  }
  const appleRootCAs: Buffer[] = [];
  const verifier = new SignedDataVerifier(appleRootCAs, true, environment, bundleId, appAppleId);
  try {
    const decoded: ResponseBodyV2DecodedPayload = await verifier.verifyAndDecodeNotification('...');
    if (decoded.notificationType === NotificationTypeV2.SUBSCRIBED) console.log(decoded.data?.bundleId);
  } catch (e) {
    if (e instanceof VerificationException && e.status === VerificationStatus.INVALID_CERTIFICATE) console.log(e.cause);
  }
  const tx: JWSTransactionDecodedPayload = await verifier.verifyAndDecodeTransaction('...');
  const isSub: boolean = tx.type === Type.AUTO_RENEWABLE_SUBSCRIPTION;
  const receiptUtil = new ReceiptUtility();
  const transactionId = receiptUtil.extractTransactionIdFromAppReceipt('MI...');
  if (transactionId !== null) {
    const request: TransactionHistoryRequest = { sort: Order.ASCENDING, revoked: false, productTypes: [ProductType.AUTO_RENEWABLE] };
    let response: HistoryResponse | null = null;
    const transactions: string[] = [];
    while (response === null || response.hasMore === true) {
      const revision: string | null = response !== null && response.revision !== undefined ? response.revision : null;
      response = await client.getTransactionHistory(transactionId, revision, request, GetTransactionHistoryVersion.V2);
      if (response.signedTransactions) transactions.push(...response.signedTransactions);
    }
    const statuses = await client.getAllSubscriptionStatuses(transactionId, [Status.ACTIVE]);
    console.log(isSub, transactions, statuses.data?.[0]?.lastTransactions?.[0]?.status === Status.ACTIVE);
  }
  const creator = new PromotionalOfferSignatureCreator(encodedKey, keyId, bundleId);
  const signature: string = creator.createSignature('product', 'offer', 'token', 'nonce', Date.now());
  console.log(signature);
}
main('', '', '', '', 1);

// Apple's tests subclass the client and answer the requests themselves.
class MockClient extends AppStoreServerAPIClient {
  protected async makeFetchRequest(path: string, parsedQueryParameters: URLSearchParams, method: string,
    requestBody: string | Buffer | undefined, headers: { [key: string]: string }): Promise<Response> {
    console.log(path, parsedQueryParameters.toString(), method, requestBody, headers['Authorization']);
    return new Response('{"signedTransactionInfo": "x"}', { status: 200 });
  }
}
new MockClient('', '', '', '', Environment.LOCAL_TESTING).getTransactionInfo('1');
`;

const OURS = `
import { SignedDataVerifier, Environment, AppStoreServerAPIClient, VerifiedNotification, LibraryStatusName,
  FailureReasonName, VerificationException, ReceiptVerifier, VerifiedAppReceiptFields, AppReceiptTransactionIds,
  ReceiptUtility, AdvancedCommerceSubscriptionCancelResponse, HistoryResponse, Answer, TransactionInfoResponse,
  RefundHistoryResponse, AppStoreServerError, RateLimitOptions, APIException, ExternalSigner, Signer,
  PromotionalOfferV2SignatureCreator, Ledger, LedgerCustomer, LedgerSubscription, LedgerIngestResult,
  LedgerEntitlementReason, Status } from 'appstoreserver';
async function signers(kms: { sign(digest: Buffer): Promise<Buffer> }, publicKeyDer: Buffer) {
  const signer = new ExternalSigner((data: Buffer, digest: Buffer) => kms.sign(digest), publicKeyDer, { timeoutMs: 2000 });
  const plain: Signer = (message) => message;
  const client = new AppStoreServerAPIClient(signer, 'k', 'i', 'b', Environment.SANDBOX);
  const token: string = await client.createBearerTokenAsync();
  const jws: string = await new PromotionalOfferV2SignatureCreator(new ExternalSigner(plain, '-----BEGIN PUBLIC KEY-----'),
    'k', 'i', 'b').createSignatureAsync('p', 'o');
  const ms: number = signer.timeoutMs;
  console.log(token, jws, ms);
}
console.log(signers);
async function extras(v: SignedDataVerifier, c: AppStoreServerAPIClient, r: ReceiptVerifier) {
  const deep: VerifiedNotification = await v.verifyAndDecodeNotificationDeep('...');
  console.log(deep.transaction?.transactionId, v.verifyAndDecodeTransactionSync('...').price);
  for await (const page of c.getTransactionHistoryPages('1', {})) { const p: HistoryResponse = page; console.log(p.revision); }
  const cancel: AdvancedCommerceSubscriptionCancelResponse = await c.cancelSubscription('1', { requestInfo: { requestReferenceId: 'x' } });
  console.log(cancel.signedTransactionInfo);
  try { await v.verifyAndDecodeTransaction('x'); } catch (e) {
    if (e instanceof VerificationException) { const s: LibraryStatusName | undefined = e.libraryStatus; const r: FailureReasonName | undefined = e.reason; console.log(s, r, e.message); }
  }
  const fields: VerifiedAppReceiptFields = await r.verify('MI...');
  const ids: AppReceiptTransactionIds = new ReceiptUtility().extractTransactionIdsFromAppReceipt('MI...');
  console.log(fields.inApp.length, ids.transactionIds, Environment.LOCAL_TESTING);
  const unknownEnvironmentStillTypes: HistoryResponse = { environment: 'SomethingNew' };
  console.log(unknownEnvironmentStillTypes);
  const production = new AppStoreServerAPIClient('', '', '', '', Environment.PRODUCTION, { sandboxFallback: true,
    sandboxBaseUrl: 'http://127.0.0.1:1', rateLimit: { maxWaitMs: 1000, sharePercent: 50 } });
  const answered: Answer<TransactionInfoResponse> = await production.answer('getTransactionInfo', '1');
  const env: Environment = answered.environment;
  for await (const page of production.answer('getRefundHistoryPages', '1')) { const p: RefundHistoryResponse = page.value; console.log(p, page.environment); }
  try { await production.getTransactionInfo('1'); } catch (e) {
    if (e instanceof AppStoreServerError && e.reason === 'local_rate_limit') console.log(e.retryAtMs, env);
    if (e instanceof APIException) {
      const requestId: string | undefined = e.headers['x-apple-request-id'];
      const untilMs: number | null | undefined = e.retryAfter;
      const seconds: number | null | undefined = e.retryAfterSeconds;
      console.log(requestId, untilMs, seconds, e.retryAtMs);
    }
  }
  const limit: RateLimitOptions = { maxWaitMs: 0 };
  console.log(limit, answered.value.signedTransactionInfo);
}
console.log(extras);
async function ledger(v: SignedDataVerifier, body: { signedPayload: string }, token: string) {
  const l: Ledger = await Ledger.open('sqlite:/var/lib/app/ledger.db', v);
  const r: LedgerIngestResult = await l.ingestNotification(body.signedPayload);
  if (r.agrees === false) console.log(r.appleStatus, r.engineStatus);
  const c: LedgerCustomer = await l.customer(token, new Date());
  for (const e of c.entitlements) if (e.reason === LedgerEntitlementReason.BILLING_GRACE_PERIOD) console.log(e.productId, e.until);
  const s: LedgerSubscription | null = await l.subscription('1', 1750000000000);
  if (s !== null && s.status === Status.ACTIVE) console.log(s.expiresDate);
  console.log((await l.summary()).disagreements.length, l.url, Ledger.openSync('sqlite::memory:', v).url);
  l.close();
}
console.log(ledger);
`;

// Apple-style code reading the fields Apple's TypeScript declares required, without optional checks (under --strict
// each read below is an error if the declaration makes the field optional), and building the models Apple declares
// all-optional partially.
const APPLE_REQUIRED = `
import { AppStoreServerAPIClient, SignedDataVerifier, PerformanceTestResultResponse, PerformanceTestResponse,
  PerformanceTestStatus, SendAttemptResult, RealtimeUrlResponse, DefaultConfigurationResponse,
  DecodedRealtimeRequestBody, AdvancedCommerceSubscriptionCancelResponse, Environment } from 'appstoreserver';

async function performance(client: AppStoreServerAPIClient, verifier: SignedDataVerifier) {
  const started: PerformanceTestResponse = await client.initiatePerformanceTest({ originalTransactionId: '1' });
  const requestId: string = started.requestId;
  const total: number = started.config.totalRequests + started.config.maxConcurrentRequests +
    started.config.totalDuration + started.config.responseTimeThreshold + started.config.successRateThreshold;
  const result: PerformanceTestResultResponse = await client.getPerformanceTestResults(requestId);
  const passed: boolean = result.result === PerformanceTestStatus.PASS;
  const status: string = result.result;
  const timeouts: number = result.failures[SendAttemptResult.TIMED_OUT];
  const failed: number = Object.values(result.failures).reduce((a, b) => a + b, 0);
  const times: number = result.responseTimes.p50 + result.responseTimes.p90 + result.responseTimes.p95 +
    result.responseTimes.p99 + result.responseTimes.average;
  const rest: string = result.target + result.successRate.toFixed(2) + result.numPending + result.config.totalRequests;
  const url: RealtimeUrlResponse = await client.getRealtimeURL();
  const realtimeURL: string = url.realtimeURL;
  const message: DefaultConfigurationResponse = await client.getDefaultMessage('product', 'en-US');
  const messageIdentifier: string = message.messageIdentifier;
  const request: DecodedRealtimeRequestBody = await verifier.verifyAndDecodeRealtimeRequest('...');
  const fields: [string, number, string, string, string, number, Environment | string] = [request.originalTransactionId,
    request.appAppleId, request.productId, request.userLocale, request.requestIdentifier, request.signedDate,
    request.environment];
  const partial: AdvancedCommerceSubscriptionCancelResponse = {};
  const fromTest: PerformanceTestResultResponse = { config: started.config, target: 't', result: 'PASS', successRate: 1,
    numPending: 0, responseTimes: { average: 1, p50: 1, p90: 1, p95: 1, p99: 1 }, failures: {} };
  console.log(total, passed, status, timeouts, failed, times, rest, realtimeURL, messageIdentifier, fields, partial, fromTest);
}
console.log(performance);
`;

test('tsc --strict: the fields Apple\'s TypeScript declares required are required here', { skip: !HAVE_TSC && 'no tsc' }, () => {
  const r = check(project({ 'apple_required.ts': APPLE_REQUIRED }));
  assert.equal(r.status, 0, r.stdout + r.stderr);
  // And the check can fail: reading an optional field (of a model Apple declares all-optional) as a value.
  const optional = `import { AdvancedCommerceSubscriptionCancelResponse } from 'appstoreserver';
function f(r: AdvancedCommerceSubscriptionCancelResponse) { const s: string = r.signedTransactionInfo; console.log(s); }
console.log(f);
`;
  const bad = check(project({ 'optional.ts': optional }));
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /optional\.ts\(2,\d+\): error TS2322/);
});

test('the declarations: Apple\'s required response fields (parsed)', () => {
  const text = fs.readFileSync(path.join(PKG, 'generated', 'types.d.ts'), 'utf8');
  const body = (name) => {
    const m = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(text);
    assert.ok(m, name);
    return m[1];
  };
  for (const field of ['config', 'target', 'result', 'successRate', 'numPending', 'responseTimes', 'failures'])
    assert.match(body('PerformanceTestResultResponse'), new RegExp(`\\n    ${field}: `), field);
  for (const field of ['signedRenewalInfo', 'signedTransactionInfo'])
    assert.match(body('AdvancedCommerceSubscriptionCancelResponse'), new RegExp(`\\n    ${field}\\?: `), field);
});

test('tsc --strict: the declarations, Apple-style code, every export of Apple\'s index by name', { skip: !HAVE_TSC && 'no tsc' }, () => {
  const every = `import { ${[...APPLE.runtimeExports, ...APPLE.typeExports].join(', ')} } from 'appstoreserver';\n` +
    `export type All = [${APPLE.typeExports.join(', ')}];\n` +
    `export const values = [${APPLE.runtimeExports.join(', ')}];\n`;
  // No @types/node here: a stand-in Buffer (a Uint8Array, as in Node) for the Apple-style code.
  const shim = 'declare class Buffer extends Uint8Array {}\n';
  const dir = project({ 'shim.d.ts': shim, 'apple_style.ts': APPLE_STYLE, 'ours.ts': OURS, 'every_export.ts': every });
  const r = check(dir);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('tsc finds type errors in code using the declarations (the check can fail)', { skip: !HAVE_TSC && 'no tsc' }, () => {
  const bad = `
import { SignedDataVerifier, Environment, AppStoreServerAPIClient, ExternalSigner } from 'appstoreserver';
const v = new SignedDataVerifier([], 'yes', Environment.SANDBOX, 'b');
async function f(c: AppStoreServerAPIClient) { const n: number = await c.getTransactionInfo(5); console.log(n); }
const o = new AppStoreServerAPIClient('', '', '', '', Environment.PRODUCTION, { sandboxFallback: 'yes', rateLimit: { maxWait: 5 } });
async function g(c: AppStoreServerAPIClient) { await c.answer('getTransactionInfo', 5); }
async function h(c: AppStoreServerAPIClient) { await c.answer('close'); }
const s = new ExternalSigner(() => 'signature', '', { timeoutMs: '5' });
console.log(v, f, o, g, h, s);
`;
  const r = check(project({ 'bad.ts': bad }));
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /bad\.ts.*TS2345/s);
  assert.match(r.stdout, /TS2322|TS2345/);
  // The options and answer() are typed: a wrong option type, answer()'s arguments, a method that is no endpoint; an
  // ExternalSigner's signer must give bytes.
  for (const line of [5, 6, 7, 8]) assert.match(r.stdout, new RegExp(`bad\\.ts\\(${line},\\d+\\): error TS`), `line ${line}: ${r.stdout}`);
});

test('the declarations name every export (parsed)', () => {
  const text = fs.readFileSync(path.join(PKG, 'index.d.ts'), 'utf8') +
    fs.readFileSync(path.join(PKG, 'generated', 'types.d.ts'), 'utf8');
  for (const name of [...APPLE.runtimeExports, ...APPLE.typeExports]) {
    assert.match(text, new RegExp(`export (declare )?(class|enum|interface|type|const|function) ${name}\\b`), name);
  }
  for (const name of Object.keys(require('..'))) {
    assert.match(text, new RegExp(`export (declare )?(class|enum|interface|type|const|function) ${name}\\b`), `ours: ${name}`);
  }
});

// ---- drift: the hand-written declarations (index.d.ts) against the JavaScript they describe ----------------------
// tsc --strict compiles a file made from the package's runtime objects: every export, every member of every exported
// class (methods on the prototype chain, fields of a constructed instance), every enum member, both ways. Without tsc
// it fails: scripts/install-deps installs Debian's node-typescript.

const pkg = require('..');
const { detail } = require('../lib/errors.js');
const { signingKeys, testpki: pkiDir } = require('./helpers.js');

/** One instance of each exported class, made the way callers make them (every optional field set). */
function samples() {
  const key = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  const root = fs.readFileSync(path.join(pkiDir(), 'root.der'));
  const E = pkg.Environment;
  return {
    AppStoreServerAPIClient: new pkg.AppStoreServerAPIClient(key, 'k', 'i', 'b', E.SANDBOX),
    APIException: new pkg.APIException(429, 4290000, 'x', { ...detail('API_ERROR', 'rate_limited'), message: 'm',
      apiErrorName: 'rateLimitExceeded', retryAtMs: 5, retryAfter: 1, headers: [['a', 'b']] }),
    SignedDataVerifier: new pkg.SignedDataVerifier([root], false, E.SANDBOX, 'b', 1),
    VerificationException: new pkg.VerificationException(pkg.VerificationStatus.FAILURE, new Error('c'),
      { ...detail('VERIFICATION_FAILURE', 'bad_signature'), message: 'm' }),
    ReceiptUtility: new pkg.ReceiptUtility(),
    PromotionalOfferSignatureCreator: new pkg.PromotionalOfferSignatureCreator(key, 'k', 'b'),
    PromotionalOfferV2SignatureCreator: new pkg.PromotionalOfferV2SignatureCreator(key, 'k', 'i', 'b'),
    IntroductoryOfferEligibilitySignatureCreator: new pkg.IntroductoryOfferEligibilitySignatureCreator(key, 'k', 'i', 'b'),
    AdvancedCommerceInAppSignatureCreator: new pkg.AdvancedCommerceInAppSignatureCreator(key, 'k', 'i', 'b'),
    // cause: as the client sets it on a transport failure (lib/client.js), the signer bridge on a signer's failure.
    AppStoreServerError: Object.assign(new pkg.AppStoreServerError('m', { ...detail('RATE_LIMITED', 'local_rate_limit'),
      retryAtMs: 1 }), { cause: new Error('c') }),
    ReceiptVerifier: new pkg.ReceiptVerifier([root], 'b'),
    ExternalSigner: new pkg.ExternalSigner(() => new Uint8Array(64), '-----BEGIN PUBLIC KEY-----'),
    Ledger: pkg.Ledger.openSync('sqlite::memory:', new pkg.SignedDataVerifier([root], false, E.SANDBOX, 'b')),
  };
}

/** The public members of a class: its prototype chain's (to Object or Error) and a sample instance's own. */
function members(cls, sample) {
  const names = new Set();
  for (let p = cls.prototype; p && p !== Object.prototype && p !== Error.prototype; p = Object.getPrototypeOf(p))
    for (const n of Object.getOwnPropertyNames(p)) names.add(n);
  for (const n of Object.getOwnPropertyNames(sample)) names.add(n);
  return [...names].filter((n) => n !== 'constructor' && !n.startsWith('_')).sort();
}

const union = (names) => (names.length ? names.map((n) => JSON.stringify(n)).join(' | ') : 'never');

/** The TypeScript file that holds the declarations against the JavaScript, and the facts it was made from. */
function driftFile() {
  const made = samples();
  let n = 0;
  // Names left over fail to compile, each named: "Property 'X' is missing in type '{}'".
  const none = (names) => `const left${n++}: LeftOver<${names}> = {};`;
  const lines = ["import * as pkg from 'appstoreserver';",
    "type LeftOver<T extends PropertyKey> = { [K in T]: 'left over' };",
    'declare function see(...values: unknown[]): void;',
    `type JsExports = ${union(Object.keys(pkg))};`,
    none('Exclude<keyof typeof pkg, JsExports>') + ' // declared, not exported by the JavaScript',
    none('Exclude<JsExports, keyof typeof pkg>') + ' // exported by the JavaScript, not declared'];
  const facts = { classes: {}, enums: {}, values: [] };
  for (const [name, value] of Object.entries(pkg)) {
    if (typeof value === 'function' && !/^class\b/.test(Function.prototype.toString.call(value))) {
      // A plain function (appleRootCertificates, ...): declared as a function.
      facts.values.push(name);
      lines.push(`const ${name}_: (...args: never[]) => unknown = pkg.${name}; see(${name}_);`);
    } else if (typeof value === 'function') {
      assert.ok(made[name], `a sample of the class ${name} (add one to samples())`);
      const names = members(value, made[name]);
      facts.classes[name] = names;
      lines.push(`declare const ${name}_: InstanceType<typeof pkg.${name}>;`);
      // Every member of the JavaScript is declared (element access reaches protected and private ones too).
      lines.push(`see(${names.map((n) => `${name}_[${JSON.stringify(n)}]`).join(', ') || ''});`);
      // Every public member declared is in the JavaScript.
      lines.push(none(`Exclude<keyof InstanceType<typeof pkg.${name}>, ${union(names)}>`));
      const statics = Object.getOwnPropertyNames(value).filter((k) => !['length', 'name', 'prototype'].includes(k));
      lines.push(none(`Exclude<keyof typeof pkg.${name}, ${union([...statics, 'prototype'])}>`));
      lines.push(none(`Exclude<${union(statics)}, keyof typeof pkg.${name}>`));
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value).filter((k) => !/^\d+$/.test(k)); // numeric enums map values back to names
      facts.enums[name] = keys;
      lines.push(none(`Exclude<keyof typeof pkg.${name}, ${union(keys)}>`));
      lines.push(none(`Exclude<${union(keys)}, keyof typeof pkg.${name}>`));
      for (const k of keys) {
        const v = value[k];
        lines.push(`const ${name}_${k}: ${typeof v === 'number' ? 'number' : 'string'} = pkg.${name}.${k}; see(${name}_${k});`);
      }
    } else {
      facts.values.push(name);
      lines.push(`const ${name}_: ${typeof value} = pkg.${name}; see(${name}_);`);
    }
  }
  for (const m of Object.values(made)) if (typeof m.close === 'function') m.close();
  return { text: lines.join('\n') + '\n', facts };
}

test('tsc --strict: the declarations and the JavaScript name the same exports, class members and enum members', () => {
    assert.ok(HAVE_TSC, 'tsc is required for this check: install Debian node-typescript (scripts/install-deps)');
    const { text, facts } = driftFile();
    assert.ok(Object.keys(facts.classes).length >= 12 && Object.keys(facts.enums).length >= 50, JSON.stringify(facts));
    assert.ok(facts.classes.AppStoreServerAPIClient.includes('getTransactionInfo') &&
      facts.classes.AppStoreServerAPIClient.includes('makeFetchRequest') &&
      facts.classes.SignedDataVerifier.includes('verifyAndDecodeTransactionSync'), 'members of the generated bases too');
    const r = check(project({ 'drift.ts': text }));
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

test('the drift check fails when the declarations and the JavaScript differ', { skip: !HAVE_TSC && 'no tsc' }, () => {
  const { text } = driftFile();
  // Each case: what the declarations or the JavaScript would have, and the name tsc's error must give.
  // The package's declarations with one more class (a copy of index.d.ts, generated/types.d.ts, package.json).
  const extra = fs.mkdtempSync(path.join(tmpdir(), 'pkg-'));
  fs.mkdirSync(path.join(extra, 'generated'));
  for (const f of ['package.json', path.join('generated', 'types.d.ts')]) fs.copyFileSync(path.join(PKG, f), path.join(extra, f));
  fs.writeFileSync(path.join(extra, 'index.d.ts'), fs.readFileSync(path.join(PKG, 'index.d.ts'), 'utf8') +
    'export declare class NotInTheJs {}\n');
  const cases = [
    [{ 'drift.ts': text }, /NotInTheJs/, extra], // an export declared, not in the JavaScript
    [{ 'drift.ts': text.replace(/type JsExports = /, 'type JsExports = "Extra" | ') }, /Extra/], // the reverse
    [{ 'drift.ts': text.replace('AppStoreServerAPIClient_["answer"]',
      'AppStoreServerAPIClient_["answer"], AppStoreServerAPIClient_["notDeclared"]') }, /notDeclared/], // a JS member
    [{ 'drift.ts': text.replace(' | "createBearerTokenAsync"', '') }, /createBearerTokenAsync/], // a declared member
    [{ 'drift.ts': text.replace('"ACTIVE" | ', '') }, /ACTIVE/], // an enum member
  ];
  for (const [files, want, pkgDir] of cases) {
    assert.ok(pkgDir || files['drift.ts'] !== text, String(want));
    const r = check(project(files, pkgDir));
    assert.notEqual(r.status, 0, `not caught: ${want}`);
    assert.match(r.stdout, want);
  }
});

test('tsc with TypeScript\'s defaults (no target, no lib: ES3 in 4.8): the declarations still type-check', { skip: !HAVE_TSC && 'no tsc' }, () => {
  // The ...Pages iterators are AsyncIterableIterator (ES2018): the declarations reference that lib themselves.
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'ts-default-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(PKG, path.join(dir, 'node_modules', 'appstoreserver'));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, moduleResolution: 'node', types: [] }, files: ['app.ts'] }));
  fs.writeFileSync(path.join(dir, 'app.ts'), `import { AppStoreServerAPIClient, Environment, SignedDataVerifier } from 'appstoreserver';
const verifier = new SignedDataVerifier([], false, Environment.SANDBOX, 'com.example.app');
declare const client: AppStoreServerAPIClient;
const pages = client.getRefundHistoryPages('1');
export { verifier, pages };
`);
  const r = check(dir);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
