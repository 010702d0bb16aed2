/* kiln/jobs.h — the job scheduler: work-stealing workers tied to the frame clock.
 *
 * kiln_create starts desc.worker_count workers, each with its own context (frame arena,
 * pool caches, job deques). kiln_run pushes jobs onto the calling context's deque;
 * idle workers steal them. A job runs as fn(ctx, arg) where ctx is the context of the
 * thread running it: kiln_frame_alloc(ctx, ...) inside a job allocates from that
 * worker's own frame arena. kiln_wait runs jobs (its own and stolen ones) until the
 * counter reaches zero; it never just blocks, so waiting from inside a job (nested
 * parallelism) cannot deadlock. kiln_frame_end runs and waits for every job submitted
 * during the frame, with or without a counter, before it resets any frame arena.
 *
 * Background jobs (asset loading, anything that may cross a frame boundary) are
 * submitted with kiln_run_ex and .background = true: they sit on a deque of their own
 * that only workers take from, so frame end neither waits for them nor runs one, and
 * neither does kiln_wait (with KILN_NO_WORKERS, kiln_wait runs them: nobody else
 * would). They must not use frame memory (with KILN_DEBUG_CHECKS, kiln_frame_alloc
 * inside one is refused with JOB_BACKGROUND_FRAME_ALLOC). Wait for them with a counter.
 *
 * Idle workers spin briefly, then sleep; kiln_run makes a system call only when some
 * worker sleeps. */
#ifndef KILN_JOBS_H
#define KILN_JOBS_H

#include <kiln/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*kiln_job_fn)(kiln_ctx *ctx, void *arg);
typedef struct kiln_job     { kiln_job_fn fn; void *arg; } kiln_job;
typedef struct kiln_counter { uint64_t opaque[2]; } kiln_counter;  /* zero-initialised by the caller */

typedef enum kiln_priority {
    KILN_PRIORITY_NORMAL = 0,
    KILN_PRIORITY_HIGH   = 1    /* every thread looking for work takes these first */
} kiln_priority;

typedef struct kiln_run_desc {
    kiln_priority priority;     /* 0: normal */
    kiln_ctx     *pinned_to;    /* NULL: any thread; else only that context runs the jobs
                                   (when it waits, or at frame end for the driver) */
    bool          background;   /* may cross frame boundaries; frame end does not wait */
} kiln_run_desc;

/* Submits count jobs; counter (may be NULL) counts the unfinished ones and must stay
 * alive until it reads zero. Jobs may themselves call kiln_run and kiln_wait.
 * Bad input (NULL ctx, a job with a NULL fn, count 0 with jobs NULL) is logged and
 * refused: no job of the call runs, the counter is untouched.
 * Concurrency: the context's own thread; any number of contexts at once. */
KILN_API void kiln_run(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter);
KILN_API void kiln_run_ex(kiln_ctx *ctx, const kiln_job *jobs, size_t count,
                          kiln_counter *counter, const kiln_run_desc *desc);

/* Returns when the counter is zero; runs other jobs meanwhile. A NULL counter is
 * logged and returns at once. The context's own thread. */
KILN_API void kiln_wait(kiln_ctx *ctx, kiln_counter *counter);

typedef void (*kiln_range_fn)(kiln_ctx *ctx, size_t begin, size_t end, void *arg);

/* Calls fn over disjoint ranges that cover [0, count) exactly once, in parallel, and
 * returns when all are done. Ranges are split by halving: a running range pushes its
 * upper half for thieves and goes on with the lower, down to grain indices. grain 0:
 * kiln picks one (about 8 ranges per thread, at least 1 index). The context's thread. */
KILN_API void kiln_parallel_for(kiln_ctx *ctx, size_t count, size_t grain, kiln_range_fn fn,
                                void *arg);

#ifdef __cplusplus
}
#endif

#endif /* KILN_JOBS_H */
