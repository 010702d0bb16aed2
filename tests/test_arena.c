/* tests/test_arena.c — arenas: bump allocation, alignment, sizes from zero to many
 * blocks, marks and release, reset and its keep policy, large mappings, statistics,
 * and the logged refusals (bad alignment, bad marks, NULL arena). */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/arena.h"
#include "recording_log.h"

#define BS ((size_t)64 << 10)   /* the default block size */

static recording_log *rec;
static kiln_runtime  *rt;

static void setup(void) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
}

static void teardown(void) {
    kiln_destroy(rt);
    rt = NULL;
    recording_log_free(rec);
    rec = NULL;
}

TestSuite(arena, .init = setup, .fini = teardown);

static kiln_arena_stats arena_stats(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s), "kiln_arena_stats_get failed");
    return s;
}

static kiln_stats runtime_stats(kiln_runtime *r) {
    kiln_stats s;
    cr_assert(kiln_stats_get(r, &s), "kiln_stats_get failed");
    return s;
}

/* Whether two marks name the same position: the cursor and the large count (the low
 * half of the tags); the serial in the high half differs from mark to mark. */
static bool same_position(kiln_mark a, kiln_mark b) {
    return a.opaque[0] == b.opaque[0] && (uint32_t)a.opaque[1] == (uint32_t)b.opaque[1];
}

static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

Test(arena, create_names_and_initial_stats) {
    kiln_arena *level = kiln_arena_create(rt, "level");
    kiln_arena *unnamed = kiln_arena_create(rt, NULL);
    char long_name[100];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    kiln_arena *longer = kiln_arena_create(rt, long_name);
    cr_assert(level && unnamed && longer);

    kiln_arena_stats s = arena_stats(level);
    cr_assert_str_eq(s.name, "level");
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.allocs, 0);
    cr_assert_eq(s.failures, 0);
    cr_assert_eq(s.blocks_held, 1, "the arena lives in its first block");
    cr_assert_eq(s.blocks_taken, 1);
    cr_assert_eq(s.budget, 0, "only frame arenas have a budget");
    cr_assert_str_eq(arena_stats(unnamed).name, "arena");
    s = arena_stats(longer);
    cr_assert_eq(strlen(s.name), 47, "at most 47 bytes of the name are kept");
    cr_assert_eq(strncmp(s.name, long_name, 47), 0);

    kiln_stats rs = runtime_stats(rt);
    cr_assert_eq(rs.arenas, 3);
    cr_assert_eq(rs.blocks.blocks_in_use, 3);
    kiln_arena_destroy(level);
    kiln_arena_destroy(unnamed);
    kiln_arena_destroy(longer);
    rs = runtime_stats(rt);
    cr_assert_eq(rs.arenas, 0);
    cr_assert_eq(rs.blocks.blocks_in_use, 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(arena, allocations_are_disjoint_and_counted) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    enum { N = 2000 };
    static unsigned char *ptrs[N];
    static size_t sizes[N];
    size_t total = 0;
    srand(7);
    for (int i = 0; i < N; i++) {
        sizes[i] = 1 + (size_t)rand() % 700;
        ptrs[i] = kiln_arena_alloc(a, sizes[i], 1);
        cr_assert_not_null(ptrs[i]);
        fill_pattern(ptrs[i], sizes[i], (uint32_t)i);
        total += sizes[i];
    }
    for (int i = 0; i < N; i++)
        cr_assert(check_pattern(ptrs[i], sizes[i], (uint32_t)i), "allocation %d overwritten", i);
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.allocs, N);
    /* Alignment 1: no padding, so only what a block could not hold at its end is lost. */
    cr_assert_eq(s.bytes_in_use, total, "bytes_in_use %zu, asked %zu", s.bytes_in_use, total);
    cr_assert_eq(s.peak_frame, total);
    cr_assert_geq(s.blocks_held, (uint32_t)(total / BS + 1));
    cr_assert_eq(s.blocks_taken, s.blocks_held);
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, s.blocks_held);
    kiln_arena_destroy(a);
}

