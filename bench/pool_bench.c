/* bench/pool_bench.c — the pool family of BENCH.md: A2 pool churn (and its cache-hit
 * micro row), A3 cross-thread producer/consumer and A4 larson-like, kiln pools against
 * every malloc peer found at configure time, one table per workload.
 *
 * Usage:
 *   pool_bench [--quick] [--only a2|hit|a3|a4] [--debug BITS[,BITS...]]
 *       the tables; --quick: tiny rounds, every workload and peer in about a second;
 *       --debug: A2 and its cache-hit pair compare kiln with desc.debug 0 against kiln
 *       with each of these KILN_DEBUG_* masks (one row each, same rounds; the peers are
 *       left out), the cost of the debug layer
 *   pool_bench --callgrind kiln|glibc|mimalloc|freelist N
 *       N cache-hit pairs of one implementation, counted by callgrind between client
 *       requests (valgrind --tool=callgrind --collect-atstart=no; see callgrind.sh)
 *   pool_bench --child EXPECT WORKLOAD ARGS...
 *       internal: serves a malloc peer's rounds to the parent, under LD_PRELOAD
 *
 * Implementations: kiln (kiln_pool_alloc / kiln_pool_free, each thread attached with
 * its own context); glibc's own malloc/free, looked up with dlsym (the process's plain
 * malloc is mimalloc's once libmimalloc is linked: bench_glibc_find); mimalloc
 * mi_malloc/mi_free; jemalloc and tcmalloc malloc/free in child processes under
 * LD_PRELOAD. Every implementation runs the same loop: one always_inline body per
 * workload, instantiated once per implementation with the kind a constant.
 *
 * Threads: the multi-threaded workloads run on a bench_team whose threads live for the
 * whole table, as a game's workers do; kiln's contexts are attached once per thread,
 * and each kiln round ends with the pools' idle cached bytes read while the contexts
 * are still attached (kiln_pool_stats.cached_bytes summed, per context). */
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
#include "debug_masks.h"
#include "harness.h"

#ifdef BENCH_HAVE_MIMALLOC
#  include <mimalloc.h>
#  define BENCH_FOREIGN_MALLOC mi_is_in_heap_region   /* for bench_glibc_find */
#else
#  define BENCH_FOREIGN_MALLOC NULL
#endif
#ifdef BENCH_HAVE_CALLGRIND_H
#  include <valgrind/callgrind.h>
#endif

#define INLINE static inline __attribute__((always_inline))

/* Sizes of the run: full (the default) and --quick. */
typedef struct run_size {
    int a2_bursts;          /* recorded bursts per round (after A2_SETTLE unrecorded) */
    int a2_batches;         /* batches per burst (1-16 pairs each, 8.5 on average) */
    int a2_rounds;
    int hit_bursts;         /* recorded bursts per round */
    int hit_pairs;          /* pairs per burst */
    int hit_rounds;
    int a3_objects;         /* per producer per round */
    int a3_rounds;
    int a4_ops;             /* per thread per round */
    int a4_rounds;
} run_size;

static const run_size full_run  = { .a2_bursts = 60, .a2_batches = 1200, .a2_rounds = 21,
                                    .hit_bursts = 20, .hit_pairs = 100000, .hit_rounds = 21,
                                    .a3_objects = 500000, .a3_rounds = 15,
                                    .a4_ops = 400000, .a4_rounds = 15 };
static const run_size quick_run = { .a2_bursts = 2, .a2_batches = 300, .a2_rounds = 5,
                                    .hit_bursts = 2, .hit_pairs = 5000, .hit_rounds = 5,
                                    .a3_objects = 8192, .a3_rounds = 5,
                                    .a4_ops = 8192, .a4_rounds = 5 };

/* ==== Implementations ================================================================ */

/* The size classes: A2 and A3 use 64 bytes, A4 all five (kiln: one pool per class). */
#define CLASSES  5
#define CLASS_64 2
static const size_t class_size[CLASSES] = { 16, 32, 64, 128, 256 };

typedef enum impl_kind {
    IMPL_KILN,       /* kiln_pool_alloc / kiln_pool_free */
    IMPL_GLIBC,      /* glibc's own malloc / free (function pointers from dlsym) */
    IMPL_MIMALLOC,   /* mi_malloc / mi_free */
    IMPL_MALLOC,     /* the process's malloc / free: a child's LD_PRELOAD library */
} impl_kind;

/* What one thread needs to allocate: copied into locals by every loop, so the calls
 * in it do not force reloads from shared state. */
typedef struct alloc_handle {
    kiln_ctx        *ctx;                /* kiln: this thread's context */
    kiln_pool       *pools[CLASSES];     /* kiln: a pool per class (NULL where unused) */
    bench_malloc_fns fns;                /* glibc */
} alloc_handle;

static bench_malloc_fns glibc;   /* found by bench_glibc_find */

INLINE void *impl_alloc(impl_kind kind, const alloc_handle *h, unsigned cls) {
    switch (kind) {
    case IMPL_KILN: return kiln_pool_alloc(h->ctx, h->pools[cls]);
    case IMPL_GLIBC: return h->fns.malloc(class_size[cls]);
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: return mi_malloc(class_size[cls]);
#endif
    default: return malloc(class_size[cls]);
    }
}

INLINE void impl_free(impl_kind kind, const alloc_handle *h, unsigned cls, void *p) {
    switch (kind) {
    case IMPL_KILN: kiln_pool_free(h->ctx, h->pools[cls], p); break;
    case IMPL_GLIBC: h->fns.free(p); break;
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: mi_free(p); break;
#endif
    default: free(p); break;
    }
}

/* Instantiates body(KIND) once per implementation, with the kind a constant. */
#ifdef BENCH_HAVE_MIMALLOC
#  define IMPL_DISPATCH(kind, body)                             \
      switch (kind) {                                           \
      case IMPL_KILN: body(IMPL_KILN); break;                   \
      case IMPL_GLIBC: body(IMPL_GLIBC); break;                 \
      case IMPL_MIMALLOC: body(IMPL_MIMALLOC); break;           \
      case IMPL_MALLOC: body(IMPL_MALLOC); break;               \
      }
