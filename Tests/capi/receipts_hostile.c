/*
 * c_receipts_hostile RECEIPT_FIXTURES_DIR CONFORMANCE_DIR [--quick] [--max-seconds S]
 *
 * Hostile receipts through the C ABI: each input goes, base64-encoded, through
 * appstore_receipt_extract_transaction_id, appstore_receipt_extract_transaction_ids,
 * appstore_transaction_receipt_extract_transaction_id and appstore_receipt_verifier_verify (own root), and every
 * call must fail with APPSTORE_INVALID_RECEIPT or APPSTORE_NOT_FOUND (verify: any failure), an error object and
 * untouched outputs — no crash, no hang:
 *   - a real receipt (own-CA fixture; the real sandbox receipts and the Xcode BER receipt when CONFORMANCE_DIR
 *     exists) truncated at every length (--quick: every 7th length, every 23rd for the real receipts, for valgrind);
 *   - random bytes, plain and behind a receipt-like prefix (--quick: fewer);
 *   - 100,000 nested indefinite-length SEQUENCEs, 20,000 nested definite SETs, nested constructed OCTET STRINGs;
 *   - indefinite lengths without end-of-contents; lengths of 2^63 - 1, 2^63, 2^64 - 1 and 9 length bytes, on the
 *     outer structure and inside an otherwise well-formed receipt.
 * The whole run must finish within --max-seconds (default 120).
 * Closing line: "receipts-hostile: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static capi_tally T = {"receipts-hostile", 0, 0};
static appstore_receipt_verifier *V;
static long inputs;

static int sentinel;
#define STR_SENTINEL ((char *)(void *)&sentinel)

static int rejected(appstore_status st, char *out, appstore_error *err, int verify) {
    int ok = st != APPSTORE_OK && out == STR_SENTINEL && err && appstore_error_status(err) == st;
    if (!verify) ok = ok && (st == APPSTORE_INVALID_RECEIPT || st == APPSTORE_NOT_FOUND);
    return ok;
}

/* Every entry point must reject the receipt whose binary form is der/len. Returns 1 when all did. */
static int reject_all(const unsigned char *der, size_t len, const char *what) {
    inputs++;
    char *b64 = capi_base64_encode(der, len);
    size_t n = strlen(b64);
    if (n == 0) { /* an empty receipt is an argument error */
        free(b64);
        return 1;
    }
    int ok = 1;
    char *out = STR_SENTINEL;
    appstore_error *err = NULL;
    appstore_status st = appstore_receipt_extract_transaction_id(b64, n, &out, &err);
    if (!rejected(st, out, err, 0)) {
        ok = capi_check(&T, 0, what, "extract_transaction_id: %s %s", appstore_status_name(st), appstore_error_message(err));
        if (st == APPSTORE_OK && out != STR_SENTINEL) appstore_string_free(out);
    }
    appstore_error_free(err);
    out = STR_SENTINEL, err = NULL;
    st = appstore_receipt_extract_transaction_ids(b64, n, &out, &err);
    /* a hostile input never parses as a receipt, so this one cannot succeed either */
    if (!rejected(st, out, err, 0)) {
        ok = capi_check(&T, 0, what, "extract_transaction_ids: %s", appstore_status_name(st));
        if (st == APPSTORE_OK && out != STR_SENTINEL) appstore_string_free(out);
    }
    appstore_error_free(err);
    out = STR_SENTINEL, err = NULL;
    st = appstore_transaction_receipt_extract_transaction_id(b64, n, &out, &err);
    if (!(st != APPSTORE_OK && out == STR_SENTINEL && err)) {
        /* random bytes may happen to be text; they still cannot hold a purchase-info */
        ok = capi_check(&T, 0, what, "transaction receipt: %s", appstore_status_name(st));
        if (st == APPSTORE_OK && out != STR_SENTINEL) appstore_string_free(out);
    }
    appstore_error_free(err);
    out = STR_SENTINEL, err = NULL;
    st = appstore_receipt_verifier_verify(V, b64, n, &out, &err);
    if (!rejected(st, out, err, 1)) {
        ok = capi_check(&T, 0, what, "verify: %s", appstore_status_name(st));
        if (st == APPSTORE_OK && out != STR_SENTINEL) appstore_string_free(out);
    }
    appstore_error_free(err);
    free(b64);
    return ok;
}

/* ---- DER building ------------------------------------------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *data, size_t n) {
    if (n == 0) return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) exit(2);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

/* tag, definite length, content */
static buf tlv(unsigned char tag, const unsigned char *content, size_t n) {
    buf b = {0};
    unsigned char head[10];
    size_t h = 0;
    head[h++] = tag;
    if (n < 0x80) head[h++] = (unsigned char)n;
    else {
        unsigned char tmp[8];
        size_t k = 0;
        for (size_t v = n; v; v >>= 8) tmp[k++] = (unsigned char)(v & 0xff);
        head[h++] = (unsigned char)(0x80 | k);
        while (k) head[h++] = tmp[--k];
    }
    put(&b, head, h);
    put(&b, content, n);
    return b;
}

