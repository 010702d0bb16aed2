/* base/log_fold.h — repeats folded, in every log mode: a message like one delivered in
 * the same window (same item, same text once its numbers are set aside: the same object
 * saying the same thing) is counted instead of delivered, and one LOG_REPEATS message
 * later says how many there were. A window is one frame of the runtime's clock, cut
 * after about a second (so a runtime without a frame clock, or a frame that lasts, still
 * hears of its repeats). The summary comes when the window has ended: from the next
 * message that takes the entry, from the driver at frame end (kiln_log_fold_sweep), and
 * at kiln_destroy.
 *
 * The table: KILN_LOG_FOLD_ENTRIES entries, a message's entry chosen by its hash; a
 * message that finds another's entry takes it over (summing up the one before). Every
 * field is an atomic, so any thread folds and sweeps with no lock: a repeat that races a
 * takeover may be counted in the summary before instead of its own (each is counted
 * once). Never installed. */
#ifndef KILN_BASE_LOG_FOLD_H
#define KILN_BASE_LOG_FOLD_H

#include <kiln/core.h>

#include "common.h"

#define KILN_LOG_FOLD_ENTRIES 256   /* a power of two */

typedef struct kiln_log_fold_entry {
    _Atomic uint64_t key;       /* the message's hash (upper 32 bits) and window (lower) */
    _Atomic uint64_t repeats;   /* messages folded into it since it was taken */
    _Atomic uint32_t item;      /* kiln_log_item of the message that took it */
} kiln_log_fold_entry;

typedef struct kiln_log_fold {
    const _Atomic uint64_t *frame;   /* the runtime's frame number (relaxed reads) */
    kiln_log_fold_entry     entries[KILN_LOG_FOLD_ENTRIES];
} kiln_log_fold;

/* What an entry folded, to be told (one LOG_REPEATS): its item and how many. */
typedef void (*kiln_log_fold_tell_fn)(void *user, kiln_log_item item, uint64_t repeats);

/* Whether the message is delivered (true) or folded into an earlier one (false). A
 * message that takes over an entry with repeats first tells them through tell. Items of
 * their own kind are never folded: STATS_REPORT, APP_LOG (the program's), LOG_REPEATS,
 * LOG_DROPPED. Concurrency: any thread, lock-free. */
KILN_INTERNAL bool kiln_log_fold_admit(kiln_log_fold *fold, kiln_log_item item, const char *message,
                                       kiln_log_fold_tell_fn tell, void *user);

/* Tells the repeats of every entry whose window has ended (all: every entry), so a burst
 * followed by silence is told. Concurrency: any thread, lock-free. */
KILN_INTERNAL void kiln_log_fold_sweep(kiln_log_fold *fold, bool all, kiln_log_fold_tell_fn tell,
                                       void *user);

/* Forgets every entry and its repeats, untold (a fork's child: they are its parent's).
 * Concurrency: no other thread folds meanwhile. */
KILN_INTERNAL void kiln_log_fold_clear(kiln_log_fold *fold);

#endif /* KILN_BASE_LOG_FOLD_H */
