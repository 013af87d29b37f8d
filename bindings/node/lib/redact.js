'use strict';
// Key material never reaches an error message: a PEM block passed where another value belongs (a private key given
// as the base URL, the key id, ...) is described instead of shown, in the binding's own messages and in those of
// the library it passes on.

// A PEM block, or what a message kept of one (quoted, truncated, case-folded, percent-encoded inside a URL): from its
// BEGIN line to its END line, or to the end of the text when the END line is not there.
const BEGIN = /-----BEGIN/i;
const PEM_TEXT = /-----BEGIN[\s\S]*?(?:-----END[^-]*-----|$)/gi;

function what(pem) {
  return /PRIVATE(?:\s|%20|\+)+KEY/i.test(pem.slice(0, 64)) ? '<a PEM private key, not shown>' : '<PEM text, not shown>';
}

/** text with every PEM block in it replaced by a description. */
function redact(text) {
  return typeof text === 'string' && BEGIN.test(text) ? text.replace(PEM_TEXT, what) : text;
}

/** true for a value that must never be shown (a string or bytes holding PEM text). */
function isPem(v) {
  if (typeof v === 'string') return BEGIN.test(v);
  if (v instanceof Uint8Array) return BEGIN.test(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('latin1'));
  return false;
}

module.exports = { redact, isPem, what };
