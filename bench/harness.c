/* bench/harness.c — the clock, series and their statistics, the alternating-round
 * driver, the tables, the child-process protocol for LD_PRELOAD peers, the malloc peers
 * and the thread team. */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_config.h"   /* the LD_PRELOAD peers' paths */

extern char **environ;

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_die(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fputs("bench: ", stderr);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
    exit(1);
}

/* ---- Series ------------------------------------------------------------------- */

static void push_pair(double **a, double **b, size_t *count, size_t *cap, double x, double y) {
    if (*count == *cap) {
        size_t cap2 = *cap ? *cap * 2 : 64;
        double *a2 = realloc(*a, cap2 * sizeof **a);
        if (a2) *a = a2;
        double *b2 = a2 ? realloc(*b, cap2 * sizeof **b) : NULL;
        if (!a2 || !b2) bench_die("out of memory for figures");
        *b = b2;
        *cap = cap2;
    }
    (*a)[*count] = x;
    (*b)[*count] = y;
    (*count)++;
}

void bench_add_sample(bench_series *s, double ns, double ops) {
    push_pair(&s->sample_ns, &s->sample_ops, &s->samples, &s->sample_cap, ns, ops);
}

void bench_add_round(bench_series *s, double ns, double ops) {
    push_pair(&s->round_ns, &s->round_ops, &s->rounds, &s->round_cap, ns, ops);
}

void bench_series_clear(bench_series *s) {
    s->rounds = 0;
    s->samples = 0;
}

