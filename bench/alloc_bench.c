/* bench/alloc_bench.c — the allocation family of BENCH.md: A1 frame (and its cold start:
 * the first and the worst frame of a fresh allocator), A5 block pool and A6 trim (A2-A4
 * join later), kiln against every peer found at configure time, one table per workload.
 *
 * Usage:
 *   alloc_bench [--quick] [--only a1|a1u|a5|a6] [--debug BITS[,BITS...]]
 *       the tables; --quick: a few frames per round, seconds in all; a1u: A1 with the
 *       touches left out, a diagnostic of the allocators' own cost; --debug: A1 compares
 *       kiln with desc.debug 0 against kiln with each of these KILN_DEBUG_* masks (one
 *       row each, same rounds; the peers are left out), the cost of the debug layer;
 *       a6: the worst kiln_trim_step against one whole kiln_trim (kiln alone: no peer
 *       gives memory back in slices)
 *   alloc_bench --callgrind-frame-alloc N [loop]
 *       N kiln_frame_alloc calls in A1 frames, for valgrind --tool=callgrind (callgrind.sh);
 *       loop: the same loop without the allocations (its count is subtracted)
 *   alloc_bench --child EXPECT a1 FRAMES TOUCH
 *       internal: serves a malloc peer's A1 rounds to the parent, under LD_PRELOAD
 *
 * Peers in this process: glibc malloc, mimalloc mi_malloc and mi_heap. Debian's
 * libmimalloc exports malloc itself, so once it is linked the process's plain malloc
 * IS mimalloc: the glibc row calls glibc's own malloc/free, looked up in libc.so.6
 * with dlsym and checked at start-up (bench_glibc_find). jemalloc and tcmalloc run in
 * child processes under LD_PRELOAD, one round at a time, alternating with the others
 * (bench_add_preload_peers). */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/block_pool.h"
#include "bench_config.h"
#include "debug_masks.h"
#include "harness.h"

#ifdef BENCH_HAVE_MIMALLOC
#  include <mimalloc.h>
#  define BENCH_FOREIGN_MALLOC mi_is_in_heap_region   /* for bench_glibc_find */
#else
#  define BENCH_FOREIGN_MALLOC NULL
#endif
#ifdef BENCH_HAVE_CALLGRIND_H
#  include <valgrind/callgrind.h>
#endif

/* Sizes of the run: full (the default) and --quick. */
typedef struct run_size {
    int a1_frames;          /* frames per round */
    int a1_rounds;
    int a5_bursts;          /* per thread per round */
    int a5_pairs;           /* get+put pairs per burst, at least */
    int a5_rounds;
    int a6_blocks;          /* free blocks, every page resident, that each round gives back */
    int a6_rounds;
} run_size;

static const run_size full_run  = { .a1_frames = 40, .a1_rounds = 9,
                                    .a5_bursts = 20, .a5_pairs = 10000, .a5_rounds = 15,
                                    .a6_blocks = 1024, .a6_rounds = 7 };
static const run_size quick_run = { .a1_frames = 2, .a1_rounds = 5,
                                    .a5_bursts = 4, .a5_pairs = 2000, .a5_rounds = 5,
                                    .a6_blocks = 64, .a6_rounds = 5 };

/* The one byte write that "touches" every allocation; volatile so that no compiler
 * drops a store into memory that is freed or reset later. */
static inline void touch(void *p, size_t i) { *(volatile char *)p = (char)i; }

/* ==== A1 frame ===================================================================== */

#define A1_ALLOCS    100000
#define A1_MIN_SIZE  16
#define A1_MAX_SIZE  256
#define A1_ALIGN     8
#define A1_SEED      0x6b696c6e41314131ull   /* fixed: every side gets the same sizes */
/* Frames run unrecorded at the start of every round, on every side: the round before
 * was another allocator's, which left the caches full of its own memory. */
#define A1_SETTLE    2

typedef struct a1_state {
    uint32_t  *sizes;   /* A1_ALLOCS sizes, multiples of 8 from 16 to 256, precomputed */
    size_t     count;
    size_t     bytes;   /* the sum of the sizes */
    int        frames;  /* recorded per round, after A1_SETTLE unrecorded ones */
    bool       touch;   /* false: the diagnostic variant, allocations not written */
    void     **ptrs;    /* what the malloc peers free at frame end */
    char      *floor;   /* the reference row's buffer: bytes, written before timing */
    kiln_ctx  *ctx;
} a1_state;

