/* cli_serve.c - see include/cli_serve.h. */
#define _GNU_SOURCE
#include "cli_serve.h"

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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
  MAX_HEADER_LINES = 100,
  MAX_METHOD = 16,
  READ_SLACK = 16 * 1024,          /* read buffer beyond max_header_bytes: the start of a body, a pipelined request */
  THREAD_STACK = 2 * 1024 * 1024,  /* verification and JSON run on this thread (virtual memory until touched) */
  MAX_CHUNK_HEX = 8,
  LINGER_MS = 1000,                /* after a refusal: time to read what the client still sends, so the close */
  LINGER_BYTES = 1 << 20,          /* does not reset the connection before the answer is read */
};

struct cli_serve {
  int listen_fd;
  int stop_pipe[2];                /* written once stopping; never read, so it stays readable for every poll */
  unsigned port;
  cli_serve_limits limits;
  pthread_mutex_t mu;
  pthread_cond_t done;             /* a connection ended */
  unsigned active;
  unsigned long long next_id;
  volatile sig_atomic_t stopping;
  cli_serve_handler handler;
  cli_serve_event event;
  void *context;
  struct addr_count *addrs;        /* connections open per client address (max_connections entries), under mu */
};

/* A client address (the IP without the port) and how many of the open connections come from it. */
typedef struct addr_count {
  unsigned char key[17];           /* family byte, then 4 or 16 address bytes */
  unsigned count;
} addr_count;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int poll_ms(int64_t deadline) {
  int64_t left = deadline - now_ms();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : (int)left;
}

static void emit(cli_serve *s, const char *event, int status, const char *remote, const char *detail) {
  if (s->event) s->event(s->context, event, status, remote ? remote : "", detail ? detail : "");
}

/* ---- stop and signals --------------------------------------------------------------------------------------------- */

void cli_serve_stop(cli_serve *s) {
  int saved = errno;
  s->stopping = 1;
  char b = 1;
  ssize_t w = write(s->stop_pipe[1], &b, 1);  /* non-blocking; a full pipe is readable already */
  (void)w;
  errno = saved;
}

static cli_serve *volatile signal_server;

static void on_signal(int sig) {
  (void)sig;
  cli_serve *s = signal_server;
  if (s == NULL) return;
  if (s->stopping) {
    static const char m[] = "{\"level\":\"error\",\"event\":\"forced_exit\",\"message\":\"second signal while draining\"}\n";
    ssize_t w = write(STDOUT_FILENO, m, sizeof m - 1);
    (void)w;
    _exit(1);
  }
  cli_serve_stop(s);
}

void cli_serve_stop_on_signals(cli_serve *s) {
  signal_server = s;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
}

/* ---- listening ---------------------------------------------------------------------------------------------------- */

cli_serve *cli_serve_listen(const char *host, unsigned port, const cli_serve_limits *limits, char *error,
                            size_t error_size) {
  if (port > 65535) {
    snprintf(error, error_size, "port %u is not 0-65535", port);
    return NULL;
  }
  if (limits->max_header_bytes < 256 || limits->max_connections == 0 || limits->max_requests_per_connection == 0 ||
      limits->max_connection_lifetime_ms == 0) {
    snprintf(error, error_size, "limits too small (max_header_bytes >= 256, max_connections, max_requests_per_connection and max_connection_lifetime_ms >= 1)");
    return NULL;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  char service[16];
  snprintf(service, sizeof service, "%u", port);
  int rc = getaddrinfo(host, service, &hints, &res);
  if (rc != 0) {
    snprintf(error, error_size, "cannot resolve %s: %s", host, gai_strerror(rc));
    return NULL;
  }
  int fd = -1, last_errno = 0;
  for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0) break;
    last_errno = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(error, error_size, "cannot listen on %s:%u: %s", host, port, strerror(last_errno));
    return NULL;
  }
  struct sockaddr_storage bound;
  socklen_t len = sizeof bound;
  getsockname(fd, (struct sockaddr *)&bound, &len);
  cli_serve *s = calloc(1, sizeof *s);
  if (s == NULL || pipe2(s->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    snprintf(error, error_size, "cannot set up the server: %s", strerror(errno));
    close(fd);
    free(s);
    return NULL;
  }
  s->addrs = calloc(limits->max_connections, sizeof *s->addrs);
  if (s->addrs == NULL) {
    snprintf(error, error_size, "cannot set up the server: out of memory");
    close(fd);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    free(s);
    return NULL;
  }
  s->listen_fd = fd;
  s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                               : ((struct sockaddr_in *)&bound)->sin_port);
  s->limits = *limits;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->done, &ca);
  pthread_condattr_destroy(&ca);
  return s;
}

