/* runtime/thread_ctx.h — each thread's contexts (kiln_ctx_current, the malloc shape's)
 * and where the process runtime is: state that attach, detach and destroy update and
 * the malloc shape (runtime/malloc.c) reads on its fast path, kept below both so that
 * neither calls the other back. Never installed. */
#ifndef KILN_RUNTIME_THREAD_CTX_H
#define KILN_RUNTIME_THREAD_CTX_H

#include "types.h"

/* A context remembered by a thread, with what tells whether it is still there without
 * reading it: its runtime, live, with the same salt (a runtime made where a destroyed
 * one was has another). */
typedef struct kiln_remembered {
    kiln_ctx     *ctx;
    kiln_runtime *rt;
    uint32_t      salt;
} kiln_remembered;

/* Frees a signal handler made while its thread was inside a malloc-shape call, done as
 * the call returns: the first KILN_DEFERRED_MAX in an array, the rest (a storm of
 * signals during one call, or any while the call takes them) in a list linked through
 * their own first words, which the program gave up. The protocol, handlers nested in
 * handlers included, is runtime/deferred_free.pml's, checked by SPIN. */
#define KILN_DEFERRED_MAX 32
typedef struct kiln_deferred_frees {
    _Atomic uint32_t count;     /* slots taken: a handler takes one by compare-and-swap
                                   (a nested handler may come between its look and its
                                   take), then writes it; relaxed: one thread's */
    bool            draining;   /* the call is taking them: a handler's free goes to the
                                   list, never into the array the drain is taking from */
    void           *ptrs[KILN_DEFERRED_MAX];
    _Atomic(void *) overflow;   /* exchanged whole by the drain: atomic against a handler */
} kiln_deferred_frees;

enum { KILN_THREAD_LIVE, KILN_THREAD_ATTACHING, KILN_THREAD_EXITED };

/* One thread's: written by that thread only (and by its signal handlers, which the
 * malloc shape's depth and signal fences order against it). */
typedef struct kiln_thread_state {
    kiln_remembered current;    /* kiln_ctx_current: the last attached */
    kiln_remembered heap;       /* its context of the process runtime: the shape's */
    kiln_remembered implicit;   /* attached by the shape: detached at thread exit */
    uint64_t        destroys;   /* kiln_runtime_destroys when these were last checked */
    uint32_t        depth;      /* inside a malloc-shape call: a handler's free waits */
    uint8_t         state;      /* KILN_THREAD_*: ATTACHING while the shape attaches (or
                                   makes the process runtime): its own calls take
                                   bootstrap memory */
    kiln_deferred_frees deferred;
} kiln_thread_state;

/* Initial-exec: no allocation, and no lock, on a thread's first access (a preloaded
 * malloc's TLS must not call malloc). */
#if defined(__GNUC__)
#  define KILN_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#  define KILN_TLS_MODEL
#endif
KILN_INTERNAL extern _Thread_local kiln_thread_state kiln_thread KILN_TLS_MODEL;

/* kiln_destroy calls so far. Relaxed: a hint that makes each thread check its
 * remembered contexts before their next use (a destroy while another thread uses the
 * runtime is misuse whatever the order). */
KILN_INTERNAL extern _Atomic uint64_t kiln_runtime_destroys;

KILN_INTERNAL void kiln_remember(kiln_remembered *r, kiln_ctx *ctx);

/* Forgets the calling thread's contexts whose runtime went. Its own thread. */
KILN_INTERNAL KILN_COLD void kiln_thread_recheck(void);

/* kiln_attach and a worker's start: ctx is the calling thread's now (kiln_ctx_current),
 * and its context of the process runtime when ctx's runtime is the process runtime.
 * Concurrency: ctx's own thread. */
KILN_INTERNAL void kiln_thread_ctx_attached(kiln_ctx *ctx);

/* A context released (detach, destroy): the calling thread forgets it, where it is its
 * own. Concurrency: the releasing thread. */
KILN_INTERNAL void kiln_thread_ctx_released(kiln_ctx *ctx);

/* kiln_destroy: every thread checks its remembered contexts before their next use.
 * Concurrency: any thread. */
KILN_INTERNAL void kiln_thread_ctx_runtime_gone(void);

/* ---- where the process runtime is (made and named by runtime/process.c) ---- */

/* The process runtime if there is one now: the program's, else kiln's. Concurrency: any
 * thread. */
KILN_INTERNAL kiln_runtime *kiln_process_runtime_peek(void);

/* Whether rt is the process runtime kiln made itself (its destroy is refused).
 * Concurrency: any thread. */
KILN_INTERNAL bool kiln_process_runtime_is_kilns(const kiln_runtime *rt);

/* kiln's own, once made (release: a thread that finds it sees it whole). Its maker. */
KILN_INTERNAL void kiln_process_runtime_made(kiln_runtime *rt);

/* Names rt the program's process runtime: false when one is named already. Concurrency:
 * any thread. */
KILN_INTERNAL bool kiln_process_runtime_name(kiln_runtime *rt);

/* kiln_destroy of rt: a program's process runtime stops being it. Concurrency: the
 * destroying thread. */
KILN_INTERNAL void kiln_process_runtime_forget(const kiln_runtime *rt);

#endif /* KILN_RUNTIME_THREAD_CTX_H */