void bench_series_free(bench_series *s) {
    free(s->round_ns);
    free(s->round_ops);
    free(s->sample_ns);
    free(s->sample_ops);
    memset(s, 0, sizeof *s);
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct summary {
    double median;        /* of the round figures, ns/op */
    double p99, max;      /* of the sample figures, ns/op */
    double max_sample_us; /* the longest sample, in microseconds */
} summary;

/* Median of n values (sorted in place): the middle one, or the mean of the two. */
static double median_sorted(const double *v, size_t n) {
    if (n == 0) return 0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static summary summarize(const bench_series *s) {
    summary out = { 0, 0, 0, 0 };
    double *v = malloc((s->rounds > s->samples ? s->rounds : s->samples) * sizeof *v + 1);
    if (!v) bench_die("out of memory for statistics");
    for (size_t i = 0; i < s->rounds; i++) v[i] = s->round_ns[i] / s->round_ops[i];
    qsort(v, s->rounds, sizeof *v, compare_double);
    out.median = median_sorted(v, s->rounds);
    for (size_t i = 0; i < s->samples; i++) {
        v[i] = s->sample_ns[i] / s->sample_ops[i];
        if (s->sample_ns[i] / 1e3 > out.max_sample_us) out.max_sample_us = s->sample_ns[i] / 1e3;
    }
    qsort(v, s->samples, sizeof *v, compare_double);
    if (s->samples) {
        size_t rank = (size_t)((99 * s->samples + 99) / 100);   /* nearest rank, ceil */
        out.p99 = v[(rank ? rank : 1) - 1];
        out.max = v[s->samples - 1];
    }
    free(v);
    return out;
}

/* ---- Workloads ---------------------------------------------------------------- */

static bench_entry *new_entry(bench_workload *w, const char *name) {
    if (w->count == BENCH_MAX_ENTRIES) bench_die("workload '%s': too many entries", w->title);
    bench_entry *e = &w->entries[w->count++];
    memset(e, 0, sizeof *e);
    e->name = name;
    return e;
}

bench_entry *bench_add_entry(bench_workload *w, const char *name, bench_round_fn round,
                             void *state) {
    bench_entry *e = new_entry(w, name);
    e->round = round;
    e->state = state;
    return e;
}

bench_entry *bench_add_child(bench_workload *w, const char *name, bench_child *child) {
    bench_entry *e = new_entry(w, name);
    e->child = child;
    return e;
}

bench_entry *bench_add_skipped(bench_workload *w, const char *name, const char *fmt, ...) {
    bench_entry *e = new_entry(w, name);
    va_list args;
    va_start(args, fmt);
    vsnprintf(e->skip, sizeof e->skip, fmt, args);
    va_end(args);
    return e;
}

static void run_entry_round(bench_entry *e) {
    if (e->skip[0]) return;
    bench_series *s = &e->series;
    size_t rounds = s->rounds, first_sample = s->samples;
    if (e->child) {
        char err[sizeof e->skip - 16];
        if (!bench_child_round(e->child, s, err, sizeof err)) {
            snprintf(e->skip, sizeof e->skip, "dropped: %s", err);
            return;
        }
    } else {
        e->round(e->state, s);
    }
    if (s->rounds == rounds) {   /* derive the round figure from its samples */
        double ns = 0, ops = 0;
        for (size_t i = first_sample; i < s->samples; i++) {
            ns += s->sample_ns[i];
            ops += s->sample_ops[i];
        }
        if (ops > 0) bench_add_round(s, ns, ops);
    }
}

void bench_run(bench_workload *w) {
    for (int round = 0; round <= w->rounds; round++) {
        for (int i = 0; i < w->count; i++) run_entry_round(&w->entries[i]);
        if (round == 0)   /* the warm-up round is not counted */
            for (int i = 0; i < w->count; i++) bench_series_clear(&w->entries[i].series);
    }
}

void bench_print(const bench_workload *w) {
    printf("\n== %s ==\n", w->title);
    if (w->detail) printf("%s\n", w->detail);
    printf("%d rounds after 1 warm-up round, implementations alternating in table order; "
           "median over rounds, p99/max over %ss\n", w->rounds, w->sample);
    char h_med[32], h_p99[32], h_max[32], h_us[32];
    snprintf(h_med, sizeof h_med, "median ns/%s", w->op);
    snprintf(h_p99, sizeof h_p99, "p99 ns/%s", w->op);
    snprintf(h_max, sizeof h_max, "max ns/%s", w->op);
    snprintf(h_us, sizeof h_us, "max %s us", w->sample);
    printf("%-30s %16s %14s %14s %15s %16s", "implementation", h_med, h_p99, h_max, h_us,
           "ratio peer/kiln");
    if (w->note_head) printf("  %s", w->note_head);
    printf("\n");
    summary base = { 0, 0, 0, 0 };
    bool have_base = w->count > 0 && !w->entries[0].skip[0] && w->entries[0].series.rounds > 0;
    if (have_base) base = summarize(&w->entries[0].series);
    for (int i = 0; i < w->count; i++) {
        const bench_entry *e = &w->entries[i];
        if (e->skip[0] || e->series.rounds == 0) continue;
        summary s = summarize(&e->series);
        char ratio[32];
        if (i == 0) snprintf(ratio, sizeof ratio, "base");
        else if (have_base && base.median > 0) snprintf(ratio, sizeof ratio, "%.2fx", s.median / base.median);
        else snprintf(ratio, sizeof ratio, "n/a");
        printf("%-30s %16.2f %14.2f %14.2f %15.1f %16s", e->name, s.median, s.p99, s.max,
               s.max_sample_us, ratio);
        if (w->note_head) printf("  %s", e->note[0] ? e->note : "-");
        printf("\n");
    }
    for (int i = 0; i < w->count; i++) {
        const bench_entry *e = &w->entries[i];
        if (e->skip[0]) printf("note: %s skipped: %s\n", e->name, e->skip);
    }
    fflush(stdout);
}

void bench_workload_free(bench_workload *w) {
    for (int i = 0; i < w->count; i++) bench_series_free(&w->entries[i].series);
    w->count = 0;
}

/* ---- Children ----------------------------------------------------------------- */

struct bench_child {
    pid_t  pid;
    FILE  *to;     /* the child's stdin */
    FILE  *from;   /* the child's stdout */
    char  *line;
    size_t line_cap;
};

const char *bench_malloc_provider(void) {
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname) return info.dli_fname;
    return "?";
}

/* The cpu line of /proc/stat: total and idle (idle + iowait) jiffies. */
static bool read_cpu_times(unsigned long long *total, unsigned long long *idle) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return false;
    unsigned long long v[8] = { 0 };
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5) return false;
    *total = 0;
    for (int i = 0; i < 8; i++) *total += v[i];
    *idle = v[3] + v[4];
    return true;
}

