'use strict';
// run-tests runs this file first and requires the runner to report its failure: a failing test is seen as one.
const test = require('node:test');
const assert = require('assert/strict');

test('canary: this test fails on purpose', () => {
  assert.equal(1 + 1, 3);
});
