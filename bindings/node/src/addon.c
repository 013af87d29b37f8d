/*
 * appstoreserver Node addon: the module (see addon.h for the files and what each holds). For every C function of the
 * generated table it exports
 *   native.<name>(...)         the call on the JS thread
 *   native.async.<name>(...)   the same call as napi_async_work on the libuv thread pool, returning a Promise
 *                              (fallible functions only)
 * and by hand: close, retain, stats, configure, the fetch bridge (transportNew, transportRespond), the signer bridge
 * (signerKeyNew, signerClose, signerRespond), and in the test build only, trace.
 */
#include "addon.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef APPSTORE_ADDON_TRACE
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* ---- per environment (main thread and each worker) -------------------------------------------------------------- */

struct asb_async;
typedef struct {
    napi_ref json_parse;    /* configure(): JSON.parse, applied to JSON outputs of pool calls */
    napi_ref convert;       /* configure(): convert(errorObject, functionName) -> the value a pool call rejects with */
    /* Pool calls that may wait for a JS signer (signer bridge): how many run, and those waiting for their turn. */
    int signing_running;
    struct asb_async *signing_head, *signing_tail;
} env_data;

static void env_data_free(napi_env env, void *data, void *hint) {
    (void)hint;
    env_data *d = data;
    if (d->json_parse) napi_delete_reference(env, d->json_parse);
    if (d->convert) napi_delete_reference(env, d->convert);
    free(d);
}

static env_data *get_env_data(napi_env env) {
    env_data *d = NULL;
    napi_get_instance_data(env, (void **)&d);
    return d;
}

static napi_value ref_value(napi_env env, napi_ref r) {
    napi_value v = NULL;
    if (r) napi_get_reference_value(env, r, &v);
    return v;
}

/* Pool calls that may call an external signer wait on their pool thread while the JS thread signs, and the JS signer
 * may need the pool itself (DNS lookups of a KMS client, crypto.sign with a callback): at most pool size - 1 of them
 * run at once per environment; the others wait in a queue (started as running ones complete). */
static int signing_limit;

static int may_sign(const asb_function *fn) {
    return strncmp(fn->js, "signing_key_create_", 19) == 0 || strncmp(fn->js, "api_client_build_", 17) == 0 ||
           strncmp(fn->js, "api_client_call", 15) == 0 || strcmp(fn->js, "api_call_next") == 0 ||
           strcmp(fn->js, "api_call_request") == 0;
}

/* The external signer the call's library objects may call (the first handle argument that has one), or NULL. */
static struct signer_bridge *call_signer(const asb_args *a) {
    for (int i = 0; i < a->nboxes; i++)
        if (a->boxes[i]->signer) return a->boxes[i]->signer;
    return NULL;
}

static napi_value call_sync(napi_env env, napi_callback_info info) {
    napi_value argv[ASB_MAX_SLOTS];
    size_t argc = ASB_MAX_SLOTS;
    const asb_function *fn = NULL;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&fn));
    asb_args a;
    memset(&a, 0, sizeof a);
    char scratch[32768]; /* string arguments up to this size avoid malloc (a JWS is ~5 KB) */
    a.scratch = scratch;
    a.scratch_left = sizeof scratch;
    if (!asb_marshal_in(env, fn, argc, argv, &a)) {
        asb_args_free(env, &a);
        return NULL;
    }
    asb_note_clear();
    fn->call(&a.f);
    asb_signer_note note = {0};
    if (fn->ret == ASB_RET_STATUS && a.f.status != APPSTORE_OK) note = asb_note_take();
    else asb_note_clear();
    int failed = 0;
    napi_value result = asb_marshal_out(env, fn, &a.f, &failed, call_signer(&a));
    asb_args_free(env, &a);
    asb_note_attach(env, failed ? result : NULL, &note);
    if (!result) return NULL;
    if (failed) {
        napi_throw(env, result);
        return NULL;
    }
    return result;
}

typedef struct asb_async {
    napi_async_work work;
    napi_deferred deferred;
    const asb_function *fn;
    asb_args a;
#ifdef APPSTORE_ADDON_TRACE
    double tq, t0, t1, cpu;
    long tid;
#endif
    asb_signer_note note;        /* why the external signer failed, when the call failed */
    int gated;               /* counted in env_data.signing_running */
    struct asb_async *next;  /* env_data's queue of calls waiting for their turn */
} asb_async;

static void async_execute(napi_env env, void *data) {
    (void)env;
    asb_async *w = data;
#ifdef APPSTORE_ADDON_TRACE
    int tracing = asb_tracing();
    double c0 = tracing ? asb_thread_cpu_ms() : 0;
    w->t0 = asb_now_ms();
    w->tid = (long)syscall(SYS_gettid);
#endif
    asb_note_clear();
    w->fn->call(&w->a.f);
    if (w->a.f.status != APPSTORE_OK) w->note = asb_note_take();
    else asb_note_clear();
#ifdef APPSTORE_ADDON_TRACE
    w->t1 = asb_now_ms();
    w->cpu = tracing ? asb_thread_cpu_ms() - c0 : 0;
#endif
}