/* The case: everything after the mark goes, nothing before it moves. */
Test(arena, release_restores_mark) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    enum { BEFORE = 50 };
    unsigned char *before[BEFORE];
    for (int i = 0; i < BEFORE; i++) {
        before[i] = kiln_arena_alloc(a, 40 + (size_t)i * 13, 8);
        cr_assert_not_null(before[i]);
        fill_pattern(before[i], 40 + (size_t)i * 13, (uint32_t)i);
    }
    unsigned char *large_before = kiln_arena_alloc(a, 2 * BS, 64);
    cr_assert_not_null(large_before);
    fill_pattern(large_before, 2 * BS, 1000);

    kiln_mark mark = kiln_arena_mark(a);
    kiln_arena_stats at_mark = arena_stats(a);
    kiln_stats rs_mark = runtime_stats(rt);

    unsigned char *first_after = kiln_arena_alloc(a, 100, 16);
    cr_assert_not_null(first_after);
    memset(first_after, 0xAA, 100);
    for (int i = 0; i < 300; i++) {          /* about five blocks */
        unsigned char *p = kiln_arena_alloc(a, 1000, 8);
        cr_assert_not_null(p);
        memset(p, 0xBB, 1000);
    }
    unsigned char *large_after = kiln_arena_alloc(a, 3 * BS, 16);
    cr_assert_not_null(large_after);
    memset(large_after, 0xCC, 3 * BS);
    for (int i = 0; i < 50; i++) {
        unsigned char *p = kiln_arena_alloc(a, 500, 64);
        cr_assert_not_null(p);
        memset(p, 0xDD, 500);
    }
    kiln_arena_stats grown = arena_stats(a);
    cr_assert_gt(grown.bytes_in_use, at_mark.bytes_in_use + 300 * 1000 + 3 * BS);
    cr_assert_geq(grown.blocks_held, at_mark.blocks_held + 4);
    cr_assert_eq(grown.large_allocs, 2);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, rs_mark.blocks.large_mappings + 1);

    kiln_arena_release(a, mark);

    kiln_arena_stats released = arena_stats(a);
    cr_assert_eq(released.bytes_in_use, at_mark.bytes_in_use, "bytes_in_use %zu after release, %zu at mark",
                 released.bytes_in_use, at_mark.bytes_in_use);
    cr_assert_eq(released.releases, 1);
    cr_assert_eq(released.peak_frame, grown.bytes_in_use, "the peak survives the release");
    cr_assert_eq(released.blocks_held, grown.blocks_held, "released blocks are kept for reuse");
    cr_assert(same_position(kiln_arena_mark(a), mark), "the position is the mark again");
    for (int i = 0; i < BEFORE; i++)
        cr_assert(check_pattern(before[i], 40 + (size_t)i * 13, (uint32_t)i),
                  "allocation %d before the mark changed", i);
    cr_assert(check_pattern(large_before, 2 * BS, 1000), "large allocation before the mark changed");

    /* The next allocation takes the first post-mark address again. */
    unsigned char *again = kiln_arena_alloc(a, 100, 16);
    cr_assert_eq(again, first_after, "next allocation %p, first after the mark was %p",
                 (void *)again, (void *)first_after);

    /* Doing it all again takes no block from the pool and maps nothing new. */
    kiln_stats rs_before_redo = runtime_stats(rt);
    for (int i = 0; i < 300; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    cr_assert_not_null(kiln_arena_alloc(a, 3 * BS, 16));
    kiln_stats rs_redo = runtime_stats(rt);
    cr_assert_eq(rs_redo.blocks.gets, rs_before_redo.blocks.gets);
    cr_assert_eq(rs_redo.blocks.os_maps, rs_before_redo.blocks.os_maps, "the kept mapping is reused");
    cr_assert_eq(arena_stats(a).blocks_taken, grown.blocks_taken);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_MARK), 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, release_nested_marks) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m0 = kiln_arena_mark(a);
    unsigned char *p1 = kiln_arena_alloc(a, 30000, 16);
    fill_pattern(p1, 30000, 1);
    kiln_mark m1 = kiln_arena_mark(a);
    size_t used1 = arena_stats(a).bytes_in_use;
    unsigned char *p2 = kiln_arena_alloc(a, 50000, 16);   /* a second block */
    fill_pattern(p2, 50000, 2);
    kiln_mark m2 = kiln_arena_mark(a);
    size_t used2 = arena_stats(a).bytes_in_use;
    unsigned char *p3 = kiln_arena_alloc(a, 50000, 16);   /* a third */
    cr_assert(p1 && p2 && p3);

    kiln_arena_release(a, m2);
    cr_assert_eq(arena_stats(a).bytes_in_use, used2);
    cr_assert(check_pattern(p1, 30000, 1) && check_pattern(p2, 50000, 2));
    kiln_arena_release(a, m1);
    cr_assert_eq(arena_stats(a).bytes_in_use, used1);
    cr_assert(check_pattern(p1, 30000, 1));
    kiln_arena_release(a, m1);   /* the same mark twice: a no-op, not an error */
    cr_assert_eq(arena_stats(a).bytes_in_use, used1);
    kiln_arena_release(a, m0);
    cr_assert_eq(arena_stats(a).bytes_in_use, 0);
    cr_assert_eq(arena_stats(a).releases, 4);
    cr_assert_eq(kiln_arena_alloc(a, 30000, 16), p1);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, release_zero_mark_frees_everything) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    void *first = kiln_arena_alloc(a, 64, 16);
    for (int i = 0; i < 200; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    cr_assert_not_null(kiln_arena_alloc(a, 5 * BS, 16));
    kiln_arena_release(a, (kiln_mark){ { 0, 0 } });
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.releases, 1);
    cr_assert_eq(kiln_arena_alloc(a, 64, 16), first);

    /* {0} is the empty arena after a reset too (it carries no reset count). */
    kiln_arena_reset(a);
    cr_assert_not_null(kiln_arena_alloc(a, 5000, 16));
    kiln_arena_release(a, (kiln_mark){ { 0, 0 } });
    cr_assert_eq(arena_stats(a).bytes_in_use, 0);
    cr_assert_eq(arena_stats(a).releases, 2);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

/* A refused release must leave the arena exactly as it was. */
static void assert_release_ignored(kiln_arena *a, kiln_mark bad, const char *problem) {
    kiln_mark before = kiln_arena_mark(a);
    kiln_arena_stats s0 = arena_stats(a);
    uint64_t errors0 = runtime_stats(rt).api_errors;
    size_t logged0 = count_items(rec, KILN_LOGITEM_ARENA_BAD_MARK);

    kiln_arena_release(a, bad);

    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_MARK), logged0 + 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_BAD_MARK, KILN_LOG_ERROR), logged0 + 1);
    const char *text = last_item_text(rec, KILN_LOGITEM_ARENA_BAD_MARK);
    cr_assert_not_null(strstr(text, "arena 'level'"), "message does not name the arena: %s", text);
    cr_assert_not_null(strstr(text, problem), "message '%s' does not say '%s'", text, problem);
    cr_assert_eq(runtime_stats(rt).api_errors, errors0 + 1);
    kiln_arena_stats s1 = arena_stats(a);
    cr_assert_eq(s1.bytes_in_use, s0.bytes_in_use);
    cr_assert_eq(s1.releases, s0.releases);
    cr_assert_eq(s1.blocks_held, s0.blocks_held);
    cr_assert(same_position(kiln_arena_mark(a), before), "a refused release moved the position");
}

Test(arena, release_mark_from_another_arena_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_arena *other = kiln_arena_create(rt, "other");
    unsigned char *p = kiln_arena_alloc(a, 3000, 16);
    fill_pattern(p, 3000, 3);
    cr_assert_not_null(kiln_arena_alloc(other, 5000, 16));
    kiln_mark foreign = kiln_arena_mark(other);
    cr_assert_not_null(kiln_arena_alloc(other, 100, 16));
    assert_release_ignored(a, foreign, "does not belong");
    void *next = kiln_arena_alloc(a, 16, 16);
    cr_assert_eq((uintptr_t)next, (uintptr_t)p + 3008, "allocation went on where it was");
    cr_assert(check_pattern(p, 3000, 3));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_MARK, "'other'"), 0, "names the wrong arena");
    /* Made-up marks: nothing is dereferenced, all refused. */
    assert_release_ignored(a, (kiln_mark){ { 12345, 0 } }, "does not belong");
    assert_release_ignored(a, (kiln_mark){ { UINT64_MAX, UINT64_MAX } }, "the mark");
    assert_release_ignored(a, (kiln_mark){ { 0, 1 } }, "the mark");
    kiln_arena_destroy(other);
    kiln_arena_destroy(a);
}

