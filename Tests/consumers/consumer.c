/*
 * consumer: a C program built against an INSTALLED libappstoreserver (pkg-config or the .deb), as a user would.
 *
 *   consumer ROOT_DER JWS_FILE BUNDLE_ID ENVIRONMENT EXPECTED_NOTIFICATION_TYPE
 *
 * 1. Start-up check: the library loaded at run time is compatible with the header compiled in (see the README,
 *    "Install (C and C++)"); exit 3 if not.
 * 2. Verifies the notification JWS_FILE deeply against the root certificate ROOT_DER (DER), bundle id and
 *    environment (Sandbox or Production), and checks its notificationType.
 * 3. The same notification with one signature character changed must be rejected.
 * Prints "consumer OK" and exits 0 on success. C11, no other library.
 */
#include <appstoreserver.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The start-up check: the library must be the header's major version (before 1.0: also its minor version, since a
 * 0.x minor release may change the ABI) and at least as new as the header (it may declare functions added since). */
static int library_is_compatible(void) {
    int major, minor, patch;
    if (sscanf(appstore_version(), "%d.%d.%d", &major, &minor, &patch) != 3) return 0;
    if (major != APPSTORE_VERSION_MAJOR) return 0;
    if (major == 0 && minor != APPSTORE_VERSION_MINOR) return 0;
    if (minor != APPSTORE_VERSION_MINOR) return minor > APPSTORE_VERSION_MINOR;
    return patch >= APPSTORE_VERSION_PATCH;
}

/* The whole file; `text`: a .jws file, its trailing whitespace dropped (never a DER certificate: its last byte can
 * be a newline's or a space's). */
static char *read_file(const char *path, size_t *len_out, int text) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *grown = realloc(buf, (cap *= 2) + 1);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    while (text && len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ')) len--;
    buf[len] = 0;
    *len_out = len;
    return buf;
}

/* The string value of the first "key" in compact or spaced JSON, copied into out; 0 if absent. */
static int json_string_field(const char *json, const char *key, char *out, size_t cap) {
    char quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = strstr(json, quoted);
    if (!p) return 0;
    p += strlen(quoted);
    while (*p == ' ' || *p == ':') p++;
    if (*p++ != '"') return 0;
    size_t i = 0;
    while (*p && *p != '"' && i + 1 < cap) out[i++] = *p++;
    out[i] = 0;
    return *p == '"';
}

static int verify(const appstore_verifier *v, const char *jws, size_t len, char **json_out) {
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_verify_notification_deep(v, jws, len, json_out, &err);
    if (st != APPSTORE_OK) {
        printf("  rejected: %s (%s): %s\n", appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
               appstore_error_message(err));
        appstore_error_free(err);
    }
    return st;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s ROOT_DER JWS_FILE BUNDLE_ID Sandbox|Production EXPECTED_TYPE\n", argv[0]);
        return 2;
    }
    printf("libappstoreserver %s loaded, header %s\n", appstore_version(), APPSTORE_VERSION_STRING);
    if (!library_is_compatible()) {
        fprintf(stderr, "consumer: libappstoreserver %s is not compatible with the header %s it was built with\n",
                appstore_version(), APPSTORE_VERSION_STRING);
        return 3;
    }

    size_t root_len = 0, jws_len = 0;
    char *root = read_file(argv[1], &root_len, 0);
    char *jws = read_file(argv[2], &jws_len, 1);
    if (!root || !jws) {
        fprintf(stderr, "consumer: cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    appstore_environment env = strcmp(argv[4], "Production") == 0 ? APPSTORE_ENVIRONMENT_PRODUCTION
                                                                    : APPSTORE_ENVIRONMENT_SANDBOX;
    appstore_verifier_options *opts = NULL;
    appstore_verifier *v = NULL;
    appstore_error *err = NULL;
    if (appstore_verifier_options_new(&opts, &err) != APPSTORE_OK ||
        appstore_verifier_options_add_root(opts, (const uint8_t *)root, root_len, &err) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(opts, argv[3], &err) != APPSTORE_OK ||
        appstore_verifier_options_set_environment(opts, env, &err) != APPSTORE_OK ||
        appstore_verifier_new(opts, &v, &err) != APPSTORE_OK) {
        fprintf(stderr, "consumer: configuration failed: %s\n", appstore_error_message(err));
        return 1;
    }
    appstore_verifier_options_free(opts);

    int rc = 1;
    char *json = NULL;
    char type[64] = "";
    if (verify(v, jws, jws_len, &json) == APPSTORE_OK) {
        json_string_field(json, "notificationType", type, sizeof type);
        printf("  verified: notificationType %s\n", type);
        if (strcmp(type, argv[5]) == 0) rc = 0;
        else fprintf(stderr, "consumer: expected notificationType %s, got %s\n", argv[5], type);
        appstore_string_free(json);
        json = NULL;
    }

    /* One character of the signature (the third segment) changed: must be rejected. */
    char *sig = strrchr(jws, '.');
    if (rc == 0 && sig && sig[1] && sig[2]) {
        sig[2] = sig[2] == 'A' ? 'B' : 'A';
        if (verify(v, jws, jws_len, &json) == APPSTORE_OK) {
            fprintf(stderr, "consumer: a notification with a changed signature was accepted\n");
            appstore_string_free(json);
            rc = 1;
        }
    }
    appstore_verifier_free(v);
    free(root);
    free(jws);
    printf(rc == 0 ? "consumer OK\n" : "consumer FAILED\n");
    return rc;
}
