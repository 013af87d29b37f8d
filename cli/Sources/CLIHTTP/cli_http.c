/* cli_http.c - see include/cli_http.h. */
#define _GNU_SOURCE
#include "cli_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

enum {
  MAX_HEAD_BYTES = 64 * 1024,   /* status line and headers of one response, together */
  MAX_HEADERS = 200,
  MAX_LINE = 16 * 1024,         /* one header or chunk-size line */
  MAX_INTERIM = 8,              /* 1xx answers before the final one */
};

/* ---- errors and the deadline ------------------------------------------------------------------------------------ */

typedef struct {
  int64_t deadline_ms;  /* CLOCK_MONOTONIC */
  unsigned timeout_ms;
  int kind;             /* CLI_HTTP_* of the first failure */
  char *error;
  size_t error_size;
} ctx_t;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(ctx_t *c, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ctx_t *c, int kind, const char *fmt, ...) {
  if (c->kind == CLI_HTTP_OK) {
    c->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, c->error_size, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int timed_out(ctx_t *c, const char *during) {
  return fail(c, CLI_HTTP_TIMEOUT, "timed out after %u ms (%s)", c->timeout_ms, during);
}

/* Milliseconds left, or -1 (and the failure recorded) when the deadline has passed. */
static int remaining(ctx_t *c, const char *during) {
  int64_t left = c->deadline_ms - now_ms();
  if (left <= 0) return timed_out(c, during);
  return left > INT_MAX ? INT_MAX : (int)left;
}

/* Waits until fd is ready for events, within the deadline. 0: ready; -1: failed (recorded). */
static int wait_fd(ctx_t *c, int fd, short events, const char *during) {
  for (;;) {
    int left = remaining(c, during);
    if (left < 0) return -1;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left);
    if (n > 0) return 0;
    if (n < 0 && errno != EINTR) return fail(c, CLI_HTTP_FAILED, "poll: %s", strerror(errno));
  }
}

/* ---- URL ---------------------------------------------------------------------------------------------------------- */

typedef struct {
  int tls;
  char host[256];       /* without brackets */
  char port[8];
  char authority[300];  /* Host header: as in the URL, without user info */
  const char *target;   /* path and query ("/" when empty); points into target_buf or the URL */
  char *target_buf;
  int host_is_ip;
} url_t;

static int bad_char(const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch <= 0x20 || ch == 0x7f) return 1;
  }
  return 0;
}

static int parse_url(ctx_t *c, const char *url, url_t *u) {
  memset(u, 0, sizeof *u);
  const char *p;
  if (strncasecmp(url, "https://", 8) == 0) {
    u->tls = 1;
    p = url + 8;
  } else if (strncasecmp(url, "http://", 7) == 0) {
    p = url + 7;
  } else {
    return fail(c, CLI_HTTP_FAILED, "only http:// and https:// URLs are supported");
  }
  if (bad_char(url)) return fail(c, CLI_HTTP_FAILED, "the URL holds spaces or control characters");
  size_t alen = strcspn(p, "/?#");
  const char *rest = p + alen;
  if (alen == 0 || alen >= sizeof u->authority) return fail(c, CLI_HTTP_FAILED, "the URL has no usable host");
  if (memchr(p, '@', alen)) return fail(c, CLI_HTTP_FAILED, "user information in URLs is not supported");
  memcpy(u->authority, p, alen);
  const char *hp = u->authority, *portp = NULL;
  size_t hlen;
  if (*hp == '[') {
    const char *close = strchr(hp, ']');
    if (!close) return fail(c, CLI_HTTP_FAILED, "the URL's IPv6 address has no ]");
    hlen = (size_t)(close - hp - 1);
    hp++;
    if (close[1] == ':') portp = close + 2;
    else if (close[1] != 0) return fail(c, CLI_HTTP_FAILED, "unexpected text after the URL's IPv6 address");
  } else {
    const char *colon = strchr(hp, ':');
    hlen = colon ? (size_t)(colon - hp) : strlen(hp);
    if (colon) portp = colon + 1;
  }
  if (hlen == 0 || hlen >= sizeof u->host) return fail(c, CLI_HTTP_FAILED, "the URL has no usable host");
  memcpy(u->host, hp, hlen);
  u->host[hlen] = 0;
  if (portp) {
    size_t n = strlen(portp);
    long port = 0;
    if (n == 0 || n > 5 || strspn(portp, "0123456789") != n || (port = strtol(portp, NULL, 10)) < 1 || port > 65535)
      return fail(c, CLI_HTTP_FAILED, "the URL's port is not 1...65535");
    snprintf(u->port, sizeof u->port, "%ld", port);
  } else {
    strcpy(u->port, u->tls ? "443" : "80");
  }
  unsigned char addr[sizeof(struct in6_addr)];
  u->host_is_ip = inet_pton(AF_INET, u->host, addr) == 1 || inet_pton(AF_INET6, u->host, addr) == 1;
  size_t tlen = strcspn(rest, "#");
  if (tlen == 0 || rest[0] == '?') {
    u->target_buf = malloc(tlen + 2);
    if (!u->target_buf) return fail(c, CLI_HTTP_FAILED, "out of memory");
    u->target_buf[0] = '/';
    memcpy(u->target_buf + 1, rest, tlen);
    u->target_buf[tlen + 1] = 0;
  } else {
    u->target_buf = strndup(rest, tlen);
    if (!u->target_buf) return fail(c, CLI_HTTP_FAILED, "out of memory");
  }
  u->target = u->target_buf;
  return 0;
}