static const unsigned char SIGNED_DATA_OID[] = {0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02};
static const unsigned char DATA_OID[] = {0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01};

/* An unsigned PKCS#7 SignedData whose eContent [0] holds the raw element `econtent`. */
static buf envelope(const unsigned char *econtent, size_t n) {
    buf zero = tlv(0xA0, econtent, n), encap = {0}, sd = {0}, ci = {0};
    put(&encap, DATA_OID, sizeof DATA_OID);
    put(&encap, zero.p, zero.len);
    buf encap_seq = tlv(0x30, encap.p, encap.len);
    static const unsigned char head[] = {0x02, 0x01, 0x01, 0x31, 0x00};
    put(&sd, head, sizeof head);
    put(&sd, encap_seq.p, encap_seq.len);
    put(&sd, "\x31\x00", 2);
    buf sd_seq = tlv(0x30, sd.p, sd.len);
    buf explicit = tlv(0xA0, sd_seq.p, sd_seq.len);
    put(&ci, SIGNED_DATA_OID, sizeof SIGNED_DATA_OID);
    put(&ci, explicit.p, explicit.len);
    buf out = tlv(0x30, ci.p, ci.len);
    free(zero.p), free(encap.p), free(encap_seq.p), free(sd.p), free(sd_seq.p), free(explicit.p), free(ci.p);
    return out;
}

/* The payload (attribute SET bytes) wrapped in an OCTET STRING, in an envelope. */
static buf envelope_payload(const unsigned char *payload, size_t n) {
    buf octets = tlv(0x04, payload, n);
    buf out = envelope(octets.p, octets.len);
    free(octets.p);
    return out;
}

/* ---- the inputs ------------------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x5EED;
static uint64_t rng(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void truncations(const unsigned char *der, size_t len, size_t step, const char *name) {
    char what[300];
    long failed_before = T.failed;
    for (size_t n = 0; n < len; n += step) {
        snprintf(what, sizeof what, "%s truncated to %zu bytes", name, n);
        if (!reject_all(der, n, what)) break;
    }
    if (T.failed == failed_before) capi_check(&T, 1, name, NULL);
}

static void truncate_file(const char *dir, const char *rel, size_t step) {
    char *path = capi_join(dir, rel);
    size_t len;
    char *text = capi_read_trimmed(path, &len);
    free(path);
    if (!capi_check(&T, text != NULL, rel, "unreadable")) return;
    size_t der_len;
    unsigned char *der = capi_base64_decode(text, &der_len);
    free(text);
    if (capi_check(&T, der != NULL, rel, "not base64")) truncations(der, der_len, step, rel);
    free(der);
}

static void random_inputs(int count) {
    long failed_before = T.failed;
    char what[100];
    for (int i = 0; i < count; i++) {
        size_t n = rng() % 600;
        unsigned char data[700];
        size_t off = 0;
        if (i % 2 == 0) { /* receipt-like start */
            static const unsigned char head[] = {0x30, 0x80};
            memcpy(data, head, sizeof head);
            memcpy(data + 2, SIGNED_DATA_OID, sizeof SIGNED_DATA_OID);
            data[2 + sizeof SIGNED_DATA_OID] = 0xA0;
            data[3 + sizeof SIGNED_DATA_OID] = (i % 4 == 0) ? 0x80 : 0x82;
            off = 4 + sizeof SIGNED_DATA_OID;
        }
        for (size_t k = 0; k < n; k++) data[off + k] = (unsigned char)rng();
        snprintf(what, sizeof what, "random input %d", i);
        if (!reject_all(data, off + n, what)) break;
    }
    if (T.failed == failed_before) capi_check(&T, 1, "random inputs", NULL);
}

static void nesting(void) {
    /* 100,000 nested indefinite-length SEQUENCEs */
    size_t n = 200000;
    unsigned char *deep = malloc(n);
    if (!deep) exit(2);
    for (size_t i = 0; i < n; i++) deep[i] = i % 2 ? 0x80 : 0x30;
    reject_all(deep, n, "100,000 nested indefinite SEQUENCEs");
    /* nested constructed OCTET STRINGs as eContent */
    for (size_t i = 0; i < n; i++) deep[i] = i % 2 ? 0x80 : 0x24;
    buf e = envelope(deep, n);
    reject_all(e.p, e.len, "nested constructed OCTET STRINGs as eContent");
    free(e.p);
    free(deep);
    /* 20,000 nested definite SETs, alone and as the payload */
    buf b = tlv(0x05, NULL, 0);
    for (int i = 0; i < 20000; i++) {
        buf next = tlv(0x31, b.p, b.len);
        free(b.p);
        b = next;
    }
    reject_all(b.p, b.len, "20,000 nested SETs");
    e = envelope_payload(b.p, b.len);
    reject_all(e.p, e.len, "20,000 nested SETs as the payload");
    free(e.p);
    free(b.p);
    capi_check(&T, 1, "nesting", NULL);
}

