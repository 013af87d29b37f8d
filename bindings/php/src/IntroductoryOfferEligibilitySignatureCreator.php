<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;

/** Introductory offer eligibility signatures (aud "introductory-offer-eligibility"; Apple's class of that name). */
class IntroductoryOfferEligibilitySignatureCreator extends JWSSignatureCreator
{
    /**
     * An introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
     * (a JSON boolean) and transactionId, all required.
     *
     * @cfunction appstore_signing_key_create_introductory_offer_eligibility
     */
    public function createSignature(string $productId, bool $allowIntroductoryOffer, string $transactionId): string
    {
        Native::cText($productId, 'productId');
        Native::cText($transactionId, 'transactionId');
        return $this->key->sign('appstore_signing_key_create_introductory_offer_eligibility', $productId,
            $allowIntroductoryOffer ? 1 : 0, $transactionId, $this->nonceArgument());
    }
}