Test(arena, release_mark_from_before_reset_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 3000, 16));
    kiln_mark old = kiln_arena_mark(a);
    kiln_arena_reset(a);
    cr_assert_not_null(kiln_arena_alloc(a, 6000, 16));   /* the old position is in use again */
    assert_release_ignored(a, old, "before the last reset");
    kiln_arena_destroy(a);
}

Test(arena, release_mark_past_position_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m0 = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 3000, 16));
    kiln_mark ahead = kiln_arena_mark(a);
    kiln_arena_release(a, m0);
    cr_assert_not_null(kiln_arena_alloc(a, 1000, 16));
    assert_release_ignored(a, ahead, "past the current position");
    kiln_arena_destroy(a);
}

/* A mark into a block that a release gave back (it sits on the spare list). */
Test(arena, release_mark_into_released_block_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 16));
    kiln_mark m1 = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 16));   /* a second block */
    kiln_mark m2 = kiln_arena_mark(a);
    kiln_arena_release(a, m1);
    assert_release_ignored(a, m2, "the mark");
    kiln_arena_destroy(a);
}

/* A mark into a block below the current one that lies past the point where the block
 * above took over: that memory was released and is not in use again. */
Test(arena, release_mark_past_position_in_lower_block_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m0 = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 16));
    kiln_mark ahead = kiln_arena_mark(a);
    kiln_arena_release(a, m0);
    cr_assert_not_null(kiln_arena_alloc(a, 30000, 16));
    size_t in_first = arena_stats(a).bytes_in_use;
    cr_assert_not_null(kiln_arena_alloc(a, 40000, 16));    /* does not fit: a second block */
    cr_assert_eq(arena_stats(a).blocks_held, 2);
    assert_release_ignored(a, ahead, "past the current position");
    cr_assert_eq(arena_stats(a).bytes_in_use, in_first + 40000);
    kiln_arena_destroy(a);
}

Test(arena, release_mark_with_large_allocations_past_position_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m0 = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 2 * BS, 16));
    kiln_mark ahead = kiln_arena_mark(a);                   /* one large allocation */
    kiln_arena_release(a, m0);
    assert_release_ignored(a, ahead, "past the current position");
    kiln_arena_destroy(a);
}

static bool overlaps(const void *p, size_t p_size, const void *q, size_t q_size) {
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return a < b + q_size && b < a + p_size;
}

/* Found by fuzzing: a mark released past whose position the arena has grown back over
 * looks fine by position alone; releasing to it would hand out live memory again. */
Test(arena, release_mark_released_past_after_regrowth_is_ignored) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m1 = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 100, 0));
    kiln_mark m2 = kiln_arena_mark(a);
    kiln_arena_release(a, m1);
    unsigned char *live = kiln_arena_alloc(a, 200, 0);
    cr_assert_not_null(live);
    fill_pattern(live, 200, 21);
    assert_release_ignored(a, m2, "was released past");
    unsigned char *p = kiln_arena_alloc(a, 50, 0);
    cr_assert_not_null(p);
    cr_assert(!overlaps(p, 50, live, 200), "new %p+50 lies inside the live %p+200", (void *)p,
              (void *)live);
    memset(p, 0xAB, 50);
    cr_assert(check_pattern(live, 200, 21), "the live allocation changed");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_MARK), 1);
    kiln_arena_destroy(a);
}

/* Every mark after the one released to dies with it, even one at the same position. */
Test(arena, release_ends_marks_at_the_same_position) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 100, 0));
    kiln_mark outer = kiln_arena_mark(a);
    kiln_mark inner = kiln_arena_mark(a);
    kiln_arena_release(a, outer);
    assert_release_ignored(a, inner, "was released past");
    /* {0} is the outermost scope: it ends every mark. */
    kiln_arena_release(a, (kiln_mark){ { 0, 0 } });
    cr_assert_not_null(kiln_arena_alloc(a, 100, 0));
    assert_release_ignored(a, outer, "was released past");
    kiln_arena_destroy(a);
}

/* Opens depth nested scopes: scope i is a mark (with the bytes in use there), then an
 * allocation of size bytes filled with pattern i. */
static void open_scopes(kiln_arena *a, int depth, size_t size, kiln_mark *marks,
                        unsigned char **ptrs, size_t *used) {
    for (int i = 0; i < depth; i++) {
        marks[i] = kiln_arena_mark(a);
        used[i] = arena_stats(a).bytes_in_use;
        ptrs[i] = kiln_arena_alloc(a, size, 16);
        cr_assert_not_null(ptrs[i]);
        fill_pattern(ptrs[i], size, (uint32_t)i);
    }
}

Test(arena, release_nested_scopes_inside_out) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    enum { DEPTH = 3 };
    kiln_mark marks[DEPTH];
    unsigned char *ptrs[DEPTH];
    size_t used[DEPTH];
    open_scopes(a, DEPTH, 20000, marks, ptrs, used);   /* the third takes a second block */
    for (int i = DEPTH - 1; i >= 0; i--) {
        kiln_arena_release(a, marks[i]);
        cr_assert_eq(arena_stats(a).bytes_in_use, used[i], "scope %d", i);
        for (int k = 0; k < i; k++)
            cr_assert(check_pattern(ptrs[k], 20000, (uint32_t)k), "scope %d changed %d", i, k);
        /* A new allocation in the scope just ended lands where that scope's first did. */
        cr_assert_eq(kiln_arena_alloc(a, 20000, 16), ptrs[i], "scope %d", i);
        kiln_arena_release(a, marks[i]);   /* the same mark again: still valid */
    }
    cr_assert_eq(arena_stats(a).releases, 2 * DEPTH);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

/* Deeper than the stack of live marks: the outermost are checked by position only,
 * and every valid release still works, inside out, from the deepest to the first. */
Test(arena, release_nested_deeper_than_the_mark_stack) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    enum { DEPTH = KILN_ARENA_MARK_STACK + 8 };
    kiln_mark marks[DEPTH];
    unsigned char *ptrs[DEPTH];
    size_t used[DEPTH];
    open_scopes(a, DEPTH, 3000, marks, ptrs, used);   /* a few blocks in all */
    for (int i = DEPTH - 1; i >= 0; i--) {
        kiln_arena_release(a, marks[i]);
        cr_assert_eq(arena_stats(a).bytes_in_use, used[i], "scope %d", i);
        if (i > 0) cr_assert(check_pattern(ptrs[i - 1], 3000, (uint32_t)(i - 1)), "scope %d", i);
    }
    cr_assert_eq(arena_stats(a).releases, DEPTH);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    /* A mark inside a scope just ended is refused again, even one beyond the stack's reach
     * before: once an outer release empties the stack, everything newer is judged. */
    for (int i = 0; i < DEPTH; i++) cr_assert_not_null(kiln_arena_alloc(a, 3000, 8));
    assert_release_ignored(a, marks[DEPTH / 2], "was released past");
    assert_release_ignored(a, marks[1], "was released past");
    kiln_arena_destroy(a);
}

