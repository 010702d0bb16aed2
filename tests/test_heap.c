/* tests/test_heap.c — the general heap (kiln/heap.h): every class and large sizes with
 * their alignments, frees from other threads, pointers the heap must refuse (malloc's,
 * the stack's, a pool's, an arena's, another runtime's, interior, freed), bad sizes and
 * alignments, realloc in place, by moving pages and across classes, tags charged by
 * allocation through credit, REFUSE budgets never passed, trim and teardown. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recording_log.h"

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;
static const kiln_tag untagged = { 0 };

static void setup(void) {
    rec = recording_log_new();
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    rt = kiln_create(&d);
    cr_assert_not_null(rt);
    ctx = kiln_attach(rt);
}
static void teardown(void) { recording_fixture_end(&ctx, &rt, &rec); }
TestSuite(heap, .init = setup, .fini = teardown);

static kiln_heap_stats heap_stats(void) {
    kiln_heap_stats s;
    cr_assert(kiln_stats_heap(rt, &s));
    return s;
}

static kiln_tag make_tag(const char *name, kiln_tag parent, size_t budget, kiln_budget_policy policy) {
    kiln_tag tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = name, .parent = parent,
                                                         .budget = budget, .policy = policy });
    cr_assert_neq(tag.id, 0u);
    return tag;
}

static kiln_tag_stats tag_stats(kiln_tag tag) {
    kiln_tag_stats s;
    cr_assert(kiln_tag_stats_get(rt, tag, &s));
    return s;
}

Test(heap, every_size_to_large_is_usable_aligned_and_freed) {
    static void *held[20100];
    size_t n = 0;
    for (size_t size = 0; size <= 20000; size += size < 300 ? 1 : 37) {
        char *p = kiln_heap_alloc(ctx, untagged, size, 0);
        cr_assert_not_null(p, "size %zu", size);
        cr_assert_eq((uintptr_t)p % 16, 0u, "size %zu at %p", size, (void *)p);
        size_t usable = kiln_heap_usable_size(p);
        cr_assert_geq(usable, size ? size : 1);
        if (size > 64 && size <= KILN_HEAP_CLASS_MAX)
            cr_assert_lt((double)(usable - size), 0.125 * (double)usable + 16, "size %zu: %zu", size, usable);
        memset(p, 0xab, usable);
        held[n++] = p;
    }
    kiln_heap_stats s = heap_stats();
    cr_expect_eq(s.live_objects, n);
    cr_expect_gt(s.large_live, 0u);
    for (size_t i = 0; i < n; i++) kiln_heap_free(ctx, held[i]);
    s = heap_stats();
    cr_expect_eq(s.live_objects, 0u);
    cr_expect_eq(s.live_bytes, 0u);
    cr_expect_eq(s.bad_frees, 0u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

Test(heap, alignments_up_to_large_ones) {
    size_t sizes[] = { 1, 24, 100, 1000, 5000, 16384, 40000 };
    for (size_t a = 16; a <= ((size_t)1 << 20); a <<= 1)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            void *p = kiln_heap_alloc(ctx, untagged, sizes[i], a);
            cr_assert_not_null(p);
            cr_assert_eq((uintptr_t)p % a, 0u, "size %zu align %zu: %p", sizes[i], a, p);
            cr_assert_geq(kiln_heap_usable_size(p), sizes[i]);
            memset(p, 1, sizes[i]);
            kiln_heap_free(ctx, p);
        }
    cr_expect_eq(heap_stats().live_objects, 0u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

Test(heap, bad_sizes_and_alignments_are_refused) {
    cr_expect_null(kiln_heap_alloc(ctx, untagged, 10, 3));
    cr_expect_null(kiln_heap_alloc(ctx, untagged, 1, (size_t)1 << 62));
    cr_expect_null(kiln_heap_alloc(ctx, untagged, 1, (size_t)1 << 63));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_BAD_ALIGN), 3u);
    cr_expect_null(kiln_heap_alloc(ctx, untagged, SIZE_MAX, 0));
    cr_expect_null(kiln_heap_alloc(ctx, untagged, (size_t)PTRDIFF_MAX, 64));
    cr_expect_null(kiln_heap_alloc(ctx, untagged, (size_t)PTRDIFF_MAX, 0));
    cr_expect_null(kiln_heap_calloc(ctx, untagged, SIZE_MAX / 2, 3));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_TOO_LARGE), 4u);
    /* A size that passes the check but no OS maps: NULL, counted, never a crash. */
    cr_expect_null(kiln_heap_alloc(ctx, untagged, (size_t)PTRDIFF_MAX - 8192, 0));
    cr_expect_geq(heap_stats().failures, 1u);
    cr_expect_null(kiln_heap_alloc(NULL, untagged, 16, 0));   /* CONTEXT_NULL, on stderr */
}

