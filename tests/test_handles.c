/* tests/test_handles.c — generational handle tables: desc defaults and refusals, alloc /
 * get / free round trips, zeroing, sizes and alignments, the zero handle, stale handles
 * and double frees, the reuse rule (no reuse before the frame end, FIFO after it, held
 * back by attached threads outside the frame clock until their quiescent point),
 * foreign and forged handles, the exact capacity and its warning per episode, retired
 * generations, typed handles, destroyed tables, the table limit, and handles allocated
 * and freed from jobs on several workers.
 *
 * The suite's runtime has no workers and its main context drives the frame clock: a
 * frame is open when a test starts, and next_frame() closes it and opens the next.
 * Criterion's assertions must run on the test's own thread, so jobs and helper threads
 * record what they found wrong and the test asserts afterwards. */
#define _DEFAULT_SOURCE   /* pthread barriers */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "recording_log.h"
#include "runtime/handle_reclaim.h"   /* the stall threshold */
#include "runtime/handles.h"   /* the generation limit, for retirement */

#define DEFAULT_ALIGN (_Alignof(max_align_t))
#define MAX_CAPACITY  16777215u

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

/* rt with this many workers (or KILN_NO_WORKERS), logging to rec; ctx attached, driving
 * the frame clock, with frame 1 open. */
static void start_runtime(uint32_t workers) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    rt = kiln_create(&desc);
    ctx = rt ? kiln_attach(rt) : NULL;
    cr_assert(rt && ctx, "no runtime with %u workers:%s", workers, recorded_summary(rec));
    cr_assert_eq(kiln_frame_begin(ctx), 1);
}

static void stop_runtime(void) {
    if (ctx) kiln_detach(ctx);
    if (rt) kiln_destroy(rt);
    ctx = NULL;
    rt = NULL;
}

static void setup(void) {
    rec = recording_log_new();
    start_runtime(KILN_NO_WORKERS);
}

static void teardown(void) {
    stop_runtime();
    recording_log_free(rec);
    rec = NULL;
}

/* The timeout only turns a deadlock into a failed test; nothing passes or fails by it. */
TestSuite(handles, .init = setup, .fini = teardown, .timeout = 120);

#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))
/* The messages but HANDLES_CAPACITY_NEAR, which small tables filled up also log. */
#define recorded_but_near() \
    (recorded_count(rec) - count_items(rec, KILN_LOGITEM_HANDLES_CAPACITY_NEAR))

/* ---- helpers ---- */

static void next_frame(void) {
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
}

static kiln_handles *create_table(const char *name, size_t item_size, size_t item_align,
                                  uint32_t capacity) {
    kiln_handles *t = kiln_handles_create(rt, &(kiln_handles_desc){
        .name = name, .item_size = item_size, .item_align = item_align, .capacity = capacity });
    cr_assert_not_null(t, "table '%s' (size %zu, align %zu, capacity %u) refused:%s",
                       name ? name : "(null)", item_size, item_align, capacity,
                       recorded_summary(rec));
    return t;
}

static kiln_handles_stats table_stats(kiln_handles *t) {
    kiln_handles_stats s;
    cr_assert(kiln_handles_stats_get(t, &s), "kiln_handles_stats_get failed");
    return s;
}

/* Calls the runtime refused as misuse so far. */
static uint64_t api_errors(void) {
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s), "kiln_stats_get failed");
    return s.api_errors;
}

/* An alloc that must succeed; the item's address in *item when item is not NULL. */
static kiln_handle alloc_ok(kiln_ctx *c, kiln_handles *t, void **item) {
    void *p = (void *)&p;   /* not NULL: the call must write it */
    kiln_handle h = kiln_handle_alloc(c, t, &p);
    cr_assert(!kiln_handle_is_null(h), "alloc refused:%s", recorded_summary(rec));
    cr_assert_not_null(p);
    cr_assert_eq(kiln_handle_get(t, h), p, "get returns the address alloc gave");
    cr_assert_eq(kiln_handle_generation(h) & 1, 1, "a live handle has an odd generation");
    if (item) *item = p;
    return h;
}

/* An alloc that must fail: {0} and *item set to NULL. */
static void alloc_refused(kiln_ctx *c, kiln_handles *t) {
    void *p = (void *)&p;
    kiln_handle h = kiln_handle_alloc(c, t, &p);
    cr_assert(kiln_handle_is_null(h), "alloc succeeded (index %u)", kiln_handle_index(h));
    cr_assert_null(p, "*item is NULL when the alloc fails");
}

/* Allocates until the table refuses; returns how many succeeded (into out, up to max). */
static size_t alloc_until_full(kiln_ctx *c, kiln_handles *t, kiln_handle *out, size_t max) {
    size_t n = 0;
    for (;;) {
        kiln_handle h = kiln_handle_alloc(c, t, NULL);
        if (kiln_handle_is_null(h)) return n;
        cr_assert_lt(n, max, "more than %zu handles", max);
        out[n++] = h;
    }
}

/* Allocates exactly n handles (into out), each of which must succeed. */
static void alloc_many(kiln_ctx *c, kiln_handles *t, kiln_handle *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = alloc_ok(c, t, NULL);
}

/* Frees n handles, each of which must be live. */
static void free_all(kiln_ctx *c, kiln_handles *t, const kiln_handle *hs, size_t n) {
    for (size_t i = 0; i < n; i++)
        cr_assert(kiln_handle_free(c, t, hs[i]), "free %zu refused:%s", i, recorded_summary(rec));
}

/* The table's allocs and frees are exactly these (live their difference, peak_live at
 * least live); returns all its figures. */
static kiln_handles_stats assert_counts(kiln_handles *t, uint64_t allocs, uint64_t frees) {
    kiln_handles_stats s = table_stats(t);
    cr_assert(s.allocs == allocs && s.frees == frees && s.live == allocs - frees,
              "table '%s': allocs %llu, frees %llu, live %llu; expected %llu, %llu, %llu", s.name,
              (unsigned long long)s.allocs, (unsigned long long)s.frees,
              (unsigned long long)s.live, (unsigned long long)allocs, (unsigned long long)frees,
              (unsigned long long)(allocs - frees));
    cr_assert_geq(s.peak_live, s.live, "table '%s'", s.name);
    cr_assert_leq(s.live + s.pending_reuse + s.retired_slots, s.capacity, "table '%s'", s.name);
    return s;
}

/* How many freed slots of the table wait for a frame end or a quiescent point. */
#define assert_pending(t, expected, why) \
    do { \
        uint64_t pending_ = table_stats(t).pending_reuse; \
        cr_assert_eq(pending_, (uint64_t)(expected), "pending_reuse %llu, expected %llu: %s", \
                     (unsigned long long)pending_, (unsigned long long)(expected), why); \
    } while (0)

static bool all_zero(const void *p, size_t size) {
    const unsigned char *bytes = p;
    for (size_t i = 0; i < size; i++)
        if (bytes[i]) return false;
    return true;
}

static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

/* Whether the index of h is one of the n handles' indices. */
static bool index_among(kiln_handle h, const kiln_handle *hs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (kiln_handle_index(hs[i]) == kiln_handle_index(h)) return true;
    return false;
}

static int compare_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* All n handles name distinct slots (sorts a copy of the indices). */
static bool distinct_indices(const kiln_handle *hs, size_t n) {
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    cr_assert_not_null(idx);
    for (size_t i = 0; i < n; i++) idx[i] = kiln_handle_index(hs[i]);
    qsort(idx, n, sizeof *idx, compare_u32);
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++) ok = idx[i] != idx[i - 1];
    free(idx);
    return ok;
}

/* splitmix64's finaliser: well-spread bits from a counter, the same in every build. */
static uint64_t mixed_bits(uint64_t i) {
    uint64_t x = i + 0x9e3779b97f4a7c15ull;
    x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ x >> 27) * 0x94d049bb133111ebull;
    return x ^ x >> 31;
}

/* ---- an attached thread outside the frame clock, driven step by step ---- */

typedef enum outside_cmd {
    OUTSIDE_QUIESCENT, OUTSIDE_RESET_ARENA, OUTSIDE_DETACH, OUTSIDE_ALLOC, OUTSIDE_FREE,
    OUTSIDE_GET
} outside_cmd;

typedef struct outside_thread {
    pthread_t         tid;
    pthread_barrier_t go, done;
    kiln_ctx         *ctx;
    bool              detached;
    outside_cmd       cmd;          /* written by main before go, read after */
    kiln_handles     *table;
    kiln_handle       handle;       /* OUTSIDE_ALLOC's result, OUTSIDE_FREE's argument */
    bool              freed;        /* OUTSIDE_FREE's result */
    void             *got;          /* OUTSIDE_GET's result */
} outside_thread;

static void *outside_main(void *arg) {
    outside_thread *t = arg;
    t->ctx = kiln_attach(rt);
    pthread_barrier_wait(&t->done);
    bool attached = t->ctx != NULL;
    while (attached) {
        pthread_barrier_wait(&t->go);
        switch (t->cmd) {
        case OUTSIDE_QUIESCENT: kiln_handles_quiescent(t->ctx); break;
        case OUTSIDE_RESET_ARENA: kiln_arena_reset(kiln_frame_arena(t->ctx)); break;
        case OUTSIDE_DETACH: kiln_detach(t->ctx); attached = false; break;
        case OUTSIDE_ALLOC: t->handle = kiln_handle_alloc(t->ctx, t->table, NULL); break;
        case OUTSIDE_FREE: t->freed = kiln_handle_free(t->ctx, t->table, t->handle); break;
        case OUTSIDE_GET: t->got = kiln_handle_get(t->table, t->handle); break;
        }
        pthread_barrier_wait(&t->done);
    }
    return NULL;
}

/* Starts the thread and returns once it is attached. */
static void outside_start(outside_thread *t) {
    memset(t, 0, sizeof *t);
    pthread_barrier_init(&t->go, NULL, 2);
    pthread_barrier_init(&t->done, NULL, 2);
    cr_assert_eq(pthread_create(&t->tid, NULL, outside_main, t), 0);
    pthread_barrier_wait(&t->done);
    cr_assert_not_null(t->ctx, "the outside thread could not attach:%s", recorded_summary(rec));
}

/* Runs one command on the thread and returns when it is done. */
static void outside_do(outside_thread *t, outside_cmd cmd) {
    cr_assert(!t->detached);
    t->cmd = cmd;
    pthread_barrier_wait(&t->go);
    pthread_barrier_wait(&t->done);
    if (cmd == OUTSIDE_DETACH) t->detached = true;
}

