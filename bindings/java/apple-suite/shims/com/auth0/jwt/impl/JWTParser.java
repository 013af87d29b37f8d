package com.auth0.jwt.impl;

/** Imported (unused) by one of Apple's tests (harness only). */
public final class JWTParser {
}
