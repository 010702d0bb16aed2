/* runtime/trace.h — the tracer: one ring of events per context, written by that
 * context's thread only, read by kiln_trace_write on any thread. Never installed.
 *
 * A ring never blocks its writer, and a reader never sees half an event: the writer
 * stores `claimed` = n + 1 before it touches the slot of event n (a release fence
 * between), fills the slot's words (relaxed atomics) and then publishes `head` = n + 1
 * with release. A reader loads head with acquire, copies the slots below it, then
 * (after an acquire fence) loads claimed: any slot the writer may have been refilling
 * while it was copied is one of the oldest claimed - KILN_TRACE_RING_EVENTS events,
 * and those are dropped from the copy. (ThreadSanitizer does not model the fences; every
 * word both sides touch is an atomic, so there is no race for it to report.) */
#ifndef KILN_RUNTIME_TRACE_H
#define KILN_RUNTIME_TRACE_H

#include "types.h"

/* What an event is. Jobs and frames are complete spans (begin + duration), recorded at
 * their end, so a ring that drops its oldest events never leaves half a span. */
enum {
    KILN_TRACE_JOB = 1,          /* ts..ts+value; what: the function; flags: KILN_TASK_* */
    KILN_TRACE_FRAME_BEGIN,      /* ts; value: the frame number */
    KILN_TRACE_FRAME,            /* ts..ts+value; what: the frame number */
    KILN_TRACE_COUNTER_FRAME_BYTES,  /* value: bytes; what: the context id */
    KILN_TRACE_COUNTER_POOL_LIVE,    /* value: live objects; what: the kiln_pool */
    KILN_TRACE_COUNTER_JOBS          /* value: jobs run in the frame */
};

/* tag: kind (8 bits) | flags (8 bits) << 8 | KILN_TRACE_WORKER << 16 | context id << 32 */
#define KILN_TRACE_WORKER 1u

KILN_INTERNAL void kiln_trace_init(kiln_trace *trace);
/* kiln_destroy, once no context records any more: frees every ring. */
KILN_INTERNAL void kiln_trace_fini(kiln_trace *trace);

static inline bool kiln_tracing(kiln_trace *trace) { return kiln_load_relaxed(&trace->on); }

/* The driver's frame events, into its own ring; only while kiln_tracing. */
KILN_INTERNAL void kiln_trace_frame_begin(kiln_ctx *driver, uint64_t frame, uint64_t begin_ns);
KILN_INTERNAL void kiln_trace_frame_end(kiln_ctx *driver, const kiln_frame_record *record);

#endif /* KILN_RUNTIME_TRACE_H */
