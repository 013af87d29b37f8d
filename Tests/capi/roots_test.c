/*
 * roots_test: Apple's roots carried by the library (appstore_apple_root_*), and roots given as PEM text through
 * appstore_verifier_options_add_root and appstore_receipt_verifier_new.
 * Usage: roots_test TESTPKI_DIR CONFORMANCE_DIR   (the conformance part says SKIPPED when that folder is absent)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_util.h"

static capi_tally T = {"c roots", 0, 0};

static appstore_verifier *verifier(const uint8_t *root, size_t len, const char *bundle, appstore_error **err) {
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root, len, NULL);
    appstore_verifier_options_set_bundle_id(o, bundle, NULL);
    appstore_verifier_new(o, &v, err);
    appstore_verifier_options_free(o);
    return v;
}

static char *pem_of(const unsigned char *der, size_t len) {
    char *b64 = capi_base64_encode(der, len);
    size_t n = strlen(b64) + 128;
    char *out = malloc(n);
    snprintf(out, n, "-----BEGIN CERTIFICATE-----\r\n%s\r\n-----END CERTIFICATE-----\r\n", b64);
    free(b64);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s TESTPKI_DIR CONFORMANCE_DIR\n", argv[0]);
        return 2;
    }
    capi_check(&T, appstore_apple_root_count() == 2, "two bundled roots", "%zu", appstore_apple_root_count());
    capi_check(&T, strcmp(appstore_apple_root_name(0), "Apple Root CA - G3") == 0 &&
                   strcmp(appstore_apple_root_name(1), "Apple Inc. Root") == 0,
               "names", "%s, %s", appstore_apple_root_name(0), appstore_apple_root_name(1));
    capi_check(&T, strcmp(appstore_apple_root_sha256(0),
                          "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79") == 0,
               "G3 fingerprint as Apple publishes it", "%s", appstore_apple_root_sha256(0));
    size_t len = 99;
    capi_check(&T, appstore_apple_root_der(2, &len) == NULL && len == 0 && strcmp(appstore_apple_root_name(7), "") == 0 &&
                   strcmp(appstore_apple_root_sha256((size_t)-1), "") == 0,
               "out of range", "%zu", len);
    size_t g3_len = 0;
    const uint8_t *g3 = appstore_apple_root_der(0, &g3_len);
    capi_check(&T, g3 != NULL && g3_len > 500 && appstore_apple_root_der(0, NULL) == g3, "G3 DER", "%zu", g3_len);

    /* Our PKI's root as PEM (CRLF), alone and after another certificate: the valid transaction verifies. */
    char *root_path = capi_join(argv[1], "root.der"), *jws_path = capi_join(argv[1], "jws/tx-valid.jws");
    size_t root_len = 0, jws_len = 0;
    unsigned char *root = capi_read_file(root_path, &root_len);
    char *jws = capi_read_trimmed(jws_path, &jws_len);
    if (!capi_check(&T, root && jws, "testpki fixtures", "%s", argv[1])) return capi_finish(&T);
    char *pem = pem_of(root, root_len);
    char *g3_pem = pem_of(g3, g3_len);
    size_t bundle_len = strlen(g3_pem) + strlen(pem);
    char *bundle = malloc(bundle_len + 1);
    snprintf(bundle, bundle_len + 1, "%s%s", g3_pem, pem);
    const char *inputs[] = {pem, bundle};
    for (int i = 0; i < 2; i++) {
        appstore_error *err = NULL;
        appstore_verifier *v = verifier((const uint8_t *)inputs[i], strlen(inputs[i]), "com.example.testpki", &err);
        char *json = NULL;
        appstore_status st = v ? appstore_verifier_verify_transaction(v, jws, jws_len, &json, &err) : appstore_error_status(err);
        capi_check(&T, st == APPSTORE_OK, i ? "PEM bundle root" : "PEM root", "%s %s", appstore_status_name(st),
                   appstore_error_message(err));
        appstore_string_free(json);
        appstore_error_free(err);
        appstore_verifier_free(v);
    }
    /* Garbage PEM: refused with BAD_CERTIFICATE when the verifier is made. */
    const char *bad = "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
    appstore_error *err = NULL;
    appstore_verifier *v = verifier((const uint8_t *)bad, strlen(bad), "com.example.testpki", &err);
    capi_check(&T, v == NULL && appstore_error_reason(err) == APPSTORE_REASON_BAD_CERTIFICATE, "PEM that does not decode",
               "%s", appstore_error_message(err));
    appstore_error_free(err);
    /* The receipt verifier takes PEM too. */
    const uint8_t *roots[] = {(const uint8_t *)pem};
    size_t lens[] = {strlen(pem)};
    appstore_receipt_verifier *rv = NULL;
    capi_check(&T, appstore_receipt_verifier_new(roots, lens, 1, NULL, &rv, NULL) == APPSTORE_OK && rv, "receipt verifier, PEM root",
               "%s", "");
    appstore_receipt_verifier_free(rv);

    /* A real Apple notification with nothing but the bundled root. */
    char *manifest_path = capi_join(argv[2], "manifest.json");
    json_t *manifest = json_load_file(manifest_path, 0, NULL);
    if (!manifest) {
        printf("SKIPPED: %s is absent: no real Apple notification verified against the bundled root\n", manifest_path);
    } else {
        /* The manifest's first valid Sandbox notification, with its bundle id; nothing but the bundled root. */
        json_t *c = NULL, *it;
        size_t i;
        json_array_foreach(json_object_get(manifest, "cases"), i, it) {
            json_t *v = json_object_get(it, "verifier");
            const char *op = json_string_value(json_object_get(it, "operation"));
            const char *res = json_string_value(json_object_get(json_object_get(it, "expect"), "result"));
            const char *env = json_string_value(json_object_get(v, "environment"));
            if (!c && v && op && res && env && strcmp(op, "verifyAndDecodeNotification") == 0 && strcmp(res, "valid") == 0 &&
                strcmp(env, "Sandbox") == 0 && !json_is_true(json_object_get(v, "enableOnlineChecks")))
                c = it;
        }
        char *path = c ? capi_join(argv[2], json_string_value(json_object_get(c, "path"))) : NULL;
        size_t n = 0;
        char *notification = path ? capi_read_trimmed(path, &n) : NULL;
        if (capi_check(&T, notification != NULL, "a valid real notification in the manifest", "%s", path ? path : "none")) {
            appstore_verifier_options *o = NULL;
            appstore_verifier_options_new(&o, NULL);
            appstore_verifier_options_add_root(o, g3, g3_len, NULL);
            appstore_verifier_options_set_bundle_id(o, json_string_value(json_object_get(json_object_get(c, "verifier"), "bundleId")), NULL);
            appstore_verifier *real = NULL;
            appstore_verifier_new(o, &real, NULL);
            appstore_verifier_options_free(o);
            appstore_status st = real ? appstore_verifier_verify_notification(real, notification, n, NULL, &err) : APPSTORE_INTERNAL_ERROR;
            capi_check(&T, st == APPSTORE_OK, "a real Apple notification against the bundled G3 alone", "%s: %s %s",
                       json_string_value(json_object_get(c, "id")), appstore_status_name(st), appstore_error_message(err));
            appstore_error_free(err);
            appstore_verifier_free(real);
        }
        free(notification);
        free(path);
        json_decref(manifest);
    }
    free(manifest_path);
    free(pem);
    free(g3_pem);
    free(bundle);
    free(root);
    free(jws);
    free(root_path);
    free(jws_path);
    return capi_finish(&T);
}
