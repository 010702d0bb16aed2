/* stress/stress_heap.c — the general heap (kiln/heap.h) under load: worker threads, each
 * attached, allocate random sizes (mostly small, some past the classes into dedicated
 * mappings) under three tags and none, fill each allocation with a pattern that names its
 * owner, realloc some (growing and shrinking, across the class/large boundary), and hand
 * a share to one another through exchange slots, where the thread that swaps one out
 * verifies and frees it: a cross-thread free, with the tag's credit going to the freeing
 * context. One tag has a REFUSE budget under a parent with a REFUSE budget of its own, so
 * allocations are refused concurrently. Meanwhile:
 *   - a churn thread attaches, allocates, detaches (its cache and credit flushed) and
 *     leaves some allocations behind for the workers to free; now and then it makes and
 *     destroys a second runtime, while the stats thread looks a pointer up without a
 *     context (kiln_heap_usable_size walks every runtime's heap);
 *   - a stats thread reads the heap's and the tags' figures without pause, checks that
 *     no tag's live bytes ever pass its REFUSE budget, and trims now and then;
 *   - a few deliberate bad frees (malloc's, the stack's, an interior pointer) must be
 *     refused and counted.
 * At the end, every context detached: nothing live in the heap or any tag, each tag's
 * allocs == frees, failures == the NULLs the threads saw, bad_frees == the deliberate
 * ones, and no log line but the expected items.
 * Usage: stress-heap [--threads N] [--iterations N] [--seed S]. Exit 0 when every check
 * held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include <kiln/kiln.h>
#include <pthread.h>

enum { MAX_HOLD = 48, SLOTS = 32, NTAGS = 4, TIGHT = 2 };
#define PARENT_BUDGET ((size_t)3 << 20)
#define TIGHT_BUDGET  ((size_t)1 << 20)

typedef struct held { unsigned char *p; size_t size; uint64_t owner; unsigned tag; } held;

typedef struct thread_state {
    pthread_t  thread;
    unsigned   id;
    stress_rng rng;
    kiln_ctx  *ctx;
    uint64_t   seq;
    held       hold[MAX_HOLD];
    unsigned   count;
    uint64_t   allocs, nulls, frees, cross, reallocs, bad;
} thread_state;

static stress_options    opt;
static kiln_runtime     *rt;
static kiln_tag          tags[NTAGS];      /* [0] untagged, [1] WARN, [2] tight REFUSE, [3] parent */
static _Atomic(held *)   slots[SLOTS];
static _Atomic int       stop_helpers;
static _Atomic uint64_t  bad_expected, tight_nulls;
static void             *looked_up;        /* a long-lived allocation the stats thread finds */
static pthread_barrier_t start_barrier;

enum { LOG_FOREIGN, LOG_INTERIOR, LOG_REFUSED, LOG_NEAR };   /* places in log_items */
static const char *const log_items[] = {
    "HEAP_FOREIGN_POINTER", "HEAP_INTERIOR_POINTER", "TAG_BUDGET_REFUSED", "TAG_BUDGET_NEAR", NULL,
};
static stress_log items_seen = { .expected = log_items };

/* Bytes 0-7 the owner word, then words of the address and the owner, cut to size. */
static void fill(unsigned char *p, size_t size, uint64_t owner) {
    memcpy(p, &owner, 8);
    for (size_t i = 8; i < size; i += 8) {
        uint64_t x = stress_mix(owner) + i * 0x9e3779b97f4a7c15ull;
        memcpy(p + i, &x, size - i < 8 ? size - i : 8);
    }
}

static bool intact(const unsigned char *p, size_t size, uint64_t owner) {
    if (memcmp(p, &owner, 8) != 0) return false;
    for (size_t i = 8; i < size; i += 8) {
        uint64_t x = stress_mix(owner) + i * 0x9e3779b97f4a7c15ull;
        if (memcmp(p + i, &x, size - i < 8 ? size - i : 8) != 0) return false;
    }
    return true;
}

