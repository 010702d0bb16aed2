/* tests/test_arena_text.c — the typed and overflow-checked arena helpers: arrays
 * (KILN_ARENA_NEW, KILN_FRAME_NEW, the overflow refusal), frame and arena strings
 * (printf, vprintf, strdup: any length, format errors), kiln_arena_grow (in place, moved,
 * shrunk, with marks, with the debug bits), and the bad inputs of each.
 *
 * KILN_TRACK_SITES is on in this file: the array calls and the NEW macros pass their
 * site; (kiln_arena_alloc_array)(...) calls the function itself. */
#define _DEFAULT_SOURCE
#define KILN_TRACK_SITES
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "recording_log.h"

#define BS ((size_t)64 << 10)   /* the default block size */

static recording_log *rec;
static kiln_runtime  *rt;
static kiln_ctx      *ctx;
static kiln_arena    *level;

/* A runtime with these debug bits (and frame budget), the test thread attached, and a
 * user arena "level". */
static void start(uint32_t debug, size_t frame_budget) {
    rec = recording_log_new();
    kiln_desc desc = recording_desc(rec);
    desc.debug = debug;
    desc.frame_budget = frame_budget;
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    ctx = kiln_attach(rt);
    cr_assert_not_null(ctx);
    level = kiln_arena_create(rt, "level");
    cr_assert_not_null(level);
}

static void setup(void) { start(0, 0); }

static void teardown(void) {
    if (level) kiln_arena_destroy(level);
    level = NULL;
    recording_fixture_end(&ctx, &rt, &rec);
}

TestSuite(arena_text, .init = setup, .fini = teardown);
/* Tests that make their own runtime (start) with debug bits or a budget. */
TestSuite(arena_text_debug, .fini = teardown);

static uint64_t api_errors(void) {
    kiln_stats s;
    cr_assert(kiln_stats_get(rt, &s));
    return s.api_errors;
}

static size_t in_use(const kiln_arena *arena) {
    kiln_arena_stats s;
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s.bytes_in_use;
}

static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

/* Runs call with stderr captured; returns how often item's name appears there. */
static size_t stderr_items(void (*call)(void), const char *item) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    call();
    char *text = stderr_capture_end(&cap);
    size_t n = count_substrings(text, item);
    free(text);
    return n;
}

typedef struct particle { double pos[3]; float life; } particle;
typedef struct cache_line { alignas(64) unsigned char bytes[64]; } cache_line;

/* ---------- arrays ---------- */

Test(arena_text, new_returns_typed_aligned_arrays) {
    particle *ps = KILN_ARENA_NEW(level, particle, 100);
    cr_assert_not_null(ps);
    cr_assert(is_aligned(ps, alignof(particle)));
    for (int i = 0; i < 100; i++) ps[i].life = (float)i;
    cache_line *lines = KILN_FRAME_NEW(ctx, cache_line, 3);
    cr_assert_not_null(lines);
    cr_assert(is_aligned(lines, 64));
    memset(lines, 0x5A, 3 * sizeof *lines);
    int *plain = (kiln_arena_alloc_array)(level, 10, sizeof(int), alignof(int));
    int *frame = (kiln_frame_alloc_array)(ctx, 10, sizeof(int), 0);
    cr_assert(plain && frame && is_aligned(frame, alignof(max_align_t)));
    cr_assert_eq(ps[99].life, 99.0f);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_text, array_of_many_blocks) {
    size_t count = 3 * BS / sizeof(particle);
    particle *ps = KILN_ARENA_NEW(level, particle, count);
    cr_assert_not_null(ps);
    ps[count - 1].life = 1.0f;
    cr_assert_geq(in_use(level), count * sizeof(particle));
}

