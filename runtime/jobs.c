/* runtime/jobs.c — the public job calls: argument checks, counters, turning kiln_job
 * arrays into tasks on the caller's queue, parallel_for. */
#include "check.h"

#include "../base/sys_alloc.h"
#include "../jobs/counter.h"
#include "../jobs/graph.h"

/* Jobs are copied into tasks in batches of this many, on the stack. */
#define KILN_SUBMIT_BATCH 64

static bool check_jobs(kiln_ctx *ctx, const kiln_job *jobs, size_t count, const char *function) {
    if (!kiln_ctx_check(ctx, function)) return false;
    const char *problem = count == 0 ? "count is 0" : jobs == NULL ? "jobs is NULL" : NULL;
    if (problem) {
        kiln_log_misuse(&ctx->rt->log, count == 0 ? KILN_LOGITEM_JOB_COUNT_ZERO : KILN_LOGITEM_JOB_NULL_JOBS,
                        "%s: context %u: %s; nothing submitted", function, ctx->id, problem);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        if (kiln_unlikely(!jobs[i].fn)) {
            kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_NULL_FN,
                            "%s: context %u: job %zu of %zu has a NULL fn; none of them submitted",
                            function, ctx->id, i, count);
            return false;
        }
    }
    return true;
}

/* Logs why kiln_counter_add refused a run of count jobs of ctx (misuse), before the
 * word that refused it. Cold. */
static KILN_COLD void counter_refused(kiln_ctx *ctx, const kiln_counter_state *counter, uint64_t before,
                                      size_t count, const char *function) {
    if ((before & KILN_COUNTER_TAG_MASK) != ctx->rt->jobs.counter_tag) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_COUNTER_FOREIGN,
                        "%s: context %u: the counter holds jobs of another runtime (a run of "
                        "its context %u); nothing submitted: a counter counts the jobs of one "
                        "runtime at a time", function, ctx->id,
                        (unsigned)kiln_load_relaxed(&counter->owner));
        return;
    }
    kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_COUNTER_FULL,
                    "%s: context %u: %zu more jobs on a counter that counts %llu would pass "
                    "the %llu one counter counts at once; nothing submitted", function, ctx->id,
                    count, (unsigned long long)KILN_COUNTER_COUNT(before),
                    (unsigned long long)KILN_COUNTER_JOBS_MAX);
}

/* Warns (or with KILN_DEBUG_CHECKS logs misuse) about an add to a counter in use,
 * before the word the add replaced. Cold: only a counter shared by runs gets here. */
static KILN_COLD void counter_in_use(kiln_ctx *ctx, const kiln_counter_state *counter, uint64_t before,
                                     size_t count, const char *function) {
    uint32_t owner = (uint32_t)kiln_load_relaxed(&counter->owner);
    if ((before & KILN_COUNTER_WAITERS) && ctx->debug_checks) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_COUNTER_REUSED_WAITING,
                        "%s: context %u adds %zu jobs to a counter that jobs of a run with "
                        "after wait on; those wait for these too", function, ctx->id, count);
    } else if (KILN_COUNTER_COUNT(before) != 0 && owner != ctx->id) {
        kiln_log(&ctx->rt->log, KILN_LOGITEM_COUNTER_SHARED,
                 "%s: context %u adds to a counter still non-zero from a run of context "
                 "%u; both runs now finish together", function, ctx->id, owner);
    }
}

/* Adds count to the counter (NULL: none) for a run of ctx, the counter's state in
 * *state: true. false, nothing added, logged as misuse, when the counter is in use by a
 * run of another runtime (COUNTER_FOREIGN: a counter counts the jobs of one runtime at
 * a time, jobs/counter.h) or would count more than KILN_COUNTER_JOBS_MAX jobs at once
 * (COUNTER_FULL). Warns when another context's run of this runtime still holds it. Inline:
 * a call of its own cost every kiln_run a dozen instructions of prologue and epilogue. */
