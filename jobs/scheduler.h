/* jobs/scheduler.h — the job system: one queue per context (two deques by priority and
 * an inbox of pinned jobs), the table thieves scan, the sleep/wake protocol, frame
 * accounting and the statistics of each queue. Knows nothing of allocation policy or
 * of the runtime: a queue carries an opaque owner pointer (the kiln_ctx) that jobs get.
 *
 * Every frame job belongs to one frame epoch, decided when it is submitted (the model
 * of this protocol, checked exhaustively by SPIN: runtime/frame_clock.pml):
 * - inside a frame job, at any nesting (background jobs inside it included), the epoch
 *   of that job: a child is counted before its parent completes;
 * - elsewhere, the frame epoch *sys->frame_epoch of now. The driver reads it exactly
 *   (only it writes it); any other thread counts the job under the epoch it read, with
 *   a seq_cst store, reads the epoch again, and starts over when it moved (model step
 *   "submit"): a count that the driver's drain could miss is always taken back.
 * Each queue counts the frame jobs its owner submitted and completed per epoch parity
 * (owner-written atomics). Only two epochs are ever live, the one whose frame end is
 * draining and the next, since frame end E + 1 begins after frame end E has returned.
 * Frame end E first closes E (the epoch becomes E + 1, model step "close"), then waits
 * until the completed counts of E's parity add up to its submitted counts, reading every
 * completed count before any submitted count (a completion is ordered after its
 * submission, so the sums meet only when no counted job of E is unfinished). Jobs of
 * E + 1 neither hold it nor run in E's frame memory: a job runs in the frame memory of
 * its own epoch's parity, whichever thread runs it (sys->frame_memory). */
#ifndef KILN_JOBS_SCHEDULER_H
#define KILN_JOBS_SCHEDULER_H

#include <pthread.h>

#include "../base/log.h"
#include "../base/membarrier.h"
#include "batch.h"
#include "deque.h"
#include "inbox.h"

#define KILN_MAX_QUEUES 64

/* kiln_desc.idle_spin_us's default: how long an idle worker looks for work before it
 * sleeps, in microseconds. Measured with bench/jobs_bench (J1-J3 at 1, 2 and 4 threads
 * on 2 cores, 5, 20, 50 and 200 us in alternating runs): 50 matched or beat the others
 * (5 lost J1 at 2 threads; 20 and 200 gained nothing), long enough that a batch's next
 * jobs, a fib tree's next children or a parallel_for's next call find the workers
 * awake, short enough that an idle runtime costs next to nothing. A build may set its
 * own (-DKILN_IDLE_SPIN_US_DEFAULT=n). */
#ifndef KILN_IDLE_SPIN_US_DEFAULT
#  define KILN_IDLE_SPIN_US_DEFAULT 50u
#endif

/* kiln_desc.stuck_wait_ms's default: long enough that no healthy wait in a frame loop
 * comes near it (a loading screen's wait on a long job makes progress as the job's
 * children finish), short enough that a hang is named while someone still watches. */
#define KILN_STUCK_WAIT_MS_DEFAULT 2000u

typedef struct kiln_job_queue kiln_job_queue;

/* An optional recorder the scheduler calls around every task it runs (tracing): with
 * KILN_JOB_BEGIN before the task, whose return value comes back as token with
 * KILN_JOB_END after it, on the thread running the task (q's owner). jobs/ knows
 * nothing of what it records; runtime/trace.c installs one. */
typedef enum kiln_job_phase { KILN_JOB_BEGIN, KILN_JOB_END } kiln_job_phase;
typedef uint64_t (*kiln_job_hook)(kiln_job_queue *q, kiln_job_phase phase,
                                  const kiln_task *task, uint64_t token);

/* Called on the running thread when it enters (running true) and leaves the outermost
 * background job, with the queue's owner: the runtime's handle tables keep the slots
 * that job may still read until it returns. Set once before any job runs. */
typedef void (*kiln_background_fn)(void *owner, bool running);

/* The deques of a queue. Background jobs have their own, which only workers take from
 * (and waits on a runtime without workers): frame end and kiln_wait must never start
 * an asset load that would stall the frame. */
enum {
    KILN_DEQUE_NORMAL = 0,
    KILN_DEQUE_HIGH = 1,
    KILN_DEQUE_BACKGROUND = 2,
    KILN_DEQUE_BACKGROUND_HIGH = 3,   /* background jobs of KILN_PRIORITY_HIGH */
    KILN_DEQUES = 4
};

