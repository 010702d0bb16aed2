/* bench/heap_bench.c — the general heap's family of BENCH.md: H3 mixed-size churn, H4
 * cross-thread (producer/consumer and larson-like, random sizes), H5 realloc growth, and
 * the cost of a tag; kiln_heap_* against every malloc peer found at configure time, one
 * table per workload.
 *
 * Usage:
 *   heap_bench [--quick] [--only h3|h4|h5|tags]
 *       the tables; --quick: tiny rounds, every workload and peer in a few seconds;
 *       --only tags: H3 and H4b at 2 threads with the two kiln rows only (untagged and
 *       tagged), the tag's cost without the peers
 *   heap_bench --child EXPECT WORKLOAD ARGS...
 *       internal: serves a malloc peer's rounds to the parent, under LD_PRELOAD
 *
 * Implementations: kiln (kiln_heap_alloc / kiln_heap_free / kiln_heap_realloc, each
 * thread attached with its own context; untagged, and in H3 and H4b at 2 threads also
 * with one tag that has no budget, as a second kiln row); glibc's own malloc / free /
 * realloc, looked up with dlsym (the process's plain malloc is mimalloc's once
 * libmimalloc is linked: bench_glibc_find); mimalloc mi_malloc / mi_free / mi_realloc;
 * jemalloc and tcmalloc malloc / free / realloc in child processes under LD_PRELOAD.
 * Every implementation runs the same loop: one always_inline body per workload,
 * instantiated once per implementation with the kind a constant.
 *
 * Goals (the issue's): H3 at least 1.2x mimalloc; H4 ahead of every peer; H5 at least
 * mimalloc's speed; a tag costs at most 5 %. Each table is followed by a line that says
 * the measured figure against its goal, and the run ends with those lines together.
 *
 * The note column: kiln's heap after each kiln round, everything freed: the bytes its
 * classes hold plus its kept large mappings (kiln_heap_stats class_bytes +
 * large_kept_bytes), what the heap keeps from the OS when idle. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <ck_pr.h>
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_config.h"
#include "harness.h"

#ifdef BENCH_HAVE_MIMALLOC
#  include <mimalloc.h>
#  define BENCH_FOREIGN_MALLOC mi_is_in_heap_region   /* for bench_glibc_find */
#else
#  define BENCH_FOREIGN_MALLOC NULL
#endif

#define INLINE static inline __attribute__((always_inline))

/* Sizes of the run: full (the default) and --quick. H5's caps: (i) doubling to 64 MiB
 * (the issue's), 4 MiB in --quick; (ii) +16 B steps to 1 MiB (65 535 reallocs: a round
 * of a few hundred ms at most for every peer), 64 KiB in --quick. */
typedef struct run_size {
    int    h3_bursts;       /* recorded bursts per round (after H3_SETTLE unrecorded) */
    int    h3_batches;      /* batches per burst (1-16 pairs each, 8.5 on average) */
    int    h3_rounds;
    int    h4a_objects;     /* per producer per round */
    int    h4a_rounds;
    int    h4b_ops;         /* per thread per round */
    int    h4b_rounds;
    int    h5d_vectors;     /* vectors grown per round, by doubling */
    size_t h5d_cap;         /* their final size */
    int    h5d_rounds;
    int    h5s_vectors;     /* vectors grown per round, by +H5_STEP */
    size_t h5s_cap;
    int    h5s_rounds;
} run_size;

static const run_size full_run  = { .h3_bursts = 40, .h3_batches = 1200, .h3_rounds = 21,
                                    .h4a_objects = 300000, .h4a_rounds = 15,
                                    .h4b_ops = 300000, .h4b_rounds = 21,
                                    .h5d_vectors = 2, .h5d_cap = (size_t)64 << 20, .h5d_rounds = 11,
                                    .h5s_vectors = 2, .h5s_cap = (size_t)1 << 20, .h5s_rounds = 11 };
static const run_size quick_run = { .h3_bursts = 2, .h3_batches = 300, .h3_rounds = 5,
                                    .h4a_objects = 8192, .h4a_rounds = 5,
                                    .h4b_ops = 8192, .h4b_rounds = 5,
                                    .h5d_vectors = 1, .h5d_cap = (size_t)4 << 20, .h5d_rounds = 5,
                                    .h5s_vectors = 1, .h5s_cap = (size_t)64 << 10, .h5s_rounds = 5 };

/* Random request sizes, every workload: uniform in [REQ_MIN, REQ_MAX]. */
#define REQ_MIN 8
#define REQ_MAX 1024

static inline uint16_t random_size(bench_rng *rng) {
    return (uint16_t)(REQ_MIN + bench_rng_next(rng) % (REQ_MAX - REQ_MIN + 1));
}

/* ==== Implementations ================================================================ */

typedef enum impl_kind {
    IMPL_KILN,       /* kiln_heap_alloc / kiln_heap_free / kiln_heap_realloc */
    IMPL_GLIBC,      /* glibc's own malloc / free / realloc (function pointers from dlsym) */
    IMPL_MIMALLOC,   /* mi_malloc / mi_free / mi_realloc */
    IMPL_MALLOC,     /* the process's malloc / free / realloc: a child's LD_PRELOAD library */
} impl_kind;

typedef struct glibc_fns {
    void *(*malloc)(size_t);
    void  (*free)(void *);
    void *(*realloc)(void *, size_t);
} glibc_fns;

/* What one thread needs to allocate: copied into locals by every loop, so the calls
 * in it do not force reloads from shared state. */
typedef struct alloc_handle {
    kiln_ctx *ctx;    /* kiln: this thread's context */
    kiln_tag  tag;    /* kiln: {0} untagged, or the benchmark's tag */
    glibc_fns fns;    /* glibc */
} alloc_handle;

static glibc_fns glibc;           /* found by find_glibc */
static bool      glibc_found;
static char      glibc_why[160];  /* why not */

INLINE void *impl_alloc(impl_kind kind, const alloc_handle *h, size_t size) {
    switch (kind) {
    case IMPL_KILN: return kiln_heap_alloc(h->ctx, h->tag, size, 0);
    case IMPL_GLIBC: return h->fns.malloc(size);
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: return mi_malloc(size);
#endif
    default: return malloc(size);
    }
}

INLINE void impl_free(impl_kind kind, const alloc_handle *h, void *p) {
    switch (kind) {
    case IMPL_KILN: kiln_heap_free(h->ctx, p); break;
    case IMPL_GLIBC: h->fns.free(p); break;
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: mi_free(p); break;
#endif
    default: free(p); break;
    }
}

