/* tests/test_inline.c — the inline fast paths (kiln/core.h, "Inline fast paths") and the
 * library's functions behave alike. This file is compiled twice: test-inline with the
 * inline paths on, as a client gets them, and test-inline-off with KILN_NO_INLINE, which
 * calls the library for everything. Both binaries must pass the same assertions: the same
 * pointers (frame memory is laid out alike), the same statistics, and the same refusals
 * with the same log items. The layout check of kiln_attach exists only with the inline
 * paths, and is tested here by compiling a client against a different KILN_HEAD_LAYOUT. */
#include <criterion/criterion.h>
#include <kiln/kiln.h>
#include <stdint.h>
#include <string.h>

#include "recording_log.h"

#ifdef KILN_NO_INLINE
#  define INLINE_PATHS_EXPECTED 0
#else
#  define INLINE_PATHS_EXPECTED 1
#endif

static recording_log *rec;
static kiln_runtime *rt;
static kiln_ctx *ctx;

static void setup_with(uint32_t debug, size_t frame_budget) {
    rec = recording_log_new();
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.debug = debug;
    d.frame_budget = frame_budget;
    rt = kiln_create(&d);
    cr_assert_not_null(rt);
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
}

static void setup(void) { setup_with(0, 0); }
static void teardown(void) { recording_fixture_end(&ctx, &rt, &rec); }

static uint64_t frame_allocs(void) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(kiln_frame_arena(ctx), &s));
    return s.allocs;
}

static uint64_t api_errors(void) {
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    return s.api_errors;
}

/* A second runtime, logging to the same recorder, and a context attached to it. */
static kiln_ctx *other_runtime_ctx(kiln_runtime **out) {
    kiln_desc d2 = recording_desc(rec);
    d2.worker_count = KILN_NO_WORKERS;
    *out = kiln_create(&d2);
    cr_assert_not_null(*out);
    kiln_ctx *ctx2 = kiln_attach(*out);
    cr_assert_not_null(ctx2);
    return ctx2;
}

Test(inline_paths, the_build_says_which, .init = setup, .fini = teardown) {
#ifdef KILN_INLINE_PATHS
    cr_assert_eq(INLINE_PATHS_EXPECTED, 1, "KILN_INLINE_PATHS in a KILN_NO_INLINE build");
#else
    cr_assert_eq(INLINE_PATHS_EXPECTED, 0, "no KILN_INLINE_PATHS in the inline build");
#endif
}

/* Frame memory: consecutive bumps, alignment, the count, the reset, and every refusal. */
Test(inline_paths, frame_alloc_lays_out_and_counts_alike, .init = setup, .fini = teardown) {
    kiln_frame_begin(ctx);
    uint64_t before = frame_allocs();
    char *a = kiln_frame_alloc(ctx, 24, 8);
    char *b = kiln_frame_alloc(ctx, 8, 8);
    char *c = kiln_frame_alloc(ctx, 1, 64);
    char *d = kiln_frame_alloc(ctx, 0, 0);             /* align 0: alignof(max_align_t) */
    char *e = kiln_frame_alloc(ctx, 100, 4096);
    cr_assert(a && b && c && d && e);
    cr_assert_eq(b, a + 24);
    cr_assert_eq((uintptr_t)c % 64, 0);
    cr_assert_eq((uintptr_t)d % _Alignof(max_align_t), 0);
    cr_assert_geq(d, c + 1);
    cr_assert_eq((uintptr_t)e % 4096, 0);
    size_t n = 2u << 20;   /* past a block: the slow path's mapping, the same either way */
    char *big = kiln_frame_alloc(ctx, n, 16);
    cr_assert_not_null(big);
    memset(big, 1, n);
    cr_assert_eq(frame_allocs() - before, 6);
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
    cr_assert_eq(kiln_frame_alloc(ctx, 24, 8), a, "the reset starts the block again");
    kiln_frame_end(ctx);
}

Test(inline_paths, frame_alloc_refusals_are_the_library_s, .init = setup, .fini = teardown) {
    uint64_t errors = api_errors();
    cr_assert_null(kiln_frame_alloc(ctx, 16, 3));
    cr_assert_null(kiln_frame_alloc(ctx, 16, 8192 * 1024));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 2, "%s", recorded_summary(rec));
    cr_assert_null(kiln_frame_alloc(ctx, SIZE_MAX, 8));
    cr_assert_null(kiln_frame_alloc(ctx, SIZE_MAX - 4, 16));
    cr_assert_null(kiln_frame_alloc(NULL, 16, 8));
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_not_null(other);
    cr_assert_not_null(kiln_frame_alloc(other, 16, 8));
    kiln_detach(other);
    cr_assert_null(kiln_frame_alloc(other, 16, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 1, "%s", recorded_summary(rec));
    cr_assert_geq(api_errors() - errors, 3);
}

