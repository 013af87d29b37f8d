/*
 * Keys held outside the process through the C ABI (appstore_signing_key_new_with_signer).
 *   signer_test KEYDIR OUT.json
 * The signer callback is an independent ECDSA implementation: OpenSSL called directly by this program with the
 * test key (KEYDIR/p256.p8 from `check_signatures.py keys`), answering in DER and in raw r||s on alternate calls.
 * Every token and signature made through it goes to OUT.json for `check_signatures.py check` (Python cryptography +
 * joserfc verify them against the public key). Also checked here: the digest handed to the callback is SHA-256 of
 * the message; callback failures, wrong lengths, garbage, r = 0 and r = n are APPSTORE_INVALID_KEY /
 * APPSTORE_REASON_SIGNER_FAILED with nothing written to the outputs, and so are well-formed signatures the library
 * verifies and refuses: by another key, random bytes, a replayed signature, one that came after the key's deadline;
 * the signer's public key is required (PEM or DER SPKI) and checked; 4 threads share one key.
 * Closing line: "signer: N passed, M failed".
 */
#include "capi_util.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static capi_tally T = {"signer", 0, 0};
static const char *KID = "ABC123DEFG", *ISS = "57246542-96fe-1a63-e053-0824d011072a", *BID = "com.example.app";

/* What the callback does, per key handle (user_data). */
typedef enum {
    SIGN_OK, SIGN_FAIL, SIGN_SHORT, SIGN_ZERO_LENGTH, SIGN_TOO_LONG, SIGN_R_ZERO, SIGN_R_ORDER, SIGN_DER_TRAILING,
    SIGN_RANDOM, SIGN_REPLAY, SIGN_SLOW
} mode;
typedef struct {
    EVP_PKEY *pkey; /* the key it signs with: the test key, or another one (a signer misconfigured in its KMS) */
    mode mode;
    atomic_int calls;
    atomic_int bad_digests;
    unsigned char first[72]; /* SIGN_REPLAY: the first signature it made, answered again for every later message */
    size_t first_len;
    atomic_uint last_timeout_ms; /* the timeout_ms of the last call: the time the signature may take */
} signer;

/* The test key's public key, PEM and DER (KEYDIR/p256_public.pem, .der). */
static unsigned char *PUB_PEM, *PUB_DER;
static size_t PUB_PEM_LEN, PUB_DER_LEN;

static const unsigned char P256_ORDER[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF,
                                             0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17,
                                             0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51};