static void outside_stop(outside_thread *t) {
    if (!t->detached) outside_do(t, OUTSIDE_DETACH);
    pthread_join(t->tid, NULL);
    pthread_barrier_destroy(&t->go);
    pthread_barrier_destroy(&t->done);
}

/* ---- creation, defaults, statistics ---- */

Test(handles, create_fills_defaults) {
    kiln_handles *plain = kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 24 });
    char long_name[100];
    memset(long_name, 'h', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    kiln_handles *longer = kiln_handles_create(rt, &(kiln_handles_desc){
        .name = long_name, .item_size = 1, .capacity = 7 });
    cr_assert(plain && longer, "log:%s", recorded_summary(rec));

    kiln_handles_stats s = table_stats(plain);
    cr_assert_str_eq(s.name, "handles", "a NULL name means \"handles\"");
    cr_assert_eq(s.item_size, 24);
    cr_assert_eq(s.capacity, 65536, "capacity 0 means 65536");
    cr_assert_eq(s.live + s.peak_live + s.allocs + s.frees + s.failures + s.stale_lookups +
                 s.double_frees + s.foreign_handles + s.retired_slots + s.pending_reuse, 0,
                 "a new table has no figures");
    s = table_stats(longer);
    cr_assert_eq(strlen(s.name), 47, "at most 47 bytes of the name are kept");
    cr_assert_eq(strncmp(s.name, long_name, 47), 0);
    cr_assert_eq(s.capacity, 7);
    cr_assert_eq(s.item_size, 1);

    void *item;
    alloc_ok(ctx, plain, &item);
    cr_assert(is_aligned(item, DEFAULT_ALIGN), "align 0 means alignof(max_align_t)");
    kiln_handles_destroy(plain);
    kiln_handles_destroy(longer);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "'handles'"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
}

/* kiln_stats_handles lists exactly the n named tables, in this order; returns the figures
 * of the first 8. */
static const kiln_handles_stats *assert_listed(const char *const *names, size_t n) {
    static kiln_handles_stats out[8];
    memset(out, 0xAB, sizeof out);
    cr_assert_eq(kiln_stats_handles(rt, out, 8), n);
    cr_assert_eq(kiln_stats_handles(rt, NULL, 0), n, "the count without out");
    for (size_t i = 0; i < n && i < 8; i++)
        cr_assert_str_eq(out[i].name, names[i], "table %zu", i);
    return out;
}

/* Live tables are listed in slot order; the count may exceed cap. */
Test(handles, stats_handles_lists_live_tables) {
    const char *const names[] = { "a", "b", "c" };
    kiln_handles *t[3];
    for (uint32_t i = 0; i < 3; i++) t[i] = create_table(names[i], 8u << i, 0, 10 * (i + 1));
    kiln_handle h = alloc_ok(ctx, t[1], NULL);
    const kiln_handles_stats *out = assert_listed(names, 3);
    cr_assert_eq(out[1].live, 1);
    cr_assert_eq(out[1].allocs, 1);
    cr_assert_eq(out[2].item_size, 32);
    cr_assert_eq(out[2].capacity, 30);
    kiln_handles_stats one[2];
    memset(one, 0, sizeof one);
    cr_assert_eq(kiln_stats_handles(rt, one, 1), 3, "the count, even when cap is smaller");
    cr_assert_str_eq(one[0].name, "a");
    cr_assert_str_eq(one[1].name, "", "nothing beyond cap is written");

    kiln_stats all;
    cr_assert(kiln_stats_get(rt, &all));
    cr_assert_eq(all.handle_tables, 3, "kiln_stats counts the live tables");
    kiln_handles_destroy(t[0]);
    assert_listed(names + 1, 2);   /* a destroyed table is not listed */
    cr_assert(kiln_stats_get(rt, &all));
    cr_assert_eq(all.handle_tables, 2);
    cr_assert(kiln_handle_free(ctx, t[1], h));
    kiln_handles_destroy(t[1]);
    kiln_handles_destroy(t[2]);
    assert_listed(NULL, 0);
    assert_no_log();
}

/* ---- alloc, get, free ---- */

Test(handles, alloc_get_free_round_trip) {
    enum { N = 10, SIZE = 40 };
    kiln_handles *t = create_table("enemies", SIZE, 0, 100);
    kiln_handle h[N];
    void *items[N];
    for (int i = 0; i < N; i++) {
        h[i] = alloc_ok(ctx, t, &items[i]);
        fill_pattern(items[i], SIZE, (uint32_t)i);
    }
    cr_assert(distinct_indices(h, N));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(kiln_handle_get(t, h[i]), items[i], "handle %d", i);
        cr_assert(check_pattern(items[i], SIZE, (uint32_t)i), "item %d overwritten", i);
        for (int j = 0; j < i; j++) {
            cr_assert(!kiln_handle_equal(h[i], h[j]));
            uintptr_t a = (uintptr_t)items[i], b = (uintptr_t)items[j];
            cr_assert(a >= b + SIZE || b >= a + SIZE, "items %d and %d overlap", i, j);
        }
    }
    kiln_handles_stats s = assert_counts(t, N, 0);
    cr_assert_eq(s.peak_live, N, "a stats read counts for the peak");

    /* Free one: only it goes stale; an alloc without an item pointer works too. */
    cr_assert(kiln_handle_free(ctx, t, h[4]));
    cr_assert_null(kiln_handle_get(t, h[4]));
    for (int i = 0; i < N; i++)
        if (i != 4) cr_assert_eq(kiln_handle_get(t, h[i]), items[i], "handle %d", i);
    kiln_handle extra = kiln_handle_alloc(ctx, t, NULL);
    cr_assert(!kiln_handle_is_null(extra));
    cr_assert_not_null(kiln_handle_get(t, extra));
    cr_assert(kiln_handle_free(ctx, t, extra));
    for (int i = 0; i < N; i++)
        if (i != 4) cr_assert(kiln_handle_free(ctx, t, h[i]), "handle %d", i);
    s = assert_counts(t, N + 1, N + 1);
    cr_assert_eq(s.peak_live, N, "the peak was read with %d live", N);
    assert_pending(t, N + 1, "every freed slot waits for the frame end");
    cr_assert_eq(s.stale_lookups, 1);
    cr_assert_eq(s.double_frees + s.foreign_handles + s.failures + s.retired_slots, 0);
    next_frame();
    s = table_stats(t);
    assert_pending(t, 0, "the frame end released them");
    assert_counts(t, N + 1, N + 1);
    kiln_handles_destroy(t);
    assert_no_log();
}

/* The header: peak_live is "the most live seen at a frame end or a stats read". 100
 * live at a frame end count; a burst allocated and freed inside one frame does not (an
 * exact peak would need a shared counter on every alloc). */
Test(handles, peak_live_is_sampled_at_frame_ends) {
    enum { N = 100 };
    kiln_handles *t = create_table("burst", 8, 0, 1000);
    kiln_handle h[N];
    alloc_many(ctx, t, h, N);
    next_frame();                 /* seen here: 100 live */
    free_all(ctx, t, h, N);
    alloc_many(ctx, t, h, N / 2);
    free_all(ctx, t, h, N / 2);   /* 50 live inside the frame: below the peak anyway */
    next_frame();
    kiln_handles_stats s = assert_counts(t, N + N / 2, N + N / 2);
    cr_assert_eq(s.peak_live, N, "peak_live %llu", (unsigned long long)s.peak_live);
    kiln_handles_destroy(t);
    assert_no_log();
}

/* A reused slot comes back zeroed, whatever the previous item left in it. */
Test(handles, items_are_zeroed_on_alloc) {
    enum { SIZE = 100 };
    kiln_handles *t = create_table("one", SIZE, 0, 1);
    void *item;
    kiln_handle first = alloc_ok(ctx, t, &item);
    cr_assert(all_zero(item, SIZE), "a fresh item is zeroed");
    memset(item, 0xFF, SIZE);
    cr_assert(kiln_handle_free(ctx, t, first));
    next_frame();
    void *again;
    kiln_handle second = alloc_ok(ctx, t, &again);
    cr_assert_eq(kiln_handle_index(second), kiln_handle_index(first), "capacity 1: the same slot");
    cr_assert_eq(again, item, "the same slot, the same memory");
    cr_assert_neq(kiln_handle_generation(second), kiln_handle_generation(first));
    cr_assert(all_zero(again, SIZE), "a reused item is zeroed");
    cr_assert_null(kiln_handle_get(t, first), "the old handle stays stale");
    cr_assert(kiln_handle_free(ctx, t, second));
    kiln_handles_destroy(t);
    assert_no_log();
}

/* Allocates n items (handles into h), frees them all, writes byte over every item through
 * the pointers (still valid until the frame end: a late writer is allowed) and ends the
 * frame, so the slots are reusable. */
static void fill_free_and_scribble(kiln_handles *t, kiln_handle *h, size_t n, size_t size, int byte) {
    void **items = calloc(n, sizeof *items);
    cr_assert_not_null(items);
    for (size_t i = 0; i < n; i++) h[i] = alloc_ok(ctx, t, &items[i]);
    free_all(ctx, t, h, n);
    for (size_t i = 0; i < n; i++) memset(items[i], byte, size);
    free(items);
    next_frame();
}

/* Items are zeroed when a context's cache takes their slots from the table (a batch of
 * 32), not when the slot is handed out: whatever was written into an item through a
 * pointer still valid until the frame end, after its free, must be gone at its reuse,
 * in every slot of every batch, for items of every size class of the zeroing. */
Test(handles, items_written_after_their_free_are_zero_when_reused) {
    enum { CAP = 96 };   /* three batches */
    const size_t sizes[] = { 1, 64, 100, 4096, 70000 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t size = sizes[k];
        kiln_handles *t = create_table("rezero", size, 0, CAP);
        static kiln_handle h[CAP];
        fill_free_and_scribble(t, h, CAP, size, 0xA5);
        for (int i = 0; i < CAP; i++) {
            void *item;
            h[i] = alloc_ok(ctx, t, &item);
            cr_assert(all_zero(item, size), "size %zu: reused item %d is not zero", size, i);
            memset(item, 0x5A, size);
        }
        /* Freed again and reused once more, with a frame end between each. */
        free_all(ctx, t, h, CAP);
        next_frame();
        for (int i = 0; i < CAP; i++) {
            void *item;
            h[i] = alloc_ok(ctx, t, &item);
            cr_assert(all_zero(item, size), "size %zu: item %d, second reuse", size, i);
        }
        free_all(ctx, t, h, CAP);
        kiln_handles_destroy(t);
    }
    cr_assert_eq(recorded_but_near(), 0, "log:%s", recorded_summary(rec));
}