static void lengths(void) {
    static const unsigned char headers[][12] = {
        {11, 0x30, 0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, /* 2^63 - 1 */
        {11, 0x30, 0x88, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* 2^63 */
        {11, 0x30, 0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, /* 2^64 - 1 */
        {12, 0x30, 0x89, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* 9 length bytes */
        {7, 0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF},
        {3, 0x30, 0xFF},
        {3, 0x30, 0x80},
        {9, 0x1F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x00}, /* tag number too long */
    };
    char what[100];
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        size_t h = headers[i][0] - 1u;
        const unsigned char *hdr = headers[i] + 1;
        buf b = {0};
        put(&b, hdr, h);
        put(&b, "\x06\x09\x2A\x86", 4);
        snprintf(what, sizeof what, "outer length header %zu", i);
        reject_all(b.p, b.len, what);
        free(b.p);
        if (hdr[0] != 0x30) continue;
        /* the same length on the payload SET and on an attribute value inside a well-formed envelope */
        buf p = {0};
        put(&p, "\x31", 1);
        put(&p, hdr + 1, h - 1);
        put(&p, "\x30\x00", 2);
        buf e = envelope_payload(p.p, p.len);
        snprintf(what, sizeof what, "payload length header %zu", i);
        reject_all(e.p, e.len, what);
        free(e.p), free(p.p);
        buf attr = {0};
        put(&attr, "\x02\x01\x11\x02\x01\x01\x04", 7);
        put(&attr, hdr + 1, h - 1);
        buf seq = tlv(0x30, attr.p, attr.len);
        buf set = tlv(0x31, seq.p, seq.len);
        e = envelope_payload(set.p, set.len);
        snprintf(what, sizeof what, "attribute value length header %zu", i);
        reject_all(e.p, e.len, what);
        free(e.p), free(set.p), free(seq.p), free(attr.p);
    }
    /* indefinite lengths without end-of-contents */
    static const unsigned char no_eoc[][8] = {{2, 0x30, 0x80}, {5, 0x30, 0x80, 0x02, 0x01, 0x00},
                                              {6, 0x30, 0x80, 0x02, 0x01, 0x00, 0x00}, {6, 0x30, 0x80, 0x04, 0x80, 0x00, 0x00}};
    for (size_t i = 0; i < sizeof no_eoc / sizeof no_eoc[0]; i++) {
        snprintf(what, sizeof what, "indefinite length without end %zu", i);
        reject_all(no_eoc[i] + 1, no_eoc[i][0], what);
    }
    static const unsigned char payload_no_eoc[] = {0x31, 0x80, 0x30, 0x03, 0x02, 0x01, 0x11};
    buf e = envelope_payload(payload_no_eoc, sizeof payload_no_eoc);
    reject_all(e.p, e.len, "payload SET without end-of-contents");
    free(e.p);
    capi_check(&T, 1, "lengths", NULL);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RECEIPT_FIXTURES_DIR CONFORMANCE_DIR [--quick] [--max-seconds S]\n", argv[0]);
        return 2;
    }
    int quick = 0;
    double max_seconds = 120; /* a bound on cost, not a benchmark: 16x the 7.5 s of a run with both cores busy */
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) max_seconds = atof(argv[++i]);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *root_path = capi_join(argv[1], "root.der");
    size_t root_len;
    unsigned char *root = capi_read_file(root_path, &root_len);
    free(root_path);
    if (!root) {
        printf("FAIL cannot read the fixture root\nreceipts-hostile: 0 passed, 1 failed\n");
        return 1;
    }
    const uint8_t *roots[] = {root};
    if (appstore_receipt_verifier_new(roots, &root_len, 1, NULL, &V, NULL) != APPSTORE_OK) {
        printf("FAIL verifier\nreceipts-hostile: 0 passed, 1 failed\n");
        return 1;
    }
    free(root);
    size_t step = quick ? 7 : 1;
    truncate_file(argv[1], "receipts/valid-full.b64", step);
    truncate_file(argv[1], "receipts/valid-ber-indefinite.b64", step);
    char *manifest = capi_join(argv[2], "manifest.json");
    struct stat sb;
    if (stat(manifest, &sb) == 0) {
        truncate_file(argv[2], "real/receipts/app/sandbox-app-receipt-2015-11-18.b64", quick ? 23 : 1);
        truncate_file(argv[2], "real/receipts/app/sandbox-app-receipt-2020-07-22.b64", quick ? 23 : 1);
        truncate_file(argv[2], "real/receipts/app/sandbox-app-receipt-2024-04-02.b64", quick ? 23 : 1);
        truncate_file(argv[2], "xcode/receipts/xcode-app-receipt-with-transaction.b64", step);
    } else {
        printf("receipts-hostile: SKIPPED truncation of the real receipts — %s not found\n", argv[2]);
    }
    free(manifest);
    random_inputs(quick ? 300 : 2000);
    nesting();
    lengths();
    appstore_receipt_verifier_free(V);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%ld hostile inputs, each through 4 entry points, in %.2f s\n", inputs, secs);
    capi_check(&T, secs <= max_seconds, "time", "%.1f s, more than %.0f s", secs, max_seconds);
    return capi_finish(&T);
}
