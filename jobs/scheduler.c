/* jobs/scheduler.c — finding, running and stealing tasks, splitting ranges, waiting,
 * pinned inboxes, frame accounting, and idle workers' sleep and wake-up. */
#define _GNU_SOURCE
#include "scheduler.h"

#include "../base/backoff.h"
#include "../base/clock.h"
#include "../base/futex.h"
#include "../base/heap.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Idle workers look for work for sys->idle_spin_ns before sleeping (worker_idle). A
 * round is one look (a scan of every queue) and a pause: tens of nanoseconds, so the
 * clock (about 20 ns) is read every this many rounds; a round that yields may last a
 * time slice, so a yielding spin reads it every round. */
#define KILN_IDLE_CLOCK_EVERY 16
/* A sleeper wakes by itself after this long (a safety net against a lost wake-up; the
 * protocol below has none, this only bounds the damage of a bug). */
#define KILN_SLEEP_TIMEOUT_NS 50000000L

/* The last tag handed to a job system (kiln_jobs_counter_owner); relaxed: only its
 * uniqueness matters. */
static _Atomic uint32_t system_tags;

/* The CPUs this process may run on (its affinity mask, which taskset and container
 * limits narrow), else the online ones; at least 1. */
static uint32_t usable_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return (uint32_t)CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (uint32_t)online : 1;
}

void kiln_job_system_init(kiln_job_system *sys, uint32_t workers, uint32_t idle_spin_us,
                          kiln_log_sink log) {
    memset(sys, 0, sizeof *sys);
    sys->tag = kiln_add_relaxed(&system_tags, 1) + 1;
    pthread_mutex_init(&sys->table_lock, NULL);
    pthread_mutex_init(&sys->batch_lock, NULL);
    sys->threads = workers + 1;
    sys->idle_spin_ns = (uint64_t)idle_spin_us * 1000u;
    sys->cpus = usable_cpus();
    sys->log = log;
}

void kiln_job_system_fini(kiln_job_system *sys) {
    pthread_mutex_destroy(&sys->table_lock);
    pthread_mutex_destroy(&sys->batch_lock);
}

bool kiln_job_queue_init(kiln_job_system *sys, kiln_job_queue *q, void *owner, uint32_t id,
                         bool is_worker) {
    q->owner = owner;
    q->id = id;
    kiln_store_relaxed(&q->is_worker, is_worker);
    q->job_depth = q->frame_depth = 0;
    q->isolated = 0;
    kiln_store_relaxed(&q->work_state, KILN_WORK_IDLE);   /* published with the queue */
    /* Its frame memory is empty: it serves the epoch of now (no reset before its first job). */
    kiln_store_relaxed(&q->work_epoch, sys->frame_epoch ? kiln_load_acquire(sys->frame_epoch) : 0);
    q->rng = 0x9e3779b97f4a7c15ull * (id + 1);
    /* A reused queue starts a new context's figures (retire zeroed submitted and
     * completed); relaxed: stats read them only once the context is listed, later. */
    kiln_store_relaxed(&q->jobs_run, 0);
    kiln_store_relaxed(&q->jobs_stolen, 0);
    kiln_store_relaxed(&q->steal_misses, 0);
    kiln_store_relaxed(&q->sleep_ns, 0);
    kiln_store_relaxed(&q->sleeps, 0);
    kiln_store_relaxed(&q->idle_spin_ns, 0);
    if (!kiln_load_relaxed(&q->deques[0].ring)) {   /* a reused queue keeps its rings */
        if (!kiln_deque_init(&q->deques[0], 256) || !kiln_deque_init(&q->deques[1], 64) ||
            !kiln_deque_init(&q->deques[2], 16)) {
            kiln_deque_fini(&q->deques[0]);
            kiln_deque_fini(&q->deques[1]);
            kiln_log(&sys->log, KILN_LOGITEM_JOB_OUT_OF_MEMORY,
                     "context %u: no memory for its job deques", id);
            return false;
        }
        pthread_mutex_init(&q->inbox_lock, NULL);
    }
    pthread_mutex_lock(&q->inbox_lock);   /* a reused queue's inbox was closed at retire */
    q->inbox_closed = false;
    pthread_mutex_unlock(&q->inbox_lock);
    pthread_mutex_lock(&sys->table_lock);
    uint32_t slot = 0;
    while (slot < KILN_MAX_QUEUES && kiln_load_relaxed(&sys->queues[slot])) slot++;
    if (slot < KILN_MAX_QUEUES) {
        q->slot = slot;
        kiln_store_relaxed(&q->hook, sys->hook);   /* published by the release below */
        kiln_store_release(&sys->queues[slot], q);   /* thieves see an initialised queue */
        if (slot + 1 > kiln_load_relaxed(&sys->queue_limit))
            kiln_store_release(&sys->queue_limit, slot + 1);
        kiln_store_relaxed(&sys->registered, kiln_load_relaxed(&sys->registered) + 1);   /* a hint */
    }
    pthread_mutex_unlock(&sys->table_lock);
    if (slot == KILN_MAX_QUEUES) {
        kiln_log(&sys->log, KILN_LOGITEM_CONTEXT_TOO_MANY,
                 "context %u: all %d job queue slots are in use (workers included)", id,
                 KILN_MAX_QUEUES);
        return false;
    }
    return true;
}

