/* kiln/jobs.h — the job scheduler: work-stealing workers tied to the frame clock.
 *
 * What it does:
 * - kiln_create starts desc.worker_count workers, each with its own context (frame
 *   arena, pool caches, job deques).
 * - kiln_run pushes jobs onto the calling context's deque; idle workers steal them.
 * - A job runs as fn(ctx, arg), ctx the context of the thread running it:
 *   kiln_frame_alloc(ctx, ...) inside a job allocates frame memory of the job's frame.
 * - kiln_wait runs jobs (its own and stolen ones) until the counter reaches zero. With
 *   nothing it may run it spins for kiln_desc.idle_spin_us, then sleeps until the
 *   counter reaches zero or a job it may run is queued: a thread waiting on a long job
 *   does not burn a core. kiln_frame_end's wait for its frame's jobs does the same,
 *   woken by the frame's last job, and says so when it is stuck (JOB_WAIT_STUCK). A wait that makes no progress for kiln_desc.stuck_wait_ms
 *   (2 s by default) logs one JOB_WAIT_STUCK warning saying where the counter's jobs
 *   are, and keeps waiting.
 * - kiln_frame_end runs and waits for every job of its frame, with or without a
 *   counter, before it resets that frame's memory.
 * - Idle workers look for work for kiln_desc.idle_spin_us (50 us by default), then
 *   sleep; kiln_run makes a system call only when some worker sleeps.
 *
 * What it does NOT do:
 * - kiln_wait never just blocks: it runs jobs while it waits, so waiting from inside a
 *   job (nested parallelism) cannot deadlock as long as someone may run the jobs waited
 *   for. Waits on each other's counters in a cycle, a counter whose jobs are pinned to
 *   a thread that never waits, and isolated waits whose jobs can only be reached by
 *   another isolated wait can still wait for ever; such a wait says so (JOB_WAIT_STUCK)
 *   instead of hanging silently.
 * - kiln_wait does not bound how deep waits nest: a job whose wait runs a job that waits
 *   ... takes a few hundred bytes of the thread's stack per level (about 300 on x86-64,
 *   more under sanitizers), so 8 MiB holds some 25 000 levels. Once nested waits have
 *   used three quarters of a thread's stack, it says so, once (JOB_WAIT_TOO_DEEP).
 * - kiln_frame_end never resets frame memory under a running job (see "The frame a job
 *   belongs to"), and neither waits for a background job nor runs one, except that a
 *   frame job after a background one (kiln_run_desc.after) holds it until that job
 *   finishes, and with KILN_NO_WORKERS frame end then runs it (see "Dependencies").
 *
 * Background jobs: asset loading, anything that may cross a frame boundary.
 * - Submitted with kiln_run_ex and .background = true.
 * - They sit on a deque of their own that only workers take from, so frame end neither
 *   waits for them nor runs one, and neither does kiln_wait (with KILN_NO_WORKERS,
 *   kiln_wait runs them: nobody else would; and so does frame end while frame jobs
 *   wait for their prerequisites, see "Dependencies"). Workers take HIGH background
 *   jobs before normal frame jobs, and a normal background job before a normal frame job
 *   about once in every 8 looks for work between jobs (a frame job's own waits on a
 *   worker do not count): a frame whose jobs never run out cannot starve them. A wait on
 *   a worker (inside a job) also runs the background jobs of the counter it waits on,
 *   before any frame job, and inside an isolated wait those that the isolated wait's
 *   jobs submitted: a background job that waits on background children would otherwise
 *   wait for ever once every worker did the same, or for as long as a frame lasts.
 * - Wait for them with a counter.
 * - They must not use frame memory: with KILN_DEBUG_CHECKS, kiln_frame_alloc and the
 *   other kiln_frame_* calls inside one are refused (JOB_BACKGROUND_FRAME_ALLOC). The arena
 *   calls on kiln_frame_arena(ctx) (kiln_arena_alloc, _grow, _printf, ...) are not
 *   checked: they take the arena, not the context.
 *
 * The frame a job belongs to (the protocol's model: runtime/frame_clock.pml):
 * - Every frame job (any job that is not background) belongs to exactly one frame of
 *   the driver's clock, decided when it is submitted: a job submitted by a frame job
 *   (at any nesting, background jobs inside it included) belongs to that job's frame;
 *   any other (from the driver, an attached thread, a background job) to the frame
 *   open at the call, or to the next one once kiln_frame_end has begun.
 * - kiln_frame_end waits for the jobs of its own frame, wherever they run, and for no
 *   others: what other threads submit meanwhile belongs to the next frame, so a frame
 *   end lasts as long as its own frame's work. It runs its frame's jobs meanwhile, and
 *   jobs pinned to the driver. At most two frames have jobs at once.
 * - A chain of jobs that each submit the next stays in the frame of its first job, and
 *   holds that frame's end for as long as it goes on: a pipeline that must cross frame
 *   ends submits each round from outside jobs (a render thread's loop), not from the
 *   job before. A thread preempted in the middle of a submission (between counting
 *   its jobs and queueing them) holds the frame end until it runs again: the jobs it
 *   counted may be the frame's.
 * - The frame memory a job takes (kiln_frame_alloc with the ctx it was given) lives
 *   until the frame the job belongs to has ended, on whichever thread it ran: a worker,
 *   the driver, an attached thread helping in kiln_wait or running its own jobs. Each
 *   context keeps one job arena per frame parity, and frame end resets every context's
 *   arena of the frame it ends; a helping thread keeps nothing, and a thread that
 *   detaches leaves its jobs' memory to the frame. A thread's frame memory outside jobs
 *   is its own (kiln/memory.h, kiln_frame_arena).
 * - A pointer that a frame job gets from kiln_handle_get stays valid (the slot is not
 *   reused) until its frame ends; for the driver's own code, until its frame end. A
 *   background job's stay valid until it returns when it runs on a worker (frame and
 *   background jobs nested in it included). Running a job is never a quiescent point
 *   of an attached thread: its pointers stay valid until its next one (kiln/handles.h).
 *
 * Dependencies (kiln_run_desc.after): jobs that start once other jobs have finished.
 * - The jobs of a call with .after = (const kiln_counter *[]){ &physics, &animation },
 *   .after_count = 2 become runnable once every job counted in each of those counters at
 *   the time of the call has finished (after_count 0: no dependency). A counter already
 *   zero counts as done, a zero-initialised one that no run ever used included: kiln
 *   cannot tell it from one whose jobs just finished, and refusing it would make the
 *   call's outcome depend on how fast those jobs ran.
 * - No thread blocks or polls for them: the thread whose job (or kiln_run) finishes the
 *   last prerequisite queues them on its own queue (or on their pin's inbox). That
 *   thread is always one of the runtime that made the call: a counter counts the jobs of
 *   one runtime at a time (a run of another runtime on a counter in use is refused,
 *   COUNTER_FOREIGN, see kiln_run), and an after naming a counter in use by another
 *   runtime's jobs is refused (JOB_AFTER_FOREIGN). Chains,
 *   fan-out (several calls after one counter), fan-in (one call after several counters,
 *   or after one counter that several runs count on) and grids all work.
 * - The call's own counter counts them from the call on (kiln_wait on it waits for them
 *   too), and frame end waits for frame jobs still waiting for their prerequisites, even
 *   when a prerequisite is a background job (it then holds frame end until it finishes).
 *   With KILN_NO_WORKERS nobody else would run such a background job, so frame end runs
 *   background jobs once no frame job is left to run and frame jobs still wait (all of
 *   the driver's it can reach, not only the prerequisites).
 * - Lifetimes: the after array is read during the call only; each counter in it must
 *   stay alive, and get no new kiln_run, until the jobs waiting on it are runnable. A
 *   kiln_wait on such a counter returns only after that, so a counter that a thread has
 *   waited on may be reused or freed. Jobs added to it meanwhile count for the waiting
 *   jobs too; with KILN_DEBUG_CHECKS such a kiln_run is logged (COUNTER_REUSED_WAITING,
 *   counted as misuse) and still runs.
 * - One heap allocation per call that has after, whatever its job count, freed once its
 *   jobs are queued. It comes from the system allocator, outside the block pool, so
 *   desc.memory_limit neither covers nor bounds it.
 * - Background and pinned jobs may come after frame jobs and the other way round: the
 *   pin and the kind are honoured when they become runnable. A pin to a context that
 *   detaches meanwhile drops them: they finish on their counter without running
 *   (JOB_PIN_DETACHING), even when a thread attached since got the same context memory
 *   (the pin names the context, not its memory).
 * - A cycle never runs: its jobs wait for ever (and a frame job in one holds frame end);
 *   kiln_destroy frees the records of jobs still waiting, unrun, and says how many
 *   (JOB_STILL_WAITING), without touching their counters.
 *   kiln refuses the direct one, a call after its own counter (JOB_AFTER_CYCLE); one
 *   through other counters it cannot see.
 *
 * Isolated waits (kiln_wait_ex with .isolate): while waiting, the thread runs only jobs
 * that descend from the counter's jobs and jobs pinned to its context, never an unrelated
 * job that happens to sit on a deque (a wait for a short batch must not turn into a long
 * stall). "Descend": jobs counted on that counter, and jobs submitted by jobs that this
 * wait runs. Jobs that the counter's jobs submit on other threads run there (their own
 * waits help them). Every wait inside an isolated one keeps its isolation, and may
 * also run the jobs of the counter it waits on that were submitted outside any
 * isolated wait (it cannot return without them, and another isolated wait may be the
 * only other thread that could reach them).
 * With KILN_NO_WORKERS an isolated wait that finds none of its jobs runnable runs any
 * other job it can reach, frame or background: its jobs may wait for prerequisites of
 * other counters (kiln_run_desc.after), or sit deeper than it reaches on its deque
 * (kiln_wait_ex), and no other thread may ever run those. Isolation then keeps it from
 * unrelated jobs only while its own are runnable.
 *
 * Concurrency: every function here is called on the context's own thread; any number
 * of contexts at once. */
