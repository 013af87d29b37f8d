/*
 * appstore_demo: verify App Store notifications from C with libappstoreserver, parse the output with jansson.
 *
 *   appstore_demo TESTPKI_DIR [CONFORMANCE_DIR]
 *
 * TESTPKI_DIR is the output of Tests/support/testpki.py (our own PKI in Apple's chain shape): the demo picks its
 * first valid notification case, verifies it deeply (notification + nested transaction and renewal info) and
 * prints the type, subtype, bundle id, environment and nested transaction id.
 * CONFORMANCE_DIR (optional, ../shared/conformance): the demo then also verifies a real Apple-signed
 * notification against Apple Root CA - G3, offline.
 */
#include <appstoreserver.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file; `text`: a .jws file, one line, its trailing whitespace dropped (never a DER certificate: its last
 * byte can be a newline's or a space's). */
static unsigned char *read_file(const char *path, size_t *len_out, int text) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;
    unsigned char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            unsigned char *grown = realloc(buf, cap);
            if (!grown) { free(buf); fclose(f); return NULL; }
            buf = grown;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    else buf[len] = 0;
    while (text && len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ')) buf[--len] = 0;
    *len_out = len;
    return buf;
}

static const char *str(json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "(none)";
}

/* Builds a verifier, verifies `jws_path` deeply, prints the summary. Returns 0 on success. */
static int verify_and_print(const char *label, const char *root_path, const char *jws_path, const char *bundle_id,
                            appstore_environment env, int64_t app_apple_id) {
    size_t root_len = 0, jws_len = 0;
    unsigned char *root = read_file(root_path, &root_len, 0);
    unsigned char *jws = read_file(jws_path, &jws_len, 1);
    int rc = 1;
    appstore_verifier_options *opts = NULL;
    appstore_verifier *verifier = NULL;
    appstore_error *err = NULL;
    char *json = NULL;
    if (!root || !jws) {
        fprintf(stderr, "%s: cannot read %s or %s\n", label, root_path, jws_path);
        goto done;
    }
    if (appstore_verifier_options_new(&opts, &err) != APPSTORE_OK ||
        appstore_verifier_options_add_root(opts, root, root_len, &err) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(opts, bundle_id, &err) != APPSTORE_OK ||
        appstore_verifier_options_set_environment(opts, env, &err) != APPSTORE_OK ||
        (app_apple_id > 0 && appstore_verifier_options_set_app_apple_id(opts, app_apple_id, &err) != APPSTORE_OK) ||
        appstore_verifier_new(opts, &verifier, &err) != APPSTORE_OK) {
        fprintf(stderr, "%s: configuration failed: %s\n", label, appstore_error_message(err));
        goto done;
    }
    appstore_status st = appstore_verifier_verify_notification_deep(verifier, (const char *)jws, jws_len, &json, &err);
    if (st != APPSTORE_OK) {
        fprintf(stderr, "%s: verification failed: %s (%s): %s\n", label, appstore_status_name(st),
                appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
        goto done;
    }
    json_error_t jerr;
    json_t *doc = json_loads(json, 0, &jerr);
    if (!doc) {
        fprintf(stderr, "%s: output is not JSON: %s\n", label, jerr.text);
        goto done;
    }
    json_t *n = json_object_get(doc, "notification");
    json_t *data = json_object_get(n, "data");
    json_t *tx = json_object_get(doc, "transaction");
    printf("%s: verified\n", label);
    printf("  notificationType: %s\n", str(n, "notificationType"));
    printf("  subtype:          %s\n", str(n, "subtype"));
    printf("  bundleId:         %s\n", str(data, "bundleId"));
    printf("  environment:      %s\n", str(data, "environment"));
    printf("  transactionId:    %s (nested signedTransactionInfo, verified)\n", str(tx, "transactionId"));
    json_decref(doc);
    rc = 0;
done:
    appstore_string_free(json);
    appstore_error_free(err);
    appstore_verifier_free(verifier);
    appstore_verifier_options_free(opts);
    free(root);
    free(jws);
    return rc;
}

/* Finds the first valid notification case with a nested transaction in testpki's manifest. */
static int demo_own_pki(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t jerr;
    json_t *manifest = json_load_file(path, 0, &jerr);
    if (!manifest) {
        fprintf(stderr, "cannot load %s: %s (run Tests/support/testpki.py %s first)\n", path, jerr.text, dir);
        return 1;
    }
    int rc = 1;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(manifest, "cases"), i, c) {
        json_t *v = json_object_get(c, "verifier");
        const char *op = json_string_value(json_object_get(c, "operation"));
        const char *result = json_string_value(json_object_get(json_object_get(c, "expect"), "result"));
        const char *env = json_string_value(json_object_get(v, "environment"));
        if (!op || strcmp(op, "verifyAndDecodeNotification") != 0 || !result || strcmp(result, "valid") != 0 ||
            !env || strcmp(env, "Sandbox") != 0 || !json_object_get(json_object_get(c, "fields"), "notificationType") ||
            strcmp(json_string_value(json_object_get(json_object_get(c, "fields"), "notificationType")), "DID_RENEW") != 0)
            continue;
        char root[4096], jws[4096];
        snprintf(root, sizeof root, "%s/%s", dir, json_string_value(json_array_get(json_object_get(v, "rootCertificates"), 0)));
        snprintf(jws, sizeof jws, "%s/%s", dir, json_string_value(json_object_get(c, "path")));
        rc = verify_and_print("own PKI (Tests/support/testpki.py)", root, jws,
                              json_string_value(json_object_get(v, "bundleId")), APPSTORE_ENVIRONMENT_SANDBOX, 0);
        break;
    }
    if (rc != 0 && i == json_array_size(json_object_get(manifest, "cases")))
        fprintf(stderr, "no valid Sandbox DID_RENEW notification case in %s\n", path);
    json_decref(manifest);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TESTPKI_DIR [CONFORMANCE_DIR]\n", argv[0]);
        return 2;
    }
    printf("libappstoreserver %s\n", appstore_version());
    int rc = demo_own_pki(argv[1]);
    if (argc > 2) {
        char root[4096], jws[4096];
        snprintf(root, sizeof root, "%s/certs/apple-root-ca-g3.der", argv[2]);
        snprintf(jws, sizeof jws, "%s/real/jws/sandbox-notification-did-renew-2025-10-01.jws", argv[2]);
        FILE *probe = fopen(jws, "rb");
        if (probe) {
            fclose(probe);
            rc |= verify_and_print("real Apple notification (Apple Root CA - G3, offline)", root, jws,
                                   "com.loki-project.loki-messenger", APPSTORE_ENVIRONMENT_SANDBOX, 0);
        } else {
            printf("real Apple notification: SKIPPED (%s not found)\n", jws);
        }
    }
    printf(rc == 0 ? "demo OK\n" : "demo FAILED\n");
    return rc;
}
