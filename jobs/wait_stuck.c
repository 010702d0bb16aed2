/* jobs/wait_stuck.c — what a stuck wait says (JOB_WAIT_STUCK): where the jobs that its
 * counter still counts are. Cold: called only when a wait has made no progress for
 * kiln_job_system.stuck_wait_ns.
 *
 * A snapshot, taken as the jobs move: other threads' deques are read as a thief reads
 * them (relaxed slot words; a ring replaced by growth stays allocated), their pinned
 * jobs under their inbox locks, the batches waiting for prerequisites under batch_lock,
 * and what each thread runs through its running_counter (relaxed). The table lock keeps
 * the set of queues still. Jobs that move between two looks, or that run nested under
 * another job, are counted as not seen. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "scheduler.h"

/* The slots of one deque looked at, at most: a report, not an inventory. */
#define STUCK_SCAN_MAX 65536
/* Contexts named in one report, at most; the others are summed. */
#define STUCK_PLACES 6

typedef struct place {
    uint32_t id;
    size_t   queued, pinned;
    bool     running;
} place;

typedef struct report {
    char  *out;
    size_t cap, used;
} report;

static void say(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(report *r, const char *fmt, ...) {
    if (r->used >= r->cap) return;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(r->out + r->used, r->cap - r->used, fmt, args);
    va_end(args);
    if (n > 0) r->used += (size_t)n < r->cap - r->used ? (size_t)n : r->cap - r->used - 1;
}

/* What a report looks for: the tasks counted on a counter (a wait), or the frame tasks
 * of an epoch (a frame end's drain; counter NULL). */
typedef struct wanted {
    const kiln_counter_state *counter;
    uint32_t                  epoch;   /* a tag (kiln_epoch_tag) when counter is NULL */
} wanted;

static bool task_wanted(const wanted *w, uint64_t counter_word, uint64_t flags) {
    return w->counter ? counter_word == (uint64_t)(uintptr_t)w->counter
                      : !(flags & KILN_TASK_BACKGROUND) && (uint32_t)(flags >> KILN_TASK_EPOCH_SHIFT) == w->epoch;
}

/* task_wanted for a pinned task (kiln_inbox_count_if). */
static bool pinned_wanted(const kiln_task *task, const void *w) {
    return task_wanted(w, (uint64_t)(uintptr_t)task->counter, task->flags);
}

/* How many tasks of [top, bottom) are wanted. */
static size_t deque_count_of(kiln_deque *deque, const wanted *w) {
    int64_t top = kiln_load_acquire(&deque->top), bottom = kiln_load_acquire(&deque->bottom);
    kiln_deque_ring *ring = kiln_load_acquire(&deque->ring);
    size_t n = 0;
    if (!ring) return 0;
    for (int64_t i = top; i < bottom && i - top < STUCK_SCAN_MAX && i - top <= ring->mask; i++) {
        /* The slot's counter and flags words (relaxed, as a thief reads the slot). */
        _Atomic uint64_t *slot = ring->slots[i & ring->mask];
        n += task_wanted(w, kiln_load_relaxed(&slot[offsetof(kiln_task, counter) / sizeof(uint64_t)]),
                         kiln_load_relaxed(&slot[offsetof(kiln_task, flags) / sizeof(uint64_t)]));
    }
    return n;
}

/* Where the wanted jobs are, on queue q: running is known for a counter's only. */
static place place_of(kiln_job_queue *q, const wanted *w) {
    place p = { .id = q->id };
    for (int d = 0; d < KILN_DEQUES; d++) p.queued += deque_count_of(&q->deques[d], w);
    pthread_mutex_lock(&q->inbox_lock);
    p.pinned = kiln_inbox_count_if(&q->inbox, pinned_wanted, w);
    if (w->counter) p.pinned += kiln_lanes_count_of(&q->background, w->counter);   /* background lanes */
    pthread_mutex_unlock(&q->inbox_lock);
    p.running = w->counter && kiln_load_relaxed(&q->running_counter) == w->counter;
    return p;
}

/* Tasks of batches not queued yet (held by their prerequisites) that are wanted. */
static size_t held_of(kiln_job_system *sys, const wanted *w) {
    size_t n = 0;
    pthread_mutex_lock(&sys->batch_lock);
    for (kiln_batch *batch = sys->waiting; batch; batch = batch->next)
        if (batch->count > 0 && task_wanted(w, (uint64_t)(uintptr_t)batch->tasks[0].counter, batch->tasks[0].flags))
            n += batch->count;
    pthread_mutex_unlock(&sys->batch_lock);
    return n;
}

/* Appends where the left wanted jobs are to r, and logs r. */
static void report_where(kiln_job_system *sys, report *r, const wanted *w, size_t left) {
    size_t seen = 0, queued_other = 0, pinned_other = 0, running_other = 0, named = 0;
    const char *sep = " ";
    pthread_mutex_lock(&sys->table_lock);
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *other = kiln_load_acquire(&sys->queues[i]);
        if (!other) continue;
        place p = place_of(other, w);
        if (!p.queued && !p.pinned && !p.running) continue;
        seen += p.queued + p.pinned + p.running;
        if (named++ >= STUCK_PLACES) {
            queued_other += p.queued;
            pinned_other += p.pinned;
            running_other += p.running;
            continue;
        }
        say(r, "%scontext %u%s:", sep, p.id, kiln_load_relaxed(&other->is_worker) ? " (worker)" : "");
        if (p.queued) say(r, " %zu queued", p.queued);
        if (p.pinned) say(r, " %zu pinned to it", p.pinned);
        if (p.running) say(r, " one running");
        sep = "; ";
    }
    pthread_mutex_unlock(&sys->table_lock);
    if (named > STUCK_PLACES)
        say(r, "%s%zu more contexts: %zu queued, %zu pinned, %zu running", sep, named - STUCK_PLACES,
            queued_other, pinned_other, running_other);
    size_t held = held_of(sys, w);
    seen += held;
    if (held) {
        say(r, "%s%zu held by prerequisites (kiln_run_desc.after)", sep, held);
        sep = "; ";
    }
    if (left > seen)
        say(r, "%s%zu not seen (%s)", sep, left - seen,
            w->counter ? "moving between threads, or running nested under other jobs"
                       : "running, or moving between threads");
    if (named == 0 && held == 0 && left > 0 && w->counter)
        say(r, " none was seen queued, pinned, running or held: unless they are between "
               "threads, nothing will decrement this counter");
    kiln_log(&sys->log, KILN_LOGITEM_JOB_WAIT_STUCK, "%s", r->out);
}