void bench_print_load(void) {
    unsigned long long t0, i0, t1, i1;
    if (!read_cpu_times(&t0, &i0)) return;
    struct timespec pause = { 0, 300 * 1000000 };
    nanosleep(&pause, NULL);
    if (!read_cpu_times(&t1, &i1) || t1 <= t0) return;
    double busy = 100.0 * (double)((t1 - t0) - (i1 - i0)) / (double)(t1 - t0);
    printf("other work on the machine before the start: %.0f%% of %ld cores busy\n", busy,
           sysconf(_SC_NPROCESSORS_ONLN));
    if (busy > 10)
        printf("note: the machine is busy; every figure (kiln's and the peers') is noisier\n");
    fflush(stdout);
}

/* environ with LD_PRELOAD replaced by preload; the strings are environ's, but one. */
static char **env_with_preload(const char *preload, char **preload_var) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    size_t len = strlen("LD_PRELOAD=") + strlen(preload) + 1;
    *preload_var = malloc(len);
    if (!env || !*preload_var) bench_die("out of memory for a child's environment");
    snprintf(*preload_var, len, "LD_PRELOAD=%s", preload);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    env[k++] = *preload_var;
    env[k] = NULL;
    return env;
}

bench_child *bench_child_start(const char *preload, char *const argv[], char *err,
                               size_t err_size) {
    signal(SIGPIPE, SIG_IGN);   /* a dead child shows as a failed write, not a dead parent */
    int in[2], out[2];          /* in: parent -> child stdin; out: child stdout -> parent */
    if (pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, err_size, "pipe: %s", strerror(errno));
        return NULL;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, err_size, "pipe: %s", strerror(errno));
        close(in[0]);
        close(in[1]);
        return NULL;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    char *preload_var;
    char **env = env_with_preload(preload, &preload_var);
    fflush(stdout);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, env);
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    free(preload_var);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        snprintf(err, err_size, "posix_spawn: %s", strerror(rc));
        close(in[1]);
        close(out[0]);
        return NULL;
    }
    bench_child *c = calloc(1, sizeof *c);
    if (!c) bench_die("out of memory for a child");
    c->pid = pid;
    c->to = fdopen(in[1], "w");
    c->from = fdopen(out[0], "r");
    if (!c->to || !c->from) bench_die("fdopen failed");
    /* The handshake: "ready <object that defines malloc>" or "error <why>". */
    ssize_t len = getline(&c->line, &c->line_cap, c->from);
    if (len <= 0 || strncmp(c->line, "ready ", 6) != 0) {
        snprintf(err, err_size, "%s",
                 len <= 0 ? "the child exited before it was ready" : c->line);
        err[strcspn(err, "\n")] = '\0';
        bench_child_stop(c);
        return NULL;
    }
    return c;
}

bool bench_child_round(bench_child *c, bench_series *s, char *err, size_t err_size) {
    if (fputs("round\n", c->to) == EOF || fflush(c->to) == EOF) {
        snprintf(err, err_size, "the child is gone (write failed)");
        return false;
    }
    ssize_t len = getline(&c->line, &c->line_cap, c->from);
    if (len <= 0 || c->line[0] != 'R') {
        snprintf(err, err_size, "%s", len <= 0 ? "the child exited mid-run" : c->line);
        err[strcspn(err, "\n")] = '\0';
        return false;
    }
    char *p = c->line + 1, *end;
    double round_ns = strtod(p, &end);
    double round_ops = strtod(end, &p);
    unsigned long k = strtoul(p, &end, 10);
    p = end;
    for (unsigned long i = 0; i < k; i++) {
        double ns = strtod(p, &end);
        double ops = strtod(end, &p);
        if (p == end) {
            snprintf(err, err_size, "a malformed round line from the child");
            return false;
        }
        bench_add_sample(s, ns, ops);
    }
    bench_add_round(s, round_ns, round_ops);
    return true;
}

