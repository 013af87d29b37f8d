/*
 * appstoreserver Node addon: what its files share. Plain C on Node-API (NAPI_VERSION 8) over libappstoreserver's
 * C ABI (docs/node.md, "Layers"):
 *
 *   addon.c          the module: native.<name>() on the JS thread and native.async.<name>() on the libuv pool for
 *                    every function of the generated table, the pool limit of calls that may sign, configure()
 *   marshal.c        generic marshalling: JS arguments into a frame of slots by parameter kind, outputs and errors
 *                    back to JS (the one file that includes the generated tables, ../generated/abi.h)
 *   handles.c        handle boxes (tagged externals around library objects), close(), retain(), stats()
 *   fetch_bridge.c   the library's synchronous transport callback over JS fetch (online checks)
 *   signer_bridge.c  external signers: the library's synchronous signer callback over a JS function, and the
 *                    notes that say why one failed
 *   trace.c          the tests' trace of pool calls: compiled only into the test build (-DAPPSTORE_ADDON_TRACE,
 *                    build/Release/appstoreserver-test.node), never into the shipped addon
 *
 * Names shared between the files start with asb_; everything else is static to its file. Every one of them runs on
 * the JS thread unless its comment says otherwise.
 */
#ifndef APPSTORESERVER_ADDON_H
#define APPSTORESERVER_ADDON_H

#define NAPI_VERSION 8
#define _GNU_SOURCE
#include <node_api.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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

/* The tables (marshal.c). */
extern const asb_handle_kind asb_handle_kinds[ASB_HANDLE_KINDS];
extern const asb_function asb_functions[ASB_FUNCTIONS];

/* Kinds beyond the ABI's handles. */
#define ASB_KIND_EXCHANGE (ASB_HANDLE_KINDS + 1)
#define ASB_KIND_SIGN_REQUEST (ASB_HANDLE_KINDS + 2)

#define NAPI_OK(call)                                                                                                   \
    do {                                                                                                            \
        if ((call) != napi_ok) return NULL;                                                                         \
    } while (0)

/* ---- JS values and exceptions (marshal.c) ------------------------------------------------------------------------ */

int asb_pending_exception(napi_env env);
/* Throw unless an exception is pending; return NULL. */
napi_value asb_throw_type(napi_env env, const char *fn, const char *fmt, const char *a);
napi_value asb_throw_range(napi_env env, const char *fn, const char *what);
napi_value asb_undefined(napi_env env);
napi_value asb_null(napi_env env);
int asb_set_named(napi_env env, napi_value obj, const char *key, napi_value v);
napi_value asb_make_string(napi_env env, const char *s);
extern const uint8_t asb_empty_bytes[1];

/* A plain object describing err (status, reason, message, API details) that owns err through `handle`. */
napi_value asb_error_object(napi_env env, appstore_status st, appstore_error *err);

/* ---- handle boxes (handles.c) ------------------------------------------------------------------------------------- */

#define ASB_MAX_DEPS 4
struct signer_bridge;
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

napi_value asb_box_new(napi_env env, int kind, void *ptr, asb_box **out);
/* The box of a JS value, or NULL (TypeError thrown) when it is not one of ours of that kind or is closed. */
asb_box *asb_box_get(napi_env env, napi_value v, int kind, const char *fn, const char *param);
/* The box of a handle of ours, closed or not (NULL with a TypeError otherwise). */
asb_box *asb_any_box(napi_env env, napi_value v, const char *fn, const char *what);
/* Frees the library object (once), the extra and the dependencies. */
void asb_box_release(asb_box *b);
napi_value asb_js_close(napi_env env, napi_callback_info info);
napi_value asb_js_retain(napi_env env, napi_callback_info info);
napi_value asb_js_stats(napi_env env, napi_callback_info info);

/* ---- marshalling (marshal.c) ------------------------------------------------------------------------------------- */

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

void asb_args_free(napi_env env, asb_args *a);
char *asb_read_string(napi_env env, napi_value v, asb_args *a, size_t *len_out);
int asb_read_bytes(napi_env env, napi_value v, void **data, size_t *len);
int asb_marshal_buffer(napi_env env, napi_value v, int text, asb_args *a, void **p, size_t *len);
int asb_is_nullish(napi_env env, napi_value v);
int asb_marshal_value(napi_env env, napi_value v, int vt, const char *fn, const char *name, asb_slot *slot);
/* Fills the frame from the JS arguments. Returns 0 with an exception pending on bad arguments. */
int asb_marshal_in(napi_env env, const asb_function *fn, size_t argc, napi_value *argv, asb_args *a);
/* The JS result of a call; *failed = 1 when the result is an error object (to throw or reject with). Handles it
 * makes use the external signer `inherit` (or none). */
napi_value asb_marshal_out(napi_env env, const asb_function *fn, asb_frame *f, int *failed, struct signer_bridge *inherit);
/* Frees what the outputs of a frame hold without converting them (a conversion failed). */
void asb_out_discard(const asb_function *fn, asb_frame *f);

/* ---- external signers (signer_bridge.c) --------------------------------------------------------------------------- */

/* Why a JS signer failed, for the error of the call that asked: left by the signer callback in its thread's note. */
typedef struct {
    char *text;      /* what failed, e.g. "it threw Error: KMS unavailable" (malloc) */
    double cause_id; /* lib/errors.js's id of what the JS signer threw or rejected with; 0 = none */
    int timed_out;
} asb_signer_note;

/* Any thread: clears / takes this thread's note. */
void asb_note_clear(void);
asb_signer_note asb_note_take(void);
/* Puts a failed call's note on its error object (a plain object from asb_error_object); frees the note's text. */
void asb_note_attach(napi_env env, napi_value err, asb_signer_note *n);
/* One more / one less box whose library object may call the signer. */
void asb_signer_use(struct signer_bridge *s);
void asb_signer_unuse(struct signer_bridge *s);
napi_value asb_js_signer_key_new(napi_env env, napi_callback_info info);
napi_value asb_js_signer_close(napi_env env, napi_callback_info info);
napi_value asb_js_signer_respond(napi_env env, napi_callback_info info);
extern atomic_long asb_live_sign_requests;

/* ---- online checks over fetch (fetch_bridge.c) ------------------------------------------------------------------ */

napi_value asb_js_transport_new(napi_env env, napi_callback_info info);
napi_value asb_js_transport_respond(napi_env env, napi_callback_info info);
extern atomic_long asb_live_exchanges;

/* ---- the tests' trace of pool calls (trace.c; the test build only) ---------------------------------------------- */

#ifdef APPSTORE_ADDON_TRACE
int asb_tracing(void);
double asb_now_ms(void);
double asb_thread_cpu_ms(void);
/* Any thread. */
void asb_trace_add(const char *fn, double tq, double t0, double t1, double cpu, long tid);
napi_value asb_js_trace(napi_env env, napi_callback_info info);
#endif

#endif