/* A worker takes a normal background job before a normal frame job once in this many
 * looks for work (find_task) made while background jobs are queued: background jobs
 * get a bounded share of the workers while a frame's stream of jobs never runs dry. */
#define KILN_BACKGROUND_TURN 8

enum { KILN_INBOX_FRAME = 0, KILN_INBOX_BACKGROUND = 1 };

/* A frame epoch as a task carries it, in the high half of its flags: its low 31 bits
 * (only the two newest epochs are ever live, so those tell them apart) and the top bit,
 * so that no frame task's tag is 0 (background tasks, and "no epoch"). The tag's parity
 * is the epoch's. */
#define KILN_TASK_EPOCH_SHIFT 32
static inline uint32_t kiln_epoch_tag(uint64_t epoch) {
    return (uint32_t)(epoch & 0x7fffffffu) | 0x80000000u;
}
static inline uint32_t kiln_task_epoch(const kiln_task *task) {
    return (uint32_t)(task->flags >> KILN_TASK_EPOCH_SHIFT);
}

/* The frame memory a thread uses now: its own (outside jobs), or that of a job epoch. */
#define KILN_FRAME_MEMORY_OWN 0u

struct kiln_job_queue {
    kiln_deque          deques[KILN_DEQUES];  /* by KILN_DEQUE_*: frame jobs normal and high,
                                            background jobs normal and high */

    /* Pinned jobs: other threads append under the lock; only the owner runs them. A
     * closed inbox (its context is detaching) refuses new ones. */
    pthread_mutex_t     inbox_lock;
    kiln_inbox          inbox;           /* frame jobs, in order; under inbox_lock */
    kiln_lanes          background;      /* background jobs, by counter; under inbox_lock */
    bool                inbox_closed;    /* under inbox_lock */
    uint64_t            life;            /* under inbox_lock: how many times the context
                                            detached; a pin held across a detach (a batch
                                            waiting for prerequisites) names one life */
    _Atomic size_t      inbox_hint[2];   /* [KILN_INBOX_FRAME]: inbox.count, [KILN_INBOX_BACKGROUND]:
                                            background.count; readable without the lock */

    /* Owner-written counters, read by the frame clock and by stats. submitted and
     * completed are indexed by the parity of the jobs' frame epoch. */
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t submitted[2];  /* frame jobs counted by the
                                            owner (seq_cst outside jobs, model step "submit") */
    _Atomic uint64_t    completed[2];    /* frame jobs finished by the owner (release) */
    _Atomic uint64_t    jobs_run, jobs_stolen, steal_misses, sleep_ns;
    _Atomic uint64_t    range_roots;     /* parallel_for roots outside jobs, counted in
                                            submitted (frame end waits for them) but no
                                            jobs of the stats: never queued nor "run" */
    _Atomic uint64_t    sleeps;          /* futex waits begun after a spin (workers, waits) */
    _Atomic uint64_t    idle_spin_ns;    /* time spent looking for work in vain before
                                            finding some or sleeping (workers, waits) */
    _Atomic uint64_t    waits_stuck;     /* JOB_WAIT_STUCK warnings of this thread's waits */
    _Atomic(const kiln_counter_state *) running_counter;  /* the counter of the job running
                                            now (NULL: none): written by the owner, read
                                            relaxed by a stuck wait's report */
    _Atomic uintptr_t   running_fn;      /* the function of the innermost job running now
                                            (0: none) */
    _Atomic uint64_t    running_flags;   /* KILN_TASK_* and epoch tag of that job (its task's
                                            flags). Both written by the owner (relaxed: plain
                                            moves), read by it and, relaxed, by the crash
                                            report, which may pair one job's with another's */

