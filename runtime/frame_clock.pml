/* runtime/frame_clock.pml — a SPIN model of the frame clock: the frame epoch J, the
 * per-queue submitted/completed counters indexed by epoch parity, kiln_frame_end's
 * close, drain, reset and handle reclaim, background nesting, quiescent points, and the
 * fence before a job's handle gets. Checked by scripts/check-frame-model.sh.
 *
 * Every step names the C function it mirrors (kiln_jobs_submit, frame_close and
 * kiln_frame_end, kiln_jobs_drain_frame and frame_quiet, reset_job_arenas,
 * kiln_handles_frame_end, call_background, kiln_handles_quiescent, enter_job_frame),
 * and carries a step name in brackets, which the C code cites as (model step "name"):
 * [submit] [close] [drain] [reset] [reclaim] [enter] [background] [quiescent].
 *
 * ---- Properties ----
 *   S1  Frame memory is never given back while a job of its frame runs or is pending,
 *       and no job uses frame memory that was given back. Checked in reset_job_arenas
 *       (no job of the epoch being ended is counted, queued or running), when a
 *       top-level submission stands (its epoch is not an ended one), and whenever a
 *       job starts or uses frame memory (its epoch is newer than the last one reset,
 *       and the thread's current arena is that epoch's parity).
 *   S2  A handle slot is not reused while a thread holds a pointer it got from the
 *       slot (live, or read as live by a stale view): a frame job until it returns;
 *       the outside thread (at top level or in a background job it runs) until its
 *       next kiln_handles_quiescent; a worker in background jobs until its outermost
 *       background job returns. Checked where kiln_handles_frame_end makes the slot
 *       reusable.
 *   L1  ltl L1: [] (in_end -> <> !in_end): every kiln_frame_end that starts returns.
 *       Checked with weak fairness (pan -a -f) in the configuration where the outside
 *       thread submits frame jobs for ever and the worker runs them. An LTL property
 *       and not a progress label: once the driver has ended its frames, the outside
 *       thread and the worker go on for ever, which a non-progress-cycle search would
 *       report; the property is about kiln_frame_end returning, so it says so.
 *   Also, in every safety run: no invalid end state (nothing waits for ever).
 * Assertions are tagged with their property (S1 && ..., S2 && ...) so that pan's
 * message names it; MODEL && ... marks the model's own consistency checks.
 *
 * ---- Memory model ----
 * Interleavings are sequentially consistent, with one exception the handle protocol
 * depends on: a thread may read a freed handle slot as live (a stale view) until it
 * executes a seq_cst fence that follows the free in the total order. seen[t] becomes 1
 * when thread t fences after the free; a get on a thread with seen[t] == 0 may still
 * return a pointer to the freed slot. That is C11's rule for seq_cst fences (a load
 * after a seq_cst fence reads the last seq_cst store before the fence, or a later one)
 * and it is what enter_job_frame's fence is for. Counter sums are read one queue at a
 * time, as frame_quiet does.
 * What this does not check, and the C code must provide: the re-check loop and the
 * close are a store-buffering (Dekker) pair. The submitter stores submitted[e&1], then
 * loads J; the driver stores J, then loads submitted[e&1]. Only if all four are
 * seq_cst (or each side has a seq_cst fence between its store and its load) can both
 * loads not read the old values; so frame_quiet's loads of the submitted counts must
 * be seq_cst, or a seq_cst fence must follow the close (acquire loads are not enough,
 * whatever x86 does). The completed-then-submitted order needs only release stores of
 * completed, acquire loads of them, and the job's count happening before its push.
 *
 * ---- Counters (an exact reduction) ----
 * frame_quiet's answer depends only on differences: adding a constant to each queue's
 * count, with the constants summing to the same over submitted and over completed,
 * changes no comparison it can make. So while the driver is not reading parity p the
 * model keeps one number, outst[p] = sum submitted[p] - sum completed[p] (as though
 * every count sat on queue 0), and while frame_quiet reads parity p (win[p]) it keeps
 * each queue's change since the reading began (dsub, dcomp): queue t's counts are then
 * completed = (t == 0 ? -outst[p] : 0) + dcomp[t], submitted = dsub[t]. The last read
 * folds the changes back into outst[p]. SUB_INC/SUB_DEC/COMP_INC are submitted[t][p]++,
 * submitted[t][p]-- and completed[t][p]++ of the C code. Without this, the counters
 * record which thread ran which job in every frame, and the state space grows by
 * orders of magnitude for nothing. Arithmetic is modulo CMOD (256). The runner's
 * safety checks and its check of L1 assert (CHECK_SMALL) that outst and every per-queue
 * change stay within -7..7, so no difference frame_quiet compares can wrap: there,
 * equality modulo 256 is equality, and a counterexample does not depend on wrapping.
 * The liveness mutations run with CMOD = 8, for short cycles: wrapping can only make
 * frame_quiet answer "quiet" too early (a zero difference stays zero), which ends a
 * drain sooner and never keeps one running, so a cycle found is real.
 *
 * ---- Bounds ----
 * Three threads: the DRIVER, one WORKER, one OUTSIDE attached thread. Five job slots
 * with fixed bodies; a slot is submitted again once its job has returned:
 *   DJ  the driver's frame job, one per frame, top level; submits CJ.
 *   CJ  DJ's child (child submission: the parent's epoch, no re-check).
 *   OJ  the outside thread's top-level frame job (the re-check loop): gets a handle,
 *       may help (runs one queued job nested), uses frame memory as it returns.
 *   B1  a background job (the outside thread submits it): gets a handle, may help, so
 *       that a worker can run B1 -> OJ -> B2 (nesting depth 3 = MAXD).
 *   B2  a background job that gets a handle (the inner one of that chain).
 * A job helps at most once (a wait that runs one other job), so the frame's own jobs
 * always terminate: L1's premise. One handle slot and one generation: live, freed (in
 * limbo with its reclaim epoch F), reused; the driver frees it at top level (in its
 * open frame) or the outside thread at any time (also while a frame closes).
 * Knobs (-D on the spin command line), set per check by the runner; the defaults are
 * its s2out configuration. Everything at once is over 6e7 states (a search stopped
 * there, unfinished), so each check turns on the actors whose races it is about (see
 * scripts/check-frame-model.sh):
 *   NFRAMES       frame ends the driver performs. 3 makes epochs 1..4: parity 1 serves
 *                 epochs 1 and 3, and a submitter that read J two frames ago lands on
 *                 the parity being drained.
 *   OJ_MAX        OJ submissions by the outside thread; 255 means for ever (L1).
 *   BG            background jobs: 0 none, 1 B1, 2 B1 and B2 (BG_MAX submissions each).
 *   HANDLES       the handle slot: gets, frees, quiescent points, reclaim, fences.
 *   DRVJOB, CHILD the driver submits DJ each frame; DJ submits CJ.
 *   OUTRUN        what the outside thread runs when it helps: 1 background jobs,
 *                 2 frame jobs, 3 both.
 *   PINNED        DJ is pinned to the worker: nobody else may run it.
 *   OLDEST_FIRST  the worker takes a queued frame job only if none of an older epoch
 *                 is queued.
 *
 * ---- Atomic steps ----
 * Each model step is one atomic action. Some C sequences are one step here because
 * splitting them adds no behaviour that matters: a free (slot stale, then F = J) reads
 * F at the free, the smallest and most dangerous value; a quiescent point (load J,
 * store quiescent_epoch, fence) stores J as of the start, where a later store of an
 * older value would only hold reuse back longer; a child submission counts and queues
 * at once (it is counted before it can run either way); a job's enter step does its
 * arena switch, its fence and (DJ) its child submission. The reads frame_quiet sums,
 * the re-check loop's load, count, re-check and undo, the stamp and the flag of
 * call_background, the reclaim's reads, and each job step are separate steps. The
 * driver's own counts (queue 0) do not change while it reads them, so those reads
 * share a step with a neighbour.
 *
 * ---- Mutations (#ifdef MUTATION_Mx, or a knob; each must be caught) ----
 *   M1  the outside submitter skips the re-check of J                        -> S1
 *   M2  frame_quiet reads the submitted counts before the completed ones     -> S1
 *   M3  kiln_frame_end closes (J = e+1) after the drain instead of before    -> L1, S1
 *   M4  background nesting not tracked (judged by the enclosing job's flags,
 *       as call_task does today): in B1 -> frame job -> B2, B2's end clears
 *       in_background while B1 runs                                          -> S2
 *   M5  an outside thread running a background job stamps its quiescent
 *       epoch                                                                -> S2
 *   M6  the drain waits for all parities (global quiet), not e's             -> L1
 *   M7  enter_job_frame never fences                                         -> S2
 *   M8  the drain runs any queued frame job before looking at quiet, so a
 *       stream of next-frame jobs keeps it from ever looking                 -> L1
 *   M9  a nested frame job's return does not switch the arena back           -> S1
 *   M10 PINNED without OLDEST_FIRST: the epoch-e job only a worker may run,
 *       and the worker takes queued jobs in any order (the protocol as
 *       described says no more), so newer jobs can overtake it for ever      -> L1
 */

