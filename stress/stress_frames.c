/* stress/stress_frames.c — the frame lifecycle under every submitter at once: the
 * driver's frame jobs, a render thread with a frame loop of its own, and background
 * jobs, all three submitting frame jobs that take frame memory (small pieces, and
 * pieces larger than a block, which get mappings of their own) and resolve handles
 * that other jobs free and replace, while the driver ends frames.
 *
 * Every frame allocation is filled with a pattern of its own and checked again after
 * the job has spun long enough to straddle frame ends: a reset under a running job, two
 * jobs given the same bytes, or a large mapping unmapped early shows as a bad pattern,
 * an overlap or a crash. Every resolved handle item names its own handle and must go
 * on naming it until the job returns: a slot reused under a running job shows as a
 * changed name. The driver also pins a frame job to the render thread every frame
 * (run in the render thread's waits, from its own frame arena), and the render thread
 * detaches and attaches again now and then, so some pins meet a context that is
 * detaching (refused, JOB_PIN_DETACHING) or gone (JOB_BAD_PIN): nothing may be stranded.
 *
 * Beside them, the patterns of the frame clock (kiln/jobs.h, "The frame a job belongs
 * to"), all running at once:
 * 1. A pipelined render thread (attached, not the driver) keeps one frame job in
 *    flight: job n + 1 is submitted before job n may finish (job n spins until it is),
 *    so its frames overlap the driver's. Its jobs are pinned to the worker of the first
 *    background loop, so it never runs one itself, and each takes frame memory and
 *    checks its pattern.
 * 2. IO threads (attached, no frame loop, never resetting their frame arena) wait, a few
 *    times per frame, on small jobs of their own pinned to a background loop's worker,
 *    and so run the other threads' frame jobs meanwhile. Their frame memory, which the
 *    jobs they helped with take, must go back at frame ends: its bytes_in_use stays under
 *    a bound of two frames' worth of jobs, however many jobs they helped with, and is
 *    zero after the last two frame ends.
 * 3. Long holds, one at a time (the others pass quiescent points meanwhile), in turns:
 *    - an IO thread keeps a handle pointer across its waits for three frame ends, its
 *      first job freeing that handle: running jobs is no quiescent point;
 *    - with three workers or more (two run the background loops), a nest: an IO
 *      thread's background job B1, collected rounds later, gets a handle pointer, runs
 *      frame job F pinned to its own worker and waits; F runs background job B2, pinned
 *      likewise, which frees B1's handle. After B2 and F returned, B1 waits for three
 *      frame ends: the outermost background job protects its pointer until it returns.
 *    Each item must still name its handle at the end. The freeing jobs free more
 *    handles, so that the slot reaches the table at once, but the table hands out
 *    reusable slots oldest first, behind the few hundred that the hold before left: a
 *    protection that broke is caught in some runs, not in every one.
 * 4. Holders: frame jobs of the driver keep a handle pointer across kiln_wait on
 *    children that free and replace handles, that one among them.
 * 5. Handoffs: frame memory handed along a chain of jobs of one frame, on whatever
 *    threads run them: the driver fills some of its frame memory and submits job A; A
 *    checks it, fills memory of its own and submits B (a child, with a counter that it
 *    waits on, or with none and returns), which checks A's later, and so on.
 * At the end kiln_destroy must find every block back (a block freed twice or leaked is
 * logged, and any other log message fails the run).
 *
 *   stress-frames --threads N --iterations FRAMES --seed S */
#define _GNU_SOURCE
#include <inttypes.h>
#include <kiln/kiln.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stress_common.h"

#define HANDLES      256     /* live handles the jobs share */
#define SPIN         2000    /* iterations a job holds its memory and pointer */
#define PIECES       4
#define IO_THREADS   2       /* at most; one with a single worker */
#define CHILDREN     3       /* at most, per holder */
#define HOPS         2       /* at most, jobs after the first of a handoff chain */
/* Frame numbers a pointer is kept after its handle was freed: three frame ends or more.
 * A slot freed in a frame is reusable after the frame end that follows every outside
 * thread's quiescent point after the free, so without the holder's protection it could
 * be reused meanwhile. */
