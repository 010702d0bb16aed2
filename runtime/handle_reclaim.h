/* runtime/handle_reclaim.h — when a freed handle slot may be handed out again: the
 * runtime's two epochs that every handle table reads, the quiescent points of threads
 * outside the frame clock, and the frame end that raises the safe epoch. Never installed.
 *
 * The rule: rt->handle_epoch (the reclaim epoch) is the frame epoch of the job system
 * (jobs/scheduler.h). A free records the epoch it read (seq_cst, after its CAS made the
 * handle stale) with the slot. A frame end closes its epoch first (seq_cst RMW: every
 * free that read the old epoch comes before it), waits until every job of that epoch
 * has finished, and computes safe = the new epoch, lowered to the quiescent epoch of
 * every attached thread outside the frame clock and of every worker in a background
 * job (model step "reclaim", runtime/frame_clock.pml). A slot freed at epoch F is
 * reusable once safe > F: every job that could have got it before the free belongs to
 * an epoch <= F and has returned; a job of a later epoch was submitted after the close
 * and fences before its first get (enter_job_frame), so it finds the handle stale; and
 * each outside thread has passed a quiescent point since. */
#ifndef KILN_RUNTIME_HANDLE_RECLAIM_H
#define KILN_RUNTIME_HANDLE_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/common.h"

/* Frame ends with the reclaim held back by one outside thread before it is logged. */
#define KILN_HANDLES_STALL_WARN_FRAMES 120u

struct kiln_ctx;
struct kiln_runtime;

/* A worker starts or ends a background job: while one runs, its context takes part in
 * the reclaim like an outside thread (its pointers stay valid until the job returns).
 * The worker's thread. */
KILN_INTERNAL void kiln_handles_background(struct kiln_ctx *ctx, bool running);

/* At frame end, on the driver, after every frame job has finished and the reclaim epoch
 * was bumped to epoch: recomputes the safe epoch, promotes in every table what it made
 * reusable, samples the peaks, and logs a reclaim that one thread holds back for long
 * (HANDLES_RECLAIM_STALLED). Takes registry_lock. */
KILN_INTERNAL void kiln_handles_frame_end(struct kiln_runtime *rt, struct kiln_ctx *driver,
                                          uint64_t epoch);

#endif /* KILN_RUNTIME_HANDLE_RECLAIM_H */
