/*
 * sign_floor: the floor for the `sign` group — the raw OpenSSL P-256 signing rate, in plain C, without
 * libappstoreserver.
 *
 *   sign_floor KEY.p8 [--seconds S] [--runs N] [--only CASE,...]
 *
 * The key is parsed once. An EVP_MD_CTX is initialised once (EVP_DigestSignInit, SHA-256, the key); each
 * signature is EVP_MD_CTX_copy_ex from that template + one EVP_DigestSign call into a stack buffer (DER output).
 * Nothing else: no JSON, no base64, no DER -> r||s, no allocation of the result.
 *
 * One floor case per library case, each signing a fixed message shaped like that case's signing input (built
 * once, up front, with the same identifiers as the library calls: "header.claims" in base64url for the JWS cases,
 * the U+2063-joined string for promotional_offer_v1), so the SHA-256 part matches too. It prints
 *   RESULT floor <case> <signatures per second> 1
 *   INFO floor <case> message_bytes <length of the signed message>
 * The first signature and the last one of every run are verified with EVP_DigestVerify; every signature's
 * return code and length are checked.
 */
#include "bench.h"
#include "sign_common.h"

typedef struct {
    int id;
    EVP_PKEY *key;
    EVP_MD_CTX *template_ctx, *ctx;
    char msg[4096];
    size_t msg_len;
    unsigned char sig[80];
    size_t sig_len;
} floor_case;

static size_t b64url_json(char *out, const char *json) {
    return sign_b64_encode((const unsigned char *)json, strlen(json), out, 1);
}

/* The message of case c: what the library signs for that case, with a fixed iat and nonce. */
static void build_message(floor_case *f) {
    const long long iat = 1760000000;
    const char *nonce = "0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10";
    if (f->id == SIGN_PROMO_V1) {
        f->msg_len = sign_v1_payload(f->msg, sizeof f->msg, nonce, iat * 1000);
        return;
    }
    char claims[2048], extra[1600] = "";
    if (f->id == SIGN_PROMO_V2) {
        snprintf(extra, sizeof extra, ",\"productId\":\"%s\",\"offerIdentifier\":\"%s\",\"transactionId\":\"%s\"",
                 SIGN_PRODUCT_ID, SIGN_OFFER_ID, SIGN_TRANSACTION_ID);
    } else if (f->id == SIGN_INTRO) {
        snprintf(extra, sizeof extra, ",\"productId\":\"%s\",\"allowIntroductoryOffer\":true,\"transactionId\":\"%s\"",
                 SIGN_PRODUCT_ID, SIGN_TRANSACTION_ID);
    } else if (f->id == SIGN_ADVANCED) {
        /* The library re-encodes the request with "version":"1" and puts its standard base64 in `request`. */
        const char *req = SIGN_AC_REQUEST_JSON;
        char full[1024], b64[1400];
        snprintf(full, sizeof full, "{\"version\":\"1\",%s", req + 1);
        sign_b64_encode((const unsigned char *)full, strlen(full), b64, 0);
        snprintf(extra, sizeof extra, ",\"request\":\"%s\"", b64);
    }
    if (f->id == SIGN_API_TOKEN) {
        snprintf(claims, sizeof claims, "{\"iss\":\"%s\",\"iat\":%lld,\"exp\":%lld,\"aud\":\"%s\",\"bid\":\"%s\"}",
                 SIGN_ISSUER_ID, iat, iat + SIGN_API_TOKEN_LIFETIME, sign_case_audience(f->id), SIGN_BUNDLE_ID);
    } else {
        snprintf(claims, sizeof claims, "{\"iss\":\"%s\",\"iat\":%lld,\"aud\":\"%s\",\"bid\":\"%s\",\"nonce\":\"%s\"%s}",
                 SIGN_ISSUER_ID, iat, sign_case_audience(f->id), SIGN_BUNDLE_ID, nonce, extra);
    }
    size_t n = b64url_json(f->msg, "{\"alg\":\"ES256\",\"kid\":\"" SIGN_KEY_ID "\",\"typ\":\"JWT\"}");
    f->msg[n++] = '.';
    n += b64url_json(f->msg + n, claims);
    f->msg_len = n;
}

static void check_last(floor_case *f, const char *when) {
    if (!sign_verify_der(f->key, f->msg, f->msg_len, f->sig, f->sig_len))
        bench_fail("floor %s: the %s signature does not verify", sign_case_names[f->id], when);
}

static int sign_once(void *ctx, size_t i, const bench_line *in) {
    (void)i, (void)in;
    floor_case *f = ctx;
    f->sig_len = sizeof f->sig;
    if (EVP_MD_CTX_copy_ex(f->ctx, f->template_ctx) != 1 ||
        EVP_DigestSign(f->ctx, f->sig, &f->sig_len, (const unsigned char *)f->msg, f->msg_len) != 1 ||
        f->sig_len < 8 || f->sig_len > 72)
        bench_fail("floor %s: EVP_DigestSign failed", sign_case_names[f->id]);
    return 1;
}

static void after_run(void *ctx) { check_last(ctx, "last"); }

int main(int argc, char **argv) {
    bench_options o = bench_parse(argc, argv);
    o.after_run = after_run;
    EVP_PKEY *key = sign_load_key(o.vectors);
    if (!key) bench_fail("cannot read a private key from %s", o.vectors);
    bench_line dummy = {"-", 1};
    bench_lines inputs = {&dummy, 1};
    for (int c = 0; c < SIGN_CASE_COUNT; c++) {
        if (c == SIGN_ADVANCED_JSON || !bench_wants(&o, sign_case_names[c])) continue; /* same message as SIGN_ADVANCED */
        floor_case f = {.id = c, .key = key, .template_ctx = EVP_MD_CTX_new(), .ctx = EVP_MD_CTX_new()};
        if (!f.template_ctx || !f.ctx || EVP_DigestSignInit(f.template_ctx, NULL, EVP_sha256(), NULL, key) != 1)
            bench_fail("floor: EVP_DigestSignInit failed");
        build_message(&f);
        if (f.msg_len == 0) bench_fail("floor %s: message too long", sign_case_names[c]);
        sign_once(&f, 0, &dummy);
        check_last(&f, "first");
        bench_measure(&o, "floor", sign_case_names[c], &inputs, sign_once, &f);
        printf("INFO floor %s message_bytes %zu\n", sign_case_names[c], f.msg_len);
        EVP_MD_CTX_free(f.template_ctx);
        EVP_MD_CTX_free(f.ctx);
    }
    EVP_PKEY_free(key);
    return 0;
}
