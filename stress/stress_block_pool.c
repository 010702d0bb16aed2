/* stress/stress_block_pool.c — the block pool's contract under load: any number of
 * threads get and put blocks of ONE pool at once (lock-free), while it grows, while
 * a trim step moves free blocks to the trimmed LIFO one at a time (whole passes and
 * bounded steps, alternately), and against a memory_limit.
 *
 * Every block a thread gets is filled with a pattern derived from (block address,
 * thread, sequence number), the first word (the free-list link while the block is
 * free) included, and the whole pattern is verified before the block goes back: a
 * block handed out twice, a link written into a block in use, a trim that decommits
 * a block in use, all show up as a mismatch. Some blocks travel to another thread
 * through a mailbox of atomic slots and are verified and put back there.
 *
 * Four phases, each on a fresh pool with small reservations (in the first three
 * growth goes on all run long, since each thread's demand ramps up over the phase):
 *   grow   no memory_limit
 *   tight  a limit below what one thread alone holds: refusals happen, concurrently
 *          with everything else
 *   ample  a limit just above the most blocks the threads can hold at once: a refusal
 *          would mean the pool refused with free blocks to give
 *   hot    each thread holds at most two blocks, so a handful of blocks cycle through
 *          the LIFO's top: the ABA case (a popper delayed between reading top->next and
 *          its CAS while others pop that top, pop its successor and push it back) has
 *          its best chance to happen
 * In every phase the pool may reserve at most one reservation more than the threads
 * can hold at once: it grows only when every block is taken, never because a trim
 * step holds a free block for a moment. At the end of each phase the free and trimmed
 * LIFOs are popped empty and must hold exactly blocks_reserved distinct blocks.
 * Usage: stress-block-pool [--threads N] [--iterations N] [--seed S]; --iterations
 * counts the operations of each thread in each phase. Exit status 0 when every check
 * held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include "alloc/block_pool.h"
#include <pthread.h>

enum {
    BLOCK_SIZE     = 4096,
    BLOCK_WORDS    = BLOCK_SIZE / sizeof(uint64_t),
    RESERVE_BLOCKS = 8,     /* per OS reservation: small, so growth is frequent */
    MAX_HOLD       = 48,    /* most blocks one thread holds (the top of its ramp) */
    HOT_HOLD       = 2,     /* the hot phase: a handful of blocks cycle through the top */
    TIGHT_BLOCKS   = MAX_HOLD / 2,   /* the tight limit: one thread alone goes over it */
    MAILBOX_SLOTS  = 8,
    TRIM_EVERY     = 256,   /* thread 0 trims once per this many of its operations */
    TAG_MASK       = 0xfff, /* mailbox entries: block address | 12-bit tag */
};

_Static_assert(BLOCK_SIZE > TAG_MASK, "mailbox tags live in the block's low address bits");

typedef enum phase_kind { PHASE_GROW, PHASE_TIGHT, PHASE_AMPLE, PHASE_HOT } phase_kind;

typedef struct held_block {
    uint64_t *words;
    uint64_t  seq;
} held_block;

typedef struct worker {
    pthread_t  thread;
    unsigned   id;
    stress_rng rng;
    held_block held[MAX_HOLD];
    unsigned   count;
    uint64_t   seq;           /* blocks this thread has filled */
    /* Results, read by main after the join. */
    uint64_t   gets, refusals, puts, sent, received, trims;
    size_t     trimmed_bytes;
} worker;

/* The one pool every thread shares, rebuilt for each phase; and the mailbox. */
static kiln_block_pool   pool;
static _Atomic uintptr_t mailbox[MAILBOX_SLOTS];
static stress_options    opt;
static phase_kind        kind;           /* written by main between phases */
static size_t            memory_limit;   /* likewise */
static unsigned          max_hold;       /* likewise: the most blocks one thread holds */

/* ---- the pattern ------------------------------------------------------------------ */

static uint64_t owner_word(unsigned tid, uint64_t seq) { return ((uint64_t)tid << 48) | seq; }

static uint64_t pattern_base(const uint64_t *words, unsigned tid, uint64_t seq) {
    return stress_mix((uint64_t)(uintptr_t)words ^ stress_mix(owner_word(tid, seq)));
}

