/* runtime/frame_clock.pml — a SPIN model of the frame clock: the frame epoch J, the
 * per-queue submitted/completed counters indexed by epoch parity, frame end's
 * close/drain/reset/reclaim, background nesting, quiescent points and the fence that
 * a job's first handle get may need. Checked by scripts/check-frame-model.sh.
 *
 * Each step is commented with the C function it mirrors, so the C code can name the
 * model step it implements (kiln_jobs_submit, frame_close/kiln_frame_end,
 * kiln_jobs_drain_frame/frame_quiet, reset_job_arenas, kiln_handles_frame_end,
 * call_background, kiln_handles_quiescent, enter_job_frame).
 *
 * Properties (the runner names them):
 *   S1  frame memory is never given back while a job of its frame runs or is pending,
 *       and no job uses the frame memory of a frame that has been reset: checked at
 *       reset_job_arenas (no job of epoch e counted, queued or running) and at every
 *       job start and frame-memory use (its epoch is newer than the last reset one,
 *       and the thread's current arena is its epoch's parity).
 *   S2  a handle slot is not reused while any thread holds a pointer it got from the
 *       slot: a job until it returns, the outside thread until kiln_handles_quiescent,
 *       a worker's background job until that job returns. Checked where
 *       kiln_handles_frame_end makes the slot reusable.
 *   L1  (ltl L1, with weak fairness) every kiln_frame_end that starts returns, while
 *       the outside thread submits frame jobs for ever and the worker runs them.
 * Assertions are tagged with the property (S1 && ..., S2 && ...) so that a violation
 * names it; MODEL && ... marks the model's own consistency checks.
 *
 * Memory model. The interleaving is sequentially consistent, except for one thing the
 * handle protocol depends on: a thread may read a freed handle slot as still live
 * (a stale view) until it executes a seq_cst fence that comes after the free. seen[t]
 * is 1 once thread t fenced after the free; a get on a thread with seen[t] == 0 may
 * return a pointer to a freed slot. This is the C11 rule for seq_cst fences (a load
 * after a seq_cst fence sees every seq_cst store before the fence in the total order)
 * and it is what enter_job_frame's fence is for. Counter reads are one queue at a time
 * (non-atomic sums), as frame_quiet does.
 *
 * Bounds (why the state space is small and still covers the races):
 *   - NFRAMES = 3 frame ends: epochs 1..4, so parity 1 is reused (epoch 1 and 3) and a
 *     submitter that read J two frames ago lands on the parity being drained.
 *   - three threads: the DRIVER, one WORKER, one OUTSIDE attached thread.
 *   - five job slots, each with a fixed body; a slot is submitted again once its job
 *     returned, so the outside thread can submit for ever (L1):
 *       DJ  the driver's frame job, one per frame, top level; submits the child CJ;
 *       CJ  DJ's child (child submission: the parent's epoch, no re-check);
 *       OJ  the outside thread's top-level frame job (the re-check loop); gets a
 *           handle, may help (run one queued job nested), then uses frame memory;
 *       B1  a background job (outside submits it): gets a handle, may help, so a worker
 *           can run B1 -> OJ -> B2 (nesting depth 3, MAXD);
 *       B2  a background job with an empty body (the inner one of that chain).
 *     Each job helps at most once (a wait that runs one other job): the frame's own
 *     jobs always terminate, which is L1's premise.
 *   - counters are kept modulo M = 8. During the drain of epoch e at most DJ, CJ, OJ
 *     and one undone (transient) submission are outstanding on parity e, so a
 *     difference of 8 is impossible in the correct protocol and equality mod 8 is
 *     equality.
 *   - one handle slot, one generation: live -> freed (stale) -> limbo with its
 *     reclaim epoch F -> reused. Freed by the driver at top level (J = the open
 *     frame) or by the outside thread at any time (also while a frame is closing).
 *
 * Mutations (each is #ifdef MUTATION_Mx; the runner expects each to be caught):
 *   M1 the outside submitter skips the re-check of J                      -> S1
 *   M2 frame_quiet reads the submitted counts before the completed ones   -> S1
 *   M3 kiln_frame_end closes (J = e+1) after the drain, not before        -> L1 (and S1)
 *   M4 background nesting not tracked: an inner background job's end
 *      clears in_background                                               -> S2
 *   M5 an outside thread running a background job stamps its quiescent
 *      epoch                                                              -> S2
 *   M6 the drain waits for all parities (global quiet), not e's          -> L1
 *   M7 enter_job_frame never fences                                      -> S2
 *   M8 the drain runs any queued frame job before it looks at quiet (so a
 *      stream of next-frame jobs keeps it from ever checking)             -> L1
 *   M9 a nested frame job's return does not switch the arena back         -> S1
 */