    /* Owner-only. */
    uint64_t            rng;             /* victim choice */
    uint32_t            job_depth;       /* jobs running on this thread, nested ones included */
    uint32_t            background_depth;  /* of them, background jobs: a worker is in
                                            background (handle reclaim) from its outermost
                                            one's start to its end, whatever runs between */
    uint32_t            running_epoch;   /* the epoch of the innermost frame job running
                                            (0: none runs, its tags are never 0): what a
                                            job's children belong to */
    uint32_t            memory_epoch;    /* the epoch whose frame memory the owner uses now
                                            (KILN_FRAME_MEMORY_OWN: its own, outside jobs) */
    uint32_t            fenced_epoch;    /* the newest epoch this thread fenced for (a
                                            handle get in a job of a newer one fences first) */
    bool                drives_clock;    /* the owner drives the frame clock: it reads the
                                            frame epoch exactly (only it writes it) */
    uint64_t            isolated;        /* the tag of the isolated wait this thread is in
                                            (0: none): its waits take only tasks of that
                                            tag, and what it submits carries it */
    bool                steals;          /* takes other queues' jobs; false only while the
                                            context retires (it runs its own jobs, no more) */
    bool                deep_warned;     /* JOB_WAIT_TOO_DEEP said for this thread */
    uint32_t            looks;           /* find_task calls that may take background jobs
                                            while priority_queued says some jobs are not
                                            normal: every KILN_BACKGROUND_TURN-th looks at
                                            the background ones first */
    uintptr_t           stack_lo;        /* the owner thread's stack: its lowest address
                                            (0: not read yet) and size, for nested waits */
    size_t              stack_size;
    _Atomic(kiln_job_hook) hook;         /* NULL: none (one relaxed load and a branch per
                                            task); stored by kiln_jobs_set_hook, any thread */

    /* Set at registration. */
    void               *owner;           /* the kiln_ctx handed to jobs */
    uint32_t            id;              /* the context's id, for counters and logs */
    uint32_t            slot;            /* index in the system's table */
    _Atomic bool        is_worker;       /* a worker's queue (its background jobs stamp the
                                            handle reclaim); atomic (relaxed): a queue's memory
                                            is reused by a later attach */
};

typedef struct kiln_job_system {
    _Atomic(kiln_job_queue *) queues[KILN_MAX_QUEUES];  /* thieves scan [0, queue_limit) */
    _Atomic uint32_t    queue_limit;
    pthread_mutex_t     table_lock;      /* registration, retirement, frame_quiet */
    uint64_t            retired_submitted[2], retired_completed[2];  /* of retired queues, by
                                            epoch parity; table_lock */
    _Atomic uint64_t    retire_runs;     /* jobs run by retiring queues (a detach's, a
                                            stopping worker's leftovers); relaxed */
    uint32_t            threads;         /* workers + 1: for the default grain */
    uint64_t            idle_spin_ns;    /* kiln_desc.idle_spin_us; read-only */
    uint64_t            stuck_wait_ns;   /* kiln_desc.stuck_wait_ms: a wait without progress
                                            that long logs JOB_WAIT_STUCK; read-only */
    uint32_t            cpus;            /* the CPUs this process may run on, at init; read-only */
    _Atomic uint32_t    registered;      /* queues in the table (workers and attached threads);
                                            written under table_lock, read relaxed by idle
                                            workers: a hint of oversubscription only */
    pthread_mutex_t     batch_lock;      /* waiting */
    kiln_batch         *waiting;         /* batches not yet queued (jobs/graph.c), so that
                                            kiln_jobs_free_waiting finds those never queued */
    kiln_batch         *spare_batches;   /* freed small records for the next call, linked by
                                            next; batch_lock */
    uint32_t            spare_count;     /* of them, at most KILN_BATCH_SPARES; batch_lock */
    uint32_t            tag;             /* 1, 2, ... per system made; read-only */
    uint64_t            counter_tag;     /* tag in a counter's word (jobs/counter.h): whose
                                            jobs it counts; read-only */
    kiln_job_hook       hook;            /* what new queues start with; table_lock */
    kiln_background_fn  on_background;   /* NULL: none; read-only once jobs run */
    /* The frame epoch (frame ends begun + 1; the runtime's, which handle reuse counts
     * by too), bumped by the driver when it closes a frame; and the switch of an owner's
     * frame memory to that of a job epoch (KILN_FRAME_MEMORY_OWN: back to its own),
     * called on the owner's thread when a job of another epoch starts or returns. Both
     * set before any worker starts. */
    const _Atomic uint64_t *frame_epoch;
    void              (*frame_memory)(void *owner, uint32_t epoch);
    /* The driver's drain sleeps (drain_sleep): a thread that completes a frame job then
     * wakes the waiters. Read after every frame job, written twice per sleep: on this
     * read-mostly line, not on the sleepers' one. */
    _Atomic uint32_t    drain_asleep;
    /* Tasks queued on every deque but the NORMAL ones (HIGH frame jobs, background jobs),
     * and of them the HIGH background ones: hints, so that a look for work (find_task)
     * scans the HIGH deques and gives background jobs their turn before normal frame jobs
     * only while there are some, and scans the HIGH background deques only then
     * (relaxed: each is added to before its tasks are pushed and taken from after one is
     * taken, so it only lags; a look that finds no normal job looks everywhere). Written
     * once per such job: on a line of their own, away from drain_asleep, which every
     * frame job reads. */
    _Alignas(KILN_CACHE_LINE) _Atomic int64_t priority_queued;
    _Atomic int64_t     high_background;

    _Alignas(KILN_CACHE_LINE) _Atomic uint32_t sleepers;   /* workers, and threads in a wait
                                            (wait_sleep), asleep or about to be */
    _Atomic uint32_t    waiters_asleep;  /* of them, threads in a wait: wake wakes them all */
    _Atomic uint32_t    wake_epoch;      /* the futex word sleepers wait on */
    _Atomic int         shutdown;
    kiln_log_sink       log;
} kiln_job_system;