static inline __attribute__((always_inline)) bool counter_add(kiln_ctx *ctx, kiln_counter *counter,
                                                              size_t count, const char *function,
                                                              kiln_counter_state **state) {
    *state = NULL;
    if (!counter) return true;
    kiln_counter_state *c = kiln_counter_of(counter);
    uint64_t before;
    if (kiln_unlikely(!kiln_counter_add(c, ctx->rt->jobs.counter_tag, ctx->id, count, &before))) {
        counter_refused(ctx, c, before, count, function);
        return false;
    }
    *state = c;
    if (kiln_unlikely(before & (KILN_COUNTER_WAITERS | KILN_COUNTER_COUNT_MASK)))
        counter_in_use(ctx, c, before, count, function);
    return true;
}

/* Whether desc's pin can be honoured: a context of this runtime, attached, and for a
 * background job on a thread that is not a worker, a counter to wait on (such a job
 * runs only when that thread waits on its counter). Logs JOB_BAD_PIN otherwise. */
static bool pin_allowed(kiln_ctx *ctx, const kiln_run_desc *d, const kiln_counter *counter,
                        const char *function) {
    const kiln_ctx *target = d->pinned_to;
    const char *problem =
        !kiln_aligned_as(target, kiln_ctx) || kiln_ctx_word(target) != KILN_CTX_MAGIC ||
        target->rt != ctx->rt
            ? "is not an attached context of this runtime"
        : d->background && !target->is_worker && !counter
            ? "is not a worker's, and a background job pinned there runs only when that "
              "context waits on the job's counter, which is NULL"
            : NULL;
    if (kiln_likely(problem == NULL)) return true;
    kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_BAD_PIN, "%s: context %u: pinned_to %s; nothing "
                    "submitted", function, ctx->id, problem);
    return false;
}

/* The pinned target closed its inbox (it is detaching) before jobs [done, count) were
 * queued: they are not submitted, and the counter no longer waits for them. */
static KILN_COLD void refuse_pin_detaching(kiln_ctx *ctx, const kiln_ctx *target,
                                           kiln_counter_state *state, size_t done, size_t count,
                                           const char *function) {
    if (state) kiln_counter_finish(&ctx->rt->jobs, &ctx->queue, state, count - done);
    kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_PIN_DETACHING,
                    "%s: context %u: pinned_to context %u is detaching; %zu of %zu jobs "
                    "not submitted", function, ctx->id, target->id, count - done, count);
}

/* Whether the counter counts jobs of another runtime than the one of tag: its finish
 * would queue the waiting jobs there. A counter at zero counts none (it is done). The
 * owner word is the one the run that made it non-zero stored, which happened before
 * the caller got the counter to name here. */
static bool after_foreign(const kiln_counter *counter, uint64_t tag) {
    return kiln_counter_foreign((const kiln_counter_state *)(const void *)counter, tag);
}

/* Whether desc's after list is usable: logs and refuses a NULL array, a NULL entry,
 * the call's own counter (its jobs would wait for themselves) and a counter of another
 * runtime's run. */
static bool after_allowed(kiln_ctx *ctx, const kiln_run_desc *d, const kiln_counter *counter,
                          const char *function) {
    if (!d->after) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_AFTER_NULL,
                        "%s: context %u: after_count is %u and after is NULL; nothing "
                        "submitted", function, ctx->id, d->after_count);
        return false;
    }
    uint64_t tag = ctx->rt->jobs.counter_tag;
    for (uint32_t i = 0; i < d->after_count; i++) {
        if (d->after[i] && d->after[i] != counter && after_foreign(d->after[i], tag)) {
            kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_AFTER_FOREIGN,
                            "%s: context %u: after[%u] of %u counts jobs of another "
                            "runtime; nothing submitted", function, ctx->id, i, d->after_count);
            return false;
        }
        if (!d->after[i] || d->after[i] == counter) {
            kiln_log_misuse(&ctx->rt->log, d->after[i] ? KILN_LOGITEM_JOB_AFTER_CYCLE
                                                        : KILN_LOGITEM_JOB_AFTER_NULL_ENTRY,
                            "%s: context %u: after[%u] of %u is %s; nothing submitted",
                            function, ctx->id, i, d->after_count,
                            d->after[i] ? "the call's own counter" : "NULL");
            return false;
        }
    }
    return true;
}