#ifndef NFRAMES
#define NFRAMES 2
#endif
#ifndef OJ_MAX
#define OJ_MAX 1
#endif
#ifndef BG
#define BG 1
#endif
#ifndef BG_MAX
#define BG_MAX 1
#endif
#ifndef HANDLES
#define HANDLES 1
#endif
#ifndef PINNED
#define PINNED 0
#endif
#ifndef OLDEST_FIRST
#define OLDEST_FIRST 0
#endif
#ifndef DRVJOB
#define DRVJOB 1
#endif
#ifndef CHILD
#define CHILD 0
#endif
#ifndef OUTRUN
#define OUTRUN 1
#endif
#ifndef CMOD
#define CMOD 256           /* counter arithmetic modulo CMOD (see Counters) */
#endif

/* threads */
#define DRV  0
#define WRK  1
#define OUT  2
#define NT   3
#define MAXD 3             /* jobs nested on one thread */

/* job slots */
#define DJ 0
#define CJ 1
#define OJ 2
#define B1 3
#define B2 4
#define NJ 5
#define IS_FRAME(x) ((x) <= OJ)

/* job states. TRYING: counted by a top-level submitter that has not re-checked J yet
 * (it may undo); COUNTED: a submission that stands, not queued yet. */
#define IDLE    0
#define TRYING  1
#define COUNTED 2
#define QUEUED  3
#define RUNNING 4

