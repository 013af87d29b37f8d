/*
 * The tests' trace of pool calls (do they overlap? on which threads? how much CPU?): wall-clock queue/start/end times,
 * the pool thread's CPU time and id, in a ring read by native.trace(on). Compiled only into the test build
 * (-DAPPSTORE_ADDON_TRACE: build/Release/appstoreserver-test.node, which run-tests builds); the shipped addon has no
 * trace, and test/threads.test.js checks that it has none.
 */
#ifndef APPSTORE_ADDON_TRACE
#error "trace.c belongs to the test build only (-DAPPSTORE_ADDON_TRACE)"
#endif
#include "addon.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double asb_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}


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

int asb_tracing(void) { return atomic_load(&trace_on); }

double asb_thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void asb_trace_add(const char *fn, double tq, double t0, double t1, double cpu, long tid) {
    pthread_mutex_lock(&trace_mu);
    if (trace_count < TRACE_SIZE) trace_ring[trace_count++] = (trace_entry){fn, tq, t0, t1, cpu, tid};
    pthread_mutex_unlock(&trace_mu);
}

napi_value asb_js_trace(napi_env env, napi_callback_info info) {
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
        asb_set_named(env, o, "fn", asb_make_string(env, copy[i].fn));
        napi_create_double(env, copy[i].tq, &v), asb_set_named(env, o, "queued", v);
        napi_create_double(env, copy[i].t0, &v), asb_set_named(env, o, "start", v);
        napi_create_double(env, copy[i].t1, &v), asb_set_named(env, o, "end", v);
        napi_create_double(env, copy[i].cpu, &v), asb_set_named(env, o, "cpu", v);
        napi_create_int64(env, copy[i].tid, &v), asb_set_named(env, o, "thread", v);
        napi_set_element(env, arr, (uint32_t)i, o);
    }
    free(copy);
    return arr;
}