/* The tasks of count jobs, counted on state, into out. */
static void fill_tasks(kiln_task *out, const kiln_job *jobs, size_t count, kiln_counter_state *state,
                       uint64_t flags, uint64_t isolation) {
    for (size_t i = 0; i < count; i++)
        out[i] = (kiln_task){ .fn.job = jobs[i].fn, .arg = jobs[i].arg, .counter = state,
                              .flags = flags, .isolation = isolation };
}

/* kiln_run_ex with after: one record for the whole call (jobs/graph.h), queued by
 * whichever thread finishes the last prerequisite. */
static KILN_COLD void run_after(kiln_ctx *ctx, const kiln_job *jobs, size_t count,
                                kiln_counter *counter, const kiln_run_desc *d, uint64_t flags,
                                const char *function) {
    if (!after_allowed(ctx, d, counter, function)) return;
    kiln_batch *batch = kiln_batch_new(&ctx->rt->jobs, count, d->after_count);
    if (!batch) {
        kiln_log(&ctx->rt->log, KILN_LOGITEM_JOB_OUT_OF_MEMORY,
                 "%s: context %u: no memory to hold %zu jobs until their %u prerequisites "
                 "finish; nothing submitted", function, ctx->id, count, d->after_count);
        return;
    }
    kiln_counter_state *state;
    if (!counter_add(ctx, counter, count, function, &state)) {
        kiln_sys_free(batch);   /* not listed yet: nobody else has seen it */
        return;
    }
    fill_tasks(batch->tasks, jobs, count, state, flags, kiln_jobs_isolation(&ctx->queue, state));
    batch->pinned = d->pinned_to ? &d->pinned_to->queue : NULL;
    /* The context it names: its memory may serve another after it detaches. */
    if (batch->pinned) batch->pin_life = kiln_jobs_pin_life(batch->pinned);
    batch->submitter = ctx->id;
    batch->pinned_id = d->pinned_to ? kiln_load_relaxed(&d->pinned_to->id) : 0;   /* a figure */
    batch->priority = d->priority == KILN_PRIORITY_HIGH;
    /* kiln_counter and kiln_counter_state are the same words (jobs/task.h). */
    uint32_t foreign = kiln_jobs_submit_after(&ctx->rt->jobs, &ctx->queue, batch,
                                              (const kiln_counter_state *const *)(const void *)d->after,
                                              d->after_count);
    if (kiln_unlikely(foreign != 0))
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_AFTER_FOREIGN,
                        "%s: context %u: %u of the %u counters in after began counting jobs "
                        "of another runtime while this call registered its jobs; the jobs do "
                        "not wait for those", function, ctx->id, foreign, d->after_count);
}