/* ---- name lookup within the deadline ------------------------------------------------------------------------------ */

/* getaddrinfo has no timeout: it runs on its own thread, which the caller stops waiting for at the deadline (the
 * thread then finishes on its own and frees the job: whoever leaves last frees it). */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs, done, rc;
  struct addrinfo *res;
  char host[256], port[8];
} lookup_t;

static void lookup_release(lookup_t *j) {
  int last = --j->refs == 0;
  pthread_mutex_unlock(&j->mu);
  if (last) {
    if (j->res) freeaddrinfo(j->res);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
  }
}

static void *lookup_thread(void *arg) {
  lookup_t *j = arg;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
  struct addrinfo *res = NULL;
  int rc = getaddrinfo(j->host, j->port, &hints, &res);
  pthread_mutex_lock(&j->mu);
  j->rc = rc;
  j->res = res;
  j->done = 1;
  pthread_cond_signal(&j->cv);
  lookup_release(j);
  return NULL;
}

static struct addrinfo *resolve(ctx_t *c, const url_t *u) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
  struct addrinfo *res = NULL;
  if (u->host_is_ip) {
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) fail(c, CLI_HTTP_UNREACHABLE, "cannot use address %s: %s", u->host, gai_strerror(rc));
    return rc == 0 ? res : NULL;
  }
  lookup_t *j = calloc(1, sizeof *j);
  if (!j) return fail(c, CLI_HTTP_FAILED, "out of memory"), NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&j->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&j->mu, NULL);
  snprintf(j->host, sizeof j->host, "%s", u->host);
  snprintf(j->port, sizeof j->port, "%s", u->port);
  j->refs = 2;
  pthread_attr_t ta;
  pthread_attr_init(&ta);
  pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int rc = pthread_create(&t, &ta, lookup_thread, j);
  pthread_attr_destroy(&ta);
  pthread_mutex_lock(&j->mu);
  if (rc != 0) {
    j->refs = 1;
    lookup_release(j);
    return fail(c, CLI_HTTP_FAILED, "cannot start the name lookup: %s", strerror(rc)), NULL;
  }
  struct timespec until = {.tv_sec = c->deadline_ms / 1000, .tv_nsec = (c->deadline_ms % 1000) * 1000000};
  while (!j->done) {
    if (pthread_cond_timedwait(&j->cv, &j->mu, &until) == ETIMEDOUT && !j->done) break;
  }
  if (!j->done) {
    lookup_release(j);
    return timed_out(c, "looking up the host name"), NULL;
  }
  if (j->rc != 0) {
    fail(c, CLI_HTTP_UNREACHABLE, "cannot resolve %s: %s", u->host,
         j->rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(j->rc));
  } else {
    res = j->res;
    j->res = NULL;
  }
  lookup_release(j);
  return res;
}

/* ---- connecting ------------------------------------------------------------------------------------------------- */

