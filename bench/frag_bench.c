/* bench/frag_bench.c — fragmentation over a long session (BENCH.md's "Fragmentation"):
 * the engine failure "that appears after three hours of play". One deterministic
 * generator (fixed seeds) plays the same session of levels against every allocator,
 * each in a process of its own, and the process's resident memory is followed against
 * the bytes the session holds live.
 *
 * Usage:
 *   frag_bench [--quick] [--svg PATH] [--all]
 *       the session on kiln, glibc and mimalloc (twice: with its default options, and with
 *       its decommit delays 0, see below; --all: jemalloc and tcmalloc too, under
 *       LD_PRELOAD), one child process each, one after another; prints the levels, the
 *       figures and the goal's verdict; --svg writes the chart (the README's is
 *       docs/heap-fragmentation.svg, from a full run:
 *       build-rel/bench/frag_bench --svg docs/heap-fragmentation.svg);
 *       --quick: a short session (about 3 x 10^5 operations) for the test suite
 *   frag_bench --child kiln|glibc|mimalloc|malloc [--quick]
 *       internal: plays the session on one allocator and writes its figures on stdout
 *
 * The session: cycles of four level types (town, forest, arena, city: each its own
 * size mix and its own component sizes), cycle after cycle until at least 10^8
 * operations (alloc, free and realloc each count one; --quick: 3 x 10^5). Before the first
 * level the engine's own objects are made (never freed). A level:
 *   load      the level's objects, the same each time that type loads (its own seed):
 *             many 16-256 B (most of them the level's component sizes), some 1-16 KiB,
 *             a few 64 KiB-4 MiB assets; all live until the unload;
 *   frames    each frame: temporaries of 16-512 B and two 4-64 KiB scratch buffers, freed
 *             at the frame's end; medium-lived objects of 32 B-16 KiB that live 1-15 s
 *             (60-900 frames); spawned objects that live until the unload; now and then
 *             an explosion (a burst of 1 000-12 000 particles that live 20-240 frames) or
 *             a streamed chunk of 256 KiB-2 MiB (100-600 frames); and level vectors
 *             grown by realloc (x1.5 a step, up to 64 KiB-4 MiB each);
 *   unload    frees everything the level holds, but a few survivors (0.5 % of the level's
 *             objects, 5 % of its assets, 10 % of its vectors: caches, the player's
 *             things) that live 1-4 levels more (the classic fragmentation trigger);
 *             then the trim an engine does between levels: kiln_trim(rt) for kiln,
 *             malloc_trim(0) for glibc, mi_collect(true) for mimalloc (jemalloc: purge
 *             of every arena, tcmalloc: ReleaseFreeMemory).
 * Every allocation is written whole (memset) when it is made, as a game fills what it
 * allocates; realloc writes the new tail.
 *
 * Figures: live bytes are the generator's own count of the bytes requested and not yet
 * freed. Resident memory is the process's (/proc/self/statm) less a baseline read after
 * the allocator's and the generator's setup (the generator's tables are mapped and
 * touched before it), sampled every 2^18 operations and at every load and unload; a
 * level's peak is the kernel's high-water mark (VmHWM, reset at the level's start
 * through /proc/self/clear_refs), so no peak between two samples is missed. For kiln
 * also kiln_stats_memory's reserved, and after each trim its heap_free and free_blocks.
 *
 * mimalloc decommits freed memory only after a delay of wall time (25 ms for pages,
 * 500 ms for segments by default), and here mi_collect(true) did not cut it short (its
 * resident memory stayed near its peak after every unload): a session that plays a
 * level of 3 000 frames in about a second, dozens of times faster than a game at 60 Hz,
 * gives it less time than play would. So mimalloc runs twice: with its defaults, and with both delays 0
 * (MIMALLOC_DECOMMIT_DELAY=0, MIMALLOC_SEGMENT_DECOMMIT_DELAY=0 in its child's environment).
 *
 * The goal (the issue's): kiln's resident memory stays within 1.25x of the live-bytes
 * peak after warm-up (the first cycle of four levels), and does not grow after warm-up.
 * Growth is measured on resident less live bytes (so that the live bytes' own
 * cycle-to-cycle differences do not count), at each level's peak and after its unload:
 * the least-squares trend over the cycles after warm-up, each level type about its own
 * mean, from the first repeated cycle to the last, at most GROWTH_TOLERANCE of the live
 * peak. The last cycle against the first repeated one (the worst level type) and each
 * type's spread over those cycles (the noise) are printed beside it. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_config.h"
#include "harness.h"

#ifdef BENCH_HAVE_MIMALLOC
#  include <mimalloc.h>
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ==== The session's sizes ============================================================= */

#define LEVEL_TYPES      4
#define GOAL_RATIO       1.25     /* resident / live peak, after warm-up */
#define GROWTH_TOLERANCE 0.02     /* of the live peak: what "does not grow" allows */
#define SAMPLE_EVERY     ((uint64_t)1 << 18)
#define WHEEL            1024     /* frames; every timed lifetime is shorter */
#define VECTORS          16       /* level vectors grown by realloc */

typedef struct level_type {
    const char *name;
    int      small, medium, assets;   /* load: 16-256 B, 1-16 KiB, 64 KiB-4 MiB objects */
    uint16_t parts[8];                /* the level's component sizes (70 % of its small ones) */
    int      particle_min, particle_max;
    int      burst_every;             /* an explosion every this many frames, on average */
} level_type;

static const level_type level_types[LEVEL_TYPES] = {
    { "town",   320000, 6000, 40, { 24, 40, 72, 96, 136, 200, 48, 160 }, 48, 96, 90 },
    { "forest", 120000, 3000, 90, { 32, 56, 88, 120, 168, 248, 64, 112 }, 64, 128, 150 },
    { "arena",   80000, 2000, 30, { 40, 80, 104, 144, 176, 232, 16, 208 }, 96, 192, 45 },
    { "city",   500000, 10000, 70, { 24, 48, 80, 112, 152, 216, 184, 256 }, 48, 160, 90 },
};

typedef struct run_size {
    int      divide;          /* load counts and burst sizes divided by this */
    int      frames;          /* per level */
    uint64_t min_ops;         /* whole cycles until at least this many operations */
} run_size;

static const run_size full_run  = { .divide = 1,  .frames = 3000, .min_ops = 100000000 };
static const run_size quick_run = { .divide = 40, .frames = 50,   .min_ops = 300000 };

/* ==== The allocators ================================================================== */

typedef enum impl_kind { IMPL_KILN, IMPL_GLIBC, IMPL_MIMALLOC, IMPL_MALLOC } impl_kind;

static impl_kind     impl;
static kiln_runtime *rt;
static kiln_ctx     *ctx;
static void *(*glibc_malloc)(size_t);
static void  (*glibc_free)(void *);
static void *(*glibc_realloc)(void *, size_t);
static int   (*glibc_trim)(size_t);
static int   (*je_mallctl)(const char *, void *, size_t *, void *, size_t);   /* jemalloc */
static void  (*tc_release)(void);                                           /* tcmalloc */

static inline void *impl_alloc(size_t size) {
    switch (impl) {
    case IMPL_KILN: return kiln_heap_alloc(ctx, (kiln_tag){ 0 }, size, 0);
    case IMPL_GLIBC: return glibc_malloc(size);
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: return mi_malloc(size);
#endif
    default: return malloc(size);
    }
}