static void a1_init(a1_state *a, int frames, bool touch) {
    a->count = A1_ALLOCS;
    a->frames = frames;
    a->touch = touch;
    a->sizes = malloc(a->count * sizeof *a->sizes);
    a->ptrs = malloc(a->count * sizeof *a->ptrs);
    if (!a->sizes || !a->ptrs) bench_die("out of memory for the A1 inputs");
    bench_rng rng = { A1_SEED };
    const uint64_t steps = (A1_MAX_SIZE - A1_MIN_SIZE) / A1_ALIGN + 1;
    a->bytes = 0;
    for (size_t i = 0; i < a->count; i++) {
        a->sizes[i] = (uint32_t)(A1_MIN_SIZE + (bench_rng_next(&rng) % steps) * A1_ALIGN);
        a->bytes += a->sizes[i];
    }
    a->floor = NULL;
    a->ctx = NULL;
}

static void a1_fini(a1_state *a) {
    free(a->sizes);
    free(a->ptrs);
    free(a->floor);
}

/* Where frame f of a round is recorded: the settling frames (f < 0) are not. */
static void a1_record(bench_series *s, int f, uint64_t t0, size_t count) {
    if (f >= 0) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)count);
}

/* Keeps p alive for the compiler in the untouched variant, without a store. */
static inline void use(void *p) { __asm__ volatile("" : : "r"(p)); }

/* Every frame loop below is always_inline with touched a constant, so each row runs a
 * loop without the test, and copies its inputs into locals first: with a call in the
 * loop, the compiler would otherwise reload them from the state after every one. */
#define A1_INLINE static inline __attribute__((always_inline))

A1_INLINE void a1_kiln_frames(a1_state *a, bench_series *s, bool touched) {
    kiln_ctx *ctx = a->ctx;
    const uint32_t *sizes = a->sizes;
    const size_t count = a->count;
    for (int f = -A1_SETTLE; f < a->frames; f++) {
        uint64_t t0 = bench_now_ns();
        kiln_frame_begin(ctx);
        for (size_t i = 0; i < count; i++) {
            void *p = kiln_frame_alloc(ctx, sizes[i], A1_ALIGN);
            if (!p) bench_die("A1: kiln_frame_alloc returned NULL");
            if (touched) touch(p, i);
            else use(p);
        }
        kiln_frame_end(ctx);
        a1_record(s, f, t0, count);
    }
}

static void a1_kiln_round(void *state, bench_series *s) {
    a1_state *a = state;
    if (a->touch) a1_kiln_frames(a, s, true);
    else a1_kiln_frames(a, s, false);
}

/* The reference row: no allocator at all, a bump pointer kept in a register over one
 * buffer that stays mapped, with the same touches: the floor that the workload's memory
 * traffic sets on this machine, which the arena-like allocators approach from above. */
A1_INLINE void a1_floor_frames(a1_state *a, bench_series *s, bool touched) {
    const uint32_t *sizes = a->sizes;
    const size_t count = a->count;
    for (int f = -A1_SETTLE; f < a->frames; f++) {
        uint64_t t0 = bench_now_ns();
        char *cursor = a->floor;
        for (size_t i = 0; i < count; i++) {
            char *p = cursor;
            cursor += sizes[i];
            if (touched) touch(p, i);
            else use(p);
        }
        a1_record(s, f, t0, count);
    }
}

static void a1_floor_round(void *state, bench_series *s) {
    a1_state *a = state;
    if (a->touch) a1_floor_frames(a, s, true);
    else a1_floor_frames(a, s, false);
}

/* malloc + free of everything at frame end, inlined with each pair of functions. */
A1_INLINE void a1_malloc_frames(a1_state *a, bench_series *s, bool touched,
                                void *(*alloc)(size_t), void (*release)(void *)) {
    const uint32_t *sizes = a->sizes;
    const size_t count = a->count;
    void **ptrs = a->ptrs;
    for (int f = -A1_SETTLE; f < a->frames; f++) {
        uint64_t t0 = bench_now_ns();
        for (size_t i = 0; i < count; i++) {
            void *p = alloc(sizes[i]);
            if (!p) bench_die("A1: malloc returned NULL");
            if (touched) touch(p, i);
            ptrs[i] = p;
        }
        for (size_t i = 0; i < count; i++) release(ptrs[i]);
        a1_record(s, f, t0, count);
    }
}

