#define _POSIX_C_SOURCE 200809L
#include "http_transport.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int32_t fetch(const char *method, const char *url, const char *headers, size_t headers_len, const uint8_t *body,
                     size_t body_len, uint32_t timeout_ms, size_t limit, http_result *out);

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for `events` before the deadline: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        return r < 0 ? -1 : r;
    }
}

static int32_t send_all(int fd, const char *data, size_t len, long long deadline) {
    while (len > 0) {
        int w = wait_fd(fd, POLLOUT, deadline);
        if (w == 0) return APPSTORE_TRANSPORT_RESULT_TIMEOUT;
        if (w < 0) return APPSTORE_TRANSPORT_RESULT_FAILED;
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return APPSTORE_TRANSPORT_RESULT_FAILED;
        }
        data += n;
        len -= (size_t)n;
    }
    return APPSTORE_TRANSPORT_RESULT_OK;
}

int32_t http_transport_send(void *user_data, const char *method, const char *url, const char *headers,
                            size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                            appstore_http_response *response) {
    if (user_data) __atomic_fetch_add(&((http_transport_stats *)user_data)->requests, 1, __ATOMIC_SEQ_CST);
    http_result r;
    int32_t st = fetch(method, url, headers, headers_len, body, body_len, timeout_ms, appstore_http_response_body_limit(response), &r);
    if (st != APPSTORE_TRANSPORT_RESULT_OK) return st;
    char *line = r.headers;
    while (line && *line) {
        char *next = strstr(line, "\r\n");
        if (next) *next = 0;
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = 0;
            char *value = colon + 1;
            while (*value == ' ') value++;
            appstore_http_response_add_header(response, line, value, NULL);
        }
        line = next ? next + 2 : NULL;
    }
    appstore_http_response_set_status(response, r.status, NULL);
    appstore_http_response_append_body(response, r.body, r.body_len, NULL);
    http_result_free(&r);
    return APPSTORE_TRANSPORT_RESULT_OK;
}

void http_result_free(http_result *result) {
    if (!result) return;
    free(result->headers);
    free(result->body);
    result->headers = NULL;
    result->body = NULL;
}

int32_t http_fetch(const char *method, const char *url, const char *headers, size_t headers_len, const uint8_t *body,
                   size_t body_len, uint32_t timeout_ms, http_result *out) {
    return fetch(method, url, headers, headers_len, body, body_len, timeout_ms, APPSTORE_LIMIT_API_RESPONSE_BYTES, out);
}

/* Reads at most `limit` body bytes (+ 64 KiB for the head): a larger answer fails before more is buffered. */
static int32_t fetch(const char *method, const char *url, const char *headers, size_t headers_len, const uint8_t *body,
                     size_t body_len, uint32_t timeout_ms, size_t limit, http_result *out) {
    memset(out, 0, sizeof *out);
    long long deadline = now_ms() + (timeout_ms ? timeout_ms : 30000);
    char host[256], port[16] = "80";
    const char *path = "/";
    if (strncmp(url, "http://", 7) != 0) return APPSTORE_TRANSPORT_RESULT_FAILED;
    const char *h = url + 7, *end = h + strcspn(h, ":/");
    if ((size_t)(end - h) >= sizeof host) return APPSTORE_TRANSPORT_RESULT_FAILED;
    memcpy(host, h, (size_t)(end - h));
    host[end - h] = 0;
    if (*end == ':') {
        size_t plen = strcspn(end + 1, "/");
        if (plen == 0 || plen >= sizeof port) return APPSTORE_TRANSPORT_RESULT_FAILED;
        memcpy(port, end + 1, plen);
        port[plen] = 0;
        end += 1 + plen;
    }
    if (*end == '/') path = end;

    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) return APPSTORE_TRANSPORT_RESULT_UNREACHABLE;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) { freeaddrinfo(ai); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc != 0 && errno != EINPROGRESS) { close(fd); return APPSTORE_TRANSPORT_RESULT_UNREACHABLE; }
    int w = wait_fd(fd, POLLOUT, deadline);
    int soerr = 0;
    socklen_t slen = sizeof soerr;
    if (w == 0) { close(fd); return APPSTORE_TRANSPORT_RESULT_TIMEOUT; }
    if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0 || soerr != 0) {
        close(fd);
        return APPSTORE_TRANSPORT_RESULT_UNREACHABLE;
    }

    size_t head_cap = strlen(method) + strlen(path) + strlen(host) + strlen(port) + headers_len + 128;
    char *head = malloc(head_cap);
    if (!head) { close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    int head_len = snprintf(head, head_cap, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\nContent-Length: %zu\r\n%s\r\n",
                            method, path, host, port, body_len, headers ? headers : "");
    int32_t st = send_all(fd, head, (size_t)head_len, deadline);
    free(head);
    if (st == APPSTORE_TRANSPORT_RESULT_OK && body_len) st = send_all(fd, (const char *)body, body_len, deadline);
    if (st != APPSTORE_TRANSPORT_RESULT_OK) { close(fd); return st; }

    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    if (!buf) { close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    for (;;) {
        int r = wait_fd(fd, POLLIN, deadline);
        if (r == 0) { free(buf); close(fd); return APPSTORE_TRANSPORT_RESULT_TIMEOUT; }
        if (r < 0) { free(buf); close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
        if (len + 4096 > cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) { free(buf); close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
            buf = grown;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) { free(buf); close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
        if (n == 0) break;
        len += (size_t)n;
        if (len > limit + 65536) { free(buf); close(fd); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    }
    close(fd);
    buf[len] = 0;

    char *sep = strstr(buf, "\r\n\r\n");
    int status = 0;
    if (!sep || sscanf(buf, "HTTP/1.%*d %d", &status) != 1) { free(buf); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    size_t body_off = (size_t)(sep - buf) + 4, content_length = len - body_off;
    /* Headers: the lines after the status line, each "Name: value\r\n". */
    char *first = strstr(buf, "\r\n");
    size_t hlen = first && first < sep ? (size_t)(sep - (first + 2)) + 2 : 0;
    out->headers = malloc(hlen + 1);
    out->body = malloc(content_length + 1);
    if (!out->headers || !out->body) { free(buf); http_result_free(out); return APPSTORE_TRANSPORT_RESULT_FAILED; }
    if (hlen) memcpy(out->headers, first + 2, hlen);
    out->headers[hlen] = 0;
    out->headers_len = hlen;
    for (char *line = out->headers; line && *line;) {
        char *next = strstr(line, "\r\n");
        if (strncasecmp(line, "Content-Length:", 15) == 0) {
            size_t cl = (size_t)strtoull(line + 15, NULL, 10);
            if (cl < content_length) content_length = cl;
        }
        line = next ? next + 2 : NULL;
    }
    memcpy(out->body, buf + body_off, content_length);
    out->body[content_length] = 0;
    out->body_len = content_length;
    out->status = status;
    free(buf);
    return APPSTORE_TRANSPORT_RESULT_OK;
}