static inline void impl_free(void *p) {
    switch (impl) {
    case IMPL_KILN: kiln_heap_free(ctx, p); break;
    case IMPL_GLIBC: glibc_free(p); break;
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: mi_free(p); break;
#endif
    default: free(p); break;
    }
}

static inline void *impl_realloc(void *p, size_t size) {
    switch (impl) {
    case IMPL_KILN: return kiln_heap_realloc(ctx, p, size, 0);
    case IMPL_GLIBC: return glibc_realloc(p, size);
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: return mi_realloc(p, size);
#endif
    default: return realloc(p, size);
    }
}

/* What an engine does between levels. */
static void impl_trim(void) {
    switch (impl) {
    case IMPL_KILN: kiln_trim(rt); break;
    case IMPL_GLIBC: glibc_trim(0); break;
#ifdef BENCH_HAVE_MIMALLOC
    case IMPL_MIMALLOC: mi_collect(true); break;
#endif
    default:
        if (je_mallctl) je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);   /* all arenas */
        if (tc_release) tc_release();
        break;
    }
}

static void *libc_symbol(void *libc, const char *name) {
    void *sym = libc ? dlsym(libc, name) : NULL;
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || !strstr(info.dli_fname, LIBC_SO))
        bench_die("glibc's %s not found in %s", name, LIBC_SO);
    return sym;
}

static void impl_setup(void) {
    if (impl == IMPL_KILN) {
        rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .debug = 0 });
        if (!rt) bench_die("kiln_create failed");
        ctx = kiln_attach(rt);
        if (!ctx) bench_die("kiln_attach failed");
    } else if (impl == IMPL_GLIBC) {
        /* Debian's libmimalloc exports malloc itself, and it is linked here: glibc's own
         * functions are looked up in libc.so.6 (as bench_glibc_find does). */
        void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
        void *m = libc_symbol(libc, "malloc"), *f = libc_symbol(libc, "free"),
             *r = libc_symbol(libc, "realloc"), *t = libc_symbol(libc, "malloc_trim");
        memcpy(&glibc_malloc, &m, sizeof m);   /* POSIX: dlsym's pointers convert */
        memcpy(&glibc_free, &f, sizeof f);
        memcpy(&glibc_realloc, &r, sizeof r);
        memcpy(&glibc_trim, &t, sizeof t);
#ifdef BENCH_HAVE_MIMALLOC
        void *probe = glibc_malloc(64);
        if (mi_is_in_heap_region(probe)) bench_die("the malloc found in %s is mimalloc's", LIBC_SO);
        glibc_free(probe);
#endif
    } else if (impl == IMPL_MALLOC) {
        void *sym = dlsym(RTLD_DEFAULT, "mallctl");
        if (sym) memcpy(&je_mallctl, &sym, sizeof sym);
        sym = dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
        if (sym) memcpy(&tc_release, &sym, sizeof sym);
    }
    impl_free(impl_alloc(64));   /* the allocator's own setup, before the baseline */
}

/* ==== Resident memory ================================================================= */

static int    statm_fd = -1;
static size_t page_size;
static bool   hwm_resettable;

/* Pages the allocator gave back with MADV_FREE, still counted in RSS until the kernel
 * takes them (smaps_rollup's LazyFree); 0 when unreadable. */
static int smaps_fd = -1;

static uint64_t rss_lazy_free(void) {
    if (smaps_fd < 0) return 0;
    char buf[2048];
    ssize_t n = pread(smaps_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *lazy = strstr(buf, "LazyFree:");
    unsigned long long kib = 0;
    if (!lazy || sscanf(lazy + 9, "%llu", &kib) != 1) return 0;
    return kib * 1024;
}

static uint64_t rss_now(void) {
    char buf[128];
    ssize_t n = pread(statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) bench_die("reading /proc/self/statm: %s", strerror(errno));
    buf[n] = '\0';
    unsigned long long size = 0, resident = 0;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2) bench_die("/proc/self/statm unreadable");
    return resident * page_size;
}

/* The kernel's high-water mark of resident memory (VmHWM), in bytes; 0 when unreadable. */
static uint64_t rss_peak(void) {
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0) return 0;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *hwm = strstr(buf, "VmHWM:");
    unsigned long long kib = 0;
    if (!hwm || sscanf(hwm + 6, "%llu", &kib) != 1) return 0;
    return kib * 1024;
}

/* Resets VmHWM to the resident memory now; false where the kernel refuses. */
static bool rss_peak_reset(void) {
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0) return false;
    bool ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}

/* ==== The generator =================================================================== */

static inline uint64_t rnd(bench_rng *r) { return bench_rng_next(r); }

/* Uniform in [lo, hi]. */
static inline uint32_t uniform(bench_rng *r, uint32_t lo, uint32_t hi) {
    return lo + (uint32_t)(rnd(r) % ((uint64_t)hi - lo + 1));
}

/* Spread over [lo, hi] evenly by octave (each power of two as likely), uniform inside. */
static uint32_t log_uniform(bench_rng *r, uint32_t lo, uint32_t hi) {
    unsigned a = 31u - (unsigned)__builtin_clz(lo), b = 31u - (unsigned)__builtin_clz(hi);
    unsigned k = a + (unsigned)(rnd(r) % (b - a + 1));
    uint32_t from = (uint32_t)1 << k, to = k >= 31 ? UINT32_MAX : ((uint32_t)2 << k) - 1;
    if (from < lo) from = lo;
    if (to > hi) to = hi;
    return uniform(r, from, to);
}

static inline bool chance(bench_rng *r, uint32_t one_in) { return rnd(r) % one_in == 0; }

/* Per mille. */
static inline bool permille(bench_rng *r, uint32_t p) { return rnd(r) % 1000 < p; }

typedef struct obj { void *p; uint32_t size; uint32_t extra; } obj;   /* extra: as used */

/* Tables, mapped and touched before the baseline (their pages are the generator's). */
#define LEVEL_CAP    (1u << 20)
#define SURVIVOR_CAP (1u << 17)
#define NODE_CAP     (1u << 18)
#define ENGINE_CAP   (1u << 17)
#define TEMP_CAP     1024

typedef struct node { void *p; uint32_t size, next; } node;   /* a timed object */
#define NIL UINT32_MAX

typedef struct session {
    const run_size *size;
    bench_rng rng;               /* gameplay: one stream for the whole session */
    uint64_t ops, next_sample, checksum;
    uint64_t live, live_peak, level_live_peak;
    uint64_t baseline;
    uint64_t frame;              /* global frame number */
    int      level;
    obj     *level_objs;   uint32_t level_count;
    obj     *survivors;    uint32_t survivor_count;   /* extra: the level whose unload frees it */
    obj     *engine;       uint32_t engine_count;
    node    *nodes;        uint32_t node_free, node_used;
    uint32_t wheel[WHEEL];
    obj      vectors[VECTORS];                         /* extra: the vector's cap */
    obj      temps[TEMP_CAP];
} session;

static void *map_table(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) bench_die("mapping %zu bytes of tables failed", bytes);
    memset(p, 0, bytes);
    return p;
}

