#!/usr/bin/env node
// Builds the addon (build/Release/appstoreserver.node) next to the self-contained libappstoreserver.so.0 it links
// with, which it finds through its $ORIGIN run path. Run by `npm install` (the package's install script); no npm
// dependencies, no registry: the C compiler (cc, or $CC) and the Node headers that come with Node.
//
// In the repository (bindings/node of appstoreserver) the library comes from, in order:
//   $APPSTORESERVER_LIB                        a built self-contained libappstoreserver.so.0
//   <repo>/build/dist/libappstoreserver.so.0   the CMake target `dist`
//   a CMake build of `dist`                    cmake -S <repo> -B <repo>/build -G Ninja -DCMAKE_BUILD_TYPE=Release
// Installed from a packed tarball (no repository around it), the package carries the library, the header and the
// built addon in build/: when that addon loads, nothing is built (no compiler or Swift toolchain needed); otherwise
// it is rebuilt from src/ against the carried library and header.
//
// In the repository the addon is linked against glibc 2.28's symbol set (<repo>/build/glibc228-stubs, which the CMake
// build makes, or scripts/glibc228/stubs), so the addon, like the library, loads on glibc >= 2.28
// (docs/platforms.md); elsewhere it is linked against the machine's own glibc.
//
// Without what a build needs (a C compiler; to build the library, the Swift toolchain, CMake and Ninja) it stops
// before doing anything, with one line naming what is missing and the release tarball (appstoreserver-<version>.tgz,
// made by scripts/release), which installs with neither.
//
// The addon is linked with -z nodelete: a Node worker that alone loaded it would otherwise unload it (and the library
// it needs) at exit while thread-exit destructors still point into them.
//
// Options: --force (rebuild even when a packed addon loads), --quiet, --test (only the test build,
// build/Release/appstoreserver-test.node: the same sources plus src/trace.c, -DAPPSTORE_ADDON_TRACE; run-tests makes it
// after the package's build, and it is never packed).
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const PKG = path.resolve(__dirname, '..');
const REPO = path.resolve(PKG, '..', '..');
const OUT = path.join(PKG, 'build', 'Release');
const INCLUDE = path.join(PKG, 'build', 'include');
const ADDON = path.join(OUT, 'appstoreserver.node');
const TEST_ADDON = path.join(OUT, 'appstoreserver-test.node');
// src/addon.h names what each file holds; trace.c goes into the test build only.
const SOURCES = ['addon.c', 'marshal.c', 'handles.c', 'fetch_bridge.c', 'signer_bridge.c'];
const TEST_SOURCES = ['trace.c'];
const LIB = path.join(OUT, 'libappstoreserver.so.0');
const SONAME = 'libappstoreserver.so.0';
const args = new Set(process.argv.slice(2));
const quiet = args.has('--quiet');

function log(msg) {
  if (!quiet) console.log(`appstoreserver: ${msg}`);
}

function fail(msg) {
  console.error(`appstoreserver: build failed: ${msg}`);
  process.exit(1);
}

// The executable CMD would run as (PATH lookup), or null.
function which(cmd) {
  if (cmd.includes('/')) return fs.existsSync(cmd) ? cmd : null;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, cmd);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not there
    }
  }
  return null;
}

function version() {
  try {
    return JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8')).version;
  } catch {
    return '<version>';
  }
}

// Stops, in one line, when a build cannot start: NEEDS lists what is missing ([] when nothing is).
function preflight(needs) {
  if (!needs.length) return;
  console.error(`appstoreserver: cannot build the addon from source: ${needs.join('; ')}. ` +
    `Install the release tarball instead (npm install ./appstoreserver-${version()}.tgz: the addon and the library ` +
    'built in, no compiler or Swift needed), or install what is missing and run scripts/build-and-demo (README, Install)');
  process.exit(1);
}

const CC = process.env.CC || 'cc';
function compilerMissing() {
  return which(CC) ? [] : [`no C compiler (${CC}${process.env.CC ? ', from $CC' : ''}) on PATH`];
}

function loads(file) {
  try {
    const m = { exports: {} };
    process.dlopen(m, file);
    if (typeof m.exports.version !== 'function') throw new Error('the addon loaded but did not initialise');
    return true;
  } catch (e) {
    log(`the built addon does not load here (${e.message.split('\n')[0]})`);
    return false;
  }
}

function run(cmd, argv, opts = {}) {
  log(`${cmd} ${argv.join(' ')}`);
  try {
    execFileSync(cmd, argv, { stdio: quiet ? ['ignore', 'ignore', 'inherit'] : 'inherit', ...opts });
  } catch (e) {
    fail(`${cmd} exited with ${e.status == null ? e.message : `status ${e.status}`}`);
  }
}

function sameFile(a, b) {
  try {
    const sa = fs.statSync(a);
    const sb = fs.statSync(b);
    return sa.size === sb.size && fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    return false;
  }
}

const inRepo = fs.existsSync(path.join(REPO, 'include', 'appstoreserver.h')) &&
  fs.existsSync(path.join(REPO, 'spec', 'models.json')) && fs.existsSync(path.join(PKG, 'src', 'addon.c'));

