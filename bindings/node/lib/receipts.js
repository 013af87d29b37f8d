'use strict';
// Legacy receipts: Apple's ReceiptUtility (same methods; null when the receipt holds no transaction id), every
// transaction id of an app receipt, and app receipt verification (PKCS#7 signature and chain), beyond Apple.
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard } = require('./errors.js');

function extract(fn, where, receipt) {
  args.textOrBytes(where, 'receipt', receipt);
  try {
    return native[fn](receipt);
  } catch (e) {
    if (e && e.appstoreError && e.statusName === 'NOT_FOUND') return null;
    throw convert(e, 'receipt');
  }
}

class ReceiptUtility {
  /** The first in-app transaction id of a base64 app receipt (as Apple's Node library), or null. Not verified. */
  extractTransactionIdFromAppReceipt(appReceipt) {
    return extract('receipt_extract_transaction_id', 'ReceiptUtility.extractTransactionIdFromAppReceipt', appReceipt);
  }

  /** The transaction id of an old-style transaction receipt, or null. Not verified. */
  extractTransactionIdFromTransactionReceipt(transactionReceipt) {
    return extract('transaction_receipt_extract_transaction_id',
      'ReceiptUtility.extractTransactionIdFromTransactionReceipt', transactionReceipt);
  }

  /** Every transaction id of a base64 app receipt: {firstTransactionId, transactionIds, originalTransactionIds,
   *  inApp}. Not verified. */
  extractTransactionIdsFromAppReceipt(appReceipt) {
    args.textOrBytes('ReceiptUtility.extractTransactionIdsFromAppReceipt', 'appReceipt', appReceipt);
    return JSON.parse(guard('receipt', () => native.receipt_extract_transaction_ids(appReceipt)));
  }
}

/** App receipt verification: PKCS#7 signature, then the signer's chain to these roots (Apple Inc. Root for App Store
 *  receipts) at the receipt's creation date, Apple's marker extensions, and the bundle id when given. */
class ReceiptVerifier {
  constructor(rootCertificates, bundleId) {
    const w = 'ReceiptVerifier';
    if (!Array.isArray(rootCertificates)) throw args.fail(w, 'rootCertificates', 'an array of Buffers', rootCertificates);
    rootCertificates.forEach((r, i) => args.bytes(w, `rootCertificates[${i}]`, r));
    const bid = args.optionalString(w, 'bundleId', bundleId);
    Object.defineProperty(this, '_handle', { value: guard('config', () => native.receipt_verifier_new(rootCertificates, bid)) });
  }

  /** Resolves to the receipt's verified fields; runs on the libuv thread pool. */
  verify(appReceipt) {
    if (typeof appReceipt !== 'string' && !(appReceipt instanceof Uint8Array))
      return Promise.reject(args.fail('ReceiptVerifier.verify', 'appReceipt', 'a string', appReceipt));
    try {
      return native.async.receipt_verifier_verify(this._handle, appReceipt); // parsed, or a converted rejection
    } catch (e) {
      return Promise.reject(convert(e, 'receipt'));
    }
  }

  verifySync(appReceipt) {
    args.textOrBytes('ReceiptVerifier.verifySync', 'appReceipt', appReceipt);
    return JSON.parse(guard('receipt', () => native.receipt_verifier_verify(this._handle, appReceipt)));
  }

  close() {
    native.close(this._handle);
  }
}

module.exports = { ReceiptUtility, ReceiptVerifier };
