/* stress/validate_deque.c — the Chase–Lev deque's contract (jobs/deque.h) on its own:
 * one owner pushes and takes, N thieves steal at once, and every task is taken exactly
 * once, whole, with the data the owner wrote before pushing it, while the ring grows
 * under the thieves.
 *
 * The run is cut into epochs of up to 4096 tasks, each on a fresh deque whose ring
 * starts at 2 slots. The owner (main) pushes bursts of 1 to twice the ring's capacity,
 * so the ring keeps doubling while thieves read it, and between bursts takes a random
 * number of tasks back, or all of them (racing the thieves for the last). An epoch
 * starts once every thief is running; at its end the owner takes until empty, then
 * tells the thieves, whose next steal must find the deque empty.
 *
 * What is checked, per task: its slot words arrive as the owner wrote them (its index,
 * a tag of index and epoch, a pointer to its record: a torn or stale slot read that won
 * its CAS shows here); its record's payload, a plain field the owner writes before the
 * push, reads back right (under ThreadSanitizer a push that does not publish it shows
 * as a race); its take counter goes from 0 to 1 exactly once (a task taken twice is
 * reported at the second take, one never taken at the end of its epoch).
 * Usage: validate-deque [--threads N] [--iterations N] [--seed S]; --threads is the
 * number of thieves (the owner comes on top), --iterations the number of tasks the
 * owner pushes in all. Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include "jobs/deque.h"
#include <pthread.h>
#include <sched.h>

enum {
    EPOCH_TASKS   = 4096,   /* tasks per fresh deque */
    FIRST_RING    = 2,      /* the first ring's capacity: small, so it grows often */
    OWNER         = 0,      /* taker ids: the owner 0, thief t t + 1 */
    YIELD_EVERY   = 16,     /* a thief that found the deque empty this often yields */
};

typedef struct task_record {
    uint64_t         payload;   /* written by the owner before the push, read by the taker */
    _Atomic unsigned taken;     /* how many times taken: exactly 1 at the end of the epoch */
    _Atomic unsigned taker;     /* who took it first (for the report of a second take) */
} task_record;

typedef struct thief {
    pthread_t  thread;
    unsigned   id;          /* taker id: 1 + its index */
    /* Results, read by main after the end of each epoch. */
    uint64_t   steals, aborts, empties;
} thief;

/* The deque and the records of the current epoch; main rebuilds them between the two
 * barriers that frame an epoch, and the thieves read them only inside it. */
static kiln_deque        deque;
static task_record       records[EPOCH_TASKS];
static uint64_t          epoch;
static uint64_t          epoch_tasks;
static bool              finished;       /* main, before the last start barrier */
static _Atomic unsigned  thieves_running;   /* thieves inside the epoch (relaxed: a count) */
static _Atomic bool      epoch_done;     /* the owner took its last task (release) */
static pthread_barrier_t epoch_start, epoch_end;
static stress_options    opt;

static uint64_t tag_of(uint64_t id) { return stress_mix((epoch << 32) ^ id ^ opt.seed); }
static uint64_t payload_of(uint64_t id) { return stress_mix(tag_of(id) + 1); }

static kiln_task task_of(uint64_t id) {
    return (kiln_task){ .arg = &records[id], .begin = id, .end = tag_of(id), .grain = epoch };
}

/* One task taken by `who`: whole, published, and its first take. Any thread. */
static void took(unsigned who, const kiln_task *task) {
    uint64_t id = task->begin;
    if (id >= epoch_tasks || task->arg != &records[id] || task->end != tag_of(id) ||
        task->grain != epoch || task->flags != 0 || task->counter || task->fn.job) {
        stress_fail("epoch %" PRIu64 ": taker %u got a torn or stale task (begin %" PRIu64
                    ", arg %p, end 0x%016" PRIx64 ", grain %" PRIu64 ")", epoch, who, id,
                    task->arg, task->end, task->grain);
        return;
    }
    task_record *r = &records[id];
    STRESS_CHECK(r->payload == payload_of(id), "epoch %" PRIu64 ": task %" PRIu64 " taken by %u "
                 "sees payload 0x%016" PRIx64 ", not what the owner wrote before the push",
                 epoch, id, who, r->payload);
    unsigned before = kiln_add_relaxed(&r->taken, 1u);
    if (before == 0) kiln_store_relaxed(&r->taker, who);
    else
        stress_fail("epoch %" PRIu64 ": task %" PRIu64 " taken %u times: again by %u (first by "
                    "%u; 0 is the owner)", epoch, id, before + 1, who,
                    kiln_load_relaxed(&r->taker));
}

