/*
 * c_receipts_conformance CONFORMANCE_DIR [--skip-if-missing] [--expect-cases N] [--verbose]
 *
 * The receipt cases of CONFORMANCE_DIR/manifest.json (operations extractTransactionIdFromAppReceipt and
 * extractTransactionIdFromTransactionReceipt) through the C ABI, compared with "expect" as
 * Tests/AppStoreServerTests/ReceiptConformanceTests.swift does:
 *
 *   result "value" with "value"     APPSTORE_OK and exactly that id (transaction receipts)
 *   result "value" with "any_of"    the first id (Apple's Python/Java/Node, "python_java_node"), which must be in
 *                                   any_of; python_java_node null = APPSTORE_NOT_FOUND (no in-app purchases)
 *   result "error-or-null"          APPSTORE_NOT_FOUND, or APPSTORE_INVALID_RECEIPT with reason receipt_malformed /
 *                                   wrong_kind — never a value
 *   result "null..."                APPSTORE_NOT_FOUND with reason no_transaction_id
 *
 * and, for every call, the header's conventions: on failure *id_out is untouched and *err_out carries the returned
 * status and a message; on success *err_out is untouched. appstore_receipt_extract_transaction_ids must agree with
 * appstore_receipt_extract_transaction_id (its firstTransactionId, or null for NOT_FOUND).
 *
 * --skip-if-missing: without CONFORMANCE_DIR/manifest.json, print a loud SKIPPED line and
 * "conformance: 0 passed, 0 failed, N skipped" (N from --expect-cases) and exit 0.
 * Closing line: "conformance: N passed, M failed, K skipped".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int sentinel_a, sentinel_b;
#define STR_SENTINEL ((char *)(void *)&sentinel_a)
#define ERR_SENTINEL ((appstore_error *)(void *)&sentinel_b)

typedef struct {
    appstore_status status;
    char reason[64];
    char value[256];
    char contract[256];
} outcome;

static int is_app_op(const char *op) { return strcmp(op, "extractTransactionIdFromAppReceipt") == 0; }

static void run(const char *op, const char *text, size_t len, outcome *o) {
    memset(o, 0, sizeof *o);
    char *id = STR_SENTINEL;
    appstore_error *err = ERR_SENTINEL;
    o->status = is_app_op(op) ? appstore_receipt_extract_transaction_id(text, len, &id, &err)
                              : appstore_transaction_receipt_extract_transaction_id(text, len, &id, &err);
    if (o->status == APPSTORE_OK) {
        if (err != ERR_SENTINEL) snprintf(o->contract, sizeof o->contract, "err_out written on success");
        if (id == STR_SENTINEL || !id) snprintf(o->contract, sizeof o->contract, "id_out not set on success");
        else {
            snprintf(o->value, sizeof o->value, "%s", id);
            appstore_string_free(id);
        }
        return;
    }
    if (id != STR_SENTINEL) snprintf(o->contract, sizeof o->contract, "id_out written on failure");
    if (err == ERR_SENTINEL || !err) {
        snprintf(o->contract, sizeof o->contract, "failure without an appstore_error");
        return;
    }
    if (appstore_error_status(err) != o->status)
        snprintf(o->contract, sizeof o->contract, "error status differs from the returned status");
    if (!*appstore_error_message(err)) snprintf(o->contract, sizeof o->contract, "empty error message");
    snprintf(o->reason, sizeof o->reason, "%s", appstore_reason_name(appstore_error_reason(err)));
    appstore_error_free(err);
}

/* The all-ids call must agree with the single-id call. Returns 1 when consistent. */
static int ids_agree(const char *text, size_t len, const outcome *o, char *problem, size_t n) {
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_receipt_extract_transaction_ids(text, len, &json, &err);
    if (o->status == APPSTORE_INVALID_RECEIPT) {
        int ok = st == APPSTORE_INVALID_RECEIPT && strcmp(appstore_reason_name(appstore_error_reason(err)), o->reason) == 0;
        if (!ok) snprintf(problem, n, "extract_transaction_ids gave %s where extract_transaction_id gave INVALID_RECEIPT",
                          appstore_status_name(st));
        appstore_error_free(err);
        appstore_string_free(json);
        return ok;
    }
    if (st != APPSTORE_OK) {
        snprintf(problem, n, "extract_transaction_ids failed: %s %s", appstore_status_name(st), appstore_error_message(err));
        appstore_error_free(err);
        return 0;
    }
    json_error_t jerr;
    json_t *obj = json_loads(json, 0, &jerr);
    appstore_string_free(json);
    json_t *first = json_object_get(obj, "firstTransactionId");
    int ok = o->status == APPSTORE_NOT_FOUND ? json_is_null(first)
                                             : json_is_string(first) && strcmp(json_string_value(first), o->value) == 0;
    if (!ok) snprintf(problem, n, "firstTransactionId of extract_transaction_ids disagrees");
    json_decref(obj);
    return ok;
}