/* The process's malloc: glibc's without mimalloc linked, or a child's LD_PRELOAD one. */
static void a1_malloc_round(void *state, bench_series *s) {
    a1_state *a = state;
    if (a->touch) a1_malloc_frames(a, s, true, malloc, free);
    else a1_malloc_frames(a, s, false, malloc, free);
}

/* glibc's own malloc and free, whatever else defines malloc in this process (found by
 * bench_glibc_find). */
static bench_malloc_fns glibc;

static void a1_glibc_round(void *state, bench_series *s) {
    a1_state *a = state;
    void *(*alloc)(size_t) = glibc.malloc;
    void (*release)(void *) = glibc.free;
    if (a->touch) a1_malloc_frames(a, s, true, alloc, release);
    else a1_malloc_frames(a, s, false, alloc, release);
}

#ifdef BENCH_HAVE_MIMALLOC
static void a1_mimalloc_round(void *state, bench_series *s) {
    a1_state *a = state;
    if (a->touch) a1_malloc_frames(a, s, true, mi_malloc, mi_free);
    else a1_malloc_frames(a, s, false, mi_malloc, mi_free);
}

/* The arena-like peer: a heap per frame, destroyed whole at frame end. */
A1_INLINE void a1_mi_heap_frames(a1_state *a, bench_series *s, bool touched) {
    const uint32_t *sizes = a->sizes;
    const size_t count = a->count;
    for (int f = -A1_SETTLE; f < a->frames; f++) {
        uint64_t t0 = bench_now_ns();
        mi_heap_t *heap = mi_heap_new();
        if (!heap) bench_die("A1: mi_heap_new returned NULL");
        for (size_t i = 0; i < count; i++) {
            void *p = mi_heap_malloc(heap, sizes[i]);
            if (!p) bench_die("A1: mi_heap_malloc returned NULL");
            if (touched) touch(p, i);
            else use(p);
        }
        mi_heap_destroy(heap);
        a1_record(s, f, t0, count);
    }
}

static void a1_mi_heap_round(void *state, bench_series *s) {
    a1_state *a = state;
    if (a->touch) a1_mi_heap_frames(a, s, true);
    else a1_mi_heap_frames(a, s, false);
}
#endif

/* ---- A1 cold start: the first frame and the worst one ----
 * The rounds above drop their first frames (A1_SETTLE) and reuse one runtime, so they
 * never show what a game sees at start: the first frame of a fresh allocator, which
 * takes its memory from the OS then. Here each side plays the A1 frames once on a fresh
 * allocator with every frame timed, the first included. */

typedef struct a1_cold { double first_ms, worst_ms, median_ms; int worst_frame; } a1_cold;

static int compare_ns(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static a1_cold a1_cold_figures(const double *ns, int frames) {
    a1_cold c = { ns[0] / 1e6, ns[0] / 1e6, 0, 1 };
    double *sorted = malloc((size_t)frames * sizeof *sorted);
    if (!sorted) bench_die("A1 cold: out of memory");
    memcpy(sorted, ns, (size_t)frames * sizeof *sorted);
    qsort(sorted, (size_t)frames, sizeof *sorted, compare_ns);
    c.median_ms = sorted[frames / 2] / 1e6;
    free(sorted);
    for (int f = 0; f < frames; f++)
        if (ns[f] / 1e6 > c.worst_ms) c.worst_ms = ns[f] / 1e6, c.worst_frame = f + 1;
    return c;
}

/* frame_reserve 0: a fresh runtime as kiln_create(NULL) makes it; else the frame arena
 * takes (and touches) that much at attach, outside the timed frames, as a game's load. */
static a1_cold a1_cold_kiln(a1_state *a, double *ns, int frames, size_t frame_reserve) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .frame_reserve = frame_reserve });
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    if (!ctx) bench_die("A1 cold: kiln_create or kiln_attach failed");
    for (int f = 0; f < frames; f++) {
        uint64_t t0 = bench_now_ns();
        kiln_frame_begin(ctx);
        for (size_t i = 0; i < a->count; i++) {
            void *p = kiln_frame_alloc(ctx, a->sizes[i], A1_ALIGN);
            if (!p) bench_die("A1 cold: kiln_frame_alloc returned NULL");
            touch(p, i);
        }
        kiln_frame_end(ctx);
        ns[f] = (double)(bench_now_ns() - t0);
    }
    kiln_detach(ctx);
    kiln_destroy(rt);
    return a1_cold_figures(ns, frames);
}

