'use strict';
// `npm pack` gives a tarball that installs offline into another project and runs there with no toolchain on any
// path: no cc, no Swift, no CMake; PATH holds node and sh only, LD_LIBRARY_PATH is unset. The install script finds
// the addon the package carries (build/Release, next to the self-contained library it loads through $ORIGIN).
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');
const { PKG, REPO, tmpdir, testpki } = require('./helpers.js');

function npmCli() {
  const candidates = [path.resolve(process.execPath, '..', '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')];
  const which = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' });
  if (which.status === 0) candidates.push(path.resolve(path.dirname(fs.realpathSync(which.stdout.trim())), 'npm-cli.js'));
  return candidates.find((c) => fs.existsSync(c));
}

test('npm pack, then install offline into a scratch project without a toolchain, then use it', async (t) => {
  const npm = npmCli();
  assert.ok(npm, 'npm-cli.js found');
  const work = fs.mkdtempSync(path.join(tmpdir(), 'pack-'));
  // A bin folder with node and sh only.
  const bin = path.join(work, 'bin');
  fs.mkdirSync(bin);
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
  const env = { PATH: bin, HOME: work, npm_config_cache: path.join(work, 'npm-cache'), npm_config_update_notifier: 'false' };

  const packed = JSON.parse(execFileSync(process.execPath, [npm, 'pack', '--json', '--pack-destination', work],
    { cwd: PKG, env, encoding: 'utf8' }));
  const files = packed[0].files.map((f) => f.path);
  for (const want of ['package.json', 'index.js', 'index.d.ts', 'generated/index.mjs', 'generated/types.d.ts',
    'lib/client.js', 'src/addon.h', 'src/addon.c', 'src/marshal.c', 'src/handles.c', 'src/fetch_bridge.c',
    'src/signer_bridge.c', 'scripts/build.js', 'build/Release/appstoreserver.node',
    'build/Release/libappstoreserver.so.0', 'build/include/appstoreserver.h', 'LICENSE', 'THIRD_PARTY_NOTICES'])
    assert.ok(files.includes(want), `the tarball has ${want}`);
  assert.ok(!files.some((f) => f.startsWith('test/') || f.includes('node_modules')), 'no tests or node_modules in the tarball');
  assert.ok(!files.includes('build/Release/appstoreserver-test.node'), 'no test build of the addon in the tarball');
  const tgz = path.join(work, packed[0].filename);
  t.diagnostic(`${packed[0].filename}: ${files.length} files, ${(packed[0].size / 1048576).toFixed(1)} MB`);
  // LICENSE and THIRD_PARTY_NOTICES (what the bundled library contains), byte for byte the repository's, and
  // package.json's "license": "MIT".
  const notices = spawnSync('python3', [path.join(REPO, 'packaging', 'notices.py'), 'check', 'npm', tgz], { encoding: 'utf8' });
  assert.equal(notices.status, 0, notices.stdout + notices.stderr);

  const proj = path.join(work, 'project');
  fs.mkdirSync(proj);
  fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
  for (const tool of ['cc', 'gcc', 'swift', 'swiftc', 'cmake', 'ninja']) {
    assert.notEqual(spawnSync('sh', ['-c', `command -v ${tool}`], { env }).status, 0, `${tool} is not on the PATH`);
  }
  const install = spawnSync(process.execPath, [npm, 'install', '--offline', '--no-audit', '--no-fund', '--foreground-scripts', tgz],
    { cwd: proj, env, encoding: 'utf8' });
  assert.equal(install.status, 0, install.stdout + install.stderr);
  assert.match(install.stdout + install.stderr, /using the addon built into the package/, 'the install script used the packed addon');
  assert.ok(fs.existsSync(path.join(proj, 'node_modules', 'appstoreserver', 'build', 'Release', 'appstoreserver.node')));

  const dir = testpki();
  const smoke = `
    const fs = require('fs');
    const { SignedDataVerifier, Environment, ReceiptUtility, libraryVersion } = require('appstoreserver');
    const v = new SignedDataVerifier([fs.readFileSync(${JSON.stringify(path.join(dir, 'root.der'))})], false,
      Environment.SANDBOX, 'com.example.testpki');
    const jws = fs.readFileSync(${JSON.stringify(path.join(dir, 'jws', 'tx-valid.jws'))}, 'utf8').trim();
    v.verifyAndDecodeTransaction(jws).then((t) => {
      const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.includes('libappstoreserver'));
      console.log(JSON.stringify({ id: t.transactionId, sync: v.verifyAndDecodeTransactionSync(jws).transactionId,
        receipt: new ReceiptUtility().extractTransactionIdFromAppReceipt.length, libraryVersion, maps }));
    });`;
  const run = spawnSync(process.execPath, ['-e', smoke], { cwd: proj, env, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  assert.equal(out.id, '2000000912345678');
  assert.equal(out.sync, '2000000912345678');
  assert.ok(out.maps.length > 0 && out.maps.every((l) => l.includes(path.join(proj, 'node_modules', 'appstoreserver'))),
    `the library is loaded from the installed package: ${out.maps[0]}`);

  const esm = spawnSync(process.execPath, ['--input-type=module', '-e',
    "import { SignedDataVerifier, Environment, VerificationStatus } from 'appstoreserver';\n" +
    'import lib from \'appstoreserver\';\n' +
    'console.log(typeof SignedDataVerifier, Environment.PRODUCTION, VerificationStatus.FAILURE, lib.SignedDataVerifier === SignedDataVerifier);'],
  { cwd: proj, env, encoding: 'utf8' });
  assert.equal(esm.status, 0, esm.stderr);
  assert.equal(esm.stdout.trim(), 'function Production 7 true');

  // Where the packed addon does not fit, the installed package rebuilds from what it carries (src/, the header,
  // the library) with a C compiler alone: no repository, no Swift.
  const rebuild = spawnSync(process.execPath, [path.join('node_modules', 'appstoreserver', 'scripts', 'build.js'), '--force'],
    { cwd: proj, env: { ...env, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
  assert.equal(rebuild.status, 0, rebuild.stdout + rebuild.stderr);
  assert.match(rebuild.stdout, /built /);
  const again = spawnSync(process.execPath, ['-e', smoke], { cwd: proj, env, encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.equal(JSON.parse(again.stdout).id, '2000000912345678');
});