static int connect_any(ctx_t *c, const url_t *u, struct addrinfo *list) {
  int last_errno = 0;
  for (struct addrinfo *a = list; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    if (errno == EINPROGRESS) {
      if (wait_fd(c, fd, POLLOUT, "connecting") < 0) {
        close(fd);
        return -1;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      last_errno = err ? err : errno;
    } else {
      last_errno = errno;
    }
    close(fd);
  }
  return fail(c, CLI_HTTP_UNREACHABLE, "cannot connect to %s port %s: %s", u->host, u->port,
              strerror(last_errno ? last_errno : ECONNREFUSED));
}

/* ---- TLS ------------------------------------------------------------------------------------------------------ */

static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static SSL_CTX *tls_ctx;
static char tls_source[512];
static char tls_error[512];

static int readable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

static void openssl_error(char *out, size_t size) {
  unsigned long e = ERR_get_error();
  if (e == 0) {
    snprintf(out, size, "no detail");
  } else {
    ERR_error_string_n(e, out, size);
  }
  ERR_clear_error();
}

static void tls_init(void) {
  /* No openssl.cnf: a static OpenSSL's compiled-in configuration path is the build machine's. */
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    char detail[256];
    openssl_error(detail, sizeof detail);
    snprintf(tls_error, sizeof tls_error, "cannot set up TLS: %s", detail);
    return;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* No SSL_OP_IGNORE_UNEXPECTED_EOF: an end of the TCP stream without close_notify must stay distinguishable from
   * a TLS close, so that a body delimited by the connection's end can be refused as truncated (conn_fill). */
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  const char *file = getenv("SSL_CERT_FILE"), *dir = getenv("SSL_CERT_DIR");
  if (file && !*file) file = NULL;
  if (dir && !*dir) dir = NULL;
  if (file || dir) {
    if (file && !readable_file(file)) {
      snprintf(tls_error, sizeof tls_error, "SSL_CERT_FILE=%s is not a readable file", file);
    } else if (!SSL_CTX_load_verify_locations(ctx, file, dir)) {
      char detail[256];
      openssl_error(detail, sizeof detail);
      snprintf(tls_error, sizeof tls_error, "cannot load the trust anchors of %s%s%s: %s", file ? "SSL_CERT_FILE" : "",
               file && dir ? " and " : "", dir ? "SSL_CERT_DIR" : "", detail);
    } else {
      snprintf(tls_source, sizeof tls_source, "%s%s%s%s%s", file ? "SSL_CERT_FILE=" : "", file ? file : "",
               file && dir ? ", " : "", dir ? "SSL_CERT_DIR=" : "", dir ? dir : "");
    }
  } else {
    static const char *const bundles[] = {
        "/etc/ssl/certs/ca-certificates.crt",  /* Debian, Ubuntu */
        "/etc/pki/tls/certs/ca-bundle.crt",    /* RHEL, Fedora, Amazon Linux */
        "/etc/ssl/ca-bundle.pem",              /* SUSE */
        "/etc/ssl/cert.pem",                   /* Alpine */
    };
    for (size_t i = 0; i < sizeof bundles / sizeof *bundles && !tls_source[0]; i++) {
      if (readable_file(bundles[i]) && SSL_CTX_load_verify_locations(ctx, bundles[i], NULL))
        snprintf(tls_source, sizeof tls_source, "%s", bundles[i]);
      ERR_clear_error();
    }
    struct stat st;
    if (!tls_source[0] && stat("/etc/ssl/certs", &st) == 0 && S_ISDIR(st.st_mode) &&
        SSL_CTX_load_verify_locations(ctx, NULL, "/etc/ssl/certs"))
      snprintf(tls_source, sizeof tls_source, "/etc/ssl/certs");
    ERR_clear_error();
    if (!tls_source[0])
      snprintf(tls_error, sizeof tls_error,
               "no CA certificates found (looked for /etc/ssl/certs/ca-certificates.crt, /etc/pki/tls/certs/ca-bundle.crt, "
               "/etc/ssl/ca-bundle.pem, /etc/ssl/cert.pem, /etc/ssl/certs): set SSL_CERT_FILE");
  }
  if (tls_error[0]) {
    SSL_CTX_free(ctx);
    return;
  }
  tls_ctx = ctx;
}

const char *cli_http_ca_source(char *error, size_t error_size) {
  pthread_once(&tls_once, tls_init);
  if (!tls_ctx) {
    snprintf(error, error_size, "%s", tls_error);
    return NULL;
  }
  return tls_source;
}

/* ---- a connection: plain or TLS, every operation within the deadline -------------------------------------------- */

typedef struct {
  ctx_t *c;
  int fd;
  SSL *ssl;
  unsigned char buf[16 * 1024];
  size_t pos, len;
  int eof;
  int truncated;                   /* TLS: the peer closed the TCP connection without close_notify */
} conn_t;

/* Waits for what SSL asked for after ret; 0: retry; -1: failed (recorded). */
static int tls_wait(conn_t *k, int ret, const char *during) {
  int e = SSL_get_error(k->ssl, ret);
  if (e == SSL_ERROR_WANT_READ) return wait_fd(k->c, k->fd, POLLIN, during);
  if (e == SSL_ERROR_WANT_WRITE) return wait_fd(k->c, k->fd, POLLOUT, during);
  char detail[256];
  if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    snprintf(detail, sizeof detail, "%s", errno ? strerror(errno) : "the connection closed");
  } else {
    openssl_error(detail, sizeof detail);
  }
  return fail(k->c, CLI_HTTP_FAILED, "TLS error while %s: %s", during, detail);
}

