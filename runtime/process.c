/* runtime/process.c — the process runtime (kiln/heap.h): the one the program named, or
 * the one kiln makes from KILN_OPTIONS when a thread first needs it; its stats=exit
 * report at exit; its locks held across fork, so that the child finds none taken. */
#include "malloc.h"
#include "thread_ctx.h"
#include "check.h"
#include "stats_print.h"

#include <pthread.h>
#include <stdlib.h>

/* Held while kiln's is being made (taken with trylock: a thread that finds it held takes
 * bootstrap memory meanwhile, since the maker may wait on it), and by fork, so that a
 * child never inherits a runtime half made. */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static kiln_runtime *made_here;   /* kiln's own, for its report at exit; make_lock */

/* At exit, what kiln_destroy would have told (kiln's runtime is never destroyed): the
 * repeats folded, the stats=exit report, and whatever the async log still holds. */
static void at_exit(void) {
    if (!made_here) return;
    kiln_log_fold_tell(&made_here->log, true);
    if (made_here->desc.stats.at_exit) kiln_stats_log(made_here);
    kiln_log_flush(made_here);
}

/* The library's destructor runs after every atexit handler (the C library calls the
 * loaded objects' destructors last): what the program's own exit handlers and its
 * static destructors logged after at_exit is told here. */
__attribute__((destructor)) static void after_exit_handlers(void) {
    if (!made_here) return;
    kiln_log_fold_tell(&made_here->log, true);
    kiln_log_flush(made_here);
}

/* ---- fork: the locks a malloc in the child may need, taken in the order the code
 * nests them (making; live list; shared cache; registry; job table; the classes' fork
 * gate; large registry; block pool), released in the parent, and in the child, whose
 * only thread took them. */

static kiln_runtime *forking;   /* the runtime whose locks prepare took; that thread's */

void kiln_process_fork_prepare(void) {
    pthread_mutex_lock(&make_lock);
    kiln_runtime *rt = kiln_process_runtime_peek();
    forking = rt;
    kiln_live_list_lock();
    if (!rt) return;
    pthread_mutex_lock(&rt->orphan_lock);
    pthread_mutex_lock(&rt->registry_lock);
    pthread_mutex_lock(&rt->jobs.table_lock);
    pthread_rwlock_wrlock(&rt->heap.fork_gate);   /* no class carves: their locks are free */
    pthread_mutex_lock(&rt->heap.large.lock);
    pthread_mutex_lock(&rt->blocks.grow_lock);
}

void kiln_process_fork_release(bool in_child) {
    kiln_runtime *rt = forking;
    forking = NULL;
    if (rt) {
        pthread_mutex_unlock(&rt->blocks.grow_lock);
        pthread_mutex_unlock(&rt->heap.large.lock);
        /* A rwlock knows its writer by thread id, which the child's thread has anew. */
        if (in_child) pthread_rwlock_init(&rt->heap.fork_gate, NULL);
        else pthread_rwlock_unlock(&rt->heap.fork_gate);
        pthread_mutex_unlock(&rt->jobs.table_lock);
        if (in_child) kiln_runtime_registry_lock_init(rt);
        else pthread_mutex_unlock(&rt->registry_lock);
        /* The child's copy of an async log has no writer thread: it logs in sync. */
        if (in_child) kiln_log_state_after_fork_child(&rt->log_state);
        pthread_mutex_unlock(&rt->orphan_lock);
    }
    kiln_live_list_unlock();
    pthread_mutex_unlock(&make_lock);
}

/* Makes kiln's process runtime: KILN_OPTIONS over no workers; kiln's defaults when
 * kiln_create refuses those options (it logged why). */
static KILN_COLD kiln_runtime *make_kilns(void) {
    if (pthread_mutex_trylock(&make_lock) != 0) return NULL;   /* being made, or a fork */
    kiln_runtime *rt = kiln_process_runtime_peek();
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
        made_here = rt;
        if (rt) atexit(at_exit);
        if (rt) kiln_process_runtime_made(rt);
    }
    pthread_mutex_unlock(&make_lock);
    return rt;
}

kiln_runtime *kiln_process_runtime_try(void) {
    kiln_runtime *rt = kiln_process_runtime_peek();
    return rt ? rt : make_kilns();
}

kiln_runtime *kiln_process_runtime_wait(void) {
    kiln_runtime *rt = kiln_process_runtime_try();
    for (int tries = 0; !rt && tries < 100; tries++) {   /* another thread is making it */
        pthread_mutex_lock(&make_lock);
        pthread_mutex_unlock(&make_lock);
        rt = kiln_process_runtime_try();
    }
    return rt;
}
