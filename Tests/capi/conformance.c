/*
 * c_conformance MANIFEST_DIR [options]
 *
 * Runs every verifyAndDecode* case of MANIFEST_DIR/manifest.json through the C ABI: builds a verifier from the
 * case's "verifier" object with the options builder, calls the verify function for the case's operation and
 * compares the outcome with "expect". The comparison mirrors Tests/AppStoreServerTests/ManifestRunner.swift:
 *
 *   result "implementation-defined"  passes when the call returns (whatever it returns, header conventions kept)
 *   result "valid"                   the call succeeds, the output is a JSON object and every scalar of "fields"
 *                                    matches (numbers compared after truncation toward zero, null = absent or
 *                                    null, nested objects/arrays not compared)
 *   result "config_error"            building the verifier fails
 *   result "error..."                the call fails (a configuration failure only counts for no_trust_anchor)
 *   then, when present: "reason" == appstore_reason_name, "status" == appstore_status_name, and "error_class"
 *   (the shared manifest's semantic classes) maps to a set of accepted reasons.
 *
 * In addition to ManifestRunner, a valid output must be the JWS payload segment's decoded text byte for byte (the
 * header: "the decoded payload ... exactly as Apple signed it"), and every call is checked against the header's
 * conventions: on failure *json_out (and *verifier_out) is untouched and *err_out is a new error carrying the
 * returned status and a non-empty message; on success *err_out is untouched and *json_out is set; a config_error
 * is reported with APPSTORE_CONFIGURATION_ERROR.
 * "fields" is read from expect.fields (shared manifest) or, when absent, from the case (testpki manifest).
 *
 * Options:
 *   --skip-if-missing   MANIFEST_DIR/manifest.json absent: print a loud SKIPPED line, report every expected case
 *                       as skipped and exit 0 (for CI without ../shared)
 *   --expect-cases N    the manifest must have exactly N verify cases (also the skip count)
 *   --min-cases N       the manifest must have at least N verify cases
 *   --dump FILE         write one line per case (id, outcome, status, reason, output JSON) to FILE
 *   --compare FILE      compare the outcomes with a dump written by another build flavour; any difference fails
 *   --verbose           print every case
 *
 * Closing line: "conformance: N passed, M failed, K skipped". Exit status 0 only when nothing failed or was
 * skipped (or the whole manifest was skipped with --skip-if-missing).
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    int valid;
    int config;
    appstore_status status;
    appstore_reason reason;
    char *message;
    char *json;
    char contract[512]; /* violations of the header's conventions, "" when none */
} outcome;

static void outcome_clear(outcome *o) {
    free(o->message);
    free(o->json);
    memset(o, 0, sizeof *o);
}

static void add_contract(outcome *o, const char *text) {
    size_t used = strlen(o->contract);
    snprintf(o->contract + used, sizeof o->contract - used, "%s%s", used ? "; " : "", text);
}

static char *dup_or_empty(const char *s) {
    char *r = strdup(s ? s : "");
    if (!r) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return r;
}

/* A failure reported through an appstore_error; takes ownership of err. */
static void outcome_from_error(outcome *o, appstore_status st, appstore_error *err, int config) {
    o->valid = 0;
    o->config = config;
    o->status = st;
    o->reason = appstore_error_reason(err);
    o->message = dup_or_empty(appstore_error_message(err));
    if (!err) add_contract(o, "failure without an appstore_error");
    else {
        if (appstore_error_status(err) != st) add_contract(o, "appstore_error_status differs from the returned status");
        if (!appstore_error_message(err) || !*appstore_error_message(err)) add_contract(o, "empty error message");
    }
    appstore_error_free(err);
}

static int sentinel_err_object, sentinel_json_object;
#define ERR_SENTINEL ((appstore_error *)(void *)&sentinel_err_object)
#define JSON_SENTINEL ((char *)(void *)&sentinel_json_object)