/* the handle slot */
#define LIVE   0
#define LIMBO  1           /* freed, with its reclaim epoch F: reusable once safe > F */
#define REUSED 2

#define NOARENA 2          /* cur[t] outside any frame job */

/* assertion tags and scratch (hidden: not part of the state) */
hidden byte S1 = 1;
hidden byte S2 = 1;
hidden byte MODEL = 1;
hidden byte j, k;          /* scratch: the job a step works on, the job to start;
                              set and used inside one atomic step */

byte J = 1;                /* the frame epoch: the frame a top-level submission joins */

/* the counters (see Counters) */
byte outst[2];
bit  win[2];
byte dsub[2 * NT];
byte dcomp[2 * NT];
#define D(a, t, p) a[2 * (t) + (p)]
#ifdef CHECK_SMALL
/* the runner's checks of the correct model: every count change stays in -7..7 */
#define SMALL(v) assert(MODEL && ((v) < 8 || (v) > CMOD - 8))
#else
#define SMALL(v) skip
#endif
#define SUB_INC(t, p) \
    if \
    :: win[p] -> D(dsub, t, p) = (D(dsub, t, p) + 1) % CMOD; SMALL(D(dsub, t, p)) \
    :: else -> outst[p] = (outst[p] + 1) % CMOD; SMALL(outst[p]) \
    fi
#define SUB_DEC(t, p) \
    if \
    :: win[p] -> D(dsub, t, p) = (D(dsub, t, p) + CMOD - 1) % CMOD; SMALL(D(dsub, t, p)) \
    :: else -> outst[p] = (outst[p] + CMOD - 1) % CMOD; SMALL(outst[p]) \
    fi
#define COMP_INC(t, p) \
    if \
    :: win[p] -> D(dcomp, t, p) = (D(dcomp, t, p) + 1) % CMOD; SMALL(D(dcomp, t, p)) \
    :: else -> outst[p] = (outst[p] + CMOD - 1) % CMOD; SMALL(outst[p]) \
    fi

/* jobs */
byte jst[NJ];              /* state */
byte jep[NJ];              /* epoch (frame jobs) */
byte jpc[NJ];              /* step of its body */
bit  jptr[OJ + 1];         /* the frame job holds a handle pointer */
byte jsav[NJ];             /* the arena its thread switches back to when it returns */

