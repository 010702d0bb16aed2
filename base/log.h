/* base/log.h — formatting and delivering log messages. Every message is
 * "ITEM: details", the item one of KILN_LOG_ITEMS (kiln/log_items.h), so callers and
 * tests match a stable item. */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

#include <kiln/core.h>

#include "common.h"

/* Where a component's messages go. Written once at creation, then read-only. */
typedef struct kiln_log_sink {
    kiln_log_fn        fn;      /* NULL: the stderr default */
    void              *user;
    _Atomic uint64_t  *misuse;  /* the runtime's api_errors counter; NULL: not counted */
    kiln_error_hook_fn error_hook;  /* called after fn for ERROR messages; NULL: none */
    void              *error_hook_user;
    kiln_log_item_fn   item_fn; /* called after fn with the item's id, with user; NULL: none */
} kiln_log_sink;

/* The default sink: "kiln <level>: <message>\n" on stderr, one write per message. */
KILN_INTERNAL void kiln_log_stderr(void *user, kiln_log_level level, const char *message);

/* Formats "ITEM: details" (at most 511 bytes, truncated beyond) at the item's level
 * (KILN_LOG_ITEMS) and hands it to the sink's fn, then its item_fn, then an ERROR to its
 * error hook. Concurrency: any thread; the sink's callbacks are called concurrently. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

/* Whether the calling thread is inside one of a sink's callbacks (fn, item_fn,
 * error_hook), which kiln may call while it holds its registry. This thread's. */
KILN_INTERNAL bool kiln_log_in_callback(void);

/* A refused call (bad argument, misuse): logged as kiln_log does (its items are ERRORs)
 * and counted in *misuse. */
KILN_INTERNAL KILN_COLD KILN_PRINTF(3, 4)
void kiln_log_misuse(const kiln_log_sink *sink, kiln_log_item item, const char *fmt, ...);

#endif /* KILN_BASE_LOG_H */
