/* base/log_sink.h — where a message goes: a runtime's sink (its callbacks, its file) and
 * its log state, the stderr default, and the delivery of one formatted message on this
 * thread. The bottom of the log: base/log.h (the threshold, the folding, the async ring)
 * builds on it. Never installed. */
#ifndef KILN_BASE_LOG_SINK_H
#define KILN_BASE_LOG_SINK_H

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

/* Hands one formatted message to the sink's callbacks and file now, on this thread,
 * whatever the mode (the async writer's delivery); not the error hook. A message from
 * inside a callback goes to stderr only. Concurrency: any thread. */
KILN_INTERNAL void kiln_log_deliver(const kiln_log_sink *sink, kiln_log_item item,
                                    kiln_log_level level, const char *message);

/* kiln_log_deliver of a message it formats ("ITEM: details", at the item's level). */
KILN_INTERNAL KILN_PRINTF(3, 4)
void kiln_log_deliver_fmt(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* Formats "ITEM: details" into message (size bytes, cut beyond); false when even the
 * item's name does not fit. */
KILN_INTERNAL bool kiln_log_format(char *message, size_t size, kiln_log_item item,
                                   const char *fmt, va_list args);

/* Calls the sink's error hook with message, as a callback (kiln_log_in_callback is true
 * inside it). Nothing inside another callback. */
KILN_INTERNAL void kiln_log_call_hook(const kiln_log_sink *sink, const char *message);

/* A level's name as lines spell it ("warn"); "log" for a value that is no level. */
KILN_INTERNAL const char *kiln_log_level_text(kiln_log_level level);

/* The default sink: "kiln <level>: <message>\n" on stderr, one write per message. */
KILN_INTERNAL void kiln_log_stderr(void *user, kiln_log_level level, const char *message);

/* Whether the calling thread is inside one of a sink's callbacks (fn, item_fn,
 * error_hook), which kiln may call while it holds its registry. This thread's. */
KILN_INTERNAL bool kiln_log_in_callback(void);

#endif /* KILN_BASE_LOG_SINK_H */