static int check(json_t *c, const outcome *o, char *problem, size_t n) {
    json_t *expect = json_object_get(c, "expect");
    const char *result = json_string_value(json_object_get(expect, "result"));
    if (!result) result = "";
    if (o->contract[0]) {
        snprintf(problem, n, "header convention violated: %s", o->contract);
        return 0;
    }
    char got[400];
    if (o->status == APPSTORE_OK) snprintf(got, sizeof got, "value %s", o->value);
    else snprintf(got, sizeof got, "%s/%s", appstore_status_name(o->status), o->reason);
    if (strcmp(result, "value") == 0) {
        const char *value = json_string_value(json_object_get(expect, "value"));
        if (value) {
            if (o->status == APPSTORE_OK && strcmp(o->value, value) == 0) return 1;
            snprintf(problem, n, "expected value %s, got %s", value, got);
            return 0;
        }
        json_t *first = json_object_get(expect, "python_java_node");
        if (json_is_null(first) || !first) {
            if (o->status == APPSTORE_NOT_FOUND && strcmp(o->reason, "no_transaction_id") == 0) return 1;
            snprintf(problem, n, "expected NOT_FOUND (no in-app purchases), got %s", got);
            return 0;
        }
        int in_any = 0;
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(expect, "any_of"), i, v) {
            if (json_is_string(v) && strcmp(json_string_value(v), json_string_value(first)) == 0) in_any = 1;
        }
        if (!in_any) {
            snprintf(problem, n, "manifest: python_java_node not in any_of");
            return 0;
        }
        if (o->status == APPSTORE_OK && strcmp(o->value, json_string_value(first)) == 0) return 1;
        snprintf(problem, n, "expected the first id %s (Python/Java/Node), got %s", json_string_value(first), got);
        return 0;
    }
    if (strcmp(result, "error-or-null") == 0) {
        if (o->status == APPSTORE_NOT_FOUND) return 1;
        if (o->status == APPSTORE_INVALID_RECEIPT &&
            (strcmp(o->reason, "receipt_malformed") == 0 || strcmp(o->reason, "wrong_kind") == 0))
            return 1;
        snprintf(problem, n, "expected an error or none, got %s", got);
        return 0;
    }
    if (strncmp(result, "null", 4) == 0) {
        if (o->status == APPSTORE_NOT_FOUND && strcmp(o->reason, "no_transaction_id") == 0) return 1;
        snprintf(problem, n, "expected NOT_FOUND, got %s", got);
        return 0;
    }
    snprintf(problem, n, "unknown expectation %s", result);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    long expect_cases = -1;
    int skip_if_missing = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skip-if-missing") == 0) skip_if_missing = 1;
        else if (strcmp(argv[i], "--verbose") == 0) verbose = 1;
        else if (strcmp(argv[i], "--expect-cases") == 0 && i + 1 < argc) expect_cases = atol(argv[++i]);
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else {
            fprintf(stderr, "usage: %s CONFORMANCE_DIR [--skip-if-missing] [--expect-cases N] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: %s CONFORMANCE_DIR [options]\n", argv[0]);
        return 2;
    }
    printf("libappstoreserver %s, receipt cases of %s\n", appstore_version(), dir);
    char *manifest_path = capi_join(dir, "manifest.json");
    struct stat sb;
    if (stat(manifest_path, &sb) != 0) {
        free(manifest_path);
        if (skip_if_missing) {
            printf("conformance: SKIPPED — %s not found; real receipts NOT checked\n", dir);
            printf("conformance: 0 passed, 0 failed, %ld skipped\n", expect_cases > 0 ? expect_cases : 0);
            return 0;
        }
        printf("FAIL %s/manifest.json not found\nconformance: 0 passed, 1 failed, 0 skipped\n", dir);
        return 1;
    }
    json_error_t jerr;
    json_t *manifest = json_load_file(manifest_path, 0, &jerr);
    free(manifest_path);
    if (!manifest) {
        printf("FAIL cannot parse the manifest: %s\nconformance: 0 passed, 1 failed, 0 skipped\n", jerr.text);
        return 1;
    }
    long passed = 0, failed = 0, skipped = 0, cases = 0;
    size_t idx;
    json_t *c;
    json_array_foreach(json_object_get(manifest, "cases"), idx, c) {
        const char *op = json_string_value(json_object_get(c, "operation"));
        if (!op || (strcmp(op, "extractTransactionIdFromAppReceipt") != 0 &&
                    strcmp(op, "extractTransactionIdFromTransactionReceipt") != 0))
            continue;
        cases++;
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *rel = json_string_value(json_object_get(c, "path"));
        char *path = rel ? capi_join(dir, rel) : NULL;
        size_t len = 0;
        char *text = path ? capi_read_trimmed(path, &len) : NULL;
        free(path);
        if (!text) {
            skipped++;
            printf("SKIP %s: input file unreadable\n", id ? id : "?");
            continue;
        }
        outcome o;
        run(op, text, len, &o);
        char problem[600] = "";
        int ok = check(c, &o, problem, sizeof problem);
        if (ok && is_app_op(op)) ok = ids_agree(text, len, &o, problem, sizeof problem);
        if (ok) {
            passed++;
            if (verbose)
                printf("ok   %s: %s %s%s\n", id ? id : "?", appstore_status_name(o.status), o.value, o.reason);
        } else {
            failed++;
            printf("FAIL %s: %s\n", id ? id : "?", problem);
        }
        free(text);
    }
    if (expect_cases >= 0 && cases != expect_cases) {
        failed++;
        printf("FAIL expected exactly %ld receipt cases, found %ld\n", expect_cases, cases);
    }
    json_decref(manifest);
    printf("conformance: %ld passed, %ld failed, %ld skipped\n", passed, failed, skipped);
    return failed == 0 && skipped == 0 && passed > 0 ? 0 : 1;
}
