/* tests/test_frame.c — the frame clock and frame memory: frame numbers, the driving
 * context, frame_end resetting the frame arena, steady frames taking no block, the
 * keep policy after a spike, alignment, the per-frame budget warning, misuse, and
 * several threads doing frames against one runtime. */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "recording_log.h"

#define BS ((size_t)64 << 10)

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

static kiln_runtime *create_runtime(size_t frame_budget) {
    kiln_desc desc = recording_desc(rec);
    desc.frame_budget = frame_budget;
    kiln_runtime *r = kiln_create(&desc);
    cr_assert_not_null(r, "kiln_create failed:%s", recorded_summary(rec));
    return r;
}

static void setup(void) {
    rec = recording_log_new();
    rt = create_runtime(0);
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
}

static void teardown(void) {
    kiln_detach(ctx);
    kiln_destroy(rt);
    recording_log_free(rec);
    rt = NULL;
    ctx = NULL;
    rec = NULL;
}

TestSuite(frame, .init = setup, .fini = teardown);

/* Budget tests make their own runtime with a budget (the suite's has none). */
static void budget_setup(void) { rec = recording_log_new(); }
static void budget_teardown(void) { recording_log_free(rec); rec = NULL; }
TestSuite(frame_budget, .init = budget_setup, .fini = budget_teardown);

static kiln_arena_stats arena_stats(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s;
}

static kiln_stats runtime_stats(kiln_runtime *r) {
    kiln_stats s;
    cr_assert(kiln_stats_get(r, &s));
    return s;
}

static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

Test(frame, numbers_start_at_one) {
    cr_assert_eq(kiln_frame_number(rt), 0);
    for (uint64_t f = 1; f <= 5; f++) {
        cr_assert_eq(kiln_frame_begin(ctx), f);
        cr_assert_eq(kiln_frame_number(rt), f);
        cr_assert_eq(runtime_stats(rt).frame, f);
        kiln_frame_end(ctx);
        cr_assert_eq(kiln_frame_number(rt), f, "the number of the last frame closed");
    }
    cr_assert_eq(kiln_ctx_runtime(ctx), rt);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(frame, frame_arena_is_named_and_registered) {
    kiln_arena *fa = kiln_frame_arena(ctx);
    cr_assert_not_null(fa);
    kiln_arena_stats s = arena_stats(fa);
    cr_assert_str_eq(s.name, "frame ctx 1");
    cr_assert_eq(s.budget, 0);
    kiln_ctx *second = kiln_attach(rt);
    cr_assert_str_eq(arena_stats(kiln_frame_arena(second)).name, "frame ctx 2");
    kiln_stats rs = runtime_stats(rt);
    cr_assert_eq(rs.contexts, 2);
    cr_assert_eq(rs.arenas, 2, "frame arenas count as arenas");
    kiln_detach(second);
    rs = runtime_stats(rt);
    cr_assert_eq(rs.contexts, 1);
    cr_assert_eq(rs.arenas, 1);
}

Test(frame, end_resets_frame_arena) {
    kiln_arena *fa = kiln_frame_arena(ctx);
    kiln_frame_begin(ctx);
    unsigned char *first = kiln_frame_alloc(ctx, 256, 16);
    cr_assert_not_null(first);
    for (int i = 0; i < 200; i++) {
        unsigned char *p = kiln_frame_alloc(ctx, 1000, 8);
        cr_assert_not_null(p);
        fill_pattern(p, 1000, (uint32_t)i);
    }
    unsigned char *large = kiln_frame_alloc(ctx, 2 * BS, 64);
    cr_assert(large && is_aligned(large, 64));
    memset(large, 0xEE, 2 * BS);
    kiln_arena_stats s = arena_stats(fa);
    size_t used = s.bytes_in_use;
    cr_assert_geq(used, 256 + 200 * 1000 + 2 * BS);
    cr_assert_eq(s.resets, 0);
    kiln_frame_end(ctx);

    s = arena_stats(fa);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.resets, 1);
    cr_assert_eq(s.peak_last_frame, used);
    cr_assert_eq(s.peak_frame, 0);
    kiln_frame_begin(ctx);
    cr_assert_eq(kiln_frame_alloc(ctx, 256, 16), first, "the next frame starts where this one did");
    kiln_frame_end(ctx);
}

Test(frame, frame_memory_holds_its_contents_for_the_frame) {
    enum { N = 400 };
    static unsigned char *ptrs[N];
    for (int f = 0; f < 5; f++) {
        kiln_frame_begin(ctx);
        for (int i = 0; i < N; i++) {
            size_t size = 16 + (size_t)((i * 97 + f * 31) % 2000);
            ptrs[i] = kiln_frame_alloc(ctx, size, (size_t)1 << (i % 7));
            cr_assert_not_null(ptrs[i]);
            fill_pattern(ptrs[i], size, (uint32_t)(f * N + i));
        }
        for (int i = 0; i < N; i++) {
            size_t size = 16 + (size_t)((i * 97 + f * 31) % 2000);
            cr_assert(check_pattern(ptrs[i], size, (uint32_t)(f * N + i)), "frame %d allocation %d", f, i);
        }
        kiln_frame_end(ctx);
    }
}