#define HOLD_FRAMES  4
#define IO_ROUNDS    4       /* an IO thread's rounds per frame number, at most */
#define FLUSH_FREES  32      /* handles replaced after a holder's: see replace_batch */
/* An IO thread's frame memory is that of the jobs it helped with, of two frames at most
 * (frame end resets its frame's job memory on every context). Per frame fewer than 64
 * jobs that take frame memory may run there: the driver's 8 frame jobs, a holder and 2
 * handoffs; two batches per frame number of the render thread (7 jobs) and of each
 * background loop (5), and a frame spans two frame numbers. Each takes under 48 KiB. */
#define IO_MEMORY_BOUND ((size_t)2 * 64 * (48u << 10))

typedef struct item { uint64_t name; uint64_t serial; } item;

static kiln_runtime    *rt;
static kiln_handles    *table;
static _Atomic uint64_t live[HANDLES];      /* handle bits; 0: empty */
static _Atomic uint64_t job_serial;
static _Atomic uint64_t jobs_done, render_batches, background_rounds;
static _Atomic uint64_t pipeline_jobs, io_rounds, nests_done, holders_done, handoffs_done;
static _Atomic int      stop;
static _Atomic(kiln_ctx *) render_ctx;      /* the render thread's context, for pins */
static _Atomic int      pins_in_flight;     /* the driver is between reading render_ctx and pinning */
static _Atomic(kiln_ctx *) loop_worker[2];  /* the workers running the background loops */
static _Atomic uint64_t pipeline_submitted; /* the pipeline's jobs submitted so far */
static _Atomic(kiln_ctx *) io_ctx[IO_THREADS];
static uint64_t         io_helped[IO_THREADS], io_helped_bytes[IO_THREADS];   /* each IO thread's own */
static size_t           io_peak[IO_THREADS];
static unsigned         io_threads;         /* 2, or 1 with a single worker */
/* One long hold at a time, the IO threads' in turns (turn t: thread t % io_threads; a
 * nest every other time it is a thread's, with nesting, else its pointer). Meanwhile
 * every other thread passes quiescent points, so only the holder's protection keeps its
 * slot from reuse: two holders at once would each protect the other's slot. */
static _Atomic uint64_t hold_turn;
static _Atomic unsigned io_parked;          /* IO threads done with their rounds */
static _Atomic int      io_release;         /* the last two frames have ended */
static bool             nesting;            /* three workers or more: nests run (pattern 3) */
static uint64_t         seed;

/* Sizes: two small pieces, one of a few KiB, one larger than the 16 KiB block. */
static size_t piece_size(uint64_t r, int i) {
    static const size_t base[PIECES] = { 256, 256, 4096, 40u << 10 };
    return base[i] + (size_t)(r >> (8 * i) & 0xff);
}

static void fill(unsigned char *p, size_t n, uint64_t key) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = stress_mix(key + i);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

static bool intact(const unsigned char *p, size_t n, uint64_t key) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = stress_mix(key + i);
        if (memcmp(p + i, &v, n - i < 8 ? n - i : 8) != 0) return false;
    }
    return true;
}

/* A job's frame memory: count pieces (the first ones of piece_size), each filled with
 * a pattern of its own. */
typedef struct pieces { unsigned char *p[PIECES]; size_t n[PIECES]; int count; uint64_t key; } pieces;

static bool pieces_take(kiln_ctx *ctx, pieces *ps, int count, uint64_t key) {
    ps->count = count;
    ps->key = key;
    for (int i = 0; i < count; i++) {
        ps->n[i] = piece_size(key, i);
        ps->p[i] = kiln_frame_alloc(ctx, ps->n[i], 16);
        STRESS_CHECK(ps->p[i] != NULL, "frame alloc of %zu bytes", ps->n[i]);
        if (!ps->p[i]) return false;
        fill(ps->p[i], ps->n[i], key + (uint64_t)i);
    }
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            STRESS_CHECK(ps->p[i] + ps->n[i] <= ps->p[j] || ps->p[j] + ps->n[j] <= ps->p[i],
                         "pieces %d and %d overlap", i, j);
    return true;
}

static void pieces_check(const pieces *ps, const char *who, uint64_t serial) {
    for (int i = 0; i < ps->count; i++)
        STRESS_CHECK(intact(ps->p[i], ps->n[i], ps->key + (uint64_t)i), "piece %d of %s %" PRIu64 " overwritten",
                     i, who, serial);
}

/* A handle pointer kept for a while: the item must go on naming its handle. */
typedef struct held { uint64_t bits; item *it; item seen; } held;