#else
#  define IMPL_DISPATCH(kind, body)                             \
      switch (kind) {                                           \
      case IMPL_KILN: body(IMPL_KILN); break;                   \
      case IMPL_GLIBC: body(IMPL_GLIBC); break;                 \
      default: body(IMPL_MALLOC); break;                        \
      }
#endif

/* The write every allocation gets (its first word), as a user's initialisation would;
 * volatile so that no compiler drops it. */
INLINE void touch(void *p, uint64_t v) { *(volatile uint64_t *)p = v; }

/* Keeps p alive for the compiler without a store. */
INLINE void use(void *p) { __asm__ volatile("" : : "r"(p)); }

static void *checked(void *p, const char *what) {
    if (!p) bench_die("%s returned NULL", what);
    return p;
}

/* kiln's idle cached bytes per context, one figure per kiln round, for the table's
 * note column: "median (max)". */
typedef struct cached_figures {
    double values[64];
    int    count;
} cached_figures;

/* Sums cached_bytes over the pools (NULL entries skipped) and records it per context. */
static void cached_record(cached_figures *f, kiln_pool *const *pools, int pool_count,
                          int contexts) {
    size_t bytes = 0;
    for (int i = 0; i < pool_count; i++) {
        kiln_pool_stats st;
        if (pools[i] && kiln_pool_stats_get(pools[i], &st)) bytes += st.cached_bytes;
    }
    if (f->count < (int)(sizeof f->values / sizeof f->values[0]))
        f->values[f->count++] = (double)bytes / contexts;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The warm-up round's figure is dropped, like the harness drops its times. */
static void cached_note(cached_figures *f, bench_entry *e) {
    if (f->count < 2) return;
    double *v = f->values + 1;
    int n = f->count - 1;
    qsort(v, (size_t)n, sizeof *v, compare_double);
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    snprintf(e->note, sizeof e->note, "%.0f (max %.0f)", median, v[n - 1]);
}

/* A kiln runtime for the in-process rows, and the peers every table shares. */
static kiln_runtime *runtime;

static kiln_pool *make_pool(const char *name, size_t size) {
    kiln_pool_desc desc = { .name = name, .size = size };
    return checked(kiln_pool_create(runtime, &desc), "kiln_pool_create");
}

/* --debug (debug_masks.h): each extra kiln row on a runtime of its own, with its own
 * context and pool. */
typedef struct debug_row {
    kiln_runtime *rt;
    kiln_ctx     *ctx;
    kiln_pool    *pool;
    char          name[48];
} debug_row;

static void debug_rows_open(debug_row rows[MAX_DEBUG_ROWS], const char *pool_name) {
    for (int i = 0; i < debug_mask_count; i++) {
        debug_row *r = &rows[i];
        r->rt = checked(kiln_create(&(kiln_desc){ .debug = debug_masks[i] }), "kiln_create");
        r->ctx = checked(kiln_attach(r->rt), "kiln_attach");
        r->pool = checked(kiln_pool_create(r->rt, &(kiln_pool_desc){ .name = pool_name, .size = 64 }),
                          "kiln_pool_create");
        snprintf(r->name, sizeof r->name, "kiln, desc.debug = 0x%02x", debug_masks[i]);
    }
}

static void debug_rows_close(debug_row rows[MAX_DEBUG_ROWS]) {
    for (int i = 0; i < debug_mask_count; i++) {
        kiln_pool_destroy(rows[i].pool);
        kiln_detach(rows[i].ctx);
        kiln_destroy(rows[i].rt);
    }
}

/* The rows of a table after kiln's: glibc, mimalloc, then the children. */
static void add_peers(bench_workload *w, bench_round_fn round, void *glibc_state,
                      void *mimalloc_state, const char *const child_args[],
                      bench_child *children[BENCH_PRELOAD_PEERS]) {
    char why[160];
    if (bench_glibc_find(&glibc, BENCH_FOREIGN_MALLOC, why, sizeof why))
        bench_add_entry(w, "glibc malloc+free", round, glibc_state);
    else
        bench_add_skipped(w, "glibc malloc+free", "%s", why);
#ifdef BENCH_HAVE_MIMALLOC
    bench_add_entry(w, "mimalloc mi_malloc+mi_free", round, mimalloc_state);
#else
    (void)mimalloc_state;
    bench_add_skipped(w, "mimalloc mi_malloc+mi_free", "libmimalloc not found at configure time");
#endif
    bench_add_preload_peers(w, "pool_bench", child_args, children);
}

#include "bench_ring.h"   /* the ring and the per-thread figures (A3, A4) */

/* ==== A2 pool churn ====================================================================
 * 10 000 live 64-byte objects in slots; each batch frees 1-16 random distinct slots'
 * objects, then allocates as many into those slots, each new object touched once. The
 * batches (sizes and slot indices) are precomputed from a fixed seed. Batches, rather
 * than a free immediately followed by an alloc, keep LIFO caches from handing back the
 * object just freed every time: the live objects' addresses do get shuffled. */

#define A2_LIVE      10000
#define A2_MAX_BATCH 16
#define A2_SETTLE    1                       /* unrecorded bursts at the start of a round */
#define A2_SEED      0x6b696c6e41324132ull

typedef struct a2_input {
    uint8_t  *batch;          /* batch sizes, burst after burst */
    uint32_t *index;          /* the slots of every batch, in order */
    int       bursts;         /* A2_SETTLE + recorded */
    int       batches;        /* per burst */
} a2_input;

typedef struct a2_state {
    const a2_input *in;
    impl_kind       kind;
    alloc_handle    h;
    void          **slots;
    cached_figures  cached;   /* kiln */
} a2_state;

static void a2_input_init(a2_input *in, int bursts, int batches) {
    in->bursts = A2_SETTLE + bursts;
    in->batches = batches;
    size_t total = (size_t)in->bursts * (size_t)batches;
    in->batch = malloc(total);
    in->index = malloc(total * A2_MAX_BATCH * sizeof *in->index);
    if (!in->batch || !in->index) bench_die("out of memory for the A2 inputs");
    bench_rng rng = { A2_SEED };
    uint32_t *out = in->index;
    for (size_t b = 0; b < total; b++) {
        unsigned k = 1 + (unsigned)(bench_rng_next(&rng) % A2_MAX_BATCH);
        in->batch[b] = (uint8_t)k;
        for (unsigned j = 0; j < k; j++) {
            uint32_t slot;
            bool fresh;
            do {   /* distinct within a batch: a slot is freed once before it is refilled */
                slot = (uint32_t)(bench_rng_next(&rng) % A2_LIVE);
                fresh = true;
                for (unsigned m = 0; m < j; m++) fresh = fresh && out[m] != slot;
            } while (!fresh);
            out[j] = slot;
        }
        out += k;
    }
}

static void a2_input_fini(a2_input *in) {
    free(in->batch);
    free(in->index);
}

static void a2_state_init(a2_state *a, const a2_input *in, impl_kind kind) {
    memset(a, 0, sizeof *a);
    a->in = in;
    a->kind = kind;
    a->h.fns = glibc;
    a->slots = calloc(A2_LIVE, sizeof *a->slots);
    if (!a->slots) bench_die("out of memory for the A2 slots");
}

INLINE void a2_work(a2_state *a, bench_series *s, impl_kind kind) {
    const alloc_handle h = a->h;
    void **slots = a->slots;
    const uint8_t *batch = a->in->batch;
    const uint32_t *index = a->in->index;
    const int batches = a->in->batches;
    for (uint32_t i = 0; i < A2_LIVE; i++) {   /* the live set, untimed */
        slots[i] = checked(impl_alloc(kind, &h, CLASS_64), "A2: alloc");
        touch(slots[i], i);
    }
    for (int burst = 0; burst < a->in->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        long pairs = 0;
        for (int b = 0; b < batches; b++) {
            unsigned k = *batch++;
            for (unsigned j = 0; j < k; j++) impl_free(kind, &h, CLASS_64, slots[index[j]]);
            for (unsigned j = 0; j < k; j++) {
                void *p = impl_alloc(kind, &h, CLASS_64);
                if (!p) bench_die("A2: alloc returned NULL");
                touch(p, j);
                slots[index[j]] = p;
            }
            index += k;
            pairs += k;
        }
        if (burst >= A2_SETTLE) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)pairs);
    }
    if (kind == IMPL_KILN) cached_record(&a->cached, h.pools, CLASSES, 1);
    for (int i = 0; i < A2_LIVE; i++) impl_free(kind, &h, CLASS_64, slots[i]);
}

