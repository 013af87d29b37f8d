'use strict';
// The documentation of the methods that wrap a C function is the header's: every declaration comment ending with
// `@cfunction appstore_...` (index.d.ts, generated/types.d.ts) starts with the summary of that function as
// include/appstoreserver.h has it now (read by the generator's own header parser, not from a generated file), so a
// header comment changed without `scripts/generate` fails here.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const NODE = path.join(__dirname, '..');
const REPO = path.join(NODE, '..', '..');
const FILES = ['index.d.ts', path.join('generated', 'types.d.ts')];

function headerSummaries() {
  const code = 'import json, sys; sys.path.insert(0, sys.argv[1]); '
    + 'from specgen.header_parser import prototype_summaries; '
    + 'print(json.dumps(prototype_summaries(open(sys.argv[2], encoding="utf-8").read())))';
  return JSON.parse(execFileSync('python3', ['-c', code, path.join(REPO, 'scripts'),
    path.join(REPO, 'include', 'appstoreserver.h')], { encoding: 'utf8' }));
}

// Each `/** ... @cfunction name */` comment: the C function, its first paragraph and the declaration after it.
function tagged(file) {
  const text = fs.readFileSync(path.join(NODE, file), 'utf8');
  const out = [];
  for (const m of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*?@cfunction\s+(\w+)[\s\S]*?)\*\/\s*\n\s*([^\n]*)/g)) {
    const lines = m[1].split('\n').map((l) => l.trim().replace(/^\*\s?/, ''));
    if (lines.length && !lines[0]) lines.shift();
    const end = lines.findIndex((l) => !l.trim() || l.startsWith('@cfunction'));
    out.push({ file, name: m[2], summary: lines.slice(0, end).join(' ').replace(/\s+/g, ' ').trim(),
      declaration: m[3].trim() });
  }
  return out;
}

const normal = (s) => s.replace(/\s+/g, ' ').trim();

test('every @cfunction comment starts with the header summary of its C function', () => {
  const summaries = headerSummaries();
  const all = FILES.flatMap(tagged);
  assert.ok(all.length >= 30, `only ${all.length} @cfunction comments found`);
  for (const t of all) {
    assert.ok(summaries[t.name], `${t.file}: ${t.declaration}: ${t.name} has no comment in include/appstoreserver.h`);
    assert.equal(t.summary, normal(summaries[t.name]),
      `${t.file}: the comment of ${t.declaration} differs from the header's ${t.name} (run scripts/generate)`);
  }
});

test('the wrapping methods are the ones documented', () => {
  // A few known pairs, so that the check above cannot pass on comments attached to nothing.
  const all = FILES.flatMap(tagged);
  const find = (decl) => all.find((t) => t.declaration.startsWith(decl));
  for (const [decl, name] of [
    ['verifyAndDecodeNotification(', 'appstore_verifier_verify_notification'],
    ['verifyAndDecodeNotificationSync(', 'appstore_verifier_verify_notification'],
    ['extractTransactionIdFromAppReceipt(', 'appstore_receipt_extract_transaction_id'],
    ['createBearerToken(', 'appstore_signing_key_create_api_token'],
    ['static open(', 'appstore_ledger_open'],
  ]) {
    const t = find(decl);
    assert.ok(t, `no @cfunction comment above ${decl}`);
    assert.equal(t.name, name, `${decl} is documented from ${t.name}`);
  }
});