Test(heap, calloc_zeroes_reused_memory) {
    for (int round = 0; round < 3; round++) {
        size_t sizes[] = { 40, 3000, 70000 };
        for (size_t i = 0; i < 3; i++) {
            unsigned char *p = kiln_heap_calloc(ctx, untagged, sizes[i] / 8, 8);
            cr_assert_not_null(p);
            for (size_t b = 0; b < sizes[i]; b++) cr_assert_eq(p[b], 0, "size %zu byte %zu", sizes[i], b);
            memset(p, 0xee, sizes[i]);
            kiln_heap_free(ctx, p);
        }
    }
    cr_expect_geq(heap_stats().large_reused, 1u, "a kept mapping came back");
}

/* ---- pointers the heap must refuse ---- */

Test(heap, foreign_pointers_are_refused_and_nothing_breaks) {
    int on_stack = 0;
    void *from_malloc = malloc(64);
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .size = 48 });
    void *pool_obj = kiln_pool_alloc(ctx, pool);
    kiln_arena *arena = kiln_arena_create(rt, "a");
    void *arena_obj = kiln_arena_alloc(arena, 64, 16);
    kiln_runtime *other = recording_runtime(rec, KILN_NO_WORKERS);
    kiln_ctx *other_ctx = kiln_attach(other);
    void *others = kiln_heap_alloc(other_ctx, untagged, 64, 0);
    void *others_large = kiln_heap_alloc(other_ctx, untagged, 100000, 0);
    void *bad[] = { &on_stack, from_malloc, pool_obj, arena_obj, others, others_large,
                    (void *)(uintptr_t)16, (void *)UINTPTR_MAX, (void *)((uintptr_t)1 << 62) };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_heap_free(ctx, bad[i]);
        cr_expect_null(kiln_heap_realloc(ctx, bad[i], 10, 0));
    }
    size_t n = sizeof bad / sizeof bad[0];
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_FOREIGN_POINTER), 2 * n, "%s", recorded_summary(rec));
    cr_expect_eq(heap_stats().bad_frees, 2 * n);
    /* Still the others' and the allocators', untouched. */
    memset(others, 1, 64);
    cr_expect_eq(kiln_heap_usable_size(others), 64u);
    kiln_heap_free(other_ctx, others);
    kiln_heap_free(other_ctx, others_large);
    kiln_pool_free(ctx, pool, pool_obj);
    kiln_detach(other_ctx);
    kiln_destroy(other);
    free(from_malloc);
    kiln_arena_destroy(arena);
    kiln_pool_destroy(pool);
    /* The heap still works. */
    void *p = kiln_heap_alloc(ctx, untagged, 64, 0);
    cr_expect_not_null(p);
    kiln_heap_free(ctx, p);
}

Test(heap, interior_and_double_frees_are_refused) {
    char *small = kiln_heap_alloc(ctx, untagged, 100, 0);
    char *large = kiln_heap_alloc(ctx, untagged, 100000, 0);
    kiln_heap_free(ctx, small + 16);
    kiln_heap_free(ctx, small + 1);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_INTERIOR_POINTER), 2u);
    kiln_heap_free(ctx, large + 4096);   /* a large one's interior too */
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_INTERIOR_POINTER), 3u);
    cr_expect_eq(kiln_heap_usable_size(large + 16), 0u, "logged through the runtime, counted");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_INTERIOR_POINTER), 4u);
    cr_expect_eq(kiln_heap_usable_size(small + 16), 0u);
    kiln_heap_free(ctx, small);
    kiln_heap_free(ctx, small);
    cr_expect_null(kiln_heap_realloc(ctx, small, 300, 0));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_DOUBLE_FREE), 2u);
    kiln_heap_free(ctx, large);
    kiln_heap_free(ctx, large);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_FOREIGN_POINTER), 1u);
    kiln_heap_stats s = heap_stats();
    cr_expect_eq(s.double_frees, 2u);
    cr_expect_eq(s.live_objects, 0u, "each freed once");
    /* The slot was not pushed twice: two allocations of its class are two addresses. */
    void *a = kiln_heap_alloc(ctx, untagged, 100, 0), *b = kiln_heap_alloc(ctx, untagged, 100, 0);
    cr_expect_neq(a, b);
    kiln_heap_free(ctx, a);
    kiln_heap_free(ctx, b);
}