#ifndef NFRAMES
#define NFRAMES 3
#endif
#ifndef OJ_MAX
#define OJ_MAX 2           /* top-level submissions by the outside thread (255: for ever) */
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
#define M       8          /* counters modulo M (see Bounds) */

/* threads */
#define DRV  0
#define WRK  1
#define OUT  2
#define NT   3
#define MAXD 3             /* nesting depth of jobs on one thread */

/* job slots */
#define DJ 0
#define CJ 1
#define OJ 2
#define B1 3
#define B2 4
#define NJ 5
#define IS_FRAME(j) ((j) <= OJ)

/* job states: TRYING is counted by a top-level submitter that has not re-checked J
 * yet (it may still undo); COUNTED is a submission that stands, not yet queued. */
#define IDLE    0
#define TRYING  1
#define COUNTED 2
#define QUEUED  3
#define RUNNING 4

/* the handle slot */
#define LIVE   0
#define STALE  1           /* freed, reclaim epoch not read yet */
#define LIMBO  2           /* freed, F recorded: reusable once safe > F */
#define REUSED 3

#define NOARENA 2          /* cur[t] outside any frame job */

/* assertion tags (hidden: not part of the state) */
hidden byte S1 = 1;
hidden byte S2 = 1;
hidden byte MODEL = 1;
hidden byte j, k;          /* scratch, only inside atomic steps */

byte J = 1;                /* the frame epoch: the frame a top-level submission joins */
byte submitted[2 * NT];    /* per queue, per parity; owner-written, read by the driver */
byte completed[2 * NT];
#define SUB(t, p)  submitted[2 * (t) + (p)]
#define COMP(t, p) completed[2 * (t) + (p)]
#define INC(x) x = ((x) + 1) % M
#define DEC(x) x = ((x) + M - 1) % M

byte jst[NJ];              /* job state */
byte jep[NJ];              /* job epoch (frame jobs) */
byte jpc[NJ];              /* step of the job's body */
bit  jptr[NJ];             /* the job holds a handle pointer */
byte jsav[NJ];             /* the arena to switch back to when the job returns */

byte depth[NT];            /* jobs on the thread's stack */
byte stk[MAXD * NT];
#define TOP(t) stk[MAXD * (t) + depth[t] - 1]
byte bgd[NT];              /* call_background nesting depth */
bit  inbg[NT];             /* in_background (read for workers only) */
byte qe[NT] = 1;           /* quiescent epoch; attach stamps J = 1 */
byte fenced[NT];           /* the epoch of the thread's last enter_job_frame fence */
bit  seen[NT];             /* the thread fenced after the handle's free (see Memory model) */
byte cur[NT] = NOARENA;    /* parity of the arena the thread allocates frame memory from */

byte hst = LIVE;           /* the handle slot */
byte hF;                   /* its reclaim epoch F */
bit  ptr_out;              /* the outside thread holds a pointer at its top level */

byte nOJ, nB1, nB2;        /* submissions so far (bounded runs) */
byte last_reset;           /* the last epoch whose frame memory was given back */
bit  in_end;               /* kiln_frame_end is running (L1) */