unsigned cli_serve_port(const cli_serve *s) { return s->port; }

int cli_serve_is_stopping(const cli_serve *s) { return s->stopping != 0; }

unsigned cli_serve_connections(cli_serve *s) {
  pthread_mutex_lock(&s->mu);
  unsigned n = s->active;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void cli_serve_free(cli_serve *s) {
  if (s == NULL) return;
  if (signal_server == s) signal_server = NULL;
  if (s->listen_fd >= 0) close(s->listen_fd);
  close(s->stop_pipe[0]);
  close(s->stop_pipe[1]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->done);
  free(s->addrs);
  free(s);
}

static void format_peer(const struct sockaddr_storage *a, char *out, size_t size) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (a->ss_family == AF_INET6) {
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    snprintf(out, size, "[%s]:%u", ip, ntohs(v6->sin6_port));
  } else {
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
    snprintf(out, size, "%s:%u", ip, ntohs(v4->sin_port));
  }
}

static void address_key(const struct sockaddr_storage *a, unsigned char key[17]) {
  memset(key, 0, 17);
  if (a->ss_family == AF_INET6) {
    key[0] = 6;
    memcpy(key + 1, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
  } else {
    key[0] = 4;
    memcpy(key + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
  }
}

/* Under mu: counts one more connection from key, or 0 when that address is at its cap. (At most max_connections
 * addresses have connections open, so the table always has room.) */
static int address_take(cli_serve *s, const unsigned char key[17]) {
  unsigned cap = s->limits.max_connections_per_address;
  addr_count *free_slot = NULL;
  for (unsigned i = 0; i < s->limits.max_connections; i++) {
    addr_count *e = &s->addrs[i];
    if (e->count == 0) {
      if (free_slot == NULL) free_slot = e;
    } else if (memcmp(e->key, key, 17) == 0) {
      if (cap > 0 && e->count >= cap) return 0;
      e->count++;
      return 1;
    }
  }
  if (free_slot == NULL) return 0;
  memcpy(free_slot->key, key, 17);
  free_slot->count = 1;
  return 1;
}

/* Under mu: one connection from key ended. */
static void address_release(cli_serve *s, const unsigned char key[17]) {
  for (unsigned i = 0; i < s->limits.max_connections; i++) {
    addr_count *e = &s->addrs[i];
    if (e->count > 0 && memcmp(e->key, key, 17) == 0) {
      e->count--;
      return;
    }
  }
}

/* ---- one connection ----------------------------------------------------------------------------------------------- */

typedef struct {
  cli_serve *s;
  int fd;
  unsigned long long id;
  char remote[INET6_ADDRSTRLEN + 16];
  int64_t accepted_ms;
  unsigned requests;               /* requests begun on this connection */
  unsigned char address[17];       /* the client address's key (address_key) */
  char *buf;                       /* bytes received; [pos, len) not consumed yet */
  size_t cap, len, pos;
} conn_t;

enum { IO_OK = 1, IO_EOF = 0, IO_TIMEOUT = -1, IO_STOPPED = -2, IO_ERROR = -3, IO_FULL = -4 };

/* Waits for input until deadline (and, when stop_aware, until the server stops). */
static int wait_in(conn_t *c, int64_t deadline, int stop_aware) {
  for (;;) {
    int ms = poll_ms(deadline);
    if (ms == 0) return IO_TIMEOUT;
    struct pollfd p[2] = {{c->fd, POLLIN, 0}, {c->s->stop_pipe[0], POLLIN, 0}};
    int n = poll(p, stop_aware ? 2 : 1, ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IO_ERROR;
    }
    if (n == 0) return IO_TIMEOUT;
    if (p[0].revents) return IO_OK;
    if (stop_aware && p[1].revents) return IO_STOPPED;
  }
}

/* Reads more into buf (compacting it first). IO_OK, or IO_EOF / IO_TIMEOUT / IO_STOPPED / IO_ERROR; IO_FULL when buf is full. */
static int fill(conn_t *c, int64_t deadline, int stop_aware) {
  if (c->pos > 0) {
    memmove(c->buf, c->buf + c->pos, c->len - c->pos);
    c->len -= c->pos;
    c->pos = 0;
  }
  if (c->len == c->cap) return IO_FULL;
  for (;;) {
    int w = wait_in(c, deadline, stop_aware);
    if (w != IO_OK) return w;
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n > 0) {
      c->len += (size_t)n;
      return IO_OK;
    }
    if (n == 0) return IO_EOF;
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    return IO_ERROR;
  }
}

static int send_all(conn_t *c, const void *data, size_t n, int more, int64_t deadline) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int ms = poll_ms(deadline);
      if (ms == 0) return -1;
      struct pollfd pf = {c->fd, POLLOUT, 0};
      if (poll(&pf, 1, ms) < 0 && errno != EINTR) return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

static const char *reason_phrase(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 415: return "Unsupported Media Type";
  case 417: return "Expectation Failed";
  case 422: return "Unprocessable Content";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

/* Writes one response. 0, or -1 when the client did not take it within the write timeout (or went away). */
static int respond(conn_t *c, int status, const char *content_type, const char *extra, const unsigned char *body,
                   size_t body_len, int head_only, int keep_alive) {
  char date[64];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  size_t extra_len = extra ? strlen(extra) : 0;
  size_t cap = 512 + extra_len;
  char *head = malloc(cap);
  if (head == NULL) return -1;
  int n = snprintf(head, cap,
                   "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
                   "Connection: %s\r\n%s\r\n",
                   status, reason_phrase(status), date, content_type ? content_type : "application/json", body_len,
                   keep_alive ? "keep-alive" : "close", extra ? extra : "");
  int64_t deadline = now_ms() + c->s->limits.write_timeout_ms;
  int has_body = !head_only && body_len > 0;
  int rc = (n > 0 && (size_t)n < cap) ? send_all(c, head, (size_t)n, has_body, deadline) : -1;
  free(head);
  if (rc == 0 && has_body) rc = send_all(c, body, body_len, 0, deadline);
  if (rc != 0) emit(c->s, "write_timeout", 0, c->remote, "the response was not taken in time");
  return rc;
}

/* Closes after a refusal: no more writes, then reads (and drops) what the client is still sending for a moment, so
 * that the close does not reset the connection before the client has read the answer. */
static void linger_close(conn_t *c) {
  shutdown(c->fd, SHUT_WR);
  int64_t deadline = now_ms() + LINGER_MS;
  size_t dropped = 0;
  char sink[4096];
  while (dropped < LINGER_BYTES && wait_in(c, deadline, 0) == IO_OK) {
    ssize_t n = recv(c->fd, sink, sizeof sink, 0);
    if (n > 0) {
      dropped += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    break;
  }
}

/* A refusal at the HTTP layer: answered (when status > 0), reported, and the connection closes. Messages are this
 * file's own text (no quotes or backslashes), so they go into the JSON as they are. */
static int refuse(conn_t *c, int status, const char *reason, const char *message) {
  emit(c->s, reason, status, c->remote, message);
  if (status > 0) {
    char body[512];
    int n = snprintf(body, sizeof body, "{\"error\":{\"reason\":\"%s\",\"message\":\"%s\"}}", reason, message);
    const char *extra = status == 503 ? "Retry-After: 1\r\n" : NULL;
    if (respond(c, status, NULL, extra, (const unsigned char *)body, (size_t)n, 0, 0) == 0) linger_close(c);
  }
  return 0;
}

static int is_tchar(unsigned char ch) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) return 1;
  return ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int is_value_char(unsigned char ch) { return ch == '\t' || (ch >= 0x20 && ch != 0x7f); }

typedef struct {
  char *head;                      /* a copy of the request line and headers, lines NUL-terminated in place */
  const char *method, *target, *authorization, *forwarded_for;
  int http10, close_after, chunked, expect_continue, has_length;
  unsigned long long content_length;
} request_t;


/* A byte range of the header block: values are handled with their length, never as C strings, so that a NUL
 * (or any byte) inside a value can neither end it early for one check nor hide what follows from another. */
typedef struct {
  const char *p;
  size_t n;
} span_t;

static int span_is(span_t s, const char *lit) { return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0; }

static int span_is_nocase(span_t s, const char *lit) { return s.n == strlen(lit) && strncasecmp(s.p, lit, s.n) == 0; }

/* Case-insensitive: whether the comma-separated list `v` holds `token`. */
static int span_has_token(span_t v, const char *token) {
  size_t tl = strlen(token), i = 0;
  while (i < v.n) {
    while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ',')) i++;
    size_t start = i;
    while (i < v.n && v.p[i] != ',') i++;
    size_t end = i;
    while (end > start && (v.p[end - 1] == ' ' || v.p[end - 1] == '\t')) end--;
    if (end - start == tl && strncasecmp(v.p + start, token, tl) == 0) return 1;
  }
  return 0;
}

