/*
 * fork_test TESTPKI_DIR KEYDIR [FORKS]      (default 60 forks; KEYDIR: check_signatures.py keys)
 *
 * Services fork while other threads are inside the library (gunicorn, multiprocessing, a subprocess started by a
 * request handler). Three threads verify without pause through a verifier with the chain cache and one without it,
 * and reserve rate-limit slots of an API client, while the main thread forks FORKS times. Each child (with an alarm:
 * a deadlock is a failure too) verifies a valid transaction through both verifiers, creates a new verifier, reserves
 * a slot and verifies from a thread of its own, then exits 0 when every answer was right. A child that dies on a
 * signal (a lock held by a thread that does not exist in the child traps) or hangs fails its check.
 * Closing line: "fork: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static capi_tally T = {"fork", 0, 0};
static capi_case valid, untrusted;
static unsigned char *root;
static size_t root_len;
static const char *bundle;
static appstore_verifier *cached, *uncached;
static appstore_api_client *client;
static appstore_api_request *request;
static atomic_int stop;
static atomic_long busy_calls;

static appstore_verifier *make_verifier(int cache) {
    return capi_sandbox_verifier(root, root_len, bundle, cache ? -1 : 0);
}

/* 1 when `c` verifies with its expected status through v. */
static int verify_ok(appstore_verifier *v, const capi_case *c) {
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = c->fn(v, c->jws, c->jws_len, &json, &err);
    int ok = st == c->want_status;
    appstore_string_free(json);
    appstore_error_free(err);
    return ok;
}

/* One call's first step: the rate limiter's lock, and a token signed when the slot is free. */
static int reserve_ok(void) {
    appstore_api_call *call = NULL;
    appstore_api_action action = 0;
    appstore_error *err = NULL;
    appstore_status st = appstore_api_call_new(client, "getTransactionInfo", "{\"transactionId\":\"1\"}", &call, NULL);
    if (st == APPSTORE_OK) st = appstore_api_call_next(call, 0, &action, NULL, &err);
    appstore_error_free(err);
    appstore_api_call_free(call);
    return st == APPSTORE_OK || st == APPSTORE_RATE_LIMITED;
}

static void *busy(void *arg) {
    long k = (long)arg;
    while (!atomic_load(&stop)) {
        int ok = verify_ok(k % 2 ? cached : uncached, &valid) && verify_ok(cached, &untrusted) && reserve_ok();
        if (!ok) fprintf(stderr, "busy thread %ld: a wrong answer\n", k);
        atomic_fetch_add(&busy_calls, 1);
    }
    return NULL;
}

static void *child_thread(void *arg) {
    (void)arg;
    return (void *)(long)(verify_ok(cached, &valid) && verify_ok(uncached, &untrusted));
}

static int child(void) {
    alarm(20);
    int ok = verify_ok(cached, &valid) && verify_ok(uncached, &valid) && verify_ok(cached, &untrusted) && reserve_ok();
    appstore_verifier *fresh = make_verifier(1);
    ok = ok && fresh && verify_ok(fresh, &valid);
    appstore_verifier_free(fresh);
    pthread_t t;
    void *result = NULL;
    ok = ok && pthread_create(&t, NULL, child_thread, NULL) == 0 && pthread_join(t, &result) == 0 && result;
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fork_test TESTPKI_DIR KEYDIR [FORKS]\n");
        return 2;
    }
    int forks = argc > 3 ? atoi(argv[3]) : 60;
    char *path = capi_join(argv[1], "manifest.json");
    json_t *manifest = json_load_file(path, 0, NULL);
    free(path);
    if (!capi_check(&T, manifest != NULL, "manifest", "cannot load %s/manifest.json", argv[1])) return capi_finish(&T);
    bundle = json_string_value(json_object_get(manifest, "bundleId"));
    path = capi_join(argv[1], "root.der");
    root = capi_read_file(path, &root_len);
    free(path);
    if (capi_load_default_case(manifest, argv[1], "tx-valid", 0, &valid) != 0 ||
        capi_load_default_case(manifest, argv[1], "tx-untrusted-forged-chain", 0, &untrusted) != 0 || !root) {
        capi_check(&T, 0, "fixtures", "cases or root.der missing");
        return capi_finish(&T);
    }
    cached = make_verifier(1);
    uncached = make_verifier(0);
    /* An API client with the rate limit on: a call's first step takes the limiter's lock (nothing is ever sent). */
    unsigned char *pem = NULL;
    size_t pem_len = 0;
    path = capi_join(argv[2], "p256.p8");
    pem = capi_read_file(path, &pem_len);
    free(path);
    appstore_signing_key *key = NULL;
    appstore_api_client_options *o = NULL;
    appstore_api_client_options_new(&o, NULL);
    appstore_api_client_options_set_rate_limit(o, 1, 0, 100, NULL);
    if (pem) appstore_signing_key_new((const char *)pem, pem_len, "KEY", "ISSUER", "com.example", &key, NULL);
    if (key) appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, o, &client, NULL);
    if (client) appstore_api_client_build_request(client, "getTransactionInfo", "{\"transactionId\":\"1\"}", &request, NULL);
    appstore_api_client_options_free(o);
    if (!capi_check(&T, cached && uncached && client && request, "setup", "verifiers, client and request")) return capi_finish(&T);

    pthread_t threads[3];
    for (long k = 0; k < 3; k++) pthread_create(&threads[k], NULL, busy, (void *)k);
    while (atomic_load(&busy_calls) < 50) nanosleep(&(struct timespec){0, 1000000}, NULL);
    int crashed = 0, hung = 0, wrong = 0;
    for (int i = 0; i < forks; i++) {
        nanosleep(&(struct timespec){0, (long)(rand() % 3000) * 1000}, NULL); /* fork at a random moment */
        pid_t pid = fork();
        if (pid == 0) _exit(child());
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) hung++;
        else if (WIFSIGNALED(status)) crashed++;
        else if (WEXITSTATUS(status) != 0) wrong++;
        char what[64];
        snprintf(what, sizeof what, "child %d", i);
        capi_check(&T, WIFEXITED(status) && WEXITSTATUS(status) == 0, what, "%s",
                   WIFSIGNALED(status) ? (WTERMSIG(status) == SIGALRM ? "hung (deadlock)" : strsignal(WTERMSIG(status)))
                                       : "a wrong answer");
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < 3; k++) pthread_join(threads[k], NULL);
    printf("fork: %d children, %d crashed, %d hung, %d wrong; busy threads made %ld calls\n", forks, crashed, hung,
           wrong, atomic_load(&busy_calls));
    capi_check(&T, atomic_load(&busy_calls) > forks, "the threads were busy while forking", "%ld calls",
               atomic_load(&busy_calls));
    appstore_api_request_free(request);
    appstore_api_client_free(client);
    appstore_signing_key_free(key);
    appstore_verifier_free(cached);
    appstore_verifier_free(uncached);
    free(root);
    free(pem);
    json_decref(manifest);
    return capi_finish(&T);
}
