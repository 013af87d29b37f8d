/*
 * c_receipts RECEIPT_FIXTURES_DIR CONFORMANCE_DIR [--threads N --iterations M]
 *
 * App receipts through the C ABI:
 *  1. every case of RECEIPT_FIXTURES_DIR/manifest.json (Tests/support/receipts.py, the project's own CA): the
 *     verifier built from the case's roots and bundle id; a valid case's JSON must equal the expected JSON exactly
 *     (json_equal, "verification" aside, whose effectiveDateSource / effectiveDate are checked too); an error case's
 *     status and reason must be exact; the unverified extraction must give the expected ids;
 *  2. the real sandbox receipts of CONFORMANCE_DIR (2015, 2020, 2024) verified against Apple Inc. Root, the wrong
 *     root and the wrong bundle; the three old-style transaction receipts; tampered copies of the real receipts
 *     (content, creation date, signature, signer and intermediate certificates, carried root), each with its exact
 *     status and reason (all skipped loudly without CONFORMANCE_DIR);
 *  3. argument and configuration errors, names of the new statuses and reasons, the header's output conventions;
 *  4. N threads x M iterations verifying and extracting on one shared verifier, every result identical to the
 *     single-threaded one.
 * Closing line: "receipts: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static capi_tally T = {"receipts", 0, 0};

static int sentinel_a, sentinel_b, sentinel_c;
#define STR_SENTINEL ((char *)(void *)&sentinel_a)
#define ERR_SENTINEL ((appstore_error *)(void *)&sentinel_b)
#define VERIFIER_SENTINEL ((appstore_receipt_verifier *)(void *)&sentinel_c)

static unsigned char *read_or_die(const char *dir, const char *rel, size_t *len) {
    char *path = capi_join(dir, rel);
    unsigned char *data = capi_read_file(path, len);
    if (!data) {
        printf("FAIL cannot read %s\n", path);
        exit(1);
    }
    free(path);
    return data;
}

static char *text_or_die(const char *dir, const char *rel, size_t *len) {
    char *path = capi_join(dir, rel);
    char *text = capi_read_trimmed(path, len);
    if (!text) {
        printf("FAIL cannot read %s\n", path);
        exit(1);
    }
    free(path);
    return text;
}

/* A verifier over the given root files (relative to dir); NULL on failure (status in *st, error checked). */
static appstore_receipt_verifier *make_verifier(const char *dir, const char *const *roots, size_t nroots,
                                                const char *bundle, appstore_status *st, appstore_error **err) {
    const uint8_t *ders[8] = {0};
    size_t lens[8] = {0};
    unsigned char *owned[8] = {0};
    for (size_t i = 0; i < nroots && i < 8; i++) {
        owned[i] = read_or_die(dir, roots[i], &lens[i]);
        ders[i] = owned[i];
    }
    appstore_receipt_verifier *v = VERIFIER_SENTINEL;
    *st = appstore_receipt_verifier_new(ders, lens, nroots, bundle, &v, err);
    for (size_t i = 0; i < nroots && i < 8; i++) free(owned[i]);
    if (*st != APPSTORE_OK) {
        capi_check(&T, v == VERIFIER_SENTINEL, "verifier_out untouched on failure", NULL);
        return NULL;
    }
    return v;
}

/* Verifies; returns status, *json_out the output (malloc'd copy) on success, *reason the reason name on failure.
 * Checks the header's conventions on the way. */
static appstore_status verify(const appstore_receipt_verifier *v, const char *text, size_t len, char **json_out,
                              const char **reason, const char *what) {
    char *json = STR_SENTINEL;
    appstore_error *err = ERR_SENTINEL;
    appstore_status st = appstore_receipt_verifier_verify(v, text, len, &json, &err);
    *json_out = NULL;
    *reason = "none";
    if (st == APPSTORE_OK) {
        capi_check(&T, err == ERR_SENTINEL, what, "err_out written on success");
        if (json != STR_SENTINEL && json) {
            *json_out = strdup(json);
            appstore_string_free(json);
        } else {
            capi_check(&T, 0, what, "json_out not set on success");
        }
        return st;
    }
    capi_check(&T, json == STR_SENTINEL, what, "json_out written on failure");
    if (err == ERR_SENTINEL || !err) {
        capi_check(&T, 0, what, "failure without an error object");
        return st;
    }
    capi_check(&T, appstore_error_status(err) == st && *appstore_error_message(err), what,
               "error status/message inconsistent (%s: %s)", appstore_status_name(appstore_error_status(err)),
               appstore_error_message(err));
    *reason = appstore_reason_name(appstore_error_reason(err));
    appstore_error_free(err);
    return st;
}