/* Parses the header block head[0..n) (which ends with CRLF CRLF). 0, or the refusal already answered (-1). */
static int parse_head(conn_t *c, request_t *r, size_t n) {
  char *h = r->head;
  /* Every byte first: CR and LF only as the CRLF line ends (a bare one was refused while reading), HTAB, and no
   * other control character anywhere (NUL and DEL included): RFC 9110 5.5 field values, tokens and the target. */
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)h[i];
    if ((ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f)
      return refuse(c, 400, "bad_request", "control character in the request line or a header") - 1;
  }
  /* Lines as byte ranges, split at CRLF. */
  span_t lines[MAX_HEADER_LINES + 2];
  size_t count = 0, start = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (h[i] == '\r' && h[i + 1] == '\n') {
      if (i == start) break;  /* the empty line: end of the headers */
      if (count == MAX_HEADER_LINES + 1) return refuse(c, 431, "header_too_large", "more than 100 header lines") - 1;
      lines[count++] = (span_t){h + start, i - start};
      h[i] = '\0';  /* the request line's parts and the values handed on are NUL-terminated here */
      start = i + 2;
      i++;
    }
  }
  if (count == 0) return refuse(c, 400, "bad_request", "no request line") - 1;

  /* Request line: method SP target SP version, single spaces. */
  span_t rl = lines[0];
  const char *sp1 = memchr(rl.p, ' ', rl.n);
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(rl.p + rl.n - sp1 - 1)) : NULL;
  if (!sp1 || !sp2 || memchr(sp2 + 1, ' ', (size_t)(rl.p + rl.n - sp2 - 1)))
    return refuse(c, 400, "bad_request", "malformed request line") - 1;
  span_t method = {rl.p, (size_t)(sp1 - rl.p)}, target = {sp1 + 1, (size_t)(sp2 - sp1 - 1)},
         version = {sp2 + 1, (size_t)(rl.p + rl.n - sp2 - 1)};
  if (method.n == 0 || method.n > MAX_METHOD) return refuse(c, 400, "bad_request", "malformed method") - 1;
  for (size_t i = 0; i < method.n; i++)
    if (!is_tchar((unsigned char)method.p[i])) return refuse(c, 400, "bad_request", "malformed method") - 1;
  if (target.n == 0 || target.p[0] != '/') return refuse(c, 400, "bad_request", "the target must be a path (origin-form)") - 1;
  for (size_t i = 0; i < target.n; i++) {
    unsigned char ch = (unsigned char)target.p[i];
    if (ch <= 0x20 || ch >= 0x7f) return refuse(c, 400, "bad_request", "invalid character in the target") - 1;
  }
  if (span_is(version, "HTTP/1.1")) {
    r->http10 = 0;
  } else if (span_is(version, "HTTP/1.0")) {
    r->http10 = 1;
  } else if (version.n == 8 && memcmp(version.p, "HTTP/", 5) == 0 && version.p[6] == '.') {
    return refuse(c, 505, "version_not_supported", "HTTP/1.1 or HTTP/1.0 only") - 1;
  } else {
    return refuse(c, 400, "bad_request", "malformed HTTP version") - 1;
  }
  h[method.p - h + method.n] = '\0';
  h[target.p - h + target.n] = '\0';
  r->method = method.p;
  r->target = target.p;

  int hosts = 0, lengths = 0, encodings = 0, auths = 0, expects = 0;
  span_t te = {NULL, 0};
  for (size_t k = 1; k < count; k++) {
    span_t l = lines[k];
    if (l.p[0] == ' ' || l.p[0] == '\t') return refuse(c, 400, "bad_request", "obsolete line folding") - 1;
    const char *colon = memchr(l.p, ':', l.n);
    if (colon == NULL || colon == l.p) return refuse(c, 400, "bad_request", "malformed header line") - 1;
    span_t name = {l.p, (size_t)(colon - l.p)};
    for (size_t i = 0; i < name.n; i++)
      if (!is_tchar((unsigned char)name.p[i])) return refuse(c, 400, "bad_request", "malformed header name") - 1;
    span_t v = {colon + 1, (size_t)(l.p + l.n - colon - 1)};
    while (v.n > 0 && (v.p[0] == ' ' || v.p[0] == '\t')) v.p++, v.n--;
    while (v.n > 0 && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\t')) v.n--;
    for (size_t i = 0; i < v.n; i++)
      if (!is_value_char((unsigned char)v.p[i])) return refuse(c, 400, "bad_request", "control character in a header value") - 1;
    h[v.p - h + v.n] = '\0';  /* after the value's last byte: the line's own end or trailing blanks */
    if (span_is_nocase(name, "host")) {
      hosts++;
    } else if (span_is_nocase(name, "content-length")) {
      lengths++;
      if (v.n == 0 || v.n > 18) return refuse(c, 400, "bad_request", "malformed Content-Length") - 1;
      unsigned long long value = 0;
      for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9') return refuse(c, 400, "bad_request", "malformed Content-Length") - 1;
        value = value * 10 + (unsigned)(v.p[i] - '0');
      }
      r->content_length = value;
      r->has_length = 1;
    } else if (span_is_nocase(name, "transfer-encoding")) {
      encodings++;
      te = v;
    } else if (span_is_nocase(name, "connection")) {
      if (span_has_token(v, "close")) r->close_after = 1;
    } else if (span_is_nocase(name, "expect")) {
      expects++;
      if (!span_is_nocase(v, "100-continue")) return refuse(c, 417, "expectation_failed", "only 100-continue is supported") - 1;
      r->expect_continue = 1;
    } else if (span_is_nocase(name, "authorization")) {
      auths++;
      r->authorization = v.p;
    } else if (span_is_nocase(name, "x-forwarded-for")) {
      r->forwarded_for = v.p;
    }
  }
  if (!r->http10 && hosts != 1) return refuse(c, 400, "bad_request", "HTTP/1.1 needs exactly one Host header") - 1;
  if (hosts > 1 || lengths > 1 || encodings > 1 || auths > 1 || expects > 1)
    return refuse(c, 400, "bad_request", "a header that may appear once appears twice") - 1;
  if (te.p != NULL) {
    if (r->http10) return refuse(c, 400, "bad_request", "Transfer-Encoding in an HTTP/1.0 request") - 1;
    if (!span_is_nocase(te, "chunked"))
      return refuse(c, 501, "unsupported_transfer_encoding", "only Transfer-Encoding chunked is supported") - 1;
    if (r->has_length) return refuse(c, 400, "bad_request", "both Content-Length and Transfer-Encoding") - 1;
    r->chunked = 1;
  }
  if (r->http10) r->close_after = 1;
  return 0;
}