/* The case: a steady frame reserves nothing after the first few frames. */
Test(frame, steady_frames_take_no_blocks) {
    kiln_arena *fa = kiln_frame_arena(ctx);
    kiln_stats after3;
    kiln_arena_stats fa3;
    size_t frame_bytes = 0;
    for (int f = 1; f <= 1000; f++) {
        cr_assert_eq(kiln_frame_begin(ctx), (uint64_t)f);
        for (int i = 0; i < 300; i++) {     /* 300 000 bytes: five blocks */
            unsigned char *p = kiln_frame_alloc(ctx, 1000, 8);
            cr_assert_not_null(p);
            p[0] = (unsigned char)i;
            p[999] = (unsigned char)f;
        }
        unsigned char *big = kiln_frame_alloc(ctx, 3 * BS, 16);   /* and a large one */
        cr_assert_not_null(big);
        big[3 * BS - 1] = 1;
        if (f == 1) frame_bytes = arena_stats(fa).bytes_in_use;
        kiln_frame_end(ctx);
        if (f == 3) {
            after3 = runtime_stats(rt);
            fa3 = arena_stats(fa);
        } else if (f > 3) {
            kiln_stats now = runtime_stats(rt);
            cr_assert_eq(now.blocks.gets, after3.blocks.gets, "frame %d took a block", f);
            cr_assert_eq(now.blocks.blocks_reserved, after3.blocks.blocks_reserved, "frame %d reserved", f);
            cr_assert_eq(now.blocks.os_maps, after3.blocks.os_maps, "frame %d mapped memory", f);
        }
    }
    kiln_arena_stats s = arena_stats(fa);
    cr_assert_eq(s.blocks_taken, fa3.blocks_taken);
    cr_assert_eq(s.blocks_held, fa3.blocks_held);
    cr_assert_geq(s.blocks_held, 5);
    cr_assert_eq(s.resets, 1000);
    cr_assert_eq(s.peak_last_frame, frame_bytes);
    cr_assert_eq(s.large_allocs, 1000);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, 1, "the large allocation's mapping is reused");
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(frame, spike_then_small_frames_shrink_one_block_per_frame) {
    kiln_arena *fa = kiln_frame_arena(ctx);
    kiln_frame_begin(ctx);
    for (int i = 0; i < 600; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
    kiln_frame_end(ctx);
    uint32_t spike = arena_stats(fa).blocks_held;
    cr_assert_geq(spike, 10);
    uint64_t in_use = runtime_stats(rt).blocks.blocks_in_use;
    for (uint32_t k = 1; k <= spike + 3; k++) {
        kiln_frame_begin(ctx);
        for (int i = 0; i < 10; i++) cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
        kiln_frame_end(ctx);
        uint32_t expect = k < spike ? spike - k : 1;
        cr_assert_eq(arena_stats(fa).blocks_held, expect, "small frame %u after the spike", k);
        cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, in_use - (spike - expect));
    }
}

Test(frame, every_power_of_two_alignment) {
    kiln_frame_begin(ctx);
    for (size_t align = 1; align <= 4096; align *= 2) {
        cr_assert_not_null(kiln_frame_alloc(ctx, 3, 1));
        unsigned char *p = kiln_frame_alloc(ctx, 40, align);
        cr_assert_not_null(p);
        cr_assert(is_aligned(p, align), "%p is not aligned to %zu", (void *)p, align);
        memset(p, 1, 40);
        unsigned char *big = kiln_frame_alloc(ctx, BS + 1, align);
        cr_assert(big && is_aligned(big, align), "large %p is not aligned to %zu", (void *)big, align);
        big[BS] = 2;
    }
    unsigned char *whole = kiln_frame_alloc(ctx, 512, BS);
    cr_assert(whole && is_aligned(whole, BS), "block-size alignment");
    memset(whole, 3, 512);
    void *dflt = kiln_frame_alloc(ctx, 24, 0);
    cr_assert(dflt && is_aligned(dflt, alignof(max_align_t)), "alignment 0 means max_align_t");
    void *zero = kiln_frame_alloc(ctx, 0, 64);
    cr_assert(zero && is_aligned(zero, 64), "size 0 gives an aligned pointer");
    kiln_frame_end(ctx);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(frame, bad_alignment_names_the_frame_arena) {
    kiln_frame_begin(ctx);
    cr_assert_null(kiln_frame_alloc(ctx, 16, 3));
    cr_assert_null(kiln_frame_alloc(ctx, 16, 24));
    cr_assert_null(kiln_frame_alloc(ctx, 16, 2 * BS));
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN,
                                  "ARENA_BAD_ALIGN: arena 'frame ctx 1': alignment 24 is not a power "
                                  "of two from 1 to 65536"), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN, "alignment 131072"), 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 3);
}