static int32_t sign_cb(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                       uint8_t *signature, size_t signature_cap, size_t *signature_len, uint32_t timeout_ms) {
    signer *s = user_data;
    int n = atomic_fetch_add(&s->calls, 1);
    atomic_store(&s->last_timeout_ms, timeout_ms);
    unsigned char want[SHA256_DIGEST_LENGTH];
    SHA256(message, message_len, want);
    if (memcmp(want, digest, sizeof want) != 0) atomic_fetch_add(&s->bad_digests, 1);
    if (s->mode == SIGN_FAIL) return 7;
    if (s->mode == SIGN_RANDOM) {
        for (int i = 0; i < 64; i++) signature[i] = (uint8_t)(rand() % 255 + 1);
        *signature_len = 64;
        return 0;
    }
    if (s->mode == SIGN_REPLAY && s->first_len) {
        memcpy(signature, s->first, s->first_len);
        *signature_len = s->first_len;
        return 0;
    }
    if (s->mode == SIGN_SLOW) nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    if (s->mode == SIGN_SHORT) {
        memset(signature, 1, 40);
        *signature_len = 40;
        return 0;
    }
    if (s->mode == SIGN_ZERO_LENGTH) {
        *signature_len = 0;
        return 0;
    }
    if (s->mode == SIGN_TOO_LONG) {
        *signature_len = signature_cap + 1;
        return 0;
    }
    if (s->mode == SIGN_R_ZERO || s->mode == SIGN_R_ORDER) {
        memset(signature, 0, 64);
        if (s->mode == SIGN_R_ORDER) memcpy(signature, P256_ORDER, 32);
        signature[63] = 1;
        *signature_len = 64;
        return 0;
    }
    /* The real thing: ECDSA with SHA-256 over the message, by OpenSSL directly. DER is 70 to 72 bytes; the
     * trailing-byte case needs room for one more byte within signature_cap, so it signs again until it has it. */
    unsigned char der[80];
    size_t der_len = 0;
    for (int attempt = 0; attempt < 64; attempt++) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        der_len = sizeof der;
        int ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, s->pkey) == 1 &&
                 EVP_DigestSign(ctx, der, &der_len, message, message_len) == 1;
        EVP_MD_CTX_free(ctx);
        if (!ok) return 1;
        if (s->mode != SIGN_DER_TRAILING || der_len < signature_cap) break;
    }
    if (der_len > signature_cap || (s->mode == SIGN_DER_TRAILING && der_len >= signature_cap)) return 1;
    if (s->mode == SIGN_DER_TRAILING) {
        memcpy(signature, der, der_len);
        signature[der_len] = 0; /* one byte after the DER */
        *signature_len = der_len + 1;
        return 0;
    }
    if (n % 2 == 0 || s->mode == SIGN_REPLAY) { /* DER, as KMS answers */
        memcpy(signature, der, der_len);
        *signature_len = der_len;
        if (s->mode == SIGN_REPLAY) {
            memcpy(s->first, der, der_len);
            s->first_len = der_len;
        }
        return 0;
    }
    /* raw r||s */
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    if (!sig) return 1;
    int ok = BN_bn2binpad(ECDSA_SIG_get0_r(sig), signature, 32) == 32 &&
         BN_bn2binpad(ECDSA_SIG_get0_s(sig), signature + 32, 32) == 32;
    ECDSA_SIG_free(sig);
    *signature_len = 64;
    return ok ? 0 : 1;
}

static void add(json_t *items, const char *kind, const char *name, const char *value, json_t *expect) {
    json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:o}", "kind", kind, "name", name, "value", value,
                                           "expect", expect));
}

static json_t *base(void) { return json_pack("{s:s, s:s, s:s}", "kid", KID, "iss", ISS, "bid", BID); }

static appstore_signing_key *make_with(signer *s, uint32_t timeout_ms) {
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new_with_signer(sign_cb, s, PUB_PEM, PUB_PEM_LEN, timeout_ms, KID, ISS,
                                                              BID, &key, &err);
    capi_check(&T, st == APPSTORE_OK && key, "appstore_signing_key_new_with_signer", "%s: %s",
               appstore_status_name(st), appstore_error_message(err));
    appstore_error_free(err);
    return key;
}

static appstore_signing_key *make(signer *s) { return make_with(s, 0); }

typedef struct {
    appstore_signing_key *key;
    int index;
    char *jws[10];
    int errors;
} thread_arg;

static void *sign_many(void *p) {
    thread_arg *a = p;
    for (int i = 0; i < 10; i++) {
        char product[32];
        snprintf(product, sizeof product, "p%d", a->index);
        if (appstore_signing_key_create_promotional_offer_v2(a->key, product, "o", NULL, NULL, &a->jws[i], NULL) != APPSTORE_OK)
            a->errors++;
    }
    return NULL;
}

