/*
 * appstoreserver.h — the C API of libappstoreserver: App Store signed-data verification (and, in later
 * versions, signature creation, App Store Server API requests and receipts) from one Swift implementation.
 *
 * CONVENTIONS (they hold for every function below unless its comment says otherwise)
 *
 *  - Names are appstore_<type>_<verb>. Opaque handles come from appstore_<type>_new and are released with
 *    appstore_<type>_free; _free(NULL) does nothing. Freeing a handle twice, or using it after _free, is
 *    undefined behaviour (the library cannot detect it).
 *  - Every fallible function returns an appstore_status: APPSTORE_OK (0) on success, a non-zero code otherwise.
 *    Outputs (out-parameters, always last) are written ONLY on success; on failure they are left untouched.
 *  - Error detail: the last parameter `appstore_error **err_out` may be NULL. When it is not NULL and the call
 *    fails, *err_out receives a new appstore_error (status, reason, message) that the caller frees with
 *    appstore_error_free. There is no global or thread-local "last error", so concurrent calls never race.
 *  - Memory: strings the library returns through `char **` are NUL-terminated UTF-8, allocated by the library,
 *    and owned by the caller, who frees them with appstore_string_free. `const char *` results (names, version,
 *    error messages) are owned by the library or by the handle they came from: do not free them.
 *  - Inputs are borrowed for the duration of the call only; the library copies what it keeps. A pointer and its
 *    length are adjacent parameters (ptr, len). `const char *` inputs without a length are NUL-terminated UTF-8.
 *  - Threads: every function may be called from any thread, and concurrently on one shared handle (verifiers are
 *    immutable; option builders lock internally). No function starts threads. The only calls back into the host
 *    are a configured transport's callback (see Transport), made on the thread that called the library.
 *  - Bad input (NULL where a value is required, invalid UTF-8, malformed data) returns an error with a reason;
 *    it never aborts the process.
 *  - ABI: until 1.0 the SONAME carries the major version (libappstoreserver.so.0); symbols are only added within
 *    a minor series; structured data crosses as JSON text, so Apple adding fields never changes the ABI.
 */
#ifndef APPSTORESERVER_H
#define APPSTORESERVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version -------------------------------------------------------------------------------------------- */

#define APPSTORE_VERSION_MAJOR 0
#define APPSTORE_VERSION_MINOR 1
#define APPSTORE_VERSION_PATCH 0
#define APPSTORE_VERSION_STRING "0.1.0"

/* The runtime library version, e.g. "0.1.0". Static storage: do not free. */
const char *appstore_version(void);

/* ---- Status codes (frozen values) ----------------------------------------------------------------------- */

typedef int32_t appstore_status;

#define APPSTORE_OK 0
/* A required argument is NULL, not valid UTF-8, or out of range. */
#define APPSTORE_INVALID_ARGUMENT 1
/* The options do not make a usable verifier (no roots, Production without app Apple ID, online checks without a
 * transport, ...). */
#define APPSTORE_CONFIGURATION_ERROR 2
/* Apple's verification statuses (VerificationStatus / VerificationException in Apple's libraries). */
#define APPSTORE_VERIFICATION_FAILURE 3
/* Online checks only: the OCSP responder could not be reached, timed out, answered non-200 or "try later". Nothing
 * was learnt about the data; verify again later. Never cached. */
#define APPSTORE_RETRYABLE_VERIFICATION_FAILURE 4
#define APPSTORE_INVALID_APP_IDENTIFIER 5
#define APPSTORE_INVALID_ENVIRONMENT 6
#define APPSTORE_INVALID_CHAIN_LENGTH 7
#define APPSTORE_INVALID_CERTIFICATE 8
#define APPSTORE_INVALID_JWT_FORMAT 9
/* A signing key that cannot be used (not PEM, encrypted, truncated, not EC P-256). */
#define APPSTORE_INVALID_KEY 10
/* A bug or resource exhaustion inside the library. */
#define APPSTORE_INTERNAL_ERROR 99

/* Apple-style name of a status ("VERIFICATION_FAILURE", "OK", ...); "UNKNOWN" for other values. Static. */
const char *appstore_status_name(appstore_status status);

/* ---- Failure reasons (finer than statuses; frozen values) ----------------------------------------------- */

typedef int32_t appstore_reason;

