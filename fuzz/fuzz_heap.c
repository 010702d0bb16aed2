/* fuzz/fuzz_heap.c — libFuzzer target: the general heap (kiln/heap.h) driven through
 * allocs, callocs, reallocs and frees of input-chosen sizes (every class, and large ones),
 * alignments and tags (one with a REFUSE budget), frees from a second context, trims,
 * and bad calls (double frees, interior pointers, malloc's and the stack's memory, bad
 * alignments, sizes that overflow), against a model that knows every live allocation's
 * contents and tag, what the heap's and the tags' figures must read and which log items
 * must come.
 *
 * Input: one byte of debug bits (fuzz_debug_bits), then operations: a byte each, operands
 * after it. */
#include "fuzz_common.h"

#define MAX_LIVE    128
#define MAX_FREED   32
#define TAGS        3        /* [0] untagged, [1] WARN, [2] REFUSE */
#define BUDGET      ((size_t)256 * 1024)
#define CREDIT_SLOP (2 * 2 * (size_t)KILN_HEAP_TAG_CREDIT)   /* two contexts' credit at most */

typedef struct allocation {
    uint8_t *p;
    size_t   size, usable;
    unsigned tag;
    bool     large;      /* a dedicated mapping: past the classes, or aligned past a page */
    uint8_t  fill;
} allocation;

typedef struct world {
    fuzz_log      log;
    kiln_runtime *rt;
    kiln_ctx     *ctx, *remote;
    kiln_tag      tags[TAGS];
    allocation    live[MAX_LIVE];
    uint32_t      live_count;
    uint8_t      *freed[MAX_FREED];   /* class allocations freed, not handed out again */
    uint32_t      freed_count;
    uint64_t      bad_frees, double_frees;
    uint8_t       next_fill;
    uint8_t      *foreign;            /* malloc's */
} world;

static uint64_t tag_live(const world *w, unsigned tag) {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < w->live_count; i++)
        if (w->live[i].tag == tag) bytes += w->live[i].usable;
    return bytes;
}

static uint64_t tag_count(const world *w, unsigned tag) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < w->live_count; i++) n += w->live[i].tag == tag;
    return n;
}

static void check_all(world *w, bool full) {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < w->live_count; i++) {
        const allocation *a = &w->live[i];
        size_t bad = fuzz_fill_differs_at(a->p, a->size, a->fill, full);
        FUZZ_CHECK(bad == a->size, "allocation %p of %zu bytes changed at byte %zu", (void *)a->p, a->size, bad);
        bytes += a->usable;
    }
    kiln_heap_stats hs;
    FUZZ_CHECK(kiln_stats_heap(w->rt, &hs), "kiln_stats_heap failed");
    FUZZ_CHECK(hs.live_objects == w->live_count && hs.live_bytes == bytes,
               "heap: %" PRIu64 " live (%" PRIu64 " bytes), model %u (%" PRIu64 ")", hs.live_objects,
               hs.live_bytes, w->live_count, bytes);
    FUZZ_CHECK(hs.bad_frees == w->bad_frees && hs.double_frees == w->double_frees,
               "bad frees %" PRIu64 "/%" PRIu64 ", model %" PRIu64 "/%" PRIu64, hs.bad_frees,
               hs.double_frees, w->bad_frees, w->double_frees);
    for (unsigned t = 1; t < TAGS; t++) {
        kiln_tag_stats s;
        FUZZ_CHECK(kiln_tag_stats_get(w->rt, w->tags[t], &s), "kiln_tag_stats_get failed");
        FUZZ_CHECK(s.live_bytes == tag_live(w, t) && s.allocs - s.frees == tag_count(w, t),
                   "tag %u: %" PRIu64 " bytes, %" PRIu64 " allocations live; model %" PRIu64 ", %" PRIu64,
                   t, s.live_bytes, s.allocs - s.frees, tag_live(w, t), tag_count(w, t));
        FUZZ_CHECK(t != 2 || s.peak_bytes <= BUDGET, "the REFUSE tag peaked at %" PRIu64, s.peak_bytes);
    }
}

