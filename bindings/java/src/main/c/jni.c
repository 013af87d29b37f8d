/*
 * appstoreserver JNI glue: the native side of appstoreserver.internal.Abi, over libappstoreserver's C ABI.
 *
 * The wrappers themselves are generated (../../../generated/c/abi_jni.h, by scripts/specgen/java.py from
 * include/appstoreserver.abi.json): one per C function, converting Java arguments with the asj_* helpers below,
 * calling the function, throwing appstoreserver.internal.NativeError on failure and converting the outputs. This file
 * holds only what is the same for every function (argument copies, errors, output conversion), the two callback
 * bridges (a transport and an external signer implemented in Java) and JNI_OnLoad, which registers every wrapper whose
 * C function the loaded library has.
 *
 * Rules: nothing a Java caller passes can crash the process (NULL, wrong lengths, embedded NUL, out-of-range
 * numbers become NullPointerException / IllegalArgumentException); no Java lock is held across a library call (the
 * Java side counts calls per handle without locks); the library calls the bridges on the thread that called it, which
 * is a Java thread.
 */
#include <jni.h>

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appstoreserver.h"

typedef struct {
    const char *name;
    const char *sig;
    void *fn;
    void *target; /* the C function; NULL when the loaded library does not have it (weak reference) */
} asj_native;

static JavaVM *asj_vm;
static jclass cls_native_error, cls_long, cls_object, cls_bytes, cls_npe, cls_iae, cls_oom;
static jmethodID mid_native_error, mid_long_value_of, mid_exchange, mid_sign;
static atomic_long live_contexts;
static const char *missing[512];
static int nmissing;

/* ---- exceptions ---------------------------------------------------------------------------------------------- */

static void asj_throw(JNIEnv *env, jclass cls, const char *fn, const char *what, const char *name) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s: %s %s", fn, name, what);
    if (!(*env)->ExceptionCheck(env)) (*env)->ThrowNew(env, cls, msg);
}

/* ---- inputs ---------------------------------------------------------------------------------------------------- */

#define ASJ_SMALL 8192
typedef struct {
    uint8_t *p;
    size_t n;
    uint8_t *heap;
    uint8_t small[ASJ_SMALL]; /* a JWS of a few KB is copied here, not malloc'ed */
} asj_in;

static void asj_in_init(asj_in *b) {
    b->p = NULL;
    b->n = 0;
    b->heap = NULL;
}

static void asj_in_free(asj_in *b) {
    free(b->heap);
    b->heap = NULL;
}

/* A copy of a byte[] (NUL-terminated when cstring, refusing an embedded NUL); 0 with an exception pending. */
static int asj_bytes(JNIEnv *env, jbyteArray a, asj_in *b, int nullable, int cstring, const char *fn, const char *name) {
    if (!a) {
        if (nullable) return 1;
        asj_throw(env, cls_npe, fn, "must not be null", name);
        return 0;
    }
    jsize n = (*env)->GetArrayLength(env, a);
    size_t need = (size_t)n + (cstring ? 1 : 0);
    uint8_t *dst = b->small;
    if (need > ASJ_SMALL) {
        dst = malloc(need);
        if (!dst) {
            asj_throw(env, cls_oom, fn, "cannot be copied (out of memory)", name);
            return 0;
        }
        b->heap = dst;
    }
    if (n) (*env)->GetByteArrayRegion(env, a, 0, n, (jbyte *)dst);
    if (cstring) {
        if (n && memchr(dst, 0, (size_t)n)) {
            asj_throw(env, cls_iae, fn, "must not contain a NUL character", name);
            return 0;
        }
        dst[n] = 0;
    }
    b->p = dst;
    b->n = (size_t)n;
    return 1;
}

typedef struct {
    const uint8_t **ptrs;
    size_t *lens;
    size_t count;
    uint8_t **copies;
} asj_in_array;

static void asj_in_array_init(asj_in_array *b) {
    memset(b, 0, sizeof *b);
}

static void asj_in_array_free(asj_in_array *b) {
    if (b->copies)
        for (size_t i = 0; i < b->count; i++) free(b->copies[i]);
    free(b->copies);
    free((void *)b->ptrs);
    free(b->lens);
    memset(b, 0, sizeof *b);
}