static size_t random_size(stress_rng *rng) {
    uint64_t r = stress_below(rng, 1000);
    if (r < 900) return 8 + stress_below(rng, 1000);
    if (r < 990) return 1000 + stress_below(rng, 15000);
    return 16385 + stress_below(rng, 300000);
}

static bool take(thread_state *ts, held *h) {
    unsigned t = (unsigned)stress_below(&ts->rng, 3);
    size_t size = random_size(&ts->rng);
    unsigned char *p = kiln_heap_alloc(ts->ctx, tags[t], size, stress_below(&ts->rng, 8) == 0 ? 64 : 0);
    if (!p) {
        STRESS_CHECK(t == TIGHT, "an alloc of %zu bytes under tag %u failed", size, t);
        ts->nulls++;
        atomic_fetch_add_explicit(&tight_nulls, 1, memory_order_relaxed);
        return false;
    }
    STRESS_CHECK(kiln_heap_usable_size(p) >= size, "usable size under the size asked");
    STRESS_CHECK(kiln_heap_tag(p).id == tags[t].id, "the tag read back is not the one given");
    uint64_t owner = ((uint64_t)ts->id << 48) | ts->seq++;
    fill(p, size, owner);
    *h = (held){ p, size, owner, t };
    ts->allocs++;
    return true;
}

static void give_back(thread_state *ts, const held *h) {
    STRESS_CHECK(intact(h->p, h->size, h->owner), "allocation %p of thread %u overwritten",
                 (void *)h->p, (unsigned)(h->owner >> 48));
    kiln_heap_free(ts->ctx, h->p);
    ts->frees++;
}

static void resize(thread_state *ts, held *h) {
    size_t size = stress_below(&ts->rng, 2) ? h->size * 2 + 8 : h->size / 2 + 8;
    if (size > ((size_t)1 << 20)) size = 64;
    unsigned char *p = kiln_heap_realloc(ts->ctx, h->p, size, 0);
    if (!p) {   /* the tight tag refused the growth: the old one stays */
        STRESS_CHECK(h->tag == TIGHT, "a realloc to %zu bytes failed", size);
        atomic_fetch_add_explicit(&tight_nulls, 1, memory_order_relaxed);
        ts->nulls++;
        return;
    }
    size_t kept = size < h->size ? size : h->size;
    STRESS_CHECK(intact(p, kept, h->owner), "realloc lost contents");
    STRESS_CHECK(kiln_heap_tag(p).id == tags[h->tag].id, "realloc changed the tag");
    h->p = p;
    h->size = size;
    fill(p, size, h->owner);
    ts->reallocs++;
}

