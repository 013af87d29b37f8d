<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;

/** Promotional offer V2 signatures (aud "promotional-offer"; Apple's PromotionalOfferV2SignatureCreator). */
class PromotionalOfferV2SignatureCreator extends JWSSignatureCreator
{
    /**
     * A promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when one is
     * given. No exp; the nonce a lowercase UUID.
     *
     * @cfunction appstore_signing_key_create_promotional_offer_v2
     */
    public function createSignature(string $productId, string $offerIdentifier, ?string $transactionId = null): string
    {
        Native::cText($productId, 'productId');
        Native::cText($offerIdentifier, 'offerIdentifier');
        if ($transactionId !== null) {
            Native::cText($transactionId, 'transactionId');
        }
        return $this->key->sign('appstore_signing_key_create_promotional_offer_v2', $productId, $offerIdentifier, $transactionId,
            $this->nonceArgument());
    }
}