Test(heap, a_detached_or_null_context_frees_nothing) {
    void *p = kiln_heap_alloc(ctx, untagged, 64, 0);
    kiln_ctx *gone = kiln_attach(rt);
    kiln_detach(gone);
    kiln_heap_free(gone, p);
    kiln_heap_free(NULL, p);   /* CONTEXT_NULL, on stderr */
    cr_expect_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 1u);
    cr_expect_eq(heap_stats().live_objects, 1u, "still live");
    kiln_heap_free(ctx, p);
    cr_expect_eq(heap_stats().live_objects, 0u);
}

/* ---- other threads ---- */

typedef struct handoff { void *ptrs[4000]; size_t count; kiln_tag tag; } handoff;

static void *free_them(void *arg) {
    handoff *h = arg;
    kiln_ctx *mine = kiln_attach(rt);
    for (size_t i = 0; i < h->count; i++) {
        cr_assert_eq(kiln_heap_tag(h->ptrs[i]).id, h->tag.id);
        kiln_heap_free(mine, h->ptrs[i]);
    }
    kiln_detach(mine);
    return NULL;
}

Test(heap, frees_from_another_thread_give_the_tag_back) {
    kiln_tag tag = make_tag("Particles", untagged, 0, KILN_BUDGET_WARN);
    static handoff h;
    h.count = 4000;
    h.tag = tag;
    uint64_t bytes = 0;
    for (size_t i = 0; i < h.count; i++) {
        size_t size = 8 + (i * 7919) % 3000;
        if (i % 500 == 0) size = 50000 + i;
        h.ptrs[i] = kiln_heap_alloc(ctx, tag, size, 0);
        cr_assert_not_null(h.ptrs[i]);
        bytes += kiln_heap_usable_size(h.ptrs[i]);
    }
    kiln_tag_stats s = tag_stats(tag);
    cr_expect_eq(s.live_bytes, bytes, "exact while quiet: %llu vs %llu", (unsigned long long)s.live_bytes,
                 (unsigned long long)bytes);
    cr_expect_eq(s.own_bytes, bytes);
    cr_expect_geq(s.peak_bytes, bytes);
    cr_expect_eq(s.allocs, h.count);
    pthread_t t;
    pthread_create(&t, NULL, free_them, &h);
    pthread_join(t, NULL);
    s = tag_stats(tag);
    cr_expect_eq(s.live_bytes, 0u);
    cr_expect_eq(s.frees, h.count);
    cr_expect_eq(heap_stats().live_objects, 0u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

static void *usable_elsewhere(void *arg) {
    return (void *)(uintptr_t)kiln_heap_usable_size(arg);
}

Test(heap, usable_size_and_tag_from_a_thread_without_context) {
    kiln_tag tag = make_tag("UI", untagged, 0, KILN_BUDGET_WARN);
    void *p = kiln_heap_alloc(ctx, tag, 200, 0);
    pthread_t t;
    void *out;
    pthread_create(&t, NULL, usable_elsewhere, p);
    pthread_join(t, &out);
    cr_expect_eq((size_t)(uintptr_t)out, kiln_heap_usable_size(p));
    cr_expect_eq(kiln_heap_tag(p).id, tag.id);
    cr_expect_eq(kiln_heap_tag(NULL).id, 0u);
    cr_expect_eq(kiln_heap_usable_size(NULL), 0u);
    kiln_heap_free(ctx, p);
}

/* ---- realloc ---- */

Test(heap, realloc_keeps_contents_and_tag) {
    kiln_tag tag = make_tag("Strings", untagged, 0, KILN_BUDGET_WARN);
    size_t size = 1;
    unsigned char *p = kiln_heap_alloc(ctx, tag, size, 0);
    fill_pattern(p, size, 7);
    while (size < ((size_t)8 << 20)) {
        size_t next = size * 2 + 3;
        p = kiln_heap_realloc(ctx, p, next, 0);
        cr_assert_not_null(p);
        cr_assert(check_pattern(p, size, 7), "size %zu -> %zu", size, next);
        fill_pattern(p, next, 7);
        cr_assert_eq(kiln_heap_tag(p).id, tag.id);
        size = next;
    }
    kiln_heap_stats s = heap_stats();
    cr_expect_geq(s.remaps, 1u, "large growth moved pages");
    while (size > 10) {
        size_t next = size / 3;
        p = kiln_heap_realloc(ctx, p, next, 0);
        cr_assert(check_pattern(p, next, 7), "shrunk to %zu", next);
        size = next;
    }
    cr_expect_eq(kiln_heap_realloc(ctx, p, 0, 0), NULL, "size 0 frees");
    cr_expect_eq(heap_stats().live_objects, 0u);
    cr_expect_eq(tag_stats(tag).live_bytes, 0u);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

Test(heap, realloc_in_place_within_a_class) {
    char *p = kiln_heap_alloc(ctx, untagged, 100, 0);
    size_t usable = kiln_heap_usable_size(p);
    cr_expect_eq(kiln_heap_realloc(ctx, p, usable, 0), p);
    cr_expect_eq(kiln_heap_realloc(ctx, p, usable / 2 + 1, 0), p);
    cr_expect_geq(heap_stats().reallocs_in_place, 2u);
    kiln_heap_free(ctx, p);
}

Test(heap, realloc_of_null_uses_the_pushed_tag) {
    kiln_tag tag = make_tag("Script", untagged, 0, KILN_BUDGET_WARN);
    kiln_tag before = kiln_tag_push(ctx, tag);
    void *p = kiln_heap_realloc(ctx, NULL, 80, 0);
    kiln_tag_pop(ctx, before);
    cr_expect_eq(kiln_heap_tag(p).id, tag.id);
    kiln_heap_free(ctx, p);
}

/* ---- tags and budgets ---- */

Test(heap, children_roll_up_and_untagged_is_not_charged) {
    kiln_tag audio = make_tag("Audio", untagged, 0, KILN_BUDGET_WARN);
    kiln_tag stream = make_tag("Audio/Streaming", audio, 0, KILN_BUDGET_WARN);
    void *a = kiln_heap_alloc(ctx, audio, 1000, 0);
    void *b = kiln_heap_alloc(ctx, stream, 100000, 0);
    void *c = kiln_heap_alloc(ctx, untagged, 1000, 0);
    size_t ua = kiln_heap_usable_size(a), ub = kiln_heap_usable_size(b);
    cr_expect_eq(tag_stats(audio).live_bytes, ua + ub);
    cr_expect_eq(tag_stats(audio).own_bytes, ua);
    cr_expect_eq(tag_stats(stream).live_bytes, ub);
    kiln_heap_free(ctx, a);
    kiln_heap_free(ctx, b);
    kiln_heap_free(ctx, c);
    cr_expect_eq(tag_stats(audio).live_bytes, 0u);
}

Test(heap, a_refuse_budget_is_never_passed) {
    kiln_tag tight = make_tag("Tight", untagged, 100000, KILN_BUDGET_REFUSE);
    static void *held[10000];
    size_t n = 0, bytes = 0;
    for (; n < 10000; n++) {
        size_t size = 16 + (n * 131) % 2000;
        if (n % 10 == 0) size = 20000;
        held[n] = kiln_heap_alloc(ctx, tight, size, 0);
        if (!held[n]) break;
        bytes += kiln_heap_usable_size(held[n]);
        kiln_tag_stats s = tag_stats(tight);
        cr_assert_leq(s.live_bytes, 100000u);
    }
    cr_expect_lt(n, 10000u, "the budget stopped it");
    cr_expect_leq(bytes, 100000u);
    cr_expect_geq(bytes, 100000u - 20480u, "refused only when the next would not fit");
    kiln_tag_stats s = tag_stats(tight);
    cr_expect_geq(s.refusals, 1u);
    cr_expect_leq(s.peak_bytes, 100000u, "credit included, never past the budget");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 1u, "once per frame");
    cr_expect_geq(heap_stats().failures, 1u);
    for (size_t i = 0; i < n; i++) kiln_heap_free(ctx, held[i]);
    cr_expect_eq(tag_stats(tight).live_bytes, 0u);
    cr_expect_not_null(held[0] = kiln_heap_alloc(ctx, tight, 5000, 0), "room again");
    kiln_heap_free(ctx, held[0]);
}

Test(heap, a_foreign_or_unmade_tag_is_refused) {
    kiln_runtime *other = recording_runtime(rec, KILN_NO_WORKERS);
    kiln_tag theirs = kiln_tag_create(other, &(kiln_tag_desc){ .name = "Theirs" });
    cr_expect_null(kiln_heap_alloc(ctx, theirs, 16, 0));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_FOREIGN), 1u);
    kiln_tag mine = make_tag("Mine", untagged, 0, KILN_BUDGET_WARN);
    cr_expect_null(kiln_heap_alloc(ctx, (kiln_tag){ mine.id + 5 }, 16, 0));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_INVALID), 1u);
    kiln_destroy(other);
}

