/* bench/handles_bench.c — the handle family of BENCH.md (H1): kiln_handle_get of live and
 * of stale handles, the alloc+free pair, and get while a second thread frees and
 * allocates in the same table, each against the same loop over
 *   - a plain array indexed by the handle (the floor: no check at all),
 *   - a pointer table of malloc'd objects behind one pthread mutex (what an engine might
 *     write first: lock, load the pointer, unlock; alloc = malloc + a free index),
 *   - a generational table without thread safety (index + generation compare with plain
 *     loads, a free list reused at once: the reference for what the check costs).
 *
 * Usage:
 *   handles_bench [--quick] [--only get|stale|pair|walk|contended]
 *       the tables; --quick: tiny rounds, every workload and peer in about a second
 *   handles_bench --callgrind get|stale|pair|ref-get|ref-pair N
 *       N gets (or pairs) of kiln or of the generational reference, counted by callgrind
 *       between client requests (valgrind --tool=callgrind --collect-atstart=no)
 *
 * Items are 64 bytes (an entity's hot part); every get reads the item's first word into
 * a sum that is checked against the expected one, so no load can be dropped and a get
 * that misses shows. Handles are visited in a fixed-seed random order, 4096 of them:
 * the items (and kiln's 16-byte slot headers: 80-byte slots) fit in L2. The single-thread
 * rows share one kiln runtime with no workers, driven by the main thread; the
 * contended rows run on a team of two threads with a runtime of their own.
 *
 * H2, the walk over every live item ("update every live entity"), is measured per
 * visited item: kiln_handles_foreach over a table with a hole in every fourth slot,
 * against a dense array of the same live items (the floor) and a vector of pointers to
 * items malloc'd one by one (the usual alternative). */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <ck_pr.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_config.h"
#include "harness.h"

#ifdef BENCH_HAVE_CALLGRIND_H
#  include <valgrind/callgrind.h>
#endif

#define INLINE static inline __attribute__((always_inline))

enum {
    HANDLES     = 4096,          /* the working set every get loop visits */
    CAPACITY    = 65536,         /* of every table (kiln's default) */
    FRAME_PAIRS = 1000,          /* kiln: a frame end (and begin) every this many pairs */
    CHURN_PAIRS = 8000,          /* the most pairs the churner makes per reader burst */
    PICKS       = 1 << 16,       /* precomputed random picks of the pair loops, cycled */
};

#define BENCH_SEED 0x6b696c6e48314831ull

/* Sizes of the run: full (the default) and --quick. */
typedef struct run_size {
    int get_passes;     /* passes over the HANDLES per burst */
    int get_bursts;     /* recorded bursts per round */
    int get_rounds;
    int pair_count;     /* pairs per burst */
    int pair_bursts;
    int pair_rounds;
    int walk_passes;    /* walks per burst */
    int walk_bursts;
    int walk_rounds;
} run_size;

static const run_size full_run  = { .get_passes = 25, .get_bursts = 20, .get_rounds = 21,
                                    .pair_count = 10000, .pair_bursts = 20, .pair_rounds = 21,
                                    .walk_passes = 20, .walk_bursts = 10, .walk_rounds = 21 };
static const run_size quick_run = { .get_passes = 2, .get_bursts = 2, .get_rounds = 3,
                                    .pair_count = 2000, .pair_bursts = 2, .pair_rounds = 3,
                                    .walk_passes = 2, .walk_bursts = 2, .walk_rounds = 3 };

/* ==== The implementations ============================================================ */

typedef struct entity { uint64_t value; uint64_t rest[7]; } entity;

typedef enum impl_kind {
    IMPL_KILN,    /* kiln_handle_get / kiln_handle_alloc / kiln_handle_free */
    IMPL_ARRAY,   /* items[h]: the floor */
    IMPL_MUTEX,   /* lock; ptrs[h]; unlock */
    IMPL_GEN,     /* slots[index].gen == generation, plain loads */
} impl_kind;

/* The naive table: handles are indices; a freed index holds NULL (so a stale handle is
 * seen only until the index is reused: no generation). */
typedef struct mutex_table {
    pthread_mutex_t lock;
    entity        **ptrs;
    uint32_t       *free_list;     /* a stack of free indices */
    uint32_t        free_count;
} mutex_table;

/* The reference: a slot is a 16-byte header and the item, as kiln's are (80 bytes). */
typedef struct gen_slot {
    uint32_t gen;                  /* odd: live */
    uint32_t next;                 /* free list link */
    uint64_t unused;
    entity   item;
} gen_slot;

#define GEN_NONE UINT32_MAX

typedef struct gen_table {
    gen_slot *slots;
    uint32_t  fresh, free_head;
} gen_table;

/* One table of one implementation. */
typedef struct table {
    impl_kind     kind;
    kiln_handles *kiln;
    entity       *array;
    uint32_t      array_used;
    mutex_table   mutex;
    gen_table     gen;
} table;

static void *checked(void *p, const char *what) {
    if (!p) bench_die("%s: out of memory or refused", what);
    return p;
}