static a1_cold a1_cold_malloc(a1_state *a, double *ns, int frames) {
    for (int f = 0; f < frames; f++) {
        uint64_t t0 = bench_now_ns();
        for (size_t i = 0; i < a->count; i++) {
            void *p = glibc.malloc(a->sizes[i]);
            if (!p) bench_die("A1 cold: malloc returned NULL");
            touch(p, i);
            a->ptrs[i] = p;
        }
        for (size_t i = 0; i < a->count; i++) glibc.free(a->ptrs[i]);
        ns[f] = (double)(bench_now_ns() - t0);
    }
    return a1_cold_figures(ns, frames);
}

static void a1_cold_line(const char *name, const a1_cold *c) {
    printf("  %-20s first %8.3f ms   worst %8.3f ms (frame %d)   median %8.3f ms   "
           "worst/median %5.2fx\n", name, c->first_ms, c->worst_ms, c->worst_frame, c->median_ms,
           c->median_ms > 0 ? c->worst_ms / c->median_ms : 0.0);
}

/* Before every other A1 row, so that kiln's first frame and malloc's are this process's
 * first A1 frames (glibc's heap has served only the inputs, which are mapped apart). */
static void run_a1_cold(const run_size *size) {
    int frames = size->a1_frames + A1_SETTLE;
    a1_state a;
    a1_init(&a, frames, true);
    double *ns = malloc((size_t)frames * sizeof *ns);
    if (!ns) bench_die("A1 cold: out of memory");
    printf("\nA1 cold start: %d A1 frames (touched) on a fresh allocator, every frame timed, the "
           "first included\n", frames);
    a1_cold cold = a1_cold_kiln(&a, ns, frames, 0);
    a1_cold_line("kiln frame_alloc", &cold);
    size_t frame_bytes = 0;   /* one frame's allocations, each aligned as A1 asks */
    for (size_t i = 0; i < a.count; i++)
        frame_bytes += (a.sizes[i] + A1_ALIGN - 1) & ~(size_t)(A1_ALIGN - 1);
    a1_cold kiln = a1_cold_kiln(&a, ns, frames, frame_bytes + frame_bytes / 8);
    a1_cold_line("kiln, frame_reserve", &kiln);
    char why[160];
    if (bench_glibc_find(&glibc, BENCH_FOREIGN_MALLOC, why, sizeof why)) {
        a1_cold mal = a1_cold_malloc(&a, ns, frames);
        a1_cold_line("glibc malloc+free", &mal);
        printf("  goal (kiln with frame_reserve): worst frame at most 1.5x its median and below "
               "malloc's worst: %s\n",
               kiln.worst_ms <= 1.5 * kiln.median_ms && kiln.worst_ms < mal.worst_ms ? "met"
                                                                                    : "not met");
    } else {
        printf("  glibc malloc+free: skipped (%s)\n", why);
    }
    free(ns);
    a1_fini(&a);
}

/* A1, or with touch false its diagnostic variant: the allocators' own cost, without
 * the memory traffic of the touches. */