/* idle_spin_us: kiln_desc.idle_spin_us, its default filled in. */
KILN_INTERNAL void kiln_job_system_init(kiln_job_system *sys, uint32_t workers, uint32_t idle_spin_us,
                                        kiln_log_sink log);
KILN_INTERNAL void kiln_job_system_fini(kiln_job_system *sys);

/* Sets a queue up and publishes it to thieves. false when the table is full or memory
 * runs out (logged). Any thread (takes table_lock). */
KILN_INTERNAL bool kiln_job_queue_init(kiln_job_system *sys, kiln_job_queue *q, void *owner, uint32_t id,
                                       bool is_worker);
/* Owner: closes its inbox (later pins are refused), runs what is left on its deques
 * and inbox, then withdraws the queue from the table. The memory must stay valid until the system is gone: a thief may still be
 * looking at it (its deques read empty). */
KILN_INTERNAL void kiln_job_queue_retire(kiln_job_system *sys, kiln_job_queue *q);
/* Frees the rings and the inbox (system shut down, no thread left). */
KILN_INTERNAL void kiln_job_queue_fini(kiln_job_queue *q);

/* Owner of q: queues count tasks by value, on q's deque or on pinned's inbox. Frame
 * tasks were counted by the caller under their epoch (kiln_jobs_count_frame), which is
 * in their flags. false, with nothing queued, when the pinned target's inbox is closed
 * (it is detaching): the caller then takes the count back (kiln_jobs_uncount). */
KILN_INTERNAL bool kiln_jobs_submit(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks,
                                    size_t count, int priority, kiln_job_queue *pinned);

/* Any thread: the life of target that a pin taken now names (its queue's memory may
 * serve a later context after it detaches, which that pin must not reach); a life
 * that never matches when target is detaching already. */
KILN_INTERNAL uint64_t kiln_jobs_pin_life(kiln_job_queue *target);

/* Lists a batch among the system's waiting ones (before it is registered on any
 * counter), and takes it off the list and frees its record (its tasks are queued, or
 * dropped). Any thread. */
KILN_INTERNAL void kiln_batch_list(kiln_job_system *sys, kiln_batch *batch);
KILN_INTERNAL void kiln_batch_free(kiln_job_system *sys, kiln_batch *batch);

/* A spare record of the small size (jobs/batch.h), or NULL when none waits. Any thread
 * (takes batch_lock). */
KILN_INTERNAL kiln_batch *kiln_batch_spare(kiln_job_system *sys);

/* Once no thread runs jobs (kiln_destroy): frees the batches that never became
 * runnable (a cycle, or a prerequisite that never finished), without running them or
 * touching their counters, and logs how many (JOB_STILL_WAITING). */
KILN_INTERNAL void kiln_jobs_free_waiting(kiln_job_system *sys);

/* Owner of q: queues a batch whose prerequisites have all finished (its tasks are
 * counted already, on the submitter's queue) on q, or on its pinned target's inbox, and
 * frees its record. A pinned target that is detaching, or no longer in pin_life
 * (kiln_jobs_pin_life), refuses them: they count as completed on q, finish on their
 * counter, and are logged (JOB_PIN_DETACHING, naming the submitter and the target). */
KILN_INTERNAL void kiln_jobs_queue_batch(kiln_job_system *sys, kiln_job_queue *q, kiln_batch *batch);

/* The isolation a task submitted now by q's owner carries: the tag of the isolated
 * wait it is in, else its counter's address (an isolated wait on that counter runs it),
 * 0 without either. */
