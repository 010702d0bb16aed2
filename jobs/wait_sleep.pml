/* jobs/wait_sleep.pml — a SPIN model of the waits that sleep (jobs/scheduler.c:
 * wait_counter, wait_sleep, flag_sleepers, kiln_counter_finished, wake, drain_sleep,
 * waiter_announce/waiter_futex/waiter_withdraw; jobs/scheduler.h:
 * kiln_jobs_count_completed; base/membarrier.h). Checked by scripts/check-wait-model.sh,
 * with the mutations below, each of which must be caught.
 *
 * ---- What it models ----
 * WAITERs in kiln_wait on one counter that counts two jobs, and the driver's DRAIN in
 * kiln_frame_end, all asleep on the one waiters' futex word and counted in one sleepers
 * count, so that every wake-up may meet the wrong sleeper. Two configurations, checked
 * apart (together they are 17 million states): -DTWO_WAITERS, two waiters and no
 * drain; -DWITH_DRAIN, waiter 0 and the drain.
 *   A  runs on a WORKER, which finishes it at some point (kiln_counter_finish);
 *   B  is submitted later by a SUBMITTER and pinned to waiter 0: only it may run B
 *      (a job pinned to it, or any job it may run that nobody else takes); waiter 1
 *      can run nothing and must be woken by the counter's zero;
 *   F  the frame's one job, run by a COMPLETER on another thread.
 * A waiter's loop: while the counter is busy, run a job it may run, or else sleep:
 *   [flag]      set KILN_COUNTER_SLEEPERS in the counter's word, only while its count
 *               is not zero (a CAS; a zero count ends the wait instead); the flag stays
 *               until the counter is reused
 *   [read]      read the waiters' futex word
 *   [announce]  sleepers++ (seq_cst, and a seq_cst fence)
 *   [look]      look for a job it may run (and run it)
 *   [check]     read the counter: zero ends the wait
 *   [sleep]     futex_wait(word, value read): sleeps unless the word moved; a wake-up
 *               ends the sleep. No timeout: the C code's 50 ms safety net is left out,
 *               so a lost wake-up is a wait that never returns.
 *   [withdraw]  sleepers--
 * The finisher of a job: the decrement (an RMW that reads the flag); if it made the
 * count zero with the flag set, bump the word, then wake every sleeper.
 * The submitter: push B, a seq_cst fence, read sleepers; if any, bump the word, wake.
 * The drain's sleep: [read] the word, [dstore] drain_asleep = 1 (relaxed),
 *   [announce], [barrier] kiln_membarrier, [look] (nothing: F is not the drain's),
 *   [dcheck] the frame's completed count, [sleep], then drain_asleep = 0, [withdraw].
 * The completer of F: [count] store completed (release), a compiler barrier only,
 *   [dload] load drain_asleep; if set, bump the word and wake every sleeper.
 *
 * ---- Memory model ----
 * Sequentially consistent interleavings, except for the one pair that has no fence: the
 * completer's [count] and the drain's [dstore] are plain stores that wait in a store
 * buffer (cbuf, dbuf) until the FLUSHER writes them out, at any later moment, so that
 * the completer's [dload] may pass its own [count] (and the drain's [dcheck] pass its
 * [dstore]), as on every processor. kiln_membarrier writes out every buffer: the
 * caller's (a full fence) and every other thread's (the barrier it makes each run).
 * The other orders the C code gets from C11, not from x86: the flag CAS comes before the
 * last decrement in the word's modification order, so that decrement reads the flag;
 * the waiter's word read (acquire) seeing the finisher's bump (release, after its
 * decrement) implies its [check] sees the zero. The submitter/waiter pair is a
 * store-buffering pair ordered by a seq_cst fence on each side, as for an idle worker
 * (sleep_once).
 *
 * ---- Properties ----
 *   No invalid end state: every process ends, each waiter after its counter reached
 *   zero and the drain after F completed. A lost wake-up leaves one asleep for ever,
 *   which SPIN reports.
 *   W1 (assertion): a waiter returns only with the counter at zero and both jobs run.
 *   D1 (assertion): the drain returns only with F's completion written out.
 *
 * ---- Mutations (-DMUTATION_xxx), each must end in an invalid end state ----
 *   W1M1  the finisher ignores the flag: never wakes the sleepers
 *   W1M2  a waiter reads the word after its check (a bump between them is lost)
 *   W1M3  the submitter does not wake sleeping waiters (only workers)
 *   W1M4  a waiter announces after its look (a push between them is not seen)
 *   W1M5  a waiter does not flag the counter before it sleeps
 *   W2M1  a wake-up wakes one sleeper, not all (futex_wake(1)): the other sleeps on
 *   W2M2  a waiter clears the flag when it withdraws, as if it were the only one
 *   D1M1  the drain skips kiln_membarrier (a plain store, then the check)
 *   D1M2  the drain sets drain_asleep after its check
 *   D1M3  the completer does not look at drain_asleep
 */

#define W1 1             /* tags the assertions with their properties */
#define D1 1
#define DRAIN 2          /* asleep[DRAIN]: the drain's futex sleep */

byte count = 2;          /* the counter's count: A and B */
bool flagged = 0;        /* KILN_COUNTER_SLEEPERS */
byte word = 0;           /* the waiters' futex word (mod 256) */
byte sleepers = 0;       /* sys->sleepers (with waiters_asleep) */
bool queued_b = 0;       /* B is queued, pinned to waiter 0 */
bool ran_a = 0, ran_b = 0;
bool asleep[3];          /* inside futex_wait: waiter 0, waiter 1, the drain */
bool completed = 0;      /* F's completed count, as other threads see it */
bool drain_asleep = 0;   /* sys->drain_asleep, as other threads see it */
bool cbuf = 0;           /* the completer's [count], not yet written out */
bool dbuf = 0;           /* the drain's [dstore], not yet written out */
bool done_c = 0, done_d = 0;