static void run_a1(const run_size *size, bool touch) {
    a1_state a;
    a1_init(&a, size->a1_frames, touch);
    a.floor = malloc(a.bytes);
    if (!a.floor) bench_die("A1: out of memory for the reference buffer");
    memset(a.floor, 0, a.bytes);
    kiln_runtime *rt = kiln_create(NULL);
    if (!rt || !(a.ctx = kiln_attach(rt))) bench_die("A1: kiln_create or kiln_attach failed");

    char detail[384];
    snprintf(detail, sizeof detail,
             "%d allocations per frame, sizes %d-%d B (multiples of %d, fixed seed, %.1f MB "
             "per frame), %s, then frame end; 1 thread; per round %d unrecorded frames, "
             "then %d recorded",
             A1_ALLOCS, A1_MIN_SIZE, A1_MAX_SIZE, A1_ALIGN, (double)a.bytes / 1e6,
             touch ? "each touched once (one byte written)" : "NOT touched (diagnostic)",
             A1_SETTLE, size->a1_frames);
    bench_workload w = { .title = touch ? "A1 frame" : "A1 frame, untouched (diagnostic)",
                         .detail = detail, .op = "alloc", .sample = "frame",
                         .rounds = size->a1_rounds };
    bench_add_entry(&w, "kiln frame_alloc+frame_end", a1_kiln_round, &a);
    /* --debug: one more kiln row per mask, each with a runtime of its own. */
    a1_state debug_rows[MAX_DEBUG_ROWS];
    kiln_runtime *debug_rts[MAX_DEBUG_ROWS];
    char debug_names[MAX_DEBUG_ROWS][48];
    for (int i = 0; i < debug_mask_count; i++) {
        debug_rows[i] = a;
        debug_rts[i] = kiln_create(&(kiln_desc){ .debug = debug_masks[i] });
        if (!debug_rts[i] || !(debug_rows[i].ctx = kiln_attach(debug_rts[i])))
            bench_die("A1: kiln_create with debug 0x%x failed", debug_masks[i]);
        snprintf(debug_names[i], sizeof debug_names[i], "kiln, desc.debug = 0x%02x", debug_masks[i]);
        bench_add_entry(&w, debug_names[i], a1_kiln_round, &debug_rows[i]);
    }
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    if (debug_mask_count == 0) {
        char why[160];
        if (bench_glibc_find(&glibc, BENCH_FOREIGN_MALLOC, why, sizeof why))
            bench_add_entry(&w, "glibc malloc+free", a1_glibc_round, &a);
        else bench_add_skipped(&w, "glibc malloc+free", "%s", why);
#ifdef BENCH_HAVE_MIMALLOC
        bench_add_entry(&w, "mimalloc mi_malloc+mi_free", a1_mimalloc_round, &a);
        bench_add_entry(&w, "mimalloc mi_heap (destroy)", a1_mi_heap_round, &a);
#else
        bench_add_skipped(&w, "mimalloc", "libmimalloc not found at configure time");
#endif
        char frames_arg[16];
        snprintf(frames_arg, sizeof frames_arg, "%d", a.frames);
        const char *child_args[] = { "a1", frames_arg, a.touch ? "1" : "0", NULL };
        bench_add_preload_peers(&w, "alloc_bench", child_args, children);
    }
    bench_add_entry(&w, "reference: inline bump, no alloc", a1_floor_round, &a);
    bench_run(&w);
    bench_print(&w);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    for (int i = 0; i < debug_mask_count; i++) {
        kiln_detach(debug_rows[i].ctx);
        kiln_destroy(debug_rts[i]);
    }
    kiln_detach(a.ctx);
    kiln_destroy(rt);
    a1_fini(&a);
}

/* The child side of a preload peer: plain malloc/free, which LD_PRELOAD replaced. */
static int serve_a1_child(const char *expect, int frames, bool touch) {
    a1_state a;
    a1_init(&a, frames, touch);
    int status = bench_child_serve(expect, a1_malloc_round, &a);
    a1_fini(&a);
    return status;
}

/* N kiln_frame_alloc calls in A1 frames, for callgrind (--collect-atstart=no): only the
 * inner loops are counted (client requests around each; frame begin and end are not),
 * slow paths (new blocks) included at the rate A1 meets them. One warm-up frame first.
 * loop: the same loop with every allocation replaced by a fixed buffer, so that the
 * difference of the two counts is what kiln_frame_alloc adds, inline or not. */
static int callgrind_frame_alloc(long n, bool baseline) {
    a1_state a;
    a1_init(&a, 1, true);
    kiln_runtime *rt = kiln_create(NULL);
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    if (!ctx) bench_die("callgrind: kiln_create or kiln_attach failed");
    /* Read through a volatile pointer, so that the loop's own NULL test stays in it. */
    static _Alignas(64) char buffer[A1_MAX_SIZE];
    static void *volatile fixed = buffer;
    for (int warm = 1; warm >= 0; warm--) {
        long left = warm ? (long)a.count : n;
        while (left > 0) {
            kiln_frame_begin(ctx);
            size_t count = a.count < (size_t)left ? a.count : (size_t)left;
#ifdef BENCH_HAVE_CALLGRIND_H
            if (!warm) CALLGRIND_TOGGLE_COLLECT;
#endif
            for (size_t i = 0; i < count; i++) {
                void *p = baseline ? fixed : kiln_frame_alloc(ctx, a.sizes[i], A1_ALIGN);
                if (!p) bench_die("callgrind: kiln_frame_alloc returned NULL");
                touch(p, i);
            }
#ifdef BENCH_HAVE_CALLGRIND_H
            if (!warm) CALLGRIND_TOGGLE_COLLECT;
#endif
            left -= (long)count;
            kiln_frame_end(ctx);
        }
    }
    printf("allocations %ld (warm-up frame excluded)\n", n);
    kiln_detach(ctx);
    kiln_destroy(rt);
    a1_fini(&a);
    return 0;
}

