/* jobs/scheduler.c — finding, running and stealing tasks, splitting ranges, waiting,
 * pinned inboxes, frame accounting, and idle workers' sleep and wake-up. */
#define _GNU_SOURCE
#include "scheduler.h"

#include "../base/clock.h"

#include <ck_pr.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Idle workers: this many rounds of looking for work (each one a scan of every queue
 * and a pause) before sleeping: about 20-50 us on this machine class, long enough to
 * catch the next batch of a frame, short enough to cost nothing measurable when idle. */
#define KILN_IDLE_SPINS 256
/* A sleeper wakes by itself after this long (a safety net against a lost wake-up; the
 * protocol below has none, this only bounds the damage of a bug). */
#define KILN_SLEEP_TIMEOUT_NS 50000000L

static void futex_wait(_Atomic uint32_t *word, uint32_t expected) {
    struct timespec timeout = { 0, KILN_SLEEP_TIMEOUT_NS };
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &timeout, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

void kiln_job_system_init(kiln_job_system *sys, uint32_t workers, kiln_log_sink log) {
    memset(sys, 0, sizeof *sys);
    pthread_mutex_init(&sys->table_lock, NULL);
    sys->threads = workers + 1;
    sys->log = log;
}

void kiln_job_system_fini(kiln_job_system *sys) {
    pthread_mutex_destroy(&sys->table_lock);
}

bool kiln_job_queue_init(kiln_job_system *sys, kiln_job_queue *q, void *owner, uint32_t id) {
    q->owner = owner;
    q->id = id;
    q->rng = 0x9e3779b97f4a7c15ull * (id + 1);
    /* A reused queue starts a new context's figures (retire zeroed submitted and
     * completed); relaxed: stats read them only once the context is listed, later. */
    kiln_store_relaxed(&q->jobs_run, 0);
    kiln_store_relaxed(&q->jobs_stolen, 0);
    kiln_store_relaxed(&q->steal_misses, 0);
    kiln_store_relaxed(&q->sleep_ns, 0);
    if (!kiln_load_relaxed(&q->deques[0].ring)) {   /* a reused queue keeps its rings */
        if (!kiln_deque_init(&q->deques[0], 256) || !kiln_deque_init(&q->deques[1], 64) ||
            !kiln_deque_init(&q->deques[2], 16)) {
            kiln_deque_fini(&q->deques[0]);
            kiln_deque_fini(&q->deques[1]);
            kiln_log(&sys->log, KILN_LOG_ERROR, "JOB_OUT_OF_MEMORY",
                     "context %u: no memory for its job deques", id);
            return false;
        }
        pthread_mutex_init(&q->inbox_lock, NULL);
    }
    pthread_mutex_lock(&sys->table_lock);
    uint32_t slot = 0;
    while (slot < KILN_MAX_QUEUES && kiln_load_relaxed(&sys->queues[slot])) slot++;
    if (slot < KILN_MAX_QUEUES) {
        q->slot = slot;
        kiln_store_relaxed(&q->hook, sys->hook);   /* published by the release below */
        kiln_store_release(&sys->queues[slot], q);   /* thieves see an initialised queue */
        if (slot + 1 > kiln_load_relaxed(&sys->queue_limit))
            kiln_store_release(&sys->queue_limit, slot + 1);
    }
    pthread_mutex_unlock(&sys->table_lock);
    if (slot == KILN_MAX_QUEUES) {
        kiln_log(&sys->log, KILN_LOG_ERROR, "CONTEXT_TOO_MANY",
                 "context %u: all %d job queue slots are in use (workers included)", id,
                 KILN_MAX_QUEUES);
        return false;
    }
    return true;
}

static bool take_pinned(kiln_job_queue *q, kiln_task *task);
static void run_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task);