/* A byte[][] as pointers and lengths (each element copied). */
static int asj_byte_arrays(JNIEnv *env, jobjectArray a, asj_in_array *b, int nullable, const char *fn, const char *name) {
    if (!a) {
        if (nullable) return 1;
        asj_throw(env, cls_npe, fn, "must not be null", name);
        return 0;
    }
    jsize n = (*env)->GetArrayLength(env, a);
    size_t slots = n ? (size_t)n : 1;
    b->ptrs = calloc(slots, sizeof *b->ptrs);
    b->lens = calloc(slots, sizeof *b->lens);
    b->copies = calloc(slots, sizeof *b->copies);
    if (!b->ptrs || !b->lens || !b->copies) {
        asj_throw(env, cls_oom, fn, "cannot be copied (out of memory)", name);
        return 0;
    }
    for (jsize i = 0; i < n; i++) {
        jbyteArray item = (jbyteArray)(*env)->GetObjectArrayElement(env, a, i);
        if ((*env)->ExceptionCheck(env)) return 0;
        if (!item) {
            char what[64];
            snprintf(what, sizeof what, "must not contain null (element %d)", (int)i);
            asj_throw(env, cls_npe, fn, what, name);
            return 0;
        }
        jsize len = (*env)->GetArrayLength(env, item);
        uint8_t *copy = malloc(len ? (size_t)len : 1);
        if (!copy) {
            (*env)->DeleteLocalRef(env, item);
            asj_throw(env, cls_oom, fn, "cannot be copied (out of memory)", name);
            return 0;
        }
        if (len) (*env)->GetByteArrayRegion(env, item, 0, len, (jbyte *)copy);
        (*env)->DeleteLocalRef(env, item);
        b->copies[i] = copy;
        b->ptrs[i] = copy;
        b->lens[i] = (size_t)len;
        b->count = (size_t)i + 1;
    }
    b->count = (size_t)n;
    return 1;
}

static int asj_range(JNIEnv *env, jlong v, long long lo, long long hi, const char *fn, const char *name) {
    if ((long long)v >= lo && (long long)v <= hi) return 1;
    char what[160];
    snprintf(what, sizeof what, "must be from %lld to %lld, got %lld", lo, hi, (long long)v);
    asj_throw(env, cls_iae, fn, what, name);
    return 0;
}

/* ---- outputs --------------------------------------------------------------------------------------------------- */

static jbyteArray asj_copy_out(JNIEnv *env, const void *p, size_t n) {
    if ((*env)->ExceptionCheck(env)) return NULL;
    if (n > (size_t)INT32_MAX) {
        (*env)->ThrowNew(env, cls_oom, "appstoreserver: an output larger than 2 GiB cannot become a byte[]");
        return NULL;
    }
    jbyteArray a = (*env)->NewByteArray(env, (jsize)n);
    if (a && n) (*env)->SetByteArrayRegion(env, a, 0, (jsize)n, (const jbyte *)p);
    return a;
}

/* A string the library allocated, as byte[] (UTF-8); frees it in every case. */
static jbyteArray asj_out_string(JNIEnv *env, char *s) {
    if (!s) return NULL;
    jbyteArray a = asj_copy_out(env, s, strlen(s));
    appstore_string_free(s);
    return a;
}

static jbyteArray asj_borrowed_string(JNIEnv *env, const char *s) {
    return s ? asj_copy_out(env, s, strlen(s)) : NULL;
}

static jbyteArray asj_borrowed_bytes(JNIEnv *env, const uint8_t *p, size_t n) {
    return p ? asj_copy_out(env, p, n) : NULL;
}

static jobjectArray asj_objects(JNIEnv *env, int n) {
    if ((*env)->ExceptionCheck(env)) return NULL;
    return (*env)->NewObjectArray(env, n, cls_object, NULL);
}

static jobject asj_box_long(JNIEnv *env, jlong v) {
    if ((*env)->ExceptionCheck(env)) return NULL;
    return (*env)->CallStaticObjectMethod(env, cls_long, mid_long_value_of, v);
}

static void asj_set(JNIEnv *env, jobjectArray a, int i, jobject v) {
    if (a && !(*env)->ExceptionCheck(env)) (*env)->SetObjectArrayElement(env, a, i, v);
    if (v) (*env)->DeleteLocalRef(env, v);
}

/* Throws NativeError describing err (status, reason, message, the API details and the answer's headers) and frees
 * err. */