/* Starts the queued calls that may sign, as far as the limit allows. */
static void signing_start(napi_env env, env_data *d) {
    while (d && d->signing_head && d->signing_running < signing_limit) {
        asb_async *next = d->signing_head;
        d->signing_head = next->next;
        if (!d->signing_head) d->signing_tail = NULL;
        next->next = NULL;
        d->signing_running++;
        if (napi_queue_async_work(env, next->work) != napi_ok) {
            /* Cannot happen short of teardown; settle the call rather than leave its Promise pending. */
            d->signing_running--;
            next->gated = 0;
            napi_value msg, exc;
            napi_create_string_utf8(env, "appstoreserver: could not queue the async call", NAPI_AUTO_LENGTH, &msg);
            napi_create_error(env, NULL, msg, &exc);
            napi_reject_deferred(env, next->deferred, exc);
            asb_args_free(env, &next->a);
            napi_delete_async_work(env, next->work);
            free(next);
        }
    }
}

static void async_complete(napi_env env, napi_status status, void *data) {
    asb_async *w = data;
    /* The signer outputs inherit, kept while the arguments are released (a closed key's box releases it there). */
    struct signer_bridge *inherit = call_signer(&w->a);
    if (inherit) asb_signer_use(inherit);
    asb_args_free(env, &w->a);
#ifdef APPSTORE_ADDON_TRACE
    if (asb_tracing()) asb_trace_add(w->fn->js, w->tq, w->t0, w->t1, w->cpu, w->tid);
#endif
    napi_value result = NULL;
    int failed = 0;
    if (status == napi_ok) result = asb_marshal_out(env, w->fn, &w->a.f, &failed, inherit);
    else asb_out_discard(w->fn, &w->a.f);
    if (inherit) asb_signer_unuse(inherit);
    asb_note_attach(env, failed ? result : NULL, &w->note);
    env_data *d = get_env_data(env);
    if (w->gated && d) {
        d->signing_running--;
        signing_start(env, d);
    }
    napi_value global = NULL, fnv = NULL;
    if (result && d && napi_get_global(env, &global) == napi_ok) {
        if (failed && d->convert && (fnv = ref_value(env, d->convert))) {
            /* configure(): the rejection is the JS exception for the failure. */
            napi_value argv[2] = {result, asb_make_string(env, w->fn->js)}, converted = NULL;
            if (argv[1] && napi_call_function(env, global, fnv, 2, argv, &converted) == napi_ok) result = converted;
            else result = NULL;
        } else if (!failed && d->json_parse && (fnv = ref_value(env, d->json_parse))) {
            /* configure(): a single JSON output resolves as the parsed value. */
            int outs = 0, json = 0;
            for (int i = 0; i < w->fn->nparams; i++) {
                int k = w->fn->params[i].kind;
                if (k == ASB_OUT_STRING || k == ASB_OUT_HANDLE || k == ASB_OUT_VALUE) outs++, json = w->fn->params[i].json;
            }
            napi_valuetype t = napi_undefined;
            napi_typeof(env, result, &t);
            if (outs == 1 && json && t == napi_string) {
                napi_value parsed = NULL;
                if (napi_call_function(env, global, fnv, 1, &result, &parsed) == napi_ok) result = parsed;
                else result = NULL, failed = 1;
            }
        }
    }
    if (!result) {
        napi_value exc = NULL;
        if (asb_pending_exception(env)) napi_get_and_clear_last_exception(env, &exc);
        if (!exc) {
            napi_value msg;
            napi_create_string_utf8(env, "appstoreserver: the async call could not complete", NAPI_AUTO_LENGTH, &msg);
            napi_create_error(env, NULL, msg, &exc);
        }
        napi_reject_deferred(env, w->deferred, exc);
    } else if (failed) {
        napi_reject_deferred(env, w->deferred, result);
    } else {
        napi_resolve_deferred(env, w->deferred, result);
    }
    napi_delete_async_work(env, w->work);
    free(w);
}