/* A context's cache gives back the slots it held ready but never handed out when it is
 * flushed (its thread detaches); another context that takes them later gets zero items
 * too, though they were zeroed once already. */
static void *alloc_one_and_detach(void *arg) {
    kiln_handles *t = arg;
    kiln_ctx *c = kiln_attach(rt);
    if (!c) return NULL;
    kiln_handle h = kiln_handle_alloc(c, t, NULL);
    kiln_detach(c);
    return (void *)(uintptr_t)h.bits;
}

Test(handles, slots_a_detached_cache_held_are_zero_when_reused) {
    enum { CAP = 64, SIZE = 48 };
    kiln_handles *t = create_table("flushed", SIZE, 0, CAP);
    static kiln_handle h[CAP];
    fill_free_and_scribble(t, h, CAP, SIZE, 0xC3);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, alloc_one_and_detach, t), 0);
    void *bits;
    pthread_join(thread, &bits);
    cr_assert_neq((uintptr_t)bits, 0, "the other thread's alloc:%s", recorded_summary(rec));
    /* The other thread took a batch of the slots this context freed, handed one out
     * (left live) and gave the rest back unused. */
    size_t n = 0;
    for (; n < CAP - 1; n++) {
        void *item;
        h[n] = alloc_ok(ctx, t, &item);
        cr_assert(all_zero(item, SIZE), "item %zu is not zero", n);
    }
    alloc_refused(ctx, t);
    free_all(ctx, t, h, n);
    kiln_handles_destroy(t);
}

Test(handles, item_align_and_size_are_honoured) {
    enum { PER_TABLE = 3 };
    const size_t sizes[] = { 1, 3, 17, 100, 4095, 4097, (size_t)1 << 20 };
    for (size_t align = 1; align <= 4096; align *= 2) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t size = sizes[k];
            kiln_handles *t = create_table("aligned", size, align, PER_TABLE);
            kiln_handles_stats s = table_stats(t);
            cr_assert_eq(s.item_size, size);
            void *items[PER_TABLE];
            kiln_handle h[PER_TABLE];
            for (int i = 0; i < PER_TABLE; i++) {
                h[i] = alloc_ok(ctx, t, &items[i]);
                cr_assert(is_aligned(items[i], align), "size %zu align %zu: %p", size, align,
                          items[i]);
                fill_pattern(items[i], size, (uint32_t)(i + 7 * k));
            }
            for (int i = 0; i < PER_TABLE; i++)
                cr_assert(check_pattern(items[i], size, (uint32_t)(i + 7 * k)),
                          "size %zu align %zu: item %d overwritten by its neighbours", size,
                          align, i);
            alloc_refused(ctx, t);
            free_all(ctx, t, h, PER_TABLE);
            kiln_handles_destroy(t);
        }
    }
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 13 * 7, "one per table:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 13 * 7, "log:%s", recorded_summary(rec));
}

Test(handles, zero_handle_is_never_valid) {
    kiln_handles *t = create_table("zero", 16, 0, 4);
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ 0 }), "on an empty table");
    kiln_handle h[4];
    cr_assert_eq(alloc_until_full(ctx, t, h, 4), 4);
    for (int i = 0; i < 4; i++) cr_assert(!kiln_handle_is_null(h[i]));
    recording_log_clear(rec);
    cr_assert_null(kiln_handle_get(t, (kiln_handle){ 0 }), "with every slot live");
    cr_assert(!kiln_handle_free(ctx, t, (kiln_handle){ 0 }));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLE_NULL, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLE_NULL, "'zero'"), 1, "names the table");
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.stale_lookups, 2, "a zero handle's get counts as stale");
    cr_assert_eq(s.foreign_handles, 1, "its free counts as forged");
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 4);
    for (int i = 0; i < 4; i++) cr_assert_not_null(kiln_handle_get(t, h[i]));
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
}

/* ---- stale handles and the reuse rule ---- */

Test(handles, freed_handle_is_stale_at_once) {
    kiln_handles *t = create_table("props", 32, 0, 16);
    void *item;
    kiln_handle h = alloc_ok(ctx, t, &item);
    kiln_handle copy = h;
    cr_assert(kiln_handle_free(ctx, t, h));
    cr_assert_null(kiln_handle_get(t, copy), "every copy is stale at once");
    assert_no_log();
    cr_assert(!kiln_handle_free(ctx, t, copy));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE, "'props'"), 1, "names the table");
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.double_frees, 1);
    cr_assert_eq(s.frees, 1, "the refused free is not counted as a free");
    cr_assert_eq(s.stale_lookups, 1);
    cr_assert_eq(s.foreign_handles, 0);
    cr_assert_eq(api_errors(), 1, "a double free is misuse");
    kiln_handles_destroy(t);
}

/* Two threads free the same handles at the same time: exactly one free of each wins. */
typedef struct racing_freer {
    kiln_handles      *table;
    const kiln_handle *handles;
    size_t             count;
    pthread_barrier_t *start;
    size_t             won;
    bool               attached;
} racing_freer;

static void *race_to_free(void *arg) {
    racing_freer *f = arg;
    kiln_ctx *c = kiln_attach(rt);
    f->attached = c != NULL;
    pthread_barrier_wait(f->start);
    for (size_t i = 0; c && i < f->count; i++) f->won += kiln_handle_free(c, f->table, f->handles[i]);
    kiln_detach(c);
    return NULL;
}

Test(handles, racing_frees_of_one_handle_succeed_once) {
    enum { N = 1000 };   /* one logged item per lost race: within what the recorder keeps */
    kiln_handles *t = create_table("contested", 8, 0, N);
    static kiln_handle h[N];
    alloc_many(ctx, t, h, N);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racing_freer f[2] = { { t, h, N, &start, 0, false }, { t, h, N, &start, 0, false } };
    pthread_t tid[2];
    for (int i = 0; i < 2; i++) pthread_create(&tid[i], NULL, race_to_free, &f[i]);
    for (int i = 0; i < 2; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    cr_assert(f[0].attached && f[1].attached);
    cr_assert_eq(f[0].won + f[1].won, N, "%zu + %zu frees won", f[0].won, f[1].won);
    kiln_handles_stats s = assert_counts(t, N, N);
    cr_assert_eq(s.double_frees, N);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE), N, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), N);
    for (int i = 0; i < N; i++) cr_assert_null(kiln_handle_get(t, h[i]));
    kiln_handles_destroy(t);
}

Test(handles, freed_slot_is_not_reused_before_the_frame_end) {
    enum { MORE = 5000 };
    kiln_handles *t = create_table("shots", 16, 0, 0);
    kiln_handle freed = alloc_ok(ctx, t, NULL);
    cr_assert(kiln_handle_free(ctx, t, freed));
    static kiln_handle more[MORE];
    for (int i = 0; i < MORE; i++) {
        more[i] = alloc_ok(ctx, t, NULL);
        cr_assert_neq(kiln_handle_index(more[i]), kiln_handle_index(freed),
                      "alloc %d reused the slot freed in this frame", i);
    }
    assert_pending(t, 1, "freed in this frame");
    /* Freeing more of them in this frame does not make the first one reusable either. */
    free_all(ctx, t, more, 100);
    for (int i = 0; i < 1000; i++) {
        kiln_handle h = alloc_ok(ctx, t, NULL);
        cr_assert(!index_among(h, more, 100) && kiln_handle_index(h) != kiln_handle_index(freed),
                  "alloc %d reused a slot freed in this frame", i);
    }
    kiln_handles_stats s = table_stats(t);
    assert_pending(t, 101, "freed in this frame");
    cr_assert_eq(s.live, MORE - 100 + 1000);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "5900"), 1, "log:%s",
                 recorded_summary(rec));
}

/* A full table: frees in this frame do not help; after the frame end the freed slots
 * come back oldest first. */
Test(handles, freed_slots_are_reused_oldest_first_after_the_frame_end) {
    enum { CAP = 100 };
    kiln_handles *t = create_table("fifo", 24, 0, CAP);
    kiln_handle h[CAP];
    cr_assert_eq(alloc_until_full(ctx, t, h, CAP), CAP);
    const int order[] = { 10, 50, 3, 99, 0 };
    enum { FREED = sizeof order / sizeof order[0] };
    for (int i = 0; i < FREED; i++) cr_assert(kiln_handle_free(ctx, t, h[order[i]]));
    alloc_refused(ctx, t);
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.live, CAP - FREED, "full while live < capacity");
    assert_pending(t, FREED, "freed in this frame");
    next_frame();
    assert_pending(t, 0, "the frame end released them");
    for (int i = 0; i < FREED; i++) {
        kiln_handle again = alloc_ok(ctx, t, NULL);
        cr_assert_eq(kiln_handle_index(again), kiln_handle_index(h[order[i]]),
                     "reuse %d: slot %u, expected slot %u (freed %d-th)", i,
                     kiln_handle_index(again), kiln_handle_index(h[order[i]]), i);
        cr_assert_null(kiln_handle_get(t, h[order[i]]), "the old handle stays stale");
        h[order[i]] = again;
    }
    alloc_refused(ctx, t);
    cr_assert_eq(table_stats(t).failures, 3, "full before the frees, after them, and now");
    free_all(ctx, t, h, CAP);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_but_near(), 2, "log:%s", recorded_summary(rec));
}

/* Another thread frees the item while this one holds a pointer from get: the bytes stay
 * as they were until the frame end, whatever is allocated meanwhile. */
Test(handles, pointer_survives_another_threads_free_until_frame_end) {
    enum { SIZE = 256, MORE = 300 };
    kiln_handles *t = create_table("targets", SIZE, 0, 64);
    void *item;
    kiln_handle h = alloc_ok(ctx, t, &item);
    fill_pattern(item, SIZE, 42);
    const void *held = kiln_handle_get(t, h);
    cr_assert_eq(held, item);

    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    other.table = t;
    other.handle = h;
    outside_do(&other, OUTSIDE_FREE);
    cr_assert(other.freed, "the other thread's free:%s", recorded_summary(rec));
    outside_do(&other, OUTSIDE_GET);
    cr_assert_null(other.got, "stale for the freeing thread");
    outside_stop(&other);
    cr_assert_null(kiln_handle_get(t, h), "stale for this thread");

    kiln_handle h2[64];
    size_t n = alloc_until_full(ctx, t, h2, 63);
    cr_assert_eq(n, 63, "every other slot");
    for (size_t i = 0; i < n; i++) {
        void *p = kiln_handle_get(t, h2[i]);
        cr_assert_neq(p, held);
        memset(p, 0x5A, SIZE);
    }
    cr_assert(check_pattern(held, SIZE, 42), "the freed item's bytes changed before frame end");
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.frees, 1);
    assert_pending(t, 1, "freed by the other thread in this frame");
    free_all(ctx, t, h2, n);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_but_near(), 1, "log:%s", recorded_summary(rec));
}

