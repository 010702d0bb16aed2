/* kiln/trace.h — what happened, frame by frame: the per-frame history a debug overlay
 * draws (always on), and a trace of every job and frame for Perfetto or
 * chrome://tracing (off until kiln_trace_enable).
 *
 * History:
 * - kiln_frame_end writes one kiln_frame_record per frame into a ring of the last
 *   KILN_HISTORY_FRAMES frames; kiln_history_read copies the newest ones out.
 *
 *   kiln_frame_record frames[KILN_HISTORY_FRAMES];
 *   size_t n = kiln_history_read(rt, frames, KILN_HISTORY_FRAMES);   // oldest first
 *   for (size_t i = 0; i < n; i++) plot(frames[i].frame, frames[i].duration_ns / 1e6);
 *
 * Tracing:
 * - Each context records into a ring of its own (KILN_TRACE_RING_EVENTS events, the
 *   oldest overwritten and counted as dropped):
 *   - one complete event per job it runs (the job function's address, the context id as
 *     the thread);
 *   - on the driving context, the frame's begin, end and span, and counters at each
 *     frame end (frame-memory bytes per context, live objects per pool, jobs run).
 * - Cost: off, one predictable branch per job and per frame; on, two clock reads and a
 *   few stores per job.
 *
 *   kiln_trace_enable(rt, true);
 *   ... frames ...
 *   kiln_trace_write(rt, "frames.json");   // open in ui.perfetto.dev or chrome://tracing
 *
 * The file is Chrome trace-event JSON, {"traceEvents": [...]}:
 * - "X" events (ts and dur in microseconds) for jobs and frames;
 * - "i" instants for frame begin and end;
 * - "C" counters;
 * - "M" metadata naming each context's thread: "main ctx 1" for the thread driving the
 *   frame clock, "worker 2", "ctx 3" for other attached threads.
 * - A job is named by its function's symbol where the dynamic linker knows it (exported
 *   functions; link with -rdynamic for an executable's own), else "job 0x...".
 *
 * Concurrency: every function here may be called from any thread at any time, also
 * while frames run.
 *
 * What it does NOT do:
 * - make the driver wait for a history reader, or a recording thread for a trace writer;
 * - pause recording while a trace is written (see kiln_trace_write_file). */
#ifndef KILN_TRACE_H
#define KILN_TRACE_H

#include <kiln/core.h>
#include <kiln/stats_fields.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_HISTORY_FRAMES       256     /* frames the history keeps */
#define KILN_HISTORY_MAX_CONTEXTS 16      /* contexts listed per frame record */
#define KILN_HISTORY_TOP_TAGS     4       /* tags listed per frame record (kiln/heap.h) */
#define KILN_TRACE_RING_EVENTS    65536   /* events each context's trace ring keeps
                                             (32 bytes each: 2 MiB per context, allocated
                                             when the context first records) */

