/* libFuzzer: every verify operation, on a Sandbox verifier (signature checked: the input meets the header, the
 * certificate parser and the signature check) and on a LocalTesting verifier (no signature: the input meets the
 * JSON parser and every model decoder). */
#include "fuzz_common.h"

static appstore_verifier *sandbox, *local;

static appstore_verifier *make(appstore_environment env) {
    size_t len = 0;
    unsigned char *root = fuzz_read("testpki/root.der", &len);
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root, len, NULL);
    appstore_verifier_options_set_bundle_id(o, "com.example.testpki", NULL);
    appstore_verifier_options_set_environment(o, env, NULL);
    if (appstore_verifier_new(o, &v, NULL) != APPSTORE_OK) abort();
    appstore_verifier_options_free(o);
    free(root);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!sandbox) {
        sandbox = make(APPSTORE_ENVIRONMENT_SANDBOX);
        local = make(APPSTORE_ENVIRONMENT_LOCAL_TESTING);
    }
    static const struct {
        const char *name;
        appstore_status (*fn)(const appstore_verifier *, const char *, size_t, char **, appstore_error **);
    } ops[] = {{"notification", appstore_verifier_verify_notification},
               {"transaction", appstore_verifier_verify_transaction},
               {"renewal_info", appstore_verifier_verify_renewal_info},
               {"app_transaction", appstore_verifier_verify_app_transaction},
               {"realtime_request", appstore_verifier_verify_realtime_request},
               {"notification_deep", appstore_verifier_verify_notification_deep}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        for (int k = 0; k < 2; k++) {
            char *json = NULL;
            appstore_error *err = NULL;
            appstore_status st = ops[i].fn(k ? local : sandbox, (const char *)data, size, &json, &err);
            fuzz_check(st, err, ops[i].name);
            if (st == APPSTORE_OK) {
                fuzz_check_utf8(json, ops[i].name);
                appstore_string_free(json);
            }
        }
    }
    return 0;
}