static inline uint64_t kiln_jobs_isolation(const kiln_job_queue *q, const kiln_counter_state *counter) {
    return q->isolated ? q->isolated : (uint64_t)(uintptr_t)counter;
}

/* Owner of q: finds one task (pinned, high, stolen high, normal, stolen normal, then,
 * with background, background ones) and runs it. false when none was found. */
KILN_INTERNAL bool kiln_jobs_run_one(kiln_job_system *sys, kiln_job_queue *q, bool background);

/* Owner of q: runs tasks until the counter reads zero. isolate: only tasks of the
 * counter's isolation (its own tasks, and what they submit while this wait runs them)
 * and tasks pinned to q; inside an isolated wait every wait keeps the outer one's. */
KILN_INTERNAL void kiln_jobs_wait(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                                  bool isolate);

/* Owner of q: runs a range task (KILN_TASK_RANGE) as a job on q, its splitting loop in
 * place (parallel_for's root), and returns when every piece of it is done (the pieces
 * count on a counter of their own; the task's counter is not touched). Not submitted:
 * neither counted as run or completed nor traced. */
KILN_INTERNAL void kiln_jobs_run_range(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task);

/* The driver (owner of q): runs jobs until every frame job of the closed epoch has
 * finished, on whatever thread; jobs of the next epoch only when they are pinned to q
 * or were submitted by a job that this drain runs, or with KILN_NO_WORKERS, where
 * nobody else runs them. Model step "drain". */
KILN_INTERNAL void kiln_jobs_drain_frame(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch);

/* The frame epoch tag (kiln_epoch_tag) a job submitted now by q's owner belongs to, with count frame jobs
 * counted under it (model step "submit"). Owner of q; the caller then queues the jobs,
 * or takes the count back with kiln_jobs_uncount. */
KILN_INTERNAL uint32_t kiln_jobs_count_frame_outside(kiln_job_system *sys, kiln_job_queue *q,
                                                    uint64_t count);
static inline void kiln_jobs_count_submitted(kiln_job_queue *q, uint32_t epoch, uint64_t count);
/* Inline: a child (inside a frame job) and the driver's jobs, the common cases, cost a
 * load and a store; other threads outside jobs take kiln_jobs_count_frame_outside. */
static inline uint32_t kiln_jobs_count_frame(kiln_job_system *sys, kiln_job_queue *q, uint64_t count) {
    uint32_t epoch;
    if (q->running_epoch != 0) {
        /* A child: counted before its parent completes, so no drain misses it. */
        epoch = q->running_epoch;
    } else if (q->drives_clock) {
        /* The driver reads its own store: it is the epoch's only writer. */
        epoch = kiln_epoch_tag(kiln_load_relaxed(sys->frame_epoch));
    } else {
        return kiln_jobs_count_frame_outside(sys, q, count);
    }
    kiln_jobs_count_submitted(q, epoch, count);
    return epoch;
}
static inline void kiln_jobs_uncount(kiln_job_queue *q, uint32_t epoch, uint64_t count) {
    _Atomic uint64_t *submitted = &q->submitted[epoch & 1];
    kiln_store_relaxed(submitted, kiln_load_relaxed(submitted) - count);
}

/* Owner of q: count frame jobs of epoch (a tag) submitted, relaxed: children of a
 * running job, or the driver's (kiln_jobs_count_frame says why no more is needed). */
static inline void kiln_jobs_count_submitted(kiln_job_queue *q, uint32_t epoch, uint64_t count) {
    _Atomic uint64_t *submitted = &q->submitted[epoch & 1];
    kiln_store_relaxed(submitted, kiln_load_relaxed(submitted) + count);
}

/* Wakes every thread asleep in a wait or a drain (jobs/scheduler.c). */
KILN_INTERNAL void kiln_jobs_wake_waiters(void);

/* Owner of q: count frame jobs of epoch (a tag) completed. release: a frame end that
 * reads the count sees everything those jobs wrote. Then, if the driver's drain sleeps,
 * wake it: the count and that load are the light side of an asymmetric fence, whose
 * heavy side is the drain's membarrier (drain_sleep), so a job pays a load of a
 * read-mostly word and a compiler barrier, no fence. */
