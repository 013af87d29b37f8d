package com.auth0.jwt;

import com.auth0.jwt.algorithms.Algorithm;
import com.auth0.jwt.interfaces.DecodedJWT;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** The part of java-jwt's JWT Apple's tests use (harness only): decode, and create().withPayload(json).sign(ES256). */
public final class JWT {
    private JWT() {
    }

    public static DecodedJWT decode(String token) {
        return new DecodedJWT(token);
    }

    public static Builder create() {
        return new Builder();
    }

    public static final class Builder {
        private String payload = "{}";

        public Builder withPayload(String json) {
            this.payload = json;
            return this;
        }

        public String sign(Algorithm algorithm) {
            Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
            String input = b64.encodeToString("{\"alg\":\"ES256\",\"typ\":\"JWT\"}".getBytes(StandardCharsets.UTF_8)) + "."
                    + b64.encodeToString(payload.getBytes(StandardCharsets.UTF_8));
            return input + "." + b64.encodeToString(algorithm.sign(input.getBytes(StandardCharsets.US_ASCII)));
        }
    }
}
