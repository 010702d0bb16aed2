/* runtime/malloc.h — the malloc shape's side of threads and runtimes (kiln/heap.h): each
 * thread's current context and its context of the process runtime, and the process
 * runtime itself (runtime/process.c). Never installed. */
#ifndef KILN_RUNTIME_MALLOC_H
#define KILN_RUNTIME_MALLOC_H

#include "types.h"

/* The process runtime, made on first use; NULL while it is being made (by this thread,
 * or another: the caller then serves from the bootstrap memory) or when none can be.
 * Concurrency: any thread. */
KILN_INTERNAL kiln_runtime *kiln_process_runtime_try(void);

/* kiln_process_runtime_try, and while another thread makes it, wait for it (a bounded
 * wait; NULL only when none can be made). Concurrency: any thread. */
KILN_INTERNAL kiln_runtime *kiln_process_runtime_wait(void);

/* Around fork: takes the locks a malloc in the child may need (of making the process
 * runtime, and the process runtime's own), and releases them after, in the parent and
 * in the child (in_child: the registry's recursive lock is made anew, its owner being a
 * thread id the child's thread does not have). Concurrency: the forking thread. */
KILN_INTERNAL void kiln_process_fork_prepare(void);
KILN_INTERNAL void kiln_process_fork_release(bool in_child);

/* rt's registry_lock made (recursive: see runtime/runtime.c); fork's child makes it anew,
 * since a recursive mutex's owner is a thread id, which the child's thread does not have.
 * Concurrency: the runtime's maker, or fork's child. */
KILN_INTERNAL void kiln_runtime_registry_lock_init(kiln_runtime *rt);


#endif /* KILN_RUNTIME_MALLOC_H */