#ifndef KILN_JOBS_H
#define KILN_JOBS_H

#include <kiln/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*kiln_job_fn)(kiln_ctx *ctx, void *arg);
typedef struct kiln_job     { kiln_job_fn fn; void *arg; } kiln_job;
typedef struct kiln_counter { uint64_t opaque[3]; } kiln_counter;  /* zero-initialised by the caller */

typedef enum kiln_priority {
    KILN_PRIORITY_NORMAL = 0,
    KILN_PRIORITY_HIGH   = 1    /* every thread looking for work takes these first (a
                                   background one: every worker, before normal frame jobs) */
} kiln_priority;

typedef struct kiln_run_desc {
    kiln_priority priority;     /* 0: normal */
    /* pinned_to: NULL for any thread. Else only that context runs the jobs:
     * - frame jobs: while it waits (kiln_wait on any counter; a wait whose counter is
     *   zero already, or reaches zero before the wait looks, returns without running
     *   them), for the driver at frame end, and at kiln_detach. Frame end waits for every
     *   frame job, so a frame job pinned to a thread that does not wait holds frame end
     *   until it does (JOB_WAIT_STUCK says so after stuck_wait_ms).
     * - background jobs: only when it waits on the job's own counter, never at frame end.
     *   - In submission order for each counter, in O(1) per job however many other
     *     counters' jobs are parked.
     *   - A worker: also when idle. With KILN_NO_WORKERS any wait runs them, as above.
     *   - Pinned to a context that is not a worker's, a background job needs a counter
     *     (JOB_BAD_PIN otherwise).
     * - A pin to a context that is detaching is refused (JOB_PIN_DETACHING): those jobs
     *   are neither run nor counted on the counter. */
    kiln_ctx     *pinned_to;
    bool          background;   /* may cross frame boundaries; frame end does not wait */
    /* after: the prerequisites (see "Dependencies" above); after_count of them, 0: none.
     * NULL with after_count > 0 is refused (JOB_AFTER_NULL), as is a NULL entry
     * (JOB_AFTER_NULL_ENTRY), the call's own counter (JOB_AFTER_CYCLE) and a counter
     * that counts jobs of another runtime (JOB_AFTER_FOREIGN: the jobs would be queued
     * on that runtime's threads, and this one's frame end would wait for ever). A
     * counter that becomes another runtime's while the call registers (its run raced
     * this call) is not waited for, and logged with the same item: the jobs are never
     * queued on another runtime, however two runtimes race for one counter. */
    const kiln_counter *const *after;
    uint32_t      after_count;
} kiln_run_desc;