static void a2_round(void *state, bench_series *s) {
    a2_state *a = state;
#define A2_BODY(K) a2_work(a, s, K)
    IMPL_DISPATCH(a->kind, A2_BODY)
#undef A2_BODY
}

typedef struct free_node { struct free_node *next; } free_node;

/* The floor: the same batches over an inline intrusive free list of 64-byte nodes (one
 * array, every node on the list at first), with no checks and no calls; its push writes
 * the link into the freed object, as classic free-list pools do. */
static void a2_freelist_round(void *state, bench_series *s) {
    a2_state *a = state;
    enum { NODES = A2_LIVE + A2_MAX_BATCH };
    static _Alignas(64) char storage[NODES][64];
    free_node *head = NULL;
    for (int i = NODES - 1; i >= 0; i--) {
        free_node *n = (free_node *)storage[i];
        n->next = head;
        head = n;
    }
    void **slots = a->slots;
    const uint8_t *batch = a->in->batch;
    const uint32_t *index = a->in->index;
    for (uint32_t i = 0; i < A2_LIVE; i++) {
        free_node *n = head;
        head = n->next;
        slots[i] = n;
        touch(n, i);
    }
    for (int burst = 0; burst < a->in->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        long pairs = 0;
        for (int b = 0; b < a->in->batches; b++) {
            unsigned k = *batch++;
            for (unsigned j = 0; j < k; j++) {
                free_node *n = slots[index[j]];
                n->next = head;
                head = n;
            }
            for (unsigned j = 0; j < k; j++) {
                free_node *n = head;
                head = n->next;
                touch(n, j);
                slots[index[j]] = n;
            }
            index += k;
            pairs += k;
        }
        if (burst >= A2_SETTLE) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)pairs);
    }
}