#define FRAME_QUEUED(x) (jst[x] == QUEUED && IS_FRAME(x))
#define EQ(x, e) (jst[x] == QUEUED && jep[x] == (e))
#define E_QUEUED(e) (EQ(DJ, e) || EQ(CJ, e) || EQ(OJ, e))
#define ANY_FRAME_QUEUED (FRAME_QUEUED(DJ) || FRAME_QUEUED(CJ) || FRAME_QUEUED(OJ))
#define NO_POINTERS (!ptr_out && !jptr[DJ] && !jptr[CJ] && !jptr[OJ] && !jptr[B1] && !jptr[B2])
#define PENDING(x, e) (jst[x] >= COUNTED && jep[x] == (e))

/* A thread starts running job x (it was QUEUED). */
inline push(t, x) {
    stk[MAXD * t + depth[t]] = x;
    depth[t]++;
    jst[x] = RUNNING;
    jpc[x] = 0
}

/* A handle get by job x on thread t (a get returns a pointer only if the slot reads
 * live: it is, or the thread's view of it is stale). */
inline get(t, x) {
    if
    :: hst == LIVE -> jptr[x] = 1
    :: (hst == STALE || hst == LIMBO) && !seen[t] -> jptr[x] = 1   /* stale view */
    :: else -> skip
    fi
}

/* A wait inside job x: runs at most one queued job, nested (the driver: frame jobs
 * only, as kiln_wait does with workers around), then goes on at step nxt. */
inline help(t, x, nxt) {
    jpc[x] = nxt;
    if
    :: depth[t] < MAXD && jst[DJ] == QUEUED -> push(t, DJ)
    :: depth[t] < MAXD && jst[CJ] == QUEUED -> push(t, CJ)
    :: depth[t] < MAXD && jst[OJ] == QUEUED -> push(t, OJ)
    :: t != DRV && depth[t] < MAXD && jst[B1] == QUEUED -> push(t, B1)
    :: t != DRV && depth[t] < MAXD && jst[B2] == QUEUED -> push(t, B2)
    :: true -> skip                                /* nothing waited for, or nothing to run */
    fi
}

/* One step of the job on top of thread t's stack; each step is one atomic action.
 * Bodies:  DJ: enter, submit CJ, use frame memory, return
 *          CJ: enter, use frame memory, return
 *          OJ: enter, get, help, use frame memory, return
 *          B1: enter (2 steps), get, help, return
 *          B2: enter (2 steps), return */
