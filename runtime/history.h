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

#include <kiln/trace.h>

#include "../base/atomics.h"
#include "../base/common.h"
#include "../jobs/scheduler.h"

#define KILN_HISTORY_WORDS (sizeof(kiln_frame_record) / sizeof(uint64_t))
_Static_assert(sizeof(kiln_frame_record) % sizeof(uint64_t) == 0 &&
               _Alignof(kiln_frame_record) == _Alignof(uint64_t),
               "a frame record is copied as whole 64-bit words");

typedef struct kiln_history_slot {
    _Atomic uint64_t seq;                        /* odd while written; else 2 x writes */
    _Atomic uint64_t words[KILN_HISTORY_WORDS];  /* the record */
} kiln_history_slot;

/* A context's job counts at the last frame end, by job queue slot (unique among live
 * contexts); id tells a context attached since then (its counts started at zero). */
typedef struct kiln_history_seen {
    uint32_t id;
    uint64_t jobs_run, jobs_stolen;
} kiln_history_seen;

typedef struct kiln_history {
    _Atomic uint64_t  written;                      /* records so far (release) */
    /* The driver's alone. */
    uint64_t          begin_ns;                     /* of the open frame */
    kiln_history_seen seen[KILN_MAX_QUEUES];
    kiln_history_slot slots[KILN_HISTORY_FRAMES];
} kiln_history;

/* kiln_frame_begin, after the frame number moved: reads the clock. Driver only. */
KILN_INTERNAL void kiln_history_frame_begin(kiln_runtime *rt);

/* kiln_frame_end, after the resets: fills *record for the frame (the caller also
 * hands it to the tracer) and appends it to the ring (takes registry_lock). Driver
 * only; driver is its context. */
KILN_INTERNAL void kiln_history_frame_end(kiln_runtime *rt, kiln_ctx *driver,
                                          kiln_frame_record *record);

#endif /* KILN_RUNTIME_HISTORY_H */