/* Word 1 names the writer (thread, sequence) so a receiving thread can verify a block
 * it did not fill; every other word, the free-list link in word 0 included, carries
 * a value derived from address, thread and sequence. */
static void fill(uint64_t *words, unsigned tid, uint64_t seq) {
    uint64_t base = pattern_base(words, tid, seq);
    words[0] = base;
    words[1] = owner_word(tid, seq);
    for (size_t i = 2; i < BLOCK_WORDS; i++) words[i] = base + i * 0x9e3779b97f4a7c15ull;
}

/* Whether the block still holds exactly what (tid, seq) wrote; reports the first bad
 * word and how many there are. */
static bool verify(const uint64_t *words, unsigned tid, uint64_t seq, unsigned checker) {
    uint64_t base = pattern_base(words, tid, seq);
    size_t bad = 0, first = 0;
    uint64_t got = 0, want = 0;
    for (size_t i = 0; i < BLOCK_WORDS; i++) {
        uint64_t expect = i == 0 ? base : i == 1 ? owner_word(tid, seq)
                                                 : base + i * 0x9e3779b97f4a7c15ull;
        if (words[i] != expect) {
            if (bad++ == 0) first = i, got = words[i], want = expect;
        }
    }
    if (bad)
        stress_fail("block %p (filled by thread %u, seq %" PRIu64 ", checked by thread %u): "
                    "%zu of %zu words wrong, first at word %zu: 0x%016" PRIx64
                    " instead of 0x%016" PRIx64, (const void *)words, tid, seq, checker, bad,
                    (size_t)BLOCK_WORDS, first, got, want);
    return bad == 0;
}

static uintptr_t mailbox_tag(unsigned tid, uint64_t seq) {
    return ((uintptr_t)tid & 63) | (((uintptr_t)seq & 63) << 6);
}

/* ---- one thread's operations ---------------------------------------------------- */

static void get_one(worker *w) {
    uint64_t *words = kiln_block_get(&pool);
    if (!words) {
        w->refusals++;
        STRESS_CHECK(kind == PHASE_TIGHT, "thread %u: kiln_block_get refused in the %s phase",
                     w->id, kind == PHASE_AMPLE ? "ample-limit" : "unlimited");
        return;
    }
    w->gets++;
    STRESS_CHECK(((uintptr_t)words & (BLOCK_SIZE - 1)) == 0, "block %p is not aligned to %d",
                 (void *)words, BLOCK_SIZE);
    fill(words, w->id, ++w->seq);
    w->held[w->count++] = (held_block){ words, w->seq };
}

static void put_one(worker *w, uint64_t *words) {
    kiln_block_put(&pool, words);
    w->puts++;
}

/* A block another thread (or this one, earlier) left in the mailbox: check it against
 * the writer its word 1 names and the tag beside its address, then put it back. */
static void receive(worker *w, uintptr_t entry) {
    uint64_t *words = (uint64_t *)(entry & ~(uintptr_t)TAG_MASK);
    uint64_t owner = words[1];
    unsigned tid = (unsigned)(owner >> 48);
    uint64_t seq = owner & ((UINT64_C(1) << 48) - 1);
    STRESS_CHECK(tid < opt.threads && mailbox_tag(tid, seq) == (entry & TAG_MASK),
                 "block %p from the mailbox names writer %u seq %" PRIu64
                 " but its tag says otherwise", (void *)words, tid, seq);
    verify(words, tid, seq, w->id);
    w->received++;
    put_one(w, words);
}

static void drop_one(worker *w, uint64_t r) {
    unsigned j = (unsigned)stress_below(&w->rng, w->count);
    held_block hb = w->held[j];
    w->held[j] = w->held[--w->count];
    verify(hb.words, w->id, hb.seq, w->id);
    if ((r >> 40) % 8 == 0) {
        /* Hand it over: whatever the slot held is now this thread's to check and put. */
        unsigned slot = (unsigned)((r >> 20) % MAILBOX_SLOTS);
        uintptr_t entry = (uintptr_t)hb.words | mailbox_tag(w->id, hb.seq);
        uintptr_t old = atomic_exchange_explicit(&mailbox[slot], entry, memory_order_acq_rel);
        w->sent++;
        if (old) receive(w, old);
    } else {
        put_one(w, hb.words);
    }
}