/* Runs one case; returns 0 on success, -1 with *problem set when the runner itself could not run it. */
static int run_case(const char *dir, json_t *c, const char *jws, size_t jws_len, outcome *o, char *problem,
                    size_t problem_len) {
    json_t *v = json_object_get(c, "verifier");
    const char *op = json_string_value(json_object_get(c, "operation"));
    capi_verify_fn fn = capi_verify_for_operation(op);
    if (!fn) {
        snprintf(problem, problem_len, "unsupported operation %s", op ? op : "(none)");
        return -1;
    }
    memset(o, 0, sizeof *o);
    appstore_verifier_options *opts = NULL;
    appstore_verifier *verifier = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_options_new(&opts, &err);
    if (st != APPSTORE_OK || !opts) {
        snprintf(problem, problem_len, "appstore_verifier_options_new failed: %s", appstore_error_message(err));
        appstore_error_free(err);
        return -1;
    }
    /* Options builder: a failing setter is a configuration failure of the case (it cannot build a verifier). */
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(v, "rootCertificates"), i, r) {
        const char *rel = json_string_value(r);
        if (!rel) {
            snprintf(problem, problem_len, "rootCertificates[%zu] is not a string", i);
            appstore_verifier_options_free(opts);
            return -1;
        }
        char *path = capi_join(dir, rel);
        size_t der_len = 0;
        unsigned char *der = capi_read_file(path, &der_len);
        if (!der) {
            snprintf(problem, problem_len, "cannot read root %s", path);
            free(path);
            appstore_verifier_options_free(opts);
            return -1;
        }
        free(path);
        st = appstore_verifier_options_add_root(opts, der, der_len, &err);
        free(der);
        if (st != APPSTORE_OK) goto config_failure;
    }
    json_t *bundle = json_object_get(v, "bundleId");
    st = appstore_verifier_options_set_bundle_id(opts, json_is_string(bundle) ? json_string_value(bundle) : "", &err);
    if (st != APPSTORE_OK) goto config_failure;
    json_t *app_id = json_object_get(v, "appAppleId");
    if (json_is_integer(app_id)) {
        st = appstore_verifier_options_set_app_apple_id(opts, (int64_t)json_integer_value(app_id), &err);
        if (st != APPSTORE_OK) goto config_failure;
    } else if (app_id && !json_is_null(app_id)) {
        snprintf(problem, problem_len, "verifier.appAppleId is neither an integer nor null");
        appstore_verifier_options_free(opts);
        return -1;
    }
    const char *env_name = json_string_value(json_object_get(v, "environment"));
    appstore_environment env = capi_environment(env_name);
    if (!env) {
        snprintf(problem, problem_len, "unknown verifier.environment %s", env_name ? env_name : "(none)");
        appstore_verifier_options_free(opts);
        return -1;
    }
    st = appstore_verifier_options_set_environment(opts, env, &err);
    if (st != APPSTORE_OK) goto config_failure;
    st = appstore_verifier_options_set_online_checks(opts, json_is_true(json_object_get(v, "enableOnlineChecks")) ? 1 : 0,
                                                     &err);
    if (st != APPSTORE_OK) goto config_failure;

    appstore_verifier *const verifier_sentinel = (appstore_verifier *)(void *)&sentinel_err_object;
    verifier = verifier_sentinel;
    st = appstore_verifier_new(opts, &verifier, &err);
    if (st != APPSTORE_OK) {
        if (verifier != verifier_sentinel) add_contract(o, "verifier_out written on failure");
        verifier = NULL;
        goto config_failure;
    }
    appstore_verifier_options_free(opts);
    opts = NULL;
    if (!verifier || verifier == verifier_sentinel) {
        snprintf(problem, problem_len, "appstore_verifier_new returned OK without a verifier");
        return -1;
    }

    char *json = JSON_SENTINEL;
    err = ERR_SENTINEL;
    st = fn(verifier, jws, jws_len, &json, &err);
    appstore_verifier_free(verifier);
    if (st == APPSTORE_OK) {
        o->valid = 1;
        if (err != ERR_SENTINEL) add_contract(o, "err_out written on success");
        if (json == JSON_SENTINEL || json == NULL) {
            add_contract(o, "json_out not set on success");
            o->json = NULL;
        } else {
            o->json = dup_or_empty(json);
            appstore_string_free(json);
        }
        return 0;
    }
    if (json != JSON_SENTINEL) add_contract(o, "json_out written on failure");
    if (err == ERR_SENTINEL) {
        err = NULL; /* outcome_from_error reports the missing error */
    }
    outcome_from_error(o, st, err, 0);
    return 0;