void bench_child_stop(bench_child *c) {
    if (!c) return;
    fputs("quit\n", c->to);
    fclose(c->to);
    fclose(c->from);
    int status;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
    }
    free(c->line);
    free(c);
}

int bench_child_serve(const char *expect, bench_round_fn round, void *state) {
    const char *provider = bench_malloc_provider();
    if (expect && !strstr(provider, expect)) {
        printf("error malloc comes from %s, not from %s (LD_PRELOAD did not take)\n", provider,
               expect);
        fflush(stdout);
        return 1;
    }
    printf("ready %s\n", provider);
    fflush(stdout);
    bench_series s = { 0 };
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        if (strcmp(line, "round\n") != 0) break;
        bench_series_clear(&s);
        round(state, &s);
        double ns = 0, ops = 0;
        for (size_t i = 0; i < s.samples; i++) {
            ns += s.sample_ns[i];
            ops += s.sample_ops[i];
        }
        if (s.rounds) {
            ns = s.round_ns[0];
            ops = s.round_ops[0];
        }
        printf("R %.17g %.17g %zu", ns, ops, s.samples);
        for (size_t i = 0; i < s.samples; i++) printf(" %.17g %.17g", s.sample_ns[i], s.sample_ops[i]);
        printf("\n");
        fflush(stdout);
    }
    free(line);
    bench_series_free(&s);
    return 0;
}

/* ---- The malloc peers --------------------------------------------------------- */

bool bench_glibc_find(bench_malloc_fns *out, bool (*foreign)(const void *p), char *why,
                      size_t why_size) {
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    void *sym_malloc = libc ? dlsym(libc, "malloc") : NULL;
    void *sym_free = libc ? dlsym(libc, "free") : NULL;
    Dl_info info;
    if (!sym_malloc || !sym_free || !dladdr(sym_malloc, &info) ||
        !strstr(info.dli_fname, LIBC_SO)) {
        snprintf(why, why_size, "glibc's malloc not found in %s", LIBC_SO);
        return false;
    }
    /* POSIX guarantees dlsym's object pointers convert to function pointers. */
    memcpy(&out->malloc, &sym_malloc, sizeof sym_malloc);
    memcpy(&out->free, &sym_free, sizeof sym_free);
    if (foreign) {
        void *p = out->malloc(64);
        bool theirs = p && foreign(p);
        out->free(p);
        if (theirs) {
            snprintf(why, why_size, "the malloc found in %s hands out foreign memory", LIBC_SO);
            return false;
        }
    }
    return true;
}

static const struct preload_peer {
    const char *row;       /* the table row */
    const char *library;   /* found at configure time, or NULL */
    const char *expect;    /* part of the path of the object that must define malloc */
} preload_peers[BENCH_PRELOAD_PEERS] = {
#ifdef BENCH_JEMALLOC_SO
    { "jemalloc malloc+free (child)", BENCH_JEMALLOC_SO, "jemalloc" },
#else
    { "jemalloc malloc+free (child)", NULL, "jemalloc" },
#endif
#ifdef BENCH_TCMALLOC_SO
    { "tcmalloc malloc+free (child)", BENCH_TCMALLOC_SO, "tcmalloc" },
#else
    { "tcmalloc malloc+free (child)", NULL, "tcmalloc" },
#endif
#ifdef BENCH_KILN_MALLOC_SO   /* kiln's own heap as the child's malloc (libkiln-malloc.so) */
    { "kiln malloc+free (child, libkiln-malloc)", BENCH_KILN_MALLOC_SO, "kiln-malloc" },
#else
    { "kiln malloc+free (child, libkiln-malloc)", NULL, "kiln-malloc" },
#endif
};