INLINE void *impl_realloc(impl_kind kind, const alloc_handle *h, void *p, size_t size) {
    switch (kind) {
    case IMPL_KILN: return kiln_heap_realloc(h->ctx, p, size, 0);
    case IMPL_GLIBC: return h->fns.realloc(p, size);
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: return mi_realloc(p, size);
#endif
    default: return realloc(p, size);
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

/* glibc's malloc and free (bench_glibc_find), and its realloc from the same object. */
static void find_glibc(void) {
    bench_malloc_fns fns;
    glibc_found = false;
    if (!bench_glibc_find(&fns, BENCH_FOREIGN_MALLOC, glibc_why, sizeof glibc_why)) return;
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    void *sym = libc ? dlsym(libc, "realloc") : NULL;
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !strstr(info.dli_fname, LIBC_SO)) {
        snprintf(glibc_why, sizeof glibc_why, "glibc's realloc not found in %s", LIBC_SO);
        if (libc) dlclose(libc);
        return;
    }
    glibc.malloc = fns.malloc;
    glibc.free = fns.free;
    memcpy(&glibc.realloc, &sym, sizeof sym);   /* POSIX: dlsym's pointers convert */
    dlclose(libc);
    glibc_found = true;
}

/* The writes every allocation gets: its first and its last byte, as a user's
 * initialisation would; volatile so that no compiler drops them. */
INLINE void touch(void *p, size_t size, uint64_t v) {
    volatile unsigned char *c = p;
    c[0] = (unsigned char)v;
    c[size - 1] = (unsigned char)(v >> 8);
}

static void *checked(void *p, const char *what) {
    if (!p) bench_die("%s returned NULL", what);
    return p;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The kiln runtime of every in-process kiln row, and the tag of the tagged rows. */
static kiln_runtime *runtime;
static kiln_tag      bench_tag;

/* kiln's heap after a kiln round (everything freed), for the note column: KiB its
 * classes hold plus its kept large mappings, "median (max)" over the measured rounds. */
typedef struct kept_figures {
    double values[64];
    int    count;
} kept_figures;

static void kept_record(kept_figures *f) {
    kiln_heap_stats st;
    if (kiln_stats_heap(runtime, &st) && f->count < (int)(sizeof f->values / sizeof f->values[0]))
        f->values[f->count++] = (double)(st.class_bytes + st.large_kept_bytes) / 1024.0;
}

/* The warm-up round's figure is dropped, like the harness drops its times. */
static void kept_note(kept_figures *f, bench_entry *e) {
    if (f->count < 2) return;
    double max = 0;
    for (int i = 1; i < f->count; i++) max = f->values[i] > max ? f->values[i] : max;
    double median = median_of(f->values + 1, (size_t)f->count - 1);
    snprintf(e->note, sizeof e->note, "%.0f (max %.0f)", median, max);
}

#define NOTE_HEAD "kiln KiB kept after round"

/* ==== Goals ============================================================================
 * One line per goal after its table, all of them again at the end of the run. */

static char goal_lines[32][400];
static int  goal_count;

static void goal_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void goal_print(const char *fmt, ...) {
    char line[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    printf("%s\n", line);
    if (goal_count < (int)(sizeof goal_lines / sizeof goal_lines[0]))
        memcpy(goal_lines[goal_count++], line, sizeof line);
    fflush(stdout);
}

/* The entry's median ns/op over its rounds (the table's "median" column); 0 for a row
 * that did not run. */
static double entry_median(const bench_entry *e) {
    const bench_series *s = &e->series;
    if (e->skip[0] || s->rounds == 0) return 0;
    double *v = malloc(s->rounds * sizeof *v);
    if (!v) bench_die("out of memory for statistics");
    for (size_t i = 0; i < s->rounds; i++) v[i] = s->round_ns[i] / s->round_ops[i];
    double m = median_of(v, s->rounds);
    free(v);
    return m;
}

static const bench_entry *find_entry(const bench_workload *w, const char *prefix) {
    for (int i = 0; i < w->count; i++)
        if (strncmp(w->entries[i].name, prefix, strlen(prefix)) == 0) return &w->entries[i];
    return NULL;
}

/* "goal: kiln at least X x mimalloc": mimalloc's median over kiln's (entries[0]). */
static void goal_against(const bench_workload *w, const char *label, const char *peer,
                         double at_least, const char *goal_text) {
    const bench_entry *e = find_entry(w, peer);
    double base = entry_median(&w->entries[0]);
    double m = e ? entry_median(e) : 0;
    if (!e || m == 0 || base == 0) {
        goal_print("  goal %s (%s): not measured, %s did not run", label, goal_text, peer);
        return;
    }
    double ratio = m / base;
    goal_print("  goal %s (%s): %s/kiln = %.2fx (kiln %.2f, %s %.2f ns/%s): %s", label, goal_text,
               peer, ratio, base, peer, m, w->op, ratio >= at_least ? "met" : "NOT met");
}

/* "goal: ahead of every peer": each peer's median over kiln's (entries[0]); kiln rows
 * (the tagged one) are not peers. */
static void goal_every_peer(const bench_workload *w, const char *label) {
    double base = entry_median(&w->entries[0]);
    char list[300] = "";
    size_t used = 0;
    int behind = 0, measured = 0;
    for (int i = 1; i < w->count; i++) {
        const bench_entry *e = &w->entries[i];
        if (strncmp(e->name, "kiln", 4) == 0) continue;
        double m = entry_median(e);
        if (m == 0 || base == 0) continue;
        measured++;
        char name[32];
        snprintf(name, sizeof name, "%s", e->name);
        char *space = strchr(name, ' ');
        if (space) *space = '\0';
        int n = snprintf(list + used, sizeof list - used, "%s%s %.2fx", used ? ", " : "", name,
                         m / base);
        if (n > 0 && (size_t)n < sizeof list - used) used += (size_t)n;
        if (m <= base) behind++;
    }
    if (measured == 0) {
        goal_print("  goal %s (ahead of every peer): not measured, no peer ran", label);
        return;
    }
    goal_print("  goal %s (ahead of every peer, every peer/kiln > 1): %s: %s", label, list,
               behind ? "NOT met" : "met");
}

/* The tag's cost: entries[0] is kiln untagged, entries[1] kiln tagged. Rounds alternate,
 * so round i of one ran right next to round i of the other: the median of the per-round
 * ratios cancels the load other work puts on the machine, which moves the two medians
 * apart by more than 5 % on a busy 2-core machine. The verdict is on that figure; the
 * difference of the medians (the table's ratio column) is printed beside it. */
static void goal_tag(const bench_workload *w, const char *label) {
    const bench_entry *u = &w->entries[0], *t = &w->entries[1];
    double mu = entry_median(u), mt = entry_median(t);
    if (mu == 0 || mt == 0) {
        goal_print("  tag cost %s: not measured", label);
        return;
    }
    size_t n = u->series.rounds < t->series.rounds ? u->series.rounds : t->series.rounds;
    double *v = malloc((n + 1) * sizeof *v);
    if (!v) bench_die("out of memory for statistics");
    for (size_t i = 0; i < n; i++)
        v[i] = (t->series.round_ns[i] / t->series.round_ops[i]) /
               (u->series.round_ns[i] / u->series.round_ops[i]);
    double paired = median_of(v, n);
    free(v);
    double pct = (paired - 1) * 100;
    goal_print("  tag cost %s (goal: at most 5 %%): %+.1f %%, the median of the per-round ratios "
               "tagged/untagged (their rounds run side by side); of the medians: kiln tagged %.2f "
               "against untagged %.2f ns/%s, %+.1f %%: %s", label, pct, mt, mu, w->op,
               (mt / mu - 1) * 100, pct <= 5.0 ? "met" : "NOT met");
}

/* The rows of a table after kiln's: glibc, mimalloc, then the children. */
static void add_peers(bench_workload *w, bench_round_fn round, void *glibc_state,
                      void *mimalloc_state, const char *const child_args[],
                      bench_child *children[BENCH_PRELOAD_PEERS]) {
    if (glibc_found) bench_add_entry(w, "glibc malloc+free", round, glibc_state);
    else bench_add_skipped(w, "glibc malloc+free", "%s", glibc_why);
#ifdef BENCH_HAVE_MIMALLOC
    bench_add_entry(w, "mimalloc mi_malloc+mi_free", round, mimalloc_state);
#else
    (void)mimalloc_state;
    bench_add_skipped(w, "mimalloc mi_malloc+mi_free", "libmimalloc not found at configure time");
#endif
    bench_add_preload_peers(w, "heap_bench", child_args, children);
}

#include "bench_ring.h"   /* the ring and the per-thread figures (H4) */

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

/* ==== H3 mixed-size churn ==============================================================
 * pool_bench's A2 with random sizes: 10 000 live allocations of 8 B-1 KiB (uniform) in
 * slots; each batch frees 1-16 random distinct slots' allocations, then allocates as
 * many of new random sizes into those slots, each new allocation touched (its first and
 * last byte). The batches (sizes, slot indices and request sizes) are precomputed from a
 * fixed seed. */

#define H3_LIVE      10000
#define H3_MAX_BATCH 16
#define H3_SETTLE    1                       /* unrecorded bursts at the start of a round */
#define H3_SEED      0x6b696c6e48334833ull

typedef struct h3_input {
    uint8_t  *batch;          /* batch sizes, burst after burst */
    uint32_t *index;          /* the slots of every batch, in order */
    uint16_t *size;           /* the request size of each of those allocations */
    uint16_t *fill_size;      /* the live set's request sizes (H3_LIVE) */
    int       bursts;         /* H3_SETTLE + recorded */
    int       batches;        /* per burst */
} h3_input;

typedef struct h3_state {
    const h3_input *in;
    impl_kind       kind;
    alloc_handle    h;
    void          **slots;
    kept_figures    kept;     /* kiln */
} h3_state;

static void h3_input_init(h3_input *in, int bursts, int batches) {
    in->bursts = H3_SETTLE + bursts;
    in->batches = batches;
    size_t total = (size_t)in->bursts * (size_t)batches;
    in->batch = malloc(total);
    in->index = malloc(total * H3_MAX_BATCH * sizeof *in->index);
    in->size = malloc(total * H3_MAX_BATCH * sizeof *in->size);
    in->fill_size = malloc(H3_LIVE * sizeof *in->fill_size);
    if (!in->batch || !in->index || !in->size || !in->fill_size)
        bench_die("out of memory for the H3 inputs");
    bench_rng rng = { H3_SEED };
    for (int i = 0; i < H3_LIVE; i++) in->fill_size[i] = random_size(&rng);
    uint32_t *out = in->index;
    uint16_t *sizes = in->size;
    for (size_t b = 0; b < total; b++) {
        unsigned k = 1 + (unsigned)(bench_rng_next(&rng) % H3_MAX_BATCH);
        in->batch[b] = (uint8_t)k;
        for (unsigned j = 0; j < k; j++) {
            uint32_t slot;
            bool fresh;
            do {   /* distinct within a batch: a slot is freed once before it is refilled */
                slot = (uint32_t)(bench_rng_next(&rng) % H3_LIVE);
                fresh = true;
                for (unsigned m = 0; m < j; m++) fresh = fresh && out[m] != slot;
            } while (!fresh);
            out[j] = slot;
            sizes[j] = random_size(&rng);
        }
        out += k;
        sizes += k;
    }
}

static void h3_input_fini(h3_input *in) {
    free(in->batch);
    free(in->index);
    free(in->size);
    free(in->fill_size);
}

static void h3_state_init(h3_state *a, const h3_input *in, impl_kind kind) {
    memset(a, 0, sizeof *a);
    a->in = in;
    a->kind = kind;
    a->h.fns = glibc;
    a->slots = calloc(H3_LIVE, sizeof *a->slots);
    if (!a->slots) bench_die("out of memory for the H3 slots");
}

INLINE void h3_work(h3_state *a, bench_series *s, impl_kind kind) {
    const alloc_handle h = a->h;
    void **slots = a->slots;
    const uint8_t *batch = a->in->batch;
    const uint32_t *index = a->in->index;
    const uint16_t *size = a->in->size;
    const int batches = a->in->batches;
    for (uint32_t i = 0; i < H3_LIVE; i++) {   /* the live set, untimed */
        slots[i] = checked(impl_alloc(kind, &h, a->in->fill_size[i]), "H3: alloc");
        touch(slots[i], a->in->fill_size[i], i);
    }
    for (int burst = 0; burst < a->in->bursts; burst++) {
        uint64_t t0 = bench_now_ns();
        long pairs = 0;
        for (int b = 0; b < batches; b++) {
            unsigned k = *batch++;
            for (unsigned j = 0; j < k; j++) impl_free(kind, &h, slots[index[j]]);
            for (unsigned j = 0; j < k; j++) {
                void *p = impl_alloc(kind, &h, size[j]);
                if (!p) bench_die("H3: alloc returned NULL");
                touch(p, size[j], j);
                slots[index[j]] = p;
            }
            index += k;
            size += k;
            pairs += k;
        }
        if (burst >= H3_SETTLE) bench_add_sample(s, (double)(bench_now_ns() - t0), (double)pairs);
    }
    for (int i = 0; i < H3_LIVE; i++) impl_free(kind, &h, slots[i]);
    if (kind == IMPL_KILN) kept_record(&a->kept);
}

static void h3_round(void *state, bench_series *s) {
    h3_state *a = state;
#define H3_BODY(K) h3_work(a, s, K)
    IMPL_DISPATCH(a->kind, H3_BODY)
#undef H3_BODY
}

static void run_h3(const run_size *size, kiln_ctx *ctx, bool peers) {
    h3_input in;
    h3_input_init(&in, size->h3_bursts, size->h3_batches);
    h3_state kiln, tagged, gl, mi;
    h3_state_init(&kiln, &in, IMPL_KILN);
    h3_state_init(&tagged, &in, IMPL_KILN);
    h3_state_init(&gl, &in, IMPL_GLIBC);
    h3_state_init(&mi, &in, IMPL_MIMALLOC);
    kiln.h.ctx = ctx;
    tagged.h.ctx = ctx;
    tagged.h.tag = bench_tag;

    char detail[480];
    snprintf(detail, sizeof detail,
             "%d live allocations of %d-%d B (uniform random); batches free 1-%d random distinct "
             "slots, then allocate as many of new random sizes into them (each touched: first "
             "and last byte); fixed seed; 1 thread; per round: fill, %d unrecorded burst, %d "
             "recorded bursts of %d batches (~%d pairs), free all",
             H3_LIVE, REQ_MIN, REQ_MAX, H3_MAX_BATCH, H3_SETTLE, size->h3_bursts,
             size->h3_batches, (int)(size->h3_batches * (H3_MAX_BATCH + 1) / 2));
    bench_workload w = { .title = peers ? "H3 mixed-size churn (1 thread; goal: kiln >= 1.2x mimalloc)"
                                        : "H3 mixed-size churn (1 thread; the tag's cost)",
                         .detail = detail, .op = "pair", .sample = "burst",
                         .note_head = NOTE_HEAD, .rounds = size->h3_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln heap untagged", h3_round, &kiln);
    bench_entry *tagged_row = bench_add_entry(&w, "kiln heap tagged", h3_round, &tagged);
    char bursts_arg[16], batches_arg[16];
    snprintf(bursts_arg, sizeof bursts_arg, "%d", size->h3_bursts);
    snprintf(batches_arg, sizeof batches_arg, "%d", size->h3_batches);
    const char *child_args[] = { "h3", bursts_arg, batches_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    if (peers) add_peers(&w, h3_round, &gl, &mi, child_args, children);
    bench_run(&w);
    kept_note(&kiln.kept, kiln_row);
    kept_note(&tagged.kept, tagged_row);
    bench_print(&w);
    if (peers) goal_against(&w, "H3", "mimalloc", 1.2, "kiln at least 1.2x mimalloc");
    goal_tag(&w, "H3");
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    free(kiln.slots);
    free(tagged.slots);
    free(gl.slots);
    free(mi.slots);
    h3_input_fini(&in);
}

static int serve_h3_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child h3: BURSTS BATCHES expected");
    h3_input in;
    h3_input_init(&in, atoi(argv[0]), atoi(argv[1]));
    h3_state a;
    h3_state_init(&a, &in, IMPL_MALLOC);
    int status = bench_child_serve(expect, h3_round, &a);
    free(a.slots);
    h3_input_fini(&in);
    return status;
}

/* ==== H4a cross-thread producer/consumer ================================================
 * pool_bench's A3 with random sizes: P producers and P consumers on a team of 2P
 * threads; producer i allocates 8 B-1 KiB (a fixed-seed table per producer, cycled),
 * writes a sequence number into the first 8 bytes and its last byte, and pushes it into
 * ring i; consumer i pops, reads the number (a checksum verifies that every allocation
 * arrived intact) and frees it: the xmalloc-test pattern. kiln: each thread has its own
 * context; the consumer's frees go to its own cache. */

#define H4_SIZES 65536            /* random sizes precomputed per thread, cycled */
#define H4A_CHUNK 4096            /* objects per sample, per producer */
#define H4A_SEED 0x6b696c6e48344134ull

typedef struct h4a_shared {
    int                pairs;      /* P */
    int                objects;    /* per producer per round */
    bench_team        *team;       /* 2P threads: producers, then consumers */
    ring              *rings;      /* P */
    uint16_t         **sizes;      /* per producer: H4_SIZES request sizes */
    pthread_barrier_t  start;
    thread_figures    *threads;    /* 2P */
    kiln_ctx         **ctx;        /* kiln: one per team thread */
} h4a_shared;

typedef struct h4_row {
    void         *sh;              /* h4a_shared or h4b_shared */
    impl_kind     kind;
    kiln_tag      tag;             /* kiln */
    kept_figures  kept;            /* kiln */
} h4_row;

INLINE void h4a_work(h4_row *row, int index, impl_kind kind) {
    h4a_shared *sh = row->sh;
    alloc_handle h = { .ctx = sh->ctx ? sh->ctx[index] : NULL, .tag = row->tag, .fns = glibc };
    thread_figures *me = &sh->threads[index];
    const int objects = sh->objects;
    bool producer = index < sh->pairs;
    ring *r = &sh->rings[producer ? index : index - sh->pairs];
    ring_writer w = ring_writer_of(r);
    ring_reader rd = ring_reader_of(r);
    pthread_barrier_wait(&sh->start);
    me->begin = bench_now_ns();
    if (producer) {
        const uint16_t *sizes = sh->sizes[index];
        int chunk = 0;
        for (int done = 0; done < objects; chunk++) {
            uint64_t t0 = bench_now_ns();
            int end = done + H4A_CHUNK < objects ? done + H4A_CHUNK : objects;
            for (; done < end; done++) {
                size_t size = sizes[done % H4_SIZES];
                void *p = impl_alloc(kind, &h, size);
                if (!p) bench_die("H4a: alloc returned NULL");
                /* the last byte first: at 8 B it is the number's own last byte */
                ((volatile unsigned char *)p)[size - 1] = (unsigned char)done;
                *(volatile uint64_t *)p = (uint64_t)done;
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
            impl_free(kind, &h, p);
        }
        me->checksum = sum;
    }
    me->end = bench_now_ns();
}

static void h4a_thread(void *arg, int index) {
    h4_row *row = arg;
#define H4A_BODY(K) h4a_work(row, index, K)
    IMPL_DISPATCH(row->kind, H4A_BODY)
#undef H4A_BODY
}

/* One round: the wall time of the whole exchange over every object moved; samples are
 * the producers' chunks, each chunk's time over its objects times P. */
static void h4a_round(void *state, bench_series *s) {
    h4_row *row = state;
    h4a_shared *sh = row->sh;
    bench_team_run(sh->team, h4a_thread, row);
    uint64_t expect = (uint64_t)sh->objects * (uint64_t)(sh->objects - 1) / 2;
    for (int i = sh->pairs; i < 2 * sh->pairs; i++)
        if (sh->threads[i].checksum != expect) bench_die("H4a: a consumer's checksum is wrong");
    record_threads(s, sh->threads, sh->pairs, 2 * sh->pairs, sh->objects, H4A_CHUNK, sh->pairs);
    if (row->kind == IMPL_KILN) kept_record(&row->kept);
}

static void h4a_shared_init(h4a_shared *sh, int pairs, int objects) {
    memset(sh, 0, sizeof *sh);
    sh->pairs = pairs;
    sh->objects = objects;
    sh->rings = rings_new(pairs);
    sh->sizes = calloc((size_t)pairs, sizeof *sh->sizes);
    sh->threads = aligned_alloc(64, (size_t)(2 * pairs) * sizeof *sh->threads);
    if (!sh->sizes || !sh->threads) bench_die("out of memory for H4a");
    for (int i = 0; i < pairs; i++) {
        sh->sizes[i] = malloc(H4_SIZES * sizeof **sh->sizes);
        if (!sh->sizes[i]) bench_die("out of memory for H4a");
        bench_rng rng = { H4A_SEED + (uint64_t)i * 0x9e3779b97f4a7c15ull };
        for (int k = 0; k < H4_SIZES; k++) sh->sizes[i][k] = random_size(&rng);
    }
    for (int i = 0; i < 2 * pairs; i++)
        thread_figures_init(&sh->threads[i], (objects + H4A_CHUNK - 1) / H4A_CHUNK);
    pthread_barrier_init(&sh->start, NULL, (unsigned)(2 * pairs));
    sh->team = bench_team_start(2 * pairs);
}

static void h4a_shared_fini(h4a_shared *sh) {
    bench_team_stop(sh->team);
    pthread_barrier_destroy(&sh->start);
    for (int i = 0; i < sh->pairs; i++) free(sh->sizes[i]);
    for (int i = 0; i < 2 * sh->pairs; i++) free(sh->threads[i].chunk_ns);
    free(sh->sizes);
    free(sh->threads);
    free(sh->rings);
}

static void run_h4a(const run_size *size, int pairs, long cpus) {
    h4a_shared sh;
    h4a_shared_init(&sh, pairs, size->h4a_objects);
    sh.ctx = calloc((size_t)(2 * pairs), sizeof *sh.ctx);
    if (!sh.ctx) bench_die("out of memory for H4a");
    attach_job job = { sh.ctx };
    bench_team_run(sh.team, attach_thread, &job);
    h4_row kiln = { &sh, IMPL_KILN, { 0 }, { { 0 }, 0 } }, gl = kiln, mi = kiln;
    gl.kind = IMPL_GLIBC;
    mi.kind = IMPL_MIMALLOC;

    char title[128], detail[480];
    snprintf(title, sizeof title, "H4a cross-thread, %d producer%s + %d consumer%s, 8 B-1 KiB%s "
             "(goal: ahead of every peer)", pairs, pairs > 1 ? "s" : "", pairs, pairs > 1 ? "s" : "",
             2 * pairs > cpus ? " (oversubscribed)" : "");
    snprintf(detail, sizeof detail,
             "%d allocations of %d-%d B (uniform random) per producer per round, each written "
             "(first 8 bytes, last byte), passed through a SPSC ring (%d slots) to its consumer, "
             "read and freed there; %d threads on %ld cores; ns per object = wall time / "
             "objects; samples: %d-object chunks of a producer x %d",
             size->h4a_objects, REQ_MIN, REQ_MAX, RING_CAP, 2 * pairs, cpus, H4A_CHUNK, pairs);
    bench_workload w = { .title = title, .detail = detail, .op = "object", .sample = "chunk",
                         .note_head = NOTE_HEAD, .rounds = size->h4a_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln heap untagged", h4a_round, &kiln);
    char pairs_arg[16], objects_arg[16];
    snprintf(pairs_arg, sizeof pairs_arg, "%d", pairs);
    snprintf(objects_arg, sizeof objects_arg, "%d", size->h4a_objects);
    const char *child_args[] = { "h4a", pairs_arg, objects_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS];
    add_peers(&w, h4a_round, &gl, &mi, child_args, children);
    bench_run(&w);
    kept_note(&kiln.kept, kiln_row);
    bench_print(&w);
    char label[32];
    snprintf(label, sizeof label, "H4a %dP+%dC", pairs, pairs);
    goal_every_peer(&w, label);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    bench_team_run(sh.team, detach_thread, &job);
    free(sh.ctx);
    h4a_shared_fini(&sh);
}

static int serve_h4a_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child h4a: PAIRS OBJECTS expected");
    h4a_shared sh;
    h4a_shared_init(&sh, atoi(argv[0]), atoi(argv[1]));
    h4_row row = { &sh, IMPL_MALLOC, { 0 }, { { 0 }, 0 } };
    int status = bench_child_serve(expect, h4a_round, &row);
    h4a_shared_fini(&sh);
    return status;
}

/* ==== H4b larson-like ===================================================================
 * pool_bench's A4 with random sizes: T threads, each with 1 024 slots of live
 * allocations of 8 B-1 KiB. An op picks a random slot; one op in H4B_HANDOFF hands the
 * slot's allocation to the next thread (a SPSC ring from thread t to t+1 mod T; with one
 * thread, to itself), the others free it; then it allocates a new one of a random size
 * into the slot and touches it (first and last byte), and frees whatever its own
 * incoming ring holds. The op streams are precomputed per thread from fixed seeds. */

#define H4B_SLOTS   1024                 /* live allocations per thread; a power of two */
#define H4B_HANDOFF 4
#define H4B_TABLE   65536                /* ops precomputed per thread, cycled */
#define H4B_CHUNK   8192                 /* ops per sample, per thread */
#define H4B_SEED    0x6b696c6e48344234ull

/* An op: slot (10 bits), hand-off (1 bit), request size (11 bits). */
#define H4B_OP(slot, hand, size) ((uint32_t)(slot) | (uint32_t)(hand) << 10 | (uint32_t)(size) << 11)
#define H4B_SLOT(op)             ((op) & (H4B_SLOTS - 1))
#define H4B_HAND(op)             (((op) >> 10) & 1)
#define H4B_SIZE(op)             ((op) >> 11)

typedef struct h4b_shared {
    int               threads;
    int               ops;         /* per thread per round */
    bench_team       *team;
    ring             *rings;       /* ring t: thread t -> thread (t + 1) % T */
    uint32_t        **table;       /* per thread: H4B_TABLE ops */
    void           ***slots;       /* per thread: H4B_SLOTS allocations */
    pthread_barrier_t start;
    _Atomic int       finished;    /* threads past their timed ops this round */
    thread_figures   *figures;
    kiln_ctx        **ctx;         /* kiln */
} h4b_shared;

INLINE void h4b_work(h4_row *row, int index, impl_kind kind) {
    h4b_shared *sh = row->sh;
    alloc_handle h = { .ctx = sh->ctx ? sh->ctx[index] : NULL, .tag = row->tag, .fns = glibc };
    thread_figures *me = &sh->figures[index];
    const uint32_t *table = sh->table[index];
    void **slots = sh->slots[index];
    const int ops = sh->ops;
    ring_writer out = ring_writer_of(&sh->rings[index]);
    ring_reader in = ring_reader_of(&sh->rings[(index + sh->threads - 1) % sh->threads]);
    for (int j = 0; j < H4B_SLOTS; j++) {   /* the live set, untimed */
        size_t size = H4B_SIZE(table[j]);
        slots[j] = checked(impl_alloc(kind, &h, size), "H4b: alloc");
        touch(slots[j], size, (uint64_t)j);
    }
    pthread_barrier_wait(&sh->start);
    me->begin = bench_now_ns();
    int chunk = 0;
    for (int done = 0; done < ops; chunk++) {
        uint64_t t0 = bench_now_ns();
        int end = done + H4B_CHUNK < ops ? done + H4B_CHUNK : ops;
        for (; done < end; done++) {
            uint32_t op = table[done % H4B_TABLE];
            unsigned slot = H4B_SLOT(op);
            size_t size = H4B_SIZE(op);
            void *victim = slots[slot];
            if (H4B_HAND(op)) {
                unsigned spins = 0;
                while (!ring_try_push(&out, victim)) {   /* full: free what came in, wait */
                    void *t;
                    while ((t = ring_try_pop(&in))) impl_free(kind, &h, t);
                    wait_a_little(&spins);
                }
            } else {
                impl_free(kind, &h, victim);
            }
            void *p = impl_alloc(kind, &h, size);
            if (!p) bench_die("H4b: alloc returned NULL");
            touch(p, size, (uint64_t)done);
            slots[slot] = p;
            void *t;
            while ((t = ring_try_pop(&in))) impl_free(kind, &h, t);
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
        while ((t = ring_try_pop(&in))) impl_free(kind, &h, t);
        wait_a_little(&spins);
    }
    while ((t = ring_try_pop(&in))) impl_free(kind, &h, t);
    for (int j = 0; j < H4B_SLOTS; j++) impl_free(kind, &h, slots[j]);
}

static void h4b_thread(void *arg, int index) {
    h4_row *row = arg;
#define H4B_BODY(K) h4b_work(row, index, K)
    IMPL_DISPATCH(row->kind, H4B_BODY)
#undef H4B_BODY
}

static void h4b_round(void *state, bench_series *s) {
    h4_row *row = state;
    h4b_shared *sh = row->sh;
    atomic_store_explicit(&sh->finished, 0, memory_order_relaxed);
    bench_team_run(sh->team, h4b_thread, row);
    record_threads(s, sh->figures, sh->threads, sh->threads, sh->ops, H4B_CHUNK, sh->threads);
    if (row->kind == IMPL_KILN) kept_record(&row->kept);
}

static void h4b_shared_init(h4b_shared *sh, int threads, int ops) {
    memset(sh, 0, sizeof *sh);
    sh->threads = threads;
    sh->ops = ops;
    sh->rings = rings_new(threads);
    sh->table = calloc((size_t)threads, sizeof *sh->table);
    sh->slots = calloc((size_t)threads, sizeof *sh->slots);
    sh->figures = aligned_alloc(64, (size_t)threads * sizeof *sh->figures);
    if (!sh->table || !sh->slots || !sh->figures) bench_die("out of memory for H4b");
    for (int i = 0; i < threads; i++) {
        sh->table[i] = malloc(H4B_TABLE * sizeof **sh->table);
        sh->slots[i] = calloc(H4B_SLOTS, sizeof **sh->slots);
        if (!sh->table[i] || !sh->slots[i]) bench_die("out of memory for H4b");
        bench_rng rng = { H4B_SEED + (uint64_t)i * 0x9e3779b97f4a7c15ull };
        for (int k = 0; k < H4B_TABLE; k++) {
            uint64_t x = bench_rng_next(&rng);
            unsigned slot = (unsigned)(x & (H4B_SLOTS - 1));
            unsigned hand = (unsigned)((x >> 32) % H4B_HANDOFF == 0);
            sh->table[i][k] = H4B_OP(slot, hand, random_size(&rng));
        }
        thread_figures_init(&sh->figures[i], (ops + H4B_CHUNK - 1) / H4B_CHUNK);
    }
    pthread_barrier_init(&sh->start, NULL, (unsigned)threads);
    sh->team = bench_team_start(threads);
}

static void h4b_shared_fini(h4b_shared *sh) {
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

/* with_tag: a second kiln row with the benchmark's tag (the tag's cost); peers: the
 * malloc rows (off for --only tags). */
static void run_h4b(const run_size *size, int threads, long cpus, bool with_tag, bool peers) {
    h4b_shared sh;
    h4b_shared_init(&sh, threads, size->h4b_ops);
    sh.ctx = calloc((size_t)threads, sizeof *sh.ctx);
    if (!sh.ctx) bench_die("out of memory for H4b");
    attach_job job = { sh.ctx };
    bench_team_run(sh.team, attach_thread, &job);
    h4_row kiln = { &sh, IMPL_KILN, { 0 }, { { 0 }, 0 } }, tagged = kiln, gl = kiln, mi = kiln;
    tagged.tag = bench_tag;
    gl.kind = IMPL_GLIBC;
    mi.kind = IMPL_MIMALLOC;

    char title[128], detail[480];
    snprintf(title, sizeof title, "H4b larson-like, 8 B-1 KiB, %d thread%s%s (%s)", threads,
             threads > 1 ? "s" : "", threads > cpus ? " (oversubscribed)" : "",
             peers ? "goal: ahead of every peer" : "the tag's cost");
    snprintf(detail, sizeof detail,
             "per thread %d live allocations of %d-%d B (uniform random); an op frees a random "
             "slot's allocation (1 in %d: hands it to the next thread, which frees it), "
             "allocates a new one of a random size there and touches it (first and last byte); "
             "%d ops per thread per round; %ld cores; ns per op = wall time / all ops; samples: "
             "%d-op chunks of a thread / %d",
             H4B_SLOTS, REQ_MIN, REQ_MAX, H4B_HANDOFF, size->h4b_ops, cpus, H4B_CHUNK, threads);
    bench_workload w = { .title = title, .detail = detail, .op = "op", .sample = "chunk",
                         .note_head = NOTE_HEAD, .rounds = size->h4b_rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln heap untagged", h4b_round, &kiln);
    bench_entry *tagged_row = with_tag ? bench_add_entry(&w, "kiln heap tagged", h4b_round, &tagged)
                                       : NULL;
    char threads_arg[16], ops_arg[16];
    snprintf(threads_arg, sizeof threads_arg, "%d", threads);
    snprintf(ops_arg, sizeof ops_arg, "%d", size->h4b_ops);
    const char *child_args[] = { "h4b", threads_arg, ops_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    if (peers) add_peers(&w, h4b_round, &gl, &mi, child_args, children);
    bench_run(&w);
    kept_note(&kiln.kept, kiln_row);
    if (tagged_row) kept_note(&tagged.kept, tagged_row);
    bench_print(&w);
    char label[32];
    snprintf(label, sizeof label, "H4b %d thread%s", threads, threads > 1 ? "s" : "");
    if (peers) goal_every_peer(&w, label);
    if (with_tag) goal_tag(&w, label);
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
    bench_team_run(sh.team, detach_thread, &job);
    free(sh.ctx);
    h4b_shared_fini(&sh);
}

static int serve_h4b_child(const char *expect, int argc, char **argv) {
    if (argc < 2) bench_die("child h4b: THREADS OPS expected");
    h4b_shared sh;
    h4b_shared_init(&sh, atoi(argv[0]), atoi(argv[1]));
    h4_row row = { &sh, IMPL_MALLOC, { 0 }, { { 0 }, 0 } };
    int status = bench_child_serve(expect, h4b_round, &row);
    h4b_shared_fini(&sh);
    return status;
}

/* ==== H5 realloc growth ==================================================================
 * A vector's life: allocated at 16 B, grown by realloc to its cap (i: doubling, ii: +16 B
 * per step), each step writing the new tail byte, then freed; a byte written at the
 * start is checked at the end (the contents were kept). One thread; a sample is one
 * vector: its whole time (alloc, reallocs, writes, free) over its reallocs. kiln:
 * kiln_heap_alloc untagged + kiln_heap_realloc + kiln_heap_free; peers: malloc + realloc
 * + free. */

#define H5_START 16
#define H5_STEP  16        /* (ii)'s growth per step */

typedef struct h5_state {
    impl_kind    kind;
    alloc_handle h;
    int          vectors;   /* per round */
    size_t       cap;       /* the final size */
    size_t       step;      /* 0: doubling; else bytes added per realloc */
    kept_figures kept;      /* kiln */
} h5_state;

INLINE void h5_work(h5_state *a, bench_series *s, impl_kind kind) {
    const alloc_handle h = a->h;
    const size_t cap = a->cap, step = a->step;
    for (int v = 0; v < a->vectors; v++) {
        uint64_t t0 = bench_now_ns();
        size_t size = H5_START;
        unsigned char *p = impl_alloc(kind, &h, size);
        if (!p) bench_die("H5: alloc returned NULL");
        ((volatile unsigned char *)p)[0] = 0x5a;
        ((volatile unsigned char *)p)[size - 1] = 0;
        long steps = 0;
        while (size < cap) {
            size_t next = step ? size + step : size * 2;
            if (next > cap) next = cap;
            unsigned char *q = impl_realloc(kind, &h, p, next);
            if (!q) bench_die("H5: realloc to %zu bytes returned NULL", next);
            ((volatile unsigned char *)q)[next - 1] = (unsigned char)steps;
            p = q;
            size = next;
            steps++;
        }
        if (((volatile unsigned char *)p)[0] != 0x5a) bench_die("H5: realloc lost the contents");
        impl_free(kind, &h, p);
        bench_add_sample(s, (double)(bench_now_ns() - t0), (double)steps);
    }
    if (kind == IMPL_KILN) kept_record(&a->kept);
}

static void h5_round(void *state, bench_series *s) {
    h5_state *a = state;
#define H5_BODY(K) h5_work(a, s, K)
    IMPL_DISPATCH(a->kind, H5_BODY)
#undef H5_BODY
}

static void size_text(char *out, size_t cap, size_t bytes) {
    if (bytes >= ((size_t)1 << 20) && bytes % ((size_t)1 << 20) == 0)
        snprintf(out, cap, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0) snprintf(out, cap, "%zu KiB", bytes >> 10);
    else snprintf(out, cap, "%zu B", bytes);
}

static void run_h5(int vectors, size_t cap, size_t step, int rounds, kiln_ctx *ctx) {
    h5_state kiln = { .kind = IMPL_KILN, .vectors = vectors, .cap = cap, .step = step };
    kiln.h.ctx = ctx;
    h5_state gl = kiln, mi = kiln;
    gl.kind = IMPL_GLIBC;
    gl.h.fns = glibc;
    mi.kind = IMPL_MIMALLOC;
    char cap_text[32], title[128], detail[480];
    size_text(cap_text, sizeof cap_text, cap);
    long steps = 0;
    for (size_t s = H5_START; s < cap; s = step ? s + step : s * 2) steps++;
    if (step)
        snprintf(title, sizeof title, "H5 (ii) realloc growth by +%zu B to %s (1 thread; goal: "
                 "kiln >= mimalloc's speed)", step, cap_text);
    else
        snprintf(title, sizeof title, "H5 (i) realloc growth by doubling to %s (1 thread; goal: "
                 "kiln >= mimalloc's speed)", cap_text);
    snprintf(detail, sizeof detail,
             "a vector allocated at %d B and grown by realloc %s to %s (%ld reallocs), each step "
             "writing the new tail byte, then freed; %d vector%s per round; ns per step = the "
             "vector's whole time (alloc, reallocs, writes, free) / its reallocs; a sample is one "
             "vector", H5_START, step ? "in +16 B steps" : "by doubling", cap_text, steps,
             vectors, vectors > 1 ? "s" : "");
    bench_workload w = { .title = title, .detail = detail, .op = "step", .sample = "vector",
                         .note_head = NOTE_HEAD, .rounds = rounds };
    bench_entry *kiln_row = bench_add_entry(&w, "kiln heap_realloc", h5_round, &kiln);
    char vectors_arg[16], cap_arg[24], step_arg[16];
    snprintf(vectors_arg, sizeof vectors_arg, "%d", vectors);
    snprintf(cap_arg, sizeof cap_arg, "%zu", cap);
    snprintf(step_arg, sizeof step_arg, "%zu", step);
    const char *child_args[] = { "h5", vectors_arg, cap_arg, step_arg, NULL };
    bench_child *children[BENCH_PRELOAD_PEERS] = { 0 };
    add_peers(&w, h5_round, &gl, &mi, child_args, children);
    /* The rows' names say realloc: rename the malloc peers' rows. */
    for (int i = 1; i < w.count; i++) {
        bench_entry *e = &w.entries[i];
        if (strcmp(e->name, "glibc malloc+free") == 0) e->name = "glibc realloc";
        else if (strcmp(e->name, "mimalloc mi_malloc+mi_free") == 0) e->name = "mimalloc mi_realloc";
        else if (strncmp(e->name, "jemalloc", 8) == 0) e->name = "jemalloc realloc (child)";
        else if (strncmp(e->name, "tcmalloc", 8) == 0) e->name = "tcmalloc realloc (child)";
    }
    bench_run(&w);
    kept_note(&kiln.kept, kiln_row);
    bench_print(&w);
    const char *label = step ? "H5 (ii) +16 B steps" : "H5 (i) doubling";
    goal_against(&w, label, "mimalloc", 1.0, "kiln at least mimalloc's speed");
    bench_stop_preload_peers(children);
    bench_workload_free(&w);
}

static int serve_h5_child(const char *expect, int argc, char **argv) {
    if (argc < 3) bench_die("child h5: VECTORS CAP STEP expected");
    h5_state a = { .kind = IMPL_MALLOC, .vectors = atoi(argv[0]),
                   .cap = (size_t)strtoull(argv[1], NULL, 10),
                   .step = (size_t)strtoull(argv[2], NULL, 10) };
    return bench_child_serve(expect, h5_round, &a);
}

/* ==== main ============================================================================== */

static void usage(void) {
    fprintf(stderr, "usage: heap_bench [--quick] [--only h3|h4|h5|tags]\n");
    exit(2);
}

static int serve_child(int argc, char **argv) {
    /* argv: EXPECT WORKLOAD ARGS... */
    if (argc < 2) usage();
    const char *expect = argv[0], *workload = argv[1];
    if (strcmp(workload, "h3") == 0) return serve_h3_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "h4a") == 0) return serve_h4a_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "h4b") == 0) return serve_h4b_child(expect, argc - 2, argv + 2);
    if (strcmp(workload, "h5") == 0) return serve_h5_child(expect, argc - 2, argv + 2);
    usage();
    return 2;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return serve_child(argc - 2, argv + 2);
    const run_size *size = &full_run;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else usage();
    }
    if (only && strcmp(only, "h3") != 0 && strcmp(only, "h4") != 0 && strcmp(only, "h5") != 0 &&
        strcmp(only, "tags") != 0)
        usage();
    bool tags_only = only && strcmp(only, "tags") == 0;
    /* The release options of the other benchmarks: no debug layer; no workers (no jobs
     * run here, and the cores are the benchmark's). */
    runtime = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .debug = 0 });
    if (!runtime) bench_die("kiln_create failed");
    bench_tag = kiln_tag_create(runtime, &(kiln_tag_desc){ .name = "heap_bench" });
    if (bench_tag.id == 0) bench_die("kiln_tag_create failed");
    printf("kiln heap_bench (%s run%s); malloc in this process comes from %s\n",
           size == &quick_run ? "quick" : "full", tags_only ? ", the tag's cost only" : "",
           bench_malloc_provider());
    bench_print_load();
    find_glibc();
    if (!glibc_found) printf("note: %s\n", glibc_why);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    uint64_t t0 = bench_now_ns();
    kiln_ctx *ctx = checked(kiln_attach(runtime), "kiln_attach");
    if (!only || strcmp(only, "h3") == 0 || tags_only) run_h3(size, ctx, !tags_only);
    if (!only || strcmp(only, "h4") == 0) {
        run_h4a(size, 1, cpus);
        run_h4a(size, cpus >= 2 ? (int)cpus : 2, cpus);
        static const int counts[] = { 1, 2, 4 };
        for (int i = 0; i < 3; i++) run_h4b(size, counts[i], cpus, counts[i] == 2, true);
    }
    if (tags_only) run_h4b(size, 2, cpus, true, false);
    if (!only || strcmp(only, "h5") == 0) {
        run_h5(size->h5d_vectors, size->h5d_cap, 0, size->h5d_rounds, ctx);
        run_h5(size->h5s_vectors, size->h5s_cap, H5_STEP, size->h5s_rounds, ctx);
    }
    kiln_detach(ctx);
    kiln_destroy(runtime);
    if (goal_count) {
        printf("\n== heap_bench goals (the issue's; ratios peer/kiln of the medians above) ==\n");
        for (int i = 0; i < goal_count; i++) printf("%s\n", goal_lines[i]);
    }
    printf("\nheap_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}
