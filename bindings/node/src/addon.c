/*
 * appstoreserver Node addon: plain C on Node-API (NAPI_VERSION 8) over libappstoreserver's C ABI.
 *
 * Generic marshalling only: every C function of the ABI description is served from the generated table
 * (../generated/abi.h: parameter kinds, handle kinds, typed trampolines). For each one the addon exports
 *   native.<name>(...)         the call on the JS thread
 *   native.async.<name>(...)   the same call as napi_async_work on the libuv thread pool, returning a Promise
 *                              (fallible functions only)
 * JS arguments are the C inputs in order, less lengths and counts (taken from the buffers) and outputs; a
 * fallible call returns its single output, an object of its outputs, or undefined, and on failure throws
 * (rejects with) a plain object describing the appstore_error ({status, reason, message, ..., handle}).
 *
 * Handles are externals tagged with ASB_TAG around a box: the library pointer, its kind, the async calls using it
 * and JS values it keeps alive. close() frees the pointer as soon as no async call uses it; the finalizer frees it
 * when the JS value is collected. Wrong argument types throw TypeError (RangeError for numbers out of range);
 * nothing a JS caller passes can crash the process.
 *
 * Hand-written beyond the table: the transport bridge (online checks over JS fetch; see docs/node.md), the signer
 * bridge (external signers: keys in a KMS or an HSM, signed by a JS function), close, retain, and a trace of the pool
 * calls for the tests (wall-clock start/end, thread CPU time, thread id).
 */
#define NAPI_VERSION 8
#define _GNU_SOURCE
#include <node_api.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "appstoreserver.h"

/* ---- types the generated table uses ------------------------------------------------------------------------- */

typedef void (*asb_free_fn)(void *);
typedef struct {
    const char *name;
    asb_free_fn free_fn;
} asb_handle_kind;

enum {
    ASB_NONE,
    ASB_IN_HANDLE,
    ASB_IN_TEXT,   /* ptr + length; string or Uint8Array */
    ASB_IN_BYTES,  /* ptr + length; Uint8Array / ArrayBuffer */
    ASB_IN_LENGTH, /* the length of the linked buffer */
    ASB_IN_STRING, /* NUL-terminated UTF-8 */
    ASB_IN_VALUE,
    ASB_IN_BUFFERS, /* array of buffers: pointers (link: lengths slot) */
    ASB_IN_LENGTHS,
    ASB_IN_COUNT,
    ASB_OUT_HANDLE,
    ASB_OUT_STRING,
    ASB_OUT_VALUE,
    ASB_OUT_RESULT_LENGTH, /* the length of a byte-pointer result */
    ASB_OUT_ERROR,
};
enum { ASB_VT_NONE, ASB_VT_I32, ASB_VT_I64, ASB_VT_U32, ASB_VT_U64, ASB_VT_SIZE };
enum { ASB_RET_STATUS, ASB_RET_VOID, ASB_RET_VALUE, ASB_RET_BORROWED_STRING, ASB_RET_BORROWED_BYTES };

typedef union {
    void *p;
    int64_t i;
    uint64_t u;
    size_t z;
} asb_slot;

#define ASB_MAX_SLOTS 12
typedef struct {
    asb_slot s[ASB_MAX_SLOTS];
    asb_slot r;
    appstore_status status;
    appstore_error *err;
} asb_frame;

typedef struct {
    const char *name;
    int kind;
    int handle;
    int vt;
    int nullable;
    int link;
    int json; /* the text is JSON of a model (APPSTORE_JSON) */
} asb_param;

typedef struct {
    const char *js;
    int ret;
    int rvt;
    int nparams;
    const asb_param *params;
    void (*call)(asb_frame *);
} asb_function;

#include "abi.h"

/* Kinds beyond the ABI's handles. */
#define ASB_KIND_EXCHANGE (ASB_HANDLE_KINDS + 1)
#define ASB_KIND_SIGN_REQUEST (ASB_HANDLE_KINDS + 2)

/* ---- small helpers ------------------------------------------------------------------------------------------ */

static const napi_type_tag ASB_TAG = {0x61707073746f7265ULL, 0x736572766572626fULL};
static atomic_long live_boxes;
static atomic_long live_exchanges;
static atomic_long live_sign_requests;

#define NAPI_OK(call)                                                                                                   \
    do {                                                                                                            \
        if ((call) != napi_ok) return NULL;                                                                         \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int pending_exception(napi_env env) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    return pending;
}

static napi_value throw_type(napi_env env, const char *fn, const char *fmt, const char *a) {
    char msg[512];
    char detail[400];
    snprintf(detail, sizeof detail, fmt, a);
    snprintf(msg, sizeof msg, "%s: %s", fn, detail);
    if (!pending_exception(env)) napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
}

static napi_value throw_range(napi_env env, const char *fn, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", fn, what);
    if (!pending_exception(env)) napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
    return NULL;
}

static napi_value undefined(napi_env env) {
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
}

static napi_value null_value(napi_env env) {
    napi_value u;
    napi_get_null(env, &u);
    return u;
}

static int set_named(napi_env env, napi_value obj, const char *key, napi_value v) {
    return napi_set_named_property(env, obj, key, v) == napi_ok;
}

static napi_value make_string(napi_env env, const char *s) {
    napi_value v;
    if (napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v) != napi_ok) return NULL;
    return v;
}

static napi_value make_int64(napi_env env, int64_t x) {
    napi_value v;
    if (x > 9007199254740991LL || x < -9007199254740991LL) {
        if (napi_create_bigint_int64(env, x, &v) != napi_ok) return NULL;
    } else if (napi_create_int64(env, x, &v) != napi_ok) {
        return NULL;
    }
    return v;
}

static napi_value make_uint64(napi_env env, uint64_t x) {
    napi_value v;
    if (x > 9007199254740991ULL) {
        if (napi_create_bigint_uint64(env, x, &v) != napi_ok) return NULL;
    } else if (napi_create_double(env, (double)x, &v) != napi_ok) {
        return NULL;
    }
    return v;
}

/* "json_out" -> "json", "timestamp_out" -> "timestamp", "len_out" -> "len" (camelCase). */
static void out_name(const char *c_name, char *buf, size_t n) {
    size_t j = 0;
    int upper = 0;
    for (size_t i = 0; c_name[i] && j + 1 < n; i++) {
        if (strcmp(c_name + i, "_out") == 0) break;
        if (c_name[i] == '_') {
            upper = 1;
            continue;
        }
        buf[j++] = upper ? (char)(c_name[i] - 'a' + 'A') : c_name[i];
        upper = 0;
    }
    buf[j] = 0;
}

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