Test(arena_text, overflowing_count_is_refused) {
    uint64_t errors0 = api_errors();
    size_t before = in_use(level);
    cr_assert_null((kiln_arena_alloc_array)(level, SIZE_MAX / 2 + 1, 2, 0));
    cr_assert_null(kiln_arena_alloc_array_at(level, 2, SIZE_MAX / 2 + 1, 0, __FILE__, __LINE__));
    cr_assert_null((kiln_frame_alloc_array)(ctx, SIZE_MAX / 2 + 1, 2, 0));
    cr_assert_null(KILN_FRAME_NEW(ctx, particle, SIZE_MAX / 8));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW), 4, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW, "arena 'level'"), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW, "9223372036854775808 elements of 2 bytes"), 2);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW, "context "), 2);
    cr_assert_eq(api_errors(), errors0 + 4);
    cr_assert_eq(in_use(level), before);
    cr_assert_not_null(KILN_ARENA_NEW(level, int, 4), "the arena still works");
}

Test(arena_text, count_or_size_zero_is_a_valid_pointer) {
    void *a = (kiln_arena_alloc_array)(level, 0, 16, 16);
    void *b = (kiln_arena_alloc_array)(level, 16, 0, 16);
    void *c = KILN_FRAME_NEW(ctx, particle, 0);
    cr_assert(a && b && c);
    cr_assert(is_aligned(a, 16) && is_aligned(b, 16) && is_aligned(c, alignof(particle)));
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_text, array_refusals_are_the_allocations) {
    cr_assert_null((kiln_arena_alloc_array)(level, 4, 4, 3));
    cr_assert_null((kiln_frame_alloc_array)(ctx, 4, 4, 24));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 2);
    kiln_arena *dead = kiln_arena_create(rt, "dead");
    kiln_arena_destroy(dead);
    cr_assert_null((kiln_arena_alloc_array)(dead, 4, 4, 0));
    cr_assert_null((kiln_arena_alloc_array)(dead, SIZE_MAX, 2, 0));   /* destroyed first */
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'dead'"), 2,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW), 0);
}

static void null_arena_array(void) { cr_assert_null((kiln_arena_alloc_array)(NULL, 1, 1, 0)); }
static void null_ctx_array(void) { cr_assert_null(KILN_FRAME_NEW(NULL, int, 1)); }

Test(arena_text, null_arena_and_ctx_go_to_stderr) {
    cr_assert_eq(stderr_items(null_arena_array, "ARENA_NULL"), 1);
    cr_assert_eq(stderr_items(null_ctx_array, "CONTEXT_NULL"), 1);
}

Test(arena_text, detached_ctx_is_refused) {
    kiln_ctx *stale = ctx;
    kiln_detach(ctx);
    ctx = NULL;
    cr_assert_null(KILN_FRAME_NEW(stale, int, 4));
    cr_assert_null(kiln_frame_printf(stale, "%d", 1));
    cr_assert_null(kiln_frame_strdup(stale, "x"));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_CONTEXT_DETACHED), 3, "log:%s", recorded_summary(rec));
}

/* The site the NEW macro passed is the one the leak report names. */
Test(arena_text_debug, new_records_the_callers_site) {
    start(KILN_DEBUG_SITES, 0);
    kiln_arena *scratch = kiln_arena_create(rt, "scratch");
    cr_assert_not_null(scratch);
    int line = __LINE__ + 1;
    particle *ps = KILN_ARENA_NEW(scratch, particle, 8);
    cr_assert_not_null(ps);
    kiln_detach(ctx);   /* kiln_destroy lists the arenas still alive, by site */
    ctx = NULL;
    level = NULL;
    kiln_destroy(rt);
    rt = NULL;
    char where[64];
    snprintf(where, sizeof where, "test_arena_text.c:%d", line);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_LEAK_SITE, where), 1,
                 "log:%s", recorded_summary(rec));
}

/* ---------- strings ---------- */

Test(arena_text, printf_and_strdup) {
    char *a = kiln_arena_printf(level, "enemy %u (%s) at %.1f", 7u, "grunt", 2.5);
    char *f = kiln_frame_printf(ctx, "%05d|%-4s|", 42, "ab");
    char *d = kiln_arena_strdup(level, "level one");
    char *e = kiln_frame_strdup(ctx, "");
    char *n = kiln_frame_printf(ctx, "%s", "");
    cr_assert_str_eq(a, "enemy 7 (grunt) at 2.5");
    cr_assert_str_eq(f, "00042|ab  |");
    cr_assert_str_eq(d, "level one");
    cr_assert_str_eq(e, "");
    cr_assert_str_eq(n, "");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_text, vprintf) {
    cr_assert_str_eq(call_arena_vprintf(level, "%s-%d", "a", 1), "a-1");
    cr_assert_str_eq(call_frame_vprintf(ctx, "%x", 255u), "ff");
}