static napi_value call_async(napi_env env, napi_callback_info info) {
    napi_value argv[ASB_MAX_SLOTS];
    size_t argc = ASB_MAX_SLOTS;
    const asb_function *fn = NULL;
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&fn));
    asb_async *w = calloc(1, sizeof *w);
    if (!w) {
        napi_throw_error(env, "ERR_MEMORY", "out of memory");
        return NULL;
    }
    w->fn = fn;
    w->a.async = 1;
    if (!asb_marshal_in(env, fn, argc, argv, &w->a)) {
        asb_args_free(env, &w->a);
        free(w);
        return NULL;
    }
    env_data *d = get_env_data(env);
    w->gated = d && may_sign(fn) && call_signer(&w->a);
    napi_value promise, name;
    if (napi_create_promise(env, &w->deferred, &promise) != napi_ok ||
        napi_create_string_utf8(env, fn->js, NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_async_work(env, NULL, name, async_execute, async_complete, w, &w->work) != napi_ok) {
        asb_args_free(env, &w->a);
        free(w);
        if (!asb_pending_exception(env)) napi_throw_error(env, NULL, "appstoreserver: could not queue the async call");
        return NULL;
    }
#ifdef APPSTORE_ADDON_TRACE
    w->tq = asb_tracing() ? asb_now_ms() : 0;
#endif
    if (w->gated) { /* its turn comes in signing_start */
        if (d->signing_tail) d->signing_tail->next = w;
        else d->signing_head = w;
        d->signing_tail = w;
        signing_start(env, d);
        return promise;
    }
    if (napi_queue_async_work(env, w->work) != napi_ok) {
        napi_delete_async_work(env, w->work);
        asb_args_free(env, &w->a);
        free(w);
        if (!asb_pending_exception(env)) napi_throw_error(env, NULL, "appstoreserver: could not queue the async call");
        return NULL;
    }
    return promise;
}

/* configure(jsonParse, convert): from then on, pool calls of this environment resolve with jsonParse(output) when
 * their one output is JSON, and reject with convert(errorObject, functionName) -- no extra Promise step in JS. */
static napi_value js_configure(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t1 = napi_undefined, t2 = napi_undefined;
    if (argc < 2 || napi_typeof(env, argv[0], &t1) != napi_ok || napi_typeof(env, argv[1], &t2) != napi_ok ||
        t1 != napi_function || t2 != napi_function)
        return asb_throw_type(env, "configure", "%s", "expects (jsonParse, convert) functions");
    env_data *d = get_env_data(env);
    if (!d) return NULL;
    if (d->json_parse) napi_delete_reference(env, d->json_parse);
    if (d->convert) napi_delete_reference(env, d->convert);
    d->json_parse = d->convert = NULL;
    NAPI_OK(napi_create_reference(env, argv[0], 1, &d->json_parse));
    NAPI_OK(napi_create_reference(env, argv[1], 1, &d->convert));
    return asb_undefined(env);
}

/* ---- module ----------------------------------------------------------------------------------------------------- */

static int add_fn(napi_env env, napi_value target, const char *name, napi_callback cb, void *data) {
    napi_value f;
    return napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, data, &f) == napi_ok &&
           napi_set_named_property(env, target, name, f) == napi_ok;
}

NAPI_MODULE_INIT() {
    env_data *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (napi_set_instance_data(env, d, env_data_free, NULL) != napi_ok) {
        free(d);
        return NULL;
    }
    napi_value async_ns;
    NAPI_OK(napi_create_object(env, &async_ns));
    for (int i = 0; i < ASB_FUNCTIONS; i++) {
        const asb_function *fn = &asb_functions[i];
        if (!add_fn(env, exports, fn->js, call_sync, (void *)fn)) return NULL;
        if (fn->ret == ASB_RET_STATUS && !add_fn(env, async_ns, fn->js, call_async, (void *)fn)) return NULL;
    }
    NAPI_OK(napi_set_named_property(env, exports, "async", async_ns));
    if (!add_fn(env, exports, "close", asb_js_close, NULL) || !add_fn(env, exports, "retain", asb_js_retain, NULL) ||
        !add_fn(env, exports, "stats", asb_js_stats, NULL) ||
        !add_fn(env, exports, "configure", js_configure, NULL) ||
        !add_fn(env, exports, "transportNew", asb_js_transport_new, NULL) ||
        !add_fn(env, exports, "transportRespond", asb_js_transport_respond, NULL) ||
        !add_fn(env, exports, "signerKeyNew", asb_js_signer_key_new, NULL) ||
        !add_fn(env, exports, "signerClose", asb_js_signer_close, NULL) ||
        !add_fn(env, exports, "signerRespond", asb_js_signer_respond, NULL))
        return NULL;
    if (!signing_limit) {
        const char *pool = getenv("UV_THREADPOOL_SIZE");
        int n = pool ? atoi(pool) : 0;
        if (n <= 0) n = 4;
        signing_limit = n > 1 ? n - 1 : 1;
    }
#ifdef APPSTORE_ADDON_TRACE
    if (!add_fn(env, exports, "trace", asb_js_trace, NULL)) return NULL;
#endif
    napi_value v;
    NAPI_OK(napi_create_int32(env, NAPI_VERSION, &v));
    NAPI_OK(napi_set_named_property(env, exports, "napiVersion", v));
    return exports;
}
