/* tests/test_debug.c — the debug and safety layer (kiln_desc.debug): fill patterns,
 * guard bytes checked on pool free, on arena release and reset and by the frame-end
 * audit (exact item, object and offset), guard pages that make an overrun fault,
 * ASan poisoning, allocation sites and the leak reports grouped by site, the owner-
 * thread check, the error hook, every bit at once under a multi-threaded churn, and
 * nothing of it with the bits off.
 *
 * KILN_TRACK_SITES is defined here, so kiln_pool_alloc / kiln_arena_alloc /
 * kiln_frame_alloc below record this file's lines; (kiln_pool_alloc)(...) calls the
 * function itself, without a site. */
#define _DEFAULT_SOURCE
#define KILN_TRACK_SITES 1
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/debug.h"   /* KILN_ASAN (and <sanitizer/asan_interface.h> with it) */
#include "recording_log.h"

#define BS ((size_t)64 << 10)   /* the default block size */

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;

/* Error hook calls, for the hook's tests. */
static _Atomic int hook_calls;
static char        hook_last[600];

static void count_hook(void *user, const char *message) {
    (void)user;
    hook_calls++;
    snprintf(hook_last, sizeof hook_last, "%s", message);
}

/* A runtime with these debug bits (no workers unless asked), its log recorded. */
static void start_with(uint32_t bits, uint32_t workers, uint32_t audit_sample) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.debug = bits;
    if (workers) desc.worker_count = workers;
    desc.audit_sample = audit_sample;
    desc.error_hook = count_hook;
    hook_calls = 0;
    hook_last[0] = '\0';
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx, "kiln_attach failed:%s", recorded_summary(rec));
}

static void start(uint32_t bits) { start_with(bits, 0, 0); }

static void finish(void) {
    if (ctx) kiln_detach(ctx);
    ctx = NULL;
    if (rt) kiln_destroy(rt);
    rt = NULL;
    recording_log_free(rec);
    rec = NULL;
}

TestSuite(debug, .fini = finish);

/* ---- helpers ---- */

static kiln_pool *make_pool(const char *name, size_t size) {
    kiln_pool *pool = kiln_pool_create(rt, &(kiln_pool_desc){ .name = name, .size = size });
    cr_assert_not_null(pool, "kiln_pool_create failed:%s", recorded_summary(rec));
    return pool;
}

static kiln_arena *make_arena(const char *name) {
    kiln_arena *arena = kiln_arena_create(rt, name);
    cr_assert_not_null(arena, "kiln_arena_create failed:%s", recorded_summary(rec));
    return arena;
}

static kiln_pool_stats pool_stats(kiln_pool *pool) {
    kiln_pool_stats s;
    cr_assert(kiln_pool_stats_get(pool, &s));
    return s;
}

static kiln_arena_stats arena_stats(kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s;
}

/* Whether all n bytes at p read value. */
static bool all_bytes(const void *p, size_t n, unsigned char value) {
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != value) return false;
    return true;
}

/* The offset fragment of a guard report: "first bad byte at offset N;" */
static const char *offset_text(long offset) {
    static char text[64];
    snprintf(text, sizeof text, "first bad byte at offset %ld;", offset);
    return text;
}

static const char *address_text(const void *p) {
    static char text[64];
    snprintf(text, sizeof text, "object %p (", p);
    return text;
}

static void one_frame(void) {
    kiln_frame_begin(ctx);
    kiln_frame_end(ctx);
}

static void assert_no_errors_or_warnings(void) {
    size_t n = recorded_count(rec);
    for (size_t i = 0; i < n && i < RECORDING_LOG_MAX; i++)
        cr_assert(rec->messages[i].level < KILN_LOG_WARN, "unexpected log:%s", recorded_summary(rec));
}

/* ---- fill patterns ---- */