/* A budget point inside the block: the inline bound stops there and the slow path warns
 * once, whichever path made the allocations. */
Test(inline_paths, frame_budget_warns_once_either_way, .fini = teardown) {
    setup_with(0, 4096);
    kiln_frame_begin(ctx);
    for (int i = 0; i < 100; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 64, 8));
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "%s", recorded_summary(rec));
}

/* KILN_DEBUG_CHECKS and KILN_DEBUG_FILL take every frame allocation out of line: fresh
 * memory reads 0xCD whichever path the client compiled. */
Test(inline_paths, debug_bits_take_the_checked_path, .fini = teardown) {
    setup_with(KILN_DEBUG_CHECKS | KILN_DEBUG_FILL, 0);
    kiln_frame_begin(ctx);
    unsigned char *p = kiln_frame_alloc(ctx, 32, 8);
    cr_assert_not_null(p);
    for (int i = 0; i < 32; i++) cr_assert_eq(p[i], 0xCD);
    kiln_arena *arena = kiln_arena_create(rt, "filled");
    cr_assert_not_null(arena);
    unsigned char *q = kiln_arena_alloc(arena, 16, 16);
    cr_assert_not_null(q);
    cr_assert_eq(q[15], 0xCD);
    kiln_arena_destroy(arena);
    kiln_frame_end(ctx);
}

Test(inline_paths, arena_alloc_alike, .init = setup, .fini = teardown) {
    kiln_arena *arena = kiln_arena_create(rt, "level");
    cr_assert_not_null(arena);
    char *a = kiln_arena_alloc(arena, 40, 8);
    char *b = kiln_arena_alloc(arena, 8, 8);
    cr_assert_eq(b, a + 40);
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    cr_assert_eq(s.allocs, 2);
    cr_assert_null(kiln_arena_alloc(NULL, 8, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_NULL), 0, "ARENA_NULL goes to stderr");
    kiln_arena_destroy(arena);
    cr_assert_null(kiln_arena_alloc(arena, 8, 8), "a destroyed arena's closed head");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_DESTROYED), 1, "%s", recorded_summary(rec));
}

static kiln_pool *make_pool(const char *name, uint32_t flags) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = name, .size = 48,
                                                               .flags = flags });
    cr_assert_not_null(pool);
    return pool;
}

static kiln_pool_stats pool_stats(kiln_pool *pool) {
    kiln_pool_stats s;
    cr_assert(kiln_pool_stats_get(pool, &s));
    return s;
}

Test(inline_paths, pool_alloc_free_alike, .init = setup, .fini = teardown) {
    kiln_pool *pool = make_pool("p", 0);
    enum { N = 300 };   /* several magazines: exchanges with the depot on both sides */
    void *objs[N];
    for (int i = 0; i < N; i++) cr_assert_not_null(objs[i] = kiln_pool_alloc(ctx, pool));
    for (int i = 0; i < N; i++) kiln_pool_free(ctx, pool, objs[i]);
    void *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, objs[N - 1], "the cache hands back the last object freed");
    kiln_pool_free(ctx, pool, again);
    kiln_pool_free(ctx, pool, NULL);   /* a no-op */
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.allocs, N + 1);
    cr_assert_eq(s.frees, N + 1);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(recorded_count(rec), 0, "%s", recorded_summary(rec));
    kiln_pool_destroy(pool);
}

Test(inline_paths, pool_free_refusals_are_the_library_s, .init = setup, .fini = teardown) {
    kiln_pool *pool = make_pool("p", 0);
    kiln_pool_free(ctx, pool, (void *)(((uintptr_t)1 << 63) + 64));   /* no block yet */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), 1, "%s", recorded_summary(rec));
    recording_log_clear(rec);
    kiln_pool *other = make_pool("q", 0);
    char *obj = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(obj);
    char local[64];
    kiln_pool_free(ctx, pool, local);                 /* not the pool's */
    kiln_pool_free(ctx, other, obj);                  /* another pool's */
    kiln_pool_free(ctx, pool, (void *)(uintptr_t)-1); /* MAP_FAILED */
    kiln_pool_free(ctx, pool, (void *)(((uintptr_t)1 << 63) + 64));   /* an empty entry's window */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_FOREIGN_POINTER), 4, "%s", recorded_summary(rec));
    cr_assert_eq(pool_stats(pool).bad_frees, 4, "the one before any block too");
    cr_assert_eq(pool_stats(other).bad_frees, 1);
    cr_assert_eq(pool_stats(pool).live, 1, "obj is still live");
    kiln_pool_free(NULL, pool, obj);
    cr_assert_eq(pool_stats(pool).live, 1);
    kiln_pool_free(ctx, pool, obj);
    cr_assert_eq(pool_stats(pool).live, 0);
    kiln_pool_destroy(pool);
    cr_assert_null(kiln_pool_alloc(ctx, pool));
    kiln_pool_free(ctx, pool, obj);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_DESTROYED), 2, "%s", recorded_summary(rec));
    kiln_pool_destroy(other);
}