/* Makes sure buf holds at least `need` unconsumed bytes. IO_OK or a failure of fill. */
static int want(conn_t *c, size_t need, int64_t deadline) {
  while (c->len - c->pos < need) {
    int rc = fill(c, deadline, 0);
    if (rc != IO_OK) return rc;
  }
  return IO_OK;
}

static int body_failure(conn_t *c, int rc) {
  if (rc == IO_TIMEOUT) return refuse(c, 408, "body_timeout", "the body did not arrive in time");
  if (rc == IO_FULL) return refuse(c, 400, "bad_request", "malformed chunked body");
  return refuse(c, 0, "incomplete_request", "the connection ended inside the body");
}

/* Reads one CRLF-terminated line of a chunked body into line (NUL-terminated), counting it against *budget. */
static int chunk_line(conn_t *c, char *line, size_t size, size_t *budget, int64_t deadline, int *rc_out) {
  for (;;) {
    char *start = c->buf + c->pos;
    size_t avail = c->len - c->pos;
    for (size_t i = 0; i < avail; i++) {
      if (start[i] == '\n') {
        if (i == 0 || start[i - 1] != '\r') return -2;
        size_t l = i - 1;
        if (l + 2 > *budget || l >= size) return -3;
        memcpy(line, start, l);
        line[l] = '\0';
        /* No control character but HTAB (a NUL would end the size for strspn and hide what follows). */
        for (size_t k = 0; k < l; k++)
          if (!is_value_char((unsigned char)line[k])) return -2;
        *budget -= l + 2;
        c->pos += i + 1;
        return 0;
      }
    }
    if (avail + 2 > *budget || avail >= size) return -3;
    int rc = fill(c, deadline, 0);
    if (rc != IO_OK) {
      *rc_out = rc;
      return -1;
    }
  }
}

