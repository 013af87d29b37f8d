/*
 * Small helpers shared by the C API tests (the .c files in Tests/capi): file reading, check counters, manifest lookups.
 * Not part of the library; compiled into each test executable.
 */
#ifndef CAPI_UTIL_H
#define CAPI_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <appstoreserver.h>
#include <jansson.h>

/* Reads a whole file (binary). Returns a malloc'd buffer with a NUL after the data, or NULL. */
unsigned char *capi_read_file(const char *path, size_t *len_out);

/* Reads a text file and trims leading/trailing ASCII whitespace (like Swift's trimmingCharacters(in:
 * .whitespacesAndNewlines) for ASCII). The result is NUL-terminated; *len_out excludes the NUL. */
char *capi_read_trimmed(const char *path, size_t *len_out);

/* "dir/rel" into a malloc'd string. */
char *capi_join(const char *dir, const char *rel);

/* The verify function of the C ABI for a manifest operation name (verifyAndDecodeTransaction, ...), or NULL. */
typedef appstore_status (*capi_verify_fn)(const appstore_verifier *, const char *, size_t, char **, appstore_error **);
capi_verify_fn capi_verify_for_operation(const char *operation);

/* Environment name (Sandbox, Production, Xcode, LocalTesting) to APPSTORE_ENVIRONMENT_*, 0 when unknown. */
appstore_environment capi_environment(const char *name);

/* Finds a case by id in a manifest's "cases" array (borrowed reference) or NULL. */
json_t *capi_find_case(json_t *manifest, const char *id);

/* One manifest case for the manifest's default verifier: root.der, the manifest's bundle id, Sandbox, no online checks. */
typedef struct {
    const char *id;
    capi_verify_fn fn; /* appstore_verifier_verify_notification_deep when loaded with deep */
    char *jws;
    size_t jws_len;
    appstore_status want_status;
    const char *want_reason; /* "none" when the case is valid */
} capi_case;

/* Loads case `id` of the manifest in dir (jws read from its path). deep: a notification, verified deeply. Returns 0,
 * or -1 after printing "FAIL ..." when the case is missing, unreadable or expects another verifier. */
int capi_load_default_case(json_t *manifest, const char *dir, const char *id, int deep, capi_case *out);

/* A Sandbox verifier with one root and a bundle id, offline. chain_cache_entries: -1 the default cache, 0 none, n > 0
 * n entries for 900 s. NULL when any call fails. */
appstore_verifier *capi_sandbox_verifier(const unsigned char *root, size_t root_len, const char *bundle_id,
                                         int64_t chain_cache_entries);

/* Standard base64 (padded) of len bytes, malloc'd and NUL-terminated. */
char *capi_base64_encode(const unsigned char *data, size_t len);

/* Decodes standard base64 (whitespace skipped, padding optional); malloc'd, or NULL on bad input. */
unsigned char *capi_base64_decode(const char *text, size_t *len_out);

/* Check counters for one test program. */
typedef struct {
    const char *label; /* printed as "<label>: N passed, M failed" */
    long passed;
    long failed;
} capi_tally;

/* Records one check; prints "FAIL <what>: <detail>" on failure. Returns ok. */
int capi_check(capi_tally *t, int ok, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Runs body(ctx) in a forked child whose checks go to a zeroed *t; records one check in the parent: the child must
 * exit normally with no failed check. A crash (signal) fails that one check instead of ending the whole run. */
void capi_run_forked(capi_tally *t, const char *what, void (*body)(void *ctx), void *ctx);

/* Prints the closing line and returns the process exit code (0 only when nothing failed and something passed). */
int capi_finish(const capi_tally *t);

#endif