void kiln_job_queue_retire(kiln_job_system *sys, kiln_job_queue *q) {
    /* Its own tasks only, never stolen ones: a stolen frame job would allocate from the
     * frame arena that the detaching context deletes next, under its parent's feet. Nor
     * may the jobs it runs now steal when they wait. */
    q->steals = false;
    kiln_task task;
    while (take_pinned(q, &task) || kiln_deque_take(&q->deques[KILN_DEQUE_HIGH], &task) ||
           kiln_deque_take(&q->deques[KILN_DEQUE_NORMAL], &task) ||
           kiln_deque_take(&q->deques[KILN_DEQUE_BACKGROUND], &task))
        run_task(sys, q, &task);
    /* Its counts move to the system's totals in the same critical section as frame_quiet
     * reads them, so no sum ever counts them twice or misses them. */
    pthread_mutex_lock(&sys->table_lock);
    sys->retired_completed += kiln_load_acquire(&q->completed);
    sys->retired_submitted += kiln_load_relaxed(&q->submitted);
    kiln_store_relaxed(&q->completed, 0);
    kiln_store_relaxed(&q->submitted, 0);
    kiln_store_release(&sys->queues[q->slot], NULL);
    pthread_mutex_unlock(&sys->table_lock);
}

void kiln_job_queue_fini(kiln_job_queue *q) {
    if (!kiln_load_relaxed(&q->deques[0].ring)) return;
    for (int i = 0; i < 3; i++) kiln_deque_fini(&q->deques[i]);
    free(q->inbox);
    q->inbox = NULL;
    pthread_mutex_destroy(&q->inbox_lock);
}

/* Wakes up to n sleeping workers; a load and nothing else when none sleeps. */
static void wake(kiln_job_system *sys, size_t n) {
    kiln_fence_seq_cst();   /* the push before the sleepers load (pairs with sleep_once) */
    uint32_t sleeping = kiln_load_relaxed(&sys->sleepers);
    if (kiln_likely(sleeping == 0)) return;
    kiln_add_relaxed(&sys->wake_epoch, 1);
    futex_wake(&sys->wake_epoch, n < sleeping ? (int)n : (int)sleeping);
}

/* false when the inbox could not grow (logged). */
static bool inbox_append(kiln_job_queue *target, const kiln_task *tasks, size_t count,
                         kiln_job_system *sys) {
    pthread_mutex_lock(&target->inbox_lock);
    if (target->inbox_count + count > target->inbox_cap) {
        size_t cap = target->inbox_cap ? target->inbox_cap : 64;
        while (cap < target->inbox_count + count) cap *= 2;
        kiln_task *grown = realloc(target->inbox, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&target->inbox_lock);
            kiln_log(&sys->log, KILN_LOG_ERROR, "JOB_OUT_OF_MEMORY",
                     "context %u: no memory to queue pinned jobs; the submitting thread runs "
                     "them", target->id);
            return false;
        }
        target->inbox = grown;
        target->inbox_cap = cap;
    }
    memcpy(target->inbox + target->inbox_count, tasks, count * sizeof *tasks);
    target->inbox_count += count;
    kiln_store_release(&target->inbox_hint, target->inbox_count);
    pthread_mutex_unlock(&target->inbox_lock);
    return true;
}

static void run_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task);

void kiln_jobs_submit(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks, size_t count,
                      int priority, kiln_job_queue *pinned) {
    uint64_t frame_jobs = (tasks[0].flags & KILN_TASK_BACKGROUND) ? 0 : count;
    kiln_store_relaxed(&q->submitted, kiln_load_relaxed(&q->submitted) + frame_jobs);
    if (pinned) {
        if (inbox_append(pinned, tasks, count, sys)) {
            if (pinned != q) wake(sys, KILN_MAX_QUEUES);   /* the target may be a sleeping worker */
        } else {   /* counted already: dropping them would hang their waiters */
            for (size_t i = 0; i < count; i++) {
                kiln_task copy = tasks[i];
                run_task(sys, q, &copy);
            }
        }
        return;
    }
    kiln_deque *deque = &q->deques[(tasks[0].flags & KILN_TASK_BACKGROUND) ? KILN_DEQUE_BACKGROUND
                                   : priority ? KILN_DEQUE_HIGH : KILN_DEQUE_NORMAL];
    for (size_t i = 0; i < count; i++) {
        if (kiln_unlikely(!kiln_deque_push(deque, &tasks[i]))) {
            kiln_log(&sys->log, KILN_LOG_ERROR, "JOB_OUT_OF_MEMORY",
                     "context %u: the job deque could not grow; running the job here", q->id);
            kiln_task copy = tasks[i];
            run_task(sys, q, &copy);
        }
    }
    wake(sys, count);
}