/* ---- attached threads outside the frame clock ---- */

/* A table of capacity 4, full, with one slot freed while `other` is attached and has not
 * passed a quiescent point since: the slot stays held across frame ends. Returns the
 * freed handle; h holds the live ones (and the freed one at h[1]). */
static kiln_handle fill_and_free_one(kiln_handles *t, kiln_handle h[4]) {
    cr_assert_eq(alloc_until_full(ctx, t, h, 4), 4);
    cr_assert(kiln_handle_free(ctx, t, h[1]));
    for (int frame = 0; frame < 3; frame++) {
        next_frame();
        alloc_refused(ctx, t);
        assert_pending(t, 1, "held back by the outside thread");
    }
    return h[1];
}

/* After the thread's quiescent point (of the given kind) and one more frame end, the
 * held slot is reused. */
static void check_quiescent_point_releases(outside_cmd point) {
    kiln_handles *t = create_table("held", 8, 0, 4);
    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    kiln_handle h[4];
    kiln_handle freed = fill_and_free_one(t, h);
    outside_do(&other, point);
    next_frame();
    assert_pending(t, 0, "the frame end released them");
    kiln_handle again = alloc_ok(ctx, t, NULL);
    cr_assert_eq(kiln_handle_index(again), kiln_handle_index(freed));
    cr_assert_null(kiln_handle_get(t, freed));
    h[1] = again;
    alloc_refused(ctx, t);
    outside_stop(&other);
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_RECLAIM_STALLED), 0, "a short stall is not logged");
}

Test(handles, outside_thread_quiescent_call_releases_freed_slots) {
    check_quiescent_point_releases(OUTSIDE_QUIESCENT);
}

Test(handles, outside_thread_arena_reset_releases_freed_slots) {
    check_quiescent_point_releases(OUTSIDE_RESET_ARENA);
}

Test(handles, outside_thread_detach_releases_freed_slots) {
    check_quiescent_point_releases(OUTSIDE_DETACH);
}

/* A background job may run across frame ends: while it runs, the slots freed after it
 * started stay held (its worker counts as a thread outside the frame clock), and the
 * pointer it got keeps reading the item; once it returns, the next frame end frees them. */
typedef struct background_reader {
    kiln_handles    *table;
    kiln_handle      handle;
    _Atomic int      stage;     /* 1: got the pointer; 2: main freed the handle; 3: done */
    _Atomic uint64_t seen;      /* what the job read through its pointer after the free */
} background_reader;

static void read_in_background(kiln_ctx *job_ctx, void *arg) {
    (void)job_ctx;
    background_reader *r = arg;
    uint64_t *item = kiln_handle_get(r->table, r->handle);
    atomic_store(&r->stage, 1);
    while (atomic_load(&r->stage) != 2) sched_yield();
    atomic_store(&r->seen, item ? *item : 0);
    atomic_store(&r->stage, 3);
}

Test(handles, background_job_holds_freed_slots_until_it_returns) {
    stop_runtime();
    start_runtime(1);
    kiln_handles *t = create_table("streamed", 8, 0, 4);
    kiln_handle h[4];
    cr_assert_eq(alloc_until_full(ctx, t, h, 4), 4);
    *(uint64_t *)kiln_handle_get(t, h[1]) = 0x5eed;
    static background_reader reader;   /* static: outlives the frame if an assertion fails */
    reader = (background_reader){ .table = t, .handle = h[1] };
    kiln_counter done = { 0 };
    kiln_run_ex(ctx, &(kiln_job){ read_in_background, &reader }, 1, &done,
                &(kiln_run_desc){ .background = true });
    while (atomic_load(&reader.stage) != 1) sched_yield();
    cr_assert(kiln_handle_free(ctx, t, h[1]));
    for (int frame = 0; frame < 3; frame++) {
        next_frame();
        alloc_refused(ctx, t);   /* the job may still read the item */
        assert_pending(t, 1, "held back by the background job");
    }
    atomic_store(&reader.stage, 2);
    kiln_wait(ctx, &done);
    cr_assert_eq(atomic_load(&reader.seen), 0x5eed, "the item kept its contents for the job");
    next_frame();
    assert_pending(t, 0, "the job returned before this frame end");
    kiln_handle again = alloc_ok(ctx, t, NULL);
    cr_assert_eq(kiln_handle_index(again), kiln_handle_index(h[1]));
    h[1] = again;
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
}

/* KILN_DEBUG_SITES: destroy lists the items still live grouped by the site that
 * allocated them, most first; a typed table records the site of name##_alloc_at. */
struct spawn { int kind; };
KILN_HANDLE_TYPE(spawn, struct spawn)

Test(handles, destroy_lists_live_items_by_allocation_site) {
    stop_runtime();
    kiln_desc desc = recording_desc(rec);
    desc.debug = KILN_DEBUG_SITES;
    rt = kiln_create(&desc);
    ctx = kiln_attach(rt);
    cr_assert(rt && ctx);
    kiln_handles *t = create_table("tracked", 8, 0, 64);
    for (int i = 0; i < 3; i++) kiln_handle_alloc_at(ctx, t, NULL, "spawner.c", 10);
    kiln_handle gone = kiln_handle_alloc_at(ctx, t, NULL, "spawner.c", 10);
    cr_assert(kiln_handle_free(ctx, t, gone), "a freed item is no leak");
    kiln_handle_alloc_at(ctx, t, NULL, "boss.c", 77);
    kiln_handle_alloc(ctx, t, NULL);   /* no site */
    spawn_table typed = { t };
    spawn_alloc_at(ctx, typed, NULL, "typed.c", 5);
    recording_log_clear(rec);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "6 live items"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_LEAK_SITE), 4, "one per site:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_LEAK_SITE, "spawner.c:10"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_LEAK_SITE, "3 items"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_LEAK_SITE, "boss.c:77"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_LEAK_SITE, "typed.c:5"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_LEAK_SITE, "'tracked'"), 4, "names the table");
    /* the biggest site first */
    cr_assert(strstr(rec->messages[1].text, "spawner.c:10") != NULL, "first: %s",
              rec->messages[1].text);
}

/* Without the bit, the _at call is the plain alloc and destroy lists no sites. */
Test(handles, sites_are_not_listed_without_the_debug_bit) {
    kiln_handles *t = create_table("untracked", 8, 0, 8);
    kiln_handle_alloc_at(ctx, t, NULL, "spawner.c", 10);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_LEAK_SITE), 0, "log:%s", recorded_summary(rec));
}

/* A quiescent point before the free does not count: it must come after. */
Test(handles, quiescent_point_before_the_free_does_not_release) {
    kiln_handles *t = create_table("early", 8, 0, 4);
    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    outside_do(&other, OUTSIDE_QUIESCENT);
    kiln_handle h[4];
    fill_and_free_one(t, h);
    outside_stop(&other);
    next_frame();
    kiln_handle again = alloc_ok(ctx, t, NULL);
    cr_assert_eq(kiln_handle_index(again), kiln_handle_index(h[1]));
    h[1] = again;
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
}

/* Frame ends an outside thread may go without a quiescent point before the stall is
 * logged. */
#define STALL_WARN_FRAMES ((int)KILN_HANDLES_STALL_WARN_FRAMES)

static size_t stall_warnings(void) { return count_items(rec, KILN_LOGITEM_HANDLES_RECLAIM_STALLED); }

/* A thread that never passes a quiescent point is warned about once per stall, when the
 * stall reaches the threshold; after its quiescent point a new stall warns again. */
Test(handles, stalled_outside_thread_is_warned_once_per_stall) {
    kiln_handles *t = create_table("stalled", 8, 0, 4);
    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    kiln_handle h[4];
    fill_and_free_one(t, h);   /* three frame ends */
    for (int frame = 3; frame < STALL_WARN_FRAMES - 1; frame++) next_frame();
    cr_assert_eq(stall_warnings(), 0, "%d frames are not a stall yet:%s", STALL_WARN_FRAMES - 1,
                 recorded_summary(rec));
    next_frame();
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_RECLAIM_STALLED, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    for (int frame = 0; frame < 2 * STALL_WARN_FRAMES; frame++) next_frame();
    cr_assert_eq(stall_warnings(), 1, "one warning per stall");
    alloc_refused(ctx, t);
    assert_pending(t, 1, "still held back");

    outside_do(&other, OUTSIDE_QUIESCENT);
    next_frame();
    h[1] = alloc_ok(ctx, t, NULL);
    for (int frame = 0; frame < STALL_WARN_FRAMES; frame++) next_frame();
    cr_assert_eq(stall_warnings(), 2, "a new stall warns again:%s", recorded_summary(rec));
    outside_stop(&other);
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
}

/* A thread with a quiescent point in every frame never stalls reuse for long, and is
 * never warned about. */
Test(handles, outside_thread_quiescent_every_frame_is_not_warned) {
    enum { FRAMES = 3 * STALL_WARN_FRAMES };
    kiln_handles *t = create_table("steady", 8, 0, 4);
    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    kiln_handle h[4];
    alloc_many(ctx, t, h, 4);
    size_t reused = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        cr_assert(kiln_handle_free(ctx, t, h[frame % 4]));
        outside_do(&other, OUTSIDE_QUIESCENT);
        next_frame();
        outside_do(&other, OUTSIDE_QUIESCENT);
        next_frame();
        h[frame % 4] = alloc_ok(ctx, t, NULL);
        reused++;
    }
    cr_assert_eq(reused, FRAMES);
    cr_assert_eq(stall_warnings(), 0, "log:%s", recorded_summary(rec));
    assert_counts(t, 4 + FRAMES, FRAMES);
    outside_stop(&other);
    free_all(ctx, t, h, 4);
    kiln_handles_destroy(t);
    cr_assert_eq(recorded_but_near(), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- foreign and forged handles ---- */

Test(handles, handle_of_another_table_is_refused) {
    kiln_handles *a = create_table("alpha", 16, 0, 8);
    kiln_handles *b = create_table("beta", 16, 0, 8);
    /* Both tables have a live item in the same slot with the same generation: only the
     * table tag tells the handles apart. */
    kiln_handle ha = alloc_ok(ctx, a, NULL);
    void *item_b;
    kiln_handle hb = alloc_ok(ctx, b, &item_b);
    cr_assert_eq(kiln_handle_index(ha), kiln_handle_index(hb));
    cr_assert_eq(kiln_handle_generation(ha), kiln_handle_generation(hb));
    cr_assert(!kiln_handle_equal(ha, hb), "the tags differ");

    cr_assert_null(kiln_handle_get(b, ha));
    cr_assert(!kiln_handle_free(ctx, b, ha));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLE_FOREIGN, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLE_FOREIGN, "'beta'"), 1, "names the table:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    kiln_handles_stats s = table_stats(b);
    cr_assert_eq(s.foreign_handles, 2, "the get and the free");
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 1);
    cr_assert_eq(s.stale_lookups + s.double_frees, 0);
    cr_assert_eq(table_stats(a).foreign_handles, 0);
    cr_assert_eq(kiln_handle_get(b, hb), item_b, "b's own item is untouched");
    cr_assert_not_null(kiln_handle_get(a, ha));
    cr_assert(kiln_handle_free(ctx, a, ha));
    cr_assert(kiln_handle_free(ctx, b, hb));
    kiln_handles_destroy(a);
    kiln_handles_destroy(b);
}