/* ---- 1. own-CA fixtures ------------------------------------------------------------------------------------ */

static void check_extraction(json_t *want, const char *text, size_t len, const char *id) {
    if (!want) return;
    char what[300];
    snprintf(what, sizeof what, "%s: extraction", id);
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_receipt_extract_transaction_ids(text, len, &json, &err);
    if (!capi_check(&T, st == APPSTORE_OK, what, "%s: %s", appstore_status_name(st), appstore_error_message(err))) {
        appstore_error_free(err);
        return;
    }
    json_error_t jerr;
    json_t *got = json_loads(json, JSON_ALLOW_NUL, &jerr);
    appstore_string_free(json);
    capi_check(&T, got != NULL, what, "extract_transaction_ids output is not JSON: %s", jerr.text);
    capi_check(&T, json_equal(json_object_get(got, "firstTransactionId"), json_object_get(want, "first")) ||
                   (json_is_null(json_object_get(want, "first")) && json_is_null(json_object_get(got, "firstTransactionId"))),
               what, "firstTransactionId differs");
    capi_check(&T, json_equal(json_object_get(got, "transactionIds"), json_object_get(want, "transactionIds")), what,
               "transactionIds differ");
    capi_check(&T, json_equal(json_object_get(got, "originalTransactionIds"), json_object_get(want, "originalTransactionIds")),
               what, "originalTransactionIds differ");
    json_decref(got);
    /* the single id, byte for byte (the expected one may hold a NUL: then the call must fail as cIdError says) */
    char *one = STR_SENTINEL;
    err = NULL;
    st = appstore_receipt_extract_transaction_id(text, len, &one, &err);
    json_t *first_json = json_object_get(want, "first");
    const char *first = json_string_value(first_json);
    json_t *fail = json_object_get(want, "cIdError");
    if (fail) {
        const char *want_status = json_string_value(json_object_get(fail, "status"));
        const char *want_reason = json_string_value(json_object_get(fail, "reason"));
        capi_check(&T, st != APPSTORE_OK && one == STR_SENTINEL && strcmp(appstore_status_name(st), want_status) == 0 &&
                           strcmp(appstore_reason_name(appstore_error_reason(err)), want_reason) == 0,
                   what, "first id: expected %s/%s, got %s/%s%s", want_status, want_reason, appstore_status_name(st),
                   appstore_reason_name(appstore_error_reason(err)), st == APPSTORE_OK ? " with an id" : "");
        if (st == APPSTORE_OK) appstore_string_free(one);
    } else if (first) {
        size_t n = json_string_length(first_json);
        capi_check(&T, st == APPSTORE_OK && one != STR_SENTINEL && strlen(one) == n && memcmp(one, first, n) == 0, what,
                   "first id: %s", appstore_status_name(st));
        if (st == APPSTORE_OK) appstore_string_free(one);
    } else {
        capi_check(&T, st == APPSTORE_NOT_FOUND && one == STR_SENTINEL &&
                           appstore_error_reason(err) == APPSTORE_REASON_NO_TRANSACTION_ID,
                   what, "expected NOT_FOUND / no_transaction_id, got %s", appstore_status_name(st));
    }
    appstore_error_free(err);
}

