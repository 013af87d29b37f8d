/*
 * hostile_server_test HOSTILE_HTTP_PY KEYDIR
 *
 * The API client through the C ABI against Tests/support/hostile_http.py (started and stopped here), with the test
 * transport (http_transport.c, which enforces the exchange's timeout as a deadline and the body limit the library
 * tells it through appstore_http_response_body_limit):
 *   - every redirect (301, 302, 303, 307, 308) is an APPSTORE_API_ERROR naming the status and the Location, and the
 *     redirect's target (the catcher) received nothing;
 *   - a body dripped one byte at a time fails with TRANSPORT_TIMEOUT at the deadline, not after the whole body;
 *   - a 64 MiB body fails (TRANSPORT_ERROR) without more than the limit buffered; the limit is the header's;
 *   - Apple's error message with escape sequences and 64 KiB of text arrives cleaned and capped;
 *   - a server that answers nothing, and a callback that returns OK without setting a status, fail the call.
 * Closing line: "hostile_server: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"
#include "http_transport.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static capi_tally T = {"hostile_server", 0, 0};
static int main_port, catcher_port;
static appstore_signing_key *key;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t start_server(const char *script, int *stdin_out) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp("python3", "python3", script, "--lifetime", "600", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char line[64] = {0};
    size_t n = 0;
    while (n + 1 < sizeof line && read(out[0], line + n, 1) == 1 && line[n] != '\n') n++;
    close(out[0]);
    *stdin_out = in[1];
    return sscanf(line, "PORT %d %d", &main_port, &catcher_port) == 2 ? pid : -1;
}

typedef struct {
    appstore_status status;
    appstore_reason reason;
    int http;
    char message[4096];
    char api_message[4096];
    char content_type[128]; /* the answer's Content-Type, through appstore_error_header_* */
    size_t header_count;
    long long ms;
} outcome;

/* One getTransactionInfo call against behaviour `b` through transport fn. */
static outcome call(const char *b, appstore_transport_fn fn, uint32_t timeout_ms) {
    outcome o = {0};
    char base[128];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/%s", main_port, b);
    appstore_transport *tr = NULL;
    appstore_api_client_options *opts = NULL;
    appstore_api_client *client = NULL;
    appstore_transport_new(fn, NULL, &tr, NULL);
    appstore_api_client_options_new(&opts, NULL);
    appstore_api_client_options_set_transport(opts, tr, NULL);
    appstore_api_client_options_set_timeout_ms(opts, timeout_ms, NULL);
    appstore_api_client_options_set_base_url(opts, base, NULL);
    appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, opts, &client, NULL);
    char *json = NULL;
    appstore_error *err = NULL;
    long long t0 = now_ms();
    o.status = appstore_api_client_call(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &json, &err);
    o.ms = now_ms() - t0;
    o.reason = appstore_error_reason(err);
    o.http = appstore_error_http_status(err);
    snprintf(o.message, sizeof o.message, "%s", err ? appstore_error_message(err) : "");
    const char *api = err ? appstore_error_api_error_message(err) : NULL;
    snprintf(o.api_message, sizeof o.api_message, "%s", api ? api : "");
    o.header_count = appstore_error_header_count(err);
    for (size_t i = 0; i < o.header_count; i++)
        if (strcasecmp(appstore_error_header_name(err, i), "content-type") == 0)
            snprintf(o.content_type, sizeof o.content_type, "%s", appstore_error_header_value(err, i));
    if (appstore_error_header_name(err, o.header_count) || appstore_error_header_value(err, o.header_count)) o.header_count = 0;
    appstore_string_free(json);
    appstore_error_free(err);
    appstore_api_client_free(client);
    appstore_api_client_options_free(opts);
    appstore_transport_free(tr);
    return o;
}

static int32_t no_status(void *user_data, const char *method, const char *url, const char *headers, size_t headers_len,
                         const uint8_t *body, size_t body_len, uint32_t timeout_ms, appstore_http_response *response) {
    (void)user_data, (void)method, (void)url, (void)headers, (void)headers_len, (void)body, (void)body_len, (void)timeout_ms;
    appstore_http_response_append_body(response, (const uint8_t *)"{}", 2, NULL);
    return APPSTORE_TRANSPORT_RESULT_OK;
}

static size_t seen_limit;
static int32_t limit_probe(void *user_data, const char *method, const char *url, const char *headers, size_t headers_len,
                           const uint8_t *body, size_t body_len, uint32_t timeout_ms, appstore_http_response *response) {
    (void)user_data, (void)method, (void)url, (void)headers, (void)headers_len, (void)body, (void)body_len, (void)timeout_ms;
    seen_limit = appstore_http_response_body_limit(response);
    appstore_http_response_set_status(response, 200, NULL);
    /* One byte more than the limit, in two appends: the second is refused and the exchange fails. */
    static uint8_t chunk[1 << 20];
    memset(chunk, ' ', sizeof chunk);
    for (size_t sent = 0; sent < seen_limit; sent += sizeof chunk)
        if (appstore_http_response_append_body(response, chunk, sizeof chunk, NULL) != APPSTORE_OK) return 0;
    appstore_http_response_append_body(response, chunk, 1, NULL);
    return APPSTORE_TRANSPORT_RESULT_OK;
}