Test(frame, second_context_is_not_driver) {
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    cr_assert_eq(kiln_frame_begin(other), 1, "a refused begin returns the current frame");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_NOT_DRIVER), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_NOT_DRIVER, "context 2"), 1);
    cr_assert_eq(kiln_frame_number(rt), 1);
    kiln_frame_end(other);   /* only the driver closes frames */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_NOT_DRIVER), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN), 0);
    kiln_frame_end(ctx);
    cr_assert_eq(kiln_frame_begin(ctx), 2);
    kiln_frame_end(ctx);
    cr_assert_eq(runtime_stats(rt).api_errors, 2);
    kiln_detach(other);
}

Test(frame, begin_twice_is_refused) {
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALREADY_OPEN), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_ALREADY_OPEN, "frame 1 "), 1);
    cr_assert_eq(kiln_frame_number(rt), 1);
    kiln_frame_end(ctx);
    cr_assert_eq(kiln_frame_begin(ctx), 2);
    kiln_frame_end(ctx);
    cr_assert_eq(runtime_stats(rt).api_errors, 1);
}

Test(frame, end_without_begin_is_refused) {
    void *p = kiln_frame_alloc(ctx, 100, 8);
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN, "context 1"), 1);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).resets, 0, "a refused end resets nothing");
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).bytes_in_use, 100);
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN), 2);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).resets, 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 2);
    (void)p;
}

/* A refused end must not make its caller the driver. */
Test(frame, refused_end_does_not_claim_the_clock) {
    kiln_ctx *other = kiln_attach(rt);
    kiln_frame_end(other);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_NOT_DRIVER), 0, "log:%s", recorded_summary(rec));
    kiln_frame_end(ctx);
    kiln_detach(other);
}

Test(frame, other_context_resets_its_own_frame_arena) {
    kiln_ctx *render = kiln_attach(rt);
    kiln_arena *ra = kiln_frame_arena(render);
    kiln_frame_begin(ctx);
    unsigned char *mine = kiln_frame_alloc(render, 5000, 16);
    cr_assert_not_null(mine);
    fill_pattern(mine, 5000, 77);
    kiln_frame_end(ctx);
    /* The driver's frame end never resets another thread's frame arena. */
    kiln_arena_stats s = arena_stats(ra);
    cr_assert_eq(s.resets, 0);
    cr_assert_geq(s.bytes_in_use, 5000);
    cr_assert(check_pattern(mine, 5000, 77));
    kiln_arena_reset(kiln_frame_arena(render));   /* its own frame boundary */
    s = arena_stats(ra);
    cr_assert_eq(s.resets, 1);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(kiln_frame_alloc(render, 5000, 16), mine);
    kiln_detach(render);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(frame, driver_detach_hands_the_clock_over) {
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    ctx = kiln_attach(rt);   /* teardown detaches it */
    cr_assert_eq(kiln_frame_begin(other), 2);
    kiln_frame_end(other);
    cr_assert_eq(kiln_frame_begin(other), 3);
    kiln_frame_end(other);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_detach(other);
}

/* A driver that detaches with its frame open must not leave the frame open for the
 * next driver. */
Test(frame, driver_detach_in_mid_frame_closes_the_frame) {
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_eq(kiln_frame_begin(ctx), 1);
    cr_assert_not_null(kiln_frame_alloc(ctx, 1000, 8));
    kiln_detach(ctx);
    ctx = kiln_attach(rt);
    cr_assert_eq(kiln_frame_begin(other), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_ALREADY_OPEN), 0, "log:%s", recorded_summary(rec));
    kiln_frame_end(other);
    cr_assert_eq(arena_stats(kiln_frame_arena(other)).resets, 1);
    kiln_detach(other);
}

Test(frame, frame_arena_cannot_be_destroyed) {
    kiln_arena *fa = kiln_frame_arena(ctx);
    kiln_frame_begin(ctx);
    unsigned char *p = kiln_frame_alloc(ctx, 100, 16);
    memset(p, 9, 100);
    kiln_arena_destroy(fa);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_IS_FRAME_ARENA), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_IS_FRAME_ARENA, "arena 'frame ctx 1'"), 1);
    cr_assert_eq(runtime_stats(rt).arenas, 1);
    cr_assert_eq(runtime_stats(rt).api_errors, 1);
    cr_assert_eq(p[99], 9);
    cr_assert_not_null(kiln_frame_alloc(ctx, 100, 16), "the frame arena still works");
    kiln_frame_end(ctx);
}

