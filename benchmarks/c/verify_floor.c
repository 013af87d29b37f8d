/*
 * verify_floor: the floor for the `verify` group — the least work any offline verifier of App Store JWS must do,
 * written directly against OpenSSL libcrypto + jansson, without libappstoreserver.
 *
 *   verify_floor VECTORS_DIR [--seconds S] [--runs N] [--only CASE,...]
 *
 * Per JWS (the "cached" floor, chain already known, leaf key parsed once up front):
 *   find the two dots; base64url-decode the 64-byte r||s signature and re-encode it as DER; SHA-256 of the
 *   signing input; EVP_PKEY_verify with a verify context initialised once for the leaf key; base64url-decode
 *   the payload; json_loadb it; check it is an object (and its bundleId).
 * First sight adds, per JWS: base64url-decode + json_loadb of the header, base64-decode x5c[0] and x5c[1],
 *   d2i_X509 both, X509_verify(leaf, intermediate key), X509_verify(intermediate, root key), and a new verify
 *   context for the leaf key.
 *
 * Cases (impl "floor"):
 *   transaction_cached, transaction_first_sight    the two floors on transactions.jws
 *   transaction_first_sight_x509store              informational: first sight with X509_verify_cert against an
 *                                                  X509_STORE holding the root instead of two X509_verify calls
 *   notification                                   the cached per-JWS floor on notifications.jws (outer JWS only)
 *   notification_deep                              outer + each nested JWS (data.signedTransactionInfo,
 *                                                  data.signedRenewalInfo, appData.signedAppTransactionInfo), i.e.
 *                                                  the sum of the per-JWS floor over the JWS actually verified
 */
#include "bench.h"

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#define BUNDLE_ID "com.example.bench"
/* x509store variant: a fixed validation time inside every certificate's validity (2025-07-01T00:00:00Z). */
#define FIXED_TIME ((time_t)1751328000)

/* ---- base64 ------------------------------------------------------------------------------------------------ */

static signed char b64_url[256], b64_std[256];

static void b64_init(void) {
    const char *common = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    memset(b64_url, -1, sizeof b64_url);
    memset(b64_std, -1, sizeof b64_std);
    for (int i = 0; i < 62; i++) b64_url[(unsigned char)common[i]] = b64_std[(unsigned char)common[i]] = (signed char)i;
    b64_url['-'] = 62, b64_url['_'] = 63;
    b64_std['+'] = 62, b64_std['/'] = 63;
}

/* Decodes base64 (trailing '=' allowed) into out (room for len*3/4+3 bytes). Returns the length, or -1. */
static long b64_decode(const signed char *table, const char *in, size_t len, unsigned char *out) {
    while (len > 0 && in[len - 1] == '=') len--;
    if (len % 4 == 1) return -1;
    unsigned char *o = out;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        int a = table[(unsigned char)in[i]], b = table[(unsigned char)in[i + 1]];
        int c = table[(unsigned char)in[i + 2]], d = table[(unsigned char)in[i + 3]];
        if ((a | b | c | d) < 0) return -1;
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 | (unsigned)d;
        *o++ = (unsigned char)(v >> 16), *o++ = (unsigned char)(v >> 8), *o++ = (unsigned char)v;
    }
    size_t rest = len - i;
    if (rest) {
        int a = table[(unsigned char)in[i]], b = table[(unsigned char)in[i + 1]];
        int c = rest == 3 ? table[(unsigned char)in[i + 2]] : 0;
        if ((a | b | c) < 0) return -1;
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6;
        *o++ = (unsigned char)(v >> 16);
        if (rest == 3) *o++ = (unsigned char)(v >> 8);
    }
    return (long)(o - out);
}

/* A reusable scratch buffer (the floor does not pay for a malloc per decode). */
static unsigned char *scratch(size_t need) {
    static unsigned char *buf;
    static size_t cap;
    if (need > cap) {
        free(buf);
        cap = need * 2;
        buf = malloc(cap);
        if (!buf) bench_fail("out of memory");
    }
    return buf;
}

/* ---- the per-JWS floor --------------------------------------------------------------------------------------- */

static EVP_MD *sha256;

typedef struct {
    const char *header, *payload, *sig;
    size_t header_len, payload_len, sig_len, signing_len;
} jws_parts;

static int split(const char *jws, size_t len, jws_parts *p) {
    const char *d1 = memchr(jws, '.', len);
    if (!d1) return 0;
    const char *d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - jws));
    if (!d2) return 0;
    p->header = jws, p->header_len = (size_t)(d1 - jws);
    p->payload = d1 + 1, p->payload_len = (size_t)(d2 - d1 - 1);
    p->sig = d2 + 1, p->sig_len = len - (size_t)(d2 + 1 - jws);
    p->signing_len = (size_t)(d2 - jws);
    return 1;
}

/* One DER INTEGER from a 32-byte big-endian value. */
static unsigned char *der_int(unsigned char *o, const unsigned char *v) {
    int skip = 0;
    while (skip < 31 && v[skip] == 0) skip++;
    int n = 32 - skip, pad = v[skip] & 0x80 ? 1 : 0;
    *o++ = 0x02, *o++ = (unsigned char)(n + pad);
    if (pad) *o++ = 0;
    memcpy(o, v + skip, (size_t)n);
    return o + n;
}