static held hold(uint64_t slot) {
    held h = { atomic_load(&live[slot % HANDLES]), NULL, { 0, 0 } };
    h.it = h.bits ? kiln_handle_get(table, (kiln_handle){ h.bits }) : NULL;
    if (h.it) h.seen = *h.it;
    STRESS_CHECK(!h.it || h.seen.name == h.bits, "a resolved item names another handle");
    return h;
}

static void still_held(const held *h, const char *who) {
    if (h->it)
        STRESS_CHECK(h->it->name == h->seen.name && h->it->serial == h->seen.serial, "slot reused under %s", who);
}

/* Frees a handle this job took out of live[] (it owns it now: exactly one taker). */
static void release(kiln_ctx *ctx, uint64_t bits) {
    if (bits) STRESS_CHECK(kiln_handle_free(ctx, table, (kiln_handle){ bits }), "free of an owned handle");
}

/* Puts a fresh handle into live[slot], freeing whatever it displaces. */
static void replace(kiln_ctx *ctx, uint64_t slot, uint64_t serial) {
    release(ctx, atomic_exchange(&live[slot], 0));
    void *p;
    kiln_handle h = kiln_handle_alloc(ctx, table, &p);
    if (!h.bits) return;   /* full for a moment: the table is sized so it rarely is */
    *(item *)p = (item){ h.bits, serial };
    release(ctx, atomic_exchange(&live[slot], h.bits));
}

/* Replaces live[slot]'s handle, then FLUSH_FREES others, so that the context's cache,
 * which hands its frees to the table a batch at a time, hands on the slot at once. */
static void replace_batch(kiln_ctx *ctx, uint64_t slot, uint64_t serial) {
    replace(ctx, slot, serial);
    for (uint64_t k = 1; k <= FLUSH_FREES; k++) replace(ctx, stress_mix(serial + k) % HANDLES, serial);
}

/* Counts a job with frame memory that an IO thread helped with (its own counters: only
 * that thread runs jobs with its context). */
static void note_helped(kiln_ctx *ctx, size_t bytes) {
    for (int i = 0; i < IO_THREADS; i++) {
        if (atomic_load_explicit(&io_ctx[i], memory_order_relaxed) == ctx) {
            io_helped[i]++;
            io_helped_bytes[i] += bytes;
        }
    }
}

static void frame_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    uint64_t serial = atomic_fetch_add_explicit(&job_serial, 1, memory_order_relaxed);
    uint64_t r = stress_mix(seed ^ serial);
    pieces ps;
    if (!pieces_take(ctx, &ps, PIECES, r)) return;
    note_helped(ctx, ps.n[0] + ps.n[1] + ps.n[2] + ps.n[3]);
    held h = hold(r);
    for (volatile unsigned spin = 0; spin < SPIN; spin++) {
    }
    pieces_check(&ps, "job", serial);
    still_held(&h, "a job");
    if (r % 3 == 0) replace(ctx, (r >> 16) % HANDLES, serial);
    atomic_fetch_add_explicit(&jobs_done, 1, memory_order_relaxed);
}

static void empty_job(kiln_ctx *ctx, void *arg) {
    (void)ctx;
    (void)arg;
}

/* The render thread and the background jobs each submit about one batch per driver
 * frame (two at most), landing anywhere in it: before, during or after its frame end.
 * Meanwhile they wait on an empty job, and so run the jobs pinned to their thread:
 * frame end waits for those, and the thread runs them only when it waits. */
static void pace(kiln_ctx *ctx, uint64_t *last_frame) {
    uint64_t now = kiln_frame_number(rt);
    while (now == *last_frame && !atomic_load(&stop)) {
        kiln_counter c = { { 0, 0 } };
        kiln_run(ctx, &(kiln_job){ empty_job, NULL }, 1, &c);
        kiln_wait(ctx, &c);
        sched_yield();
        now = kiln_frame_number(rt);
    }
    *last_frame = now;
}

/* Sleeps until the frame number has moved count times since *last_frame (0: once it
 * differs), or the run stops: a thread that waits on something outside kiln. */
static void sleep_frames(uint64_t *last_frame, uint64_t count) {
    uint64_t target = *last_frame + (count ? count : 1);
    while (kiln_frame_number(rt) < target && !atomic_load(&stop)) usleep(1000);
    *last_frame = kiln_frame_number(rt);
}

