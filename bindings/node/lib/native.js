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
module.exports = native;