/* threads */
byte depth[NT];            /* jobs on the thread's stack */
byte stk[MAXD * NT];
#define TOP(t) stk[MAXD * (t) + depth[t] - 1]
byte cur[NT] = NOARENA;    /* the parity of the arena its frame memory comes from */
byte bgd[NT];              /* call_background nesting depth */
bit  inbg[NT];             /* in_background (frame end reads the worker's) */
byte qe[NT] = 1;           /* quiescent epoch; attaching stamped J = 1 */
byte fenced[NT];           /* the epoch of its last enter_job_frame fence */
bit  seen[NT];             /* it fenced after the handle's free (see Memory model) */

/* the handle slot */
byte hst = LIVE;
byte hF;                   /* reclaim epoch read by the free */
bit  ptr_out;              /* the outside thread holds a pointer (until its quiescent
                              point) */
bit  wptr;                 /* the worker holds one from a background job (until the
                              outermost one returns) */

byte nOJ, nB1, nB2;        /* submissions so far (bounded configurations) */
byte last_reset;           /* the last epoch whose frame memory was given back */
bit  in_end;               /* kiln_frame_end is running (L1) */

#define AT(x, n)        (j == (x) && jpc[j] == (n))
#define QD(x)           (jst[x] == QUEUED)
#define EQ(x, e)        (jst[x] == QUEUED && jep[x] == (e))
#define E_QUEUED(e)     (EQ(DJ, e) || EQ(CJ, e) || EQ(OJ, e))
#define FRAME_QUEUED    (QD(DJ) || QD(CJ) || QD(OJ))
/* PINNED: DJ runs on the worker only (a job pinned to it); OLDEST_FIRST: the worker
 * takes a queued frame job only if none of an older epoch is queued */
#define RUNS_DJ(t)      (!PINNED || (t) == WRK)
#define OLDEST(x)       (!OLDEST_FIRST || !((QD(DJ) && jep[DJ] < jep[x]) || \
                         (QD(CJ) && jep[CJ] < jep[x]) || (QD(OJ) && jep[OJ] < jep[x])))
#define PENDING(x, e)   (jst[x] >= COUNTED && jep[x] == (e))
/* M4: "outermost" judged by the running flags, as call_task does today: the background
 * job on top of t's stack counts as outermost unless the job it is nested in is a
 * background job; so in B1 -> frame job -> B2, B2 stamps again and its end clears
 * in_background while B1 still runs */
#define NOT_IN_BG(t)    (depth[t] < 2 || IS_FRAME(stk[MAXD * (t) + depth[t] - 2]))
#define NO_POINTERS     (!ptr_out && !wptr && !jptr[DJ] && !jptr[CJ] && !jptr[OJ])

/* Thread t starts running the queued job x (NJ: none), nested in what it runs. The
 * choice of x is made first, into the scratch k, so that this is written once. */
inline push(t, x) {
    d_step {
        if
        :: x < NJ ->
            stk[MAXD * t + depth[t]] = x;
            depth[t]++;
            jst[x] = RUNNING;
            jpc[x] = 0
        :: else -> skip
        fi
    }
}

/* A seq_cst fence on thread t: from now on it reads the slot as it is. */
inline fence(t) {
    seen[t] = hst == LIMBO
}

/* A handle get by job x on thread t: a pointer only if the slot reads live (it is,
 * or the thread's view is stale: then the get returns the pointer, the worst case of
 * what a stale read may do). Who holds it, and until when (S2): a frame job
 * until it returns; a background job on the worker until the outermost background job
 * returns (wptr); a background job on the outside thread until the thread's next
 * quiescent point (ptr_out). */
inline hold(t, x) {
    if
    :: IS_FRAME(x) -> jptr[x] = 1
    :: !IS_FRAME(x) && t == WRK -> wptr = 1
    :: !IS_FRAME(x) && t != WRK -> ptr_out = 1
    fi
}
inline get(t, x) {
    if
    :: hst == LIVE -> hold(t, x)
    :: hst == LIMBO && !seen[t] -> hold(t, x)     /* stale view */
    :: else -> skip
    fi
}

/* A wait inside job x (kiln_wait): runs at most one queued job, nested, then the job
 * goes on at step nxt. The driver runs frame jobs only (background ones are the
 * workers'). */
