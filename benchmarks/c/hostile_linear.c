/*
 * hostile_linear: what input an attacker without key material sends costs the same per byte at every size.
 *
 * Reads benchmarks/lib/hostile_vectors.py's files (VECTORS/<family>_<bytes>) and, per family, times the library on
 * each size from 4 KiB to the family's limit, cycling for about `seconds` per size (best of `runs`), and prints the
 * cost per byte at each size and the ratio of the per-byte cost at 1 MiB to the one at 4 KiB; target <= 2 (a parser
 * that compares each new key with every earlier one pays ~N^2: the ratio then grows with the size, 250x at 1 MiB).
 * API answers go on to 16 MiB: there the growth of the per-byte cost from 4 MiB to 16 MiB is printed too (a
 * quadratic parser: 4x; hash tables that outgrow the caches cost somewhat more per key). Families:
 *   payload_keys  appstore_verifier_verify_transaction: a self-signed chain in Apple's shape signs an object of
 *                 short keys; parsed after the signature, refused at the chain (UNTRUSTED_CHAIN / VERIFICATION_FAILURE)
 *   header_keys   the keys in the JWS header (parsed before the signature); refused at the (garbage) signature
 *   answer_keys   appstore_api_client_decode_response of a getTransactionInfo answer with the keys beside
 *                 signedTransactionInfo (unknown keys are ignored, as Apple's libraries do): up to 16 MiB
 * Every call must fail (the JWS families) or succeed (the answers) as stated: anything else aborts.
 *
 * usage: hostile_linear VECTORS [--runs N] [--seconds S]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "appstoreserver.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(buf); return NULL; }
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static void die(const char *what, appstore_status st, appstore_error *err) {
    fprintf(stderr, "hostile_linear: %s: %s / %s: %s\n", what, appstore_status_name(st),
            appstore_reason_name(appstore_error_reason(err)), err ? appstore_error_message(err) : "");
    exit(1);
}

typedef struct {
    appstore_verifier *verifier;
    appstore_api_client *client;
} ctx;

/* One call on `input`; aborts when the outcome is not the expected one. */
static void call(const ctx *c, const char *family, const unsigned char *in, size_t len) {
    appstore_error *err = NULL;
    char *json = NULL;
    appstore_status st;
    if (strcmp(family, "answer_keys") == 0) {
        st = appstore_api_client_decode_response(c->client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, 200, NULL, 0, in,
                                                 len, &json, &err);
        if (st != APPSTORE_OK) die(family, st, err);
    } else {
        st = appstore_verifier_verify_transaction(c->verifier, (const char *)in, len, &json, &err);
        int expected = strcmp(family, "payload_keys") == 0 ? APPSTORE_REASON_UNTRUSTED_CHAIN : APPSTORE_REASON_BAD_SIGNATURE;
        if (st == APPSTORE_OK || appstore_error_reason(err) != expected) die(family, st, err);
    }
    appstore_string_free(json);
    appstore_error_free(err);
}

static const size_t JWS_SIZES[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 0};
static const size_t ANSWER_SIZES[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 0};

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: hostile_linear VECTORS [--runs N] [--seconds S]\n"); return 2; }
    const char *dir = argv[1];
    int runs = 3;
    double seconds = 0.5;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
    }
    char path[4096];
    size_t root_len = 0;
    snprintf(path, sizeof path, "%s/root.der", dir);
    unsigned char *root = slurp(path, &root_len);
    if (!root) { fprintf(stderr, "hostile_linear: %s missing\n", path); return 1; }

    ctx c = {0};
    appstore_error *err = NULL;
    appstore_status st;
    appstore_verifier_options *opts = NULL;
    if ((st = appstore_verifier_options_new(&opts, &err))) die("options", st, err);
    if ((st = appstore_verifier_options_add_root(opts, root, root_len, &err))) die("add_root", st, err);
    if ((st = appstore_verifier_options_set_bundle_id(opts, "com.example", &err))) die("bundle", st, err);
    if ((st = appstore_verifier_options_set_environment(opts, APPSTORE_ENVIRONMENT_SANDBOX, &err))) die("env", st, err);
    if ((st = appstore_verifier_new(opts, &c.verifier, &err))) die("verifier", st, err);
    appstore_verifier_options_free(opts);

    /* A throwaway P-256 key for the API client (decode_response signs nothing). */
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL);
    char *pem = NULL;
    long pem_len = BIO_get_mem_data(bio, &pem);
    appstore_signing_key *key = NULL;
    if ((st = appstore_signing_key_new(pem, (size_t)pem_len, "KEY", "ISSUER", "com.example", &key, &err)))
        die("signing key", st, err);
    BIO_free(bio);
    EVP_PKEY_free(pkey);
    if ((st = appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, NULL, &c.client, &err))) die("client", st, err);

    const char *families[] = {"payload_keys", "header_keys", "answer_keys"};
    int failed = 0;
    printf("%-14s %10s %12s %12s\n", "family", "bytes", "calls/s", "ns/byte");
    for (int f = 0; f < 3; f++) {
        const size_t *sizes = f == 2 ? ANSWER_SIZES : JWS_SIZES;
        double first = 0, at_1m = 0, at_4m = 0, last = 0;
        size_t last_size = 0;
        for (int s = 0; sizes[s]; s++) {
            size_t len = 0;
            snprintf(path, sizeof path, "%s/%s_%zu", dir, families[f], sizes[s]);
            unsigned char *in = slurp(path, &len);
            if (!in) { fprintf(stderr, "hostile_linear: %s missing\n", path); return 1; }
            call(&c, families[f], in, len); /* warm-up and outcome check */
            double best = 1e30;
            for (int r = 0; r < runs; r++) {
                long n = 0;
                double t0 = now_s(), t;
                do { call(&c, families[f], in, len); n++; } while ((t = now_s()) - t0 < seconds);
                double per = (t - t0) / (double)n;
                if (per < best) best = per;
            }
            double per_byte = best * 1e9 / (double)len;
            printf("%-14s %10zu %12.1f %12.2f\n", families[f], len, 1.0 / best, per_byte);
            if (s == 0) first = per_byte;
            if (sizes[s] == 1 << 20) at_1m = per_byte;
            if (sizes[s] == 4 << 20) at_4m = per_byte;
            last = per_byte;
            last_size = sizes[s];
            free(in);
        }
        double ratio = at_1m / first;
        int ok = ratio <= 2.0;
        failed |= !ok;
        printf("RATIO %s per_byte(1048576)/per_byte(4096) = %.2f (target <= 2): %s\n", families[f], ratio,
               ok ? "met" : "MISSED");
        if (at_4m > 0)
            printf("GROWTH %s per_byte(%zu)/per_byte(4194304) = %.2f (quadratic: 4)\n", families[f], last_size, last / at_4m);
    }
    appstore_api_client_free(c.client);
    appstore_signing_key_free(key);
    appstore_verifier_free(c.verifier);
    free(root);
    printf("targets: %s\n", failed ? "MISSED (see RATIO lines)" : "all met");
    return 0; /* a measurement, not a test: only a wrong outcome (die) fails the run */
}