static void asj_fail(JNIEnv *env, appstore_status st, appstore_error *err) {
    if ((*env)->ExceptionCheck(env)) {
        appstore_error_free(err);
        return;
    }
    const char *message = err ? appstore_error_message(err) : NULL;
    if (!message || !*message) message = appstore_status_name(st);
    size_t nh = appstore_error_header_count(err);
    jbyteArray msg = asj_borrowed_string(env, message);
    jbyteArray api_name = asj_borrowed_string(env, appstore_error_api_error_name(err));
    jbyteArray api_msg = asj_borrowed_string(env, appstore_error_api_error_message(err));
    jobjectArray headers = (*env)->ExceptionCheck(env) ? NULL : (*env)->NewObjectArray(env, (jsize)(2 * nh), cls_bytes, NULL);
    for (size_t i = 0; headers && i < nh; i++) {
        asj_set(env, headers, (int)(2 * i), asj_borrowed_string(env, appstore_error_header_name(err, i)));
        asj_set(env, headers, (int)(2 * i + 1), asj_borrowed_string(env, appstore_error_header_value(err, i)));
    }
    jint reason = appstore_error_reason(err);
    jint http = appstore_error_http_status(err);
    jlong code = appstore_error_api_error_code(err);
    jlong retry_after = appstore_error_retry_after(err);
    jlong retry_at = appstore_error_retry_at_ms(err);
    appstore_error_free(err);
    if ((*env)->ExceptionCheck(env)) return;
    jobject e = (*env)->NewObject(env, cls_native_error, mid_native_error, (jint)st, reason, msg, http, code, api_name,
                                  api_msg, retry_after, retry_at, headers);
    if (e) (*env)->Throw(env, (jthrowable)e);
}

#include "abi_jni.h"

/* ---- callback bridges -------------------------------------------------------------------------------------------
 *
 * A bridge context holds a global reference to the Java object the library's callback calls (a TransportBridge or a
 * SignerBridge). The library keeps the context pointer as user_data; the Java side frees the context only after every
 * library object that may call it is freed (its handle dependencies). */

typedef struct {
    jobject target;
} asj_context;

static asj_context *context_new(JNIEnv *env, jobject target) {
    asj_context *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->target = (*env)->NewGlobalRef(env, target);
    if (!c->target) {
        free(c);
        return NULL;
    }
    atomic_fetch_add(&live_contexts, 1);
    return c;
}

static void context_free(JNIEnv *env, asj_context *c) {
    if (!c) return;
    (*env)->DeleteGlobalRef(env, c->target);
    free(c);
    atomic_fetch_sub(&live_contexts, 1);
}

/* The JNIEnv of the calling thread, attaching it (as a daemon) if the library ever calls from a thread the JVM does
 * not know; *attached says whether to detach afterwards. */
static JNIEnv *callback_env(int *attached) {
    JNIEnv *env = NULL;
    *attached = 0;
    jint r = (*asj_vm)->GetEnv(asj_vm, (void **)&env, JNI_VERSION_1_8);
    if (r == JNI_OK) return env;
    if (r == JNI_EDETACHED && (*asj_vm)->AttachCurrentThreadAsDaemon(asj_vm, (void **)&env, NULL) == JNI_OK) {
        *attached = 1;
        return env;
    }
    return NULL;
}

/* appstore_transport_fn: TransportBridge.exchange(method, url, headers, body, timeoutMs, response) performs the
 * exchange and fills the response through Abi.http_response_* (allowed inside the callback); it returns an
 * APPSTORE_TRANSPORT_RESULT_*. A Java exception is FAILED. */
static int32_t transport_callback(void *user_data, const char *method, const char *url, const char *headers,
                                  size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                                  appstore_http_response *response) {
    asj_context *c = user_data;
    int attached = 0;
    JNIEnv *env = callback_env(&attached);
    int32_t result = APPSTORE_TRANSPORT_RESULT_FAILED;
    if (!env || !c) return result;
    int pending = (*env)->ExceptionCheck(env);
    jthrowable saved = pending ? (*env)->ExceptionOccurred(env) : NULL;
    if (pending) (*env)->ExceptionClear(env);
    if ((*env)->PushLocalFrame(env, 8) == 0) {
        jbyteArray jm = asj_borrowed_string(env, method);
        jbyteArray ju = asj_borrowed_string(env, url);
        jbyteArray jh = asj_copy_out(env, headers ? headers : "", headers ? headers_len : 0);
        jbyteArray jb = asj_copy_out(env, body, body ? body_len : 0);
        if (!(*env)->ExceptionCheck(env)) {
            jint t = timeout_ms > (uint32_t)INT32_MAX ? INT32_MAX : (jint)timeout_ms;
            jint r = (*env)->CallIntMethod(env, c->target, mid_exchange, jm, ju, jh, jb, t, (jlong)(intptr_t)response);
            if (!(*env)->ExceptionCheck(env) && r >= APPSTORE_TRANSPORT_RESULT_OK && r <= APPSTORE_TRANSPORT_RESULT_FAILED)
                result = r;
        }
        (*env)->ExceptionClear(env);
        (*env)->PopLocalFrame(env, NULL);
    } else {
        (*env)->ExceptionClear(env);
    }
    if (saved) {
        (*env)->Throw(env, saved);
        (*env)->DeleteLocalRef(env, saved);
    }
    if (attached) (*asj_vm)->DetachCurrentThread(asj_vm);
    return result;
}

