/* One HTTP exchange for the C examples: a minimal blocking HTTP/1.1 client over a plain TCP socket, for http:// URLs
 * only (a local test server, e.g. Tests/support/mock_app_store.py). Apple's API is https://: in your program, send
 * the request with your HTTP client (libcurl, ...) instead; the library needs only what comes back.
 * The rules every transport keeps are kept here too: the request's timeout is a deadline for the whole exchange,
 * reading stops at APPSTORE_LIMIT_API_RESPONSE_BYTES, and redirects are never followed. */
#ifndef APPSTORE_EXAMPLE_PLAIN_HTTP_H
#define APPSTORE_EXAMPLE_PLAIN_HTTP_H
#include <appstoreserver.h>

typedef struct plain_http_answer {
    int status;
    char *headers;       /* "Name: value\r\n" lines, as appstore_api_call_receive takes them */
    size_t headers_len;
    char *body;
    size_t body_len;
    char *raw;           /* the whole answer; headers and body point into it */
} plain_http_answer;

/* Sends `request` (from appstore_api_call_request) and reads the answer. Returns APPSTORE_TRANSPORT_RESULT_OK, or
 * _TIMEOUT / _UNREACHABLE / _FAILED with *why saying what happened. */
int32_t plain_http_send(const appstore_api_request *request, plain_http_answer *answer, const char **why);
void plain_http_answer_free(plain_http_answer *answer);
#endif
