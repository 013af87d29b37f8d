package appstoreserver.signature;

/**
 * A private key held outside the process (a KMS or an HSM), for {@link SigningKey#withSigner}: every signature made
 * with the key (API tokens, promotional offers v1 and v2, introductory-offer eligibility, Advanced Commerce requests,
 * the API client's bearer tokens) is asked of this signer, on the thread that asked for the signature (possibly several
 * threads at once). The library checks every signature with the signer's public key before it uses it.
 */
@FunctionalInterface
public interface ExternalSigner {
    /**
     * Signs: the ECDSA P-256 signature of SHA-256(message), as DER (what KMS and most HSMs return) or as 64 bytes r||s.
     *
     * @param message the bytes to sign (a JWS signing input, or the promotional offer v1 payload)
     * @param digest SHA-256(message), for signers that take a digest (32 bytes)
     * @return the signature; a throw or null fails the signature (the call throws AppStoreServerException with
     *         reason SIGNER_FAILED and what was thrown as its cause)
     */
    byte[] sign(byte[] message, byte[] digest) throws Exception;

    /**
     * As {@link #sign(byte[], byte[])}, told the time the signature may take: the key's timeout, or less when an API
     * call's deadline is nearer (what is left of the client's timeout). A signer whose own client takes a timeout (a
     * KMS SDK's) should pass it on: a signature that comes later is abandoned, the call fails at its deadline, and the
     * signer's thread is left to finish on its own. By default it calls {@link #sign(byte[], byte[])}.
     */
    default byte[] sign(byte[] message, byte[] digest, java.time.Duration timeout) throws Exception {
        return sign(message, digest);
    }
}