static bool take_pinned(kiln_job_queue *q, kiln_task *task, bool background);
static void run_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task);

void kiln_job_queue_retire(kiln_job_system *sys, kiln_job_queue *q) {
    /* Closed first: a pin that comes after this is refused (and its submitter told), so
     * nothing lands in an inbox that nobody will ever run. */
    pthread_mutex_lock(&q->inbox_lock);
    q->inbox_closed = true;
    q->life++;   /* a pin taken before this names a life that is over */
    pthread_mutex_unlock(&q->inbox_lock);
    /* Its own tasks only, never stolen ones: a stolen frame job would allocate from the
     * frame arena that the detaching context deletes next, under its parent's feet. Nor
     * may the jobs it runs now steal when they wait. */
    q->steals = false;
    kiln_task task;
    while (take_pinned(q, &task, true) || kiln_deque_take(&q->deques[KILN_DEQUE_HIGH], &task) ||
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
    kiln_store_relaxed(&sys->registered, kiln_load_relaxed(&sys->registered) - 1);   /* a hint */
    pthread_mutex_unlock(&sys->table_lock);
}

void kiln_job_queue_fini(kiln_job_queue *q) {
    if (!kiln_load_relaxed(&q->deques[0].ring)) return;
    for (int i = 0; i < 3; i++) kiln_deque_fini(&q->deques[i]);
    kiln_inbox_fini(&q->inbox);
    kiln_lanes_fini(&q->background);
    pthread_mutex_destroy(&q->inbox_lock);
}

/* Wakes up to n sleeping workers; a load and nothing else when none sleeps. */
static void wake(kiln_job_system *sys, size_t n) {
    kiln_fence_seq_cst();   /* the push before the sleepers load (pairs with sleep_once) */
    uint32_t sleeping = kiln_load_relaxed(&sys->sleepers);
    if (kiln_likely(sleeping == 0)) return;
    kiln_add_relaxed(&sys->wake_epoch, 1);
    kiln_futex_wake(&sys->wake_epoch, n < sleeping ? (int)n : (int)sleeping);
}

typedef enum { PIN_QUEUED, PIN_CLOSED, PIN_NO_MEMORY } pin_result;

/* Under inbox_lock: the counts that finders read without it (release: a finder that
 * sees one sees the tasks, through the lock it then takes). */
static void publish_hints(kiln_job_queue *q) {
    kiln_store_release(&q->inbox_hint[KILN_INBOX_FRAME], q->inbox.count);
    kiln_store_release(&q->inbox_hint[KILN_INBOX_BACKGROUND], q->background.count);
}

/* A pin_life for a pin taken at the call: whatever life target is in. */
#define KILN_PIN_LIFE_NOW UINT64_MAX
/* A pin_life that no life matches (taken while target detached). */
#define KILN_PIN_LIFE_OVER (UINT64_MAX - 1)

uint64_t kiln_jobs_pin_life(kiln_job_queue *target) {
    pthread_mutex_lock(&target->inbox_lock);
    uint64_t life = target->inbox_closed ? KILN_PIN_LIFE_OVER : target->life;
    pthread_mutex_unlock(&target->inbox_lock);
    return life;
}

/* Appends to target's frame inbox or its background lanes, unless it is closed or in a
 * life other than pin_life. The tasks of one call share their flags and counter. */
static pin_result inbox_append(kiln_job_queue *target, const kiln_task *tasks, size_t count,
                               uint64_t pin_life) {
    bool background = (tasks[0].flags & KILN_TASK_BACKGROUND) != 0;
    pthread_mutex_lock(&target->inbox_lock);
    bool closed = target->inbox_closed || (pin_life != KILN_PIN_LIFE_NOW && pin_life != target->life);
    bool queued = !closed &&
                  (background ? kiln_lanes_push(&target->background, tasks[0].counter, tasks, count)
                              : kiln_inbox_push(&target->inbox, tasks, count));
    pin_result result = closed ? PIN_CLOSED : queued ? PIN_QUEUED : PIN_NO_MEMORY;
    if (queued) publish_hints(target);
    pthread_mutex_unlock(&target->inbox_lock);
    return result;
}

static void run_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task);