static int tls_start(conn_t *k, const url_t *u) {
  pthread_once(&tls_once, tls_init);
  if (!tls_ctx) return fail(k->c, CLI_HTTP_FAILED, "%s", tls_error);
  k->ssl = SSL_new(tls_ctx);
  if (!k->ssl || !SSL_set_fd(k->ssl, k->fd)) return fail(k->c, CLI_HTTP_FAILED, "cannot set up TLS");
  X509_VERIFY_PARAM *param = SSL_get0_param(k->ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (u->host_is_ip) {
    if (!X509_VERIFY_PARAM_set1_ip_asc(param, u->host)) return fail(k->c, CLI_HTTP_FAILED, "cannot set up TLS");
  } else {
    if (!SSL_set_tlsext_host_name(k->ssl, u->host) || !SSL_set1_host(k->ssl, u->host))
      return fail(k->c, CLI_HTTP_FAILED, "cannot set up TLS for host %s", u->host);
  }
  for (;;) {
    ERR_clear_error();
    int r = SSL_connect(k->ssl);
    if (r == 1) break;
    long v = SSL_get_verify_result(k->ssl);
    if (v != X509_V_OK && SSL_get_error(k->ssl, r) == SSL_ERROR_SSL) {
      ERR_clear_error();
      return fail(k->c, CLI_HTTP_FAILED, "the certificate of %s is not trusted: %s (trust anchors: %s)", u->host,
                  X509_verify_cert_error_string(v), tls_source);
    }
    if (tls_wait(k, r, "the TLS handshake") < 0) return -1;
  }
  return 0;
}

static int conn_write(conn_t *k, const unsigned char *p, size_t n) {
  while (n > 0) {
    if (k->ssl) {
      size_t written = 0;
      ERR_clear_error();
      int r = SSL_write_ex(k->ssl, p, n, &written);
      if (r <= 0) {
        if (tls_wait(k, r, "sending the request") < 0) return -1;
        continue;
      }
      p += written;
      n -= written;
    } else {
      ssize_t w = send(k->fd, p, n, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (wait_fd(k->c, k->fd, POLLOUT, "sending the request") < 0) return -1;
          continue;
        }
        return fail(k->c, CLI_HTTP_FAILED, "sending the request: %s", strerror(errno));
      }
      p += w;
      n -= (size_t)w;
    }
    if (remaining(k->c, "sending the request") < 0) return -1;
  }
  return 0;
}