static void run_a2(const run_size *size, kiln_ctx *ctx) {
    a2_input in;
    a2_input_init(&in, size->a2_bursts, size->a2_batches);
    a2_state kiln, gl, mi, ref;
    a2_state_init(&kiln, &in, IMPL_KILN);
    a2_state_init(&ref, &in, IMPL_MALLOC);
    a2_state_init(&gl, &in, IMPL_GLIBC);
    a2_state_init(&mi, &in, IMPL_MIMALLOC);
    kiln.h.ctx = ctx;
    kiln.h.pools[CLASS_64] = make_pool("a2 64 B", 64);

    char detail[400];
    snprintf(detail, sizeof detail,
             "%d live 64-byte objects; batches free 1-%d random distinct slots, then allocate "
             "as many into them (each new object touched); fixed-seed slots; 1 thread; per "
             "round: fill, %d unrecorded burst, %d recorded bursts of %d batches (~%d pairs), "
             "free all", A2_LIVE, A2_MAX_BATCH, A2_SETTLE, size->a2_bursts, size->a2_batches,
             (int)(size->a2_batches * (A2_MAX_BATCH + 1) / 2));
    bench_workload w = { .title = "A2 pool churn (1 thread)", .detail = detail, .op = "pair",
                         .sample = "burst", .note_head = "kiln idle cached B/ctx",
                         .rounds = size->a2_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln pool_alloc+pool_free", a2_round, &kiln);
    debug_row rows[MAX_DEBUG_ROWS];
    a2_state debug_states[MAX_DEBUG_ROWS];
    debug_rows_open(rows, "a2 64 B");
    for (int i = 0; i < debug_mask_count; i++) {
        a2_state_init(&debug_states[i], &in, IMPL_KILN);
        debug_states[i].h.ctx = rows[i].ctx;
        debug_states[i].h.pools[CLASS_64] = rows[i].pool;
        bench_add_entry(&w, rows[i].name, a2_round, &debug_states[i]);
    }
    char bursts_arg[16], batches_arg[16];
    snprintf(bursts_arg, sizeof bursts_arg, "%d", size->a2_bursts);
    snprintf(batches_arg, sizeof batches_arg, "%d", size->a2_batches);
    const char *child_args[] = { "a2", bursts_arg, batches_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    if (debug_mask_count == 0) add_peers(&w, a2_round, &gl, &mi, child_args, children);
    bench_add_entry(&w, "reference: inline free list", a2_freelist_round, &ref);
    bench_run(&w);
    cached_note(&kiln.cached, kiln_row);
    bench_print(&w);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    kiln_pool_destroy(kiln.h.pools[CLASS_64]);
    for (int i = 0; i < debug_mask_count; i++) free(debug_states[i].slots);
    debug_rows_close(rows);
    free(kiln.slots);
    free(ref.slots);
    free(gl.slots);
    free(mi.slots);
    a2_input_fini(&in);
}

static int serve_a2_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child a2: BURSTS BATCHES expected");
    a2_input in;
    a2_input_init(&in, atoi(argv[0]), atoi(argv[1]));
    a2_state a;
    a2_state_init(&a, &in, IMPL_MALLOC);
    int status = bench_child_serve(expect, a2_round, &a);
    free(a.slots);
    a2_input_fini(&in);
    return status;
}

/* ==== A2 cache-hit pair (micro) ========================================================
 * alloc immediately followed by free of the same 64-byte object: every allocator's
 * fastest path (kiln: the loaded magazine), the case of the "a pair in 4 ns".
 * The reference row is an inline intrusive free list with no checks and no call. */

typedef struct hit_state {
    impl_kind      kind;      /* unused by the reference row */
    alloc_handle   h;
    int            bursts, pairs;
    cached_figures cached;
} hit_state;

INLINE void hit_work(hit_state *a, bench_series *s, impl_kind kind) {
    const alloc_handle h = a->h;
    const int pairs = a->pairs;
    for (int burst = -1; burst < a->bursts; burst++) {   /* burst -1: unrecorded */
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < pairs; i++) {
            void *p = impl_alloc(kind, &h, CLASS_64);
            use(p);
            impl_free(kind, &h, CLASS_64, p);
        }
        if (burst >= 0) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)pairs);
    }
    if (kind == IMPL_KILN) cached_record(&a->cached, h.pools, CLASSES, 1);
}

static void hit_round(void *state, bench_series *s) {
    hit_state *a = state;
#define HIT_BODY(K) hit_work(a, s, K)
    IMPL_DISPATCH(a->kind, HIT_BODY)
#undef HIT_BODY
}

/* The floor: pop and push of one node of a free list kept in a register. The asm makes
 * the popped node opaque, so the compiler cannot fold the push into the pop. */
static void hit_freelist_round(void *state, bench_series *s) {
    hit_state *a = state;
    static free_node nodes[2];
    free_node *head = &nodes[0];
    nodes[0].next = &nodes[1];
    nodes[1].next = NULL;
    for (int burst = -1; burst < a->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < a->pairs; i++) {
            free_node *p = head;
            head = p->next;
            __asm__ volatile("" : "+r"(p));
            p->next = head;
            head = p;
        }
        if (burst >= 0) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)a->pairs);
    }
}