/* ---- handle boxes ------------------------------------------------------------------------------------------- */

#define ASB_MAX_DEPS 4
struct signer_bridge;
static void signer_use(struct signer_bridge *s);
static void signer_unuse(struct signer_bridge *s);
typedef struct asb_box {
    void *ptr;
    int kind;
    int inflight; /* async calls using ptr; JS thread only */
    int closed;
    napi_env env;
    napi_ref deps[ASB_MAX_DEPS]; /* JS values kept alive while the box holds ptr */
    int ndeps;
    void (*extra_free)(void *);
    void *extra;
    /* The external signer the library object may call (a key made with one, and every object made from such an
     * object: a client made with the key, a call made with the client): the bridge lives while any box using it holds
     * its library object. */
    struct signer_bridge *signer;
} asb_box;

static const char *kind_name(int kind) {
    if (kind >= 0 && kind < ASB_HANDLE_KINDS) return asb_handle_kinds[kind].name;
    if (kind == ASB_KIND_EXCHANGE) return "transport exchange";
    if (kind == ASB_KIND_SIGN_REQUEST) return "signature request";
    return "handle";
}

/* Frees the library object (once), the extra and the dependencies. */
static void box_release(asb_box *b) {
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
        signer_unuse(sg);
    }
}

static void box_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    asb_box *b = data;
    box_release(b);
    free(b);
    atomic_fetch_sub(&live_boxes, 1);
}

static napi_value box_new(napi_env env, int kind, void *ptr, asb_box **out) {
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
static asb_box *box_get(napi_env env, napi_value v, int kind, const char *fn, const char *param) {
    napi_valuetype t;
    bool tagged = false;
    char what[160];
    const char *kn = kind_name(kind);
    snprintf(what, sizeof what, "%s must be %s %s handle", param, strchr("aeiou", kn[0]) ? "an" : "a", kn);
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, v, &ASB_TAG, &tagged) != napi_ok || !tagged) {
        throw_type(env, fn, "%s", what);
        return NULL;
    }
    asb_box *b = NULL;
    if (napi_get_value_external(env, v, (void **)&b) != napi_ok || !b) {
        throw_type(env, fn, "%s", what);
        return NULL;
    }
    if (b->kind != kind) {
        char msg[240];
        const char *got = kind_name(b->kind);
        snprintf(msg, sizeof msg, "%s (got %s %s handle)", what, strchr("aeiou", got[0]) ? "an" : "a", got);
        throw_type(env, fn, "%s", msg);
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

/* ---- errors --------------------------------------------------------------------------------------------------- */

/* A plain object describing err (status, reason, message, API details) that owns err through `handle`. */
/* The headers of the answer an API error came with: [[name, value], ...] in the order received, names as sent (0
 * entries for errors without an answer); lib/errors.js makes APIException.headers of them. */
static napi_value error_headers(napi_env env, const appstore_error *err) {
    napi_value list;
    size_t n = appstore_error_header_count(err);
    if (napi_create_array_with_length(env, n, &list) != napi_ok) return NULL;
    for (size_t i = 0; i < n; i++) {
        napi_value pair, name, value;
        if (napi_create_array_with_length(env, 2, &pair) != napi_ok) return NULL;
        if (!(name = make_string(env, appstore_error_header_name(err, i)))) return NULL;
        if (!(value = make_string(env, appstore_error_header_value(err, i)))) return NULL;
        if (napi_set_element(env, pair, 0, name) != napi_ok || napi_set_element(env, pair, 1, value) != napi_ok ||
            napi_set_element(env, list, (uint32_t)i, pair) != napi_ok)
            return NULL;
    }
    return list;
}

static napi_value error_object(napi_env env, appstore_status st, appstore_error *err) {
    napi_value o, v;
    if (napi_create_object(env, &o) != napi_ok) {
        appstore_error_free(err);
        return NULL;
    }
    int ok = 1;
    ok &= napi_create_int32(env, st, &v) == napi_ok && set_named(env, o, "status", v);
    ok &= (v = make_string(env, appstore_status_name(st))) && set_named(env, o, "statusName", v);
    appstore_reason reason = appstore_error_reason(err);
    ok &= napi_create_int32(env, reason, &v) == napi_ok && set_named(env, o, "reason", v);
    ok &= (v = make_string(env, appstore_reason_name(reason))) && set_named(env, o, "reasonName", v);
    const char *message = err ? appstore_error_message(err) : "";
    ok &= (v = make_string(env, message && *message ? message : appstore_status_name(st))) && set_named(env, o, "message", v);
    if (err) {
        ok &= napi_create_int32(env, appstore_error_http_status(err), &v) == napi_ok && set_named(env, o, "httpStatus", v);
        ok &= (v = make_int64(env, appstore_error_api_error_code(err))) && set_named(env, o, "apiErrorCode", v);
        ok &= (v = make_string(env, appstore_error_api_error_name(err))) && set_named(env, o, "apiErrorName", v);
        ok &= (v = make_string(env, appstore_error_api_error_message(err))) && set_named(env, o, "apiErrorMessage", v);
        ok &= (v = make_int64(env, appstore_error_retry_after(err))) && set_named(env, o, "retryAfter", v);
        ok &= (v = make_int64(env, appstore_error_retry_at_ms(err))) && set_named(env, o, "retryAtMs", v);
        ok &= (v = error_headers(env, err)) && set_named(env, o, "headers", v);
        napi_value h = box_new(env, ASB_H_ERROR, err, NULL);
        if (!h) {
            appstore_error_free(err);
            return NULL;
        }
        ok &= set_named(env, o, "handle", h);
    }
    ok &= napi_get_boolean(env, true, &v) == napi_ok && set_named(env, o, "appstoreError", v);
    return ok ? o : NULL;
}

/* ---- marshalling in ------------------------------------------------------------------------------------------- */

typedef struct {
    asb_frame f;
    void *owned[ASB_MAX_SLOTS * 2];
    int nowned;
    char *scratch; /* sync calls: a stack buffer for string arguments (NULL: allocate) */
    size_t scratch_left;
    asb_box *boxes[ASB_MAX_SLOTS];
    napi_ref refs[ASB_MAX_SLOTS];
    int nboxes;
    int async;
} asb_args;

static const uint8_t empty_bytes[1] = {0};

static void *own(asb_args *a, void *p) {
    if (p) a->owned[a->nowned++] = p;
    return p;
}

static void args_free(napi_env env, asb_args *a) {
    for (int i = 0; i < a->nowned; i++) free(a->owned[i]);
    a->nowned = 0;
    for (int i = 0; i < a->nboxes; i++) {
        if (a->async) {
            asb_box *b = a->boxes[i];
            b->inflight--;
            if (b->closed && b->inflight == 0) box_release(b);
            napi_delete_reference(env, a->refs[i]);
        }
    }
    a->nboxes = 0;
}

/* Reads a JS string into a NUL-terminated UTF-8 buffer (the call's scratch space, or a new one owned by a); len_out
 * gets its byte length. One pass: the UTF-16 length (O(1)) bounds the UTF-8 length by 3 bytes per unit. */
static char *read_string(napi_env env, napi_value v, asb_args *a, size_t *len_out) {
    size_t units = 0, len = 0;
    if (napi_get_value_string_utf16(env, v, NULL, 0, &units) != napi_ok) return NULL;
    size_t cap = units * 3 + 1;
    char *buf;
    if (a->scratch && cap <= a->scratch_left) {
        buf = a->scratch;
    } else {
        buf = malloc(cap);
        if (!buf) return NULL;
        own(a, buf);
    }
    if (napi_get_value_string_utf8(env, v, buf, cap, &len) != napi_ok) return NULL;
    if (buf == a->scratch) {
        a->scratch += len + 1;
        a->scratch_left -= len + 1;
    }
    *len_out = len;
    return buf;
}

/* Bytes of a Uint8Array / Buffer / ArrayBuffer (allow_array_buffer) / DataView; 0 when v is none of them. */
static int read_bytes(napi_env env, napi_value v, void **data, size_t *len) {
    bool is = false;
    if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
        napi_typedarray_type t;
        size_t n;
        if (napi_get_typedarray_info(env, v, &t, &n, data, NULL, NULL) != napi_ok) return 0;
        if (t != napi_uint8_array && t != napi_int8_array && t != napi_uint8_clamped_array) return 0;
        *len = n;
        return 1;
    }
    if (napi_is_arraybuffer(env, v, &is) == napi_ok && is)
        return napi_get_arraybuffer_info(env, v, data, len) == napi_ok;
    if (napi_is_dataview(env, v, &is) == napi_ok && is)
        return napi_get_dataview_info(env, v, len, data, NULL, NULL) == napi_ok;
    return 0;
}