/* An allocation handed out takes its address off the freed list (no double free now). */
static void forget_freed(world *w, const uint8_t *p) {
    for (uint32_t i = 0; i < w->freed_count; i++)
        if (w->freed[i] == p) w->freed[i--] = w->freed[--w->freed_count];
}

static void add_live(world *w, uint8_t *p, size_t size, unsigned tag, bool large, bool zeroed) {
    size_t usable = kiln_heap_usable_size(p);
    FUZZ_CHECK(usable >= (size ? size : 1), "usable %zu under %zu", usable, size);
    FUZZ_CHECK(kiln_heap_tag(p).id == w->tags[tag].id, "tag read back wrong");
    if (zeroed) FUZZ_CHECK(fuzz_first_difference(p, size, 0) == size, "calloc not zeroed");
    forget_freed(w, p);
    for (uint32_t i = 0; i < w->live_count; i++)
        FUZZ_CHECK(!fuzz_overlap(p, usable, w->live[i].p, w->live[i].usable), "%p overlaps %p",
                   (void *)p, (void *)w->live[i].p);
    allocation *a = &w->live[w->live_count++];
    *a = (allocation){ p, size, usable, tag, large, w->next_fill++ };
    memset(p, a->fill, size);
}

/* A NULL from an alloc: only the REFUSE tag may say no, and only near its budget. */
static void refused(world *w, unsigned tag, size_t size) {
    FUZZ_CHECK(tag == 2, "an alloc of %zu bytes under tag %u returned NULL", size, tag);
    FUZZ_CHECK(tag_live(w, 2) + size + CREDIT_SLOP > BUDGET, "refused far from the budget: %" PRIu64
               " live + %zu", tag_live(w, 2), size);
    fuzz_log_allow(&w->log, "TAG_BUDGET_REFUSED");   /* once per frame */
}

static size_t pick_size(fuzz_input *in) {
    switch (fuzz_byte(in) % 4) {
    case 0: return fuzz_below(in, 129);
    case 1: return fuzz_below(in, 4097);
    case 2: return fuzz_below(in, 16385);
    default: return 16385 + fuzz_below(in, 200000);
    }
}

static void do_alloc(world *w, fuzz_input *in, bool zero) {
    if (w->live_count == MAX_LIVE) return;
    unsigned tag = fuzz_byte(in) % TAGS;
    size_t size = pick_size(in), align = zero ? 0 : (size_t)1 << fuzz_below(in, 14);
    if (align < 16) align = 0;
    uint8_t *p = zero ? kiln_heap_calloc(w->ctx, w->tags[tag], 1, size)
                      : kiln_heap_alloc(w->ctx, w->tags[tag], size, align);
    if (!p) {
        refused(w, tag, size);
        return;
    }
    FUZZ_CHECK(align == 0 || (uintptr_t)p % align == 0, "%p not aligned to %zu", (void *)p, align);
    add_live(w, p, size, tag, size > KILN_HEAP_CLASS_MAX || align > 4096, zero);
}

static void do_free(world *w, fuzz_input *in, bool remote) {
    if (!w->live_count) return;
    uint32_t i = fuzz_below(in, w->live_count);
    allocation a = w->live[i];
    w->live[i] = w->live[--w->live_count];
    kiln_heap_free(remote ? w->remote : w->ctx, a.p);
    if (!a.large && w->freed_count < MAX_FREED) w->freed[w->freed_count++] = a.p;
}

static void do_realloc(world *w, fuzz_input *in) {
    if (!w->live_count) return;
    uint32_t i = fuzz_below(in, w->live_count);
    allocation a = w->live[i];
    size_t size = pick_size(in);
    if (size == 0) size = 1;   /* 0 frees: do_free's */
    uint8_t *p = kiln_heap_realloc(w->ctx, a.p, size, 0);
    if (!p) {
        refused(w, a.tag, size);
        return;
    }
    size_t kept = size < a.size ? size : a.size;
    FUZZ_CHECK(fuzz_first_difference(p, kept, a.fill) == kept, "realloc lost contents");
    w->live[i] = w->live[--w->live_count];
    if (p != a.p && !a.large && w->freed_count < MAX_FREED) w->freed[w->freed_count++] = a.p;
    add_live(w, p, size, a.tag, p == a.p ? a.large : size > KILN_HEAP_CLASS_MAX, false);
    /* add_live filled it anew; kept bytes were checked above. */
}

