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
#endif