config_failure:
    appstore_verifier_options_free(opts);
    outcome_from_error(o, st, err, 1);
    return 0;
}

/* ---- the signed payload text ------------------------------------------------------------------------------- */

/* base64url-decodes the middle segment of a compact JWS; NULL when it is not three segments of base64url. */
static char *signed_payload(const char *jws, size_t len) {
    const char *a = memchr(jws, '.', len);
    const char *b = a ? memchr(a + 1, '.', len - (size_t)(a + 1 - jws)) : NULL;
    if (!b) return NULL;
    const char *seg = a + 1;
    size_t n = (size_t)(b - seg);
    char *out = malloc(n * 3 / 4 + 4), *o = out;
    if (!out) exit(2);
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = seg[i];
        int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26
              : ch >= '0' && ch <= '9' ? ch - '0' + 52 : ch == '-' ? 62 : ch == '_' ? 63 : -1;
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (char)((acc >> bits) & 0xff);
        }
    }
    *o = 0;
    return out;
}

/* ---- comparison (ManifestRunner.check) ---------------------------------------------------------------------- */

/* Reasons that satisfy a semantic error class of the shared manifest; NULL-terminated, or NULL when unmapped. */
static const char *const *accepted_reasons(const char *error_class) {
    static const char *const sig[] = {"bad_signature", NULL}, *const alg[] = {"unsupported_alg", NULL},
                             *const x5c[] = {"missing_x5c", NULL}, *const len[] = {"chain_length", "empty_x5c", NULL},
                             *const cert[] = {"bad_certificate", NULL}, *const untrusted[] = {"untrusted_chain", NULL},
                             *const invalid[] = {"untrusted_chain", "expired", "missing_marker_oid", "chain_length", NULL},
                             *const expired[] = {"expired", NULL}, *const anchor[] = {"no_trust_anchor", NULL},
                             *const bundle[] = {"wrong_bundle", NULL}, *const app_id[] = {"wrong_app_id", NULL},
                             *const env[] = {"wrong_environment", NULL}, *const kind[] = {"wrong_kind", NULL},
                             *const malformed[] = {"malformed", NULL};
    static const struct {
        const char *head;
        const char *const *reasons;
    } table[] = {{"signature_invalid", sig},  {"unsupported_alg", alg},    {"missing_x5c", x5c},
                 {"chain_length", len},       {"invalid_certificate", cert}, {"chain_untrusted", untrusted},
                 {"chain_invalid", invalid},  {"expired", expired},        {"no_trust_anchor", anchor},
                 {"wrong_bundle", bundle},    {"wrong_app_apple_id", app_id}, {"wrong_environment", env},
                 {"wrong_kind", kind},        {"malformed_jws", malformed}};
    /* The class is the first space-separated word ("wrong_kind -> no bundleId" is wrong_kind). */
    size_t head_len = strcspn(error_class, " ");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strlen(table[i].head) == head_len && strncmp(table[i].head, error_class, head_len) == 0)
            return table[i].reasons;
    return NULL;
}

/* Swift's "\(value)" for the scalars that can occur, used when got/want are not both numbers. */
static void scalar_text(json_t *j, char *buf, size_t n) {
    if (json_is_string(j)) snprintf(buf, n, "%s", json_string_value(j));
    else if (json_is_integer(j)) snprintf(buf, n, "%lld", (long long)json_integer_value(j));
    else if (json_is_real(j)) snprintf(buf, n, "%.17g", json_real_value(j));
    else if (json_is_true(j)) snprintf(buf, n, "true");
    else if (json_is_false(j)) snprintf(buf, n, "false");
    else if (json_is_null(j)) snprintf(buf, n, "<null>");
    else snprintf(buf, n, "<container>");
}

static void describe(const outcome *o, char *buf, size_t n) {
    if (o->valid) snprintf(buf, n, "valid");
    else
        snprintf(buf, n, "%s%s/%s: %s", o->config ? "config " : "", appstore_status_name(o->status),
                 appstore_reason_name(o->reason), o->message ? o->message : "");
}