/* Strings of many blocks: nothing is truncated. */
Test(arena_text, huge_strings_are_whole) {
    size_t n = 3 * BS + 17;
    char *big = malloc(n + 1);
    cr_assert_not_null(big);
    memset(big, 'k', n);
    big[n] = '\0';
    char *copy = kiln_arena_strdup(level, big);
    char *framed = kiln_frame_printf(ctx, "<%s>", big);
    char *padded = kiln_arena_printf(level, "%*d", (int)n, 5);
    cr_assert(copy && framed && padded);
    cr_assert_eq(strlen(copy), n);
    cr_assert_eq(memcmp(copy, big, n + 1), 0);
    cr_assert_eq(strlen(framed), n + 2);
    cr_assert(framed[0] == '<' && framed[n + 1] == '>' && memcmp(framed + 1, big, n) == 0);
    cr_assert_eq(strlen(padded), n);
    cr_assert_eq(padded[n - 1], '5');
    free(big);
}

Test(arena_text, null_format_and_string_are_refused) {
    uint64_t errors0 = api_errors();
    const char *no_fmt = NULL;
    cr_assert_null(kiln_arena_printf(level, no_fmt));
    cr_assert_null(kiln_frame_printf(ctx, no_fmt));
    cr_assert_null(kiln_arena_strdup(level, NULL));
    cr_assert_null(kiln_frame_strdup(ctx, NULL));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_STRING_NULL), 4, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_STRING_NULL, "kiln_arena_strdup: arena 'level'"), 1);
    cr_assert_eq(api_errors(), errors0 + 4);
}

/* A wide character the "C" locale cannot encode: vsnprintf fails (EILSEQ). */
Test(arena_text, format_error_returns_null_logged) {
    static const wchar_t unencodable[] = { 0x263A, 0 };
    size_t before = in_use(level);
    cr_assert_null(kiln_arena_printf(level, "%ls", unencodable));
    cr_assert_null(kiln_frame_printf(ctx, "x%lsy", unencodable));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_FORMAT_FAILED), 2, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_FORMAT_FAILED, "arena 'level'"), 1);
    cr_assert_eq(in_use(level), before, "nothing allocated for a failed format");
}

Test(arena_text, string_refusals_of_the_arena) {
    kiln_arena *dead = kiln_arena_create(rt, "dead");
    kiln_arena_destroy(dead);
    cr_assert_null(kiln_arena_printf(dead, "%d", 1));
    cr_assert_null(kiln_arena_strdup(dead, "x"));
    cr_assert_null(call_arena_vprintf(dead, "%d", 2));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'dead'"), 3,
                 "log:%s", recorded_summary(rec));
}

static void null_arena_printf(void) { cr_assert_null(kiln_arena_printf(NULL, "%d", 1)); }
static void null_arena_strdup(void) { cr_assert_null(kiln_arena_strdup(NULL, "x")); }
static void null_ctx_printf(void) { cr_assert_null(kiln_frame_printf(NULL, "%d", 1)); }
static void null_ctx_strdup(void) { cr_assert_null(kiln_frame_strdup(NULL, "x")); }

Test(arena_text, strings_with_null_arena_or_ctx) {
    cr_assert_eq(stderr_items(null_arena_printf, "ARENA_NULL"), 1);
    cr_assert_eq(stderr_items(null_arena_strdup, "ARENA_NULL"), 1);
    cr_assert_eq(stderr_items(null_ctx_printf, "CONTEXT_NULL"), 1);
    cr_assert_eq(stderr_items(null_ctx_strdup, "CONTEXT_NULL"), 1);
}

/* ---------- growing ---------- */