/* Reads the body. 0 with *body / *len, or -1 (refused and answered). */
static int read_body(conn_t *c, request_t *r, size_t head_bytes, unsigned char **body, size_t *len) {
  cli_serve *s = c->s;
  int64_t deadline = now_ms() + s->limits.body_timeout_ms;
  *body = NULL;
  *len = 0;
  if (!r->chunked) {
    if (!r->has_length || r->content_length == 0) return 0;
    if (r->content_length > s->limits.max_body_bytes) {
      refuse(c, 413, "body_too_large", "the body is larger than the server accepts");
      return -1;
    }
    size_t need = (size_t)r->content_length;
    unsigned char *b = malloc(need + 1);
    if (b == NULL) return refuse(c, 503, "out_of_memory", "cannot hold the body") - 1;
    size_t have = c->len - c->pos < need ? c->len - c->pos : need;
    memcpy(b, c->buf + c->pos, have);
    c->pos += have;
    if (have < need && r->expect_continue) {
      static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
      if (send_all(c, cont, sizeof cont - 1, 0, now_ms() + s->limits.write_timeout_ms) != 0) {
        free(b);
        return -1;
      }
    }
    while (have < need) {
      int w = wait_in(c, deadline, 0);
      if (w != IO_OK) {
        free(b);
        return body_failure(c, w) - 1;
      }
      ssize_t n = recv(c->fd, b + have, need - have, 0);
      if (n > 0) {
        have += (size_t)n;
      } else if (n == 0) {
        free(b);
        return body_failure(c, IO_EOF) - 1;
      } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        free(b);
        return body_failure(c, IO_ERROR) - 1;
      }
    }
    *body = b;
    *len = need;
    return 0;
  }

  /* chunked: sizes, data, trailers; decoded bytes against the body limit, lines against what is left of the
   * header limit. */
  if (r->expect_continue) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (send_all(c, cont, sizeof cont - 1, 0, now_ms() + s->limits.write_timeout_ms) != 0) return -1;
  }
  size_t budget = s->limits.max_header_bytes > head_bytes ? s->limits.max_header_bytes - head_bytes : 0;
  size_t cap = s->limits.max_body_bytes;
  unsigned char *b = malloc(cap + 1);
  if (b == NULL) return refuse(c, 503, "out_of_memory", "cannot hold the body") - 1;
  size_t total = 0;
  char line[256];
  for (;;) {
    int rc = IO_OK;
    int lr = chunk_line(c, line, sizeof line, &budget, deadline, &rc);
    if (lr == -1) {
      free(b);
      return body_failure(c, rc) - 1;
    }
    if (lr < 0) {
      free(b);
      return refuse(c, 400, "bad_request", "malformed chunk size line") - 1;
    }
    size_t digits = strspn(line, "0123456789abcdefABCDEF");
    if (digits == 0 || digits > MAX_CHUNK_HEX || (line[digits] != '\0' && line[digits] != ';')) {
      free(b);
      return refuse(c, 400, "bad_request", "malformed chunk size") - 1;
    }
    for (char *p = line + digits; *p; p++)
      if (!is_value_char((unsigned char)*p)) {
        free(b);
        return refuse(c, 400, "bad_request", "malformed chunk extension") - 1;
      }
    line[digits] = '\0';
    size_t size = (size_t)strtoul(line, NULL, 16);
    if (size == 0) break;
    if (size > cap - total) {
      free(b);
      refuse(c, 413, "body_too_large", "the body is larger than the server accepts");
      return -1;
    }
    while (size > 0) {
      if (c->len == c->pos) {
        int fr = fill(c, deadline, 0);
        if (fr != IO_OK) {
          free(b);
          return body_failure(c, fr) - 1;
        }
      }
      size_t take = c->len - c->pos < size ? c->len - c->pos : size;
      memcpy(b + total, c->buf + c->pos, take);
      c->pos += take;
      total += take;
      size -= take;
    }
    int wr = want(c, 2, deadline);
    if (wr != IO_OK) {
      free(b);
      return body_failure(c, wr) - 1;
    }
    if (c->buf[c->pos] != '\r' || c->buf[c->pos + 1] != '\n') {
      free(b);
      return refuse(c, 400, "bad_request", "chunk data not followed by CRLF") - 1;
    }
    c->pos += 2;
  }
  /* Trailers (ignored), then the empty line. */
  for (;;) {
    int rc = IO_OK;
    int lr = chunk_line(c, line, sizeof line, &budget, deadline, &rc);
    if (lr == -1) {
      free(b);
      return body_failure(c, rc) - 1;
    }
    if (lr < 0) {
      free(b);
      return refuse(c, lr == -3 ? 431 : 400, lr == -3 ? "header_too_large" : "bad_request", "malformed or oversized trailers") - 1;
    }
    if (line[0] == '\0') break;
  }
  *body = b;
  *len = total;
  return 0;
}