/* A buffer argument: copies it when the call is async (the JS value may change or go away meanwhile). */
static int marshal_buffer(napi_env env, napi_value v, int text, asb_args *a, void **p, size_t *len) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (text && t == napi_string) {
        char *s = read_string(env, v, a, len);
        if (!s) return 0;
        *p = s;
        return 1;
    }
    void *data = NULL;
    size_t n = 0;
    if (!read_bytes(env, v, &data, &n)) return 0;
    if (a->async && n) {
        void *copy = malloc(n);
        if (!copy) return 0;
        memcpy(copy, data, n);
        own(a, copy);
        data = copy;
    }
    *p = n ? data : (void *)empty_bytes;
    *len = n;
    return 1;
}

static int is_nullish(napi_env env, napi_value v) {
    napi_valuetype t;
    return napi_typeof(env, v, &t) == napi_ok && (t == napi_undefined || t == napi_null);
}

/* A number argument of value type vt into *slot; 0 with TypeError / RangeError thrown otherwise. */
static int marshal_value(napi_env env, napi_value v, int vt, const char *fn, const char *name, asb_slot *slot) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    char msg[200];
    if (t == napi_bigint && (vt == ASB_VT_I64 || vt == ASB_VT_U64)) {
        bool lossless = false;
        if (vt == ASB_VT_I64) napi_get_value_bigint_int64(env, v, &slot->i, &lossless);
        else napi_get_value_bigint_uint64(env, v, &slot->u, &lossless);
        if (!lossless) {
            snprintf(msg, sizeof msg, "%s is out of range", name);
            throw_range(env, fn, msg);
            return 0;
        }
        return 1;
    }
    if (t != napi_number) {
        throw_type(env, fn, "%s must be a number", name);
        return 0;
    }
    double d;
    napi_get_value_double(env, v, &d);
    double lo, hi;
    switch (vt) {
    case ASB_VT_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case ASB_VT_U32: lo = 0, hi = 4294967295.0; break;
    case ASB_VT_I64: lo = -9007199254740991.0, hi = 9007199254740991.0; break;
    default: lo = 0, hi = 9007199254740991.0; break;
    }
    if (d != d || d < lo || d > hi || d != (double)(int64_t)d) {
        snprintf(msg, sizeof msg, "%s must be an integer from %.0f to %.0f", name, lo, hi);
        throw_range(env, fn, msg);
        return 0;
    }
    if (vt == ASB_VT_U32 || vt == ASB_VT_U64) slot->u = (uint64_t)d;
    else if (vt == ASB_VT_SIZE) slot->z = (size_t)d;
    else slot->i = (int64_t)d;
    return 1;
}