/* appstore_signer_fn: SignerBridge.sign(message, digest, timeout_ms) returns the signature (DER or r||s), or null when the
 * signer failed (the Java side keeps why, for the exception of the call that asked). */
static int32_t signer_callback(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                               uint8_t *signature, size_t signature_cap, size_t *signature_len, uint32_t timeout_ms) {
    asj_context *c = user_data;
    int attached = 0;
    JNIEnv *env = callback_env(&attached);
    int32_t result = 1;
    if (!env || !c) return result;
    if ((*env)->ExceptionCheck(env)) return result;
    if ((*env)->PushLocalFrame(env, 8) == 0) {
        jbyteArray jm = asj_copy_out(env, message, message_len);
        jbyteArray jd = asj_copy_out(env, digest, 32);
        if (!(*env)->ExceptionCheck(env)) {
            jbyteArray sig = (jbyteArray)(*env)->CallObjectMethod(env, c->target, mid_sign, jm, jd, (jlong)timeout_ms);
            if (!(*env)->ExceptionCheck(env) && sig) {
                jsize n = (*env)->GetArrayLength(env, sig);
                if (n > 0 && (size_t)n <= signature_cap) {
                    (*env)->GetByteArrayRegion(env, sig, 0, n, (jbyte *)signature);
                    *signature_len = (size_t)n;
                    result = 0;
                }
            }
        }
        (*env)->ExceptionClear(env);
        (*env)->PopLocalFrame(env, NULL);
    } else {
        (*env)->ExceptionClear(env);
    }
    if (attached) (*asj_vm)->DetachCurrentThread(asj_vm);
    return result;
}

static jlongArray pair(JNIEnv *env, jlong a, jlong b) {
    jlongArray r = (*env)->NewLongArray(env, 2);
    if (r) {
        jlong v[2] = {a, b};
        (*env)->SetLongArrayRegion(env, r, 0, 2, v);
    }
    return r;
}

static jlongArray JNICALL asj_transport_new_bridge(JNIEnv *env, jclass cls, jobject bridge) {
    (void)cls;
    if (!bridge) {
        asj_throw(env, cls_npe, "transport_new_bridge", "must not be null", "bridge");
        return NULL;
    }
    asj_context *c = context_new(env, bridge);
    if (!c) {
        asj_throw(env, cls_oom, "transport_new_bridge", "cannot be kept (out of memory)", "bridge");
        return NULL;
    }
    appstore_transport *t = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_transport_new(transport_callback, c, &t, &err);
    if (st != APPSTORE_OK) {
        context_free(env, c);
        asj_fail(env, st, err);
        return NULL;
    }
    jlongArray r = pair(env, (jlong)(intptr_t)t, (jlong)(intptr_t)c);
    if (!r) {
        appstore_transport_free(t);
        context_free(env, c);
    }
    return r;
}

static jlongArray JNICALL asj_signing_key_new_with_signer_bridge(JNIEnv *env, jclass cls, jobject signer,
                                                                jbyteArray public_key, jlong timeout_ms,
                                                                jbyteArray key_id, jbyteArray issuer_id,
                                                                jbyteArray bundle_id) {
    (void)cls;
    static const char *fn = "signing_key_new_with_signer_bridge";
    jlongArray r = NULL;
    asj_context *c = NULL;
    asj_in pk, kid, iss, bid;
    asj_in_init(&pk);
    asj_in_init(&kid);
    asj_in_init(&iss);
    asj_in_init(&bid);
    if (!signer) {
        asj_throw(env, cls_npe, fn, "must not be null", "signer");
        goto done;
    }
    if (!asj_bytes(env, public_key, &pk, 0, 0, fn, "public_key") || !asj_bytes(env, key_id, &kid, 0, 1, fn, "key_id") ||
        !asj_bytes(env, issuer_id, &iss, 1, 1, fn, "issuer_id") || !asj_bytes(env, bundle_id, &bid, 0, 1, fn, "bundle_id") ||
        !asj_range(env, timeout_ms, 0, 4294967295LL, fn, "timeout_ms"))
        goto done;
    c = context_new(env, signer);
    if (!c) {
        asj_throw(env, cls_oom, fn, "cannot be kept (out of memory)", "signer");
        goto done;
    }
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new_with_signer(signer_callback, c, pk.p, pk.n, (uint32_t)timeout_ms,
                                                              (const char *)kid.p, (const char *)iss.p,
                                                              (const char *)bid.p, &key, &err);
    if (st != APPSTORE_OK) {
        context_free(env, c);
        asj_fail(env, st, err);
        goto done;
    }
    r = pair(env, (jlong)(intptr_t)key, (jlong)(intptr_t)c);
    if (!r) {
        appstore_signing_key_free(key);
        context_free(env, c);
    }
done:
    asj_in_free(&pk);
    asj_in_free(&kid);
    asj_in_free(&iss);
    asj_in_free(&bid);
    return r;
}

