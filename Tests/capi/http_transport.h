/* A minimal blocking HTTP/1.1 transport over POSIX sockets, for tests: http:// URLs only (loopback test servers),
 * one request per connection (Connection: close), Content-Length or read-to-close bodies, timeout via poll().
 * Implements appstore_transport_fn; user_data may be NULL or point to an http_transport_stats. */
#ifndef APPSTORE_TEST_HTTP_TRANSPORT_H
#define APPSTORE_TEST_HTTP_TRANSPORT_H
#include <appstoreserver.h>

typedef struct http_transport_stats {
    int requests; /* incremented atomically per call */
} http_transport_stats;

int32_t http_transport_send(void *user_data, const char *method, const char *url, const char *headers,
                            size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                            appstore_http_response *response);

/* The same exchange for a host doing the HTTP itself (sans-I/O API tests): the answer's status, its headers as
 * "Name: value\r\n" lines and its body, malloc'd (free with http_result_free). Returns APPSTORE_TRANSPORT_*. */
typedef struct http_result {
    int status;
    char *headers;
    size_t headers_len;
    unsigned char *body;
    size_t body_len;
} http_result;

int32_t http_fetch(const char *method, const char *url, const char *headers, size_t headers_len, const uint8_t *body,
                   size_t body_len, uint32_t timeout_ms, http_result *out);
void http_result_free(http_result *result);
#endif