Test(arena, release_frees_large_allocations_after_mark) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    uint64_t maps0 = runtime_stats(rt).blocks.large_mappings;
    unsigned char *keep = kiln_arena_alloc(a, 2 * BS, 16);
    fill_pattern(keep, 2 * BS, 11);
    kiln_mark m = kiln_arena_mark(a);
    unsigned char *gone1 = kiln_arena_alloc(a, 3 * BS, 16);
    unsigned char *gone2 = kiln_arena_alloc(a, 4 * BS, 16);
    cr_assert(gone1 && gone2);
    memset(gone1, 1, 3 * BS);
    memset(gone2, 2, 4 * BS);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0 + 3);
    kiln_arena_release(a, m);
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.bytes_in_use, 2 * BS);
    cr_assert(check_pattern(keep, 2 * BS, 11));
    /* Freed mappings are kept until the next reset, which unmaps those not reused. */
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0 + 3);
    kiln_arena_reset(a);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0 + 1, "the live one is kept");
    cr_assert(!range_is_mapped(gone1, 3 * BS), "released mapping still mapped after reset");
    cr_assert(!range_is_mapped(gone2, 4 * BS), "released mapping still mapped after reset");
    kiln_arena_reset(a);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0);
    cr_assert(!range_is_mapped(keep, 2 * BS));
    kiln_arena_destroy(a);
}

Test(arena, every_power_of_two_alignment) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int round = 0; round < 3; round++) {
        for (size_t align = 1; align <= 4096; align *= 2) {
            cr_assert_not_null(kiln_arena_alloc(a, 1, 1));     /* leave the cursor odd */
            unsigned char *p = kiln_arena_alloc(a, 24, align);
            cr_assert_not_null(p, "alignment %zu refused", align);
            cr_assert(is_aligned(p, align), "%p is not aligned to %zu", (void *)p, align);
            memset(p, 0x5A, 24);
        }
    }
    /* The same in a fresh block, where the block header comes first. */
    for (size_t align = 1; align <= 4096; align *= 2) {
        unsigned char *p = kiln_arena_alloc(a, BS - 4096 - 64, align);
        cr_assert_not_null(p);
        cr_assert(is_aligned(p, align), "%p is not aligned to %zu", (void *)p, align);
        p[0] = 1;
        p[BS - 4096 - 65] = 2;
    }
    cr_assert_eq(arena_stats(a).large_allocs, 0);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, block_size_alignment) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int i = 0; i < 4; i++) {
        cr_assert_not_null(kiln_arena_alloc(a, 100, 1));
        unsigned char *p = kiln_arena_alloc(a, 1000, BS);
        cr_assert_not_null(p, "alignment of a whole block refused:%s", recorded_summary(rec));
        cr_assert(is_aligned(p, BS), "%p is not aligned to %zu", (void *)p, BS);
        memset(p, 0x77, 1000);
    }
    unsigned char *big = kiln_arena_alloc(a, 3 * BS, BS);
    cr_assert_not_null(big);
    cr_assert(is_aligned(big, BS));
    memset(big, 0x78, 3 * BS);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, alignment_zero_means_max_align) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int i = 0; i < 100; i++) {
        cr_assert_not_null(kiln_arena_alloc(a, 1 + (size_t)i % 7, 1));
        void *p = kiln_arena_alloc(a, 1 + (size_t)i * 37, 0);
        cr_assert_not_null(p);
        cr_assert(is_aligned(p, alignof(max_align_t)), "%p not aligned to max_align_t", p);
    }
    void *big = kiln_arena_alloc(a, 2 * BS, 0);
    cr_assert(big && is_aligned(big, alignof(max_align_t)));
    cr_assert_eq(arena_stats(a).allocs, 201);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, bad_alignment_is_refused) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 100, 16));
    kiln_mark m = kiln_arena_mark(a);
    kiln_arena_stats s0 = arena_stats(a);
    const size_t bad[] = { 3, 24, 2 * BS, 1000, (size_t)1 << 63, SIZE_MAX };
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        cr_assert_null(kiln_arena_alloc(a, 16, bad[i]), "alignment %zu accepted", bad[i]);
        cr_assert_null(kiln_arena_alloc(a, 4 * BS, bad[i]), "alignment %zu accepted (large)", bad[i]);
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 2 * n, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_BAD_ALIGN, KILN_LOG_ERROR), 2 * n);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN, "arena 'level'"), 2 * n);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN,
                                  "ARENA_BAD_ALIGN: arena 'level': alignment 24 is not a power of two "
                                  "from 1 to 65536"), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN, "alignment 131072 "), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_BAD_ALIGN, "alignment 3 "), 2);
    cr_assert_eq(runtime_stats(rt).api_errors, 2 * n);
    kiln_arena_stats s1 = arena_stats(a);
    cr_assert_eq(s1.bytes_in_use, s0.bytes_in_use);
    cr_assert_eq(s1.allocs, s0.allocs);
    cr_assert_eq(s1.failures, s0.failures + 2 * n, "every NULL counts as a failure");
    cr_assert_eq(s1.large_allocs, 0);
    cr_assert(same_position(kiln_arena_mark(a), m));
    cr_assert_not_null(kiln_arena_alloc(a, 16, 16), "the arena works after refusals");
    kiln_arena_destroy(a);
}