static inline void kiln_jobs_count_completed(kiln_job_system *sys, kiln_job_queue *q, uint32_t epoch,
                                             uint64_t count) {
    _Atomic uint64_t *completed = &q->completed[epoch & 1];
    kiln_store_release(completed, kiln_load_relaxed(completed) + count);   /* [count] (wait_sleep.pml) */
    kiln_membarrier_light();
    if (kiln_unlikely(kiln_load_relaxed(&sys->drain_asleep))) kiln_jobs_wake_waiters();   /* [dload] */
}

/* Writes a frame epoch tag into the flags of count tasks. */
static inline void kiln_tasks_set_epoch(kiln_task *tasks, size_t count, uint32_t epoch) {
    for (size_t i = 0; i < count; i++)
        tasks[i].flags = (tasks[i].flags & UINT32_MAX) | (uint64_t)epoch << KILN_TASK_EPOCH_SHIFT;
}

/* Frame jobs submitted by q's owner, both parities, less parallel_for's roots (stats:
 * what kiln_run and kiln_run_ex queued, as jobs_run counts what ran). Any thread. */
static inline uint64_t kiln_jobs_submitted(kiln_job_queue *q) {
    return kiln_load_relaxed(&q->submitted[0]) + kiln_load_relaxed(&q->submitted[1]) -
           kiln_load_relaxed(&q->range_roots);
}

/* A worker's life: find and run jobs; when there are none, keep looking for
 * sys->idle_spin_ns (pausing between looks, or giving the core away when the threads
 * outnumber the CPUs or the looks keep failing), then sleep until woken; return at
 * shutdown. */
KILN_INTERNAL void kiln_jobs_worker_loop(kiln_job_system *sys, kiln_job_queue *q);

/* Installs hook (NULL: none) on every registered queue and on those registered later.
 * A task already running when the hook changes gets no END call if it had no BEGIN,
 * and the END call of the old hook if it had one. Any thread (takes table_lock). */
KILN_INTERNAL void kiln_jobs_set_hook(kiln_job_system *sys, kiln_job_hook hook);

/* Logs JOB_WAIT_STUCK for the wait of q's owner on counter, which has made no progress
 * for waited_ns: how many jobs the counter still counts and where they are (queued on
 * which context, pinned, running, held by prerequisites). Owner of q; cold
 * (jobs/wait_stuck.c). */
KILN_INTERNAL void kiln_jobs_report_stuck(kiln_job_system *sys, kiln_job_queue *q,
                                          const kiln_counter_state *counter, uint64_t waited_ns);

/* JOB_WAIT_STUCK for the drain of frame epoch by q's owner (kiln_frame_end), which has
 * made no progress for waited_ns with left jobs of it not done: where they are. Owner of
 * q; cold (jobs/wait_stuck.c). */
KILN_INTERNAL void kiln_jobs_report_stuck_frame(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch,
                                                uint64_t left, uint64_t waited_ns);

/* Wakes every sleeper and makes worker loops return. */
KILN_INTERNAL void kiln_jobs_shutdown(kiln_job_system *sys);

/* Owner of q, the thread whose decrement made the counter's count zero, leaving its word
 * at left with a flag (KILN_COUNTER_WAITERS, KILN_COUNTER_SLEEPERS): for waiting batches,
 * takes the list, queues (on q) each batch whose last prerequisite it was, then clears
 * the flag unless the counter was reused meanwhile; for sleepers, wakes the threads
 * asleep in a wait (without touching the counter again). */
KILN_INTERNAL void kiln_counter_finished(kiln_job_system *sys, kiln_job_queue *q,
                                         kiln_counter_state *counter, uint64_t left);

/* Owner of q: n jobs (or registrations) counted on counter are done. The decrement is
 * the last touch of the counter unless it makes the count zero with a flag set: the
 * flag's work follows (kiln_counter_finished). acq_rel: the release publishes the jobs'
 * writes to a waiter reading zero and to the drainer; the acquire lets a drainer see
 * every registration that released before. */
static inline void kiln_counter_finish(kiln_job_system *sys, kiln_job_queue *q,
                                       kiln_counter_state *counter, uint64_t n) {
    uint64_t before = kiln_sub_acq_rel(&counter->pending, n);
    if (kiln_unlikely(KILN_COUNTER_COUNT(before) == n &&
                      (before & (KILN_COUNTER_WAITERS | KILN_COUNTER_SLEEPERS))))
        kiln_counter_finished(sys, q, counter, before - n);
}

#endif /* KILN_JOBS_SCHEDULER_H */
