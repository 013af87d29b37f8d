/*
 * Signature creation through the C ABI.
 *   sign_test KEYDIR OUT.json
 * KEYDIR comes from `check_signatures.py keys`. Writes every token / signature it makes to OUT.json for
 * `check_signatures.py check` (Python cryptography + joserfc verify them), including every promotional offer and
 * API token the 8 threads make on one key handle, and checks itself: bad keys, bad arguments, invalid Advanced
 * Commerce requests, and known answers (the `request` claim of Advanced Commerce modify / reactivate requests
 * decodes to exactly the expected JSON: every key, nothing extra, JSON types included).
 * (NULL / invalid UTF-8 / garbage inputs of every signing function: sign_error_paths.c.)
 */
#include "capi_util.h"

#include <appstoreserver.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;
#define CHECK(cond, ...)                                            \
    do {                                                            \
        if (cond) passed++;                                         \
        else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
    } while (0)

static const char *KID = "ABC123DEFG", *ISS = "57246542-96fe-1a63-e053-0824d011072a", *BID = "com.example.app";

static char *slurp(const char *dir, const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65535, f) : 0;
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

/* Loads a key file; returns the status and the reason (via err) for checks. */
static appstore_status load(const char *dir, const char *file, const char *issuer, appstore_signing_key **key,
                            appstore_reason *reason) {
    size_t len = 0;
    char *pem = slurp(dir, file, &len);
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new(pem, len, KID, issuer, BID, key, &err);
    *reason = appstore_error_reason(err);
    if (st != APPSTORE_OK && err) {
        /* A key error message must never echo key material: check a chunk of the base64 body is absent. */
        const char *body = pem ? strchr(pem, '\n') : NULL;
        if (body && strlen(body) > 20) {
            char chunk[17];
            memcpy(chunk, body + 1, 16);
            chunk[16] = 0;
            CHECK(strstr(appstore_error_message(err), chunk) == NULL, "%s: error message contains key bytes", file);
        }
    }
    appstore_error_free(err);
    free(pem);
    return st;
}

static json_t *expect_base(void) { return json_pack("{s:s, s:s, s:s}", "kid", KID, "iss", ISS, "bid", BID); }

static void add(json_t *items, const char *kind, const char *name, const char *value, json_t *expect) {
    json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:o}", "kind", kind, "name", name, "value", value,
                                           "expect", expect));
}

struct thread_arg {
    const appstore_signing_key *key;
    int index;
    char *jws[25];
    char *token[25];
    int errors;
};

static void *sign_many(void *p) {
    struct thread_arg *a = p;
    for (int i = 0; i < 25; i++) {
        char product[32];
        snprintf(product, sizeof product, "p%d", a->index);
        if (appstore_signing_key_create_promotional_offer_v2(a->key, product, "o", NULL, NULL, &a->jws[i], NULL) != APPSTORE_OK)
            a->errors++;
        /* Every fourth token at a fixed issued_at with a 60-minute lifetime, the others now with the default. */
        int64_t issued_at = i % 4 == 0 ? 1750000000 + a->index : 0, lifetime = i % 4 == 0 ? 3600 : 0;
        if (appstore_signing_key_create_api_token(a->key, issued_at, lifetime, &a->token[i], NULL) != APPSTORE_OK)
            a->errors++;
    }
    return NULL;
}

/* The JSON object a JWS's `request` claim decodes to (payload base64url -> claims -> standard base64 -> JSON). */
static json_t *request_claim(const char *jws) {
    const char *dot1 = strchr(jws, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2) return NULL;
    size_t n = (size_t)(dot2 - dot1 - 1), len = 0;
    char *seg = malloc(n + 1);
    for (size_t i = 0; i < n; i++) seg[i] = dot1[1 + i] == '-' ? '+' : dot1[1 + i] == '_' ? '/' : dot1[1 + i];
    seg[n] = 0;
    unsigned char *payload = capi_base64_decode(seg, &len);
    free(seg);
    json_t *claims = payload ? json_loadb((const char *)payload, len, 0, NULL) : NULL;
    free(payload);
    const char *request = json_string_value(json_object_get(claims, "request"));
    unsigned char *raw = request ? capi_base64_decode(request, &len) : NULL;
    json_t *out = raw ? json_loadb((const char *)raw, len, 0, NULL) : NULL;
    free(raw);
    json_decref(claims);
    return out;
}