/* kiln_run_ex, its messages naming function (the public call the user made). */
static void run_jobs(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter,
                     const kiln_run_desc *desc, const char *function) {
    if (!check_jobs(ctx, jobs, count, function)) return;
    kiln_run_desc d = desc ? *desc : (kiln_run_desc){ 0 };
    if (d.priority != KILN_PRIORITY_NORMAL && d.priority != KILN_PRIORITY_HIGH) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_BAD_PRIORITY,
                        "%s: context %u: priority %d is no kiln_priority; nothing submitted",
                        function, ctx->id, (int)d.priority);
        return;
    }
    if (d.pinned_to && !pin_allowed(ctx, &d, counter, function)) return;
    uint64_t flags = (d.background ? KILN_TASK_BACKGROUND : 0) |
                     (d.priority == KILN_PRIORITY_HIGH ? KILN_TASK_HIGH : 0);
    if (kiln_unlikely(d.after_count != 0)) {   /* the one branch dependencies add here */
        run_after(ctx, jobs, count, counter, &d, flags, function);
        return;
    }
    kiln_job_queue *pinned = d.pinned_to ? &d.pinned_to->queue : NULL;
    kiln_counter_state *state;
    if (!counter_add(ctx, counter, count, function, &state)) return;
    uint64_t isolation = kiln_jobs_isolation(&ctx->queue, state);
    /* Frame jobs are counted, all of the call at once, before any is queued. */
    uint32_t epoch = d.background ? 0 : kiln_jobs_count_frame(&ctx->rt->jobs, &ctx->queue, count);
    flags |= (uint64_t)epoch << KILN_TASK_EPOCH_SHIFT;
    kiln_task batch[KILN_SUBMIT_BATCH];
    for (size_t done = 0; done < count;) {
        size_t n = count - done < KILN_SUBMIT_BATCH ? count - done : KILN_SUBMIT_BATCH;
        fill_tasks(batch, jobs + done, n, state, flags, isolation);
        if (!kiln_jobs_submit(&ctx->rt->jobs, &ctx->queue, batch, n, d.priority == KILN_PRIORITY_HIGH,
                              pinned)) {
            if (epoch) kiln_jobs_uncount(&ctx->queue, epoch, count - done);
            refuse_pin_detaching(ctx, d.pinned_to, state, done, count, function);
            return;
        }
        done += n;
    }
}

void kiln_run_ex(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter,
                 const kiln_run_desc *desc) {
    run_jobs(ctx, jobs, count, counter, desc, "kiln_run_ex");
}

void kiln_run(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter) {
    run_jobs(ctx, jobs, count, counter, NULL, "kiln_run");
}

static void wait_counter(kiln_ctx *ctx, kiln_counter *counter, bool isolate, const char *function) {
    if (!kiln_ctx_check(ctx, function)) return;
    if (!counter) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_WAIT_NULL_COUNTER,
                        "%s: context %u: the counter is NULL; nothing to wait for", function, ctx->id);
        return;
    }
    kiln_jobs_wait(&ctx->rt->jobs, &ctx->queue, kiln_counter_of(counter), isolate);
}

void kiln_wait(kiln_ctx *ctx, kiln_counter *counter) {
    wait_counter(ctx, counter, false, "kiln_wait");
}

void kiln_wait_ex(kiln_ctx *ctx, kiln_counter *counter, const kiln_wait_desc *desc) {
    wait_counter(ctx, counter, desc && desc->isolate, "kiln_wait_ex");
}

void kiln_parallel_for(kiln_ctx *ctx, size_t count, size_t grain, kiln_range_fn fn, void *arg) {
    if (!kiln_ctx_check(ctx, "kiln_parallel_for")) return;
    if (!fn) {
        kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_NULL_FN,
                        "kiln_parallel_for: context %u: fn is NULL; nothing run", ctx->id);
        return;
    }
    if (count == 0) return;
    if (grain == 0) {   /* about 8 pieces per thread: enough to balance, few enough to be cheap */
        grain = count / (8 * (size_t)ctx->rt->jobs.threads);
        if (grain == 0) grain = 1;
    }
    /* A job on the caller's context, its lowest range included: what a job may not do
     * (the frame clock, detach, resetting this frame arena), no range may. Background
     * inside a background job. */
    kiln_task root = {
        .fn.range = fn, .arg = arg,
        .flags = KILN_TASK_RANGE | (kiln_load_relaxed(&ctx->queue.running_flags) & KILN_TASK_BACKGROUND),
        .begin = 0, .end = count, .grain = grain,
        .isolation = ctx->queue.isolated,   /* inside an isolated wait, its pieces are its */
    };
    kiln_jobs_run_range(&ctx->rt->jobs, &ctx->queue, &root);
}