/* ---- the thieves ---------------------------------------------------------------- */

static void *thief_main(void *arg) {
    thief *th = arg;
    for (;;) {
        pthread_barrier_wait(&epoch_start);
        if (finished) break;
        kiln_add_relaxed(&thieves_running, 1u);
        unsigned empty_run = 0;
        kiln_task task;
        while (!kiln_load_acquire(&epoch_done)) {
            switch (kiln_deque_steal(&deque, &task)) {
            case KILN_STEAL_OK:
                took(th->id, &task);
                th->steals++;
                empty_run = 0;
                break;
            case KILN_STEAL_ABORT:
                th->aborts++;
                break;
            case KILN_STEAL_EMPTY:
                th->empties++;
                if (++empty_run % YIELD_EVERY == 0) sched_yield();   /* let the owner run */
                break;
            }
        }
        kiln_steal_result last = kiln_deque_steal(&deque, &task);
        STRESS_CHECK(last == KILN_STEAL_EMPTY, "epoch %" PRIu64 ": thief %u stole from a deque "
                     "the owner had emptied (result %d)", epoch, th->id, (int)last);
        if (last == KILN_STEAL_OK) took(th->id, &task);
        pthread_barrier_wait(&epoch_end);
    }
    return NULL;
}

/* ---- the owner ------------------------------------------------------------------ */

typedef struct owner_stats {
    uint64_t pushes, takes, grows;
    int64_t  largest_ring;
} owner_stats;

static void owner_push(owner_stats *s, uint64_t id) {
    kiln_deque_ring *before = kiln_load_relaxed(&deque.ring);
    kiln_task task = task_of(id);
    records[id].payload = payload_of(id);
    if (!kiln_deque_push(&deque, &task)) {
        stress_fail("epoch %" PRIu64 ": kiln_deque_push failed (no memory to grow)", epoch);
        exit(2);
    }
    s->pushes++;
    kiln_deque_ring *after = kiln_load_relaxed(&deque.ring);
    if (after != before) {
        s->grows++;
        STRESS_CHECK(after->mask == 2 * before->mask + 1, "epoch %" PRIu64 ": the ring grew "
                     "from %" PRId64 " to %" PRId64 " slots", epoch, before->mask + 1,
                     after->mask + 1);
        if (after->mask + 1 > s->largest_ring) s->largest_ring = after->mask + 1;
    }
}

static bool owner_take(owner_stats *s) {
    kiln_task task;
    if (!kiln_deque_take(&deque, &task)) return false;
    took(OWNER, &task);
    s->takes++;
    return true;
}

/* One epoch as the owner: bursts that outgrow the ring, takes between them, then
 * everything that is left. */
static void owner_epoch(owner_stats *s, stress_rng *rng) {
    while (kiln_load_relaxed(&thieves_running) < opt.threads) sched_yield();
    uint64_t pushed = 0;
    while (pushed < epoch_tasks) {
        int64_t capacity = kiln_load_relaxed(&deque.ring)->mask + 1;
        uint64_t burst = 1 + stress_below(rng, 2 * (uint64_t)capacity);
        if (burst > epoch_tasks - pushed) burst = epoch_tasks - pushed;
        for (uint64_t k = 0; k < burst; k++) owner_push(s, pushed++);
        /* A quarter of the bursts are taken back to the last task (the owner and the
         * thieves race for it), the others partly. */
        uint64_t r = stress_next(rng);
        uint64_t takes = r % 4 == 0 ? UINT64_MAX : (r >> 2) % (burst / 2 + 2);
        for (uint64_t k = 0; k < takes && owner_take(s); k++) {
        }
        /* Now and then the thieves get this core (they may all share the owner's). */
        if ((r >> 32) % YIELD_EVERY == 0) sched_yield();
    }
    while (owner_take(s)) {
    }
    kiln_store_release(&epoch_done, true);
}

