/* stress/stress_malloc.c — the malloc shape under thread churn: threads made and ended
 * by the thousand, each allocating (kiln_malloc, calloc, realloc, aligned), handing its
 * objects to a shared table of slots and freeing whatever it finds there: objects of
 * other threads, many of them exited; a fork every 8 waves while they run, whose child
 * allocates and frees too. Checks every object's contents, that the heap ends
 * with nothing live and no bad free, that every thread's context went with it, and that
 * resident memory does not grow once warm.
 *
 *   stress-malloc --threads T --iterations N [--seconds S] [--seed S]
 * T threads live at once, N threads made in all (or as many as S seconds make). */
#include "stress_common.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS      4096
#define OPS        300   /* per thread */

static _Atomic(uint64_t *) slots[SLOTS];
static uint64_t            seed;

/* An object: its first word says its size and a check of it, its last byte too. */
static uint64_t stamp(size_t size) { return (uint64_t)size << 32 | (stress_mix(size ^ seed) & 0xffffffffu); }

static void check_and_free(uint64_t *obj) {
    if (!obj) return;
    size_t size = (size_t)(obj[0] >> 32);
    STRESS_CHECK(obj[0] == stamp(size), "object %p stamp %" PRIx64, (void *)obj, obj[0]);
    STRESS_CHECK(((unsigned char *)obj)[size - 1] == (unsigned char)size, "object %p tail", (void *)obj);
    STRESS_CHECK(kiln_malloc_usable_size(obj) >= size, "usable size of %p", (void *)obj);
    kiln_free(obj);
}

static uint64_t *make(stress_rng *rng) {
    size_t size = 16 + (size_t)stress_below(rng, stress_below(rng, 8) == 0 ? 200000 : 3000);
    uint64_t *obj;
    switch (stress_below(rng, 4)) {
    case 0: obj = kiln_calloc(1, size); break;
    case 1: obj = kiln_aligned_alloc((size_t)1 << (4 + stress_below(rng, 6)), size); break;
    case 2: {   /* grown from a smaller one */
        obj = kiln_malloc(size / 2);
        if (obj) obj = kiln_realloc(obj, size);
        break;
    }
    default: obj = kiln_malloc(size); break;
    }
    STRESS_CHECK(obj != NULL, "allocation of %zu bytes", size);
    if (!obj) return NULL;
    obj[0] = stamp(size);
    ((unsigned char *)obj)[size - 1] = (unsigned char)size;
    return obj;
}

static _Atomic uint64_t made_threads;

static void *churner(void *arg) {
    stress_rng rng = stress_rng_make(seed, (uint64_t)(uintptr_t)arg);
    uint64_t *mine[8] = { 0 };
    for (int op = 0; op < OPS; op++) {
        uint64_t *obj = make(&rng);
        uint64_t *found = atomic_exchange_explicit(&slots[stress_below(&rng, SLOTS)], obj,
                                                   memory_order_acq_rel);   /* hands the contents over */
        check_and_free(found);
        size_t k = (size_t)stress_below(&rng, 8);   /* a few of its own, freed late */
        check_and_free(mine[k]);
        mine[k] = make(&rng);
    }
    for (int k = 0; k < 8; k++) check_and_free(mine[k]);
    return NULL;
}

/* A fork while the churners allocate and free (the process runtime's locks are taken
 * around it): the child allocates, frees and checks through the heap it inherited. */
static void fork_while_churning(void) {
    pid_t pid = fork();
    if (pid == 0) {
        stress_rng rng = stress_rng_make(seed, 0xf0f0);
        for (int i = 0; i < 200; i++) check_and_free(make(&rng));
        _exit(stress_failure_count() == 0 ? 0 : 1);
    }
    int status = 0;
    STRESS_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "a child forked while threads allocate: status %d", status);
}

static size_t resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv) {
    double seconds = 0;
    int kept = 1;
    for (int i = 1; i < argc; i++) {   /* --seconds is this program's own */
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else argv[kept++] = argv[i];
    }
    stress_options opt = { .threads = 4, .iterations = 2000, .seed = 1 };
    if (!stress_parse(kept, argv, &opt)) return 2;
    seed = opt.seed;
    static const char *const expected[] = { NULL };
    static stress_log log = { .expected = expected };
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS, .log = stress_log_fn,
                                                 .log_user = &log, .options_env = KILN_OPTIONS_ENV_IGNORE });
    if (!rt || !kiln_set_process_runtime(rt)) return 2;
    kiln_stats before;
    kiln_stats_get(rt, &before);

    double start = stress_seconds();
    size_t warm_rss = 0, peak_after_warm = 0;
    uint64_t waves = 0;
    double next_report = 10;   /* with --seconds: resident memory every 10 s, to show it level */
    pthread_t *threads = calloc(opt.threads, sizeof *threads);
    for (;;) {
        uint64_t made = atomic_load(&made_threads);
        bool done = seconds > 0 ? stress_seconds() - start >= seconds : made >= opt.iterations;
        if (done) break;
        for (unsigned t = 0; t < opt.threads; t++)
            pthread_create(&threads[t], NULL, churner, (void *)(uintptr_t)(made + t + 1));
        if (waves % 8 == 7) fork_while_churning();
        for (unsigned t = 0; t < opt.threads; t++) pthread_join(threads[t], NULL);
        atomic_fetch_add(&made_threads, opt.threads);
        waves++;
        size_t rss = resident_bytes();
        if (waves == 20) warm_rss = rss;   /* warm: the slots full, the caches grown */
        if (waves > 20 && rss > peak_after_warm) peak_after_warm = rss;
        if (seconds > 0 && stress_seconds() - start >= next_report) {
            printf("  %3.0f s: %" PRIu64 " threads, resident %zu KiB\n", next_report,
                   (uint64_t)atomic_load(&made_threads), rss >> 10);
            fflush(stdout);
            next_report += 10;
        }
    }
    free(threads);
    kiln_stats after;
    kiln_stats_get(rt, &after);
    STRESS_CHECK(after.contexts == before.contexts, "contexts %u at the end, %u at the start (each "
                 "thread's context goes with it)", after.contexts, before.contexts);
    for (size_t i = 0; i < SLOTS; i++) check_and_free(atomic_exchange(&slots[i], NULL));
    kiln_heap_stats heap;
    kiln_stats_heap(rt, &heap);
    STRESS_CHECK(heap.live_objects == 0, "%" PRIu64 " objects live at the end", heap.live_objects);
    STRESS_CHECK(heap.bad_frees == 0, "%" PRIu64 " bad frees", heap.bad_frees);
    /* Resident memory once warm: no growth beyond a quarter (and 8 MiB of slack for
     * the threads' stacks and the kernel's own rounding). */
    if (warm_rss && peak_after_warm)
        STRESS_CHECK(peak_after_warm <= warm_rss + warm_rss / 4 + (8u << 20),
                     "resident memory grew from %zu KiB (warm) to %zu KiB", warm_rss >> 10, peak_after_warm >> 10);
    printf("stress-malloc: %" PRIu64 " threads in %.1f s, resident %zu KiB warm, %zu KiB peak after; "
           "%" PRIu64 " allocations\n", (uint64_t)atomic_load(&made_threads), stress_seconds() - start,
           warm_rss >> 10, peak_after_warm >> 10, heap.allocs);
    kiln_ctx *mine = kiln_ctx_current();   /* the shape attached this thread for its frees */
    if (mine) kiln_detach(mine);
    kiln_destroy(rt);
    return stress_failure_count() == 0 ? 0 : 1;
}
