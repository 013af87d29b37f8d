/*
 * hostile_input TESTPKI_DIR SIGNING_KEYS_DIR [--no-small-stacks]
 *
 * Hostile input is refused cheaply and never takes the host down (issue: reject forged input cheaply):
 *  1. sizes before reading: inputs longer than the documented limits are passed in memory that cannot be read
 *     (PROT_NONE pages), so a library that touched or copied them would crash; they must fail with
 *     input_too_large / INVALID_ARGUMENT instead (JWS above max_jws_bytes, receipts above 16 MiB, keys and request
 *     JSON above 1 MiB);
 *  2. small stacks: every call below runs on a thread with a 64 KiB stack (musl's default is 128 KiB), with valid
 *     input (first use of the library included) and with deeply nested JSON and BER; each case in a forked child,
 *     so a stack overflow is reported as that case's failure. --no-small-stacks (sanitizer builds) runs the same
 *     calls on the process's own stack.
 * Closing line: "hostile: N passed, M failed".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "capi_util.h"

static capi_tally T = {"hostile", 0, 0};

static const char *pki_dir, *keys_dir;

/* ---- 1. sizes before reading ----------------------------------------------------------------------------------- */

/* `len` bytes of address space that cannot be read or written: any access is SIGSEGV. */
static void *unreadable(size_t len) {
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* errp is read here, after the call that filled it (a plain `err` argument would be read unsequenced). */
static void expect(const char *what, appstore_status st, appstore_error **errp, appstore_status want_status,
                   appstore_reason want_reason) {
    appstore_error *err = *errp;
    *errp = NULL;
    capi_check(&T, st == want_status && appstore_error_reason(err) == want_reason, what, "%s / %s: %s",
               appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
    appstore_error_free(err);
}

static appstore_verifier *make_verifier(appstore_environment env, size_t max_jws) {
    size_t root_len = 0;
    char *path = capi_join(pki_dir, "root.der");
    unsigned char *root = capi_read_file(path, &root_len);
    free(path);
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    appstore_verifier_options_new(&o, NULL);
    if (root) appstore_verifier_options_add_root(o, root, root_len, NULL);
    appstore_verifier_options_set_bundle_id(o, "com.example.testpki", NULL);
    appstore_verifier_options_set_environment(o, env, NULL);
    if (max_jws) appstore_verifier_options_set_max_jws_bytes(o, max_jws, NULL);
    appstore_verifier_new(o, &v, NULL);
    appstore_verifier_options_free(o);
    free(root);
    return v;
}

static appstore_signing_key *make_key(void) {
    size_t pem_len = 0;
    char *path = capi_join(keys_dir, "p256.p8");
    unsigned char *pem = capi_read_file(path, &pem_len);
    free(path);
    appstore_signing_key *k = NULL;
    if (pem) appstore_signing_key_new((const char *)pem, pem_len, "KEYID12345", "issuer-1", "com.example.testpki", &k, NULL);
    free(pem);
    return k;
}

static void sizes(void *ctx) {
    (void)ctx;
    size_t big = (size_t)17 << 20; /* above every limit below */
    char *p = unreadable(big);
    if (!capi_check(&T, p != NULL, "mmap", "cannot reserve %zu bytes", big)) return;
    appstore_verifier *v = make_verifier(APPSTORE_ENVIRONMENT_SANDBOX, 0);
    appstore_error *err = NULL;
    char *json = NULL;
    capi_verify_fn fns[] = {appstore_verifier_verify_notification, appstore_verifier_verify_transaction,
                            appstore_verifier_verify_renewal_info, appstore_verifier_verify_app_transaction,
                            appstore_verifier_verify_realtime_request, appstore_verifier_verify_notification_deep};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        err = NULL;
        appstore_status st = fns[i](v, p, ((size_t)1 << 20) + 1, &json, &err);
        expect("JWS of 1 MiB + 1 (default limit), unread", st, &err, APPSTORE_INVALID_JWT_FORMAT, APPSTORE_REASON_INPUT_TOO_LARGE);
    }
    appstore_verifier *small = make_verifier(APPSTORE_ENVIRONMENT_SANDBOX, 100);
    err = NULL;
    expect("JWS of 101 bytes with max_jws_bytes 100, unread",
           appstore_verifier_verify_transaction(small, p, 101, &json, &err), &err, APPSTORE_INVALID_JWT_FORMAT,
           APPSTORE_REASON_INPUT_TOO_LARGE);
    err = NULL;
    char *id = NULL;
    expect("app receipt of 16 MiB + 1, unread",
           appstore_receipt_extract_transaction_id(p, ((size_t)16 << 20) + 1, &id, &err), &err, APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_INPUT_TOO_LARGE);
    err = NULL;
    expect("receipt ids of 16 MiB + 1, unread",
           appstore_receipt_extract_transaction_ids(p, ((size_t)16 << 20) + 1, &json, &err), &err, APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_INPUT_TOO_LARGE);
    err = NULL;
    expect("transaction receipt of 16 MiB + 1, unread",
           appstore_transaction_receipt_extract_transaction_id(p, ((size_t)16 << 20) + 1, &id, &err), &err,
           APPSTORE_INVALID_RECEIPT, APPSTORE_REASON_INPUT_TOO_LARGE);
    const uint8_t *roots[1] = {NULL};
    size_t lens[1] = {0};
    size_t root_len = 0;
    char *path = capi_join(pki_dir, "root.der");
    unsigned char *root = capi_read_file(path, &root_len);
    free(path);
    roots[0] = root;
    lens[0] = root_len;
    appstore_receipt_verifier *rv = NULL;
    appstore_receipt_verifier_new(roots, lens, 1, NULL, &rv, NULL);
    err = NULL;
    expect("receipt to verify of 16 MiB + 1, unread",
           appstore_receipt_verifier_verify(rv, p, ((size_t)16 << 20) + 1, &json, &err), &err, APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_INPUT_TOO_LARGE);
    appstore_receipt_verifier_free(rv);
    free(root);
    err = NULL;
    appstore_signing_key *k = NULL;
    expect("key PEM of 1 MiB + 1, unread",
           appstore_signing_key_new(p, ((size_t)1 << 20) + 1, "K", "I", "B", &k, &err), &err, APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT);
    appstore_signing_key *key = make_key();
    err = NULL;
    char *jws = NULL;
    expect("Advanced Commerce request JSON of 1 MiB + 1, unread",
           appstore_signing_key_create_advanced_commerce_in_app(key, p, ((size_t)1 << 20) + 1, NULL, &jws, &err), &err,
           APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT);
    appstore_signing_key_free(key);
    appstore_verifier_free(small);
    appstore_verifier_free(v);
    munmap(p, big);
}

/* ---- 2. small stacks ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *what;
    void (*fn)(void);
} stack_case;

static void *thread_main(void *arg) {
    ((stack_case *)arg)->fn();
    return NULL;
}

/* Runs fn on a thread with a 64 KiB stack (guard page below it) and waits for it. */
static void on_small_stack(void *ctx) {
    stack_case *c = ctx;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &a, thread_main, c);
    pthread_attr_destroy(&a);
    if (capi_check(&T, rc == 0, c->what, "pthread_create: %d", rc)) pthread_join(t, NULL);
}