Test(arena_text, grow_the_last_allocation_in_place) {
    char *p = kiln_arena_alloc(level, 100, 16);
    fill_pattern(p, 100, 1);
    size_t before = in_use(level);
    char *q = kiln_arena_grow(level, p, 100, 1000, 16);
    cr_assert_eq(q, p, "the last allocation grows in place");
    cr_assert(check_pattern(q, 100, 1));
    cr_assert_eq(in_use(level), before + 900);
    memset(q, 1, 1000);
    char *next = kiln_arena_alloc(level, 1, 1);
    cr_assert_eq(next, p + 1000, "the next allocation starts after the grown end");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_text, grow_moves_when_not_last) {
    char *p = kiln_arena_alloc(level, 64, 0);
    fill_pattern(p, 64, 2);
    char *after = kiln_arena_alloc(level, 8, 0);
    memset(after, 0x11, 8);
    char *q = kiln_arena_grow(level, p, 64, 256, 0);
    cr_assert(q && q != p);
    cr_assert(check_pattern(q, 64, 2), "the copy holds the old contents");
    cr_assert(check_pattern(p, 64, 2), "the old allocation is left as it was");
    for (int i = 0; i < 8; i++) cr_assert_eq((unsigned char)after[i], 0x11);
    cr_assert(is_aligned(q, alignof(max_align_t)));
}