/* A pool with hooks (ZERO, CLEAR_ON_FREE) never takes the inline paths; a context of
 * another runtime, a detached one and a NULL one are refused as documented. */
Test(inline_paths, pool_hooks_and_bad_contexts, .init = setup, .fini = teardown) {
    kiln_pool *zeroed = make_pool("z", KILN_POOL_ZERO);
    unsigned char *p = kiln_pool_alloc(ctx, zeroed);
    cr_assert_not_null(p);
    memset(p, 0xAB, 48);
    kiln_pool_free(ctx, zeroed, p);
    unsigned char *q = kiln_pool_alloc(ctx, zeroed);
    cr_assert_eq(q, p);
    for (int i = 0; i < 48; i++) cr_assert_eq(q[i], 0);
    kiln_pool_free(ctx, zeroed, q);

    kiln_runtime *rt2;
    kiln_ctx *ctx2 = other_runtime_ctx(&rt2);
    cr_assert_null(kiln_pool_alloc(ctx2, zeroed));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_WRONG_RUNTIME), 1, "%s", recorded_summary(rec));
    kiln_detach(ctx2);
    kiln_destroy(rt2);

    kiln_ctx *other = kiln_attach(rt);
    kiln_detach(other);
    cr_assert_null(kiln_pool_alloc(other, zeroed));
    cr_assert_null(kiln_pool_alloc(NULL, zeroed));
    cr_assert_null(kiln_pool_alloc(ctx, NULL));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 1, "%s", recorded_summary(rec));
    kiln_pool_destroy(zeroed);
}

Test(inline_paths, handle_get_alike, .init = setup, .fini = teardown) {
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "t", .item_size = 32 });
    kiln_handles *u = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "u", .item_size = 32 });
    cr_assert(t && u);
    void *item;
    kiln_handle h = kiln_handle_alloc(ctx, t, &item);
    kiln_handle g = kiln_handle_alloc(ctx, u, NULL);
    cr_assert(!kiln_handle_is_null(h) && !kiln_handle_is_null(g));
    cr_assert_eq(kiln_handle_get(t, h), item);
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ 0 }));
    cr_assert_null(kiln_handle_get(t, g), "another table's handle");
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ h.bits + ((uint64_t)2 << 32) }), "a later generation");
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ h.bits + ((uint64_t)1 << 32) }), "an even one (foreign)");
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ h.bits | 1u }), "no slot 1 was handed out");
    cr_assert_null(kiln_handle_get(NULL, h));
    cr_assert(kiln_handle_free(ctx, t, h));
    cr_assert_null(kiln_handle_get(t, h), "stale at once");
    kiln_handles_stats s;
    cr_assert(kiln_handles_stats_get(t, &s));
    cr_assert_eq(s.stale_lookups, 4, "%llu", (unsigned long long)s.stale_lookups);
    cr_assert_eq(s.foreign_handles, 2, "%llu", (unsigned long long)s.foreign_handles);
    kiln_handles_destroy(u);
    cr_assert_null(kiln_handle_get(u, g), "a destroyed table's capacity is 0");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_DESTROYED), 1, "%s", recorded_summary(rec));
    kiln_handles_destroy(t);
}

/* Handle alloc and free: several batches of the cache and frame ends (exchanges with the
 * table on both sides), the same handles and items, the same counts, and every refusal
 * with the library's item: a double free, another table's handle, forged ones, the zero
 * handle, NULL arguments, a detached context, another runtime's, a destroyed table. */