inline job_step(t) {
    atomic {
        j = TOP(t);
        if
        /* ---- enter_job_frame: arena switch, and the fence if this thread last
         * fenced for an older epoch (a slot freed before the close is then seen
         * stale by every get of this job) ---- */
        :: IS_FRAME(j) && jpc[j] == 0 ->
            assert(S1 && jep[j] > last_reset);
            jsav[j] = cur[t];
            cur[t] = jep[j] & 1;
#ifndef MUTATION_M7
            if
            :: fenced[t] < jep[j] -> seen[t] = (hst != LIVE); fenced[t] = jep[j]
            :: else -> skip
            fi;
#endif
            jpc[j] = 1

        /* ---- kiln_jobs_submit inside a running frame job: the parent's epoch, the
         * submitter's own queue, no re-check (the parent completes later) ---- */
        :: j == DJ && jpc[j] == 1 ->
            assert(MODEL && jst[CJ] == IDLE);
            INC(SUB(t, jep[j] & 1));
            jep[CJ] = jep[j];
            jst[CJ] = QUEUED;
            jpc[j] = 2

        /* ---- a handle get inside a job ---- */
        :: (j == OJ && jpc[j] == 1) || (j == B1 && jpc[j] == 2) ->
            get(t, j);
            jpc[j]++

        /* ---- a wait that helps (runs one queued job nested) ---- */
        :: j == OJ && jpc[j] == 2 -> help(t, OJ, 3)
        :: j == B1 && jpc[j] == 3 -> help(t, B1, 4)

        /* ---- frame memory use: the job's epoch's arena, never one given back ---- */
        :: (j == DJ && jpc[j] == 2) || (j == CJ && jpc[j] == 1) || (j == OJ && jpc[j] == 3) ->
            assert(S1 && jep[j] > last_reset && cur[t] == (jep[j] & 1));
            jpc[j]++

        /* ---- a frame job returns: its pointers go, the arena switches back, then
         * completed[e&1]++ (release) on the runner's queue (run_task) ---- */
        :: (j == DJ && jpc[j] == 3) || (j == CJ && jpc[j] == 2) || (j == OJ && jpc[j] == 4) ->
            jptr[j] = 0;
#ifndef MUTATION_M9
            cur[t] = jsav[j];
#endif
            INC(COMP(t, jep[j] & 1));
            jst[j] = IDLE; jpc[j] = 0; jep[j] = 0; jsav[j] = 0;
            depth[t]--

        /* ---- call_background, entry: the outermost background job of a worker
         * stamps quiescent_epoch = J (seq_cst) ... ---- */
        :: !IS_FRAME(j) && jpc[j] == 0 ->
            bgd[t]++;
            if
#ifdef MUTATION_M5
            :: (t == WRK || t == OUT) && bgd[t] == 1 -> qe[t] = J; jpc[j] = 1
#else
            :: t == WRK && bgd[t] == 1 -> qe[t] = J; jpc[j] = 1
#endif
            :: else -> jpc[j] = 2     /* nested, or an outside thread: no stamp */
            fi

        /* ... then sets in_background (seq_cst) and fences */
        :: !IS_FRAME(j) && jpc[j] == 1 ->
            inbg[t] = 1;
            seen[t] = (hst != LIVE);
            jpc[j] = 2

        :: j == B1 && jpc[j] == 2 -> get(t, B1); jpc[j] = 3

        /* ---- call_background, exit: leaving the outermost one clears in_background
         * (release); the job's pointers are gone ---- */
        :: (j == B1 && jpc[j] == 4) || (j == B2 && jpc[j] == 2) ->
            jptr[j] = 0;
            bgd[t]--;
            if
#ifdef MUTATION_M4
            :: true -> inbg[t] = 0        /* any background job's end clears it */
#else
            :: bgd[t] == 0 -> inbg[t] = 0
#endif
            :: else -> skip
            fi;
            jst[j] = IDLE; jpc[j] = 0;
            depth[t]--
        fi;
        j = 0
    }
}

/* A handle free by thread t at its top level: the slot is made stale, then the
 * reclaim epoch is read (F = J); the freer holds no pointer to it afterwards. */
inline free_handle(t) {
    atomic { hst == LIVE -> hst = STALE; seen[t] = 1 };
    atomic { hF = J; hst = LIMBO }
}