Test(frame, null_context_calls_are_safe) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    uint64_t f = kiln_frame_begin(NULL);
    kiln_frame_end(NULL);
    void *p = kiln_frame_alloc(NULL, 16, 16);
    kiln_arena *a = kiln_frame_arena(NULL);
    kiln_runtime *r = kiln_ctx_runtime(NULL);
    kiln_detach(NULL);
    char *text = stderr_capture_end(&cap);
    cr_assert_eq(f, 0);
    cr_assert_null(p);
    cr_assert_null(a);
    cr_assert_null(r);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: "), 5, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "kiln error: CONTEXT_NULL: kiln_frame_begin"), 1, "stderr: %s", text);
    free(text);
    cr_assert_eq(kiln_frame_number(rt), 0);
    cr_assert_eq(runtime_stats(rt).api_errors, 0);
}

/* ---- the frame budget ---- */

Test(frame_budget, frame_under_budget_never_warns) {
    kiln_runtime *r = create_runtime(10000);
    kiln_ctx *c = kiln_attach(r);
    cr_assert_eq(arena_stats(kiln_frame_arena(c)).budget, 10000);
    for (int f = 0; f < 20; f++) {
        kiln_frame_begin(c);
        for (int i = 0; i < 5; i++) cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
        kiln_frame_end(c);
    }
    kiln_frame_begin(c);
    for (int i = 0; i < 10; i++) cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
    cr_assert_eq(arena_stats(kiln_frame_arena(c)).bytes_in_use, 10000, "exactly the budget");
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 0, "log:%s", recorded_summary(rec));
    cr_assert_eq(arena_stats(kiln_frame_arena(c)).budget_warnings, 0);
    kiln_detach(c);
    kiln_destroy(r);
}

Test(frame_budget, frame_over_budget_warns_once) {
    kiln_runtime *r = create_runtime(10000);
    kiln_ctx *c = kiln_attach(r);
    kiln_arena *fa = kiln_frame_arena(c);
    cr_assert_eq(kiln_frame_begin(c), 1);
    for (int i = 0; i < 20; i++) {
        cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
        cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), i < 10 ? 0u : 1u,
                     "after %d allocations:%s", i + 1, recorded_summary(rec));
    }
    for (int i = 0; i < 200; i++) cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));  /* more blocks */
    cr_assert_not_null(kiln_frame_alloc(c, 3 * BS, 8));                              /* and large */
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED, KILN_LOG_WARN), 1);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED),
                     "FRAME_BUDGET_EXCEEDED: arena 'frame ctx 1': 11000 bytes in use in frame 1, "
                     "over its budget of 10000 bytes");
    cr_assert_eq(arena_stats(fa).budget_warnings, 1);

    /* The next frame over budget warns again, once; a frame under it does not. */
    cr_assert_eq(kiln_frame_begin(c), 2);
    for (int i = 0; i < 30; i++) cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 2);
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED),
                     "FRAME_BUDGET_EXCEEDED: arena 'frame ctx 1': 11000 bytes in use in frame 2, "
                     "over its budget of 10000 bytes");
    cr_assert_eq(kiln_frame_begin(c), 3);
    cr_assert_not_null(kiln_frame_alloc(c, 3000, 8));
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 2);
    cr_assert_eq(arena_stats(fa).budget_warnings, 2);
    cr_assert_eq(runtime_stats(r).api_errors, 0, "a budget warning is not misuse");
    kiln_detach(c);
    kiln_destroy(r);
}

Test(frame_budget, large_allocation_over_budget_warns) {
    kiln_runtime *r = create_runtime(10000);
    kiln_ctx *c = kiln_attach(r);
    cr_assert_eq(kiln_frame_begin(c), 1);
    cr_assert_not_null(kiln_frame_alloc(c, 100000, 16));
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "log:%s", recorded_summary(rec));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED),
                     "FRAME_BUDGET_EXCEEDED: arena 'frame ctx 1': 100000 bytes in use in frame 1, "
                     "over its budget of 10000 bytes");
    /* Under the budget in blocks, over it with a large allocation on top. */
    cr_assert_eq(kiln_frame_begin(c), 2);
    cr_assert_not_null(kiln_frame_alloc(c, 6000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1);
    cr_assert_not_null(kiln_frame_alloc(c, 70000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 2, "log:%s", recorded_summary(rec));
    cr_assert_str_eq(last_item_text(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED),
                     "FRAME_BUDGET_EXCEEDED: arena 'frame ctx 1': 76000 bytes in use in frame 2, "
                     "over its budget of 10000 bytes");
    kiln_frame_end(c);
    cr_assert_eq(arena_stats(kiln_frame_arena(c)).budget_warnings, 2);
    kiln_detach(c);
    kiln_destroy(r);
}

/* Wherever the budget falls (first block, a block boundary, a later block), the
 * warning comes with the first allocation that crosses it, exactly once. */
Test(frame_budget, crossing_point_anywhere) {
    const size_t budgets[] = { 1, 999, 1000, 5500, 64000, 65000, 66000, 100000, 130500, 199999 };
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        recording_log_clear(rec);
        kiln_runtime *r = create_runtime(budgets[b]);
        kiln_ctx *c = kiln_attach(r);
        kiln_frame_begin(c);
        size_t crossed_at = 0;
        for (size_t i = 1; i <= 250; i++) {
            cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
            if (!crossed_at && count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED) == 1) crossed_at = i;
        }
        kiln_frame_end(c);
        size_t expect = budgets[b] / 1000 + 1;
        cr_assert_eq(crossed_at, expect, "budget %zu: warned at allocation %zu, not %zu", budgets[b],
                     crossed_at, expect);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "budget %zu:%s", budgets[b],
                     recorded_summary(rec));
        char figures[128];
        snprintf(figures, sizeof figures, ": %zu bytes in use in frame 1, over its budget of %zu bytes",
                 expect * 1000, budgets[b]);
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED, figures), 1, "want '%s':%s", figures,
                     recorded_summary(rec));
        kiln_detach(c);
        kiln_destroy(r);
    }
}