/* ---- trim and teardown ---- */

Test(heap, trim_gives_free_memory_back) {
    static void *held[20000];
    for (size_t i = 0; i < 20000; i++) held[i] = kiln_heap_alloc(ctx, untagged, 16 + i % 512, 0);
    void *big = kiln_heap_alloc(ctx, untagged, 1 << 20, 0);
    for (size_t i = 0; i < 20000; i++) kiln_heap_free(ctx, held[i]);
    kiln_heap_free(ctx, big);
    kiln_heap_stats before = heap_stats();
    cr_expect_eq(before.large_kept, 1u);
    kiln_detach(ctx);   /* the cache's objects back to the depots */
    ctx = kiln_attach(rt);
    cr_expect_gt(kiln_trim(rt), 0u);
    kiln_heap_stats after = heap_stats();
    cr_expect_eq(after.large_kept, 0u);
    cr_expect_lt(after.class_bytes, before.class_bytes);
}

Test(heap, trim_counts_the_kept_mappings_it_unmaps) {
    void *big = kiln_heap_alloc(ctx, untagged, (size_t)8 << 20, 0);
    memset(big, 1, (size_t)8 << 20);
    kiln_heap_free(ctx, big);   /* kept */
    cr_assert_eq(heap_stats().large_kept, 1u);
    cr_assert_geq(kiln_trim(rt), (size_t)8 << 20, "its bytes are given back");
    cr_assert_eq(heap_stats().large_kept, 0u);
}