inline help(t, x, nxt) {
    jpc[x] = nxt;
    if
    :: depth[t] < MAXD && QD(DJ) && RUNS_DJ(t) -> k = DJ
    :: depth[t] < MAXD && QD(CJ) -> k = CJ
    :: depth[t] < MAXD && QD(OJ) -> k = OJ
    :: t != DRV && depth[t] < MAXD && QD(B1) -> k = B1
    :: t != DRV && depth[t] < MAXD && QD(B2) -> k = B2
    :: true -> k = NJ      /* it did not wait, or found nothing */
    fi;
    push(t, k)
}

/* One step of the job on top of thread t's stack: one atomic action.
 *   DJ: enter and submit CJ, return          CJ: enter, return
 *   OJ: enter, get, help, return (using frame memory)
 *   B1: enter (2 steps), get, help, return          B2: enter (2 steps), get, return */
inline job_step(t) {
    atomic {
        depth[t] > 0;
        j = TOP(t);
        if
        /* ---- [enter] enter_job_frame: the thread's frame memory becomes arena[e&1];
         * if its last fence was for an older epoch, a seq_cst fence (every slot freed
         * before the close that opened this epoch then reads stale) ---- */
        :: IS_FRAME(j) && jpc[j] == 0 -> d_step {
            assert(S1 && jep[j] > last_reset);      /* its frame memory is there */
            jsav[j] = cur[t];
            cur[t] = jep[j] & 1;
#if HANDLES && !defined(MUTATION_M7)
            if
            :: hst != REUSED && fenced[t] < jep[j] -> fence(t); fenced[t] = jep[j]
            :: else -> skip
            fi;
#endif
#if CHILD
            /* DJ, right away: [submit] kiln_jobs_submit inside a running frame job: the
             * parent's epoch, the submitter's own queue, no re-check (the parent
             * completes later) */
            if
            :: j == DJ ->
                assert(MODEL && jst[CJ] == IDLE);
                SUB_INC(t, jep[j] & 1);
                jep[CJ] = jep[j];
                jst[CJ] = QUEUED
            :: else -> skip
            fi;
#endif
            jpc[j] = ((j == OJ && !HANDLES) -> 2 : 1)
        }

        /* ---- handle gets ---- */
        :: AT(OJ, 1) || AT(B1, 2) || AT(B2, 2) -> d_step { get(t, j); jpc[j]++ }

        /* ---- waits that help ---- */
        :: AT(OJ, 2) || AT(B1, 3) -> help(t, j, jpc[j] + 1)

        /* ---- a frame job returns (run_task). Its last frame memory use first: the
         * thread's arena must be its epoch's (switched back after a nested job),
         * and not given back. Its pointers are gone, the thread's frame memory
         * switches back to the enclosing job's, then completed[e&1]++ (release) on
         * the runner's queue ---- */
        :: AT(DJ, 1) || AT(CJ, 1) || AT(OJ, 3) -> d_step {
            assert(S1 && jep[j] > last_reset && cur[t] == (jep[j] & 1));
            jptr[j] = 0;
#ifndef MUTATION_M9
            cur[t] = jsav[j];
#endif
            COMP_INC(t, jep[j] & 1);
            jst[j] = IDLE; jpc[j] = 0; jep[j] = 0; jsav[j] = 0;
            depth[t]--
        }

        /* ---- [background] call_background, entering: depth + 1; a worker entering
         * its outermost background job stamps quiescent_epoch = J (seq_cst) ... ---- */
        :: !IS_FRAME(j) && jpc[j] == 0 -> d_step {
            bgd[t]++;
            if
#if defined(MUTATION_M5)
            :: (t == WRK || t == OUT) && bgd[t] == 1 -> qe[t] = J; jpc[j] = 1
#elif defined(MUTATION_M4)
            :: t == WRK && NOT_IN_BG(t) -> qe[t] = J; jpc[j] = 1
#else
            :: t == WRK && bgd[t] == 1 -> qe[t] = J; jpc[j] = 1
#endif
            :: else -> jpc[j] = 2      /* nested, or on an outside thread: no stamp */
            fi
        }

        /* ... then in_background = true (seq_cst) and a fence */
        :: !IS_FRAME(j) && jpc[j] == 1 -> d_step {
            inbg[t] = 1;
            fence(t);
            jpc[j] = 2
        }

        /* ---- [background] call_background, leaving: depth - 1; leaving the
         * outermost one is the worker's quiescent point (its background pointers are
         * gone) and clears in_background (release) ---- */
        :: AT(B1, 4) || AT(B2, 3) -> d_step {
            bgd[t]--;
            if
            :: bgd[t] == 0 && t == WRK -> wptr = 0
            :: else -> skip
            fi;
            if
#ifdef MUTATION_M4
            :: NOT_IN_BG(t) -> inbg[t] = 0
#else
            :: bgd[t] == 0 -> inbg[t] = 0
#endif
            :: else -> skip
            fi;
            jst[j] = IDLE; jpc[j] = 0;
            depth[t]--
        }
        fi;
        j = 0
    }
}