void kiln_jobs_report_stuck(kiln_job_system *sys, kiln_job_queue *q, const kiln_counter_state *counter,
                            uint64_t waited_ns) {
    char text[512];   /* kiln_log formats at most 511 bytes */
    report r = { text, sizeof text, 0 };
    size_t left = (size_t)KILN_COUNTER_COUNT(kiln_load_acquire(&counter->pending));
    say(&r, "context %u has waited %llu ms on counter %p without progress%s; it still counts %zu "
            "job%s:", q->id, (unsigned long long)(waited_ns / 1000000u), (const void *)counter,
        q->isolated ? " (in an isolated wait: it runs only that wait's jobs)" : "", left,
        left == 1 ? "" : "s");
    report_where(sys, &r, &(wanted){ .counter = counter }, left);
}

void kiln_jobs_report_stuck_frame(kiln_job_system *sys, kiln_job_queue *q, uint64_t epoch, uint64_t left,
                                  uint64_t waited_ns) {
    char text[512];
    report r = { text, sizeof text, 0 };
    say(&r, "kiln_frame_end: context %u has waited %llu ms for the jobs of frame epoch %llu without "
            "progress; %llu of them %s not done:", q->id, (unsigned long long)(waited_ns / 1000000u),
        (unsigned long long)epoch, (unsigned long long)left, left == 1 ? "is" : "are");
    report_where(sys, &r, &(wanted){ .epoch = kiln_epoch_tag(epoch) }, (size_t)left);
}