Test(heap, destroy_reports_live_allocations) {
    kiln_heap_alloc(ctx, untagged, 100, 0);
    kiln_heap_alloc(ctx, untagged, 100000, 0);
    kiln_detach(ctx);
    ctx = NULL;
    kiln_destroy(rt);
    rt = NULL;
    cr_expect_eq(count_items(rec, KILN_LOGITEM_HEAP_OBJECTS_LIVE), 1u);
    cr_expect_eq(count_items_with(rec, KILN_LOGITEM_HEAP_OBJECTS_LIVE, "2 heap allocations"), 1u,
                 "%s", recorded_summary(rec));
}

/* ---- what a hostile review found ---- */

static kiln_runtime *debug_rt;

static void *churn_large(void *arg) {
    (void)arg;
    kiln_ctx *mine = kiln_attach(debug_rt);
    for (int i = 0; i < 3000; i++) {
        unsigned char *p = kiln_heap_alloc(mine, untagged, 100000, 0);
        cr_assert_not_null(p);
        memset(p, 0x11, 100000);
        for (size_t b = 0; b < 100000; b += 512) cr_assert_eq(p[b], 0x11, "byte %zu changed under its owner", b);
        kiln_heap_free(mine, p);
    }
    kiln_detach(mine);
    return NULL;
}

Test(heap, fill_of_a_freed_mapping_never_reaches_its_next_owner) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.debug = KILN_DEBUG_FILL | KILN_DEBUG_POISON;
    debug_rt = kiln_create(&d);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn_large, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    kiln_destroy(debug_rt);
    cr_expect_eq(recorded_count(rec), 0u, "%s", recorded_summary(rec));
}

Test(heap, every_usable_byte_is_usable_under_poison) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.debug = KILN_DEBUG_POISON | KILN_DEBUG_FILL;
    kiln_runtime *r = kiln_create(&d);
    kiln_ctx *c = kiln_attach(r);
    char *p = kiln_heap_alloc(c, untagged, 20000, 0);
    memset(p, 1, kiln_heap_usable_size(p));   /* ASan would stop here on a poisoned tail */
    char *q = kiln_heap_realloc(c, p, 20010, 0);
    memset(q, 2, 20010);
    char *s = kiln_heap_alloc(c, untagged, 100, 0);
    memset(s, 3, kiln_heap_usable_size(s));
    kiln_heap_free(c, q);
    kiln_heap_free(c, s);
    kiln_detach(c);
    kiln_destroy(r);
}

Test(heap, a_refuse_tag_never_refuses_on_its_own_contexts_credit) {
    kiln_tag r = make_tag("R", untagged, 50000, KILN_BUDGET_REFUSE);
    void *t = kiln_heap_alloc(ctx, r, 64, 0);
    kiln_heap_free(ctx, t);   /* the context keeps the credit it drew */
    void *p = kiln_heap_alloc(ctx, r, 20000, 0);
    cr_expect_not_null(p, "nothing is live: the budget has room");
    kiln_heap_free(ctx, p);
    cr_expect_eq(tag_stats(r).refusals, 0u);
}