/* ==== A5 block pool ================================================================= */

#define A5_HOLD       8           /* a thread holds up to this many blocks at once */
#define A5_BLOCK_SIZE (64u << 10) /* kiln's default granule */
#define A5_BLOCKS     64          /* blocks on each side: more than 4 threads x A5_HOLD */

/* The baseline: the same blocks on a free list under one pthread mutex. */
typedef struct mutex_list {
    _Alignas(64) pthread_mutex_t lock;
    kiln_lifo_node *top;
} mutex_list;

static inline void *mutex_list_get(mutex_list *list) {
    pthread_mutex_lock(&list->lock);
    kiln_lifo_node *node = list->top;
    if (node) list->top = node->next;
    pthread_mutex_unlock(&list->lock);
    return node;
}

static inline void mutex_list_put(mutex_list *list, void *block) {
    kiln_lifo_node *node = block;
    pthread_mutex_lock(&list->lock);
    node->next = list->top;
    list->top = node;
    pthread_mutex_unlock(&list->lock);
}

static kiln_block_pool a5_pool;
static mutex_list      a5_list = { .lock = PTHREAD_MUTEX_INITIALIZER };

typedef struct a5_config {
    bool use_kiln;
    int  threads, bursts, pairs;
} a5_config;

typedef struct a5_thread {
    const a5_config   *config;
    pthread_barrier_t *start;
    unsigned           id;
    uint64_t           begin, end;        /* first and last timestamp of the thread */
    double            *burst_ns, *burst_pairs;
} a5_thread;

/* get 1-8 blocks, write into the first cache line of each, put them back: one thread's
 * bursts, each timed on its own. Inlined once per side, so both run the same loop. */
static inline __attribute__((always_inline)) void
a5_work(a5_thread *t, bool use_kiln) {
    bench_rng rng = { 0x6b696c6e41354135ull + t->id * 0x9e3779b97f4a7c15ull };
    void *held[A5_HOLD];
    t->begin = bench_now_ns();
    for (int b = 0; b < t->config->bursts; b++) {
        uint64_t t0 = bench_now_ns();
        long pairs = 0;
        while (pairs < t->config->pairs) {
            unsigned k = 1 + (unsigned)(bench_rng_next(&rng) >> 61);   /* 1..8 */
            for (unsigned j = 0; j < k; j++) {
                held[j] = use_kiln ? kiln_block_get(&a5_pool) : mutex_list_get(&a5_list);
                if (!held[j]) bench_die("A5: a get found no block");
                ((volatile uint64_t *)held[j])[1] = j;   /* the line that holds the link */
            }
            for (unsigned j = 0; j < k; j++) {
                if (use_kiln) kiln_block_put(&a5_pool, held[j]);
                else mutex_list_put(&a5_list, held[j]);
            }
            pairs += k;
        }
        uint64_t t1 = bench_now_ns();
        t->burst_ns[b] = (double)(t1 - t0);
        t->burst_pairs[b] = (double)pairs;
        t->end = t1;
    }
}

static void *a5_kiln_thread(void *arg) {
    a5_thread *t = arg;
    pthread_barrier_wait(t->start);
    a5_work(t, true);
    return NULL;
}

static void *a5_mutex_thread(void *arg) {
    a5_thread *t = arg;
    pthread_barrier_wait(t->start);
    a5_work(t, false);
    return NULL;
}

/* One round: the threads start together; samples are each thread's bursts; the round
 * figure is the wall time from the first start to the last end, times the thread
 * count, over all pairs: ns per pair as each thread sees it. */