/* Refills the buffer: 1 data, 0 end of stream, -1 failed. */
static int conn_fill(conn_t *k) {
  if (k->eof) return 0;
  if (remaining(k->c, "reading the response") < 0) return -1;
  k->pos = k->len = 0;
  for (;;) {
    if (k->ssl) {
      size_t got = 0;
      ERR_clear_error();
      int r = SSL_read_ex(k->ssl, k->buf, sizeof k->buf, &got);
      if (r > 0) {
        k->len = got;
        return 1;
      }
      int e = SSL_get_error(k->ssl, r);
      if (e == SSL_ERROR_ZERO_RETURN) {  /* close_notify: the peer ended the TLS stream */
        k->eof = 1;
        return 0;
      }
      /* The TCP stream ended without close_notify (OpenSSL 3: SSL_R_UNEXPECTED_EOF_WHILE_READING; 1.1: a
       * syscall error with errno 0): an end, but one an attacker on the path can cause (truncation). */
      unsigned long top = ERR_peek_error();
      if ((e == SSL_ERROR_SSL && ERR_GET_LIB(top) == ERR_LIB_SSL && ERR_GET_REASON(top) == SSL_R_UNEXPECTED_EOF_WHILE_READING) ||
          (e == SSL_ERROR_SYSCALL && top == 0 && errno == 0)) {
        ERR_clear_error();
        k->eof = 1;
        k->truncated = 1;
        return 0;
      }
      if (tls_wait(k, r, "reading the response") < 0) return -1;
    } else {
      ssize_t n = recv(k->fd, k->buf, sizeof k->buf, 0);
      if (n > 0) {
        k->len = (size_t)n;
        return 1;
      }
      if (n == 0) {
        k->eof = 1;
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return fail(k->c, CLI_HTTP_FAILED, "reading the response: %s", strerror(errno));
      if (wait_fd(k->c, k->fd, POLLIN, "reading the response") < 0) return -1;
    }
  }
}

/* One line without its CR LF into out (cap bytes with the NUL). 1: a line; 0: end of stream before any byte of it;
 * -1: failed (recorded; a line longer than cap fails). *used counts the bytes consumed toward a limit. */
static int conn_line(conn_t *k, char *out, size_t cap, size_t *used, size_t limit, const char *what) {
  size_t n = 0;
  for (;;) {
    if (k->pos == k->len) {
      int r = conn_fill(k);
      if (r < 0) return -1;
      if (r == 0) {
        if (n == 0) return 0;
        return fail(k->c, CLI_HTTP_FAILED, "the connection closed in the middle of %s", what);
      }
    }
    unsigned char ch = k->buf[k->pos++];
    if (++*used > limit) return fail(k->c, CLI_HTTP_FAILED, "%s is longer than %zu bytes", what, limit);
    if (ch == '\n') {
      if (n > 0 && out[n - 1] == '\r') n--;
      out[n] = 0;
      return 1;
    }
    if (n + 1 >= cap) return fail(k->c, CLI_HTTP_FAILED, "a line of %s is longer than %zu bytes", what, cap - 1);
    out[n++] = (char)ch;
  }
}

/* ---- the response ----------------------------------------------------------------------------------------------- */

static int add_header(ctx_t *c, cli_http_response *r, const char *name, size_t nlen, const char *value, size_t vlen) {
  if (r->header_count >= MAX_HEADERS) return fail(c, CLI_HTTP_FAILED, "the response has more than %d headers", MAX_HEADERS);
  if (r->header_count == 0 || (r->header_count & (r->header_count - 1)) == 0) {
    size_t cap = r->header_count ? r->header_count * 2 : 16;
    char **names = realloc(r->header_names, cap * sizeof *names);
    if (names) r->header_names = names;
    char **values = realloc(r->header_values, cap * sizeof *values);
    if (values) r->header_values = values;
    if (!names || !values) return fail(c, CLI_HTTP_FAILED, "out of memory");
  }
  char *n = strndup(name, nlen), *v = strndup(value, vlen);
  if (!n || !v) {
    free(n);
    free(v);
    return fail(c, CLI_HTTP_FAILED, "out of memory");
  }
  r->header_names[r->header_count] = n;
  r->header_values[r->header_count] = v;
  r->header_count++;
  return 0;
}

static void clear_headers(cli_http_response *r) {
  for (size_t i = 0; i < r->header_count; i++) {
    free(r->header_names[i]);
    free(r->header_values[i]);
  }
  r->header_count = 0;
}

static const char *find_header(const cli_http_response *r, const char *name) {
  for (size_t i = 0; i < r->header_count; i++)
    if (strcasecmp(r->header_names[i], name) == 0) return r->header_values[i];
  return NULL;
}

static int is_token_char(unsigned char ch) {
  return ch > 0x20 && ch < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", ch);
}

/* Status line and headers (after any 1xx). */
static int read_head(conn_t *k, cli_http_response *r) {
  char *line = malloc(MAX_LINE);
  if (!line) return fail(k->c, CLI_HTTP_FAILED, "out of memory");
  int rc = -1;
  for (int interim = 0;; interim++) {
    size_t used = 0;
    int got = conn_line(k, line, MAX_LINE, &used, MAX_HEAD_BYTES, "the response head");
    if (got == 0) {
      fail(k->c, CLI_HTTP_FAILED, "the server closed the connection without answering");
      goto out;
    }
    if (got < 0) goto out;
    if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
        strspn(line + 9, "0123456789") < 3 || (line[12] != 0 && line[12] != ' ')) {
      fail(k->c, CLI_HTTP_FAILED, "the answer is not HTTP/1.x");
      goto out;
    }
    r->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    clear_headers(r);
    for (;;) {
      got = conn_line(k, line, MAX_LINE, &used, MAX_HEAD_BYTES, "the response head");
      if (got == 0) fail(k->c, CLI_HTTP_FAILED, "the connection closed in the middle of the response head");
      if (got <= 0) goto out;
      if (line[0] == 0) break;
      if (line[0] == ' ' || line[0] == '\t') {
        fail(k->c, CLI_HTTP_FAILED, "the response folds a header over lines (obsolete, refused)");
        goto out;
      }
      char *colon = strchr(line, ':');
      size_t nlen = colon ? (size_t)(colon - line) : 0;
      for (size_t i = 0; i < nlen; i++)
        if (!is_token_char((unsigned char)line[i])) nlen = 0;
      if (nlen == 0) {
        fail(k->c, CLI_HTTP_FAILED, "the response has a malformed header line");
        goto out;
      }
      char *v = colon + 1, *end = v + strlen(v);
      while (*v == ' ' || *v == '\t') v++;
      while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
      if (add_header(k->c, r, line, nlen, v, (size_t)(end - v)) < 0) goto out;
    }
    if (r->status >= 200) break;
    if (r->status == 101) {
      fail(k->c, CLI_HTTP_FAILED, "the server switched protocols (HTTP 101)");
      goto out;
    }
    if (interim >= MAX_INTERIM) {
      fail(k->c, CLI_HTTP_FAILED, "more than %d interim (1xx) answers", MAX_INTERIM);
      goto out;
    }
  }
  rc = 0;
out:
  free(line);
  return rc;
}