/* Fills the frame from the JS arguments. Returns 0 with an exception pending on bad arguments. */
static int marshal_in(napi_env env, const asb_function *fn, size_t argc, napi_value *argv, asb_args *a) {
    size_t j = 0, expected = 0;
    for (int i = 0; i < fn->nparams; i++) {
        int k = fn->params[i].kind;
        if (k == ASB_IN_HANDLE || k == ASB_IN_TEXT || k == ASB_IN_BYTES || k == ASB_IN_STRING || k == ASB_IN_VALUE ||
            k == ASB_IN_BUFFERS)
            expected++;
    }
    if (argc > expected) {
        char msg[64];
        snprintf(msg, sizeof msg, "expects %zu arguments, got %zu", expected, argc);
        throw_type(env, fn->js, "%s", msg);
        return 0;
    }
    for (int i = 0; i < fn->nparams; i++) {
        const asb_param *p = &fn->params[i];
        asb_slot *slot = &a->f.s[i];
        napi_value v = NULL;
        int takes = p->kind == ASB_IN_HANDLE || p->kind == ASB_IN_TEXT || p->kind == ASB_IN_BYTES ||
                    p->kind == ASB_IN_STRING || p->kind == ASB_IN_VALUE || p->kind == ASB_IN_BUFFERS;
        if (takes) {
            if (j < argc) v = argv[j];
            j++;
            if (!v || is_nullish(env, v)) {
                if (!p->nullable) {
                    throw_type(env, fn->js, "%s is required", p->name);
                    return 0;
                }
                slot->p = NULL;
                if (p->kind == ASB_IN_TEXT || p->kind == ASB_IN_BYTES) a->f.s[p->link].z = 0;
                if (p->kind == ASB_IN_BUFFERS) {
                    a->f.s[p->link].p = NULL;
                    for (int c = 0; c < fn->nparams; c++)
                        if (fn->params[c].kind == ASB_IN_COUNT && fn->params[c].link == i) a->f.s[c].z = 0;
                }
                continue;
            }
        }
        switch (p->kind) {
        case ASB_IN_HANDLE: {
            asb_box *b = box_get(env, v, p->handle, fn->js, p->name);
            if (!b) return 0;
            slot->p = b->ptr;
            if (a->async) {
                if (napi_create_reference(env, v, 1, &a->refs[a->nboxes]) != napi_ok) return 0;
                b->inflight++;
            }
            a->boxes[a->nboxes++] = b;
            break;
        }
        case ASB_IN_TEXT:
        case ASB_IN_BYTES: {
            size_t len = 0;
            if (!marshal_buffer(env, v, p->kind == ASB_IN_TEXT, a, &slot->p, &len)) {
                throw_type(env, fn->js,
                           p->kind == ASB_IN_TEXT ? "%s must be a string or a Uint8Array" : "%s must be a Uint8Array or ArrayBuffer",
                           p->name);
                return 0;
            }
            a->f.s[p->link].z = len;
            break;
        }
        case ASB_IN_STRING: {
            napi_valuetype t;
            napi_typeof(env, v, &t);
            size_t len = 0;
            char *s = t == napi_string ? read_string(env, v, a, &len) : NULL;
            if (!s) {
                throw_type(env, fn->js, "%s must be a string", p->name);
                return 0;
            }
            if (strlen(s) != len) {
                throw_type(env, fn->js, "%s must not contain a NUL character", p->name);
                return 0;
            }
            slot->p = s;
            break;
        }
        case ASB_IN_VALUE:
            if (!marshal_value(env, v, p->vt, fn->js, p->name, slot)) return 0;
            break;
        case ASB_IN_BUFFERS: {
            bool is_array = false;
            uint32_t n = 0;
            if (napi_is_array(env, v, &is_array) != napi_ok || !is_array || napi_get_array_length(env, v, &n) != napi_ok) {
                throw_type(env, fn->js, "%s must be an array of Uint8Array", p->name);
                return 0;
            }
            const uint8_t **ptrs = own(a, calloc(n ? n : 1, sizeof *ptrs));
            size_t *lens = own(a, calloc(n ? n : 1, sizeof *lens));
            if (!ptrs || !lens) {
                napi_throw_error(env, "ERR_MEMORY", "out of memory");
                return 0;
            }
            for (uint32_t e = 0; e < n; e++) {
                napi_value item;
                void *data = NULL;
                if (napi_get_element(env, v, e, &item) != napi_ok ||
                    !marshal_buffer(env, item, 0, a, &data, &lens[e])) {
                    throw_type(env, fn->js, "%s must be an array of Uint8Array", p->name);
                    return 0;
                }
                ptrs[e] = data;
            }
            slot->p = (void *)ptrs;
            a->f.s[p->link].p = lens;
            for (int c = 0; c < fn->nparams; c++)
                if (fn->params[c].kind == ASB_IN_COUNT && fn->params[c].link == i) a->f.s[c].z = n;
            break;
        }
        default:
            break; /* lengths, counts: set with their buffer; outputs: the trampoline's locals */
        }
    }
    return 1;
}

/* ---- marshalling out ------------------------------------------------------------------------------------------ */

/* Converts an output slot to JS and takes ownership of what it holds. A handle made from an object that may call an
 * external signer (inherit) may call it too: its box uses the signer's bridge. */
static napi_value out_value(napi_env env, const asb_param *p, asb_slot *slot, struct signer_bridge *inherit) {
    switch (p->kind) {
    case ASB_OUT_STRING: {
        if (!slot->p) return null_value(env);
        napi_value v;
        napi_status st = napi_create_string_utf8(env, slot->p, NAPI_AUTO_LENGTH, &v);
        appstore_string_free(slot->p);
        slot->p = NULL;
        return st == napi_ok ? v : NULL;
    }
    case ASB_OUT_HANDLE: {
        if (!slot->p) return null_value(env);
        void *ptr = slot->p;
        slot->p = NULL;
        asb_box *box = NULL;
        napi_value v = box_new(env, p->handle, ptr, &box);
        if (!v) asb_handle_kinds[p->handle].free_fn(ptr);
        else if (inherit) {
            signer_use(inherit);
            box->signer = inherit;
        }
        return v;
    }
    case ASB_OUT_VALUE:
        if (p->vt == ASB_VT_U64 || p->vt == ASB_VT_U32 || p->vt == ASB_VT_SIZE) return make_uint64(env, slot->u);
        return make_int64(env, slot->i);
    default:
        return undefined(env);
    }
}

/* Frees what the outputs of a frame hold without converting them (a conversion failed). */
static void out_discard(const asb_function *fn, asb_frame *f) {
    for (int i = 0; i < fn->nparams; i++) {
        const asb_param *p = &fn->params[i];
        if (p->kind == ASB_OUT_STRING && f->s[i].p) appstore_string_free(f->s[i].p);
        if (p->kind == ASB_OUT_HANDLE && f->s[i].p) asb_handle_kinds[p->handle].free_fn(f->s[i].p);
        if (p->kind == ASB_OUT_STRING || p->kind == ASB_OUT_HANDLE) f->s[i].p = NULL;
    }
    if (f->err) appstore_error_free(f->err);
    f->err = NULL;
}

