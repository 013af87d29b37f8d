'use strict';
// Child process of hardening.test.js: one exchange against a hostile base URL, alone in a fresh process so its peak
// RSS (process.resourceUsage().maxRSS) is its own. Prints one JSON line: the failure (or "resolved") and the peak
// RSS before and after, in MB.
//   node bounded-child.js api <baseUrl> <p8 key file> <keyId> <issuerId> <bundleId>
//   node bounded-child.js ocsp <hostile url> <root.der> <jws file> <bundleId>
const fs = require('fs');
const lib = require('../..');

const peakMb = () => process.resourceUsage().maxRSS / 1024;

async function main() {
  const [kind, url, ...rest] = process.argv.slice(2);
  let call;
  if (kind === 'api') {
    const [keyFile, keyId, issuerId, bundleId] = rest;
    const client = new lib.AppStoreServerAPIClient(fs.readFileSync(keyFile, 'utf8'), keyId, issuerId, bundleId,
      lib.Environment.LOCAL_TESTING, { baseUrl: url, timeoutMs: 60000 });
    call = () => client.getTransactionInfo('1');
  } else {
    const [rootFile, jwsFile, bundleId] = rest;
    // Every OCSP exchange goes to the hostile server, through the default transport (fetch with its options).
    const v = new lib.SignedDataVerifier([fs.readFileSync(rootFile)], true, lib.Environment.SANDBOX, bundleId, undefined,
      { fetch: (_, init) => fetch(url, init), ocspTimeoutMs: 60000 });
    call = () => v.verifyAndDecodeTransaction(fs.readFileSync(jwsFile, 'utf8').trim());
  }
  await (await fetch(url.replace(/\/[^/]*$/, '/status-204'))).arrayBuffer(); // fetch loaded and warm
  const before = peakMb();
  let outcome;
  try {
    await call();
    outcome = { resolved: true };
  } catch (e) {
    outcome = { name: e.name, libraryStatus: e.libraryStatus, reason: e.reason, message: e.message };
  }
  console.log(JSON.stringify({ ...outcome, before, after: peakMb() }));
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
