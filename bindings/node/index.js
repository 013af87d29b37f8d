'use strict';
// CommonJS entry (ESM: generated/index.mjs, through the package's exports map).
module.exports = require('./lib/index.js');
