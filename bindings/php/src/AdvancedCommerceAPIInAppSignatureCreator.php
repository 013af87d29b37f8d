<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Model\AdvancedCommerceOneTimeChargeCreateRequest;
use AppStoreServer\Model\AdvancedCommerceSubscriptionCreateRequest;
use AppStoreServer\Model\AdvancedCommerceSubscriptionModifyInAppRequest;
use AppStoreServer\Model\AdvancedCommerceSubscriptionReactivateInAppRequest;

/**
 * Advanced Commerce in-app request signatures (aud "advanced-commerce-api"; Apple's
 * AdvancedCommerceAPIInAppSignatureCreator). The request is validated against Apple's limits (a failure names the
 * field) and keys the model does not know are refused, so nothing given is dropped silently.
 */
class AdvancedCommerceAPIInAppSignatureCreator extends JWSSignatureCreator
{
    /**
     * An Advanced Commerce in-app request JWS (aud "advanced-commerce-api"). The request is one of the four in-app
     * request models, chosen by its "operation" (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
     * REACTIVATE_SUBSCRIPTION); it is validated against Apple's limits (a failure names the field), re-encoded with
     * operation and version "1", and its standard base64 is the `request` claim. Keys the model does not know are
     * refused at every level (the message names the key path, e.g. "items[0].descripton"), so nothing given is dropped
     * silently; "version", when given, must be "1".
     *
     * @param AdvancedCommerceOneTimeChargeCreateRequest|AdvancedCommerceSubscriptionCreateRequest|AdvancedCommerceSubscriptionModifyInAppRequest|AdvancedCommerceSubscriptionReactivateInAppRequest|array $advancedCommerceInAppRequest
     *        one of the four in-app request models, or its JSON object as an array (with "operation")
     * @throws \InvalidArgumentException a request the library refuses (the message names the field)
     *
     * @cfunction appstore_signing_key_create_advanced_commerce_in_app
     */
    public function createSignature(
        AdvancedCommerceOneTimeChargeCreateRequest|AdvancedCommerceSubscriptionCreateRequest|AdvancedCommerceSubscriptionModifyInAppRequest|AdvancedCommerceSubscriptionReactivateInAppRequest|array $advancedCommerceInAppRequest,
    ): string {
        $obj = is_array($advancedCommerceInAppRequest) ? $advancedCommerceInAppRequest : $advancedCommerceInAppRequest->jsonSerialize();
        $json = json_encode($obj, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION);
        if ($json === false) {
            throw new \InvalidArgumentException('advancedCommerceInAppRequest does not convert to JSON: ' . json_last_error_msg());
        }
        return $this->key->sign('appstore_signing_key_create_advanced_commerce_in_app', $json, strlen($json), $this->nonceArgument());
    }
}
