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
     * The first in-app transaction id of a base64 app receipt, as Apple's Python, Node and Java libraries return it;
     * null when the receipt holds none.
     *
     * @throws ReceiptException not a receipt (reason RECEIPT_MALFORMED) or a transaction receipt (WRONG_KIND)
     */
    public function extractTransactionIdFromAppReceipt(string $appReceipt): ?string
    {
        return self::extract('appstore_receipt_extract_transaction_id', $appReceipt);
    }

    /** The transaction id of an old-style (iOS 6) transaction receipt; null when it holds none. */
    public function extractTransactionIdFromTransactionReceipt(string $transactionReceipt): ?string
    {
        return self::extract('appstore_transaction_receipt_extract_transaction_id', $transactionReceipt);
    }

    /** Every transaction id of a base64 app receipt (beyond Apple's libraries). */
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