/* Submits count jobs; counter (may be NULL) counts the unfinished ones and must stay
 * alive until it reads zero. Jobs may themselves call kiln_run and kiln_wait.
 * - Bad input is logged and refused: no job of the call runs, the counter is untouched.
 *   - a NULL ctx: CONTEXT_NULL;
 *   - count 0 (jobs NULL or not): JOB_COUNT_ZERO;
 *   - jobs NULL with count > 0: JOB_NULL_JOBS;
 *   - a job with a NULL fn: JOB_NULL_FN;
 *   - a bad pin: JOB_BAD_PIN;
 *   - a priority that is no kiln_priority: JOB_BAD_PRIORITY;
 *   - after: JOB_AFTER_NULL, JOB_AFTER_NULL_ENTRY, JOB_AFTER_CYCLE, JOB_AFTER_FOREIGN
 *     (see the desc);
 *   - a counter in use by a run of another runtime: COUNTER_FOREIGN (below);
 *   - a counter that would count more than 2^31 jobs at once (each one a job queued
 *     or running): COUNTER_FULL.
 *   Each is misuse, counted in api_errors, but for a NULL or invalid ctx (no runtime
 *   to count it in).
 * - With after, no heap memory for the call's record is refused the same way (no job
 *   runs, the counter is untouched) and logged (JOB_OUT_OF_MEMORY), but it is not
 *   misuse: api_errors does not count it.
 * - A pin to a context that starts to detach during the call refuses the jobs not yet
 *   queued (JOB_PIN_DETACHING, which says how many); the counter then counts only those
 *   that were.
 * - A counter counts the jobs of one runtime at a time. While it is in use by a run of
 *   another runtime (non-zero with that runtime's jobs, or still making runnable the
 *   jobs that waited on it), the call is refused as above: COUNTER_FOREIGN, naming the
 *   context. Otherwise the jobs that finished it could be another runtime's, and jobs
 *   after it (kiln_run_desc.after) would run there, with that runtime's context. Once
 *   it reads zero (kiln_wait on it has returned) any runtime may use it again. When two
 *   runtimes' runs find it at zero at the same instant, one of them counts on it and
 *   the other is refused.
 * - A counter still non-zero from a run of another context of the same runtime is
 *   shared, not refused: the jobs count on it together, and a warning says so once per
 *   such call (COUNTER_SHARED), since waiting on a counter that others keep adding to
 *   may wait longer than meant.
 * Concurrency: the context's own thread; any number of contexts at once. */
