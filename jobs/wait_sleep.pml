/* jobs/wait_sleep.pml — a SPIN model of a wait that sleeps (jobs/scheduler.c:
 * wait_counter, wait_sleep, flag_sleepers, kiln_counter_finished, wake). Checked by
 * scripts/check-wait-model.sh, with the mutations below, each of which must be caught.
 *
 * ---- What it models ----
 * One WAITER in kiln_wait on a counter that counts two jobs:
 *   A  runs on a WORKER, which finishes it at some point (kiln_counter_finish);
 *   B  is submitted later by a SUBMITTER and pinned to the waiter: only the waiter may
 *      run it (a job pinned to it, or any job it may run that nobody else takes).
 * The waiter's loop: while the counter is busy, run a job it may run, or else sleep:
 *   [flag]      set KILN_COUNTER_SLEEPERS in the counter's word, only while its count
 *               is not zero (a CAS; a zero count ends the wait instead)
 *   [read]      read the waiters' futex word
 *   [announce]  sleepers++ (seq_cst, and a seq_cst fence)
 *   [look]      look for a job it may run (and run it)
 *   [check]     read the counter: zero ends the wait
 *   [sleep]     futex_wait(word, value read): sleeps unless the word moved; a wake-up
 *               ends the sleep. No timeout: the C code's 50 ms safety net is left out,
 *               so a lost wake-up is a wait that never returns.
 * The finisher of a job: the decrement (an RMW that reads the flag); if it made the
 * count zero with the flag set, bump the word, then wake every sleeper.
 * The submitter: push B, a seq_cst fence, read sleepers; if any, bump the word, wake.
 *
 * ---- Property ----
 *   No invalid end state: every process ends, the waiter after its counter reached
 *   zero. A lost wake-up leaves the waiter in [sleep] for ever, which SPIN reports.
 *   W1 (assertion): the waiter returns only with the counter at zero and both jobs run.
 *
 * ---- Memory model ----
 * Sequentially consistent interleavings. The C code gets the two orders this relies on
 * from C11, not from x86: the flag CAS comes before the last decrement in the word's
 * modification order, so that decrement reads the flag; and the waiter's word read
 * (acquire) seeing the finisher's bump (release, after its decrement) implies its
 * [check] sees the zero. The submitter/waiter pair is a store-buffering pair (push then
 * read sleepers; announce then look), ordered by the seq_cst fence on each side, as for
 * an idle worker (sleep_once).
 *
 * ---- Mutations (-DMUTATION_Wn), each must end in an invalid end state ----
 *   W1M1  the finisher ignores the flag: never wakes the sleepers
 *   W1M2  the waiter reads the word after its check (a bump between them is lost)
 *   W1M3  the submitter does not wake sleeping waiters (only workers)
 *   W1M4  the waiter announces after its look (a push between them is not seen)
 *   W1M5  the waiter does not flag the counter before it sleeps
 */

#define W1 1             /* tags the assertion with its property */

byte count = 2;          /* the counter's count: A and B */
bool flagged = 0;        /* KILN_COUNTER_SLEEPERS */
byte word = 0;           /* the waiters' futex word (mod 256) */
byte sleepers = 0;       /* sys->sleepers (with waiters_asleep) */
bool queued_b = 0;       /* B is queued, pinned to the waiter */
bool ran_a = 0, ran_b = 0;
bool asleep = 0;         /* the waiter is inside futex_wait */

/* The decrement of one job by whoever finished it; wakes when it made the count zero
 * with the flag set (kiln_counter_finish, kiln_counter_finished, wake_waiters). */
inline finish_job(woke) {
    atomic {
        woke = (count == 1 && flagged);
        count--;
    }
#ifndef MUTATION_W1M1
    if
    :: woke ->
        word++;                                /* bump, release */
        asleep = 0                             /* futex_wake(INT_MAX) */
    :: else -> skip
    fi
#endif
}

active proctype Worker() {
    bool woke;
    ran_a = 1;
    finish_job(woke)
}

active proctype Submitter() {
    queued_b = 1;                              /* push (pinned to the waiter) */
    /* seq_cst fence, then read sleepers (wake) */
#ifndef MUTATION_W1M3
    if
    :: sleepers > 0 ->
        word++;
        asleep = 0
    :: else -> skip
    fi
#endif
}

active proctype Waiter() {
    byte seen;
    bool took, woke;
    do
    :: count == 0 -> break                     /* kiln_counter_busy: no */
    :: else ->
        /* find_wait_task, then the spin (worker_idle): looks, finds B or nothing */
        if
        :: queued_b -> queued_b = 0; ran_b = 1; finish_job(woke)
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
            :: queued_b -> queued_b = 0; took = 1
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
                atomic {                       /* [sleep]: futex_wait(word, seen) */
                    if
                    :: word == seen -> asleep = 1
                    :: else -> skip
                    fi
                };
                !asleep                        /* until a wake-up */
            fi;
            sleepers--
        fi
    od;
    assert(W1 && count == 0 && ran_a && ran_b)
}