static void sample(session *s, const char *why) {
    uint64_t rss = rss_now();
    uint64_t res = 0;
    if (impl == IMPL_KILN) {
        kiln_memory_stats m;
        if (kiln_stats_memory(rt, &m)) res = m.reserved;
    }
    uint64_t lazy = rss_lazy_free();
    printf("S %llu %llu %lld %llu %llu %d %s\n", (unsigned long long)s->ops,
           (unsigned long long)s->live, (long long)rss - (long long)s->baseline,
           (unsigned long long)res, (unsigned long long)lazy, s->level, why);
}

static inline void count_op(session *s, uint64_t what) {
    s->ops++;
    s->checksum = (s->checksum ^ what) * 0x100000001b3ull;
    if (s->ops >= s->next_sample) {
        s->next_sample += SAMPLE_EVERY;
        sample(s, "-");
    }
}

static void *op_alloc(session *s, uint32_t size) {
    unsigned char *p = impl_alloc(size);
    if (!p) bench_die("an allocation of %u bytes failed (operation %llu)", size,
                      (unsigned long long)s->ops);
    memset(p, (int)(s->ops & 0xff) | 1, size);
    s->live += size;
    if (s->live > s->live_peak) s->live_peak = s->live;
    if (s->live > s->level_live_peak) s->level_live_peak = s->live;
    count_op(s, (uint64_t)size << 2);
    return p;
}

static void op_free(session *s, void *p, uint32_t size) {
    impl_free(p);
    s->live -= size;
    count_op(s, ((uint64_t)size << 2) | 1);
}

static void *op_realloc(session *s, void *p, uint32_t old, uint32_t size) {
    unsigned char *q = impl_realloc(p, size);
    if (!q) bench_die("a realloc to %u bytes failed (operation %llu)", size,
                      (unsigned long long)s->ops);
    if (size > old) memset(q + old, (int)(s->ops & 0xff) | 1, size - old);
    s->live += size;
    s->live -= old;
    if (s->live > s->live_peak) s->live_peak = s->live;
    if (s->live > s->level_live_peak) s->level_live_peak = s->live;
    count_op(s, ((uint64_t)size << 2) | 2);
    return q;
}

/* A small object of a level: its component sizes mostly, else anything 16-256 B. */
static uint32_t small_size(bench_rng *r, const level_type *t) {
    if (permille(r, 700)) return t->parts[rnd(r) % 8];
    return uniform(r, 16, 256);
}

static void level_add(session *s, void *p, uint32_t size, uint32_t kind) {
    if (s->level_count == LEVEL_CAP) bench_die("the level table is full");
    s->level_objs[s->level_count++] = (obj){ p, size, kind };
}

/* Objects of the engine itself, made before the first level and never freed. */
static void engine_load(session *s) {
    bench_rng r = { 0x656e67696e65ull };
    int d = s->size->divide;
    int small = 40000 / d, medium = 400 / d, assets = 8;
    for (int i = 0; i < small + medium + assets; i++) {
        uint32_t size = i < small ? uniform(&r, 16, 256)
                      : i < small + medium ? log_uniform(&r, 1024, 16384)
                      : log_uniform(&r, 64 << 10, 1 << 20);
        if (s->engine_count == ENGINE_CAP) bench_die("the engine table is full");
        s->engine[s->engine_count++] = (obj){ op_alloc(s, size), size, 0 };
    }
}

/* Object kinds in the level table, for the survivors' odds. */
enum { KIND_OBJECT, KIND_ASSET };

/* The level's content: the same each time this type loads (its own seed); small, medium
 * and asset allocations interleaved as a loader reads them. */
static void level_load(session *s, int type) {
    const level_type *t = &level_types[type];
    bench_rng r = { 0x6c6576656c00ull + (uint64_t)type * 0x9e3779b97f4a7c15ull };
    int d = s->size->divide;
    uint32_t small = (uint32_t)(t->small / d), medium = (uint32_t)(t->medium / d);
    uint32_t assets = (uint32_t)(t->assets / (d > 1 ? 4 : 1));
    uint32_t total = small + medium + assets;
    for (uint32_t i = 0; i < total; i++) {
        uint64_t pick = rnd(&r) % total;
        uint32_t size, kind = KIND_OBJECT;
        if (pick < assets && assets) {
            size = log_uniform(&r, 64 << 10, 4 << 20);
            kind = KIND_ASSET;
            assets--;
        } else if (pick < (uint64_t)assets + medium && medium) {
            size = log_uniform(&r, 1024, 16384);
            medium--;
        } else if (small) {
            size = small_size(&r, t);
            small--;
        } else if (medium) {
            size = log_uniform(&r, 1024, 16384);
            medium--;
        } else {
            size = log_uniform(&r, 64 << 10, 4 << 20);
            kind = KIND_ASSET;
            assets--;
        }
        level_add(s, op_alloc(s, size), size, kind);
    }
    for (int v = 0; v < VECTORS; v++) {
        uint32_t cap = log_uniform(&r, 64 << 10, 4 << 20);
        s->vectors[v] = (obj){ op_alloc(s, 256), 256, cap };
    }
}

/* A timed object: freed at the start of frame `death` (or at the unload). */
static void timed_add(session *s, uint32_t size, uint32_t lifetime) {
    if (s->node_free == NIL) bench_die("the timed-object table is full");
    uint32_t n = s->node_free;
    s->node_free = s->nodes[n].next;
    s->node_used++;
    uint32_t slot = (uint32_t)((s->frame + lifetime) % WHEEL);
    s->nodes[n] = (node){ op_alloc(s, size), size, s->wheel[slot] };
    s->wheel[slot] = n;
}

static void wheel_free_slot(session *s, uint32_t slot) {
    uint32_t n = s->wheel[slot];
    s->wheel[slot] = NIL;
    while (n != NIL) {
        uint32_t next = s->nodes[n].next;
        op_free(s, s->nodes[n].p, s->nodes[n].size);
        s->nodes[n].next = s->node_free;
        s->node_free = n;
        s->node_used--;
        n = next;
    }
}

static void frame(session *s, const level_type *t) {
    bench_rng *r = &s->rng;
    s->frame++;
    wheel_free_slot(s, (uint32_t)(s->frame % WHEEL));   /* what dies this frame */
    int d = s->size->divide;
    /* Explosions: a burst of particles, each with a lifetime of its own. */
    if (chance(r, (uint32_t)t->burst_every)) {
        uint32_t count = uniform(r, 1000, 12000) / (uint32_t)d;
        for (uint32_t i = 0; i < count; i++)
            timed_add(s, uniform(r, (uint32_t)t->particle_min, (uint32_t)t->particle_max),
                      uniform(r, 20, 240));
    }
    /* Streamed chunks: a large buffer for a while. */
    if (chance(r, 300)) timed_add(s, log_uniform(r, 256 << 10, 2 << 20), uniform(r, 100, 600));
    /* The frame's own work: temporaries, with medium-lived objects and spawns among them. */
    uint32_t temps = 0;
    for (int i = 0; i < 400; i++) {
        uint32_t size = log_uniform(r, 16, 512);
        s->temps[temps++] = (obj){ op_alloc(s, size), size, 0 };
        if (i % 7 == 3) {   /* about 57 per frame: sounds, paths, messages */
            uint32_t m = permille(r, 700) ? log_uniform(r, 32, 512)
                       : permille(r, 830) ? log_uniform(r, 513, 4096) : log_uniform(r, 4097, 16384);
            timed_add(s, m, uniform(r, 60, 900));
        }
        if (i % 50 == 17) {   /* 8 per frame: entities that stay until the unload */
            uint32_t size2 = permille(r, 800) ? small_size(r, t) : log_uniform(r, 64, 2048);
            level_add(s, op_alloc(s, size2), size2, KIND_OBJECT);
        }
        if (i == 100 || i == 300) {   /* scratch buffers */
            uint32_t size3 = log_uniform(r, 4096, 65536);
            s->temps[temps++] = (obj){ op_alloc(s, size3), size3, 0 };
        }
    }
    /* A level vector grows. */
    if (chance(r, 4)) {
        obj *v = &s->vectors[rnd(r) % VECTORS];
        if (v->size < v->extra) {
            uint32_t next = v->size + v->size / 2;
            if (next > v->extra) next = v->extra;
            v->p = op_realloc(s, v->p, v->size, next);
            v->size = next;
        }
    }
    for (uint32_t i = 0; i < temps; i++) op_free(s, s->temps[i].p, s->temps[i].size);
}