/* The JS result of a call; *failed = 1 when the result is an error object (to throw or reject with). */
static napi_value marshal_out(napi_env env, const asb_function *fn, asb_frame *f, int *failed,
                              struct signer_bridge *inherit) {
    *failed = 0;
    switch (fn->ret) {
    case ASB_RET_VOID:
        return undefined(env);
    case ASB_RET_VALUE:
        if (fn->rvt == ASB_VT_U64 || fn->rvt == ASB_VT_U32 || fn->rvt == ASB_VT_SIZE) return make_uint64(env, f->r.u);
        if (fn->rvt == ASB_VT_I32) {
            napi_value v;
            return napi_create_int32(env, (int32_t)f->r.i, &v) == napi_ok ? v : NULL;
        }
        return make_int64(env, f->r.i);
    case ASB_RET_BORROWED_STRING:
        return make_string(env, f->r.p);
    case ASB_RET_BORROWED_BYTES: {
        size_t len = 0;
        for (int i = 0; i < fn->nparams; i++)
            if (fn->params[i].kind == ASB_OUT_RESULT_LENGTH) len = f->s[i].z;
        napi_value v;
        void *data = NULL;
        if (napi_create_buffer_copy(env, len, f->r.p ? f->r.p : empty_bytes, &data, &v) != napi_ok) return NULL;
        return v;
    }
    default:
        break;
    }
    if (f->status != APPSTORE_OK) {
        *failed = 1; /* outputs are written only on success: nothing to free */
        appstore_error *err = f->err;
        f->err = NULL;
        return error_object(env, f->status, err);
    }
    if (f->err) { /* not written on success by contract; never leak it */
        appstore_error_free(f->err);
        f->err = NULL;
    }
    int outs = 0, last = -1;
    for (int i = 0; i < fn->nparams; i++) {
        int k = fn->params[i].kind;
        if (k == ASB_OUT_STRING || k == ASB_OUT_HANDLE || k == ASB_OUT_VALUE) outs++, last = i;
    }
    if (outs == 0) return undefined(env);
    if (outs == 1) {
        napi_value v = out_value(env, &fn->params[last], &f->s[last], inherit);
        if (!v) out_discard(fn, f);
        return v;
    }
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) {
        out_discard(fn, f);
        return NULL;
    }
    for (int i = 0; i < fn->nparams; i++) {
        int k = fn->params[i].kind;
        if (k != ASB_OUT_STRING && k != ASB_OUT_HANDLE && k != ASB_OUT_VALUE) continue;
        char key[64];
        out_name(fn->params[i].name, key, sizeof key);
        napi_value v = out_value(env, &fn->params[i], &f->s[i], inherit);
        if (!v || !set_named(env, o, key, v)) {
            out_discard(fn, f);
            return NULL;
        }
    }
    return o;
}

/* ---- trace (tests: do pool calls overlap?) -------------------------------------------------------------------- */

#define TRACE_SIZE 8192
typedef struct {
    const char *fn;
    double tq, t0, t1, cpu;
    long tid;
} trace_entry;
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static trace_entry trace_ring[TRACE_SIZE];
static int trace_count;
static atomic_int trace_on;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void trace_add(const char *fn, double tq, double t0, double t1, double cpu, long tid) {
    pthread_mutex_lock(&trace_mu);
    if (trace_count < TRACE_SIZE) trace_ring[trace_count++] = (trace_entry){fn, tq, t0, t1, cpu, tid};
    pthread_mutex_unlock(&trace_mu);
}

static napi_value js_trace(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    bool on = false;
    if (argc >= 1) napi_get_value_bool(env, argv[0], &on);
    atomic_store(&trace_on, on ? 1 : 0);
    napi_value arr;
    pthread_mutex_lock(&trace_mu);
    int n = trace_count;
    trace_entry *copy = malloc(sizeof(trace_entry) * (size_t)(n ? n : 1));
    if (!copy) n = 0;
    else memcpy(copy, trace_ring, sizeof(trace_entry) * (size_t)n);
    trace_count = 0;
    pthread_mutex_unlock(&trace_mu);
    if (napi_create_array_with_length(env, (size_t)n, &arr) != napi_ok) {
        free(copy);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        napi_value o, v;
        if (napi_create_object(env, &o) != napi_ok) break;
        set_named(env, o, "fn", make_string(env, copy[i].fn));
        napi_create_double(env, copy[i].tq, &v), set_named(env, o, "queued", v);
        napi_create_double(env, copy[i].t0, &v), set_named(env, o, "start", v);
        napi_create_double(env, copy[i].t1, &v), set_named(env, o, "end", v);
        napi_create_double(env, copy[i].cpu, &v), set_named(env, o, "cpu", v);
        napi_create_int64(env, copy[i].tid, &v), set_named(env, o, "thread", v);
        napi_set_element(env, arr, (uint32_t)i, o);
    }
    free(copy);
    return arr;
}

/* ---- signer notes: why a JS signer failed, for the error of the call that asked -----------------------------------
 *
 * The library sees only that the signer callback returned non-zero ("the signer callback returned 1"). The callback
 * (signer bridge, below) runs on the thread of the library call that asked for the signature, so it leaves what went
 * wrong in that thread's note; the call path takes the note when the call fails and puts it on the error object
 * (signerFailure, signerCauseId, signerTimedOut), where lib/errors.js makes the message and the cause of it.
 */

typedef struct {
    char *text;      /* what failed, e.g. "it threw Error: KMS unavailable" (malloc) */
    double cause_id; /* lib/errors.js's id of what the JS signer threw or rejected with; 0 = none */
    int timed_out;
} signer_note;

static _Thread_local signer_note tls_note;

static void note_clear(void) {
    free(tls_note.text);
    memset(&tls_note, 0, sizeof tls_note);
}

static void note_set(const char *text, double cause_id, int timed_out) {
    note_clear();
    tls_note.text = strdup(text ? text : "the signer failed");
    tls_note.cause_id = cause_id;
    tls_note.timed_out = timed_out;
}

static signer_note note_take(void) {
    signer_note n = tls_note;
    memset(&tls_note, 0, sizeof tls_note);
    return n;
}

/* Puts a failed call's note on its error object (a plain object from error_object); frees the note's text. */
static void note_attach(napi_env env, napi_value err, signer_note *n) {
    if (n->text && err) {
        napi_value v;
        napi_valuetype t = napi_undefined;
        if (napi_typeof(env, err, &t) == napi_ok && t == napi_object) {
            if ((v = make_string(env, n->text))) set_named(env, err, "signerFailure", v);
            if (napi_create_double(env, n->cause_id, &v) == napi_ok) set_named(env, err, "signerCauseId", v);
            if (napi_get_boolean(env, n->timed_out != 0, &v) == napi_ok) set_named(env, err, "signerTimedOut", v);
        }
    }
    free(n->text);
    memset(n, 0, sizeof *n);
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

/* ---- calls ------------------------------------------------------------------------------------------------------ */

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
    if (!marshal_in(env, fn, argc, argv, &a)) {
        args_free(env, &a);
        return NULL;
    }
    note_clear();
    fn->call(&a.f);
    signer_note note = {0};
    if (fn->ret == ASB_RET_STATUS && a.f.status != APPSTORE_OK) note = note_take();
    else note_clear();
    int failed = 0;
    napi_value result = marshal_out(env, fn, &a.f, &failed, call_signer(&a));
    args_free(env, &a);
    note_attach(env, failed ? result : NULL, &note);
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
    double tq, t0, t1, cpu;
    long tid;
    signer_note note;        /* why the external signer failed, when the call failed */
    int gated;               /* counted in env_data.signing_running */
    struct asb_async *next;  /* env_data's queue of calls waiting for their turn */
} asb_async;

