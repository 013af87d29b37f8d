/*
 * debug_counts TESTPKI_DIR: appstore_debug_live_objects counts what the library hands out and gets back — a handle
 * (options, verifier), an appstore_error, a `char **` result string — and nothing else; appstore_debug_malloc_in_use
 * follows malloc. The leak checks (scripts/leak-check) rest on both. Closing line: "debug_counts: N passed, M failed".
 */
#include "capi_util.h"

#include <stdlib.h>
#include <string.h>

static void *volatile kept;

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TESTPKI_DIR\n", argv[0]);
        return 2;
    }
    capi_tally T = {"debug_counts", 0, 0};
    char *path = capi_join(argv[1], "root.der");
    size_t root_len = 0;
    unsigned char *root = capi_read_file(path, &root_len);
    free(path);
    size_t good_len = 0, bad_len = 0;
    path = capi_join(argv[1], "jws/tx-valid.jws");
    char *good = capi_read_trimmed(path, &good_len);
    free(path);
    path = capi_join(argv[1], "jws/tx-wrong-bundle.jws");
    char *bad = capi_read_trimmed(path, &bad_len);
    free(path);
    if (!capi_check(&T, root && good && bad, "fixtures", "cannot read %s", argv[1])) return capi_finish(&T);

    int64_t base = appstore_debug_live_objects();
    appstore_verifier_options *options = NULL;
    appstore_verifier_options_new(&options, NULL);
    capi_check(&T, appstore_debug_live_objects() == base + 1, "an options handle counts", "%lld",
               (long long)(appstore_debug_live_objects() - base));
    appstore_verifier_options_free(options);
    capi_check(&T, appstore_debug_live_objects() == base, "its _free gives it back", "%lld",
               (long long)(appstore_debug_live_objects() - base));

    appstore_verifier *v = capi_sandbox_verifier(root, root_len, "com.example.testpki", -1);
    capi_check(&T, v && appstore_debug_live_objects() == base + 1, "a verifier counts (its options freed)", "%lld",
               (long long)(appstore_debug_live_objects() - base));
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_verifier_verify_transaction(v, good, good_len, &json, &err);
    capi_check(&T, json && appstore_debug_live_objects() == base + 2, "a result string counts", "%lld",
               (long long)(appstore_debug_live_objects() - base));
    appstore_string_free(json);
    appstore_verifier_verify_transaction(v, bad, bad_len, NULL, &err);
    capi_check(&T, err && appstore_debug_live_objects() == base + 2, "an error counts", "%lld",
               (long long)(appstore_debug_live_objects() - base));
    appstore_error_free(err);
    /* A failure with err_out NULL hands nothing out. */
    appstore_verifier_verify_transaction(v, bad, bad_len, NULL, NULL);
    capi_check(&T, appstore_debug_live_objects() == base + 1, "strings and errors given back", "%lld",
               (long long)(appstore_debug_live_objects() - base));
    appstore_verifier_free(v);
    appstore_string_free(NULL);
    appstore_error_free(NULL);
    appstore_verifier_free(NULL);
    capi_check(&T, appstore_debug_live_objects() == base, "all given back; NULL frees count nothing", "%lld",
               (long long)(appstore_debug_live_objects() - base));

    int64_t before = appstore_debug_malloc_in_use();
    kept = malloc(1 << 20); /* through a volatile global: the compiler may not elide the allocation */
    memset(kept, 1, 1 << 20);
    int64_t during = appstore_debug_malloc_in_use();
    free(kept);
    capi_check(&T, before > 0 && during - before >= (1 << 20), "malloc in use follows malloc", "%lld -> %lld",
               (long long)before, (long long)during);
    free(root);
    free(good);
    free(bad);
    return capi_finish(&T);
}