/* Owner: one pinned task, if any. */
static bool take_pinned(kiln_job_queue *q, kiln_task *task) {
    if (kiln_likely(kiln_load_acquire(&q->inbox_hint) == 0)) return false;
    pthread_mutex_lock(&q->inbox_lock);
    bool got = q->inbox_count > 0;
    if (got) {
        *task = q->inbox[0];
        memmove(q->inbox, q->inbox + 1, --q->inbox_count * sizeof *task);
        kiln_store_release(&q->inbox_hint, q->inbox_count);
    }
    pthread_mutex_unlock(&q->inbox_lock);
    return got;
}

/* One pass over the other queues, from a random start. */
static bool steal(kiln_job_system *sys, kiln_job_queue *q, int priority, kiln_task *task) {
    if (!q->steals) return false;
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    if (limit <= 1) return false;
    q->rng ^= q->rng << 13;
    q->rng ^= q->rng >> 7;
    q->rng ^= q->rng << 17;
    /* No division on this path (two divs were a fifth of a thief's time): the start is
     * the rng's top 32 bits scaled to [0, limit), and the index wraps by a comparison. */
    uint32_t start = (uint32_t)(((q->rng >> 32) * limit) >> 32);
    for (uint32_t i = 0, index = start; i < limit; i++, index = index + 1 == limit ? 0 : index + 1) {
        kiln_job_queue *victim = kiln_load_acquire(&sys->queues[index]);
        if (!victim || victim == q) continue;
        /* No fence for a deque that looks empty (most of them, most of the time: the
         * high-priority ones nearly always, and find_task tries those before every
         * job): a stale look only misses a steal, as a lost race does, and a worker
         * re-checks with work_visible after its fence before it sleeps. */
        if (!kiln_deque_looks_busy(&victim->deques[priority])) continue;
        kiln_steal_result r;
        while ((r = kiln_deque_steal(&victim->deques[priority], task)) == KILN_STEAL_ABORT) {
            ck_pr_stall();   /* lost a race for a non-empty deque: try it again */
        }
        if (r == KILN_STEAL_OK) {
            kiln_owner_add(&q->jobs_stolen, 1);
            return true;
        }
    }
    return false;
}

/* Owner: take, but skip the fence of an empty deque (only the owner pushes, so an
 * empty look at its own deque is exact). */
static bool take_own(kiln_deque *deque, kiln_task *task) {
    return kiln_deque_looks_busy(deque) && kiln_deque_take(deque, task);
}

static bool find_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task, bool background) {
    if (take_pinned(q, task)) return true;
    if (take_own(&q->deques[KILN_DEQUE_HIGH], task) || steal(sys, q, KILN_DEQUE_HIGH, task))
        return true;
    if (take_own(&q->deques[KILN_DEQUE_NORMAL], task) || steal(sys, q, KILN_DEQUE_NORMAL, task))
        return true;
    if (background && (take_own(&q->deques[KILN_DEQUE_BACKGROUND], task) ||
                       steal(sys, q, KILN_DEQUE_BACKGROUND, task)))
        return true;
    kiln_owner_add(&q->steal_misses, 1);
    return false;
}

static void wait_counter(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                         bool background);

/* Halves task down to its grain, and submits the upper halves together, largest first
 * (what thieves take first), counted on pieces: one counter write and one wake-up
 * check (a fence) per split task instead of one per half. Not inlined: its 3.5 KiB of
 * halves leave the stack before kiln_jobs_run_range waits (nested waits stack up). */