/* ======================= the driver: drives the clock ======================= */
active proctype driver() {
    byte f, e, p, sc, ss, safe;
    bit b;

    do
    :: f == NFRAMES -> break
    :: else ->
        /* kiln_jobs_submit on the driver at top level: e = J exactly (only the driver
         * writes J); submitted[e&1]++ and the job is queued */
        atomic {
            INC(SUB(DRV, J & 1));
            jep[DJ] = J;
            jst[DJ] = QUEUED
        };
#if HANDLES
        if
        :: hst == LIVE -> free_handle(DRV)
        :: true -> skip
        fi;
#endif

        /* ---- kiln_frame_end ---- */
        atomic { in_end = 1; e = J; p = e & 1 };
#ifndef MUTATION_M3
        J = e + 1;                     /* frame_close: seq_cst; later top-level
                                          submissions join e+1 */
#endif
        /* kiln_jobs_drain_frame: run jobs (epoch e first) until frame_quiet */
        do
        :: depth[DRV] > 0 -> job_step(DRV)
#ifdef MUTATION_M8
        :: depth[DRV] == 0 && ANY_FRAME_QUEUED ->
            atomic {
                if
                :: EQ(DJ, e) -> push(DRV, DJ)
                :: EQ(CJ, e) -> push(DRV, CJ)
                :: EQ(OJ, e) -> push(DRV, OJ)
                :: !E_QUEUED(e) && FRAME_QUEUED(OJ) -> push(DRV, OJ)
                :: !E_QUEUED(e) && FRAME_QUEUED(DJ) -> push(DRV, DJ)
                :: !E_QUEUED(e) && FRAME_QUEUED(CJ) -> push(DRV, CJ)
                fi
            }
        :: depth[DRV] == 0 && !ANY_FRAME_QUEUED ->
#else
        :: depth[DRV] == 0 && E_QUEUED(e) ->
            atomic {
                if
                :: EQ(DJ, e) -> push(DRV, DJ)
                :: EQ(CJ, e) -> push(DRV, CJ)
                :: EQ(OJ, e) -> push(DRV, OJ)
                fi
            }
        :: depth[DRV] == 0 && !E_QUEUED(e) ->
#endif
            /* frame_quiet, one queue at a time: every completed[e&1] first, then every
             * submitted[e&1] (a job's completion is ordered after its count) */
#if defined(MUTATION_M6)
            /* global quiet: both parities */
            sc = COMP(0, 0); sc = (sc + COMP(1, 0)) % M; sc = (sc + COMP(2, 0)) % M;
            sc = (sc + COMP(0, 1)) % M; sc = (sc + COMP(1, 1)) % M; sc = (sc + COMP(2, 1)) % M;
            ss = SUB(0, 0); ss = (ss + SUB(1, 0)) % M; ss = (ss + SUB(2, 0)) % M;
            ss = (ss + SUB(0, 1)) % M; ss = (ss + SUB(1, 1)) % M; ss = (ss + SUB(2, 1)) % M;
#elif defined(MUTATION_M2)
            /* swapped: submitted first */
            ss = SUB(0, p); ss = (ss + SUB(1, p)) % M; ss = (ss + SUB(2, p)) % M;
            sc = COMP(0, p); sc = (sc + COMP(1, p)) % M; sc = (sc + COMP(2, p)) % M;
#else
            sc = COMP(0, p); sc = (sc + COMP(1, p)) % M; sc = (sc + COMP(2, p)) % M;
            ss = SUB(0, p); ss = (ss + SUB(1, p)) % M; ss = (ss + SUB(2, p)) % M;
#endif
            if
            :: sc == ss -> sc = 0; ss = 0; break
            :: else ->
                sc = 0; ss = 0;
                /* not quiet: it may run a queued frame job of the next frame meanwhile */
                atomic {
                    if
                    :: FRAME_QUEUED(DJ) -> push(DRV, DJ)
                    :: FRAME_QUEUED(CJ) -> push(DRV, CJ)
                    :: FRAME_QUEUED(OJ) -> push(DRV, OJ)
                    :: true -> skip
                    fi
                }
            fi
        od;
#ifdef MUTATION_M3
        J = e + 1;                     /* the close moved after the drain */
#endif
        /* reset_job_arenas: every thread's arena[e&1], and the driver's top-level
         * arena, are given back */
        atomic {
            assert(S1 && !PENDING(DJ, e) && !PENDING(CJ, e) && !PENDING(OJ, e));
            last_reset = e
        };
        /* kiln_handles_frame_end: safe = min(J, the quiescent epoch of the outside
         * thread, that of the worker if it runs a background job); the reclaim epoch
         * is J. Reads one at a time: in_background, then the quiescent epoch. */
        b = inbg[WRK];
        if
        :: b && qe[WRK] < J -> safe = qe[WRK]
        :: else -> safe = J
        fi;
        b = 0;
        if
        :: qe[OUT] < safe -> safe = qe[OUT]
        :: else -> skip
        fi;
        atomic {
            if
            :: hst == LIMBO && safe > hF ->
                assert(S2 && NO_POINTERS);
                hst = REUSED
            :: else -> skip
            fi;
            safe = 0
        };
        atomic { in_end = 0; e = 0; p = 0; f++ }
    od
}

