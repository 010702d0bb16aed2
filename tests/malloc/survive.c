/* tests/malloc/survive.c — what a preloaded malloc must survive (issue list in README's
 * "kiln as your malloc"), one scenario per run: `survive SCENARIO`, run with
 * LD_PRELOAD=libkiln-malloc.so (scripts/test-all.sh, with KILN_OPTIONS=debug=checks).
 * Each exits 0 when the program kept working and kiln logged no error it should not
 * have; the scenario "foreign" expects one HEAP_FOREIGN_POINTER per bad free. */
#define _GNU_SOURCE
#include <kiln/kiln.h>

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "survive: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* A size the compiler cannot see, for the requests that must fail. */
static volatile size_t huge = SIZE_MAX;

/* dlsym's result as a function pointer (ISO C has no conversion). */
#define LOOKUP(lib, name, fn) memcpy(&(fn), &(void *){ dlsym((lib), (name)) }, sizeof(fn))

typedef int *(*touch_fn)(int);
typedef struct touch_arg { touch_fn touch; } touch_arg;

static kiln_heap_stats heap(void) {
    kiln_heap_stats s;
    CHECK(kiln_stats_heap(kiln_process_runtime(), &s));
    return s;
}

static uint64_t api_errors(void) {
    kiln_stats s;
    CHECK(kiln_stats_get(kiln_process_runtime(), &s));
    return s.api_errors;
}

/* Live allocations of size's class: the scenarios use sizes of their own, so that what
 * libc allocates meanwhile (thread set-up, stdio) does not count. */
static uint64_t class_live(size_t size) {
    kiln_heap_class_stats classes[KILN_HEAP_CLASSES];
    CHECK(kiln_stats_heap_classes(kiln_process_runtime(), classes, KILN_HEAP_CLASSES) == KILN_HEAP_CLASSES);
    return classes[kiln_heap_size_class(size)].live;
}

/* Served by kiln's heap, not glibc's: the preload is in effect. */
static void check_is_kilns(void *p) { CHECK(kiln_heap_usable_size(p) != 0); }

/* ---- early: allocation before main and before kiln's own initialisation ---- */

static char *early;

__attribute__((constructor(101))) static void allocate_before_main(void) {
    early = malloc(100);
    if (early) strcpy(early, "allocated before main");
}

static int scenario_early(void) {
    CHECK(early && strcmp(early, "allocated before main") == 0);
    CHECK(malloc_usable_size(early) >= 100);
    CHECK(kiln_process_runtime() != NULL);
    free(early);
    char *p = strdup("after main");   /* libc's own malloc calls are kiln's too */
    check_is_kilns(p);
    free(p);
    CHECK(heap().allocs >= 2);   /* the one before main, and strdup's */
    return 0;
}

/* ---- tls: thread-local storage set up with malloc (a dlopened module's) ---- */

static void *tls_thread(void *arg) {
    touch_fn touch = ((touch_arg *)arg)->touch;
    for (int i = 0; i < 100; i++) CHECK(*touch(i) == i);
    void *p = malloc(1000);
    free(p);
    return NULL;
}

static int scenario_tls(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libsurvive-tls.so", dir);
    void *lib = dlopen(path, RTLD_NOW);
    CHECK(lib != NULL);
    touch_arg arg;
    LOOKUP(lib, "survive_tls_touch", arg.touch);
    CHECK(arg.touch != NULL);
    for (int round = 0; round < 50; round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, tls_thread, &arg) == 0);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    }
    dlclose(lib);
    return 0;
}

/* ---- fork: parent and child both keep working ---- */

static atomic_bool stop;

static void *churn(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void *p[16];
        for (int k = 0; k < 16; k++) p[k] = malloc((size_t)(k * 5000 + 1));
        for (int k = 0; k < 16; k++) free(p[k]);
    }
    return NULL;
}

static void *child_thread(void *arg) {
    char *s = malloc(64);
    strcpy(s, "child thread");
    free(s);
    return arg;
}

static int scenario_fork(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn, NULL);
    for (int round = 0; round < 30; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            void *p = malloc(300), *big = malloc(3 << 20);
            pthread_t c;
            if (!p || !big || pthread_create(&c, NULL, child_thread, NULL) != 0) _exit(2);
            pthread_join(c, NULL);
            free(p);
            free(big);
            if (round % 10 == 0) execl("/bin/true", "true", (char *)NULL);   /* and exec */
            _exit(0);
        }
        CHECK(pid > 0);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        void *p = malloc(1000);   /* the parent goes on */
        free(p);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}

