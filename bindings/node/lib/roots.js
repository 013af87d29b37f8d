'use strict';
// Apple's root certificates as the library carries them: each checked against the SHA-256 fingerprint Apple
// publishes (https://www.apple.com/certificateauthority/) before use, so a verifier needs no download.
const native = require('./native.js');

/** Every root the library carries: [{name, sha256Fingerprint, der}], Apple Root CA - G3 first, then Apple Inc. Root. */
function appleRootCertificateDetails() {
  const out = [];
  for (let i = 0, n = Number(native.apple_root_count()); i < n; i++) {
    out.push({ name: native.apple_root_name(i), sha256Fingerprint: native.apple_root_sha256(i), der: Buffer.from(native.apple_root_der(i)) });
  }
  return out;
}

/** Apple Root CA - G3 (DER), the anchor of App Store signed data: what SignedDataVerifier's appleRootCertificates takes. */
function appleRootCertificates() {
  return appleRootCertificateDetails().filter((r) => r.name === 'Apple Root CA - G3').map((r) => r.der);
}

/** Apple Inc. Root (DER), the anchor of app receipts (ReceiptVerifier). */
function appleReceiptRootCertificates() {
  return appleRootCertificateDetails().filter((r) => r.name === 'Apple Inc. Root').map((r) => r.der);
}

module.exports = { appleRootCertificateDetails, appleRootCertificates, appleReceiptRootCertificates };