static void run_batch(kiln_ctx *ctx, size_t count) {
    kiln_job jobs[8];
    for (size_t i = 0; i < count; i++) jobs[i] = (kiln_job){ frame_job, NULL };
    kiln_counter c = { { 0, 0 } };
    kiln_run(ctx, jobs, count, &c);
    kiln_wait(ctx, &c);
}

/* A render thread: its own frame boundary (a reset of its frame arena and a quiescent
 * point), then a batch that the workers run. */
static void *render_main(void *arg) {
    (void)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    STRESS_CHECK(ctx != NULL, "render thread attach");
    if (!ctx) return NULL;
    atomic_store(&render_ctx, ctx);
    uint64_t last_frame = 0;
    for (uint64_t b = 0; !atomic_load(&stop); b++) {
        if (b % 2 == 0) pace(ctx, &last_frame);
        if (b % 64 == 63) {   /* detach under the driver's pins, then attach again */
            kiln_detach(ctx);
            ctx = kiln_attach(rt);
            STRESS_CHECK(ctx != NULL, "render thread attach");
            if (!ctx) return NULL;
            atomic_store(&render_ctx, ctx);
        }
        kiln_arena_reset(kiln_frame_arena(ctx));
        kiln_handles_quiescent(ctx);
        run_batch(ctx, 1 + b % 4);
        atomic_fetch_add_explicit(&render_batches, 1, memory_order_relaxed);
    }
    atomic_store(&render_ctx, NULL);   /* the driver stops pinning before the last detach */
    while (atomic_load(&pins_in_flight)) sched_yield();
    kiln_detach(ctx);
    return NULL;
}

/* A background job: frame jobs of its own, waited for, until the run stops. The loops
 * never return before then, so the jobs pinned to their workers run only in their
 * waits, and those workers never take a background job. */
static void background_main(kiln_ctx *ctx, void *arg) {
    atomic_store(&loop_worker[(uintptr_t)arg], ctx);
    uint64_t last_frame = 0;
    for (uint64_t b = 0; !atomic_load(&stop); b++) {
        if (b % 2 == 0) pace(ctx, &last_frame);
        run_batch(ctx, 1 + b % 3);
        kiln_handles_quiescent(ctx);   /* between rounds it holds no pointer */
        atomic_fetch_add_explicit(&background_rounds, 1, memory_order_relaxed);
    }
}

/* One frame job pinned to the render thread; frame end waits for it (the render thread
 * runs it in its next wait, or its detach does), or the pin is refused. */
static void pin_to_render(kiln_ctx *ctx) {
    atomic_store(&pins_in_flight, 1);
    kiln_ctx *r = atomic_load(&render_ctx);
    if (r) kiln_run_ex(ctx, &(kiln_job){ frame_job, NULL }, 1, NULL, &(kiln_run_desc){ .pinned_to = r });
    atomic_store(&pins_in_flight, 0);
}

/* ---- 1. the pipelined render thread ---------------------------------------------- */

/* Job n: its frame memory, then a spin until job n + 1 is queued, so that the pipeline
 * is never empty; the frame end of job n's frame waits for it meanwhile. */
static void pipeline_job(kiln_ctx *ctx, void *arg) {
    uint64_t n = (uint64_t)(uintptr_t)arg;
    STRESS_CHECK(ctx == atomic_load(&loop_worker[0]), "pipeline job %" PRIu64 " ran off its pin", n);
    pieces ps;
    if (!pieces_take(ctx, &ps, 1, stress_mix(seed ^ ~n))) return;
    while (atomic_load(&pipeline_submitted) < n + 2 && !atomic_load(&stop)) sched_yield();
    pieces_check(&ps, "pipeline job", n);
    atomic_fetch_add_explicit(&pipeline_jobs, 1, memory_order_relaxed);
}

/* Its wait is isolated: it runs no other thread's job. Job n, spinning on the worker,
 * waits for this thread; a job that this thread took meanwhile could wait for a job that
 * the worker set aside to run job n, and neither would go on. */
