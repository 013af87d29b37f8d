/*
 * The writer that Tests/capi/ledger_crash.py kills: ingests every signed value of lifecycles.json (scenarios, then
 * random lifecycles; per lifecycle its notifications, history transactions, then renewal infos) into a SQLite ledger,
 * from index START on, and prints "ACK <index>" only after appstore_ledger_ingest_* returned (the event is durable).
 * Usage: ledger_crash_writer TESTPKI_DIR LIFECYCLES_DIR DB_PATH write START
 *        ledger_crash_writer TESTPKI_DIR LIFECYCLES_DIR DB_PATH summary        (prints the rebuilt state's summary)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_util.h"

typedef struct { const char *kind; const char *jws; } value;

static size_t flatten(json_t *doc, value *out) {
    size_t n = 0, i, j, k;
    const char *groups[] = {"scenarios", "random"};
    for (int g = 0; g < 2; g++) {
        json_t *lc;
        json_array_foreach(json_object_get(doc, groups[g]), i, lc) {
            json_t *x, *page, *t;
            json_array_foreach(json_object_get(lc, "notifications"), j, x) {
                if (out) out[n] = (value){"NOTIFICATION", json_string_value(json_object_get(x, "signed"))};
                n++;
            }
            json_t *h = json_object_get(lc, "history");
            json_array_foreach(json_object_get(h, "pages"), j, page) {
                json_array_foreach(json_object_get(page, "signedTransactions"), k, t) {
                    if (out) out[n] = (value){"TRANSACTION", json_string_value(t)};
                    n++;
                }
            }
            json_array_foreach(json_object_get(h, "signedRenewalInfos"), j, t) {
                if (out) out[n] = (value){"RENEWAL_INFO", json_string_value(t)};
                n++;
            }
        }
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s TESTPKI_DIR LIFECYCLES_DIR DB_PATH write START | summary\n", argv[0]);
        return 2;
    }
    size_t root_len = 0;
    unsigned char *root = capi_read_file(capi_join(argv[1], "root.der"), &root_len);
    json_t *doc = json_load_file(capi_join(argv[2], "lifecycles.json"), 0, NULL);
    if (!root || !doc) { fprintf(stderr, "cannot read the fixtures\n"); return 1; }
    appstore_verifier *v = capi_sandbox_verifier(root, root_len, json_string_value(json_object_get(doc, "bundleId")), -1);
    char url[4200];
    snprintf(url, sizeof url, "sqlite:%s", argv[3]);
    appstore_ledger *l = NULL;
    appstore_error *err = NULL;
    if (!v || appstore_ledger_open(url, v, &l, &err) != APPSTORE_OK) {
        fprintf(stderr, "open: %s\n", appstore_error_message(err));
        return 1;
    }
    if (!strcmp(argv[4], "summary")) {
        char *json = NULL;
        if (appstore_ledger_query_summary(l, &json, &err) != APPSTORE_OK) { fprintf(stderr, "%s\n", appstore_error_message(err)); return 1; }
        printf("%s\n", json);
        return 0;
    }
    size_t n = flatten(doc, NULL);
    value *values = calloc(n, sizeof *values);
    flatten(doc, values);
    size_t start = argc > 5 ? (size_t)strtoull(argv[5], NULL, 10) : 0;
    printf("COUNT %zu\n", n);
    fflush(stdout);
    for (size_t i = start; i < n; i++) {
        appstore_status (*fn)(appstore_ledger *, const char *, size_t, char **, appstore_error **) =
            !strcmp(values[i].kind, "TRANSACTION") ? appstore_ledger_ingest_transaction
            : !strcmp(values[i].kind, "RENEWAL_INFO") ? appstore_ledger_ingest_renewal_info
            : appstore_ledger_ingest_notification;
        if (fn(l, values[i].jws, strlen(values[i].jws), NULL, &err) != APPSTORE_OK) {
            fprintf(stderr, "ingest %zu: %s\n", i, appstore_error_message(err));
            return 1;
        }
        printf("ACK %zu\n", i);
        fflush(stdout);
    }
    printf("DONE\n");
    appstore_ledger_free(l);
    return 0;
}