/* The bits of h with another index. */
static kiln_handle with_index(kiln_handle h, uint32_t index) {
    return (kiln_handle){ (h.bits & ~(uint64_t)0xffffff) | index };
}

/* The bits of h with another generation. */
static kiln_handle with_generation(kiln_handle h, uint32_t generation) {
    return (kiln_handle){ (h.bits & 0xffffffffu) | (uint64_t)generation << 32 };
}

/* A generation the slot has not reached is forged, whatever its value: generations never
 * wrap (a slot retires first), so the largest one is no older than the slot's. */
Test(handles, free_of_a_generation_the_slot_never_reached_is_foreign) {
    kiln_handles *t = create_table("future", 16, 0, 4);
    kiln_handle live = alloc_ok(ctx, t, NULL);
    cr_assert_eq(kiln_handle_generation(live), 1);
    const uint32_t forged[] = { 3, 0x7fffffffu, 0x80000001u, UINT32_MAX };
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        recording_log_clear(rec);
        cr_assert(!kiln_handle_free(ctx, t, with_generation(live, forged[i])));
        cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLE_FOREIGN, KILN_LOG_ERROR), 1,
                     "generation %#x:%s", forged[i], recorded_summary(rec));
        cr_assert_eq(recorded_count(rec), 1, "generation %#x:%s", forged[i], recorded_summary(rec));
    }
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.foreign_handles, 4);
    cr_assert_eq(s.double_frees, 0);
    cr_assert_eq(s.live, 1);
    cr_assert(kiln_handle_free(ctx, t, live), "the live handle is untouched");
    kiln_handles_destroy(t);
}

Test(handles, forged_handles_are_refused) {
    enum { CAP = 50, RANDOM = 1000 };
    kiln_handles *t = create_table("forged", 32, 0, CAP);
    kiln_handle live[10];
    for (int i = 0; i < 10; i++) {
        void *item;
        live[i] = alloc_ok(ctx, t, &item);
        fill_pattern(item, 32, (uint32_t)i);
    }
    uint32_t gen = kiln_handle_generation(live[3]);
    const kiln_handle forged[] = {
        with_index(live[3], CAP),             /* just beyond the capacity */
        with_index(live[3], CAP + 1000),
        with_index(live[3], 0xffffff),        /* the largest index */
        with_index(live[3], 40),              /* within capacity, never allocated */
        with_generation(live[3], gen + 1),    /* even: a freed generation */
        with_generation(live[3], gen + 2),    /* odd, but not the slot's */
        with_generation(live[3], 0),
        with_generation(live[3], UINT32_MAX),
    };
    enum { FORGED = sizeof forged / sizeof forged[0] };
    for (int i = 0; i < FORGED; i++) {
        cr_assert_null(kiln_handle_get(t, forged[i]), "forged handle %d", i);
        cr_assert(!kiln_handle_free(ctx, t, forged[i]), "forged handle %d", i);
    }
    cr_assert_eq(recorded_count(rec), FORGED, "one item per refused free:%s", recorded_summary(rec));
    for (int i = 0; i < RANDOM; i++) {
        kiln_handle h = { mixed_bits((uint64_t)i) };
        bool real = false;
        for (int j = 0; j < 10; j++) real |= kiln_handle_equal(h, live[j]);
        if (real) continue;
        cr_assert_null(kiln_handle_get(t, h), "random bits %#llx", (unsigned long long)h.bits);
        cr_assert(!kiln_handle_free(ctx, t, h), "random bits %#llx", (unsigned long long)h.bits);
    }
    cr_assert_eq(recorded_count(rec), FORGED + RANDOM, "one item per refused free");
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.live, 10);
    cr_assert_eq(s.stale_lookups + s.foreign_handles, 2 * (FORGED + RANDOM) - s.double_frees,
                 "every refused get and free counted once (stale %llu, foreign %llu, double %llu)",
                 (unsigned long long)s.stale_lookups, (unsigned long long)s.foreign_handles,
                 (unsigned long long)s.double_frees);
    for (int i = 0; i < 10; i++) {
        void *item = kiln_handle_get(t, live[i]);
        cr_assert_not_null(item, "live handle %d", i);
        cr_assert(check_pattern(item, 32, (uint32_t)i), "item %d changed", i);
    }
    free_all(ctx, t, live, 10);
    kiln_handles_destroy(t);
}

/* ---- capacity ---- */

/* Capacities around the per-context cache batch (32). */
Test(handles, capacity_is_exact) {
    const uint32_t caps[] = { 1, 2, 31, 32, 33, 64, 65, 1000 };
    static kiln_handle h[1001];
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        uint32_t cap = caps[c];
        recording_log_clear(rec);
        kiln_handles *t = create_table("capped", 40, 0, cap);
        cr_assert_eq(alloc_until_full(ctx, t, h, cap), cap, "capacity %u", cap);
        cr_assert(distinct_indices(h, cap));
        for (uint32_t i = 0; i < cap; i++)
            cr_assert_lt(kiln_handle_index(h[i]), cap, "capacity %u: index in range", cap);
        cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_FULL, KILN_LOG_WARN), 1, "capacity %u:%s", cap,
                     recorded_summary(rec));
        cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_FULL, "'capped'"), 1);
        alloc_refused(ctx, t);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 1, "one warning, not one per call");
        kiln_handles_stats s = assert_counts(t, cap, 0);
        cr_assert_eq(s.failures, 2);
        cr_assert_eq(s.capacity, cap);
        cr_assert_eq(s.peak_live, cap);

        /* A free in this frame does not end the episode: no reuse yet, no new warning. */
        uint32_t k = cap / 2;
        cr_assert(kiln_handle_free(ctx, t, h[k]));
        alloc_refused(ctx, t);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 1);
        next_frame();
        kiln_handle again = alloc_ok(ctx, t, NULL);
        cr_assert_eq(kiln_handle_index(again), kiln_handle_index(h[k]), "capacity %u", cap);
        h[k] = again;
        alloc_refused(ctx, t);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 2, "a new episode warns again:%s",
                     recorded_summary(rec));
        cr_assert_eq(table_stats(t).failures, 4);
        assert_counts(t, cap + 1, 1);

        /* Everything freed, a frame end, everything allocated again. */
        free_all(ctx, t, h, cap);
        next_frame();
        cr_assert_eq(alloc_until_full(ctx, t, h, cap), cap, "capacity %u again", cap);
        cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 3);
        free_all(ctx, t, h, cap);
        kiln_handles_destroy(t);
        cr_assert_eq(recorded_but_near(), 3, "log:%s", recorded_summary(rec));
    }
    cr_assert_eq(api_errors(), 0, "a full table is not misuse");
}

/* Another context's cache holds free slots it took in a batch: the table can refuse this
 * context early by at most those, and they come back when that context detaches, so the
 * live items reach exactly the capacity. */
Test(handles, slots_cached_by_another_context_return_at_its_detach) {
    enum { CAP = 100 };
    kiln_handles *t = create_table("shared", 8, 0, CAP);
    static outside_thread other;   /* static: outlives the frame if an assertion fails */
    outside_start(&other);
    other.table = t;
    outside_do(&other, OUTSIDE_ALLOC);
    cr_assert(!kiln_handle_is_null(other.handle), "log:%s", recorded_summary(rec));
    kiln_handle h[CAP];
    size_t n = alloc_until_full(ctx, t, h, CAP);
    cr_assert_geq(n, CAP - 32, "refused early by more than one batch: %zu handles", n);
    cr_assert_leq(n, CAP - 1);
    outside_stop(&other);
    size_t more = alloc_until_full(ctx, t, h + n, CAP - n);
    cr_assert_eq(n + more, CAP - 1, "%zu + %zu handles beside the other context's one", n, more);
    cr_assert_eq(table_stats(t).live, CAP);
    cr_assert_not_null(kiln_handle_get(t, other.handle), "the detached context's item lives on");
    cr_assert(kiln_handle_free(ctx, t, other.handle), "freed by another context than its own");
    free_all(ctx, t, h, CAP - 1);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), n < CAP - 1 ? 2 : 1, "log:%s",
                 recorded_summary(rec));
}

/* A detached context is refused by alloc and free (its memory lives on until
 * kiln_destroy): a cache it bound would strand the slots it took once the next attach
 * reuses its memory. */
Test(handles, detached_context_is_refused_and_strands_nothing) {
    enum { CAP = 2 * KILN_HANDLES_BATCH };
    kiln_handles *t = create_table("units", 8, 0, CAP);
    kiln_ctx *gone = kiln_attach(rt);
    cr_assert_not_null(gone);
    kiln_detach(gone);
    alloc_refused(gone, t);
    kiln_handle h = alloc_ok(ctx, t, NULL);   /* ctx now caches the rest of its batch */
    cr_assert(!kiln_handle_free(gone, t, h));
    cr_assert_not_null(kiln_handle_get(t, h), "the refused free left the item live");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_DETACHED, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_handle_alloc: table 'units': "
                                  "context "), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_CONTEXT_DETACHED, "kiln_handle_free: table 'units': "
                                  "context "), 1);
    cr_assert_eq(api_errors(), 2);
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.live, 1);
    cr_assert_eq(s.allocs, 1);
    cr_assert_eq(s.frees + s.double_frees + s.foreign_handles, 0);

    kiln_ctx *next = kiln_attach(rt);   /* may reuse the detached context's memory */
    cr_assert_not_null(next);
    kiln_handle all[CAP];
    size_t n = alloc_until_full(next, t, all, CAP);
    cr_assert_eq(n, CAP - KILN_HANDLES_BATCH, "every slot but ctx's batch: %zu:%s", n,
                 recorded_summary(rec));
    free_all(next, t, all, n);
    kiln_detach(next);
    cr_assert(kiln_handle_free(ctx, t, h));
    kiln_handles_destroy(t);
}