static void *pipeline_main(void *arg) {
    (void)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    STRESS_CHECK(ctx != NULL, "pipeline thread attach");
    if (!ctx) return NULL;
    kiln_run_desc pin = { .pinned_to = atomic_load(&loop_worker[0]) };
    kiln_counter counters[2] = { { { 0, 0 } }, { { 0, 0 } } };
    kiln_run_ex(ctx, &(kiln_job){ pipeline_job, (void *)(uintptr_t)0 }, 1, &counters[0], &pin);
    atomic_store(&pipeline_submitted, 1);
    for (uint64_t n = 0; !atomic_load(&stop); n++) {   /* job n is in flight */
        kiln_run_ex(ctx, &(kiln_job){ pipeline_job, (void *)(uintptr_t)(n + 1) }, 1, &counters[(n + 1) & 1], &pin);
        atomic_store(&pipeline_submitted, n + 2);
        kiln_wait_ex(ctx, &counters[n & 1], &(kiln_wait_desc){ .isolate = true });
        kiln_handles_quiescent(ctx);
    }
    kiln_wait(ctx, &counters[0]);
    kiln_wait(ctx, &counters[1]);
    kiln_detach(ctx);
    return NULL;
}

/* ---- 2 and 3. IO threads, and their background nests ------------------------------- */

typedef struct nest {
    uint64_t    slot;     /* live[] entry whose handle B1 holds and B2 frees */
    uint64_t    serial;
    kiln_ctx   *b1;       /* B1's worker: F and B2 are pinned to it */
    _Atomic int done;     /* B1 is about to return */
} nest;

static nest nests[IO_THREADS];   /* one per IO thread, one at a time */

static void nest_inner(kiln_ctx *ctx, void *arg) {   /* B2: frees the handle B1 holds */
    nest *n = arg;
    STRESS_CHECK(ctx == n->b1, "B2 ran off its pin");
    replace_batch(ctx, n->slot, n->serial);
}

static void nest_frame(kiln_ctx *ctx, void *arg) {   /* F */
    nest *n = arg;
    STRESS_CHECK(ctx == n->b1, "F ran off its pin");
    pieces ps;
    if (!pieces_take(ctx, &ps, 3, stress_mix(n->serial))) return;
    held h = hold(n->slot + 1);
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(ctx, &(kiln_job){ nest_inner, n }, 1, &c, &(kiln_run_desc){ .background = true, .pinned_to = ctx });
    kiln_wait(ctx, &c);
    pieces_check(&ps, "nested frame job", n->serial);
    still_held(&h, "a frame job across its background job");
}

static void nest_outer(kiln_ctx *ctx, void *arg) {   /* B1 */
    nest *n = arg;
    n->b1 = ctx;
    held h = hold(n->slot);
    kiln_counter c = { { 0, 0 } };
    kiln_run_ex(ctx, &(kiln_job){ nest_frame, n }, 1, &c, &(kiln_run_desc){ .pinned_to = ctx });
    kiln_wait(ctx, &c);
    uint64_t last_frame = kiln_frame_number(rt);   /* B2 freed the handle: frames end, B1 holds on */
    sleep_frames(&last_frame, HOLD_FRAMES);
    still_held(&h, "a background job across its nested frame and background jobs");
    atomic_fetch_add_explicit(&nests_done, 1, memory_order_relaxed);
    atomic_store(&n->done, 1);
}

/* An IO thread's own small job: frees and replaces live[arg % HANDLES]'s handle, which
 * the thread may hold (arg >= HANDLES: it does, from now on). */
static void io_job(kiln_ctx *ctx, void *arg) {
    pieces ps;
    uint64_t serial = atomic_fetch_add_explicit(&job_serial, 1, memory_order_relaxed);
    if (!pieces_take(ctx, &ps, 1, stress_mix(seed ^ serial))) return;
    uintptr_t a = (uintptr_t)arg;
    if (a >= HANDLES) replace_batch(ctx, a % HANDLES, serial);
    else replace(ctx, a, serial);
    for (volatile unsigned spin = 0; spin < SPIN; spin++) {   /* its thread helps meanwhile */
    }
    pieces_check(&ps, "IO job", serial);
}

static void io_memory_check(unsigned i, kiln_arena *frame, bool at_end) {
    kiln_arena_stats stats;
    STRESS_CHECK(kiln_arena_stats_get(frame, &stats), "stats of IO thread %u's frame arena", i);
    if (stats.bytes_in_use > io_peak[i]) io_peak[i] = stats.bytes_in_use;
    STRESS_CHECK(stats.bytes_in_use <= IO_MEMORY_BOUND,
                 "IO thread %u holds %zu bytes of frame memory (bound %zu) after helping with %" PRIu64
                 " jobs", i, stats.bytes_in_use, IO_MEMORY_BOUND, io_helped[i]);
    if (at_end)
        STRESS_CHECK(stats.bytes_in_use == 0, "IO thread %u holds %zu bytes of frame memory after the last frame ends",
                     i, stats.bytes_in_use);
}

