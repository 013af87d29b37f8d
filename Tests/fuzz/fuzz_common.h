/*
 * Shared by the libFuzzer harnesses (the fuzz_<target>.c files): fixture loading from APPSTORE_FUZZ_DIR (set by scripts/fuzz:
 * the own-PKI fixtures and signing keys), and the one rule every harness enforces besides "no crash, no sanitizer
 * report": a failure must come with an error whose status equals the returned one and a non-empty message, and a
 * success must hand back valid output.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appstoreserver.h"

static inline unsigned char *fuzz_read(const char *rel, size_t *len) {
    const char *dir = getenv("APPSTORE_FUZZ_DIR");
    if (!dir) {
        fprintf(stderr, "set APPSTORE_FUZZ_DIR (scripts/fuzz does)\n");
        abort();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        abort();
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) abort();
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A failed call must say why, consistently; anything else is a bug (abort makes libFuzzer keep the input). */
static inline void fuzz_check(appstore_status st, appstore_error *err, const char *what) {
    if (st == APPSTORE_OK) {
        if (err) {
            fprintf(stderr, "%s: success with an error object\n", what);
            abort();
        }
        return;
    }
    if (!err || appstore_error_status(err) != st || !appstore_error_message(err)[0] ||
        strcmp(appstore_reason_name(appstore_error_reason(err)), "unknown") == 0 ||
        strcmp(appstore_status_name(st), "UNKNOWN") == 0) {
        fprintf(stderr, "%s: failure %d without a consistent error (%s)\n", what, st, err ? appstore_error_message(err) : "none");
        abort();
    }
    if (st == APPSTORE_INTERNAL_ERROR) {
        fprintf(stderr, "%s: INTERNAL_ERROR on caller input: %s\n", what, appstore_error_message(err));
        abort();
    }
    appstore_error_free(err);
}

/* Output JSON must be NUL-terminated valid UTF-8 (the library promises it for every JSON result). */
static inline void fuzz_check_utf8(const char *s, const char *what) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0) {
            fprintf(stderr, "%s: output is not UTF-8\n", what);
            abort();
        }
        p++;
        for (int k = 0; k < n; k++, p++) {
            if ((*p & 0xC0) != 0x80) {
                fprintf(stderr, "%s: output is not UTF-8\n", what);
                abort();
            }
        }
    }
}

#endif