/* After the end barrier: every task of the epoch was taken (a second take was
 * reported when it happened). */
static void check_epoch(void) {
    uint64_t lost = 0, first = 0;
    for (uint64_t id = 0; id < epoch_tasks; id++) {
        if (kiln_load_relaxed(&records[id].taken) == 0 && lost++ == 0) first = id;
    }
    STRESS_CHECK(lost == 0, "epoch %" PRIu64 ": %" PRIu64 " of %" PRIu64 " tasks never taken "
                 "(the first: %" PRIu64 ")", epoch, lost, epoch_tasks, first);
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 2000000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    thief *thieves = calloc(opt.threads, sizeof *thieves);
    if (!thieves) {
        stress_fail("no memory for %u thieves", opt.threads);
        return 2;
    }
    pthread_barrier_init(&epoch_start, NULL, opt.threads + 1);
    pthread_barrier_init(&epoch_end, NULL, opt.threads + 1);
    for (unsigned t = 0; t < opt.threads; t++) {
        thieves[t].id = t + 1;
        if (pthread_create(&thieves[t].thread, NULL, thief_main, &thieves[t]) != 0) {
            stress_fail("pthread_create failed");
            return 2;
        }
    }

    stress_rng rng = stress_rng_make(opt.seed, 0);
    owner_stats s = { .largest_ring = FIRST_RING };
    double start = stress_seconds();
    uint64_t epochs = 0;
    for (uint64_t done = 0; done < opt.iterations; done += epoch_tasks, epochs++) {
        epoch = epochs;
        epoch_tasks = opt.iterations - done < EPOCH_TASKS ? opt.iterations - done : EPOCH_TASKS;
        memset(records, 0, sizeof records);
        kiln_store_relaxed(&epoch_done, false);
        kiln_store_relaxed(&thieves_running, 0);
        if (!kiln_deque_init(&deque, FIRST_RING)) {
            stress_fail("kiln_deque_init failed");
            return 2;
        }
        pthread_barrier_wait(&epoch_start);
        owner_epoch(&s, &rng);
        pthread_barrier_wait(&epoch_end);
        check_epoch();
        kiln_deque_fini(&deque);
    }
    finished = true;
    pthread_barrier_wait(&epoch_start);
    for (unsigned t = 0; t < opt.threads; t++) pthread_join(thieves[t].thread, NULL);
    double seconds = stress_seconds() - start;

    uint64_t steals = 0, aborts = 0, empties = 0;
    for (unsigned t = 0; t < opt.threads; t++) {
        steals += thieves[t].steals;
        aborts += thieves[t].aborts;
        empties += thieves[t].empties;
    }
    STRESS_CHECK(s.pushes == opt.iterations && s.takes + steals == s.pushes, "%" PRIu64
                 " pushes, %" PRIu64 " owner takes + %" PRIu64 " steals", s.pushes, s.takes,
                 steals);
    if (opt.iterations >= STRESS_MIN_ITERATIONS) {
        /* Short runs may end before the thieves get going; longer ones must steal while
         * the ring grows. */
        STRESS_CHECK(steals > 0 && s.grows > 0, "%" PRIu64 " steals, %" PRIu64 " grows: the "
                     "run never stole while the ring grew", steals, s.grows);
    }
    pthread_barrier_destroy(&epoch_start);
    pthread_barrier_destroy(&epoch_end);
    free(thieves);
    uint64_t failures = stress_failure_count();
    printf("validate-deque: %s: thieves %u, iterations %" PRIu64 ", seed %" PRIu64 ", %" PRIu64
           " tasks in %" PRIu64 " epochs in %.2fs: %" PRIu64 " owner takes, %" PRIu64 " steals (%"
           PRIu64 " aborted, %" PRIu64 " empty), %" PRIu64 " ring growths (largest %" PRId64
           " slots), %" PRIu64 " failures\n", failures ? "FAILED" : "ok", opt.threads,
           opt.iterations, opt.seed, s.pushes, epochs, seconds, s.takes, steals, aborts, empties,
           s.grows, s.largest_ring, failures);
    return failures ? 1 : 0;
}