static void bad_free(world *w, uint8_t *p, const char *item, bool twice) {
    kiln_heap_free(w->ctx, p);
    w->bad_frees++;
    w->double_frees += twice;
    fuzz_log_expect(&w->log, item, true, NULL);
}

static void step(world *w, fuzz_input *in) {
    uint8_t op = fuzz_byte(in);
    switch (op % 16) {
    case 0: case 1: case 2: case 3: do_alloc(w, in, false); break;
    case 4: do_alloc(w, in, true); break;
    case 5: case 6: case 7: do_free(w, in, false); break;
    case 8: do_free(w, in, true); break;
    case 9: case 10: do_realloc(w, in); break;
    case 11:   /* a double free of a class allocation */
        if (w->freed_count) bad_free(w, w->freed[fuzz_below(in, w->freed_count)], "HEAP_DOUBLE_FREE", true);
        break;
    case 12:   /* a pointer into a live allocation */
        if (w->live_count) {
            const allocation *a = &w->live[fuzz_below(in, w->live_count)];
            if (a->usable < 2) break;
            size_t at = 1 + fuzz_below(in, (uint32_t)(a->usable - 1));
            bad_free(w, a->p + at, "HEAP_INTERIOR_POINTER", false);   /* class or large */
        }
        break;
    case 13: {   /* another allocator's memory */
        uint8_t on_stack[32];
        bad_free(w, op & 16 ? w->foreign : on_stack, "HEAP_FOREIGN_POINTER", false);
        break;
    }
    case 14:   /* bad requests */
        FUZZ_CHECK(!kiln_heap_alloc(w->ctx, w->tags[0], 16, 3 + 2 * fuzz_below(in, 100)), "bad align");
        fuzz_log_expect(&w->log, "HEAP_BAD_ALIGN", true, NULL);
        FUZZ_CHECK(!kiln_heap_calloc(w->ctx, w->tags[0], SIZE_MAX / 2, 3 + fuzz_byte(in)), "calloc overflow");
        fuzz_log_expect(&w->log, "HEAP_TOO_LARGE", true, NULL);
        break;
    default:   /* a trim: blocks may change class, so freed addresses mean nothing now */
        kiln_detach(w->remote);
        w->remote = kiln_attach(w->rt);
        kiln_trim(w->rt);
        w->freed_count = 0;
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static world w;
    fuzz_input in = { data, size, 0 };
    memset(&w, 0, sizeof w);
    uint32_t debug = fuzz_debug_bits(fuzz_byte(&in));
    w.rt = fuzz_runtime(&w.log, 65536, debug);
    w.ctx = kiln_attach(w.rt);
    w.remote = kiln_attach(w.rt);
    w.tags[1] = kiln_tag_create(w.rt, &(kiln_tag_desc){ .name = "Warn" });
    w.tags[2] = kiln_tag_create(w.rt, &(kiln_tag_desc){ .name = "Refuse", .budget = BUDGET,
                                                         .policy = KILN_BUDGET_REFUSE });
    w.foreign = malloc(64);
    w.next_fill = 1;
    FUZZ_CHECK(w.ctx && w.remote && w.tags[1].id && w.tags[2].id && w.foreign, "set-up failed: %s", w.log.last);
    while (!fuzz_done(&in)) {
        step(&w, &in);
        check_all(&w, false);
    }
    check_all(&w, true);
    while (w.live_count) do_free(&w, &in, false);
    check_all(&w, true);
    kiln_detach(w.remote);
    kiln_detach(w.ctx);
    free(w.foreign);
    kiln_destroy(w.rt);
    fuzz_log_verify(&w.log, NULL);
    return 0;
}
