/*
 * Signature creation through the C ABI.
 *   sign_test KEYDIR OUT.json
 * KEYDIR comes from `check_signatures.py keys`. Writes every token / signature it makes to OUT.json for
 * `check_signatures.py check` (Python cryptography + joserfc verify them), and checks error paths itself:
 * bad keys, bad arguments, invalid Advanced Commerce requests, and 8 threads signing on one key handle.
 */
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
    int errors;
};

static void *sign_many(void *p) {
    struct thread_arg *a = p;
    for (int i = 0; i < 25; i++) {
        char product[32];
        snprintf(product, sizeof product, "p%d", a->index);
        if (appstore_signing_key_create_promotional_offer_v2(a->key, product, "o", NULL, &a->jws[i], NULL) != APPSTORE_OK)
            a->errors++;
        char *token = NULL;
        if (appstore_signing_key_create_api_token(a->key, 0, 0, &token, NULL) != APPSTORE_OK) a->errors++;
        appstore_string_free(token);
    }
    return NULL;
}

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
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "com.example.monthly", "WINBACK", NULL, &s, NULL) == APPSTORE_OK, "v2");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("com.example.monthly")); json_object_set_new(e, "offerIdentifier", json_string("WINBACK")); add(items, "promo_v2", "C v2", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_promotional_offer_v2(key, "p", "o", "2000000000000001", &s, NULL) == APPSTORE_OK, "v2 tx");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "offerIdentifier", json_string("o")); json_object_set_new(e, "transactionId", json_string("2000000000000001")); add(items, "promo_v2", "C v2 tx", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 1, "1000", &s, NULL) == APPSTORE_OK, "intro");
    if (s) { json_t *e = expect_base(); json_object_set_new(e, "productId", json_string("p")); json_object_set_new(e, "allowIntroductoryOffer", json_true()); json_object_set_new(e, "transactionId", json_string("1000")); add(items, "intro_eligibility", "C intro", s, e); appstore_string_free(s); s = NULL; }
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 2, "1000", &s, NULL) == APPSTORE_INVALID_ARGUMENT, "allow=2 accepted");
    CHECK(appstore_signing_key_create_introductory_offer_eligibility(key, "p", 1, NULL, &s, NULL) == APPSTORE_INVALID_ARGUMENT, "NULL transaction id accepted");

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
    CHECK(appstore_signing_key_create_advanced_commerce_in_app(key, ac, strlen(ac), &s, NULL) == APPSTORE_OK, "advanced commerce");
    if (s) {
        json_t *req = json_loads(ac, 0, NULL);
        json_object_set_new(req, "version", json_string("1"));
        json_t *e = expect_base();
        json_object_set_new(e, "request", req);
        add(items, "advanced_commerce", "C advanced commerce", s, e);
        appstore_string_free(s); s = NULL;
    }
    const char *too_long = "{\"operation\":\"CREATE_ONE_TIME_CHARGE\",\"currency\":\"EUR\",\"taxCode\":\"C003\","
                           "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"},"
                           "\"item\":{\"description\":\"0123456789012345678901234567890123456789012345\",\"displayName\":\"g\",\"SKU\":\"g\",\"price\":1}}";
    appstore_status st = appstore_signing_key_create_advanced_commerce_in_app(key, too_long, strlen(too_long), &s, &err);
    CHECK(st == APPSTORE_INVALID_ARGUMENT && appstore_error_reason(err) == APPSTORE_REASON_INVALID_REQUEST &&
          strstr(appstore_error_message(err), "item.description") != NULL,
          "46-char description: %s %s", appstore_status_name(st), appstore_error_message(err));
    appstore_error_free(err); err = NULL;
    st = appstore_signing_key_create_advanced_commerce_in_app(key, "{\"operation\":\"X\"}", strlen("{\"operation\":\"X\"}"), &s, &err);
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
    }

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