Test(frame_budget, each_context_has_its_own_budget) {
    kiln_runtime *r = create_runtime(10000);
    kiln_ctx *c = kiln_attach(r);
    kiln_ctx *render = kiln_attach(r);
    kiln_arena *plain = kiln_arena_create(r, "level");
    kiln_frame_begin(c);
    for (int i = 0; i < 8; i++) cr_assert_not_null(kiln_frame_alloc(c, 1000, 8));
    for (int i = 0; i < 8; i++) cr_assert_not_null(kiln_frame_alloc(render, 1000, 8));
    for (int i = 0; i < 100; i++) cr_assert_not_null(kiln_arena_alloc(plain, 1000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 0, "budgets are per context:%s",
                 recorded_summary(rec));
    for (int i = 0; i < 8; i++) cr_assert_not_null(kiln_frame_alloc(render, 1000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED, "arena 'frame ctx 2'"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_frame_end(c);
    /* render's arena was not reset by the driver: still warned for its frame. */
    for (int i = 0; i < 8; i++) cr_assert_not_null(kiln_frame_alloc(render, 1000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1);
    kiln_arena_reset(kiln_frame_arena(render));
    for (int i = 0; i < 11; i++) cr_assert_not_null(kiln_frame_alloc(render, 1000, 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 2, "its own reset starts a new frame");
    cr_assert_eq(arena_stats(kiln_frame_arena(render)).budget_warnings, 2);
    cr_assert_eq(arena_stats(kiln_frame_arena(c)).budget_warnings, 0);
    cr_assert_eq(arena_stats(plain).budget_warnings, 0);
    kiln_arena_destroy(plain);
    kiln_detach(render);
    kiln_detach(c);
    kiln_destroy(r);
}

Test(frame_budget, release_below_budget_does_not_rearm) {
    kiln_runtime *r = create_runtime(10000);
    kiln_ctx *c = kiln_attach(r);
    kiln_arena *fa = kiln_frame_arena(c);
    kiln_frame_begin(c);
    kiln_mark m = kiln_arena_mark(fa);
    cr_assert_not_null(kiln_frame_alloc(c, 12000, 8));
    kiln_arena_release(fa, m);
    cr_assert_not_null(kiln_frame_alloc(c, 12000, 8));
    kiln_frame_end(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "one warning per frame:%s",
                 recorded_summary(rec));
    kiln_detach(c);
    kiln_destroy(r);
}

/* ---- threads ---- */

typedef struct racer {
    kiln_runtime      *rt;
    pthread_barrier_t *barrier;
    uint64_t           got;
    uint32_t           id;
} racer;

static void *race_for_driver(void *arg) {
    racer *r = arg;
    kiln_ctx *c = kiln_attach(r->rt);
    kiln_arena_stats s;
    kiln_arena_stats_get(kiln_frame_arena(c), &s);
    r->id = (uint32_t)atoi(s.name + strlen("frame ctx "));
    pthread_barrier_wait(r->barrier);
    r->got = kiln_frame_begin(c);
    pthread_barrier_wait(r->barrier);
    kiln_detach(c);
    return NULL;
}

Test(frame, contexts_racing_for_the_clock_one_wins) {
    enum { THREADS = 4 };
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, THREADS);
    racer racers[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        racers[i] = (racer){ .rt = rt, .barrier = &barrier };
        cr_assert_eq(pthread_create(&threads[i], NULL, race_for_driver, &racers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&barrier);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_NOT_DRIVER), THREADS - 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(kiln_frame_number(rt), 1, "exactly one begin took effect");
    int winners = 0;
    for (int i = 0; i < THREADS; i++) {
        char who[32];
        snprintf(who, sizeof who, "context %u ", racers[i].id);
        size_t named = count_items_with(rec, KILN_LOGITEM_FRAME_NOT_DRIVER, who);
        cr_assert_leq(named, 1);
        if (named == 0) {
            winners++;
            cr_assert_eq(racers[i].got, 1);
        }
        cr_assert_leq(racers[i].got, 1);
    }
    cr_assert_eq(winners, 1);
    /* The winner detached: the clock is free again, and its frame is closed. */
    cr_assert_eq(kiln_frame_begin(ctx), 2, "log:%s", recorded_summary(rec));
    kiln_frame_end(ctx);
}

typedef struct frame_thread {
    kiln_runtime      *rt;
    pthread_barrier_t *barrier;    /* THREADS + 1: the main thread checks stats mid-way */
    int                index;
    int                frames;
    bool               driver;
    uint64_t           blocks_taken;   /* of every arena this thread had, summed */
    int                errors;
} frame_thread;

static void *frame_thread_main(void *arg) {
    frame_thread *t = arg;
    kiln_ctx *c = kiln_attach(t->rt);
    if (!c) {
        t->errors++;
        pthread_barrier_wait(t->barrier);
        pthread_barrier_wait(t->barrier);
        pthread_barrier_wait(t->barrier);
        return NULL;
    }
    pthread_barrier_wait(t->barrier);
    enum { N = 120 };
    unsigned char *ptrs[N];
    size_t sizes[N];
    for (int f = 0; f < t->frames; f++) {
        if (t->driver) kiln_frame_begin(c);
        for (int i = 0; i < N; i++) {
            sizes[i] = 8 + (size_t)((i * 131 + f * 17 + t->index * 7) % 3000);
            if (i == 50 && f % 10 == 0) sizes[i] = 2 * BS + 5;   /* a large one now and then */
            ptrs[i] = kiln_frame_alloc(c, sizes[i], (size_t)1 << (i % 7));
            if (!ptrs[i]) {
                t->errors++;
                sizes[i] = 0;
                continue;
            }
            fill_pattern(ptrs[i], sizes[i], (uint32_t)(t->index << 24 | f << 8 | i));
        }
        for (int i = 0; i < N; i++)
            if (sizes[i] && !check_pattern(ptrs[i], sizes[i], (uint32_t)(t->index << 24 | f << 8 | i)))
                t->errors++;
        if (f % 25 == 0) {   /* arenas come and go meanwhile */
            kiln_arena *a = kiln_arena_create(t->rt, "scratch");
            if (!a) {
                t->errors++;
            } else {
                for (int i = 0; i < 100; i++)
                    if (!kiln_arena_alloc(a, 1500, 16)) t->errors++;
                kiln_arena_stats s;
                kiln_arena_stats_get(a, &s);
                t->blocks_taken += s.blocks_taken;
                kiln_arena_destroy(a);
            }
        }
        if (t->driver) kiln_frame_end(c);
        else kiln_arena_reset(kiln_frame_arena(c));
    }
    pthread_barrier_wait(t->barrier);   /* main reads the stats of a quiet runtime */
    pthread_barrier_wait(t->barrier);
    kiln_arena_stats s;
    kiln_arena_stats_get(kiln_frame_arena(c), &s);
    t->blocks_taken += s.blocks_taken;
    if (s.resets != (uint64_t)t->frames) t->errors++;
    kiln_detach(c);
    return NULL;
}

typedef struct stats_reader {
    kiln_runtime *rt;
    _Atomic int   stop;
    uint64_t      reads;
    int           errors;
} stats_reader;

static void *stats_reader_main(void *arg) {
    stats_reader *r = arg;
    kiln_arena_stats arenas[16];
    while (!atomic_load(&r->stop)) {
        kiln_stats s;
        if (!kiln_stats_get(r->rt, &s)) r->errors++;
        if (s.blocks.block_size != BS) r->errors++;
        size_t n = kiln_stats_arenas(r->rt, arenas, 16);
        for (size_t i = 0; i < n && i < 16; i++)
            if (arenas[i].name[0] == '\0') r->errors++;
        r->reads++;
    }
    return NULL;
}

Test(frame, threads_do_frames_against_one_runtime) {
    enum { THREADS = 4 };
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, THREADS + 1);
    frame_thread threads[THREADS];
    pthread_t ids[THREADS], reader_id;
    stats_reader reader = { .rt = rt };
    kiln_stats before = runtime_stats(rt);
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (frame_thread){ .rt = rt, .barrier = &barrier, .index = i, .frames = 200,
                                     .driver = i == 0 };
        cr_assert_eq(pthread_create(&ids[i], NULL, frame_thread_main, &threads[i]), 0);
    }
    cr_assert_eq(pthread_create(&reader_id, NULL, stats_reader_main, &reader), 0);
    pthread_barrier_wait(&barrier);   /* all attached */
    pthread_barrier_wait(&barrier);   /* all done with their frames */
    kiln_stats mid = runtime_stats(rt);
    cr_assert_eq(mid.contexts, THREADS + 1);
    cr_assert_eq(mid.frame, 200);
    atomic_store(&reader.stop, 1);
    pthread_join(reader_id, NULL);
    size_t arena_count = kiln_stats_arenas(rt, NULL, 0);
    cr_assert_eq(arena_count, THREADS + 1);
    kiln_arena_stats all[THREADS + 1];
    cr_assert_eq(kiln_stats_arenas(rt, all, THREADS + 1), THREADS + 1);
    uint64_t held = 0;
    for (int i = 0; i < THREADS + 1; i++) held += all[i].blocks_held;
    cr_assert_eq(mid.blocks.blocks_in_use, held, "blocks in use == blocks the arenas hold");
    cr_assert_eq(mid.blocks.blocks_in_use + mid.blocks.blocks_free, mid.blocks.blocks_reserved);
    pthread_barrier_wait(&barrier);   /* let them detach */
    uint64_t taken = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        cr_assert_eq(threads[i].errors, 0, "thread %d had %d errors", i, threads[i].errors);
        taken += threads[i].blocks_taken;
    }
    pthread_barrier_destroy(&barrier);
    cr_assert_eq(reader.errors, 0);
    cr_assert_gt(reader.reads, 0);
    kiln_stats after = runtime_stats(rt);
    cr_assert_eq(after.contexts, 1);
    cr_assert_eq(after.arenas, 1);
    cr_assert_eq(after.blocks.blocks_in_use, arena_stats(kiln_frame_arena(ctx)).blocks_held);
    cr_assert_eq(after.blocks.blocks_in_use + after.blocks.blocks_free, after.blocks.blocks_reserved);
    cr_assert_eq(after.blocks.gets - before.blocks.gets, taken, "every block get belongs to an arena");
    cr_assert_eq(after.blocks.large_mappings, 0);
    cr_assert_eq(after.blocks.reserved_bytes, after.blocks.blocks_reserved * BS);
    cr_assert_eq(after.api_errors, 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- frame memory through a detached context; a worker's frame arena is frame end's ----
 * These tests read the runtime's internals (its workers, a context's fields). */
#include <sched.h>
#include <time.h>

#include "runtime/types.h"

static size_t          refusal_logged;   /* recorded_count at refusal_begin */
static stderr_capture  refusal_capture;

static void refusal_begin(void) {
    refusal_logged = recorded_count(rec);
    stderr_capture_begin(&refusal_capture);
}

/* What was logged since refusal_begin, through the runtime's log and on stderr (where a
 * refusal that cannot trust its context writes), with function's name made "F": the
 * message count in *count, the text (malloc'd). */
static char *refusal_end(const char *function, size_t *count) {
    char *err = stderr_capture_end(&refusal_capture);
    size_t size = strlen(err) + 1;
    *count = count_substrings(err, "\n");
    for (size_t i = refusal_logged; i < recorded_count(rec); i++) size += strlen(rec->messages[i].text) + 1;
    char *all = malloc(size), *out = all;
    cr_assert_not_null(all);
    for (size_t i = refusal_logged; i < recorded_count(rec); i++, ++*count)
        out += sprintf(out, "%s\n", rec->messages[i].text);
    strcpy(out, err);
    free(err);
    size_t n = strlen(function);
    for (char *at; (at = strstr(all, function)) != NULL;) {
        *at = 'F';
        memmove(at + 1, at + n, strlen(at + n) + 1);
    }
    return all;
}

/* A zeroed kiln_ctx: a pointer that is no context, whose fields read as a detached one's. */
static kiln_ctx not_a_context;

/* kiln_frame_alloc and kiln_frame_alloc_at refuse a detached context (or a zeroed
 * pointer) exactly as the context check of kiln_frame_arena does, and return NULL. */
Test(frame, frame_alloc_on_a_detached_context_is_refused) {
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_not_null(other);
    cr_assert_not_null(kiln_frame_alloc(other, 16, 16));
    kiln_detach(other);
    kiln_ctx *contexts[] = { other, &not_a_context };
    for (size_t k = 0; k < 2; k++) {
        size_t n_check, n_alloc, n_at;
        refusal_begin();
        cr_assert_null(kiln_frame_arena(contexts[k]));
        char *check = refusal_end("kiln_frame_arena", &n_check);
        refusal_begin();
        void *p = kiln_frame_alloc(contexts[k], 16, 16);
        char *alloc = refusal_end("kiln_frame_alloc", &n_alloc);
        refusal_begin();
        void *q = kiln_frame_alloc_at(contexts[k], 16, 16, __FILE__, __LINE__);
        char *at = refusal_end("kiln_frame_alloc_at", &n_at);
        cr_assert_null(p, "context %zu", k);
        cr_assert_null(q, "context %zu", k);
        cr_assert_eq(n_check, 1, "context %zu: %s", k, check);
        cr_assert_eq(n_alloc, 1, "context %zu: %s", k, alloc);
        cr_assert_eq(n_at, 1, "context %zu: %s", k, at);
        cr_assert_str_eq(alloc, check, "context %zu: the context check's refusal", k);
        cr_assert_str_eq(at, check, "context %zu: the context check's refusal", k);
        free(check);
        free(alloc);
        free(at);
    }
}

/* A frame arena kept past its context's kiln_detach: every call through it is refused. */
Test(frame, frame_arena_of_a_detached_context_is_refused) {
    kiln_ctx *other = kiln_attach(rt);
    cr_assert_not_null(other);
    kiln_arena *stale = kiln_frame_arena(other);
    cr_assert_not_null(kiln_arena_alloc(stale, 64, 16));
    kiln_detach(other);
    cr_assert_null(kiln_arena_alloc(stale, 64, 16));
    kiln_arena_reset(stale);
    kiln_arena_destroy(stale);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "its context detached"), 3,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 3, "log:%s", recorded_summary(rec));
}

typedef struct reset_job {
    kiln_ctx        *ran_on;
    kiln_arena_stats before, after;
    bool             intact;   /* its frame memory, written before the reset, still there */
} reset_job;

static void job_resets_its_frame_arena(kiln_ctx *c, void *arg) {
    reset_job *job = arg;
    job->ran_on = c;
    unsigned char *p = kiln_frame_alloc(c, 256, 16);
    if (p) fill_pattern(p, 256, 9);
    kiln_arena *frame = kiln_frame_arena(c);
    kiln_arena_stats_get(frame, &job->before);
    kiln_arena_reset(frame);
    kiln_arena_stats_get(frame, &job->after);
    job->intact = p && check_pattern(p, 256, 9);
}

static void job_sets_flag(kiln_ctx *c, void *arg) {
    (void)c;
    atomic_store((_Atomic int *)arg, 1);
}

/* A job resetting its worker's frame arena is refused: the memory stays, frame end
 * resets it as usual, and the worker remains a worker (it steals: its queue says so, and
 * it takes a job that only a thief can run, since the submitting thread never waits). */
Test(frame, worker_frame_arena_reset_is_refused) {
    kiln_runtime *r = recording_runtime(rec, 1);
    cr_assert_not_null(r, "log:%s", recorded_summary(rec));
    kiln_ctx *c = kiln_attach(r);
    cr_assert_not_null(c);
    kiln_ctx *worker = r->workers[0];
    kiln_frame_begin(c);
    reset_job job = { 0 };
    kiln_counter counter = { 0 };
    kiln_run_ex(c, &(kiln_job){ job_resets_its_frame_arena, &job }, 1, &counter,
                &(kiln_run_desc){ .pinned_to = worker });
    kiln_wait(c, &counter);
    cr_assert_eq(job.ran_on, worker, "the job ran on the worker");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_WORKER_FRAME_RESET), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WORKER_FRAME_RESET, "arena 'frame worker ctx"), 1);
    cr_assert_eq(job.after.resets, job.before.resets, "the reset was ignored");
    cr_assert_eq(job.after.bytes_in_use, job.before.bytes_in_use);
    cr_assert_geq(job.after.bytes_in_use, 256);
    cr_assert(job.intact, "the frame memory survived");
    cr_assert(worker->queue.steals, "the worker still steals");

    /* Only a thief can run this one: c spins without running jobs. The deadline only
     * turns a hang into a failure. */
    _Atomic int done = 0;
    kiln_run(c, &(kiln_job){ job_sets_flag, (void *)&done }, 1, NULL);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&done)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &now);
        cr_assert_lt(now.tv_sec - start.tv_sec, 120, "the worker never stole the job");
    }
    kiln_frame_end(c);
    /* The job's frame memory was the worker's job arena of the frame's parity. */
    kiln_arena *job_arena = kiln_load_relaxed(&worker->job_arenas[(kiln_load_relaxed(&r->handle_epoch) - 1) & 1]);
    cr_assert_not_null(job_arena);
    cr_assert_eq(arena_stats(job_arena).resets, job.before.resets + 1, "frame end reset it");
    cr_assert_eq(arena_stats(worker->frame_arena).bytes_in_use, 0);

    /* Nor may any other thread reset it. */
    kiln_arena_reset(worker->frame_arena);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_WORKER_FRAME_RESET), 2);
    cr_assert(worker->queue.steals);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    kiln_detach(c);
    kiln_destroy(r);
}