static void misuse(thread_state *ts) {
    int on_stack = 0;
    void *m = malloc(64);
    kiln_heap_free(ts->ctx, m);
    kiln_heap_free(ts->ctx, &on_stack);
    free(m);
    if (ts->count) {
        kiln_heap_free(ts->ctx, ts->hold[0].p + 8);   /* interior (or a large one's middle) */
        atomic_fetch_add_explicit(&bad_expected, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&bad_expected, 2, memory_order_relaxed);
    ts->bad += 3;
}

static void *worker(void *arg) {
    thread_state *ts = arg;
    ts->ctx = kiln_attach(rt);
    pthread_barrier_wait(&start_barrier);
    for (uint64_t i = 0; i < opt.iterations; i++) {
        uint64_t r = stress_below(&ts->rng, 100);
        if (r < 45 && ts->count < MAX_HOLD) {
            if (take(ts, &ts->hold[ts->count])) ts->count++;
        } else if (r < 75 && ts->count) {
            unsigned k = (unsigned)stress_below(&ts->rng, ts->count);
            give_back(ts, &ts->hold[k]);
            ts->hold[k] = ts->hold[--ts->count];
        } else if (r < 85 && ts->count) {
            resize(ts, &ts->hold[stress_below(&ts->rng, ts->count)]);
        } else if (r < 99 && ts->count) {   /* the exchange: a cross-thread free */
            unsigned k = (unsigned)stress_below(&ts->rng, ts->count);
            held *box = malloc(sizeof *box);
            *box = ts->hold[k];
            ts->hold[k] = ts->hold[--ts->count];
            held *out = atomic_exchange(&slots[stress_below(&ts->rng, SLOTS)], box);
            if (out) {
                give_back(ts, out);
                ts->cross++;
                free(out);
            }
        } else if (r == 99 && i % 64 == 0) {
            misuse(ts);
        }
    }
    while (ts->count) give_back(ts, &ts->hold[--ts->count]);
    kiln_detach(ts->ctx);
    return NULL;
}

/* Attaches, allocates a few, detaches leaving them in the exchange for the workers. */
static void *churn(void *arg) {
    thread_state *ts = arg;
    pthread_barrier_wait(&start_barrier);
    while (!atomic_load(&stop_helpers)) {
        ts->ctx = kiln_attach(rt);
        held h;
        for (int i = 0; i < 8; i++) {
            if (!take(ts, &h)) continue;
            if (i % 2) {
                give_back(ts, &h);
                continue;
            }
            held *box = malloc(sizeof *box);
            *box = h;
            held *out = atomic_exchange(&slots[stress_below(&ts->rng, SLOTS)], box);
            if (out) {
                give_back(ts, out);
                free(out);
            }
        }
        kiln_detach(ts->ctx);
        if (ts->seq % 64 < 8) {   /* a runtime made and destroyed beside the lookups */
            kiln_runtime *other = kiln_create(&(kiln_desc){ .log = stress_log_fn, .log_user = &items_seen,
                                                             .worker_count = KILN_NO_WORKERS });
            kiln_ctx *c = kiln_attach(other);
            kiln_heap_free(c, kiln_heap_alloc(c, (kiln_tag){ 0 }, 100000, 0));
            kiln_detach(c);
            kiln_destroy(other);
        }
    }
    return NULL;
}

/* Reads the figures; no tag passes a REFUSE budget at any read. */
static void *stats(void *arg) {
    thread_state *ts = arg;
    pthread_barrier_wait(&start_barrier);
    uint64_t reads = 0;
    while (!atomic_load(&stop_helpers)) {
        kiln_heap_stats hs;
        STRESS_CHECK(kiln_stats_heap(rt, &hs), "kiln_stats_heap failed");
        kiln_tag_stats s;
        STRESS_CHECK(kiln_tag_stats_get(rt, tags[TIGHT], &s) && s.live_bytes <= TIGHT_BUDGET &&
                     s.peak_bytes <= TIGHT_BUDGET, "the tight tag passed its budget: %" PRIu64,
                     s.live_bytes);
        STRESS_CHECK(kiln_tag_stats_get(rt, tags[3], &s) && s.peak_bytes <= PARENT_BUDGET,
                     "the parent passed its budget: %" PRIu64, s.peak_bytes);
        STRESS_CHECK(kiln_heap_usable_size(looked_up) == 64, "a lookup lost an allocation");
        kiln_heap_class_stats classes[KILN_HEAP_CLASSES];
        kiln_stats_heap_classes(rt, classes, KILN_HEAP_CLASSES);
        if (++reads % 64 == 0) kiln_trim(rt);
    }
    (void)ts;
    return NULL;
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 200000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    kiln_desc d = { .log = stress_log_fn, .log_user = &items_seen, .worker_count = KILN_NO_WORKERS, .warn_percent = 90,
                    .log_every_repeat = true };   /* every bad free logged: counted below */
    rt = kiln_create(&d);
    if (!rt) return 1;
    tags[1] = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Warn" });
    tags[3] = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Parent", .budget = PARENT_BUDGET,
                                                    .policy = KILN_BUDGET_REFUSE });
    tags[TIGHT] = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Tight", .parent = tags[3],
                                                        .budget = TIGHT_BUDGET,
                                                        .policy = KILN_BUDGET_REFUSE });
    kiln_ctx *main_ctx = kiln_attach(rt);
    looked_up = kiln_heap_alloc(main_ctx, (kiln_tag){ 0 }, 64, 0);
    unsigned n = opt.threads;
    thread_state *ts = calloc(n + 2, sizeof *ts);
    pthread_barrier_init(&start_barrier, NULL, n + 3);
    for (unsigned i = 0; i < n + 2; i++) {
        ts[i].id = i + 1;
        ts[i].rng = stress_rng_make(opt.seed, i);
        pthread_create(&ts[i].thread, NULL, i < n ? worker : i == n ? churn : stats, &ts[i]);
    }
    double t0 = stress_seconds();
    pthread_barrier_wait(&start_barrier);
    for (unsigned i = 0; i < n; i++) pthread_join(ts[i].thread, NULL);
    atomic_store(&stop_helpers, 1);
    pthread_join(ts[n].thread, NULL);
    pthread_join(ts[n + 1].thread, NULL);
    kiln_heap_free(main_ctx, looked_up);
    kiln_detach(main_ctx);
    /* What is left in the exchange goes through a last context. */
    kiln_ctx *last = kiln_attach(rt);
    thread_state fin = { .ctx = last };
    for (unsigned s = 0; s < SLOTS; s++) {
        held *h = atomic_exchange(&slots[s], NULL);
        if (h) give_back(&fin, h);
        free(h);
    }
    kiln_detach(last);

    uint64_t nulls = 0, allocs = 0, cross = 0, reallocs = 0;
    for (unsigned i = 0; i <= n; i++) {
        nulls += ts[i].nulls;
        allocs += ts[i].allocs;
        cross += ts[i].cross;
        reallocs += ts[i].reallocs;
    }
    kiln_heap_stats hs;
    kiln_stats_heap(rt, &hs);
    STRESS_CHECK(hs.live_objects == 0 && hs.live_bytes == 0 && hs.large_live == 0,
                 "left live: %" PRIu64 " objects, %" PRIu64 " bytes", hs.live_objects, hs.live_bytes);
    STRESS_CHECK(hs.allocs == hs.frees, "heap allocs %" PRIu64 " != frees %" PRIu64, hs.allocs, hs.frees);
    STRESS_CHECK(hs.failures == nulls, "failures %" PRIu64 " != NULLs seen %" PRIu64, hs.failures, nulls);
    STRESS_CHECK(hs.bad_frees == atomic_load(&bad_expected), "bad_frees %" PRIu64 " != %" PRIu64,
                 hs.bad_frees, atomic_load(&bad_expected));
    for (unsigned t = 1; t < NTAGS; t++) {
        kiln_tag_stats s;
        kiln_tag_stats_get(rt, tags[t], &s);
        STRESS_CHECK(s.live_bytes == 0 && s.allocs == s.frees, "tag %s: %" PRIu64 " bytes live, "
                     "%" PRIu64 " allocs, %" PRIu64 " frees", s.name, s.live_bytes, s.allocs, s.frees);
    }
    STRESS_CHECK(atomic_load(&items_seen.seen[LOG_FOREIGN]) + atomic_load(&items_seen.seen[LOG_INTERIOR]) ==
                 atomic_load(&bad_expected), "bad frees logged");
    kiln_destroy(rt);
    printf("stress-heap: %u threads, %" PRIu64 " allocs (%" PRIu64 " refused by the budget), "
           "%" PRIu64 " cross-thread frees, %" PRIu64 " reallocs in %.1f s; %" PRIu64 " failures\n",
           n, allocs, nulls, cross, reallocs, stress_seconds() - t0, stress_failure_count());
    free(ts);
    return stress_failure_count() == 0 ? 0 : 1;
}
