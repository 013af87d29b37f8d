/*
 * ber_linear: receipt parsing is linear in the input whatever the BER nesting.
 *
 * Two app receipts of the same size (about 10 MiB, base64 under the 16 MiB limit), identical but for the nesting
 * of their eContent: FLAT is one indefinite-length constructed OCTET STRING holding 3.6 million one-byte primitive
 * segments; NESTED wraps the same segments in 24 levels of indefinite-length constructed OCTET STRINGs (a parser
 * that finds each indefinite element's end by walking its children, and walks them again for every consumer and
 * every enclosing level, pays bytes x nesting). Both go through appstore_receipt_extract_transaction_ids, which
 * parses the whole envelope and the content before it finds that the content is not a receipt attribute SET
 * (receipt_malformed is the expected answer: no signature can make hostile input cheaper to parse).
 * Prints the best time per call of each and the ratio nested / flat; target <= 2.
 *
 * usage: ber_linear [--runs N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "appstoreserver.h"

static unsigned char *put(unsigned char *p, const void *bytes, size_t n) { memcpy(p, bytes, n); return p + n; }

static const unsigned char SIGNED_DATA_OID[] = {0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02};
static const unsigned char DATA_OID[] = {0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01};
static const unsigned char INDEF_SEQ[] = {0x30, 0x80}, INDEF_A0[] = {0xA0, 0x80}, INDEF_OCTETS[] = {0x24, 0x80};
static const unsigned char EOC[] = {0x00, 0x00};

#define SEGMENT 1
#define SEGMENTS 3600000 /* 3.6 million 3-byte elements: 10.3 MiB, where the element count makes re-walking costly */

/* ContentInfo { signedData, [0] SignedData { 1, SET {}, { data, [0] <eContent> }, SET {} } }, indefinite lengths. */
static unsigned char *receipt(int nesting, size_t *len) {
    unsigned char *buf = malloc((size_t)SEGMENTS * (SEGMENT + 2) + 4096), *p = buf;
    p = put(p, INDEF_SEQ, 2);
    p = put(p, SIGNED_DATA_OID, sizeof SIGNED_DATA_OID);
    p = put(p, INDEF_A0, 2);
    p = put(p, INDEF_SEQ, 2);
    p = put(p, "\x02\x01\x01\x31\x00", 5);
    p = put(p, INDEF_SEQ, 2);
    p = put(p, DATA_OID, sizeof DATA_OID);
    p = put(p, INDEF_A0, 2);
    for (int i = 0; i < nesting; i++) p = put(p, INDEF_OCTETS, 2);
    for (int s = 0; s < SEGMENTS; s++) {
        unsigned char head[2] = {0x04, SEGMENT};
        p = put(p, head, 2);
        memset(p, 'x', SEGMENT);
        p += SEGMENT;
    }
    for (int i = 0; i < nesting; i++) p = put(p, EOC, 2);
    p = put(p, EOC, 2);                      /* [0] eContent */
    p = put(p, EOC, 2);                      /* encapContentInfo */
    p = put(p, "\x31\x00", 2);               /* signerInfos */
    p = put(p, EOC, 2);                      /* SignedData */
    p = put(p, EOC, 2);                      /* [0] */
    p = put(p, EOC, 2);                      /* ContentInfo */
    *len = (size_t)(p - buf);
    return buf;
}

static char *base64(const unsigned char *d, size_t n) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        *o++ = a[v >> 18 & 63];
        *o++ = a[v >> 12 & 63];
        *o++ = i + 1 < n ? a[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Best seconds per call over `runs` calls; the answer must be receipt_malformed about the content. */
static double best(const char *b64, int runs, const char *label) {
    double best = 1e9;
    for (int r = 0; r < runs; r++) {
        char *json = NULL;
        appstore_error *err = NULL;
        double t0 = now();
        appstore_status st = appstore_receipt_extract_transaction_ids(b64, strlen(b64), &json, &err);
        double t = now() - t0;
        if (st != APPSTORE_INVALID_RECEIPT || appstore_error_reason(err) != APPSTORE_REASON_RECEIPT_MALFORMED ||
            !strstr(appstore_error_message(err), "not a SET of receipt attributes")) {
            fprintf(stderr, "ber_linear: %s: unexpected answer %s / %s: %s\n", label, appstore_status_name(st),
                    appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
            exit(1);
        }
        appstore_error_free(err);
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    int runs = argc == 3 && strcmp(argv[1], "--runs") == 0 ? atoi(argv[2]) : 5;
    size_t flat_len, nested_len;
    unsigned char *flat = receipt(1, &flat_len), *nested = receipt(24, &nested_len);
    char *flat64 = base64(flat, flat_len), *nested64 = base64(nested, nested_len);
    printf("# receipts: flat %zu bytes (1 level), nested %zu bytes (24 levels of indefinite-length OCTET STRINGs), "
           "base64 %zu / %zu\n", flat_len, nested_len, strlen(flat64), strlen(nested64));
    double f = best(flat64, runs, "flat"), n = best(nested64, runs, "nested");
    printf("ber flat    %8.1f ms/call\n", f * 1000);
    printf("ber nested  %8.1f ms/call  ratio_nested_to_flat=%.2f  target <= 2: %s\n", n * 1000, n / f,
           n / f <= 2 ? "met" : "MISSED");
    free(flat), free(nested), free(flat64), free(nested64);
    return 0;
}
