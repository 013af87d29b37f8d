/*
 * Handle boxes: a library object is a napi_external tagged with ASB_TAG around a box (the library pointer, its kind,
 * the pool calls using it, JS values it keeps alive, the external signer it may call). close() frees the pointer as
 * soon as no pool call uses it; the finalizer frees it when the JS value is collected.
 */
#include "addon.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const napi_type_tag ASB_TAG = {0x61707073746f7265ULL, 0x736572766572626fULL};
static atomic_long live_boxes;

static const char *kind_name(int kind) {
    if (kind >= 0 && kind < ASB_HANDLE_KINDS) return asb_handle_kinds[kind].name;
    if (kind == ASB_KIND_EXCHANGE) return "transport exchange";
    if (kind == ASB_KIND_SIGN_REQUEST) return "signature request";
    return "handle";
}

/* Frees the library object (once), the extra and the dependencies. */
void asb_box_release(asb_box *b) {
    if (b->ptr) {
        void *p = b->ptr;
        b->ptr = NULL;
        if (b->kind >= 0 && b->kind < ASB_HANDLE_KINDS && asb_handle_kinds[b->kind].free_fn)
            asb_handle_kinds[b->kind].free_fn(p);
    }
    if (b->extra_free) {
        void (*fn)(void *) = b->extra_free;
        b->extra_free = NULL;
        fn(b->extra);
    }
    for (int i = 0; i < b->ndeps; i++) napi_delete_reference(b->env, b->deps[i]);
    b->ndeps = 0;
    if (b->signer) { /* after the library object: nothing calls the signer through this box any more */
        struct signer_bridge *sg = b->signer;
        b->signer = NULL;
        asb_signer_unuse(sg);
    }
}

static void box_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    asb_box *b = data;
    asb_box_release(b);
    free(b);
    atomic_fetch_sub(&live_boxes, 1);
}

napi_value asb_box_new(napi_env env, int kind, void *ptr, asb_box **out) {
    asb_box *b = calloc(1, sizeof *b);
    if (!b) {
        napi_throw_error(env, "ERR_MEMORY", "out of memory");
        return NULL;
    }
    b->ptr = ptr;
    b->kind = kind;
    b->env = env;
    napi_value ext;
    if (napi_create_external(env, b, box_finalize, NULL, &ext) != napi_ok) {
        free(b);
        return NULL;
    }
    atomic_fetch_add(&live_boxes, 1);
    if (napi_type_tag_object(env, ext, &ASB_TAG) != napi_ok) return NULL;
    if (out) *out = b;
    return ext;
}

/* The box of a JS value, or NULL (TypeError thrown) when it is not one of ours of that kind or is closed. */
asb_box *asb_box_get(napi_env env, napi_value v, int kind, const char *fn, const char *param) {
    napi_valuetype t;
    bool tagged = false;
    char what[160];
    const char *kn = kind_name(kind);
    snprintf(what, sizeof what, "%s must be %s %s handle", param, strchr("aeiou", kn[0]) ? "an" : "a", kn);
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, v, &ASB_TAG, &tagged) != napi_ok || !tagged) {
        asb_throw_type(env, fn, "%s", what);
        return NULL;
    }
    asb_box *b = NULL;
    if (napi_get_value_external(env, v, (void **)&b) != napi_ok || !b) {
        asb_throw_type(env, fn, "%s", what);
        return NULL;
    }
    if (b->kind != kind) {
        char msg[240];
        const char *got = kind_name(b->kind);
        snprintf(msg, sizeof msg, "%s (got %s %s handle)", what, strchr("aeiou", got[0]) ? "an" : "a", got);
        asb_throw_type(env, fn, "%s", msg);
        return NULL;
    }
    if (b->closed || !b->ptr) {
        char msg[240];
        snprintf(msg, sizeof msg, "%s: the %s handle is closed", fn, kind_name(kind));
        napi_throw_error(env, "ERR_APPSTORE_CLOSED", msg);
        return NULL;
    }
    return b;
}

/* The box of a handle of ours, closed or not (NULL with a TypeError otherwise). */
asb_box *asb_any_box(napi_env env, napi_value v, const char *fn, const char *what) {
    napi_valuetype t;
    bool tagged = false;
    asb_box *b = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, v, &ASB_TAG, &tagged) != napi_ok || !tagged ||
        napi_get_value_external(env, v, (void **)&b) != napi_ok || !b) {
        asb_throw_type(env, fn, "%s must be an appstoreserver handle", what);
        return NULL;
    }
    return b;
}

/* close(handle): frees the library object now, or when the last async call using it completes. Idempotent;
 * returns true when the handle was open. */
napi_value asb_js_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    bool tagged = false;
    if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, argv[0], &ASB_TAG, &tagged) != napi_ok || !tagged)
        return asb_throw_type(env, "close", "%s", "the argument must be an appstoreserver handle");
    asb_box *b = NULL;
    NAPI_OK(napi_get_value_external(env, argv[0], (void **)&b));
    int was_open = !b->closed;
    b->closed = 1;
    if (b->inflight == 0) asb_box_release(b);
    napi_value r;
    napi_get_boolean(env, was_open, &r);
    return r;
}

/* retain(holder, value): the holder handle keeps value alive until it is closed or collected (e.g. a verifier
 * keeps the transport its library object calls back into). */
napi_value asb_js_retain(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    bool tagged = false;
    if (argc < 2 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, argv[0], &ASB_TAG, &tagged) != napi_ok || !tagged)
        return asb_throw_type(env, "retain", "%s", "the holder must be an appstoreserver handle");
    asb_box *b = NULL;
    NAPI_OK(napi_get_value_external(env, argv[0], (void **)&b));
    if (b->ndeps >= ASB_MAX_DEPS) return asb_throw_range(env, "retain", "too many retained values");
    NAPI_OK(napi_create_reference(env, argv[1], 1, &b->deps[b->ndeps]));
    b->ndeps++;
    return asb_undefined(env);
}

napi_value asb_js_stats(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value o, v;
    NAPI_OK(napi_create_object(env, &o));
    napi_create_int64(env, atomic_load(&live_boxes), &v), asb_set_named(env, o, "liveHandles", v);
    napi_create_int64(env, atomic_load(&asb_live_exchanges), &v), asb_set_named(env, o, "liveExchanges", v);
    napi_create_int64(env, atomic_load(&asb_live_sign_requests), &v), asb_set_named(env, o, "liveSignRequests", v);
    return o;
}
