#include "addon.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

atomic_long asb_live_sign_requests;

/* ---- signer notes: why a JS signer failed, for the error of the call that asked -----------------------------------
 *
 * The library sees only that the signer callback returned non-zero ("the signer callback returned 1"). The callback
 * (signer bridge, below) runs on the thread of the library call that asked for the signature, so it leaves what went
 * wrong in that thread's note; the call path takes the note when the call fails and puts it on the error object
 * (signerFailure, signerCauseId, signerTimedOut), where lib/errors.js makes the message and the cause of it.
 */

static _Thread_local asb_signer_note tls_note;

void asb_note_clear(void) {
    free(tls_note.text);
    memset(&tls_note, 0, sizeof tls_note);
}

static void note_set(const char *text, double cause_id, int timed_out) {
    asb_note_clear();
    tls_note.text = strdup(text ? text : "the signer failed");
    tls_note.cause_id = cause_id;
    tls_note.timed_out = timed_out;
}

asb_signer_note asb_note_take(void) {
    asb_signer_note n = tls_note;
    memset(&tls_note, 0, sizeof tls_note);
    return n;
}

/* Puts a failed call's note on its error object (a plain object from asb_error_object); frees the note's text. */
void asb_note_attach(napi_env env, napi_value err, asb_signer_note *n) {
    if (n->text && err) {
        napi_value v;
        napi_valuetype t = napi_undefined;
        if (napi_typeof(env, err, &t) == napi_ok && t == napi_object) {
            if ((v = asb_make_string(env, n->text))) asb_set_named(env, err, "signerFailure", v);
            if (napi_create_double(env, n->cause_id, &v) == napi_ok) asb_set_named(env, err, "signerCauseId", v);
            if (napi_get_boolean(env, n->timed_out != 0, &v) == napi_ok) asb_set_named(env, err, "signerTimedOut", v);
        }
    }
    free(n->text);
    memset(n, 0, sizeof *n);
}

/* ---- signer bridge: external signers (keys in a KMS or an HSM) as JS functions -----------------------------------
 *
 * appstore_signing_key_new_with_signer's callback is synchronous and runs on the thread of the library call that
 * asked for the signature. For the Promise API that is a libuv pool thread: the callback copies the message and its
 * digest into a sign request, hands it to the JS thread through the signer's threadsafe function, and waits on a
 * condition variable for at most the signer's timeout. On the JS thread the dispatcher (lib/signer.js) calls the
 * signer, awaits its Promise if it returns one, and calls signerRespond(request, signature | null, failure, causeId),
 * which copies the answer and signals. A waiter that gave up marks the request abandoned; a late answer is dropped.
 * The library then checks the signature (form, range, the public key, its deadline).
 *
 * Called on the JS thread itself (a synchronous call), the callback fails at once instead of waiting for the thread
 * that is blocked in the call: no deadlock (the JS layer refuses those calls before that). signerClose(key) fails the
 * requests still waiting and every later one (a client or creator closed while signing).
 *
 * Lifetime: the bridge is used by the key's box and by every box made from it (a client made with the key, a call
 * made with that client: out_value); it is freed when the last of them has released its library object (nothing can
 * call the signer any more) and its threadsafe function is finalized, whichever comes last. A sign request is shared by the waiting thread and the JS
 * side (its handle), and never refers back to the bridge, so a late answer is safe after the bridge is gone.
 */

#define SIGNER_CAPACITY 72 /* the largest DER ECDSA P-256 signature; the library's signature_cap */
enum { SR_PENDING, SR_DONE, SR_ABANDONED };

typedef struct sign_request {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    int refs; /* the waiting thread + the JS side */
    struct sign_request *prev, *next; /* the signer's waiting requests (under the signer's mu) */
    uint8_t *message;
    size_t message_len;
    uint8_t digest[32];
    uint32_t timeout_ms; /* the time the signature may take, passed to the JS signer */
    /* answer */
    int ok;
    uint8_t signature[SIGNER_CAPACITY];
    size_t signature_len;
    char *failure;   /* what went wrong (malloc), when not ok */
    double cause_id; /* lib/errors.js's id of what the JS signer threw, 0 = none */
} sign_request;

typedef struct signer_bridge {
    pthread_mutex_t mu;
    napi_threadsafe_function tsfn;
    pthread_t js_thread;
    uint32_t timeout_ms;
    sign_request *waiting; /* under mu */
    int closed;            /* under mu: signerClose was called */
    int tsfn_finalized;    /* under mu: pool threads read it before they use the threadsafe function */
    int users;             /* JS thread only: boxes whose library object may call the signer */
} signer_bridge;

static const char SIGNER_SYNC[] =
    "a synchronous call cannot use an external signer: the JS signer runs on this thread, which the call blocks (use "
    "the Promise method: createSignatureAsync, createBearerTokenAsync, the client's endpoint methods)";
