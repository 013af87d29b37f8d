/*
 * appstoreserver.h — the C API of libappstoreserver: App Store signed-data verification, signature creation,
 * App Store Server API requests and legacy receipts from one Swift implementation.
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
 *    it never aborts the process. Hostile input is refused cheaply: sizes are checked before input is read (JWS:
 *    max_jws_bytes; receipts, keys, request JSON: the limits stated per function), JSON nesting is limited to 32
 *    levels and BER nesting to 32, a JWS signature is checked before its chain, the chain cache or any OCSP exchange,
 *    and receipt parsing is linear in the input.
 *  - Stack: every function runs within 64 KiB of the calling thread's stack (tested on 64 KiB threads with hostile
 *    input: deep JSON, deep BER), so hosts with small thread stacks (musl's 128 KiB default) are safe.
 *  - ABI: until 1.0 the SONAME carries the major version (libappstoreserver.so.0); symbols are only added within
 *    a minor series (a new minor version may change or remove them: CHANGELOG.md says which); structured data
 *    crosses as JSON text, so Apple adding fields never changes the ABI.
 */
#ifndef APPSTORESERVER_H
#define APPSTORESERVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Annotations for readers and binding generators; they expand to nothing.
 *   APPSTORE_OPTIONAL      the pointer argument may be NULL: an input left out, or an output the caller does not want.
 *                          Without it a pointer is required (err_out is always optional, see CONVENTIONS).
 *   APPSTORE_JSON(Model)   the text is JSON of this model of spec/models.json (endpoint_params, endpoint_response and
 *                          endpoint_pages: the endpoint's parameters object, response model, and array of pages). */
#define APPSTORE_OPTIONAL
#define APPSTORE_JSON(model)

/* ---- Version -------------------------------------------------------------------------------------------- */

/* @generated version: scripts/generate from spec/; do not edit by hand */
/* The header's version (the VERSION file); appstore_version() is the loaded library's. */
#define APPSTORE_VERSION_MAJOR 0
#define APPSTORE_VERSION_MINOR 3
#define APPSTORE_VERSION_PATCH 0
#define APPSTORE_VERSION_STRING "0.3.0"
/* @end version */

/* The runtime library version, e.g. "0.3.0". Static storage: do not free. */
const char *appstore_version(void);

/* ---- Status codes (frozen values) ----------------------------------------------------------------------- */

/* A status: APPSTORE_OK or one of the failure codes below. */
typedef int32_t appstore_status;

/* @generated statuses: scripts/generate from spec/; do not edit by hand */
#define APPSTORE_OK 0 /* success */
/* a required argument is NULL, not valid UTF-8, or out of range; nothing was done */
#define APPSTORE_INVALID_ARGUMENT 1
/* the options do not make a usable verifier or client (no roots, Production without app Apple ID, online checks
 * without a transport, ...) */
#define APPSTORE_CONFIGURATION_ERROR 2
#define APPSTORE_VERIFICATION_FAILURE 3 /* the signed data is not genuine or not valid (Apple's VERIFICATION_FAILURE) */
/* online checks only: no OCSP answer could be obtained; nothing was learnt about the data, verify again later; never
 * cached */
#define APPSTORE_RETRYABLE_VERIFICATION_FAILURE 4
#define APPSTORE_INVALID_APP_IDENTIFIER 5 /* the data is for another app (bundle id or app Apple ID) */
#define APPSTORE_INVALID_ENVIRONMENT 6 /* the data is from another environment */
#define APPSTORE_INVALID_CHAIN_LENGTH 7 /* the x5c chain is missing or not exactly 3 certificates */
#define APPSTORE_INVALID_CERTIFICATE 8 /* an x5c certificate cannot be read */
/* not a compact JWS, or its JSON does not decode (Apple's Swift status; Python and Node report VERIFICATION_FAILURE) */
#define APPSTORE_INVALID_JWT_FORMAT 9
/* a signing key that cannot be used (not PEM, encrypted, truncated, not EC P-256), or an external signer that failed */
#define APPSTORE_INVALID_KEY 10
/* receipts: a well-formed receipt that holds no transaction id (Apple's libraries return null / nil) */
#define APPSTORE_NOT_FOUND 11
/* receipts: not a receipt of the expected kind (not base64, not BER / PKCS#7, wrong kind, undecodable field) */
#define APPSTORE_INVALID_RECEIPT 12
/* App Store Server API: Apple answered with an HTTP error status (see appstore_error_http_status / _api_error_code /
 * _retry_after) */
#define APPSTORE_API_ERROR 20
/* App Store Server API: no answer; the transport timed out, could not connect, or failed */
#define APPSTORE_TRANSPORT_ERROR 21
/* App Store Server API: Apple answered with a success status, but the body does not decode into the endpoint's model */
#define APPSTORE_INVALID_RESPONSE 22
/* App Store Server API: the client's own rate limiter (opt-in) had no free slot within the wait allowed; nothing was
 * sent; appstore_error_retry_at_ms says when the next slot is free */
#define APPSTORE_RATE_LIMITED 23
/* the purchase ledger's database failed (I/O error, disk full, a lock held too long, a database server unreachable);
 * nothing was acknowledged; try again later */
#define APPSTORE_STORAGE_ERROR 24
#define APPSTORE_INTERNAL_ERROR 99 /* a bug or resource exhaustion inside the library */
/* @end statuses */

/* Apple-style name of a status ("VERIFICATION_FAILURE", "OK", ...); "UNKNOWN" for other values. Static. */
const char *appstore_status_name(appstore_status status);

/* ---- Failure reasons (finer than statuses; frozen values) ----------------------------------------------- */

/* A failure reason: one of the APPSTORE_REASON_* codes below. */
typedef int32_t appstore_reason;

/* @generated reasons: scripts/generate from spec/; do not edit by hand */
#define APPSTORE_REASON_NONE 0 /* no failure [OK] */
/* not three base64url segments, header not JSON, payload not JSON [INVALID_JWT_FORMAT] */
#define APPSTORE_REASON_MALFORMED 1
#define APPSTORE_REASON_UNSUPPORTED_ALG 2 /* alg is not ES256 [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_MISSING_X5C 3 /* no x5c header [INVALID_CHAIN_LENGTH] */
#define APPSTORE_REASON_CHAIN_LENGTH 4 /* x5c has certificates, but not exactly 3 [INVALID_CHAIN_LENGTH] */
/* x5c entry not base64 / not DER / leaf key not P-256 [INVALID_CERTIFICATE/CONFIGURATION_ERROR] */
#define APPSTORE_REASON_BAD_CERTIFICATE 5
/* no root certificates configured [VERIFICATION_FAILURE/CONFIGURATION_ERROR] */
#define APPSTORE_REASON_NO_TRUST_ANCHOR 6
#define APPSTORE_REASON_UNTRUSTED_CHAIN 7 /* chain does not lead to a configured root [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_EXPIRED 8 /* a certificate is not valid at the effective date [VERIFICATION_FAILURE] */
/* Apple's leaf or intermediate marker extension missing [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_MISSING_MARKER_OID 9
#define APPSTORE_REASON_BAD_SIGNATURE 10 /* ES256 signature wrong, or not 64-byte r||s [VERIFICATION_FAILURE] */
/* signed JSON does not decode into the expected model [INVALID_JWT_FORMAT/INVALID_RECEIPT] */
#define APPSTORE_REASON_UNDECODABLE_PAYLOAD 11
#define APPSTORE_REASON_WRONG_BUNDLE 12 /* the payload's bundle id is not the verifier's [INVALID_APP_IDENTIFIER] */
/* the payload's app Apple ID is not the verifier's (Production) [INVALID_APP_IDENTIFIER] */
#define APPSTORE_REASON_WRONG_APP_ID 13
#define APPSTORE_REASON_WRONG_ENVIRONMENT 14 /* the payload's environment is not the verifier's [INVALID_ENVIRONMENT] */
/* e.g. a transaction given to the notification call [INVALID_APP_IDENTIFIER/INVALID_ENVIRONMENT/INVALID_RECEIPT] */
#define APPSTORE_REASON_WRONG_KIND 15
/* online checks on, but no transport to reach OCSP responders [CONFIGURATION_ERROR] */
#define APPSTORE_REASON_ONLINE_CHECKS_UNAVAILABLE 16
/* a required argument is NULL, not UTF-8, out of range, or a request JSON key is unknown
 * [INVALID_ARGUMENT/CONFIGURATION_ERROR] */
#define APPSTORE_REASON_INVALID_ARGUMENT 17
#define APPSTORE_REASON_INTERNAL 18 /* a bug or resource exhaustion inside the library [INTERNAL_ERROR] */
#define APPSTORE_REASON_KEY_NOT_PEM 19 /* no -----BEGIN PRIVATE KEY----- block [INVALID_KEY] */
#define APPSTORE_REASON_KEY_ENCRYPTED 20 /* encrypted PKCS#8: provide the plain .p8 [INVALID_KEY] */
#define APPSTORE_REASON_KEY_MALFORMED 21 /* truncated or corrupt PEM/DER [INVALID_KEY] */
#define APPSTORE_REASON_KEY_NOT_EC 22 /* RSA, Ed25519, ... [INVALID_KEY] */
#define APPSTORE_REASON_KEY_WRONG_CURVE 23 /* EC, but not P-256 [INVALID_KEY] */
/* a request model breaks Apple's limits; the message names the field [INVALID_ARGUMENT] */
#define APPSTORE_REASON_INVALID_REQUEST 24
#define APPSTORE_REASON_SIGNING_FAILED 25 /* OpenSSL could not create the signature [INTERNAL_ERROR] */
/* the input is larger than the documented limit (JWS: the verifier's max_jws_bytes, 1 MiB by default; receipts: 16
 * MiB of base64); refused before it is read [INVALID_JWT_FORMAT/INVALID_RECEIPT/INVALID_ARGUMENT] */
#define APPSTORE_REASON_INPUT_TOO_LARGE 26
/* an external signer (a key held in a KMS or HSM) failed, or returned something that is not an ECDSA P-256 signature
 * [INVALID_KEY] */
#define APPSTORE_REASON_SIGNER_FAILED 27
#define APPSTORE_REASON_EMPTY_X5C 28 /* the x5c header is an empty list (no certificates) [INVALID_CHAIN_LENGTH] */
/* receipt not base64 / not BER / not PKCS#7 SignedData / bad attributes [INVALID_RECEIPT] */
#define APPSTORE_REASON_RECEIPT_MALFORMED 40
/* with APPSTORE_NOT_FOUND: the receipt has no transaction id [NOT_FOUND] */
#define APPSTORE_REASON_NO_TRANSACTION_ID 41
/* receipt unsigned, or without its signer's certificate [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_SIGNER_MISSING 42
/* the Xcode environment has no App Store Server API [CONFIGURATION_ERROR] */
#define APPSTORE_REASON_UNSUPPORTED_ENVIRONMENT 60
#define APPSTORE_REASON_UNKNOWN_ENDPOINT 61 /* not one of the APPSTORE_ENDPOINT_* endpoint names [INVALID_ARGUMENT] */
/* params_json: not an object, unknown/missing key, wrong type [INVALID_ARGUMENT] */
#define APPSTORE_REASON_INVALID_PARAMETERS 62
#define APPSTORE_REASON_API_ERROR 63 /* HTTP error with Apple's error payload (errorCode, errorMessage) [API_ERROR] */
#define APPSTORE_REASON_HTTP_ERROR 64 /* HTTP error without an App Store error payload [API_ERROR] */
#define APPSTORE_REASON_RATE_LIMITED 65 /* HTTP 429 [API_ERROR, retryable] */
/* success status, body does not decode (message says what) [INVALID_RESPONSE] */
#define APPSTORE_REASON_UNDECODABLE_RESPONSE 66
#define APPSTORE_REASON_TRANSPORT_TIMEOUT 67 /* the transport reported TIMEOUT [TRANSPORT_ERROR, retryable] */
#define APPSTORE_REASON_TRANSPORT_UNREACHABLE 68 /* the transport reported UNREACHABLE [TRANSPORT_ERROR, retryable] */
/* the transport reported FAILED, or the response body exceeded 64 MiB [TRANSPORT_ERROR] */
#define APPSTORE_REASON_TRANSPORT_FAILED 69
/* appstore_api_client_call without a configured transport [CONFIGURATION_ERROR] */
#define APPSTORE_REASON_NO_TRANSPORT 70
/* the client's rate limiter: no slot for the endpoint within the allowed wait [RATE_LIMITED, retryable] */
#define APPSTORE_REASON_LOCAL_RATE_LIMIT 71
/* the client's timeout, a deadline for the whole call, ran out: a wait (backoff, Retry-After, rate-limit slot) would
 * end past it, or the external signer answered after it (its answer discarded) [TRANSPORT_ERROR, retryable] */
#define APPSTORE_REASON_DEADLINE_EXCEEDED 72
/* the message names the certificate, revocation time and reason [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_REVOKED 80
#define APPSTORE_REASON_OCSP_UNKNOWN 81 /* the responder does not know the certificate [VERIFICATION_FAILURE] */
/* answer not signed by the issuer or a responder it authorised [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_OCSP_BAD_SIGNATURE 82
/* thisUpdate in the future or nextUpdate passed (60 s skew) [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_OCSP_STALE 83
/* not a DER OCSP response, not basic, unreadable fields [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_OCSP_MALFORMED 84
#define APPSTORE_REASON_OCSP_CERT_ID_MISMATCH 85 /* the answer is about other certificates [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_OCSP_NONCE_MISMATCH 86 /* the answer echoes another nonce (replay) [VERIFICATION_FAILURE] */
/* responseStatus malformedRequest / sigRequired / unauthorized [VERIFICATION_FAILURE] */
#define APPSTORE_REASON_OCSP_REFUSED 87
#define APPSTORE_REASON_OCSP_NO_RESPONDER 88 /* the certificate names no http(s) OCSP URL [VERIFICATION_FAILURE] */
/* the transport reported UNREACHABLE or FAILED [RETRYABLE_VERIFICATION_FAILURE, retryable] */
#define APPSTORE_REASON_OCSP_UNREACHABLE 89
#define APPSTORE_REASON_OCSP_TIMEOUT 90 /* the transport reported TIMEOUT [RETRYABLE_VERIFICATION_FAILURE, retryable] */
#define APPSTORE_REASON_OCSP_HTTP_ERROR 91 /* HTTP status other than 200 [RETRYABLE_VERIFICATION_FAILURE, retryable] */
/* responseStatus tryLater / internalError [RETRYABLE_VERIFICATION_FAILURE, retryable] */
#define APPSTORE_REASON_OCSP_TRY_LATER 92
/* the ledger's database failed; the message is the database's own (SQLite, PostgreSQL) [STORAGE_ERROR, retryable] */
#define APPSTORE_REASON_STORAGE_FAILED 100
/* the ledger's database belongs to another app or environment (bundle id, environment, app Apple ID) than the
 * verifier's, or is a 0.3.0 ledger holding several; nothing was read or written [CONFIGURATION_ERROR] */
#define APPSTORE_REASON_LEDGER_IDENTITY_MISMATCH 101
/* @end reasons */

/* snake_case name of a reason ("bad_signature", ...); "unknown" for other values. Static. */
const char *appstore_reason_name(appstore_reason reason);

/* ---- Errors --------------------------------------------------------------------------------------------- */

/* The detail of a failed call, when err_out is not NULL (see CONVENTIONS): status, reason, message and, for API
 * calls, what Apple answered. */
typedef struct appstore_error appstore_error;

/* Accessors; each returns 0 / "" when err is NULL. The message is owned by err and lives until
 * appstore_error_free(err). */
appstore_status appstore_error_status(const appstore_error *err);
appstore_reason appstore_error_reason(const appstore_error *err);
const char *appstore_error_message(const appstore_error *err);
void appstore_error_free(appstore_error *err);

/* What Apple answered, for App Store Server API failures (APPSTORE_API_ERROR, APPSTORE_INVALID_RESPONSE):
 * the HTTP status (0 when there was no answer), the raw errorCode of Apple's error payload (0 when none; kept when
 * this library does not know the code), the known code's name ("transactionIdNotFound", "" when unknown or none),
 * Apple's errorMessage ("" when none), and the Retry-After header: _retry_after in seconds from the answer, rounded
 * up (0 when the time has passed), _retry_at_ms as the absolute time in milliseconds since 1970; both -1 when
 * absent, and for NULL err. Retry-After is read in all three forms: Apple's UNIX time in milliseconds (all-digit values
 * from 100000000000 up), delta-seconds (smaller all-digit values) and an HTTP-date. */
int32_t appstore_error_http_status(const appstore_error *err);
int64_t appstore_error_api_error_code(const appstore_error *err);
const char *appstore_error_api_error_name(const appstore_error *err);
const char *appstore_error_api_error_message(const appstore_error *err);
int64_t appstore_error_retry_after(const appstore_error *err);
int64_t appstore_error_retry_at_ms(const appstore_error *err);
/* The headers of Apple's answer (API failures with an answer; 0 / NULL otherwise and for NULL err), in the order
 * received, names as sent (compare them case-insensitively); NULL unless index < count. Owned by err. */
size_t appstore_error_header_count(const appstore_error *err);
const char *appstore_error_header_name(const appstore_error *err, size_t index);
const char *appstore_error_header_value(const appstore_error *err, size_t index);

/* ---- Memory --------------------------------------------------------------------------------------------- */

/* Frees a string the library returned through a `char **` out-parameter. NULL is ignored. */
void appstore_string_free(char *s);

/* ---- Diagnostics ---------------------------------------------------------------------------------------- */

/* How many objects the library has handed to its callers and not yet had back: live handles of every type,
 * appstore_error objects, and strings returned through `char **` not yet freed with appstore_string_free. For leak
 * checks: unlike the process's resident size it moves only when a caller forgets to free, never with caches,
 * arenas or a garbage collector's lag (scripts/leak-check). */
int64_t appstore_debug_live_objects(void);
/* The bytes the process's malloc has handed out and not had back (glibc's mallinfo2: arenas plus mmapped chunks;
 * mallinfo where mallinfo2 is missing), or -1 where the C library does not tell. For leak checks, read after a
 * collection in garbage-collected hosts. */
int64_t appstore_debug_malloc_in_use(void);

/* ---- Verifier ------------------------------------------------------------------------------------------- */

/* The environment signed data comes from and API calls go to: one of APPSTORE_ENVIRONMENT_*. */
typedef int32_t appstore_environment;

#define APPSTORE_ENVIRONMENT_SANDBOX 1        /* Apple's Sandbox */
#define APPSTORE_ENVIRONMENT_PRODUCTION 2     /* Apple's Production */
#define APPSTORE_ENVIRONMENT_XCODE 3          /* StoreKit testing in Xcode: signatures are not checked */
#define APPSTORE_ENVIRONMENT_LOCAL_TESTING 4  /* local testing: signatures are not checked */

/* Verifier options: a builder, so options can be added without changing any struct layout.
 * Defaults: no roots, bundle id "", no app Apple ID, Sandbox, online checks off, no transport (OCSP timeout 30 s),
 * chain cache 32 entries / 900 s, JWS of at most 1 MiB. */
typedef struct appstore_verifier_options appstore_verifier_options;

appstore_status appstore_verifier_options_new(appstore_verifier_options **options_out, appstore_error **err_out);
void appstore_verifier_options_free(appstore_verifier_options *options);

/* Adds trusted root certificates (copied): one DER certificate, or PEM text with one or more CERTIFICATE blocks
 * (each becomes a root). For App Store data: Apple Root CA - G3 (appstore_apple_root_der(0, ...)). x5c[2] of a JWS
 * is never trusted; only these roots are. At least one is required, except for the Xcode and LocalTesting
 * environments, which do not check signatures (appstore_verifier_new: APPSTORE_REASON_NO_TRUST_ANCHOR; input that is
 * neither DER nor PEM certificates: appstore_verifier_new fails with APPSTORE_REASON_BAD_CERTIFICATE). */
appstore_status appstore_verifier_options_add_root(appstore_verifier_options *options, const uint8_t *der,
                                                   size_t der_len, appstore_error **err_out);

/* Apple's root certificates, carried by the library so no download is needed, each with Apple's name and its
 * SHA-256 fingerprint as Apple publishes it ("63:34:3A:..."). Each is checked against that fingerprint
 * (https://www.apple.com/certificateauthority/) when first read; one that does not match is left out. First Apple
 * Root CA - G3 (App Store signed data), then Apple Inc. Root (app receipts).
 *
 * Index 0: Apple Root CA - G3; 1: Apple Inc. Root. For index < count: the DER (*len_out its length), the name, the
 * fingerprint; out of range: NULL and 0, or "". Static storage. */
size_t appstore_apple_root_count(void);
const uint8_t *appstore_apple_root_der(size_t index, APPSTORE_OPTIONAL size_t *len_out);
const char *appstore_apple_root_name(size_t index);
const char *appstore_apple_root_sha256(size_t index);
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

/* The largest JWS the verify calls accept, in bytes (default 1 MiB, 1048576; App Store JWS are a few KB, a deep
 * notification under 30 KB). A longer jws_len fails with APPSTORE_INVALID_JWT_FORMAT / APPSTORE_REASON_INPUT_TOO_LARGE
 * before a byte of the input is read. 1 ... 2147483647. */
appstore_status appstore_verifier_options_set_max_jws_bytes(appstore_verifier_options *options, size_t max_bytes,
                                                            appstore_error **err_out);

/* A configured, immutable, thread-safe verifier. The options are read, not consumed: free them separately. */
typedef struct appstore_verifier appstore_verifier;

appstore_status appstore_verifier_new(const appstore_verifier_options *options, appstore_verifier **verifier_out,
                                      appstore_error **err_out);
void appstore_verifier_free(appstore_verifier *verifier);

/* Verify-and-decode calls (each documented below). `jws`/`jws_len` is the compact JWS (no NUL needed). On success,
 * when json_out is not NULL, *json_out receives the decoded payload as UTF-8 JSON exactly as Apple signed it (unknown
 * keys kept); free it with appstore_string_free. json_out may be NULL to verify only. With online checks on and the
 * chain not cached, a call makes up to two OCSP exchanges through the transport, one after the other, on the calling
 * thread (so it may block up to twice the OCSP timeout, if the transport enforces it); a call that waits for another
 * thread checking the same chain waits at most twice the OCSP timeout + 1 s before it checks for itself. */

/* Verifies and decodes an App Store Server Notification V2 signedPayload. */
appstore_status appstore_verifier_verify_notification(const appstore_verifier *verifier, const char *jws,
                                                      size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(ResponseBodyV2DecodedPayload), appstore_error **err_out);
/* Verifies and decodes a notification but leaves the check of the app it names to the caller: Apple's
 * verifyNotification extension point, which a subclass may override to accept several apps.
 *
 * As appstore_verifier_verify_notification (signature, chain, payload), without its check of the bundle id, app Apple
 * ID and environment. *identity_json_out (required; free with appstore_string_free) receives what Apple's hook is
 * called with, taken from data, summary, externalPurchaseToken or appData in Apple's order:
 * {"bundleId":...,"appAppleId":...,"environment":...,"source":"data"}, each of the first three only when the
 * notification carries it ("source":"none" when it names no app). The caller then checks it, by default with
 * appstore_verifier_check_notification_identity; the notification is verified only when that check passes. */
appstore_status appstore_verifier_notification_leaving_identity(const appstore_verifier *verifier,
                                                                const char *jws, size_t jws_len,
                                                                APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(ResponseBodyV2DecodedPayload),
                                                                char **identity_json_out, appstore_error **err_out);
/* The app check of a notification on its own: the default of Apple's verifyNotification extension point.
 *
 * What appstore_verifier_verify_notification checks after the payload: bundle_id (NULL = none), app_apple_id (0 = none; checked in Production only, as Apple does) and environment (Apple's
 * name, "Sandbox", "Production", ...; NULL = none) against the verifier's: APPSTORE_OK, or APPSTORE_INVALID_APP_IDENTIFIER
 * (WRONG_BUNDLE, WRONG_APP_ID) / APPSTORE_INVALID_ENVIRONMENT (WRONG_ENVIRONMENT) with the message saying what
 * differs. */
appstore_status appstore_verifier_check_notification_identity(const appstore_verifier *verifier,
                                                              APPSTORE_OPTIONAL const char *bundle_id,
                                                              int64_t app_apple_id,
                                                              APPSTORE_OPTIONAL const char *environment,
                                                              appstore_error **err_out);
/* Verifies and decodes a signedTransaction (bundle id, then environment). */
appstore_status appstore_verifier_verify_transaction(const appstore_verifier *verifier, const char *jws,
                                                     size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(JWSTransactionDecodedPayload), appstore_error **err_out);
/* Verifies and decodes a signedRenewalInfo (the environment is checked; Apple checks no bundle id). */
appstore_status appstore_verifier_verify_renewal_info(const appstore_verifier *verifier, const char *jws,
                                                      size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(JWSRenewalInfoDecodedPayload), appstore_error **err_out);
/* Verifies and decodes a signed AppTransaction. */
appstore_status appstore_verifier_verify_app_transaction(const appstore_verifier *verifier, const char *jws,
                                                         size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(AppTransaction), appstore_error **err_out);
/* Verifies and decodes a Retention Messaging "Get Retention Message" realtime request body's signedPayload. */
appstore_status appstore_verifier_verify_realtime_request(const appstore_verifier *verifier, const char *jws,
                                                          size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(DecodedRealtimeRequestBody), appstore_error **err_out);
/* Verifies and decodes a notification and the signed values nested in it (data.signedTransactionInfo,
 * data.signedRenewalInfo, appData.signedAppTransactionInfo), each at its own effective date, all returned decoded
 * (notification, transaction, renewalInfo, appTransaction; each absent when the notification carries none). A nested
 * failure fails the call, and the error message starts with the field name (e.g. "data.signedTransactionInfo: ...").
 *
 * *json_out is {"notification":{...},"transaction":{...},"renewalInfo":{...},"appTransaction":{...}} with the nested
 * keys present only when the notification carries them. */
appstore_status appstore_verifier_verify_notification_deep(const appstore_verifier *verifier, const char *jws,
                                                           size_t jws_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(VerifiedNotification), appstore_error **err_out);

/* Chain cache counters since the verifier was created: hits, misses, and the chains cached now.
 *
 * Any out-pointer may be NULL. */
appstore_status appstore_verifier_cache_stats(const appstore_verifier *verifier, APPSTORE_OPTIONAL uint64_t *hits_out,
                                              APPSTORE_OPTIONAL uint64_t *misses_out,
                                              APPSTORE_OPTIONAL uint64_t *entries_out, appstore_error **err_out);

/* ---- Signing ------------------------------------------------------------------------------------------- */

/* An App Store Connect key (PKCS#8 PEM .p8, EC P-256) with the identifiers every signature needs. Immutable and
 * thread-safe; key memory is cleansed when it is freed. Key bytes never appear in error messages. */
typedef struct appstore_signing_key appstore_signing_key;

/* `pem`/`pem_len`: the .p8 text, parsed in place (the library makes no copy of it; the caller owns and clears its
 * buffer); pem_len at most 1 MiB (1048576), larger is APPSTORE_INVALID_ARGUMENT before any byte is read. A key whose
 * private scalar does not match the public key stored with it (a corrupt file) is KEY_MALFORMED. key_id
 * and bundle_id are required; issuer_id (the App Store Connect issuer) may be NULL when only promotional offer v1
 * signatures are made. Failure: status APPSTORE_INVALID_KEY with reason KEY_NOT_PEM / KEY_ENCRYPTED /
 * KEY_MALFORMED / KEY_NOT_EC / KEY_WRONG_CURVE, or APPSTORE_INVALID_ARGUMENT. */
appstore_status appstore_signing_key_new(const char *pem, size_t pem_len, const char *key_id,
                                         APPSTORE_OPTIONAL const char *issuer_id,
                                         const char *bundle_id, appstore_signing_key **key_out,
                                         appstore_error **err_out);
void appstore_signing_key_free(appstore_signing_key *key);

/* A key held outside the process (a KMS or an HSM): every signature made with the key (API tokens, promotional
 * offers v1 and v2, introductory-offer eligibility, Advanced Commerce requests, the API client's bearer tokens) is
 * asked of `fn`. The library builds the header and claims (or the v1 payload) and passes the bytes to sign
 * (`message`/`message_len`) and their SHA-256 `digest` (32 bytes) for signers that take a digest. The callback
 * writes the ECDSA P-256 signature of SHA-256(message) into `signature` (capacity `signature_cap`, 72 bytes) as
 * 64 bytes r||s or as DER (what KMS and most HSMs return), sets *signature_len, and returns 0; any other return
 * value fails that signature with APPSTORE_INVALID_KEY / APPSTORE_REASON_SIGNER_FAILED, as does a signature that is
 * neither form or whose r or s is out of range, one that does not verify under `public_key` (another key's, another
 * message's, random bytes), and one that took longer than `timeout_ms` (0 = 10000): the library cannot interrupt
 * the callback, so the signer's own client must enforce that deadline. The callback's own `timeout_ms` is the time
 * this signature may take: the key's timeout, or less when an API call's deadline is nearer (what is left of the
 * client's timeout, which bounds the whole call); a signature that comes later is discarded and the call fails with
 * APPSTORE_TRANSPORT_ERROR / APPSTORE_REASON_DEADLINE_EXCEEDED. `public_key`/`public_key_len` (required,
 * read during the call): the signer's EC P-256 public key as PEM "-----BEGIN PUBLIC KEY-----" text or DER
 * SubjectPublicKeyInfo, as KMS and HSM APIs hand it out (else APPSTORE_INVALID_KEY / KEY_MALFORMED, KEY_NOT_EC,
 * KEY_WRONG_CURVE). Inputs are valid only during the call. The callback is called on the thread that asked for the
 * signature, possibly from several threads at once, and must not call back into the library. user_data (borrowed)
 * must stay valid until the key and every client made with it are freed. key_id, issuer_id and bundle_id as for
 * appstore_signing_key_new. */
typedef int32_t (*appstore_signer_fn)(void *user_data, const uint8_t *message, size_t message_len,
                                      const uint8_t *digest, uint8_t *signature, size_t signature_cap,
                                      size_t *signature_len, uint32_t timeout_ms);

appstore_status appstore_signing_key_new_with_signer(appstore_signer_fn fn, APPSTORE_OPTIONAL void *user_data,
                                                     const uint8_t *public_key, size_t public_key_len,
                                                     uint32_t timeout_ms, const char *key_id, APPSTORE_OPTIONAL const char *issuer_id,
                                                     const char *bundle_id, appstore_signing_key **key_out,
                                                     appstore_error **err_out);

/* An App Store Server API bearer token: an ES256 JWT with header alg, kid and typ JWT and claims iss, iat, exp, aud
 * "appstoreconnect-v1" and bid.
 *
 * issued_at: seconds since 1970, 0 = now. lifetime_seconds: 0 = 300; at most 3600 (Apple's maximum), larger is
 * rejected. *token_out: free with appstore_string_free. */
appstore_status appstore_signing_key_create_api_token(const appstore_signing_key *key, int64_t issued_at,
                                                      int64_t lifetime_seconds, char **token_out,
                                                      appstore_error **err_out);

/* A promotional offer signature v1 (StoreKit 1): the standard base64 DER ECDSA signature over the U+2063-joined
 * string of bundle id, key id, product id, offer id, lowercase application username (app account token), lowercase
 * nonce and timestamp (milliseconds since 1970).
 *
 * app_account_token: NULL = "". nonce: a UUID, or NULL for a fresh random one; timestamp_ms: 0 = now. On success
 * *signature_out (required), *nonce_out and *timestamp_out (each optional, may be NULL) receive what was signed. */
appstore_status appstore_signing_key_create_promotional_offer_v1(const appstore_signing_key *key,
                                                                 const char *product_id, const char *offer_id,
                                                                 APPSTORE_OPTIONAL const char *app_account_token,
                                                                 APPSTORE_OPTIONAL const char *nonce,
                                                                 int64_t timestamp_ms, char **signature_out,
                                                                 APPSTORE_OPTIONAL char **nonce_out,
                                                                 APPSTORE_OPTIONAL int64_t *timestamp_out,
                                                                 appstore_error **err_out);

/* A promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when one is
 * given. No exp; the nonce a lowercase UUID.
 *
 * nonce: a UUID (signed lowercased), or NULL for a fresh random one (Apple's Java creators take it from an overridable
 * createNonce()); anything else is APPSTORE_INVALID_ARGUMENT. */
appstore_status appstore_signing_key_create_promotional_offer_v2(const appstore_signing_key *key,
                                                                 const char *product_id,
                                                                 const char *offer_identifier,
                                                                 APPSTORE_OPTIONAL const char *transaction_id,
                                                                 APPSTORE_OPTIONAL const char *nonce,
                                                                 char **jws_out,
                                                                 appstore_error **err_out);

/* An introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
 * (a JSON boolean) and transactionId, all required.
 *
 * allow must be 0 or 1. nonce: a UUID, or NULL for a fresh random one, as for
 * appstore_signing_key_create_promotional_offer_v2. */
appstore_status appstore_signing_key_create_introductory_offer_eligibility(const appstore_signing_key *key,
                                                                           const char *product_id, int32_t allow,
                                                                           const char *transaction_id,
                                                                           APPSTORE_OPTIONAL const char *nonce,
                                                                           char **jws_out, appstore_error **err_out);

/* An Advanced Commerce in-app request JWS (aud "advanced-commerce-api"). The request is one of the four in-app
 * request models, chosen by its "operation" (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
 * REACTIVATE_SUBSCRIPTION); it is validated against Apple's limits (a failure names the field), re-encoded with
 * operation and version "1", and its standard base64 is the `request` claim. Keys the model does not know are refused
 * at every level (the message names the key path, e.g. "items[0].descripton"), so nothing given is dropped silently;
 * "version", when given, must be "1".
 *
 * `request_json`: the model as JSON, at most 1 MiB (1048576). Failures: APPSTORE_INVALID_ARGUMENT with reason
 * INVALID_REQUEST (a limit) or INVALID_ARGUMENT (an unknown key). nonce: a UUID, or NULL for a fresh random one, as
 * for appstore_signing_key_create_promotional_offer_v2. */
appstore_status appstore_signing_key_create_advanced_commerce_in_app(const appstore_signing_key *key,
                                                                     const char *request_json
                                                                         APPSTORE_JSON(AdvancedCommerceInAppRequest),
                                                                     size_t request_json_len,
                                                                     APPSTORE_OPTIONAL const char *nonce, char **jws_out,
                                                                     appstore_error **err_out);

/* ---- Transport (host-supplied HTTP) ---------------------------------------------------------------------- */

/* The library never opens sockets. Where it needs a network exchange (App Store Server API calls, OCSP), the host
 * supplies a transport: a callback that performs one HTTP request synchronously and fills in the response.
 *
 * The callback receives the method, the absolute URL, the request headers as "Name: value\r\n" lines
 * (`headers`/`headers_len`, NUL-terminated too), the body (`body`/`body_len`, may be NULL when 0) and the timeout for
 * the whole exchange in milliseconds. All inputs are valid only during the call. It reports the response through
 * `response` with appstore_http_response_set_status (required), _add_header and _append_body, and returns
 * APPSTORE_TRANSPORT_RESULT_OK, or APPSTORE_TRANSPORT_RESULT_TIMEOUT / _UNREACHABLE / _FAILED when no response was obtained.
 * It is called on the thread that called the library function, possibly from several threads at once.
 *
 * The callback MUST enforce `timeout_ms` itself (connect, send and receive together) and return
 * APPSTORE_TRANSPORT_RESULT_TIMEOUT when it runs out: the library cannot interrupt it, so a callback that ignores the timeout
 * blocks its caller for as long as it takes. With online checks, callers that meet a chain another thread is checking
 * wait for that thread's result at most 2 x the OCSP timeout + 1 s, then check for themselves (through the callback
 * again).
 * The callback MUST NOT call back into the library except through the appstore_http_response_* functions; in
 * particular it must not verify anything with the verifier that called it (the nested call could wait on the outer
 * one for that whole bound, and may recurse). */
typedef struct appstore_http_response appstore_http_response;

/* The largest response body the library accepts, counted after any content decoding (a gzip body counts as what it
 * inflates to): App Store Server API answers, and OCSP answers. Every transport, the bindings' own included, stops
 * reading once a body passes its limit and fails the exchange (never buffering more than the limit + one read). */
#define APPSTORE_LIMIT_API_RESPONSE_BYTES 16777216
#define APPSTORE_LIMIT_OCSP_RESPONSE_BYTES 1048576

/* What a transport callback returns: OK when it obtained a response, otherwise why there is none. */
#define APPSTORE_TRANSPORT_RESULT_OK 0
#define APPSTORE_TRANSPORT_RESULT_TIMEOUT 1
#define APPSTORE_TRANSPORT_RESULT_UNREACHABLE 2
#define APPSTORE_TRANSPORT_RESULT_FAILED 3

/* The transport callback described above: one HTTP exchange, reported through `response`. */
typedef int32_t (*appstore_transport_fn)(void *user_data, const char *method, const char *url, const char *headers,
                                         size_t headers_len, const uint8_t *body, size_t body_len,
                                         uint32_t timeout_ms, appstore_http_response *response);

/* For use inside the callback only; `response` is valid until the callback returns. Status must be 100-599, and
 * must be set: a callback that returns APPSTORE_TRANSPORT_RESULT_OK without a status fails the exchange. Redirects
 * must not be followed: report the 3xx answer as it is (API calls then fail with its status and Location).
 * _append_body may be called repeatedly; the body may total at most the exchange's limit:
 * APPSTORE_LIMIT_API_RESPONSE_BYTES for API calls, APPSTORE_LIMIT_OCSP_RESPONSE_BYTES for OCSP (the body as
 * decoded, if the callback asks for a content encoding), and appstore_http_response_body_limit tells which inside
 * the callback. An append beyond it is refused with APPSTORE_INVALID_ARGUMENT (nothing of it is kept), and the
 * exchange then fails as if the callback had returned APPSTORE_TRANSPORT_RESULT_FAILED, whatever it returns (online
 * checks: APPSTORE_RETRYABLE_VERIFICATION_FAILURE / APPSTORE_REASON_OCSP_UNREACHABLE; API calls:
 * APPSTORE_TRANSPORT_ERROR / APPSTORE_REASON_TRANSPORT_FAILED): stop reading at the limit. */
appstore_status appstore_http_response_set_status(appstore_http_response *response, int32_t status,
                                                  appstore_error **err_out);
appstore_status appstore_http_response_add_header(appstore_http_response *response, const char *name,
                                                  const char *value, appstore_error **err_out);
appstore_status appstore_http_response_append_body(appstore_http_response *response, const uint8_t *data,
                                                   size_t data_len, appstore_error **err_out);
/* The most body bytes this exchange accepts (0 for NULL). */
size_t appstore_http_response_body_limit(const appstore_http_response *response);

/* A transport handle: the callback and its user_data (borrowed: keep it alive until appstore_transport_free and
 * until every handle using the transport is freed). */
typedef struct appstore_transport appstore_transport;

appstore_status appstore_transport_new(appstore_transport_fn fn, APPSTORE_OPTIONAL void *user_data, appstore_transport **transport_out,
                                       appstore_error **err_out);
void appstore_transport_free(appstore_transport *transport);

/* ---- Receipts ------------------------------------------------------------------------------------------- */

/* Legacy receipts, for teams migrating off verifyReceipt. `receipt_b64`/`receipt_len` is the base64 text as the
 * device sent it (standard alphabet; line breaks and missing '=' padding are tolerated; no NUL needed; at most
 * 16 MiB). Parsing is bounded: hostile input (truncated, deeply nested, indefinite lengths without end, absurd
 * lengths) fails with APPSTORE_INVALID_RECEIPT / APPSTORE_REASON_RECEIPT_MALFORMED, quickly.
 *
 * Statuses of the three extraction calls:
 *   APPSTORE_OK                 *out_param set
 *   APPSTORE_NOT_FOUND          reason NO_TRANSACTION_ID: the receipt is well formed but holds no transaction id
 *                               (no in-app purchase records; no "purchase-info" / "transaction-id"). Apple's
 *                               libraries return null here. As with every failure, the output is left untouched.
 *   APPSTORE_INVALID_RECEIPT    reason RECEIPT_MALFORMED (with a message saying what is wrong), or WRONG_KIND (an app
 *                               receipt given to the transaction-receipt call or the reverse; the message names the
 *                               right call)
 *   APPSTORE_INVALID_ARGUMENT   NULL / empty receipt, NULL output, receipt text not UTF-8
 *
 * NONE of the extraction calls checks a signature: anyone can build a receipt that parses. Use the ids only to look
 * the customer up with the App Store Server API (Get Transaction History); use appstore_receipt_verifier_verify to
 * trust a receipt's contents. */

/* The first in-app transaction id of a base64 app receipt (PKCS#7, BER or DER, Xcode's extra OCTET STRING wrapping
 * included), as Apple's Python, Node and Java libraries return it: precisely the first attribute 1703 (transaction
 * id) or 1705 (original transaction id) in encoding order, which in Apple's receipts is the transaction id of the
 * first in-app record. (Apple's Swift library returns the last such value instead.) The signature is not checked.
 *
 * Apple's ReceiptUtility.extractTransactionId(appReceipt:). *id_out receives the id. No in-app records:
 * APPSTORE_NOT_FOUND. An id containing a NUL byte cannot be returned as a C string: APPSTORE_INVALID_RECEIPT /
 * RECEIPT_MALFORMED (the JSON of appstore_receipt_extract_transaction_ids carries it, escaped as \u0000). */
appstore_status appstore_receipt_extract_transaction_id(const char *receipt_b64, size_t receipt_len, char **id_out,
                                                        appstore_error **err_out);

/* Every transaction id of a base64 app receipt, which no Apple library offers: transactionIds (attribute 1703 of
 * each in-app record, in receipt order), originalTransactionIds (the distinct 1705 values in order of first
 * appearance), inApp (one entry per record with its transactionId and originalTransactionId, each absent when the
 * record lacks it) and firstTransactionId (the first in-app transaction id, as the single-id extraction returns it).
 * A receipt without in-app records gives empty lists and no firstTransactionId. The signature is not checked.
 *
 * *json_out receives
 *   {"firstTransactionId":"..."|null,"transactionIds":[...],"originalTransactionIds":[...],
 *    "inApp":[{"transactionId":"...","originalTransactionId":"..."},...]}
 * firstTransactionId: what appstore_receipt_extract_transaction_id returns. A receipt without in-app records is
 * APPSTORE_OK with empty arrays and a null firstTransactionId. */
appstore_status appstore_receipt_extract_transaction_ids(const char *receipt_b64, size_t receipt_len,
                                                         char **json_out APPSTORE_JSON(AppReceiptTransactionIds),
                                                         appstore_error **err_out);

/* The transaction id of an old-style (iOS 6) transaction receipt: base64 text with "purchase-info" = "<base64>";
 * whose decoded text has "transaction-id" = "<id>"; (matched as Apple's libraries do; the first match wins).
 *
 * Apple's ReceiptUtility.extractTransactionId(transactionReceipt:). No purchase-info or no transaction-id:
 * APPSTORE_NOT_FOUND. */
appstore_status appstore_transaction_receipt_extract_transaction_id(const char *receipt_b64, size_t receipt_len,
                                                                    char **id_out, appstore_error **err_out);

/* App receipt verification (beyond Apple's libraries). Immutable and thread-safe. */
typedef struct appstore_receipt_verifier appstore_receipt_verifier;

/* `root_ders[i]`/`root_lens[i]` for i < root_count: root certificates (copied), each DER or PEM text with one or more
 * certificates, the only trust anchors; for App Store receipts, Apple Inc. Root (appstore_apple_root_der(1, ...)). The certificates a receipt carries are only candidates for its intermediate.
 * bundle_id: NULL accepts any bundle id; otherwise a receipt for another bundle id fails (an empty string is
 * APPSTORE_INVALID_ARGUMENT). No roots: APPSTORE_CONFIGURATION_ERROR / NO_TRUST_ANCHOR; a root that is neither
 * DER nor PEM certificates: APPSTORE_CONFIGURATION_ERROR / BAD_CERTIFICATE. */
appstore_status appstore_receipt_verifier_new(APPSTORE_OPTIONAL const uint8_t *const *root_ders,
                                              APPSTORE_OPTIONAL const size_t *root_lens,
                                              size_t root_count, APPSTORE_OPTIONAL const char *bundle_id,
                                              appstore_receipt_verifier **verifier_out, appstore_error **err_out);
void appstore_receipt_verifier_free(appstore_receipt_verifier *verifier);

/* Verifies a base64 app receipt, in order: the PKCS#7 SignedData structure and the receipt attributes (bounded
 * parse); the PKCS#7 signature over the content with the signer certificate's key (OpenSSL), which authenticates
 * the content; then the signer certificate's chain to a configured root, validated at the now-authenticated
 * creation date (attribute 12; at the current time when the receipt has none, and the output says so), exactly
 * signer <- intermediate <- root, with Apple's marker extensions (1.2.840.113635.100.6.11.1 on the signer,
 * 1.2.840.113635.100.6.2.1 on the intermediate); the documented fields; the bundle id. Signature first, so that
 * tampering with the signed content (the creation date included) is BAD_SIGNATURE, never EXPIRED. The result: the
 * receipt's documented fields (bundle id, versions, creation and expiration dates, the in-app records) and how it was
 * verified (the effective date and its source, the signer). Xcode (StoreKit testing) receipts are signed by a local
 * self-signed certificate and do not verify.
 *
 * On success, when json_out is not NULL, *json_out receives (absent fields left out, dates in ms since 1970):
 *   {"bundleId":"...","applicationVersion":"...","originalApplicationVersion":"...",
 *    "receiptCreationDate":ms,"receiptExpirationDate":ms,
 *    "inApp":[{"quantity":1,"productId":"...","transactionId":"...","originalTransactionId":"...",
 *              "purchaseDate":ms,"originalPurchaseDate":ms,"expiresDate":ms,"cancellationDate":ms,
 *              "webOrderLineItemId":"...","isInIntroOfferPeriod":true|false},...],
 *    "verification":{"effectiveDate":ms,"effectiveDateSource":"receiptCreationDate"|"now","signer":"/CN=..."}}
 * (attributes 2, 3, 19, 12, 21, 17 and, per record, 1701, 1702, 1703, 1705, 1704, 1706, 1708, 1712, 1711 as a
 * decimal string, 1719 as a boolean). Failures:
 *   APPSTORE_INVALID_RECEIPT        RECEIPT_MALFORMED, WRONG_KIND, UNDECODABLE_PAYLOAD (a documented field of the
 *                                   wrong type or present twice, in a correctly signed receipt)
 *   APPSTORE_VERIFICATION_FAILURE   SIGNER_MISSING, UNTRUSTED_CHAIN, EXPIRED (a certificate not valid at the
 *                                   effective date), MISSING_MARKER_OID, BAD_SIGNATURE (signature or content digest)
 *   APPSTORE_INVALID_APP_IDENTIFIER WRONG_BUNDLE
 *   APPSTORE_INVALID_ARGUMENT       NULL verifier, NULL / empty receipt, receipt text not UTF-8 */
appstore_status appstore_receipt_verifier_verify(const appstore_receipt_verifier *verifier, const char *receipt_b64,
                                                 size_t receipt_len, APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(VerifiedAppReceiptFields), appstore_error **err_out);

/* ---- App Store Server API ------------------------------------------------------------------------------ */

/* Sans-I/O: the library builds each request (method, URL, headers with a fresh ES256 bearer token, body) and
 * decodes each answer; the host does the HTTP. appstore_api_client_call does both through a host-supplied
 * transport (above), with the client's timeout and retry policy.
 *
 * Endpoints are named by Apple's method names (the macros below). Parameters are one JSON object, `params_json`
 * (NUL-terminated UTF-8; NULL = {}): path parameters as strings (imageIdentifier / messageIdentifier: UUIDs),
 * query parameters by name (dates as milliseconds since 1970, booleans as JSON booleans), and the request model
 * under "body" with Apple's JSON keys. Unknown keys are rejected (APPSTORE_INVALID_ARGUMENT, reason
 * INVALID_PARAMETERS, message naming the key); request models are checked against Apple's limits (reason
 * INVALID_REQUEST, message naming the field, e.g. "bulletPoints must have at most 5 elements"). Keys per endpoint: */
/* @generated endpoints: scripts/generate from spec/; do not edit by hand */
/* Get Transaction Info: GET /inApps/v1/transactions/{transactionId}. Keys: transactionId. Answer:
 * TransactionInfoResponse. Sandbox fallback. */
#define APPSTORE_ENDPOINT_GET_TRANSACTION_INFO "getTransactionInfo"
/* Get Transaction History (version 2): GET /inApps/v2/history/{anyTransactionId}. Keys: anyTransactionId; optional
 * revision, startDate, endDate, productIds, productTypes, sort, subscriptionGroupIdentifiers, inAppOwnershipType,
 * revoked. Answer: HistoryResponse. Sandbox fallback. */
#define APPSTORE_ENDPOINT_GET_TRANSACTION_HISTORY "getTransactionHistory"
/* Get Transaction History (version 1): GET /inApps/v1/history/{anyTransactionId}. Keys: anyTransactionId; optional
 * revision, startDate, endDate, productIds, productTypes, sort, subscriptionGroupIdentifiers, inAppOwnershipType,
 * revoked. Answer: HistoryResponse. Sandbox fallback. Deprecated by Apple. */
#define APPSTORE_ENDPOINT_GET_TRANSACTION_HISTORY_V1 "getTransactionHistoryV1"
/* Get All Subscription Statuses: GET /inApps/v1/subscriptions/{anyTransactionId}. Keys: anyTransactionId; optional
 * status. Answer: StatusResponse. Sandbox fallback. */
#define APPSTORE_ENDPOINT_GET_ALL_SUBSCRIPTION_STATUSES "getAllSubscriptionStatuses"
/* Get Refund History: GET /inApps/v2/refund/lookup/{anyTransactionId}. Keys: anyTransactionId; optional revision.
 * Answer: RefundHistoryResponse. Sandbox fallback. */
#define APPSTORE_ENDPOINT_GET_REFUND_HISTORY "getRefundHistory"
/* Look Up Order ID: GET /inApps/v1/lookup/{orderId}. Keys: orderId. Answer: OrderLookupResponse. */
#define APPSTORE_ENDPOINT_LOOK_UP_ORDER_ID "lookUpOrderId"
/* Get App Transaction Info: GET /inApps/v1/transactions/appTransactions/{anyTransactionId}. Keys: anyTransactionId.
 * Answer: AppTransactionInfoResponse. Sandbox fallback. */
#define APPSTORE_ENDPOINT_GET_APP_TRANSACTION_INFO "getAppTransactionInfo"
/* Finish Transaction: POST /inApps/v1/transactions/{transactionId}/finish. Keys: transactionId. */
#define APPSTORE_ENDPOINT_FINISH_TRANSACTION "finishTransaction"
/* Send Consumption Information (version 1): PUT /inApps/v1/transactions/consumption/{transactionId}. Keys:
 * transactionId, body. Deprecated by Apple. */
#define APPSTORE_ENDPOINT_SEND_CONSUMPTION_DATA "sendConsumptionData"
/* Send Consumption Information: PUT /inApps/v2/transactions/consumption/{transactionId}. Keys: transactionId, body. */
#define APPSTORE_ENDPOINT_SEND_CONSUMPTION_INFORMATION "sendConsumptionInformation"
/* Set App Account Token: PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken. Keys:
 * originalTransactionId, body. */
#define APPSTORE_ENDPOINT_SET_APP_ACCOUNT_TOKEN "setAppAccountToken"
/* Extend a Subscription Renewal Date: PUT /inApps/v1/subscriptions/extend/{originalTransactionId}. Keys:
 * originalTransactionId, body. Answer: ExtendRenewalDateResponse. */
#define APPSTORE_ENDPOINT_EXTEND_SUBSCRIPTION_RENEWAL_DATE "extendSubscriptionRenewalDate"
/* Extend Subscription Renewal Dates for All Active Subscribers: POST /inApps/v1/subscriptions/extend/mass. Keys:
 * body. Answer: MassExtendRenewalDateResponse. */
#define APPSTORE_ENDPOINT_EXTEND_RENEWAL_DATE_FOR_ALL_ACTIVE_SUBSCRIBERS "extendRenewalDateForAllActiveSubscribers"
/* Get Status of Subscription Renewal Date Extensions: GET
 * /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}. Keys: requestIdentifier, productId. Answer:
 * MassExtendRenewalDateStatusResponse. */
#define APPSTORE_ENDPOINT_GET_STATUS_OF_SUBSCRIPTION_RENEWAL_DATE_EXTENSIONS "getStatusOfSubscriptionRenewalDateExtensions"
/* Request a Test Notification: POST /inApps/v1/notifications/test. Keys: (none). Answer:
 * SendTestNotificationResponse. */
#define APPSTORE_ENDPOINT_REQUEST_TEST_NOTIFICATION "requestTestNotification"
/* Get Test Notification Status: GET /inApps/v1/notifications/test/{testNotificationToken}. Keys:
 * testNotificationToken. Answer: CheckTestNotificationResponse. */
#define APPSTORE_ENDPOINT_GET_TEST_NOTIFICATION_STATUS "getTestNotificationStatus"
/* Get Notification History: POST /inApps/v1/notifications/history. Keys: body; optional paginationToken. Answer:
 * NotificationHistoryResponse. */
#define APPSTORE_ENDPOINT_GET_NOTIFICATION_HISTORY "getNotificationHistory"
/* Upload Image: PUT /inApps/v1/messaging/image/{imageIdentifier}. Keys: imageIdentifier, image; optional imageSize. */
#define APPSTORE_ENDPOINT_UPLOAD_IMAGE "uploadImage"
/* Delete Image: DELETE /inApps/v1/messaging/image/{imageIdentifier}. Keys: imageIdentifier. */
#define APPSTORE_ENDPOINT_DELETE_IMAGE "deleteImage"
/* Get Image List: GET /inApps/v1/messaging/image/list. Keys: (none). Answer: GetImageListResponse. */
#define APPSTORE_ENDPOINT_GET_IMAGE_LIST "getImageList"
/* Upload Message: PUT /inApps/v1/messaging/message/{messageIdentifier}. Keys: messageIdentifier, body. */
#define APPSTORE_ENDPOINT_UPLOAD_MESSAGE "uploadMessage"
/* Delete Message: DELETE /inApps/v1/messaging/message/{messageIdentifier}. Keys: messageIdentifier. */
#define APPSTORE_ENDPOINT_DELETE_MESSAGE "deleteMessage"
/* Get Message List: GET /inApps/v1/messaging/message/list. Keys: (none). Answer: GetMessageListResponse. */
#define APPSTORE_ENDPOINT_GET_MESSAGE_LIST "getMessageList"
/* Configure Default Message: PUT /inApps/v1/messaging/default/{productId}/{locale}. Keys: productId, locale, body. */
#define APPSTORE_ENDPOINT_CONFIGURE_DEFAULT_MESSAGE "configureDefaultMessage"
/* Delete Default Message: DELETE /inApps/v1/messaging/default/{productId}/{locale}. Keys: productId, locale. */
#define APPSTORE_ENDPOINT_DELETE_DEFAULT_MESSAGE "deleteDefaultMessage"
/* Get Default Message: GET /inApps/v1/messaging/default/{productId}/{locale}. Keys: productId, locale. Answer:
 * DefaultConfigurationResponse. */
#define APPSTORE_ENDPOINT_GET_DEFAULT_MESSAGE "getDefaultMessage"
/* Configure Realtime URL: PUT /inApps/v1/messaging/realtime/url. Keys: body. */
#define APPSTORE_ENDPOINT_CONFIGURE_REALTIME_URL "configureRealtimeURL"
/* Delete Realtime URL: DELETE /inApps/v1/messaging/realtime/url. Keys: (none). */
#define APPSTORE_ENDPOINT_DELETE_REALTIME_URL "deleteRealtimeURL"
/* Get Realtime URL: GET /inApps/v1/messaging/realtime/url. Keys: (none). Answer: RealtimeUrlResponse. */
#define APPSTORE_ENDPOINT_GET_REALTIME_URL "getRealtimeURL"
/* Initiate Performance Test: POST /inApps/v1/messaging/performanceTest. Keys: body. Answer: PerformanceTestResponse. */
#define APPSTORE_ENDPOINT_INITIATE_PERFORMANCE_TEST "initiatePerformanceTest"
/* Get Performance Test Results: GET /inApps/v1/messaging/performanceTest/result/{requestId}. Keys: requestId.
 * Answer: PerformanceTestResultResponse. */
#define APPSTORE_ENDPOINT_GET_PERFORMANCE_TEST_RESULTS "getPerformanceTestResults"
/* Cancel a Subscription: POST /advancedCommerce/v1/subscription/cancel/{transactionId}. Keys: transactionId, body.
 * Answer: AdvancedCommerceSubscriptionCancelResponse. */
#define APPSTORE_ENDPOINT_CANCEL_SUBSCRIPTION "cancelSubscription"
/* Change Subscription Metadata: POST /advancedCommerce/v1/subscription/changeMetadata/{transactionId}. Keys:
 * transactionId, body. Answer: AdvancedCommerceSubscriptionChangeMetadataResponse. */
#define APPSTORE_ENDPOINT_CHANGE_SUBSCRIPTION_METADATA "changeSubscriptionMetadata"
/* Change Subscription Price: POST /advancedCommerce/v1/subscription/changePrice/{transactionId}. Keys:
 * transactionId, body. Answer: AdvancedCommerceSubscriptionPriceChangeResponse. */
#define APPSTORE_ENDPOINT_CHANGE_SUBSCRIPTION_PRICE "changeSubscriptionPrice"
/* Migrate a Subscription to Advanced Commerce: POST /advancedCommerce/v1/subscription/migrate/{transactionId}. Keys:
 * transactionId, body. Answer: AdvancedCommerceSubscriptionMigrateResponse. */
#define APPSTORE_ENDPOINT_MIGRATE_SUBSCRIPTION "migrateSubscription"
/* Revoke a Subscription: POST /advancedCommerce/v1/subscription/revoke/{transactionId}. Keys: transactionId, body.
 * Answer: AdvancedCommerceSubscriptionRevokeResponse. */
#define APPSTORE_ENDPOINT_REVOKE_SUBSCRIPTION "revokeSubscription"
/* Request a Transaction Refund: POST /advancedCommerce/v1/transaction/requestRefund/{transactionId}. Keys:
 * transactionId, body. Answer: AdvancedCommerceRequestRefundResponse. */
#define APPSTORE_ENDPOINT_REQUEST_TRANSACTION_REFUND "requestTransactionRefund"
/* @end endpoints */

/* The endpoint names this library knows, for bindings: count and name by index ("" out of range). Static. */
size_t appstore_api_endpoint_count(void);
const char *appstore_api_endpoint_name(size_t index);

/* Apple's base URL for an environment: the App Store Server API's (advanced_commerce 0) or the Advanced Commerce
 * API's host (advanced_commerce 1); LocalTesting gives Apple's placeholder https://local-testing-base-url. The one
 * home of these URLs: bindings read them here (Apple's urlBase, the path handed to a request hook).
 *
 * "" for Xcode (no server), an unknown environment or advanced_commerce not 0 or 1. Static: do not free. */
const char *appstore_api_base_url(appstore_environment environment, int32_t advanced_commerce);

/* Client options (a locked builder). Defaults: no transport, timeout 30000 ms, no retries, the environment's base
 * URL (production https://api.storekit.apple.com, sandbox https://api.storekit-sandbox.apple.com, local testing
 * https://local-testing-base-url; Advanced Commerce endpoints: https://api.storekit.itunes.apple.com and
 * https://api.storekit-sandbox.itunes.apple.com, the hosts Apple's Advanced Commerce pages show), no Sandbox
 * fallback, no rate limit. */
typedef struct appstore_api_client_options appstore_api_client_options;

appstore_status appstore_api_client_options_new(appstore_api_client_options **options_out, appstore_error **err_out);
void appstore_api_client_options_free(appstore_api_client_options *options);
/* The transport appstore_api_client_call uses (retained by clients created from these options; NULL unsets). */
appstore_status appstore_api_client_options_set_transport(appstore_api_client_options *options,
                                                          APPSTORE_OPTIONAL const appstore_transport *transport,
                                                          appstore_error **err_out);
/* The client's timeout, >= 1: a deadline for the whole call (each page of a paginated one), from its first
 * appstore_api_call_next. Rate-limit waits, the external signer, each exchange, backoff and Retry-After waits and the
 * Sandbox fallback all count against it; a wait that would end at or after it, or a signer that answers at or after
 * it, ends the call with APPSTORE_TRANSPORT_ERROR / APPSTORE_REASON_DEADLINE_EXCEEDED (no slot is reserved, nothing
 * more is sent). Each request carries the time left (at most this timeout) as its transport timeout
 * (appstore_api_request_timeout_ms), and the external signer is told the time left (appstore_signer_fn). */
appstore_status appstore_api_client_options_set_timeout_ms(appstore_api_client_options *options, uint32_t timeout_ms,
                                                           appstore_error **err_out);
/* Opt-in retries (max_retries 0 = off, at most 100) of HTTP 429 and Apple's retryable codes (docs/errors.md):
 * waits initial_backoff_ms, doubling up to max_backoff_ms; a Retry-After header makes the retry wait until the time
 * it names, and one further away than max_backoff_ms is not waited for (the call fails with it). Transport failures
 * are not retried (the request may have reached Apple). */
appstore_status appstore_api_client_options_set_retry(appstore_api_client_options *options, uint32_t max_retries,
                                                      uint32_t initial_backoff_ms, uint32_t max_backoff_ms,
                                                      appstore_error **err_out);
/* Replaces the environment's base URLs, Advanced Commerce included (http:// or https://; e.g. a test server); NULL
 * restores them. */
appstore_status appstore_api_client_options_set_base_url(appstore_api_client_options *options, APPSTORE_OPTIONAL const char *base_url,
                                                         appstore_error **err_out);
/* Sandbox fallback (enabled 0 or 1; Production clients only, appstore_api_client_new refuses it otherwise with
 * APPSTORE_CONFIGURATION_ERROR): a lookup ("Sandbox fallback." in its APPSTORE_ENDPOINT_* comment: transaction info,
 * history, statuses, refund history, app transaction info) that Production answers with transactionIdNotFound
 * (4040010) is asked again in Sandbox, as Apple advises (App Review buys in Sandbox). appstore_api_client_call_ext
 * reports the environment that answered; later pages of appstore_api_client_call_all_pages go to that environment.
 * When Sandbox fails too, its error is returned, its message saying Production did not know the id either.
 * sandbox_base_url replaces Apple's Sandbox base URL for the fallback (e.g. a second test server); NULL: Apple's. */
appstore_status appstore_api_client_options_set_sandbox_fallback(appstore_api_client_options *options, int32_t enabled,
                                                                 APPSTORE_OPTIONAL const char *sandbox_base_url,
                                                                 appstore_error **err_out);
/* Client-side rate limit (enabled 0 or 1) with Apple's published per-endpoint limits (the `limit/s` column of
 * docs/endpoints.md; Sandbox a tenth; endpoints without a published limit are not limited), times share_percent / 100
 * (1-100: e.g. 50 when two processes share a key). One bucket per endpoint and environment per client, holding one
 * second's worth of requests, shared by all threads. Every attempt takes a slot (retries and fallback requests too)
 * and waits for it on the calling thread, up to max_wait_ms; when the next free slot is further away, the call fails
 * at once with APPSTORE_RATE_LIMITED / APPSTORE_REASON_LOCAL_RATE_LIMIT and nothing is sent
 * (appstore_error_retry_at_ms gives the slot's time). max_wait_ms 0: never wait (fail fast). */
appstore_status appstore_api_client_options_set_rate_limit(appstore_api_client_options *options, int32_t enabled,
                                                           uint32_t max_wait_ms, uint32_t share_percent,
                                                           appstore_error **err_out);

/* An immutable, thread-safe API client: the signing key (which must have an issuer id), the environment and the
 * options (may be NULL for defaults; read, not consumed). APPSTORE_ENVIRONMENT_XCODE is refused:
 * APPSTORE_CONFIGURATION_ERROR, reason UNSUPPORTED_ENVIRONMENT. */
typedef struct appstore_api_client appstore_api_client;

appstore_status appstore_api_client_new(const appstore_signing_key *key, appstore_environment environment,
                                        APPSTORE_OPTIONAL const appstore_api_client_options *options, appstore_api_client **client_out,
                                        appstore_error **err_out);
void appstore_api_client_free(appstore_api_client *client);

/* A built request: immutable; the getters' results live until appstore_api_request_free. */
typedef struct appstore_api_request appstore_api_request;

/* Builds endpoint + params_json into a request: method, full URL (path segments percent-encoded; repeated query
 * keys; booleans true/false; dates in ms), headers (Authorization: Bearer <fresh token>, User-Agent:
 * appstoreserver/<version>, Accept: application/json, Content-Type only with a body: application/json, or
 * image/png for uploadImage), body. UUIDs are lowercase on the wire. */
appstore_status appstore_api_client_build_request(const appstore_api_client *client, const char *endpoint,
                                                  APPSTORE_OPTIONAL const char *params_json APPSTORE_JSON(endpoint_params), appstore_api_request **request_out,
                                                  appstore_error **err_out);
/* Getters: "" / 0 when request is NULL. Headers as "Name: value\r\n" lines (the transport callback's format), or
 * one by one (index < count). The body pointer is never NULL (len 0 when there is no body). */
const char *appstore_api_request_method(const appstore_api_request *request);
const char *appstore_api_request_url(const appstore_api_request *request);
const char *appstore_api_request_headers(const appstore_api_request *request);
size_t appstore_api_request_header_count(const appstore_api_request *request);
const char *appstore_api_request_header_name(const appstore_api_request *request, size_t index);
const char *appstore_api_request_header_value(const appstore_api_request *request, size_t index);
const uint8_t *appstore_api_request_body(const appstore_api_request *request, APPSTORE_OPTIONAL size_t *len_out);
uint32_t appstore_api_request_timeout_ms(const appstore_api_request *request);
void appstore_api_request_free(appstore_api_request *request);

/* Decodes an answer to `endpoint`: status (100-599), headers as "Name: value\r\n" lines (may be NULL when
 * headers_len is 0), body. 2xx: *json_out receives the body exactly as sent, after checking that it decodes into
 * the endpoint's model ("{}" for endpoints without a response body); a body that does not decode fails with
 * APPSTORE_INVALID_RESPONSE naming what did not decode. Other statuses fail with APPSTORE_API_ERROR carrying the
 * HTTP status, Apple's error code and message, and Retry-After. */
appstore_status appstore_api_client_decode_response(const appstore_api_client *client, const char *endpoint,
                                                    int32_t http_status, APPSTORE_OPTIONAL const char *headers, size_t headers_len,
                                                    APPSTORE_OPTIONAL const uint8_t *body, size_t body_len,
                                                    char **json_out APPSTORE_JSON(endpoint_response),
                                                    appstore_error **err_out);

/* ---- The call driver ---- */

/* One API call driven by its host (the sans-I/O call loop; what appstore_api_client_call runs over the client's
 * transport, and what the Python, Node and Swift clients run over their own HTTP). The call owns everything between
 * the host's sends: the rate-limit slot of each attempt (reserved before the bearer token is signed), a fresh token
 * per attempt, the retry policy and Retry-After, the Sandbox fallback of lookups, and the following pages of a
 * paginated endpoint. The host only moves bytes and waits:
 *
 *   appstore_api_call_new(client, endpoint, params_json, &call, &err);
 *   for (;;) {
 *       if (appstore_api_call_next(call, 0, &action, &wait_ms, &err) != APPSTORE_OK) break;   // the call failed
 *       if (action == APPSTORE_API_ACTION_SEND) {           // appstore_api_call_request; send it; then one of
 *           ...                                             // appstore_api_call_receive / appstore_api_call_receive_failure
 *       } else if (action == APPSTORE_API_ACTION_WAIT) {    // sleep wait_ms, however the host waits
 *       } else {                                            // APPSTORE_API_ACTION_DONE: appstore_api_call_answer;
 *           if (!appstore_api_call_has_next_page(call)) break;  // appstore_api_call_next goes on to the next page
 *       }
 *   }
 *   appstore_api_call_free(call);
 *
 * Time is the host's: now_ms (milliseconds since 1970; 0 = the system clock) dates rate-limit slots and Retry-After,
 * and the first appstore_api_call_next (of each page) starts the call's deadline: the client's timeout (see
 * appstore_api_client_options_set_timeout_ms). An external signer runs inside appstore_api_call_next; its time is
 * measured with the monotonic clock and counts against the deadline too.
 * A handle is locked inside, so calls from several threads cannot corrupt it, but one call is meant for one host
 * loop: calls of different threads interleave in whatever order they come. */
typedef struct appstore_api_call appstore_api_call;

/* What appstore_api_call_next asks the host to do: one of APPSTORE_API_ACTION_*. */
typedef int32_t appstore_api_action;

#define APPSTORE_API_ACTION_SEND 1  /* send appstore_api_call_request, then report with _receive or _receive_failure */
#define APPSTORE_API_ACTION_WAIT 2  /* wait *wait_ms_out milliseconds, then call appstore_api_call_next */
#define APPSTORE_API_ACTION_DONE 3  /* a 2xx answer: appstore_api_call_answer */

/* A call of `endpoint` with params_json (as appstore_api_client_build_request; checked now: INVALID_ARGUMENT for an
 * unknown endpoint or key). *call_out is the caller's: appstore_api_call_free. The call keeps its own reference to
 * the client. */
appstore_status appstore_api_call_new(const appstore_api_client *client, const char *endpoint,
                                      APPSTORE_OPTIONAL const char *params_json APPSTORE_JSON(endpoint_params),
                                      appstore_api_call **call_out, appstore_error **err_out);
void appstore_api_call_free(appstore_api_call *call);

/* What to do next: *action_out receives an APPSTORE_API_ACTION_*, and *wait_ms_out (optional) the milliseconds of a
 * WAIT (0 otherwise). A failure is the call's final error (Apple's error with HTTP status, code, Retry-After and
 * headers; a transport failure; APPSTORE_RATE_LIMITED / LOCAL_RATE_LIMIT when the rate limit has no slot within
 * max_wait_ms; TRANSPORT_ERROR / DEADLINE_EXCEEDED when the client's timeout runs out first; INVALID_RESPONSE for a
 * 2xx body that does not decode; a bearer token that could not be signed), after
 * which every later call fails with APPSTORE_INVALID_ARGUMENT. Calling it while a sent request has no outcome
 * reported, or after the last page, fails with APPSTORE_INVALID_ARGUMENT and changes nothing. */
appstore_status appstore_api_call_next(appstore_api_call *call, int64_t now_ms, appstore_api_action *action_out,
                                       APPSTORE_OPTIONAL int64_t *wait_ms_out, appstore_error **err_out);

/* After SEND: the request to send (method, URL, headers with a fresh token, body, timeout: the time left before the
 * call's deadline once the token was signed, at most the client's timeout; see the appstore_api_request getters). *request_out is the caller's: appstore_api_request_free. INVALID_ARGUMENT when no
 * request awaits sending. */
appstore_status appstore_api_call_request(const appstore_api_call *call, appstore_api_request **request_out,
                                          appstore_error **err_out);

/* The answer to the request sent: status (100-599), headers as "Name: value\r\n" lines (may be NULL when headers_len
 * is 0), body (at most APPSTORE_LIMIT_API_RESPONSE_BYTES), now_ms: when it arrived (0 = the system clock; anchors a
 * delta-seconds Retry-After). INVALID_ARGUMENT when no request awaits an outcome. */
appstore_status appstore_api_call_receive(appstore_api_call *call, int32_t http_status,
                                          APPSTORE_OPTIONAL const char *headers, size_t headers_len,
                                          APPSTORE_OPTIONAL const uint8_t *body, size_t body_len, int64_t now_ms,
                                          appstore_error **err_out);

/* The request sent got no answer: result is APPSTORE_TRANSPORT_RESULT_TIMEOUT, _UNREACHABLE or _FAILED, message
 * says what happened (NULL: none). Final: the next appstore_api_call_next fails with APPSTORE_TRANSPORT_ERROR (never
 * retried: the request may have reached Apple). INVALID_ARGUMENT when no request awaits an outcome. */
appstore_status appstore_api_call_receive_failure(appstore_api_call *call, int32_t result,
                                                  APPSTORE_OPTIONAL const char *message, appstore_error **err_out);

/* After DONE: the answer. *json_out (optional) receives the body exactly as sent (checked to decode into the
 * endpoint's model; "{}" for endpoints without a response body), *environment_out (optional) the environment that
 * answered (APPSTORE_ENVIRONMENT_SANDBOX when a Production lookup fell back), *headers_out (optional) the response
 * headers as "Name: value\r\n" lines. Strings are the caller's: appstore_string_free. INVALID_ARGUMENT when the call
 * has no answer. */
appstore_status appstore_api_call_answer(const appstore_api_call *call,
                                         APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(endpoint_response),
                                         APPSTORE_OPTIONAL appstore_environment *environment_out,
                                         APPSTORE_OPTIONAL char **headers_out, appstore_error **err_out);

/* After DONE: 1 when appstore_api_call_next goes on to the following page of a paginated endpoint, else 0 (also for
 * NULL). */
int32_t appstore_api_call_has_next_page(const appstore_api_call *call);

/* Build + send through the client's transport (with retries, the rate limit and the Sandbox fallback, when
 * configured) + decode, as above. json_out may be NULL. */
appstore_status appstore_api_client_call(const appstore_api_client *client, const char *endpoint,
                                         APPSTORE_OPTIONAL const char *params_json APPSTORE_JSON(endpoint_params),
                                         APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(endpoint_response), appstore_error **err_out);
/* As appstore_api_client_call; on success *environment_out (optional) receives the APPSTORE_ENVIRONMENT_* that
 * answered: APPSTORE_ENVIRONMENT_SANDBOX when a Production lookup fell back. */
appstore_status appstore_api_client_call_ext(const appstore_api_client *client, const char *endpoint,
                                             APPSTORE_OPTIONAL const char *params_json APPSTORE_JSON(endpoint_params),
                                             APPSTORE_OPTIONAL char **json_out APPSTORE_JSON(endpoint_response),
                                             APPSTORE_OPTIONAL appstore_environment *environment_out,
                                             appstore_error **err_out);
/* For the paginated endpoints (getTransactionHistory, getTransactionHistoryV1, getRefundHistory: revision/hasMore;
 * getNotificationHistory: paginationToken/hasMore): follows the pages to the end; *json_out is a JSON array of
 * every page as sent. */
appstore_status appstore_api_client_call_all_pages(const appstore_api_client *client, const char *endpoint,
                                                   APPSTORE_OPTIONAL const char *params_json APPSTORE_JSON(endpoint_params),
                                                   char **json_out APPSTORE_JSON(endpoint_pages),
                                                   appstore_error **err_out);

/* The transport a verifier uses for online checks (OCSP), and the time one OCSP exchange may take (timeout_ms, passed
 * to the callback; 0 = 30000, Apple's; the callback must enforce it, see Transport). The request is a POST of the
 * DER OCSP request to the certificate's http(s) OCSP URLs (Authority Information Access; other schemes are skipped;
 * none: APPSTORE_REASON_OCSP_NO_RESPONDER), in order, until one answers "good" or "revoked" (at most 4 URLs), with
 * headers "Content-Type: application/ocsp-request" and "Accept: application/ocsp-response"; the library checks each
 * response itself (status 200, then the OCSP answer). When no URL gave "good" or "revoked", the failure is
 * retryable only if every one failed in a retryable way. transport NULL removes the transport. The options, and every verifier
 * made from them, keep their own reference to the transport: appstore_transport_free may be called at any time, but
 * user_data must stay valid until those are freed too. */
appstore_status appstore_verifier_options_set_transport(appstore_verifier_options *options,
                                                        APPSTORE_OPTIONAL const appstore_transport *transport, uint32_t timeout_ms,
                                                        appstore_error **err_out);

/* ---- Purchase ledger ------------------------------------------------------------------------------------ */
/* A durable record of verified App Store data and, from it, what each customer is entitled to at any instant
 * (docs/ledger.md: the rules and their sources in Apple's documentation, the tables, the guarantees). Only values the
 * ledger's verifier accepts enter: each is stored exactly as received (so the state can be rebuilt and re-verified),
 * and the state keeps, per transaction and per subscription, every signed version ordered by signedDate, so the same
 * events in any order, and any number of times, give the same answers. One handle may be shared by threads (calls
 * are serialized inside); several processes may open one SQLite file (each catches up with the others' writes). */
typedef struct appstore_ledger appstore_ledger;

/* Opens the ledger at a URL, creating it if needed: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
 * "sqlite::memory:" (lives until the ledger is closed), or "postgresql://user@host:port/database" (also
 * "postgres://"; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The schema is
 * created or migrated; no stored event is read (each query reads the events of the subscription or customer it asks
 * about, by an index; docs/ledger.md, "Queries"). The URL parameter "cache_mib=N" (0...65536, default 32) bounds the
 * cache of those per-key states. Every value it records is verified with the given verifier.
 *
 * A ledger holds the data of one app in one environment: it records the verifier's bundle id, environment and app
 * Apple ID when it is created, and opening it with a verifier of another identity fails with
 * APPSTORE_CONFIGURATION_ERROR / APPSTORE_REASON_LEDGER_IDENTITY_MISMATCH before anything is read or written (a 0.3.0
 * ledger is migrated in place, its identity taken from its events when they all agree). For PostgreSQL, the URL
 * parameter "schema=NAME" (a lowercase SQL identifier; default appstore_ledger) puts the tables in a schema of their
 * own: one per app and environment in one database. A lost PostgreSQL connection is re-established on a later call
 * (docs/ledger.md, "Reconnecting").
 *
 * The ledger keeps its own reference to `verifier`: free yours whenever. Failure: APPSTORE_INVALID_ARGUMENT (a URL
 * it cannot use), APPSTORE_CONFIGURATION_ERROR (a database of a newer schema or of another identity; PostgreSQL
 * without libpq), APPSTORE_STORAGE_ERROR (the database failed or cannot be reached; the message is the database's
 * own). */
appstore_status appstore_ledger_open(const char *url, const appstore_verifier *verifier, appstore_ledger **ledger_out,
                                     appstore_error **err_out);
/* Closes the database and frees the ledger.
 *
 * NULL is ignored. */
void appstore_ledger_free(appstore_ledger *ledger);

/* Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too), a
 * transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
 * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
 * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason and changes nothing.
 * The result says what happened: "stored" is false when the same payload was already there, and for a notification
 * with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its signedDate), and "verdict":
 * AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which; a catch-up fills them) or
 * CONTRADICTION (the facts it decided from, the notification's own transaction, disagree with data.status).
 *
 * `jws`/`jws_len` as for the verify calls (at most the verifier's max_jws_bytes, checked before any byte is read).
 * *result_out (optional) receives the result. APPSTORE_STORAGE_ERROR: the database failed; nothing was
 * acknowledged, so the value may be given again. */
appstore_status appstore_ledger_ingest_notification(appstore_ledger *ledger, const char *jws, size_t jws_len,
                                                    APPSTORE_OPTIONAL char **result_out APPSTORE_JSON(LedgerIngestResult),
                                                    appstore_error **err_out);
appstore_status appstore_ledger_ingest_transaction(appstore_ledger *ledger, const char *jws, size_t jws_len,
                                                   APPSTORE_OPTIONAL char **result_out APPSTORE_JSON(LedgerIngestResult),
                                                   appstore_error **err_out);
appstore_status appstore_ledger_ingest_renewal_info(appstore_ledger *ledger, const char *jws, size_t jws_len,
                                                    APPSTORE_OPTIONAL char **result_out APPSTORE_JSON(LedgerIngestResult),
                                                    appstore_error **err_out);

/* One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace period,
 * auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the ledger knew
 * nothing of it.
 *
 * Two times (milliseconds since 1970; 0 = now; negative: APPSTORE_INVALID_ARGUMENT):
 *   at_ms     the instant the answer is about;
 *   as_of_ms  the knowledge time: only facts signed at or before it count (each transaction's newest version then).
 * Both 0: the state now, from everything the ledger knows. as_of_ms = at_ms: the answer as known then (what
 * data.status means; a refund signed later does not show). as_of_ms later than at_ms: what is known since about that
 * instant counts too (a refund re-signed after its revocationDate revokes from that date; a backfill of Get
 * Transaction History answers for the months before it). as_of_ms before at_ms is allowed: what was believed then
 * about a later instant. The rules: docs/ledger.md, "Bitemporal queries".
 *
 * *json_out is "null" when the ledger knows nothing of it. */
appstore_status appstore_ledger_query_subscription(const appstore_ledger *ledger, const char *original_transaction_id,
                                                   int64_t at_ms, int64_t as_of_ms,
                                                   char **json_out APPSTORE_JSON(LedgerSubscription),
                                                   appstore_error **err_out);
/* One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
 * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
 * purchases, and consumables bought and refunded. An unknown customer has empty lists.
 *
 * at_ms, as_of_ms: as for appstore_ledger_query_subscription (0 = now; the instant asked about, and the knowledge
 * time). */
appstore_status appstore_ledger_query_customer(const appstore_ledger *ledger, const char *customer_id, int64_t at_ms,
                                               int64_t as_of_ms, char **json_out APPSTORE_JSON(LedgerCustomer),
                                               appstore_error **err_out);
/* Counts, and the oracle: the notifications whose data.status the ledger does not reproduce at their signedDate, each
 * with its verdict: INCOMPLETE_HISTORY (the ledger lacks facts before it; "missing" says which, a catch-up fills them)
 * or CONTRADICTION (the signed facts the ledger decided from disagree with data.status). "contradictions" and
 * "incompleteHistories" count them all; "disagreements" lists at most 1,000, every CONTRADICTION first, then
 * INCOMPLETE_HISTORY, each by signedDate (a fresh ledger's backlog of first renewals never hides a contradiction, and
 * the answer stays small at any size). */
appstore_status appstore_ledger_query_summary(const appstore_ledger *ledger,
                                              char **json_out APPSTORE_JSON(LedgerSummary), appstore_error **err_out);
/* Every disagreement of the oracle, a page at a time, in the summary's order (every CONTRADICTION first, then
 * INCOMPLETE_HISTORY, each by signedDate, then notificationUUID), read along an index: a page costs its own rows at
 * any size. A page holds at most the limit asked for (1 to 10,000) after the cursor given (the "next" of the
 * previous page, opaque), and "next", absent after the last page. A verdict that changes between two pages (a
 * catch-up turns an INCOMPLETE_HISTORY into AGREES) is listed at most once.
 *
 * after: NULL or "" for the first page; limit: 0 for 1,000. APPSTORE_INVALID_ARGUMENT: a limit out of range, or a
 * cursor this call did not make. */
appstore_status appstore_ledger_query_disagreements(const appstore_ledger *ledger, const char *after, uint32_t limit,
                                                    char **json_out APPSTORE_JSON(LedgerDisagreementPage),
                                                    appstore_error **err_out);
/* The ledger's subscription ids (originalTransactionIds of auto-renewable subscriptions), a page at a time in the
 * database's order, read along an index: a page costs its own rows at any size and nothing is held between pages (a
 * sweep over every subscription, as `sync` makes). A page holds at most the limit asked for (1 to 10,000) of the ids
 * after the cursor given (the "next" of the previous page: its last id), and "next", absent after the last page.
 *
 * after: NULL or "" for the first page; limit: 0 for 1,000. APPSTORE_INVALID_ARGUMENT: a limit out of range. The
 * database's order: bytes on SQLite; on PostgreSQL the database's collation (bytes in one of the C collation), the
 * primary key's, which makes each page cost its own rows. */
appstore_status appstore_ledger_query_subscription_ids(const appstore_ledger *ledger, const char *after, uint32_t limit,
                                                       char **json_out APPSTORE_JSON(LedgerIdPage),
                                                       appstore_error **err_out);
/* The ledger's customer ids (appAccountTokens in lowercase, else originalTransactionIds), a page at a time, as the
 * subscription ids are.
 *
 * Each is a customer_id appstore_ledger_query_customer answers for; after and limit as for
 * appstore_ledger_query_subscription_ids. */
appstore_status appstore_ledger_query_customer_ids(const appstore_ledger *ledger, const char *after, uint32_t limit,
                                                   char **json_out APPSTORE_JSON(LedgerIdPage), appstore_error **err_out);
/* Verifies every stored value again with the ledger's verifier (the one it was opened with): how many were checked
 * and the ones it refuses now, each with the verifier's status, reason and message. With online checks on, a
 * certificate revoked since the value was stored is found; without them, the answer does not change with time.
 * Stored values are not verified when the ledger is opened (they were before they were stored): this is the check.
 * Nothing is changed. */
appstore_status appstore_ledger_reverify(const appstore_ledger *ledger,
                                         char **json_out APPSTORE_JSON(LedgerReverifyResult), appstore_error **err_out);
/* Imports a file of JSON lines of signed values (a backfill, a migration from another system; docs/ledger.md, "Bulk
 * import"): each line {"notification": JWS}, {"signedPayload": JWS} (a notification body as Apple posts it),
 * {"transaction": JWS}, {"renewalInfo": JWS}, or a bare JWS (a notification); empty lines are skipped. Values are
 * verified on every core, outside the ledger's lock, and committed `batch_size` lines per transaction (0: 1000). A
 * value whose payload and signature are already stored is counted "alreadyPresent" without being verified again, so
 * running the same file again after an interruption stores what is missing and nothing twice.
 *
 * A line that is not a signed value, longer than the verifier's max_jws_bytes (not read into memory), or refused by the
 * verifier is listed in the result with its line number, status, reason and message ("refusedCount" counts them all,
 * "refused" lists the first 1000): it is not an error of the call. APPSTORE_INVALID_ARGUMENT: the file cannot be
 * read. APPSTORE_STORAGE_ERROR: the database failed; the batches committed before stay (run it again). */
appstore_status appstore_ledger_import_jsonl(appstore_ledger *ledger, const char *path, uint32_t batch_size,
                                             char **result_out APPSTORE_JSON(LedgerImportResult), appstore_error **err_out);
/* Exports every stored value of the ledger's identity as the JSON lines the bulk import reads (a backup, a move to
 * another store, a hand-over to another system; docs/ledger.md, "Export"): one line per value, in the order stored,
 * {"notification": JWS}, {"transaction": JWS} or {"renewalInfo": JWS}, each JWS byte for byte as it was ingested, so
 * it can be verified again.
 *
 * Imported back (appstore_ledger_import_jsonl), into a new ledger on any store, it is the same ledger. The file is
 * written beside path under a temporary name of its own (mode 0600: it holds customers' purchases), flushed to disk
 * and renamed over path: path is the whole export or what it was before. APPSTORE_INVALID_ARGUMENT: the file cannot
 * be created or put in place (path a directory). APPSTORE_STORAGE_ERROR: the database or the file's write failed
 * (disk full). On any failure path keeps what it was and the temporary file is removed. */
appstore_status appstore_ledger_export_jsonl(const appstore_ledger *ledger, const char *path,
                                             char **result_out APPSTORE_JSON(LedgerExportResult), appstore_error **err_out);

#ifdef __cplusplus
}
#endif

#endif /* APPSTORESERVER_H */