static void table_init(table *t, impl_kind kind, kiln_runtime *rt, const char *name) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    switch (kind) {
    case IMPL_KILN:
        t->kiln = checked(kiln_handles_create(rt, &(kiln_handles_desc){
                              .name = name, .item_size = sizeof(entity), .capacity = CAPACITY }),
                          "kiln_handles_create");
        break;
    case IMPL_ARRAY:
        t->array = checked(aligned_alloc(64, CAPACITY * sizeof *t->array), "array");
        break;
    case IMPL_MUTEX:
        pthread_mutex_init(&t->mutex.lock, NULL);
        t->mutex.ptrs = checked(calloc(CAPACITY, sizeof *t->mutex.ptrs), "mutex table");
        t->mutex.free_list = checked(malloc(CAPACITY * sizeof *t->mutex.free_list), "mutex table");
        for (uint32_t i = 0; i < CAPACITY; i++) t->mutex.free_list[i] = CAPACITY - 1 - i;
        t->mutex.free_count = CAPACITY;
        break;
    case IMPL_GEN:
        t->gen.slots = checked(aligned_alloc(64, CAPACITY * sizeof *t->gen.slots), "gen table");
        memset(t->gen.slots, 0, CAPACITY * sizeof *t->gen.slots);
        t->gen.free_head = GEN_NONE;
        break;
    }
}

INLINE entity *tbl_get(table *t, impl_kind kind, uint64_t h) {
    switch (kind) {
    case IMPL_KILN: return kiln_handle_get(t->kiln, (kiln_handle){ h });
    case IMPL_ARRAY: return &t->array[h];
    case IMPL_MUTEX: {
        pthread_mutex_lock(&t->mutex.lock);
        entity *e = t->mutex.ptrs[h];
        pthread_mutex_unlock(&t->mutex.lock);
        return e;
    }
    case IMPL_GEN: {
        uint32_t index = (uint32_t)h;
        gen_slot *s = &t->gen.slots[index];
        return index < CAPACITY && s->gen == (uint32_t)(h >> 32) ? &s->item : NULL;
    }
    }
    return NULL;
}

/* A new zeroed item: its handle in *h, its address in *item; false when the table is
 * full. (Index 0 is a valid handle of the array and of the mutex table.) */
INLINE bool tbl_alloc(table *t, impl_kind kind, kiln_ctx *ctx, uint64_t *h, entity **item) {
    switch (kind) {
    case IMPL_KILN: {
        void *p;
        *h = kiln_handle_alloc(ctx, t->kiln, &p).bits;
        *item = p;
        return *h != 0;
    }
    case IMPL_ARRAY: {
        if (t->array_used == CAPACITY) return false;
        *item = &t->array[t->array_used];
        memset(*item, 0, sizeof **item);
        *h = t->array_used++;
        return true;
    }
    case IMPL_MUTEX: {
        entity *e = calloc(1, sizeof *e);
        if (!e) return false;
        pthread_mutex_lock(&t->mutex.lock);
        bool room = t->mutex.free_count > 0;
        if (room) {
            *h = t->mutex.free_list[--t->mutex.free_count];
            t->mutex.ptrs[*h] = e;
        }
        pthread_mutex_unlock(&t->mutex.lock);
        if (!room) free(e);
        *item = e;
        return room;
    }
    case IMPL_GEN: {
        gen_table *g = &t->gen;
        uint32_t index = g->free_head;
        if (index != GEN_NONE) g->free_head = g->slots[index].next;
        else if (g->fresh < CAPACITY) index = g->fresh++;
        else return false;
        gen_slot *s = &g->slots[index];
        s->gen++;
        memset(&s->item, 0, sizeof s->item);
        *item = &s->item;
        *h = (uint64_t)s->gen << 32 | index;
        return true;
    }
    }
    return false;
}

INLINE bool tbl_free(table *t, impl_kind kind, kiln_ctx *ctx, uint64_t h) {
    switch (kind) {
    case IMPL_KILN: return kiln_handle_free(ctx, t->kiln, (kiln_handle){ h });
    case IMPL_ARRAY: return false;   /* never freed: the floor has no lifetime */
    case IMPL_MUTEX: {
        pthread_mutex_lock(&t->mutex.lock);
        entity *e = t->mutex.ptrs[h];
        if (e) {
            t->mutex.ptrs[h] = NULL;
            t->mutex.free_list[t->mutex.free_count++] = (uint32_t)h;
        }
        pthread_mutex_unlock(&t->mutex.lock);
        free(e);
        return e != NULL;
    }
    case IMPL_GEN: {
        uint32_t index = (uint32_t)h;
        gen_slot *s = &t->gen.slots[index];
        if (index >= CAPACITY || s->gen != (uint32_t)(h >> 32)) return false;
        s->gen++;
        s->next = t->gen.free_head;
        t->gen.free_head = index;
        return true;
    }
    }
    return false;
}

