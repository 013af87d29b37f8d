package appstoreserver.migration;

import appstoreserver.AppStoreStatus;
import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Errors;
import appstoreserver.internal.Json;
import appstoreserver.internal.NativeError;
import appstoreserver.model.AppReceiptTransactionIds;

import java.io.IOException;

/**
 * Transaction ids of legacy receipts, for teams moving off verifyReceipt (Apple's class and methods), plus every id of
 * an app receipt. *NO validation* is performed on the receipt by these methods: anyone can build a receipt that
 * parses; use the ids only to call the App Store Server API, or verify the receipt with {@link ReceiptVerifier}.
 */
public class ReceiptUtility {

    /**
     * The first in-app transaction id of a base64 app receipt (PKCS#7, BER or DER, Xcode's extra OCTET STRING
     * wrapping included), as Apple's Python, Node and Java libraries return it: precisely the first attribute 1703
     * (transaction id) or 1705 (original transaction id) in encoding order, which in Apple's receipts is the
     * transaction id of the first in-app record. (Apple's Swift library returns the last such value instead.) The
     * signature is not checked.
     *
     * <p>Extracts a transaction id from an encoded App Receipt: the first in-app transaction id, as Apple's Java library
     * returns it.
     *
     * @param appReceipt The unmodified app receipt
     * @return A transaction id from the array of in-app purchases, null if the receipt contains no in-app purchases.
     * @throws IOException              never (Apple's declared exception, kept so that existing code compiles)
     * @throws IllegalArgumentException If the receipt could not be parsed or did not match the expected format
     *                                  (an AppStoreServerException's message is the cause)
     * @cfunction appstore_receipt_extract_transaction_id
     */
    public String extractTransactionIdFromAppReceipt(String appReceipt) throws IOException {
        return extract(Args.text(appReceipt, "appReceipt"), true);
    }

    /**
     * The transaction id of an old-style (iOS 6) transaction receipt: base64 text with "purchase-info" =
     * "&lt;base64&gt;"; whose decoded text has "transaction-id" = "&lt;id&gt;"; (matched as Apple's libraries do; the
     * first match wins).
     *
     * <p>Extracts a transaction id from an encoded transactional receipt.
     *
     * @param transactionReceipt The unmodified transactionReceipt
     * @return A transaction id, or null if no transactionId is found in the receipt (also when the receipt has no
     *         purchase-info, where Apple's Java library throws IllegalArgumentException; its Python, Node and Swift
     *         libraries return null)
     * @throws IllegalArgumentException If the receipt could not be parsed or did not match the expected format
     * @cfunction appstore_transaction_receipt_extract_transaction_id
     */
    public String extractTransactionIdFromTransactionReceipt(String transactionReceipt) {
        return extract(Args.text(transactionReceipt, "transactionReceipt"), false);
    }

    /**
     * Every transaction id of a base64 app receipt, which no Apple library offers: transactionIds (attribute 1703 of
     * each in-app record, in receipt order), originalTransactionIds (the distinct 1705 values in order of first
     * appearance), inApp (one entry per record with its transactionId and originalTransactionId, each absent when the
     * record lacks it) and firstTransactionId (the first in-app transaction id, as the single-id extraction returns
     * it). A receipt without in-app records gives empty lists and no firstTransactionId. The signature is not
     * checked.
     *
     * <p>Every transaction id of an app receipt (beyond Apple): transaction ids in receipt order, the distinct original
     * transaction ids, one entry per in-app record, and the first transaction id.
     *
     * @throws IllegalArgumentException If the receipt could not be parsed
     * @cfunction appstore_receipt_extract_transaction_ids
     */
    public AppReceiptTransactionIds extractTransactionIdsFromAppReceipt(String appReceipt) {
        byte[] receipt = Args.text(appReceipt, "appReceipt");
        try {
            return Json.read(Abi.receipt_extract_transaction_ids(receipt), AppReceiptTransactionIds.class);
        } catch (NativeError e) {
            throw invalid(e);
        } catch (IOException e) {
            throw new IllegalStateException("the library's receipt JSON does not map to AppReceiptTransactionIds", e);
        }
    }

    private static String extract(byte[] receipt, boolean app) {
        try {
            return Args.utf8(app ? Abi.receipt_extract_transaction_id(receipt)
                    : Abi.transaction_receipt_extract_transaction_id(receipt));
        } catch (NativeError e) {
            if (e.status == AppStoreStatus.NOT_FOUND.getValue()) {
                return null;
            }
            throw invalid(e);
        }
    }

    private static IllegalArgumentException invalid(NativeError e) {
        RuntimeException r = Errors.library(e);
        if (r instanceof IllegalArgumentException) {
            return (IllegalArgumentException) r;
        }
        return new IllegalArgumentException("Invalid App Receipt: " + e.detail, r);
    }
}
