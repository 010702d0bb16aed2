/* bench/harness.h — what every kiln benchmark program shares: a monotonic clock,
 * series of figures with median / p99 / max, the driver that runs kiln and its peers
 * in alternating rounds (a warm-up round, then A B C A B C ...), one table per
 * workload on stdout, the protocol that runs a peer in a child process (a malloc
 * replacement loaded with LD_PRELOAD) one round at a time, the malloc peers that every
 * allocation benchmark shares (glibc's own malloc looked up with dlsym, jemalloc and
 * tcmalloc as children), and a team of persistent threads for multi-threaded rounds.
 *
 * Units: a figure is nanoseconds per operation (per allocation, per get+put pair,
 * per job). Every figure is recorded as (elapsed ns, operations), so a round's figure
 * is its total time over its total operations, and each sample (a frame, a burst)
 * also has a time of its own for the "max per sample" column.
 *
 * Threads: the harness runs on the program's main thread only; round functions may
 * start threads of their own (or run a bench_team) but record figures from the main
 * thread. */
#ifndef KILN_BENCH_HARNESS_H
#define KILN_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Prints "bench: <message>" on stderr and exits with status 1 (benchmarks fail loudly
 * rather than print a figure for a run that went wrong). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A deterministic generator for workload inputs (xorshift64*); seed must not be 0. */