/* ---- threads: threads exit while others still hold their objects ---- */

#define EXITING 400
#define THREAD_OBJECT 13500   /* one per thread, of a class of its own */
static void *held[EXITING][8];

static void *allocate_and_exit(void *arg) {
    size_t i = (size_t)arg;
    for (int k = 0; k < 8; k++) {
        held[i][k] = malloc(k == 0 ? THREAD_OBJECT : (size_t)(k * 3000 + 8));
        memset(held[i][k], (int)(i & 0xff), 8);
    }
    return NULL;
}

static int scenario_threads(void) {
    uint64_t live = class_live(THREAD_OBJECT);
    for (size_t i = 0; i < EXITING; i += 4) {
        pthread_t t[4];
        for (size_t j = 0; j < 4; j++) pthread_create(&t[j], NULL, allocate_and_exit, (void *)(i + j));
        for (size_t j = 0; j < 4; j++) pthread_join(t[j], NULL);
    }
    CHECK(class_live(THREAD_OBJECT) == live + EXITING);
    for (size_t i = 0; i < EXITING; i++)
        for (int k = 0; k < 8; k++) {
            CHECK(*(unsigned char *)held[i][k] == (unsigned char)(i & 0xff));
            free(held[i][k]);
        }
    CHECK(class_live(THREAD_OBJECT) == live);
    CHECK(heap().bad_frees == 0);
    return 0;
}

/* ---- foreign: free of a pointer kiln did not hand out, and of NULL ---- */

extern void *__libc_malloc(size_t size);
extern void  __libc_free(void *ptr);

static int scenario_foreign(void) {
    uint64_t bad = heap().bad_frees;
    free(NULL);
    char *glibcs = __libc_malloc(64);   /* as if from before the preload */
    strcpy(glibcs, "glibc's");
    char *volatile same = glibcs;       /* the compiler must not judge the free */
    free(same);                         /* ignored, counted */
    CHECK(realloc(same, 128) == NULL);
    CHECK(malloc_usable_size(same) == 0);
    CHECK(strcmp(glibcs, "glibc's") == 0);   /* untouched */
    CHECK(heap().bad_frees == bad + 2);
    __libc_free(glibcs);
    return 0;
}

/* ---- glibc: malloc(0), realloc(p, 0), errno, the aligned calls ---- */

static int scenario_glibc(void) {
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    check_is_kilns(a);
    uint64_t live = heap().live_objects;
    CHECK(realloc(a, 0) == NULL);
    CHECK(heap().live_objects == live - 1);
    free(b);
    errno = 0;
    CHECK(malloc(huge) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(huge / 4, 8) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(NULL, huge / 2, 4) == NULL && errno == ENOMEM);
    void *p = NULL;
    CHECK(posix_memalign(&p, 3, 10) == EINVAL && p == NULL);
    CHECK(posix_memalign(&p, 4096, 10) == 0 && (uintptr_t)p % 4096 == 0);
    free(p);
    p = aligned_alloc(256, 1000);
    CHECK(p && (uintptr_t)p % 256 == 0);
    free(p);
    p = memalign(48, 100);   /* glibc: rounded up to 64 */
    CHECK(p && (uintptr_t)p % 64 == 0);
    free(p);
    errno = 0;   /* glibc: a power of two too large is ENOMEM, beyond any power EINVAL */
    CHECK(memalign((size_t)1 << 63, 5) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(((size_t)1 << 63) + 1, 5) == NULL && errno == EINVAL);
    long page = sysconf(_SC_PAGESIZE);
    p = valloc(10);
    CHECK(p && (uintptr_t)p % (uintptr_t)page == 0);
    free(p);
    p = pvalloc(1);
    CHECK(p && malloc_usable_size(p) >= (size_t)page);
    free(p);
    char *s = calloc(1000, 10);
    for (int i = 0; i < 10000; i++) CHECK(s[i] == 0);
    s = realloc(s, 100000);
    CHECK(s[9999] == 0);
    free(s);
    return 0;
}

/* ---- dlclose: a library that allocated is unloaded; its memory stays ---- */

