/*
 * sign_capi: the `sign` group through the C ABI — a C program calling libappstoreserver as a C host would: one
 * appstore_signing_key made from the .p8 text, then one call per token/signature, each result freed with
 * appstore_string_free.
 *
 *   sign_capi KEY.p8 [--seconds S] [--runs N] [--only CASE,...]
 *
 * Cases: api_token, promotional_offer_v1, promotional_offer_v2, introductory_offer_eligibility,
 * advanced_commerce_in_app (see benchmarks/README.md). Issued-at, timestamps and nonces are "now" / fresh, as in
 * production. Every call's status is checked, and its result cheaply: a JWS must start with the same header
 * segment as the first one and have a payload and an 86-character signature segment; a v1 signature must be
 * 88-96 base64 characters with a 36-character nonce. The first result and the last result of every run are checked
 * fully, independently of the library, with OpenSSL + jansson (sign_common.h); the last one of each run is also
 * printed as a SAMPLE line for benchmarks/run's final check (sign_check).
 */
#include "bench.h"
#include "sign_common.h"

#include <appstoreserver.h>

typedef struct {
    int id;
    const appstore_signing_key *key;
    EVP_PKEY *check_key;
    char *last, *last_nonce; /* the previous call's result, kept until the next call (or the end of the run) */
    int64_t last_ts;
    char prefix[256]; /* "header." of the first JWS */
    size_t prefix_len;
} capi_case;

static void die_on(appstore_status st, appstore_error *err, const char *what) {
    if (st == APPSTORE_OK) return;
    bench_fail("%s: %s / %s: %s", what, appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
               appstore_error_message(err));
}

static void full_check(capi_case *c, const char *when) {
    const char *bad = c->id == SIGN_PROMO_V1 ? sign_check_v1(c->check_key, c->last, c->last_nonce, (long long)c->last_ts)
                                             : sign_check_jws(c->check_key, c->id, c->last);
    if (bad) bench_fail("c %s: the %s result fails the OpenSSL check: %s", sign_case_names[c->id], when, bad);
}

static int sign_once(void *ctx, size_t i, const bench_line *in) {
    (void)i, (void)in;
    capi_case *c = ctx;
    const char *name = sign_case_names[c->id];
    char *out = NULL, *nonce = NULL;
    int64_t ts = 0;
    appstore_error *err = NULL;
    appstore_status st;
    switch (c->id) {
    case SIGN_API_TOKEN: st = appstore_signing_key_create_api_token(c->key, 0, 0, &out, &err); break;
    case SIGN_PROMO_V1:
        st = appstore_signing_key_create_promotional_offer_v1(c->key, SIGN_PRODUCT_ID, SIGN_OFFER_ID,
                                                              SIGN_APP_ACCOUNT_TOKEN, NULL, 0, &out, &nonce, &ts, &err);
        break;
    case SIGN_PROMO_V2:
        st = appstore_signing_key_create_promotional_offer_v2(c->key, SIGN_PRODUCT_ID, SIGN_OFFER_ID,
                                                              SIGN_TRANSACTION_ID, NULL, &out, &err);
        break;
    case SIGN_INTRO:
        st = appstore_signing_key_create_introductory_offer_eligibility(c->key, SIGN_PRODUCT_ID, 1,
                                                                        SIGN_TRANSACTION_ID, NULL, &out, &err);
        break;
    case SIGN_ADVANCED:
        st = appstore_signing_key_create_advanced_commerce_in_app(c->key, SIGN_AC_REQUEST_JSON,
                                                                  sizeof SIGN_AC_REQUEST_JSON - 1, NULL, &out, &err);
        break;
    default: bench_fail("c: no such case %d", c->id); return 0;
    }
    die_on(st, err, name);
    if (c->id == SIGN_PROMO_V1) {
        size_t n = out ? strlen(out) : 0;
        if (n < 88 || n > 96 || !nonce || strlen(nonce) != 36 || ts < 1600000000000LL)
            bench_fail("c %s: malformed result (signature %zu characters, nonce %s, timestamp %lld)", name, n,
                       nonce ? nonce : "(null)", (long long)ts);
    } else if (c->prefix_len == 0) {
        const char *dot = out ? strchr(out, '.') : NULL;
        if (!dot || (size_t)(dot - out) + 1 >= sizeof c->prefix) bench_fail("c %s: the first result is not a JWS", name);
        c->prefix_len = (size_t)(dot - out) + 1;
        memcpy(c->prefix, out, c->prefix_len);
    } else if (!sign_jws_shape_ok(out, c->prefix, c->prefix_len)) {
        bench_fail("c %s: malformed JWS: %.120s", name, out ? out : "(null)");
    }
    appstore_string_free(c->last);
    appstore_string_free(c->last_nonce);
    c->last = out, c->last_nonce = nonce, c->last_ts = ts;
    return 1;
}

static void after_run(void *ctx) {
    capi_case *c = ctx;
    full_check(c, "last");
    if (c->id == SIGN_PROMO_V1)
        printf("SAMPLE c %s %s %s %lld\n", sign_case_names[c->id], c->last, c->last_nonce, (long long)c->last_ts);
    else
        printf("SAMPLE c %s %s\n", sign_case_names[c->id], c->last);
}

int main(int argc, char **argv) {
    bench_options o = bench_parse(argc, argv);
    o.after_run = after_run;
    size_t pem_len = 0;
    unsigned char *pem = bench_read_file(o.vectors, &pem_len);
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    die_on(appstore_signing_key_new((const char *)pem, pem_len, SIGN_KEY_ID, SIGN_ISSUER_ID, SIGN_BUNDLE_ID, &key, &err),
           err, "appstore_signing_key_new");
    EVP_PKEY *check_key = sign_load_key(o.vectors);
    if (!check_key) bench_fail("OpenSSL cannot read the private key %s", o.vectors);

    bench_line dummy = {"-", 1};
    bench_lines inputs = {&dummy, 1};
    for (int id = 0; id < SIGN_CASE_COUNT; id++) {
        if (id == SIGN_ADVANCED_JSON || !bench_wants(&o, sign_case_names[id])) continue; /* C always passes JSON */
        capi_case c = {.id = id, .key = key, .check_key = check_key};
        sign_once(&c, 0, &dummy);
        full_check(&c, "first");
        bench_measure(&o, "c", sign_case_names[id], &inputs, sign_once, &c);
        appstore_string_free(c.last);
        appstore_string_free(c.last_nonce);
    }
    appstore_signing_key_free(key);
    EVP_PKEY_free(check_key);
    free(pem);
    return 0;
}