static const char *const impl_row[] = {
    [IMPL_KILN] = "kiln",
    [IMPL_ARRAY] = "floor: plain array",
    [IMPL_MUTEX] = "mutex + pointer table",
    [IMPL_GEN] = "reference: generational",
};

#define NO_HANDLE UINT64_MAX   /* no implementation hands out this handle */

/* Frees the n live handles (NO_HANDLE entries skipped): kiln logs a table destroyed
 * with items still live. ctx: the calling thread's (kiln). */
static void free_live(table *t, kiln_ctx *ctx, const uint64_t *live, int n) {
    for (int i = 0; i < n; i++)
        if (live[i] != NO_HANDLE && !tbl_free(t, t->kind, ctx, live[i]) && t->kind != IMPL_ARRAY)
            bench_die("%s: a free of a live handle was refused", impl_row[t->kind]);
}

static void table_fini(table *t) {
    switch (t->kind) {
    case IMPL_KILN: kiln_handles_destroy(t->kiln); break;
    case IMPL_ARRAY: free(t->array); break;
    case IMPL_MUTEX:
        for (uint32_t i = 0; i < CAPACITY; i++) free(t->mutex.ptrs[i]);
        free(t->mutex.ptrs);
        free(t->mutex.free_list);
        pthread_mutex_destroy(&t->mutex.lock);
        break;
    case IMPL_GEN: free(t->gen.slots); break;
    }
}

/* Instantiates body(KIND) once per implementation, with the kind a constant. */
#define IMPL_DISPATCH(kind, body)                       \
    switch (kind) {                                     \
    case IMPL_KILN: body(IMPL_KILN); break;             \
    case IMPL_ARRAY: body(IMPL_ARRAY); break;           \
    case IMPL_MUTEX: body(IMPL_MUTEX); break;           \
    case IMPL_GEN: body(IMPL_GEN); break;               \
    }


/* ==== Shared inputs ================================================================== */

static void shuffle(uint64_t *h, int n, uint64_t seed) {
    bench_rng rng = { seed };
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(bench_rng_next(&rng) % (uint64_t)(i + 1));
        uint64_t x = h[i];
        h[i] = h[j];
        h[j] = x;
    }
}

/* Allocates n items, item i holding value i + 1, and returns their handles in a
 * fixed-seed random order; *sum: what one pass of the get loop over them must add up to. */
static uint64_t *fill_shuffled(table *t, kiln_ctx *ctx, int n, uint64_t seed, uint64_t *sum) {
    uint64_t *h = checked(malloc((size_t)n * sizeof *h), "handles");
    *sum = 0;
    for (int i = 0; i < n; i++) {
        entity *e;
        if (!tbl_alloc(t, t->kind, ctx, &h[i], &e)) bench_die("setup: alloc failed");
        e->value = (uint64_t)i + 1;
        *sum += (uint64_t)i + 1;
    }
    shuffle(h, n, seed);
    return h;
}

static uint32_t *make_picks(uint64_t seed) {
    uint32_t *p = checked(malloc(PICKS * sizeof *p), "picks");
    bench_rng rng = { seed };
    for (int i = 0; i < PICKS; i++) p[i] = (uint32_t)(bench_rng_next(&rng) % HANDLES);
    return p;
}

/* ==== get: live and stale handles, one thread ========================================= */

/* One pass of the get loop: a stale handle (NULL) adds 1, a live one its item's value. */
INLINE uint64_t get_pass(table *t, impl_kind kind, const uint64_t *order, int n) {
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        const entity *e = tbl_get(t, kind, order[i]);
        sum += e ? e->value : 1;
    }
    return sum;
}

typedef struct get_row {
    table          *t;
    const uint64_t *order;
    int             n, passes, bursts;
    uint64_t        pass_sum;      /* what each pass must add up to */
} get_row;

INLINE void get_work(get_row *r, bench_series *s, impl_kind kind) {
    for (int burst = 0; burst < r->bursts; burst++) {
        uint64_t sum = 0, t0 = bench_now_ns();
        for (int p = 0; p < r->passes; p++) sum += get_pass(r->t, kind, r->order, r->n);
        uint64_t ns = bench_now_ns() - t0;
        if (sum != r->pass_sum * (uint64_t)r->passes)
            bench_die("%s: the gets added up to %llu, not %llu", impl_row[kind],
                      (unsigned long long)sum, (unsigned long long)(r->pass_sum * r->passes));
        bench_add_sample(s, (double)ns, (double)r->passes * r->n);
    }
}

static void get_round(void *state, bench_series *s) {
    get_row *r = state;
#define GET_BODY(K) get_work(r, s, K)
    IMPL_DISPATCH(r->t->kind, GET_BODY)
#undef GET_BODY
}

/* The get table, live (stale = false) or stale: every handle freed first (kiln: and a
 * frame ended), so each get misses. The array has no stale handles: skipped there. */
