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

#include "stress_common.h"

#define HANDLES      256     /* live handles the jobs share */
#define SPIN         2000    /* iterations a job holds its memory and pointer */
#define PIECES       4

typedef struct item { uint64_t name; uint64_t serial; } item;

static kiln_runtime    *rt;
static kiln_handles    *table;
static _Atomic uint64_t live[HANDLES];      /* handle bits; 0: empty */
static _Atomic uint64_t job_serial;
static _Atomic uint64_t jobs_done, render_batches, background_rounds;
static _Atomic int      stop;
static _Atomic(kiln_ctx *) render_ctx;      /* the render thread's context, for pins */
static _Atomic int      pins_in_flight;     /* the driver is between reading render_ctx and pinning */
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

static void frame_job(kiln_ctx *ctx, void *arg) {
    (void)arg;
    uint64_t serial = atomic_fetch_add_explicit(&job_serial, 1, memory_order_relaxed);
    uint64_t r = stress_mix(seed ^ serial);
    unsigned char *p[PIECES];
    size_t n[PIECES];
    for (int i = 0; i < PIECES; i++) {
        n[i] = piece_size(r, i);
        p[i] = kiln_frame_alloc(ctx, n[i], 16);
        STRESS_CHECK(p[i] != NULL, "frame alloc of %zu bytes", n[i]);
        if (!p[i]) return;
        fill(p[i], n[i], r + (uint64_t)i);
    }
    for (int i = 0; i < PIECES; i++)
        for (int j = i + 1; j < PIECES; j++)
            STRESS_CHECK(p[i] + n[i] <= p[j] || p[j] + n[j] <= p[i], "pieces %d and %d overlap", i, j);
    uint64_t bits = atomic_load(&live[r % HANDLES]);
    item *it = bits ? kiln_handle_get(table, (kiln_handle){ bits }) : NULL;
    item seen = it ? *it : (item){ 0, 0 };
    STRESS_CHECK(!it || seen.name == bits, "a resolved item names another handle");
    for (volatile unsigned spin = 0; spin < SPIN; spin++) {
    }
    for (int i = 0; i < PIECES; i++)
        STRESS_CHECK(intact(p[i], n[i], r + (uint64_t)i), "piece %d of job %" PRIu64 " overwritten", i, serial);
    if (it) STRESS_CHECK(it->name == seen.name && it->serial == seen.serial, "slot reused under a job");
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

/* A background job: frame jobs of its own, waited for, until the run stops. */
static void background_main(kiln_ctx *ctx, void *arg) {
    (void)arg;
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
                                   .log = stress_log_fn, .log_user = &log });
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    table = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "frames", .item_size = sizeof(item),
                                                          .capacity = 1u << 16 });
    if (!ctx || !table) return 1;
    for (uint64_t i = 0; i < HANDLES; i++) replace(ctx, i, 0);

    double start = stress_seconds();
    pthread_t render;
    if (pthread_create(&render, NULL, render_main, NULL) != 0) return 1;
    kiln_counter background = { { 0, 0 } };
    kiln_job bg[2] = { { background_main, NULL }, { background_main, NULL } };
    kiln_run_ex(ctx, bg, 2, &background, &(kiln_run_desc){ .background = true });
    stress_rng rng = stress_rng_make(opt.seed, 0);
    for (uint64_t frame = 0; frame < opt.iterations; frame++) {
        kiln_frame_begin(ctx);
        uint64_t r = stress_next(&rng);
        if (r % 4 != 0) {   /* some frames empty: frame ends then come fast */
            kiln_job jobs[8];
            size_t count = 1 + r % 8;
            for (size_t i = 0; i < count; i++) jobs[i] = (kiln_job){ frame_job, NULL };
            kiln_run(ctx, jobs, count, NULL);   /* no counter: frame end waits */
        }
        pin_to_render(ctx);
        kiln_frame_end(ctx);
    }
    atomic_store(&stop, 1);
    pthread_join(render, NULL);
    kiln_wait(ctx, &background);
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
    double seconds = stress_seconds() - start;

    for (uint64_t i = 0; i < HANDLES; i++) release(ctx, atomic_exchange(&live[i], 0));
    kiln_handles_destroy(table);
    kiln_detach(ctx);
    kiln_destroy(rt);   /* every block back, none twice: anything else is logged */
    printf("stress-frames: %" PRIu64 " frames, %" PRIu64 " frame jobs (%" PRIu64
           " render batches, %" PRIu64 " background rounds, %" PRIu64 " refused pins and expected warnings) in %.1f s, %"
           PRIu64 " failures\n", opt.iterations, atomic_load(&jobs_done),
           atomic_load(&render_batches), atomic_load(&background_rounds),
           atomic_load(&log.expected_seen), seconds, stress_failure_count());
    return stress_failure_count() == 0 ? 0 : 1;
}