static void survive(session *s, void *p, uint32_t size, bench_rng *r) {
    if (s->survivor_count == SURVIVOR_CAP) bench_die("the survivor table is full");
    s->survivors[s->survivor_count++] = (obj){ p, size, (uint32_t)s->level + uniform(r, 1, 4) };
}

static void level_unload(session *s) {
    bench_rng *r = &s->rng;
    /* Survivors of earlier levels whose time has come. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->survivor_count; i++) {
        obj o = s->survivors[i];
        if (o.extra == (uint32_t)s->level) op_free(s, o.p, o.size);
        else s->survivors[kept++] = o;
    }
    s->survivor_count = kept;
    /* Everything timed dies with the level. */
    for (uint32_t slot = 0; slot < WHEEL; slot++)
        if (s->wheel[slot] != NIL) wheel_free_slot(s, slot);
    /* The level's objects, but a few survivors. */
    for (uint32_t i = 0; i < s->level_count; i++) {
        obj o = s->level_objs[i];
        if (permille(r, o.extra == KIND_ASSET ? 50 : 5)) survive(s, o.p, o.size, r);
        else op_free(s, o.p, o.size);
    }
    s->level_count = 0;
    for (int v = 0; v < VECTORS; v++) {
        if (permille(r, 100)) survive(s, s->vectors[v].p, s->vectors[v].size, r);
        else op_free(s, s->vectors[v].p, s->vectors[v].size);
    }
}

static int play(impl_kind kind, const run_size *size) {
    impl = kind;
    static char out_buf[1 << 16];
    setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);   /* no malloc for stdio's buffer */
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    statm_fd = open("/proc/self/statm", O_RDONLY);
    if (statm_fd < 0) bench_die("opening /proc/self/statm: %s", strerror(errno));
    smaps_fd = open("/proc/self/smaps_rollup", O_RDONLY);

    static session s;
    s.size = size;
    s.rng.state = 0x6672616762656e63ull;
    s.level_objs = map_table(LEVEL_CAP * sizeof(obj));
    s.survivors = map_table(SURVIVOR_CAP * sizeof(obj));
    s.engine = map_table(ENGINE_CAP * sizeof(obj));
    s.nodes = map_table(NODE_CAP * sizeof(node));
    for (uint32_t i = 0; i < NODE_CAP; i++) s.nodes[i].next = i + 1 < NODE_CAP ? i + 1 : NIL;
    s.node_free = 0;
    for (int i = 0; i < WHEEL; i++) s.wheel[i] = NIL;
    impl_setup();
    printf("P %s\n", impl == IMPL_MALLOC ? bench_malloc_provider() : "-");
    s.baseline = rss_now();
    hwm_resettable = rss_peak_reset();
    s.next_sample = SAMPLE_EVERY;
    uint64_t t0 = bench_now_ns();
    sample(&s, "start");

    engine_load(&s);
    for (int cycle = 0; cycle == 0 || s.ops < size->min_ops; cycle++) {
        for (int type = 0; type < LEVEL_TYPES; type++) {
            const level_type *t = &level_types[type];
            if (hwm_resettable) rss_peak_reset();
            uint64_t floor_max = rss_now();   /* at the level's start */
            s.level_live_peak = s.live;
            uint64_t ops0 = s.ops;
            level_load(&s, type);
            sample(&s, "load");
            for (int f = 0; f < size->frames; f++) frame(&s, t);
            uint64_t peak = hwm_resettable ? rss_peak() : 0;
            uint64_t now = rss_now();
            if (peak < now) peak = now;
            if (peak < floor_max) peak = floor_max;
            uint64_t live_end = s.live;
            level_unload(&s);
            uint64_t kiln_reserved = 0, kiln_heap_free = 0, kiln_free_blocks = 0;
            impl_trim();
            uint64_t after = rss_now();
            if (impl == IMPL_KILN) {
                kiln_memory_stats m;
                if (kiln_stats_memory(rt, &m)) {
                    kiln_reserved = m.reserved;
                    kiln_heap_free = m.heap_free;
                    kiln_free_blocks = m.free_blocks;
                }
            }
            /* L level type ops peak_live live_end peak_rss live_after rss_after
             *   kiln_reserved kiln_heap_free kiln_free_blocks survivors */
            printf("L %d %d %llu %llu %llu %lld %llu %lld %llu %llu %llu %u\n", s.level, type,
                   (unsigned long long)(s.ops - ops0), (unsigned long long)s.level_live_peak,
                   (unsigned long long)live_end, (long long)peak - (long long)s.baseline,
                   (unsigned long long)s.live, (long long)after - (long long)s.baseline,
                   (unsigned long long)kiln_reserved, (unsigned long long)kiln_heap_free,
                   (unsigned long long)kiln_free_blocks, s.survivor_count);
            sample(&s, "unload");
            s.level++;
        }
    }
    double seconds = (double)(bench_now_ns() - t0) / 1e9;
    /* E ops live_peak checksum seconds hwm_resettable */
    printf("E %llu %llu %016llx %.2f %d\n", (unsigned long long)s.ops,
           (unsigned long long)s.live_peak, (unsigned long long)s.checksum, seconds,
           hwm_resettable ? 1 : 0);
    fflush(stdout);
    if (impl == IMPL_KILN) {
        /* Everything back before kiln_destroy, which reports live allocations. */
        for (uint32_t i = 0; i < s.survivor_count; i++) impl_free(s.survivors[i].p);
        for (uint32_t i = 0; i < s.engine_count; i++) impl_free(s.engine[i].p);
        kiln_detach(ctx);
        kiln_destroy(rt);
    }
    return 0;
}

/* ==== The parent: children, tables, the chart ========================================== */

typedef struct point { double ops, live, rss, reserved; } point;

typedef struct level_row {
    int      type;
    uint64_t ops, live_peak, live_end, rss_peak, live_after, rss_after;
    uint64_t reserved, heap_free, free_blocks;
    unsigned survivors;
} level_row;

/* Growth after warm-up of one figure (a level's peak, or after its unload): resident
 * memory less live bytes at that point, level type by level type, cycle by cycle. */
typedef struct growth {
    double trend;     /* the least-squares slope per cycle (pooled over the types, each about
                       * its own mean) times the cycles from the first repeated to the last */
    double pair;      /* last cycle - first repeated cycle, the worst type */
    double spread;    /* the widest range of one type over the cycles after warm-up */
    int    pair_type;
} growth;