static void run_hit(const run_size *size, kiln_ctx *ctx) {
    hit_state kiln = { .kind = IMPL_KILN, .bursts = size->hit_bursts, .pairs = size->hit_pairs };
    hit_state gl = kiln, mi = kiln, ref = kiln;
    gl.kind = IMPL_GLIBC;
    gl.h.fns = glibc;
    mi.kind = IMPL_MIMALLOC;
    kiln.h.ctx = ctx;
    kiln.h.pools[CLASS_64] = make_pool("hit 64 B", 64);
    char detail[256];
    snprintf(detail, sizeof detail,
             "alloc of a 64-byte object immediately followed by its free (the cache-hit path); "
             "1 thread; per round 1 unrecorded burst, then %d bursts of %d pairs",
             size->hit_bursts, size->hit_pairs);
    bench_workload w = { .title = "A2 cache-hit pair (micro, 1 thread)", .detail = detail,
                         .op = "pair", .sample = "burst", .note_head = "kiln idle cached B/ctx",
                         .rounds = size->hit_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln pool_alloc+pool_free", hit_round, &kiln);
    debug_row rows[MAX_DEBUG_ROWS];
    hit_state debug_states[MAX_DEBUG_ROWS];
    debug_rows_open(rows, "hit 64 B");
    for (int i = 0; i < debug_mask_count; i++) {
        debug_states[i] = kiln;
        debug_states[i].h.ctx = rows[i].ctx;
        debug_states[i].h.pools[CLASS_64] = rows[i].pool;
        bench_add_entry(&w, rows[i].name, hit_round, &debug_states[i]);
    }
    char bursts_arg[16], pairs_arg[16];
    snprintf(bursts_arg, sizeof bursts_arg, "%d", size->hit_bursts);
    snprintf(pairs_arg, sizeof pairs_arg, "%d", size->hit_pairs);
    const char *child_args[] = { "hit", bursts_arg, pairs_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    if (debug_mask_count == 0) add_peers(&w, hit_round, &gl, &mi, child_args, children);
    bench_add_entry(&w, "reference: inline free list", hit_freelist_round, &ref);
    bench_run(&w);
    cached_note(&kiln.cached, kiln_row);
    bench_print(&w);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    kiln_pool_destroy(kiln.h.pools[CLASS_64]);
    debug_rows_close(rows);
}

static int serve_hit_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child hit: BURSTS PAIRS expected");
    hit_state a = { .kind = IMPL_MALLOC, .bursts = atoi(argv[0]), .pairs = atoi(argv[1]) };
    return bench_child_serve(expect, hit_round, &a);
}

/* ==== A3 cross-thread producer/consumer ================================================
 * P producers and P consumers on a team of 2P threads; producer i allocates 64-byte
 * objects, writes a sequence number into each and pushes it into ring i; consumer i pops,
 * reads the number (a checksum verifies every object arrived intact) and frees the
 * object: the xmalloc-test pattern. kiln: each thread has its own context; the consumer
 * frees into its own cache, whose full magazines go back to the depot for the producer. */

#define A3_CHUNK 4096   /* objects per sample, per producer */

typedef struct a3_shared {
    int                pairs;      /* P */
    int                objects;    /* per producer per round */
    bench_team        *team;       /* 2P threads: producers, then consumers */
    ring              *rings;      /* P */
    pthread_barrier_t  start;
    thread_figures    *threads;    /* 2P */
    kiln_ctx         **ctx;        /* kiln: one per team thread */
    kiln_pool         *pool;       /* kiln */
} a3_shared;

typedef struct a3_row {
    a3_shared     *sh;
    impl_kind      kind;
    cached_figures cached;         /* kiln */
} a3_row;

INLINE void a3_work(a3_row *row, int index, impl_kind kind) {
    a3_shared *sh = row->sh;
    alloc_handle h = { .ctx = sh->ctx ? sh->ctx[index] : NULL, .fns = glibc };
    h.pools[CLASS_64] = sh->pool;
    thread_figures *me = &sh->threads[index];
    const int objects = sh->objects;
    bool producer = index < sh->pairs;
    ring *r = &sh->rings[producer ? index : index - sh->pairs];
    ring_writer w = ring_writer_of(r);
    ring_reader rd = ring_reader_of(r);
    pthread_barrier_wait(&sh->start);
    me->begin = bench_now_ns();
    if (producer) {
        int chunk = 0;
        for (int done = 0; done < objects; chunk++) {
            uint64_t t0 = bench_now_ns();
            int end = done + A3_CHUNK < objects ? done + A3_CHUNK : objects;
            for (; done < end; done++) {
                void *p = impl_alloc(kind, &h, CLASS_64);
                if (!p) bench_die("A3: alloc returned NULL");
                touch(p, (uint64_t)done);
                unsigned spins = 0;
                while (!ring_try_push(&w, p)) wait_a_little(&spins);
            }
            me->chunk_ns[chunk] = (double)(bench_now_ns() - t0);
        }
        ring_publish(&w);
    } else {
        uint64_t sum = 0;
        for (int done = 0; done < objects; done++) {
            void *p;
            unsigned spins = 0;
            while (!(p = ring_try_pop(&rd))) wait_a_little(&spins);
            sum += *(volatile uint64_t *)p;
            impl_free(kind, &h, CLASS_64, p);
        }
        me->checksum = sum;
    }
    me->end = bench_now_ns();
}

static void a3_thread(void *arg, int index) {
    a3_row *row = arg;
#define A3_BODY(K) a3_work(row, index, K)
    IMPL_DISPATCH(row->kind, A3_BODY)
#undef A3_BODY
}

/* One round: the wall time of the whole exchange over every object moved; samples are
 * the producers' chunks, each chunk's time over its objects times P (its share of the
 * wall time, when the P streams run side by side). */
static void a3_round(void *state, bench_series *s) {
    a3_row *row = state;
    a3_shared *sh = row->sh;
    bench_team_run(sh->team, a3_thread, row);
    uint64_t expect = (uint64_t)sh->objects * (uint64_t)(sh->objects - 1) / 2;
    for (int i = sh->pairs; i < 2 * sh->pairs; i++)
        if (sh->threads[i].checksum != expect) bench_die("A3: a consumer's checksum is wrong");
    record_threads(s, sh->threads, sh->pairs, 2 * sh->pairs, sh->objects, A3_CHUNK, sh->pairs);
    if (row->kind == IMPL_KILN) cached_record(&row->cached, &sh->pool, 1, 2 * sh->pairs);
}

static void a3_shared_init(a3_shared *sh, int pairs, int objects) {
    memset(sh, 0, sizeof *sh);
    sh->pairs = pairs;
    sh->objects = objects;
    sh->rings = rings_new(pairs);
    sh->threads = aligned_alloc(64, (size_t)(2 * pairs) * sizeof *sh->threads);
    if (!sh->threads) bench_die("out of memory for A3");
    for (int i = 0; i < 2 * pairs; i++)
        thread_figures_init(&sh->threads[i], (objects + A3_CHUNK - 1) / A3_CHUNK);
    pthread_barrier_init(&sh->start, NULL, (unsigned)(2 * pairs));
    sh->team = bench_team_start(2 * pairs);
}

static void a3_shared_fini(a3_shared *sh) {
    bench_team_stop(sh->team);
    pthread_barrier_destroy(&sh->start);
    for (int i = 0; i < 2 * sh->pairs; i++) free(sh->threads[i].chunk_ns);
    free(sh->threads);
    free(sh->rings);
}

/* kiln: every team thread attaches its own context (and detaches it at the end). */
typedef struct attach_job {
    kiln_ctx **ctx;
} attach_job;

static void attach_thread(void *arg, int index) {
    attach_job *job = arg;
    job->ctx[index] = checked(kiln_attach(runtime), "kiln_attach");
}

static void detach_thread(void *arg, int index) {
    attach_job *job = arg;
    kiln_detach(job->ctx[index]);
    job->ctx[index] = NULL;
}

static void run_a3(const run_size *size, int pairs, long cpus) {
    a3_shared sh;
    a3_shared_init(&sh, pairs, size->a3_objects);
    sh.ctx = calloc((size_t)(2 * pairs), sizeof *sh.ctx);
    if (!sh.ctx) bench_die("out of memory for A3");
    attach_job job = { sh.ctx };
    bench_team_run(sh.team, attach_thread, &job);
    sh.pool = make_pool("a3 64 B", 64);
    a3_row kiln = { &sh, IMPL_KILN, { { 0 }, 0 } }, gl = kiln, mi = kiln;
    gl.kind = IMPL_GLIBC;
    mi.kind = IMPL_MIMALLOC;

    char title[96], detail[400];
    snprintf(title, sizeof title, "A3 cross-thread, %d producer%s + %d consumer%s%s", pairs,
             pairs > 1 ? "s" : "", pairs, pairs > 1 ? "s" : "",
             2 * pairs > cpus ? " (oversubscribed)" : "");
    snprintf(detail, sizeof detail,
             "%d objects of 64 B per producer per round, each written, passed through a SPSC "
             "ring (%d slots) to its consumer, read and freed there; %d threads on %ld cores; "
             "ns per object = wall time / objects; samples: %d-object chunks of a producer x %d",
             size->a3_objects, RING_CAP, 2 * pairs, cpus, A3_CHUNK, pairs);
    bench_workload w = { .title = title, .detail = detail, .op = "object", .sample = "chunk",
                         .note_head = "kiln idle cached B/ctx", .rounds = size->a3_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln pool_alloc+pool_free", a3_round, &kiln);
    char pairs_arg[16], objects_arg[16];
    snprintf(pairs_arg, sizeof pairs_arg, "%d", pairs);
    snprintf(objects_arg, sizeof objects_arg, "%d", size->a3_objects);
    const char *child_args[] = { "a3", pairs_arg, objects_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS];
    add_peers(&w, a3_round, &gl, &mi, child_args, children);
    bench_run(&w);
    cached_note(&kiln.cached, kiln_row);
    bench_print(&w);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    bench_team_run(sh.team, detach_thread, &job);
    kiln_pool_destroy(sh.pool);
    free(sh.ctx);
    a3_shared_fini(&sh);
}

static int serve_a3_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child a3: PAIRS OBJECTS expected");
    a3_shared sh;
    a3_shared_init(&sh, atoi(argv[0]), atoi(argv[1]));
    a3_row row = { &sh, IMPL_MALLOC, { { 0 }, 0 } };
    int status = bench_child_serve(expect, a3_round, &row);
    a3_shared_fini(&sh);
    return status;
}

/* ==== A4 larson-like ===================================================================
 * T threads, each with 1 024 slots of live objects of random classes (16, 32, 64, 128,
 * 256 B). An op picks a random slot; one op in A4_HANDOFF hands the slot's object to the
 * next thread (a SPSC ring from thread t to t+1 mod T; with one thread, to itself), the
 * others free it; then it allocates a new object of a random class into the slot and
 * touches it, and frees whatever its own incoming ring holds. The op streams are
 * precomputed per thread from fixed seeds. kiln: a pool per class, a context per
 * thread; peers: malloc of the class's size. */

#define A4_SLOTS   1024                  /* live objects per thread; a power of two */
#define A4_HANDOFF 4
#define A4_TABLE   65536                 /* ops precomputed per thread, cycled */
#define A4_CHUNK   8192                  /* ops per sample, per thread */
#define A4_SEED    0x6b696c6e41344134ull

/* An op: slot (10 bits), class (3 bits), hand-off (1 bit). Objects travel tagged with
 * their class in the low bits (every allocator here returns at least 8-byte alignment). */
#define A4_OP(slot, cls, hand) ((uint16_t)((slot) | (cls) << 10 | (hand) << 13))
#define A4_TAG(p, cls)         ((void *)((uintptr_t)(p) | (cls)))
#define A4_PTR(t)              ((void *)((uintptr_t)(t) & ~(uintptr_t)7))
#define A4_CLS(t)              ((unsigned)((uintptr_t)(t) & 7))

typedef struct a4_shared {
    int               threads;
    int               ops;         /* per thread per round */
    bench_team       *team;
    ring             *rings;       /* ring t: thread t -> thread (t + 1) % T */
    uint16_t        **table;       /* per thread: A4_TABLE ops */
    void           ***slots;       /* per thread: A4_SLOTS tagged objects */
    pthread_barrier_t start;
    _Atomic int       finished;    /* threads past their timed ops this round */
    thread_figures   *figures;
    kiln_ctx        **ctx;         /* kiln */
    kiln_pool        *pools[CLASSES];
} a4_shared;

typedef struct a4_row {
    a4_shared     *sh;
    impl_kind      kind;
    cached_figures cached;
} a4_row;

INLINE void a4_free_tagged(impl_kind kind, const alloc_handle *h, void *t) {
    impl_free(kind, h, A4_CLS(t), A4_PTR(t));
}

INLINE void a4_work(a4_row *row, int index, impl_kind kind) {
    a4_shared *sh = row->sh;
    alloc_handle h = { .ctx = sh->ctx ? sh->ctx[index] : NULL, .fns = glibc };
    memcpy(h.pools, sh->pools, sizeof h.pools);
    thread_figures *me = &sh->figures[index];
    const uint16_t *table = sh->table[index];
    void **slots = sh->slots[index];
    const int ops = sh->ops;
    ring_writer out = ring_writer_of(&sh->rings[index]);
    ring_reader in = ring_reader_of(&sh->rings[(index + sh->threads - 1) % sh->threads]);
    for (int j = 0; j < A4_SLOTS; j++) {   /* the live set, untimed */
        unsigned cls = (unsigned)(table[j] >> 10) & 7;
        slots[j] = A4_TAG(checked(impl_alloc(kind, &h, cls), "A4: alloc"), cls);
    }
    pthread_barrier_wait(&sh->start);
    me->begin = bench_now_ns();
    int chunk = 0;
    for (int done = 0; done < ops; chunk++) {
        uint64_t t0 = bench_now_ns();
        int end = done + A4_CHUNK < ops ? done + A4_CHUNK : ops;
        for (; done < end; done++) {
            unsigned op = table[done % A4_TABLE];
            unsigned slot = op & (A4_SLOTS - 1), cls = (op >> 10) & 7;
            void *victim = slots[slot];
            if (op >> 13) {
                unsigned spins = 0;
                while (!ring_try_push(&out, victim)) {   /* full: free what came in, wait */
                    void *t;
                    while ((t = ring_try_pop(&in))) a4_free_tagged(kind, &h, t);
                    wait_a_little(&spins);
                }
            } else {
                a4_free_tagged(kind, &h, victim);
            }
            void *p = impl_alloc(kind, &h, cls);
            if (!p) bench_die("A4: alloc returned NULL");
            touch(p, done);
            slots[slot] = A4_TAG(p, cls);
            void *t;
            while ((t = ring_try_pop(&in))) a4_free_tagged(kind, &h, t);
        }
        me->chunk_ns[chunk] = (double)(bench_now_ns() - t0);
    }
    me->end = bench_now_ns();
    /* Untimed: every push published; then this thread keeps freeing what comes in until
     * every thread is past its ops (a neighbour may still be pushing into a full ring),
     * then frees the rest and its live set. */
    ring_publish(&out);
    atomic_fetch_add_explicit(&sh->finished, 1, memory_order_acq_rel);
    void *t;
    unsigned spins = 0;
    while (atomic_load_explicit(&sh->finished, memory_order_acquire) < sh->threads) {
        while ((t = ring_try_pop(&in))) a4_free_tagged(kind, &h, t);
        wait_a_little(&spins);
    }
    while ((t = ring_try_pop(&in))) a4_free_tagged(kind, &h, t);
    for (int j = 0; j < A4_SLOTS; j++) a4_free_tagged(kind, &h, slots[j]);
}

static void a4_thread(void *arg, int index) {
    a4_row *row = arg;
#define A4_BODY(K) a4_work(row, index, K)
    IMPL_DISPATCH(row->kind, A4_BODY)
#undef A4_BODY
}

static void a4_round(void *state, bench_series *s) {
    a4_row *row = state;
    a4_shared *sh = row->sh;
    atomic_store_explicit(&sh->finished, 0, memory_order_relaxed);
    bench_team_run(sh->team, a4_thread, row);
    record_threads(s, sh->figures, sh->threads, sh->threads, sh->ops, A4_CHUNK, sh->threads);
    if (row->kind == IMPL_KILN) cached_record(&row->cached, sh->pools, CLASSES, sh->threads);
}

static void a4_shared_init(a4_shared *sh, int threads, int ops) {
    memset(sh, 0, sizeof *sh);
    sh->threads = threads;
    sh->ops = ops;
    sh->rings = rings_new(threads);
    sh->table = calloc((size_t)threads, sizeof *sh->table);
    sh->slots = calloc((size_t)threads, sizeof *sh->slots);
    sh->figures = aligned_alloc(64, (size_t)threads * sizeof *sh->figures);
    if (!sh->table || !sh->slots || !sh->figures) bench_die("out of memory for A4");
    for (int i = 0; i < threads; i++) {
        sh->table[i] = malloc(A4_TABLE * sizeof **sh->table);
        sh->slots[i] = calloc(A4_SLOTS, sizeof **sh->slots);
        if (!sh->table[i] || !sh->slots[i]) bench_die("out of memory for A4");
        bench_rng rng = { A4_SEED + (uint64_t)i * 0x9e3779b97f4a7c15ull };
        for (int k = 0; k < A4_TABLE; k++) {
            uint64_t x = bench_rng_next(&rng);
            unsigned slot = (unsigned)(x & (A4_SLOTS - 1));
            unsigned cls = (unsigned)((x >> 16) % CLASSES);
            unsigned hand = (unsigned)((x >> 32) % A4_HANDOFF == 0);
            sh->table[i][k] = A4_OP(slot, cls, hand);
        }
        thread_figures_init(&sh->figures[i], (ops + A4_CHUNK - 1) / A4_CHUNK);
    }
    pthread_barrier_init(&sh->start, NULL, (unsigned)threads);
    sh->team = bench_team_start(threads);
}

static void a4_shared_fini(a4_shared *sh) {
    bench_team_stop(sh->team);
    pthread_barrier_destroy(&sh->start);
    for (int i = 0; i < sh->threads; i++) {
        free(sh->table[i]);
        free(sh->slots[i]);
        free(sh->figures[i].chunk_ns);
    }
    free(sh->table);
    free(sh->slots);
    free(sh->figures);
    free(sh->rings);
}

static void run_a4(const run_size *size, int threads, long cpus) {
    a4_shared sh;
    a4_shared_init(&sh, threads, size->a4_ops);
    sh.ctx = calloc((size_t)threads, sizeof *sh.ctx);
    if (!sh.ctx) bench_die("out of memory for A4");
    attach_job job = { sh.ctx };
    bench_team_run(sh.team, attach_thread, &job);
    static const char *names[CLASSES] = { "a4 16 B", "a4 32 B", "a4 64 B", "a4 128 B",
                                          "a4 256 B" };
    for (int c = 0; c < CLASSES; c++) sh.pools[c] = make_pool(names[c], class_size[c]);
    a4_row kiln = { &sh, IMPL_KILN, { { 0 }, 0 } }, gl = kiln, mi = kiln;
    gl.kind = IMPL_GLIBC;
    mi.kind = IMPL_MIMALLOC;

    char title[96], detail[400];
    snprintf(title, sizeof title, "A4 larson-like, %d thread%s%s", threads, threads > 1 ? "s" : "",
             threads > cpus ? " (oversubscribed)" : "");
    snprintf(detail, sizeof detail,
             "per thread %d live objects of 16/32/64/128/256 B (random); an op frees a random "
             "slot's object (1 in %d: hands it to the next thread, which frees it), allocates "
             "a new one there and touches it; %d ops per thread per round; %ld cores; ns per "
             "op = wall time / all ops; samples: %d-op chunks of a thread / %d",
             A4_SLOTS, A4_HANDOFF, size->a4_ops, cpus, A4_CHUNK, threads);
    bench_workload w = { .title = title, .detail = detail, .op = "op", .sample = "chunk",
                         .note_head = "kiln idle cached B/ctx", .rounds = size->a4_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln pool_alloc+pool_free", a4_round, &kiln);
    char threads_arg[16], ops_arg[16];
    snprintf(threads_arg, sizeof threads_arg, "%d", threads);
    snprintf(ops_arg, sizeof ops_arg, "%d", size->a4_ops);
    const char *child_args[] = { "a4", threads_arg, ops_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS];
    add_peers(&w, a4_round, &gl, &mi, child_args, children);
    bench_run(&w);
    cached_note(&kiln.cached, kiln_row);
    bench_print(&w);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    bench_team_run(sh.team, detach_thread, &job);
    for (int c = 0; c < CLASSES; c++) kiln_pool_destroy(sh.pools[c]);
    free(sh.ctx);
    a4_shared_fini(&sh);
}

static int serve_a4_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child a4: THREADS OPS expected");
    a4_shared sh;
    a4_shared_init(&sh, atoi(argv[0]), atoi(argv[1]));
    a4_row row = { &sh, IMPL_MALLOC, { { 0 }, 0 } };
    int status = bench_child_serve(expect, a4_round, &row);
    a4_shared_fini(&sh);
    return status;
}

/* ==== callgrind ========================================================================
 * N cache-hit pairs with one implementation, counted only between two
 * CALLGRIND_TOGGLE_COLLECT requests: run under
 *   valgrind --tool=callgrind --collect-atstart=no
 * and the total is the loop's instructions (the calls, their callees and the loop's own
 * few instructions), so Ir / N is the cost of a pair (callgrind.sh). A warm-up round of
 * 1 000 pairs (binding kiln's cache, filling its magazines) is not counted. */

static int callgrind_pairs(const char *impl, long n) {
#ifndef BENCH_HAVE_CALLGRIND_H
    (void)impl;
    (void)n;
    bench_die("--callgrind needs valgrind/callgrind.h at configure time");
#else
    hit_state a = { .kind = IMPL_KILN, .bursts = 0, .pairs = 1000 };
    bench_round_fn round = hit_round;
    char why[160];
    if (strcmp(impl, "kiln") == 0) a.kind = IMPL_KILN;
    else if (strcmp(impl, "glibc") == 0) a.kind = IMPL_GLIBC;
    else if (strcmp(impl, "freelist") == 0) round = hit_freelist_round;
#ifdef BENCH_HAVE_MIMALLOC
    else if (strcmp(impl, "mimalloc") == 0) a.kind = IMPL_MIMALLOC;
#endif
    else bench_die("--callgrind: implementation %s unknown or not found at configure time", impl);
    if (a.kind == IMPL_GLIBC && !bench_glibc_find(&glibc, BENCH_FOREIGN_MALLOC, why, sizeof why))
        bench_die("%s", why);
    a.h.fns = glibc;
    a.h.ctx = checked(kiln_attach(runtime), "kiln_attach");
    a.h.pools[CLASS_64] = make_pool("callgrind 64 B", 64);
    bench_series s = { 0 };
    round(&a, &s);
    a.pairs = (int)n;
    CALLGRIND_TOGGLE_COLLECT;
    round(&a, &s);
    CALLGRIND_TOGGLE_COLLECT;
    printf("pairs %ld (plus one uncounted burst of %ld)\n", n, n);
    bench_series_free(&s);
    kiln_pool_destroy(a.h.pools[CLASS_64]);
    kiln_detach(a.h.ctx);
    return 0;
#endif
}

/* ==== main ============================================================================== */

static void usage(void) {
    fprintf(stderr, "usage: pool_bench [--quick] [--only a2|hit|a3|a4] [--debug BITS[,BITS...]]\n"
                    "       pool_bench --callgrind kiln|glibc|mimalloc|freelist N\n");
    exit(2);
}

static int serve_child(int argc, char **argv) {
    /* argv: EXPECT WORKLOAD ARGS... */
    if (argc < 2) usage();
    const char *expect = argv[0], *workload = argv[1];
    if (strcmp(workload, "a2") == 0) return serve_a2_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "hit") == 0) return serve_hit_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "a3") == 0) return serve_a3_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "a4") == 0) return serve_a4_child(expect, argc - 2, argv + 2);
    usage();
    return 2;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return serve_child(argc - 2, argv + 2);
    const run_size *size = &full_run;
    const char *only = NULL;
    runtime = kiln_create(NULL);
    if (!runtime) bench_die("kiln_create failed");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--callgrind") == 0 && i + 2 < argc)
            return callgrind_pairs(argv[i + 1], atol(argv[i + 2]));
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--debug") == 0 && i + 1 < argc) {
            if (!parse_debug_masks(argv[++i])) usage();
        } else usage();
    }
    if (only && strcmp(only, "a2") != 0 && strcmp(only, "hit") != 0 && strcmp(only, "a3") != 0 &&
        strcmp(only, "a4") != 0)
        usage();
    printf("kiln pool_bench (%s run); malloc in this process comes from %s\n",
           size == &quick_run ? "quick" : "full", bench_malloc_provider());
    bench_print_load();
    char why[160];
    if (!bench_glibc_find(&glibc, BENCH_FOREIGN_MALLOC, why, sizeof why)) printf("note: %s\n", why);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    uint64_t t0 = bench_now_ns();
    kiln_ctx *ctx = checked(kiln_attach(runtime), "kiln_attach");
    if (!only || strcmp(only, "a2") == 0) run_a2(size, ctx);
    if (!only || strcmp(only, "hit") == 0) run_hit(size, ctx);
    kiln_detach(ctx);
    if (!only || strcmp(only, "a3") == 0) {
        run_a3(size, 1, cpus);
        run_a3(size, cpus >= 2 ? (int)cpus : 2, cpus);
    }
    if (!only || strcmp(only, "a4") == 0) {
        int counts[] = { 1, 2, 2 * (int)cpus };
        for (int i = 0; i < 3; i++) {
            if (i == 2 && counts[i] <= 2) break;
            run_a4(size, counts[i], cpus);
        }
    }
    kiln_destroy(runtime);
    printf("\npool_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