static __attribute__((noinline)) void split_range(kiln_job_system *sys, kiln_job_queue *q,
                                                  kiln_task *task, kiln_counter_state *pieces) {
    kiln_task uppers[64];   /* halving a 64-bit range: at most 63 times */
    size_t splits = 0;
    while (task->end - task->begin > task->grain) {
        kiln_task *upper = &uppers[splits++];
        *upper = *task;
        upper->begin = task->begin + (task->end - task->begin) / 2;
        upper->counter = pieces;
        task->end = upper->begin;
    }
    kiln_store_relaxed(&pieces->pending, splits);   /* no other thread has seen it yet */
    kiln_jobs_submit(sys, q, uppers, splits, (task->flags & KILN_TASK_HIGH) ? 1 : 0, NULL);
}

/* Splits [begin, end) by halving down to the grain, pushing upper halves for thieves
 * (each counted like a submitted job), runs the lowest piece here, then waits for the
 * upper halves. */
void kiln_jobs_run_range(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    if (task->end - task->begin <= task->grain) {
        task->fn.range((kiln_ctx *)q->owner, (size_t)task->begin, (size_t)task->end, task->arg);
        return;
    }
    /* The upper halves count on a counter of this task's own, waited on here (running
     * jobs meanwhile, as kiln_wait does): the loop's shared counter then moves once per
     * task that splits, not once per split and once per piece. With grain 1 on two
     * threads, that one cache line bouncing between them cost more than the pieces.
     * Pieces of a background range sit on the background deque, which kiln_wait leaves
     * to the workers: this wait takes them too, or two workers each waiting on pieces
     * of their own would wait for ever. */
    kiln_counter_state pieces = { 0, 0 };
    split_range(sys, q, task, &pieces);
    task->fn.range((kiln_ctx *)q->owner, (size_t)task->begin, (size_t)task->end, task->arg);
    wait_counter(sys, q, &pieces, sys->threads == 1 || (task->flags & KILN_TASK_BACKGROUND));
}

static inline void call_fn(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    if (task->flags & KILN_TASK_RANGE) kiln_jobs_run_range(sys, q, task);
    else task->fn.job((kiln_ctx *)q->owner, task->arg);
}

/* The outermost background job of this thread, between the two on_background calls. */
static KILN_COLD void call_background(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    sys->on_background(q->owner, true);
    call_fn(sys, q, task);
    sys->on_background(q->owner, false);
}

/* The task itself, with its flags as the running ones meanwhile. */
static inline void call_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    uint32_t outer = q->running_flags;
    q->running_flags = (uint32_t)task->flags;
    if (kiln_unlikely((task->flags & ~outer & KILN_TASK_BACKGROUND) && sys->on_background))
        call_background(sys, q, task);
    else
        call_fn(sys, q, task);
    q->running_flags = outer;
}

/* Out of line, so that run_task keeps neither the hook nor its token in a register
 * across the job (that cost J1 15 instructions per job); the end is recorded before
 * the task counts as completed, so frame end never closes a frame under a traced job. */
static KILN_COLD void call_task_traced(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task,
                                       kiln_job_hook hook) {
    uint64_t token = hook(q, KILN_JOB_BEGIN, task, 0);
    call_task(sys, q, task);
    hook(q, KILN_JOB_END, task, token);
}

static void run_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    /* Tracing off: this load and a branch predicted not taken, on a line the owner has. */
    kiln_job_hook hook = kiln_load_relaxed(&q->hook);
    if (kiln_unlikely(hook != NULL)) call_task_traced(sys, q, task, hook);
    else call_task(sys, q, task);
    kiln_owner_add(&q->jobs_run, 1);
    if (!(task->flags & KILN_TASK_BACKGROUND))   /* release: frame end then sees its writes */
        kiln_store_release(&q->completed, kiln_load_relaxed(&q->completed) + 1);
    if (task->counter) kiln_sub_acq_rel(&task->counter->pending, 1);
}

bool kiln_jobs_run_one(kiln_job_system *sys, kiln_job_queue *q, bool background) {
    kiln_task task;
    if (!find_task(sys, q, &task, background)) return false;
    run_task(sys, q, &task);
    return true;
}

/* Waiting with nothing to run: pause, then let others have the core. */
static void idle_pause(unsigned *idle) {
    if (++*idle < 64) ck_pr_stall();
    else sched_yield();
}