/* A context of another runtime is refused, also when its cache of the same index is
 * bound to a table of its own runtime. */
Test(handles, context_of_another_runtime_is_refused) {
    recording_log *orec = recording_log_new();
    kiln_desc odesc = recording_desc(orec);
    odesc.worker_count = KILN_NO_WORKERS;
    kiln_runtime *ort = kiln_create(&odesc);
    kiln_ctx *octx = ort ? kiln_attach(ort) : NULL;
    cr_assert(ort && octx);
    kiln_handles *t = create_table("here", 8, 0, 64);
    kiln_handles *theirs = kiln_handles_create(ort, &(kiln_handles_desc){ .name = "there", .item_size = 8 });
    cr_assert_not_null(theirs);
    kiln_handle o = kiln_handle_alloc(octx, theirs, NULL);   /* binds octx's cache of that index */
    kiln_handle h = alloc_ok(ctx, t, NULL);
    cr_assert(!kiln_handle_is_null(o));
    alloc_refused(octx, t);
    cr_assert(!kiln_handle_free(octx, t, h));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_WRONG_RUNTIME, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_WRONG_RUNTIME, "table 'here'"), 2);
    cr_assert_eq(recorded_count(orec), 0, "log:%s", recorded_summary(orec));
    cr_assert_not_null(kiln_handle_get(t, h));
    cr_assert_eq(table_stats(t).live, 1);
    cr_assert(kiln_handle_free(octx, theirs, o));
    cr_assert(kiln_handle_free(ctx, t, h));
    kiln_handles_destroy(theirs);
    kiln_detach(octx);
    kiln_destroy(ort);
    recording_log_free(orec);
    kiln_handles_destroy(t);
}

/* ---- exact miss counters ---- */

enum { MISS_THREADS = 4, MISSES = 100000 };

typedef struct miss_args {
    kiln_handles     *table;
    kiln_handle       stale, foreign;
    pthread_barrier_t start;
    _Atomic uint64_t  hits;   /* gets that did not miss: none expected */
} miss_args;

static void *miss_many(void *arg) {
    miss_args *m = arg;
    pthread_barrier_wait(&m->start);
    for (int i = 0; i < MISSES; i++) {
        if (kiln_handle_get(m->table, m->stale)) atomic_fetch_add(&m->hits, 1);
        if (kiln_handle_get(m->table, m->foreign)) atomic_fetch_add(&m->hits, 1);
    }
    return NULL;
}

/* Threads missing on one slot at once: every miss is counted, none lost or rolled back
 * by a preempted thread (the figures are exact, not lower bounds). How the threads
 * interleave changes nothing to the expected counts. */
Test(handles, miss_counts_are_exact_under_contention) {
    kiln_handles *t = create_table("targets", 8, 0, 64);
    kiln_handles *other = create_table("others", 8, 0, 64);
    static miss_args m;
    m.table = t;
    m.stale = alloc_ok(ctx, t, NULL);
    cr_assert(kiln_handle_free(ctx, t, m.stale));
    m.foreign = alloc_ok(ctx, other, NULL);
    atomic_store(&m.hits, 0);
    cr_assert_eq(pthread_barrier_init(&m.start, NULL, MISS_THREADS), 0);
    pthread_t threads[MISS_THREADS];
    for (int i = 0; i < MISS_THREADS; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, miss_many, &m), 0);
    for (int i = 0; i < MISS_THREADS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&m.start);
    cr_assert_eq(atomic_load(&m.hits), 0);
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.stale_lookups, (uint64_t)MISS_THREADS * MISSES, "stale %llu",
                 (unsigned long long)s.stale_lookups);
    cr_assert_eq(s.foreign_handles, (uint64_t)MISS_THREADS * MISSES, "foreign %llu",
                 (unsigned long long)s.foreign_handles);
    cr_assert(kiln_handle_free(ctx, other, m.foreign));
    kiln_handles_destroy(t);
    kiln_handles_destroy(other);
    assert_no_log();
}

/* ---- generation retirement ---- */

Test(handles, slot_out_of_generations_is_retired) {
    enum { CAP = 4, MAX_GEN = 7 };   /* generations 1, 3, 5, 7: four lives per slot */
    kiln_handles *t = create_table("aging", 8, 0, CAP);
    kiln_handles_set_generation_limit(t, MAX_GEN);
    kiln_handle h[CAP];
    cr_assert_eq(alloc_until_full(ctx, t, h, CAP), CAP);
    kiln_handle last = { 0 };
    const uint32_t slot = kiln_handle_index(h[0]);
    /* Slot 0 lives through every generation the limit allows. */
    for (uint32_t gen = 1; gen <= MAX_GEN; gen += 2) {
        kiln_handle *cur = NULL;
        for (int i = 0; i < CAP; i++)
            if (kiln_handle_index(h[i]) == slot) cur = &h[i];
        cr_assert_not_null(cur, "generation %u: slot %u reused", gen, slot);
        cr_assert_eq(kiln_handle_generation(*cur), gen);
        last = *cur;
        cr_assert(kiln_handle_free(ctx, t, *cur));
        next_frame();
        if (gen < MAX_GEN) *cur = alloc_ok(ctx, t, NULL);
        else *cur = (kiln_handle){ 0 };
    }
    cr_assert_null(kiln_handle_get(t, last), "the last generation's handle is stale");
    cr_assert(!kiln_handle_free(ctx, t, last));
    alloc_refused(ctx, t);
    kiln_handles_stats s = table_stats(t);
    cr_assert_eq(s.retired_slots, 1);
    cr_assert_eq(s.live, CAP - 1, "the table is full one slot early");
    assert_pending(t, 0, "a retired slot is not waiting for reuse");
    cr_assert_eq(s.double_frees, 1);
    for (int i = 0; i < CAP; i++)
        if (!kiln_handle_is_null(h[i])) cr_assert(kiln_handle_free(ctx, t, h[i]));
    next_frame();
    kiln_handle again[CAP];
    cr_assert_eq(alloc_until_full(ctx, t, again, CAP), CAP - 1, "the retired slot never returns");
    for (int i = 0; i < CAP - 1; i++) cr_assert_neq(kiln_handle_index(again[i]), slot);
    free_all(ctx, t, again, CAP - 1);
    kiln_handles_destroy(t);
    /* Retiring is not logged on its own; the full table's warning says how many. */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 3, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_FULL, "1 retired"), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE), 1);
    cr_assert_eq(recorded_count(rec), 4, "log:%s", recorded_summary(rec));
}

/* ---- reuse epochs near and past 2^31 and 2^32 ----
 * Epochs count frame ends (about 700 000 a second in an empty frame loop): 2^31 of them
 * pass in under an hour. A freed slot is judged against the safe epoch however long after
 * its free: never reusable before, always after, and never blocking the entries behind
 * it in the ring. */

#define EPOCH_2_31 ((uint64_t)1 << 31)
#define EPOCH_2_32 ((uint64_t)1 << 32)

/* Freed at epochs across 2^31 and 2^32 and judged up to 2^40 frame ends later, and
 * before: reusable exactly when the safe epoch is past the free's. */
Test(handle_ring, entries_are_judged_by_the_whole_epoch) {
    const uint64_t frees[] = { 1, EPOCH_2_31 - 2, EPOCH_2_31, EPOCH_2_32 - 1, EPOCH_2_32,
                               EPOCH_2_32 + 5, ((uint64_t)1 << 48) + 3 };
    const uint64_t later[] = { 1, 2, EPOCH_2_31 - 1, EPOCH_2_31, EPOCH_2_31 + 1, EPOCH_2_31 + 7,
                               EPOCH_2_32, EPOCH_2_32 + 1, (uint64_t)1 << 40 };
    for (size_t f = 0; f < sizeof frees / sizeof frees[0]; f++) {
        uint64_t freed = frees[f];
        cr_assert(!kiln_epoch_reusable(freed, freed), "freed at %llu, judged at the same epoch",
                  (unsigned long long)freed);
        for (size_t d = 0; d < sizeof later / sizeof later[0]; d++) {
            cr_assert(kiln_epoch_reusable(freed, freed + later[d]), "freed at %llu, safe %llu later",
                      (unsigned long long)freed, (unsigned long long)later[d]);
            if (later[d] < freed)
                cr_assert(!kiln_epoch_reusable(freed, freed - later[d]),
                          "freed at %llu, safe %llu earlier", (unsigned long long)freed,
                          (unsigned long long)later[d]);
        }
    }
}

/* A ring whose oldest entry was freed 2^31 + 7 frame ends before the safe epoch: it and
 * every entry behind it are promoted, up to the first that the safe epoch does not
 * cover. */
Test(handle_ring, an_old_entry_does_not_block_promotion) {
    const uint64_t frees[] = { EPOCH_2_31 - 2, EPOCH_2_31 - 1, EPOCH_2_31, EPOCH_2_32 - 1,
                               EPOCH_2_32, EPOCH_2_32 + 4, EPOCH_2_32 + 5 };
    enum { N = sizeof frees / sizeof frees[0] };
    kiln_reuse_entry entries[N];
    kiln_handle_ring ring = { 0 };
    kiln_handle_ring_init(&ring, entries, N);
    for (uint32_t i = 0; i < N; i++)
        kiln_handle_ring_append(&ring, &(kiln_reuse_entry){ .index = i, .epoch = frees[i] }, 1);
    kiln_handle_ring_promote(&ring, EPOCH_2_31 - 2);
    cr_assert_eq(kiln_handle_ring_reusable(&ring), 0, "nothing freed before the safe epoch");
    kiln_handle_ring_promote(&ring, EPOCH_2_31);
    cr_assert_eq(kiln_handle_ring_reusable(&ring), 2, "the two freed before 2^31");
    kiln_handle_ring_promote(&ring, EPOCH_2_32 + 5);
    cr_assert_eq(kiln_handle_ring_reusable(&ring), N - 1,
                 "all but the one freed at the safe epoch: %u", kiln_handle_ring_reusable(&ring));
    uint32_t out[N];
    kiln_handle_ring_take(&ring, out, N - 1);
    for (uint32_t k = 0; k < N - 1; k++)
        cr_assert_eq(out[N - 2 - k], k, "taken oldest first");
    kiln_handle_ring_promote(&ring, EPOCH_2_32 + 6);
    cr_assert_eq(kiln_handle_ring_reusable(&ring), 1, "and the last once the safe epoch passes it");
}