Test(arena, large_allocation_alignment) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (size_t align = 1; align <= BS; align *= 2) {
        unsigned char *p = kiln_arena_alloc(a, 2 * BS + 3, align);
        cr_assert_not_null(p, "large allocation at alignment %zu refused", align);
        cr_assert(is_aligned(p, align), "%p is not aligned to %zu", (void *)p, align);
        p[0] = 1;
        p[2 * BS + 2] = 2;
    }
    cr_assert_eq(arena_stats(a).large_allocs, 17);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, zero_size_allocation) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    const size_t aligns[] = { 0, 1, 8, 16, 64, 4096, BS };
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        void *p = kiln_arena_alloc(a, 0, aligns[i]);
        size_t align = aligns[i] ? aligns[i] : alignof(max_align_t);
        cr_assert_not_null(p, "size 0 at alignment %zu gave NULL", aligns[i]);
        cr_assert(is_aligned(p, align), "%p is not aligned to %zu", p, align);
    }
    /* Allocation goes on normally after them. */
    unsigned char *q = kiln_arena_alloc(a, 100, 16);
    cr_assert_not_null(q);
    memset(q, 1, 100);
    cr_assert_eq(arena_stats(a).allocs, 8);
    cr_assert_eq(arena_stats(a).large_allocs, 0, "size 0 needs no mapping");
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
    kiln_arena_destroy(a);
}

Test(arena, allocation_of_exactly_a_block) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    uint64_t maps0 = runtime_stats(rt).blocks.large_mappings;
    size_t reserved0 = runtime_stats(rt).blocks.reserved_bytes;
    unsigned char *p = kiln_arena_alloc(a, BS, 16);
    cr_assert_not_null(p);
    fill_pattern(p, BS, 5);
    cr_assert(check_pattern(p, BS, 5));
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.large_allocs, 1, "a whole block cannot fit after a header: dedicated mapping");
    cr_assert_eq(s.bytes_in_use, BS);
    cr_assert_eq(s.blocks_held, 1);
    kiln_stats rs = runtime_stats(rt);
    cr_assert_eq(rs.blocks.large_mappings, maps0 + 1);
    cr_assert_geq(rs.blocks.reserved_bytes, reserved0 + BS);

    kiln_arena_reset(a);   /* freed, its mapping kept for the next frame */
    cr_assert_eq(arena_stats(a).bytes_in_use, 0);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0 + 1);
    kiln_arena_reset(a);   /* not reused: unmapped */
    rs = runtime_stats(rt);
    cr_assert_eq(rs.blocks.large_mappings, maps0);
    cr_assert_eq(rs.blocks.reserved_bytes, reserved0);
    cr_assert(!range_is_mapped(p, BS));
    kiln_arena_destroy(a);
}

Test(arena, kept_large_mapping_is_reused) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    uint64_t maps0 = runtime_stats(rt).blocks.large_mappings;
    unsigned char *p = kiln_arena_alloc(a, BS, 16);
    uint64_t os_maps = runtime_stats(rt).blocks.os_maps;
    for (int frame = 0; frame < 10; frame++) {
        kiln_arena_reset(a);
        unsigned char *q = kiln_arena_alloc(a, BS, 16);
        cr_assert_eq(q, p, "frame %d: the kept mapping was not reused", frame);
        memset(q, frame, BS);
        cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0 + 1);
    }
    cr_assert_eq(runtime_stats(rt).blocks.os_maps, os_maps, "a steady large allocation maps nothing");
    kiln_arena_reset(a);
    kiln_arena_reset(a);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, maps0);
    kiln_arena_destroy(a);
}

Test(arena, allocation_of_ten_blocks) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    unsigned char *small = kiln_arena_alloc(a, 100, 16);
    fill_pattern(small, 100, 9);
    size_t used0 = arena_stats(a).bytes_in_use;
    unsigned char *p = kiln_arena_alloc(a, 10 * BS, 16);
    cr_assert_not_null(p);
    fill_pattern(p, 10 * BS, 10);
    cr_assert(check_pattern(p, 10 * BS, 10));
    cr_assert(check_pattern(small, 100, 9));
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.bytes_in_use, used0 + 10 * BS);
    cr_assert_eq(s.large_allocs, 1);
    /* The arena goes on in its block after the large allocation. */
    unsigned char *after = kiln_arena_alloc(a, 16, 16);
    cr_assert_eq((uintptr_t)after, (uintptr_t)small + 112);
    kiln_arena_destroy(a);
    cr_assert(!range_is_mapped(p, 10 * BS), "destroy left the large mapping");
}

Test(arena, largest_allocation_that_fits_a_block) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 1, 1), "the first block is in use");
    size_t fits = BS - sizeof(kiln_arena_block);
    unsigned char *p = kiln_arena_alloc(a, fits, 16);
    cr_assert_not_null(p);
    memset(p, 3, fits);
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.large_allocs, 0, "%zu bytes fit a fresh block", fits);
    cr_assert_eq(s.blocks_held, 2);
    cr_assert_eq(kiln_block_of(a->pool, p), (void *)(p - sizeof(kiln_arena_block)),
                 "served right after the header of a fresh block");
    unsigned char *q = kiln_arena_alloc(a, fits + 1, 16);
    cr_assert_not_null(q);
    memset(q, 4, fits + 1);
    cr_assert_eq(arena_stats(a).large_allocs, 1, "%zu bytes do not fit a block", fits + 1);
    kiln_arena_destroy(a);
}

Test(arena, huge_size_is_refused) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 10, 16));
    size_t used0 = arena_stats(a).bytes_in_use;
    cr_assert_null(kiln_arena_alloc(a, SIZE_MAX, 16));
    cr_assert_null(kiln_arena_alloc(a, SIZE_MAX / 2, 16));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW, "arena 'level'"), 2);
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.failures, 2);
    cr_assert_eq(s.bytes_in_use, used0);
    cr_assert_not_null(kiln_arena_alloc(a, 10, 16));
    kiln_arena_destroy(a);
}

