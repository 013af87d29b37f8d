/* See plain_http.h. */
#define _POSIX_C_SOURCE 200809L
#include "plain_http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 when fd is ready for `events` before the deadline, 0 on timeout, -1 on error. */
static int wait_for(int fd, short events, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        return r < 0 ? -1 : r;
    }
}

/* A non-blocking socket connected to host:port before the deadline, or -1 (*result says why). */
static int connect_to(const char *host, const char *port, long long deadline, int32_t *result) {
    struct addrinfo hints = {0}, *addrs = NULL;
    hints.ai_socktype = SOCK_STREAM;
    *result = APPSTORE_TRANSPORT_RESULT_UNREACHABLE;
    if (getaddrinfo(host, port, &hints, &addrs) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = addrs; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int err = 0;
        socklen_t len = sizeof err;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        int ready = errno == EINPROGRESS ? wait_for(fd, POLLOUT, deadline) : -1;
        if (ready == 0) *result = APPSTORE_TRANSPORT_RESULT_TIMEOUT;
        if (ready <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addrs);
    return fd;
}

static int32_t send_all(int fd, const char *data, size_t len, long long deadline) {
    while (len > 0) {
        int ready = wait_for(fd, POLLOUT, deadline);
        if (ready <= 0) return ready == 0 ? APPSTORE_TRANSPORT_RESULT_TIMEOUT : APPSTORE_TRANSPORT_RESULT_FAILED;
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return APPSTORE_TRANSPORT_RESULT_FAILED;
        data += n;
        len -= (size_t)n;
    }
    return APPSTORE_TRANSPORT_RESULT_OK;
}

int32_t plain_http_send(const appstore_api_request *request, plain_http_answer *answer, const char **why) {
    memset(answer, 0, sizeof *answer);
    long long deadline = now_ms() + appstore_api_request_timeout_ms(request);
    char host[256], port[8] = "80";
    const char *url = appstore_api_request_url(request), *path;
    size_t host_len;
    if (strncmp(url, "http://", 7) != 0 || (host_len = strcspn(url + 7, ":/")) == 0 || host_len >= sizeof host) {
        *why = "plain_http: only http://host[:port]/path URLs (use a TLS-capable client for https://)";
        return APPSTORE_TRANSPORT_RESULT_FAILED;
    }
    memcpy(host, url + 7, host_len);
    host[host_len] = 0;
    path = url + 7 + host_len;
    if (*path == ':') {
        size_t port_len = strcspn(path + 1, "/");
        if (port_len == 0 || port_len >= sizeof port) { *why = "plain_http: bad port"; return APPSTORE_TRANSPORT_RESULT_FAILED; }
        memcpy(port, path + 1, port_len);
        port[port_len] = 0;
        path += 1 + port_len;
    }
    int32_t result;
    int fd = connect_to(host, port, deadline, &result);
    if (fd < 0) { *why = "plain_http: could not connect"; return result; }

    size_t body_len = 0;
    const uint8_t *body = appstore_api_request_body(request, &body_len);
    char head[1024];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %zu\r\n",
                     appstore_api_request_method(request), *path ? path : "/", host, body_len);
    const char *headers = appstore_api_request_headers(request);
    result = n > 0 && (size_t)n < sizeof head ? send_all(fd, head, (size_t)n, deadline) : APPSTORE_TRANSPORT_RESULT_FAILED;
    if (result == APPSTORE_TRANSPORT_RESULT_OK) result = send_all(fd, headers, strlen(headers), deadline);
    if (result == APPSTORE_TRANSPORT_RESULT_OK) result = send_all(fd, "\r\n", 2, deadline);
    if (result == APPSTORE_TRANSPORT_RESULT_OK) result = send_all(fd, (const char *)body, body_len, deadline);

    /* Read to the end (Connection: close), at most the body limit plus 64 KiB of status line and headers. */
    size_t cap = 65536, len = 0, max = APPSTORE_LIMIT_API_RESPONSE_BYTES + 65536;
    char *raw = malloc(cap + 1);
    *why = "plain_http: failed";
    while (result == APPSTORE_TRANSPORT_RESULT_OK && raw) {
        int ready = wait_for(fd, POLLIN, deadline);
        if (ready <= 0) { result = ready == 0 ? APPSTORE_TRANSPORT_RESULT_TIMEOUT : APPSTORE_TRANSPORT_RESULT_FAILED; break; }
        if (len == cap) {
            size_t larger = cap * 2 < max ? cap * 2 : max;
            char *grown = cap < max ? realloc(raw, larger + 1) : NULL;
            if (!grown) {
                *why = cap < max ? "plain_http: out of memory" : "plain_http: the answer is larger than the library accepts";
                result = APPSTORE_TRANSPORT_RESULT_FAILED;
                break;
            }
            raw = grown;
            cap = larger;
        }
        ssize_t got = recv(fd, raw + len, cap - len, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got < 0) result = APPSTORE_TRANSPORT_RESULT_FAILED;
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd);
    char *end = raw && result == APPSTORE_TRANSPORT_RESULT_OK ? (raw[len] = 0, strstr(raw, "\r\n\r\n")) : NULL;
    char *eol = end ? strstr(raw, "\r\n") : NULL;
    if (!end || sscanf(raw, "HTTP/1.%*d %d", &answer->status) != 1) {
        free(raw);
        if (result != APPSTORE_TRANSPORT_RESULT_FAILED)
            *why = result == APPSTORE_TRANSPORT_RESULT_TIMEOUT ? "plain_http: timed out" : "plain_http: not an HTTP answer";
        return result == APPSTORE_TRANSPORT_RESULT_OK ? APPSTORE_TRANSPORT_RESULT_FAILED : result;
    }
    answer->raw = raw;
    answer->headers = eol + 2;
    answer->headers_len = (size_t)(end + 2 - answer->headers);
    answer->body = end + 4;
    answer->body_len = len - (size_t)(answer->body - raw);
    for (const char *h = answer->headers; h < end; h = strstr(h, "\r\n") + 2) {
        if (strncasecmp(h, "Transfer-Encoding:", 18) == 0) {  /* chunks: not decoded by this minimal client */
            plain_http_answer_free(answer);
            *why = "plain_http: chunked answers are not supported";
            return APPSTORE_TRANSPORT_RESULT_FAILED;
        }
    }
    if (answer->body_len > APPSTORE_LIMIT_API_RESPONSE_BYTES) {
        plain_http_answer_free(answer);
        *why = "plain_http: the answer is larger than the library accepts";
        return APPSTORE_TRANSPORT_RESULT_FAILED;
    }
    return APPSTORE_TRANSPORT_RESULT_OK;
}

void plain_http_answer_free(plain_http_answer *answer) {
    free(answer->raw);
    memset(answer, 0, sizeof *answer);
}
