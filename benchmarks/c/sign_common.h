/*
 * sign_common.h — what the `sign` group's C programs share (header-only, OpenSSL libcrypto + jansson, nothing of
 * libappstoreserver): the identifiers every benchmark signs with (benchmarks/swift uses the same values), base64,
 * and the full, library-independent check of one signature:
 *
 *   JWS cases: three base64url segments; header alg ES256 + kid (+ typ JWT when present); the 64-byte r||s
 *   signature verified with EVP_DigestVerify over "header.payload" with the public half of the benchmark key;
 *   claims iss / bid / aud / iat (within a day of now) and the case's own claims (api_token: exp = iat + 300;
 *   the creators: a 36-character nonce, no exp, productId / offerIdentifier / transactionId /
 *   allowIntroductoryOffer, and for Advanced Commerce the `request` claim decoded back to the request).
 *   promotional_offer_v1: the U+2063-joined payload rebuilt from the returned nonce and timestamp, the standard
 *   base64 DER signature verified over it.
 *
 * All functions are static inline so a program that uses only part of the header compiles cleanly with -Werror.
 */
#ifndef APPSTORE_SIGN_COMMON_H
#define APPSTORE_SIGN_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#define SIGN_KEY_ID "BENCHKEY01"
#define SIGN_ISSUER_ID "57246542-96fe-1a63-e053-0824d011072a"
#define SIGN_BUNDLE_ID "com.example.bench"
#define SIGN_PRODUCT_ID "com.example.bench.monthly"
#define SIGN_OFFER_ID "WINBACK_50"
#define SIGN_APP_ACCOUNT_TOKEN "7e3b0c44-98fc-4c14-9afb-f4c8996fb924"
#define SIGN_TRANSACTION_ID "2000000123456789"
#define SIGN_API_TOKEN_LIFETIME 300

/* A small CREATE_SUBSCRIPTION request (the C ABI takes it as JSON; benchmarks/swift builds the same model). */
#define SIGN_AC_REQUEST_JSON                                                                                        \
    "{\"operation\":\"CREATE_SUBSCRIPTION\",\"currency\":\"USD\",\"taxCode\":\"C003-00-1\",\"period\":\"P1M\","   \
    "\"descriptors\":{\"description\":\"Pro\",\"displayName\":\"Pro\"},"                                            \
    "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"},"                            \
    "\"items\":[{\"description\":\"Pro plan\",\"displayName\":\"Pro monthly\",\"price\":1990,"                     \
    "\"SKU\":\"com.example.pro.monthly\","                                                                          \
    "\"offer\":{\"period\":\"P1M\",\"periodCount\":3,\"price\":990,\"reason\":\"ACQUISITION\"}}]}"

/* The cases of the group, in report order; each is a different API with its own `aud`. */
enum sign_case_id {
    SIGN_API_TOKEN,
    SIGN_PROMO_V1,
    SIGN_PROMO_V2,
    SIGN_INTRO,
    SIGN_ADVANCED,
    SIGN_ADVANCED_JSON, /* Swift only: the JSON entry point; same output as SIGN_ADVANCED */
    SIGN_CASE_COUNT
};

static const char *const sign_case_names[SIGN_CASE_COUNT] = {
    "api_token", "promotional_offer_v1", "promotional_offer_v2", "introductory_offer_eligibility",
    "advanced_commerce_in_app", "advanced_commerce_in_app_json",
};

static inline int sign_case_by_name(const char *name) {
    for (int i = 0; i < SIGN_CASE_COUNT; i++)
        if (strcmp(sign_case_names[i], name) == 0) return i;
    return -1;
}

static inline const char *sign_case_audience(int c) {
    switch (c) {
    case SIGN_API_TOKEN: return "appstoreconnect-v1";
    case SIGN_PROMO_V2: return "promotional-offer";
    case SIGN_INTRO: return "introductory-offer-eligibility";
    case SIGN_ADVANCED:
    case SIGN_ADVANCED_JSON: return "advanced-commerce-api";
    default: return NULL;
    }
}

/* ---- base64 ---------------------------------------------------------------------------------------------------- */

static const char sign_b64_std_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char sign_b64_url_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Encodes into out (room for 4*ceil(len/3)+1), padded with '=' unless url. Returns the length written. */
static inline size_t sign_b64_encode(const unsigned char *in, size_t len, char *out, int url) {
    const char *t = url ? sign_b64_url_chars : sign_b64_std_chars;
    char *o = out;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        *o++ = t[v >> 18], *o++ = t[v >> 12 & 63], *o++ = t[v >> 6 & 63], *o++ = t[v & 63];
    }
    if (len - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        *o++ = t[v >> 18], *o++ = t[v >> 12 & 63];
        if (!url) *o++ = '=', *o++ = '=';
    } else if (len - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        *o++ = t[v >> 18], *o++ = t[v >> 12 & 63], *o++ = t[v >> 6 & 63];
        if (!url) *o++ = '=';
    }
    *o = 0;
    return (size_t)(o - out);
}