/* Tasks that could not be queued, run here: counted already, dropping them would hang
 * their waiters. */
static KILN_COLD void run_here(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks,
                               size_t count) {
    for (size_t i = 0; i < count; i++) {
        kiln_task copy = tasks[i];
        run_task(sys, q, &copy);
    }
}

/* Tasks counted already: to pinned's inbox, or to q's deque. false, with nothing
 * queued, when the pinned target's inbox is closed. */
static bool push_tasks(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks, size_t count,
                       int priority, kiln_job_queue *pinned, uint64_t pin_life) {
    if (pinned) {
        pin_result result = inbox_append(pinned, tasks, count, pin_life);
        if (result == PIN_CLOSED) return false;
        if (result == PIN_NO_MEMORY) {
            kiln_log(&sys->log, KILN_LOGITEM_JOB_OUT_OF_MEMORY,
                     "context %u: no memory to queue pinned jobs for context %u; the submitting "
                     "thread runs them", q->id, pinned->id);
            run_here(sys, q, tasks, count);
        } else if (pinned != q) {
            wake(sys, KILN_MAX_QUEUES);   /* the target may be a sleeping worker */
        }
        return true;
    }
    kiln_deque *deque = &q->deques[(tasks[0].flags & KILN_TASK_BACKGROUND) ? KILN_DEQUE_BACKGROUND
                                   : priority ? KILN_DEQUE_HIGH : KILN_DEQUE_NORMAL];
    for (size_t i = 0; i < count; i++) {
        if (kiln_unlikely(!kiln_deque_push(deque, &tasks[i]))) {
            kiln_log(&sys->log, KILN_LOGITEM_JOB_OUT_OF_MEMORY,
                     "context %u: the job deque could not grow; running the job here", q->id);
            run_here(sys, q, &tasks[i], 1);
        }
    }
    wake(sys, count);
    return true;
}

bool kiln_jobs_submit(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks, size_t count,
                      int priority, kiln_job_queue *pinned) {
    /* Counted before anyone can run them (frame_quiet reads completions first, so a
     * count that came late could make a running job look finished). */
    uint64_t frame_jobs = (tasks[0].flags & KILN_TASK_BACKGROUND) ? 0 : count;
    uint64_t submitted = kiln_load_relaxed(&q->submitted);
    kiln_store_relaxed(&q->submitted, submitted + frame_jobs);
    if (push_tasks(sys, q, tasks, count, priority, pinned, KILN_PIN_LIFE_NOW)) return true;
    /* Never queued: taken back (a frame end that saw the count only waited longer). */
    kiln_store_relaxed(&q->submitted, submitted);
    return false;
}

void kiln_batch_list(kiln_job_system *sys, kiln_batch *batch) {
    pthread_mutex_lock(&sys->batch_lock);
    batch->prev = NULL;
    batch->next = sys->waiting;
    if (sys->waiting) sys->waiting->prev = batch;
    sys->waiting = batch;
    pthread_mutex_unlock(&sys->batch_lock);
}

void kiln_batch_free(kiln_job_system *sys, kiln_batch *batch) {
    pthread_mutex_lock(&sys->batch_lock);
    if (batch->prev) batch->prev->next = batch->next;
    else sys->waiting = batch->next;
    if (batch->next) batch->next->prev = batch->prev;
    pthread_mutex_unlock(&sys->batch_lock);
    kiln_heap_free(batch);
}

