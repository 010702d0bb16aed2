/* examples/frame_loop.c — the smallest real kiln program: a frame loop that does its
 * per-frame work with frame memory and shows what the frame arena and the block pool
 * did. The jobs layer will spread the work over workers; today it runs on the main
 * thread. Usage: frame-loop [frames] [entities] */
#include <kiln/kiln.h>

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

/* One frame: move every entity, then gather the visible ones into a list that lives
 * in frame memory and a per-cell count table (a scratch array sized by the frame). */
static size_t simulate(kiln_ctx *ctx, entity *entities, size_t count) {
    uint32_t *visible = kiln_frame_alloc(ctx, count * sizeof *visible, 64);
    uint16_t *cells = kiln_frame_alloc(ctx, 256 * 256 * sizeof *cells, 64);
    if (!visible || !cells) return 0;
    for (size_t i = 0; i < 256 * 256; i++) cells[i] = 0;
    size_t shown = 0;
    for (size_t i = 0; i < count; i++) {
        entity *e = &entities[i];
        e->x += e->vx;
        e->y += e->vy;
        if (e->x < 0 || e->x > 1000) e->vx = -e->vx;
        if (e->y < 0 || e->y > 1000) e->vy = -e->vy;
        if (e->x > 250 && e->x < 750 && e->y > 250 && e->y < 750) visible[shown++] = (uint32_t)i;
        cells[((unsigned)e->x & 255) * 256 + ((unsigned)e->y & 255)]++;
    }
    /* Many small allocations, as a real frame makes them (contact pairs, strings). */
    for (size_t i = 0; i < shown; i += 8) {
        float *pair = kiln_frame_alloc(ctx, 16 + (i % 7) * 8, 8);
        if (pair) pair[0] = entities[visible[i]].x;
    }
    return shown;
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
        shown_total += simulate(ctx, entities, count);
        kiln_frame_end(ctx);
        frame_ms[f] = now_ms() - start;
    }

    kiln_arena_stats frame_stats;
    kiln_arena_stats_get(kiln_frame_arena(ctx), &frame_stats);
    kiln_stats stats;
    kiln_stats_get(rt, &stats);
    qsort(frame_ms, (size_t)frames, sizeof *frame_ms, compare_double);
    printf("kiln frame loop: %d frames, %zu entities, %.1f visible per frame\n", frames, count,
           (double)shown_total / frames);
    printf("  frame time     median %.3f ms   p99 %.3f ms   max %.3f ms\n",
           frame_ms[frames / 2], frame_ms[(size_t)(frames * 0.99)], frame_ms[frames - 1]);
    printf("  frame memory   high-water %zu KiB per frame, %llu allocations, %u blocks held\n",
           frame_stats.peak_total >> 10, (unsigned long long)frame_stats.allocs,
           frame_stats.blocks_held);
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