/* A handle free by thread t at its top level, if the slot is live: the handle is made
 * stale and the reclaim epoch read, F = J (one step: see Atomic steps). The freer
 * uses no pointer to it afterwards. */
inline free_handle(t) {
    d_step { hst == LIVE -> hst = LIMBO; hF = J; seen[t] = 1 }
}

/* ============================ the driver ============================ */

/* The end of frame_quiet's reading of parity p: the changes go back into outst[p]
 * (see Counters). */
inline fold(p) {
    outst[p] = (outst[p] + D(dsub, 0, p) + D(dsub, 1, p) + D(dsub, 2, p) + 3 * CMOD
                - D(dcomp, 0, p) - D(dcomp, 1, p) - D(dcomp, 2, p)) % CMOD;
    SMALL(outst[p]);
    D(dsub, 0, p) = 0; D(dsub, 1, p) = 0; D(dsub, 2, p) = 0;
    D(dcomp, 0, p) = 0; D(dcomp, 1, p) = 0; D(dcomp, 2, p) = 0;
    win[p] = 0
}

active proctype driver() {
    byte f, e, p, sc, ss, safe;
    bit b;

    do
    :: f == NFRAMES -> break
    :: d_step {
           f < NFRAMES ->
#if DRVJOB
           /* [submit] kiln_jobs_submit on the driver at top level: e = J exactly (only the
            * driver writes J), submitted[e&1]++, queued */
           SUB_INC(DRV, J & 1);
           jep[DJ] = J;
           jst[DJ] = QUEUED
#else
           skip
#endif
       };
#if HANDLES
        if
        :: free_handle(DRV)
        :: true -> skip
        fi;
#endif

        /* ---------------- kiln_frame_end ---------------- */
        d_step {
            in_end = 1; e = J; p = e & 1;
#ifndef MUTATION_M3
            J = e + 1   /* [close] frame_close (seq_cst): top-level submissions join e+1 */
#endif
        };

        /* [drain] kiln_jobs_drain_frame: a queued job of epoch e first; when there is none,
         * frame_quiet; while not quiet, a queued frame job of the next frame, or
         * nothing, and again */
        do
        :: job_step(DRV)
#ifdef MUTATION_M8
        /* any queued frame job first (epoch e preferred); quiet only when none is */
        :: atomic {
               if
               :: depth[DRV] == 0 && EQ(DJ, e) && RUNS_DJ(DRV) -> k = DJ
               :: depth[DRV] == 0 && EQ(CJ, e) -> k = CJ
               :: depth[DRV] == 0 && EQ(OJ, e) -> k = OJ
               :: depth[DRV] == 0 && !E_QUEUED(e) && QD(DJ) && RUNS_DJ(DRV) -> k = DJ
               :: depth[DRV] == 0 && !E_QUEUED(e) && QD(CJ) -> k = CJ
               :: depth[DRV] == 0 && !E_QUEUED(e) && QD(OJ) -> k = OJ
               fi;
               push(DRV, k)
           }
#define QUIET_NOW (depth[DRV] == 0 && !FRAME_QUEUED)
#else
        :: atomic {
               if
               :: depth[DRV] == 0 && EQ(DJ, e) && RUNS_DJ(DRV) -> k = DJ
               :: depth[DRV] == 0 && EQ(CJ, e) -> k = CJ
               :: depth[DRV] == 0 && EQ(OJ, e) -> k = OJ
               fi;
               push(DRV, k)
           }
#define QUIET_NOW (depth[DRV] == 0 && \
                   !(EQ(CJ, e) || EQ(OJ, e) || (EQ(DJ, e) && RUNS_DJ(DRV))))
#endif
        /* [drain] frame_quiet: every completed[e&1] first, then every submitted[e&1],
         * one queue at a time (a job's completion comes after its count, so a
         * completion it sees implies a count it sees). Queue 0 is the driver's own: its
         * counts do not change while it reads, so those reads share a step with
         * another. */
