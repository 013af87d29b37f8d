<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\SigningKey;

/** The JWS signature creators' shared key (Apple's JWSSignatureCreator): an ES256 JWS with kid, iss, bid, iat, nonce. */
abstract class JWSSignatureCreator
{
    protected SigningKey $key;

    /**
     * @param string|ExternalKey $signingKey the .p8 text, or a key held in a KMS or an HSM
     * @throws SigningException a key that cannot be used
     */
    public function __construct(string|ExternalKey $signingKey, string $keyId, string $issuerId, string $bundleId)
    {
        $this->key = new SigningKey($signingKey, $keyId, $issuerId, $bundleId);
    }

    /**
     * The nonce of the next signature (as Apple's Java createNonce(); PHP has no Apple library): null lets the library
     * make a random UUID; a subclass may return its own UUID, signed lowercase (anything else is
     * \InvalidArgumentException). Called once per createSignature.
     */
    protected function createNonce(): ?string
    {
        return null;
    }

    /** createNonce()'s answer, checked for NUL bytes, for the C call. */
    protected function nonceArgument(): ?string
    {
        $nonce = $this->createNonce();
        if ($nonce !== null) {
            Internal\Native::cText($nonce, 'nonce');
        }
        return $nonce;
    }
}
