<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\SigningKey;
use FFI;

/** Promotional offer signatures v1 (StoreKit 1; Apple's PromotionalOfferSignatureCreator). */
final class PromotionalOfferSignatureCreator
{
    private SigningKey $key;

    /**
     * @param string|ExternalKey $signingKey the .p8 text, or a key held in a KMS or an HSM
     * @throws SigningException a key that cannot be used
     */
    public function __construct(string|ExternalKey $signingKey, string $keyId, string $bundleId)
    {
        $this->key = new SigningKey($signingKey, $keyId, null, $bundleId);
    }

    /**
     * A promotional offer signature v1 (StoreKit 1): the standard base64 DER ECDSA signature over the U+2063-joined
     * string of bundle id, key id, product id, offer id, lowercase application username (app account token), lowercase
     * nonce and timestamp (milliseconds since 1970).
     *
     * @param string $nonce a UUID
     * @param int $timestamp milliseconds since 1970
     *
     * @cfunction appstore_signing_key_create_promotional_offer_v1
     */
    public function createSignature(string $productIdentifier, string $subscriptionOfferId, string $applicationUsername,
                                    string $nonce, int $timestamp): string
    {
        foreach (['productIdentifier' => $productIdentifier, 'subscriptionOfferId' => $subscriptionOfferId,
                     'applicationUsername' => $applicationUsername, 'nonce' => $nonce] as $n => $v) {
            Native::cText($v, $n);
        }
        if ($timestamp <= 0) {
            throw new \InvalidArgumentException("timestamp must be milliseconds since 1970, got $timestamp");
        }
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->appstore_signing_key_create_promotional_offer_v1($this->key->handle, $productIdentifier, $subscriptionOfferId,
            $applicationUsername, $nonce, $timestamp, FFI::addr($out), null, null, FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === 1 ? new \InvalidArgumentException($i->message) : SigningException::fromInfo($i);
        }
        return Native::takeString($out);
    }
}
