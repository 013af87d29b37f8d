/*
 * sign_error_paths KEYDIR
 *
 * NULL and garbage through every signature-creation entry point of the C ABI, with exact statuses and reasons, and
 * the header's conventions: outputs are written only on success (pre-set sentinels must stay), err_out may be NULL
 * (same status without it), a failure with err_out gives a new error whose status equals the returned one, key bytes
 * never appear in messages, _free(NULL) is a no-op. Covered: NULL key / NULL outputs / NULL required strings, invalid
 * UTF-8 in every string parameter, garbage and truncated PEM (every prefix of a real key), lengths too large to be
 * read, bad numbers, Advanced Commerce requests with unknown keys (by key path), a wrong version, hostile JSON.
 * Every case runs in a forked child, so a crash is reported as a failure of that case (with the signal) instead of
 * ending the run. KEYDIR comes from `check_signatures.py keys`.
 * Closing line: "sign errors: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static capi_tally T = {"sign errors", 0, 0};

static const char *KID = "ABC123DEFG", *ISS = "57246542-96fe-1a63-e053-0824d011072a", *BID = "com.example.app";
static const char *INFO = "\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\"}";

static int sentinel_key, sentinel_str, sentinel_str2, sentinel_err;
#define KEY_SENTINEL ((appstore_signing_key *)(void *)&sentinel_key)
#define STR_SENTINEL ((char *)(void *)&sentinel_str)
#define STR2_SENTINEL ((char *)(void *)&sentinel_str2)
#define ERR_SENTINEL ((appstore_error *)(void *)&sentinel_err)
#define TS_SENTINEL ((int64_t)0x5e5e5e5e5e5e5e5e)

static appstore_signing_key *key_full, *key_no_issuer; /* valid keys, inherited by every forked child */
static char *pem;                                       /* the valid p256.p8 text */
static size_t pem_len;

/* ---- one call ------------------------------------------------------------------------------------------------ */

enum fn { KEY_NEW, API_TOKEN, PROMO_V1, PROMO_V2, INTRO, ADVANCED_COMMERCE };
static const char *const FN_NAME[] = {"signing_key_new", "create_api_token", "create_promotional_offer_v1",
                                      "create_promotional_offer_v2", "create_introductory_offer_eligibility",
                                      "create_advanced_commerce_in_app"};
enum which_key { K_FULL, K_NO_ISSUER, K_NULL };

typedef struct {
    const char *label;
    enum fn fn;
    enum which_key key;
    /* KEY_NEW: s1 pem (len), s2 key_id, s3 issuer_id, s4 bundle_id. PROMO_V1: s1 product, s2 offer,
     * s3 app_account_token, s4 nonce, n1 timestamp. PROMO_V2: s1 product, s2 offer_identifier, s3 transaction_id.
     * INTRO: s1 product, n1 allow, s3 transaction_id. ADVANCED_COMMERCE: s1 request_json (len). API_TOKEN: n1
     * issued_at, n2 lifetime. */
    const char *s1, *s2, *s3, *s4;
    size_t len;
    int64_t n1, n2;
    int null_out; /* pass NULL for the required output */
    appstore_status want_status;
    const char *want_reason;
    const char *want_in_message; /* a substring the message must contain, or NULL */
} sign_case;