static void own_fixtures(const char *dir) {
    char *mpath = capi_join(dir, "manifest.json");
    json_error_t jerr;
    json_t *m = json_load_file(mpath, JSON_ALLOW_NUL, &jerr); /* ids with a NUL byte, escaped as \u0000 */
    free(mpath);
    if (!capi_check(&T, m != NULL, "receipt fixture manifest", "%s", jerr.text)) return;
    size_t i, count = 0;
    json_t *c;
    json_array_foreach(json_object_get(m, "cases"), i, c) {
        count++;
        const char *id = json_string_value(json_object_get(c, "id"));
        size_t len = 0;
        char *text = text_or_die(dir, json_string_value(json_object_get(c, "path")), &len);
        json_t *ver = json_object_get(c, "verifier");
        const char *roots[8];
        size_t nroots = 0, k;
        json_t *r;
        json_array_foreach(json_object_get(ver, "roots"), k, r) {
            if (nroots < 8) roots[nroots++] = json_string_value(r);
        }
        const char *bundle = json_string_value(json_object_get(ver, "bundleId"));
        appstore_status st;
        appstore_error *err = NULL;
        appstore_receipt_verifier *v = make_verifier(dir, roots, nroots, bundle, &st, &err);
        if (!capi_check(&T, v != NULL, id, "verifier_new failed: %s", appstore_error_message(err))) {
            appstore_error_free(err);
            free(text);
            continue;
        }
        char *json;
        const char *reason;
        st = verify(v, text, len, &json, &reason, id);
        appstore_receipt_verifier_free(v);
        json_t *expect = json_object_get(c, "expect");
        if (strcmp(json_string_value(json_object_get(expect, "result")), "valid") == 0) {
            if (capi_check(&T, st == APPSTORE_OK, id, "expected valid, got %s/%s", appstore_status_name(st), reason)) {
                json_t *got = json_loads(json, JSON_ALLOW_NUL, &jerr);
                capi_check(&T, got != NULL, id, "output is not JSON: %s", jerr.text);
                json_t *verification = json_incref(json_object_get(got, "verification"));
                json_object_del(got, "verification");
                int same = json_equal(got, json_object_get(expect, "json"));
                if (!same) {
                    char *a = json_dumps(json_object_get(expect, "json"), JSON_SORT_KEYS | JSON_COMPACT);
                    char *b = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
                    capi_check(&T, 0, id, "decoded JSON differs\n  want %s\n  got  %s", a, b);
                    free(a);
                    free(b);
                } else {
                    capi_check(&T, 1, id, NULL);
                }
                capi_check(&T, json_equal(json_object_get(verification, "effectiveDateSource"),
                                          json_object_get(expect, "effectiveDateSource")),
                           id, "effectiveDateSource");
                json_t *date = json_object_get(expect, "effectiveDate");
                if (date)
                    capi_check(&T, json_equal(json_object_get(verification, "effectiveDate"), date), id, "effectiveDate");
                json_decref(verification);
                json_decref(got);
            }
        } else {
            const char *want_status = json_string_value(json_object_get(expect, "status"));
            const char *want_reason = json_string_value(json_object_get(expect, "reason"));
            capi_check(&T, st != APPSTORE_OK && strcmp(appstore_status_name(st), want_status) == 0 &&
                               strcmp(reason, want_reason) == 0,
                       id, "expected %s/%s, got %s/%s", want_status, want_reason, appstore_status_name(st), reason);
        }
        free(json);
        check_extraction(json_object_get(c, "extract"), text, len, id);
        free(text);
    }
    capi_check(&T, count >= 32, "receipt fixture manifest has at least 32 cases", "%zu", count);
    json_decref(m);
}

/* ---- 2. real receipts ------------------------------------------------------------------------------------- */

static const struct {
    const char *file, *bundle, *first;
    size_t in_app;
} REAL[] = {
    {"real/receipts/app/sandbox-app-receipt-2015-11-18.b64", "com.mbaasy.ios.demo", "1000000180842733", 5},
    {"real/receipts/app/sandbox-app-receipt-2020-07-22.b64", "com.revenuecat.sampleapp", "1000000692879214", 9},
    {"real/receipts/app/sandbox-app-receipt-2024-04-02.b64", "com.brave.ios.browser", "2000000561971563", 5},
};
#define NREAL (sizeof REAL / sizeof REAL[0])

