#!/usr/bin/env node
'use strict';
// Sign a promotional offer for StoreKit 2 (Promotional Offer V2 signature, a JWS your app passes to StoreKit).
//
//   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" node offer-signature.js \
//       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app com.example.monthly WINBACK
const { parseArgs } = require('util');
const { PromotionalOfferV2SignatureCreator } = require('appstoreserver');

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'key-id': { type: 'string' }, 'issuer-id': { type: 'string' }, 'bundle-id': { type: 'string' },
      'transaction-id': { type: 'string' },
    },
  });
  if (positionals.length !== 2 || !values['key-id'] || !values['issuer-id'] || !values['bundle-id']) {
    console.error('usage: node offer-signature.js --key-id K --issuer-id I --bundle-id B [--transaction-id T] PRODUCT_ID OFFER_ID');
    return 2;
  }
  const creator = new PromotionalOfferV2SignatureCreator(process.env.APPSTORE_PRIVATE_KEY, values['key-id'],
    values['issuer-id'], values['bundle-id']);
  console.log(creator.createSignature(positionals[0], positionals[1], values['transaction-id']));
  return 0;
}

process.exitCode = main();