/* Calls the function with sentinel outputs; reports whether any output was written. */
static appstore_status call(const sign_case *c, appstore_error **err, int *outputs_written) {
    const appstore_signing_key *key = c->key == K_FULL ? key_full : c->key == K_NO_ISSUER ? key_no_issuer : NULL;
    appstore_signing_key *k = KEY_SENTINEL;
    char *s = STR_SENTINEL, *s2 = STR2_SENTINEL;
    int64_t ts = TS_SENTINEL;
    appstore_status st = APPSTORE_INTERNAL_ERROR;
    switch (c->fn) {
    case KEY_NEW:
        st = appstore_signing_key_new(c->s1, c->len, c->s2, c->s3, c->s4, c->null_out ? NULL : &k, err);
        break;
    case API_TOKEN:
        st = appstore_signing_key_create_api_token(key, c->n1, c->n2, c->null_out ? NULL : &s, err);
        break;
    case PROMO_V1:
        st = appstore_signing_key_create_promotional_offer_v1(key, c->s1, c->s2, c->s3, c->s4, c->n1,
                                                              c->null_out ? NULL : &s, &s2, &ts, err);
        break;
    case PROMO_V2:
        st = appstore_signing_key_create_promotional_offer_v2(key, c->s1, c->s2, c->s3, NULL, c->null_out ? NULL : &s, err);
        break;
    case INTRO:
        st = appstore_signing_key_create_introductory_offer_eligibility(key, c->s1, (int32_t)c->n1, c->s3, NULL,
                                                                        c->null_out ? NULL : &s, err);
        break;
    case ADVANCED_COMMERCE:
        st = appstore_signing_key_create_advanced_commerce_in_app(key, c->s1, c->len, NULL, c->null_out ? NULL : &s, err);
        break;
    }
    *outputs_written = k != KEY_SENTINEL || s != STR_SENTINEL || s2 != STR2_SENTINEL || ts != TS_SENTINEL;
    /* Only reached when a failure wrote an output anyway: free what a success would have returned. */
    if (st == APPSTORE_OK) {
        if (k != KEY_SENTINEL) appstore_signing_key_free(k);
        if (s != STR_SENTINEL) appstore_string_free(s);
        if (s2 != STR2_SENTINEL) appstore_string_free(s2);
    }
    return st;
}

/* The checks of one failing call (run in the child). */
static void check_case(const char *what, const sign_case *c) {
    appstore_error *err = NULL;
    int written = 0;
    appstore_status st = call(c, &err, &written);
    const char *reason = appstore_reason_name(appstore_error_reason(err));
    const char *msg = appstore_error_message(err);
    capi_check(&T, st == c->want_status, what, "status %s, expected %s (%s: %s)", appstore_status_name(st),
               appstore_status_name(c->want_status), reason, msg);
    capi_check(&T, !written, what, "an output was written on failure");
    if (capi_check(&T, err != NULL && err != ERR_SENTINEL, what, "no appstore_error for a failure")) {
        capi_check(&T, appstore_error_status(err) == st, what, "error status %s differs from the returned %s",
                   appstore_status_name(appstore_error_status(err)), appstore_status_name(st));
        capi_check(&T, strcmp(reason, c->want_reason) == 0, what, "reason %s, expected %s (%s)", reason, c->want_reason,
                   msg);
        capi_check(&T, msg != NULL && msg[0] != 0, what, "empty error message");
        if (c->want_in_message)
            capi_check(&T, strstr(msg, c->want_in_message) != NULL, what, "message \"%s\" does not mention \"%s\"", msg,
                       c->want_in_message);
        /* Key material never appears in a message: no 16-byte run of the key's base64 body. */
        const char *body = strchr(pem, '\n');
        for (const char *p = body ? body + 1 : NULL; p && p + 16 < pem + pem_len; p += 16) {
            char chunk[17];
            memcpy(chunk, p, 16);
            chunk[16] = 0;
            if (strchr(chunk, '\n') || strchr(chunk, '-')) continue;
            if (!capi_check(&T, strstr(msg, chunk) == NULL, what, "message contains key bytes")) break;
        }
        appstore_error_free(err);
    }
    /* Once more without err_out: same status, nothing written. */
    st = call(c, NULL, &written);
    capi_check(&T, st == c->want_status && !written, what, "without err_out: status %s, outputs written %d",
               appstore_status_name(st), written);
}

typedef struct {
    const char *what;
    const sign_case *c;
} isolated_case;

static void isolated_body(void *ctx) {
    const isolated_case *ic = ctx;
    check_case(ic->what, ic->c);
}

/* Runs one case in a child process: a crash (signal) is a failure of that case, not the end of the run. */
static void run(const sign_case *c) {
    char what[320];
    snprintf(what, sizeof what, "%s(%s)", FN_NAME[c->fn], c->label);
    isolated_case ic = {what, c};
    capi_run_forked(&T, what, isolated_body, &ic);
}

/* Shorthands for the common outcomes. */
#define ARG APPSTORE_INVALID_ARGUMENT, "invalid_argument"
#define KEY(reason) APPSTORE_INVALID_KEY, reason