Test(debug, fill_pool_objects_read_cd_fresh_and_dd_freed) {
    start(KILN_DEBUG_FILL);
    kiln_pool *pool = make_pool("bullets", 40);
    unsigned char *p = kiln_pool_alloc(ctx, pool);
    cr_assert_not_null(p);
    cr_assert(all_bytes(p, 40, 0xCD), "a fresh object reads 0xCD");
    memset(p, 0x11, 40);
    kiln_pool_free(ctx, pool, p);
    cr_assert(all_bytes(p, 40, 0xDD), "a freed object reads 0xDD");
    unsigned char *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, p, "the cache hands the same object back");
    cr_assert(all_bytes(again, 40, 0xCD));
    cr_assert_eq(pool_stats(pool).slot_size, 48, "fill alone keeps the layout");
    kiln_pool_free(ctx, pool, again);
    kiln_pool_destroy(pool);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(debug, fill_arena_memory_reads_cd_fresh_and_dd_after_release_and_reset) {
    start(KILN_DEBUG_FILL);
    kiln_arena *level = make_arena("level");
    unsigned char *kept = kiln_arena_alloc(level, 100, 0);
    cr_assert(all_bytes(kept, 100, 0xCD));
    memset(kept, 0x22, 100);
    kiln_mark mark = kiln_arena_mark(level);
    unsigned char *scratch = kiln_arena_alloc(level, 300, 8);
    unsigned char *large = kiln_arena_alloc(level, 2 * BS, 64);
    cr_assert(all_bytes(scratch, 300, 0xCD) && all_bytes(large, 2 * BS, 0xCD));
    kiln_arena_release(level, mark);
    cr_assert(all_bytes(scratch, 300, 0xDD), "released memory reads 0xDD");
    cr_assert(all_bytes(large, 2 * BS, 0xDD), "a released large allocation reads 0xDD (kept mapped)");
    cr_assert(all_bytes(kept, 100, 0x22), "what came before the mark is untouched");
    kiln_arena_reset(level);
    cr_assert(all_bytes(kept, 100, 0xDD), "reset memory reads 0xDD");
    kiln_arena_destroy(level);

    /* A frame pointer kept into the next frame reads 0xDD. */
    kiln_frame_begin(ctx);
    unsigned char *frame = kiln_frame_alloc(ctx, 64, 16);
    memset(frame, 0x33, 64);
    kiln_frame_end(ctx);
    cr_assert(all_bytes(frame, 64, 0xDD), "frame memory reads 0xDD after frame end");
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(debug, fill_with_guards_guard_bytes_read_fd) {
    start(KILN_DEBUG_FILL | KILN_DEBUG_GUARDS);
    kiln_pool *pool = make_pool("guarded", 24);
    unsigned char *p = kiln_pool_alloc(ctx, pool);
    cr_assert(all_bytes(p - 16, 16, 0xFD) && all_bytes(p, 24, 0xCD) && all_bytes(p + 24, 16, 0xFD));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_geq(s.slot_size, 16 + 24 + 16, "the slot holds both guards");
    cr_assert_eq(s.object_size, 24);
    kiln_arena *level = make_arena("level");
    unsigned char *a = kiln_arena_alloc(level, 5, 1);
    cr_assert(all_bytes(a - 16, 16, 0xFD) && all_bytes(a, 5, 0xCD) && all_bytes(a + 5, 16, 0xFD));
    cr_assert_eq((uintptr_t)a % 16, 0, "guarded allocations sit on 16 bytes at least");
    kiln_pool_free(ctx, pool, p);
    kiln_pool_destroy(pool);
    kiln_arena_destroy(level);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

/* ---- guard bytes: pools ---- */

Test(debug, pool_guard_damage_after_the_object_is_found_on_free) {
    start(KILN_DEBUG_GUARDS);
    kiln_pool *pool = make_pool("bullets", 24);
    char *p = kiln_pool_alloc(ctx, pool);
    p[24] = 'x';   /* one byte past the end */
    kiln_pool_free(ctx, pool, p);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    const char *text = last_item_text(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED);
    cr_assert(strstr(text, "pool 'bullets'"), "%s", text);
    cr_assert(strstr(text, address_text(p)), "%s", text);
    cr_assert(strstr(text, offset_text(24)), "%s", text);
    cr_assert(strstr(text, "found on free"), "%s", text);
    cr_assert_null(strstr(text, "allocated at"), "sites are named only with KILN_DEBUG_SITES: %s", text);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.guard_errors, 1);
    cr_assert_eq(s.frees, 1, "the free went through");
    /* Mended: the object's next life reports nothing. */
    char *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, p);
    kiln_pool_free(ctx, pool, again);
    cr_assert_eq(pool_stats(pool).guard_errors, 1);
    kiln_pool_destroy(pool);
}

Test(debug, pool_guard_damage_before_the_object_is_found_on_free) {
    start(KILN_DEBUG_GUARDS);
    kiln_pool *pool = make_pool("bullets", 24);
    char *p = kiln_pool_alloc(ctx, pool);
    p[-1] = 'x';
    p[-3] = 'y';
    kiln_pool_free(ctx, pool, p);
    const char *text = last_item_text(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED);
    cr_assert(strstr(text, offset_text(-3)), "the lowest bad byte: %s", recorded_summary(rec));
    cr_assert_eq(pool_stats(pool).guard_errors, 1);
    cr_assert_eq(hook_calls, 1, "the error hook saw the ERROR");
    kiln_pool_destroy(pool);
}

Test(debug, pool_guard_report_names_the_site) {
    start(KILN_DEBUG_GUARDS | KILN_DEBUG_SITES);
    kiln_pool *pool = make_pool("bullets", 32);
    int line = __LINE__ + 1;
    char *p = kiln_pool_alloc(ctx, pool);
    p[40] = 'x';
    kiln_pool_free(ctx, pool, p);
    char site[128];
    snprintf(site, sizeof site, "allocated at %s:%d;", __FILE__, line);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, site), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, offset_text(40)), 1);
    kiln_pool_destroy(pool);
}

Test(debug, pool_double_free_is_caught_by_the_guard_layer) {
    start(KILN_DEBUG_GUARDS);   /* not KILN_DEBUG_CHECKS: the slot entries catch it */
    kiln_pool *pool = make_pool("bullets", 24);
    void *p = kiln_pool_alloc(ctx, pool);
    kiln_pool_free(ctx, pool, p);
    kiln_pool_free(ctx, pool, p);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_DOUBLE_FREE, KILN_LOG_ERROR), 1, "log:%s",
                 recorded_summary(rec));
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.double_frees, 1);
    cr_assert_eq(s.frees, 1, "the second free was refused");
    void *a = kiln_pool_alloc(ctx, pool), *b = kiln_pool_alloc(ctx, pool);
    cr_assert(a && b && a != b, "the pool still hands out distinct objects");
    kiln_pool_free(ctx, pool, a);
    kiln_pool_free(ctx, pool, b);
    kiln_pool_destroy(pool);
}

/* ---- guard bytes: arenas ---- */

Test(debug, arena_guard_damage_is_found_on_reset) {
    start(KILN_DEBUG_GUARDS);
    kiln_arena *level = make_arena("level");
    char *a = kiln_arena_alloc(level, 10, 0);
    char *b = kiln_arena_alloc(level, 100, 8);
    char *c = kiln_arena_alloc(level, 7, 4);
    a[10] = 1;
    b[-16] = 2;   /* the first byte of its front guard */
    (void)c;
    kiln_arena_reset(level);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, KILN_LOG_ERROR), 2, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, offset_text(10)), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, offset_text(-16)), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, address_text(a)), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "arena 'level'"), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "found at reset"), 2);
    cr_assert_eq(arena_stats(level).guard_errors, 2);
    kiln_arena_reset(level);
    cr_assert_eq(arena_stats(level).guard_errors, 2, "a reset ends the records: reported once");
    kiln_arena_destroy(level);
}

Test(debug, arena_guard_damage_is_found_on_release_of_what_it_ends_only) {
    start(KILN_DEBUG_GUARDS | KILN_DEBUG_SITES);
    kiln_arena *level = make_arena("level");
    char *before = kiln_arena_alloc(level, 16, 0);
    kiln_mark mark = kiln_arena_mark(level);
    int line = __LINE__ + 1;
    char *after = kiln_arena_alloc(level, 48, 0);
    char *large = kiln_arena_alloc(level, BS + 1, 0);
    before[16] = 1;
    after[48] = 1;
    large[BS + 1] = 1;
    kiln_arena_release(level, mark);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "found at release"), 2, "log:%s",
                 recorded_summary(rec));
    char site[128];
    snprintf(site, sizeof site, "allocated at %s:%d;", __FILE__, line);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, site), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, offset_text(BS + 1)), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 2, "what came before the mark waits");
    kiln_arena_reset(level);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "found at reset"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, address_text(before)), 1);
    cr_assert_eq(arena_stats(level).guard_errors, 3);
    kiln_arena_destroy(level);
}

Test(debug, frame_arena_guard_damage_is_found_at_frame_end) {
    start(KILN_DEBUG_GUARDS);
    kiln_frame_begin(ctx);
    char *p = kiln_frame_alloc(ctx, 64, 16);
    p[64 + 5] = 1;
    kiln_frame_end(ctx);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, offset_text(69)), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "arena 'frame ctx"), 1);
    cr_assert_eq(arena_stats(kiln_frame_arena(ctx)).guard_errors, 1);
}

Test(debug, arena_guard_damage_is_found_at_destroy) {
    start(KILN_DEBUG_GUARDS);
    kiln_arena *level = make_arena("level");
    char *p = kiln_arena_alloc(level, 8, 8);
    p[-1] = 0;
    kiln_arena_destroy(level);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "found at destroy"), 1, "log:%s",
                 recorded_summary(rec));
}

/* ---- the frame-end audit ---- */

Test(debug, audit_finds_damage_in_a_live_pool_object_once) {
    start(KILN_DEBUG_GUARDS);
    kiln_pool *pool = make_pool("bullets", 24);
    char *p = kiln_pool_alloc(ctx, pool);
    p[25] = 1;
    one_frame();
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, "found by the frame-end audit"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, offset_text(25)), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED, address_text(p)), 1);
    one_frame();
    one_frame();
    kiln_pool_free(ctx, pool, p);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 1, "reported once, not per frame nor again on free");
    cr_assert_eq(pool_stats(pool).guard_errors, 1);
    char *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, p);
    one_frame();
    kiln_pool_free(ctx, pool, again);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 1, "the free mended the guard");
    kiln_pool_destroy(pool);
}

Test(debug, audit_samples_a_bounded_number_per_frame_and_goes_round) {
    start_with(KILN_DEBUG_GUARDS, 0, 4);
    kiln_pool *pool = make_pool("many", 16);
    enum { N = 100 };
    char *p[N];
    for (int i = 0; i < N; i++) p[i] = kiln_pool_alloc(ctx, pool);
    for (int i = 0; i < N; i++) p[i][16] = 1;   /* every one damaged */
    one_frame();
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), 4, "audit_sample objects per frame:%s",
                 recorded_summary(rec));
    for (int f = 0; f < N / 4; f++) one_frame();
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_GUARD_DAMAGED), N, "the audit went round the pool");
    for (int i = 0; i < N; i++) kiln_pool_free(ctx, pool, p[i]);
    cr_assert_eq(pool_stats(pool).guard_errors, N, "each reported once");
    kiln_pool_destroy(pool);
}