void kiln_jobs_free_waiting(kiln_job_system *sys) {
    pthread_mutex_lock(&sys->batch_lock);
    kiln_batch *batch = sys->waiting;
    sys->waiting = NULL;
    pthread_mutex_unlock(&sys->batch_lock);
    size_t calls = 0, jobs = 0;
    for (kiln_batch *next; batch; batch = next) {
        next = batch->next;
        calls++;
        jobs += batch->count;
        kiln_heap_free(batch);
    }
    if (calls)
        kiln_log(&sys->log, KILN_LOGITEM_JOB_STILL_WAITING,
                 "kiln_destroy: %zu jobs of %zu calls with after still waited for their "
                 "prerequisites (a cycle, or counters whose jobs never finished); freed "
                 "without running", jobs, calls);
}

/* Every task of the batch on q (or its pin); the record is gone afterwards. */
void kiln_jobs_queue_batch(kiln_job_system *sys, kiln_job_queue *q, kiln_batch *batch) {
    const kiln_task *tasks = batch->tasks;
    size_t count = batch->count;
    if (!push_tasks(sys, q, tasks, count, batch->priority, batch->pinned, batch->pin_life)) {
        /* Counted on the submitter's submitted, which only its owner writes: these count
         * as completed here instead (release, as run_task's), so the sums still meet. */
        kiln_log(&sys->log, KILN_LOGITEM_JOB_PIN_DETACHING,
                 "%zu jobs of context %u pinned to context %u waited for their prerequisites, "
                 "and context %u detached meanwhile; they are not run (their counter finishes "
                 "on context %u)", count, batch->submitter, batch->pinned_id, batch->pinned_id, q->id);
        if (!(tasks[0].flags & KILN_TASK_BACKGROUND))
            kiln_store_release(&q->completed, kiln_load_relaxed(&q->completed) + count);
        if (tasks[0].counter) kiln_counter_finish(sys, q, tasks[0].counter, count);
    }
    kiln_batch_free(sys, batch);
}

/* Takes the list, clears the flag (the counter's last touch), then queues each batch
 * whose last prerequisite this was (the proof: jobs/graph.c). Cold: only a counter that
 * batches wait on gets here. */
KILN_COLD void kiln_counter_drain(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter) {
    kiln_wait_link *link = kiln_exchange_acq_rel(&counter->waiters, NULL);
    uint64_t drained = KILN_COUNTER_WAITERS;
    kiln_cas_strong_seq_cst(&counter->pending, &drained, 0);   /* fails only when reused */
    while (link) {
        kiln_wait_link *next = link->next;   /* before the decrement that may free the record */
        kiln_batch *batch = link->batch;
        if (kiln_sub_acq_rel(&batch->pending, 1) == 1) kiln_jobs_queue_batch(sys, q, batch);
        link = next;
    }
}

/* Owner: one pinned task: a frame one, else with background any background one. */
static bool take_pinned(kiln_job_queue *q, kiln_task *task, bool background) {
    bool frame = kiln_load_acquire(&q->inbox_hint[KILN_INBOX_FRAME]) != 0;
    if (kiln_likely(!frame && (!background ||
                               kiln_load_acquire(&q->inbox_hint[KILN_INBOX_BACKGROUND]) == 0)))
        return false;
    pthread_mutex_lock(&q->inbox_lock);
    bool got = kiln_inbox_pop(&q->inbox, task) ||
               (background && kiln_lanes_pop_any(&q->background, task));
    publish_hints(q);
    pthread_mutex_unlock(&q->inbox_lock);
    return got;
}

/* Owner: the oldest pinned background task that counts on counter, if any: a thread
 * waiting for its own background job runs it, and no other; O(1) whatever else waits. */
static bool take_pinned_counted(kiln_job_queue *q, const kiln_counter_state *counter,
                                kiln_task *task) {
    if (kiln_likely(kiln_load_acquire(&q->inbox_hint[KILN_INBOX_BACKGROUND]) == 0)) return false;
    pthread_mutex_lock(&q->inbox_lock);
    bool got = kiln_lanes_take(&q->background, counter, task);
    publish_hints(q);
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
            kiln_cpu_pause();   /* lost a race for a non-empty deque: try it again */
        }
        if (r == KILN_STEAL_OK) {
            kiln_owner_inc(&q->jobs_stolen);
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
    if (take_pinned(q, task, background)) return true;
    if (take_own(&q->deques[KILN_DEQUE_HIGH], task) || steal(sys, q, KILN_DEQUE_HIGH, task))
        return true;
    if (take_own(&q->deques[KILN_DEQUE_NORMAL], task) || steal(sys, q, KILN_DEQUE_NORMAL, task))
        return true;
    if (background && (take_own(&q->deques[KILN_DEQUE_BACKGROUND], task) ||
                       steal(sys, q, KILN_DEQUE_BACKGROUND, task)))
        return true;
    kiln_owner_inc(&q->steal_misses);
    return false;
}

static void wait_counter(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                         bool background);

/* Halves task down to its grain, and submits the upper halves together, largest first
 * (what thieves take first), counted on pieces: one counter write and one wake-up
 * check (a fence) per split task instead of one per half. Not inlined: its 3.5 KiB of
 * halves leave the stack before run_range waits (nested waits stack up). */
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
 * upper halves. Inside call_task: a job running on q. */
static void run_range(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
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
    kiln_counter_state pieces = { 0, 0, NULL };
    split_range(sys, q, task, &pieces);
    task->fn.range((kiln_ctx *)q->owner, (size_t)task->begin, (size_t)task->end, task->arg);
    wait_counter(sys, q, &pieces, sys->threads == 1 || (task->flags & KILN_TASK_BACKGROUND));
}

static inline void call_fn(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    if (task->flags & KILN_TASK_RANGE) run_range(sys, q, task);
    else task->fn.job((kiln_ctx *)q->owner, task->arg);
}

/* The outermost background job of this thread, between the two on_background calls. */
static KILN_COLD void call_background(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    sys->on_background(q->owner, true);
    call_fn(sys, q, task);
    sys->on_background(q->owner, false);
}

/* ---- A worker's frame work (KILN_WORK_* in scheduler.h) ----
 * A worker is BUSY from its first frame job until it runs dry (or turns to a background
 * job), so a burst of frame jobs costs one CAS, and each job a load of the epoch. */

/* IDLE -> BUSY; waits out a claim. acquire: the driver's reset under the claim happens
 * before this thread's next use of its frame memory. */
static KILN_COLD void become_busy(kiln_job_queue *q) {
    uint32_t idle = KILN_WORK_IDLE;
    while (!kiln_cas_strong_acquire(&q->work_state, &idle, KILN_WORK_BUSY)) {
        idle = KILN_WORK_IDLE;   /* CLAIMED: the driver is resetting our frame memory */
        kiln_cpu_pause();
    }
}

/* BUSY -> IDLE. release: every use of the frame memory so far happens before a claim. */
static inline void become_idle(kiln_job_queue *q) {
    kiln_store_release(&q->work_state, KILN_WORK_IDLE);
}

/* A frame ended since this worker's frame memory was last reset, and no frame job runs
 * on it: the memory belongs to ended frames. The seq_cst fence orders the epoch read
 * before every handle get of the jobs that follow (the rule in runtime/handle_reclaim.h:
 * a slot freed before the bump is stale to them). */
static KILN_COLD void adopt_epoch(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch) {
    sys->reset_frame(q->owner);
    kiln_store_release(&q->work_epoch, epoch);   /* the driver's settle then sees the reset */
    kiln_fence_seq_cst();
}

/* Before a frame job that no other frame job on this thread encloses. */
static inline void enter_frame_work(kiln_job_system *sys, kiln_job_queue *q) {
    /* Only this thread stores BUSY, so reading BUSY here is exact. */
    if (kiln_load_relaxed(&q->work_state) != KILN_WORK_BUSY) become_busy(q);
    uint64_t epoch = kiln_load_acquire(sys->frame_epoch);
    if (kiln_unlikely(epoch != kiln_load_relaxed(&q->work_epoch))) adopt_epoch(sys, q, epoch);
}

/* Around every task: frame depth, and for a worker its frame work. A background job
 * never holds a frame end back, so a worker turning to one leaves its frame work
 * first; a frame job nested in a background job leaves it again when it returns. */
static inline void work_begin(kiln_job_system *sys, kiln_job_queue *q, bool frame_job) {
    if (frame_job) {
        if (q->frame_depth++ == 0 && kiln_load_relaxed(&q->is_worker)) enter_frame_work(sys, q);
    } else if (kiln_load_relaxed(&q->is_worker) && q->frame_depth == 0 &&
               kiln_load_relaxed(&q->work_state) == KILN_WORK_BUSY) {
        become_idle(q);
    }
}

static inline void work_end(kiln_job_queue *q, bool frame_job) {
    if (frame_job && --q->frame_depth == 0 && kiln_load_relaxed(&q->is_worker) && q->job_depth > 1)
        become_idle(q);
}

/* The task itself, with its flags as the running ones meanwhile. */
static inline void call_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    uint32_t outer = q->running_flags;
    bool frame_job = !(task->flags & KILN_TASK_BACKGROUND);
    q->running_flags = (uint32_t)task->flags;
    q->job_depth++;
    work_begin(sys, q, frame_job);
    if (kiln_unlikely((task->flags & ~outer & KILN_TASK_BACKGROUND) && sys->on_background))
        call_background(sys, q, task);
    else
        call_fn(sys, q, task);
    work_end(q, frame_job);
    q->job_depth--;
    q->running_flags = outer;
}

/* The root is a job on q like its pieces (job_depth, running_flags, frame work), so
 * what q's owner may not do inside a job it may not do in the root's lowest piece
 * either; it was never submitted, so nothing counts it as run or completed, and the
 * hook does not record it. */
void kiln_jobs_run_range(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    call_task(sys, q, task);
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
    kiln_owner_inc(&q->jobs_run);
    if (!(task->flags & KILN_TASK_BACKGROUND))   /* release: frame end then sees its writes */
        kiln_store_release(&q->completed, kiln_load_relaxed(&q->completed) + 1);
    /* No batch waits on the counter: one compare more, predicted (kiln_counter_finish). */
    if (task->counter) kiln_counter_finish(sys, q, task->counter, 1);
}

bool kiln_jobs_run_one(kiln_job_system *sys, kiln_job_queue *q, bool background) {
    kiln_task task;
    if (!find_task(sys, q, &task, background)) return false;
    run_task(sys, q, &task);
    return true;
}

/* ---- Isolated waits: only tasks of one isolation tag (scheduler.h) ----
 * Other queues: the oldest task, only when it carries the tag (kiln_deque_steal_tagged
 * leaves any other in place). Its own deque: the newest ones, setting aside (on the
 * stack) up to KILN_ISOLATED_REACH of other tags to reach one with the tag below them,
 * all put back in their order before the task runs or the search moves on, so no task
 * is hidden from thieves while this thread runs or spins; then its oldest one. */
#define KILN_ISOLATED_REACH 32

static __attribute__((noinline)) bool take_own_tagged(kiln_deque *deque, kiln_task *task,
                                                      uint64_t tag) {
    if (!kiln_deque_looks_busy(deque)) return false;
    kiln_task aside[KILN_ISOLATED_REACH];
    size_t set_aside = 0;
    bool found = false;
    while (set_aside < KILN_ISOLATED_REACH && kiln_deque_take(deque, task)) {
        if (task->isolation == tag) {
            found = true;
            break;
        }
        aside[set_aside++] = *task;
    }
    /* Back where they were: each take made room for its push, so none grows the ring. */
    while (set_aside > 0) kiln_deque_push(deque, &aside[--set_aside]);
    if (found) return true;
    kiln_steal_result r;
    while ((r = kiln_deque_steal_tagged(deque, task, tag)) == KILN_STEAL_ABORT) kiln_cpu_pause();
    return r == KILN_STEAL_OK;
}

/* One pass over the other queues' oldest tasks, as steal() makes, for tag only. */
static bool steal_tagged(kiln_job_system *sys, kiln_job_queue *q, int priority, kiln_task *task,
                         uint64_t tag) {
    if (!q->steals) return false;
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *victim = kiln_load_acquire(&sys->queues[i]);
        if (!victim || victim == q || !kiln_deque_looks_busy(&victim->deques[priority])) continue;
        kiln_steal_result r;
        while ((r = kiln_deque_steal_tagged(&victim->deques[priority], task, tag)) == KILN_STEAL_ABORT)
            kiln_cpu_pause();
        if (r == KILN_STEAL_OK) {
            kiln_owner_inc(&q->jobs_stolen);
            return true;
        }
    }
    return false;
}

/* find_task for an isolated wait: pinned tasks (any), then tagged ones by priority. */
static bool find_task_isolated(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task,
                               bool background, uint64_t tag) {
    if (take_pinned(q, task, background)) return true;
    for (int d = KILN_DEQUE_HIGH; d >= KILN_DEQUE_NORMAL; d--)
        if (take_own_tagged(&q->deques[d], task, tag) || steal_tagged(sys, q, d, task, tag))
            return true;
    if (background && (take_own_tagged(&q->deques[KILN_DEQUE_BACKGROUND], task, tag) ||
                       steal_tagged(sys, q, KILN_DEQUE_BACKGROUND, task, tag)))
        return true;
    kiln_owner_inc(&q->steal_misses);
    return false;
}

/* Runs tasks until the counter reads zero; background ones too when background; inside
 * an isolated wait (q->isolated), only tasks of its tag, and when none is found and
 * there are no workers (background), any task: the counter's jobs may wait for
 * prerequisites of other tags (kiln_run_desc.after), which nobody else would run.
 * Without background, still the background jobs pinned to this thread that count on
 * this very counter: nobody else may run them, and the waiter asked for them (looked
 * for only when nothing else ran: one hint load). */
static void wait_counter(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                         bool background) {
    unsigned idle = 0;
    uint64_t tag = q->isolated;
    while (kiln_load_acquire(&counter->pending) != 0) {
        kiln_task task;
        if (tag ? find_task_isolated(sys, q, &task, background, tag) ||
                      (background && find_task(sys, q, &task, background))
                : find_task(sys, q, &task, background)) {
            run_task(sys, q, &task);
            idle = 0;
        } else if (!background && take_pinned_counted(q, counter, &task)) {
            run_task(sys, q, &task);
            idle = 0;
        } else {
            kiln_spin_round(++idle, 1);
        }
    }
}

void kiln_jobs_wait(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                    bool isolate) {
    /* Background jobs only where no worker would ever take them. */
    bool background = sys->threads == 1;
    if (!isolate || q->isolated) {
        wait_counter(sys, q, counter, background);
        return;
    }
    /* The counter's jobs carry its address (kiln_jobs_isolation), and so does what they
     * submit while running here. */
    q->isolated = (uint64_t)(uintptr_t)counter;
    wait_counter(sys, q, counter, background);
    q->isolated = 0;
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

/* Claims an idle worker and resets its frame memory, or waits while it finishes the
 * frame job it runs, which then resets its own (see the header). */
static void settle_worker(kiln_job_system *sys, kiln_job_queue *q, kiln_job_queue *w, uint64_t epoch) {
    unsigned idle = 0;
    while (kiln_load_acquire(&w->work_epoch) != epoch) {
        uint32_t state = KILN_WORK_IDLE;
        /* acquire: the worker's last uses of its frame memory happen before the reset */
        if (kiln_cas_strong_acquire(&w->work_state, &state, KILN_WORK_CLAIMED)) {
            sys->reset_frame(w->owner);
            kiln_store_relaxed(&w->work_epoch, epoch);
            kiln_store_release(&w->work_state, KILN_WORK_IDLE);   /* the worker's next CAS sees both */
            return;
        }
        kiln_task task;   /* busy: its job may be waiting for one pinned to us */
        if (take_pinned(q, &task, false)) {
            run_task(sys, q, &task);
            idle = 0;
        } else {
            kiln_spin_round(++idle, 1);
        }
    }
}

void kiln_jobs_settle_workers(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch) {
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *w = kiln_load_acquire(&sys->queues[i]);
        if (w && kiln_load_relaxed(&w->is_worker)) settle_worker(sys, q, w, epoch);
    }
}

/* Frame jobs until the frame is quiet. Without workers, background jobs too once no
 * frame job is left to run and the frame is not quiet: a frame job may wait for one
 * (kiln_run_desc.after), and nobody else would run it. */
void kiln_jobs_drain_frame(kiln_job_system *sys, kiln_job_queue *q) {
    bool background = sys->threads == 1;
    unsigned idle = 0;
    for (;;) {
        if (kiln_jobs_run_one(sys, q, false)) idle = 0;
        else if (frame_quiet(sys)) return;
        else if (background && kiln_jobs_run_one(sys, q, true)) idle = 0;
        else kiln_spin_round(++idle, 1);
    }
}