static void *io_main(void *arg) {
    unsigned i = (unsigned)(uintptr_t)arg;
    kiln_ctx *ctx = kiln_attach(rt);
    STRESS_CHECK(ctx != NULL, "IO thread attach");
    if (!ctx) return NULL;
    atomic_store(&io_ctx[i], ctx);
    kiln_arena *frame = kiln_frame_arena(ctx);   /* its own; its stats count its job memory */
    /* Its jobs go to the second loop's worker (the first's with a single worker), the
     * nests wherever a worker is free: the loops take two. */
    kiln_run_desc pin = { .pinned_to = atomic_load(&loop_worker[1]) ? atomic_load(&loop_worker[1])
                                                                     : atomic_load(&loop_worker[0]) };
    kiln_counter nest_counter = { { 0, 0 } };   /* a nest, collected in a later round */
    bool nest_running = false;
    held h = { 0, NULL, { 0, 0 } };             /* a pointer kept across rounds */
    uint64_t held_from = 0, last_frame = 0;
    stress_rng rng = stress_rng_make(seed, 100 + i);
    for (uint64_t round = 0; !atomic_load(&stop); round++) {
        if (round % IO_ROUNDS == 0) sleep_frames(&last_frame, 1);   /* as if on IO */
        uint64_t r = stress_next(&rng);
        uint64_t now = kiln_frame_number(rt);
        uintptr_t job_arg = (uintptr_t)(r % HANDLES);
        uint64_t turn = atomic_load(&hold_turn);
        if (!h.it && !nest_running && turn % io_threads == i) {   /* this thread's long hold */
            if (nesting && turn / io_threads % 2 == 1) {   /* B1: a background job, on a free worker */
                nests[i].slot = stress_mix(r) % HANDLES;
                nests[i].serial = r;
                atomic_store(&nests[i].done, 0);
                kiln_run_ex(ctx, &(kiln_job){ nest_outer, &nests[i] }, 1, &nest_counter,
                            &(kiln_run_desc){ .background = true });
                nest_running = true;
            } else {   /* its pointer, whose handle the job below frees */
                h = hold(r);
                held_from = now;
                job_arg += HANDLES;
            }
        }
        kiln_counter c = { { 0, 0 } };
        kiln_run_ex(ctx, &(kiln_job){ io_job, (void *)job_arg }, 1, &c, &pin);
        kiln_wait(ctx, &c);   /* runs other threads' frame jobs meanwhile: no quiescent point */
        if (h.it && kiln_frame_number(rt) >= held_from + HOLD_FRAMES) {
            still_held(&h, "an IO thread's waits");
            h.it = NULL;
            atomic_fetch_add(&hold_turn, 1);
        }
        if (nest_running && atomic_load(&nests[i].done)) {
            kiln_wait(ctx, &nest_counter);
            nest_running = false;
            atomic_fetch_add(&hold_turn, 1);
        }
        if (!h.it) kiln_handles_quiescent(ctx);
        io_memory_check(i, frame, false);
        atomic_fetch_add_explicit(&io_rounds, 1, memory_order_relaxed);
    }
    if (nest_running) kiln_wait(ctx, &nest_counter);
    still_held(&h, "an IO thread's waits");
    kiln_handles_quiescent(ctx);
    atomic_fetch_add(&io_parked, 1);
    while (!atomic_load(&io_release)) sched_yield();
    io_memory_check(i, frame, true);
    atomic_store(&io_ctx[i], NULL);
    kiln_detach(ctx);
    return NULL;
}

/* ---- 4. holders ----------------------------------------------------------------- */

static void replace_job(kiln_ctx *ctx, void *arg) {
    uint64_t serial = atomic_fetch_add_explicit(&job_serial, 1, memory_order_relaxed);
    replace(ctx, (uint64_t)(uintptr_t)arg, serial);
}

/* Keeps a handle pointer across its wait on children that replace handles, its own
 * among them: its frame cannot end before it returns, so the slot stays its item's. */