static void async_execute(napi_env env, void *data) {
    (void)env;
    asb_async *w = data;
    int tracing = atomic_load(&trace_on);
    double c0 = tracing ? thread_cpu_ms() : 0;
    w->t0 = now_ms();
    w->tid = (long)syscall(SYS_gettid);
    note_clear();
    w->fn->call(&w->a.f);
    if (w->a.f.status != APPSTORE_OK) w->note = note_take();
    else note_clear();
    w->t1 = now_ms();
    w->cpu = tracing ? thread_cpu_ms() - c0 : 0;
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
            args_free(env, &next->a);
            napi_delete_async_work(env, next->work);
            free(next);
        }
    }
}

static void async_complete(napi_env env, napi_status status, void *data) {
    asb_async *w = data;
    /* The signer outputs inherit, kept while the arguments are released (a closed key's box releases it there). */
    struct signer_bridge *inherit = call_signer(&w->a);
    if (inherit) signer_use(inherit);
    args_free(env, &w->a);
    if (atomic_load(&trace_on)) trace_add(w->fn->js, w->tq, w->t0, w->t1, w->cpu, w->tid);
    napi_value result = NULL;
    int failed = 0;
    if (status == napi_ok) result = marshal_out(env, w->fn, &w->a.f, &failed, inherit);
    else out_discard(w->fn, &w->a.f);
    if (inherit) signer_unuse(inherit);
    note_attach(env, failed ? result : NULL, &w->note);
    env_data *d = get_env_data(env);
    if (w->gated && d) {
        d->signing_running--;
        signing_start(env, d);
    }
    napi_value global = NULL, fnv = NULL;
    if (result && d && napi_get_global(env, &global) == napi_ok) {
        if (failed && d->convert && (fnv = ref_value(env, d->convert))) {
            /* configure(): the rejection is the JS exception for the failure. */
            napi_value argv[2] = {result, make_string(env, w->fn->js)}, converted = NULL;
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
        if (pending_exception(env)) napi_get_and_clear_last_exception(env, &exc);
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
    if (!marshal_in(env, fn, argc, argv, &w->a)) {
        args_free(env, &w->a);
        free(w);
        return NULL;
    }
    env_data *d = get_env_data(env);
    w->gated = d && may_sign(fn) && call_signer(&w->a);
    napi_value promise, name;
    if (napi_create_promise(env, &w->deferred, &promise) != napi_ok ||
        napi_create_string_utf8(env, fn->js, NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_async_work(env, NULL, name, async_execute, async_complete, w, &w->work) != napi_ok) {
        args_free(env, &w->a);
        free(w);
        if (!pending_exception(env)) napi_throw_error(env, NULL, "appstoreserver: could not queue the async call");
        return NULL;
    }
    w->tq = atomic_load(&trace_on) ? now_ms() : 0;
    if (w->gated) { /* its turn comes in signing_start */
        if (d->signing_tail) d->signing_tail->next = w;
        else d->signing_head = w;
        d->signing_tail = w;
        signing_start(env, d);
        return promise;
    }
    if (napi_queue_async_work(env, w->work) != napi_ok) {
        napi_delete_async_work(env, w->work);
        args_free(env, &w->a);
        free(w);
        if (!pending_exception(env)) napi_throw_error(env, NULL, "appstoreserver: could not queue the async call");
        return NULL;
    }
    return promise;
}

/* ---- close / retain / stats ------------------------------------------------------------------------------------ */

/* close(handle): frees the library object now, or when the last async call using it completes. Idempotent;
 * returns true when the handle was open. */
static napi_value js_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    bool tagged = false;
    if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, argv[0], &ASB_TAG, &tagged) != napi_ok || !tagged)
        return throw_type(env, "close", "%s", "the argument must be an appstoreserver handle");
    asb_box *b = NULL;
    NAPI_OK(napi_get_value_external(env, argv[0], (void **)&b));
    int was_open = !b->closed;
    b->closed = 1;
    if (b->inflight == 0) box_release(b);
    napi_value r;
    napi_get_boolean(env, was_open, &r);
    return r;
}

/* retain(holder, value): the holder handle keeps value alive until it is closed or collected (e.g. a verifier
 * keeps the transport its library object calls back into). */
static napi_value js_retain(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    bool tagged = false;
    if (argc < 2 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, argv[0], &ASB_TAG, &tagged) != napi_ok || !tagged)
        return throw_type(env, "retain", "%s", "the holder must be an appstoreserver handle");
    asb_box *b = NULL;
    NAPI_OK(napi_get_value_external(env, argv[0], (void **)&b));
    if (b->ndeps >= ASB_MAX_DEPS) return throw_range(env, "retain", "too many retained values");
    NAPI_OK(napi_create_reference(env, argv[1], 1, &b->deps[b->ndeps]));
    b->ndeps++;
    return undefined(env);
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
        return throw_type(env, "configure", "%s", "expects (jsonParse, convert) functions");
    env_data *d = get_env_data(env);
    if (!d) return NULL;
    if (d->json_parse) napi_delete_reference(env, d->json_parse);
    if (d->convert) napi_delete_reference(env, d->convert);
    d->json_parse = d->convert = NULL;
    NAPI_OK(napi_create_reference(env, argv[0], 1, &d->json_parse));
    NAPI_OK(napi_create_reference(env, argv[1], 1, &d->convert));
    return undefined(env);
}