/* Sanitizer builds: the same calls on the process's own stack. */
static void on_own_stack(void *ctx) {
    ((stack_case *)ctx)->fn();
}

/* `depth` opening brackets, `depth` closing ones, inside `prefix` ... `suffix`. */
static char *nested(const char *prefix, const char *open, const char *close, size_t depth, const char *suffix) {
    size_t n = strlen(prefix) + depth * (strlen(open) + strlen(close)) + strlen(suffix) + 1;
    char *s = malloc(n), *q = s;
    q += sprintf(q, "%s", prefix);
    for (size_t i = 0; i < depth; i++) q += sprintf(q, "%s", open);
    for (size_t i = 0; i < depth; i++) q += sprintf(q, "%s", close);
    sprintf(q, "%s", suffix);
    return s;
}

static char *read_jws(const char *name, size_t *len) {
    char *path = capi_join(pki_dir, name);
    char *s = capi_read_trimmed(path, len);
    free(path);
    return s;
}

static void valid_calls(void) {
    appstore_verifier *v = make_verifier(APPSTORE_ENVIRONMENT_SANDBOX, 0);
    size_t len = 0;
    char *tx = read_jws("jws/tx-valid.jws", &len);
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_verify_transaction(v, tx, len, &json, &err);
    capi_check(&T, st == APPSTORE_OK, "valid transaction on a 64 KiB stack", "%s: %s", appstore_status_name(st),
               appstore_error_message(err));
    appstore_string_free(json);
    appstore_error_free(err);
    free(tx);
    char *n = read_jws("jws/notif-valid-did-renew.jws", &len);
    err = NULL;
    json = NULL;
    st = appstore_verifier_verify_notification_deep(v, n, len, &json, &err);
    capi_check(&T, st == APPSTORE_OK, "valid deep notification on a 64 KiB stack", "%s: %s", appstore_status_name(st),
               appstore_error_message(err));
    appstore_string_free(json);
    appstore_error_free(err);
    free(n);
    appstore_verifier_free(v);
    appstore_signing_key *key = make_key();
    char *token = NULL;
    st = appstore_signing_key_create_api_token(key, 0, 0, &token, NULL);
    capi_check(&T, st == APPSTORE_OK, "bearer token on a 64 KiB stack", "%s", appstore_status_name(st));
    appstore_string_free(token);
    appstore_signing_key_free(key);
}