static void holder_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    uint64_t serial = atomic_fetch_add_explicit(&job_serial, 1, memory_order_relaxed);
    uint64_t r = stress_mix(seed ^ serial);
    pieces ps;
    if (!pieces_take(ctx, &ps, 2, r)) return;
    note_helped(ctx, ps.n[0] + ps.n[1]);
    held h = hold(r);
    kiln_job children[CHILDREN];
    size_t count = 1 + (r >> 8) % CHILDREN;
    for (size_t k = 0; k < count; k++)   /* the first one frees the held handle */
        children[k] = (kiln_job){ replace_job, (void *)(uintptr_t)((r + k * 17) % HANDLES) };
    kiln_counter c = { { 0, 0 } };
    kiln_run(ctx, children, count, &c);
    kiln_wait(ctx, &c);
    still_held(&h, "a frame job's wait on its children");
    pieces_check(&ps, "holder", serial);
    atomic_fetch_add_explicit(&holders_done, 1, memory_order_relaxed);
}

/* ---- 5. handoffs ---------------------------------------------------------------- */

/* Frame memory handed to the next job of a chain, itself in frame memory. */
typedef struct handoff {
    const unsigned char *bytes;
    size_t               size;
    uint64_t             key;
    unsigned             hops;   /* jobs of the chain after the one it is handed to */
} handoff;

/* Some frame memory after the record, filled; NULL when the frame allocation fails. */
static handoff *handoff_make(kiln_ctx *ctx, uint64_t key, unsigned hops) {
    size_t size = 64 + (size_t)(key % 4096);
    handoff *h = kiln_frame_alloc(ctx, sizeof *h + size, 16);
    STRESS_CHECK(h != NULL, "frame alloc of %zu bytes", sizeof *h + size);
    if (!h) return NULL;
    unsigned char *bytes = (unsigned char *)(h + 1);
    fill(bytes, size, key);
    *h = (handoff){ bytes, size, key, hops };
    return h;
}

/* Checks what the job before handed over (it may have returned long ago, on another
 * thread), then hands memory of its own to the next. */
static void handoff_job(kiln_ctx *ctx, void *arg) {
    const handoff *from = arg;
    STRESS_CHECK(intact(from->bytes, from->size, from->key), "frame memory handed over (%u hops left) overwritten",
                 from->hops);
    if (from->hops > 0) {
        handoff *next = handoff_make(ctx, stress_mix(from->key), from->hops - 1);
        if (next) {
            note_helped(ctx, sizeof *next + next->size);
            if (next->key & 1) {   /* no counter: this job returns, the next runs later */
                kiln_run(ctx, &(kiln_job){ handoff_job, next }, 1, NULL);
            } else {
                kiln_counter c = { { 0, 0 } };
                kiln_run(ctx, &(kiln_job){ handoff_job, next }, 1, &c);
                kiln_wait(ctx, &c);
                STRESS_CHECK(intact(next->bytes, next->size, next->key), "frame memory handed back overwritten");
            }
        }
    }
    STRESS_CHECK(intact(from->bytes, from->size, from->key), "frame memory handed over overwritten during the job");
    atomic_fetch_add_explicit(&handoffs_done, 1, memory_order_relaxed);
}