Test(heap, kept_mappings_give_way_to_the_memory_limit) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.memory_limit = 16u << 20;
    kiln_runtime *r = kiln_create(&d);
    kiln_ctx *c = kiln_attach(r);
    void *held[4];
    for (int i = 0; i < 4; i++) cr_assert_not_null(held[i] = kiln_heap_alloc(c, untagged, 3u << 20, 0));
    for (int i = 0; i < 4; i++) kiln_heap_free(c, held[i]);
    void *big = kiln_heap_alloc(c, untagged, 10u << 20, 0);
    cr_expect_not_null(big, "the kept mappings went first");
    kiln_heap_free(c, big);
    kiln_detach(c);
    kiln_destroy(r);
    cr_expect_eq(count_items(rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 0u, "%s", recorded_summary(rec));
}

Test(heap, realloc_keeps_the_site) {
    kiln_desc d = recording_desc(rec);
    d.worker_count = KILN_NO_WORKERS;
    d.debug = KILN_DEBUG_SITES;
    kiln_runtime *r = kiln_create(&d);
    kiln_ctx *c = kiln_attach(r);
    int line = __LINE__ + 1;
    void *p = kiln_heap_alloc_at(c, untagged, 40, 0, __FILE__, line);
    p = kiln_heap_realloc(c, p, 4000, 0);
    p = kiln_heap_realloc(c, p, 40000, 0);
    p = kiln_heap_realloc(c, p, 400, 0);
    kiln_site_stats top[4];
    size_t n = kiln_sites_top(r, top, 4);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (top[i].file && top[i].line == line) {
            found = true;
            cr_expect_eq(top[i].live, 1u, "live at its site after three moves");
        }
    cr_expect(found);
    kiln_heap_free(c, p);
    kiln_detach(c);
    kiln_destroy(r);
}

static _Atomic int lookups_stop;
static void *lookups(void *arg) {
    while (!atomic_load(&lookups_stop)) {
        cr_assert_eq(kiln_heap_usable_size(arg), 64u);
        sched_yield();   /* on a loaded machine (or under memcheck) the creates go on */
    }
    return NULL;
}

Test(heap, lookups_meet_runtimes_made_and_destroyed) {
    void *mine = kiln_heap_alloc(ctx, untagged, 64, 0);
    pthread_t t;
    pthread_create(&t, NULL, lookups, mine);
    for (int i = 0; i < 30; i++) {
        kiln_runtime *r = recording_runtime(rec, KILN_NO_WORKERS);
        kiln_ctx *c = kiln_attach(r);
        kiln_heap_free(c, kiln_heap_alloc(c, untagged, 100, 0));
        kiln_detach(c);
        kiln_destroy(r);
    }
    atomic_store(&lookups_stop, 1);
    pthread_join(t, NULL);
    kiln_heap_free(ctx, mine);
}

/* ---- the accounting closes ---- */

typedef struct mixed_arg { kiln_tag tags[2]; kiln_pool *pool; int index; void *keep[64]; } mixed_arg;

static void frame_job(kiln_ctx *c, void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) cr_assert_not_null(kiln_frame_alloc(c, 3000, 0));
}

static void *mixed_work(void *arg) {
    mixed_arg *m = arg;
    kiln_ctx *c = kiln_attach(rt);
    kiln_arena *arena = kiln_arena_create(rt, "mixed");
    if (m->index == 1) kiln_arena_set_tag(arena, m->tags[0]);
    for (int i = 0; i < 2000; i++) {
        kiln_tag tag = i % 3 == 2 ? untagged : m->tags[i % 2];
        void *p = kiln_heap_alloc(c, tag, 8 + (size_t)(i * 37 + m->index * 101) % 3000, 0);
        if (i % 200 == 0) p = kiln_heap_realloc(c, p, 70000 + (size_t)i, 0);
        cr_assert_not_null(p);
        if (i % 31 == 0 && i / 31 < 64) m->keep[i / 31] = p;
        else kiln_heap_free(c, p);
        kiln_arena_alloc(arena, 100 + (size_t)i % 900, 16);
        void *o = kiln_pool_alloc(c, m->pool);
        if (i % 2) kiln_pool_free(c, m->pool, o);
        kiln_frame_alloc(c, 500, 0);
    }
    kiln_job job = { frame_job, NULL };
    kiln_counter done = { { 0, 0 } };
    kiln_run(c, &job, 1, &done);
    kiln_wait(c, &done);
    kiln_detach(c);
    /* the arena lives on, held by its tag */
    return NULL;
}