Test(debug, audit_finds_damage_in_an_arena_this_thread_owns) {
    start(KILN_DEBUG_GUARDS);
    kiln_arena *level = make_arena("level");
    char *p = kiln_arena_alloc(level, 32, 0);
    for (int i = 0; i < 10; i++) kiln_arena_alloc(level, 32, 0);
    p[32] = 1;
    one_frame();
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "found by the frame-end audit"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, offset_text(32)), 1);
    one_frame();
    kiln_arena_reset(level);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 1, "repaired after its report");
    cr_assert_eq(arena_stats(level).guard_errors, 1);
    kiln_arena_destroy(level);
}

/* ---- guard pages ---- */

/* Each fault test runs in Criterion's own child; the default action is restored first
 * so that an ASan build dies of the signal too instead of reporting it. */
static void fault_expected(void) { signal(SIGSEGV, SIG_DFL); }

Test(debug, guard_page_makes_a_large_arena_overrun_fault, .signal = SIGSEGV) {
    start(KILN_DEBUG_GUARD_PAGES);
    kiln_arena *level = make_arena("level");
    size_t size = 3 * BS + 5;
    volatile char *p = kiln_arena_alloc(level, size, 0);
    for (size_t i = 0; i < size; i++) p[i] = 1;   /* all of it is usable */
    fault_expected();
    for (size_t i = size; i < size + 64; i++) p[i] = 1;
    cr_assert_fail("the write past the allocation did not fault");
}

Test(debug, guard_page_makes_a_large_arena_underrun_fault, .signal = SIGSEGV) {
    start(KILN_DEBUG_GUARD_PAGES);
    kiln_arena *level = make_arena("level");
    volatile char *p = kiln_arena_alloc(level, 2 * BS, 4096);
    fault_expected();
    for (size_t i = 1; i < 3 * 4096; i++) p[-(ptrdiff_t)i] = 1;
    cr_assert_fail("the write before the allocation did not fault");
}

/* The object of pool that lies highest in the block of first. */
static char *last_object_of_block(kiln_pool *pool, char *first, void **taken, int n) {
    uintptr_t block = (uintptr_t)first & ~(uintptr_t)(BS - 1);
    char *last = first;
    for (int i = 0; i < n; i++) {
        taken[i] = kiln_pool_alloc(ctx, pool);
        cr_assert_not_null(taken[i]);
        if (((uintptr_t)taken[i] & ~(uintptr_t)(BS - 1)) == block && (char *)taken[i] > last)
            last = taken[i];
    }
    return last;
}

Test(debug, guard_page_makes_a_pool_block_overrun_fault, .signal = SIGSEGV) {
    start(KILN_DEBUG_GUARD_PAGES | KILN_DEBUG_GUARDS);
    kiln_pool *pool = make_pool("bullets", 64);
    static void *taken[2048];
    char *first = kiln_pool_alloc(ctx, pool);
    volatile char *last = last_object_of_block(pool, first, taken, 2048);
    size_t slot = pool_stats(pool).slot_size;
    fault_expected();
    for (size_t i = 64; i < slot + 64; i++) last[i] = 1;   /* guard bytes, then the page */
    cr_assert_fail("the write past the last object of the block did not fault");
}

/* The permissions /proc/self/maps gives the page holding p ("rw-p", "---p"), or "". */
static const char *page_permissions(const void *p) {
    static char perms[8];
    perms[0] = '\0';
    FILE *maps = fopen("/proc/self/maps", "r");
    cr_assert_not_null(maps);
    char line[512];
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char mode[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, mode) == 3 && lo <= (uintptr_t)p &&
            (uintptr_t)p < hi) {
            snprintf(perms, sizeof perms, "%s", mode);
            break;
        }
    }
    fclose(maps);
    return perms;
}

Test(debug, guard_pages_serve_less_and_are_lifted_when_blocks_go_back) {
    start(KILN_DEBUG_GUARD_PAGES);
    kiln_pool *pool = make_pool("bullets", 64);
    void *p = kiln_pool_alloc(ctx, pool);
    char *last_page = (char *)((uintptr_t)p & ~(uintptr_t)(BS - 1)) + BS - 4096;
    cr_assert_str_eq(page_permissions(last_page), "---p", "the block's guard page");
    kiln_pool_free(ctx, pool, p);
    cr_assert_eq(pool_stats(pool).slot_size, 64, "guard pages alone keep the slot");
    kiln_pool_destroy(pool);
    cr_assert_str_eq(page_permissions(last_page), "rw-p",
                     "a block back in the block pool is usable by anyone");
    /* A block serves a page less: what would fill a fresh block gets a mapping. */
    kiln_arena *level = make_arena("level");
    cr_assert_not_null(kiln_arena_alloc(level, BS - 64, 16));
    cr_assert_eq(arena_stats(level).large_allocs, 1);
    kiln_arena_destroy(level);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
}

