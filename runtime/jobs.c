/* runtime/jobs.c — the public job calls: argument checks, counters, turning kiln_job
 * arrays into tasks on the caller's queue, parallel_for. */
#include "runtime_internal.h"

/* Jobs are copied into tasks in batches of this many, on the stack. */
#define KILN_SUBMIT_BATCH 64

static bool check_jobs(kiln_ctx *ctx, const kiln_job *jobs, size_t count, const char *function) {
    if (!kiln_ctx_check(ctx, function)) return false;
    const char *problem = count == 0 ? "count is 0" : jobs == NULL ? "jobs is NULL" : NULL;
    if (problem) {
        kiln_log_misuse(&ctx->rt->log, count == 0 ? "JOB_COUNT_ZERO" : "JOB_NULL_JOBS",
                        "%s: context %u: %s; nothing submitted", function, ctx->id, problem);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        if (kiln_unlikely(!jobs[i].fn)) {
            kiln_log_misuse(&ctx->rt->log, "JOB_NULL_FN",
                            "%s: context %u: job %zu of %zu has a NULL fn; none of them submitted",
                            function, ctx->id, i, count);
            return false;
        }
    }
    return true;
}

/* Adds count to the counter; warns when another context's run still holds it. */
static kiln_counter_state *counter_add(kiln_ctx *ctx, kiln_counter *counter, size_t count) {
    if (!counter) return NULL;
    kiln_counter_state *state = kiln_counter_of(counter);
    uint64_t before = kiln_add_relaxed(&state->pending, count);
    uint64_t owner = kiln_load_relaxed(&state->owner);
    if (before == 0) {
        if (owner != ctx->id) kiln_store_relaxed(&state->owner, ctx->id);
    } else if (owner != ctx->id) {
        kiln_log(&ctx->rt->log, KILN_LOG_WARN, "COUNTER_SHARED",
                 "kiln_run: context %u adds to a counter still non-zero from a run of context "
                 "%llu; both runs now finish together", ctx->id, (unsigned long long)owner);
    }
    return state;
}

void kiln_run_ex(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter,
                 const kiln_run_desc *desc) {
    if (!check_jobs(ctx, jobs, count, "kiln_run")) return;
    kiln_run_desc d = desc ? *desc : (kiln_run_desc){ 0 };
    kiln_job_queue *pinned = NULL;
    if (d.pinned_to) {
        if (!kiln_ctx_check(d.pinned_to, "kiln_run") || d.pinned_to->rt != ctx->rt) {
            kiln_log_misuse(&ctx->rt->log, "JOB_BAD_PIN",
                            "kiln_run: context %u: pinned_to is not a context of this runtime; "
                            "nothing submitted", ctx->id);
            return;
        }
        pinned = &d.pinned_to->queue;
    }
    kiln_counter_state *state = counter_add(ctx, counter, count);
    uint64_t flags = (d.background ? KILN_TASK_BACKGROUND : 0) |
                     (d.priority == KILN_PRIORITY_HIGH ? KILN_TASK_HIGH : 0);
    kiln_task batch[KILN_SUBMIT_BATCH];
    for (size_t done = 0; done < count;) {
        size_t n = count - done < KILN_SUBMIT_BATCH ? count - done : KILN_SUBMIT_BATCH;
        for (size_t i = 0; i < n; i++)
            batch[i] = (kiln_task){ .fn.job = jobs[done + i].fn, .arg = jobs[done + i].arg,
                                    .counter = state, .flags = flags };
        kiln_jobs_submit(&ctx->rt->jobs, &ctx->queue, batch, n, d.priority == KILN_PRIORITY_HIGH,
                         pinned);
        done += n;
    }
}

void kiln_run(kiln_ctx *ctx, const kiln_job *jobs, size_t count, kiln_counter *counter) {
    kiln_run_ex(ctx, jobs, count, counter, NULL);
}

void kiln_wait(kiln_ctx *ctx, kiln_counter *counter) {
    if (!kiln_ctx_check(ctx, "kiln_wait")) return;
    if (!counter) {
        kiln_log_misuse(&ctx->rt->log, "JOB_WAIT_NULL_COUNTER",
                        "kiln_wait: context %u: the counter is NULL; nothing to wait for", ctx->id);
        return;
    }
    kiln_jobs_wait(&ctx->rt->jobs, &ctx->queue, kiln_counter_of(counter));
}

void kiln_parallel_for(kiln_ctx *ctx, size_t count, size_t grain, kiln_range_fn fn, void *arg) {
    if (!kiln_ctx_check(ctx, "kiln_parallel_for")) return;
    if (!fn) {
        kiln_log_misuse(&ctx->rt->log, "JOB_NULL_FN",
                        "kiln_parallel_for: context %u: fn is NULL; nothing run", ctx->id);
        return;
    }
    if (count == 0) return;
    if (grain == 0) {   /* about 8 pieces per thread: enough to balance, few enough to be cheap */
        grain = count / (8 * (size_t)ctx->rt->jobs.threads);
        if (grain == 0) grain = 1;
    }
    kiln_counter counter = { { 0, 0 } };
    kiln_task root = {
        .fn.range = fn, .arg = arg, .counter = kiln_counter_of(&counter),
        .flags = KILN_TASK_RANGE | (ctx->queue.running_flags & KILN_TASK_BACKGROUND),
        .begin = 0, .end = count, .grain = grain,
    };
    kiln_jobs_run_range(&ctx->rt->jobs, &ctx->queue, &root);
    kiln_jobs_wait(&ctx->rt->jobs, &ctx->queue, root.counter);
}