/* A table whose epochs start near 2^31, then 2^32, 2^33 and 2^63: half its slots freed
 * at epoch B, half 2^31 + 7 frame ends later. With the safe epoch there, exactly the
 * first half comes back, oldest first; one epoch later the second half. */
Test(handles, reuse_is_never_blocked_across_epochs_2_31_and_2_32) {
    enum { CAP = 2 * KILN_HANDLES_BATCH, HALF = CAP / 2 };
    const uint64_t apart = EPOCH_2_31 + 7;
    const uint64_t bases[] = { EPOCH_2_31 - 2, EPOCH_2_32 + 16, ((uint64_t)1 << 33) + 7,
                               ((uint64_t)1 << 63) - 5 };
    enum { ROUNDS = sizeof bases / sizeof bases[0] };
    static _Atomic uint64_t reclaim, safe;
    kiln_handles *t = create_table("epochs", 16, 0, CAP);
    kiln_handle_table_set_epochs(&t->core, &reclaim, &safe);
    kiln_handle h[CAP];
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t base = bases[round];
        atomic_store(&reclaim, base);
        atomic_store(&safe, base);   /* past every free of the round before */
        cr_assert_eq(alloc_until_full(ctx, t, h, CAP), CAP, "round %d: every slot", round);
        free_all(ctx, t, h, HALF);
        atomic_store(&reclaim, base + apart);
        free_all(ctx, t, h + HALF, HALF);
        alloc_refused(ctx, t);
        atomic_store(&safe, base + apart);
        for (int i = 0; i < HALF; i++) {
            kiln_handle again = alloc_ok(ctx, t, NULL);
            cr_assert_eq(kiln_handle_index(again), kiln_handle_index(h[i]),
                         "round %d, reuse %d: slot %u, expected the %d-th freed, slot %u", round, i,
                         kiln_handle_index(again), i, kiln_handle_index(h[i]));
            h[i] = again;
        }
        alloc_refused(ctx, t);   /* the second half was freed at the safe epoch */
        assert_pending(t, HALF, "the second half waits");
        atomic_store(&safe, base + apart + 1);
        for (int i = HALF; i < CAP; i++) h[i] = alloc_ok(ctx, t, NULL);
        cr_assert(distinct_indices(h, CAP));
        assert_pending(t, 0, "all reused");
        free_all(ctx, t, h, CAP);
    }
    kiln_handles_destroy(t);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_FULL), 2 * ROUNDS, "log:%s",
                 recorded_summary(rec));
}

/* ---- typed handles ---- */

struct enemy { float pos[3]; int health; };
struct bullet { alignas(64) double velocity[2]; unsigned owner; };
KILN_HANDLE_TYPE(enemy, struct enemy)
KILN_HANDLE_TYPE(bullet, struct bullet)

Test(handles, typed_handles_round_trip) {
    enemy_table enemies = enemy_table_create(rt, "enemies", 100);
    bullet_table bullets = bullet_table_create(rt, "bullets", 0);
    cr_assert(enemies.raw && bullets.raw, "log:%s", recorded_summary(rec));
    struct enemy *e;
    enemy_handle eh = enemy_alloc(ctx, enemies, &e);
    cr_assert(!enemy_handle_is_null(eh));
    cr_assert_not_null(e);
    cr_assert_eq(e->health, 0, "zeroed");
    e->health = 77;
    struct bullet *b;
    bullet_handle bh = bullet_alloc(ctx, bullets, &b);
    cr_assert(!bullet_handle_is_null(bh));
    cr_assert(is_aligned(b, 64), "the type's alignment is the table's");
    b->owner = 5;
    cr_assert_eq(enemy_get(enemies, eh), e);
    cr_assert_eq(enemy_get(enemies, eh)->health, 77);
    cr_assert_eq(bullet_get(bullets, bh)->owner, 5);
    cr_assert(!enemy_handle_is_null(enemy_alloc(ctx, enemies, NULL)), "item may be NULL");

    kiln_handles_stats s = table_stats(enemies.raw);
    cr_assert_str_eq(s.name, "enemies");
    cr_assert_eq(s.item_size, sizeof(struct enemy));
    cr_assert_eq(s.capacity, 100);
    cr_assert_eq(s.live, 2);
    s = table_stats(bullets.raw);
    cr_assert_eq(s.item_size, sizeof(struct bullet));
    cr_assert_eq(s.capacity, 65536);

    cr_assert(enemy_free(ctx, enemies, eh));
    cr_assert_null(enemy_get(enemies, eh));
    cr_assert(!enemy_free(ctx, enemies, eh));
    cr_assert(bullet_free(ctx, bullets, bh));
    cr_assert(bullet_handle_is_null((bullet_handle){ { 0 } }));
    enemy_table_destroy(enemies);
    bullet_table_destroy(bullets);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLE_DOUBLE_FREE), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "'enemies'"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

/* ---- destroy ---- */

Test(handles, destroy_with_live_items_logs_the_count) {
    kiln_handles *t = create_table("leaky", 16, 0, 100);
    kiln_handle h[10];
    alloc_many(ctx, t, h, 10);
    free_all(ctx, t, h, 3);
    kiln_handles_destroy(t);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "'leaky'"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "still has 7 live items"), 1,
                 "the count:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), 0, "live items at destroy are a warning");
}

Test(handles, calls_on_a_destroyed_table_are_refused) {
    kiln_handles *t = create_table("gone", 16, 0, 10);
    kiln_handle h = alloc_ok(ctx, t, NULL);
    kiln_handle freed = alloc_ok(ctx, t, NULL);
    cr_assert(kiln_handle_free(ctx, t, freed));
    kiln_handles_destroy(t);
    recording_log_clear(rec);
    uint64_t errors = api_errors();

    cr_assert_null(kiln_handle_get(t, h));
    cr_assert_null(kiln_handle_get(t, freed));
    alloc_refused(ctx, t);
    cr_assert(!kiln_handle_free(ctx, t, h));
    kiln_handles_destroy(t);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_DESTROYED, KILN_LOG_ERROR), 5, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_DESTROYED, "'gone'"), 5);
    cr_assert_eq(recorded_count(rec), 5, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), errors + 5);

    /* Its figures stay readable until kiln_destroy; it is no longer listed. */
    cr_assert_str_eq(assert_counts(t, 2, 1).name, "gone");
    cr_assert_eq(kiln_stats_handles(rt, NULL, 0), 0);
    /* A new table works, and the old pointer stays refused. */
    kiln_handles *fresh = create_table("fresh", 16, 0, 10);
    kiln_handle fh = alloc_ok(ctx, fresh, NULL);
    alloc_refused(ctx, t);
    cr_assert_null(kiln_handle_get(t, fh));
    cr_assert(kiln_handle_free(ctx, fresh, fh));
    kiln_handles_destroy(fresh);
    kiln_handles_destroy(NULL);   /* a no-op */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_DESTROYED), 7, "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 7, "log:%s", recorded_summary(rec));
}

/* kiln_destroy destroys the tables still alive, even with a context still attached whose
 * caches hold free and freed slots, and frees the bookkeeping of destroyed ones. */
Test(handles, runtime_destroy_destroys_live_tables) {
    stop_runtime();   /* a runtime made after the heap count */
    size_t heap_before = heap_bytes_in_use();
    start_runtime(KILN_NO_WORKERS);
    const char *names[] = { "kept", "empty", "gone" };
    kiln_handles *t[3];
    for (int i = 0; i < 3; i++) t[i] = create_table(names[i], 32, 0, 0);
    kiln_handle h[3];
    alloc_many(ctx, t[0], h, 3);
    cr_assert(kiln_handle_free(ctx, t[0], h[1]), "a freed slot sits in the context's cache");
    kiln_handles_destroy(t[2]);
    kiln_destroy(rt);   /* ctx still attached */
    rt = NULL;
    ctx = NULL;
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_STILL_ATTACHED, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_STILL_ALIVE, KILN_LOG_WARN), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_STILL_ALIVE, "'kept'"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_STILL_ALIVE, "'empty'"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "'kept' still has 2 live items"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 4, "log:%s", recorded_summary(rec));
    if (heap_accounting_exact())
        cr_assert_eq(heap_bytes_in_use(), heap_before, "kiln_destroy freed every table");
}

Test(handles, at_most_64_live_tables) {
    kiln_handles *tables[64];
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        tables[i] = create_table(name, 8, 0, 16);
    }
    cr_assert_eq(kiln_stats_handles(rt, NULL, 0), 64);
    cr_assert_null(kiln_handles_create(rt, &(kiln_handles_desc){ .name = "one too many",
                                                                 .item_size = 8 }));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_HANDLES_TOO_MANY, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_TOO_MANY, "'one too many'"), 1);
    cr_assert_eq(api_errors(), 1);
    /* The first and the last table work (context cache slots 0 and 63). */
    kiln_handle a = alloc_ok(ctx, tables[0], NULL), b = alloc_ok(ctx, tables[63], NULL);
    cr_assert(kiln_handle_free(ctx, tables[0], a));
    cr_assert(kiln_handle_free(ctx, tables[63], b));

    kiln_handles_destroy(tables[20]);
    kiln_handles *again = create_table("again", 8, 0, 16);
    kiln_handle h = alloc_ok(ctx, again, NULL);
    cr_assert(kiln_handle_free(ctx, again, h));
    cr_assert_null(kiln_handles_create(rt, &(kiln_handles_desc){ .item_size = 8 }));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_HANDLES_TOO_MANY), 2);
    kiln_handles_destroy(again);
    for (int i = 0; i < 64; i++)
        if (i != 20) kiln_handles_destroy(tables[i]);
    cr_assert_eq(kiln_stats_handles(rt, NULL, 0), 0);
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
}

/* ---- bad descs ---- */

