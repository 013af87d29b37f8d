/* cli_http.h - the appstoreserver tool's blocking HTTP/1.1 client: plain sockets for http://, OpenSSL's libssl for
 * https:// (linked statically by cli/build), following the rules of every transport of this project
 * (CONTRIBUTING.md, docs/hardening.md):
 *   - timeout_ms is a deadline for the whole exchange: name lookup, connecting, the TLS handshake, sending the
 *     request and reading the whole answer together;
 *   - at most max_body bytes of body are read: a larger Content-Length fails at once, and reading stops as soon
 *     as a body without one (chunked, or ended by the connection closing) goes past the limit;
 *   - redirects are never followed (a 3xx is returned as it is), nothing is decompressed (no Accept-Encoding is
 *     sent; a Content-Encoding the server sends anyway is returned undecoded);
 *   - https:// verifies the certificate chain and the host name (or IP address) of the URL. Trust anchors:
 *     $SSL_CERT_FILE and/or $SSL_CERT_DIR when set, else the first CA bundle found of
 *     /etc/ssl/certs/ca-certificates.crt (Debian, Ubuntu), /etc/pki/tls/certs/ca-bundle.crt (RHEL, Fedora,
 *     Amazon Linux), /etc/ssl/ca-bundle.pem (SUSE), /etc/ssl/cert.pem (Alpine, macOS-like layouts), else the
 *     hashed directory /etc/ssl/certs. (A statically linked OpenSSL's compiled-in default is Debian's path.)
 * Safe to call from several threads at once. */
#ifndef CLI_HTTP_H
#define CLI_HTTP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return values: the library's TransportError kinds (APPSTORE_TRANSPORT_*). */
enum { CLI_HTTP_OK = 0, CLI_HTTP_TIMEOUT = 1, CLI_HTTP_UNREACHABLE = 2, CLI_HTTP_FAILED = 3 };

typedef struct cli_http_response {
  int status;
  size_t header_count;
  char **header_names;   /* header_count NUL-terminated names, in order of appearance */
  char **header_values;  /* their values, surrounding blanks removed */
  unsigned char *body;
  size_t body_len;
} cli_http_response;

/* Sends one request (Connection: close) and reads the answer into *out (free it with cli_http_response_free, also
 * after a failure). headers: count names and values (Host, Content-Length, Connection and Transfer-Encoding are the
 * client's own and refused here). On failure returns CLI_HTTP_TIMEOUT/UNREACHABLE/FAILED and writes a message into
 * error (error_size bytes, NUL-terminated). */
int cli_http_send(const char *method, const char *url, const char *const *header_names,
                  const char *const *header_values, size_t header_count, const unsigned char *body, size_t body_len,
                  unsigned timeout_ms, size_t max_body, cli_http_response *out, char *error, size_t error_size);

void cli_http_response_free(cli_http_response *response);

/* Where the trust anchors for https:// come from (as described above), or NULL with a reason in error when none
 * was found. For diagnostics and tests. */
const char *cli_http_ca_source(char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif
