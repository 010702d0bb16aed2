/* jobs/scheduler.c — finding, running and stealing tasks, splitting ranges, waiting,
 * pinned inboxes, frame accounting, and idle workers' sleep and wake-up. */
#define _GNU_SOURCE
#include "scheduler.h"

#include "../base/backoff.h"
#include "../base/clock.h"
#include "../base/futex.h"
#include "../base/sys_alloc.h"
#include "counter.h"

#include <limits.h>
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
/* A drain's sleep where membarrier is missing: a wake-up lost to the race it would
 * close costs at most this (base/membarrier.h). */
#define KILN_DRAIN_POLL_NS 200000L

/* The last tag handed to a job system (in a counter's word, jobs/counter.h); relaxed: only its
 * uniqueness matters. */
static _Atomic uint32_t system_tags;

/* Isolated waits handed a tag so far. relaxed: only its uniqueness matters. */
static _Atomic uint64_t isolated_waits;

/* A tag no other isolated wait of the process has had, nor any counter's address (odd;
 * counters are 8-byte aligned): a job left queued by an earlier isolated wait whose
 * counter had the same address is no job of this one. 2^63 waits before it wraps. */
static uint64_t isolation_token(void) {
    return (kiln_add_relaxed(&isolated_waits, 1) << 1) | 1;
}

/* The word that threads asleep in a wait (wait_sleep) sleep on, for every job system at
 * once: a counter's last decrement wakes its sleepers without knowing their system (a
 * thread of one runtime may wait on a counter that another's jobs count). Bumped, then
 * woken, by kiln_counter_finished (a counter with KILN_COUNTER_SLEEPERS reached zero),
 * by wake (work was queued while a waiter of that system slept) and at shutdown. */
static _Atomic uint32_t waiters_word;

/* release: a sleeper that reads the new value (wait_sleep's acquire load) sees what
 * came before the bump: the counter's zero, the frame job's completed count. */
void kiln_jobs_wake_waiters(void) {
    kiln_add_release(&waiters_word, 1);
    kiln_futex_wake(&waiters_word, INT_MAX);
}

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
    sys->counter_tag = kiln_counter_tag_bits(sys->tag);
    pthread_mutex_init(&sys->table_lock, NULL);
    pthread_mutex_init(&sys->batch_lock, NULL);
    sys->threads = workers + 1;
    sys->idle_spin_ns = (uint64_t)idle_spin_us * 1000u;
    sys->cpus = usable_cpus();
    sys->log = log;
}

void kiln_job_system_fini(kiln_job_system *sys) {
    for (kiln_batch *batch = sys->spare_batches, *next; batch; batch = next) {
        next = batch->next;
        kiln_sys_free(batch);
    }
    sys->spare_batches = NULL;
    pthread_mutex_destroy(&sys->table_lock);
    pthread_mutex_destroy(&sys->batch_lock);
}

bool kiln_job_queue_init(kiln_job_system *sys, kiln_job_queue *q, void *owner, uint32_t id,
                         bool is_worker) {
    q->owner = owner;
    q->id = id;
    kiln_store_relaxed(&q->is_worker, is_worker);
    q->job_depth = q->background_depth = 0;
    q->deep_warned = false;
    q->stack_lo = 0;   /* a reused queue may serve another thread */
    q->running_epoch = 0;
    q->memory_epoch = KILN_FRAME_MEMORY_OWN;
    q->fenced_epoch = 0;
    q->drives_clock = false;
    q->steals = true;
    q->isolated = 0;
    q->rng = 0x9e3779b97f4a7c15ull * (id + 1);
    /* A reused queue starts a new context's figures (retire zeroed submitted and
     * completed); relaxed: stats read them only once the context is listed, later. */
    kiln_store_relaxed(&q->jobs_run, 0);
    kiln_store_relaxed(&q->range_roots, 0);
    kiln_store_relaxed(&q->jobs_stolen, 0);
    kiln_store_relaxed(&q->steal_misses, 0);
    kiln_store_relaxed(&q->sleep_ns, 0);
    kiln_store_relaxed(&q->sleeps, 0);
    kiln_store_relaxed(&q->idle_spin_ns, 0);
    if (!kiln_load_relaxed(&q->deques[0].ring)) {   /* a reused queue keeps its rings */
        static const int64_t capacity[KILN_DEQUES] = { 256, 64, 16, 16 };   /* they grow */
        bool made = true;
        for (int d = 0; d < KILN_DEQUES && made; d++) made = kiln_deque_init(&q->deques[d], capacity[d]);
        if (!made) {
            for (int d = 0; d < KILN_DEQUES; d++) kiln_deque_fini(&q->deques[d]);   /* NULL rings: nothing */
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

/* Counts a task taken from deque d off the hints (priority_queued, high_background). */
static inline bool took(kiln_job_system *sys, int d) {
    if (kiln_unlikely(d != KILN_DEQUE_NORMAL)) {
        kiln_sub_relaxed(&sys->priority_queued, 1);
        if (d == KILN_DEQUE_BACKGROUND_HIGH) kiln_sub_relaxed(&sys->high_background, 1);
    }
    return true;
}

/* Owner: take, but skip the fence of an empty deque (only the owner pushes, so an
 * empty look at its own deque is exact). */
static bool take_own(kiln_deque *deque, kiln_task *task) {
    return kiln_deque_looks_busy(deque) && kiln_deque_take(deque, task);
}

/* Owner: one of its own tasks of deque d, counted off the hints. */
static bool take_own_counted(kiln_job_system *sys, kiln_job_queue *q, int d, kiln_task *task) {
    return take_own(&q->deques[d], task) && took(sys, d);
}

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
    uint64_t ran = 0;
    while (take_pinned(q, &task, true) || take_own_counted(sys, q, KILN_DEQUE_HIGH, &task) ||
           take_own_counted(sys, q, KILN_DEQUE_BACKGROUND_HIGH, &task) ||
           take_own_counted(sys, q, KILN_DEQUE_NORMAL, &task) ||
           take_own_counted(sys, q, KILN_DEQUE_BACKGROUND, &task)) {
        run_task(sys, q, &task);
        ran++;
    }
    if (ran) kiln_add_relaxed(&sys->retire_runs, ran);
    /* Its counts move to the system's totals in the same critical section as frame_quiet
     * reads them, so no sum ever counts them twice or misses them. */
    pthread_mutex_lock(&sys->table_lock);
    for (int p = 0; p < 2; p++) {
        sys->retired_completed[p] += kiln_load_acquire(&q->completed[p]);
        sys->retired_submitted[p] += kiln_load_relaxed(&q->submitted[p]);
        kiln_store_relaxed(&q->completed[p], 0);
        kiln_store_relaxed(&q->submitted[p], 0);
    }
    kiln_store_release(&sys->queues[q->slot], NULL);
    kiln_store_relaxed(&sys->registered, kiln_load_relaxed(&sys->registered) - 1);   /* a hint */
    pthread_mutex_unlock(&sys->table_lock);
}

void kiln_job_queue_fini(kiln_job_queue *q) {
    if (!kiln_load_relaxed(&q->deques[0].ring)) return;
    for (int i = 0; i < KILN_DEQUES; i++) kiln_deque_fini(&q->deques[i]);
    kiln_inbox_fini(&q->inbox);
    kiln_lanes_fini(&q->background);
    pthread_mutex_destroy(&q->inbox_lock);
}

/* Wakes up to n sleeping workers, and every thread of the system asleep in a wait (it
 * may run what was queued); a load and nothing else when none sleeps. */
static void wake(kiln_job_system *sys, size_t n) {
    kiln_fence_seq_cst();   /* the push before the sleepers load (pairs with sleep_once, wait_sleep) */
    uint32_t sleeping = kiln_load_relaxed(&sys->sleepers);
    if (kiln_likely(sleeping == 0)) return;
    /* release: a sleeper whose acquire read sees the new epoch sees the work queued
     * before it (C11's order, not the futex call's barrier). */
    kiln_add_release(&sys->wake_epoch, 1);
    kiln_futex_wake(&sys->wake_epoch, n < sleeping ? (int)n : (int)sleeping);
    if (kiln_load_relaxed(&sys->waiters_asleep) != 0) kiln_jobs_wake_waiters();
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
static inline void leave_jobs(kiln_job_system *sys, kiln_job_queue *q);

static KILN_COLD void run_here(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks,
                               size_t count) {
    for (size_t i = 0; i < count; i++) {
        kiln_task copy = tasks[i];
        run_task(sys, q, &copy);
    }
    leave_jobs(sys, q);
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
    int d = (tasks[0].flags & KILN_TASK_BACKGROUND)
                ? (priority ? KILN_DEQUE_BACKGROUND_HIGH : KILN_DEQUE_BACKGROUND)
                : priority ? KILN_DEQUE_HIGH : KILN_DEQUE_NORMAL;
    kiln_deque *deque = &q->deques[d];
    if (kiln_unlikely(d != KILN_DEQUE_NORMAL)) {
        kiln_add_relaxed(&sys->priority_queued, (int64_t)count);
        if (d == KILN_DEQUE_BACKGROUND_HIGH) kiln_add_relaxed(&sys->high_background, (int64_t)count);
    }
    for (size_t i = 0; i < count; i++) {
        if (kiln_unlikely(!kiln_deque_push(deque, &tasks[i]))) {
            kiln_log(&sys->log, KILN_LOGITEM_JOB_OUT_OF_MEMORY,
                     "context %u: the job deque could not grow; running the job here", q->id);
            took(sys, d);   /* counted in the hint above, never queued */
            run_here(sys, q, &tasks[i], 1);
        }
    }
    wake(sys, count);
    return true;
}

/* The epoch a frame job submitted now outside any frame job belongs to, counted, by a
 * thread that does not drive the clock (model step "submit"): the seq_cst store of the
 * count and the seq_cst load after it pair with the driver's close, an RMW, and the
 * fence after it. Either the reload still reads epoch, and then the count comes before
 * the close in their single order and the drain reads it; or it moved, and the count is
 * taken back (a drain that saw it only waited longer) and made again. */
KILN_COLD uint32_t kiln_jobs_count_frame_outside(kiln_job_system *sys, kiln_job_queue *q, uint64_t count) {
    for (;;) {
        uint64_t epoch = kiln_load_seq_cst(sys->frame_epoch);
        _Atomic uint64_t *submitted = &q->submitted[epoch & 1];
        uint64_t before = kiln_load_relaxed(submitted);
        kiln_store_seq_cst(submitted, before + count);
        if (kiln_load_seq_cst(sys->frame_epoch) == epoch) return kiln_epoch_tag(epoch);
        kiln_store_relaxed(submitted, before);
    }
}

bool kiln_jobs_submit(kiln_job_system *sys, kiln_job_queue *q, const kiln_task *tasks, size_t count,
                      int priority, kiln_job_queue *pinned) {
    return push_tasks(sys, q, tasks, count, priority, pinned, KILN_PIN_LIFE_NOW);
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
    bool keep = batch->small && sys->spare_count < KILN_BATCH_SPARES;
    if (keep) {
        batch->next = sys->spare_batches;
        sys->spare_batches = batch;
        sys->spare_count++;
    }
    pthread_mutex_unlock(&sys->batch_lock);
    if (!keep) kiln_sys_free(batch);
}

kiln_batch *kiln_batch_spare(kiln_job_system *sys) {
    pthread_mutex_lock(&sys->batch_lock);
    kiln_batch *batch = sys->spare_batches;
    if (batch) {
        sys->spare_batches = batch->next;
        sys->spare_count--;
    }
    pthread_mutex_unlock(&sys->batch_lock);
    return batch;
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
        kiln_sys_free(batch);
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
            kiln_jobs_count_completed(sys, q, kiln_task_epoch(&tasks[0]), count);
        if (tasks[0].counter) kiln_counter_finish(sys, q, tasks[0].counter, count);
    }
    kiln_batch_free(sys, batch);
}


/* For waiting batches: takes the list, clears the flag (the counter's last touch), then
 * queues each batch whose last prerequisite this was (the proof: jobs/graph.c). For
 * sleepers: wakes them, touching only the waiters' word (the proof: wait_sleep below).
 * Cold: only a counter that batches wait on, or that a waiter slept on, gets here. */
KILN_COLD void kiln_counter_finished(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                                     uint64_t left) {
    if (left & KILN_COUNTER_WAITERS) {
        kiln_wait_link *link = kiln_exchange_acq_rel(&counter->waiters, NULL);
        uint64_t drained = left;
        kiln_cas_strong_seq_cst(&counter->pending, &drained, 0);   /* fails only when reused */
        while (link) {
            kiln_wait_link *next = link->next;   /* before the decrement that may free the record */
            kiln_batch *batch = link->batch;
            if (kiln_sub_acq_rel(&batch->pending, 1) == 1) kiln_jobs_queue_batch(sys, q, batch);
            link = next;
        }
    }
    if (left & KILN_COUNTER_SLEEPERS) kiln_jobs_wake_waiters();
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

/* A task of deque d: q's own (newest first), else one stolen (oldest first). */
static inline bool take_one(kiln_job_system *sys, kiln_job_queue *q, int d, kiln_task *task) {
    return (take_own(&q->deques[d], task) || steal(sys, q, d, task)) && took(sys, d);
}

/* find_task's look at the jobs that go before normal frame jobs, while priority_queued
 * says some are queued: HIGH frame jobs, then (background) HIGH background ones, as
 * jobs.h promises, and once in KILN_BACKGROUND_TURN looks the normal background ones
 * too, so that a frame that never runs dry cannot starve them. Out of line: a look with
 * none queued pays one load for all this. */
static __attribute__((noinline)) bool take_priority(kiln_job_system *sys, kiln_job_queue *q,
                                                    kiln_task *task, bool background) {
    if (take_one(sys, q, KILN_DEQUE_HIGH, task)) return true;
    if (!background) return false;
    if (kiln_load_relaxed(&sys->high_background) > 0 && take_one(sys, q, KILN_DEQUE_BACKGROUND_HIGH, task))
        return true;
    return ++q->looks % KILN_BACKGROUND_TURN == 0 && take_one(sys, q, KILN_DEQUE_BACKGROUND, task);
}

static bool find_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task, bool background) {
    if (take_pinned(q, task, background)) return true;
    if (kiln_unlikely(kiln_load_relaxed(&sys->priority_queued) > 0) &&
        take_priority(sys, q, task, background))
        return true;
    if (take_one(sys, q, KILN_DEQUE_NORMAL, task)) return true;
    /* No normal job: every other deque, whatever the hints say (they lag). */
    if (take_one(sys, q, KILN_DEQUE_HIGH, task) ||
        (background && (take_one(sys, q, KILN_DEQUE_BACKGROUND_HIGH, task) ||
                        take_one(sys, q, KILN_DEQUE_BACKGROUND, task))))
        return true;
    kiln_owner_inc(&q->steal_misses);
    return false;
}

static void wait_pieces(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
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
    /* Children of the running range task: its epoch, already in their flags (copies of
     * its own), counted before it completes (model step "submit", inside a job). */
    if (!(task->flags & KILN_TASK_BACKGROUND)) kiln_jobs_count_submitted(q, kiln_task_epoch(task), splits);
    push_tasks(sys, q, uppers, splits, (task->flags & KILN_TASK_HIGH) ? 1 : 0, NULL, KILN_PIN_LIFE_NOW);
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
    wait_pieces(sys, q, &pieces, sys->threads == 1 || (task->flags & KILN_TASK_BACKGROUND));
}

static inline void call_fn(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    if (task->flags & KILN_TASK_RANGE) run_range(sys, q, task);
    else task->fn.job((kiln_ctx *)q->owner, task->arg);
}

/* A background job: a worker is in background (handle reclaim) from the start of its
 * outermost one to that one's return, whatever runs between (B1, a frame job in it, B2
 * in that: B2's end leaves B1 protected; model step "background"). Only workers: an
 * attached thread's reclaim point is its own kiln_handles_quiescent, and running a job
 * is none. */
static KILN_COLD void call_background(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    bool outermost = q->background_depth++ == 0 && kiln_load_relaxed(&q->is_worker) &&
                     sys->on_background;
    if (outermost) sys->on_background(q->owner, true);
    call_fn(sys, q, task);
    if (outermost) sys->on_background(q->owner, false);
    q->background_depth--;
}

/* ---- Frame memory by epoch (model step "enter") ----
 * A frame job runs in the frame memory of its own epoch, whichever thread runs it: the
 * owner's arena for that epoch's parity, which frame end gives back once every job of
 * the epoch has finished. Switching is a call on the cold path: a burst of one epoch's
 * jobs switches once. A switch to an epoch this thread has not fenced for fences
 * (seq_cst): the close of the epoch before it happened before this job was submitted,
 * so after the fence every handle free that read an older epoch is visible to this
 * job's gets (runtime/handle_reclaim.h). */
static KILN_COLD void enter_job_frame(kiln_job_system *sys, kiln_job_queue *q, uint32_t epoch) {
    if (epoch != KILN_FRAME_MEMORY_OWN && epoch != q->fenced_epoch) {
        kiln_fence_seq_cst();
        q->fenced_epoch = epoch;
    }
    q->memory_epoch = epoch;
    sys->frame_memory(q->owner, epoch);
}

/* Before the scheduler returns to code of q's owner outside jobs (a kiln_wait, frame
 * end, parallel_for's root or a submission that ran jobs in place, called from outside
 * jobs): the owner's own frame memory is current again. Workers have no such code. */
static inline void leave_jobs(kiln_job_system *sys, kiln_job_queue *q) {
    if (q->job_depth == 0 && kiln_unlikely(q->memory_epoch != KILN_FRAME_MEMORY_OWN) &&
        !kiln_load_relaxed(&q->is_worker))
        enter_job_frame(sys, q, KILN_FRAME_MEMORY_OWN);
}

/* The task itself, with its flags as the running ones meanwhile, and a frame job's
 * epoch as the running one (its children's) and its frame memory as the current. */
static inline void call_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    uint64_t outer = kiln_load_relaxed(&q->running_flags);   /* the owner's own stores */
    const kiln_counter_state *outer_counter = kiln_load_relaxed(&q->running_counter);
    uintptr_t outer_fn = kiln_load_relaxed(&q->running_fn);
    kiln_store_relaxed(&q->running_flags, task->flags);
    kiln_store_relaxed(&q->running_counter, task->counter);
    kiln_store_relaxed(&q->running_fn, (uintptr_t)task->fn.job);   /* either member */
    q->job_depth++;
    if (kiln_unlikely(task->flags & KILN_TASK_BACKGROUND)) {
        call_background(sys, q, task);
    } else {
        uint32_t outer_epoch = q->running_epoch, epoch = kiln_task_epoch(task);
        q->running_epoch = epoch;
        if (kiln_unlikely(q->memory_epoch != epoch)) enter_job_frame(sys, q, epoch);
        call_fn(sys, q, task);
        q->running_epoch = outer_epoch;
        /* Back to the enclosing frame job's memory. After the outermost job the memory
         * stays: the next job is likely of the same epoch, and a thread with code of its
         * own outside jobs gets its own memory back when the scheduler returns to that
         * code (leave_jobs), not after every job a wait runs. */
        if (kiln_unlikely(outer_epoch && outer_epoch != q->memory_epoch))
            enter_job_frame(sys, q, outer_epoch);
    }
    q->job_depth--;
    kiln_store_relaxed(&q->running_flags, outer);
    kiln_store_relaxed(&q->running_counter, outer_counter);
    kiln_store_relaxed(&q->running_fn, outer_fn);
}

/* The root is a job on q like its pieces (job_depth, running_flags, frame work), so
 * what q's owner may not do inside a job it may not do in the root's lowest piece
 * either; it was never submitted, so nothing counts it as run or completed, and the
 * hook does not record it. */
void kiln_jobs_run_range(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task) {
    if ((task->flags & KILN_TASK_BACKGROUND) || q->running_epoch != 0) {
        /* Inside a frame job the root is that job's: its epoch, counted with it. */
        if (!(task->flags & KILN_TASK_BACKGROUND))
            kiln_tasks_set_epoch(task, 1, q->running_epoch);
        call_task(sys, q, task);
        return;
    }
    /* Outside jobs the root is counted like a submitted job, so that no frame end
     * resets the memory of its epoch under it. */
    uint32_t epoch = kiln_jobs_count_frame(sys, q, 1);
    kiln_owner_inc(&q->range_roots);
    kiln_tasks_set_epoch(task, 1, epoch);
    call_task(sys, q, task);
    kiln_jobs_count_completed(sys, q, epoch, 1);
    leave_jobs(sys, q);
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
    if (!(task->flags & KILN_TASK_BACKGROUND)) kiln_jobs_count_completed(sys, q, kiln_task_epoch(task), 1);
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
 * Other queues: the oldest task, only when it carries the tag (kiln_deque_steal_if
 * leaves any other in place). Its own deque: the newest ones, setting aside (on the
 * stack) up to KILN_ISOLATED_REACH of other tags to reach one with the tag below them,
 * all put back in their order before the task runs or the search moves on, so no task
 * is hidden from thieves while this thread runs or spins; then its oldest one. */
#define KILN_ISOLATED_REACH 32

static __attribute__((noinline)) bool take_own_matching(kiln_deque *deque, kiln_task *task,
                                                        kiln_steal_match match, uint64_t tag) {
    if (!kiln_deque_looks_busy(deque)) return false;
    kiln_task aside[KILN_ISOLATED_REACH];
    size_t set_aside = 0;
    bool found = false;
    while (set_aside < KILN_ISOLATED_REACH && kiln_deque_take(deque, task)) {
        if (kiln_task_matches(task, match, tag)) {
            found = true;
            break;
        }
        aside[set_aside++] = *task;
    }
    /* Back where they were: each take made room for its push, so none grows the ring. */
    while (set_aside > 0) kiln_deque_push(deque, &aside[--set_aside]);
    if (found) return true;
    kiln_steal_result r;
    while ((r = kiln_deque_steal_if(deque, task, match, tag)) == KILN_STEAL_ABORT) kiln_cpu_pause();
    return r == KILN_STEAL_OK;
}

/* One pass over the other queues' oldest tasks, as steal() makes, for those that match
 * (kiln_task_matches: their isolation, frame epoch tag or counter is tag). */
static bool steal_matching(kiln_job_system *sys, kiln_job_queue *q, int priority, kiln_task *task,
                           kiln_steal_match match, uint64_t tag) {
    if (!q->steals) return false;
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *victim = kiln_load_acquire(&sys->queues[i]);
        if (!victim || victim == q || !kiln_deque_looks_busy(&victim->deques[priority])) continue;
        kiln_steal_result r;
        while ((r = kiln_deque_steal_if(&victim->deques[priority], task, match, tag)) == KILN_STEAL_ABORT)
            kiln_cpu_pause();
        if (r == KILN_STEAL_OK) {
            kiln_owner_inc(&q->jobs_stolen);
            return true;
        }
    }
    return false;
}

/* A task of deque d that matches: q's own (take_own_matching), else another queue's
 * oldest (steal_matching); counted off the hints. */
static bool take_matching(kiln_job_system *sys, kiln_job_queue *q, int d, kiln_task *task,
                          kiln_steal_match match, uint64_t tag) {
    return (take_own_matching(&q->deques[d], task, match, tag) ||
            steal_matching(sys, q, d, task, match, tag)) &&
           took(sys, d);
}

/* find_task for an isolated wait: pinned tasks (any), then tagged ones by priority. */
static bool find_task_isolated(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task,
                               bool background, uint64_t tag) {
    if (take_pinned(q, task, background)) return true;
    for (int d = KILN_DEQUE_HIGH; d >= KILN_DEQUE_NORMAL; d--)
        if (take_matching(sys, q, d, task, KILN_STEAL_ISOLATION, tag)) return true;
    for (int d = KILN_DEQUE_BACKGROUND_HIGH; background && d >= KILN_DEQUE_BACKGROUND; d--)
        if (take_matching(sys, q, d, task, KILN_STEAL_ISOLATION, tag)) return true;
    kiln_owner_inc(&q->steal_misses);
    return false;
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

/* The background jobs of the counter a wait is on, which a wait that leaves background
 * jobs to the workers still takes: those pinned to this thread (nobody else may run
 * them; one hint load when there are none), and on a worker those on any background
 * deque that are counted on the counter: a worker's background job that waits on
 * background children it queued would otherwise wait for ever once every worker did
 * the same. Other threads leave those to the workers, as jobs.h says. */
static bool wait_own_background(kiln_job_system *sys, kiln_job_queue *q, const kiln_counter_state *counter,
                                kiln_task *task) {
    if (take_pinned_counted(q, counter, task)) return true;
    if (!kiln_load_relaxed(&q->is_worker)) return false;
    /* Those counted on its counter, whatever isolation they carry (one submitted inside
     * another thread's isolated wait carries that wait's tag); and inside an isolated
     * wait those of its tag: what the jobs this wait runs submit carries it
     * (kiln_jobs_isolation), their background children too, which nobody else would
     * then run. */
    const kiln_steal_match match[2] = { KILN_STEAL_COUNTER, KILN_STEAL_ISOLATION };
    const uint64_t tags[2] = { (uint64_t)(uintptr_t)counter, q->isolated };
    for (int t = 0; t < 2 && tags[t] != 0; t++)
        for (int d = KILN_DEQUE_BACKGROUND_HIGH; d >= KILN_DEQUE_BACKGROUND; d--)
            if (take_matching(sys, q, d, task, match[t], tags[t])) return true;
    return false;
}

/* A task a wait on counter may run: any, and background ones too when background;
 * inside an isolated wait (q->isolated), only tasks of its tag, the ones of the counter
 * waited on (submitted outside isolation, they carry its address: the wait cannot end
 * without them; the tag itself is a token, never a counter's address, isolation_token),
 * and when none is found and there are no workers (background), any task: the
 * counter's jobs may wait for prerequisites of other tags (kiln_run_desc.after), which
 * nobody else would run. */
static inline __attribute__((always_inline)) bool find_wait_any(kiln_job_system *sys, kiln_job_queue *q,
                                                                const kiln_counter_state *counter,
                                                                bool background, kiln_task *task) {
    uint64_t tag = q->isolated;
    return tag ? find_task_isolated(sys, q, task, background, tag) ||
                     find_task_isolated(sys, q, task, background, (uint64_t)(uintptr_t)counter) ||
                     (background && find_task(sys, q, task, background))
               : find_task(sys, q, task, background);
}

/* find_wait_task while the hints say background jobs are queued: the counter's own
 * first (a frame whose jobs never run out would otherwise hold the wait for as long as
 * it lasts), then the rest. Out of line: waits rarely meet background jobs. */
static KILN_COLD bool find_wait_own_first(kiln_job_system *sys, kiln_job_queue *q,
                                          const kiln_counter_state *counter, kiln_task *task) {
    return wait_own_background(sys, q, counter, task) || find_wait_any(sys, q, counter, false, task);
}

/* A task a wait on counter may run (find_wait_any). Without background, still the
 * background jobs of this very counter (wait_own_background): the wait cannot end
 * without them, and the workers may all be waiting the same way. Those come first while
 * the hints say background jobs are queued (on a deque, or pinned to q), else last,
 * since the hints lag. */
static inline __attribute__((always_inline)) bool find_wait_task(kiln_job_system *sys, kiln_job_queue *q,
                                                                 const kiln_counter_state *counter,
                                                                 bool background, kiln_task *task) {
    if (!background && kiln_unlikely(kiln_load_relaxed(&sys->priority_queued) > 0 ||
                                     kiln_load_relaxed(&q->inbox_hint[KILN_INBOX_BACKGROUND]) != 0))
        return find_wait_own_first(sys, q, counter, task);
    return find_wait_any(sys, q, counter, background, task) ||
           (!background && wait_own_background(sys, q, counter, task));
}

/* Flags the counter as slept on, so that the decrement that makes its count zero wakes
 * the sleeping waiters (kiln_counter_finished). false when the count is zero already:
 * nothing to sleep for (a zero count with batches still to drain is a running thread's
 * few steps: waited out by spinning). seq_cst CAS from a non-zero count: the decrement
 * to zero comes after it in the word's order, so it reads the flag. */
static bool flag_sleepers(kiln_counter_state *counter) {
    uint64_t word = kiln_load_relaxed(&counter->pending);
    for (;;) {
        if (KILN_COUNTER_COUNT(word) == 0) return false;
        if (word & KILN_COUNTER_SLEEPERS) return true;
        if (kiln_cas_strong_seq_cst(&counter->pending, &word, word | KILN_COUNTER_SLEEPERS)) return true;
    }
}

/* A waiter (a wait, a drain) announces itself to the threads that queue work: sleepers
 * (wake's first load) and waiters_asleep (so that wake bumps the waiters' word), then a
 * fence before its look, which pairs with wake's fence. */
static void waiter_announce(kiln_job_system *sys) {
    kiln_add_seq_cst(&sys->sleepers, 1);
    kiln_add_seq_cst(&sys->waiters_asleep, 1);
    kiln_fence_seq_cst();
}

static void waiter_withdraw(kiln_job_system *sys) {
    kiln_sub_seq_cst(&sys->waiters_asleep, 1);
    kiln_sub_seq_cst(&sys->sleepers, 1);
}

/* Sleeps on the waiters' word unless it moved from seen, at most timeout_ns, counted in
 * q's sleeps (unless again: a sleep after one that timed out) and sleep_ns. true when it
 * ended with the word unchanged (timed out). */
static bool waiter_futex(kiln_job_queue *q, uint32_t seen, long timeout_ns, bool again) {
    uint64_t start = kiln_now_ns();
    if (!again) kiln_owner_inc(&q->sleeps);
    kiln_futex_wait(&waiters_word, seen, timeout_ns);
    kiln_owner_add(&q->sleep_ns, kiln_now_ns() - start);
    return kiln_load_acquire(&waiters_word) == seen;
}

/* One sleep of a wait that found nothing to run (model: jobs/wait_sleep.pml, whose step
 * names are in brackets). Flag the counter [flag], read the waiters' word [read],
 * announce [announce], look again for a task [look] and at the counter [check], sleep
 * [sleep]. No wake-up is lost:
 * - the counter's zero: the last decrement reads the flag and bumps the word after it
 *   (release); a read that sees the bump sees the zero (acquire), so either the check
 *   reads zero, or the word read is older and the futex sees the bump or the wake;
 * - queued work: a submitter pushes, fences, then reads sleepers (wake); this thread
 *   announces, fences, then looks. One of them sees the other's store, as for an idle
 *   worker (sleep_once).
 * Returns true with *task when the look found one; *timed_out when the sleep ended with
 * the word unchanged (the safety net's timeout, or a stuck wait's clock). */
static bool wait_sleep(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                       bool background, kiln_task *task, bool again, bool *timed_out) {
    *timed_out = false;
    if (!flag_sleepers(counter)) return false;                               /* [flag] */
    uint32_t seen = kiln_load_acquire(&waiters_word);                        /* [read] */
    waiter_announce(sys);                                                    /* [announce] */
    bool found = find_wait_task(sys, q, counter, background, task);          /* [look] */
    if (!found && kiln_counter_busy(kiln_load_acquire(&counter->pending)) &&  /* [check] */
        !kiln_load_acquire(&sys->shutdown))
        *timed_out = waiter_futex(q, seen, KILN_SLEEP_TIMEOUT_NS, again);    /* [sleep] */
    waiter_withdraw(sys);                                                    /* [withdraw] */
    return found;
}

/* A wait's progress, for the stuck-wait warning: a task it ran, or a change of the
 * counter's word. None for sys->stuck_wait_ns: one JOB_WAIT_STUCK per wait. */
typedef struct wait_watch {
    uint64_t word;     /* the counter's word (a drain: the frame's jobs left) at the last progress */
    uint64_t since;    /* the clock then; 0: not read since the last progress */
    bool     warned;
} wait_watch;

/* A watch's step at an idle moment (a spin's end, a sleep's), seen the figure whose
 * change is progress: true, once, when there has been none for sys->stuck_wait_ns (then
 * counted; *waited says how long). Cold enough for a clock read: once per spin or sleep. */
static bool watch_stuck(kiln_job_system *sys, kiln_job_queue *q, wait_watch *watch, uint64_t seen,
                        uint64_t *waited) {
    uint64_t now = kiln_now_ns();
    if (watch->since == 0 || seen != watch->word) {
        watch->word = seen;
        watch->since = now;
        return false;
    }
    if (watch->warned || now - watch->since < sys->stuck_wait_ns) return false;
    watch->warned = true;
    kiln_owner_inc(&q->waits_stuck);
    *waited = now - watch->since;
    return true;
}

/* The wait's watch: its counter's word is its progress. */
static void watch_wait(kiln_job_system *sys, kiln_job_queue *q, const kiln_counter_state *counter,
                       wait_watch *watch) {
    uint64_t waited;
    if (watch_stuck(sys, q, watch, kiln_load_relaxed(&counter->pending), &waited))
        kiln_jobs_report_stuck(sys, q, counter, waited);
}

/* A wait's idle state (owner-only, on the waiter's stack), set up afresh for each
 * stretch of empty looks (wait_for_work), so that a wait that keeps finding work pays
 * nothing for it. */
typedef struct wait_idle {
    idle_spin  spin;
    wait_watch watch;
    bool       resting;   /* the last sleep timed out: look once, then sleep again */
} wait_idle;

/* One empty look's wait: the spin (false), or once it is over a sleep, true with *task
 * when the sleep's look found one. Cold: the wait has nothing to run. */
static KILN_COLD bool wait_idle_step(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                                     bool background, wait_idle *idle, kiln_task *task) {
    if (!idle->resting && worker_idle(sys, q, &idle->spin)) return false;
    watch_wait(sys, q, counter, &idle->watch);
    return wait_sleep(sys, q, counter, background, task, idle->resting, &idle->resting);
}

/* Waits nested a multiple of this deep (jobs run by waits inside jobs) look at their
 * stack: often enough for a 32 KiB stack (some 60 levels), rarely enough to cost a fib
 * tree nothing. */
#define KILN_WAIT_DEPTH_CHECK 16

/* A wait nested KILN_WAIT_DEPTH_CHECK or more jobs deep: once a quarter or less of the
 * thread's stack is left, says so once per thread (JOB_WAIT_TOO_DEEP): each level of
 * nesting (a job whose wait runs the next) takes a few hundred bytes, and a stack that
 * runs out ends the process. Cold. */
static KILN_COLD void check_stack(kiln_job_system *sys, kiln_job_queue *q) {
    if (q->deep_warned) return;
    if (q->stack_lo == 0) {
        pthread_attr_t attr;
        void *lo = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
        pthread_attr_getstack(&attr, &lo, &size);
        pthread_attr_destroy(&attr);
        q->stack_lo = (uintptr_t)lo;
        q->stack_size = size;
    }
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here < q->stack_lo || here - q->stack_lo > q->stack_size / 4) return;
    q->deep_warned = true;
    kiln_log(&sys->log, KILN_LOGITEM_JOB_WAIT_TOO_DEEP,
             "context %u: waits nested %u jobs deep have used three quarters of its %zu KiB "
             "stack (%zu KiB left); each level (a job whose kiln_wait runs the next) takes a "
             "few hundred bytes, and a stack that runs out ends the process", q->id,
             q->job_depth, q->stack_size / 1024, (size_t)(here - q->stack_lo) / 1024);
}

/* A wait's stretch of empty looks, out of line so that the wait loop carries no idle
 * state: spins as an idle worker does (worker_idle: sys->idle_spin_ns), then sleeps
 * (wait_sleep) until the counter's zero or new work wakes it; after a sleep that timed
 * out it looks once and sleeps again, without a new spin. true with *task when a look
 * found one (the stretch ends: a task run is progress), false once the counter reads
 * zero. Cold: the wait has nothing to run. */
static KILN_COLD bool wait_for_work(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                                    bool background, kiln_task *task) {
    wait_idle idle = { .spin = { 0, false, 0, 0 } };
    bool found;
    for (;;) {
        if (wait_idle_step(sys, q, counter, background, &idle, task)) {
            found = true;
            break;
        }
        if (!kiln_counter_busy(kiln_load_acquire(&counter->pending))) {
            found = false;
            break;
        }
        if (find_wait_task(sys, q, counter, background, task)) {
            found = true;
            break;
        }
    }
    if (idle.spin.round) count_idle(q, &idle.spin, kiln_now_ns());
    return found;
}

/* Runs tasks until the counter reads zero (find_wait_task says which; wait_for_work
 * when it finds none). */
static inline __attribute__((always_inline)) void wait_counter(kiln_job_system *sys, kiln_job_queue *q,
                                                               kiln_counter_state *counter, bool background) {
    if (kiln_unlikely(q->job_depth >= KILN_WAIT_DEPTH_CHECK && q->job_depth % KILN_WAIT_DEPTH_CHECK == 0))
        check_stack(sys, q);
    while (kiln_counter_busy(kiln_load_acquire(&counter->pending))) {
        kiln_task task;
        if (!find_wait_task(sys, q, counter, background, &task) &&
            !wait_for_work(sys, q, counter, background, &task))
            break;
        run_task(sys, q, &task);
    }
}

/* run_range's wait for its upper halves: the wait loop, out of line (one copy of it
 * inlined per kind of wait). */
static void wait_pieces(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                        bool background) {
    wait_counter(sys, q, counter, background);
}

void kiln_jobs_wait(kiln_job_system *sys, kiln_job_queue *q, kiln_counter_state *counter,
                    bool isolate) {
    /* Background jobs only where no worker would ever take them. An isolated wait's tag
     * is a token of its own (isolation_token): what its jobs submit while running here
     * carries it (kiln_jobs_isolation), and the counter's own jobs, submitted outside,
     * carry the counter's address, which it looks for too; inside an isolated wait the
     * outer tag stays. One call site, so that the wait loop is inlined here (a call cost
     * J2 a dozen instructions per wait). */
    uint64_t outer = q->isolated;
    if (isolate && !outer) q->isolated = isolation_token();
    wait_counter(sys, q, counter, sys->threads == 1);
    q->isolated = outer;
    leave_jobs(sys, q);
}

/* The frame jobs of the parity submitted and not yet completed: every completed count
 * first, then every submitted count (the header says why; model step "drain"), so that
 * zero is never read too early. The driver's fence after its close orders the
 * submitters' seq_cst counts before these loads. A non-zero figure is a snapshot (mod
 * 2^64: counts move while it reads). */
static uint64_t frame_left(kiln_job_system *sys, unsigned parity) {
    pthread_mutex_lock(&sys->table_lock);
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    uint64_t completed = sys->retired_completed[parity], submitted = sys->retired_submitted[parity];
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *q = kiln_load_acquire(&sys->queues[i]);
        if (q) completed += kiln_load_acquire(&q->completed[parity]);
    }
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *q = kiln_load_acquire(&sys->queues[i]);
        if (q) submitted += kiln_load_acquire(&q->submitted[parity]);
    }
    pthread_mutex_unlock(&sys->table_lock);
    return submitted - completed;
}

static bool frame_quiet(kiln_job_system *sys, unsigned parity) { return frame_left(sys, parity) == 0; }

/* find_task for the drain of epoch tag: pinned frame tasks (any epoch: only q runs
 * them), its own deques (what q submitted, or the children of what it runs), and of
 * other queues only tasks of that epoch. */
static bool find_frame_task(kiln_job_system *sys, kiln_job_queue *q, kiln_task *task, uint32_t tag) {
    if (take_pinned(q, task, false)) return true;
    for (int d = KILN_DEQUE_HIGH; d >= KILN_DEQUE_NORMAL; d--)
        if (take_own(&q->deques[d], task) || steal_matching(sys, q, d, task, KILN_STEAL_EPOCH, tag))
            return took(sys, d);
    kiln_owner_inc(&q->steal_misses);
    return false;
}

/* The drain's sleep, once it has spun with nothing to run and the frame is not done
 * (model: jobs/wait_sleep.pml, -DWITH_DRAIN; its step names are in brackets).
 * As wait_sleep, with the frame's counts for the counter: read the waiters' word,
 * announce (drain_asleep for the threads that complete frame jobs, sleepers for those
 * that queue work), make every other thread pass a barrier (kiln_membarrier: the heavy
 * half of kiln_jobs_count_completed's fence), look for a task of the frame, check the
 * counts, sleep. A thread completing a frame job either read drain_asleep after the
 * barrier, and wakes the drain, or stored its count before it, and the check sees it.
 * Where membarrier is missing the sleep is short (KILN_DRAIN_POLL_NS): a wake-up lost
 * in that race costs at most that much. Returns true with *task when the look found
 * one; *timed_out as wait_sleep's. */
static bool drain_sleep(kiln_job_system *sys, kiln_job_queue *q, uint32_t tag, unsigned parity,
                        kiln_task *task, bool again, bool *timed_out) {
    *timed_out = false;
    uint32_t seen = kiln_load_acquire(&waiters_word);                        /* [read] */
    kiln_store_relaxed(&sys->drain_asleep, 1);                               /* [dstore] */
    waiter_announce(sys);                                                    /* [announce] */
    bool exact = kiln_membarrier();                                          /* [barrier] */
    bool found = find_frame_task(sys, q, task, tag);                         /* [look] */
    if (!found && !frame_quiet(sys, parity) && !kiln_load_acquire(&sys->shutdown))   /* [dcheck] */
        *timed_out = waiter_futex(q, seen, exact ? KILN_SLEEP_TIMEOUT_NS : KILN_DRAIN_POLL_NS, again);
    kiln_store_relaxed(&sys->drain_asleep, 0);
    waiter_withdraw(sys);                                                    /* [withdraw] */
    return found;
}

/* At an idle moment of the drain (a spin's end, a sleep's): progress is a task it ran
 * (the caller restarts the watch) or a change of the frame's outstanding count; none
 * for sys->stuck_wait_ns logs one JOB_WAIT_STUCK per frame end. Cold. */
static KILN_COLD void watch_drain(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch,
                                  wait_watch *watch) {
    uint64_t left = frame_left(sys, (unsigned)(epoch & 1)), waited;
    if (watch_stuck(sys, q, watch, left, &waited)) kiln_jobs_report_stuck_frame(sys, q, epoch, left, waited);
}

/* Jobs of the closed epoch until every one of them has finished. A job of the next
 * epoch runs here only when it was pinned to q (then the drain looks at the counts
 * again right after it, so it never runs more than one after the frame is done) or
 * submitted by a job this drain runs. Without workers, any job once none of the epoch
 * is runnable and it is not done: a frame job may wait for a background job or a job
 * of the next epoch (kiln_run_desc.after), and nobody else would run those. */
void kiln_jobs_drain_frame(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch) {
    uint32_t tag = kiln_epoch_tag(epoch);
    unsigned parity = (unsigned)(epoch & 1);
    bool alone = sys->threads == 1;
    idle_spin spin = { 0, false, 0, 0 };
    wait_watch watch = { 0, 0, false };
    bool resting = false;
    for (;;) {
        kiln_task task;
        if (find_frame_task(sys, q, &task, tag)) {
            if (spin.round) {
                count_idle(q, &spin, kiln_now_ns());
                spin.round = 0;
            }
        } else if (frame_quiet(sys, parity)) {
            break;
        } else if (alone && kiln_jobs_run_one(sys, q, true)) {
            watch.since = 0;
            continue;
        } else if (resting || !worker_idle(sys, q, &spin)) {
            watch_drain(sys, q, epoch, &watch);
            if (!drain_sleep(sys, q, tag, parity, &task, resting, &resting)) continue;
        } else {
            continue;
        }
        resting = false;
        watch.since = 0;
        bool other = kiln_task_epoch(&task) != tag;
        run_task(sys, q, &task);
        if (other && frame_quiet(sys, parity)) break;
    }
    if (spin.round) count_idle(q, &spin, kiln_now_ns());
    leave_jobs(sys, q);
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
        for (int d = 0; d < KILN_DEQUES; d++)
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
        if (resting || !worker_idle(sys, q, &spin)) resting = sleep_once(sys, q, resting);
    }
    if (spin.round) count_idle(q, &spin, kiln_now_ns());
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
    /* release: a sleeper that reads the new epoch (acquire) then reads the flag set; one
     * that read the old epoch finds the futex word changed. */
    kiln_add_release(&sys->wake_epoch, 1);
    kiln_futex_wake(&sys->wake_epoch, KILN_MAX_QUEUES);
    kiln_jobs_wake_waiters();
}
