#include "addon.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

atomic_long asb_live_exchanges;

/* ---- transport bridge: the library's synchronous transport callback over JS fetch --------------------------------
 *
 * The library calls the transport on the thread that called it: for the Promise API a libuv pool thread. The
 * callback copies the request into an exchange, hands it to the JS thread through a threadsafe function, and waits
 * on a condition variable (at most the exchange timeout + BRIDGE_GRACE_MS). On the JS thread the dispatcher (lib/)
 * runs the host transport (fetch by default) and calls transportRespond(exchange, ...), which copies the answer and
 * signals. The waiting thread then fills the appstore_http_response itself (the response object is used only by the
 * thread the library called). A waiter that gave up marks the exchange abandoned; a late answer is dropped.
 * Called on the JS thread itself (a ...Sync call of an online verifier), the callback fails at once instead of
 * waiting for a thread that is blocked in the call: no deadlock (the JS layer refuses those calls before that).
 */

#define BRIDGE_GRACE_MS 250
enum { EX_PENDING, EX_DONE, EX_ABANDONED };

typedef struct {
    napi_threadsafe_function tsfn;
    pthread_t js_thread;
    /* Both on the JS thread: the bridge is freed when the threadsafe function is finalized (released, or closed by
     * the environment's teardown) and the transport handle is gone, whichever comes last. */
    int tsfn_finalized;
    int handle_gone;
} bridge;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    int refs; /* the waiting thread + the JS side */
    /* request */
    char *method, *url, *headers;
    size_t headers_len;
    uint8_t *body;
    size_t body_len;
    uint32_t timeout_ms;
    /* answer */
    int32_t result, status;
    char **names, **values;
    size_t nheaders;
    uint8_t *rbody;
    size_t rbody_len;
} exchange;

static void exchange_unref(exchange *x) {
    pthread_mutex_lock(&x->mu);
    int left = --x->refs;
    pthread_mutex_unlock(&x->mu);
    if (left > 0) return;
    free(x->method), free(x->url), free(x->headers), free(x->body), free(x->rbody);
    for (size_t i = 0; i < x->nheaders; i++) free(x->names[i]), free(x->values[i]);
    free(x->names), free(x->values);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
    atomic_fetch_sub(&asb_live_exchanges, 1);
}

static void exchange_unref_box(void *p) { exchange_unref(p); }

static char *dup_bytes(const void *p, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = 0;
    return d;
}