static void JNICALL asj_bridge_context_free(JNIEnv *env, jclass cls, jlong context) {
    (void)cls;
    context_free(env, (asj_context *)(intptr_t)context);
}

static jlong JNICALL asj_live_bridges(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
    return (jlong)atomic_load(&live_contexts);
}

/* The C functions the loaded library lacks (their Abi methods are not registered). */
static jobjectArray JNICALL asj_missing_functions(JNIEnv *env, jclass cls) {
    (void)cls;
    jobjectArray a = (*env)->NewObjectArray(env, nmissing, cls_bytes, NULL);
    for (int i = 0; a && i < nmissing; i++) asj_set(env, a, i, asj_borrowed_string(env, missing[i]));
    return a;
}

static const JNINativeMethod manual[] = {
    {"transport_new_bridge", "(Ljava/lang/Object;)[J", (void *)asj_transport_new_bridge},
    {"signing_key_new_with_signer_bridge", "(Ljava/lang/Object;[BJ[B[B[B)[J", (void *)asj_signing_key_new_with_signer_bridge},
    {"bridge_context_free", "(J)V", (void *)asj_bridge_context_free},
    {"live_bridges", "()J", (void *)asj_live_bridges},
    {"missing_functions", "()[[B", (void *)asj_missing_functions},
};

/* ---- loading ------------------------------------------------------------------------------------------------------- */

static jclass global_class(JNIEnv *env, const char *name) {
    jclass local = (*env)->FindClass(env, name);
    if (!local) return NULL;
    jclass g = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return g;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    asj_vm = vm;
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    if (!(cls_native_error = global_class(env, "appstoreserver/internal/NativeError")) ||
        !(cls_long = global_class(env, "java/lang/Long")) || !(cls_object = global_class(env, "java/lang/Object")) ||
        !(cls_bytes = global_class(env, "[B")) || !(cls_npe = global_class(env, "java/lang/NullPointerException")) ||
        !(cls_iae = global_class(env, "java/lang/IllegalArgumentException")) ||
        !(cls_oom = global_class(env, "java/lang/OutOfMemoryError")))
        return JNI_ERR;
    mid_native_error = (*env)->GetMethodID(env, cls_native_error, "<init>", "(II[BIJ[B[BJJ[[B)V");
    mid_long_value_of = (*env)->GetStaticMethodID(env, cls_long, "valueOf", "(J)Ljava/lang/Long;");
    jclass transport = (*env)->FindClass(env, "appstoreserver/internal/TransportBridge");
    jclass signer = (*env)->FindClass(env, "appstoreserver/internal/SignerBridge");
    if (!mid_native_error || !mid_long_value_of || !transport || !signer) return JNI_ERR;
    mid_exchange = (*env)->GetMethodID(env, transport, "exchange", "([B[B[B[BIJ)I");
    mid_sign = (*env)->GetMethodID(env, signer, "sign", "([B[BJ)[B");
    if (!mid_exchange || !mid_sign) return JNI_ERR;
    jclass abi = (*env)->FindClass(env, "appstoreserver/internal/Abi");
    if (!abi) return JNI_ERR;
    nmissing = 0;
    for (int i = 0; i < ASJ_GENERATED_NATIVES; i++) {
        const asj_native *n = &asj_generated[i];
        if (!n->target) {
            if (nmissing < (int)(sizeof missing / sizeof missing[0])) missing[nmissing++] = n->name;
            continue;
        }
        JNINativeMethod m = {(char *)n->name, (char *)n->sig, n->fn};
        if ((*env)->RegisterNatives(env, abi, &m, 1) != 0) return JNI_ERR;
    }
    if ((*env)->RegisterNatives(env, abi, manual, (jint)(sizeof manual / sizeof manual[0])) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}