/* Serves one request. 1: the connection stays open for the next one; 0: close it. */
static int serve_one(conn_t *c, int first) {
  cli_serve *s = c->s;
  const cli_serve_limits *lim = &s->limits;
  /* Wait for the request's first byte: a new connection within the header timeout, a kept-alive one within the
   * idle timeout; either gives up when the server stops. */
  if (c->len == c->pos) {
    int64_t deadline = first ? c->accepted_ms + lim->header_timeout_ms : now_ms() + lim->idle_timeout_ms;
    /* A kept-alive connection waits no longer than its lifetime (keep is 0 after it, so this is a safeguard). */
    int64_t end_of_life = c->accepted_ms + lim->max_connection_lifetime_ms;
    if (!first && deadline > end_of_life) deadline = end_of_life;
    int rc = fill(c, deadline, 1);
    if (rc == IO_TIMEOUT && first) emit(s, "header_timeout", 0, c->remote, "no request sent");
    if (rc != IO_OK) return 0;
  }
  int64_t header_deadline = (first ? c->accepted_ms : now_ms()) + lim->header_timeout_ms;

  /* Find the end of the headers (CRLF CRLF), refusing a bare CR or LF as soon as it arrives. Empty lines before
   * the request line are skipped (RFC 9112 2.2) but counted. */
  size_t skipped = 0, scanned = 0, end = 0;
  for (;;) {
    char *p = c->buf + c->pos;
    size_t avail = c->len - c->pos;
    while (scanned == 0 && avail >= 2 && p[0] == '\r' && p[1] == '\n') {
      c->pos += 2;
      skipped += 2;
      p += 2;
      avail -= 2;
    }
    for (; scanned < avail; scanned++) {
      char ch = p[scanned];
      if (ch == '\n') {
        if (scanned == 0 || p[scanned - 1] != '\r') return refuse(c, 400, "bad_request", "bare LF in the headers");
        if (scanned >= 3 && p[scanned - 2] == '\n' && p[scanned - 3] == '\r') {
          end = scanned + 1;
          break;
        }
      } else if (scanned > 0 && p[scanned - 1] == '\r') {
        return refuse(c, 400, "bad_request", "bare CR in the headers");
      }
    }
    if (end > 0) break;
    if (avail + skipped > lim->max_header_bytes) {
      int line_done = memchr(p, '\n', avail) != NULL;
      return line_done ? refuse(c, 431, "header_too_large", "the request headers are larger than the server accepts")
                       : refuse(c, 414, "uri_too_long", "the request line is longer than the server accepts");
    }
    int rc = fill(c, header_deadline, 0);
    if (rc == IO_TIMEOUT) return refuse(c, 408, "header_timeout", "the request headers did not arrive in time");
    if (rc == IO_FULL) return refuse(c, 431, "header_too_large", "the request headers are larger than the server accepts");
    if (rc != IO_OK) {
      if (c->len - c->pos > 0) emit(s, "incomplete_request", 0, c->remote, "the connection ended inside the headers");
      return 0;
    }
  }
  if (end + skipped > lim->max_header_bytes) {
    const char *lf = memchr(c->buf + c->pos, '\n', end);
    return lf != NULL && (size_t)(lf - (c->buf + c->pos)) + 1 + skipped > lim->max_header_bytes
               ? refuse(c, 414, "uri_too_long", "the request line is longer than the server accepts")
               : refuse(c, 431, "header_too_large", "the request headers are larger than the server accepts");
  }

  request_t r;
  memset(&r, 0, sizeof r);
  r.head = malloc(end + 1);
  if (r.head == NULL) return refuse(c, 503, "out_of_memory", "cannot hold the request");
  memcpy(r.head, c->buf + c->pos, end);
  r.head[end] = '\0';
  c->pos += end;
  if (parse_head(c, &r, end) != 0) {
    free(r.head);
    return 0;
  }
  unsigned char *body = NULL;
  size_t body_len = 0;
  if (read_body(c, &r, end + skipped, &body, &body_len) != 0) {
    free(r.head);
    return 0;
  }

  const char *q = strchr(r.target, '?');
  size_t path_len = q ? (size_t)(q - r.target) : strlen(r.target);
  char *path = strndup(r.target, path_len);
  int head_only = strcmp(r.method, "HEAD") == 0;
  cli_serve_request req = {
      .method = head_only ? "GET" : r.method,
      .path = path ? path : "/",
      .query = q ? q + 1 : "",
      .authorization = r.authorization,
      .forwarded_for = r.forwarded_for,
      .remote = c->remote,
      .body = body,
      .body_len = body_len,
      .connection_id = c->id,
  };
  cli_serve_response resp;
  memset(&resp, 0, sizeof resp);
  s->handler(s->context, &req, &resp);
  /* The connection's last request when the client or the server says so, or at the connection's request cap or
   * lifetime: its slot is then free again within one request's time, however often the client sends. */
  c->requests++;
  int keep = !r.close_after && !s->stopping && c->requests < lim->max_requests_per_connection &&
             now_ms() < c->accepted_ms + (int64_t)lim->max_connection_lifetime_ms;
  int status = resp.status >= 100 && resp.status <= 599 ? resp.status : 500;
  int wrote = respond(c, status, resp.content_type, resp.headers, resp.body, resp.body_len, head_only, keep);
  free(resp.headers);
  free(resp.body);
  free(path);
  free(body);
  free(r.head);
  return wrote == 0 && keep;
}