static const char SIGNER_CLOSED[] = "the key was closed while its external signer was signing";
static const char SIGNER_GONE[] = "the JS environment of the external signer is shutting down";

static void sign_request_unref(sign_request *r) {
    pthread_mutex_lock(&r->mu);
    int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left > 0) return;
    free(r->message);
    free(r->failure);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
    atomic_fetch_sub(&asb_live_sign_requests, 1);
}

static void sign_request_unref_box(void *p) { sign_request_unref(p); }

/* Answers the request with a failure unless it is answered already; returns 1 when this answer counts. */
static int sign_request_fail(sign_request *r, const char *why, double cause_id) {
    pthread_mutex_lock(&r->mu);
    int accepted = r->state == SR_PENDING;
    if (accepted) {
        r->state = SR_DONE;
        r->ok = 0;
        r->failure = strdup(why);
        r->cause_id = cause_id;
        pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return accepted;
}

static void signer_destroy(signer_bridge *s) {
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* JS thread: one more box whose library object may call the signer. */
void asb_signer_use(signer_bridge *s) { s->users++; }

/* JS thread: a box that used the signer has released its library object. */
void asb_signer_unuse(signer_bridge *s) {
    if (--s->users > 0) return;
    pthread_mutex_lock(&s->mu);
    int finalized = s->tsfn_finalized;
    pthread_mutex_unlock(&s->mu);
    if (finalized) signer_destroy(s);
    else napi_release_threadsafe_function(s->tsfn, napi_tsfn_release); /* signer_finalize frees s */
}

static void signer_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    signer_bridge *s = data;
    pthread_mutex_lock(&s->mu);
    s->tsfn_finalized = 1;
    /* The environment is going away (or nothing uses the signer): no answer will come to a request still waiting. */
    for (sign_request *r = s->waiting; r; r = r->next) sign_request_fail(r, SIGNER_GONE, 0);
    pthread_mutex_unlock(&s->mu);
    if (s->users == 0) signer_destroy(s);
}

/* Fails the requests waiting for the signer and every later one. */
static void signer_close(signer_bridge *s) {
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    for (sign_request *r = s->waiting; r; r = r->next) sign_request_fail(r, SIGNER_CLOSED, 0);
    pthread_mutex_unlock(&s->mu);
}

/* The library's signer callback (appstore_signer_fn): on the thread of the call that asked for the signature. */
static int32_t signer_sign(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                           uint8_t *signature, size_t signature_cap, size_t *signature_len, uint32_t timeout_ms) {
    signer_bridge *s = user_data;
    asb_note_clear();
    if (!s || (!message && message_len) || !digest || !signature || !signature_len) {
        note_set("the library called the signer without its buffers", 0, 0);
        return 1;
    }
    if (pthread_equal(pthread_self(), s->js_thread)) {
        note_set(SIGNER_SYNC, 0, 0);
        return 1;
    }
    sign_request *r = calloc(1, sizeof *r);
    if (!r) {
        note_set("out of memory", 0, 0);
        return 1;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_fetch_add(&asb_live_sign_requests, 1);
    r->refs = 2;
    r->message = malloc(message_len ? message_len : 1);
    r->message_len = message_len;
    if (r->message && message_len) memcpy(r->message, message, message_len);
    memcpy(r->digest, digest, sizeof r->digest);
    /* The library's timeout_ms: the key's timeout, or what is left of an API call's deadline when that is nearer. */
    uint32_t wait_ms = timeout_ms ? timeout_ms : (s->timeout_ms ? s->timeout_ms : 10000);
    r->timeout_ms = wait_ms;
    const char *refused = NULL;
    pthread_mutex_lock(&s->mu);
    if (!r->message) refused = "out of memory";
    else if (s->closed) refused = SIGNER_CLOSED;
    else if (s->tsfn_finalized || napi_call_threadsafe_function(s->tsfn, r, napi_tsfn_nonblocking) != napi_ok)
        refused = SIGNER_GONE;
    if (!refused) { /* in the list before anyone can answer it: signerClose finds it */
        r->next = s->waiting;
        if (s->waiting) s->waiting->prev = r;
        s->waiting = r;
    }
    pthread_mutex_unlock(&s->mu);
    if (refused) {
        r->refs = 1;
        sign_request_unref(r);
        note_set(refused, 0, 0);
        return 1;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)(wait_ms / 1000);
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&r->mu);
    while (r->state == SR_PENDING) {
        if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT) break;
    }
    int timed_out = r->state == SR_PENDING;
    if (timed_out) r->state = SR_ABANDONED;
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&s->mu);
    if (r->prev) r->prev->next = r->next;
    else s->waiting = r->next;
    if (r->next) r->next->prev = r->prev;
    pthread_mutex_unlock(&s->mu);
    /* Answered or abandoned: no one writes the answer any more. */
    int32_t rc = 1;
    if (timed_out) {
        char why[96];
        snprintf(why, sizeof why, "no signature within the %u ms it had", wait_ms);
        note_set(why, 0, 1);
    } else if (r->ok && r->signature_len > 0 && r->signature_len <= signature_cap) {
        memcpy(signature, r->signature, r->signature_len);
        *signature_len = r->signature_len;
        rc = 0;
    } else {
        note_set(r->failure ? r->failure : "it gave no signature", r->cause_id, 0);
    }
    sign_request_unref(r);
    return rc;
}

