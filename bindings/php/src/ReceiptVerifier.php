<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\NotCloneable;
use AppStoreServer\Model\VerifiedAppReceiptFields;
use FFI;
use FFI\CData;

/**
 * Verifies base64 app receipts (beyond Apple's libraries): the PKCS#7 signature, the signer's chain to one of the
 * roots at the receipt's creation date, Apple's marker extensions, the bundle id. For App Store receipts the root is
 * Apple Inc. Root (AppleRoots::appleIncRoot()). Immutable.
 */
final class ReceiptVerifier
{
    use NotCloneable;

    private CData $handle;

    /**
     * @param list<string> $rootCertificates DER or PEM roots, the only trust anchors
     * @param ?string $bundleId null accepts any bundle id
     * @throws ConfigurationException no roots, or a root that is no certificate
     */
    public function __construct(array $rootCertificates, ?string $bundleId = null)
    {
        $roots = array_values($rootCertificates);
        foreach ($roots as $i => $r) {
            if (!is_string($r)) {
                throw new \TypeError("rootCertificates[$i] must be a string (DER or PEM), not " . get_debug_type($r));
            }
        }
        if ($bundleId !== null) {
            Native::cText($bundleId, 'bundleId');
        }
        $f = Native::ffi();
        $n = count($roots);
        $keep = [];
        $ders = $lens = null;
        if ($n > 0) {
            $ders = $f->new("const void *[$n]");
            $lens = $f->new("size_t[$n]");
            foreach ($roots as $i => $r) {
                $len = max(1, strlen($r));
                $keep[$i] = $f->new("char[$len]");
                FFI::memcpy($keep[$i], $r, strlen($r));
                $ders[$i] = $f->cast('const void *', FFI::addr($keep[$i]));
                $lens[$i] = strlen($r);
            }
        }
        $out = $f->new('appstore_receipt_verifier *');
        $err = Native::errorSlot();
        $st = $f->appstore_receipt_verifier_new($ders, $lens, $n, $bundleId, FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === 1 ? new \InvalidArgumentException($i->message) : ConfigurationException::fromInfo($i);
        }
        $this->handle = $out;
        $this->own();
    }

    public function __destruct()
    {
        if ($this->owns() && isset($this->handle)) {
            Native::ffi()->appstore_receipt_verifier_free($this->handle);
        }
    }

    /**
     * Verifies a base64 app receipt, in order: the PKCS#7 SignedData structure and the receipt attributes (bounded
     * parse); the PKCS#7 signature over the content with the signer certificate's key (OpenSSL), which authenticates
     * the content; then the signer certificate's chain to a configured root, validated at the now-authenticated
     * creation date (attribute 12; at the current time when the receipt has none, and the output says so), exactly
     * signer <- intermediate <- root, with Apple's marker extensions (1.2.840.113635.100.6.11.1 on the signer,
     * 1.2.840.113635.100.6.2.1 on the intermediate); the documented fields; the bundle id. Signature first, so that
     * tampering with the signed content (the creation date included) is BAD_SIGNATURE, never EXPIRED. The result: the
     * receipt's documented fields (bundle id, versions, creation and expiration dates, the in-app records) and how it
     * was verified (the effective date and its source, the signer). Xcode (StoreKit testing) receipts are signed by a
     * local self-signed certificate and do not verify.
     *
     * @throws VerificationException a receipt that does not verify (->status in Apple's vocabulary, ->reason precise)
     *
     * @cfunction appstore_receipt_verifier_verify
     */
    public function verify(string $appReceipt): VerifiedAppReceiptFields
    {
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->appstore_receipt_verifier_verify($this->handle, $appReceipt, strlen($appReceipt), FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        return VerifiedAppReceiptFields::fromArray(json_decode(Native::takeString($out), true, 512, JSON_THROW_ON_ERROR));
    }
}