typedef struct {
  unsigned char *p;
  size_t len, cap, max;
} body_t;

static int body_room(ctx_t *c, body_t *b, size_t more) {
  if (more > b->max - b->len)
    return fail(c, CLI_HTTP_FAILED, "the response body is larger than the limit of %zu bytes", b->max);
  if (b->len + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 16 * 1024;
  while (cap < b->len + more) cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
  if (cap > b->max) cap = b->max;
  unsigned char *p = realloc(b->p, cap ? cap : 1);
  if (!p) return fail(c, CLI_HTTP_FAILED, "out of memory for a %zu-byte body", b->len + more);
  b->p = p;
  b->cap = cap;
  return 0;
}

/* Exactly n bytes (n == SIZE_MAX: until the end of the stream) into the body. */
static int read_bytes(conn_t *k, body_t *b, size_t n, const char *what) {
  size_t want = n;
  while (n > 0) {
    if (k->pos == k->len) {
      int r = conn_fill(k);
      if (r < 0) return -1;
      if (r == 0) {
        /* A body delimited by the connection's end is complete only when the end is authentic: over TLS, a
         * close_notify (as curl requires); a bare TCP end may be an attacker's truncation. */
        if (want == SIZE_MAX && k->truncated)
          return fail(k->c, CLI_HTTP_FAILED,
                      "the connection closed without TLS close_notify after %zu bytes of a body without a length: it may be truncated",
                      b->len);
        if (want == SIZE_MAX) return 0;
        return fail(k->c, CLI_HTTP_FAILED, "the connection closed after %zu of the %zu bytes of %s", want - n, want, what);
      }
    }
    size_t take = k->len - k->pos;
    if (take > n) take = n;
    if (body_room(k->c, b, take) < 0) return -1;
    memcpy(b->p + b->len, k->buf + k->pos, take);
    b->len += take;
    k->pos += take;
    if (want != SIZE_MAX) n -= take;
  }
  return 0;
}

static int read_chunked(conn_t *k, body_t *b) {
  char line[1024];
  for (;;) {
    size_t used = 0;
    int got = conn_line(k, line, sizeof line, &used, sizeof line, "a chunk size line");
    if (got == 0) return fail(k->c, CLI_HTTP_FAILED, "the connection closed before the last chunk");
    if (got < 0) return -1;
    size_t digits = strspn(line, "0123456789abcdefABCDEF");
    if (digits == 0 || (line[digits] != 0 && line[digits] != ';' && line[digits] != ' ' && line[digits] != '\t'))
      return fail(k->c, CLI_HTTP_FAILED, "a malformed chunk size line");
    size_t size = 0;
    for (size_t i = 0; i < digits; i++) {
      unsigned char ch = (unsigned char)line[i];
      unsigned v = ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
      if (size > (SIZE_MAX - v) / 16)
        return fail(k->c, CLI_HTTP_FAILED, "the response body is larger than the limit of %zu bytes", b->max);
      size = size * 16 + v;
    }
    if (size == 0) break;
    if (size > b->max - b->len)
      return fail(k->c, CLI_HTTP_FAILED, "the response body is larger than the limit of %zu bytes", b->max);
    if (read_bytes(k, b, size, "a chunk") < 0) return -1;
    used = 0;
    got = conn_line(k, line, sizeof line, &used, sizeof line, "the end of a chunk");
    if (got <= 0 || line[0] != 0) return got < 0 ? -1 : fail(k->c, CLI_HTTP_FAILED, "a chunk does not end with CR LF");
  }
  /* Trailers (dropped), up to the empty line. */
  size_t used = 0;
  for (;;) {
    int got = conn_line(k, line, sizeof line, &used, MAX_HEAD_BYTES, "the trailers");
    if (got < 0) return -1;
    if (got == 0 || line[0] == 0) return 0;
  }
}

static int read_body(conn_t *k, const char *method, cli_http_response *r, size_t max_body) {
  if (strcmp(method, "HEAD") == 0 || r->status == 204 || r->status == 304) return 0;
  body_t b = {.max = max_body};
  int rc = 0;
  const char *te = find_header(r, "Transfer-Encoding");
  if (te) {
    /* The last coding must be chunked; others (gzip, ...) are refused rather than decoded. */
    size_t n = strlen(te);
    while (n > 0 && (te[n - 1] == ' ' || te[n - 1] == '\t')) n--;
    if (n < 7 || strncasecmp(te + n - 7, "chunked", 7) != 0 || (n > 7 && !strchr(", \t", te[n - 8])) ||
        strcspn(te, ",") < n - 7)
      rc = fail(k->c, CLI_HTTP_FAILED, "unsupported Transfer-Encoding \"%.64s\"", te);
    else
      rc = read_chunked(k, &b);
  } else {
    const char *cl = NULL;
    for (size_t i = 0; i < r->header_count && rc == 0; i++) {
      if (strcasecmp(r->header_names[i], "Content-Length") != 0) continue;
      if (cl && strcmp(cl, r->header_values[i]) != 0)
        rc = fail(k->c, CLI_HTTP_FAILED, "the response has conflicting Content-Length headers");
      cl = r->header_values[i];
    }
    if (rc == 0 && cl) {
      size_t n = strlen(cl);
      if (n == 0 || n > 19 || strspn(cl, "0123456789") != n) {
        rc = fail(k->c, CLI_HTTP_FAILED, "the response has a malformed Content-Length");
      } else {
        unsigned long long len = strtoull(cl, NULL, 10);
        if (len > max_body)
          rc = fail(k->c, CLI_HTTP_FAILED, "the response body (Content-Length %llu) is larger than the limit of %zu bytes",
                    len, max_body);
        else if (len > 0 && (rc = body_room(k->c, &b, (size_t)len)) == 0)
          rc = read_bytes(k, &b, (size_t)len, "the body");
      }
    } else if (rc == 0) {
      rc = read_bytes(k, &b, SIZE_MAX, "the body");
    }
  }
  if (rc < 0) {
    free(b.p);
    return -1;
  }
  r->body = b.p;
  r->body_len = b.len;
  return 0;
}

/* ---- the exchange --------------------------------------------------------------------------------------------- */

static int own_header(const char *name) {
  return strcasecmp(name, "Host") == 0 || strcasecmp(name, "Content-Length") == 0 || strcasecmp(name, "Connection") == 0 ||
         strcasecmp(name, "Transfer-Encoding") == 0;
}

static char *build_head(ctx_t *c, const char *method, const url_t *u, const char *const *names,
                        const char *const *values, size_t count, size_t body_len, size_t *out_len) {
  size_t cap = strlen(method) + strlen(u->target) + strlen(u->authority) + 128;
  for (size_t i = 0; i < count; i++) cap += strlen(names[i]) + strlen(values[i]) + 4;
  if (!*method || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(method))
    return fail(c, CLI_HTTP_FAILED, "invalid method"), NULL;
  for (size_t i = 0; i < count; i++) {
    size_t nlen = strlen(names[i]);
    for (size_t j = 0; j < nlen; j++)
      if (!is_token_char((unsigned char)names[i][j])) nlen = 0;
    if (nlen == 0) return fail(c, CLI_HTTP_FAILED, "invalid request header name"), NULL;
    for (const char *v = values[i]; *v; v++)
      if ((unsigned char)*v < 0x20 && *v != '\t')
        return fail(c, CLI_HTTP_FAILED, "the request header %s holds control characters", names[i]), NULL;
    if (own_header(names[i])) return fail(c, CLI_HTTP_FAILED, "the request header %s is the transport's own", names[i]), NULL;
  }
  char *head = malloc(cap);
  if (!head) return fail(c, CLI_HTTP_FAILED, "out of memory"), NULL;
  size_t n = (size_t)snprintf(head, cap, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u->target, u->authority);
  for (size_t i = 0; i < count; i++) n += (size_t)snprintf(head + n, cap - n, "%s: %s\r\n", names[i], values[i]);
  int needs_length = body_len > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
  if (needs_length) n += (size_t)snprintf(head + n, cap - n, "Content-Length: %zu\r\n", body_len);
  n += (size_t)snprintf(head + n, cap - n, "Connection: close\r\n\r\n");
  *out_len = n;
  return head;
}

int cli_http_send(const char *method, const char *url, const char *const *header_names,
                  const char *const *header_values, size_t header_count, const unsigned char *body, size_t body_len,
                  unsigned timeout_ms, size_t max_body, cli_http_response *out, char *error, size_t error_size) {
  ctx_t c = {.deadline_ms = now_ms() + timeout_ms, .timeout_ms = timeout_ms, .kind = CLI_HTTP_OK, .error = error,
             .error_size = error_size};
  if (error_size) error[0] = 0;
  memset(out, 0, sizeof *out);
  url_t u;
  conn_t *k = NULL;
  char *head = NULL;
  struct addrinfo *addrs = NULL;
  /* OpenSSL writes with send(..., 0): a peer that closes while the request is sent would raise SIGPIPE, whose
   * default action ends the process. Blocked on this thread for the exchange; one it raised is discarded after. */
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigemptyset(&pending);
  sigpending(&pending);
  int pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
  if (parse_url(&c, url, &u) < 0) goto done;
  size_t head_len = 0;
  head = build_head(&c, method, &u, header_names, header_values, header_count, body_len, &head_len);
  if (!head) goto done;
  addrs = resolve(&c, &u);
  if (!addrs) goto done;
  k = calloc(1, sizeof *k);
  if (!k) {
    fail(&c, CLI_HTTP_FAILED, "out of memory");
    goto done;
  }
  k->c = &c;
  k->fd = -1;
  k->fd = connect_any(&c, &u, addrs);
  if (k->fd < 0) goto done;
  if (u.tls && tls_start(k, &u) < 0) goto done;
  if (conn_write(k, (const unsigned char *)head, head_len) < 0) goto done;
  if (body_len > 0 && conn_write(k, body, body_len) < 0) goto done;
  if (read_head(k, out) < 0) goto done;
  read_body(k, method, out, max_body);
done:
  if (k) {
    if (k->ssl) SSL_free(k->ssl);
    if (k->fd >= 0) close(k->fd);
    free(k);
  }
  if (addrs) freeaddrinfo(addrs);
  free(head);
  free(u.target_buf);
  ERR_clear_error();
  if (!pipe_was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, NULL);
  if (c.kind != CLI_HTTP_OK) {
    cli_http_response_free(out);
    return c.kind;
  }
  return CLI_HTTP_OK;
}

void cli_http_response_free(cli_http_response *r) {
  clear_headers(r);
  free(r->header_names);
  free(r->header_values);
  free(r->body);
  memset(r, 0, sizeof *r);
}
