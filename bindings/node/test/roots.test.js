'use strict';
// Apple's roots as the library carries them (appleRootCertificates), and roots given as PEM text (one or several
// certificates) wherever roots go.
const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { testpki, readTrimmed, CONFORMANCE } = require('./helpers.js');

const pem = (der, nl = '\n') => ['-----BEGIN CERTIFICATE-----', ...der.toString('base64').match(/.{1,64}/g),
  '-----END CERTIFICATE-----', ''].join(nl);

test('the bundled roots, with the fingerprints Apple publishes', () => {
  const details = lib.appleRootCertificateDetails();
  assert.deepEqual(details.map((d) => d.name), ['Apple Root CA - G3', 'Apple Inc. Root']);
  const published = ['63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79',
    'B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24'];
  details.forEach((d, i) => {
    assert.equal(d.sha256Fingerprint, published[i]);
    assert.equal(crypto.createHash('sha256').update(d.der).digest('hex').toUpperCase().match(/../g).join(':'), published[i]);
  });
  assert.deepEqual(lib.appleRootCertificates(), [details[0].der]);
  assert.deepEqual(lib.appleReceiptRootCertificates(), [details[1].der]);
});

test('a real Apple notification with the bundled root alone', async (t) => {
  const manifestPath = path.join(CONFORMANCE, 'manifest.json');
  if (!fs.existsSync(manifestPath)) return t.skip(`SKIPPED: ${CONFORMANCE} absent: no real notification verified`);
  const f = JSON.parse(fs.readFileSync(manifestPath, 'utf8')).files.find((x) => x.kind === 'notification' && x.signedDate);
  assert.deepEqual(lib.appleRootCertificates()[0], fs.readFileSync(path.join(CONFORMANCE, 'certs/apple-root-ca-g3.der')));
  const v = new lib.SignedDataVerifier(lib.appleRootCertificates(), false, f.environment, f.bundleId, f.appAppleId || 1);
  const n = await v.verifyAndDecodeNotification(readTrimmed(path.join(CONFORMANCE, f.path)));
  assert.ok(n.notificationUUID);
});

for (const shape of ['pem', 'pem-crlf', 'bundle']) {
  test(`a ${shape} root verifies like DER`, async () => {
    const dir = testpki();
    const der = fs.readFileSync(path.join(dir, 'root.der'));
    const root = shape === 'pem' ? pem(der) : shape === 'pem-crlf' ? pem(der, '\r\n')
      : pem(lib.appleRootCertificates()[0]) + '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' + pem(der);
    const v = new lib.SignedDataVerifier([Buffer.from(root)], false, 'Sandbox', 'com.example.testpki');
    const t = await v.verifyAndDecodeTransaction(readTrimmed(path.join(dir, 'jws/tx-valid.jws')));
    assert.ok(t.transactionId);
  });
}

test('roots that are neither DER nor PEM certificates are refused, saying why', async () => {
  for (const bad of ['-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n', 'not a certificate']) {
    let err;
    try {
      const v = new lib.SignedDataVerifier([Buffer.from(bad)], false, 'Sandbox', 'com.example.testpki');
      await v.verifyAndDecodeTransaction(readTrimmed(path.join(testpki(), 'jws/tx-valid.jws')));
    } catch (e) {
      err = e;
    }
    assert.ok(err, `accepted ${bad}`);
    assert.match(String(err.message), /root certificate 0/, String(err.message));
  }
});

test('what an error says: the precise message, then the reason', async () => {
  const v = new lib.SignedDataVerifier([fs.readFileSync(path.join(testpki(), 'root.der'))], false, 'Sandbox', 'com.other.app');
  await assert.rejects(v.verifyAndDecodeTransaction(readTrimmed(path.join(testpki(), 'jws/tx-valid.jws'))), (e) => {
    assert.equal(e.reason, 'wrong_bundle');
    assert.match(e.message, /bundle.* \[wrong_bundle\]$/);
    assert.match(String(e), /^VerificationException: .* \[wrong_bundle\]$/);
    return true;
  });
});
