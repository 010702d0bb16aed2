/* runtime/process.c — the process runtime (kiln/heap.h): the one the program named, or
 * the one kiln makes from KILN_OPTIONS when a thread first needs it; its stats=exit
 * report at exit; its locks held across fork, so that the child finds none taken. */
#include "malloc.h"
#include "check.h"
#include "stats_print.h"

#include <pthread.h>
#include <stdlib.h>

/* The program's (kiln_set_process_runtime) and kiln's own. Release stores once they are
 * made, acquire loads: a thread that finds one sees it whole. */
static _Atomic(kiln_runtime *) named, kilns;
/* Held while kiln's is being made (taken with trylock: a thread that finds it held takes
 * bootstrap memory meanwhile, since the maker may wait on it), and by fork, so that a
 * child never inherits a runtime half made. */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;   /* kiln_set_process_runtime */

kiln_runtime *kiln_process_runtime_peek(void) {
    kiln_runtime *rt = kiln_load_acquire(&named);
    return rt ? rt : kiln_load_acquire(&kilns);
}

bool kiln_process_runtime_is_kilns(const kiln_runtime *rt) {
    return rt != NULL && rt == kiln_load_acquire(&kilns);
}

static void report_at_exit(void) {
    kiln_runtime *rt = kiln_load_acquire(&kilns);
    if (rt) kiln_stats_log(rt);
}

/* ---- fork: the locks a malloc in the child may need, taken in the order the code
 * nests them (implicit attaches; making; live list; shared cache; registry; job table;
 * classes; large registry; block pool), released in the parent, and in the child, whose
 * only thread took them. */

static kiln_runtime *forking;   /* the runtime whose locks prepare took; that thread's */

static void fork_prepare(void) {
    kiln_thread_attach_lock();
    pthread_mutex_lock(&make_lock);
    kiln_runtime *rt = kiln_process_runtime_peek();
    forking = rt;
    kiln_live_list_lock();
    if (!rt) return;
    pthread_mutex_lock(&rt->orphan_lock);
    pthread_mutex_lock(&rt->registry_lock);
    pthread_mutex_lock(&rt->jobs.table_lock);
    for (uint32_t c = 0; c < rt->heap.class_count; c++) pthread_mutex_lock(&rt->heap.classes[c].carve_lock);
    pthread_mutex_lock(&rt->heap.large.lock);
    pthread_mutex_lock(&rt->blocks.grow_lock);
}

/* in_child: the registry's recursive lock is made anew (its owner is a thread id). */
static void fork_release(bool in_child) {
    kiln_runtime *rt = forking;
    forking = NULL;
    if (rt) {
        pthread_mutex_unlock(&rt->blocks.grow_lock);
        pthread_mutex_unlock(&rt->heap.large.lock);
        for (uint32_t c = rt->heap.class_count; c-- > 0;) pthread_mutex_unlock(&rt->heap.classes[c].carve_lock);
        pthread_mutex_unlock(&rt->jobs.table_lock);
        if (in_child) kiln_runtime_registry_lock_init(rt);
        else pthread_mutex_unlock(&rt->registry_lock);
        pthread_mutex_unlock(&rt->orphan_lock);
    }
    kiln_live_list_unlock();
    pthread_mutex_unlock(&make_lock);
    kiln_thread_attach_unlock();
}

static void fork_parent(void) { fork_release(false); }

static void fork_child(void) { fork_release(true); }

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_hooks(void) {
    kiln_thread_exit_key_make();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Makes kiln's process runtime: KILN_OPTIONS over no workers; kiln's defaults when
 * kiln_create refuses those options (it logged why). */
static KILN_COLD kiln_runtime *make_kilns(void) {
    pthread_once(&process_once, process_hooks);   /* before make_lock: a fork waits for it */
    if (pthread_mutex_trylock(&make_lock) != 0) return NULL;   /* being made, or a fork */
    kiln_runtime *rt = kiln_load_acquire(&kilns);
    if (!rt) {
        kiln_desc desc = { .worker_count = KILN_NO_WORKERS };
        rt = kiln_create(&desc);
        if (!rt) {
            desc.options_env = KILN_OPTIONS_ENV_IGNORE;
            rt = kiln_create(&desc);
            if (rt)
                kiln_log(&rt->log, KILN_LOGITEM_PROCESS_RUNTIME_OPTIONS,
                         "malloc: the process runtime could not be made from KILN_OPTIONS (see "
                         "the error before); it runs with kiln's defaults");
        }
        if (rt && rt->desc.stats.at_exit) atexit(report_at_exit);
        if (rt) kiln_store_release(&kilns, rt);
    }
    pthread_mutex_unlock(&make_lock);
    return rt;
}

kiln_runtime *kiln_process_runtime_try(void) {
    kiln_runtime *rt = kiln_process_runtime_peek();
    return rt ? rt : make_kilns();
}

kiln_runtime *kiln_process_runtime(void) {
    kiln_runtime *rt = kiln_process_runtime_try();
    for (int tries = 0; !rt && tries < 100; tries++) {   /* another thread is making it */
        pthread_mutex_lock(&make_lock);
        pthread_mutex_unlock(&make_lock);
        rt = kiln_process_runtime_try();
    }
    return rt;
}

bool kiln_set_process_runtime(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_set_process_runtime")) return false;
    pthread_once(&process_once, process_hooks);
    pthread_mutex_lock(&named_lock);
    kiln_runtime *before = kiln_load_acquire(&named);
    if (!before) kiln_store_release(&named, rt);
    pthread_mutex_unlock(&named_lock);
    if (before)
        kiln_log_misuse(&rt->log, KILN_LOGITEM_PROCESS_RUNTIME_TAKEN,
                        "kiln_set_process_runtime: the program named a process runtime already; "
                        "refused (it serves until it is destroyed)");
    return before == NULL;
}

void kiln_process_runtime_forget(const kiln_runtime *rt) {
    pthread_mutex_lock(&named_lock);
    if (kiln_load_acquire(&named) == rt) kiln_store_release(&named, NULL);
    pthread_mutex_unlock(&named_lock);
}