/* ES256 verify of the signing input + decode of the payload. Returns the payload JSON (caller decrefs) or NULL. */
static json_t *floor_jws(EVP_PKEY_CTX *pctx, const jws_parts *p) {
    unsigned char raw[72], der[80], digest[32];
    if (p->sig_len != 86 || b64_decode(b64_url, p->sig, p->sig_len, raw) != 64) return NULL;
    unsigned char *e = der_int(der_int(der + 2, raw), raw + 32);
    der[0] = 0x30, der[1] = (unsigned char)(e - der - 2);
    unsigned int dlen = 0;
    if (!EVP_Digest(p->header, p->signing_len, digest, &dlen, sha256, NULL)) return NULL;
    if (EVP_PKEY_verify(pctx, der, (size_t)(e - der), digest, dlen) != 1) return NULL;
    unsigned char *buf = scratch(p->payload_len);
    long n = b64_decode(b64_url, p->payload, p->payload_len, buf);
    if (n <= 0) return NULL;
    json_t *json = json_loadb((const char *)buf, (size_t)n, 0, NULL);
    if (!json_is_object(json)) {
        json_decref(json);
        return NULL;
    }
    return json;
}

static EVP_PKEY_CTX *verify_ctx(EVP_PKEY *key) {
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(key, NULL);
    if (!c || EVP_PKEY_verify_init(c) != 1) bench_fail("cannot initialise an ES256 verify context");
    return c;
}

/* The x5c leaf and intermediate, parsed from the header. Returns 1 on success. */
static int parse_x5c(const jws_parts *p, X509 **leaf, X509 **inter) {
    unsigned char *buf = scratch(p->header_len);
    long n = b64_decode(b64_url, p->header, p->header_len, buf);
    if (n <= 0) return 0;
    json_t *h = json_loadb((const char *)buf, (size_t)n, 0, NULL);
    json_t *x5c = json_object_get(h, "x5c");
    X509 *certs[2] = {NULL, NULL};
    int ok = json_array_size(x5c) == 3;
    unsigned char der[8192];
    for (int k = 0; ok && k < 2; k++) {
        json_t *s = json_array_get(x5c, (size_t)k);
        size_t len = json_string_length(s);
        long dn = len <= 4 * (sizeof der / 3) - 8 ? b64_decode(b64_std, json_string_value(s), len, der) : -1;
        const unsigned char *q = der;
        ok = dn > 0 && (certs[k] = d2i_X509(NULL, &q, dn)) != NULL && q == der + dn;
    }
    json_decref(h);
    if (!ok) {
        X509_free(certs[0]);
        X509_free(certs[1]);
        return 0;
    }
    *leaf = certs[0], *inter = certs[1];
    return 1;
}

/* ---- cases --------------------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    EVP_PKEY_CTX *leaf_ctx; /* cached cases */
    EVP_PKEY *root_key;
    X509_STORE *store;      /* x509store variant */
} floor_ctx;

static void check_bundle(const floor_ctx *c, size_t i, json_t *json, const char *obj) {
    json_t *o = obj ? json_object_get(json, obj) : json;
    const char *b = json_string_value(json_object_get(o, "bundleId"));
    if (!b || strcmp(b, BUNDLE_ID) != 0) bench_fail("%s: #%zu: wrong or missing bundleId", c->name, i);
}

static int case_transaction_cached(void *ctx, size_t i, const bench_line *in) {
    floor_ctx *c = ctx;
    jws_parts p;
    json_t *json = split(in->data, in->len, &p) ? floor_jws(c->leaf_ctx, &p) : NULL;
    if (!json) bench_fail("%s: #%zu: verification failed", c->name, i);
    check_bundle(c, i, json, NULL);
    json_decref(json);
    return 1;
}

static int case_transaction_first_sight(void *ctx, size_t i, const bench_line *in) {
    floor_ctx *c = ctx;
    jws_parts p;
    X509 *leaf = NULL, *inter = NULL;
    if (!split(in->data, in->len, &p) || !parse_x5c(&p, &leaf, &inter))
        bench_fail("%s: #%zu: bad x5c header", c->name, i);
    if (c->store) {
        X509_STORE_CTX *sctx = X509_STORE_CTX_new();
        STACK_OF(X509) *untrusted = sk_X509_new_null();
        if (!sctx || !untrusted || !sk_X509_push(untrusted, inter) || X509_STORE_CTX_init(sctx, c->store, leaf, untrusted) != 1)
            bench_fail("%s: cannot set up X509_STORE_CTX", c->name);
        X509_STORE_CTX_set_time(sctx, 0, FIXED_TIME);
        if (X509_verify_cert(sctx) != 1)
            bench_fail("%s: #%zu: chain: %s", c->name, i, X509_verify_cert_error_string(X509_STORE_CTX_get_error(sctx)));
        X509_STORE_CTX_free(sctx);
        sk_X509_free(untrusted);
    } else {
        if (X509_verify(inter, c->root_key) != 1) bench_fail("%s: #%zu: intermediate not signed by root", c->name, i);
        if (X509_verify(leaf, X509_get0_pubkey(inter)) != 1)
            bench_fail("%s: #%zu: leaf not signed by intermediate", c->name, i);
    }
    EVP_PKEY_CTX *pctx = verify_ctx(X509_get0_pubkey(leaf));
    json_t *json = floor_jws(pctx, &p);
    if (!json) bench_fail("%s: #%zu: verification failed", c->name, i);
    check_bundle(c, i, json, NULL);
    json_decref(json);
    EVP_PKEY_CTX_free(pctx);
    X509_free(leaf);
    X509_free(inter);
    return 1;
}