/* Runs tasks until the counter reads zero; background ones too when background. */
static void wait_counter(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                         bool background) {
    unsigned idle = 0;
    while (kiln_load_acquire(&counter->pending) != 0) {
        if (kiln_jobs_run_one(sys, q, background)) idle = 0;
        else idle_pause(&idle);
    }
}

void kiln_jobs_wait(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter) {
    /* Background jobs only where no worker would ever take them. */
    wait_counter(sys, q, counter, sys->threads == 1);
}

/* Every completed count first, then every submitted count (see the header). */
static bool frame_quiet(kiln_job_system *sys) {
    pthread_mutex_lock(&sys->table_lock);
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    uint64_t completed = sys->retired_completed, submitted = sys->retired_submitted;
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *q = kiln_load_acquire(&sys->queues[i]);
        if (q) completed += kiln_load_acquire(&q->completed);
    }
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *q = kiln_load_acquire(&sys->queues[i]);
        if (q) submitted += kiln_load_acquire(&q->submitted);
    }
    pthread_mutex_unlock(&sys->table_lock);
    return completed == submitted;
}

void kiln_jobs_drain_frame(kiln_job_system *sys, kiln_job_queue *q) {
    unsigned idle = 0;
    for (;;) {
        if (kiln_jobs_run_one(sys, q, false)) idle = 0;
        else if (frame_quiet(sys)) return;
        else idle_pause(&idle);
    }
}

/* Any queue with work this worker could take? (Checked after announcing sleep.) */
static bool work_visible(kiln_job_system *sys, kiln_job_queue *q) {
    if (kiln_load_acquire(&q->inbox_hint) != 0) return true;
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *other = kiln_load_acquire(&sys->queues[i]);
        if (!other) continue;
        for (int d = 0; d < 3; d++)
            if (kiln_deque_looks_busy(&other->deques[d])) return true;
    }
    return false;
}

/* Announce, re-check, sleep: a submitter either sees the announcement (and wakes us)
 * or pushed before it, and then the re-check sees the work. */
static void sleep_once(kiln_job_system *sys, kiln_job_queue *q) {
    uint32_t epoch = kiln_load_acquire(&sys->wake_epoch);
    kiln_add_seq_cst(&sys->sleepers, 1);
    kiln_fence_seq_cst();
    if (!work_visible(sys, q) && !kiln_load_acquire(&sys->shutdown)) {
        uint64_t start = kiln_now_ns();
        futex_wait(&sys->wake_epoch, epoch);
        kiln_owner_add(&q->sleep_ns, kiln_now_ns() - start);
    }
    kiln_sub_seq_cst(&sys->sleepers, 1);
}

void kiln_jobs_worker_loop(kiln_job_system *sys, kiln_job_queue *q) {
    unsigned idle = 0;
    while (!kiln_load_acquire(&sys->shutdown)) {
        if (kiln_jobs_run_one(sys, q, true)) {
            idle = 0;
        } else if (++idle < KILN_IDLE_SPINS) {
            /* Every 8th round past the 64th, give the core away: oversubscribed (more
             * threads than cores), a thread holding a stolen job, or the waiter, may be
             * waiting for one, and spinning here would keep it off for a time slice. */
            if (idle < 64 || idle % 8 != 0) ck_pr_stall();
            else sched_yield();
        } else {
            sleep_once(sys, q);
            idle = 0;
        }
    }
}

void kiln_jobs_set_hook(kiln_job_system *sys, kiln_job_hook hook) {
    pthread_mutex_lock(&sys->table_lock);
    sys->hook = hook;
    uint32_t limit = kiln_load_relaxed(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *q = kiln_load_relaxed(&sys->queues[i]);
        if (q) kiln_store_relaxed(&q->hook, hook);   /* a pointer to code: nothing to publish */
    }
    pthread_mutex_unlock(&sys->table_lock);
}

void kiln_jobs_shutdown(kiln_job_system *sys) {
    kiln_store_release(&sys->shutdown, 1);
    kiln_add_relaxed(&sys->wake_epoch, 1);
    futex_wake(&sys->wake_epoch, KILN_MAX_QUEUES);
}