#define APPSTORE_REASON_NONE 0
#define APPSTORE_REASON_MALFORMED 1                  /* not three base64url segments, header not JSON, payload not JSON */
#define APPSTORE_REASON_UNSUPPORTED_ALG 2            /* alg is not ES256 */
#define APPSTORE_REASON_MISSING_X5C 3                /* no x5c header */
#define APPSTORE_REASON_CHAIN_LENGTH 4               /* x5c is not exactly 3 certificates */
#define APPSTORE_REASON_BAD_CERTIFICATE 5            /* x5c entry not base64 / not DER / leaf key not P-256 */
#define APPSTORE_REASON_NO_TRUST_ANCHOR 6            /* no root certificates configured */
#define APPSTORE_REASON_UNTRUSTED_CHAIN 7            /* chain does not lead to a configured root */
#define APPSTORE_REASON_EXPIRED 8                    /* a certificate is not valid at the effective date */
#define APPSTORE_REASON_MISSING_MARKER_OID 9         /* Apple's leaf or intermediate marker extension missing */
#define APPSTORE_REASON_BAD_SIGNATURE 10             /* ES256 signature wrong, or not 64-byte r||s */
#define APPSTORE_REASON_UNDECODABLE_PAYLOAD 11       /* signed JSON does not decode into the expected model */
#define APPSTORE_REASON_WRONG_BUNDLE 12
#define APPSTORE_REASON_WRONG_APP_ID 13
#define APPSTORE_REASON_WRONG_ENVIRONMENT 14
#define APPSTORE_REASON_WRONG_KIND 15                /* e.g. a transaction given to the notification call */
#define APPSTORE_REASON_ONLINE_CHECKS_UNAVAILABLE 16  /* online checks on, but no transport to reach OCSP responders */
#define APPSTORE_REASON_INVALID_ARGUMENT 17
#define APPSTORE_REASON_INTERNAL 18
#define APPSTORE_REASON_KEY_NOT_PEM 19              /* no -----BEGIN PRIVATE KEY----- block */
#define APPSTORE_REASON_KEY_ENCRYPTED 20            /* encrypted PKCS#8: provide the plain .p8 */
#define APPSTORE_REASON_KEY_MALFORMED 21            /* truncated or corrupt PEM/DER */
#define APPSTORE_REASON_KEY_NOT_EC 22               /* RSA, Ed25519, ... */
#define APPSTORE_REASON_KEY_WRONG_CURVE 23          /* EC, but not P-256 */
#define APPSTORE_REASON_INVALID_REQUEST 24          /* a request model breaks Apple's limits; the message names the field */
#define APPSTORE_REASON_SIGNING_FAILED 25
/* Online checks (OCSP of the intermediate and the leaf), APPSTORE_VERIFICATION_FAILURE: */
#define APPSTORE_REASON_REVOKED 80                  /* the message names the certificate, revocation time and reason */
#define APPSTORE_REASON_OCSP_UNKNOWN 81             /* the responder does not know the certificate */
#define APPSTORE_REASON_OCSP_BAD_SIGNATURE 82       /* answer not signed by the issuer or a responder it authorised */
#define APPSTORE_REASON_OCSP_STALE 83               /* thisUpdate in the future or nextUpdate passed (60 s skew) */
#define APPSTORE_REASON_OCSP_MALFORMED 84           /* not a DER OCSP response, not basic, unreadable fields */
#define APPSTORE_REASON_OCSP_CERT_ID_MISMATCH 85    /* the answer is about other certificates */
#define APPSTORE_REASON_OCSP_NONCE_MISMATCH 86      /* the answer echoes another nonce (replay) */
#define APPSTORE_REASON_OCSP_REFUSED 87             /* responseStatus malformedRequest / sigRequired / unauthorized */
#define APPSTORE_REASON_OCSP_NO_RESPONDER 88        /* the certificate names no http(s) OCSP URL */
/* ... and APPSTORE_RETRYABLE_VERIFICATION_FAILURE: */
#define APPSTORE_REASON_OCSP_UNREACHABLE 89         /* the transport reported UNREACHABLE or FAILED */
#define APPSTORE_REASON_OCSP_TIMEOUT 90             /* the transport reported TIMEOUT */
#define APPSTORE_REASON_OCSP_HTTP_ERROR 91          /* HTTP status other than 200 */
#define APPSTORE_REASON_OCSP_TRY_LATER 92           /* responseStatus tryLater / internalError */

/* snake_case name of a reason ("bad_signature", ...); "unknown" for other values. Static. */
const char *appstore_reason_name(appstore_reason reason);

/* ---- Errors --------------------------------------------------------------------------------------------- */

typedef struct appstore_error appstore_error;