static void a5_round(void *state, bench_series *s) {
    const a5_config *c = state;
    pthread_t ids[16];
    a5_thread threads[16];
    pthread_barrier_t start;
    if (c->threads > 16) bench_die("A5: at most 16 threads");
    pthread_barrier_init(&start, NULL, (unsigned)c->threads);
    for (int i = 0; i < c->threads; i++) {
        threads[i] = (a5_thread){ .config = c, .start = &start, .id = (unsigned)i };
        threads[i].burst_ns = calloc((size_t)c->bursts, sizeof(double));
        threads[i].burst_pairs = calloc((size_t)c->bursts, sizeof(double));
        if (!threads[i].burst_ns || !threads[i].burst_pairs) bench_die("A5: out of memory");
        if (pthread_create(&ids[i], NULL, c->use_kiln ? a5_kiln_thread : a5_mutex_thread,
                           &threads[i]) != 0)
            bench_die("A5: pthread_create failed");
    }
    uint64_t first = UINT64_MAX, last = 0;
    double pairs = 0;
    for (int i = 0; i < c->threads; i++) {
        pthread_join(ids[i], NULL);
        a5_thread *t = &threads[i];
        if (t->begin < first) first = t->begin;
        if (t->end > last) last = t->end;
        for (int b = 0; b < c->bursts; b++) {
            bench_add_sample(s, t->burst_ns[b], t->burst_pairs[b]);
            pairs += t->burst_pairs[b];
        }
        free(t->burst_ns);
        free(t->burst_pairs);
    }
    pthread_barrier_destroy(&start);
    bench_add_round(s, (double)(last - first) * c->threads, pairs);
}

/* The pool and the list get their blocks before any timing: the pool's LIFO holds
 * A5_BLOCKS free blocks (it never grows during a round) and the list as many more. */
static void a5_setup(void) {
    kiln_block_pool_config config = { .block_size = A5_BLOCK_SIZE,
                                      .reserve_bytes = (size_t)A5_BLOCKS * A5_BLOCK_SIZE };
    if (!kiln_block_pool_init(&a5_pool, &config)) bench_die("A5: kiln_block_pool_init failed");
    void *blocks[2 * A5_BLOCKS];
    for (int i = 0; i < 2 * A5_BLOCKS; i++)
        if (!(blocks[i] = kiln_block_get(&a5_pool))) bench_die("A5: kiln_block_get failed");
    for (int i = 0; i < A5_BLOCKS; i++) kiln_block_put(&a5_pool, blocks[i]);
    for (int i = A5_BLOCKS; i < 2 * A5_BLOCKS; i++) mutex_list_put(&a5_list, blocks[i]);
}

static void a5_teardown(void) {
    void *block;
    while ((block = mutex_list_get(&a5_list)) != NULL) kiln_block_put(&a5_pool, block);
    kiln_block_pool_fini(&a5_pool);
}

static void run_a5(const run_size *size) {
    a5_setup();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int counts[] = { 1, 2, cpus > 0 ? 2 * (int)cpus : 4 };
    for (int i = 0; i < 3; i++) {
        int n = counts[i];
        if (i == 2 && n <= 2) break;
        a5_config kiln = { true, n, size->a5_bursts, size->a5_pairs };
        a5_config mutex = { false, n, size->a5_bursts, size->a5_pairs };
        char title[96], detail[256];
        snprintf(title, sizeof title, "A5 block pool, %d thread%s%s", n, n > 1 ? "s" : "",
                 n > cpus ? " (2x cores: oversubscribed)" : "");
        snprintf(detail, sizeof detail,
                 "per thread: %d bursts of %d+ get+put pairs (1-8 blocks of %u KiB held, one "
                 "line of each written); %ld cores; ns per pair as each thread sees it",
                 size->a5_bursts, size->a5_pairs, A5_BLOCK_SIZE >> 10, cpus);
        bench_workload w = { .title = title, .detail = detail, .op = "pair",
                             .sample = "burst", .rounds = size->a5_rounds };
        bench_add_entry(&w, "kiln block pool (lock-free)", a5_round, &kiln);
        bench_add_entry(&w, "mutex free list", a5_round, &mutex);
        bench_run(&w);
        bench_print(&w);
        bench_workload_free(&w);
    }
    a5_teardown();
}

/* ==== A6 trim ====================================================================== */

/* Memory a level used, given back: a_blocks free blocks with every page resident, then
 * kiln_trim_step slices of `step` blocks until none is left (step 0: one kiln_trim).
 * A sample is one call's duration (ops 1), so the table's max is the worst step: what
 * a frame that trims pays at most. */
typedef struct a6_state {
    kiln_runtime *rt;
    int           blocks;
    size_t        step;          /* blocks per kiln_trim_step; 0: kiln_trim */
} a6_state;

