package com.auth0.jwt.algorithms;

import java.security.GeneralSecurityException;
import java.security.Signature;
import java.security.interfaces.ECPrivateKey;

/** The part of java-jwt's Algorithm Apple's tests use (harness only): ES256 with java.security. */
public final class Algorithm {
    private final ECPrivateKey key;

    private Algorithm(ECPrivateKey key) {
        this.key = key;
    }

    public static Algorithm ECDSA256(ECPrivateKey key) {
        return new Algorithm(key);
    }

    public byte[] sign(byte[] input) {
        try {
            Signature s = Signature.getInstance("SHA256withECDSAinP1363Format");
            s.initSign(key);
            s.update(input);
            return s.sign();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }
}