Test(arena, reset_frees_everything_and_keeps_blocks) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    void *first = kiln_arena_alloc(a, 64, 16);
    for (int i = 0; i < 250; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    kiln_arena_stats s = arena_stats(a);
    uint32_t held = s.blocks_held;
    size_t used = s.bytes_in_use;
    cr_assert_geq(held, 4);
    cr_assert_geq(used, 64 + 250 * 1000);
    kiln_arena_reset(a);
    s = arena_stats(a);
    cr_assert_eq(s.bytes_in_use, 0);
    cr_assert_eq(s.resets, 1);
    cr_assert_eq(s.blocks_held, held, "a reset keeps what the frame used");
    cr_assert_eq(s.peak_frame, 0);
    cr_assert_eq(s.peak_last_frame, used);
    cr_assert_eq(kiln_arena_alloc(a, 64, 16), first, "reset starts over in the first block");
    uint64_t gets = runtime_stats(rt).blocks.gets;
    for (int i = 0; i < 250; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    cr_assert_eq(runtime_stats(rt).blocks.gets, gets, "the same work again takes no block");
    cr_assert_eq(arena_stats(a).blocks_taken, held);
    kiln_arena_destroy(a);
}

Test(arena, reset_after_spike_gives_back_one_block_per_reset) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int i = 0; i < 600; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));   /* ~10 blocks */
    uint32_t spike = arena_stats(a).blocks_held;
    cr_assert_geq(spike, 10);
    kiln_arena_reset(a);
    cr_assert_eq(arena_stats(a).blocks_held, spike);
    uint64_t in_use = runtime_stats(rt).blocks.blocks_in_use;
    for (uint32_t k = 1; k < spike; k++) {
        cr_assert_not_null(kiln_arena_alloc(a, 100, 8));   /* a small frame: one block */
        kiln_arena_reset(a);
        cr_assert_eq(arena_stats(a).blocks_held, spike - k, "reset %u after the spike", k);
        cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, in_use - k);
    }
    kiln_arena_reset(a);
    cr_assert_eq(arena_stats(a).blocks_held, 1, "never below the first block");
    kiln_arena_destroy(a);
}

Test(arena, peaks_are_recorded) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    kiln_mark m = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 5000, 8));
    kiln_arena_release(a, m);
    cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    kiln_arena_stats s = arena_stats(a);
    cr_assert_eq(s.bytes_in_use, 1000);
    cr_assert_eq(s.peak_frame, 5000);
    cr_assert_eq(s.peak_total, 5000);
    kiln_arena_reset(a);
    cr_assert_not_null(kiln_arena_alloc(a, 2000, 8));
    s = arena_stats(a);
    cr_assert_eq(s.peak_last_frame, 5000);
    cr_assert_eq(s.peak_frame, 2000);
    cr_assert_eq(s.peak_total, 5000);
    cr_assert_not_null(kiln_arena_alloc(a, 2 * BS, 8));
    s = arena_stats(a);
    cr_assert_eq(s.peak_frame, 2000 + 2 * BS);
    cr_assert_eq(s.peak_total, 2000 + 2 * BS);
    kiln_arena_destroy(a);
}

Test(arena, destroy_returns_every_block) {
    kiln_stats before = runtime_stats(rt);
    kiln_arena *a = kiln_arena_create(rt, "level");
    for (int i = 0; i < 400; i++) cr_assert_not_null(kiln_arena_alloc(a, 1000, 8));
    void *large = kiln_arena_alloc(a, 3 * BS, 16);
    kiln_mark m = kiln_arena_mark(a);
    cr_assert_not_null(kiln_arena_alloc(a, 2 * BS, 16));
    kiln_arena_release(a, m);   /* one kept mapping too */
    kiln_arena_destroy(a);
    kiln_stats after = runtime_stats(rt);
    cr_assert_eq(after.arenas, before.arenas);
    cr_assert_eq(after.blocks.blocks_in_use, before.blocks.blocks_in_use);
    cr_assert_eq(after.blocks.large_mappings, before.blocks.large_mappings);
    cr_assert_eq(after.blocks.reserved_bytes, after.blocks.blocks_reserved * BS,
                 "only reservations remain");
    cr_assert(!range_is_mapped(large, 3 * BS));
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(arena, null_arena_calls_are_safe) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    void *p = kiln_arena_alloc(NULL, 16, 16);
    kiln_mark m = kiln_arena_mark(NULL);
    kiln_arena_release(NULL, m);
    kiln_arena_reset(NULL);
    kiln_arena_destroy(NULL);
    kiln_arena_stats s;
    memset(&s, 0xFF, sizeof s);
    bool got = kiln_arena_stats_get(NULL, &s);
    char *text = stderr_capture_end(&cap);

    cr_assert_null(p);
    cr_assert_eq(m.opaque[0], 0);
    cr_assert_eq(m.opaque[1], 0);
    cr_assert(!got);
    kiln_arena_stats zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(memcmp(&s, &zero, sizeof s), 0, "stats not zeroed for a NULL arena");
    cr_assert_eq(count_substrings(text, "ARENA_NULL: "), 5, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "ARENA_NULL: kiln_arena_mark"), 1, "stderr: %s", text);
    cr_assert_eq(count_substrings(text, "kiln error: ARENA_NULL: kiln_arena_alloc"), 1, "stderr: %s", text);
    free(text);

    cr_assert_eq(runtime_stats(rt).api_errors, 0, "a NULL arena cannot reach the runtime");
    /* With a live arena the refusal reaches the runtime: its log and its counter. */
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert(!kiln_arena_stats_get(a, NULL));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_STATS_NULL_OUT), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).api_errors, 1);
    kiln_arena_destroy(a);
}

Test(arena, small_blocks) {
    recording_log *r = recording_log_new();
    kiln_desc desc = recording_desc(r);
    desc.block_size = 4096;
    kiln_runtime *small = kiln_create(&desc);
    cr_assert_not_null(small, "log:%s", recorded_summary(r));
    kiln_arena *a = kiln_arena_create(small, "tiny");
    cr_assert_not_null(a);
    enum { N = 500 };
    static unsigned char *ptrs[N];
    for (int i = 0; i < N; i++) {
        ptrs[i] = kiln_arena_alloc(a, 100 + (size_t)i % 900, (size_t)1 << (i % 8));
        cr_assert_not_null(ptrs[i]);
        fill_pattern(ptrs[i], 100 + (size_t)i % 900, (uint32_t)i);
    }
    for (int i = 0; i < N; i++)
        cr_assert(check_pattern(ptrs[i], 100 + (size_t)i % 900, (uint32_t)i), "allocation %d", i);
    void *page = kiln_arena_alloc(a, 10, 4096);
    cr_assert(page && is_aligned(page, 4096));
    cr_assert_null(kiln_arena_alloc(a, 10, 8192));
    cr_assert_eq(count_items_with(r, KILN_LOGITEM_ARENA_BAD_ALIGN, "from 1 to 4096"), 1, "log:%s", recorded_summary(r));
    kiln_stats s = runtime_stats(small);
    cr_assert_eq(s.blocks.block_size, 4096);
    cr_assert_eq(s.blocks.blocks_in_use, arena_stats(a).blocks_held);
    kiln_arena_destroy(a);
    kiln_destroy(small);
    recording_log_free(r);
}

