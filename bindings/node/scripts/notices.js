#!/usr/bin/env node
// npm's prepack script: copies the repository's LICENSE and THIRD_PARTY_NOTICES (what the bundled self-contained
// library contains) into the package folder, where "files" in package.json puts them into the tarball. The copies
// are git-ignored; outside the repository (a package unpacked from its tarball) the ones it carries are kept.
'use strict';

const fs = require('fs');
const path = require('path');

const PKG = path.resolve(__dirname, '..');
const REPO = path.resolve(PKG, '..', '..');
const inRepo = fs.existsSync(path.join(REPO, 'CMakeLists.txt')) && fs.existsSync(path.join(REPO, 'bindings', 'node'));

for (const name of ['LICENSE', 'THIRD_PARTY_NOTICES']) {
  const source = path.join(REPO, name);
  const target = path.join(PKG, name);
  if (inRepo && fs.existsSync(source)) {
    fs.copyFileSync(source, target);
  } else if (!fs.existsSync(target)) {
    console.error(`appstoreserver: ${name} not found in the repository (${REPO}) nor in the package (${PKG})`);
    process.exit(1);
  }
}