/* Decodes standard or url base64 (the alphabet must match `url`; trailing '=' only for standard) into a new
 * malloc'ed, NUL-terminated buffer. Returns NULL on any invalid character or length. */
static inline unsigned char *sign_b64_decode(const char *in, size_t len, int url, size_t *out_len) {
    const char *t = url ? sign_b64_url_chars : sign_b64_std_chars;
    if (!url) {
        if (len % 4 != 0) return NULL;
        while (len > 0 && in[len - 1] == '=') len--;
    }
    if (len % 4 == 1) return NULL;
    unsigned char *out = malloc(len * 3 / 4 + 4), *o = out;
    if (!out) return NULL;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = in[i] ? strchr(t, in[i]) : NULL;
        if (!p) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (unsigned)(p - t);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (unsigned char)(acc >> bits);
        }
    }
    *o = 0;
    *out_len = (size_t)(o - out);
    return out;
}

/* ---- keys and signatures ------------------------------------------------------------------------------------- */

static inline EVP_PKEY *sign_load_key(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, (void *)"");
    fclose(f);
    ERR_clear_error();
    return k;
}

/* ECDSA P-256 / SHA-256 verification of a DER ECDSA-Sig-Value. 1 = valid. */
static inline int sign_verify_der(EVP_PKEY *key, const void *msg, size_t msg_len, const unsigned char *der,
                                  size_t der_len) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
             EVP_DigestVerify(ctx, der, der_len, msg, msg_len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* Same for a JOSE 64-byte r||s signature (re-encoded as DER). */
static inline int sign_verify_jose(EVP_PKEY *key, const void *msg, size_t msg_len, const unsigned char *rs) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, 32, NULL), *s = BN_bin2bn(rs + 32, 32, NULL);
    int ok = 0;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* owned by sig now */
        unsigned char *der = NULL;
        int der_len = i2d_ECDSA_SIG(sig, &der);
        if (der_len > 0) ok = sign_verify_der(key, msg, msg_len, der, (size_t)der_len);
        OPENSSL_free(der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return ok;
}

/* ---- the full check of one result ---------------------------------------------------------------------------- */

static inline int sign_is_uuid(const char *s) {
    if (!s || strlen(s) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i])) return 0; /* lowercase, as the APIs promise */
    }
    return 1;
}

static inline int sign_str_is(json_t *obj, const char *key, const char *want) {
    const char *v = json_string_value(json_object_get(obj, key));
    return v && strcmp(v, want) == 0;
}

