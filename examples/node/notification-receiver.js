#!/usr/bin/env node
'use strict';
// Receive App Store Server Notifications V2 into a purchase ledger: `appstoreserver serve`'s delivery contract in a
// page of node:http (docs/serve.md).
//
//   node notification-receiver.js com.example.app --ledger sqlite:ledger.db [--environment Production
//       --app-apple-id 1234] [--root FILE] [--port 8080]
//
// POST /notifications  the body Apple posts, {"signedPayload": ...}: 200 only once the ledger has made the
//                      notification durable (a duplicate is 200 too); 400 / 403 / 422 when it is not a genuine
//                      notification of this app and environment (nothing stored); 503 when storing failed, so that
//                      Apple sends it again.
// GET /customers/ID    the customer's entitlements (an appAccountToken). No authentication here: keep it on loopback.
//
// Listens on 127.0.0.1 (put a TLS proxy in front); prints "PORT <n>" once listening (--port 0 picks a free one).
const fs = require('fs');
const http = require('node:http');
const { parseArgs } = require('util');
const { Ledger, SignedDataVerifier, VerificationException, appleRootCertificates } = require('appstoreserver');

const MAX_BODY = 64 * 1024; // Apple's notifications are 5-20 KB
// A refusal's HTTP status by the library's status (docs/serve.md): malformed 400, not genuine 403, another app or
// environment 422; an OCSP responder that could not be asked is ours to retry (503).
const HTTP_STATUS = {
  INVALID_JWT_FORMAT: 400, VERIFICATION_FAILURE: 403, INVALID_CHAIN_LENGTH: 403, INVALID_CERTIFICATE: 403,
  INVALID_APP_IDENTIFIER: 422, INVALID_ENVIRONMENT: 422, RETRYABLE_VERIFICATION_FAILURE: 503,
};

function answer(res, status, body) {
  const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length });
  res.end(data);
}

/** The request body, or null when it is larger than MAX_BODY (the connection is then closed). */
function readBody(req, res) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        res.setHeader('Connection', 'close');
        answer(res, 413, { error: 'body_too_large' });
        req.destroy();
        resolve(null);
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function receive(ledger, req, res) {
  const body = await readBody(req, res);
  if (body === null) return;
  let signedPayload;
  try {
    signedPayload = JSON.parse(body.toString('utf8')).signedPayload;
  } catch (e) { /* not JSON: below */ }
  if (typeof signedPayload !== 'string') return answer(res, 400, { error: 'malformed_body' });
  try {
    const result = await ledger.ingestNotification(signedPayload); // verifies deeply; resolves once durable
    answer(res, 200, result);
  } catch (e) {
    if (e instanceof VerificationException) {
      console.error(`refused: ${e.libraryStatus} (${e.reason}): ${e.message}`);
      return answer(res, HTTP_STATUS[e.libraryStatus] || 500, { error: e.reason, message: e.message });
    }
    console.error(`not stored: ${e.message}`);
    answer(res, 503, { error: 'storage', message: e.message });
  }
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ledger: { type: 'string' }, environment: { type: 'string', default: 'Sandbox' }, 'app-apple-id': { type: 'string' },
      root: { type: 'string' }, port: { type: 'string', default: '8080' },
    },
  });
  if (positionals.length !== 1 || !values.ledger) {
    console.error('usage: node notification-receiver.js BUNDLE_ID --ledger sqlite:ledger.db [--environment E] ' +
      '[--app-apple-id N] [--root FILE] [--port N]');
    return 2;
  }
  const roots = values.root ? [fs.readFileSync(values.root)] : appleRootCertificates();
  const appAppleId = values['app-apple-id'] ? Number(values['app-apple-id']) : undefined;
  const verifier = new SignedDataVerifier(roots, false, values.environment, positionals[0], appAppleId);
  const ledger = await Ledger.open(values.ledger, verifier);
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/notifications') {
      receive(ledger, req, res).catch((e) => answer(res, 500, { error: 'internal', message: e.message }));
    } else if (req.method === 'GET' && req.url.startsWith('/customers/')) {
      ledger.customer(decodeURIComponent(req.url.slice('/customers/'.length)))
        .then((c) => answer(res, 200, c), (e) => answer(res, 503, { error: 'storage', message: e.message }));
    } else {
      answer(res, 404, { error: 'not found' });
    }
  });
  server.listen(Number(values.port), '127.0.0.1', () => console.log(`PORT ${server.address().port}`));
  process.on('SIGTERM', () => server.close(() => { ledger.close(); process.exit(0); }));
  return undefined;
}

main().then((code) => { if (code !== undefined) process.exitCode = code; });
