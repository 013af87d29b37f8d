'use strict';
// The addon and the library it loads need at most glibc 2.28 (docs/platforms.md): scripts/check-glibc reads their
// symbol versions (highest GLIBC_ version, no GLIBCXX/CXXABI/GCC, no packed relocations).
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const PKG = path.resolve(__dirname, '..');
const REPO = path.resolve(PKG, '..', '..');

test('the addon and its library load on glibc 2.28', { skip: process.platform !== 'linux' }, () => {
  const files = ['appstoreserver.node', 'libappstoreserver.so.0'].map((f) => path.join(PKG, 'build', 'Release', f));
  const r = spawnSync('python3', [path.join(REPO, 'scripts', 'check-glibc'), ...files], { encoding: 'utf8' });
  assert.strictEqual(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /check-glibc: 2 passed, 0 failed/);
});
