/* base/log_recent.h — the newest messages a runtime delivered, kept for its crash report
 * (desc.crash_file): KILN_LOG_RECENT_LINES lines of at most KILN_LOG_RECENT_TEXT - 1
 * bytes, each slot a seqlock (base/seqlock.h) over relaxed atomic words, so a signal
 * handler reads them with no lock while any thread writes. Writers take slots by ticket;
 * two writers on one slot (as many messages as slots delivered during one copy) may
 * leave it torn, which a reader sees and skips. Never installed. */
#ifndef KILN_BASE_LOG_RECENT_H
#define KILN_BASE_LOG_RECENT_H

#include <kiln/core.h>

#include "common.h"

#define KILN_LOG_RECENT_LINES 64
#define KILN_LOG_RECENT_TEXT  512   /* a longer line is cut, ending in "..." */
#define KILN_LOG_RECENT_WORDS (KILN_LOG_RECENT_TEXT / 8)

typedef struct kiln_log_recent_line {
    _Atomic uint64_t seq;                            /* 2 x ticket + 1 while written */
    _Atomic uint64_t words[KILN_LOG_RECENT_WORDS];   /* "kiln <level>: ITEM: ...", NUL-padded */
} kiln_log_recent_line;

typedef struct kiln_log_recent {
    _Atomic uint64_t      next;   /* the next ticket (relaxed) */
    kiln_log_recent_line  lines[KILN_LOG_RECENT_LINES];
} kiln_log_recent;

/* Keeps one delivered line ("kiln <level>: ITEM: details", as base/log_sink.c writes
 * it). Lock-free, no system call. Concurrency: any thread. */
KILN_INTERNAL void kiln_log_recent_put(kiln_log_recent *recent, const char *delivered);

/* Copies the line of ticket into out (KILN_LOG_RECENT_TEXT bytes, NUL-terminated): true,
 * or false when that line is gone, not written yet or torn. Async-signal-safe.
 * Concurrency: any thread. */
KILN_INTERNAL bool kiln_log_recent_get(kiln_log_recent *recent, uint64_t ticket, char *out);

#endif /* KILN_BASE_LOG_RECENT_H */