static int scenario_dlclose(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libsurvive-dl.so", dir);
    char *kept[20];
    for (int round = 0; round < 20; round++) {
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        CHECK(lib != NULL);
        char *(*make)(int);
        LOOKUP(lib, "survive_dl_make", make);
        CHECK(make != NULL);
        kept[round] = make(round);
        CHECK(dlclose(lib) == 0);   /* its destructor frees what it kept */
    }
    for (int round = 0; round < 20; round++) {
        char want[32];
        snprintf(want, sizeof want, "made %d", round);
        CHECK(strcmp(kept[round], want) == 0);
        free(kept[round]);
    }
    CHECK(heap().bad_frees == 0);
    return 0;
}

/* ---- signal: handlers free memory the program owns ---- */

#define HANDED 3000
#define HANDED_SIZE 9000   /* a class the loop and libc leave alone */
static void *handed[HANDED];
static atomic_int next_handed;

static void free_in_handler(int sig) {
    (void)sig;
    int i = atomic_fetch_add(&next_handed, 1);
    if (i < HANDED) free(handed[i]);
}

static void *signaller(void *arg) {
    pthread_t target = *(pthread_t *)arg;
    while (!atomic_load(&stop)) {
        pthread_kill(target, SIGUSR1);
        sched_yield();
    }
    return NULL;
}

static int scenario_signal(void) {
    uint64_t live = class_live(HANDED_SIZE);
    for (int i = 0; i < HANDED; i++) handed[i] = malloc(HANDED_SIZE);
    CHECK(class_live(HANDED_SIZE) == live + HANDED);
    struct sigaction sa = { .sa_handler = free_in_handler };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t self = pthread_self(), t;
    pthread_create(&t, NULL, signaller, &self);
    while (atomic_load(&next_handed) < HANDED) {
        void *p[8];
        for (int k = 0; k < 8; k++) p[k] = malloc((size_t)(k * 2000 + 16));
        for (int k = 0; k < 8; k++) free(p[k]);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    signal(SIGUSR1, SIG_IGN);
    free(malloc(1));
    CHECK(class_live(HANDED_SIZE) == live);
    return 0;
}

/* ---- destroy: the program's process runtime destroyed while the C library holds
 * memory it served (stdout's buffer, a thread's TLS table): kept, and both go on ---- */

static void *malloc_a_little(void *arg) {
    free(malloc(40));
    return arg;
}

static void run_a_thread(void) {
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, malloc_a_little, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
}

static int scenario_destroy(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS });
    CHECK(rt && kiln_set_process_runtime(rt));
    kiln_ctx *ctx = kiln_attach(rt);   /* this thread's malloc goes to rt now */
    CHECK(ctx);
    printf("survive destroy: stdout's buffer is rt's\n");
    run_a_thread();
    kiln_detach(ctx);
    kiln_destroy(rt);   /* PROCESS_RUNTIME_IN_USE: kept */
    printf("survive destroy: printed after the destroy\n");
    fflush(stdout);
    run_a_thread();
    return 0;
}

/* ---- crash: KILN_OPTIONS=crash_file= on a preloaded program that faults: the process
 * runtime's crash report is written there, then the fault ends the process ---- */

static int scenario_crash(void) {
    char *p = malloc(64);
    CHECK(p);
    check_is_kilns(p);
    volatile int *nowhere = (volatile int *)(uintptr_t)huge;   /* not NULL: no warning */
    *nowhere = 1;
    return 1;   /* not reached */
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: survive early|tls|fork|threads|foreign|glibc|dlclose|signal|destroy|crash [DIR]\n");
        return 2;
    }
    const char *s = argv[1], *dir = argc > 2 ? argv[2] : ".";
    uint64_t errors = api_errors();
    int rc = !strcmp(s, "early") ? scenario_early() : !strcmp(s, "tls") ? scenario_tls(dir)
           : !strcmp(s, "fork") ? scenario_fork() : !strcmp(s, "threads") ? scenario_threads()
           : !strcmp(s, "foreign") ? scenario_foreign() : !strcmp(s, "glibc") ? scenario_glibc()
           : !strcmp(s, "dlclose") ? scenario_dlclose(dir) : !strcmp(s, "signal") ? scenario_signal()
           : !strcmp(s, "destroy") ? scenario_destroy() : !strcmp(s, "crash") ? scenario_crash() : 2;
    if (strcmp(s, "foreign") != 0) CHECK(api_errors() == errors);
    else CHECK(api_errors() == errors + 2);
    if (rc == 0) printf("survive %s: ok\n", s);
    return rc;
}