Test(debug, guard_pages_are_off_for_single_page_blocks) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.debug = KILN_DEBUG_GUARD_PAGES | KILN_DEBUG_FILL;
    desc.block_size = 4096;
    rt = kiln_create(&desc);
    cr_assert_not_null(rt);
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_DEBUG_GUARD_PAGES_OFF, KILN_LOG_WARN), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(kiln_runtime_desc(rt).debug, KILN_DEBUG_FILL, "the runtime says which bits run");
    ctx = kiln_attach(rt);
    kiln_frame_begin(ctx);
    cr_assert_not_null(kiln_frame_alloc(ctx, 2000, 0));
    kiln_frame_end(ctx);
}

/* ---- ASan poisoning ---- */

Test(debug, poison_marks_freed_and_reset_memory_for_asan) {
#ifndef KILN_ASAN
    cr_skip_test("not an AddressSanitizer build: KILN_DEBUG_POISON does nothing here");
#else
    start(KILN_DEBUG_POISON);
    kiln_pool *pool = make_pool("bullets", 48);
    char *p = kiln_pool_alloc(ctx, pool);
    cr_assert_not(__asan_region_is_poisoned(p, 48), "a live object is not poisoned");
    kiln_pool_free(ctx, pool, p);
    cr_assert(__asan_address_is_poisoned(p) && __asan_address_is_poisoned(p + 47));
    char *again = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(again, p);
    cr_assert_not(__asan_region_is_poisoned(again, 48));
    kiln_pool_free(ctx, pool, again);
    kiln_pool_destroy(pool);

    kiln_frame_begin(ctx);
    char *frame = kiln_frame_alloc(ctx, 256, 16);
    cr_assert_not(__asan_region_is_poisoned(frame, 256));
    kiln_frame_end(ctx);
    cr_assert(__asan_address_is_poisoned(frame), "frame memory kept into the next frame");
    kiln_frame_begin(ctx);
    char *next = kiln_frame_alloc(ctx, 256, 16);
    cr_assert_eq(next, frame, "the next frame reuses it");
    cr_assert_not(__asan_region_is_poisoned(next, 256), "and it is usable again");
    kiln_frame_end(ctx);

    kiln_arena *level = make_arena("level");
    kiln_mark mark = kiln_arena_mark(level);
    char *big = kiln_arena_alloc(level, 2 * BS, 0);
    kiln_arena_release(level, mark);
    cr_assert(__asan_address_is_poisoned(big + BS), "a released large allocation");
    kiln_arena_destroy(level);
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec));
#endif
}

#ifdef KILN_ASAN
/* The real thing: ASan stops the program at the stale read (exit status 1, the report
 * with its stack on stderr). */
Test(debug, poison_stale_frame_pointer_is_reported_by_asan, .exit_code = 1) {
    start(KILN_DEBUG_POISON);
    kiln_frame_begin(ctx);
    volatile char *frame = kiln_frame_alloc(ctx, 64, 16);
    frame[0] = 1;
    kiln_frame_end(ctx);
    kiln_frame_begin(ctx);
    char stale = frame[0];   /* use-after-poison */
    cr_assert_fail("ASan did not stop the stale read (%d)", stale);
}
#endif

/* ---- allocation sites and leak reports ---- */

Test(debug, pool_leaks_are_listed_by_site_biggest_first) {
    start(KILN_DEBUG_SITES);
    kiln_pool *pool = make_pool("bullets", 24);
    void *p[8];
    int three = __LINE__ + 1;
    for (int i = 0; i < 3; i++) p[i] = kiln_pool_alloc(ctx, pool);
    int two = __LINE__ + 1;
    for (int i = 3; i < 5; i++) p[i] = kiln_pool_alloc(ctx, pool);
    p[5] = (kiln_pool_alloc)(ctx, pool);   /* no site */
    p[6] = kiln_pool_alloc(ctx, pool);
    kiln_pool_free(ctx, pool, p[6]);       /* freed: not listed */
    (void)p;
    kiln_pool_destroy(pool);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE, "6 live objects"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_LEAK_SITE, KILN_LOG_WARN), 3, "log:%s",
                 recorded_summary(rec));
    char site[128];
    snprintf(site, sizeof site, "pool 'bullets': 3 objects still live, allocated at %s:%d", __FILE__,
             three);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, site), 1, "log:%s", recorded_summary(rec));
    snprintf(site, sizeof site, "2 objects still live, allocated at %s:%d", __FILE__, two);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, site), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, "1 objects still live, allocated without a site"), 1);
    /* Biggest first: the order of the messages. */
    const char *first = NULL;
    for (size_t i = 0; i < rec->count && !first; i++)
        if (rec->messages[i].item == KILN_LOGITEM_POOL_LEAK_SITE) first = rec->messages[i].text;
    cr_assert(first && strstr(first, "3 objects"), "%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_LEAK_SUMMARY), 0, "few sites: no summary");
}

