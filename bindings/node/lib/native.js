'use strict';
// The addon (build/Release/appstoreserver.node), which loads libappstoreserver.so.0 from its own folder ($ORIGIN).
const path = require('path');

const ADDON = path.join(__dirname, '..', 'build', 'Release', 'appstoreserver.node');
let native;
try {
  native = require(ADDON);
} catch (e) {
  const err = new Error(`appstoreserver: cannot load the native addon ${ADDON}: ${e.message}\n` +
    'Build it with `npm install` (or `node scripts/build.js`) in the package folder.');
  err.cause = e;
  throw err;
}
// Pool calls resolve with parsed JSON and reject with the library's exceptions directly (no extra Promise step).
const { convert } = require('./errors.js');
const KINDS = [[/^verifier_verify_|^verifier_notification_leaving_identity$/, 'verify'], [/^ledger_ingest_/, 'verify'], [/^receipt_/, 'receipt'], [/^signing_key_/, 'sign'],
  [/^api_client_build_request$|^api_call_next$/, 'api']];
native.configure(JSON.parse, (e, fn) => {
  const kind = KINDS.find(([re]) => re.test(fn));
  return convert(e, kind ? kind[1] : 'config');
});
module.exports = native;
