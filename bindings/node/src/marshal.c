/*
 * Generic marshalling: every C function of the ABI description is served from the generated table
 * (../generated/abi.h: parameter kinds, handle kinds, typed trampolines, included here and nowhere else). JS arguments
 * are the C inputs in order, less lengths and counts (taken from the buffers) and outputs; a fallible call returns its
 * single output, an object of its outputs (camelCase names), or undefined, and on failure throws (rejects with) a plain
 * object describing the appstore_error ({status, reason, message, ..., handle}). Wrong argument types throw TypeError
 * (RangeError for numbers out of range); nothing a JS caller passes can crash the process.
 */
#define ASB_ABI_TABLES
#include "addon.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JS values and exceptions ------------------------------------------------------------------------------- */

int asb_pending_exception(napi_env env) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    return pending;
}

napi_value asb_throw_type(napi_env env, const char *fn, const char *fmt, const char *a) {
    char msg[512];
    char detail[400];
    snprintf(detail, sizeof detail, fmt, a);
    snprintf(msg, sizeof msg, "%s: %s", fn, detail);
    if (!asb_pending_exception(env)) napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
}

napi_value asb_throw_range(napi_env env, const char *fn, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", fn, what);
    if (!asb_pending_exception(env)) napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
    return NULL;
}

napi_value asb_undefined(napi_env env) {
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
}

napi_value asb_null(napi_env env) {
    napi_value u;
    napi_get_null(env, &u);
    return u;
}

int asb_set_named(napi_env env, napi_value obj, const char *key, napi_value v) {
    return napi_set_named_property(env, obj, key, v) == napi_ok;
}

napi_value asb_make_string(napi_env env, const char *s) {
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
        if (!(name = asb_make_string(env, appstore_error_header_name(err, i)))) return NULL;
        if (!(value = asb_make_string(env, appstore_error_header_value(err, i)))) return NULL;
        if (napi_set_element(env, pair, 0, name) != napi_ok || napi_set_element(env, pair, 1, value) != napi_ok ||
            napi_set_element(env, list, (uint32_t)i, pair) != napi_ok)
            return NULL;
    }
    return list;
}

napi_value asb_error_object(napi_env env, appstore_status st, appstore_error *err) {
    napi_value o, v;
    if (napi_create_object(env, &o) != napi_ok) {
        appstore_error_free(err);
        return NULL;
    }
    int ok = 1;
    ok &= napi_create_int32(env, st, &v) == napi_ok && asb_set_named(env, o, "status", v);
    ok &= (v = asb_make_string(env, appstore_status_name(st))) && asb_set_named(env, o, "statusName", v);
    appstore_reason reason = appstore_error_reason(err);
    ok &= napi_create_int32(env, reason, &v) == napi_ok && asb_set_named(env, o, "reason", v);
    ok &= (v = asb_make_string(env, appstore_reason_name(reason))) && asb_set_named(env, o, "reasonName", v);
    const char *message = err ? appstore_error_message(err) : "";
    ok &= (v = asb_make_string(env, message && *message ? message : appstore_status_name(st))) && asb_set_named(env, o, "message", v);
    if (err) {
        ok &= napi_create_int32(env, appstore_error_http_status(err), &v) == napi_ok && asb_set_named(env, o, "httpStatus", v);
        ok &= (v = make_int64(env, appstore_error_api_error_code(err))) && asb_set_named(env, o, "apiErrorCode", v);
        ok &= (v = asb_make_string(env, appstore_error_api_error_name(err))) && asb_set_named(env, o, "apiErrorName", v);
        ok &= (v = asb_make_string(env, appstore_error_api_error_message(err))) && asb_set_named(env, o, "apiErrorMessage", v);
        ok &= (v = make_int64(env, appstore_error_retry_after(err))) && asb_set_named(env, o, "retryAfter", v);
        ok &= (v = make_int64(env, appstore_error_retry_at_ms(err))) && asb_set_named(env, o, "retryAtMs", v);
        ok &= (v = error_headers(env, err)) && asb_set_named(env, o, "headers", v);
        napi_value h = asb_box_new(env, ASB_H_ERROR, err, NULL);
        if (!h) {
            appstore_error_free(err);
            return NULL;
        }
        ok &= asb_set_named(env, o, "handle", h);
    }
    ok &= napi_get_boolean(env, true, &v) == napi_ok && asb_set_named(env, o, "appstoreError", v);
    return ok ? o : NULL;
}