Test(arena, arenas_are_independent) {
    enum { ARENAS = 8, ROUNDS = 300 };
    kiln_arena *arenas[ARENAS];
    static unsigned char *ptrs[ARENAS][ROUNDS];
    for (int k = 0; k < ARENAS; k++) {
        char name[16];
        snprintf(name, sizeof name, "a%d", k);
        arenas[k] = kiln_arena_create(rt, name);
        cr_assert_not_null(arenas[k]);
    }
    for (int i = 0; i < ROUNDS; i++)
        for (int k = 0; k < ARENAS; k++) {
            ptrs[k][i] = kiln_arena_alloc(arenas[k], 336, 8);
            cr_assert_not_null(ptrs[k][i]);
            fill_pattern(ptrs[k][i], 336, (uint32_t)(k * ROUNDS + i));
        }
    kiln_arena_reset(arenas[3]);
    kiln_arena_destroy(arenas[5]);
    for (int k = 0; k < ARENAS; k++) {
        if (k == 3 || k == 5) continue;
        for (int i = 0; i < ROUNDS; i++)
            cr_assert(check_pattern(ptrs[k][i], 336, (uint32_t)(k * ROUNDS + i)),
                      "arena %d allocation %d overwritten", k, i);
        cr_assert_eq(arena_stats(arenas[k]).bytes_in_use, ROUNDS * 336);
    }
    uint64_t held = 0;
    for (int k = 0; k < ARENAS; k++)
        if (k != 5) held += arena_stats(arenas[k]).blocks_held;
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.blocks.blocks_in_use, held, "blocks in use == blocks the arenas hold");
    cr_assert_eq(s.arenas, ARENAS - 1);
    for (int k = 0; k < ARENAS; k++)
        if (k != 5) kiln_arena_destroy(arenas[k]);
}

/* ---- release gives large mappings back; calls on a destroyed arena are refused ---- */

/* A runtime of its own for tests that need a desc field (its log goes to rec). */
static kiln_runtime *runtime_with(kiln_desc desc) {
    kiln_runtime *r = kiln_create(&desc);
    cr_assert_not_null(r, "kiln_create failed:%s", recorded_summary(rec));
    return r;
}

/* mark / large allocation / release, over and over, in an arena that is never reset:
 * what release frees goes back to the OS but for one mapping kept for the next round,
 * so the reservation stays bounded and memory_limit is never reached. The sizes grow
 * (no kept mapping fits the next one) and now and then drop back (the kept one fits). */
Test(arena, release_unmaps_large_mappings_it_does_not_keep) {
    kiln_desc desc = recording_desc(rec);
    desc.memory_limit = (size_t)16 << 20;
    desc.reserve_size = 16 * BS;
    kiln_runtime *r = runtime_with(desc);
    kiln_arena *a = kiln_arena_create(r, "loader");
    cr_assert_not_null(a);
    size_t page = 4096, largest = 0;
    for (size_t i = 0; i < 300; i++) {
        size_t size = i % 3 == 2 ? BS + 1 : BS + i * page;
        if (size > largest) largest = size;
        kiln_mark m = kiln_arena_mark(a);
        unsigned char *p = kiln_arena_alloc(a, size, 16);
        cr_assert_not_null(p, "round %zu (%zu bytes):%s", i, size, recorded_summary(rec));
        p[0] = 1;
        p[size - 1] = 2;
        kiln_arena_release(a, m);
        kiln_stats s = runtime_stats(r);
        cr_assert_leq(s.blocks.large_mappings, 1, "round %zu: %llu mappings kept", i,
                      (unsigned long long)s.blocks.large_mappings);
        size_t large_bytes = s.blocks.reserved_bytes - s.blocks.blocks_reserved * BS;
        cr_assert_leq(large_bytes, largest + 2 * page, "round %zu: %zu bytes of mappings kept",
                      i, large_bytes);
        cr_assert_eq(arena_stats(a).bytes_in_use, 0);
    }
    cr_assert_eq(arena_stats(a).failures, 0);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
    kiln_arena_reset(a);
    cr_assert_eq(runtime_stats(r).blocks.large_mappings, 0, "reset gives back what it did not reuse");
    kiln_arena_destroy(a);
    kiln_destroy(r);
}

/* What release keeps is reused: the same large allocations round after round map
 * nothing, also with several live at once. */
Test(arena, release_keeps_mappings_for_the_next_round) {
    kiln_arena *a = kiln_arena_create(rt, "loader");
    kiln_mark m = kiln_arena_mark(a);
    unsigned char *p = kiln_arena_alloc(a, 3 * BS, 16);
    unsigned char *q = kiln_arena_alloc(a, 2 * BS, 16);
    cr_assert(p && q);
    kiln_arena_release(a, m);
    kiln_stats s0 = runtime_stats(rt);
    cr_assert_eq(s0.blocks.large_mappings, 2, "two were live at once: both are kept");
    for (int round = 0; round < 10; round++) {
        cr_assert_eq(kiln_arena_alloc(a, 3 * BS, 16), p, "round %d", round);
        cr_assert_eq(kiln_arena_alloc(a, 2 * BS, 16), q, "round %d", round);
        kiln_arena_release(a, m);
    }
    kiln_stats s = runtime_stats(rt);
    cr_assert_eq(s.blocks.os_maps, s0.blocks.os_maps, "steady rounds map nothing");
    cr_assert_eq(s.blocks.large_mappings, 2);
    kiln_arena_destroy(a);
    cr_assert_eq(runtime_stats(rt).blocks.large_mappings, 0);
}

/* The block that holds p. */
static uintptr_t block_of(const void *p) { return (uintptr_t)p & ~(uintptr_t)(BS - 1); }

