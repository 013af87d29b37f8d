#!/usr/bin/env node
'use strict';
// Every page of a customer's refund history through the App Store Server API (Get Refund History), with retries and
// the Sandbox fallback that App Review's purchases need.
//
//   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" node refund-history.js \
//       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app 2000000000000001
//
// --base-url points the client at another server (a test server); without it, Apple's.
const { parseArgs } = require('util');
const { AppStoreServerAPIClient, APIException } = require('appstoreserver');

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'key-id': { type: 'string' }, 'issuer-id': { type: 'string' }, 'bundle-id': { type: 'string' },
      environment: { type: 'string', default: 'Production' }, 'base-url': { type: 'string' },
    },
  });
  if (positionals.length !== 1 || !values['key-id'] || !values['issuer-id'] || !values['bundle-id']) {
    console.error('usage: node refund-history.js --key-id K --issuer-id I --bundle-id B [--environment E] [--base-url U] TRANSACTION_ID');
    return 2;
  }
  const key = process.env.APPSTORE_PRIVATE_KEY; // the .p8 text; never put a key on a command line
  const client = new AppStoreServerAPIClient(key, values['key-id'], values['issuer-id'], values['bundle-id'],
    values.environment, {
      baseUrl: values['base-url'], maxRetries: 3, sandboxFallback: values.environment === 'Production',
    });
  try {
    let n = 0;
    for await (const page of client.getRefundHistoryPages(positionals[0])) {
      console.log(`page ${++n}: ${(page.signedTransactions || []).length} refunded transactions, more: ${Boolean(page.hasMore)}`);
    }
  } catch (e) {
    if (!(e instanceof APIException)) throw e;
    console.error(`failed: ${e.message}`); // HTTP status, Apple's error code and message, Retry-After
    return 1;
  } finally {
    client.close();
  }
  return 0;
}

main().then((code) => { process.exitCode = code; });
