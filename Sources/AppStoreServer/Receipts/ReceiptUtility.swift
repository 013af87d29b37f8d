/// Apple's `ReceiptUtility`: the transaction id of a legacy receipt, to seed a Get Transaction History request
/// when migrating off verifyReceipt. NO signature is checked (see `ReceiptVerifier` for that), and every failure
/// gives nil, as in Apple's Swift library. Use `AppReceipt` / `TransactionReceipt` for the reason of a failure
/// and for every id of a receipt.
public enum ReceiptUtility {
    /// The first in-app transaction id of a base64 app receipt (PKCS#7), as Apple's Python, Node and Java libraries
    /// return it; nil when the receipt has no in-app purchases or cannot be read. Apple's Swift library returns the
    /// last id instead (see `AppReceipt.firstTransactionId`).
    public static func extractTransactionId(appReceipt: String) -> String? {
        (try? AppReceipt(base64: appReceipt))?.firstTransactionId
    }

    /// The transaction id of a base64 old-style (iOS 6) transaction receipt; nil when it has none or cannot be read.
    public static func extractTransactionId(transactionReceipt: String) -> String? {
        (try? TransactionReceipt(base64: transactionReceipt))?.transactionId
    }
}