Test(arena_text, grow_moves_past_the_block_end) {
    char *p = kiln_arena_alloc(level, BS / 2, 0);
    fill_pattern(p, BS / 2, 3);
    char *q = kiln_arena_grow(level, p, BS / 2, BS - 8, 0);   /* past the block end */
    cr_assert(q && q != p);
    cr_assert(check_pattern(q, BS / 2, 3));
    char *r = kiln_arena_grow(level, q, BS - 8, 4 * BS, 64);   /* beyond a block: a mapping */
    cr_assert(r && is_aligned(r, 64));
    cr_assert(check_pattern(r, BS / 2, 3));
    memset(r, 0, 4 * BS);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

Test(arena_text, grow_null_is_an_allocation) {
    char *p = kiln_arena_grow(level, NULL, 0, 40, 8);
    cr_assert(p && is_aligned(p, 8));
    memset(p, 0, 40);
    cr_assert_eq(kiln_arena_grow(level, p, 40, 80, 8), p);
}

Test(arena_text, grow_to_a_stricter_alignment_moves_when_misaligned) {
    char *pad = kiln_arena_alloc(level, 1, 1);
    char *p = kiln_arena_alloc(level, 8, 1);
    cr_assert_eq(p, pad + 1);
    fill_pattern(p, 8, 4);
    char *q = kiln_arena_grow(level, p, 8, 16, 64);
    cr_assert(q && q != p && is_aligned(q, 64));
    cr_assert(check_pattern(q, 8, 4));
    char *s = kiln_arena_grow(level, p, 8, 4, 64);   /* a shrink too: ptr is misaligned */
    cr_assert(s && s != p && is_aligned(s, 64));
}

Test(arena_text, shrink_in_place_and_not_last) {
    char *p = kiln_arena_alloc(level, 512, 16);
    size_t before = in_use(level);
    cr_assert_eq(kiln_arena_grow(level, p, 512, 128, 16), p);
    cr_assert_eq(in_use(level), before - 384);
    char *next = kiln_arena_alloc(level, 1, 1);
    cr_assert_eq(next, p + 128, "the shrunk tail is the arena's again");
    cr_assert_eq(kiln_arena_grow(level, p, 128, 64, 16), p, "not last: ptr, unchanged");
    cr_assert_eq(kiln_arena_alloc(level, 1, 1), next + 1, "nothing moved");
    kiln_arena_stats s;
    kiln_arena_stats_get(level, &s);
    cr_assert_geq(s.peak_frame, before, "the peak was recorded before the shrink");
}

/* A mark taken before the allocation: its scope holds the allocation, so the grow is in
 * place and a release frees it all. */
Test(arena_text, grow_under_an_earlier_mark_is_in_place) {
    kiln_mark mark = kiln_arena_mark(level);
    char *p = kiln_arena_alloc(level, 32, 0);
    cr_assert_eq(kiln_arena_grow(level, p, 32, 4096, 0), p);
    kiln_arena_release(level, mark);
    cr_assert_eq(kiln_arena_alloc(level, 32, 0), p, "released with its scope");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* A mark taken after the allocation: its scope starts at the allocation's end, so the
 * grow moves (and a shrink keeps ptr); a release to the mark keeps the original and
 * frees the copy; afterwards the mark is still live at the end, and still blocks. */
Test(arena_text, grow_after_a_mark_taken_after_it_moves) {
    char *p = kiln_arena_alloc(level, 64, 0);
    fill_pattern(p, 64, 5);
    kiln_mark mark = kiln_arena_mark(level);
    size_t at_mark = in_use(level);
    char *q = kiln_arena_grow(level, p, 64, 128, 0);
    cr_assert(q && q != p, "a grow never moves the position past a mark taken after ptr");
    cr_assert(check_pattern(q, 64, 5));
    cr_assert_eq(kiln_arena_grow(level, q, 128, 256, 0), q, "the copy is last: in place");
    kiln_arena_release(level, mark);
    cr_assert_eq(in_use(level), at_mark);
    cr_assert(check_pattern(p, 64, 5), "the original survives the release");
    char *r = kiln_arena_grow(level, p, 64, 128, 0);
    cr_assert(r && r != p, "the released-to mark still blocks");
    cr_assert_eq(kiln_arena_grow(level, p, 64, 32, 0), p, "a shrink below the mark keeps ptr");
    kiln_arena_release(level, (kiln_mark){ { 0, 0 } });
    char *s = kiln_arena_alloc(level, 64, 0);
    cr_assert_eq(kiln_arena_grow(level, s, 64, 128, 0), s, "no live mark after a release to {0}");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* The frame array of memory.h's example. */
Test(arena_text, growing_frame_array) {
    kiln_arena *frame = kiln_frame_arena(ctx);
    uint32_t *items = NULL;
    size_t count = 0, cap = 0, moves = 0;
    for (uint32_t i = 0; i < 100000; i++) {
        if (count == cap) {
            size_t grown = cap ? 2 * cap : 16;
            uint32_t *more = kiln_arena_grow(frame, items, cap * sizeof *items,
                                             grown * sizeof *items, KILN_ALIGNOF(uint32_t));
            cr_assert_not_null(more);
            moves += more != items;
            items = more;
            cap = grown;
        }
        items[count++] = i;
    }
    for (uint32_t i = 0; i < 100000; i++) cr_assert_eq(items[i], i);
    cr_assert_lt(moves, 10, "in place within a block; moves only at block and mapping sizes");
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}

/* Growing in place over the frame budget goes through the allocation, which warns. */
Test(arena_text_debug, grow_over_the_frame_budget_warns) {
    start(0, 4096);
    kiln_arena *frame = kiln_frame_arena(ctx);
    kiln_frame_begin(ctx);
    char *p = kiln_arena_alloc(frame, 1024, 0);
    char *q = kiln_arena_grow(frame, p, 1024, 8192, 0);
    cr_assert_not_null(q);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_FRAME_BUDGET_EXCEEDED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(kiln_arena_grow(frame, q, 8192, 16384, 0), q, "warned: in place again");
    kiln_frame_end(ctx);
}

Test(arena_text, grow_refusals) {
    cr_assert_null(kiln_arena_grow(level, NULL, 0, 16, 3));
    char *p = kiln_arena_alloc(level, 16, 0);
    cr_assert_null(kiln_arena_grow(level, p, 16, 32, 24));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_BAD_ALIGN), 2, "log:%s", recorded_summary(rec));
    cr_assert_null(kiln_arena_grow(level, p, 16, SIZE_MAX, 0));
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_SIZE_OVERFLOW), 1, "log:%s", recorded_summary(rec));
    kiln_arena *dead = kiln_arena_create(rt, "dead");
    char *d = kiln_arena_alloc(dead, 16, 0);
    kiln_arena_destroy(dead);
    cr_assert_null(kiln_arena_grow(dead, d, 16, 32, 0));
    cr_assert_null(kiln_arena_grow(dead, NULL, 0, 32, 0));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_DESTROYED, "arena 'dead'"), 2,
                 "log:%s", recorded_summary(rec));
}