/* Untimed: an arena takes the blocks and writes every page, then gives them back. */
static void a6_fill(a6_state *a) {
    kiln_arena *level = kiln_arena_create(a->rt, "A6 level");
    if (!level) bench_die("A6: kiln_arena_create failed");
    size_t chunk = A5_BLOCK_SIZE / 2;   /* two per block: every block is taken */
    for (int i = 0; i < 2 * a->blocks; i++) {
        char *p = kiln_arena_alloc(level, chunk, 64);
        if (!p) bench_die("A6: kiln_arena_alloc failed");
        for (size_t off = 0; off < chunk; off += 4096) p[off] = (char)i;
    }
    kiln_arena_destroy(level);
}

static void a6_round(void *state, bench_series *s) {
    a6_state *a = state;
    a6_fill(a);
    uint64_t t0 = bench_now_ns(), round_ns = 0;
    if (a->step == 0) {
        kiln_trim(a->rt);
        round_ns = bench_now_ns() - t0;
        bench_add_sample(s, (double)round_ns, 1);
    } else {
        for (size_t left = 1; left > 0;) {
            uint64_t t1 = bench_now_ns();
            left = kiln_trim_step(a->rt, a->step);
            uint64_t t2 = bench_now_ns();
            bench_add_sample(s, (double)(t2 - t1), 1);
            round_ns += t2 - t1;
        }
    }
    bench_add_round(s, (double)round_ns, 1);   /* the whole give-back, however sliced */
}

static void run_a6(const run_size *size) {
    /* One runtime per row, each with the blocks of its own rounds. */
    const size_t steps[] = { 0, 8, 64 };
    enum { ROWS = sizeof steps / sizeof steps[0] };
    a6_state rows[ROWS];
    char names[ROWS][48];
    char detail[256];
    snprintf(detail, sizeof detail,
             "%d free blocks of %u KiB, every page written, given back per round; sample: "
             "one call (the max is the worst step); round: all calls of the round together",
             size->a6_blocks, A5_BLOCK_SIZE >> 10);
    bench_workload w = { .title = "A6 trim: kiln_trim_step slices against one kiln_trim",
                         .detail = detail, .op = "give-back", .sample = "call",
                         .rounds = size->a6_rounds };
    for (int i = 0; i < ROWS; i++) {
        rows[i] = (a6_state){ .rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS }),
                              .blocks = size->a6_blocks, .step = steps[i] };
        if (!rows[i].rt) bench_die("A6: kiln_create failed");
        if (steps[i] == 0) snprintf(names[i], sizeof names[i], "kiln_trim (one pass)");
        else snprintf(names[i], sizeof names[i], "kiln_trim_step, %zu blocks", steps[i]);
        bench_add_entry(&w, names[i], a6_round, &rows[i]);
    }
    bench_run(&w);
    bench_print(&w);
    bench_workload_free(&w);
    for (int i = 0; i < ROWS; i++) kiln_destroy(rows[i].rt);
}

/* ==== main ========================================================================== */

static void usage(void) {
    fprintf(stderr, "usage: alloc_bench [--quick] [--only a1|a1u|a5|a6] [--debug BITS[,BITS...]]\n"
                    "       alloc_bench --callgrind-frame-alloc N [loop]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const run_size *size = &full_run;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--child") == 0 && i + 4 < argc && strcmp(argv[i + 2], "a1") == 0)
            return serve_a1_child(argv[i + 1], atoi(argv[i + 3]), strcmp(argv[i + 4], "1") == 0);
        if (strcmp(argv[i], "--callgrind-frame-alloc") == 0 && i + 1 < argc)
            return callgrind_frame_alloc(atol(argv[i + 1]),
                                         i + 2 < argc && strcmp(argv[i + 2], "loop") == 0);
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--debug") == 0 && i + 1 < argc) {
            if (!parse_debug_masks(argv[++i])) usage();
        } else usage();
    }
    if (only && strcmp(only, "a1") != 0 && strcmp(only, "a1u") != 0 && strcmp(only, "a5") != 0 &&
        strcmp(only, "a6") != 0)
        usage();
    printf("kiln alloc_bench (%s run); malloc in this process comes from %s\n",
           size == &quick_run ? "quick" : "full", bench_malloc_provider());
    bench_print_load();
    uint64_t t0 = bench_now_ns();
    if (!only || strcmp(only, "a1") == 0) run_a1_cold(size);
    if (!only || strcmp(only, "a1") == 0) run_a1(size, true);
    if (!only || strcmp(only, "a1u") == 0) run_a1(size, false);
    if (!only || strcmp(only, "a5") == 0) run_a5(size);
    if (debug_mask_count == 0 && (!only || strcmp(only, "a6") == 0)) run_a6(size);
    printf("\nalloc_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