/* Runs on the JS thread for each request: dispatcher(message, digest, requestHandle, timeoutMs). */
static void signer_call_js(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)context;
    sign_request *r = data;
    if (!env || !js_cb) { /* the environment is going away */
        sign_request_fail(r, SIGNER_GONE, 0);
        sign_request_unref(r);
        return;
    }
    asb_box *box = NULL;
    napi_value handle = asb_box_new(env, ASB_KIND_SIGN_REQUEST, r, &box);
    if (!handle) {
        if (asb_pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        sign_request_fail(r, "out of memory", 0);
        sign_request_unref(r);
        return;
    }
    box->extra = r; /* the JS side's reference: released when it answers or the handle is collected */
    box->extra_free = sign_request_unref_box;
    napi_value argv[4], recv;
    void *bdata = NULL;
    argv[2] = handle;
    int ok = napi_create_buffer_copy(env, r->message_len, r->message_len ? r->message : asb_empty_bytes, &bdata,
                                     &argv[0]) == napi_ok &&
             napi_create_buffer_copy(env, sizeof r->digest, r->digest, &bdata, &argv[1]) == napi_ok &&
             napi_create_uint32(env, r->timeout_ms, &argv[3]) == napi_ok &&
             napi_get_undefined(env, &recv) == napi_ok &&
             napi_call_function(env, recv, js_cb, 4, argv, NULL) == napi_ok;
    if (!ok) {
        if (asb_pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        sign_request_fail(r, "the signer's dispatcher failed", 0);
    }
}

/* signerKeyNew(dispatcher, publicKey, timeoutMs, keyId, issuerId | null, bundleId): a signing key handle whose
 * signatures are asked of dispatcher(message, digest, request) on this thread (appstore_signing_key_new_with_signer).
 * publicKey: PEM text (string or bytes) or DER SubjectPublicKeyInfo. */
napi_value asb_js_signer_key_new(napi_env env, napi_callback_info info) {
    const char *fn = "signerKeyNew";
    size_t argc = 6;
    napi_value argv[6];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t = napi_undefined;
    if (argc < 6) return asb_throw_type(env, fn, "%s", "expects (dispatcher, publicKey, timeoutMs, keyId, issuerId, bundleId)");
    if (napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function)
        return asb_throw_type(env, fn, "%s", "the dispatcher must be a function");
    asb_args a;
    memset(&a, 0, sizeof a);
    a.async = 1; /* copy byte buffers: nothing of the caller's is read later, but keep one rule */
    void *pub = NULL;
    size_t pub_len = 0;
    asb_slot timeout = {0};
    const char *names[3] = {"keyId", "issuerId", "bundleId"};
    char *text[3] = {NULL, NULL, NULL};
    if (!asb_marshal_buffer(env, argv[1], 1, &a, &pub, &pub_len)) {
        asb_args_free(env, &a);
        return asb_throw_type(env, fn, "%s", "publicKey must be a string or a Uint8Array");
    }
    if (!asb_marshal_value(env, argv[2], ASB_VT_U32, fn, "timeoutMs", &timeout)) {
        asb_args_free(env, &a);
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        if (i == 1 && asb_is_nullish(env, argv[4])) continue;
        size_t len = 0;
        if (napi_typeof(env, argv[3 + i], &t) != napi_ok || t != napi_string ||
            !(text[i] = asb_read_string(env, argv[3 + i], &a, &len)) || strlen(text[i]) != len) {
            asb_args_free(env, &a);
            return asb_throw_type(env, fn, "%s must be a string without NUL characters", names[i]);
        }
    }
    signer_bridge *s = calloc(1, sizeof *s);
    if (!s) {
        asb_args_free(env, &a);
        napi_throw_error(env, "ERR_MEMORY", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->js_thread = pthread_self();
    s->timeout_ms = (uint32_t)timeout.u;
    napi_value name;
    if (napi_create_string_utf8(env, "appstoreserver signer", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, s, signer_finalize, NULL, signer_call_js,
                                        &s->tsfn) != napi_ok) {
        asb_args_free(env, &a);
        signer_destroy(s);
        return NULL;
    }
    napi_unref_threadsafe_function(env, s->tsfn); /* an idle signer does not keep the process alive */
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new_with_signer(signer_sign, s, pub, pub_len, s->timeout_ms, text[0],
                                                              text[1], text[2], &key, &err);
    asb_args_free(env, &a);
    if (st != APPSTORE_OK) {
        napi_value e = asb_error_object(env, st, err);
        napi_release_threadsafe_function(s->tsfn, napi_tsfn_release); /* users 0: signer_finalize frees s */
        if (e) napi_throw(env, e);
        return NULL;
    }
    asb_box *box = NULL;
    napi_value h = asb_box_new(env, ASB_H_SIGNING_KEY, key, &box);
    if (!h) {
        appstore_signing_key_free(key);
        napi_release_threadsafe_function(s->tsfn, napi_tsfn_release);
        return NULL;
    }
    s->users = 1;
    box->signer = s;
    return h;
}

/* signerClose(handle): the signer of a key (or of a client made with one) fails the requests still waiting, and every
 * later one. Returns false when the handle has no signer (any more). */
napi_value asb_js_signer_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 1) return asb_throw_type(env, "signerClose", "%s", "expects (handle)");
    asb_box *b = asb_any_box(env, argv[0], "signerClose", "the argument");
    if (!b) return NULL;
    if (b->signer) signer_close(b->signer);
    napi_value r;
    napi_get_boolean(env, b->signer != NULL, &r);
    return r;
}

/* signerRespond(request, signature | null, failure | null, causeId): the answer to a sign request: the signature
 * (1 to 72 bytes, DER or r||s: the library checks it), or what went wrong. Returns false when the waiter has given
 * up already (timeout, closed). */
napi_value asb_js_signer_respond(napi_env env, napi_callback_info info) {
    const char *fn = "signerRespond";
    size_t argc = 4;
    napi_value argv[4];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 2) return asb_throw_type(env, fn, "%s", "expects (request, signature, failure, causeId)");
    asb_box *box = asb_box_get(env, argv[0], ASB_KIND_SIGN_REQUEST, fn, "request");
    if (!box) return NULL;
    sign_request *r = box->extra;
    void *sig = NULL;
    size_t sig_len = 0;
    char *failure = NULL;
    double cause_id = 0;
    char why[160];
    if (!asb_is_nullish(env, argv[1])) {
        if (!asb_read_bytes(env, argv[1], &sig, &sig_len)) {
            snprintf(why, sizeof why, "%s", "it gave no Uint8Array");
            failure = why;
        } else if (sig_len == 0 || sig_len > SIGNER_CAPACITY) {
            snprintf(why, sizeof why, "it returned %zu bytes; an ECDSA P-256 signature is 64 bytes r||s or DER of at most %d",
                     sig_len, SIGNER_CAPACITY);
            failure = why;
        }
    } else {
        napi_valuetype t = napi_undefined;
        size_t len = 0;
        if (argc >= 3 && napi_typeof(env, argv[2], &t) == napi_ok && t == napi_string &&
            napi_get_value_string_utf8(env, argv[2], why, sizeof why, &len) == napi_ok) {
            /* up to 159 bytes fit here; a longer text is read whole below */
            if (len + 1 >= sizeof why) {
                size_t full = 0;
                napi_get_value_string_utf8(env, argv[2], NULL, 0, &full);
                if (full > 4096) full = 4096; /* a signer's error message, not a payload */
                char *buf = malloc(full + 1);
                if (buf && napi_get_value_string_utf8(env, argv[2], buf, full + 1, &len) == napi_ok) failure = buf;
                else {
                    free(buf);
                    failure = why;
                }
            } else {
                failure = why;
            }
        } else {
            snprintf(why, sizeof why, "%s", "it gave no signature");
            failure = why;
        }
        if (argc >= 4) {
            napi_valuetype tc = napi_undefined;
            if (napi_typeof(env, argv[3], &tc) == napi_ok && tc == napi_number) napi_get_value_double(env, argv[3], &cause_id);
        }
    }
    int accepted;
    if (failure) {
        accepted = sign_request_fail(r, failure, cause_id);
        if (failure != why) free(failure);
    } else {
        pthread_mutex_lock(&r->mu);
        accepted = r->state == SR_PENDING;
        if (accepted) {
            memcpy(r->signature, sig, sig_len);
            r->signature_len = sig_len;
            r->ok = 1;
            r->state = SR_DONE;
            pthread_cond_signal(&r->cv);
        }
        pthread_mutex_unlock(&r->mu);
    }
    /* Answered: the JS side no longer needs the request. */
    box->closed = 1;
    asb_box_release(box);
    napi_value res;
    napi_get_boolean(env, accepted, &res);
    return res;
}