int main(int argc, char **argv) {
    stress_options opt = { .threads = 4, .iterations = 3000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    seed = opt.seed;
    /* Refused pins are part of the run; so, on a loaded machine, are the warnings of a
     * background job starved for a hundred frames (reuse waits for it, and the table may
     * fill meanwhile: an alloc then fails, which the jobs allow). Anything else fails. */
    static const char *const expected[] = { "JOB_PIN_DETACHING", "JOB_BAD_PIN",
                                            "HANDLES_RECLAIM_STALLED", "HANDLES_FULL", NULL };
    stress_log log = { .expected = expected };
    rt = kiln_create(&(kiln_desc){ .worker_count = opt.threads, .block_size = 16u << 10,
                                   .log = stress_log_fn, .log_user = &log,
                                   .log_every_repeat = true });   /* counted one by one */
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "frames", .item_size = sizeof(item),
                                                          .capacity = 1u << 16 });
    if (!ctx || !table) return 1;
    for (uint64_t i = 0; i < HANDLES; i++) replace(ctx, i, 0);

    double start = stress_seconds();
    pthread_t render, pipeline, io[IO_THREADS];
    io_threads = opt.threads >= 2 ? 2 : 1;
    nesting = opt.threads >= 3;
    if (pthread_create(&render, NULL, render_main, NULL) != 0) return 1;
    kiln_counter background = { { 0, 0 } };
    kiln_job bg[2] = { { background_main, (void *)(uintptr_t)0 }, { background_main, (void *)(uintptr_t)1 } };
    kiln_run_ex(ctx, bg, 2, &background, &(kiln_run_desc){ .background = true });
    /* The pipeline and the IO threads pin to the loops' workers (a single worker runs
     * only the first loop until the end). */
    while (!atomic_load(&loop_worker[0]) || (opt.threads >= 2 && !atomic_load(&loop_worker[1]))) sched_yield();
    if (pthread_create(&pipeline, NULL, pipeline_main, NULL) != 0) return 1;
    for (unsigned i = 0; i < io_threads; i++)
        if (pthread_create(&io[i], NULL, io_main, (void *)(uintptr_t)i) != 0) return 1;
    stress_rng rng = stress_rng_make(opt.seed, 0);
    for (uint64_t frame = 0; frame < opt.iterations; frame++) {
        kiln_frame_begin(ctx);
        uint64_t r = stress_next(&rng);
        if (r % 4 != 0) {   /* some frames empty: frame ends then come fast */
            kiln_job jobs[10];
            size_t count = 1 + r % 8;
            for (size_t i = 0; i < count; i++) jobs[i] = (kiln_job){ frame_job, NULL };
            jobs[count++] = (kiln_job){ holder_job, NULL };
            /* The chain starts from the driver's own frame memory, which lives until
             * this frame's end. */
            uint64_t key = stress_mix(r);
            handoff *start_of_chain = handoff_make(ctx, key, (unsigned)(key >> 32) % (HOPS + 1));
            if (start_of_chain) jobs[count++] = (kiln_job){ handoff_job, start_of_chain };
            kiln_run(ctx, jobs, count, NULL);   /* no counter: frame end waits */
        }
        pin_to_render(ctx);
        kiln_frame_end(ctx);
    }
    atomic_store(&stop, 1);
    pthread_join(render, NULL);
    pthread_join(pipeline, NULL);
    kiln_wait(ctx, &background);
    while (atomic_load(&io_parked) < io_threads) sched_yield();
    for (int f = 0; f < 2; f++) {   /* both frame parities: every job's memory goes back */
        kiln_frame_begin(ctx);
        kiln_frame_end(ctx);
    }
    atomic_store(&io_release, 1);
    for (unsigned i = 0; i < io_threads; i++) pthread_join(io[i], NULL);
    double seconds = stress_seconds() - start;

    for (uint64_t i = 0; i < HANDLES; i++) release(ctx, atomic_exchange(&live[i], 0));
    kiln_handles_destroy(table);
    kiln_detach(ctx);
    kiln_destroy(rt);   /* every block back, none twice: anything else is logged */
    uint64_t helped = 0, helped_bytes = 0;
    size_t peak = 0;
    for (unsigned i = 0; i < io_threads; i++) {
        helped += io_helped[i];
        helped_bytes += io_helped_bytes[i];
        if (io_peak[i] > peak) peak = io_peak[i];
    }
    printf("stress-frames: %" PRIu64 " frames, %" PRIu64 " frame jobs (%" PRIu64
           " render batches, %" PRIu64 " background rounds, %" PRIu64 " refused pins and expected warnings); %"
           PRIu64 " pipelined jobs, %" PRIu64 " IO rounds (%" PRIu64 " jobs helped with, %" PRIu64
           " KiB of their frame memory, at most %zu KiB held at once), %" PRIu64 " nests, %" PRIu64
           " holders, %" PRIu64 " handoffs in %.1f s, %" PRIu64 " failures\n",
           opt.iterations, atomic_load(&jobs_done), atomic_load(&render_batches),
           atomic_load(&background_rounds), atomic_load(&log.expected_seen), atomic_load(&pipeline_jobs),
           atomic_load(&io_rounds), helped, helped_bytes >> 10, peak >> 10, atomic_load(&nests_done),
           atomic_load(&holders_done), atomic_load(&handoffs_done), seconds, stress_failure_count());
    return stress_failure_count() == 0 ? 0 : 1;
}