Test(debug, pool_leak_report_lists_16_sites_then_a_summary) {
    start(KILN_DEBUG_SITES);
    kiln_pool *pool = make_pool("bullets", 8);
    /* Site i (line 100 + i) gets i + 1 objects: 20 sites, 210 objects. */
    for (int i = 0; i < 20; i++)
        for (int k = 0; k <= i; k++) cr_assert_not_null(kiln_pool_alloc_at(ctx, pool, "game.c", 100 + i));
    kiln_pool_destroy(pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_LEAK_SITE), 16, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, "20 objects still live, allocated at game.c:119"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, "5 objects still live, allocated at game.c:104"), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SITE, "game.c:103"), 0, "the smallest are summed up");
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_POOL_LEAK_SUMMARY, KILN_LOG_WARN), 1);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_POOL_LEAK_SUMMARY,
                                  "10 more objects still live from 4 sites not listed (20 sites, "
                                  "210 objects in all)"), 1, "%s", recorded_summary(rec));
}

Test(debug, arena_leaks_are_listed_by_site_at_kiln_destroy) {
    start(KILN_DEBUG_SITES);
    kiln_arena *level = make_arena("level");
    int line = __LINE__ + 1;
    for (int i = 0; i < 4; i++) kiln_arena_alloc(level, 10, 0);
    kiln_arena_alloc_at(level, 10, 0, "loader.c", 7);
    kiln_frame_begin(ctx);
    kiln_frame_alloc(ctx, 10, 0);   /* frame memory is no leak */
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    ctx = NULL;
    kiln_destroy(rt);
    rt = NULL;
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_STILL_ALIVE), 1, "log:%s", recorded_summary(rec));
    char site[128];
    snprintf(site, sizeof site, "arena 'level': 4 allocations still live, allocated at %s:%d",
             __FILE__, line);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_LEAK_SITE, site), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_LEAK_SITE, "1 allocations still live, allocated at loader.c:7"), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_LEAK_SITE), 2);
}

Test(debug, sites_cost_nothing_without_the_bit) {
    start(KILN_DEBUG_NONE);
    kiln_pool *pool = make_pool("bullets", 24);
    void *p = kiln_pool_alloc_at(ctx, pool, "game.c", 1);
    void *q = kiln_pool_alloc(ctx, pool);
    cr_assert(p && q);
    kiln_arena *level = make_arena("level");
    cr_assert_not_null(kiln_arena_alloc_at(level, 10, 0, "game.c", 2));
    kiln_frame_begin(ctx);
    cr_assert_not_null(kiln_frame_alloc_at(ctx, 10, 0, "game.c", 3));
    kiln_frame_end(ctx);
    kiln_pool_destroy(pool);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE), 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_LEAK_SITE), 0, "no sites without KILN_DEBUG_SITES");
    stderr_capture cap;   /* with no object to name a log by, they go to stderr */
    stderr_capture_begin(&cap);
    cr_assert_null(kiln_arena_alloc_at(NULL, 1, 0, "game.c", 4));
    cr_assert_null(kiln_frame_alloc_at(NULL, 1, 0, "game.c", 5));
    cr_assert_null(kiln_pool_alloc_at(ctx, NULL, "game.c", 6));   /* ctx names the runtime */
    char *text = stderr_capture_end(&cap);
    cr_assert_eq(count_substrings(text, "ARENA_NULL: kiln_arena_alloc_at"), 1, "%s", text);
    cr_assert_eq(count_substrings(text, "CONTEXT_NULL: kiln_frame_alloc_at"), 1, "%s", text);
    cr_assert_eq(count_substrings(text, "POOL_NULL"), 0, "%s", text);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_NULL), 1, "log:%s", recorded_summary(rec));
    free(text);
    kiln_arena_destroy(level);
}

/* ---- ownership ---- */

/* What use_arena_elsewhere does on a thread of its own. */
typedef struct thread_work {
    kiln_arena *arena;
    int         allocs;   /* allocations first */
    bool        reset;    /* then a reset */
} thread_work;

static void *use_arena_elsewhere(void *arg) {
    thread_work *w = arg;
    for (int i = 0; i < w->allocs; i++) kiln_arena_alloc(w->arena, 16, 0);
    if (w->reset) kiln_arena_reset(w->arena);
    return NULL;
}

static void on_other_thread(thread_work *w) {
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, use_arena_elsewhere, w), 0);
    pthread_join(thread, NULL);
}

