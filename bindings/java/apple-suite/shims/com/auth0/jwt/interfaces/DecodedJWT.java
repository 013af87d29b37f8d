package com.auth0.jwt.interfaces;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;

/** The part of java-jwt's DecodedJWT Apple's tests use (harness only): decoding, no verification. */
public final class DecodedJWT {
    private final JsonNode header;
    private final JsonNode payload;

    public DecodedJWT(String jwt) {
        String[] parts = jwt.split("\\.", -1);
        if (parts.length != 3) {
            throw new IllegalArgumentException("not a JWT: " + parts.length + " parts");
        }
        ObjectMapper m = new ObjectMapper();
        try {
            header = m.readTree(Base64.getUrlDecoder().decode(parts[0]));
            payload = m.readTree(Base64.getUrlDecoder().decode(parts[1]));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String text(JsonNode n, String name) {
        JsonNode v = n.get(name);
        return v == null ? null : v.asText();
    }

    private Date date(String name) {
        JsonNode v = payload.get(name);
        return v == null ? null : new Date(v.asLong() * 1000);
    }

    public String getAlgorithm() {
        return text(header, "alg");
    }

    public String getType() {
        return text(header, "typ");
    }

    public String getKeyId() {
        return text(header, "kid");
    }

    public String getIssuer() {
        return text(payload, "iss");
    }

    public Date getIssuedAt() {
        return date("iat");
    }

    public Date getExpiresAt() {
        return date("exp");
    }

    public List<String> getAudience() {
        JsonNode v = payload.get("aud");
        if (v == null) {
            return null;
        }
        List<String> out = new ArrayList<>();
        if (v.isArray()) {
            v.forEach(a -> out.add(a.asText()));
        } else {
            out.add(v.asText());
        }
        return out;
    }

    public Claim getClaim(String name) {
        return new Claim(payload.get(name));
    }
}