/* One frame, as kiln_frame_end saw it. */
typedef struct kiln_frame_record {
    uint64_t frame;            /* the frame number (1, 2, ...) */
    uint64_t begin_ns;         /* CLOCK_MONOTONIC at kiln_frame_begin */
    uint64_t duration_ns;      /* kiln_frame_begin to the end of kiln_frame_end (its wait
                                  for the frame's jobs and the resets included) */
    uint64_t frame_bytes;      /* sum of the frame-arena high-water marks of every context
                                  frame end reset (the workers' and the driver's) */
    uint64_t jobs_run;         /* jobs run by every context since the previous frame's end
                                  (the first frame: since they attached), frame jobs,
                                  parallel_for pieces and background jobs alike, so each
                                  job is in one record (not those of a context that
                                  detached before this frame's end) */
    uint64_t steals;           /* of those, jobs a context took from another's queue */
    uint32_t contexts;         /* entries used below: the driver first, then the workers */
    uint32_t contexts_omitted; /* reset contexts beyond KILN_HISTORY_MAX_CONTEXTS (their
                                  bytes are in frame_bytes, not listed) */
    uint32_t ctx_ids[KILN_HISTORY_MAX_CONTEXTS];          /* context ids (kiln_ctx_stats.id) */
    uint64_t ctx_frame_bytes[KILN_HISTORY_MAX_CONTEXTS];  /* each one's frame-arena high-water
                                                             mark in this frame */
    /* Allocations and what stays live: memory that rises and never falls shows here. */
    uint64_t allocs;           /* frame, pool and handle allocations every attached context
                                  made since the previous frame's end (as jobs_run; the
                                  precision is kiln_desc.frame_alloc_budget's) */
    uint64_t pool_live;        /* objects live in the live pools at this frame end */
    uint64_t handles_live;     /* items live in the live handle tables at this frame end */
    uint64_t reserved_bytes;   /* bytes the block pool holds reserved from the OS
                                  (kiln_block_pool_stats.reserved_bytes) at this frame end */
    uint64_t ctx_allocs[KILN_HISTORY_MAX_CONTEXTS];       /* each listed context's share of
                                                             allocs, in ctx_ids' order */
    /* Memory by tag (kiln/heap.h): the tags with the most live bytes at this frame end. */
    uint32_t tags;             /* entries used below, most live bytes first */
    uint32_t tags_omitted;     /* tags with live bytes beyond KILN_HISTORY_TOP_TAGS */
    uint32_t tag_ids[KILN_HISTORY_TOP_TAGS];             /* kiln_tag.id */
    uint64_t tag_live_bytes[KILN_HISTORY_TOP_TAGS];      /* each one's live bytes, its
                                                            children's included */
} kiln_frame_record;

/* Copies the newest min(cap, recorded) frame records into out, oldest first, and
 * returns how many it copied (at most KILN_HISTORY_FRAMES; 0 before the first frame
 * end).
 * - Consecutive records have consecutive frame numbers (unless a driving context
 *   detached with its frame open: that frame has no record).
 * - out may be NULL when cap is 0.
 * Concurrency: any thread at any time, also while frames run.
 * - Each record is copied whole or not at all (a sequence count per record).
 * - The driver never waits for a reader; a reader retries only if the driver laps it
 *   (256 frames). */
KILN_API size_t kiln_history_read(kiln_runtime *rt, kiln_frame_record *out, size_t cap);

/* Starts (on) or stops (off) recording.
 * - Stopping keeps what was recorded, so it can be written afterwards; starting again
 *   appends.
 * - Jobs already running when it changes are recorded or not as a whole.
 * Concurrency: any thread at any time. */
KILN_API void kiln_trace_enable(kiln_runtime *rt, bool on);

/* The tracer's figures: X(type, name, doc) per field, in struct order
 * (kiln/stats_fields.h). */
#define KILN_TRACE_STATS_FIELDS(X)                                                             \
    X(bool,     enabled,     "recording now (kiln_trace_enable)")                              \
    X(uint32_t, rings,       "contexts that have recorded (each holds one ring)")              \
    X(uint64_t, ring_events, "KILN_TRACE_RING_EVENTS")                                         \
    X(uint64_t, recorded,    "events recorded since kiln_create (lost ones included)")         \
    X(uint64_t, dropped,     "of those, events overwritten by newer ones, plus events lost "   \
                             "because a ring could not be allocated")                          \
    /* end of list */

typedef struct kiln_trace_stats {
    KILN_TRACE_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_trace_stats;

/* The tracer's figures. false (and *out zeroed) for bad input: a NULL runtime
 * (RUNTIME_NULL), a NULL out (STATS_NULL_OUT). Any thread. */
KILN_API bool kiln_trace_stats_get(kiln_runtime *rt, kiln_trace_stats *out);

/* Writes every event the rings hold as one Chrome trace-event JSON object to out (or
 * to a file made at path).
 * - false, logged (TRACE_WRITE_FAILED), when the file cannot be written or memory runs
 *   out.
 * - Recording is not paused: an event written while this runs may or may not appear,
 *   never half.
 * - Call it between frames for a complete picture of the last frames (background jobs
 *   may still be running).
 * Concurrency: any thread at any time; recording threads never wait for it, and two
 * writers at once each write a whole file. */
KILN_API bool kiln_trace_write_file(kiln_runtime *rt, FILE *out);
KILN_API bool kiln_trace_write(kiln_runtime *rt, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TRACE_H */
