/* runtime/history.h — the per-frame history: a ring of the last KILN_HISTORY_FRAMES
 * frame records that the driver writes at each frame end and any thread reads.
 * Never installed.
 *
 * Readers and the writer: each slot carries a sequence count (odd while the driver
 * writes it, 2 x the writes so far when not), and the record's words are relaxed
 * atomics, so a reader copies a record whole or sees that it changed and retries (a
 * seqlock, race-free in C11: Boehm, MSPC 2012). `written` is published with release
 * after the slot, so a reader that loads it with acquire finds every record below it
 * complete; a record overwritten meanwhile shows a larger sequence count.
 * (ThreadSanitizer does not model the fences; every shared word is an atomic.) */
#ifndef KILN_RUNTIME_HISTORY_H
#define KILN_RUNTIME_HISTORY_H

#include "types.h"

/* kiln_frame_begin, after the frame number moved: reads the clock. Driver only. */
KILN_INTERNAL void kiln_history_frame_begin(kiln_runtime *rt);

/* kiln_frame_end, after the resets: fills *record for the frame (the caller also
 * hands it to the tracer), appends it to the ring (takes registry_lock), then warns of
 * every context over desc.frame_alloc_budget (FRAME_ALLOC_BUDGET_EXCEEDED, after the
 * registry is unlocked). Driver only; driver is its context. */
KILN_INTERNAL void kiln_history_frame_end(kiln_runtime *rt, kiln_ctx *driver,
                                          kiln_frame_record *record);

/* Records written so far, and one of them by number (0 the first): false when it is not
 * written, overwritten or being written. One try each, no lock, no retry: async-signal-
 * safe (the crash report, which may interrupt the driver mid-write). Any thread. */
KILN_INTERNAL uint64_t kiln_history_written(kiln_runtime *rt);
KILN_INTERNAL bool kiln_history_record(kiln_runtime *rt, uint64_t index, kiln_frame_record *out);

#endif /* KILN_RUNTIME_HISTORY_H */
