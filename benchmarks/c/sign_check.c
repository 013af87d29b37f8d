/*
 * sign_check: the library-independent check of the `sign` group's samples (OpenSSL libcrypto + jansson only).
 *
 *   sign_check KEY.p8 RESULTS_FILE
 *
 * RESULTS_FILE holds what the benchmark programs printed. Every timed run of the Swift and C programs prints one
 * sample of what it made (its last result):
 *   SAMPLE <impl> <case> <jws>                                        (JWS cases)
 *   SAMPLE <impl> promotional_offer_v1 <base64 DER> <nonce> <timestamp ms>
 * Each is checked in full (sign_common.h: signature verified with OpenSSL against the key, header and claims as
 * requested). Every (impl, case) with RESULT lines must have at least as many samples as RESULT lines. On success
 * prints one "#" note (samples checked; the library's signing-input lengths next to the floor's message lengths)
 * and exits 0; on any failure prints why and exits 1.
 */
#include "sign_common.h"

#define MAX_IMPLS 4

static const char *impls[MAX_IMPLS];
static int impl_count;
static int results[MAX_IMPLS][SIGN_CASE_COUNT], samples[MAX_IMPLS][SIGN_CASE_COUNT];
static size_t input_bytes[MAX_IMPLS][SIGN_CASE_COUNT];
static size_t floor_bytes[SIGN_CASE_COUNT];

static int impl_index(const char *name) {
    for (int i = 0; i < impl_count; i++)
        if (strcmp(impls[i], name) == 0) return i;
    if (impl_count == MAX_IMPLS) return -1;
    impls[impl_count] = strdup(name);
    return impl_count++;
}

static void fail(const char *fmt, const char *a, const char *b, const char *c) {
    fprintf(stderr, "sign_check: FAILED: ");
    fprintf(stderr, fmt, a, b, c);
    fputc('\n', stderr);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s KEY.p8 RESULTS_FILE\n", argv[0]);
        return 2;
    }
    EVP_PKEY *key = sign_load_key(argv[1]);
    if (!key) fail("cannot read a private key from %s%s%s", argv[1], "", "");
    FILE *f = fopen(argv[2], "r");
    if (!f) fail("cannot open %s%s%s", argv[2], "", "");
    char *line = NULL;
    size_t cap = 0;
    int total = 0;
    while (getline(&line, &cap, f) > 0) {
        char *save = NULL, *kind = strtok_r(line, " \n", &save), *impl = strtok_r(NULL, " \n", &save);
        char *name = strtok_r(NULL, " \n", &save), *value = strtok_r(NULL, " \n", &save);
        if (!kind || !impl || !name) continue;
        int c = sign_case_by_name(name);
        if (strcmp(kind, "INFO") == 0 && strcmp(impl, "floor") == 0 && c >= 0 && value &&
            strcmp(value, "message_bytes") == 0) {
            char *n = strtok_r(NULL, " \n", &save);
            floor_bytes[c] = n ? (size_t)strtoull(n, NULL, 10) : 0;
            continue;
        }
        int is_result = strcmp(kind, "RESULT") == 0, is_sample = strcmp(kind, "SAMPLE") == 0;
        if ((!is_result && !is_sample) || strcmp(impl, "floor") == 0) continue;
        if (c < 0) fail("%s line for unknown case %s (%s)", kind, name, impl);
        int i = impl_index(impl);
        if (i < 0) fail("too many implementations (%s %s%s)", impl, name, "");
        if (is_result) {
            results[i][c]++;
            continue;
        }
        if (!value) fail("empty SAMPLE line: %s %s%s", impl, name, "");
        const char *bad;
        if (c == SIGN_PROMO_V1) {
            char *nonce = strtok_r(NULL, " \n", &save), *ts = strtok_r(NULL, " \n", &save);
            if (!nonce || !ts) fail("%s %s: SAMPLE without nonce and timestamp%s", impl, name, "");
            bad = sign_check_v1(key, value, nonce, strtoll(ts, NULL, 10));
            input_bytes[i][c] = sign_v1_payload((char[512]){0}, 512, nonce, strtoll(ts, NULL, 10));
        } else {
            bad = sign_check_jws(key, c, value);
            input_bytes[i][c] = (size_t)(strrchr(value, '.') - value);
        }
        if (bad) fail("%s %s: sample does not pass the OpenSSL check: %s", impl, name, bad);
        samples[i][c]++;
        total++;
    }
    fclose(f);
    free(line);

    char summary[2048];
    size_t n = (size_t)snprintf(summary, sizeof summary, "# sign_check: %d samples (one per timed run) verified "
                                "with OpenSSL, claims as requested; signed bytes (library / floor):", total);
    for (int c = 0; c < SIGN_CASE_COUNT; c++) {
        size_t lib = 0;
        for (int i = 0; i < impl_count; i++) {
            if (samples[i][c] < results[i][c]) {
                char want[32];
                snprintf(want, sizeof want, "%d", results[i][c]);
                fail("%s %s: fewer SAMPLE lines than the %s RESULT lines", impls[i], sign_case_names[c], want);
            }
            if (input_bytes[i][c] > lib) lib = input_bytes[i][c];
        }
        size_t fb = floor_bytes[c == SIGN_ADVANCED_JSON ? SIGN_ADVANCED : c];
        if (lib && n < sizeof summary)
            n += (size_t)snprintf(summary + n, sizeof summary - n, fb ? " %s %zu/%zu" : " %s %zu/-", sign_case_names[c],
                                  lib, fb);
    }
    puts(summary);
    EVP_PKEY_free(key);
    return 0;
}