Test(heap, the_memory_adds_up_after_three_threads) {
    kiln_tag game = make_tag("Game", untagged, 0, KILN_BUDGET_WARN);
    kiln_tag ai = make_tag("Game/AI", game, 0, KILN_BUDGET_WARN);
    kiln_tag ui = make_tag("UI", untagged, 0, KILN_BUDGET_WARN);
    kiln_pool *pools[2] = { kiln_pool_create(rt, &(kiln_pool_desc){ .size = 96, .tag = ai }),
                            kiln_pool_create(rt, &(kiln_pool_desc){ .size = 200 }) };
    kiln_handles *table = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 32, .capacity = 1000, .tag = ui });
    cr_assert_not_null(table);
    static mixed_arg args[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (mixed_arg){ .tags = { i == 0 ? ai : game, ui }, .pool = pools[i % 2], .index = i };
        pthread_create(&t[i], NULL, mixed_work, &args[i]);
    }
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    kiln_frame_end(ctx);   /* the jobs' frame memory goes */
    kiln_frame_begin(ctx);
    kiln_memory_stats m;
    cr_assert(kiln_stats_memory(rt, &m));
    uint64_t sum = m.tagged + m.untagged + m.frame + m.heap_free + m.heap_kept + m.free_blocks;
    cr_expect_eq(sum, m.reserved, "reserved %llu; tagged %llu untagged %llu frame %llu heap_free %llu "
                 "heap_kept %llu free_blocks %llu", (unsigned long long)m.reserved,
                 (unsigned long long)m.tagged, (unsigned long long)m.untagged, (unsigned long long)m.frame,
                 (unsigned long long)m.heap_free, (unsigned long long)m.heap_kept,
                 (unsigned long long)m.free_blocks);
    cr_expect_gt(m.tagged, 0u);
    cr_expect_gt(m.untagged, 0u);
    cr_expect_gt(m.frame, 0u);
    cr_expect_gt(m.heap_free, 0u);
    /* Tagged is the roots' sum, children inside. */
    kiln_tag_stats g = tag_stats(game), u = tag_stats(ui), a = tag_stats(ai);
    cr_expect_eq(m.tagged, g.live_bytes + u.live_bytes);
    cr_expect_leq(a.live_bytes, g.live_bytes);
    /* After everything is freed and trimmed the heap holds nothing of the tags. */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 64; k++) kiln_heap_free(ctx, args[i].keep[k]);
    cr_assert(kiln_stats_memory(rt, &m));
    sum = m.tagged + m.untagged + m.frame + m.heap_free + m.heap_kept + m.free_blocks;
    cr_expect_eq(sum, m.reserved);
    kiln_handles_destroy(table);
}

/* Realloc growth under a REFUSE budget: the context's own leftover credit never refuses
 * it, and the headroom a growth takes is asked for only when it fits, so a realloc that
 * succeeds counts no refusal and leaves the frame's TAG_BUDGET_REFUSED for a real one. */
Test(heap, realloc_growth_under_a_refuse_budget) {
    kiln_tag t = make_tag("T", untagged, 1u << 20, KILN_BUDGET_REFUSE);
    void *v = kiln_heap_alloc(ctx, t, 16384, 0);
    v = kiln_heap_realloc(ctx, v, 20480, 0);   /* class to large: its slot becomes credit */
    cr_assert_not_null(v);
    void *w = kiln_heap_realloc(ctx, v, 1u << 20, 0);
    cr_expect_not_null(w, "the tag's only allocation, exactly its budget");
    kiln_heap_free(ctx, w ? w : v);
    cr_expect_eq(tag_stats(t).refusals, 0u);
    v = kiln_heap_alloc(ctx, t, 800000, 0);
    v = kiln_heap_realloc(ctx, v, 1000000, 0);
    cr_assert_not_null(v);
    cr_expect_eq(tag_stats(t).refusals, 0u, "the growth's headroom did not fit: not asked for");
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 0u);
    cr_expect_null(kiln_heap_alloc(ctx, t, 200000, 0));
    cr_expect_eq(count_items(rec, KILN_LOGITEM_TAG_BUDGET_REFUSED), 1u, "the real refusal is told");
    kiln_heap_free(ctx, v);
}