static void run_get(const run_size *size, kiln_runtime *rt, kiln_ctx *ctx, bool stale) {
    static const impl_kind kinds[] = { IMPL_KILN, IMPL_ARRAY, IMPL_MUTEX, IMPL_GEN };
    enum { KINDS = sizeof kinds / sizeof kinds[0] };
    table tables[KINDS];
    get_row rows[KINDS];
    char detail[400];
    snprintf(detail, sizeof detail,
             "%d %s handles of 64-byte items in a fixed-seed random order, the first word of "
             "each item summed (a stale get adds 1); 1 thread; per round %d bursts of %d "
             "passes (%d gets)", HANDLES, stale ? "freed (stale)" : "live", size->get_bursts,
             size->get_passes, size->get_passes * HANDLES);
    bench_workload w = { .title = stale ? "H1 get of stale handles (1 thread)"
                                        : "H1 get of live handles (1 thread)",
                         .detail = detail, .op = "get", .sample = "burst",
                         .rounds = size->get_rounds };
    for (int k = 0; k < KINDS; k++) {
        table *t = &tables[k];
        table_init(t, kinds[k], rt, "h1 get");
        rows[k] = (get_row){ t, NULL, HANDLES, size->get_passes, size->get_bursts, 0 };
        uint64_t *order = fill_shuffled(t, ctx, HANDLES, BENCH_SEED, &rows[k].pass_sum);
        rows[k].order = order;
        if (stale && kinds[k] == IMPL_ARRAY) {
            bench_add_skipped(&w, impl_row[kinds[k]], "an array index has no notion of a "
                              "stale handle");
            continue;
        }
        if (stale) {
            for (int i = 0; i < HANDLES; i++)
                if (!tbl_free(t, t->kind, ctx, order[i])) bench_die("setup: free refused");
            rows[k].pass_sum = HANDLES;
        }
        bench_add_entry(&w, impl_row[kinds[k]], get_round, &rows[k]);
    }
    if (stale) {   /* the slots are reusable now; nothing reuses them */
        kiln_frame_end(ctx);
        kiln_frame_begin(ctx);
    }
    bench_run(&w);
    bench_print(&w);
    bench_workload_free(&w);
    for (int k = 0; k < KINDS; k++) {
        if (!stale) free_live(&tables[k], ctx, rows[k].order, HANDLES);
        table_fini(&tables[k]);
        free((void *)rows[k].order);
    }
}

/* ==== alloc+free pair, one thread ===================================================== */

typedef struct pair_row {
    table          *t;
    kiln_ctx       *ctx;
    uint64_t       *live;       /* HANDLES live handles */
    const uint32_t *picks;
    unsigned        next_pick;
    int             pairs, bursts;
    unsigned        since_frame;
} pair_row;

/* A pair: free a random live handle, allocate a new item in its place, touch it. kiln
 * ends a frame every FRAME_PAIRS pairs (and begins the next), inside the timing. */
INLINE void pair_work(pair_row *r, bench_series *s, impl_kind kind) {
    table *t = r->t;
    uint64_t *live = r->live;
    for (int burst = 0; burst < r->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < r->pairs; i++) {
            uint32_t j = r->picks[r->next_pick++ % PICKS];
            tbl_free(t, kind, r->ctx, live[j]);
            entity *e;
            if (!tbl_alloc(t, kind, r->ctx, &live[j], &e))
                bench_die("%s: alloc failed", impl_row[kind]);
            e->value = (uint64_t)i;
            if (kind == IMPL_KILN && ++r->since_frame == FRAME_PAIRS) {
                kiln_frame_end(r->ctx);
                kiln_frame_begin(r->ctx);
                r->since_frame = 0;
            }
        }
        bench_add_sample(s, (double)(bench_now_ns() - t0), (double)r->pairs);
    }
}

static void pair_round(void *state, bench_series *s) {
    pair_row *r = state;
#define PAIR_BODY(K) pair_work(r, s, K)
    IMPL_DISPATCH(r->t->kind, PAIR_BODY)
#undef PAIR_BODY
}

static void run_pair(const run_size *size, kiln_runtime *rt, kiln_ctx *ctx) {
    static const impl_kind kinds[] = { IMPL_KILN, IMPL_MUTEX, IMPL_GEN };
    enum { KINDS = sizeof kinds / sizeof kinds[0] };
    table tables[KINDS];
    pair_row rows[KINDS];
    uint32_t *picks = make_picks(BENCH_SEED ^ 0x9a17);
    char detail[480];
    snprintf(detail, sizeof detail,
             "%d live 64-byte items; a pair frees a random one's handle, allocates a new item "
             "in its place and writes it; 1 thread; kiln ends a frame every %d pairs (freed "
             "slots are reused after it), the frame end counted in the figure; the peers reuse "
             "at once (LIFO); per round %d bursts of %d pairs", HANDLES, FRAME_PAIRS,
             size->pair_bursts, size->pair_count);
    bench_workload w = { .title = "H1 alloc+free pair (1 thread)", .detail = detail,
                         .op = "pair", .sample = "burst", .rounds = size->pair_rounds };
    for (int k = 0; k < KINDS; k++) {
        table *t = &tables[k];
        table_init(t, kinds[k], rt, "h1 pair");
        uint64_t ignored;
        rows[k] = (pair_row){ .t = t, .ctx = ctx, .picks = picks, .pairs = size->pair_count,
                              .bursts = size->pair_bursts };
        rows[k].live = fill_shuffled(t, ctx, HANDLES, BENCH_SEED, &ignored);
        bench_add_entry(&w, impl_row[kinds[k]], pair_round, &rows[k]);
    }
    bench_add_skipped(&w, impl_row[IMPL_ARRAY], "an array has no alloc or free");
    bench_run(&w);
    bench_print(&w);
    bench_workload_free(&w);
    for (int k = 0; k < KINDS; k++) {
        free_live(&tables[k], ctx, rows[k].live, HANDLES);
        table_fini(&tables[k]);
        free(rows[k].live);
    }
    free(picks);
}

