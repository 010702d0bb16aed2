/* stress/stress_common.h — what the stress programs share: the command line
 * (--threads N --iterations N --seed S), a small per-thread random generator, the
 * failure counter every check reports to, and a logger that counts kiln's messages.
 * Header-only: each stress program is one .c file plus this. Include it first: it
 * asks for POSIX (barriers, clock_gettime) under -std=c11. */
#ifndef KILN_STRESS_COMMON_H
#define KILN_STRESS_COMMON_H

#ifndef _DEFAULT_SOURCE
#  define _DEFAULT_SOURCE
#endif

#include <kiln/kiln.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- command line ---------------------------------------------------------------- */

/* Below this many iterations a run may end before it reaches what a phase is meant to
 * reach (a memory_limit): the programs then skip that one check. */
#define STRESS_MIN_ITERATIONS 10000

typedef struct stress_options {
    unsigned threads;      /* worker threads (helper threads come on top) */
    uint64_t iterations;   /* operations per worker thread per phase */
    uint64_t seed;         /* every random choice derives from it: a failing run repeats */
} stress_options;

static inline void stress_usage(const char *program, const stress_options *defaults) {
    fprintf(stderr,
            "usage: %s [--threads N] [--iterations N] [--seed S]\n"
            "  defaults: --threads %u --iterations %" PRIu64 " --seed %" PRIu64 "\n",
            program, defaults->threads, defaults->iterations, defaults->seed);
}

/* Parses argv over *opt (which holds the defaults). false after printing the usage;
 * --help prints it and exits 0. */
static inline bool stress_parse(int argc, char **argv, stress_options *opt) {
    const stress_options defaults = *opt;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            stress_usage(argv[0], &defaults);
            exit(0);
        }
        if (i + 1 >= argc) {
            stress_usage(argv[0], &defaults);
            return false;
        }
        char *end = NULL;
        unsigned long long value = strtoull(argv[++i], &end, 0);
        if (!end || *end != '\0') {
            fprintf(stderr, "%s: %s wants a number, not '%s'\n", argv[0], arg, argv[i]);
            return false;
        }
        if (strcmp(arg, "--threads") == 0 && value >= 1 && value <= 64)
            opt->threads = (unsigned)value;
        else if (strcmp(arg, "--iterations") == 0 && value >= 1)
            opt->iterations = value;
        else if (strcmp(arg, "--seed") == 0)
            opt->seed = value;
        else {
            fprintf(stderr, "%s: bad option or value: %s %s (threads: 1 to 64)\n", argv[0],
                    arg, argv[i]);
            stress_usage(argv[0], &defaults);
            return false;
        }
    }
    return true;
}

/* ---- random numbers and patterns ------------------------------------------------- */

/* splitmix64's finaliser: a good 64-bit mix, used for seeds and patterns. */
static inline uint64_t stress_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* xorshift64*: one per thread, never shared. */
typedef struct stress_rng { uint64_t state; } stress_rng;

static inline stress_rng stress_rng_make(uint64_t seed, uint64_t stream) {
    uint64_t s = stress_mix(seed ^ stress_mix(stream + 1));
    return (stress_rng){ s ? s : 1 };
}

static inline uint64_t stress_next(stress_rng *rng) {
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* In [0, n), n > 0 (the modulo bias is far below what a stress test can notice). */
static inline uint64_t stress_below(stress_rng *rng, uint64_t n) {
    return stress_next(rng) % n;
}

/* ---- failures -------------------------------------------------------------------- */

/* Every failed check of every thread: the exit status is non-zero when it is. */
static _Atomic uint64_t stress_failures;

/* Reports one failed check (the first 20 are printed; all are counted). Any thread. */
static inline void stress_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void stress_fail(const char *fmt, ...) {
    uint64_t n = atomic_fetch_add_explicit(&stress_failures, 1, memory_order_relaxed);
    if (n >= 20) {
        if (n == 20) fprintf(stderr, "FAIL: (further failures are counted, not printed)\n");
        return;
    }
    char line[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    fprintf(stderr, "FAIL: %s\n", line);
}

/* Checks a condition (evaluated once); on failure reports where, the condition's
 * text and a printf-style detail. Any thread. */
#define STRESS_CHECK(cond, ...)                                                   \
    do {                                                                          \
        if (!(cond)) {                                                            \
            char stress_detail_[256];                                             \
            snprintf(stress_detail_, sizeof stress_detail_, __VA_ARGS__);         \
            stress_fail("%s:%d: %s (%s)", __FILE__, __LINE__, #cond, stress_detail_); \
        }                                                                         \
    } while (0)

static inline uint64_t stress_failure_count(void) {
    return atomic_load_explicit(&stress_failures, memory_order_relaxed);
}

/* ---- a logger that counts -------------------------------------------------------- */

/* kiln's messages start with a stable item; the stress programs expect a few
 * (MEMORY_LIMIT_REACHED when a limit is set, FRAME_BUDGET_EXCEEDED) and count them, in
 * all and each by its place in the list; any other item is a failure. */
#define STRESS_LOG_ITEMS 16

typedef struct stress_log {
    const char *const *expected;   /* NULL-terminated list of items that may appear */
    _Atomic uint64_t   expected_seen;
    _Atomic uint64_t   unexpected_seen;
    _Atomic uint64_t   seen[STRESS_LOG_ITEMS];   /* by the item's place in expected (the
                                                    first STRESS_LOG_ITEMS) */
} stress_log;

static inline void stress_log_fn(void *user, kiln_log_level level, const char *message) {
    stress_log *log = user;
    for (const char *const *item = log->expected; item && *item; item++) {
        size_t n = strlen(*item);
        if (strncmp(message, *item, n) == 0 && message[n] == ':') {
            atomic_fetch_add_explicit(&log->expected_seen, 1, memory_order_relaxed);
            if (item - log->expected < STRESS_LOG_ITEMS)   /* later ones: counted in all only */
                atomic_fetch_add_explicit(&log->seen[item - log->expected], 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&log->unexpected_seen, 1, memory_order_relaxed);
    stress_fail("unexpected kiln log message (level %d): %s", (int)level, message);
}

/* ---- time ------------------------------------------------------------------------ */

static inline double stress_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* KILN_STRESS_COMMON_H */