static void real_receipts(const char *dir) {
    static const char *apple[] = {"certs/apple-inc-root-ca.der"}, *g3[] = {"certs/apple-root-ca-g3.der"};
    appstore_status st;
    appstore_error *err = NULL;
    appstore_receipt_verifier *v = make_verifier(dir, apple, 1, NULL, &st, &err);
    appstore_receipt_verifier *wrong_root = make_verifier(dir, g3, 1, NULL, &st, &err);
    appstore_receipt_verifier *wrong_bundle = make_verifier(dir, apple, 1, "com.example.other", &st, &err);
    if (!capi_check(&T, v && wrong_root && wrong_bundle, "real receipt verifiers", NULL)) return;
    for (size_t i = 0; i < NREAL; i++) {
        size_t len;
        char *text = text_or_die(dir, REAL[i].file, &len);
        char *json;
        const char *reason;
        st = verify(v, text, len, &json, &reason, REAL[i].file);
        if (capi_check(&T, st == APPSTORE_OK, REAL[i].file, "%s/%s", appstore_status_name(st), reason)) {
            json_error_t jerr;
            json_t *got = json_loads(json, 0, &jerr);
            json_t *in_app = json_object_get(got, "inApp");
            capi_check(&T, strcmp(json_string_value(json_object_get(got, "bundleId")), REAL[i].bundle) == 0,
                       REAL[i].file, "bundleId");
            capi_check(&T, json_array_size(in_app) == REAL[i].in_app, REAL[i].file, "%zu in-app records",
                       json_array_size(in_app));
            const char *first = json_string_value(json_object_get(json_array_get(in_app, 0), "transactionId"));
            capi_check(&T, first && strcmp(first, REAL[i].first) == 0, REAL[i].file, "first transaction id");
            const char *source = json_string_value(
                json_object_get(json_object_get(got, "verification"), "effectiveDateSource"));
            capi_check(&T, source && strcmp(source, "receiptCreationDate") == 0, REAL[i].file, "effectiveDateSource");
            json_decref(got);
        }
        free(json);
        st = verify(wrong_root, text, len, &json, &reason, REAL[i].file);
        capi_check(&T, st == APPSTORE_VERIFICATION_FAILURE && strcmp(reason, "untrusted_chain") == 0, REAL[i].file,
                   "G3 as the only root: %s/%s", appstore_status_name(st), reason);
        st = verify(wrong_bundle, text, len, &json, &reason, REAL[i].file);
        capi_check(&T, st == APPSTORE_INVALID_APP_IDENTIFIER && strcmp(reason, "wrong_bundle") == 0, REAL[i].file,
                   "wrong bundle: %s/%s", appstore_status_name(st), reason);
        free(text);
    }
    /* 2020: documented fields of the first record */
    size_t len;
    char *text = text_or_die(dir, REAL[1].file, &len);
    char *json;
    const char *reason;
    if (verify(v, text, len, &json, &reason, "2020 fields") == APPSTORE_OK) {
        json_error_t jerr;
        json_t *got = json_loads(json, 0, &jerr);
        json_t *r0 = json_array_get(json_object_get(got, "inApp"), 0);
        json_t *want = json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:b}", "quantity", 1, "productId",
                                 "com.revenuecat.monthly_4.99.1_week_intro", "transactionId", "1000000692879214",
                                 "originalTransactionId", "1000000692878476", "purchaseDate", (json_int_t)1594755400000,
                                 "originalPurchaseDate", (json_int_t)1594755207000, "expiresDate",
                                 (json_int_t)1594755700000, "webOrderLineItemId", "1000000054042695",
                                 "isInIntroOfferPeriod", 0);
        capi_check(&T, json_equal(r0, want), "2020 receipt: first record's fields", NULL);
        capi_check(&T, json_integer_value(json_object_get(got, "receiptCreationDate")) == 1595439548000,
                   "2020 receipt: creation date", NULL);
        capi_check(&T, strcmp(json_string_value(json_object_get(got, "applicationVersion")), "4") == 0 &&
                           strcmp(json_string_value(json_object_get(got, "originalApplicationVersion")), "1.0") == 0,
                   "2020 receipt: versions", NULL);
        json_decref(want);
        json_decref(got);
        free(json);
    }
    free(text);
    appstore_receipt_verifier_free(v);
    appstore_receipt_verifier_free(wrong_root);
    appstore_receipt_verifier_free(wrong_bundle);

    static const struct {
        const char *file, *id;
    } TX[] = {{"real/receipts/transaction/sandbox-transaction-receipt-2015-11-18.b64", "1000000181298734"},
              {"real/receipts/transaction/production-transaction-receipt-2012-04-30.b64", "1000000046178817"},
              {"real/receipts/transaction/production-transaction-receipt-2017-12-23.b64", "160000408504141"}};
    for (size_t i = 0; i < sizeof TX / sizeof TX[0]; i++) {
        text = text_or_die(dir, TX[i].file, &len);
        char *id = NULL;
        st = appstore_transaction_receipt_extract_transaction_id(text, len, &id, NULL);
        capi_check(&T, st == APPSTORE_OK && id && strcmp(id, TX[i].id) == 0, TX[i].file, "%s", appstore_status_name(st));
        if (st == APPSTORE_OK) appstore_string_free(id);
        free(text);
    }
}

/* ---- 2b. tampered real receipts ------------------------------------------------------------------------------ */

/* A minimal DER walker (definite lengths only: the real receipts are DER), independent of the library. */
typedef struct {
    unsigned char tag;
    size_t start, content, end; /* identifier offset, content offset, offset past the element */
} der_node;