const uint8_t asb_empty_bytes[1] = {0};

static void *own(asb_args *a, void *p) {
    if (p) a->owned[a->nowned++] = p;
    return p;
}

void asb_args_free(napi_env env, asb_args *a) {
    for (int i = 0; i < a->nowned; i++) free(a->owned[i]);
    a->nowned = 0;
    for (int i = 0; i < a->nboxes; i++) {
        if (a->async) {
            asb_box *b = a->boxes[i];
            b->inflight--;
            if (b->closed && b->inflight == 0) asb_box_release(b);
            napi_delete_reference(env, a->refs[i]);
        }
    }
    a->nboxes = 0;
}

/* Reads a JS string into a NUL-terminated UTF-8 buffer (the call's scratch space, or a new one owned by a); len_out
 * gets its byte length. One pass: the UTF-16 length (O(1)) bounds the UTF-8 length by 3 bytes per unit. */
char *asb_read_string(napi_env env, napi_value v, asb_args *a, size_t *len_out) {
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
int asb_read_bytes(napi_env env, napi_value v, void **data, size_t *len) {
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
int asb_marshal_buffer(napi_env env, napi_value v, int text, asb_args *a, void **p, size_t *len) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (text && t == napi_string) {
        char *s = asb_read_string(env, v, a, len);
        if (!s) return 0;
        *p = s;
        return 1;
    }
    void *data = NULL;
    size_t n = 0;
    if (!asb_read_bytes(env, v, &data, &n)) return 0;
    if (a->async && n) {
        void *copy = malloc(n);
        if (!copy) return 0;
        memcpy(copy, data, n);
        own(a, copy);
        data = copy;
    }
    *p = n ? data : (void *)asb_empty_bytes;
    *len = n;
    return 1;
}

int asb_is_nullish(napi_env env, napi_value v) {
    napi_valuetype t;
    return napi_typeof(env, v, &t) == napi_ok && (t == napi_undefined || t == napi_null);
}

/* A number argument of value type vt into *slot; 0 with TypeError / RangeError thrown otherwise. */
int asb_marshal_value(napi_env env, napi_value v, int vt, const char *fn, const char *name, asb_slot *slot) {
    napi_valuetype t;
    napi_typeof(env, v, &t);
    char msg[200];
    if (t == napi_bigint && (vt == ASB_VT_I64 || vt == ASB_VT_U64)) {
        bool lossless = false;
        if (vt == ASB_VT_I64) napi_get_value_bigint_int64(env, v, &slot->i, &lossless);
        else napi_get_value_bigint_uint64(env, v, &slot->u, &lossless);
        if (!lossless) {
            snprintf(msg, sizeof msg, "%s is out of range", name);
            asb_throw_range(env, fn, msg);
            return 0;
        }
        return 1;
    }
    if (t != napi_number) {
        asb_throw_type(env, fn, "%s must be a number", name);
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
        asb_throw_range(env, fn, msg);
        return 0;
    }
    if (vt == ASB_VT_U32 || vt == ASB_VT_U64) slot->u = (uint64_t)d;
    else if (vt == ASB_VT_SIZE) slot->z = (size_t)d;
    else slot->i = (int64_t)d;
    return 1;
}

/* Fills the frame from the JS arguments. Returns 0 with an exception pending on bad arguments. */
int asb_marshal_in(napi_env env, const asb_function *fn, size_t argc, napi_value *argv, asb_args *a) {
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
        asb_throw_type(env, fn->js, "%s", msg);
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
            if (!v || asb_is_nullish(env, v)) {
                if (!p->nullable) {
                    asb_throw_type(env, fn->js, "%s is required", p->name);
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
            asb_box *b = asb_box_get(env, v, p->handle, fn->js, p->name);
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
            if (!asb_marshal_buffer(env, v, p->kind == ASB_IN_TEXT, a, &slot->p, &len)) {
                asb_throw_type(env, fn->js,
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
            char *s = t == napi_string ? asb_read_string(env, v, a, &len) : NULL;
            if (!s) {
                asb_throw_type(env, fn->js, "%s must be a string", p->name);
                return 0;
            }
            if (strlen(s) != len) {
                asb_throw_type(env, fn->js, "%s must not contain a NUL character", p->name);
                return 0;
            }
            slot->p = s;
            break;
        }
        case ASB_IN_VALUE:
            if (!asb_marshal_value(env, v, p->vt, fn->js, p->name, slot)) return 0;
            break;
        case ASB_IN_BUFFERS: {
            bool is_array = false;
            uint32_t n = 0;
            if (napi_is_array(env, v, &is_array) != napi_ok || !is_array || napi_get_array_length(env, v, &n) != napi_ok) {
                asb_throw_type(env, fn->js, "%s must be an array of Uint8Array", p->name);
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
                    !asb_marshal_buffer(env, item, 0, a, &data, &lens[e])) {
                    asb_throw_type(env, fn->js, "%s must be an array of Uint8Array", p->name);
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

/* Converts an output slot to JS and takes ownership of what it holds. A handle made from an object that may call an
 * external signer (inherit) may call it too: its box uses the signer's bridge. */
static napi_value out_value(napi_env env, const asb_param *p, asb_slot *slot, struct signer_bridge *inherit) {
    switch (p->kind) {
    case ASB_OUT_STRING: {
        if (!slot->p) return asb_null(env);
        napi_value v;
        napi_status st = napi_create_string_utf8(env, slot->p, NAPI_AUTO_LENGTH, &v);
        appstore_string_free(slot->p);
        slot->p = NULL;
        return st == napi_ok ? v : NULL;
    }
    case ASB_OUT_HANDLE: {
        if (!slot->p) return asb_null(env);
        void *ptr = slot->p;
        slot->p = NULL;
        asb_box *box = NULL;
        napi_value v = asb_box_new(env, p->handle, ptr, &box);
        if (!v) asb_handle_kinds[p->handle].free_fn(ptr);
        else if (inherit) {
            asb_signer_use(inherit);
            box->signer = inherit;
        }
        return v;
    }
    case ASB_OUT_VALUE:
        if (p->vt == ASB_VT_U64 || p->vt == ASB_VT_U32 || p->vt == ASB_VT_SIZE) return make_uint64(env, slot->u);
        return make_int64(env, slot->i);
    default:
        return asb_undefined(env);
    }
}

/* Frees what the outputs of a frame hold without converting them (a conversion failed). */
void asb_out_discard(const asb_function *fn, asb_frame *f) {
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
napi_value asb_marshal_out(napi_env env, const asb_function *fn, asb_frame *f, int *failed,
                              struct signer_bridge *inherit) {
    *failed = 0;
    switch (fn->ret) {
    case ASB_RET_VOID:
        return asb_undefined(env);
    case ASB_RET_VALUE:
        if (fn->rvt == ASB_VT_U64 || fn->rvt == ASB_VT_U32 || fn->rvt == ASB_VT_SIZE) return make_uint64(env, f->r.u);
        if (fn->rvt == ASB_VT_I32) {
            napi_value v;
            return napi_create_int32(env, (int32_t)f->r.i, &v) == napi_ok ? v : NULL;
        }
        return make_int64(env, f->r.i);
    case ASB_RET_BORROWED_STRING:
        return asb_make_string(env, f->r.p);
    case ASB_RET_BORROWED_BYTES: {
        size_t len = 0;
        for (int i = 0; i < fn->nparams; i++)
            if (fn->params[i].kind == ASB_OUT_RESULT_LENGTH) len = f->s[i].z;
        napi_value v;
        void *data = NULL;
        if (napi_create_buffer_copy(env, len, f->r.p ? f->r.p : asb_empty_bytes, &data, &v) != napi_ok) return NULL;
        return v;
    }
    default:
        break;
    }
    if (f->status != APPSTORE_OK) {
        *failed = 1; /* outputs are written only on success: nothing to free */
        appstore_error *err = f->err;
        f->err = NULL;
        return asb_error_object(env, f->status, err);
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
    if (outs == 0) return asb_undefined(env);
    if (outs == 1) {
        napi_value v = out_value(env, &fn->params[last], &f->s[last], inherit);
        if (!v) asb_out_discard(fn, f);
        return v;
    }
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) {
        asb_out_discard(fn, f);
        return NULL;
    }
    for (int i = 0; i < fn->nparams; i++) {
        int k = fn->params[i].kind;
        if (k != ASB_OUT_STRING && k != ASB_OUT_HANDLE && k != ASB_OUT_VALUE) continue;
        char key[64];
        out_name(fn->params[i].name, key, sizeof key);
        napi_value v = out_value(env, &fn->params[i], &f->s[i], inherit);
        if (!v || !asb_set_named(env, o, key, v)) {
            asb_out_discard(fn, f);
            return NULL;
        }
    }
    return o;
}
