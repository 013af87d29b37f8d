'use strict';
// Argument checks of the public API: a wrong type is a TypeError naming the method and the argument.
const { isPem, what } = require('./redact.js');

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'a Uint8Array';
  // A key pasted into the wrong argument is described, never echoed.
  if (isPem(v)) return what(v);
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v).slice(0, 40)}`;
}

function fail(where, name, want, v) {
  return new TypeError(`${where}: ${name} must be ${want} (got ${describe(v)})`);
}

function string(where, name, v) {
  if (typeof v !== 'string') throw fail(where, name, 'a string', v);
  return v;
}

function optionalString(where, name, v) {
  return v == null ? null : string(where, name, v);
}

function boolean(where, name, v) {
  if (typeof v !== 'boolean') throw fail(where, name, 'a boolean', v);
  return v;
}

function integer(where, name, v) {
  if (typeof v === 'bigint') return v;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw fail(where, name, 'an integer', v);
  return v;
}

function bytes(where, name, v) {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw fail(where, name, 'a Buffer / Uint8Array', v);
}

function textOrBytes(where, name, v) {
  if (typeof v === 'string' || v instanceof Uint8Array) return v;
  throw fail(where, name, 'a string (or Buffer)', v);
}

function object(where, name, v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array)
    throw fail(where, name, 'an object', v);
  return v;
}

function options(where, v) {
  if (v === undefined || v === null) return {};
  return object(where, 'options', v);
}

module.exports = { string, optionalString, boolean, integer, bytes, textOrBytes, object, options, fail, describe };