/* Marks the exchange answered with result (no response) unless it already is; signals the waiter. */
static void exchange_fail(exchange *x, int32_t result) {
    pthread_mutex_lock(&x->mu);
    if (x->state == EX_PENDING) {
        x->state = EX_DONE;
        x->result = result;
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
}

static int32_t bridge_transport(void *user_data, const char *method, const char *url, const char *headers,
                                size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                                appstore_http_response *response) {
    bridge *b = user_data;
    if (pthread_equal(pthread_self(), b->js_thread)) return APPSTORE_TRANSPORT_RESULT_FAILED;
    exchange *x = calloc(1, sizeof *x);
    if (!x) return APPSTORE_TRANSPORT_RESULT_FAILED;
    pthread_mutex_init(&x->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_fetch_add(&asb_live_exchanges, 1);
    x->refs = 2;
    x->method = dup_bytes(method, strlen(method));
    x->url = dup_bytes(url, strlen(url));
    x->headers = dup_bytes(headers ? headers : "", headers ? headers_len : 0);
    x->headers_len = headers ? headers_len : 0;
    x->body = (uint8_t *)dup_bytes(body ? body : (const uint8_t *)"", body ? body_len : 0);
    x->body_len = body ? body_len : 0;
    x->timeout_ms = timeout_ms;
    if (!x->method || !x->url || !x->headers || !x->body ||
        napi_call_threadsafe_function(b->tsfn, x, napi_tsfn_blocking) != napi_ok) {
        x->refs = 1;
        exchange_unref(x);
        return APPSTORE_TRANSPORT_RESULT_FAILED;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    uint64_t wait_ms = (uint64_t)timeout_ms + BRIDGE_GRACE_MS;
    deadline.tv_sec += (time_t)(wait_ms / 1000);
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&x->mu);
    while (x->state == EX_PENDING) {
        if (pthread_cond_timedwait(&x->cv, &x->mu, &deadline) == ETIMEDOUT) break;
    }
    int32_t result;
    if (x->state == EX_PENDING) {
        x->state = EX_ABANDONED;
        result = APPSTORE_TRANSPORT_RESULT_TIMEOUT;
    } else {
        result = x->result;
    }
    pthread_mutex_unlock(&x->mu);
    if (result == APPSTORE_TRANSPORT_RESULT_OK) {
        /* The answer is complete and no longer written by anyone: read it without the lock. */
        if (appstore_http_response_set_status(response, x->status, NULL) != APPSTORE_OK) {
            result = APPSTORE_TRANSPORT_RESULT_FAILED;
        } else {
            for (size_t i = 0; i < x->nheaders; i++)
                appstore_http_response_add_header(response, x->names[i], x->values[i], NULL);
            if (x->rbody_len && appstore_http_response_append_body(response, x->rbody, x->rbody_len, NULL) != APPSTORE_OK)
                result = APPSTORE_TRANSPORT_RESULT_FAILED;
        }
    }
    exchange_unref(x);
    return result;
}

/* Runs on the JS thread for each exchange: dispatcher(request, exchangeHandle). */
static void bridge_call_js(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)context;
    exchange *x = data;
    if (!env || !js_cb) { /* the bridge is going away */
        exchange_fail(x, APPSTORE_TRANSPORT_RESULT_FAILED);
        exchange_unref(x);
        return;
    }
    asb_box *box = NULL;
    napi_value handle = asb_box_new(env, ASB_KIND_EXCHANGE, x, &box);
    if (!handle) {
        if (asb_pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        exchange_fail(x, APPSTORE_TRANSPORT_RESULT_FAILED);
        exchange_unref(x);
        return;
    }
    box->extra = x; /* the JS reference: released when the handle is collected */
    box->extra_free = exchange_unref_box;
    napi_value req, v, arr, recv;
    int ok = napi_create_object(env, &req) == napi_ok;
    ok = ok && (v = asb_make_string(env, x->method)) && asb_set_named(env, req, "method", v);
    ok = ok && (v = asb_make_string(env, x->url)) && asb_set_named(env, req, "url", v);
    /* headers: "Name: value\r\n" lines -> [[name, value], ...] */
    ok = ok && napi_create_array(env, &arr) == napi_ok;
    uint32_t n = 0;
    for (const char *line = x->headers; ok && *line;) {
        const char *end = strstr(line, "\r\n");
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (colon) {
            const char *val = colon + 1;
            while (val < line + len && *val == ' ') val++;
            napi_value pair, nm, vl;
            ok = napi_create_array_with_length(env, 2, &pair) == napi_ok &&
                 napi_create_string_utf8(env, line, (size_t)(colon - line), &nm) == napi_ok &&
                 napi_create_string_utf8(env, val, (size_t)(line + len - val), &vl) == napi_ok &&
                 napi_set_element(env, pair, 0, nm) == napi_ok && napi_set_element(env, pair, 1, vl) == napi_ok &&
                 napi_set_element(env, arr, n++, pair) == napi_ok;
        }
        line = end ? end + 2 : line + len;
    }
    ok = ok && asb_set_named(env, req, "headers", arr);
    void *bdata = NULL;
    ok = ok && napi_create_buffer_copy(env, x->body_len, x->body_len ? x->body : asb_empty_bytes, &bdata, &v) == napi_ok &&
         asb_set_named(env, req, "body", v);
    ok = ok && napi_create_uint32(env, x->timeout_ms, &v) == napi_ok && asb_set_named(env, req, "timeoutMs", v);
    napi_value argv[2] = {req, handle};
    ok = ok && napi_get_undefined(env, &recv) == napi_ok && napi_call_function(env, recv, js_cb, 2, argv, NULL) == napi_ok;
    if (!ok) {
        if (asb_pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        exchange_fail(x, APPSTORE_TRANSPORT_RESULT_FAILED);
    }
}

static void bridge_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    bridge *b = data;
    b->tsfn_finalized = 1;
    if (b->handle_gone) free(b);
}

static void transport_box_free(void *p) {
    bridge *b = p;
    b->handle_gone = 1;
    if (b->tsfn_finalized) free(b);
    else napi_release_threadsafe_function(b->tsfn, napi_tsfn_release); /* bridge_finalize frees b */
}

/* transportNew(dispatcher): a transport handle whose callback runs dispatcher(request, exchange) on this thread. */
napi_value asb_js_transport_new(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function)
        return asb_throw_type(env, "transportNew", "%s", "the dispatcher must be a function");
    bridge *b = calloc(1, sizeof *b);
    if (!b) {
        napi_throw_error(env, "ERR_MEMORY", "out of memory");
        return NULL;
    }
    b->js_thread = pthread_self();
    napi_value name;
    NAPI_OK(napi_create_string_utf8(env, "appstoreserver transport", NAPI_AUTO_LENGTH, &name));
    if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, b, bridge_finalize, NULL, bridge_call_js,
                                        &b->tsfn) != napi_ok) {
        free(b);
        return NULL;
    }
    napi_unref_threadsafe_function(env, b->tsfn); /* an idle transport does not keep the process alive */
    appstore_transport *tr = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_transport_new(bridge_transport, b, &tr, &err);
    if (st != APPSTORE_OK) {
        napi_value e = asb_error_object(env, st, err);
        b->handle_gone = 1;
        napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
        if (e) napi_throw(env, e);
        return NULL;
    }
    asb_box *box = NULL;
    napi_value h = asb_box_new(env, ASB_H_TRANSPORT, tr, &box);
    if (!h) {
        appstore_transport_free(tr);
        b->handle_gone = 1;
        napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
        return NULL;
    }
    box->extra = b;
    box->extra_free = transport_box_free;
    return h;
}