/* Accessors; each returns 0 / "" when err is NULL. The message is owned by err and lives until
 * appstore_error_free(err). */
appstore_status appstore_error_status(const appstore_error *err);
appstore_reason appstore_error_reason(const appstore_error *err);
const char *appstore_error_message(const appstore_error *err);
void appstore_error_free(appstore_error *err);

/* ---- Memory --------------------------------------------------------------------------------------------- */

/* Frees a string the library returned through a `char **` out-parameter. NULL is ignored. */
void appstore_string_free(char *s);

/* ---- Verifier ------------------------------------------------------------------------------------------- */

typedef int32_t appstore_environment;

#define APPSTORE_ENVIRONMENT_SANDBOX 1
#define APPSTORE_ENVIRONMENT_PRODUCTION 2
#define APPSTORE_ENVIRONMENT_XCODE 3          /* StoreKit testing in Xcode: signatures are not checked */
#define APPSTORE_ENVIRONMENT_LOCAL_TESTING 4  /* local testing: signatures are not checked */

/* Verifier options: a builder, so options can be added without changing any struct layout.
 * Defaults: no roots, bundle id "", no app Apple ID, Sandbox, online checks off, no transport (OCSP timeout 30 s),
 * chain cache 32 entries / 900 s. */
typedef struct appstore_verifier_options appstore_verifier_options;

appstore_status appstore_verifier_options_new(appstore_verifier_options **options_out, appstore_error **err_out);
void appstore_verifier_options_free(appstore_verifier_options *options);

/* Adds a trusted root certificate (DER, copied). For App Store data: Apple Root CA - G3. x5c[2] of a JWS is
 * never trusted; only these roots are. */
appstore_status appstore_verifier_options_add_root(appstore_verifier_options *options, const uint8_t *der,
                                                   size_t der_len, appstore_error **err_out);
/* The app's bundle identifier (NUL-terminated UTF-8, copied). */
appstore_status appstore_verifier_options_set_bundle_id(appstore_verifier_options *options, const char *bundle_id,
                                                        appstore_error **err_out);
/* The app's Apple ID; required for Production. */
appstore_status appstore_verifier_options_set_app_apple_id(appstore_verifier_options *options, int64_t app_apple_id,
                                                           appstore_error **err_out);
/* One of APPSTORE_ENVIRONMENT_*. */
appstore_status appstore_verifier_options_set_environment(appstore_verifier_options *options,
                                                          appstore_environment environment, appstore_error **err_out);
/* Online (OCSP) checks, 0 = off, 1 = on. On: chains are validated at the current time (not the payload's date), and
 * the intermediate and the leaf are checked for revocation at the OCSP responders their certificates name, through
 * the transport set with appstore_verifier_options_set_transport (see Transport). Hard fail: only a fresh, properly
 * signed "good" for both passes; responder trouble gives APPSTORE_RETRYABLE_VERIFICATION_FAILURE. A good answer is
 * reused with the chain (chain cache) until the cache TTL or the answer's nextUpdate, whichever is first; failures
 * are never cached. Without a transport, appstore_verifier_new fails with APPSTORE_CONFIGURATION_ERROR /
 * APPSTORE_REASON_ONLINE_CHECKS_UNAVAILABLE instead of silently skipping. */
appstore_status appstore_verifier_options_set_online_checks(appstore_verifier_options *options, int32_t enabled,
                                                            appstore_error **err_out);
/* Verified-chain cache: at most max_entries chains (0 disables the cache, so with online checks every call asks the
 * responders), each reused for ttl_seconds (>= 0). */
appstore_status appstore_verifier_options_set_chain_cache(appstore_verifier_options *options, uint32_t max_entries,
                                                          int64_t ttl_seconds, appstore_error **err_out);

/* A configured, immutable, thread-safe verifier. The options are read, not consumed: free them separately. */
typedef struct appstore_verifier appstore_verifier;

appstore_status appstore_verifier_new(const appstore_verifier_options *options, appstore_verifier **verifier_out,
                                      appstore_error **err_out);
void appstore_verifier_free(appstore_verifier *verifier);

/* Verify-and-decode calls. `jws`/`jws_len` is the compact JWS (no NUL needed). On success, when json_out is not
 * NULL, *json_out receives the decoded payload as UTF-8 JSON exactly as Apple signed it (unknown keys kept);
 * free it with appstore_string_free. json_out may be NULL to verify only. With online checks on and the chain not
 * cached, a call makes up to two OCSP exchanges through the transport, one after the other, on the calling thread
 * (so it may block up to twice the OCSP timeout). */