Test(debug, ownership_use_from_another_thread_is_logged_and_counted) {
    start(KILN_DEBUG_OWNERSHIP);
    kiln_arena *level = make_arena("level");
    kiln_arena_alloc(level, 16, 0);
    kiln_mark mark = kiln_arena_mark(level);
    kiln_arena_release(level, mark);
    cr_assert_eq(recorded_count(rec), 0, "the owner's calls pass:%s", recorded_summary(rec));
    on_other_thread(&(thread_work){ level, 3, false });
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, KILN_LOG_ERROR), 1,
                 "one report per offending thread:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "arena 'level': an allocation"), 1);
    kiln_arena_stats s = arena_stats(level);
    cr_assert_eq(s.wrong_thread, 3, "every call counted");
    cr_assert_eq(s.allocs, 4, "the calls proceeded");
    cr_assert_eq(hook_calls, 1);
    /* A reset hands the arena over: now this thread is the stranger. */
    on_other_thread(&(thread_work){ level, 0, true });
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_WRONG_THREAD), 1, "a reset is a hand-over");
    kiln_arena_mark(level);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "kiln_arena_mark"), 1, "log:%s",
                 recorded_summary(rec));
    kiln_arena_reset(level);   /* and back */
    kiln_arena_alloc(level, 16, 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_WRONG_THREAD), 2);
    cr_assert_eq(arena_stats(level).wrong_thread, 4);
    kiln_arena_destroy(level);
}

static void *create_arena_elsewhere(void *arg) {
    *(kiln_arena **)arg = kiln_arena_create(rt, "level");
    return NULL;
}

/* Threads that run one after another (each joined before the next starts) are each a
 * thread of their own: the C library may give the next one the same pthread_t, stack
 * and thread-local storage as the last, the ownership check must not. */
Test(debug, ownership_arena_of_an_exited_creator_is_not_the_next_threads) {
    start(KILN_DEBUG_OWNERSHIP);
    kiln_arena *level = NULL;
    pthread_t creator;
    cr_assert_eq(pthread_create(&creator, NULL, create_arena_elsewhere, &level), 0);
    pthread_join(creator, NULL);
    cr_assert_not_null(level, "kiln_arena_create failed:%s", recorded_summary(rec));
    on_other_thread(&(thread_work){ level, 1, false });
    cr_assert_eq(count_items_at(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, KILN_LOG_ERROR), 1,
                 "the creator has exited; the new thread does not own its arena:%s",
                 recorded_summary(rec));
    cr_assert_eq(arena_stats(level).wrong_thread, 1);
    kiln_arena_destroy(level);
}

Test(debug, ownership_offending_threads_in_turn_are_each_reported) {
    start(KILN_DEBUG_OWNERSHIP);
    kiln_arena *level = make_arena("level");
    for (int i = 0; i < 3; i++) on_other_thread(&(thread_work){ level, 2, false });   /* two calls each */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "arena 'level': an allocation"), 3,
                 "one report per offending thread:%s", recorded_summary(rec));
    kiln_arena_stats s = arena_stats(level);
    cr_assert_eq(s.wrong_thread, 6, "every call counted");
    cr_assert_eq(s.allocs, 6, "the calls proceeded");
    kiln_arena_destroy(level);
}

Test(debug, ownership_frame_arena_reset_by_another_thread_is_logged) {
    start(KILN_DEBUG_OWNERSHIP);
    on_other_thread(&(thread_work){ kiln_frame_arena(ctx), 0, true });
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "kiln_arena_reset"), 1, "log:%s",
                 recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_WRONG_THREAD, "its context's thread"), 1);
    kiln_frame_begin(ctx);
    kiln_frame_alloc(ctx, 16, 0);   /* still this thread's */
    kiln_frame_end(ctx);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_WRONG_THREAD), 1, "log:%s", recorded_summary(rec));
}

/* Jobs run on workers, where a Criterion assertion cannot stop the test: a failure
 * aborts, which Criterion reports as a crash. */
static void *must(void *p) {
    if (!p) abort();
    return p;
}

static void frame_job(kiln_ctx *job_ctx, void *arg) {
    (void)arg;
    for (int i = 0; i < 8; i++) memset(must(kiln_frame_alloc(job_ctx, 32 + (size_t)i, 0)), i, 32 + (size_t)i);
}

Test(debug, ownership_workers_frame_arenas_reset_at_frame_end_are_not_flagged) {
    start_with(KILN_DEBUG_OWNERSHIP | KILN_DEBUG_GUARDS, 2, 0);
    for (int f = 0; f < 20; f++) {
        kiln_frame_begin(ctx);
        kiln_job jobs[32];
        for (int i = 0; i < 32; i++) jobs[i] = (kiln_job){ frame_job, NULL };
        kiln_counter done = { { 0, 0 } };
        kiln_run(ctx, jobs, 32, &done);
        kiln_wait(ctx, &done);
        kiln_frame_end(ctx);
    }
    assert_no_errors_or_warnings();
}

/* ---- the error hook ---- */