/* ==== get with a second thread churning =================================================
 * A team of two threads: the reader (member 0) runs the get loop over its HANDLES handles;
 * the churner (member 1) frees and allocates, as fast as it can, in the same table, its
 * own HANDLES items (allocated right after the reader's). Quiet rows: the churner does
 * nothing. kiln: the reader drives the frame clock (a frame end between bursts, untimed);
 * the churner is an attached thread outside it, with a quiescent point every FRAME_PAIRS
 * pairs; kiln reuses freed slots oldest first, so its items move through every slot the
 * reader does not hold. A burst is a frame, and the churner makes at most CHURN_PAIRS
 * pairs per frame, as a game's frame frees a bounded number of entities: without a bound
 * a reader descheduled for a few milliseconds (no frame end) would let it free the whole
 * capacity into slots that wait for reuse, and then it would only meet a full table. */

struct contended_row;

typedef struct contended_shared {
    kiln_runtime         *rt;
    kiln_ctx             *ctx[2];   /* kiln: the reader's (the driver) and the churner's */
    bench_team           *team;
    double               *burst_ns; /* the reader's, read by main after the run */
    struct contended_row *rows;     /* filled and emptied by the reader: kiln's contexts */
    int                   row_count;
} contended_shared;

typedef struct contended_row {
    contended_shared *sh;
    table            *t;
    bool              churn;
    bool              owner;      /* owns order and theirs (the quiet row borrows them) */
    uint64_t         *order;      /* the reader's handles, shuffled */
    uint64_t         *theirs;     /* the churner's live handles (NO_HANDLE: none) */
    const uint32_t   *picks;
    int               passes, bursts;
    uint64_t          pass_sum;
    _Atomic int       churning, done;
    _Atomic uint64_t  frames;     /* the reader's bursts so far this round */
    uint64_t          pairs, failures, rounds;   /* the churner's, over every round */
} contended_row;

INLINE void reader_work(contended_row *r, impl_kind kind) {
    contended_shared *sh = r->sh;
    while (r->churn && !atomic_load_explicit(&r->churning, memory_order_acquire)) sched_yield();
    for (int burst = 0; burst < r->bursts; burst++) {
        uint64_t sum = 0, t0 = bench_now_ns();
        for (int p = 0; p < r->passes; p++) sum += get_pass(r->t, kind, r->order, HANDLES);
        sh->burst_ns[burst] = (double)(bench_now_ns() - t0);
        if (sum != r->pass_sum * (uint64_t)r->passes) bench_die("contended: a get missed");
        if (kind == IMPL_KILN) {
            kiln_frame_end(sh->ctx[0]);
            kiln_frame_begin(sh->ctx[0]);
        }
        atomic_store_explicit(&r->frames, (uint64_t)burst + 1, memory_order_relaxed);
    }
    atomic_store_explicit(&r->done, 1, memory_order_release);
}

INLINE void churner_work(contended_row *r, impl_kind kind) {
    kiln_ctx *ctx = r->sh->ctx[1];
    uint64_t pairs = 0, frame = 0, in_frame = 0;
    unsigned pick = (unsigned)(r->rounds * 7919);
    atomic_store_explicit(&r->churning, 1, memory_order_release);
    while (!atomic_load_explicit(&r->done, memory_order_acquire)) {
        if (in_frame == CHURN_PAIRS) {   /* this frame's share is done: wait for the next */
            uint64_t now = atomic_load_explicit(&r->frames, memory_order_relaxed);
            if (now == frame) {
                ck_pr_stall();
                continue;
            }
            frame = now;
            in_frame = 0;
        }
        in_frame++;
        uint32_t j = r->picks[pick++ % PICKS];
        if (r->theirs[j] != NO_HANDLE) tbl_free(r->t, kind, ctx, r->theirs[j]);
        entity *e;
        if (tbl_alloc(r->t, kind, ctx, &r->theirs[j], &e)) {
            e->value = pairs;
        } else {   /* full: kiln's freed slots wait for a frame end and a quiescent point */
            r->theirs[j] = NO_HANDLE;
            r->failures++;
        }
        pairs++;
        if (kind == IMPL_KILN && pairs % FRAME_PAIRS == 0) kiln_handles_quiescent(ctx);
    }
    r->pairs += pairs;
    atomic_store_explicit(&r->churning, 0, memory_order_relaxed);
}

