package com.auth0.jwt.interfaces;

import com.fasterxml.jackson.databind.JsonNode;

/** The part of java-jwt's Claim Apple's tests use (harness only). */
public final class Claim {
    private final JsonNode node;

    public Claim(JsonNode node) {
        this.node = node;
    }

    public boolean isMissing() {
        return node == null || node.isMissingNode();
    }

    public String asString() {
        return node != null && node.isTextual() ? node.asText() : null;
    }

    public Boolean asBoolean() {
        return node != null && node.isBoolean() ? node.asBoolean() : null;
    }
}