static void *conn_main(void *arg) {
  conn_t *c = arg;
  cli_serve *s = c->s;
  c->cap = s->limits.max_header_bytes + READ_SLACK;
  c->buf = malloc(c->cap);
  if (c->buf != NULL) {
    int first = 1;
    while (serve_one(c, first)) first = 0;
  }
  close(c->fd);
  free(c->buf);
  pthread_mutex_lock(&s->mu);
  s->active--;
  address_release(s, c->address);
  pthread_cond_broadcast(&s->done);
  pthread_mutex_unlock(&s->mu);
  free(c);
  return NULL;
}

/* A connection over the cap (or one no thread could be started for): 503 on the accepting thread, without
 * waiting (a new socket's send buffer takes the few bytes at once), then closed. */
static void refuse_connection(cli_serve *s, int fd, const char *remote, const char *reason, const char *message) {
  emit(s, reason, 503, remote, message);
  char body[256], msg[512];
  int bl = snprintf(body, sizeof body, "{\"error\":{\"reason\":\"%s\",\"message\":\"%s\"}}", reason, message);
  int n = snprintf(msg, sizeof msg,
                   "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                   "Retry-After: 1\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n%s",
                   bl, body);
  if (n > 0 && (size_t)n < sizeof msg) {
    ssize_t w = send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
  }
  shutdown(fd, SHUT_WR);
  char sink[4096];
  while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
  close(fd);
}