/* Thread 0 only, so the trimmed-bytes figure moves by this call's work alone. */
static void trim_and_check(worker *w) {
    kiln_block_pool_stats s;
    kiln_block_pool_stats_get(&pool, &s);
    size_t before = s.trimmed_bytes;
    size_t bytes;
    if (w->trims % 2 == 0) {
        bytes = kiln_block_pool_trim(&pool);
    } else {
        size_t max_blocks = 1 + (size_t)stress_below(&w->rng, 8);
        size_t left = kiln_block_pool_trim_step(&pool, max_blocks);
        kiln_block_pool_stats_get(&pool, &s);
        bytes = s.trimmed_bytes - before;
        STRESS_CHECK(bytes <= max_blocks * BLOCK_SIZE, "a step of %zu blocks gave back %zu bytes",
                     max_blocks, bytes);
        STRESS_CHECK(left <= s.blocks_reserved, "a step left %zu resident free blocks of %" PRIu64,
                     left, s.blocks_reserved);
    }
    w->trims++;
    w->trimmed_bytes += bytes;
    STRESS_CHECK(bytes % BLOCK_SIZE == 0, "trim returned %zu bytes, not whole blocks", bytes);
    kiln_block_pool_stats_get(&pool, &s);
    if (memory_limit) {
        STRESS_CHECK(s.reserved_bytes <= memory_limit && s.peak_reserved_bytes <= memory_limit,
                     "reserved %zu (peak %zu) over the limit %zu while running",
                     s.reserved_bytes, s.peak_reserved_bytes, memory_limit);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    for (uint64_t i = 0; i < opt.iterations; i++) {
        /* Demand ramps from 1 block to max_hold over the phase: the pool keeps growing. */
        unsigned cap = kind == PHASE_HOT ? max_hold
                                         : 1 + (unsigned)((max_hold - 1) * i / opt.iterations);
        uint64_t r = stress_next(&w->rng);
        if (w->count < cap && (w->count == 0 || r % 100 < 55)) get_one(w);
        else if (w->count > 0) drop_one(w, r);
        if ((r >> 32) % 32 == 0) {
            uintptr_t entry = atomic_exchange_explicit(&mailbox[(r >> 50) % MAILBOX_SLOTS], 0,
                                                       memory_order_acq_rel);
            if (entry) receive(w, entry);
        }
        if (w->id == 0 && i % TRIM_EVERY == TRIM_EVERY - 1) trim_and_check(w);
    }
    while (w->count > 0) {
        held_block hb = w->held[--w->count];
        verify(hb.words, w->id, hb.seq, w->id);
        put_one(w, hb.words);
    }
    return NULL;
}

/* ---- one phase ------------------------------------------------------------------ */

static int compare_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* With the threads gone: the free and trimmed LIFOs hold exactly blocks_reserved
 * distinct, aligned blocks (none lost, none twice). Pops them all, checks, pushes them
 * back. */
static void check_free_list(uint64_t blocks_reserved) {
    size_t cap = (size_t)blocks_reserved + 1;
    void **seen = malloc(cap * sizeof *seen);
    if (!seen) {
        stress_fail("no memory to check the free list");
        return;
    }
    size_t n = 0;
    for (kiln_lifo_node *node; n < cap && (node = kiln_lifo_pop(&pool.free_blocks)) != NULL;)
        seen[n++] = node;
    for (kiln_lifo_node *node; n < cap && (node = kiln_lifo_pop(&pool.trimmed_blocks)) != NULL;)
        seen[n++] = node;
    STRESS_CHECK(n == blocks_reserved, "the free list holds %s%zu blocks, blocks_reserved is %" PRIu64,
                 n == cap ? "more than " : "", n == cap ? n - 1 : n, blocks_reserved);
    qsort(seen, n, sizeof *seen, compare_ptr);
    for (size_t i = 0; i < n; i++) {
        STRESS_CHECK(((uintptr_t)seen[i] & (BLOCK_SIZE - 1)) == 0, "free block %p misaligned",
                     seen[i]);
        STRESS_CHECK(i == 0 || seen[i] != seen[i - 1], "block %p is on the free list twice",
                     seen[i]);
    }
    /* All back on the free LIFO: a later trim gives the trimmed ones back again. */
    for (size_t i = 0; i < n; i++) kiln_lifo_push(&pool.free_blocks, seen[i]);
    free(seen);
}

typedef struct phase_result {
    uint64_t gets, refusals, sent, received, trims, blocks_reserved, os_maps;
    double   seconds;
} phase_result;

static phase_result run_phase(phase_kind k, const char *name, size_t limit, unsigned hold) {
    kind = k;
    memory_limit = limit;
    max_hold = hold;
    static const char *const expected_items[] = { "MEMORY_LIMIT_REACHED", NULL };
    stress_log log = { .expected = expected_items };
    kiln_block_pool_config config = {
        .block_size = BLOCK_SIZE,
        .reserve_bytes = RESERVE_BLOCKS * BLOCK_SIZE,
        .memory_limit = limit,
        .log = { stress_log_fn, &log, NULL },
    };
    phase_result result = { 0 };
    if (!kiln_block_pool_init(&pool, &config)) {
        stress_fail("%s: kiln_block_pool_init failed", name);
        return result;
    }
    worker *workers = calloc(opt.threads, sizeof *workers);
    if (!workers) {
        stress_fail("%s: no memory for %u workers", name, opt.threads);
        return result;
    }
    double start = stress_seconds();
    for (unsigned t = 0; t < opt.threads; t++) {
        workers[t].id = t;
        workers[t].rng = stress_rng_make(opt.seed, (uint64_t)k * 1000 + t);
        if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]) != 0) {
            stress_fail("%s: pthread_create failed", name);
            exit(2);
        }
    }
    for (unsigned t = 0; t < opt.threads; t++) pthread_join(workers[t].thread, NULL);
    /* What is left in the mailbox: checked and put back by main (worker id 0's view). */
    worker drain = { .id = 0 };
    for (unsigned s = 0; s < MAILBOX_SLOTS; s++) {
        uintptr_t entry = atomic_exchange_explicit(&mailbox[s], 0, memory_order_acq_rel);
        if (entry) receive(&drain, entry);
    }
    result.seconds = stress_seconds() - start;

    uint64_t gets = 0, puts = drain.puts, refusals = 0, sent = 0, received = drain.received,
             trims = 0;
    size_t trimmed = 0;
    for (unsigned t = 0; t < opt.threads; t++) {
        gets += workers[t].gets;
        puts += workers[t].puts;
        refusals += workers[t].refusals;
        sent += workers[t].sent;
        received += workers[t].received;
        trims += workers[t].trims;
        trimmed += workers[t].trimmed_bytes;
    }
    kiln_block_pool_stats s;
    kiln_block_pool_stats_get(&pool, &s);
    STRESS_CHECK(s.blocks_in_use == 0, "%s: %" PRIu64 " blocks still in use", name, s.blocks_in_use);
    STRESS_CHECK(s.blocks_free == s.blocks_reserved, "%s: blocks_free %" PRIu64
                 " != blocks_reserved %" PRIu64, name, s.blocks_free, s.blocks_reserved);
    STRESS_CHECK(s.gets == gets, "%s: the pool counted %" PRIu64 " gets, the threads %" PRIu64,
                 name, s.gets, gets);
    STRESS_CHECK(puts == gets, "%s: %" PRIu64 " puts for %" PRIu64 " gets", name, puts, gets);
    STRESS_CHECK(sent == received, "%s: %" PRIu64 " blocks sent, %" PRIu64 " received", name,
                 sent, received);
    STRESS_CHECK(s.failures == refusals, "%s: the pool counted %" PRIu64
                 " failures, the threads saw %" PRIu64 " refusals", name, s.failures, refusals);
    STRESS_CHECK(s.trims == trims && s.trimmed_bytes == trimmed, "%s: trims %" PRIu64 "/%" PRIu64
                 ", trimmed bytes %zu/%zu", name, s.trims, trims, s.trimmed_bytes, trimmed);
    STRESS_CHECK(s.reserved_bytes == s.blocks_reserved * BLOCK_SIZE && s.large_mappings == 0,
                 "%s: reserved_bytes %zu for %" PRIu64 " blocks", name, s.reserved_bytes,
                 s.blocks_reserved);
    STRESS_CHECK(s.blocks_peak <= s.blocks_reserved && s.blocks_peak > 0,
                 "%s: blocks_peak %" PRIu64 " of %" PRIu64 " reserved", name, s.blocks_peak,
                 s.blocks_reserved);
    STRESS_CHECK(s.blocks_reserved <= s.os_maps * RESERVE_BLOCKS, "%s: %" PRIu64
                 " blocks from %" PRIu64 " reservations", name, s.blocks_reserved, s.os_maps);
    /* Growth happens only when every block is held (a trim pass makes gets wait, not
     * grow), and adds at most one reservation: the pool never holds much more than the
     * threads can hold at once. */
    uint64_t most_held = (uint64_t)opt.threads * (hold + 1) + MAILBOX_SLOTS;
    STRESS_CHECK(s.blocks_reserved <= most_held + RESERVE_BLOCKS, "%s: %" PRIu64
                 " blocks reserved, but the threads never held more than %" PRIu64, name,
                 s.blocks_reserved, most_held);
    if (limit) {
        STRESS_CHECK(s.peak_reserved_bytes <= limit, "%s: peak reserved %zu over the limit %zu",
                     name, s.peak_reserved_bytes, limit);
    }
    if (k == PHASE_TIGHT && opt.iterations >= STRESS_MIN_ITERATIONS) {
        /* Short runs may stop before the limit; longer ones must have met it. */
        STRESS_CHECK(refusals > 0 && atomic_load(&log.expected_seen) > 0,
                     "%s: the limit was never reached (%" PRIu64 " refusals)", name, refusals);
    }
    check_free_list(s.blocks_reserved);
    kiln_block_pool_fini(&pool);
    free(workers);

    result.gets = gets;
    result.refusals = refusals;
    result.sent = sent;
    result.received = received;
    result.trims = trims;
    result.blocks_reserved = s.blocks_reserved;
    result.os_maps = s.os_maps;
    return result;
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 200000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    uint64_t most_held = (uint64_t)opt.threads * (MAX_HOLD + 1) + MAILBOX_SLOTS;
    struct {
        phase_kind  kind;
        const char *name;
        size_t      limit;
        unsigned    hold;
    } phases[] = {
        { PHASE_GROW, "grow", 0, MAX_HOLD },
        { PHASE_TIGHT, "tight", TIGHT_BLOCKS * BLOCK_SIZE, MAX_HOLD },
        { PHASE_AMPLE, "ample", (size_t)(most_held + 1) * BLOCK_SIZE, MAX_HOLD },
        { PHASE_HOT, "hot", 0, HOT_HOLD },
    };
    double start = stress_seconds();
    char summary[1024];
    size_t used = 0;
    uint64_t total_gets = 0;
    for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
        phase_result r = run_phase(phases[p].kind, phases[p].name, phases[p].limit,
                                   phases[p].hold);
        total_gets += r.gets;
        used += (size_t)snprintf(summary + used, sizeof summary - used,
                         " | %s: %" PRIu64 " gets, %" PRIu64 " refused, %" PRIu64 " via mailbox, %"
                         PRIu64 " trims, %" PRIu64 " blocks, %.2fs", phases[p].name, r.gets,
                         r.refusals, r.received, r.trims, r.blocks_reserved, r.seconds);
        if (used >= sizeof summary) used = sizeof summary - 1;   /* truncated, never past */
    }
    uint64_t failures = stress_failure_count();
    printf("stress-block-pool: %s: threads %u, iterations %" PRIu64 ", seed %" PRIu64
           ", %" PRIu64 " gets in %.2fs%s, %" PRIu64 " failures\n",
           failures ? "FAILED" : "ok", opt.threads, opt.iterations, opt.seed, total_gets,
           stress_seconds() - start, summary, failures);
    return failures ? 1 : 0;
}