static int der_at(const unsigned char *b, size_t i, size_t limit, der_node *n) {
    if (i + 2 > limit) return 0;
    size_t p = i + 1, len = b[p++];
    if (len & 0x80) {
        size_t k = len & 0x7F;
        if (k < 1 || k > 4 || p + k > limit) return 0;
        len = 0;
        while (k--) len = len << 8 | b[p++];
    }
    if (len > limit - p) return 0;
    *n = (der_node){b[i], i, p, p + len};
    return 1;
}

/* The children of n, at most max; returns their count. */
static size_t der_children(const unsigned char *b, const der_node *n, der_node *out, size_t max) {
    size_t count = 0, i = n->content;
    der_node c;
    while (i < n->end && count < max && der_at(b, i, n->end, &c)) {
        out[count++] = c;
        i = c.end;
    }
    return count;
}

static const unsigned char *find_bytes(const unsigned char *hay, size_t n, const void *needle, size_t m) {
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (memcmp(hay + i, needle, m) == 0) return hay + i;
    return NULL;
}

/* The subjectPublicKeyInfo BIT STRING and the signatureValue BIT STRING of a certificate. */
static int cert_parts(const unsigned char *b, const der_node *cert, der_node *key, der_node *sig) {
    der_node c[4], tbs[12], spki[3];
    if (der_children(b, cert, c, 4) != 3 || c[2].tag != 0x03) return 0;
    /* [0] version, serial, signature algorithm, issuer, validity, subject, subjectPublicKeyInfo, ... */
    if (der_children(b, &c[0], tbs, 12) < 7 || tbs[0].tag != 0xA0 || tbs[6].tag != 0x30) return 0;
    if (der_children(b, &tbs[6], spki, 3) != 2 || spki[1].tag != 0x03) return 0;
    *key = spki[1];
    *sig = c[2];
    return 1;
}

typedef struct {
    size_t date;                       /* offset of attribute 12's 20-character date */
    der_node signer, intermediate, root;
    der_node signer_key, signer_sig, intermediate_key, intermediate_sig;
} receipt_layout;

static int layout_of(const unsigned char *der, size_t len, const unsigned char *apple_root, size_t root_len,
                     receipt_layout *l) {
    /* Attribute 12: SEQUENCE { INTEGER 12, INTEGER 1, OCTET STRING { IA5String (20) } }, exactly once. */
    static const unsigned char attr12[] = {0x02, 0x01, 0x0C, 0x02, 0x01, 0x01, 0x04, 0x16, 0x16, 0x14};
    const unsigned char *hit = find_bytes(der, len, attr12, sizeof attr12);
    if (!hit || find_bytes(hit + 1, len - (size_t)(hit + 1 - der), attr12, sizeof attr12)) return 0;
    l->date = (size_t)(hit - der) + sizeof attr12;
    der_node top, info[2], explicit_[1], signed_[8], certs[4];
    if (!der_at(der, 0, len, &top) || der_children(der, &top, info, 2) != 2) return 0;
    if (der_children(der, &info[1], explicit_, 1) != 1) return 0;
    size_t n = der_children(der, &explicit_[0], signed_, 8);
    const der_node *set = NULL;
    for (size_t i = 0; i < n; i++)
        if (signed_[i].tag == 0xA0) set = &signed_[i];
    if (!set || der_children(der, set, certs, 4) != 3) return 0;
    int have_signer = 0, have_root = 0, have_intermediate = 0;
    for (size_t i = 0; i < 3; i++) {
        size_t clen = certs[i].end - certs[i].start;
        if (clen == root_len && memcmp(der + certs[i].start, apple_root, root_len) == 0) {
            l->root = certs[i];
            have_root = 1;
        } else if (find_bytes(der + certs[i].start, clen, "Receipt Signing", 15)) {
            l->signer = certs[i];
            have_signer = 1;
        } else {
            l->intermediate = certs[i];
            have_intermediate = 1;
        }
    }
    return have_signer && have_root && have_intermediate &&
           cert_parts(der, &l->signer, &l->signer_key, &l->signer_sig) &&
           cert_parts(der, &l->intermediate, &l->intermediate_key, &l->intermediate_sig);
}

/* Each tampered copy must fail with exactly this status and reason (or, for the carried root, still verify): the
 * signature is checked before anything read from the content is used, so tampering with signed bytes — also the
 * creation date the chain is validated at — is bad_signature; a certificate whose key still verifies the receipt's
 * signature fails in the chain. */