Test(arena, destroy_twice_is_refused) {
    kiln_arena *a = kiln_arena_create(rt, "level");
    cr_assert_not_null(kiln_arena_alloc(a, 100, 16));
    kiln_arena_destroy(a);
    uint64_t errors = runtime_stats(rt).api_errors;
    kiln_arena_destroy(a);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_DESTROYED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'level': kiln_arena_destroy"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(runtime_stats(rt).api_errors, errors + 1, "a misuse is counted");
    /* Its first block went back once: two new arenas get a block each. */
    kiln_stats s = runtime_stats(rt);
    kiln_arena *b = kiln_arena_create(rt, "b");
    kiln_arena *c = kiln_arena_create(rt, "c");
    cr_assert(b && c);
    unsigned char *pb = kiln_arena_alloc(b, 1000, 16);
    unsigned char *pc = kiln_arena_alloc(c, 1000, 16);
    cr_assert(pb && pc);
    cr_assert_neq(block_of(pb), block_of(pc), "two arenas share a block");
    fill_pattern(pb, 1000, 1);
    fill_pattern(pc, 1000, 2);
    cr_assert(check_pattern(pb, 1000, 1) && check_pattern(pc, 1000, 2));
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, s.blocks.blocks_in_use + 2);
    kiln_arena_destroy(b);
    kiln_arena_destroy(c);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_DESTROYED), 1);
}

/* Every call through a destroyed arena is refused and logged, whether its first block
 * is free in the pool or is now another arena's first block; the other arena is left
 * alone. */
static void check_destroyed_arena_refuses(kiln_runtime *r, size_t block_large) {
    kiln_arena *a = kiln_arena_create(r, "level");
    cr_assert_not_null(a);
    kiln_mark m = kiln_arena_mark(a);
    void *in_first = kiln_arena_alloc(a, 100, 16);
    cr_assert_not_null(in_first);
    cr_assert_not_null(kiln_arena_alloc(a, block_large, 16));
    kiln_arena_destroy(a);
    for (int reused = 0; reused < 2; reused++) {
        kiln_arena *b = NULL;
        unsigned char *pb = NULL;
        kiln_arena_stats before = { 0 };
        if (reused) {   /* the pool is a LIFO: b's first block is a's */
            b = kiln_arena_create(r, "b");
            pb = kiln_arena_alloc(b, 256, 16);
            cr_assert_not_null(pb);
            cr_assert_eq(block_of(pb), block_of(in_first), "b's first block was a's");
            fill_pattern(pb, 256, 7);
            before = arena_stats(b);
        }
        recording_log_clear(rec);
        cr_assert_null(kiln_arena_alloc(a, 16, 16));
        cr_assert_null(kiln_arena_alloc(a, 0, 0));
        cr_assert_null(kiln_arena_alloc(a, 1, 1));
        cr_assert_null(kiln_arena_alloc(a, block_large, 16));
        cr_assert_null(kiln_arena_alloc_at(a, 16, 16, __FILE__, __LINE__));
        kiln_mark dead = kiln_arena_mark(a);
        cr_assert(dead.opaque[0] == 0 && dead.opaque[1] == 0, "the empty mark");
        kiln_arena_release(a, m);
        kiln_arena_reset(a);
        kiln_arena_stats s;
        memset(&s, 0xff, sizeof s);
        kiln_arena_stats_get(a, &s);
        cr_assert_eq(s.bytes_in_use, 0);
        cr_assert_eq(s.allocs, 0);
        cr_assert_str_eq(s.name, "", "zeroed, as every refused stats call");
        kiln_arena_destroy(a);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_DESTROYED), 10, "log:%s", recorded_summary(rec));
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'level'"), 10);
        cr_assert_eq(recorded_count(rec), 10, "nothing else:%s", recorded_summary(rec));
        if (reused) {
            kiln_arena_stats after = arena_stats(b);
            cr_assert(check_pattern(pb, 256, 7), "the new arena's memory was written");
            cr_assert_eq(after.bytes_in_use, before.bytes_in_use);
            cr_assert_eq(after.allocs, before.allocs);
            cr_assert_eq(after.resets, 0);
            cr_assert_eq(after.releases, 0);
            kiln_arena_destroy(b);
        }
    }
}

Test(arena, calls_on_a_destroyed_arena_are_refused) {
    check_destroyed_arena_refuses(rt, 4 * BS);
}

Test(arena, calls_on_a_destroyed_debug_arena_are_refused) {
    kiln_desc desc = recording_desc(rec);
    desc.debug = KILN_DEBUG_GUARDS | KILN_DEBUG_FILL | KILN_DEBUG_SITES;
    kiln_runtime *r = runtime_with(desc);
    check_destroyed_arena_refuses(r, 4 * BS);
    kiln_destroy(r);
}

/* Create and destroy in a loop: the blocks go back every time (the records stay with
 * the runtime until kiln_destroy, which frees them: the ASan build checks the heap). */
Test(arena, create_destroy_loop_returns_every_block) {
    uint64_t in_use = runtime_stats(rt).blocks.blocks_in_use;
    for (int i = 0; i < 200; i++) {
        kiln_arena *a = kiln_arena_create(rt, "temp");
        cr_assert_not_null(a);
        cr_assert_not_null(kiln_arena_alloc(a, 3 * BS / 2, 16));
        kiln_arena_destroy(a);
    }
    cr_assert_eq(runtime_stats(rt).blocks.blocks_in_use, in_use);
    cr_assert_eq(runtime_stats(rt).arenas, 0);
}

/* A destroyed arena's record stays with the runtime until kiln_destroy, which frees it
 * with the rest; a frame arena's record is reused by the next attach, so attaching and
 * detaching over and over does not grow the heap. Exact in the ASan build only (see
 * heap_accounting_exact). */
Test(arena, records_are_reused_or_freed_by_kiln_destroy) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = 1;   /* see runtime/arenas.c: kiln_destroy frees the records of a
                                runtime with no worker only once it calls for that */
    kiln_destroy(runtime_with(desc));   /* the process's first thread costs some heap once */
    size_t heap0 = heap_bytes_in_use();
    kiln_runtime *r = runtime_with(desc);
    for (int i = 0; i < 20; i++) kiln_arena_destroy(kiln_arena_create(r, "temp"));
    kiln_detach(kiln_attach(r));
    size_t heap1 = heap_bytes_in_use();
    for (int i = 0; i < 50; i++) {
        kiln_ctx *c = kiln_attach(r);
        cr_assert_not_null(kiln_frame_alloc(c, 100, 16));
        kiln_detach(c);
    }
    size_t heap2 = heap_bytes_in_use();
    kiln_destroy(r);
    size_t heap3 = heap_bytes_in_use();
    if (heap_accounting_exact()) {
        cr_assert_eq(heap2, heap1, "attach and detach left %zd heap bytes", (ssize_t)(heap2 - heap1));
        cr_assert_eq(heap3, heap0, "kiln_destroy left %zd heap bytes", (ssize_t)(heap3 - heap0));
    }
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}