#if defined(MUTATION_M6)
        /* global quiet: both parities, completed first */
        :: d_step { QUIET_NOW -> win[0] = 1; win[1] = 1;
                    sc = (2 * CMOD - outst[0] - outst[1]) % CMOD };            /* C0 */
           sc = (sc + D(dcomp, 1, 0) + D(dcomp, 1, 1)) % CMOD;                 /* C1 */
           d_step { sc = (sc + D(dcomp, 2, 0) + D(dcomp, 2, 1)) % CMOD;        /* C2 */
                    ss = (D(dsub, 0, 0) + D(dsub, 0, 1)) % CMOD };             /* S0 */
           ss = (ss + D(dsub, 1, 0) + D(dsub, 1, 1)) % CMOD;                   /* S1 */
           atomic {
               ss = (ss + D(dsub, 2, 0) + D(dsub, 2, 1)) % CMOD;               /* S2 */
               fold(0); fold(1);
#elif defined(MUTATION_M2)
        /* swapped: every submitted count first */
        :: d_step { QUIET_NOW -> win[p] = 1; ss = D(dsub, 0, p) };            /* S0 */
           ss = (ss + D(dsub, 1, p)) % CMOD;                                   /* S1 */
           d_step { ss = (ss + D(dsub, 2, p)) % CMOD;                          /* S2 */
                    sc = (CMOD - outst[p] + D(dcomp, 0, p)) % CMOD };          /* C0 */
           sc = (sc + D(dcomp, 1, p)) % CMOD;                                  /* C1 */
           atomic {
               sc = (sc + D(dcomp, 2, p)) % CMOD;                              /* C2 */
               fold(p);
#else
        :: d_step { QUIET_NOW -> win[p] = 1; sc = (CMOD - outst[p]) % CMOD }; /* C0 */
           sc = (sc + D(dcomp, 1, p)) % CMOD;                                  /* C1 */
           d_step { sc = (sc + D(dcomp, 2, p)) % CMOD;                         /* C2 */
                    ss = D(dsub, 0, p) };                                      /* S0 */
           ss = (ss + D(dsub, 1, p)) % CMOD;                                   /* S1 */
           atomic {
               ss = (ss + D(dsub, 2, p)) % CMOD;                               /* S2 */
               fold(p);
#endif
               if
               :: sc == ss -> sc = 0; ss = 0; goto drained                    /* quiet */
               :: else ->
                   sc = 0; ss = 0;
                   /* not quiet: meanwhile a queued frame job (any epoch), or nothing */
                   if
                   :: QD(DJ) && RUNS_DJ(DRV) -> k = DJ
                   :: QD(CJ) -> k = CJ
                   :: QD(OJ) -> k = OJ
                   :: true -> k = NJ
                   fi;
                   push(DRV, k)
               fi
           }
        od;
drained:
#ifdef MUTATION_M3
        J = e + 1;      /* [close], moved after the drain */
#endif
        /* [reset] reset_job_arenas: every thread's arena[e&1] and the driver's
         * top-level arena are given back */
        atomic {    /* atomic, not d_step: "drained" jumps here */
            assert(S1 && !PENDING(DJ, e) && !PENDING(CJ, e) && !PENDING(OJ, e));
            last_reset = e;
            /* fenced epochs up to e are all "older than any job to come": one value */
            if :: fenced[0] <= e -> fenced[0] = 0 :: else fi;
            if :: fenced[1] <= e -> fenced[1] = 0 :: else fi;
            if :: fenced[2] <= e -> fenced[2] = 0 :: else fi;
#if HANDLES
        };
        /* [reclaim] kiln_handles_frame_end: safe = min(J, the outside thread's
         * quiescent epoch, the worker's if it runs a background job); one read at a
         * time: the worker's in_background, then its quiescent epoch, then the outside
         * thread's */
        b = inbg[WRK];
        d_step {
            if
            :: b && qe[WRK] < J -> safe = qe[WRK]
            :: else -> safe = J
            fi;
            b = 0
        };
        d_step {
            if
            :: qe[OUT] < safe -> safe = qe[OUT]
            :: else -> skip
            fi;
            /* the slots in limbo whose F < safe become reusable */
            if
            :: hst == LIMBO && safe > hF ->
                assert(S2 && NO_POINTERS);
                hst = REUSED;
                /* the story of this slot is over: forget what only it needed */
                seen[0] = 0; seen[1] = 0; seen[2] = 0;
                fenced[0] = 0; fenced[1] = 0; fenced[2] = 0; hF = 0
            :: else -> skip
            fi;
            safe = 0;
#endif
            /* kiln_frame_end returns */
            in_end = 0; e = 0; p = 0; f++
        }
    od
}

/* ============================ a worker ============================ */
active proctype worker() {
end:
    do
    :: job_step(WRK)
    :: atomic {
           if
           :: depth[WRK] == 0 && QD(DJ) && OLDEST(DJ) -> k = DJ
           :: depth[WRK] == 0 && QD(CJ) && OLDEST(CJ) -> k = CJ
           :: depth[WRK] == 0 && QD(OJ) && OLDEST(OJ) -> k = OJ
           :: depth[WRK] == 0 && QD(B1) -> k = B1
           :: depth[WRK] == 0 && QD(B2) -> k = B2
           fi;
           push(WRK, k)
       }
    od
}

/* ================== an outside attached thread ================== */
#define TOPLEVEL (depth[OUT] == 0)
active proctype outside() {
    byte e;

end:
    do
    :: job_step(OUT)

    /* [submit] kiln_jobs_submit at top level on a non-driver thread (also the path of
     * a frame job submitted from a background job):
     *   loop { e = J; submitted[e&1] += 1; if (J == e) break; submitted[e&1] -= 1 }
     * then the job, tagged e, is queued */
    :: d_step { TOPLEVEL && jst[OJ] == IDLE && nOJ < OJ_MAX ->
#if OJ_MAX < 255
                nOJ++;
#endif
                e = J };                                    /* e = J (seq_cst) */
#ifdef MUTATION_M1
        d_step { SUB_INC(OUT, e & 1); jep[OJ] = e; jst[OJ] = COUNTED;
                 assert(S1 && e > last_reset) };
#else
        do
        :: d_step { SUB_INC(OUT, e & 1); jep[OJ] = e; jst[OJ] = TRYING };   /* seq_cst */
           if
           :: d_step { J == e -> jst[OJ] = COUNTED; assert(S1 && e > last_reset) }; break
           :: d_step { J != e -> SUB_DEC(OUT, e & 1); jst[OJ] = IDLE; jep[OJ] = 0 };
              e = J                                          /* again */
           fi
        od;
#endif
        atomic { jst[OJ] = QUEUED; e = 0 }     /* queued */

#if BG
    /* background jobs: not counted */
    :: d_step { TOPLEVEL && jst[B1] == IDLE && nB1 < BG_MAX -> jst[B1] = QUEUED; nB1++ }
    :: d_step { TOPLEVEL && BG > 1 && jst[B2] == IDLE && nB2 < BG_MAX ->
                jst[B2] = QUEUED; nB2++ }
#endif

#if HANDLES
    /* a get at top level: the pointer is held until its next quiescent point */
    :: d_step { TOPLEVEL && !ptr_out && hst == LIVE -> ptr_out = 1 }
    :: d_step { TOPLEVEL && !ptr_out && hst == LIMBO && !seen[OUT] ->
                ptr_out = 1 }                               /* stale view */

    :: d_step { TOPLEVEL && hst == LIVE -> ptr_out = 0; hst = LIMBO; hF = J; seen[OUT] = 1 }

    /* [quiescent] kiln_handles_quiescent: it holds no pointer from before;
     * quiescent_epoch = J (seq_cst load, seq_cst store), then a fence */
    :: d_step { TOPLEVEL -> ptr_out = 0; qe[OUT] = J; fence(OUT) }
#endif

    /* helping while it waits: any queued job */
    :: atomic {
           if
           :: TOPLEVEL && (OUTRUN & 2) && QD(DJ) && RUNS_DJ(OUT) -> k = DJ
           :: TOPLEVEL && (OUTRUN & 2) && QD(CJ) -> k = CJ
           :: TOPLEVEL && (OUTRUN & 2) && QD(OJ) -> k = OJ
           :: TOPLEVEL && (OUTRUN & 1) && QD(B1) -> k = B1
           :: TOPLEVEL && (OUTRUN & 1) && QD(B2) -> k = B2
           fi;
           push(OUT, k)
       }
    od
}

ltl L1 { [] (in_end -> <> !in_end) }