static void contended_member(void *arg, int index) {
    contended_row *r = arg;
    if (index == 1 && !r->churn) return;
#define READER_BODY(K) reader_work(r, K)
#define CHURNER_BODY(K) churner_work(r, K)
    if (index == 0) {
        IMPL_DISPATCH(r->t->kind, READER_BODY)
    } else {
        IMPL_DISPATCH(r->t->kind, CHURNER_BODY)
    }
#undef READER_BODY
#undef CHURNER_BODY
}

static void contended_round(void *state, bench_series *s) {
    contended_row *r = state;
    atomic_store_explicit(&r->done, 0, memory_order_relaxed);
    atomic_store_explicit(&r->frames, 0, memory_order_relaxed);
    bench_team_run(r->sh->team, contended_member, r);
    r->rounds++;
    for (int b = 0; b < r->bursts; b++)
        bench_add_sample(s, r->sh->burst_ns[b], (double)r->passes * HANDLES);
}

/* Every member attaches; then the reader, whose context it is, makes the rows' items:
 * its own HANDLES, then the churner's HANDLES, and drives the first frame. */
static void contended_setup(void *arg, int index) {
    contended_shared *sh = arg;
    sh->ctx[index] = checked(kiln_attach(sh->rt), "kiln_attach");
    if (index != 0) return;
    kiln_frame_begin(sh->ctx[0]);
    for (int k = 0; k < sh->row_count; k++) {
        contended_row *r = &sh->rows[k];
        if (!r->owner) continue;
        uint64_t ignored;
        r->order = fill_shuffled(r->t, sh->ctx[0], HANDLES, BENCH_SEED, &r->pass_sum);
        r->theirs = fill_shuffled(r->t, sh->ctx[0], HANDLES, BENCH_SEED + 1, &ignored);
    }
}

/* The reader frees the rows' items (a context is its own thread's); every member detaches. */
static void contended_teardown(void *arg, int index) {
    contended_shared *sh = arg;
    if (index == 0) {
        for (int k = 0; k < sh->row_count; k++) {
            contended_row *r = &sh->rows[k];
            if (!r->owner) continue;
            free_live(r->t, sh->ctx[0], r->order, HANDLES);
            free_live(r->t, sh->ctx[0], r->theirs, HANDLES);
            free(r->order);
            free(r->theirs);
        }
        kiln_frame_end(sh->ctx[0]);
    }
    kiln_detach(sh->ctx[index]);
    sh->ctx[index] = NULL;
}

static void run_contended(const run_size *size, long cpus) {
    enum { ROWS = 4 };
    table kiln_table, naive_table;
    contended_row rows[ROWS] = {
        { .t = &kiln_table, .churn = true, .owner = true },
        { .t = &kiln_table, .churn = false },
        { .t = &naive_table, .churn = true, .owner = true },
        { .t = &naive_table, .churn = false },
    };
    static const char *const names[ROWS] = {
        "kiln, 2nd thread churning", "kiln, quiet", "mutex + ptr table, churning",
        "mutex + ptr table, quiet",
    };
    contended_shared sh = {
        .rt = checked(kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS }),
                      "kiln_create"),
        .team = bench_team_start(2),
        .burst_ns = checked(calloc((size_t)size->get_bursts, sizeof(double)), "figures"),
        .rows = rows,
        .row_count = ROWS,
    };
    table_init(&kiln_table, IMPL_KILN, sh.rt, "h1 contended");
    table_init(&naive_table, IMPL_MUTEX, sh.rt, NULL);
    uint32_t *picks = make_picks(BENCH_SEED ^ 0xc4a2);
    bench_team_run(sh.team, contended_setup, &sh);
    char detail[560];
    snprintf(detail, sizeof detail,
             "the get loop of the live table (%d handles, random order) on one thread while a "
             "second thread frees and allocates %d items of its own in the same table as fast "
             "as it can, up to %d pairs per burst (a burst is a frame); quiet: the second "
             "thread idle; %ld cores; kiln: the reader ends a frame between bursts (untimed), "
             "the churner passes a quiescent point every %d pairs; per round %d bursts of %d "
             "gets; the ratio of kiln quiet is quiet/churning", HANDLES, HANDLES, CHURN_PAIRS,
             cpus, FRAME_PAIRS, size->get_bursts, size->get_passes * HANDLES);
    bench_workload w = { .title = "H1 get while a 2nd thread frees and allocates (2 threads)",
                         .detail = detail, .op = "get", .sample = "burst",
                         .note_head = "churner pairs/round", .rounds = size->get_rounds };
    for (int k = 0; k < ROWS; k++) {
        contended_row *r = &rows[k];
        r->sh = &sh;
        r->picks = picks;
        r->passes = size->get_passes;
        r->bursts = size->get_bursts;
        if (!r->owner) {   /* the quiet row reads the same items of the same table */
            r->order = rows[k - 1].order;
            r->theirs = rows[k - 1].theirs;
            r->pass_sum = rows[k - 1].pass_sum;
        }
        bench_add_entry(&w, names[k], contended_round, r);
    }
    bench_add_skipped(&w, impl_row[IMPL_GEN], "not thread-safe");
    bench_run(&w);
    for (int k = 0; k < ROWS; k++)
        if (rows[k].churn)
            snprintf(w.entries[k].note, sizeof w.entries[k].note, "%.0f (%llu failed)",
                     rows[k].rounds ? (double)rows[k].pairs / (double)rows[k].rounds : 0.0,
                     (unsigned long long)rows[k].failures);
    bench_print(&w);
    bench_workload_free(&w);
    bench_team_run(sh.team, contended_teardown, &sh);
    bench_team_stop(sh.team);
    table_fini(&naive_table);
    table_fini(&kiln_table);
    free(sh.burst_ns);
    free(picks);
    kiln_destroy(sh.rt);
}