/* Returns 1 when the outcome satisfies the case; otherwise 0 with a description in problem. */
static int check_case(json_t *c, const outcome *o, const char *jws, size_t jws_len, char *problem, size_t n) {
    json_t *expect = json_object_get(c, "expect");
    const char *result = json_string_value(json_object_get(expect, "result"));
    char got[1024];
    describe(o, got, sizeof got);
    if (!result) result = "";
    if (o->contract[0]) { /* whatever the expectation, the header's conventions hold */
        snprintf(problem, n, "header convention violated (%s); outcome %s", o->contract, got);
        return 0;
    }
    if (strcmp(result, "implementation-defined") == 0) return 1; /* it returned: that is all we ask */
    if (strcmp(result, "valid") == 0) {
        if (!o->valid) {
            snprintf(problem, n, "expected valid, got %s", got);
            return 0;
        }
        /* The header: the output is the decoded payload "exactly as Apple signed it". */
        char *signed_text = signed_payload(jws, jws_len);
        int exact = signed_text && o->json && strcmp(signed_text, o->json) == 0;
        free(signed_text);
        if (!exact) {
            snprintf(problem, n, "valid, but the output is not the signed payload text byte for byte: %.300s",
                     o->json ? o->json : "(none)");
            return 0;
        }
        json_error_t jerr;
        json_t *obj = o->json ? json_loads(o->json, 0, &jerr) : NULL;
        if (!json_is_object(obj)) {
            snprintf(problem, n, "valid but the output is not a JSON object");
            json_decref(obj);
            return 0;
        }
        json_t *fields = json_object_get(expect, "fields");
        if (!fields) fields = json_object_get(c, "fields");
        const char *k;
        json_t *want;
        int ok = 1;
        json_object_foreach(fields, k, want) {
            json_t *g = json_object_get(obj, k);
            char ws[512], gs[512];
            if (json_is_null(want)) {
                if (g && !json_is_null(g)) {
                    scalar_text(g, gs, sizeof gs);
                    snprintf(problem, n, "field %s: expected null, got %s", k, gs);
                    ok = 0;
                    break;
                }
                continue;
            }
            if (json_is_array(want) || json_is_object(want)) continue;
            if (!g) {
                snprintf(problem, n, "field %s: missing in output", k);
                ok = 0;
                break;
            }
            scalar_text(want, ws, sizeof ws);
            scalar_text(g, gs, sizeof gs);
            if (json_is_number(g) && json_is_number(want)) {
                /* The manifest records Apple's decoded value: fractional milliseconds truncated. */
                int same = (json_is_integer(g) && json_is_integer(want))
                               ? json_integer_value(g) == json_integer_value(want)
                               : trunc(json_number_value(g)) == trunc(json_number_value(want));
                if (!same) {
                    snprintf(problem, n, "field %s: expected %s, got %s", k, ws, gs);
                    ok = 0;
                    break;
                }
            } else if (strcmp(ws, gs) != 0) { /* "\(got)" != "\(want)" */
                snprintf(problem, n, "field %s: expected %s, got %s", k, ws, gs);
                ok = 0;
                break;
            }
        }
        json_decref(obj);
        return ok;
    }
    json_t *cls_j = json_object_get(expect, "error_class");
    const char *cls = json_string_value(cls_j);
    if (strcmp(result, "config_error") == 0) {
        if (!o->config) {
            snprintf(problem, n, "expected a configuration error, got %s", got);
            return 0;
        }
        if (o->status != APPSTORE_CONFIGURATION_ERROR) {
            snprintf(problem, n, "a configuration error must have status CONFIGURATION_ERROR, got %s", got);
            return 0;
        }
    } else if (strncmp(result, "error", 5) == 0) {
        if (o->valid || (o->config && !(cls && strcmp(cls, "no_trust_anchor") == 0))) {
            snprintf(problem, n, "expected an error, got %s", got);
            return 0;
        }
    } else {
        snprintf(problem, n, "unknown expectation %s", result);
        return 0;
    }
    const char *reason = json_string_value(json_object_get(expect, "reason"));
    if (reason && strcmp(reason, appstore_reason_name(o->reason)) != 0) {
        snprintf(problem, n, "expected reason %s, got %s", reason, got);
        return 0;
    }
    const char *status = json_string_value(json_object_get(expect, "status"));
    if (status && strcmp(status, appstore_status_name(o->status)) != 0) {
        snprintf(problem, n, "expected status %s, got %s", status, got);
        return 0;
    }
    /* Apple's status for the case, when the manifest records it, must be ours too. */
    const char *apple = json_string_value(json_object_get(expect, "apple_status"));
    if (apple && strcmp(apple, appstore_status_name(o->status)) != 0) {
        snprintf(problem, n, "expected Apple's status %s, got %s", apple, got);
        return 0;
    }
    if (cls) {
        /* "a (why) / b" lists alternatives: any of their classes will do. */
        const char *have = appstore_reason_name(o->reason);
        for (const char *alt = cls; alt; alt = strchr(alt, '/') ? strchr(alt, '/') + 1 : NULL) {
            while (*alt == ' ') alt++;
            const char *const *ok = accepted_reasons(alt);
            if (!ok) {
                snprintf(problem, n, "unmapped error class %s", cls);
                return 0;
            }
            for (; *ok; ok++)
                if (strcmp(*ok, have) == 0) return 1;
        }
        snprintf(problem, n, "expected %s, got %s", cls, got);
        return 0;
    }
    return 1;
}