#if defined(TWO_WAITERS) == defined(WITH_DRAIN)
#error "choose one configuration: -DTWO_WAITERS or -DWITH_DRAIN"
#endif

/* futex_wake on the waiters' word after its bump: every sleeper (INT_MAX). */
inline wake_all() {
#ifndef MUTATION_W2M1
    atomic { asleep[0] = 0; asleep[1] = 0; asleep[DRAIN] = 0 }
#else
    if
    :: asleep[0] -> asleep[0] = 0
    :: asleep[1] -> asleep[1] = 0
    :: asleep[DRAIN] -> asleep[DRAIN] = 0
    :: else -> skip
    fi
#endif
}

/* kiln_jobs_wake_waiters: bump (release), then wake. */
inline wake_waiters() {
    word++;
    wake_all()
}

/* The decrement of one job by whoever finished it; wakes when it made the count zero
 * with the flag set (kiln_counter_finish, kiln_counter_finished). */
inline finish_job(woke) {
    atomic {
        woke = (count == 1 && flagged);
        count--;
    }
#ifndef MUTATION_W1M1
    if
    :: woke -> wake_waiters()
    :: else -> skip
    fi
#endif
}

/* futex_wait(word, seen) for sleeper who, then until a wake-up. */
inline futex_sleep(who, seen) {
    atomic {
        if
        :: word == seen -> asleep[who] = 1
        :: else -> skip
        fi
    };
    !asleep[who]
}

active proctype Worker() {
    bool woke;
    ran_a = 1;
    finish_job(woke)
}

active proctype Submitter() {
    queued_b = 1;                              /* push (pinned to waiter 0) */
    /* seq_cst fence, then read sleepers (wake) */
#ifndef MUTATION_W1M3
    if
    :: sleepers > 0 -> wake_waiters()
    :: else -> skip
    fi
#endif
}

#ifdef TWO_WAITERS
#define WAITERS 2
#else
#define WAITERS 1
#endif

active [WAITERS] proctype Waiter() {
    byte me = _pid - 2;                        /* 0 may run B, 1 may not */
    byte seen;
    bool took, woke;
    do
    :: count == 0 -> break                     /* kiln_counter_busy: no */
    :: else ->
        /* find_wait_task, then the spin (worker_idle): looks, finds B or nothing */
        if
        :: me == 0 && queued_b -> queued_b = 0; ran_b = 1; finish_job(woke)
        :: else ->
#ifndef MUTATION_W1M5
            atomic {                           /* [flag] */
                if
                :: count != 0 -> flagged = 1
                :: else -> skip
                fi
            }
#endif
#ifndef MUTATION_W1M2
            seen = word;                       /* [read] */
#endif
#ifndef MUTATION_W1M4
            sleepers++;                        /* [announce] */
#endif
            took = 0;
            if                                 /* [look] */
            :: me == 0 && queued_b -> queued_b = 0; took = 1
            :: else -> skip
            fi;
#ifdef MUTATION_W1M4
            sleepers++;
#endif
            if
            :: took -> ran_b = 1; finish_job(woke)
            :: !took && count == 0 -> skip     /* [check] */
            :: !took && count != 0 ->
#ifdef MUTATION_W1M2
                seen = word;
#endif
                futex_sleep(me, seen)          /* [sleep] */
            fi;
#ifdef MUTATION_W2M2
            flagged = 0;
#endif
            sleepers--                         /* [withdraw] */
        fi
    od;
    assert(W1 && count == 0 && ran_a && ran_b)
}

#ifdef WITH_DRAIN
active proctype Completer() {
    cbuf = 1;                                  /* [count]: into the store buffer */
    /* kiln_membarrier_light: a compiler barrier, no fence */
#ifndef MUTATION_D1M3
    if                                         /* [dload] */
    :: drain_asleep -> wake_waiters()
    :: else -> skip
    fi;
#endif
    done_c = 1
}

active proctype Drain() {
    byte seen;
    do
    :: completed -> break                      /* frame_quiet */
    :: else ->
        seen = word;                           /* [read] */
#ifndef MUTATION_D1M2
        dbuf = 1;                              /* [dstore]: into the store buffer */
#endif
        sleepers++;                            /* [announce] */
#ifndef MUTATION_D1M1
        atomic {                               /* [barrier]: every buffer written out */
            if
            :: cbuf -> completed = 1; cbuf = 0
            :: else -> skip
            fi;
            if
            :: dbuf -> drain_asleep = 1; dbuf = 0
            :: else -> skip
            fi
        }
#endif
        if                                     /* [dcheck] */
        :: completed -> skip
        :: else ->
#ifdef MUTATION_D1M2
            dbuf = 1;
#endif
            futex_sleep(DRAIN, seen)           /* [sleep] */
        fi;
        atomic { dbuf = 0; drain_asleep = 0 }; /* (the store is ordered by the withdraw's RMW) */
        sleepers--                             /* [withdraw] */
    od;
    assert(D1 && completed);
    done_d = 1
}

/* The store buffers write out on their own, at any moment. */
active proctype Flusher() {
end:
    do
    :: atomic { cbuf -> completed = 1; cbuf = 0 }
    :: atomic { dbuf -> drain_asleep = 1; dbuf = 0 }
    :: atomic { done_c && done_d && !cbuf && !dbuf } -> break
    od
}
#endif