static int no_control(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hostile_server_test HOSTILE_HTTP_PY KEYDIR\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    size_t pem_len = 0;
    char *path = capi_join(argv[2], "p256.p8");
    unsigned char *pem = capi_read_file(path, &pem_len);
    free(path);
    if (!pem || appstore_signing_key_new((const char *)pem, pem_len, "KEY", "ISSUER", "com.example", &key, NULL) != APPSTORE_OK) {
        capi_check(&T, 0, "signing key", "cannot load %s/p256.p8", argv[2]);
        return capi_finish(&T);
    }
    int server_stdin = -1;
    pid_t server = start_server(argv[1], &server_stdin);
    if (!capi_check(&T, server > 0, "hostile server", "did not start")) return capi_finish(&T);

    static const char *redirects[] = {"redirect-301", "redirect-302", "redirect-303", "redirect-307", "redirect-308"};
    for (size_t i = 0; i < 5; i++) {
        outcome o = call(redirects[i], http_transport_send, 5000);
        char location[64];
        snprintf(location, sizeof location, "127.0.0.1:%d/caught", catcher_port);
        capi_check(&T, o.status == APPSTORE_API_ERROR && o.http == atoi(redirects[i] + 9) && strstr(o.message, "redirect") &&
                           strstr(o.message, location),
                   redirects[i], "%s / %s http %d: %s", appstore_status_name(o.status), appstore_reason_name(o.reason),
                   o.http, o.message);
    }
    char caught_url[64];
    snprintf(caught_url, sizeof caught_url, "http://127.0.0.1:%d/caught", main_port);
    http_result r = {0};
    int32_t st = http_fetch("GET", caught_url, "", 0, NULL, 0, 5000, &r);
    capi_check(&T, st == APPSTORE_TRANSPORT_RESULT_OK && r.body && strstr((const char *)r.body, "\"count\": 0"),
               "no redirect was followed", "%s", r.body ? (const char *)r.body : "no answer");
    http_result_free(&r);

    /* The drips last 600 s: the reason shows the deadline fired, and 30 s (30x the timeout, >= 4x a loaded run) is far
     * below a client that waited for the drip. */
    outcome o = call("drip-200", http_transport_send, 1000);
    capi_check(&T, o.status == APPSTORE_TRANSPORT_ERROR && o.reason == APPSTORE_REASON_TRANSPORT_TIMEOUT && o.ms < 30000,
               "a dripped body times out at the deadline", "%s / %s after %lld ms", appstore_status_name(o.status),
               appstore_reason_name(o.reason), o.ms);
    o = call("dripall-200", http_transport_send, 1000);
    capi_check(&T, o.status == APPSTORE_TRANSPORT_ERROR && o.reason == APPSTORE_REASON_TRANSPORT_TIMEOUT && o.ms < 30000,
               "dripped headers time out at the deadline", "%s after %lld ms", appstore_status_name(o.status), o.ms);
    o = call("huge-64", http_transport_send, 20000);
    capi_check(&T, o.status == APPSTORE_TRANSPORT_ERROR, "a 64 MiB body fails", "%s / %s: %s", appstore_status_name(o.status),
               appstore_reason_name(o.reason), o.message);
    o = call("errmsg-64", http_transport_send, 5000);
    capi_check(&T, o.status == APPSTORE_API_ERROR && o.http == 400 && no_control(o.message) && no_control(o.api_message) &&
                       strlen(o.api_message) < 2048 && strstr(o.api_message, "more characters not shown"),
               "Apple's error message is cleaned and capped", "%zu bytes: %.120s", strlen(o.api_message), o.api_message);
    capi_check(&T, o.header_count >= 2 && strcmp(o.content_type, "application/json") == 0,
               "the error carries the answer's headers", "%zu headers, Content-Type '%s'", o.header_count, o.content_type);
    capi_check(&T, appstore_error_header_count(NULL) == 0 && !appstore_error_header_name(NULL, 0), "headers of NULL", NULL);
    o = call("nostatus", http_transport_send, 5000);
    capi_check(&T, o.status == APPSTORE_TRANSPORT_ERROR, "no answer at all fails", "%s", appstore_status_name(o.status));
    o = call("x", no_status, 5000);
    capi_check(&T, o.status == APPSTORE_TRANSPORT_ERROR && strstr(o.message, "without setting a status"),
               "a callback that sets no status fails the call (never taken as 200)", "%s: %s", appstore_status_name(o.status),
               o.message);
    o = call("x", limit_probe, 5000);
    capi_check(&T, seen_limit == APPSTORE_LIMIT_API_RESPONSE_BYTES && o.status == APPSTORE_TRANSPORT_ERROR &&
                       strstr(o.message, "larger than 16777216 bytes"),
               "API answers are limited to APPSTORE_LIMIT_API_RESPONSE_BYTES", "limit %zu, %s: %s", seen_limit,
               appstore_status_name(o.status), o.message);
    capi_check(&T, appstore_http_response_body_limit(NULL) == 0, "body limit of NULL is 0", NULL);

    close(server_stdin);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    appstore_signing_key_free(key);
    free(pem);
    return capi_finish(&T);
}