static void null_arena_grow(void) { cr_assert_null(kiln_arena_grow(NULL, NULL, 0, 8, 0)); }

Test(arena_text, grow_null_arena) {
    cr_assert_eq(stderr_items(null_arena_grow, "ARENA_NULL"), 1);
}

/* KILN_DEBUG_CHECKS: a pointer the arena does not have in use is refused unread. */
Test(arena_text_debug, grow_foreign_pointer_with_checks) {
    start(KILN_DEBUG_CHECKS, 0);
    uint64_t errors0 = api_errors();
    long local[4] = { 0 };
    cr_assert_null(kiln_arena_grow(level, local, sizeof local, 64, 0));
    char *framed = kiln_frame_alloc(ctx, 32, 0);
    cr_assert_null(kiln_arena_grow(level, framed, 32, 64, 0), "another arena's memory");
    kiln_mark mark = kiln_arena_mark(level);
    char *gone = kiln_arena_alloc(level, 32, 0);
    kiln_arena_release(level, mark);
    cr_assert_null(kiln_arena_grow(level, gone, 32, 64, 0), "released memory");
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GROW_FOREIGN, "arena 'level'"), 3,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(api_errors(), errors0 + 3);
    char *p = kiln_arena_alloc(level, 32, 0);
    char *big = kiln_arena_alloc(level, 2 * BS, 0);
    cr_assert_eq(kiln_arena_grow(level, p, 32, 64, 0) == NULL, false, "its own block memory");
    cr_assert_not_null(kiln_arena_grow(level, big, 2 * BS, 3 * BS, 0), "its own mapping");
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GROW_FOREIGN), 3);
}

/* Guards, fill and poison: the back guard moves with the end, grown bytes read 0xCD and
 * are usable even where a released object was poisoned, a shrink's tail reads 0xDD, and a
 * write past the grown size is reported at reset, naming the grow's record. */
Test(arena_text_debug, grow_moves_the_guard) {
    start(KILN_DEBUG_GUARDS | KILN_DEBUG_FILL | KILN_DEBUG_POISON | KILN_DEBUG_SITES, 0);
    kiln_mark mark = kiln_arena_mark(level);
    char *old = kiln_arena_alloc(level, 4096, 0);
    memset(old, 0, 4096);
    kiln_arena_release(level, mark);   /* poisoned now */
    char *p = kiln_arena_alloc_at(level, 32, 0, "grow-site.c", 7);
    memset(p, 0x42, 32);
    char *q = kiln_arena_grow(level, p, 32, 2048, 0);
    cr_assert_eq(q, p, "in place with guards too");
    for (size_t i = 0; i < 32; i++) cr_assert_eq((unsigned char)q[i], 0x42);
    for (size_t i = 32; i < 2048; i++) cr_assert_eq((unsigned char)q[i], 0xCD);
    memset(q, 0x24, 2048);   /* unpoisoned: ASan stays quiet */
    cr_assert_eq(kiln_arena_grow(level, q, 2048, 1024, 0), q, "a shrink in place");
    kiln_arena_reset(level);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 0, "log:%s", recorded_summary(rec));

    char *r = kiln_arena_alloc_at(level, 32, 0, "grow-site.c", 9);
    cr_assert_eq(kiln_arena_grow(level, r, 32, 100, 0), r);
    r[40] = 1;    /* where the old guard was: the object's now */
    r[100] = 1;   /* past the grown size: the new guard */
    kiln_arena_reset(level);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "offset 100"), 1,
                 "log:%s", recorded_summary(rec));
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "grow-site.c:9"), 1);
}

/* A damage to the old guard is reported when the grow moves it. */
Test(arena_text_debug, grow_reports_a_damaged_old_guard) {
    start(KILN_DEBUG_GUARDS, 0);
    char *p = kiln_arena_alloc(level, 32, 0);
    p[32] = 7;
    cr_assert_eq(kiln_arena_grow(level, p, 32, 64, 0), p);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "at grow"), 1,
                 "log:%s", recorded_summary(rec));
    kiln_arena_reset(level);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 1, "once");
}