Test(heap, kept_mappings_serve_the_best_fit_and_stay_under_their_cap) {
    size_t sizes[] = { 100 << 10, 200 << 10, 400 << 10 };
    void *p[3];
    for (int i = 0; i < 3; i++) p[i] = kiln_heap_alloc(ctx, untagged, sizes[i], 0);
    size_t usable200 = kiln_heap_usable_size(p[1]);
    for (int i = 0; i < 3; i++) kiln_heap_free(ctx, p[i]);
    kiln_heap_stats s = heap_stats();
    cr_assert_eq(s.large_kept, 3u);
    uint64_t reused = s.large_reused;
    void *q = kiln_heap_alloc(ctx, untagged, 150 << 10, 0);   /* the 200 KiB one: the smallest that holds it */
    cr_assert_eq(q, p[1]);
    cr_assert_eq(kiln_heap_usable_size(q), usable200, "all of the mapping is usable");
    void *r = kiln_heap_alloc(ctx, untagged, 90 << 10, 0);    /* 100 KiB: within twice */
    cr_assert_eq(r, p[0]);
    void *t = kiln_heap_alloc(ctx, untagged, 150 << 10, 0);   /* 400 KiB is more than twice: fresh */
    cr_assert_neq(t, p[2]);
    cr_assert_eq(heap_stats().large_reused, reused + 2);
    kiln_heap_free(ctx, q);
    kiln_heap_free(ctx, r);
    kiln_heap_free(ctx, t);
    /* Three mappings of 30 MiB: together over the cap of 64 MiB, so the oldest goes. */
    void *big[3];
    for (int i = 0; i < 3; i++) big[i] = kiln_heap_alloc(ctx, untagged, (size_t)30 << 20, 0);
    for (int i = 0; i < 3; i++) kiln_heap_free(ctx, big[i]);
    s = heap_stats();
    cr_assert_leq(s.large_kept_bytes, (uint64_t)64 << 20, "kept %llu bytes", (unsigned long long)s.large_kept_bytes);
    cr_assert_leq(s.large_kept, (uint64_t)KILN_HEAP_KEPT_MAPPINGS);
    kiln_memory_stats m;
    kiln_stats_memory(rt, &m);
    cr_assert_eq(m.heap_kept, s.large_kept_bytes);
}

Test(heap, kept_mappings_grow_with_the_live_large_bytes) {
    /* 12 buffers of 20 MiB held (240 MiB live, untouched): the kept ones may hold half of
     * that, so four of 20 MiB freed are all kept (80 MiB, over the 64 MiB floor). */
    void *held[12], *churn[4];
    for (int i = 0; i < 12; i++) held[i] = kiln_heap_alloc(ctx, untagged, (size_t)20 << 20, 0);
    for (int i = 0; i < 4; i++) churn[i] = kiln_heap_alloc(ctx, untagged, (size_t)20 << 20, 0);
    for (int i = 0; i < 4; i++) kiln_heap_free(ctx, churn[i]);
    kiln_heap_stats s = heap_stats();
    cr_assert_eq(s.large_kept, 4u);
    cr_assert_gt(s.large_kept_bytes, (uint64_t)64 << 20);
    uint64_t reused = s.large_reused;
    void *again = kiln_heap_alloc(ctx, untagged, (size_t)18 << 20, 0);
    cr_assert_eq(heap_stats().large_reused, reused + 1, "served from a kept one");
    kiln_heap_free(ctx, again);
    for (int i = 0; i < 12; i++) kiln_heap_free(ctx, held[i]);
    s = heap_stats();   /* nothing live: back under the floor */
    cr_assert_leq(s.large_kept_bytes, (uint64_t)64 << 20, "kept %llu bytes", (unsigned long long)s.large_kept_bytes);
    /* The last live one too big to keep: its free still brings the kept ones down. */
    void *huge = kiln_heap_alloc(ctx, untagged, (size_t)600 << 20, 0);
    for (int i = 0; i < 4; i++) churn[i] = kiln_heap_alloc(ctx, untagged, (size_t)30 << 20, 0);
    for (int i = 0; i < 4; i++) kiln_heap_free(ctx, churn[i]);
    cr_assert_geq(heap_stats().large_kept_bytes, (uint64_t)120 << 20, "half of 600 MiB live keeps all four");
    kiln_heap_free(ctx, huge);
    s = heap_stats();
    cr_assert_leq(s.large_kept_bytes, (uint64_t)64 << 20, "kept %llu bytes with nothing live",
                  (unsigned long long)s.large_kept_bytes);
}