unsigned cli_serve_run(cli_serve *s, cli_serve_handler handler, cli_serve_event event, void *context) {
  s->handler = handler;
  s->event = event;
  s->context = context;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, THREAD_STACK);
  while (!s->stopping) {
    struct pollfd p[2] = {{s->listen_fd, POLLIN, 0}, {s->stop_pipe[0], POLLIN, 0}};
    int n = poll(p, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      emit(s, "poll_failed", 0, NULL, strerror(errno));
      break;
    }
    if (p[1].revents) break;
    if (!(p[0].revents & POLLIN)) continue;
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    int fd = accept4(s->listen_fd, (struct sockaddr *)&addr, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      /* Out of descriptors or memory: say so, and let connections end before trying again. */
      emit(s, "accept_failed", 0, NULL, strerror(errno));
      struct pollfd stop = {s->stop_pipe[0], POLLIN, 0};
      poll(&stop, 1, 100);
      continue;
    }
    char remote[INET6_ADDRSTRLEN + 16];
    format_peer(&addr, remote, sizeof remote);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    unsigned char key[17];
    address_key(&addr, key);
    pthread_mutex_lock(&s->mu);
    if (s->active >= s->limits.max_connections) {
      pthread_mutex_unlock(&s->mu);
      refuse_connection(s, fd, remote, "too_many_connections", "the server is at its connection limit");
      continue;
    }
    if (!address_take(s, key)) {
      pthread_mutex_unlock(&s->mu);
      refuse_connection(s, fd, remote, "too_many_connections_from_address",
                        "the server is at its connection limit for this client address");
      continue;
    }
    conn_t *c = calloc(1, sizeof *c);
    if (c != NULL) {
      c->s = s;
      c->fd = fd;
      c->id = ++s->next_id;
      c->accepted_ms = now_ms();
      memcpy(c->remote, remote, sizeof remote);
      memcpy(c->address, key, sizeof key);
      s->active++;
    } else {
      address_release(s, key);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_t t;
    if (c == NULL || pthread_create(&t, &attr, conn_main, c) != 0) {
      if (c != NULL) {
        pthread_mutex_lock(&s->mu);
        s->active--;
        address_release(s, key);
        pthread_mutex_unlock(&s->mu);
        free(c);
      }
      refuse_connection(s, fd, remote, "no_thread", "the server cannot take another connection now");
    }
  }
  pthread_attr_destroy(&attr);
  s->stopping = 1;
  close(s->listen_fd);
  s->listen_fd = -1;
  pthread_mutex_lock(&s->mu);
  unsigned busy = s->active;
  pthread_mutex_unlock(&s->mu);
  char detail[64];
  snprintf(detail, sizeof detail, "%u connections open", busy);
  emit(s, "stopped_accepting", 0, NULL, detail);

  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += s->limits.drain_timeout_ms / 1000;
  until.tv_nsec += (long)(s->limits.drain_timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->mu);
  while (s->active > 0) {
    if (pthread_cond_timedwait(&s->done, &s->mu, &until) == ETIMEDOUT) break;
  }
  busy = s->active;
  pthread_mutex_unlock(&s->mu);
  return busy;
}