Test(inline_paths, handle_alloc_free_alike, .init = setup, .fini = teardown) {
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "t", .item_size = 24,
                                                                     .capacity = 100 });
    kiln_handles *u = kiln_handles_create(rt, &(kiln_handles_desc){ .name = "u", .item_size = 8 });
    cr_assert(t && u);
    kiln_frame_begin(ctx);
    enum { N = 100 };
    kiln_handle h[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            unsigned char *item = NULL;
            h[i] = kiln_handle_alloc(ctx, t, (void **)&item);
            cr_assert(!kiln_handle_is_null(h[i]), "round %d, alloc %d:%s", round, i, recorded_summary(rec));
            cr_assert_eq(kiln_handle_get(t, h[i]), item);
            for (int b = 0; b < 24; b++) cr_assert_eq(item[b], 0, "round %d: item %d is zero", round, i);
            memset(item, 0xEE, 24);
            cr_assert_eq(kiln_handle_generation(h[i]), (uint32_t)(2 * round + 1));
        }
        cr_assert(kiln_handle_is_null(kiln_handle_alloc(ctx, t, NULL)), "full");
        for (int i = 0; i < N; i++) cr_assert(kiln_handle_free(ctx, t, h[i]), "round %d, free %d", round, i);
        kiln_frame_end(ctx);
        kiln_frame_begin(ctx);
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 3, "%s", recorded_summary(rec));
    recording_log_clear(rec);
    uint64_t errors = api_errors();

    kiln_handle live = kiln_handle_alloc(ctx, t, NULL);
    kiln_handle other = kiln_handle_alloc(ctx, u, NULL);
    cr_assert(!kiln_handle_free(ctx, t, h[0]), "freed in an earlier round");
    cr_assert(!kiln_handle_free(ctx, t, other), "another table's");
    cr_assert(!kiln_handle_free(ctx, t, (kiln_handle){ live.bits + ((uint64_t)1 << 32) }), "even");
    cr_assert(!kiln_handle_free(ctx, t, (kiln_handle){ live.bits | 0xffffffu }), "index beyond");
    cr_assert(!kiln_handle_free(ctx, t, (kiln_handle){ 0 }));
    cr_assert(!kiln_handle_free(NULL, t, live));
    cr_assert(!kiln_handle_free(ctx, NULL, live));
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(NULL, t, NULL)));
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(ctx, NULL, NULL)));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE), 1, "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_FOREIGN), 3, "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_NULL), 1, "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_NULL), 2, "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_NULL), 2, "%s", recorded_summary(rec));
    cr_assert_eq(api_errors() - errors, 9);

    kiln_runtime *rt2;
    kiln_ctx *ctx2 = other_runtime_ctx(&rt2);
    cr_assert(!kiln_handle_free(ctx2, t, live), "a context of another runtime");
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(ctx2, t, NULL)));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_WRONG_RUNTIME), 2, "%s", recorded_summary(rec));
    kiln_detach(ctx2);
    kiln_destroy(rt2);
    kiln_ctx *gone = kiln_attach(rt);
    cr_assert_not_null(gone);
    kiln_detach(gone);
    cr_assert(!kiln_handle_free(gone, t, live), "a detached context");
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(gone, t, NULL)));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 2, "%s", recorded_summary(rec));

    kiln_handles_stats s;
    cr_assert(kiln_handles_stats_get(t, &s));
    cr_assert_eq(s.allocs, 3 * N + 1);
    cr_assert_eq(s.frees, 3 * N);
    cr_assert_eq(s.live, 1);
    cr_assert_eq(s.double_frees, 1);
    cr_assert_eq(s.foreign_handles, 4, "three forged and the zero handle");
    cr_assert(kiln_handle_free(ctx, t, live));
    cr_assert(kiln_handle_free(ctx, u, other));
    kiln_handles_destroy(u);
    cr_assert(!kiln_handle_free(ctx, u, other), "a destroyed table");
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(ctx, u, NULL)));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_DESTROYED), 2, "%s", recorded_summary(rec));
    kiln_frame_end(ctx);
    kiln_handles_destroy(t);
}

static kiln_heap_stats heap_figures(void) {
    kiln_heap_stats s;
    cr_assert(kiln_stats_heap(rt, &s));
    return s;
}

/* Allocations and frees of every class, tagged and not, count alike and charge the tags
 * alike; their credit and tag bytes are the library's to read back. */