appstore_status appstore_verifier_verify_notification(const appstore_verifier *verifier, const char *jws,
                                                      size_t jws_len, char **json_out, appstore_error **err_out);
appstore_status appstore_verifier_verify_transaction(const appstore_verifier *verifier, const char *jws,
                                                     size_t jws_len, char **json_out, appstore_error **err_out);
appstore_status appstore_verifier_verify_renewal_info(const appstore_verifier *verifier, const char *jws,
                                                      size_t jws_len, char **json_out, appstore_error **err_out);
appstore_status appstore_verifier_verify_app_transaction(const appstore_verifier *verifier, const char *jws,
                                                         size_t jws_len, char **json_out, appstore_error **err_out);
/* A Retention Messaging "Get Retention Message" realtime request body's signedPayload. */
appstore_status appstore_verifier_verify_realtime_request(const appstore_verifier *verifier, const char *jws,
                                                          size_t jws_len, char **json_out, appstore_error **err_out);
/* Verifies a notification and the signed values nested in it (data.signedTransactionInfo, data.signedRenewalInfo,
 * appData.signedAppTransactionInfo), each at its own effective date. *json_out is
 *   {"notification":{...},"transaction":{...},"renewalInfo":{...},"appTransaction":{...}}
 * with the nested keys present only when the notification carries them. A nested failure fails the call, and
 * the error message starts with the field name (e.g. "data.signedTransactionInfo: ..."). */
appstore_status appstore_verifier_verify_notification_deep(const appstore_verifier *verifier, const char *jws,
                                                           size_t jws_len, char **json_out, appstore_error **err_out);

/* Chain cache counters since the verifier was created. Any out-pointer may be NULL. */
appstore_status appstore_verifier_cache_stats(const appstore_verifier *verifier, uint64_t *hits_out,
                                              uint64_t *misses_out, uint64_t *entries_out, appstore_error **err_out);

/* ---- Signing ------------------------------------------------------------------------------------------- */

/* An App Store Connect key (PKCS#8 PEM .p8, EC P-256) with the identifiers every signature needs. Immutable and
 * thread-safe; key memory is cleansed when it is freed. Key bytes never appear in error messages. */
typedef struct appstore_signing_key appstore_signing_key;

/* `pem`/`pem_len`: the .p8 text (copied, then cleansed). key_id and bundle_id are required; issuer_id (the App
 * Store Connect issuer) may be NULL when only promotional offer v1 signatures are made. Failure: status
 * APPSTORE_INVALID_KEY with reason KEY_NOT_PEM / KEY_ENCRYPTED / KEY_MALFORMED / KEY_NOT_EC / KEY_WRONG_CURVE, or
 * APPSTORE_INVALID_ARGUMENT. */
appstore_status appstore_signing_key_new(const char *pem, size_t pem_len, const char *key_id, const char *issuer_id,
                                         const char *bundle_id, appstore_signing_key **key_out,
                                         appstore_error **err_out);
void appstore_signing_key_free(appstore_signing_key *key);

/* App Store Server API bearer token: ES256 JWT, header alg/kid/typ JWT, claims iss, iat, exp, aud
 * "appstoreconnect-v1", bid. issued_at: seconds since 1970, 0 = now. lifetime_seconds: 0 = 300; at most 3600
 * (Apple's maximum), larger is rejected. *token_out: free with appstore_string_free. */
appstore_status appstore_signing_key_create_api_token(const appstore_signing_key *key, int64_t issued_at,
                                                      int64_t lifetime_seconds, char **token_out,
                                                      appstore_error **err_out);

/* Promotional offer signature v1 (StoreKit 1): standard base64 DER ECDSA over the U+2063-joined string of bundle
 * id, key id, product id, offer id, lowercase app_account_token (NULL = ""), lowercase nonce, timestamp (ms).
 * nonce: a UUID, or NULL for a fresh random one; timestamp_ms: 0 = now. On success *signature_out (required),
 * *nonce_out and *timestamp_out (each optional, may be NULL) receive what was signed. */
appstore_status appstore_signing_key_create_promotional_offer_v1(const appstore_signing_key *key,
                                                                 const char *product_id, const char *offer_id,
                                                                 const char *app_account_token, const char *nonce,
                                                                 int64_t timestamp_ms, char **signature_out,
                                                                 char **nonce_out, int64_t *timestamp_out,
                                                                 appstore_error **err_out);

/* Promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when not
 * NULL. No exp; fresh lowercase UUID nonce. */
