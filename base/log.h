/* base/log.h — logging a message: formatted as "ITEM: details", the item one of
 * KILN_LOG_ITEMS (kiln/log_items.h), so callers and tests match a stable item; filtered
 * by the runtime's threshold; folded when it repeats (base/log_fold.h); queued in the
 * async ring (base/log_ring.h) or delivered (base/log_sink.h); and a runtime's log state
 * made and ended. Never installed. */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

#include "log_sink.h"


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

/* A formatted message onto the sink's path past the threshold and the folding: queued
 * (async) or delivered now. false when the async ring had no room: then the message is
 * counted as weight dropped messages (a LOG_REPEATS summary weighs the repeats it
 * tells of). Concurrency: any thread. */
KILN_INTERNAL bool kiln_log_emit(const kiln_log_sink *sink, kiln_log_item item,
                                 kiln_log_level level, const char *message, uint64_t weight);

/* Tells what the sink's folding holds (base/log_fold.h): the repeats of every ended window,
 * or (all) every repeat. The driver at frame end, kiln_destroy. Any thread. */
KILN_INTERNAL void kiln_log_fold_tell(const kiln_log_sink *sink, bool all);

/* KILN_LOG_ASYNC: delivers every message queued before the call, on this thread; sync:
 * nothing. Messages dropped so far: kiln_log_dropped. Concurrency: any thread but one
 * inside a sink's callback. */
KILN_INTERNAL void kiln_log_flush_state(kiln_log_state *state);

/* In a fork's child, a log of its own: its copy of the async ring has no writer thread
 * (and may have a drain lock the writer held), so it logs in sync from now on (what the
 * ring held is the parent's to deliver; the ring's memory stays, unused); its copy of the
 * folding forgets the parent's messages, so that its own first ones are told.
 * Concurrency: the child's only thread, in its atfork handler. */
KILN_INTERNAL void kiln_log_state_after_fork_child(kiln_log_state *state);
KILN_INTERNAL uint64_t kiln_log_dropped(const kiln_log_state *state);

/* Formats "ITEM: details" (at most 511 bytes, truncated beyond) at the item's level
 * (KILN_LOG_ITEMS) and hands it to the sink's fn, then its item_fn, then an ERROR to its
 * error hook. Concurrency: any thread; the sink's callbacks are called concurrently. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* kiln_log with the level given instead of the item's (kiln_logf's APP_LOG). */
KILN_INTERNAL KILN_COLD
void kiln_log_at(const kiln_log_sink *sink, kiln_log_item item, kiln_log_level level,
                 const char *fmt, va_list args);

/* A refused call (bad argument, misuse): logged as kiln_log does (its items are ERRORs)
 * and counted in *misuse. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log_misuse(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* errno's text for a log message, in English: never the C library's translated
 * strerror, which takes the locale's lock (a malloc inside setlocale makes the process
 * runtime, and may log, with that lock held). Concurrency: any thread (static text). */
KILN_INTERNAL const char *kiln_errno_text(int error);

#endif /* KILN_BASE_LOG_H */