Test(debug, error_hook_is_called_once_per_error_after_the_log) {
    start(KILN_DEBUG_NONE);
    kiln_arena *level = make_arena("level");
    cr_assert_null(kiln_arena_alloc(level, 8, 3));
    cr_assert_eq(hook_calls, 1);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 1, "logged before the hook ran");
    cr_assert_str_eq(hook_last, last_item_text(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), "the same message");
    kiln_pool *pool = make_pool("bullets", 24);
    kiln_pool_alloc(ctx, pool);
    kiln_pool_destroy(pool);   /* POOL_OBJECTS_LIVE is a warning */
    cr_assert_eq(count_items(rec, KILN_LOGITEM_POOL_OBJECTS_LIVE), 1);
    cr_assert_eq(hook_calls, 1, "warnings do not call it");
    int local;
    kiln_pool *other = make_pool("other", 24);
    kiln_pool_free(ctx, other, &local);   /* POOL_FOREIGN_POINTER */
    cr_assert_eq(hook_calls, 2);
    kiln_pool_destroy(other);
    kiln_arena_destroy(level);
}

/* ---- every bit at once ---- */

typedef struct churn {
    kiln_pool  *pool;
    void      **slots;   /* shared by the jobs of a frame, one slot each */
} churn;

static void churn_job(kiln_ctx *job_ctx, void *arg) {
    churn *c = arg;
    for (int i = 0; i < 16; i++)
        memset(must(kiln_frame_alloc(job_ctx, 24 + (size_t)i * 8, 8)), 0x42, 24 + (size_t)i * 8);
    char *obj = must(kiln_pool_alloc(job_ctx, c->pool));
    memset(obj, 0x24, 40);
    kiln_pool_free(job_ctx, c->pool, obj);
}

static void churn_frames(uint32_t workers, int frames) {
    kiln_pool *pool = make_pool("churn", 40);
    kiln_arena *level = make_arena("level");
    churn c = { pool, NULL };
    void *held[64] = { 0 };
    for (int f = 0; f < frames; f++) {
        kiln_frame_begin(ctx);
        kiln_mark mark = kiln_arena_mark(level);
        for (int i = 0; i < 10; i++) memset(kiln_arena_alloc(level, 100, 16), 1, 100);
        if (f % 7 == 0) memset(kiln_arena_alloc(level, BS + 100, 64), 2, BS + 100);
        kiln_job jobs[16];
        for (int i = 0; i < 16; i++) jobs[i] = (kiln_job){ churn_job, &c };
        kiln_counter done = { { 0, 0 } };
        kiln_run(ctx, jobs, workers ? 16 : 4, &done);
        kiln_wait(ctx, &done);
        /* Objects that live across frames, freed later. */
        int slot = f % 64;
        if (held[slot]) kiln_pool_free(ctx, pool, held[slot]);
        held[slot] = kiln_pool_alloc(ctx, pool);
        memset(held[slot], 3, 40);
        kiln_arena_release(level, mark);
        kiln_frame_end(ctx);
    }
    for (int i = 0; i < 64; i++) kiln_pool_free(ctx, pool, held[i]);
    kiln_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.guard_errors + s.double_frees + s.bad_frees, 0);
    kiln_pool_destroy(pool);
    kiln_arena_destroy(level);
}

Test(debug, every_bit_at_once_under_a_multithreaded_churn) {
    start_with(KILN_DEBUG_ALL, 2, 16);
    churn_frames(2, 150);
    assert_no_errors_or_warnings();
}

Test(debug, each_bit_alone_keeps_the_allocators_working) {
    for (uint32_t bit = 1; bit <= KILN_DEBUG_OWNERSHIP; bit <<= 1) {
        start_with(bit, 1, 0);
        churn_frames(1, 30);
        assert_no_errors_or_warnings();
        finish();
    }
}

/* ---- all off ---- */

Test(debug, debug_off_changes_nothing) {
    start(KILN_DEBUG_NONE);
    kiln_pool *pool = make_pool("bullets", 24);
    char *p = kiln_pool_alloc(ctx, pool);
    cr_assert_eq(pool_stats(pool).slot_size, 32, "the plain layout");
    memset(p, 0x11, 24);
    p[24] = 9;   /* past the object, in its slot's padding: nobody looks */
    kiln_pool_free(ctx, pool, p);
    cr_assert_eq(p[0], 0x11, "no fill on free");
    kiln_pool_free(ctx, pool, kiln_pool_alloc(ctx, pool));
    kiln_frame_begin(ctx);
    unsigned char *frame = kiln_frame_alloc(ctx, 64, 16);
    memset(frame, 0x77, 64);
    kiln_frame_end(ctx);
    cr_assert(all_bytes(frame, 64, 0x77), "no fill at reset");
    kiln_frame_begin(ctx);
    unsigned char *next = kiln_frame_alloc(ctx, 64, 16);
    cr_assert_eq(next, frame);
    cr_assert(all_bytes(next, 64, 0x77), "no fill on alloc");
    kiln_frame_end(ctx);
    on_other_thread(&(thread_work){ kiln_frame_arena(ctx), 2, false });
    one_frame();
    kiln_pool_stats ps = pool_stats(pool);
    kiln_arena_stats as = arena_stats(kiln_frame_arena(ctx));
    cr_assert_eq(ps.guard_errors + as.guard_errors + as.wrong_thread, 0);
    kiln_pool_destroy(pool);
    cr_assert_eq(recorded_count(rec), 0, "nothing reported:%s", recorded_summary(rec));
    cr_assert_eq(hook_calls, 0);
}