appstore_status appstore_signing_key_create_promotional_offer_v2(const appstore_signing_key *key,
                                                                 const char *product_id,
                                                                 const char *offer_identifier,
                                                                 const char *transaction_id, char **jws_out,
                                                                 appstore_error **err_out);

/* Introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
 * (JSON boolean; allow must be 0 or 1), transactionId (required). */
appstore_status appstore_signing_key_create_introductory_offer_eligibility(const appstore_signing_key *key,
                                                                           const char *product_id, int32_t allow,
                                                                           const char *transaction_id,
                                                                           char **jws_out, appstore_error **err_out);

/* Advanced Commerce in-app JWS (aud "advanced-commerce-api"): `request_json` is one of the four in-app request
 * models as JSON, chosen by its "operation" key (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
 * REACTIVATE_SUBSCRIPTION). It is decoded, validated against Apple's limits (failure: APPSTORE_INVALID_ARGUMENT,
 * reason INVALID_REQUEST, message naming the field), re-encoded with operation and version "1", and its standard
 * base64 is the `request` claim. */
appstore_status appstore_signing_key_create_advanced_commerce_in_app(const appstore_signing_key *key,
                                                                     const char *request_json,
                                                                     size_t request_json_len, char **jws_out,
                                                                     appstore_error **err_out);

/* ---- Transport (host-supplied HTTP) ---------------------------------------------------------------------- */

/* The library never opens sockets. Where it needs a network exchange (App Store Server API calls, OCSP), the host
 * supplies a transport: a callback that performs one HTTP request synchronously and fills in the response.
 *
 * The callback receives the method, the absolute URL, the request headers as "Name: value\r\n" lines
 * (`headers`/`headers_len`, NUL-terminated too), the body (`body`/`body_len`, may be NULL when 0) and the timeout for
 * the whole exchange in milliseconds. All inputs are valid only during the call. It reports the response through
 * `response` with appstore_http_response_set_status (required), _add_header and _append_body, and returns
 * APPSTORE_TRANSPORT_OK, or APPSTORE_TRANSPORT_TIMEOUT / _UNREACHABLE / _FAILED when no response was obtained.
 * It is called on the thread that called the library function, possibly from several threads at once, and must
 * not call back into the library except through the appstore_http_response_* functions. */
typedef struct appstore_http_response appstore_http_response;

#define APPSTORE_TRANSPORT_OK 0
#define APPSTORE_TRANSPORT_TIMEOUT 1
#define APPSTORE_TRANSPORT_UNREACHABLE 2
#define APPSTORE_TRANSPORT_FAILED 3

typedef int32_t (*appstore_transport_fn)(void *user_data, const char *method, const char *url, const char *headers,
                                         size_t headers_len, const uint8_t *body, size_t body_len,
                                         uint32_t timeout_ms, appstore_http_response *response);

/* For use inside the callback only; `response` is valid until the callback returns. Status must be 100-599. */
appstore_status appstore_http_response_set_status(appstore_http_response *response, int32_t status,
                                                  appstore_error **err_out);
appstore_status appstore_http_response_add_header(appstore_http_response *response, const char *name,
                                                  const char *value, appstore_error **err_out);
appstore_status appstore_http_response_append_body(appstore_http_response *response, const uint8_t *data,
                                                   size_t len, appstore_error **err_out);

/* A transport handle: the callback and its user_data (borrowed: keep it alive until appstore_transport_free and
 * until every handle using the transport is freed). */
typedef struct appstore_transport appstore_transport;

appstore_status appstore_transport_new(appstore_transport_fn fn, void *user_data, appstore_transport **transport_out,
                                       appstore_error **err_out);
void appstore_transport_free(appstore_transport *transport);

/* The transport a verifier uses for online checks (OCSP), and the time one OCSP exchange may take (timeout_ms, passed
 * to the callback; 0 = 30000, Apple's). The request is a POST of the DER OCSP request to the URL in the certificate,
 * with headers "Content-Type: application/ocsp-request" and "Accept: application/ocsp-response"; the library checks
 * the response itself (status 200, then the OCSP answer). transport NULL removes the transport. The options, and
 * every verifier made from them, keep their own reference to the transport: appstore_transport_free may be called
 * at any time, but user_data must stay valid until those are freed too. */
appstore_status appstore_verifier_options_set_transport(appstore_verifier_options *options,
                                                        const appstore_transport *transport, uint32_t timeout_ms,
                                                        appstore_error **err_out);

#ifdef __cplusplus
}
#endif

#endif /* APPSTORESERVER_H */