static json_t *notification_outer(floor_ctx *c, size_t i, const bench_line *in) {
    jws_parts p;
    json_t *json = split(in->data, in->len, &p) ? floor_jws(c->leaf_ctx, &p) : NULL;
    if (!json) bench_fail("%s: #%zu: verification failed", c->name, i);
    check_bundle(c, i, json, "data");
    return json;
}

static int case_notification(void *ctx, size_t i, const bench_line *in) {
    json_decref(notification_outer(ctx, i, in));
    return 1;
}

static int case_notification_deep(void *ctx, size_t i, const bench_line *in) {
    floor_ctx *c = ctx;
    json_t *outer = notification_outer(c, i, in);
    static const char *const nested[][2] = {
        {"data", "signedTransactionInfo"}, {"data", "signedRenewalInfo"}, {"appData", "signedAppTransactionInfo"}};
    int count = 1;
    for (size_t k = 0; k < sizeof nested / sizeof nested[0]; k++) {
        json_t *s = json_object_get(json_object_get(outer, nested[k][0]), nested[k][1]);
        if (!s) continue;
        jws_parts p;
        json_t *json = split(json_string_value(s), json_string_length(s), &p) ? floor_jws(c->leaf_ctx, &p) : NULL;
        if (!json) bench_fail("%s: #%zu: %s.%s: verification failed", c->name, i, nested[k][0], nested[k][1]);
        if (k == 0) check_bundle(c, i, json, NULL);
        json_decref(json);
        count++;
    }
    if (count < 2) bench_fail("%s: #%zu: no nested transaction", c->name, i);
    json_decref(outer);
    return count;
}

int main(int argc, char **argv) {
    bench_options o = bench_parse(argc, argv);
    b64_init();
    if (!(sha256 = EVP_MD_fetch(NULL, "SHA256", NULL))) bench_fail("cannot fetch SHA256");

    char path[4096];
    snprintf(path, sizeof path, "%s/root.der", o.vectors);
    size_t root_len = 0;
    unsigned char *root_der = bench_read_file(path, &root_len);
    const unsigned char *q = root_der;
    X509 *root = d2i_X509(NULL, &q, (long)root_len);
    if (!root) bench_fail("%s is not a DER certificate", path);
    X509_STORE *store = X509_STORE_new();
    if (!store || X509_STORE_add_cert(store, root) != 1) bench_fail("cannot build the X509_STORE");

    bench_lines txs = bench_read_lines(o.vectors, "transactions.jws");
    bench_lines notes = bench_read_lines(o.vectors, "notifications.jws");

    /* Up front, once: the leaf key from the first transaction's x5c[0] (chain checked once here). */
    jws_parts p;
    X509 *leaf = NULL, *inter = NULL;
    if (!split(txs.items[0].data, txs.items[0].len, &p) || !parse_x5c(&p, &leaf, &inter))
        bench_fail("transactions.jws #0: bad x5c header");
    if (X509_verify(inter, X509_get0_pubkey(root)) != 1 || X509_verify(leaf, X509_get0_pubkey(inter)) != 1)
        bench_fail("transactions.jws #0: chain does not verify against root.der");
    EVP_PKEY_CTX *leaf_ctx = verify_ctx(X509_get0_pubkey(leaf));

    floor_ctx c = {NULL, leaf_ctx, X509_get0_pubkey(root), NULL};
    c.name = "transaction_cached";
    bench_measure(&o, "floor", c.name, &txs, case_transaction_cached, &c);
    c.name = "transaction_first_sight";
    bench_measure(&o, "floor", c.name, &txs, case_transaction_first_sight, &c);
    c.name = "transaction_first_sight_x509store", c.store = store;
    bench_measure(&o, "floor", c.name, &txs, case_transaction_first_sight, &c);
    c.store = NULL;
    c.name = "notification";
    bench_measure(&o, "floor", c.name, &notes, case_notification, &c);
    c.name = "notification_deep";
    bench_measure(&o, "floor", c.name, &notes, case_notification_deep, &c);

    EVP_PKEY_CTX_free(leaf_ctx);
    X509_free(leaf);
    X509_free(inter);
    X509_STORE_free(store);
    X509_free(root);
    EVP_MD_free(sha256);
    return 0;
}
