#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

unsigned char *capi_read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;
    unsigned char chunk[8192];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            size_t want = (len + n + 1) * 2;
            unsigned char *grown = realloc(buf, want);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
            cap = want;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    if (!buf) {
        buf = calloc(1, 1);
        if (!buf) return NULL;
    }
    buf[len] = 0;
    *len_out = len;
    return buf;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

char *capi_read_trimmed(const char *path, size_t *len_out) {
    size_t len = 0;
    unsigned char *buf = capi_read_file(path, &len);
    if (!buf) return NULL;
    size_t start = 0;
    while (start < len && is_space(buf[start])) start++;
    while (len > start && is_space(buf[len - 1])) len--;
    memmove(buf, buf + start, len - start);
    len -= start;
    buf[len] = 0;
    *len_out = len;
    return (char *)buf;
}

char *capi_join(const char *dir, const char *rel) {
    size_t a = strlen(dir), b = strlen(rel);
    char *p = malloc(a + b + 2);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, rel, b + 1);
    return p;
}

char *capi_base64_encode(const unsigned char *data, size_t len) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)data[i] << 16 | (unsigned)data[i + 1] << 8 | data[i + 2];
        *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63], *o++ = abc[v >> 6 & 63], *o++ = abc[v & 63];
    }
    if (len - i == 1) {
        unsigned v = (unsigned)data[i] << 16;
        *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63], *o++ = '=', *o++ = '=';
    } else if (len - i == 2) {
        unsigned v = (unsigned)data[i] << 16 | (unsigned)data[i + 1] << 8;
        *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63], *o++ = abc[v >> 6 & 63], *o++ = '=';
    }
    *o = 0;
    return out;
}

unsigned char *capi_base64_decode(const char *text, size_t *len_out) {
    size_t n = strlen(text);
    unsigned char *out = malloc(n / 4 * 3 + 4), *o = out;
    if (!out) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62 : c == '/' ? 63 : -1;
        if (c == '=') break;
        if (v < 0) {
            if (is_space((unsigned char)c)) continue;
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (unsigned char)(acc >> bits & 0xff);
        }
    }
    *len_out = (size_t)(o - out);
    return out;
}

capi_verify_fn capi_verify_for_operation(const char *op) {
    if (!op) return NULL;
    if (strcmp(op, "verifyAndDecodeNotification") == 0) return appstore_verifier_verify_notification;
    if (strcmp(op, "verifyAndDecodeTransaction") == 0) return appstore_verifier_verify_transaction;
    if (strcmp(op, "verifyAndDecodeRenewalInfo") == 0) return appstore_verifier_verify_renewal_info;
    if (strcmp(op, "verifyAndDecodeAppTransaction") == 0) return appstore_verifier_verify_app_transaction;
    if (strcmp(op, "verifyAndDecodeRealtimeRequest") == 0) return appstore_verifier_verify_realtime_request;
    return NULL;
}

appstore_environment capi_environment(const char *name) {
    if (!name) return 0;
    if (strcmp(name, "Sandbox") == 0) return APPSTORE_ENVIRONMENT_SANDBOX;
    if (strcmp(name, "Production") == 0) return APPSTORE_ENVIRONMENT_PRODUCTION;
    if (strcmp(name, "Xcode") == 0) return APPSTORE_ENVIRONMENT_XCODE;
    if (strcmp(name, "LocalTesting") == 0) return APPSTORE_ENVIRONMENT_LOCAL_TESTING;
    return 0;
}

json_t *capi_find_case(json_t *manifest, const char *id) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(manifest, "cases"), i, c) {
        const char *cid = json_string_value(json_object_get(c, "id"));
        if (cid && strcmp(cid, id) == 0) return c;
    }
    return NULL;
}

int capi_check(capi_tally *t, int ok, const char *what, const char *fmt, ...) {
    if (ok) {
        t->passed++;
        return 1;
    }
    t->failed++;
    printf("FAIL %s", what);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        printf(": ");
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
    return 0;
}

int capi_finish(const capi_tally *t) {
    printf("%s: %ld passed, %ld failed\n", t->label, t->passed, t->failed);
    fflush(stdout);
    return (t->failed == 0 && t->passed > 0) ? 0 : 1;
}

