/* cli_serve.h - the appstoreserver tool's HTTP/1.1 server (`appstoreserver serve`, docs/serve.md): plain sockets,
 * no TLS (a reverse proxy terminates it), one thread per connection up to a cap, strict parsing and hard limits so
 * that a slow or hostile client cannot hold more than its share:
 *   - the request line and headers together at most max_header_bytes (else 431, or 414 for the request line alone),
 *     at most 100 header lines, CRLF line ends only (a bare CR or LF is 400), no obs-fold, header names tokens,
 *     no control characters in values; origin-form targets only; HTTP/1.0 and HTTP/1.1 (others 505);
 *   - HTTP/1.1 needs exactly one Host; Content-Length is digits, given once; Transfer-Encoding may only be
 *     `chunked` (others 501), never together with Content-Length (400), decoded with the body limit applied to
 *     the decoded bytes and the chunk lines and trailers counted against max_header_bytes;
 *   - a body at most max_body_bytes (413 at once when Content-Length says more: nothing of it is read);
 *     Expect: 100-continue is answered after that check (other expectations 417);
 *   - deadlines, not per-read timeouts: the headers must be complete header_timeout_ms after the request's first
 *     byte (for a new connection: after it was accepted), the body body_timeout_ms after the headers (408 and the
 *     connection closed); a keep-alive connection may wait idle_timeout_ms for its next request; a response must
 *     be taken within write_timeout_ms;
 *   - at most max_connections connections at once: one more is answered 503 (Retry-After: 1) and closed; at most
 *     max_connections_per_address of them from one client address (0: no cap of its own), the same way;
 *   - a connection serves at most max_requests_per_connection requests and starts none after
 *     max_connection_lifetime_ms from its acceptance (the last one answered with Connection: close; an idle wait
 *     ends there too), so that no client holds a slot longer than the lifetime plus one request's header, body and
 *     write timeouts and its handling.
 * Refusals at this layer are answered here (JSON {"error": {"reason", "message"}}, Connection: close) and
 * reported to the event callback; complete requests go to the handler, on the connection's thread.
 * cli_serve_stop (async-signal-safe) stops accepting: the listening socket is closed, idle keep-alive
 * connections are closed, requests already begun are finished (their responses say Connection: close), and
 * cli_serve_run returns when none is left or drain_timeout_ms has passed. */
#ifndef CLI_SERVE_H
#define CLI_SERVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cli_serve_limits {
  size_t max_header_bytes;     /* request line + header lines (and a chunked body's size lines and trailers) */
  size_t max_body_bytes;
  unsigned header_timeout_ms;
  unsigned body_timeout_ms;
  unsigned idle_timeout_ms;
  unsigned write_timeout_ms;
  unsigned max_connections;
  unsigned drain_timeout_ms;
  unsigned max_requests_per_connection;   /* >= 1 */
  unsigned max_connection_lifetime_ms;    /* >= 1 */
  unsigned max_connections_per_address;   /* 0: only max_connections */
} cli_serve_limits;

typedef struct cli_serve_request {
  const char *method;          /* as sent (a token); HEAD is answered like GET without the body */
  const char *path;            /* the target up to '?', undecoded */
  const char *query;           /* after '?', undecoded; "" when none */
  const char *authorization;   /* the Authorization value, or NULL */
  const char *forwarded_for;   /* X-Forwarded-For, or NULL (for logs only: a client can send anything) */
  const char *remote;          /* the peer, "address:port" */
  const unsigned char *body;
  size_t body_len;
  unsigned long long connection_id;
} cli_serve_request;

typedef struct cli_serve_response {
  int status;
  const char *content_type;    /* a static string, or NULL for application/json */
  char *headers;               /* more header lines ("Name: value\r\n"...), malloc'd or NULL; freed by the server */
  unsigned char *body;         /* malloc'd or NULL; freed by the server */
  size_t body_len;
} cli_serve_response;

/* Answers one request: fills *response (status 0 means 500). Called on the connection's thread, concurrently. */
typedef void (*cli_serve_handler)(void *context, const cli_serve_request *request, cli_serve_response *response);

/* A refusal or incident at the HTTP layer: event is a reason such as "body_too_large", "header_timeout",
 * "too_many_connections", "bad_request"; status the HTTP status answered (0: none, the connection was closed);
 * detail a short text (no request data beyond what the reason needs). Called on any thread, concurrently. */
typedef void (*cli_serve_event)(void *context, const char *event, int status, const char *remote, const char *detail);

typedef struct cli_serve cli_serve;

/* Binds host:port (host: an IPv4 or IPv6 literal, or a name; port 0 picks a free one) and listens. NULL with a
 * message in error on failure. */
cli_serve *cli_serve_listen(const char *host, unsigned port, const cli_serve_limits *limits, char *error,
                            size_t error_size);

/* The port bound (the one picked for port 0). */
unsigned cli_serve_port(const cli_serve *server);

/* Whether the server is stopping (for a health check to say so), and how many connections are open now. */
int cli_serve_is_stopping(const cli_serve *server);
unsigned cli_serve_connections(cli_serve *server);

/* SIGTERM and SIGINT call cli_serve_stop(server) (a second one exits at once, status 1); SIGPIPE is ignored. */
void cli_serve_stop_on_signals(cli_serve *server);

/* Accepts and serves until stopped, then drains. Returns the number of connections still busy when the drain
 * timeout passed (0: every request begun was answered). */
unsigned cli_serve_run(cli_serve *server, cli_serve_handler handler, cli_serve_event event, void *context);

/* Async-signal-safe; may be called from any thread, any number of times. */
void cli_serve_stop(cli_serve *server);

/* After cli_serve_run returned 0 (with busy connections left, leave the server allocated: they still use it). */
void cli_serve_free(cli_serve *server);

#ifdef __cplusplus
}
#endif
#endif