/* ---- dump / compare (flavour equality) ------------------------------------------------------------------ */

static void put_escaped(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '\\') fputs("\\\\", f);
        else if (*s == '\t') fputs("\\t", f);
        else if (*s == '\n') fputs("\\n", f);
        else if (*s == '\r') fputs("\\r", f);
        else fputc(*s, f);
    }
}

/* One line per case. The message is left out: Outcome equality in ManifestRunner ignores it too. */
static char *dump_line(const char *id, const outcome *o, int ran) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    fprintf(f, "%s\t", id);
    if (!ran) fputs("not-run\t-\t-\t", f);
    else
        fprintf(f, "%s\t%s\t%s\t", o->valid ? "valid" : o->config ? "config" : "error", appstore_status_name(o->status),
                appstore_reason_name(o->reason));
    put_escaped(f, ran && o->valid ? (o->json ? o->json : "(no json)") : "-");
    fclose(f);
    return buf;
}

typedef struct {
    char **lines;
    size_t count;
} line_set;

static void lines_load(const char *path, line_set *ls) {
    ls->lines = NULL;
    ls->count = 0;
    size_t len = 0;
    unsigned char *data = capi_read_file(path, &len);
    if (!data) return;
    char *save = NULL;
    for (char *line = strtok_r((char *)data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char **grown = realloc(ls->lines, (ls->count + 1) * sizeof *grown);
        if (!grown) exit(2);
        ls->lines = grown;
        ls->lines[ls->count++] = dup_or_empty(line);
    }
    free(data);
}

static const char *lines_find(const line_set *ls, const char *id) {
    size_t idlen = strlen(id);
    for (size_t i = 0; i < ls->count; i++)
        if (strncmp(ls->lines[i], id, idlen) == 0 && ls->lines[i][idlen] == '\t') return ls->lines[i];
    return NULL;
}

/* ---- main -------------------------------------------------------------------------------------------------- */

static int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *dump_path = NULL, *compare_path = NULL;
    long expect_cases = -1, min_cases = -1;
    int skip_if_missing = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skip-if-missing") == 0) skip_if_missing = 1;
        else if (strcmp(argv[i], "--verbose") == 0) verbose = 1;
        else if (strcmp(argv[i], "--expect-cases") == 0 && i + 1 < argc) expect_cases = atol(argv[++i]);
        else if (strcmp(argv[i], "--min-cases") == 0 && i + 1 < argc) min_cases = atol(argv[++i]);
        else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc) dump_path = argv[++i];
        else if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc) compare_path = argv[++i];
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else {
            fprintf(stderr, "usage: %s MANIFEST_DIR [--skip-if-missing] [--expect-cases N] [--min-cases N] "
                            "[--dump FILE] [--compare FILE] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: %s MANIFEST_DIR [options]\n", argv[0]);
        return 2;
    }
    printf("libappstoreserver %s, manifest %s\n", appstore_version(), dir);
    char *manifest_path = capi_join(dir, "manifest.json");
    FILE *dump = NULL;
    if (dump_path) {
        dump = fopen(dump_path, "w");
        if (!dump) {
            fprintf(stderr, "cannot write %s\n", dump_path);
            return 2;
        }
    }
    if (!file_exists(manifest_path)) {
        if (skip_if_missing) {
            printf("conformance: SKIPPED — %s not found; real Apple data NOT checked\n", dir);
            printf("conformance: 0 passed, 0 failed, %ld skipped\n", expect_cases > 0 ? expect_cases : 0);
            if (dump) fclose(dump);
            free(manifest_path);
            return 0;
        }
        printf("FAIL %s not found\n", manifest_path);
        printf("conformance: 0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    json_error_t jerr;
    json_t *manifest = json_load_file(manifest_path, 0, &jerr);
    if (!manifest) {
        printf("FAIL cannot parse %s: %s (line %d)\n", manifest_path, jerr.text, jerr.line);
        printf("conformance: 0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    line_set reference = {NULL, 0};
    if (compare_path) {
        lines_load(compare_path, &reference);
        printf("comparing outcomes with %s (%zu lines)\n", compare_path, reference.count);
    }

    long passed = 0, failed = 0, skipped = 0, cases = 0, flavour_diffs = 0;
    size_t idx;
    json_t *c;
    json_array_foreach(json_object_get(manifest, "cases"), idx, c) {
        const char *op = json_string_value(json_object_get(c, "operation"));
        if (!op || strncmp(op, "verifyAndDecode", 15) != 0) continue;
        cases++;
        const char *id = json_string_value(json_object_get(c, "id"));
        if (!id) id = "?";
        const char *rel = json_string_value(json_object_get(c, "path"));
        char *jws_path = rel ? capi_join(dir, rel) : NULL;
        size_t jws_len = 0;
        char *jws = jws_path ? capi_read_trimmed(jws_path, &jws_len) : NULL;
        free(jws_path);
        outcome o;
        memset(&o, 0, sizeof o);
        int ran = 0;
        char problem[2048] = "";
        if (!jws) {
            skipped++;
            printf("SKIP %s: input file unreadable\n", id);
        } else if (run_case(dir, c, jws, jws_len, &o, problem, sizeof problem) != 0) {
            failed++;
            printf("FAIL %s: runner error: %s\n", id, problem);
        } else {
            ran = 1;
            if (check_case(c, &o, jws, jws_len, problem, sizeof problem)) {
                passed++;
                if (verbose) {
                    char got[1024];
                    describe(&o, got, sizeof got);
                    printf("ok   %s: %s\n", id, got);
                }
            } else {
                failed++;
                printf("FAIL %s: %s\n", id, problem);
            }
        }
        char *line = dump_line(id, &o, ran);
        if (dump) fprintf(dump, "%s\n", line);
        if (compare_path) {
            const char *ref = lines_find(&reference, id);
            if (!ref || strcmp(ref, line) != 0) {
                flavour_diffs++;
                printf("FAIL %s: the two library flavours differ:\n  this:  %s\n  other: %s\n", id, line,
                       ref ? ref : "(case missing)");
            }
        }
        free(line);
        free(jws);
        outcome_clear(&o);
    }
    if (compare_path && (size_t)cases != reference.count) {
        flavour_diffs++;
        printf("FAIL the other flavour's dump has %zu cases, this run %ld\n", reference.count, cases);
    }
    if (flavour_diffs) {
        failed += flavour_diffs;
        printf("flavour comparison: %ld differences\n", flavour_diffs);
    } else if (compare_path) {
        printf("flavour comparison: all %ld outcomes identical (status, reason, output JSON)\n", cases);
    }
    if (expect_cases >= 0 && cases != expect_cases) {
        failed++;
        printf("FAIL expected exactly %ld verify cases in %s, found %ld\n", expect_cases, manifest_path, cases);
    }
    if (min_cases >= 0 && cases < min_cases) {
        failed++;
        printf("FAIL expected at least %ld verify cases in %s, found %ld\n", min_cases, manifest_path, cases);
    }
    if (cases == 0) {
        failed++;
        printf("FAIL no verifyAndDecode* cases in %s\n", manifest_path);
    }
    printf("conformance: %ld passed, %ld failed, %ld skipped\n", passed, failed, skipped);
    if (dump) fclose(dump);
    for (size_t i = 0; i < reference.count; i++) free(reference.lines[i]);
    free(reference.lines);
    json_decref(manifest);
    free(manifest_path);
    return (failed == 0 && skipped == 0 && passed > 0) ? 0 : 1;
}