void capi_run_forked(capi_tally *t, const char *what, void (*body)(void *ctx), void *ctx) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        capi_check(t, 0, what, "fork failed");
        return;
    }
    if (pid == 0) {
        t->passed = t->failed = 0;
        body(ctx);
        fflush(stdout);
        _exit(t->failed ? 1 : 0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        capi_check(t, 0, what, "waitpid failed");
        return;
    }
    if (WIFSIGNALED(status)) capi_check(t, 0, what, "CRASHED with signal %d", WTERMSIG(status));
    else capi_check(t, WIFEXITED(status) && WEXITSTATUS(status) == 0, what, "%s", "see above");
}

int capi_load_default_case(json_t *manifest, const char *dir, const char *id, int deep, capi_case *out) {
    json_t *c = capi_find_case(manifest, id);
    if (!c) {
        printf("FAIL case %s not in the manifest\n", id);
        return -1;
    }
    json_t *v = json_object_get(c, "verifier");
    json_t *roots = json_object_get(v, "rootCertificates");
    const char *bundle = json_string_value(json_object_get(manifest, "bundleId"));
    const char *env = json_string_value(json_object_get(v, "environment"));
    const char *want = json_string_value(json_object_get(v, "bundleId"));
    if (json_array_size(roots) != 1 || !json_string_value(json_array_get(roots, 0)) ||
        strcmp(json_string_value(json_array_get(roots, 0)), "root.der") != 0 || !env || strcmp(env, "Sandbox") != 0 ||
        !bundle || !want || strcmp(want, bundle) != 0 || json_is_true(json_object_get(v, "enableOnlineChecks"))) {
        printf("FAIL case %s does not use the default Sandbox verifier\n", id);
        return -1;
    }
    const char *op = json_string_value(json_object_get(c, "operation"));
    if (deep && (!op || strcmp(op, "verifyAndDecodeNotification") != 0)) {
        printf("FAIL case %s is not a notification\n", id);
        return -1;
    }
    json_t *expect = json_object_get(c, "expect");
    const char *result = json_string_value(json_object_get(expect, "result"));
    const char *path = json_string_value(json_object_get(c, "path"));
    capi_case x = {id, deep ? appstore_verifier_verify_notification_deep : capi_verify_for_operation(op), NULL, 0,
                   APPSTORE_OK, "none"};
    if (path) {
        char *full = capi_join(dir, path);
        x.jws = capi_read_trimmed(full, &x.jws_len);
        free(full);
    }
    if (!x.jws || !x.fn || !result) {
        printf("FAIL case %s: unreadable\n", id);
        free(x.jws);
        return -1;
    }
    if (strcmp(result, "valid") != 0) {
        const char *status = json_string_value(json_object_get(expect, "status"));
        const char *reason = json_string_value(json_object_get(expect, "reason"));
        x.want_status = (appstore_status)-1;
        for (int s = 0; s < 100; s++)
            if (status && strcmp(appstore_status_name((appstore_status)s), status) == 0) x.want_status = (appstore_status)s;
        if ((int)x.want_status < 0 || !reason) {
            printf("FAIL case %s: unknown status %s\n", id, status ? status : "(none)");
            free(x.jws);
            return -1;
        }
        x.want_reason = strdup(reason);
    }
    *out = x;
    return 0;
}

appstore_verifier *capi_sandbox_verifier(const unsigned char *root, size_t root_len, const char *bundle_id,
                                         int64_t chain_cache_entries) {
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    if (appstore_verifier_options_new(&o, NULL) != APPSTORE_OK) return NULL;
    int ok = appstore_verifier_options_add_root(o, root, root_len, NULL) == APPSTORE_OK &&
             appstore_verifier_options_set_bundle_id(o, bundle_id, NULL) == APPSTORE_OK &&
             appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_SANDBOX, NULL) == APPSTORE_OK &&
             (chain_cache_entries < 0 ||
              appstore_verifier_options_set_chain_cache(o, (uint32_t)chain_cache_entries, 900, NULL) == APPSTORE_OK);
    if (ok) appstore_verifier_new(o, &v, NULL);
    appstore_verifier_options_free(o);
    return v;
}