/* An unsigned (LocalTesting) JWS whose payload nests 100,000 arrays: the signature is not checked there, so the JSON
 * parser meets the nesting; it must refuse it, not recurse. */
static void deep_payload(void) {
    appstore_verifier *v = make_verifier(APPSTORE_ENVIRONMENT_LOCAL_TESTING, 0);
    char *payload = nested("{\"transactionId\":\"1\",\"x\":", "[", "]", 100000, "}");
    char *b64 = capi_base64_encode((const unsigned char *)payload, strlen(payload));
    for (char *q = b64; *q; q++) *q = *q == '+' ? '-' : *q == '/' ? '_' : *q; /* base64url */
    char *eq = strchr(b64, '=');
    if (eq) *eq = 0;
    size_t n = strlen(b64) + 64;
    char *jws = malloc(n);
    snprintf(jws, n, "eyJhbGciOiJFUzI1NiJ9.%s.AA", b64); /* {"alg":"ES256"} */
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_verify_transaction(v, jws, strlen(jws), NULL, &err);
    expect("payload nested 100,000 deep on a 64 KiB stack", st, &err, APPSTORE_INVALID_JWT_FORMAT, APPSTORE_REASON_MALFORMED);
    free(jws);
    free(b64);
    free(payload);
    appstore_verifier_free(v);
}

static void deep_request_json(void) {
    appstore_signing_key *key = make_key();
    char *json = nested("{\"operation\":\"REACTIVATE_SUBSCRIPTION\",\"x\":", "{\"a\":", "}", 100000, "}");
    char *jws = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_create_advanced_commerce_in_app(key, json, strlen(json), NULL, &jws, &err);
    expect("Advanced Commerce JSON nested 100,000 deep on a 64 KiB stack", st, &err, APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_ARGUMENT);
    free(json);
    appstore_api_client *client = NULL;
    appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, NULL, &client, NULL);
    char *params = nested("{\"transactionId\":\"1\",\"x\":", "[", "]", 100000, "}");
    appstore_api_request *req = NULL;
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, params, &req, &err);
    expect("params_json nested 100,000 deep on a 64 KiB stack", st, &err, APPSTORE_INVALID_ARGUMENT,
           APPSTORE_REASON_INVALID_PARAMETERS);
    free(params);
    appstore_api_client_free(client);
    appstore_signing_key_free(key);
}

/* BER: 100,000 nested indefinite-length SEQUENCEs, then the same nested definite ones. */
static void deep_receipt(void) {
    size_t depth = 100000;
    unsigned char *der = malloc(depth * 4);
    for (size_t i = 0; i < depth; i++) der[2 * i] = 0x30, der[2 * i + 1] = 0x80;
    memset(der + 2 * depth, 0, 2 * depth);
    char *b64 = capi_base64_encode(der, depth * 4);
    char *id = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_receipt_extract_transaction_id(b64, strlen(b64), &id, &err);
    expect("receipt BER nested 100,000 deep on a 64 KiB stack", st, &err, APPSTORE_INVALID_RECEIPT,
           APPSTORE_REASON_RECEIPT_MALFORMED);
    free(b64);
    free(der);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--no-small-stacks") != 0)) {
        fprintf(stderr, "usage: %s TESTPKI_DIR SIGNING_KEYS_DIR [--no-small-stacks]\n", argv[0]);
        return 2;
    }
    int small_stacks = argc == 3;  /* off in sanitizer builds: their instrumentation needs several times the stack */
    pki_dir = argv[1];
    keys_dir = argv[2];
    printf("libappstoreserver %s\n", appstore_version());
    capi_run_forked(&T, "inputs over the limits are refused unread", sizes, NULL);
    stack_case cases[] = {{"valid calls, first use of the library, on a 64 KiB stack", valid_calls},
                          {"deep JWS payload on a 64 KiB stack", deep_payload},
                          {"deep request JSON and params_json on a 64 KiB stack", deep_request_json},
                          {"deep receipt BER on a 64 KiB stack", deep_receipt}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        capi_run_forked(&T, cases[i].what, small_stacks ? on_small_stack : on_own_stack, &cases[i]);
    return capi_finish(&T);
}