typedef struct result {
    const char *name;       /* "kiln", "glibc", ... */
    const char *column;     /* its name in the levels' table: 13 characters at most */
    const char *child;      /* the child's allocator: kiln, glibc, mimalloc, malloc */
    const char *preload;    /* LD_PRELOAD of the child, or NULL */
    const char *env[2];     /* NAME=VALUE set in the child, or NULL */
    const char *trim;       /* what it does between levels */
    const char *color;
    bool        ran;
    char        why[200];   /* why not */
    char        provider[200];
    point      *points;     size_t npoints, point_cap;
    level_row  *levels;     size_t nlevels, level_cap;
    uint64_t    ops, live_peak, checksum;
    double      seconds;
    bool        hwm;
    /* figures, in bytes; growth as a share of the live peak */
    uint64_t    rss_peak;          /* the whole session's */
    uint64_t    rss_peak_after;    /* after warm-up */
    int         worst_level;       /* where that was */
    uint64_t    rss_final, live_final;
    growth      at_peak, at_after;
} result;

static void *grow(void *p, size_t *cap, size_t count, size_t elem) {
    if (count < *cap) return p;
    *cap = *cap ? *cap * 2 : 256;
    void *q = realloc(p, *cap * elem);
    if (!q) bench_die("out of memory for figures");
    return q;
}

static void parse_line(result *res, const char *line, bool *ended) {
    if (line[0] == 'S') {
        unsigned long long ops, live, reserved, lazy;
        long long rss;
        if (sscanf(line, "S %llu %llu %lld %llu %llu", &ops, &live, &rss, &reserved, &lazy) != 5)
            return;
        res->points = grow(res->points, &res->point_cap, res->npoints, sizeof *res->points);
        res->points[res->npoints++] = (point){ (double)ops, (double)live,
                                               (double)(rss > 0 ? rss : 0), (double)reserved };
    } else if (line[0] == 'L') {
        level_row l;
        int level;
        unsigned long long v[7];
        long long peak, after;
        if (sscanf(line, "L %d %d %llu %llu %llu %lld %llu %lld %llu %llu %llu %u", &level, &l.type,
                   &v[0], &v[1], &v[2], &peak, &v[3], &after, &v[4], &v[5], &v[6], &l.survivors) != 12)
            return;
        l.ops = v[0];
        l.live_peak = v[1];
        l.live_end = v[2];
        l.rss_peak = peak > 0 ? (uint64_t)peak : 0;
        l.live_after = v[3];
        l.rss_after = after > 0 ? (uint64_t)after : 0;
        l.reserved = v[4];
        l.heap_free = v[5];
        l.free_blocks = v[6];
        res->levels = grow(res->levels, &res->level_cap, res->nlevels, sizeof *res->levels);
        res->levels[res->nlevels++] = l;
    } else if (line[0] == 'P') {
        size_t len = strcspn(line + 2, "\n");
        if (len >= sizeof res->provider) len = sizeof res->provider - 1;
        memcpy(res->provider, line + 2, len);
        res->provider[len] = '\0';
    } else if (line[0] == 'E') {
        unsigned long long ops, peak, sum;
        int hwm;
        if (sscanf(line, "E %llu %llu %llx %lf %d", &ops, &peak, &sum, &res->seconds, &hwm) == 5) {
            res->ops = ops;
            res->live_peak = peak;
            res->checksum = sum;
            res->hwm = hwm != 0;
            *ended = true;
        }
    }
}

static void run_child(result *res, bool quick) {
    int fds[2];
    if (pipe(fds) != 0) bench_die("pipe: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (res->preload) setenv("LD_PRELOAD", res->preload, 1);
        else unsetenv("LD_PRELOAD");
        for (int i = 0; i < 2 && res->env[i]; i++) putenv((char *)res->env[i]);
        char *argv[] = { "frag_bench", "--child", (char *)res->child, quick ? "--quick" : NULL, NULL };
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    if (!in) bench_die("fdopen: %s", strerror(errno));
    char line[512];
    bool ended = false;
    while (fgets(line, sizeof line, in)) parse_line(res, line, &ended);
    fclose(in);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!ended || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(res->why, sizeof res->why, "the child failed (%s %d)",
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return;
    }
    res->ran = true;
}

static double mib(uint64_t bytes) { return (double)bytes / (double)MIB; }

/* Resident memory less live bytes at a level's peak (after: false) or after its unload. */
static double overhead(const level_row *l, bool after) {
    return after ? (double)l->rss_after - (double)l->live_after
                 : (double)l->rss_peak - (double)l->live_peak;
}

static growth growth_of(const result *r, bool after) {
    growth g = { 0, 0, 0, -1 };
    size_t cycles = r->nlevels / LEVEL_TYPES;
    if (cycles < 3 || r->live_peak == 0) return g;   /* warm-up and two cycles after it */
    double lp = (double)r->live_peak, sxy = 0, sxx = 0;
    double mc = (double)(1 + cycles - 1) / 2;   /* the mean cycle number, 1 .. cycles-1 */
    bool first = true;
    for (int t = 0; t < LEVEL_TYPES; t++) {
        double mean = 0, lo = 0, hi = 0;
        for (size_t c = 1; c < cycles; c++) {
            double y = overhead(&r->levels[c * LEVEL_TYPES + (size_t)t], after);
            mean += y;
            if (c == 1 || y < lo) lo = y;
            if (c == 1 || y > hi) hi = y;
        }
        mean /= (double)(cycles - 1);
        for (size_t c = 1; c < cycles; c++) {
            double y = overhead(&r->levels[c * LEVEL_TYPES + (size_t)t], after);
            sxy += ((double)c - mc) * (y - mean);
            sxx += ((double)c - mc) * ((double)c - mc);
        }
        double pair = (overhead(&r->levels[(cycles - 1) * LEVEL_TYPES + (size_t)t], after) -
                       overhead(&r->levels[LEVEL_TYPES + (size_t)t], after)) / lp;
        if (first || pair > g.pair) { g.pair = pair; g.pair_type = t; }
        if ((hi - lo) / lp > g.spread) g.spread = (hi - lo) / lp;
        first = false;
    }
    g.trend = sxx > 0 ? sxy / sxx * (double)(cycles - 2) / lp : 0;
    return g;
}

/* The figures of one allocator: warm-up is the first cycle. */
static void figures(result *r) {
    size_t n = r->nlevels;
    r->rss_peak = 0;
    r->rss_peak_after = 0;
    r->worst_level = -1;
    for (size_t i = 0; i < n; i++) {
        if (r->levels[i].rss_peak > r->rss_peak) r->rss_peak = r->levels[i].rss_peak;
        if (i >= LEVEL_TYPES && r->levels[i].rss_peak > r->rss_peak_after) {
            r->rss_peak_after = r->levels[i].rss_peak;
            r->worst_level = (int)i;
        }
    }
    for (size_t i = 0; i < r->npoints; i++)   /* samples outside the levels (engine load) */
        if (r->points[i].rss > (double)r->rss_peak) r->rss_peak = (uint64_t)r->points[i].rss;
    r->rss_final = n ? r->levels[n - 1].rss_after : 0;
    r->live_final = n ? r->levels[n - 1].live_after : 0;
    r->at_peak = growth_of(r, false);
    r->at_after = growth_of(r, true);
}

/* ---- The SVG ---- */

#define SVG_W      960.0
#define SVG_LEFT   78.0
#define SVG_RIGHT  24.0
#define SVG_TOP    76.0     /* the chart's title and legend */
#define PANEL_H    220.0
#define PANEL_GAP  62.0     /* a panel's title above it, tick labels below */
#define CHAR_W     6.6      /* about, at font-size 12 */

static void svg_text(FILE *f, double x, double y, const char *anchor, const char *style,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void svg_text(FILE *f, double x, double y, const char *anchor, const char *style,
                     const char *fmt, ...) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, style);
    for (const char *c = buf; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        default: fputc(*c, f);
        }
    }
    fputs("</text>\n", f);
}

