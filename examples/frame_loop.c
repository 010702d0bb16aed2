/* examples/frame_loop.c — the smallest real kiln program: a frame loop whose per-frame
 * work runs as jobs on the workers (kiln_parallel_for), each job taking its scratch
 * memory from the frame arena of the worker that runs it, and a closing report of what
 * the scheduler, the frame arenas and the block pool did.
 * Usage: frame-loop [frames] [entities] */
#include <kiln/kiln.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct entity { float x, y, vx, vy; } entity;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct frame_work {
    entity          *entities;
    _Atomic size_t   visible;     /* entities in the view, summed over the jobs */
} frame_work;

/* One job: move a range of entities and gather the visible ones into a list in the
 * running worker's frame memory, plus a few small allocations per visible entity, as a
 * real frame makes them (contact pairs, strings). */
static void simulate_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    frame_work *work = arg;
    uint32_t *visible = kiln_frame_alloc(ctx, (end - begin) * sizeof *visible, 64);
    if (!visible) return;
    size_t shown = 0;
    for (size_t i = begin; i < end; i++) {
        entity *e = &work->entities[i];
        e->x += e->vx;
        e->y += e->vy;
        if (e->x < 0 || e->x > 1000) e->vx = -e->vx;
        if (e->y < 0 || e->y > 1000) e->vy = -e->vy;
        if (e->x > 250 && e->x < 750 && e->y > 250 && e->y < 750) visible[shown++] = (uint32_t)i;
    }
    for (size_t i = 0; i < shown; i += 8) {
        float *pair = kiln_frame_alloc(ctx, 16 + (i % 7) * 8, 8);
        if (pair) pair[0] = work->entities[visible[i]].x;
    }
    atomic_fetch_add_explicit(&work->visible, shown, memory_order_relaxed);
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 600;
    size_t count = argc > 2 ? (size_t)atol(argv[2]) : 20000;
    if (frames <= 0 || count == 0) {
        fprintf(stderr, "usage: frame-loop [frames > 0] [entities > 0]\n");
        return 2;
    }
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .frame_budget = 8u << 20 });
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_arena *level = kiln_arena_create(rt, "level");
    entity *entities = ctx && level ? kiln_arena_alloc(level, count * sizeof *entities, 64) : NULL;
    if (!entities) return 1;
    for (size_t i = 0; i < count; i++)
        entities[i] = (entity){ (float)(i % 1000), (float)(i * 7 % 1000),
                                (float)(i % 5) - 2.0f, (float)(i % 3) - 1.0f };

    double *frame_ms = malloc((size_t)frames * sizeof *frame_ms);
    if (!frame_ms) return 1;
    size_t shown_total = 0;
    for (int f = 0; f < frames; f++) {
        double start = now_ms();
        kiln_frame_begin(ctx);
        frame_work work = { entities, 0 };
        kiln_parallel_for(ctx, count, 1024, simulate_range, &work);
        shown_total += atomic_load_explicit(&work.visible, memory_order_relaxed);
        kiln_frame_end(ctx);
        frame_ms[f] = now_ms() - start;
    }

    kiln_stats stats;
    kiln_stats_get(rt, &stats);
    qsort(frame_ms, (size_t)frames, sizeof *frame_ms, compare_double);
    printf("kiln frame loop: %d frames, %zu entities, %.1f visible per frame\n", frames, count,
           (double)shown_total / frames);
    printf("  frame time     median %.3f ms   p99 %.3f ms   max %.3f ms\n",
           frame_ms[frames / 2], frame_ms[(size_t)(frames * 0.99)], frame_ms[frames - 1]);
    kiln_ctx_stats contexts[64];
    size_t n = kiln_stats_contexts(rt, contexts, 64);
    for (size_t i = 0; i < n && i < 64; i++)
        printf("  %-6s ctx %-2u  jobs run %8llu  stolen %8llu  asleep %7.1f ms  frame memory "
               "high-water %zu KiB\n", contexts[i].is_worker ? "worker" : "main", contexts[i].id,
               (unsigned long long)contexts[i].jobs_run, (unsigned long long)contexts[i].jobs_stolen,
               contexts[i].sleep_ns / 1e6, contexts[i].frame_peak_last_frame >> 10);
    printf("  block pool     %llu blocks reserved, %llu in use, %llu gets, %llu failures\n",
           (unsigned long long)stats.blocks.blocks_reserved,
           (unsigned long long)stats.blocks.blocks_in_use,
           (unsigned long long)stats.blocks.gets, (unsigned long long)stats.blocks.failures);
    free(frame_ms);
    kiln_arena_destroy(level);
    kiln_detach(ctx);
    kiln_destroy(rt);
    return 0;
}
