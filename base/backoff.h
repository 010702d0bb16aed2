/* base/backoff.h — how a kiln thread waits without blocking: one pause, exponential
 * backoff after a lost compare-and-swap (alloc/lifo.h), and the rounds of a wait for
 * work that another thread will make (jobs/scheduler.c). Never installed. Each function
 * concerns the calling thread only: any thread may call it. */
#ifndef KILN_BASE_BACKOFF_H
#define KILN_BASE_BACKOFF_H

#include <ck_pr.h>
#include <sched.h>

/* One pause (x86's pause instruction; Concurrency Kit's equivalent elsewhere): tells the
 * core that this is a spin-wait, so the loop costs it less and leaves more of it to the
 * other hyperthread. */
static inline void kiln_cpu_pause(void) {
    ck_pr_stall();
}

/* After a lost CAS: waits *spins pauses, then doubles *spins up to max (start it at 1).
 * Two threads retrying on one line stop taking it from each other on every attempt;
 * progress stays that of the caller's loop (some CAS always succeeds). */
static inline void kiln_backoff(unsigned *spins, unsigned max) {
    for (unsigned i = 0; i < *spins; i++) kiln_cpu_pause();
    if (*spins < max) *spins *= 2;
}

/* Rounds of a wait that only pause before a waiter starts giving its core away: about
 * as long as the next batch of work usually takes to appear. */
#define KILN_SPIN_PAUSES 64

/* Round `round` (1, 2, ... since the wait began or last found work) of a wait for
 * another thread: a pause for the first KILN_SPIN_PAUSES - 1 rounds, then the core
 * given away (sched_yield) every yield_every-th round and a pause in the others. With
 * more threads than cores the thread being waited for may need this core. */
static inline void kiln_spin_round(unsigned round, unsigned yield_every) {
    if (round < KILN_SPIN_PAUSES || round % yield_every != 0) kiln_cpu_pause();
    else sched_yield();
}

#endif /* KILN_BASE_BACKOFF_H */