void bench_add_preload_peers(bench_workload *w, const char *program, const char *const args[],
                             bench_child *children[BENCH_PRELOAD_PEERS]) {
    enum { MAX_ARGS = 16 };
    for (int i = 0; i < BENCH_PRELOAD_PEERS; i++) {
        const struct preload_peer *peer = &preload_peers[i];
        children[i] = NULL;
        if (!peer->library) {
            bench_add_skipped(w, peer->row, "not found at configure time (pkg-config)");
            continue;
        }
        char *argv[MAX_ARGS + 4];
        int n = 0;
        argv[n++] = (char *)program;
        argv[n++] = "--child";
        argv[n++] = (char *)peer->expect;
        for (int k = 0; args[k]; k++) {
            if (k == MAX_ARGS) bench_die("a child takes at most %d arguments", MAX_ARGS);
            argv[n++] = (char *)args[k];
        }
        argv[n] = NULL;
        char err[200];
        children[i] = bench_child_start(peer->library, argv, err, sizeof err);
        if (children[i]) bench_add_child(w, peer->row, children[i]);
        else bench_add_skipped(w, peer->row, "child with LD_PRELOAD=%s failed: %s", peer->library,
                               err);
    }
}

void bench_stop_preload_peers(bench_child *children[BENCH_PRELOAD_PEERS]) {
    for (int i = 0; i < BENCH_PRELOAD_PEERS; i++) {
        bench_child_stop(children[i]);
        children[i] = NULL;
    }
}

/* ---- The thread team ---------------------------------------------------------- */

typedef struct team_member {
    bench_team *team;
    int         index;
} team_member;

struct bench_team {
    int             size;
    pthread_t      *threads;
    team_member    *members;
    pthread_mutex_t lock;
    pthread_cond_t  wake;         /* a new run (or quit) */
    pthread_cond_t  done;         /* the last member of a run returned */
    unsigned long   generation;   /* runs started so far; under lock */
    int             running;      /* members still in the current run; under lock */
    bool            quit;
    bench_team_fn   fn;
    void           *arg;
};

static void *team_main(void *p) {
    team_member *m = p;
    bench_team *team = m->team;
    pthread_mutex_lock(&team->lock);
    unsigned long seen = 0;   /* the generation at creation: a run posted before this
                                 thread first got the lock is still seen */
    for (;;) {
        while (team->generation == seen && !team->quit) pthread_cond_wait(&team->wake, &team->lock);
        if (team->quit) break;
        seen = team->generation;
        bench_team_fn fn = team->fn;
        void *arg = team->arg;
        pthread_mutex_unlock(&team->lock);
        fn(arg, m->index);
        pthread_mutex_lock(&team->lock);
        if (--team->running == 0) pthread_cond_signal(&team->done);
    }
    pthread_mutex_unlock(&team->lock);
    return NULL;
}

bench_team *bench_team_start(int size) {
    bench_team *team = calloc(1, sizeof *team);
    if (!team || size < 1) bench_die("bench_team_start: no memory or no members");
    team->size = size;
    team->threads = calloc((size_t)size, sizeof *team->threads);
    team->members = calloc((size_t)size, sizeof *team->members);
    if (!team->threads || !team->members) bench_die("bench_team_start: out of memory");
    pthread_mutex_init(&team->lock, NULL);
    pthread_cond_init(&team->wake, NULL);
    pthread_cond_init(&team->done, NULL);
    for (int i = 0; i < size; i++) {
        team->members[i] = (team_member){ team, i };
        if (pthread_create(&team->threads[i], NULL, team_main, &team->members[i]) != 0)
            bench_die("bench_team_start: pthread_create failed");
    }
    return team;
}

void bench_team_run(bench_team *team, bench_team_fn fn, void *arg) {
    pthread_mutex_lock(&team->lock);
    team->fn = fn;
    team->arg = arg;
    team->running = team->size;
    team->generation++;
    pthread_cond_broadcast(&team->wake);
    while (team->running > 0) pthread_cond_wait(&team->done, &team->lock);
    pthread_mutex_unlock(&team->lock);
}

void bench_team_stop(bench_team *team) {
    if (!team) return;
    pthread_mutex_lock(&team->lock);
    team->quit = true;
    pthread_cond_broadcast(&team->wake);
    pthread_mutex_unlock(&team->lock);
    for (int i = 0; i < team->size; i++) pthread_join(team->threads[i], NULL);
    pthread_cond_destroy(&team->done);
    pthread_cond_destroy(&team->wake);
    pthread_mutex_destroy(&team->lock);
    free(team->threads);
    free(team->members);
    free(team);
}