/* ==== callgrind ========================================================================
 * N gets (or pairs) of one implementation, counted only between two
 * CALLGRIND_TOGGLE_COLLECT requests: the total over N is the cost of one, the loop's own
 * instructions included (callgrind.sh). One uncounted pass first. */

static int callgrind_count(const char *what, long n) {
#ifndef BENCH_HAVE_CALLGRIND_H
    (void)what;
    (void)n;
    bench_die("--callgrind needs valgrind/callgrind.h at configure time");
#else
    kiln_runtime *rt = checked(kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS }),
                               "kiln_create");
    kiln_ctx *ctx = checked(kiln_attach(rt), "kiln_attach");
    kiln_frame_begin(ctx);
    bool ref = strncmp(what, "ref-", 4) == 0;
    const char *op = ref ? what + 4 : what;
    table t;
    table_init(&t, ref ? IMPL_GEN : IMPL_KILN, rt, "callgrind");
    uint64_t pass_sum;
    uint64_t *order = fill_shuffled(&t, ctx, HANDLES, BENCH_SEED, &pass_sum);
    bench_series s = { 0 };
    bool stale = strcmp(op, "stale") == 0;
    if (strcmp(op, "get") == 0 || stale) {
        if (stale) {
            for (int i = 0; i < HANDLES; i++) tbl_free(&t, t.kind, ctx, order[i]);
            pass_sum = HANDLES;
        }
        int passes = (int)((n + HANDLES - 1) / HANDLES);
        get_row r = { &t, order, HANDLES, 1, 1, pass_sum };
        get_round(&r, &s);
        r.passes = passes;
        CALLGRIND_TOGGLE_COLLECT;
        get_round(&r, &s);
        CALLGRIND_TOGGLE_COLLECT;
        printf("gets %ld (plus one uncounted pass of %d)\n", (long)passes * HANDLES, HANDLES);
    } else if (strcmp(op, "pair") == 0) {
        uint32_t *picks = make_picks(BENCH_SEED ^ 0x9a17);
        pair_row r = { .t = &t, .ctx = ctx, .live = order, .picks = picks, .pairs = HANDLES,
                       .bursts = 1 };
        pair_round(&r, &s);
        r.pairs = (int)n;
        CALLGRIND_TOGGLE_COLLECT;
        pair_round(&r, &s);
        CALLGRIND_TOGGLE_COLLECT;
        printf("pairs %ld (plus one uncounted burst of %d)\n", n, HANDLES);
        free(picks);
    } else {
        bench_die("--callgrind: get, stale, pair, ref-get or ref-pair, not %s", what);
    }
    bench_series_free(&s);
    if (!stale) free_live(&t, ctx, order, HANDLES);
    free(order);
    table_fini(&t);
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
    return 0;
#endif
}

/* ==== H2: the walk over every live item ============================================ */

enum { WALK_SLOTS = 20000 };   /* every fourth slot freed: 15000 live items */

typedef enum walk_kind { WALK_KILN, WALK_ARRAY, WALK_POINTERS } walk_kind;

typedef struct walk_row {
    walk_kind     kind;
    kiln_handles *table;     /* WALK_KILN */
    entity       *dense;     /* WALK_ARRAY: the live items, packed */
    entity      **pointers;  /* WALK_POINTERS: one malloc each, in allocation order */
    size_t        live;
    int           passes, bursts;
    uint64_t      expected;  /* the sum one pass must find */
} walk_row;

static void walk_add(void *user, kiln_handle h, void *item) {
    (void)h;
    *(uint64_t *)user += ((entity *)item)->value;
}

/* One pass: every live item's value into the sum, as a game's update reads its items. */
static uint64_t walk_pass(const walk_row *r) {
    uint64_t sum = 0;
    switch (r->kind) {
    case WALK_KILN: kiln_handles_foreach(r->table, walk_add, &sum); break;
    case WALK_ARRAY:
        for (size_t i = 0; i < r->live; i++) sum += r->dense[i].value;
        break;
    case WALK_POINTERS:
        for (size_t i = 0; i < r->live; i++) sum += r->pointers[i]->value;
        break;
    }
    return sum;
}