static void real_tampering(const char *dir) {
    static const char *apple[] = {"certs/apple-inc-root-ca.der"};
    appstore_status st;
    appstore_error *err = NULL;
    appstore_receipt_verifier *v = make_verifier(dir, apple, 1, NULL, &st, &err);
    if (!capi_check(&T, v != NULL, "tampering: verifier", NULL)) return;
    size_t root_len;
    unsigned char *apple_root = read_or_die(dir, apple[0], &root_len);
    for (size_t r = 0; r < NREAL; r++) {
        size_t text_len, len;
        char *text = text_or_die(dir, REAL[r].file, &text_len);
        unsigned char *der = capi_base64_decode(text, &len);
        free(text);
        receipt_layout l;
        if (!capi_check(&T, der && layout_of(der, len, apple_root, root_len, &l), REAL[r].file,
                        "cannot find attribute 12 and the three certificates")) {
            free(der);
            continue;
        }
        const unsigned char *bundle = find_bytes(der, len, REAL[r].bundle, strlen(REAL[r].bundle));
        const unsigned char *subject = find_bytes(der, len, "iTunes Store Receipt Signing", 28);
        if (!capi_check(&T, bundle && subject, REAL[r].file, "bundle id or signer subject not found")) {
            free(der);
            continue;
        }
        const struct {
            const char *what;
            size_t at;
            unsigned char mask;
            appstore_status status;
            const char *reason;
        } cases[] = {
            /* signed content: one bit of the bundle id */
            {"content byte", (size_t)(bundle - der) + 3, 0x01, APPSTORE_VERIFICATION_FAILURE, "bad_signature"},
            /* attribute 12 "YYYY-MM-DDThh:mm:ssZ": year "3xxx" (every certificate expired), month "1x" (unreadable:
             * used to fall back to now), the last digit of the seconds */
            {"creation date year digit", l.date, 0x01, APPSTORE_VERIFICATION_FAILURE, "bad_signature"},
            {"creation date month digit", l.date + 5, 0x01, APPSTORE_VERIFICATION_FAILURE, "bad_signature"},
            {"creation date seconds digit", l.date + 18, 0x01, APPSTORE_VERIFICATION_FAILURE, "bad_signature"},
            /* the RSA signature, the last bytes of the DER */
            {"signature byte", len - 7, 0x40, APPSTORE_VERIFICATION_FAILURE, "bad_signature"},
            /* signer certificate: subject and own signatureValue (its key still verifies the receipt; its issuer's
             * signature on it does not), public key (the receipt's signature fails first) */
            {"signer certificate subject", (size_t)(subject - der) + 2, 0x01, APPSTORE_VERIFICATION_FAILURE,
             "untrusted_chain"},
            {"signer certificate signature", l.signer_sig.end - 20, 0x01, APPSTORE_VERIFICATION_FAILURE,
             "untrusted_chain"},
            {"signer certificate key", l.signer_key.content + 100, 0x01, APPSTORE_VERIFICATION_FAILURE,
             "bad_signature"},
            /* intermediate certificate: key (the signer's certificate no longer verifies) and signatureValue */
            {"intermediate certificate key", l.intermediate_key.content + 100, 0x01, APPSTORE_VERIFICATION_FAILURE,
             "untrusted_chain"},
            {"intermediate certificate signature", l.intermediate_sig.end - 20, 0x01, APPSTORE_VERIFICATION_FAILURE,
             "untrusted_chain"},
            /* the carried copy of Apple Inc. Root is never trusted: corrupting it changes nothing */
            {"carried root certificate signature", l.root.end - 20, 0x01, APPSTORE_OK, "none"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char what[300];
            snprintf(what, sizeof what, "%s: %s", REAL[r].file, cases[i].what);
            der[cases[i].at] ^= cases[i].mask;
            char *b64 = capi_base64_encode(der, len);
            der[cases[i].at] ^= cases[i].mask;
            char *json;
            const char *reason;
            st = verify(v, b64, strlen(b64), &json, &reason, what);
            capi_check(&T, st == cases[i].status && strcmp(reason, cases[i].reason) == 0, what,
                       "expected %s/%s, got %s/%s", appstore_status_name(cases[i].status), cases[i].reason,
                       appstore_status_name(st), reason);
            if (st == APPSTORE_OK) {
                json_error_t jerr;
                json_t *got = json_loads(json, 0, &jerr);
                const char *b = json_string_value(json_object_get(got, "bundleId"));
                capi_check(&T, b && strcmp(b, REAL[r].bundle) == 0, what, "bundleId of the verified copy");
                json_decref(got);
            }
            free(json);
            free(b64);
        }
        free(der);
    }
    free(apple_root);
    appstore_receipt_verifier_free(v);
}

/* ---- 3. arguments, names, configuration ----------------------------------------------------------------------- */

static void arguments(const char *fixtures) {
    size_t root_len;
    unsigned char *root = read_or_die(fixtures, "root.der", &root_len);
    const uint8_t *roots[] = {root};
    size_t lens[] = {root_len};
    appstore_receipt_verifier *v = VERIFIER_SENTINEL;
    appstore_error *err = NULL;
    appstore_status st;

#define EXPECT(call, want_status, want_reason, label)                                                            \
    do {                                                                                                          \
        err = NULL;                                                                                               \
        st = (call);                                                                                              \
        capi_check(&T, st == (want_status) && appstore_error_reason(err) == (want_reason), label, "%s/%s: %s",    \
                   appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),                    \
                   appstore_error_message(err));                                                                  \
        appstore_error_free(err);                                                                                 \
    } while (0)

    EXPECT(appstore_receipt_verifier_new(NULL, NULL, 0, NULL, &v, &err), APPSTORE_CONFIGURATION_ERROR,
           APPSTORE_REASON_NO_TRUST_ANCHOR, "no roots");
    EXPECT(appstore_receipt_verifier_new(NULL, lens, 1, NULL, &v, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL root array with a count");
    const uint8_t *garbage[] = {(const uint8_t *)"not a certificate"};
    size_t garbage_len[] = {17};
    EXPECT(appstore_receipt_verifier_new(garbage, garbage_len, 1, NULL, &v, &err), APPSTORE_CONFIGURATION_ERROR,
           APPSTORE_REASON_BAD_CERTIFICATE, "root not DER");
    EXPECT(appstore_receipt_verifier_new(roots, lens, 1, "", &v, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "empty bundle id");
    EXPECT(appstore_receipt_verifier_new(roots, lens, 1, NULL, NULL, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL verifier_out");
    capi_check(&T, v == VERIFIER_SENTINEL, "verifier_out untouched by failures", NULL);
    st = appstore_receipt_verifier_new(roots, lens, 1, "com.example.receipts", &v, NULL);
    capi_check(&T, st == APPSTORE_OK && v != VERIFIER_SENTINEL, "verifier with a bundle id", NULL);

    char *out = STR_SENTINEL;
    EXPECT(appstore_receipt_verifier_verify(NULL, "AAAA", 4, &out, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL verifier");
    EXPECT(appstore_receipt_verifier_verify(v, NULL, 4, &out, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL receipt with a length");
    EXPECT(appstore_receipt_verifier_verify(v, "", 0, &out, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "empty receipt");
    EXPECT(appstore_receipt_verifier_verify(v, "\xff\xfe", 2, &out, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "receipt not UTF-8");
    EXPECT(appstore_receipt_verifier_verify(v, "not a receipt!", 14, &out, &err), APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_RECEIPT_MALFORMED, "receipt not base64");
    EXPECT(appstore_receipt_extract_transaction_id("AAAA", 4, NULL, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL id_out");
    EXPECT(appstore_receipt_extract_transaction_ids("AAAA", 4, NULL, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL json_out");
    EXPECT(appstore_transaction_receipt_extract_transaction_id(NULL, 0, &out, &err), APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT, "NULL transaction receipt");
    EXPECT(appstore_receipt_extract_transaction_id("AAAA", 4, &out, &err), APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_RECEIPT_MALFORMED, "three zero bytes");
    capi_check(&T, out == STR_SENTINEL, "outputs untouched by failures", NULL);
    /* err_out may be NULL */
    st = appstore_receipt_extract_transaction_id("AAAA", 4, &out, NULL);
    capi_check(&T, st == APPSTORE_INVALID_RECEIPT, "err_out NULL", NULL);
    /* verify with json_out NULL: verify only */
    size_t len;
    char *text = text_or_die(fixtures, "receipts/valid-full.b64", &len);
    st = appstore_receipt_verifier_verify(v, text, len, NULL, NULL);
    capi_check(&T, st == APPSTORE_OK, "verify with json_out NULL", "%s", appstore_status_name(st));
    free(text);
    appstore_receipt_verifier_free(v);
    appstore_receipt_verifier_free(NULL);

    capi_check(&T, strcmp(appstore_status_name(APPSTORE_NOT_FOUND), "NOT_FOUND") == 0, "status name NOT_FOUND", NULL);
    capi_check(&T, strcmp(appstore_status_name(APPSTORE_INVALID_RECEIPT), "INVALID_RECEIPT") == 0,
               "status name INVALID_RECEIPT", NULL);
    capi_check(&T, strcmp(appstore_reason_name(APPSTORE_REASON_RECEIPT_MALFORMED), "receipt_malformed") == 0 &&
                       strcmp(appstore_reason_name(APPSTORE_REASON_NO_TRANSACTION_ID), "no_transaction_id") == 0 &&
                       strcmp(appstore_reason_name(APPSTORE_REASON_SIGNER_MISSING), "signer_missing") == 0,
               "reason names 40-42", NULL);
    capi_check(&T, strcmp(appstore_status_name(13), "UNKNOWN") == 0 && strcmp(appstore_reason_name(43), "unknown") == 0,
               "unassigned values stay unknown", NULL);
    free(root);
#undef EXPECT
}

/* ---- 4. threads ----------------------------------------------------------------------------------------------- */

typedef struct {
    const appstore_receipt_verifier *v;
    char **texts;
    size_t *lens;
    char **reference;
    size_t n;
    int iterations;
    long mismatches;
} thread_job;

static void *worker(void *arg) {
    thread_job *job = arg;
    for (int it = 0; it < job->iterations; it++) {
        for (size_t i = 0; i < job->n; i++) {
            char *json = NULL;
            appstore_status st = appstore_receipt_verifier_verify(job->v, job->texts[i], job->lens[i], &json, NULL);
            if (st != APPSTORE_OK || strcmp(json, job->reference[i]) != 0) job->mismatches++;
            if (st == APPSTORE_OK) appstore_string_free(json);
            char *id = NULL;
            if (appstore_receipt_extract_transaction_id(job->texts[i], job->lens[i], &id, NULL) != APPSTORE_OK)
                job->mismatches++;
            else
                appstore_string_free(id);
        }
    }
    return NULL;
}

static void threads(const char *fixtures, int nthreads, int iterations) {
    static const char *root[] = {"root.der"};
    static const char *files[] = {"receipts/valid-full.b64", "receipts/valid-ber-indefinite.b64",
                                  "receipts/valid-signed-attributes.b64", "receipts/valid-no-in-app.b64"};
    const size_t n = 3; /* valid-no-in-app has no transaction id: extraction would be NOT_FOUND */
    appstore_status st;
    appstore_error *err = NULL;
    appstore_receipt_verifier *v = make_verifier(fixtures, root, 1, NULL, &st, &err);
    if (!capi_check(&T, v != NULL, "thread verifier", NULL)) return;
    char *texts[4], *reference[4];
    size_t lens[4];
    for (size_t i = 0; i < n; i++) {
        texts[i] = text_or_die(fixtures, files[i], &lens[i]);
        reference[i] = NULL;
        st = appstore_receipt_verifier_verify(v, texts[i], lens[i], &reference[i], NULL);
        capi_check(&T, st == APPSTORE_OK, files[i], "single-threaded reference");
    }
    pthread_t tid[64];
    thread_job jobs[64];
    if (nthreads > 64) nthreads = 64;
    for (int t = 0; t < nthreads; t++) {
        jobs[t] = (thread_job){v, texts, lens, reference, n, iterations, 0};
        pthread_create(&tid[t], NULL, worker, &jobs[t]);
    }
    long mismatches = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(tid[t], NULL);
        mismatches += jobs[t].mismatches;
    }
    capi_check(&T, mismatches == 0, "threads", "%ld results differ from the single-threaded ones", mismatches);
    printf("threads: %d x %d iterations x %zu receipts on one verifier, %ld mismatches\n", nthreads, iterations, n,
           mismatches);
    for (size_t i = 0; i < n; i++) {
        free(texts[i]);
        appstore_string_free(reference[i]);
    }
    appstore_receipt_verifier_free(v);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RECEIPT_FIXTURES_DIR CONFORMANCE_DIR [--threads N --iterations M]\n", argv[0]);
        return 2;
    }
    int nthreads = 4, iterations = 25;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0) nthreads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--iterations") == 0) iterations = atoi(argv[i + 1]);
    }
    printf("libappstoreserver %s\n", appstore_version());
    own_fixtures(argv[1]);
    char *manifest = capi_join(argv[2], "manifest.json");
    struct stat sb;
    if (stat(manifest, &sb) == 0) {
        real_receipts(argv[2]);
        real_tampering(argv[2]);
    } else printf("receipts: SKIPPED the real receipts — %s not found; real Apple receipts NOT verified\n", argv[2]);
    free(manifest);
    arguments(argv[1]);
    if (nthreads > 0) threads(argv[1], nthreads, iterations);
    return capi_finish(&T);
}
