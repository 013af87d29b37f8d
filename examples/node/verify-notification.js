#!/usr/bin/env node
'use strict';
// Verify an App Store Server Notification V2 (the body Apple POSTs to your server) and print what it says.
//
//   node verify-notification.js notification.json com.example.app [--environment Production --app-apple-id 1234]
//
// Apple's root certificate comes with the package (appleRootCertificates(), checked against the fingerprint Apple
// publishes); --root FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
const fs = require('fs');
const { parseArgs } = require('util');
const { SignedDataVerifier, VerificationException, VerificationStatus, appleRootCertificates } = require('appstoreserver');

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { environment: { type: 'string', default: 'Sandbox' }, 'app-apple-id': { type: 'string' }, root: { type: 'string' } },
  });
  if (positionals.length !== 2) {
    console.error('usage: node verify-notification.js NOTIFICATION BUNDLE_ID [--environment E] [--app-apple-id N] [--root FILE]');
    return 2;
  }
  const [file, bundleId] = positionals;
  const text = fs.readFileSync(file, 'utf8').trim();
  const signedPayload = text.startsWith('{') ? JSON.parse(text).signedPayload : text;
  const roots = values.root ? [fs.readFileSync(values.root)] : appleRootCertificates();
  const appAppleId = values['app-apple-id'] ? Number(values['app-apple-id']) : undefined;
  const verifier = new SignedDataVerifier(roots, false, values.environment, bundleId, appAppleId);
  let notification;
  try {
    notification = await verifier.verifyAndDecodeNotification(signedPayload);
  } catch (e) {
    if (!(e instanceof VerificationException)) throw e;
    console.error(`NOT VERIFIED: ${VerificationStatus[e.status]} ${e.reason}: ${e.message}`); // Apple's status, the reason, what failed
    return 1;
  }
  console.log(`type: ${notification.notificationType}${notification.subtype ? ` ${notification.subtype}` : ''}`);
  if (notification.data) {
    console.log(`bundle: ${notification.data.bundleId}, environment: ${notification.data.environment}`);
    if (notification.data.signedTransactionInfo) {
      const t = await verifier.verifyAndDecodeTransaction(notification.data.signedTransactionInfo);
      console.log(`transaction: ${t.transactionId} (${t.productId})`);
    }
  }
  return 0;
}

main().then((code) => { process.exitCode = code; });