/* Known answers: `input` goes in (keys in any order, UUIDs in capitals, version left out or null-valued optionals),
 * `expect` is written out separately: what the request claim must decode to, exactly. */
static const struct {
    const char *name, *input, *expect;
} AC_KNOWN[] = {
    {"C modify subscription (full)",
     "{\"operation\":\"MODIFY_SUBSCRIPTION\",\"transactionId\":\"2000000000000001\",\"retainBillingCycle\":true,"
     "\"currency\":\"USD\",\"storefront\":\"USA\",\"taxCode\":\"C003-00-1\","
     "\"requestInfo\":{\"requestReferenceId\":\"3E9C1F5B-5A4E-4F0A-9C2E-1D7C1F2B6A11\","
     "\"appAccountToken\":\"7F3B2A10-8C4D-4E5F-9A6B-0C1D2E3F4A5B\",\"consistencyToken\":\"ct-1\"},"
     "\"addItems\":[{\"SKU\":\"storage.1tb\",\"description\":\"Extra storage\",\"displayName\":\"Storage\",\"price\":990,"
     "\"proratedPrice\":330,\"offer\":{\"period\":\"P1W\",\"periodCount\":2,\"price\":0,\"reason\":\"RETENTION\"}}],"
     "\"changeItems\":[{\"currentSKU\":\"pro.monthly\",\"SKU\":\"pro.yearly\",\"description\":\"Pro yearly\","
     "\"displayName\":\"Pro\",\"effective\":\"NEXT_BILL_CYCLE\",\"price\":19990,\"proratedPrice\":12000,"
     "\"reason\":\"UPGRADE\",\"offer\":{\"period\":\"P1M\",\"periodCount\":1,\"price\":500,\"reason\":\"WIN_BACK\"}}],"
     "\"descriptors\":{\"description\":\"Pro+\",\"displayName\":\"Pro plus\",\"effective\":\"IMMEDIATELY\"},"
     "\"periodChange\":{\"effective\":\"NEXT_BILL_CYCLE\",\"period\":\"P1Y\"},\"removeItems\":[{\"SKU\":\"legacy.addon\"}]}",
     "{\"operation\":\"MODIFY_SUBSCRIPTION\",\"version\":\"1\",\"currency\":\"USD\",\"storefront\":\"USA\","
     "\"taxCode\":\"C003-00-1\",\"retainBillingCycle\":true,\"transactionId\":\"2000000000000001\","
     "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\","
     "\"appAccountToken\":\"7f3b2a10-8c4d-4e5f-9a6b-0c1d2e3f4a5b\",\"consistencyToken\":\"ct-1\"},"
     "\"addItems\":[{\"description\":\"Extra storage\",\"displayName\":\"Storage\",\"price\":990,\"proratedPrice\":330,"
     "\"SKU\":\"storage.1tb\",\"offer\":{\"period\":\"P1W\",\"periodCount\":2,\"price\":0,\"reason\":\"RETENTION\"}}],"
     "\"changeItems\":[{\"currentSKU\":\"pro.monthly\",\"description\":\"Pro yearly\",\"displayName\":\"Pro\","
     "\"effective\":\"NEXT_BILL_CYCLE\",\"price\":19990,\"proratedPrice\":12000,\"reason\":\"UPGRADE\",\"SKU\":\"pro.yearly\","
     "\"offer\":{\"period\":\"P1M\",\"periodCount\":1,\"price\":500,\"reason\":\"WIN_BACK\"}}],"
     "\"descriptors\":{\"description\":\"Pro+\",\"displayName\":\"Pro plus\",\"effective\":\"IMMEDIATELY\"},"
     "\"periodChange\":{\"effective\":\"NEXT_BILL_CYCLE\",\"period\":\"P1Y\"},\"removeItems\":[{\"SKU\":\"legacy.addon\"}]}"},
    {"C modify subscription (minimal)",
     "{\"operation\":\"MODIFY_SUBSCRIPTION\",\"transactionId\":\"2000000000000002\",\"retainBillingCycle\":false,"
     "\"storefront\":null,\"requestInfo\":{\"requestReferenceId\":\"3E9C1F5B-5A4E-4F0A-9C2E-1D7C1F2B6A11\"}}",
     "{\"operation\":\"MODIFY_SUBSCRIPTION\",\"version\":\"1\",\"retainBillingCycle\":false,"
     "\"transactionId\":\"2000000000000002\",\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}}"},
    {"C reactivate subscription (full)",
     "{\"version\":\"1\",\"items\":[{\"SKU\":\"pro.monthly\"},{\"SKU\":\"storage.1tb\"}],\"storefront\":\"GBR\","
     "\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"2000000000000003\","
     "\"requestInfo\":{\"consistencyToken\":\"ct-1\",\"appAccountToken\":\"7F3B2A10-8C4D-4E5F-9A6B-0C1D2E3F4A5B\","
     "\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}}",
     "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"version\":\"1\",\"storefront\":\"GBR\",\"transactionId\":\"2000000000000003\","
     "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\","
     "\"appAccountToken\":\"7f3b2a10-8c4d-4e5f-9a6b-0c1d2e3f4a5b\",\"consistencyToken\":\"ct-1\"},"
     "\"items\":[{\"SKU\":\"pro.monthly\"},{\"SKU\":\"storage.1tb\"}]}"},
    {"C reactivate subscription (minimal)",
     "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"2000000000000004\","
     "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}}",
     "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"version\":\"1\",\"transactionId\":\"2000000000000004\","
     "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}}"},
};

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s KEYDIR OUT.json\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    appstore_signing_key *key = NULL, *no_issuer = NULL, *tmp = NULL;
    appstore_reason reason = 0;

    /* Bad keys: status and reason exact; outputs untouched. */
    struct { const char *file; appstore_reason reason; } bad[] = {
        {"p384.p8", APPSTORE_REASON_KEY_WRONG_CURVE}, {"rsa.p8", APPSTORE_REASON_KEY_NOT_EC},
        {"encrypted.p8", APPSTORE_REASON_KEY_ENCRYPTED}, {"truncated.p8", APPSTORE_REASON_KEY_MALFORMED},
        {"not_pem.txt", APPSTORE_REASON_KEY_NOT_PEM},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tmp = (appstore_signing_key *)0x1;
        appstore_status st = load(dir, bad[i].file, ISS, &tmp, &reason);
        CHECK(st == APPSTORE_INVALID_KEY && reason == bad[i].reason && tmp == (appstore_signing_key *)0x1,
              "%s: status %s reason %s", bad[i].file, appstore_status_name(st), appstore_reason_name(reason));
    }
    CHECK(appstore_signing_key_new(NULL, 10, KID, ISS, BID, &tmp, NULL) == APPSTORE_INVALID_ARGUMENT, "NULL pem");
    CHECK(load(dir, "p256.p8", ISS, &key, &reason) == APPSTORE_OK, "p256 key rejected: %s", appstore_reason_name(reason));
    CHECK(load(dir, "p256.p8", NULL, &no_issuer, &reason) == APPSTORE_OK, "key without issuer rejected");
    if (!key || !no_issuer) goto out;

    json_t *items = json_array();
    char *s = NULL, *nonce = NULL;
    int64_t ts = 0;
    appstore_error *err = NULL;

    /* Bearer tokens. */
    CHECK(appstore_signing_key_create_api_token(key, 0, 0, &s, NULL) == APPSTORE_OK, "token");
    if (s) { add(items, "api_token", "C token default", s, json_pack("{s:s,s:s,s:s,s:i}", "kid", KID, "iss", ISS, "bid", BID, "lifetime", 300)); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_api_token(key, 1750000000, 3600, &s, NULL) == APPSTORE_OK, "token 3600");
    if (s) { add(items, "api_token", "C token 3600", s, json_pack("{s:s,s:s,s:s,s:i,s:I}", "kid", KID, "iss", ISS, "bid", BID, "lifetime", 3600, "iat", (json_int_t)1750000000)); appstore_string_free(s); s = NULL; }
    s = (char *)0x1;
    CHECK(appstore_signing_key_create_api_token(key, 0, 3601, &s, &err) == APPSTORE_INVALID_ARGUMENT && s == (char *)0x1, "lifetime 3601 accepted");
    appstore_error_free(err); err = NULL; s = NULL;
    CHECK(appstore_signing_key_create_api_token(no_issuer, 0, 0, &s, NULL) == APPSTORE_INVALID_ARGUMENT, "token without issuer");

    /* Promotional offer v2, intro eligibility. */
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "com.example.monthly", "WINBACK", NULL, NULL, &s, NULL) == APPSTORE_OK, "v2");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("com.example.monthly")); json_object_set_new(e, "offerIdentifier", json_string("WINBACK")); add(items, "promo_v2", "C v2", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "p", "o", "2000000000000001", NULL, &s, NULL) == APPSTORE_OK, "v2 tx");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "offerIdentifier", json_string("o")); json_object_set_new(e, "transactionId", json_string("2000000000000001")); add(items, "promo_v2", "C v2 tx", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 1, "1000", NULL, &s, NULL) == APPSTORE_OK, "intro");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "allowIntroductoryOffer", json_true()); json_object_set_new(e, "transactionId", json_string("1000")); add(items, "intro_eligibility", "C intro", s, e); appstore_string_free(s); s = NULL; }
    /* The caller's nonce (Apple's Java createNonce() hook): signed lowercased; anything but a UUID is refused. */
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "p", "o", NULL, "0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10", &s, NULL) == APPSTORE_OK, "v2 nonce");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "offerIdentifier", json_string("o")); json_object_set_new(e, "nonce", json_string("0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10")); add(items, "promo_v2", "C v2 nonce", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 0, "1000", "6f1c2a9e-0d3b-4c57-8e21-9a4b7c3d5e60", &s, NULL) == APPSTORE_OK, "intro nonce");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "allowIntroductoryOffer", json_false()); json_object_set_new(e, "transactionId", json_string("1000")); json_object_set_new(e, "nonce", json_string("6f1c2a9e-0d3b-4c57-8e21-9a4b7c3d5e60")); add(items, "intro_eligibility", "C intro nonce", s, e); appstore_string_free(s); s = NULL; }
    s = (char *)0x1;
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "p", "o", NULL, "not-a-uuid", &s, &err) == APPSTORE_INVALID_ARGUMENT && s == (char *)0x1 && strstr(appstore_error_message(err), "nonce must be a UUID") != NULL, "v2 bad nonce accepted");
    appstore_error_free(err); err = NULL;
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 1, "1000", "", &s, &err) == APPSTORE_INVALID_ARGUMENT && s == (char *)0x1, "intro empty nonce accepted");
    appstore_error_free(err); err = NULL; s = NULL;
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 2, "1000", NULL, &s, NULL) == APPSTORE_INVALID_ARGUMENT, "allow=2 accepted");
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 1, NULL, NULL, &s, NULL) == APPSTORE_INVALID_ARGUMENT, "NULL transaction id accepted");

    /* Promotional offer v1: returned nonce/timestamp are what was signed; works without an issuer. */
    CHECK(appstore_signing_key_create_promotional_offer_v1(no_issuer, "com.example.monthly", "OFFER1", "E3B0C442-98FC-1C14-9AFB-F4C8996FB924", NULL, 0, &s, &nonce, &ts, NULL) == APPSTORE_OK, "v1");
    if (s && nonce) {
        add(items, "promo_v1", "C v1", s, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "bundleId", BID, "keyId", KID, "productId", "com.example.monthly", "offerId", "OFFER1", "appAccountToken", "E3B0C442-98FC-1C14-9AFB-F4C8996FB924", "nonce", nonce, "timestamp", (json_int_t)ts));
        CHECK(strlen(nonce) == 36 && ts > 1700000000000LL, "v1 nonce %s ts %lld", nonce, (long long)ts);
    }
    appstore_string_free(s); appstore_string_free(nonce); s = nonce = NULL;
    CHECK(appstore_signing_key_create_promotional_offer_v1(key, "p", "o", NULL, "0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10", 42, &s, NULL, NULL, NULL) == APPSTORE_OK, "v1 fixed");
    if (s) add(items, "promo_v1", "C v1 fixed", s, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i}", "bundleId", BID, "keyId", KID, "productId", "p", "offerId", "o", "appAccountToken", "", "nonce", "0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10", "timestamp", 42));
    appstore_string_free(s); s = NULL;
    CHECK(appstore_signing_key_create_promotional_offer_v1(key, "p", "o", NULL, "nope", 42, &s, NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, "bad nonce accepted");

    /* Advanced Commerce in-app from JSON. */
    const char *ac = "{\"operation\":\"CREATE_ONE_TIME_CHARGE\",\"currency\":\"EUR\",\"taxCode\":\"C003\","
                     "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"},"
                     "\"item\":{\"description\":\"Gems\",\"displayName\":\"500 gems\",\"SKU\":\"gems.500\",\"price\":499}}";
    appstore_status st;
    CHECK(appstore_signing_key_create_advanced_commerce_in_app(key, ac, strlen(ac), "A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D", &s, NULL) == APPSTORE_OK, "advanced commerce");
    if (s) {
        json_t *req = json_loads(ac, 0, NULL);
        json_object_set_new(req, "version", json_string("1"));
        json_t *e = expect_base();
        json_object_set_new(e, "request", req);
        json_object_set_new(e, "nonce", json_string("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"));
        add(items, "advanced_commerce", "C advanced commerce", s, e);
        appstore_string_free(s); s = NULL;
    }
    /* Known answers (modify, reactivate): checked here with jansson (json_equal: same keys, values and JSON
     * types) and sent to the independent checker with the same expectation. */
    for (size_t i = 0; i < sizeof AC_KNOWN / sizeof AC_KNOWN[0]; i++) {
        json_error_t jerr;
        json_t *want = json_loads(AC_KNOWN[i].expect, 0, &jerr);
        CHECK(want != NULL, "%s: the expectation is not JSON: %s", AC_KNOWN[i].name, jerr.text);
        s = NULL;
        st = appstore_signing_key_create_advanced_commerce_in_app(key, AC_KNOWN[i].input, strlen(AC_KNOWN[i].input), NULL, &s, &err);
        CHECK(st == APPSTORE_OK, "%s: %s %s", AC_KNOWN[i].name, appstore_status_name(st), appstore_error_message(err));
        appstore_error_free(err); err = NULL;
        if (st == APPSTORE_OK && want) {
            json_t *got = request_claim(s);
            char *got_text = got ? json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
            char *want_text = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
            CHECK(got && json_equal(got, want), "%s: request claim %s, expected %s", AC_KNOWN[i].name,
                  got_text ? got_text : "(undecodable)", want_text);
            free(got_text);
            free(want_text);
            json_decref(got);
            json_t *e = expect_base();
            json_object_set(e, "request", want);
            add(items, "advanced_commerce", AC_KNOWN[i].name, s, e);
        }
        json_decref(want);
        appstore_string_free(s); s = NULL;
    }
    /* The comparison can fail: a missing key, an extra key and a changed JSON type are all told apart. */
    {
        json_t *a = json_loads("{\"x\":true,\"y\":{\"z\":1}}", 0, NULL);
        json_t *missing = json_loads("{\"x\":true,\"y\":{}}", 0, NULL);
        json_t *extra = json_loads("{\"x\":true,\"y\":{\"z\":1},\"w\":null}", 0, NULL);
        json_t *retyped = json_loads("{\"x\":1,\"y\":{\"z\":1}}", 0, NULL);
        CHECK(!json_equal(a, missing) && !json_equal(a, extra) && !json_equal(a, retyped), "json_equal is not exact");
        json_decref(a); json_decref(missing); json_decref(extra); json_decref(retyped);
    }
    /* Unknown keys are refused with their path (the full list is in sign_error_paths.c). */
    const char *misspelt = "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"1\",\"storefornt\":\"USA\","
                           "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}}";
    s = (char *)0x1;
    st = appstore_signing_key_create_advanced_commerce_in_app(key, misspelt, strlen(misspelt), NULL, &s, &err);
    CHECK(st == APPSTORE_INVALID_ARGUMENT && s == (char *)0x1 && strstr(appstore_error_message(err), "unknown key \"storefornt\""),
          "misspelt storefront: %s %s", appstore_status_name(st), appstore_error_message(err));
    appstore_error_free(err); err = NULL; s = NULL;
    const char *too_long = "{\"operation\":\"CREATE_ONE_TIME_CHARGE\",\"currency\":\"EUR\",\"taxCode\":\"C003\","
                           "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"},"
                           "\"item\":{\"description\":\"0123456789012345678901234567890123456789012345\",\"displayName\":\"g\",\"SKU\":\"g\",\"price\":1}}";
    st = appstore_signing_key_create_advanced_commerce_in_app(key, too_long, strlen(too_long), NULL, &s, &err);
    CHECK(st == APPSTORE_INVALID_ARGUMENT && appstore_error_reason(err) == APPSTORE_REASON_INVALID_REQUEST &&
          strstr(appstore_error_message(err), "item.description") != NULL,
          "46-char description: %s %s", appstore_status_name(st), appstore_error_message(err));
    appstore_error_free(err); err = NULL;
    st = appstore_signing_key_create_advanced_commerce_in_app(key, "{\"operation\":\"X\"}", strlen("{\"operation\":\"X\"}"), NULL, &s, &err);
    CHECK(st == APPSTORE_INVALID_ARGUMENT && strstr(appstore_error_message(err), "unknown operation") != NULL, "unknown operation");
    appstore_error_free(err); err = NULL;

    /* 8 threads on one key handle. */
    pthread_t threads[8];
    struct thread_arg args[8];
    for (int t = 0; t < 8; t++) {
        memset(&args[t], 0, sizeof args[t]);
        args[t].key = key;
        args[t].index = t;
        pthread_create(&threads[t], NULL, sign_many, &args[t]);
    }
    for (int t = 0; t < 8; t++) {
        pthread_join(threads[t], NULL);
        CHECK(args[t].errors == 0, "thread %d had %d errors", t, args[t].errors);
        for (int i = 0; i < 25; i++) {
            if (!args[t].jws[i]) continue;
            char product[32], name[64];
            snprintf(product, sizeof product, "p%d", t);
            snprintf(name, sizeof name, "C thread %d #%d", t, i);
            json_t *e = expect_base();
            json_object_set_new(e, "productId", json_string(product));
            json_object_set_new(e, "offerIdentifier", json_string("o"));
            add(items, "promo_v2", name, args[t].jws[i], e);
            appstore_string_free(args[t].jws[i]);
        }
        /* The threads' API tokens go to the independent checker too (lifetime, and iat where it was fixed). */
        for (int i = 0; i < 25; i++) {
            if (!args[t].token[i]) continue;
            char name[64];
            snprintf(name, sizeof name, "C thread %d token #%d", t, i);
            json_t *e = expect_base();
            json_object_set_new(e, "lifetime", json_integer(i % 4 == 0 ? 3600 : 300));
            if (i % 4 == 0) json_object_set_new(e, "iat", json_integer(1750000000 + t));
            add(items, "api_token", name, args[t].token[i], e);
            appstore_string_free(args[t].token[i]);
        }
    }
    /* 8 x 25 promotional offers, 8 x 25 tokens, and the items above: a short list means something was lost. */
    CHECK(json_array_size(items) >= 400 + 4, "only %zu items to check", json_array_size(items));

    char pub[4096];
    snprintf(pub, sizeof pub, "%s/p256_public.pem", dir);
    json_t *doc = json_pack("{s:s, s:o}", "public_key", pub, "items", items);
    CHECK(json_dump_file(doc, argv[2], 0) == 0, "cannot write %s", argv[2]);
    json_decref(doc);
out:
    appstore_signing_key_free(key);
    appstore_signing_key_free(no_issuer);
    appstore_signing_key_free(NULL);
    printf("sign: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
