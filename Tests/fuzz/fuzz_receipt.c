/* libFuzzer: receipt id extraction (app and transaction receipts) and app receipt verification. The input is used
 * both as the base64 text as given and, base64-encoded, as the binary receipt (so the BER parser sees the raw bytes). */
#include "fuzz_common.h"

static appstore_receipt_verifier *verifier;

static char *b64(const uint8_t *d, size_t n) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        *o++ = a[v >> 18 & 63], *o++ = a[v >> 12 & 63];
        *o++ = i + 1 < n ? a[v >> 6 & 63] : '=', *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static void all(const char *text, size_t len) {
    char *out = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_receipt_extract_transaction_id(text, len, &out, &err);
    fuzz_check(st, err, "extract_transaction_id");
    if (st == APPSTORE_OK) appstore_string_free(out);
    err = NULL;
    st = appstore_receipt_extract_transaction_ids(text, len, &out, &err);
    fuzz_check(st, err, "extract_transaction_ids");
    if (st == APPSTORE_OK) fuzz_check_utf8(out, "extract_transaction_ids"), appstore_string_free(out);
    err = NULL;
    st = appstore_transaction_receipt_extract_transaction_id(text, len, &out, &err);
    fuzz_check(st, err, "transaction_receipt_extract_transaction_id");
    if (st == APPSTORE_OK) appstore_string_free(out);
    err = NULL;
    st = appstore_receipt_verifier_verify(verifier, text, len, &out, &err);
    fuzz_check(st, err, "receipt_verifier_verify");
    if (st == APPSTORE_OK) fuzz_check_utf8(out, "receipt_verifier_verify"), appstore_string_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!verifier) {
        size_t len = 0;
        unsigned char *root = fuzz_read("receipts/root.der", &len);
        const uint8_t *roots[1] = {root};
        size_t lens[1] = {len};
        if (appstore_receipt_verifier_new(roots, lens, 1, NULL, &verifier, NULL) != APPSTORE_OK) abort();
        free(root);
    }
    all((const char *)data, size);
    char *text = b64(data, size);
    all(text, strlen(text));
    free(text);
    return 0;
}