typedef struct bench_rng { uint64_t state; } bench_rng;
static inline uint64_t bench_rng_next(bench_rng *rng) {
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* The figures of one implementation in one workload. */
typedef struct bench_series {
    double *round_ns, *round_ops;    /* one entry per measured round */
    size_t  rounds, round_cap;
    double *sample_ns, *sample_ops;  /* one entry per sample (frame, burst) */
    size_t  samples, sample_cap;
} bench_series;

/* One sample: ns elapsed for ops operations (a frame of 100 000 allocations, a
 * thread's burst of get+put pairs). */
void bench_add_sample(bench_series *s, double ns, double ops);

/* The round's own figure. Optional: a round that records none gets the sum of the
 * samples it added (total ns / total ops). */
void bench_add_round(bench_series *s, double ns, double ops);

void bench_series_clear(bench_series *s);
void bench_series_free(bench_series *s);

/* A peer running in a child process; see bench_child_start. */
typedef struct bench_child bench_child;

/* Runs one round of an in-process implementation, recording into s. */
typedef void (*bench_round_fn)(void *state, bench_series *s);

/* One row of a workload table: kiln or a peer, in this process or in a child. */
typedef struct bench_entry {
    const char    *name;        /* "kiln frame arena", "glibc malloc+free" */
    bench_round_fn round;       /* in-process; NULL for a child or a skipped entry */
    void          *state;
    bench_child   *child;       /* out of process (owned by the caller) */
    char           skip[320];   /* non-empty: not run, this note printed instead */
    char           note[40];    /* printed in the workload's note column (note_head) */
    bench_series   series;
} bench_entry;

#define BENCH_MAX_ENTRIES 12

typedef struct bench_workload {
    const char *title;          /* "A1 frame (1 thread)" */
    const char *detail;         /* one line: sizes, counts; printed under the title */
    const char *op;             /* the unit's operation: "alloc", "pair" */
    const char *sample;         /* what a sample is: "frame", "burst" */
    const char *note_head;      /* non-NULL: a last column with each entry's note */
    int         rounds;         /* measured rounds, after one warm-up round */
    bench_entry entries[BENCH_MAX_ENTRIES];   /* entries[0] is kiln: the ratio's base */
    int         count;
} bench_workload;

/* Adds an in-process row; returns it. */
bench_entry *bench_add_entry(bench_workload *w, const char *name, bench_round_fn round,
                             void *state);

/* Adds a row whose rounds run in a child process (see below). */
bench_entry *bench_add_child(bench_workload *w, const char *name, bench_child *child);

/* Adds a row that will not run, with the note printed in the table. */
bench_entry *bench_add_skipped(bench_workload *w, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs the warm-up round and w->rounds measured rounds, every entry once per round in
 * table order (A B C A B C ...). A child that fails mid-run turns its row into a
 * skipped one with the reason. */
void bench_run(bench_workload *w);

/* Prints the table: per entry the median over rounds of the round figure, the p99 and
 * max of the sample figures, the max sample time, the ratio entry/kiln of the medians
 * (above 1: kiln is faster) and, with note_head set, each entry's note. Then the notes
 * of skipped rows. */
void bench_print(const bench_workload *w);

/* Frees every series (the entries' children are the caller's). */
void bench_workload_free(bench_workload *w);

/* --- Peers in a child process ----------------------------------------------------
 * The parent starts its own executable again (/proc/self/exe) with LD_PRELOAD=preload
 * and argv; the child calls bench_child_serve, which answers one line "ready <lib>"
 * (the object that defines malloc in the child, checked against expect) and then, per
 * "round" line on its stdin, runs one round and writes one line on stdout:
 *   R <round_ns> <round_ops> <k> <ns_1> <ops_1> ... <ns_k> <ops_k>
 * It exits on "quit" or end of input. Wall-clock rounds therefore alternate exactly
 * like in-process ones, and the child stays warm between its rounds. */

/* Starts the child. NULL on failure, with the reason in err. */
bench_child *bench_child_start(const char *preload, char *const argv[], char *err,
                               size_t err_size);

/* Runs one round in the child and records it in s. false (reason in err) when the
 * child failed. */
bool bench_child_round(bench_child *c, bench_series *s, char *err, size_t err_size);

/* Says "quit", waits for the child, frees c. NULL is a no-op. */
void bench_child_stop(bench_child *c);

/* The child side: checks that malloc comes from an object whose path contains expect
 * (NULL: anything), says "ready", then serves rounds until "quit". Returns the exit
 * status for main. */
int bench_child_serve(const char *expect, bench_round_fn round, void *state);

/* Samples /proc/stat for 0.3 s and prints how busy the machine is, with a warning when
 * other work is running (it skews every figure, kiln's and the peers' alike). */
void bench_print_load(void);

/* The path of the shared object that defines the process's malloc (dladdr), or "?". */
const char *bench_malloc_provider(void);

/* --- The malloc peers ------------------------------------------------------------ */

typedef struct bench_malloc_fns {
    void *(*malloc)(size_t);
    void  (*free)(void *);
} bench_malloc_fns;

/* glibc's own malloc and free, whatever else defines malloc in this process: Debian's
 * libmimalloc exports malloc itself, so once it is linked the process's plain malloc
 * IS mimalloc. Looked up in libc.so.6 with dlsym and checked: a test allocation must
 * not be foreign memory (pass mi_is_in_heap_region where mimalloc is linked; NULL: no
 * such test). The harness itself links no allocator, so programs that do not link
 * mimalloc keep glibc's malloc. false, with the reason in why, when not found. */
bool bench_glibc_find(bench_malloc_fns *out, bool (*foreign)(const void *p), char *why,
                      size_t why_size);

/* The malloc replacements that cannot share a process: jemalloc and tcmalloc, at the
 * paths found at configure time, and kiln's own libkiln-malloc.so from this build (the
 * malloc shape: the same workload through plain malloc, on kiln's heap). Each becomes a row "<name> malloc+free (child)" whose
 * rounds run in a child: this executable again, under LD_PRELOAD, with
 *   argv = { program, "--child", expect, args[0], args[1], ... }
 * where expect ("jemalloc", "tcmalloc", "kiln-malloc") is what the child passes to bench_child_serve.
 * A library not found at configure time, or a child that cannot start, becomes a
 * skipped row with the reason. children receives the children (NULL where none) for
 * bench_stop_preload_peers. args ends with NULL. */
#define BENCH_PRELOAD_PEERS 3
void bench_add_preload_peers(bench_workload *w, const char *program, const char *const args[],
                             bench_child *children[BENCH_PRELOAD_PEERS]);
void bench_stop_preload_peers(bench_child *children[BENCH_PRELOAD_PEERS]);

/* --- A team of persistent threads ----------------------------------------------------
 * Threads that live across rounds (as a game's workers do): thread-local allocator
 * state (malloc's thread caches, a kiln context attached once per thread) stays warm
 * between rounds, and no round pays for thread creation. bench_team_run wakes every
 * member to run fn(arg, index) with index 0 .. size-1 and returns when all of them
 * have returned; members that must start their timed work together wait on a barrier
 * of their own inside fn. Only one thread (the main one) drives a team. */
typedef struct bench_team bench_team;
typedef void (*bench_team_fn)(void *arg, int index);

bench_team *bench_team_start(int size);
void        bench_team_run(bench_team *team, bench_team_fn fn, void *arg);
void        bench_team_stop(bench_team *team);   /* joins the members; NULL is a no-op */

#endif /* KILN_BENCH_HARNESS_H */