KILN_API void kiln_run(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter);
KILN_API void kiln_run_ex(kiln_ctx *ctx, const kiln_job *jobs, size_t count,
                          kiln_counter *counter, const kiln_run_desc *desc);

/* Returns when the counter is zero; runs other jobs meanwhile. A NULL counter is logged
 * (JOB_WAIT_NULL_COUNTER) and returns at once. The context's own thread. */
KILN_API void kiln_wait(kiln_ctx *ctx, kiln_counter *counter);

typedef struct kiln_wait_desc {
    bool isolate;   /* false: kiln_wait. true: run only the counter's jobs, what they submit
                       while this wait runs them, and jobs pinned to this context (see
                       "Isolated waits" above) */
} kiln_wait_desc;

/* kiln_wait with options; a NULL desc is kiln_wait. Returns when the counter is zero.
 * A NULL counter is logged (JOB_WAIT_NULL_COUNTER) and returns at once; a NULL or
 * detached ctx as kiln_wait. An isolated wait reaches its own jobs on its own deque under
 * up to 32 unrelated ones; deeper ones wait for other threads to take those (with
 * KILN_NO_WORKERS it runs those itself, see "Isolated waits").
 * Concurrency: the context's own thread; any number of contexts at once. */
KILN_API void kiln_wait_ex(kiln_ctx *ctx, kiln_counter *counter, const kiln_wait_desc *desc);

typedef void (*kiln_range_fn)(kiln_ctx *ctx, size_t begin, size_t end, void *arg);

/* Calls fn over disjoint ranges that cover [0, count) exactly once, in parallel, and
 * returns when all are done.
 * - Ranges are split by halving: a running range pushes its upper half for thieves and
 *   goes on with the lower, down to grain indices.
 * - grain 0: kiln picks one (about 8 ranges per thread, at least 1 index).
 * - Every range runs as a job on the context that runs it, the caller's lowest one
 *   included: what a job may not do (drive the frame clock, detach, reset its frame
 *   arena) is refused inside any range.
 * The context's thread. */
KILN_API void kiln_parallel_for(kiln_ctx *ctx, size_t count, size_t grain, kiln_range_fn fn,
                                void *arg);

#ifdef __cplusplus
}
#endif

#endif /* KILN_JOBS_H */