/* A tick step of 1, 2 or 5 times a power of ten, about `ticks` over range. */
static double nice_step(double range, int ticks) {
    double raw = range / ticks, power = 1;
    while (power * 10 <= raw) power *= 10;
    while (power > raw) power /= 10;
    double m = raw / power;
    return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * power;
}

typedef struct plot { double x0, y0, w, h, x_max, y_max; } plot;

static double plot_x(const plot *p, double x) { return p->x0 + x / p->x_max * p->w; }
static double plot_y(const plot *p, double y) {
    if (y > p->y_max) y = p->y_max;
    return p->y0 + p->h - y / p->y_max * p->h;
}

enum { FIELD_LIVE, FIELD_RSS, FIELD_RESERVED };

static void svg_points(FILE *f, const plot *p, const result *r, int field) {
    for (size_t i = 0; i < r->npoints; i++) {
        const point *q = &r->points[i];
        double v = field == FIELD_LIVE ? q->live : field == FIELD_RSS ? q->rss : q->reserved;
        fprintf(f, "%.1f,%.1f ", plot_x(p, q->ops), plot_y(p, v / (double)MIB));
    }
}

static void svg_line(FILE *f, const plot *p, const result *r, int field, const char *color,
                     const char *extra) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", color, extra);
    svg_points(f, p, r, field);
    fputs("\"/>\n", f);
}

/* A legend entry at x: the mark (0 area, 1 line, 2 dashed, 3 dotted), then the label;
 * returns the x of the next. */
static double legend(FILE *f, double x, double y, int mark, const char *color, const char *label) {
    if (mark == 0)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"20\" height=\"10\" fill=\"%s\"/>\n", x,
                y - 9, color);
    else
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/>\n", x, y - 4, x + 20, y - 4, color,
                mark == 2 ? " stroke-dasharray=\"6,4\"" : mark == 3 ? " stroke-dasharray=\"3,3\"" : "");
    svg_text(f, x + 26, y, "start", "", "%s", label);
    return x + 26 + CHAR_W * (double)strlen(label) + 22;
}

static bool write_svg(const char *path, const result *rs, int count, const run_size *size) {
    int shown = 0;
    const result *base = NULL;
    double y_top = 0;
    for (int i = 0; i < count; i++) {
        if (!rs[i].ran) continue;
        shown++;
        if (!base) base = &rs[i];
        for (size_t k = 0; k < rs[i].npoints; k++) {
            if (rs[i].points[k].rss > y_top) y_top = rs[i].points[k].rss;
            if (rs[i].points[k].live > y_top) y_top = rs[i].points[k].live;
        }
        if ((double)rs[i].rss_peak > y_top) y_top = (double)rs[i].rss_peak;
    }
    if (!base) return false;
    double x_max = (double)base->ops, live_peak = (double)base->live_peak;
    if (GOAL_RATIO * live_peak > y_top) y_top = GOAL_RATIO * live_peak;
    y_top /= (double)MIB;
    double ystep = nice_step(y_top * 1.08, 5);
    double y_max = ystep * (double)(long)(y_top * 1.08 / ystep + 0.999);
    double xm = x_max / 1e6, xstep = nice_step(xm, 10);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    double height = SVG_TOP + shown * (PANEL_H + PANEL_GAP) + 22;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            SVG_W, height, SVG_W, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    svg_text(f, SVG_W / 2, 22, "middle", " font-size=\"16\" font-weight=\"bold\"",
             "Resident memory against live bytes over a %s game session (bench/frag_bench.c)",
             size == &quick_run ? "short (--quick)" : "long");
    svg_text(f, SVG_W / 2, 40, "middle", " fill=\"#444\"",
             "%zu levels (town, forest, arena, city, over and over; the first four are warm-up, "
             "shaded), %.0f million operations, a trim at every unload", base->nlevels, x_max / 1e6);
    double lx = SVG_LEFT, ly = 62;
    lx = legend(f, lx, ly, 0, "#cfd8e3", "live bytes (requested, not freed)");
    lx = legend(f, lx, ly, 1, "#333", "resident (RSS less the baseline)");
    lx = legend(f, lx, ly, 2, "#c0392b", "goal: 1.25x the live peak");
    legend(f, lx, ly, 3, "#e67e22", "kiln reserved");
    svg_text(f, SVG_W / 2, height - 6, "middle", " font-size=\"11\" fill=\"#555\"",
             "growth: the trend of resident less live bytes over the cycles after warm-up, at the "
             "levels' peaks / after their unloads, as %% of the live peak");

    int panel = 0;
    for (int i = 0; i < count; i++) {
        const result *r = &rs[i];
        if (!r->ran) continue;
        plot p = { SVG_LEFT, SVG_TOP + panel * (PANEL_H + PANEL_GAP) + 26,
                   SVG_W - SVG_LEFT - SVG_RIGHT, PANEL_H, x_max, y_max };
        panel++;
        double lp = (double)r->live_peak;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"><tspan font-size=\"14\" font-weight=\"bold\">%s"
                   "</tspan><tspan dx=\"10\" font-size=\"11\" fill=\"#555\">%s</tspan></text>\n",
                p.x0, p.y0 - 9, r->name, r->trim);
        svg_text(f, p.x0 + p.w, p.y0 - 9, "end", " fill=\"#333\"",
                 "after warm-up: worst %.2fx the live peak, growth %+.1f%% / %+.1f%%",
                 (double)r->rss_peak_after / lp, r->at_peak.trend * 100, r->at_after.trend * 100);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfc\" "
                   "stroke=\"#444\"/>\n", p.x0, p.y0, p.w, p.h);
        /* Levels: the warm-up shaded, a faint line at every level's start, the types named
         * in the first panel. */
        double at = 0;
        for (size_t k = 0; k < r->nlevels; k++) {
            double x = plot_x(&p, at), x2 = plot_x(&p, at + (double)r->levels[k].ops);
            if (k < LEVEL_TYPES)
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"#ececec\"/>\n", x, p.y0, x2 - x, p.h);
            if (k > 0)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                        x, p.y0, x, p.y0 + p.h);
            if (panel == 1 && x2 - x > 24)
                svg_text(f, (x + x2) / 2, p.y0 + 12, "middle", " font-size=\"9\" fill=\"#777\"", "%s",
                         level_types[r->levels[k].type].name);
            at += (double)r->levels[k].ops;
        }
        for (double y = 0; y <= y_max * 1.0001; y += ystep) {
            double yy = plot_y(&p, y);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                    p.x0, yy, p.x0 + p.w, yy);
            svg_text(f, p.x0 - 6, yy + 4, "end", "", "%g", y);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f "
                   "%.1f)\">MiB</text>\n", p.x0 - 46, p.y0 + p.h / 2, p.x0 - 46, p.y0 + p.h / 2);
        for (double x = 0; x <= xm * 1.0001; x += xstep)
            svg_text(f, plot_x(&p, x * 1e6), p.y0 + p.h + 15, "middle", "", "%g", x);
        svg_text(f, p.x0 + p.w / 2, p.y0 + p.h + 31, "middle", " fill=\"#444\"",
                 "operations (millions of allocs, frees and reallocs)");
        fprintf(f, "<polygon fill=\"#cfd8e3\" points=\"%.1f,%.1f ", plot_x(&p, 0), plot_y(&p, 0));
        svg_points(f, &p, r, FIELD_LIVE);
        fprintf(f, "%.1f,%.1f\"/>\n", plot_x(&p, r->points[r->npoints - 1].ops), plot_y(&p, 0));
        double goal = GOAL_RATIO * lp / (double)MIB;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
                   "stroke-dasharray=\"6,4\"/>\n", p.x0, plot_y(&p, goal), p.x0 + p.w,
                plot_y(&p, goal));
        if (strcmp(r->child, "kiln") == 0)
            svg_line(f, &p, r, FIELD_RESERVED, "#e67e22", " stroke-dasharray=\"3,3\"");
        svg_line(f, &p, r, FIELD_RSS, r->color, "");
    }
    fputs("</svg>\n", f);
    return fclose(f) == 0;
}