static napi_value js_stats(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value o, v;
    NAPI_OK(napi_create_object(env, &o));
    napi_create_int64(env, atomic_load(&live_boxes), &v), set_named(env, o, "liveHandles", v);
    napi_create_int64(env, atomic_load(&live_exchanges), &v), set_named(env, o, "liveExchanges", v);
    napi_create_int64(env, atomic_load(&live_sign_requests), &v), set_named(env, o, "liveSignRequests", v);
    return o;
}

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
    atomic_fetch_sub(&live_exchanges, 1);
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
    atomic_fetch_add(&live_exchanges, 1);
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
    napi_value handle = box_new(env, ASB_KIND_EXCHANGE, x, &box);
    if (!handle) {
        if (pending_exception(env)) {
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
    ok = ok && (v = make_string(env, x->method)) && set_named(env, req, "method", v);
    ok = ok && (v = make_string(env, x->url)) && set_named(env, req, "url", v);
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
    ok = ok && set_named(env, req, "headers", arr);
    void *bdata = NULL;
    ok = ok && napi_create_buffer_copy(env, x->body_len, x->body_len ? x->body : empty_bytes, &bdata, &v) == napi_ok &&
         set_named(env, req, "body", v);
    ok = ok && napi_create_uint32(env, x->timeout_ms, &v) == napi_ok && set_named(env, req, "timeoutMs", v);
    napi_value argv[2] = {req, handle};
    ok = ok && napi_get_undefined(env, &recv) == napi_ok && napi_call_function(env, recv, js_cb, 2, argv, NULL) == napi_ok;
    if (!ok) {
        if (pending_exception(env)) {
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
static napi_value js_transport_new(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t;
    if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function)
        return throw_type(env, "transportNew", "%s", "the dispatcher must be a function");
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
        napi_value e = error_object(env, st, err);
        b->handle_gone = 1;
        napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
        if (e) napi_throw(env, e);
        return NULL;
    }
    asb_box *box = NULL;
    napi_value h = box_new(env, ASB_H_TRANSPORT, tr, &box);
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
static napi_value js_transport_respond(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    const char *fn = "transportRespond";
    if (argc < 2) return throw_type(env, fn, "%s", "expects (exchange, result, status, headers, body)");
    asb_box *box = box_get(env, argv[0], ASB_KIND_EXCHANGE, fn, "exchange");
    if (!box) return NULL;
    exchange *x = box->extra;
    asb_slot rs = {0}, st = {0};
    if (!marshal_value(env, argv[1], ASB_VT_I32, fn, "result", &rs)) return NULL;
    if (rs.i < 0 || rs.i > 3) return throw_range(env, fn, "result must be a TRANSPORT_RESULT value (0-3)");
    int ok_result = rs.i == APPSTORE_TRANSPORT_RESULT_OK;
    if (ok_result) {
        if (argc < 3 || !marshal_value(env, argv[2], ASB_VT_I32, fn, "status", &st)) {
            if (!pending_exception(env)) throw_type(env, fn, "%s", "status must be a number");
            return NULL;
        }
        if (st.i < 100 || st.i > 599) return throw_range(env, fn, "status must be 100-599");
    }
    /* Read everything before taking the lock (JS values cannot be read from another thread anyway). */
    char **names = NULL, **values = NULL;
    size_t nh = 0;
    uint8_t *rbody = NULL;
    size_t rlen = 0;
    int bad = 0;
    if (ok_result && argc >= 4 && !is_nullish(env, argv[3])) {
        bool is_array = false;
        uint32_t n = 0;
        if (napi_is_array(env, argv[3], &is_array) != napi_ok || !is_array ||
            napi_get_array_length(env, argv[3], &n) != napi_ok)
            return throw_type(env, fn, "%s", "headers must be an array of [name, value] pairs");
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
        if (pending_exception(env)) bad = 3;
    }
    if (!bad && ok_result && argc >= 5 && !is_nullish(env, argv[4])) {
        void *data = NULL;
        if (!read_bytes(env, argv[4], &data, &rlen)) bad = 4;
        else if (rlen && !(rbody = malloc(rlen))) bad = 1;
        else if (rlen) memcpy(rbody, data, rlen);
    }
    if (bad) {
        for (size_t i = 0; i < nh; i++) free(names[i]), free(values[i]);
        free(names), free(values), free(rbody);
        if (bad == 2) return throw_type(env, fn, "%s", "headers must be an array of [name, value] string pairs");
        if (bad == 4) return throw_type(env, fn, "%s", "body must be a Uint8Array or ArrayBuffer");
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
    box_release(box);
    napi_value r;
    napi_get_boolean(env, accepted, &r);
    return r;
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
    atomic_fetch_sub(&live_sign_requests, 1);
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
static void signer_use(signer_bridge *s) { s->users++; }

/* JS thread: a box that used the signer has released its library object. */
static void signer_unuse(signer_bridge *s) {
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
                           uint8_t *signature, size_t signature_cap, size_t *signature_len) {
    signer_bridge *s = user_data;
    note_clear();
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
    atomic_fetch_add(&live_sign_requests, 1);
    r->refs = 2;
    r->message = malloc(message_len ? message_len : 1);
    r->message_len = message_len;
    if (r->message && message_len) memcpy(r->message, message, message_len);
    memcpy(r->digest, digest, sizeof r->digest);
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
    uint32_t wait_ms = s->timeout_ms ? s->timeout_ms : 10000;
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
        snprintf(why, sizeof why, "no signature within its timeout of %u ms", wait_ms);
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

/* Runs on the JS thread for each request: dispatcher(message, digest, requestHandle). */
static void signer_call_js(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)context;
    sign_request *r = data;
    if (!env || !js_cb) { /* the environment is going away */
        sign_request_fail(r, SIGNER_GONE, 0);
        sign_request_unref(r);
        return;
    }
    asb_box *box = NULL;
    napi_value handle = box_new(env, ASB_KIND_SIGN_REQUEST, r, &box);
    if (!handle) {
        if (pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        sign_request_fail(r, "out of memory", 0);
        sign_request_unref(r);
        return;
    }
    box->extra = r; /* the JS side's reference: released when it answers or the handle is collected */
    box->extra_free = sign_request_unref_box;
    napi_value argv[3], recv;
    void *bdata = NULL;
    argv[2] = handle;
    int ok = napi_create_buffer_copy(env, r->message_len, r->message_len ? r->message : empty_bytes, &bdata,
                                     &argv[0]) == napi_ok &&
             napi_create_buffer_copy(env, sizeof r->digest, r->digest, &bdata, &argv[1]) == napi_ok &&
             napi_get_undefined(env, &recv) == napi_ok &&
             napi_call_function(env, recv, js_cb, 3, argv, NULL) == napi_ok;
    if (!ok) {
        if (pending_exception(env)) {
            napi_value e;
            napi_get_and_clear_last_exception(env, &e);
        }
        sign_request_fail(r, "the signer's dispatcher failed", 0);
    }
}

/* signerKeyNew(dispatcher, publicKey, timeoutMs, keyId, issuerId | null, bundleId): a signing key handle whose
 * signatures are asked of dispatcher(message, digest, request) on this thread (appstore_signing_key_new_with_signer).
 * publicKey: PEM text (string or bytes) or DER SubjectPublicKeyInfo. */
static napi_value js_signer_key_new(napi_env env, napi_callback_info info) {
    const char *fn = "signerKeyNew";
    size_t argc = 6;
    napi_value argv[6];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    napi_valuetype t = napi_undefined;
    if (argc < 6) return throw_type(env, fn, "%s", "expects (dispatcher, publicKey, timeoutMs, keyId, issuerId, bundleId)");
    if (napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function)
        return throw_type(env, fn, "%s", "the dispatcher must be a function");
    asb_args a;
    memset(&a, 0, sizeof a);
    a.async = 1; /* copy byte buffers: nothing of the caller's is read later, but keep one rule */
    void *pub = NULL;
    size_t pub_len = 0;
    asb_slot timeout = {0};
    const char *names[3] = {"keyId", "issuerId", "bundleId"};
    char *text[3] = {NULL, NULL, NULL};
    if (!marshal_buffer(env, argv[1], 1, &a, &pub, &pub_len)) {
        args_free(env, &a);
        return throw_type(env, fn, "%s", "publicKey must be a string or a Uint8Array");
    }
    if (!marshal_value(env, argv[2], ASB_VT_U32, fn, "timeoutMs", &timeout)) {
        args_free(env, &a);
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        if (i == 1 && is_nullish(env, argv[4])) continue;
        size_t len = 0;
        if (napi_typeof(env, argv[3 + i], &t) != napi_ok || t != napi_string ||
            !(text[i] = read_string(env, argv[3 + i], &a, &len)) || strlen(text[i]) != len) {
            args_free(env, &a);
            return throw_type(env, fn, "%s must be a string without NUL characters", names[i]);
        }
    }
    signer_bridge *s = calloc(1, sizeof *s);
    if (!s) {
        args_free(env, &a);
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
        args_free(env, &a);
        signer_destroy(s);
        return NULL;
    }
    napi_unref_threadsafe_function(env, s->tsfn); /* an idle signer does not keep the process alive */
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new_with_signer(signer_sign, s, pub, pub_len, s->timeout_ms, text[0],
                                                              text[1], text[2], &key, &err);
    args_free(env, &a);
    if (st != APPSTORE_OK) {
        napi_value e = error_object(env, st, err);
        napi_release_threadsafe_function(s->tsfn, napi_tsfn_release); /* users 0: signer_finalize frees s */
        if (e) napi_throw(env, e);
        return NULL;
    }
    asb_box *box = NULL;
    napi_value h = box_new(env, ASB_H_SIGNING_KEY, key, &box);
    if (!h) {
        appstore_signing_key_free(key);
        napi_release_threadsafe_function(s->tsfn, napi_tsfn_release);
        return NULL;
    }
    s->users = 1;
    box->signer = s;
    return h;
}

/* The box of a handle of ours, closed or not (NULL with a TypeError otherwise). */
static asb_box *any_box(napi_env env, napi_value v, const char *fn, const char *what) {
    napi_valuetype t;
    bool tagged = false;
    asb_box *b = NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_check_object_type_tag(env, v, &ASB_TAG, &tagged) != napi_ok || !tagged ||
        napi_get_value_external(env, v, (void **)&b) != napi_ok || !b) {
        throw_type(env, fn, "%s must be an appstoreserver handle", what);
        return NULL;
    }
    return b;
}

/* signerClose(handle): the signer of a key (or of a client made with one) fails the requests still waiting, and every
 * later one. Returns false when the handle has no signer (any more). */
static napi_value js_signer_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 1) return throw_type(env, "signerClose", "%s", "expects (handle)");
    asb_box *b = any_box(env, argv[0], "signerClose", "the argument");
    if (!b) return NULL;
    if (b->signer) signer_close(b->signer);
    napi_value r;
    napi_get_boolean(env, b->signer != NULL, &r);
    return r;
}

/* signerRespond(request, signature | null, failure | null, causeId): the answer to a sign request: the signature
 * (1 to 72 bytes, DER or r||s: the library checks it), or what went wrong. Returns false when the waiter has given
 * up already (timeout, closed). */
static napi_value js_signer_respond(napi_env env, napi_callback_info info) {
    const char *fn = "signerRespond";
    size_t argc = 4;
    napi_value argv[4];
    NAPI_OK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 2) return throw_type(env, fn, "%s", "expects (request, signature, failure, causeId)");
    asb_box *box = box_get(env, argv[0], ASB_KIND_SIGN_REQUEST, fn, "request");
    if (!box) return NULL;
    sign_request *r = box->extra;
    void *sig = NULL;
    size_t sig_len = 0;
    char *failure = NULL;
    double cause_id = 0;
    char why[160];
    if (!is_nullish(env, argv[1])) {
        if (!read_bytes(env, argv[1], &sig, &sig_len)) {
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
    box_release(box);
    napi_value res;
    napi_get_boolean(env, accepted, &res);
    return res;
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
    if (!add_fn(env, exports, "close", js_close, NULL) || !add_fn(env, exports, "retain", js_retain, NULL) ||
        !add_fn(env, exports, "stats", js_stats, NULL) || !add_fn(env, exports, "trace", js_trace, NULL) ||
        !add_fn(env, exports, "configure", js_configure, NULL) ||
        !add_fn(env, exports, "transportNew", js_transport_new, NULL) ||
        !add_fn(env, exports, "transportRespond", js_transport_respond, NULL) ||
        !add_fn(env, exports, "signerKeyNew", js_signer_key_new, NULL) ||
        !add_fn(env, exports, "signerClose", js_signer_close, NULL) ||
        !add_fn(env, exports, "signerRespond", js_signer_respond, NULL))
        return NULL;
    if (!signing_limit) {
        const char *pool = getenv("UV_THREADPOOL_SIZE");
        int n = pool ? atoi(pool) : 0;
        if (n <= 0) n = 4;
        signing_limit = n > 1 ? n - 1 : 1;
    }
    napi_value v;
    NAPI_OK(napi_create_int32(env, NAPI_VERSION, &v));
    NAPI_OK(napi_set_named_property(env, exports, "napiVersion", v));
    return exports;
}