/* Every kind of signature through a failing signer: INVALID_KEY / SIGNER_FAILED, outputs untouched. */
static void failures(EVP_PKEY *pkey, EVP_PKEY *other) {
    static const struct {
        mode mode;
        const char *what;
        int other_key;
    } cases[] = {{SIGN_FAIL, "the callback returns 7", 0},
                 {SIGN_SHORT, "40 bytes that are neither r||s nor DER", 0},
                 {SIGN_ZERO_LENGTH, "signature_len 0", 0},
                 {SIGN_TOO_LONG, "signature_len beyond the capacity", 0},
                 {SIGN_R_ZERO, "r = 0", 0},
                 {SIGN_R_ORDER, "r = n", 0},
                 {SIGN_DER_TRAILING, "DER followed by a byte", 0},
                 {SIGN_OK, "a signature by another key", 1},
                 {SIGN_RANDOM, "64 random bytes", 0},
                 {SIGN_REPLAY, "a signature of another message (replayed)", 0},
                 {SIGN_SLOW, "a signature after the key's 100 ms deadline", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        signer s = {cases[i].other_key ? other : pkey, cases[i].mode, 0, 0, {0}, 0, 0};
        appstore_signing_key *key = make_with(&s, cases[i].mode == SIGN_SLOW ? 100 : 0);
        if (!key) continue;
        if (cases[i].mode == SIGN_REPLAY) { /* the first signature is a good one; every later one is that again */
            char *first = NULL;
            capi_check(&T, appstore_signing_key_create_api_token(key, 1750000000, 0, &first, NULL) == APPSTORE_OK,
                       "replay: the first signature is good", NULL);
            appstore_string_free(first);
        }
        char *out = (char *)0x1;
        appstore_error *err = NULL;
        appstore_status st = appstore_signing_key_create_api_token(key, 0, 0, &out, &err);
        capi_check(&T, st == APPSTORE_INVALID_KEY && appstore_error_reason(err) == APPSTORE_REASON_SIGNER_FAILED &&
                           out == (char *)0x1,
                   cases[i].what, "token: %s / %s: %s", appstore_status_name(st),
                   appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
        /* Outside an API call the signer is told the key's own timeout (0 = the documented 10000 ms). */
        unsigned want_ms = cases[i].mode == SIGN_SLOW ? 100 : 10000;
        capi_check(&T, atomic_load(&s.last_timeout_ms) == want_ms, cases[i].what,
                   "the signer was told %u ms, not the key's %u", atomic_load(&s.last_timeout_ms), want_ms);
        appstore_error_free(err);
        err = NULL;
        st = appstore_signing_key_create_promotional_offer_v1(key, "p", "o", NULL, NULL, 0, &out, NULL, NULL, &err);
        capi_check(&T, st == APPSTORE_INVALID_KEY && appstore_error_reason(err) == APPSTORE_REASON_SIGNER_FAILED &&
                           out == (char *)0x1,
                   cases[i].what, "v1: %s / %s", appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)));
        appstore_error_free(err);
        err = NULL;
        /* The API client's bearer token: the same status and reason (not an OpenSSL failure), no request. */
        appstore_api_client *client = NULL;
        if (appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, NULL, &client, NULL) == APPSTORE_OK) {
            appstore_api_request *req = (appstore_api_request *)0x1;
            st = appstore_api_client_build_request(client, "getTransactionInfo", "{\"transactionId\":\"1\"}", &req, &err);
            capi_check(&T, st == APPSTORE_INVALID_KEY && appstore_error_reason(err) == APPSTORE_REASON_SIGNER_FAILED &&
                               req == (appstore_api_request *)0x1,
                       cases[i].what, "bearer token: %s / %s", appstore_status_name(st),
                       appstore_reason_name(appstore_error_reason(err)));
            appstore_error_free(err);
            appstore_api_client_free(client);
        } else {
            capi_check(&T, 0, cases[i].what, "appstore_api_client_new failed");
        }
        appstore_signing_key_free(key);
    }
    appstore_signing_key *key = (appstore_signing_key *)0x1;
    capi_check(&T, appstore_signing_key_new_with_signer(NULL, NULL, PUB_PEM, PUB_PEM_LEN, 0, KID, ISS, BID, &key, NULL) ==
                           APPSTORE_INVALID_ARGUMENT && key == (appstore_signing_key *)0x1,
               "NULL fn is INVALID_ARGUMENT", NULL);
    signer s = {pkey, SIGN_OK, 0, 0, {0}, 0, 0};
    capi_check(&T, appstore_signing_key_new_with_signer(sign_cb, &s, PUB_PEM, PUB_PEM_LEN, 0, "", ISS, BID, &key, NULL) ==
                       APPSTORE_INVALID_ARGUMENT,
               "empty key id is INVALID_ARGUMENT", NULL);
    capi_check(&T, appstore_signing_key_new_with_signer(sign_cb, &s, NULL, 0, 0, KID, ISS, BID, &key, NULL) ==
                           APPSTORE_INVALID_ARGUMENT && key == (appstore_signing_key *)0x1,
               "no public key is INVALID_ARGUMENT", NULL);
    static const char garbage[] = "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n";
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new_with_signer(sign_cb, &s, (const uint8_t *)garbage, sizeof garbage - 1,
                                                              0, KID, ISS, BID, &key, &err);
    capi_check(&T, st == APPSTORE_INVALID_KEY && appstore_error_reason(err) == APPSTORE_REASON_KEY_MALFORMED &&
                       key == (appstore_signing_key *)0x1,
               "a public key that does not parse is INVALID_KEY / KEY_MALFORMED", "%s", appstore_status_name(st));
    appstore_error_free(err);
    /* DER SubjectPublicKeyInfo works as well as PEM. */
    key = NULL;
    st = appstore_signing_key_new_with_signer(sign_cb, &s, PUB_DER, PUB_DER_LEN, 0, KID, ISS, BID, &key, NULL);
    char *token = NULL;
    capi_check(&T, st == APPSTORE_OK && appstore_signing_key_create_api_token(key, 0, 0, &token, NULL) == APPSTORE_OK,
               "a DER public key verifies the signer's signatures", NULL);
    appstore_string_free(token);
    appstore_signing_key_free(key);
}