/* transportRespond(exchange, result, status, headers [[name, value]...] | null, body | null): the answer to an
 * exchange (result: APPSTORE_TRANSPORT_RESULT_*). Returns false when the waiter has already given up. */
napi_value asb_js_transport_respond(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    const char *fn = "transportRespond";
    if (argc < 2) return asb_throw_type(env, fn, "%s", "expects (exchange, result, status, headers, body)");
    asb_box *box = asb_box_get(env, argv[0], ASB_KIND_EXCHANGE, fn, "exchange");
    if (!box) return NULL;
    exchange *x = box->extra;
    asb_slot rs = {0}, st = {0};
    if (!asb_marshal_value(env, argv[1], ASB_VT_I32, fn, "result", &rs)) return NULL;
    if (rs.i < 0 || rs.i > 3) return asb_throw_range(env, fn, "result must be a TRANSPORT_RESULT value (0-3)");
    int ok_result = rs.i == APPSTORE_TRANSPORT_RESULT_OK;
    if (ok_result) {
        if (argc < 3 || !asb_marshal_value(env, argv[2], ASB_VT_I32, fn, "status", &st)) {
            if (!asb_pending_exception(env)) asb_throw_type(env, fn, "%s", "status must be a number");
            return NULL;
        }
        if (st.i < 100 || st.i > 599) return asb_throw_range(env, fn, "status must be 100-599");
    }
    /* Read everything before taking the lock (JS values cannot be read from another thread anyway). */
    char **names = NULL, **values = NULL;
    size_t nh = 0;
    uint8_t *rbody = NULL;
    size_t rlen = 0;
    int bad = 0;
    if (ok_result && argc >= 4 && !asb_is_nullish(env, argv[3])) {
        bool is_array = false;
        uint32_t n = 0;
        if (napi_is_array(env, argv[3], &is_array) != napi_ok || !is_array ||
            napi_get_array_length(env, argv[3], &n) != napi_ok)
            return asb_throw_type(env, fn, "%s", "headers must be an array of [name, value] pairs");
        names = calloc(n ? n : 1, sizeof *names);
        values = calloc(n ? n : 1, sizeof *values);
        if (!names || !values) bad = 1;
        for (uint32_t i = 0; !bad && i < n; i++) {
            napi_value pair, nm, vl;
            napi_valuetype tn = napi_undefined, tv = napi_undefined;
            if (napi_get_element(env, argv[3], i, &pair) != napi_ok || napi_get_element(env, pair, 0, &nm) != napi_ok ||
                napi_get_element(env, pair, 1, &vl) != napi_ok || napi_typeof(env, nm, &tn) != napi_ok ||
                napi_typeof(env, vl, &tv) != napi_ok || tn != napi_string || tv != napi_string) {
                bad = 2;
                break;
            }
            size_t ln = 0, lv = 0;
            napi_get_value_string_utf8(env, nm, NULL, 0, &ln);
            napi_get_value_string_utf8(env, vl, NULL, 0, &lv);
            names[i] = malloc(ln + 1), values[i] = malloc(lv + 1);
            nh = i + 1;
            if (!names[i] || !values[i]) {
                bad = 1;
                break;
            }
            napi_get_value_string_utf8(env, nm, names[i], ln + 1, &ln);
            napi_get_value_string_utf8(env, vl, values[i], lv + 1, &lv);
        }
        if (asb_pending_exception(env)) bad = 3;
    }
    if (!bad && ok_result && argc >= 5 && !asb_is_nullish(env, argv[4])) {
        void *data = NULL;
        if (!asb_read_bytes(env, argv[4], &data, &rlen)) bad = 4;
        else if (rlen && !(rbody = malloc(rlen))) bad = 1;
        else if (rlen) memcpy(rbody, data, rlen);
    }
    if (bad) {
        for (size_t i = 0; i < nh; i++) free(names[i]), free(values[i]);
        free(names), free(values), free(rbody);
        if (bad == 2) return asb_throw_type(env, fn, "%s", "headers must be an array of [name, value] string pairs");
        if (bad == 4) return asb_throw_type(env, fn, "%s", "body must be a Uint8Array or ArrayBuffer");
        if (bad == 1) napi_throw_error(env, "ERR_MEMORY", "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&x->mu);
    int accepted = x->state == EX_PENDING;
    if (accepted) {
        x->result = (int32_t)rs.i;
        x->status = (int32_t)st.i;
        x->names = names, x->values = values, x->nheaders = nh;
        x->rbody = rbody, x->rbody_len = rlen;
        x->state = EX_DONE;
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    if (!accepted) {
        for (size_t i = 0; i < nh; i++) free(names[i]), free(values[i]);
        free(names), free(values), free(rbody);
    }
    /* Answered: the JS side no longer needs the exchange. */
    box->closed = 1;
    asb_box_release(box);
    napi_value r;
    napi_get_boolean(env, accepted, &r);
    return r;
}