/* Any queue with work this worker could take? (Checked after announcing sleep.) */
static bool work_visible(kiln_job_system *sys, kiln_job_queue *q) {
    if (kiln_load_acquire(&q->inbox_hint[KILN_INBOX_FRAME]) != 0 ||
        kiln_load_acquire(&q->inbox_hint[KILN_INBOX_BACKGROUND]) != 0)
        return true;
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
 * or pushed before it, and then the re-check sees the work. again: this sleep follows
 * one that timed out (the safety net), not a spin: not counted as a new sleep. Returns
 * whether the sleep timed out with no wake-up (the epoch unchanged): the worker then
 * looks once and sleeps again, without a new spin, so that a long idle_spin_us costs
 * one spin per idle period, not one per timeout. */
static bool sleep_once(kiln_job_system *sys, kiln_job_queue *q, bool again) {
    uint32_t epoch = kiln_load_acquire(&sys->wake_epoch);
    bool timed_out = false;
    kiln_add_seq_cst(&sys->sleepers, 1);
    kiln_fence_seq_cst();
    if (!work_visible(sys, q) && !kiln_load_acquire(&sys->shutdown)) {
        uint64_t start = kiln_now_ns();
        if (!again) kiln_owner_inc(&q->sleeps);
        kiln_futex_wait(&sys->wake_epoch, epoch, KILN_SLEEP_TIMEOUT_NS);
        kiln_owner_add(&q->sleep_ns, kiln_now_ns() - start);
        timed_out = kiln_load_acquire(&sys->wake_epoch) == epoch;
    }
    kiln_sub_seq_cst(&sys->sleepers, 1);
    return timed_out;
}

/* A worker's spin between running dry and finding work or sleeping (owner-only). */
typedef struct idle_spin {
    unsigned round;      /* empty looks so far; 0: not spinning */
    bool     yields;     /* gives the core away every round: more threads than CPUs */
    uint64_t started;    /* the clock at the first empty look */
    uint64_t counted;    /* the clock up to which idle_spin_ns counts this spin */
} idle_spin;

/* Adds the spin's time up to now to idle_spin_ns: at every clock read, so that stats
 * read during a long spin see it grow. */
static inline void count_idle(kiln_job_queue *q, idle_spin *spin, uint64_t now) {
    kiln_owner_add(&q->idle_spin_ns, now - spin->counted);
    spin->counted = now;
}

/* One empty look's wait; false once the spin has lasted sys->idle_spin_ns: time to
 * sleep. Oversubscribed (the runtime's threads outnumber the CPUs), every round
 * yields: the thread whose work this one waits for, or which holds a job it would
 * steal, may need this core. Otherwise the rounds pause, and once the pauses are over
 * every 8th yields (kiln_spin_round): a spin that keeps failing leaves the core to
 * whatever else is runnable on the machine. */
static bool worker_idle(kiln_job_system *sys, kiln_job_queue *q, idle_spin *spin) {
    if (spin->round++ == 0) {
        spin->yields = kiln_load_relaxed(&sys->registered) > sys->cpus;
        spin->started = spin->counted = kiln_now_ns();
    }
    if (spin->yields) sched_yield();
    else kiln_spin_round(spin->round, 8);
    if (!spin->yields && spin->round % KILN_IDLE_CLOCK_EVERY != 0) return true;
    uint64_t now = kiln_now_ns();
    count_idle(q, spin, now);
    if (now - spin->started < sys->idle_spin_ns) return true;
    spin->round = 0;
    return false;
}

void kiln_jobs_worker_loop(kiln_job_system *sys, kiln_job_queue *q) {
    idle_spin spin = { 0, false, 0, 0 };
    bool resting = false;   /* the last sleep timed out: look once, then sleep again */
    while (!kiln_load_acquire(&sys->shutdown)) {
        kiln_task task;
        if (find_task(sys, q, &task, true)) {
            if (spin.round) {   /* work after empty looks: the spin ends here */
                count_idle(q, &spin, kiln_now_ns());
                spin.round = 0;
            }
            resting = false;
            run_task(sys, q, &task);
            continue;
        }
        /* Ran dry: no frame work held, so frame end may claim this worker. */
        if (kiln_load_relaxed(&q->work_state) == KILN_WORK_BUSY) become_idle(q);
        if (resting || !worker_idle(sys, q, &spin)) resting = sleep_once(sys, q, resting);
    }
    if (spin.round) count_idle(q, &spin, kiln_now_ns());
    become_idle(q);   /* shut down: kiln_destroy's retire runs what is left */
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
    kiln_futex_wake(&sys->wake_epoch, KILN_MAX_QUEUES);
}