/* ---- main ---- */

static void usage(void) {
    fprintf(stderr, "usage: frag_bench [--quick] [--svg PATH] [--all]\n");
    exit(2);
}

static void print_growth_note(void) {
    printf("growth: resident less live bytes, at each level's peak and after its unload; "
           "trend = the least-squares slope over the cycles after warm-up (each level type about "
           "its own mean) times the cycles from the first repeated to the last; last-first = "
           "the last cycle against the first repeated one, the worst type; spread = the widest "
           "range of one type over those cycles (the noise); all as %% of the live peak\n");
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0) {
        const run_size *size = argc > 3 && strcmp(argv[3], "--quick") == 0 ? &quick_run : &full_run;
        const char *k = argv[2];
        if (strcmp(k, "kiln") == 0) return play(IMPL_KILN, size);
        if (strcmp(k, "glibc") == 0) return play(IMPL_GLIBC, size);
#ifdef BENCH_HAVE_MIMALLOC
        if (strcmp(k, "mimalloc") == 0) return play(IMPL_MIMALLOC, size);
#endif
        if (strcmp(k, "malloc") == 0) return play(IMPL_MALLOC, size);
        usage();
    }
    const run_size *size = &full_run;
    const char *svg = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) size = &quick_run;
        else if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc) svg = argv[++i];
        else if (strcmp(argv[i], "--all") == 0) all = true;
        else usage();
    }
    bool quick = size == &quick_run;
    printf("kiln frag_bench (%s run): fragmentation over a long session, resident memory "
           "against live bytes\n", quick ? "quick" : "full");
    bench_print_load();
    printf("session: cycles of %d level types (", LEVEL_TYPES);
    for (int t = 0; t < LEVEL_TYPES; t++)
        printf("%s%s: %d of 16-256 B, %d of 1-16 KiB, %d assets of 64 KiB-4 MiB", t ? "; " : "",
               level_types[t].name, level_types[t].small / size->divide,
               level_types[t].medium / size->divide,
               level_types[t].assets / (size->divide > 1 ? 4 : 1));
    printf(") until %.0e operations; %d frames per level (temporaries, medium-lived objects of "
           "1-15 s, spawns, explosions of %d-%d particles, streamed chunks, vectors grown by "
           "realloc); at each unload 0.5%% of the objects, 5%% of the assets and 10%% of the "
           "vectors survive 1-4 levels more\n",
           (double)size->min_ops, size->frames, 1000 / size->divide, 12000 / size->divide);
    printf("between levels (at every unload): kiln_trim(rt) for kiln, malloc_trim(0) for glibc, "
           "mi_collect(true) for mimalloc%s\n",
           all ? ", arena.<all>.purge for jemalloc, MallocExtension_ReleaseFreeMemory for tcmalloc"
               : "");
    printf("each allocator runs alone in a child process; resident = /proc/self/statm less the "
           "child's baseline before the session; a level's peak = VmHWM, reset at its start\n");
    printf("mimalloc twice: with its default options, whose decommit waits 25 ms (pages) and "
           "500 ms (segments) of wall time, which a session played dozens of times faster than a "
           "game rarely gives it; and with both delays 0 (MIMALLOC_DECOMMIT_DELAY=0, "
           "MIMALLOC_SEGMENT_DECOMMIT_DELAY=0)\n");
    fflush(stdout);

    result rs[6];
    memset(rs, 0, sizeof rs);
    int count = 0;
    rs[count++] = (result){ .name = "kiln", .column = "kiln", .child = "kiln",
                            .trim = "kiln_trim(rt) at each unload", .color = "#1f6fb4" };
    rs[count++] = (result){ .name = "glibc", .column = "glibc", .child = "glibc",
                            .trim = "malloc_trim(0) at each unload", .color = "#2e8b57" };
    rs[count++] = (result){ .name = "mimalloc", .column = "mimalloc", .child = "mimalloc",
                            .trim = "mi_collect(true) at each unload", .color = "#8e44ad" };
    rs[count++] = (result){ .name = "mimalloc, decommit delays 0", .column = "mi delays 0",
                            .child = "mimalloc",
                            .env = { "MIMALLOC_DECOMMIT_DELAY=0", "MIMALLOC_SEGMENT_DECOMMIT_DELAY=0" },
                            .trim = "mi_collect(true) at each unload", .color = "#b03a9e" };
    if (all) {
        rs[count] = (result){ .name = "jemalloc", .column = "jemalloc", .child = "malloc",
                              .trim = "purge at each unload", .color = "#b9770e" };
#ifdef BENCH_JEMALLOC_SO
        rs[count].preload = BENCH_JEMALLOC_SO;
#endif
        count++;
        rs[count] = (result){ .name = "tcmalloc", .column = "tcmalloc", .child = "malloc",
                              .trim = "ReleaseFreeMemory at each unload", .color = "#7f8c8d" };
#ifdef BENCH_TCMALLOC_SO
        rs[count].preload = BENCH_TCMALLOC_SO;
#endif
        count++;
    }
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < count; i++) {
        result *r = &rs[i];
        if (strcmp(r->child, "malloc") == 0 && !r->preload) {
            snprintf(r->why, sizeof r->why, "not found at configure time");
        } else {
#ifndef BENCH_HAVE_MIMALLOC
            if (strcmp(r->child, "mimalloc") == 0) {
                snprintf(r->why, sizeof r->why, "libmimalloc not found at configure time");
                printf("  %-28s skipped: %s\n", r->name, r->why);
                continue;
            }
#endif
            run_child(r, quick);
            if (r->ran && r->preload && !strstr(r->provider, r->name)) {
                r->ran = false;
                snprintf(r->why, sizeof r->why, "malloc came from %s (LD_PRELOAD did not take)",
                         r->provider);
            }
        }
        if (r->ran) figures(r);
        if (r->ran) printf("  %-28s done in %.1f s\n", r->name, r->seconds);
        else printf("  %-28s skipped: %s\n", r->name, r->why);
        fflush(stdout);
    }
    const result *base = NULL;
    for (int i = 0; i < count; i++) {
        if (!rs[i].ran) continue;
        if (!base) base = &rs[i];
        else if (rs[i].ops != base->ops || rs[i].checksum != base->checksum ||
                 rs[i].live_peak != base->live_peak || rs[i].nlevels != base->nlevels)
            bench_die("%s played another session than %s (ops %llu/%llu, checksums %016llx/%016llx)",
                      rs[i].name, base->name, (unsigned long long)rs[i].ops,
                      (unsigned long long)base->ops, (unsigned long long)rs[i].checksum,
                      (unsigned long long)base->checksum);
    }
    if (!base) bench_die("no allocator ran");
    printf("every allocator played the same session: %llu operations (checksum %016llx), %zu "
           "levels, live peak %.1f MiB\n", (unsigned long long)base->ops,
           (unsigned long long)base->checksum, base->nlevels, mib(base->live_peak));

    /* The levels. */
    const result *kr = rs[0].ran ? &rs[0] : NULL;
    printf("\n== levels (MiB): live bytes; each allocator's resident memory at the level's peak "
           "(VmHWM) and after its unload and trim%s ==\n",
           kr ? "; kiln's kiln_stats_memory after the trim" : "");
    printf("%5s %-6s %6s %6s", "", "", "live", "live");
    for (int i = 0; i < count; i++)
        if (rs[i].ran) printf(" |%13.13s", rs[i].column);
    if (kr) printf(" | %-24s", "kiln after trim");
    printf("\n%5s %-6s %6s %6s", "level", "type", "peak", "after");
    for (int i = 0; i < count; i++)
        if (rs[i].ran) printf(" | %5s %6s", "peak", "after");
    if (kr) printf(" | %8s %7s %7s", "reserved", "heapfr", "freeblk");
    printf("\n");
    for (size_t k = 0; k < base->nlevels; k++) {
        const level_row *l = &base->levels[k];
        printf("%5zu %-6s %6.1f %6.1f", k, level_types[l->type].name, mib(l->live_peak),
               mib(l->live_after));
        for (int i = 0; i < count; i++)
            if (rs[i].ran)
                printf(" | %5.1f %6.1f", mib(rs[i].levels[k].rss_peak), mib(rs[i].levels[k].rss_after));
        if (kr)
            printf(" | %8.1f %7.1f %7.1f", mib(kr->levels[k].reserved), mib(kr->levels[k].heap_free),
                   mib(kr->levels[k].free_blocks));
        printf("%s\n", k == LEVEL_TYPES - 1 ? "  <- warm-up ends" : "");
    }
    if (kr)
        printf("kiln after trim: reserved = kiln_stats_memory.reserved; heapfr = heap_free (the "
               "heap classes' blocks not in live allocations: free slots the blocks' other live "
               "objects keep from the trim, magazines); freeblk = free_blocks (given back by the "
               "trim: reserved, not resident)\n");

    /* The figures. */
    printf("\n== resident memory against the live peak (%.1f MiB); warm-up: the first %d levels ==\n",
           mib(base->live_peak), LEVEL_TYPES);
    print_growth_note();
    printf("%-28s %7s %6s %7s %6s %7s %6s | %-21s | %-21s | %s\n", "", "peak", "", "worst", "",
           "final", "", "growth at peaks %", "growth after unload %", "");
    printf("%-28s %7s %6s %7s %6s %7s %6s | %6s %6s %7s | %6s %6s %7s | %s\n", "allocator",
           "MiB", "/live", "aft wu", "/live", "MiB", "/live", "trend", "last-1", "spread", "trend",
           "last-1", "spread", "time");
    for (int i = 0; i < count; i++) {
        const result *r = &rs[i];
        if (!r->ran) {
            printf("%-28s skipped: %s\n", r->name, r->why);
            continue;
        }
        double lp = (double)r->live_peak;
        printf("%-28s %7.1f %5.2fx %7.1f %5.2fx %7.1f %5.2fx | %+6.2f %+6.2f %7.2f | %+6.2f %+6.2f "
               "%7.2f | %.1f s\n",
               r->name, mib(r->rss_peak), (double)r->rss_peak / lp, mib(r->rss_peak_after),
               (double)r->rss_peak_after / lp, mib(r->rss_final), (double)r->rss_final / lp,
               r->at_peak.trend * 100, r->at_peak.pair * 100, r->at_peak.spread * 100,
               r->at_after.trend * 100, r->at_after.pair * 100, r->at_after.spread * 100, r->seconds);
    }
    printf("peak: the session's highest resident; worst aft wu: the highest after warm-up; final: "
           "after the last unload and trim (live then %.1f MiB: the engine's objects and the "
           "survivors); time: the child's session, on a machine shared with other work\n",
           mib(base->live_final));
    if (!base->hwm)
        printf("note: /proc/self/clear_refs refused the reset of VmHWM: level peaks are the "
               "samples' maxima (every %llu operations)\n", (unsigned long long)SAMPLE_EVERY);

    /* The goal. */
    printf("\n== goal (the issue's): kiln's resident memory within %.2fx of the live peak after "
           "warm-up, and no growth after warm-up (trend at most %.0f%% of the live peak) ==\n",
           GOAL_RATIO, GROWTH_TOLERANCE * 100);
    if (!kr) {
        printf("  not measured: %s\n", rs[0].why);
    } else {
        double ratio = (double)kr->rss_peak_after / (double)kr->live_peak;
        bool within = ratio <= GOAL_RATIO;
        bool flat = kr->at_peak.trend <= GROWTH_TOLERANCE && kr->at_after.trend <= GROWTH_TOLERANCE;
        printf("  worst resident after warm-up: %.1f MiB = %.3fx the live peak (level %d, %s): %s\n",
               mib(kr->rss_peak_after), ratio, kr->worst_level,
               kr->worst_level >= 0 ? level_types[kr->levels[kr->worst_level].type].name : "-",
               within ? "met" : "NOT met");
        printf("  growth after warm-up (trend): %+.2f%% of the live peak at the levels' peaks, "
               "%+.2f%% after the unloads (last-first, worst type: %+.2f%% %s, %+.2f%% %s; "
               "spread %.2f%%, %.2f%%): %s\n", kr->at_peak.trend * 100, kr->at_after.trend * 100,
               kr->at_peak.pair * 100,
               kr->at_peak.pair_type >= 0 ? level_types[kr->at_peak.pair_type].name : "-",
               kr->at_after.pair * 100,
               kr->at_after.pair_type >= 0 ? level_types[kr->at_after.pair_type].name : "-",
               kr->at_peak.spread * 100, kr->at_after.spread * 100, flat ? "met" : "NOT met");
        printf("  goal: %s\n", within && flat ? "met" : "NOT met");
    }
    if (svg) {
        if (write_svg(svg, rs, count, size)) printf("\nchart written to %s\n", svg);
        else bench_die("could not write %s", svg);
    }
    printf("\nfrag_bench: done in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
    for (int i = 0; i < count; i++) {
        free(rs[i].points);
        free(rs[i].levels);
    }
    return 0;
}