/* ======================= a worker: runs any queued job ======================= */
active proctype worker() {
end:
    do
    :: depth[WRK] > 0 -> job_step(WRK)
    :: depth[WRK] == 0 ->
        atomic {
            if
            :: jst[DJ] == QUEUED -> push(WRK, DJ)
            :: jst[CJ] == QUEUED -> push(WRK, CJ)
            :: jst[OJ] == QUEUED -> push(WRK, OJ)
            :: jst[B1] == QUEUED -> push(WRK, B1)
            :: jst[B2] == QUEUED -> push(WRK, B2)
            fi
        }
    od
}

/* ============ an outside attached thread: submits, helps, holds pointers ============ */
active proctype outside() {
    byte e;

    do
    :: depth[OUT] > 0 -> job_step(OUT)
    :: depth[OUT] == 0 ->
        if
        /* kiln_jobs_submit at top level on a non-driver thread: loop { e = J;
         * submitted[e&1]++; if (J == e) break; undo } — then the job is queued */
        :: jst[OJ] == IDLE && nOJ < OJ_MAX ->
#if OJ_MAX < 255
            nOJ++;
#endif
retry:
            e = J;                                     /* seq_cst load */
#ifdef MUTATION_M1
            atomic { INC(SUB(OUT, e & 1)); jep[OJ] = e; jst[OJ] = COUNTED;
                     assert(S1 && e > last_reset) };
#else
            atomic { INC(SUB(OUT, e & 1)); jep[OJ] = e; jst[OJ] = TRYING };   /* seq_cst store */
            if
            :: atomic { J == e -> jst[OJ] = COUNTED; assert(S1 && e > last_reset) }
            :: atomic { J != e -> DEC(SUB(OUT, e & 1)); jst[OJ] = IDLE; jep[OJ] = 0 };
               goto retry
            fi;
#endif
            atomic { jst[OJ] = QUEUED; e = 0 }          /* pushed */

        /* background jobs: not counted */
#if BG
        :: jst[B1] == IDLE && nB1 < BG_MAX -> atomic { jst[B1] = QUEUED; nB1++ }
        :: jst[B2] == IDLE && nB2 < BG_MAX -> atomic { jst[B2] = QUEUED; nB2++ }
#endif

#if HANDLES
        /* a handle get at top level: held until its next quiescent point */
        :: !ptr_out && hst == LIVE -> ptr_out = 1
        :: !ptr_out && (hst == STALE || hst == LIMBO) && !seen[OUT] -> ptr_out = 1

        :: hst == LIVE -> free_handle(OUT)

        /* kiln_handles_quiescent: it drops its pointers, quiescent_epoch = J
         * (seq_cst load, seq_cst store), then a fence */
        :: atomic { ptr_out = 0; e = J };
           atomic { qe[OUT] = e; seen[OUT] = (hst != LIVE); e = 0 }
#endif

        /* helping while it waits: any queued job */
        :: atomic {
               if
               :: jst[DJ] == QUEUED -> push(OUT, DJ)
               :: jst[CJ] == QUEUED -> push(OUT, CJ)
               :: jst[OJ] == QUEUED -> push(OUT, OJ)
               :: jst[B1] == QUEUED -> push(OUT, B1)
               :: jst[B2] == QUEUED -> push(OUT, B2)
               fi
           }
        fi
    od
}

/* L1: every frame end that starts returns (with pan -a -f: weak fairness). */
ltl L1 { [] (in_end -> <> !in_end) }
