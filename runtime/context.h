/* runtime/context.h — making and retiring thread contexts, the workers' included.
 * Never installed. */
#ifndef KILN_RUNTIME_CONTEXT_H
#define KILN_RUNTIME_CONTEXT_H

#include "types.h"

/* A new context (a worker's when is_worker). NULL on failure, logged. Any thread
 * (takes registry_lock). */
KILN_INTERNAL kiln_ctx *kiln_context_new(kiln_runtime *rt, bool is_worker);

/* kiln_create: starts desc.worker_count workers; false (logged) when a thread cannot
 * start. */
KILN_INTERNAL bool kiln_workers_start(kiln_runtime *rt);

/* kiln_destroy: stops and joins the workers and detaches their contexts. */
KILN_INTERNAL void kiln_workers_stop(kiln_runtime *rt);

/* Frame end of epoch (the driver, model step "reset"), once every job of it has
 * finished: the job arenas of its parity of every context are reset, and a detached
 * context's go back to the pool whole (its next attach makes new ones). No thread uses
 * a job arena of that parity now: every job of the epoch has finished (the drain
 * acquired their completed counts), and the next epoch of that parity begins only
 * after this frame end. Takes registry_lock. */
KILN_INTERNAL void kiln_contexts_frame_end(kiln_runtime *rt, uint64_t epoch);

/* kiln_destroy, last: frees the memory of every detached context. */
KILN_INTERNAL void kiln_contexts_free(kiln_runtime *rt);

#endif /* KILN_RUNTIME_CONTEXT_H */