/* Checks one JWS made by case c. Returns NULL when it is valid, else a static message. */
static inline const char *sign_check_jws(EVP_PKEY *key, int c, const char *jws) {
    static char why[256];
    const char *d1 = strchr(jws, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.')) return "not three dot-separated segments";
    size_t hlen = 0, clen = 0, slen = 0;
    unsigned char *h = sign_b64_decode(jws, (size_t)(d1 - jws), 1, &hlen);
    unsigned char *cl = sign_b64_decode(d1 + 1, (size_t)(d2 - d1 - 1), 1, &clen);
    unsigned char *sig = sign_b64_decode(d2 + 1, strlen(d2 + 1), 1, &slen);
    json_t *header = h ? json_loadb((const char *)h, hlen, 0, NULL) : NULL;
    json_t *claims = cl ? json_loadb((const char *)cl, clen, 0, NULL) : NULL;
    const char *bad = NULL;
    time_t now = time(NULL);
    json_t *iat = json_object_get(claims, "iat"), *exp = json_object_get(claims, "exp");
    if (!h || !cl || !sig) bad = "a segment is not base64url";
    else if (slen != 64) bad = "the signature is not 64 bytes (r||s)";
    else if (!json_is_object(header) || !json_is_object(claims)) bad = "header or claims is not a JSON object";
    else if (!sign_str_is(header, "alg", "ES256") || !sign_str_is(header, "kid", SIGN_KEY_ID))
        bad = "header alg/kid wrong";
    else if (json_object_get(header, "typ") && !sign_str_is(header, "typ", "JWT")) bad = "header typ is not JWT";
    else if (!sign_verify_jose(key, jws, (size_t)(d2 - jws), sig)) bad = "ES256 signature does not verify";
    else if (!sign_str_is(claims, "iss", SIGN_ISSUER_ID) || !sign_str_is(claims, "bid", SIGN_BUNDLE_ID) ||
             !sign_str_is(claims, "aud", sign_case_audience(c)))
        bad = "claims iss/bid/aud wrong";
    else if (!json_is_integer(iat) || llabs((long long)json_integer_value(iat) - (long long)now) > 86400)
        bad = "claim iat missing or not within a day of now";
    else if (c == SIGN_API_TOKEN) {
        if (!json_is_integer(exp) || json_integer_value(exp) - json_integer_value(iat) != SIGN_API_TOKEN_LIFETIME)
            bad = "api token: exp is not iat + 300";
    } else if (exp) bad = "signature creators must not set exp";
    else if (!sign_is_uuid(json_string_value(json_object_get(claims, "nonce"))))
        bad = "claim nonce is not a lowercase UUID";
    else if (c == SIGN_PROMO_V2) {
        if (!sign_str_is(claims, "productId", SIGN_PRODUCT_ID) || !sign_str_is(claims, "offerIdentifier", SIGN_OFFER_ID) ||
            !sign_str_is(claims, "transactionId", SIGN_TRANSACTION_ID))
            bad = "promotional offer v2 claims wrong";
    } else if (c == SIGN_INTRO) {
        if (!sign_str_is(claims, "productId", SIGN_PRODUCT_ID) ||
            !json_is_true(json_object_get(claims, "allowIntroductoryOffer")) ||
            !sign_str_is(claims, "transactionId", SIGN_TRANSACTION_ID))
            bad = "introductory offer eligibility claims wrong";
    } else if (c == SIGN_ADVANCED || c == SIGN_ADVANCED_JSON) {
        const char *req64 = json_string_value(json_object_get(claims, "request"));
        size_t rlen = 0;
        unsigned char *rj = req64 ? sign_b64_decode(req64, strlen(req64), 0, &rlen) : NULL;
        json_t *req = rj ? json_loadb((const char *)rj, rlen, 0, NULL) : NULL;
        json_t *item = json_array_get(json_object_get(req, "items"), 0);
        if (!req) bad = "claim request is not standard base64 of JSON";
        else if (!sign_str_is(req, "operation", "CREATE_SUBSCRIPTION") || !sign_str_is(req, "version", "1") ||
                 !sign_str_is(req, "currency", "USD") || !sign_str_is(req, "period", "P1M") ||
                 !sign_str_is(json_object_get(req, "requestInfo"), "requestReferenceId",
                              "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11") ||
                 !sign_str_is(item, "SKU", "com.example.pro.monthly") ||
                 json_integer_value(json_object_get(item, "price")) != 1990 ||
                 json_integer_value(json_object_get(json_object_get(item, "offer"), "periodCount")) != 3)
            bad = "claim request does not decode to the CREATE_SUBSCRIPTION request";
        json_decref(req);
        free(rj);
    }
    json_decref(header);
    json_decref(claims);
    free(h);
    free(cl);
    free(sig);
    if (bad) snprintf(why, sizeof why, "%s", bad);
    return bad ? why : NULL;
}

/* The exact v1 payload: bundle id, key id, product id, offer id, lowercase app account token, lowercase nonce,
 * timestamp (ms), joined with U+2063 (UTF-8 E2 81 A3). Returns the length. */
static inline size_t sign_v1_payload(char *out, size_t cap, const char *nonce, long long timestamp_ms) {
    int n = snprintf(out, cap, "%s\xe2\x81\xa3%s\xe2\x81\xa3%s\xe2\x81\xa3%s\xe2\x81\xa3%s\xe2\x81\xa3%s\xe2\x81\xa3%lld",
                     SIGN_BUNDLE_ID, SIGN_KEY_ID, SIGN_PRODUCT_ID, SIGN_OFFER_ID, SIGN_APP_ACCOUNT_TOKEN, nonce,
                     timestamp_ms);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Checks one promotional offer v1 result. Returns NULL when valid. */
static inline const char *sign_check_v1(EVP_PKEY *key, const char *signature, const char *nonce,
                                        long long timestamp_ms) {
    if (!sign_is_uuid(nonce)) return "v1: the returned nonce is not a lowercase UUID";
    long long now_ms = (long long)time(NULL) * 1000;
    if (llabs(timestamp_ms - now_ms) > 86400000LL) return "v1: the returned timestamp is not within a day of now";
    char payload[512];
    size_t plen = sign_v1_payload(payload, sizeof payload, nonce, timestamp_ms);
    size_t dlen = 0;
    unsigned char *der = sign_b64_decode(signature, strlen(signature), 0, &dlen);
    if (!der) return "v1: the signature is not standard base64";
    int ok = plen && sign_verify_der(key, payload, plen, der, dlen);
    free(der);
    return ok ? NULL : "v1: the DER signature does not verify over the U+2063-joined payload";
}

/* ---- the cheap per-call check ---------------------------------------------------------------------------------- */

/* A JWS shaped like the first one: starts with the same "header." prefix (the header is fixed for a key), has a
 * non-trivial payload segment and exactly one more dot followed by 86 base64url characters (64-byte r||s). */
static inline int sign_jws_shape_ok(const char *jws, const char *prefix, size_t prefix_len) {
    if (!jws || strncmp(jws, prefix, prefix_len) != 0) return 0;
    const char *d2 = strchr(jws + prefix_len, '.');
    return d2 && d2 - (jws + prefix_len) >= 16 && strlen(d2 + 1) == 86 && !memchr(d2 + 1, '.', 86);
}

#endif