Test(handles, bad_descs_are_refused) {
    const struct {
        const kiln_handles_desc *desc;
        kiln_log_item            item;
        const char              *why;
    } cases[] = {
        { NULL, KILN_LOGITEM_HANDLES_NULL_DESC, "desc is NULL" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 0 }, KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, "item_size" },
        { &(kiln_handles_desc){ .name = "b", .item_size = ((size_t)1 << 20) + 1 },
          KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, "item_size" },
        { &(kiln_handles_desc){ .name = "b", .item_size = SIZE_MAX }, KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE,
          "item_size" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 8, .item_align = 3 },
          KILN_LOGITEM_HANDLES_BAD_ALIGN, "item_align" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 8, .item_align = 8192 },
          KILN_LOGITEM_HANDLES_BAD_ALIGN, "item_align" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 8, .item_align = 48 },
          KILN_LOGITEM_HANDLES_BAD_ALIGN, "item_align" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 8, .capacity = MAX_CAPACITY + 1 },
          KILN_LOGITEM_HANDLES_BAD_CAPACITY, "capacity" },
        { &(kiln_handles_desc){ .name = "b", .item_size = 8, .capacity = UINT32_MAX },
          KILN_LOGITEM_HANDLES_BAD_CAPACITY, "capacity" },
    };
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        recording_log_clear(rec);
        cr_assert_null(kiln_handles_create(rt, cases[i].desc), "case %zu", i);
        cr_assert_eq(count_items_at(rec, cases[i].item, KILN_LOG_ERROR), 1, "case %zu, %s:%s", i,
                     kiln_log_item_name(cases[i].item), recorded_summary(rec));
        cr_assert_eq(count_items_with(rec, cases[i].item, cases[i].why), 1, "case %zu says "
                     "what was wrong (%s):%s", i, cases[i].why, recorded_summary(rec));
        cr_assert_eq(recorded_count(rec), 1, "case %zu:%s", i, recorded_summary(rec));
        if (cases[i].desc)
            cr_assert_eq(count_items_with(rec, cases[i].item, "'b'"), 1, "names the table:%s",
                         recorded_summary(rec));
    }
    cr_assert_eq(api_errors(), n);
    cr_assert_eq(kiln_stats_handles(rt, NULL, 0), 0);
    /* The limits themselves are accepted. */
    kiln_handles *big = create_table("b", (size_t)1 << 20, 4096, 2);
    kiln_handles *many = create_table("m", 1, 1, MAX_CAPACITY);
    cr_assert_eq(table_stats(many).capacity, MAX_CAPACITY);
    kiln_handles_destroy(big);
    kiln_handles_destroy(many);
}

/* ---- NULL arguments ---- */

Test(handles, null_context_and_null_table_are_refused) {
    kiln_handles *t = create_table("nulls", 16, 0, 8);
    kiln_handle h = alloc_ok(ctx, t, NULL);
    void *p = (void *)&p;
    cr_assert(kiln_handle_is_null(kiln_handle_alloc(NULL, t, &p)));
    cr_assert_null(p);
    cr_assert(!kiln_handle_free(NULL, t, h));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_CONTEXT_NULL, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(recorded_count(rec), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), 2, "counted: the table leads to the runtime");

    stderr_capture cap;
    stderr_capture_begin(&cap);
    p = (void *)&p;
    kiln_handle none = kiln_handle_alloc(ctx, NULL, &p);
    void *got = kiln_handle_get(NULL, h);
    bool freed = kiln_handle_free(ctx, NULL, h);
    kiln_handles_destroy(NULL);
    kiln_handles_quiescent(NULL);
    kiln_handles_stats s;
    memset(&s, 0xFF, sizeof s);
    bool stats_of_null = kiln_handles_stats_get(NULL, &s);
    bool stats_to_null = kiln_handles_stats_get(t, NULL);
    size_t listed = kiln_stats_handles(NULL, NULL, 0);
    kiln_handles *no_rt = kiln_handles_create(NULL, &(kiln_handles_desc){ .item_size = 8 });
    char *text = stderr_capture_end(&cap);
    cr_assert(kiln_handle_is_null(none));
    cr_assert_null(p);
    cr_assert_null(got);
    cr_assert(!freed && !stats_of_null && !stats_to_null);
    cr_assert_eq(listed, 0);
    cr_assert_null(no_rt);
    cr_assert(all_zero(&s, sizeof s), "stats zeroed for a NULL table");
    /* A context or a table names its runtime: those go to its log. */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL, "kiln_handle_alloc: the table is NULL"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_NULL, "kiln_handle_free: the table is NULL"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_STATS_NULL_OUT, "kiln_handles_stats_get"), 1,
                 "log:%s", recorded_summary(rec));
    const char *expected[] = {
        "HANDLES_NULL: kiln_handle_get: the table is NULL",
        "CONTEXT_NULL: kiln_handles_quiescent",
        "HANDLES_NULL: kiln_handles_stats_get",
        "RUNTIME_NULL: kiln_stats_handles",
        "RUNTIME_NULL: kiln_handles_create",
    };
    size_t n = sizeof expected / sizeof expected[0];
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(count_substrings(text, expected[i]), 1, "%s, stderr: %s", expected[i], text);
    cr_assert_eq(count_substrings(text, "kiln error: "), n, "destroy(NULL) is a no-op; stderr: %s",
                 text);
    free(text);

    kiln_handles_stats after = table_stats(t);
    cr_assert_eq(after.live, 1, "the item was never freed");
    cr_assert_eq(after.frees + after.foreign_handles + after.double_frees + after.stale_lookups, 0);
    cr_assert(kiln_handle_free(ctx, t, h));
    kiln_handles_destroy(t);
    cr_assert_eq(recorded_count(rec), 5, "log:%s", recorded_summary(rec));
}

/* ---- handles from jobs on several workers ---- */

enum { MT_COUNT = 100000, MT_WORKERS = 4 };

typedef struct mt_table {
    kiln_handles    *table;
    kiln_handle     *handles;      /* by index */
    _Atomic unsigned failures;     /* checks failed inside jobs */
} mt_table;

static void alloc_range(kiln_ctx *c, size_t begin, size_t end, void *arg) {
    mt_table *m = arg;
    for (size_t i = begin; i < end; i++) {
        uint64_t *item = NULL;
        m->handles[i] = kiln_handle_alloc(c, m->table, (void **)&item);
        if (kiln_handle_is_null(m->handles[i]) || !item || *item != 0) {
            atomic_fetch_add(&m->failures, 1);
            continue;
        }
        *item = i + 1;
    }
}

static void free_odd_range(kiln_ctx *c, size_t begin, size_t end, void *arg) {
    mt_table *m = arg;
    for (size_t i = begin; i < end; i++)
        if (i % 2 && !kiln_handle_free(c, m->table, m->handles[i]))
            atomic_fetch_add(&m->failures, 1);
}

/* Every handle in [begin, end) with step resolves to its own item. */
static void assert_items(mt_table *m, size_t begin, size_t end, size_t step, const char *when) {
    for (size_t i = begin; i < end; i += step) {
        const uint64_t *item = kiln_handle_get(m->table, m->handles[i]);
        cr_assert_not_null(item, "%s: handle %zu", when, i);
        cr_assert_eq(*item, i + 1, "%s: handle %zu reads %llu", when, i, (unsigned long long)*item);
    }
}

Test(handles, jobs_on_workers_alloc_and_free) {
    stop_runtime();   /* the suite's runtime has no workers */
    start_runtime(MT_WORKERS);

    enum { CAP = MT_COUNT + MT_COUNT / 4 };
    static mt_table m;
    m.table = create_table("swarm", sizeof(uint64_t), 0, CAP);
    m.handles = calloc(MT_COUNT + MT_COUNT / 2, sizeof *m.handles);
    cr_assert_not_null(m.handles);
    atomic_store(&m.failures, 0);

    kiln_parallel_for(ctx, MT_COUNT, 0, alloc_range, &m);
    cr_assert_eq(atomic_load(&m.failures), 0, "allocs failed in jobs:%s", recorded_summary(rec));
    cr_assert(distinct_indices(m.handles, MT_COUNT));
    assert_items(&m, 0, MT_COUNT, 1, "after allocs");
    kiln_handles_stats s = assert_counts(m.table, MT_COUNT, 0);
    cr_assert_eq(s.peak_live, MT_COUNT);

    kiln_parallel_for(ctx, MT_COUNT, 0, free_odd_range, &m);
    cr_assert_eq(atomic_load(&m.failures), 0, "frees failed in jobs:%s", recorded_summary(rec));
    assert_items(&m, 0, MT_COUNT, 2, "after frees");
    for (size_t i = 1; i < MT_COUNT; i += 2)
        cr_assert_null(kiln_handle_get(m.table, m.handles[i]), "freed handle %zu", i);
    s = assert_counts(m.table, MT_COUNT, MT_COUNT / 2);
    cr_assert_eq(s.peak_live, MT_COUNT);
    assert_pending(m.table, MT_COUNT / 2, "freed in this frame");
    cr_assert_eq(s.stale_lookups, MT_COUNT / 2);
    cr_assert_eq(s.failures + s.double_frees + s.foreign_handles + s.retired_slots, 0);

    /* After the frame end a new round reuses freed slots: the capacity leaves room for a
     * quarter of it in never-used slots at most. */
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
    assert_pending(m.table, 0, "the frame end released them");
    mt_table round2 = { m.table, m.handles + MT_COUNT, 0 };
    kiln_parallel_for(ctx, MT_COUNT / 2, 0, alloc_range, &round2);
    cr_assert_eq(atomic_load(&round2.failures), 0, "allocs failed in jobs:%s",
                 recorded_summary(rec));
    /* Which slots round 1 left live (1) and freed (2). */
    unsigned char *state = calloc(CAP, 1);
    cr_assert_not_null(state);
    for (size_t i = 0; i < MT_COUNT; i++) {
        cr_assert_lt(kiln_handle_index(m.handles[i]), CAP);
        state[kiln_handle_index(m.handles[i])] = i % 2 ? 2 : 1;
    }
    size_t reused = 0;
    for (size_t i = 0; i < MT_COUNT / 2; i++) {
        uint32_t slot = kiln_handle_index(round2.handles[i]);
        cr_assert_lt(slot, CAP);
        cr_assert_neq(state[slot], 1, "round 2 handle %zu got a live slot", i);
        reused += state[slot] == 2;
    }
    free(state);
    cr_assert(distinct_indices(round2.handles, MT_COUNT / 2));
    assert_items(&round2, 0, MT_COUNT / 2, 1, "round 2");
    cr_assert_geq(reused, MT_COUNT / 2 - (CAP - MT_COUNT), "only %zu freed slots reused", reused);
    s = assert_counts(m.table, MT_COUNT + MT_COUNT / 2, MT_COUNT / 2);
    cr_assert_eq(s.failures, 0);
    assert_items(&m, 0, MT_COUNT, 2, "round 1's survivors");
    for (size_t i = 1; i < MT_COUNT; i += 2)
        cr_assert_null(kiln_handle_get(m.table, m.handles[i]), "freed handle %zu after reuse", i);

    kiln_handles_stats listed[2];
    cr_assert_eq(kiln_stats_handles(rt, listed, 2), 1);
    cr_assert_str_eq(listed[0].name, "swarm");
    cr_assert_eq(listed[0].live, MT_COUNT);
    kiln_handles_destroy(m.table);
    free(m.handles);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_HANDLES_ITEMS_LIVE, "'swarm'"), 1);
    cr_assert_eq(recorded_but_near(), 1, "log:%s", recorded_summary(rec));
}