Test(inline_paths, heap_alloc_free_alike, .init = setup, .fini = teardown) {
    kiln_tag tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "t" });
    static void *held[3000];
    size_t bytes = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3000; i++) {
            size_t size = (size_t)(i * 7) % (KILN_HEAP_CLASS_MAX + 1);
            held[i] = kiln_heap_alloc(ctx, i % 2 ? tag : (kiln_tag){ 0 }, size, 0);
            cr_assert_not_null(held[i]);
            cr_assert_eq(kiln_heap_tag(held[i]).id, i % 2 ? tag.id : 0u);
            if (round == 2 && i % 2) bytes += kiln_heap_usable_size(held[i]);
        }
        if (round < 2)
            for (int i = 0; i < 3000; i++) kiln_heap_free(ctx, held[i]);
    }
    kiln_heap_stats s = heap_figures();
    cr_expect_eq(s.live_objects, 3000u);
    cr_expect_eq(s.allocs, 9000u);
    cr_expect_eq(s.frees, 6000u);
    kiln_tag_stats ts;
    cr_assert(kiln_tag_stats_get(rt, tag, &ts));
    cr_expect_eq(ts.live_bytes, bytes);
    cr_expect_eq(ts.allocs - ts.frees, 1500u);
    for (int i = 0; i < 3000; i++) kiln_heap_free(ctx, held[i]);
    cr_expect_eq(heap_figures().live_objects, 0u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

/* What the inline free cannot prove goes to the library, which refuses it the same way. */
Test(inline_paths, heap_free_refusals_are_the_library_s, .init = setup, .fini = teardown) {
    char *p = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 100, 0);
    kiln_heap_free(ctx, p + 16);
    kiln_heap_free(ctx, p);
    kiln_heap_free(ctx, p);
    int on_stack = 0;
    kiln_heap_free(ctx, &on_stack);
    kiln_tag forged = { 0x12340001u };
    cr_expect_null(kiln_heap_alloc(ctx, forged, 16, 0));
    cr_expect_null(kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 16, 3));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_INTERIOR_POINTER), 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_DOUBLE_FREE), 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_FOREIGN_POINTER), 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_FOREIGN), 1u);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_BAD_ALIGN), 1u);
    kiln_ctx *gone = kiln_attach(rt);
    cr_assert_not_null(gone, "%s", recorded_summary(rec));
    void *q = kiln_heap_alloc(gone, (kiln_tag){ 0 }, 50, 0);
    kiln_detach(gone);
    cr_expect_null(kiln_heap_alloc(gone, (kiln_tag){ 0 }, 50, 0));
    kiln_heap_free(gone, q);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 2u);
    kiln_heap_free(ctx, q);
    cr_expect_eq(heap_figures().live_objects, 0u);
}

/* With the debug layer or KILN_DEBUG_CHECKS every heap call is the library's: guards and
 * the exchange of a slot's byte still catch what they catch. */
Test(inline_paths, heap_debug_bits_take_the_checked_path, .fini = teardown) {
    setup_with(KILN_DEBUG_CHECKS | KILN_DEBUG_GUARDS, 0);
    char *p = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 40, 0);
    p[kiln_heap_usable_size(p) + 3] = 1;   /* into the back guard */
    kiln_heap_free(ctx, p);
    kiln_heap_free(ctx, p);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 1u, "%s", recorded_summary(rec));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_DOUBLE_FREE), 1u);
}

/* Size 0 with the debug layer on: the library's too (an inline pop would skip its fill,
 * guards and sites, and the later free would find the slot's entry free). */
Test(inline_paths, heap_size_zero_under_the_debug_layer, .fini = teardown) {
    setup_with(KILN_DEBUG_GUARDS | KILN_DEBUG_FILL, 0);
    kiln_heap_free(ctx, kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 0, 0));   /* fills the cache */
    unsigned char *p = kiln_heap_alloc(ctx, (kiln_tag){ 0 }, 0, 0);
    cr_assert_not_null(p);
    cr_expect_eq(p[0], 0xCD, "filled as handed out");
    kiln_heap_free(ctx, p);
    kiln_heap_stats s = heap_figures();
    cr_expect_eq(s.live_objects, 0u);
    cr_expect_eq(s.frees, 2u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

/* A client compiled against headers of another inline layout: kiln_attach refuses it.
 * Without the inline paths nothing of the layout is compiled in, and attach succeeds. */
#undef KILN_HEAD_LAYOUT
#define KILN_HEAD_LAYOUT 0x7fffu

Test(inline_paths, attach_with_another_layout, .init = setup, .fini = teardown) {
    uint64_t errors = api_errors();
    kiln_ctx *other = kiln_attach(rt);
#ifdef KILN_INLINE_PATHS
    cr_assert_null(other);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH), 1, "%s", recorded_summary(rec));
    cr_assert_str_neq(last_item_text(rec, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH), "");
    cr_assert(strstr(last_item_text(rec, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH), "32767") != NULL,
              "names the caller's layout: %s", last_item_text(rec, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH));
    cr_assert_eq(api_errors() - errors, 1);
#else
    (void)errors;
    cr_assert_not_null(other);
    kiln_detach(other);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HEAD_LAYOUT_MISMATCH), 0);
#endif
}