/* With records, the grown allocation must be the newest record: one after it moves it. */
Test(arena_text_debug, grow_with_records_moves_when_not_newest) {
    start(KILN_DEBUG_GUARDS | KILN_DEBUG_FILL, 0);
    char *p = kiln_arena_alloc(level, 48, 0);
    fill_pattern(p, 48, 6);
    char *after = kiln_arena_alloc(level, 8, 0);
    cr_assert_not_null(after);
    char *q = kiln_arena_grow(level, p, 48, 96, 0);
    cr_assert(q && q != p);
    cr_assert(check_pattern(q, 48, 6));
    kiln_mark mark = kiln_arena_mark(level);
    char *r = kiln_arena_grow(level, q, 96, 192, 0);
    cr_assert(r && r != q, "a mark taken after it blocks the debug path too");
    kiln_arena_release(level, mark);
    kiln_arena_reset(level);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED), 0, "log:%s", recorded_summary(rec));
}

/* A grow that must move keeps the allocation's site: the copy is counted under it, never
 * under no site, and a guard report on the copy names it. */
Test(arena_text_debug, grow_that_moves_keeps_the_site) {
    start(KILN_DEBUG_SITES | KILN_DEBUG_GUARDS, 0);
    char *p = kiln_arena_alloc_at(level, 32, 0, "grow-site.c", 11);
    cr_assert_not_null(kiln_arena_alloc_at(level, 8, 0, "other-site.c", 3));   /* p is not last */
    char *q = kiln_arena_grow(level, p, 32, 200, 0);
    cr_assert(q && q != p, "moved");
    kiln_site_stats sites[8];
    size_t n = kiln_sites_top(rt, sites, 8);
    cr_assert_leq(n, 8);
    uint64_t at_site = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_not_null(sites[i].file, "the moved copy is counted under no site (%zu allocs)",
                           (size_t)sites[i].allocs);
        if (strcmp(sites[i].file, "grow-site.c") == 0 && sites[i].line == 11) at_site = sites[i].allocs;
    }
    cr_assert_eq(at_site, 2, "the allocation and its moved copy");
    q[200] = 1;   /* past the grown size: the copy's back guard */
    kiln_arena_reset(level);
    cr_assert_eq(count_items_with(rec, KILN_LOGITEM_ARENA_GUARD_DAMAGED, "grow-site.c:11"), 1,
                 "log:%s", recorded_summary(rec));
}

/* An empty vector (0 bytes) shares its address with the allocation after it: its grow
 * keeps its own site, not that one's (the third hostile review). */
Test(arena_text_debug, grow_of_an_empty_allocation_keeps_its_own_site) {
    start(KILN_DEBUG_SITES, 0);
    char *empty = kiln_arena_alloc_at(level, 0, 8, "vec.c", 1);
    char *next = kiln_arena_alloc_at(level, 8, 8, "other.c", 2);
    cr_assert(empty && next);
    char *grown = kiln_arena_grow(level, empty, 0, 64, 8);
    cr_assert(grown && grown != next);
    kiln_site_stats sites[8];
    size_t n = kiln_sites_top(rt, sites, 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        cr_assert_not_null(sites[i].file);
        if (strcmp(sites[i].file, "vec.c") == 0) cr_assert_eq(sites[i].allocs, 2, "the empty one and its copy");
        if (strcmp(sites[i].file, "other.c") == 0) cr_assert_eq(sites[i].allocs, 1, "the copy counted here");
    }
}

/* KILN_DEBUG_OWNERSHIP without records: the plain in-place path, its use checked. */
Test(arena_text_debug, grow_with_ownership_only) {
    start(KILN_DEBUG_OWNERSHIP, 0);
    char *p = kiln_arena_alloc(level, 16, 0);
    cr_assert_eq(kiln_arena_grow(level, p, 16, 64, 0), p);
    cr_assert_eq(recorded_count(rec), 0, "log:%s", recorded_summary(rec));
}
