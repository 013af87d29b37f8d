/*
 * refund_history: every page of a customer's refund history through the App Store Server API (Get Refund History),
 * with retries and the Sandbox fallback that App Review's purchases need, driven by the library's call driver.
 *
 *   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" refund_history \
 *       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app 2000000000000001
 *
 * --environment Sandbox|Production (default Production); --base-url points the client at another server (a test
 * server); without it, Apple's. The library builds every request (a fresh bearer token each time), decides about
 * retries, waits, the fallback and the next page; this program only sends bytes (plain_http.c) and waits.
 */
#define _POSIX_C_SOURCE 200809L
#include <appstoreserver.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plain_http.h"

static int usage(FILE *to) {
    fprintf(to, "usage: refund_history TRANSACTION_ID --key-id ID --issuer-id ID --bundle-id ID "
                "[--environment Sandbox|Production] [--base-url URL]\n");
    return to == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"key-id", required_argument, 0, 'k'}, {"issuer-id", required_argument, 0, 'i'},
        {"bundle-id", required_argument, 0, 'b'}, {"environment", required_argument, 0, 'e'},
        {"base-url", required_argument, 0, 'u'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *key_id = NULL, *issuer_id = NULL, *bundle_id = NULL, *base_url = NULL, *env_name = "Production";
    for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
        if (c == 'k') key_id = optarg;
        else if (c == 'i') issuer_id = optarg;
        else if (c == 'b') bundle_id = optarg;
        else if (c == 'e') env_name = optarg;
        else if (c == 'u') base_url = optarg;
        else return usage(c == 'h' ? stdout : stderr);
    }
    const char *pem = getenv("APPSTORE_PRIVATE_KEY"); /* the .p8 text; never put a key on a command line */
    if (optind != argc - 1 || !key_id || !issuer_id || !bundle_id || !pem) return usage(stderr);
    int production = strcmp(env_name, "Production") == 0;
    if (!production && strcmp(env_name, "Sandbox") != 0) return usage(stderr);

    appstore_signing_key *key = NULL;
    appstore_api_client_options *options = NULL;
    appstore_api_client *client = NULL;
    appstore_api_call *call = NULL;
    appstore_error *err = NULL;
    int rc = 1;
    /* The parameters as JSON (jansson quotes the id): {"anyTransactionId": "..."}. */
    json_t *request_params = json_pack("{s:s}", "anyTransactionId", argv[optind]);
    char *params = json_dumps(request_params, JSON_COMPACT);
    json_decref(request_params);
    if (appstore_signing_key_new(pem, strlen(pem), key_id, issuer_id, bundle_id, &key, &err) != APPSTORE_OK ||
        appstore_api_client_options_new(&options, &err) != APPSTORE_OK ||
        appstore_api_client_options_set_retry(options, 3, 500, 30000, &err) != APPSTORE_OK || /* 429, 5xx, Retry-After */
        appstore_api_client_options_set_base_url(options, base_url, &err) != APPSTORE_OK ||
        (production && appstore_api_client_options_set_sandbox_fallback(options, 1, NULL, &err) != APPSTORE_OK) ||
        appstore_api_client_new(key, production ? APPSTORE_ENVIRONMENT_PRODUCTION : APPSTORE_ENVIRONMENT_SANDBOX, options,
                                &client, &err) != APPSTORE_OK ||
        appstore_api_call_new(client, APPSTORE_ENDPOINT_GET_REFUND_HISTORY, params, &call, &err) != APPSTORE_OK)
        goto done;

    for (int page = 1;;) {
        appstore_api_action action;
        int64_t wait_ms = 0;
        if (appstore_api_call_next(call, 0, &action, &wait_ms, &err) != APPSTORE_OK) goto done; /* the call failed */
        if (action == APPSTORE_API_ACTION_SEND) {
            appstore_api_request *request = NULL;
            plain_http_answer answer;
            const char *why = NULL;
            if (appstore_api_call_request(call, &request, &err) != APPSTORE_OK) goto done;
            int32_t sent = plain_http_send(request, &answer, &why);
            appstore_status st = sent == APPSTORE_TRANSPORT_RESULT_OK
                ? appstore_api_call_receive(call, answer.status, answer.headers, answer.headers_len,
                                            (const uint8_t *)answer.body, answer.body_len, 0, &err)
                : appstore_api_call_receive_failure(call, sent, why, &err);
            plain_http_answer_free(&answer);
            appstore_api_request_free(request);
            if (st != APPSTORE_OK) goto done;
        } else if (action == APPSTORE_API_ACTION_WAIT) { /* a retry's backoff, or Retry-After */
            struct timespec ts = {(time_t)(wait_ms / 1000), (long)(wait_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else { /* APPSTORE_API_ACTION_DONE: one page */
            char *json = NULL;
            if (appstore_api_call_answer(call, &json, NULL, NULL, &err) != APPSTORE_OK) goto done;
            json_t *doc = json_loads(json, 0, NULL); /* RefundHistoryResponse, as Apple sent it */
            printf("page %d: %zu refunded transactions, more: %s\n", page++,
                   json_array_size(json_object_get(doc, "signedTransactions")),
                   json_is_true(json_object_get(doc, "hasMore")) ? "true" : "false");
            json_decref(doc);
            appstore_string_free(json);
            if (!appstore_api_call_has_next_page(call)) break;
        }
    }
    rc = 0;
done:
    if (rc != 0 && err) /* HTTP status, Apple's error code and message, Retry-After: all in the message */
        fprintf(stderr, "failed: %s (%s): %s\n", appstore_status_name(appstore_error_status(err)),
                appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
    appstore_error_free(err);
    appstore_api_call_free(call);
    appstore_api_client_free(client);
    appstore_api_client_options_free(options);
    appstore_signing_key_free(key);
    free(params);
    return rc;
}
