/* runtime/malloc.h — the malloc shape's side of threads and runtimes (kiln/heap.h): each
 * thread's current context and its context of the process runtime, and the process
 * runtime itself (runtime/process.c). Never installed. */
#ifndef KILN_RUNTIME_MALLOC_H
#define KILN_RUNTIME_MALLOC_H

#include "types.h"

/* kiln_attach and a worker's start: ctx is the calling thread's now (kiln_ctx_current),
 * and its context of the process runtime when ctx's runtime is the program's process
 * runtime. Concurrency: ctx's own thread. */
KILN_INTERNAL void kiln_thread_ctx_attached(kiln_ctx *ctx);

/* A context released (detach, destroy): the calling thread forgets it, where it is its
 * own. Concurrency: the releasing thread. */
KILN_INTERNAL void kiln_thread_ctx_released(kiln_ctx *ctx);

/* kiln_destroy: every thread's remembered contexts must be checked again before their
 * next use (a relaxed counter they compare). Concurrency: any thread. */
KILN_INTERNAL void kiln_thread_ctx_runtime_gone(void);

/* The process runtime, made on first use; NULL while it is being made (by this thread,
 * or another: the caller then serves from the bootstrap memory) or when none can be.
 * Concurrency: any thread. */
KILN_INTERNAL kiln_runtime *kiln_process_runtime_try(void);

/* The process runtime if there is one now (made by nobody here). Concurrency: any
 * thread. */
KILN_INTERNAL kiln_runtime *kiln_process_runtime_peek(void);

/* Whether rt is the process runtime kiln made itself (its destroy is refused).
 * Concurrency: any thread. */
KILN_INTERNAL bool kiln_process_runtime_is_kilns(const kiln_runtime *rt);

/* kiln_destroy of rt: a program's process runtime stops being it. Concurrency: the
 * destroying thread. */
KILN_INTERNAL void kiln_process_runtime_forget(const kiln_runtime *rt);

/* The thread-exit key whose destructor detaches the malloc shape's contexts (once).
 * Concurrency: any thread. */
KILN_INTERNAL void kiln_thread_exit_key_make(void);

/* rt's registry_lock made (recursive: see runtime/runtime.c); fork's child makes it anew,
 * since a recursive mutex's owner is a thread id, which the child's thread does not have.
 * Concurrency: the runtime's maker, or fork's child. */
KILN_INTERNAL void kiln_runtime_registry_lock_init(kiln_runtime *rt);

/* The lock of the malloc shape's attaches, for fork (taken first, released last).
 * Concurrency: any thread. */
KILN_INTERNAL void kiln_thread_attach_lock(void);
KILN_INTERNAL void kiln_thread_attach_unlock(void);

#endif /* KILN_RUNTIME_MALLOC_H */