function findLibrary() {
  const fromEnv = process.env.APPSTORESERVER_LIB;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) fail(`APPSTORESERVER_LIB=${fromEnv}: no such file`);
    return path.resolve(fromEnv);
  }
  const dist = path.join(REPO, 'build', 'dist', SONAME);
  if (fs.existsSync(dist)) return dist;
  const tools = ['swiftc', 'cmake', 'ninja'].filter((t) => !which(t));
  preflight([...compilerMissing(), ...(tools.length ? [`no built ${dist} and no ${tools.join(', ')} on PATH to build ` +
    'it (the Swift toolchain, CMake, Ninja; or set APPSTORESERVER_LIB to a built self-contained library)'] : [])]);
  log(`no ${dist}: building it with CMake (target dist; this builds the Swift library)`);
  run('cmake', ['-S', REPO, '-B', path.join(REPO, 'build'), '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release']);
  run('ninja', ['-C', path.join(REPO, 'build'), 'dist']);
  if (!fs.existsSync(dist)) fail(`the CMake build did not produce ${dist}`);
  return dist;
}

function nodeInclude() {
  const candidates = [];
  if (process.env.npm_config_nodedir) candidates.push(path.join(process.env.npm_config_nodedir, 'include', 'node'));
  candidates.push(path.resolve(process.execPath, '..', '..', 'include', 'node'));
  const found = candidates.find((d) => fs.existsSync(path.join(d, 'node_api.h')));
  if (!found) fail(`node_api.h not found (looked in ${candidates.join(', ')}); set npm_config_nodedir`);
  return found;
}

// glibc 2.28 link stubs (Linux, in the repository), or null: the machine's glibc.
function glibcStubs() {
  if (process.platform !== 'linux' || !inRepo) return null;
  const made = path.join(REPO, 'build', 'glibc228-stubs');
  if (fs.existsSync(path.join(made, 'libc.so'))) return made;
  const own = path.join(PKG, 'build', 'glibc228-stubs');
  if (fs.existsSync(path.join(own, 'libc.so'))) return own;
  try {
    execFileSync(path.join(REPO, 'scripts', 'glibc228', 'stubs'), [own], { stdio: ['ignore', 'ignore', 'inherit'] });
    return own;
  } catch (e) {
    log(`no glibc 2.28 link stubs (${e.message.split('\n')[0]}): the addon needs this machine's glibc`);
    return null;
  }
}

function compile(test = false) {
  const cc = CC;
  preflight(compilerMissing());
  const stubs = glibcStubs();
  const out = test ? TEST_ADDON : ADDON;
  const sources = test ? [...SOURCES, ...TEST_SOURCES] : SOURCES;
  const argv = ['-std=c11', '-O2', '-g0', '-Wall', '-Wextra', '-Werror', '-fPIC', '-shared', '-fvisibility=hidden',
    ...(test ? ['-DAPPSTORE_ADDON_TRACE'] : []),
    `-I${nodeInclude()}`, `-I${INCLUDE}`, `-I${path.join(PKG, 'generated')}`,
    ...sources.map((f) => path.join(PKG, 'src', f)), '-o', out + '.tmp', LIB,
    '-Wl,-rpath,$ORIGIN', '-Wl,--enable-new-dtags', `-Wl,-soname,${path.basename(out)}`, '-Wl,-z,nodelete', '-lpthread'];
  // Before the system's folders: -lpthread and the implicit -lc bind to 2.28's versions.
  if (stubs) argv.splice(argv.indexOf('-o'), 0, `-L${stubs}`);
  run(cc, argv);
  fs.renameSync(out + '.tmp', out);
}

fs.mkdirSync(OUT, { recursive: true });
fs.mkdirSync(INCLUDE, { recursive: true });

if (args.has('--test')) {
  if (!fs.existsSync(LIB) || !fs.existsSync(path.join(INCLUDE, 'appstoreserver.h')))
    fail('--test builds against the package build (build/Release, build/include): run the build without it first');
  compile(true);
  if (!loads(TEST_ADDON)) fail(`${TEST_ADDON} does not load`);
  log(`built ${path.relative(process.cwd(), TEST_ADDON) || TEST_ADDON}`);
  process.exit(0);
}

if (!inRepo) {
  if (!args.has('--force') && fs.existsSync(ADDON) && fs.existsSync(LIB) && loads(ADDON)) {
    log('using the addon built into the package (build/Release)');
    process.exit(0);
  }
  if (!fs.existsSync(LIB) || !fs.existsSync(path.join(INCLUDE, 'appstoreserver.h')))
    fail('the package carries no libappstoreserver.so.0 / appstoreserver.h to build against');
  compile();
} else {
  // Before anything is copied or printed (findLibrary names a missing compiler too when it must build the library).
  if (process.env.APPSTORESERVER_LIB || fs.existsSync(path.join(REPO, 'build', 'dist', SONAME))) preflight(compilerMissing());
  const lib = findLibrary();
  if (!sameFile(lib, LIB)) {
    fs.copyFileSync(lib, LIB + '.tmp');
    fs.renameSync(LIB + '.tmp', LIB);
  }
  fs.copyFileSync(path.join(REPO, 'include', 'appstoreserver.h'), path.join(INCLUDE, 'appstoreserver.h'));
  log(`library: ${lib}`);
  compile();
}
if (!loads(ADDON)) fail(`${ADDON} does not load`);
log(`built ${path.relative(process.cwd(), ADDON) || ADDON}`);
