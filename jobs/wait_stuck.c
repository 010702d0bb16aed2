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

/* How many tasks of [top, bottom) count on counter. */
static size_t deque_count_of(kiln_deque *deque, const kiln_counter_state *counter) {
    int64_t top = kiln_load_acquire(&deque->top), bottom = kiln_load_acquire(&deque->bottom);
    kiln_deque_ring *ring = kiln_load_acquire(&deque->ring);
    size_t n = 0;
    if (!ring) return 0;
    for (int64_t i = top; i < bottom && i - top < STUCK_SCAN_MAX && i - top <= ring->mask; i++) {
        /* The slot's counter word alone (relaxed, as a thief reads the slot). */
        _Atomic uint64_t *slot = ring->slots[i & ring->mask];
        uint64_t word = kiln_load_relaxed(&slot[offsetof(kiln_task, counter) / sizeof(uint64_t)]);
        n += word == (uint64_t)(uintptr_t)counter;
    }
    return n;
}

/* Where counter's jobs are, on queue q. */
static place place_of(kiln_job_queue *q, const kiln_counter_state *counter) {
    place p = { .id = q->id };
    for (int d = 0; d < 3; d++) p.queued += deque_count_of(&q->deques[d], counter);
    pthread_mutex_lock(&q->inbox_lock);
    p.pinned = kiln_inbox_count_of(&q->inbox, counter) + kiln_lanes_count_of(&q->background, counter);
    pthread_mutex_unlock(&q->inbox_lock);
    p.running = kiln_load_relaxed(&q->running_counter) == counter;
    return p;
}

/* Tasks of batches not queued yet (held by their prerequisites) that count on counter. */
static size_t held_of(kiln_job_system *sys, const kiln_counter_state *counter) {
    size_t n = 0;
    pthread_mutex_lock(&sys->batch_lock);
    for (kiln_batch *batch = sys->waiting; batch; batch = batch->next)
        if (batch->count > 0 && batch->tasks[0].counter == counter) n += batch->count;
    pthread_mutex_unlock(&sys->batch_lock);
    return n;
}

void kiln_jobs_report_stuck(kiln_job_system *sys, kiln_job_queue *q, const kiln_counter_state *counter,
                            uint64_t waited_ns) {
    char text[512];   /* kiln_log formats at most 511 bytes */
    report r = { text, sizeof text, 0 };
    uint64_t word = kiln_load_acquire(&counter->pending);
    size_t left = (size_t)KILN_COUNTER_COUNT(word);
    say(&r, "context %u has waited %.1f s on counter %p without progress%s; it still counts %zu "
            "jobs:", q->id, (double)waited_ns / 1e9, (const void *)counter,
        q->isolated ? " (in an isolated wait: it runs only that wait's jobs)" : "", left);
    size_t seen = 0, queued_other = 0, pinned_other = 0, running_other = 0, named = 0;
    const char *sep = " ";
    pthread_mutex_lock(&sys->table_lock);
    uint32_t limit = kiln_load_acquire(&sys->queue_limit);
    for (uint32_t i = 0; i < limit; i++) {
        kiln_job_queue *other = kiln_load_acquire(&sys->queues[i]);
        if (!other) continue;
        place p = place_of(other, counter);
        if (!p.queued && !p.pinned && !p.running) continue;
        seen += p.queued + p.pinned + p.running;
        if (named++ >= STUCK_PLACES) {
            queued_other += p.queued;
            pinned_other += p.pinned;
            running_other += p.running;
            continue;
        }
        say(&r, "%scontext %u%s:", sep, p.id, kiln_load_relaxed(&other->is_worker) ? " (worker)" : "");
        if (p.queued) say(&r, " %zu queued", p.queued);
        if (p.pinned) say(&r, " %zu pinned to it", p.pinned);
        if (p.running) say(&r, " one running");
        sep = "; ";
    }
    pthread_mutex_unlock(&sys->table_lock);
    if (named > STUCK_PLACES)
        say(&r, "%s%zu more contexts: %zu queued, %zu pinned, %zu running", sep, named - STUCK_PLACES,
            queued_other, pinned_other, running_other);
    size_t held = held_of(sys, counter);
    seen += held;
    if (held) say(&r, "; %zu held by prerequisites (kiln_run_desc.after)", held);
    if (left > seen)
        say(&r, "; %zu not seen (moving between threads, or running nested under other jobs)",
            left - seen);
    if (named == 0 && held == 0 && left > 0)
        say(&r, " none was seen queued, pinned, running or held: unless they are between "
                "threads, nothing will decrement this counter");
    kiln_log(&sys->log, KILN_LOGITEM_JOB_WAIT_STUCK, "%s", text);
}