static unsigned char *slurp(const char *dir, const char *name, size_t *len) {
    char *path = capi_join(dir, name);
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f) return NULL;
    unsigned char *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static EVP_PKEY *read_key(const char *dir, const char *name) {
    char *path = capi_join(dir, name);
    FILE *f = fopen(path, "r");
    free(path);
    EVP_PKEY *pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f) fclose(f);
    return pkey;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s KEYDIR OUT.json\n", argv[0]);
        return 2;
    }
    EVP_PKEY *pkey = read_key(argv[1], "p256.p8"), *other = read_key(argv[1], "other_p256.p8");
    PUB_PEM = slurp(argv[1], "p256_public.pem", &PUB_PEM_LEN);
    PUB_DER = slurp(argv[1], "p256_public.der", &PUB_DER_LEN);
    if (!capi_check(&T, pkey && other && PUB_PEM && PUB_DER, "test keys", "cannot read the keys in %s", argv[1]))
        return capi_finish(&T);

    signer s = {pkey, SIGN_OK, 0, 0, {0}, 0, 0};
    appstore_signing_key *key = make(&s);
    json_t *items = json_array();
    char *out = NULL, *nonce = NULL;
    int64_t ts = 0;
    if (key) {
        if (appstore_signing_key_create_api_token(key, 1750000000, 3600, &out, NULL) == APPSTORE_OK) {
            json_t *e = base();
            json_object_set_new(e, "lifetime", json_integer(3600));
            json_object_set_new(e, "iat", json_integer(1750000000));
            add(items, "api_token", "external token", out, e);
            appstore_string_free(out);
        }
        if (appstore_signing_key_create_promotional_offer_v2(key, "com.example.monthly", "WINBACK", "2000000000000001", NULL,
                                                            &out, NULL) == APPSTORE_OK) {
            json_t *e = base();
            json_object_set_new(e, "productId", json_string("com.example.monthly"));
            json_object_set_new(e, "offerIdentifier", json_string("WINBACK"));
            json_object_set_new(e, "transactionId", json_string("2000000000000001"));
            add(items, "promo_v2", "external v2", out, e);
            appstore_string_free(out);
        }
        if (appstore_signing_key_create_introductory_offer_eligibility(key, "p", 0, "1000", NULL, &out, NULL) == APPSTORE_OK) {
            json_t *e = base();
            json_object_set_new(e, "productId", json_string("p"));
            json_object_set_new(e, "allowIntroductoryOffer", json_false());
            json_object_set_new(e, "transactionId", json_string("1000"));
            add(items, "intro_eligibility", "external intro", out, e);
            appstore_string_free(out);
        }
        for (int i = 0; i < 2; i++) { /* one DER answer, one raw answer from the callback */
            if (appstore_signing_key_create_promotional_offer_v1(key, "com.example.monthly", "OFFER1", NULL, NULL, 0,
                                                                &out, &nonce, &ts, NULL) == APPSTORE_OK) {
                add(items, "promo_v1", i ? "external v1 (b)" : "external v1 (a)", out,
                    json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "bundleId", BID, "keyId", KID, "productId",
                              "com.example.monthly", "offerId", "OFFER1", "appAccountToken", "", "nonce", nonce,
                              "timestamp", (json_int_t)ts));
                appstore_string_free(out);
                appstore_string_free(nonce);
            }
        }
        const char *ac = "{\"operation\":\"CREATE_ONE_TIME_CHARGE\",\"currency\":\"EUR\",\"taxCode\":\"C003\","
                         "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"},"
                         "\"item\":{\"description\":\"Gems\",\"displayName\":\"500 gems\",\"SKU\":\"gems.500\",\"price\":499},"
                         "\"version\":\"1\"}";
        if (appstore_signing_key_create_advanced_commerce_in_app(key, ac, strlen(ac), NULL, &out, NULL) == APPSTORE_OK) {
            json_t *e = base();
            json_object_set_new(e, "request", json_loads(ac, 0, NULL));
            add(items, "advanced_commerce", "external advanced commerce", out, e);
            appstore_string_free(out);
        }
        /* 4 threads on one key handle. */
        pthread_t threads[4];
        thread_arg args[4];
        for (int t = 0; t < 4; t++) {
            memset(&args[t], 0, sizeof args[t]);
            args[t].key = key;
            args[t].index = t;
            pthread_create(&threads[t], NULL, sign_many, &args[t]);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(threads[t], NULL);
            capi_check(&T, args[t].errors == 0, "threads", "thread %d: %d errors", t, args[t].errors);
            for (int i = 0; i < 10; i++) {
                if (!args[t].jws[i]) continue;
                char product[32], name[64];
                snprintf(product, sizeof product, "p%d", t);
                snprintf(name, sizeof name, "external thread %d #%d", t, i);
                json_t *e = base();
                json_object_set_new(e, "productId", json_string(product));
                json_object_set_new(e, "offerIdentifier", json_string("o"));
                add(items, "promo_v2", name, args[t].jws[i], e);
                appstore_string_free(args[t].jws[i]);
            }
        }
        appstore_signing_key_free(key);
    }
    capi_check(&T, json_array_size(items) == 6 + 40, "every signature made", "%zu of 46", json_array_size(items));
    capi_check(&T, atomic_load(&s.calls) == 46, "one callback call per signature", "%d calls", atomic_load(&s.calls));
    capi_check(&T, atomic_load(&s.bad_digests) == 0, "digest is SHA-256 of the message", "%d wrong digests",
               atomic_load(&s.bad_digests));
    failures(pkey, other);

    char *pub = capi_join(argv[1], "p256_public.pem");
    json_t *doc = json_pack("{s:s, s:o}", "public_key", pub, "items", items);
    capi_check(&T, json_dump_file(doc, argv[2], JSON_INDENT(1)) == 0, "write items", "%s", argv[2]);
    json_decref(doc);
    free(pub);
    EVP_PKEY_free(pkey);
    EVP_PKEY_free(other);
    free(PUB_PEM);
    free(PUB_DER);
    return capi_finish(&T);
}
