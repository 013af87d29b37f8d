<?php

declare(strict_types=1);

namespace AppStoreServer;

/**
 * A key held outside the process (a KMS or an HSM), usable wherever a .p8 key is (the signature creators, the API
 * client's bearer tokens). Every signature is asked of $signer: it gets the bytes to sign and their SHA-256 digest (for
 * signers that take a digest) and returns the ECDSA P-256 signature of SHA-256(message), as DER (what KMS and most
 * HSMs return) or as 64 bytes r||s. The library checks every signature against $publicKey (PEM "BEGIN PUBLIC KEY" or
 * DER SubjectPublicKeyInfo) and refuses one that does not verify, or that took longer than $timeoutMs (the signer's
 * own client must enforce that deadline: the library cannot interrupt it). A signer that throws fails that
 * signature with SigningException / FailureReason::SIGNER_FAILED.
 *
 * $signer gets a third argument, the milliseconds it has: $timeoutMs, or less when an API call's deadline is nearer
 * (what is left of the client's timeout). PHP cannot abandon a signer that overruns it: the call waits for it, then
 * discards its signature and fails with APIException (status TRANSPORT_ERROR, reason DEADLINE_EXCEEDED); pass the
 * time on to the KMS client's own timeout so that it never overruns.
 */
final class ExternalKey
{
    /** @var \Closure(string $message, string $digest, int $timeoutMs): string */
    public readonly \Closure $signer;

    /** @param callable(string $message, string $digest, int $timeoutMs): string $signer */
    public function __construct(callable $signer, public readonly string $publicKey, public readonly int $timeoutMs = 10000)
    {
        if ($timeoutMs < 1 || $timeoutMs > 0xFFFFFFFF) {
            throw new \InvalidArgumentException("timeoutMs must be 1 ... 4294967295, got $timeoutMs");
        }
        $this->signer = \Closure::fromCallable($signer);
    }
}