static void walk_round(void *state, bench_series *s) {
    walk_row *r = state;
    for (int burst = 0; burst < r->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        for (int pass = 0; pass < r->passes; pass++)
            if (walk_pass(r) != r->expected) bench_die("H2: a walk missed an item");
        bench_add_sample(s, (double)(bench_now_ns() - t0), (double)r->live * r->passes);
    }
}

static void run_walk(const run_size *size, kiln_runtime *rt, kiln_ctx *ctx) {
    kiln_handles *table = checked(kiln_handles_create(rt, &(kiln_handles_desc){
        .name = "h2 walk", .item_size = sizeof(entity), .capacity = WALK_SLOTS }), "h2 table");
    kiln_handle *hs = checked(malloc(WALK_SLOTS * sizeof *hs), "h2 handles");
    entity *dense = checked(malloc(WALK_SLOTS * sizeof *dense), "h2 array");
    entity **pointers = checked(malloc(WALK_SLOTS * sizeof *pointers), "h2 pointers");
    size_t live = 0;
    uint64_t expected = 0;
    for (uint32_t i = 0; i < WALK_SLOTS; i++) {
        entity *e;
        hs[i] = kiln_handle_alloc(ctx, table, (void **)&e);
        if (kiln_handle_is_null(hs[i])) bench_die("H2: alloc failed");
        e->value = i;
    }
    for (uint32_t i = 0; i < WALK_SLOTS; i++) {
        if (i % 4 == 3) {
            kiln_handle_free(ctx, table, hs[i]);
            continue;
        }
        dense[live].value = i;
        pointers[live] = checked(malloc(sizeof(entity)), "h2 item");
        pointers[live]->value = i;
        live++;
        expected += i;
    }
    char detail[320];
    snprintf(detail, sizeof detail,
             "%zu live 64-byte items (a table of %d slots, every fourth one freed); a pass "
             "reads every live item's first word; 1 thread; per round %d bursts of %d passes",
             live, WALK_SLOTS, size->walk_bursts, size->walk_passes);
    bench_workload w = { .title = "H2 walk every live item (1 thread)", .detail = detail,
                         .op = "item", .sample = "burst", .rounds = size->walk_rounds };
    walk_row rows[3];
    const char *names[3] = { "kiln_handles_foreach", "dense array (the floor)",
                             "vector of malloc'd pointers" };
    for (int k = 0; k < 3; k++) {
        rows[k] = (walk_row){ (walk_kind)k, table, dense, pointers, live,
                              size->walk_passes, size->walk_bursts, expected };
        bench_add_entry(&w, names[k], walk_round, &rows[k]);
    }
    bench_run(&w);
    bench_print(&w);
    bench_workload_free(&w);
    for (uint32_t i = 0; i < WALK_SLOTS; i++)
        if (i % 4 != 3) kiln_handle_free(ctx, table, hs[i]);
    kiln_handles_destroy(table);
    for (size_t i = 0; i < live; i++) free(pointers[i]);
    free(pointers);
    free(dense);
    free(hs);
}

/* ==== main ============================================================================== */

static void usage(void) {
    fprintf(stderr, "usage: handles_bench [--quick] [--only get|stale|pair|walk|contended]\n"
                    "       handles_bench --callgrind get|stale|pair|ref-get|ref-pair N\n");
    exit(2);
}

int main(int argc, char **argv) {
    const run_size *size = &full_run;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--callgrind") == 0 && i + 2 < argc)
            return callgrind_count(argv[i + 1], atol(argv[i + 2]));
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else usage();
    }
    if (only && strcmp(only, "get") && strcmp(only, "stale") && strcmp(only, "pair") &&
        strcmp(only, "walk") && strcmp(only, "contended"))
        usage();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    printf("kiln handles_bench (%s run), %ld online CPUs\n", size == &quick_run ? "quick" : "full",
           cpus);
    bench_print_load();
    uint64_t t0 = bench_now_ns();
    /* The single-thread rows: a runtime with no workers, driven by this thread. */
    kiln_runtime *rt = checked(kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS }),
                               "kiln_create");
    kiln_ctx *ctx = checked(kiln_attach(rt), "kiln_attach");
    kiln_frame_begin(ctx);
    if (!only || strcmp(only, "get") == 0) run_get(size, rt, ctx, false);
    if (!only || strcmp(only, "stale") == 0) run_get(size, rt, ctx, true);
    if (!only || strcmp(only, "pair") == 0) run_pair(size, rt, ctx);
    if (!only || strcmp(only, "walk") == 0) run_walk(size, rt, ctx);
    kiln_frame_end(ctx);
    kiln_detach(ctx);
    kiln_destroy(rt);
    if (!only || strcmp(only, "contended") == 0) run_contended(size, cpus);
    printf("\nhandles_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
