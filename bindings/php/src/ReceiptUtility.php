<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;
use AppStoreServer\Model\AppReceiptTransactionIds;
use FFI;

/**
 * Transaction ids from legacy receipts (Apple's ReceiptUtility), for teams migrating off verifyReceipt. NONE of
 * these checks a signature: use the ids only to look the customer up with the App Store Server API.
 */
final class ReceiptUtility
{
    /**
     * The first in-app transaction id of a base64 app receipt (PKCS#7, BER or DER, Xcode's extra OCTET STRING wrapping
     * included), as Apple's Python, Node and Java libraries return it: precisely the first attribute 1703 (transaction
     * id) or 1705 (original transaction id) in encoding order, which in Apple's receipts is the transaction id of the
     * first in-app record. (Apple's Swift library returns the last such value instead.) The signature is not checked.
     *
     * @throws ReceiptException not a receipt (reason RECEIPT_MALFORMED) or a transaction receipt (WRONG_KIND)
     *
     * @cfunction appstore_receipt_extract_transaction_id
     */
    public function extractTransactionIdFromAppReceipt(string $appReceipt): ?string
    {
        return self::extract('appstore_receipt_extract_transaction_id', $appReceipt);
    }

    /**
     * The transaction id of an old-style (iOS 6) transaction receipt: base64 text with "purchase-info" = "<base64>";
     * whose decoded text has "transaction-id" = "<id>"; (matched as Apple's libraries do; the first match wins).
     *
     * @cfunction appstore_transaction_receipt_extract_transaction_id
     */
    public function extractTransactionIdFromTransactionReceipt(string $transactionReceipt): ?string
    {
        return self::extract('appstore_transaction_receipt_extract_transaction_id', $transactionReceipt);
    }

    /**
     * Every transaction id of a base64 app receipt, which no Apple library offers: transactionIds (attribute 1703 of
     * each in-app record, in receipt order), originalTransactionIds (the distinct 1705 values in order of first
     * appearance), inApp (one entry per record with its transactionId and originalTransactionId, each absent when the
     * record lacks it) and firstTransactionId (the first in-app transaction id, as the single-id extraction returns
     * it). A receipt without in-app records gives empty lists and no firstTransactionId. The signature is not checked.
     *
     * @cfunction appstore_receipt_extract_transaction_ids
     */
    public function extractTransactionIds(string $appReceipt): AppReceiptTransactionIds
    {
        $text = self::call('appstore_receipt_extract_transaction_ids', $appReceipt);
        return AppReceiptTransactionIds::fromArray(json_decode($text, true, 512, JSON_THROW_ON_ERROR));
    }

    private static function extract(string $fn, string $receipt): ?string
    {
        try {
            return self::call($fn, $receipt);
        } catch (ReceiptException $e) {
            if ($e->appstoreStatus === AppStoreStatus::NOT_FOUND) {
                return null;
            }
            throw $e;
        }
    }

    private static function call(string $fn, string $receipt): string
    {
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->$fn($receipt, strlen($receipt), FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            throw ReceiptException::fromInfo(Native::takeError($err, $st));
        }
        return Native::takeString($out);
    }
}
