/* base/log.h — formatting and delivering log messages. Every message is
 * "ITEM: details", the item one of KILN_LOG_ITEMS (kiln/log_items.h), so callers and
 * tests match a stable item. */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

#include <kiln/core.h>
#include <stdarg.h>

#include "common.h"

struct kiln_log_ring;
struct kiln_log_fold;
struct kiln_log_recent;

/* A runtime's log, shared by every copy of its sink. */
typedef struct kiln_log_state {
    _Atomic uint32_t threshold;   /* kiln_log_threshold, never DEFAULT: any thread (relaxed:
                                     a filter, nothing is published through it) */
    int              file_fd;     /* desc.log_file's descriptor, or -1; read-only */
    struct kiln_log_ring *ring;   /* KILN_LOG_ASYNC: the ring messages go through (made
                                     after the sink, before the runtime is published);
                                     NULL: delivered on the logging thread */
    struct kiln_log_fold *fold;   /* repeats folded (base/log_fold.h); NULL: none */
    struct kiln_log_recent *recent;   /* the newest delivered lines, for the crash report
                                     (base/log_recent.h); NULL: none kept */
} kiln_log_state;

/* Where a component's messages go. Written once at creation, then read-only. */
typedef struct kiln_log_sink {
    kiln_log_fn        fn;      /* NULL: the stderr default */
    void              *user;
    _Atomic uint64_t  *misuse;  /* the runtime's api_errors counter; NULL: not counted */
    kiln_error_hook_fn error_hook;  /* called after fn for ERROR messages; NULL: none */
    void              *error_hook_user;
    kiln_log_item_fn   item_fn; /* called after fn with the item's id, with user; NULL: none */
    kiln_log_state    *state;   /* the runtime's threshold and file; NULL (before a runtime
                                   exists): every level, no file */
} kiln_log_sink;

/* Sets up a runtime's log from its desc (every default filled in): the threshold, and
 * desc.log_file opened for appending. false, logged through early (LOG_FILE_FAILED), when
 * the file cannot be opened. kiln_log_state_fini closes it. The creating thread. */
KILN_INTERNAL bool kiln_log_state_init(kiln_log_state *state, const kiln_desc *desc,
                                       const kiln_log_sink *early);
KILN_INTERNAL void kiln_log_state_fini(kiln_log_state *state);

/* KILN_LOG_ASYNC: makes the ring and its writer, which delivers to *sink (whose state is
 * state). false when the heap or the thread refuses (not logged: the caller says why). */
KILN_INTERNAL bool kiln_log_state_start_async(kiln_log_state *state, const kiln_log_sink *sink);

/* Ends async mode: delivers what is queued, stops the log thread, frees the ring; later
 * messages are delivered on the thread that logs. kiln_destroy, once its workers are
 * stopped: from there on no thread but the destroying one logs, and no callback runs
 * on the log thread while the runtime is torn down. Nothing in sync mode. */
KILN_INTERNAL void kiln_log_state_stop_async(kiln_log_state *state);

/* Hands one formatted message to the sink's callbacks and file now, on this thread,
 * whatever the mode (the async writer's delivery); not the error hook. A message from
 * inside a callback goes to stderr only. Concurrency: any thread. */
KILN_INTERNAL void kiln_log_deliver(const kiln_log_sink *sink, kiln_log_item item,
                                    kiln_log_level level, const char *message);

/* A formatted message onto the sink's path past the threshold and the folding: queued
 * (async) or delivered now. false when the async ring had no room: then the message is
 * counted as weight dropped messages (a LOG_REPEATS summary weighs the repeats it
 * tells of). Concurrency: any thread. */
KILN_INTERNAL bool kiln_log_emit(const kiln_log_sink *sink, kiln_log_item item,
                                 kiln_log_level level, const char *message, uint64_t weight);

/* kiln_log_deliver of a message it formats ("ITEM: details", at the item's level). */
KILN_INTERNAL KILN_PRINTF(3, 4)
void kiln_log_deliver_fmt(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* KILN_LOG_ASYNC: delivers every message queued before the call, on this thread; sync:
 * nothing. Messages dropped so far: kiln_log_dropped. Concurrency: any thread but one
 * inside a sink's callback. */
KILN_INTERNAL void kiln_log_flush_state(kiln_log_state *state);
KILN_INTERNAL uint64_t kiln_log_dropped(const kiln_log_state *state);

/* The default sink: "kiln <level>: <message>\n" on stderr, one write per message. */
KILN_INTERNAL void kiln_log_stderr(void *user, kiln_log_level level, const char *message);

/* Formats "ITEM: details" (at most 511 bytes, truncated beyond) at the item's level
 * (KILN_LOG_ITEMS) and hands it to the sink's fn, then its item_fn, then an ERROR to its
 * error hook. Concurrency: any thread; the sink's callbacks are called concurrently. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* kiln_log with the level given instead of the item's (kiln_logf's APP_LOG). */
KILN_INTERNAL KILN_COLD
void kiln_log_at(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                 const char *fmt, va_list args);

/* Whether the calling thread is inside one of a sink's callbacks (fn, item_fn,
 * error_hook), which kiln may call while it holds its registry. This thread's. */
KILN_INTERNAL bool kiln_log_in_callback(void);

/* A refused call (bad argument, misuse): logged as kiln_log does (its items are ERRORs)
 * and counted in *misuse. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log_misuse(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

#endif /* KILN_BASE_LOG_H */
