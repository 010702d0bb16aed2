/* base/futex.h — sleeping on a 32-bit word until another thread changes it and wakes
 * the sleepers (Linux futexes, private to the process): the idle workers' sleep and
 * wake-up (jobs/scheduler.c). Never installed.
 *
 * Contract: any thread may wait or wake on a word at the same time as others. A wait
 * returns at once when the word does not hold expected (checked atomically with going
 * to sleep, so a change and wake between the caller's check and the wait is never
 * lost), and otherwise at a wake, after timeout_ns, or spuriously: the caller checks
 * its condition again. The orders are the caller's: neither call is a fence. */
#ifndef KILN_BASE_FUTEX_H
#define KILN_BASE_FUTEX_H

#include <stdint.h>

#include "common.h"

/* Sleeps while *word == expected, at most timeout_ns (below one second). */
KILN_INTERNAL void kiln_futex_wait(_Atomic uint32_t *word, uint32_t expected, long timeout_ns);

/* Wakes up to count threads sleeping on word. */
KILN_INTERNAL void kiln_futex_wake(_Atomic uint32_t *word, int count);

#endif /* KILN_BASE_FUTEX_H */