/* ---- sections ------------------------------------------------------------------------------------------------- */

static const char *const BAD_UTF8[] = {
    "\xff",                 /* never valid */
    "com.example.\xc3\x28", /* bad continuation */
    "\xc0\xaf",             /* overlong '/' */
    "\xed\xa0\x80",         /* UTF-16 surrogate */
    "com.\xe2\x82",         /* truncated sequence */
    "\xf4\x90\x80\x80",     /* above U+10FFFF */
};
#define NBAD (sizeof BAD_UTF8 / sizeof BAD_UTF8[0])

static void null_arguments(void) {
    const sign_case cases[] = {
        /* NULL key handle. */
        {"NULL key", API_TOKEN, K_NULL, .want_status = ARG, "key is NULL"},
        {"NULL key", PROMO_V1, K_NULL, "p", "o", NULL, NULL, 0, 0, 0, 0, ARG, "key is NULL"},
        {"NULL key", PROMO_V2, K_NULL, "p", "o", NULL, NULL, 0, 0, 0, 0, ARG, "key is NULL"},
        {"NULL key", INTRO, K_NULL, "p", NULL, "1", NULL, 0, 1, 0, 0, ARG, "key is NULL"},
        {"NULL key", ADVANCED_COMMERCE, K_NULL, "{}", NULL, NULL, NULL, 2, 0, 0, 0, ARG, "key is NULL"},
        {"NULL key, NULL everything", PROMO_V1, K_NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 1, ARG, NULL},
        /* NULL required outputs. */
        {"NULL key_out", KEY_NEW, K_FULL, pem, KID, ISS, BID, pem_len, 0, 0, 1, ARG, "key_out"},
        {"NULL token_out", API_TOKEN, K_FULL, .null_out = 1, .want_status = ARG, "token_out"},
        {"NULL signature_out", PROMO_V1, K_FULL, "p", "o", NULL, NULL, 0, 0, 0, 1, ARG, "signature_out"},
        {"NULL jws_out", PROMO_V2, K_FULL, "p", "o", NULL, NULL, 0, 0, 0, 1, ARG, "jws_out"},
        {"NULL jws_out", INTRO, K_FULL, "p", NULL, "1", NULL, 0, 1, 0, 1, ARG, "jws_out"},
        {"NULL jws_out", ADVANCED_COMMERCE, K_FULL, "{}", NULL, NULL, NULL, 2, 0, 0, 1, ARG, "jws_out"},
        /* NULL required strings. */
        {"NULL pem, pem_len 10", KEY_NEW, K_FULL, NULL, KID, ISS, BID, 10, 0, 0, 0, ARG, "pem"},
        {"NULL pem, pem_len 0", KEY_NEW, K_FULL, NULL, KID, ISS, BID, 0, 0, 0, 0, KEY("key_not_pem"), NULL},
        {"NULL key_id", KEY_NEW, K_FULL, pem, NULL, ISS, BID, pem_len, 0, 0, 0, ARG, "key_id"},
        {"NULL bundle_id", KEY_NEW, K_FULL, pem, KID, ISS, NULL, pem_len, 0, 0, 0, ARG, "bundle_id"},
        {"empty key_id", KEY_NEW, K_FULL, pem, "", ISS, BID, pem_len, 0, 0, 0, ARG, "key_id"},
        {"empty bundle_id", KEY_NEW, K_FULL, pem, KID, ISS, "", pem_len, 0, 0, 0, ARG, "bundle_id"},
        {"NULL product_id", PROMO_V1, K_FULL, NULL, "o", NULL, NULL, 0, 0, 0, 0, ARG, "product_id"},
        {"NULL offer_id", PROMO_V1, K_FULL, "p", NULL, NULL, NULL, 0, 0, 0, 0, ARG, "offer_id"},
        {"empty product_id", PROMO_V1, K_FULL, "", "o", NULL, NULL, 0, 0, 0, 0, ARG, "productIdentifier"},
        {"NULL product_id", PROMO_V2, K_FULL, NULL, "o", NULL, NULL, 0, 0, 0, 0, ARG, "product_id"},
        {"NULL offer_identifier", PROMO_V2, K_FULL, "p", NULL, NULL, NULL, 0, 0, 0, 0, ARG, "offer_identifier"},
        {"empty offer_identifier", PROMO_V2, K_FULL, "p", "", NULL, NULL, 0, 0, 0, 0, ARG, "offerIdentifier"},
        {"NULL product_id", INTRO, K_FULL, NULL, NULL, "1", NULL, 0, 1, 0, 0, ARG, "product_id"},
        {"NULL transaction_id", INTRO, K_FULL, "p", NULL, NULL, NULL, 0, 1, 0, 0, ARG, "transaction_id"},
        {"NULL request_json, len 5", ADVANCED_COMMERCE, K_FULL, NULL, NULL, NULL, NULL, 5, 0, 0, 0, ARG, "request_json"},
        {"NULL request_json, len 0", ADVANCED_COMMERCE, K_FULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, ARG, "not a JSON object"},
        /* The issuer is required for every JWS (not for promotional offer v1). */
        {"key without issuer", API_TOKEN, K_NO_ISSUER, .want_status = ARG, "issuer"},
        {"key without issuer", PROMO_V2, K_NO_ISSUER, "p", "o", NULL, NULL, 0, 0, 0, 0, ARG, "issuer"},
        {"key without issuer", INTRO, K_NO_ISSUER, "p", NULL, "1", NULL, 0, 1, 0, 0, ARG, "issuer"},
        {"key without issuer", ADVANCED_COMMERCE, K_NO_ISSUER, "{}", NULL, NULL, NULL, 2, 0, 0, 0, ARG, "issuer"},
        /* Numbers out of range. */
        {"lifetime 3601", API_TOKEN, K_FULL, .n2 = 3601, .want_status = ARG, "lifetime"},
        {"lifetime -1", API_TOKEN, K_FULL, .n2 = -1, .want_status = ARG, "lifetime"},
        {"lifetime INT64_MAX", API_TOKEN, K_FULL, .n2 = INT64_MAX, .want_status = ARG, "lifetime"},
        {"issued_at -1", API_TOKEN, K_FULL, .n1 = -1, .want_status = ARG, "issued_at"},
        {"issued_at INT64_MIN", API_TOKEN, K_FULL, .n1 = INT64_MIN, .want_status = ARG, "issued_at"},
        {"timestamp_ms -1", PROMO_V1, K_FULL, "p", "o", NULL, NULL, 0, -1, 0, 0, ARG, "timestamp_ms"},
        {"nonce not a UUID", PROMO_V1, K_FULL, "p", "o", NULL, "nope", 0, 0, 0, 0, ARG, "nonce"},
        {"allow 2", INTRO, K_FULL, "p", NULL, "1", NULL, 0, 2, 0, 0, ARG, "allow"},
        {"allow -1", INTRO, K_FULL, "p", NULL, "1", NULL, 0, -1, 0, 0, ARG, "allow"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run(&cases[i]);
}

static void invalid_utf8(void) {
    for (size_t b = 0; b < NBAD; b++) {
        const char *x = BAD_UTF8[b];
        char label[64];
        snprintf(label, sizeof label, "invalid UTF-8 #%zu in ", b);
#define L(param) (snprintf(lbl, sizeof lbl, "%s%s", label, param), lbl)
        char lbl[96];
        sign_case c;
        c = (sign_case){L("key_id"), KEY_NEW, K_FULL, pem, x, ISS, BID, pem_len, 0, 0, 0, ARG, "key_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("issuer_id"), KEY_NEW, K_FULL, pem, KID, x, BID, pem_len, 0, 0, 0, ARG, "issuer_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("bundle_id"), KEY_NEW, K_FULL, pem, KID, ISS, x, pem_len, 0, 0, 0, ARG, "bundle_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("product_id"), PROMO_V1, K_FULL, x, "o", NULL, NULL, 0, 0, 0, 0, ARG, "product_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("offer_id"), PROMO_V1, K_FULL, "p", x, NULL, NULL, 0, 0, 0, 0, ARG, "offer_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("app_account_token"), PROMO_V1, K_FULL, "p", "o", x, NULL, 0, 0, 0, 0, ARG,
                        "app_account_token is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("nonce"), PROMO_V1, K_FULL, "p", "o", NULL, x, 0, 0, 0, 0, ARG, "nonce is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("product_id"), PROMO_V2, K_FULL, x, "o", NULL, NULL, 0, 0, 0, 0, ARG, "product_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("offer_identifier"), PROMO_V2, K_FULL, "p", x, NULL, NULL, 0, 0, 0, 0, ARG,
                        "offer_identifier is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("transaction_id"), PROMO_V2, K_FULL, "p", "o", x, NULL, 0, 0, 0, 0, ARG,
                        "transaction_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("product_id"), INTRO, K_FULL, x, NULL, "1", NULL, 0, 1, 0, 0, ARG, "product_id is not valid UTF-8"};
        run(&c);
        c = (sign_case){L("transaction_id"), INTRO, K_FULL, "p", NULL, x, NULL, 0, 1, 0, 0, ARG,
                        "transaction_id is not valid UTF-8"};
        run(&c);
        /* request_json: the bytes alone, and inside a JSON string of an otherwise valid request. */
        c = (sign_case){L("request_json"), ADVANCED_COMMERCE, K_FULL, x, NULL, NULL, NULL, strlen(x), 0, 0, 0, ARG,
                        "not a JSON object"};
        run(&c);
        char json[512];
        snprintf(json, sizeof json, "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"%s\",%s}", x, INFO);
        c = (sign_case){L("a request_json string"), ADVANCED_COMMERCE, K_FULL, json, NULL, NULL, NULL, strlen(json), 0, 0,
                        0, ARG, "request_json"};
        run(&c);
        /* pem: on its own (no PEM block), and inside a PEM block (not base64). */
        c = (sign_case){L("pem"), KEY_NEW, K_FULL, x, KID, ISS, BID, strlen(x), 0, 0, 0, KEY("key_not_pem"), NULL};
        run(&c);
        char block[256];
        snprintf(block, sizeof block, "-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n", x);
        c = (sign_case){L("a PEM block"), KEY_NEW, K_FULL, block, KID, ISS, BID, strlen(block), 0, 0, 0,
                        KEY("key_malformed"), NULL};
        run(&c);
#undef L
    }
}

/* Every prefix of a real key: before the BEGIN line is complete it is not PEM; after, it is malformed. */
static void truncated_and_garbage_pem(void) {
    static const char begin[] = "-----BEGIN PRIVATE KEY-----";
    for (size_t n = 0; n + 1 < pem_len; n++) {
        char label[96];
        snprintf(label, sizeof label, "pem truncated to %zu of %zu bytes", n, pem_len);
        int has_begin = n >= sizeof begin - 1;
        sign_case c = {label, KEY_NEW, K_FULL, pem, KID, ISS, BID, n, 0, 0, 0,
                       KEY(has_begin ? "key_malformed" : "key_not_pem"), NULL};
        run(&c);
    }
    /* Corrupt bodies: a flipped base64 character, a body cut in the middle with an END line, BEGIN/END only. */
    char *flipped = strdup(pem);
    char *body = strchr(flipped, '\n') + 1;
    body[10] = body[10] == 'A' ? 'B' : 'A';
    body[11] = '*';
    sign_case c1 = {"pem body with a non-base64 character", KEY_NEW, K_FULL, flipped, KID, ISS, BID, pem_len, 0, 0, 0,
                    KEY("key_malformed"), NULL};
    run(&c1);
    char half[1024];
    snprintf(half, sizeof half, "%.*s\n-----END PRIVATE KEY-----\n", (int)(strchr(pem, '\n') - pem + 20), pem);
    sign_case c2 = {"pem body cut in half", KEY_NEW, K_FULL, half, KID, ISS, BID, strlen(half), 0, 0, 0,
                    KEY("key_malformed"), NULL};
    run(&c2);
    const char *empty_block = "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n";
    sign_case c3 = {"empty PEM block", KEY_NEW, K_FULL, empty_block, KID, ISS, BID, strlen(empty_block), 0, 0, 0,
                    KEY("key_malformed"), NULL};
    run(&c3);
    const char *ec_block = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
    sign_case c4 = {"SEC1 block of garbage", KEY_NEW, K_FULL, ec_block, KID, ISS, BID, strlen(ec_block), 0, 0, 0,
                    KEY("key_malformed"), NULL};
    run(&c4);
    /* A certificate instead of a key. */
    const char *cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    sign_case c5 = {"a certificate", KEY_NEW, K_FULL, cert, KID, ISS, BID, strlen(cert), 0, 0, 0, KEY("key_not_pem"), NULL};
    run(&c5);

    /* Random bytes, and random bytes inside a PEM block (deterministic xorshift). */
    uint64_t seed = 0x2545f4914f6cdd1dull;
#define NEXT() (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17, seed)
    for (int i = 0; i < 16; i++) {
        size_t n = 1 + (size_t)(NEXT() % 2000);
        char *raw = malloc(n), *wrapped = malloc(n + 80);
        for (size_t k = 0; k < n; k++) raw[k] = (char)(unsigned char)NEXT();
        int w = snprintf(wrapped, n + 80, "-----BEGIN PRIVATE KEY-----\n");
        memcpy(wrapped + w, raw, n);
        size_t wn = (size_t)w + n;
        wn += (size_t)snprintf(wrapped + wn, 80, "\n-----END PRIVATE KEY-----\n");
        char l1[96], l2[96];
        snprintf(l1, sizeof l1, "random bytes #%d (%zu)", i, n);
        snprintf(l2, sizeof l2, "random bytes in a PEM block #%d", i);
        sign_case r1 = {l1, KEY_NEW, K_FULL, raw, KID, ISS, BID, n, 0, 0, 0, KEY("key_not_pem"), NULL};
        sign_case r2 = {l2, KEY_NEW, K_FULL, wrapped, KID, ISS, BID, wn, 0, 0, 0, KEY("key_malformed"), NULL};
        run(&r1);
        run(&r2);
        free(raw);
        free(wrapped);
    }
#undef NEXT
    /* 1 MiB of text is read (the limit is inclusive) and is not a key. */
    size_t mib = (size_t)1 << 20;
    char *big = malloc(mib);
    memset(big, 'A', mib);
    sign_case b = {"1 MiB of 'A'", KEY_NEW, K_FULL, big, KID, ISS, BID, mib, 0, 0, 0, KEY("key_not_pem"), NULL};
    run(&b);
    free(big);
    free(flipped);
}

/* Lengths beyond the limits are refused before a byte is read: the buffers here are tiny. */
static void huge_lengths(void) {
    static const struct {
        const char *label;
        size_t len;
    } lens[] = {
        {"SIZE_MAX", SIZE_MAX},
        {"PTRDIFF_MAX+1", (size_t)PTRDIFF_MAX + 1},
        {"PTRDIFF_MAX", (size_t)PTRDIFF_MAX},
        {"INT32_MAX+1", (size_t)INT32_MAX + 1},
        {"1 MiB + 1", ((size_t)1 << 20) + 1},
    };
    static const char tiny[] = "{}";
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char l1[96], l2[96], l3[96];
        snprintf(l1, sizeof l1, "pem_len %s", lens[i].label);
        snprintf(l2, sizeof l2, "request_json_len %s", lens[i].label);
        snprintf(l3, sizeof l3, "NULL pem, pem_len %s", lens[i].label);
        sign_case a = {l1, KEY_NEW, K_FULL, tiny, KID, ISS, BID, lens[i].len, 0, 0, 0, ARG, "pem_len"};
        sign_case b = {l2, ADVANCED_COMMERCE, K_FULL, tiny, NULL, NULL, NULL, lens[i].len, 0, 0, 0, ARG, "request_json_len"};
        sign_case c = {l3, KEY_NEW, K_FULL, NULL, KID, ISS, BID, lens[i].len, 0, 0, 0, ARG, "pem"};
        run(&a);
        run(&b);
        run(&c);
    }
}

/* Advanced Commerce JSON: unknown keys by path, version, operation, hostile nesting, limits. */
/* A function, not a macro with n++: initializers are only indeterminately sequenced. */
static const char *ac_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *ac_json(const char *fmt, ...) {
    static char buf[24][1024];
    static int n = 0;
    if (n >= 24) {
        fprintf(stderr, "ac_json: more than 24 cases\n");
        exit(2);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf[n], sizeof buf[n], fmt, ap);
    va_end(ap);
    return buf[n++];
}

static void advanced_commerce_requests(void) {
#define JSON(...) ac_json(__VA_ARGS__)
    const char *reactivate = "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"1\"";
    const char *create = "{\"operation\":\"CREATE_SUBSCRIPTION\",\"currency\":\"USD\",\"taxCode\":\"C003\",\"period\":\"P1M\","
                         "\"descriptors\":{\"description\":\"d\",\"displayName\":\"n\"}";
    const char *modify = "{\"operation\":\"MODIFY_SUBSCRIPTION\",\"transactionId\":\"1\",\"retainBillingCycle\":true";
    const struct {
        const char *label;
        const char *json;
        appstore_status status;
        const char *reason;
        const char *message;
    } cases[] = {
        {"misspelt optional key", JSON("%s,%s,\"storefornt\":\"USA\"}", reactivate, INFO), ARG,
         "unknown key \"storefornt\""},
        {"unknown key with null", JSON("%s,%s,\"storefornt\":null}", reactivate, INFO), ARG, "unknown key \"storefornt\""},
        {"unknown key in requestInfo",
         JSON("%s,\"requestInfo\":{\"requestReferenceId\":\"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11\",\"consistencyTokn\":\"x\"}}",
              reactivate),
         ARG, "unknown key \"requestInfo.consistencyTokn\""},
        {"misspelt item key",
         JSON("%s,%s,\"items\":[{\"descripton\":\"d\",\"displayName\":\"n\",\"price\":1,\"SKU\":\"s\"}]}", create, INFO), ARG,
         "unknown key \"items[0].descripton\""},
        {"unknown key in an offer",
         JSON("%s,%s,\"items\":[{\"description\":\"d\",\"displayName\":\"n\",\"price\":1,\"SKU\":\"s\",\"offer\":{\"period\":"
              "\"P1M\",\"periodCount\":1,\"price\":1,\"reason\":\"ACQUISITION\",\"priceCents\":1}}]}",
              create, INFO),
         ARG, "unknown key \"items[0].offer.priceCents\""},
        {"lowercase sku", JSON("%s,%s,\"items\":[{\"SKU\":\"a\"},{\"sku\":\"b\"}]}", reactivate, INFO), ARG,
         "unknown key \"items[1].sku\""},
        {"unknown key in modify descriptors",
         JSON("%s,%s,\"descriptors\":{\"effective\":\"IMMEDIATELY\",\"displayname\":\"x\"}}", modify, INFO), ARG,
         "unknown key \"descriptors.displayname\""},
        {"unknown key in a removed item", JSON("%s,%s,\"removeItems\":[{\"SKU\":\"a\",\"why\":\"x\"}]}", modify, INFO), ARG,
         "unknown key \"removeItems[0].why\""},
        {"version 2", JSON("%s,%s,\"version\":\"2\"}", reactivate, INFO), ARG, "\"version\" must be \"1\""},
        {"version as a number", JSON("%s,%s,\"version\":1}", reactivate, INFO), ARG, "\"version\" must be \"1\""},
        {"unknown operation", JSON("{\"operation\":\"DELETE_EVERYTHING\",%s}", INFO), ARG, "unknown operation"},
        {"operation not a string", JSON("{\"operation\":[\"CREATE_SUBSCRIPTION\"]}"), ARG, "operation"},
        {"no operation", JSON("{%s}", INFO), ARG, "operation"},
        {"an array", JSON("[1,2,3]"), ARG, "not a JSON object"},
        {"truncated JSON", JSON("%s,%s", reactivate, INFO), ARG, "not a JSON object"},
        {"required key missing", JSON("%s}", reactivate), ARG, "requestInfo"},
        {"wrong type", JSON("{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":1,%s}", INFO), ARG, "transactionId"},
        {"a limit broken", JSON("%s,%s,\"items\":[]}", reactivate, INFO), APPSTORE_INVALID_ARGUMENT, "invalid_request", "items"},
    };
#undef JSON
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sign_case c = {cases[i].label, ADVANCED_COMMERCE, K_FULL, cases[i].json, NULL, NULL, NULL, strlen(cases[i].json),
                       0, 0, 0, cases[i].status, cases[i].reason, cases[i].message};
        run(&c);
    }
    /* Hostile nesting: 100k '[' and 100k '{"a":' inside a request. */
    size_t big = 100 * 1024;
    char *deep = malloc(big + 1);
    memset(deep, '[', big);
    deep[big] = 0;
    sign_case d1 = {"nested 100k deep", ADVANCED_COMMERCE, K_FULL, deep, NULL, NULL, NULL, big, 0, 0, 0, ARG, NULL};
    run(&d1);
    /* Well-formed: an unknown key whose value is 20k objects deep (a parser without a depth limit would recurse). */
    char *deep_obj = malloc(8 * 20000 + 512);
    size_t o = (size_t)sprintf(deep_obj, "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"1\",%s,\"x\":", INFO);
    for (int i = 0; i < 20000; i++) o += (size_t)sprintf(deep_obj + o, "{\"a\":");
    deep_obj[o++] = '1';
    for (int i = 0; i < 20000; i++) deep_obj[o++] = '}';
    deep_obj[o++] = '}';
    deep_obj[o] = 0;
    sign_case d2 = {"unknown key holding 20k nested objects", ADVANCED_COMMERCE, K_FULL, deep_obj, NULL, NULL, NULL, o, 0,
                    0, 0, ARG, NULL};
    run(&d2);
    free(deep);
    free(deep_obj);
}

/* Success keeps the conventions too: *err_out untouched, outputs set; the keys still work after all of the above. */
static void conventions(void) {
    appstore_signing_key_free(NULL); /* reaching the next line is the check */
    appstore_string_free(NULL);
    appstore_error_free(NULL);
    capi_check(&T, 1, "signing_key_free(NULL), string_free(NULL), error_free(NULL)", NULL);

    appstore_error *err = ERR_SENTINEL;
    char *s = NULL;
    appstore_status st = appstore_signing_key_create_api_token(key_full, 0, 0, &s, &err);
    capi_check(&T, st == APPSTORE_OK && s != NULL && err == ERR_SENTINEL, "success: token set, *err_out untouched",
               "status %s", appstore_status_name(st));
    if (st == APPSTORE_OK) appstore_string_free(s);

    char json[512];
    snprintf(json, sizeof json, "{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"transactionId\":\"1\",%s,\"storefront\":null}",
             INFO);
    s = NULL;
    st = appstore_signing_key_create_advanced_commerce_in_app(key_full, json, strlen(json), NULL, &s, NULL);
    capi_check(&T, st == APPSTORE_OK && s != NULL, "known optional key given as null is accepted", "status %s",
               appstore_status_name(st));
    if (st == APPSTORE_OK) appstore_string_free(s);

    /* The PEM need not be NUL-terminated: an exact-size heap copy. */
    char *exact = malloc(pem_len);
    memcpy(exact, pem, pem_len);
    appstore_signing_key *k = NULL;
    st = appstore_signing_key_new(exact, pem_len, KID, NULL, BID, &k, NULL);
    capi_check(&T, st == APPSTORE_OK && k != NULL, "PEM without a terminating NUL", "status %s", appstore_status_name(st));
    appstore_signing_key_free(k);
    free(exact);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s KEYDIR\n", argv[0]);
        return 2;
    }
    char *p = capi_join(argv[1], "p256.p8");
    pem = (char *)capi_read_file(p, &pem_len);
    free(p);
    if (!pem || appstore_signing_key_new(pem, pem_len, KID, ISS, BID, &key_full, NULL) != APPSTORE_OK ||
        appstore_signing_key_new(pem, pem_len, KID, NULL, BID, &key_no_issuer, NULL) != APPSTORE_OK) {
        printf("FAIL cannot load %s/p256.p8 (run check_signatures.py keys first)\n", argv[1]);
        printf("sign errors: 0 passed, 1 failed\n");
        return 1;
    }
    printf("libappstoreserver %s\n", appstore_version());

    null_arguments();
    invalid_utf8();
    truncated_and_garbage_pem();
    huge_lengths();
    advanced_commerce_requests();
    conventions();

    appstore_signing_key_free(key_full);
    appstore_signing_key_free(key_no_issuer);
    free(pem);
    return capi_finish(&T);
}
