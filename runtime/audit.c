/* runtime/audit.c — KILN_DEBUG_GUARDS at frame end: the sampled guard audit of every
 * live pool and of the arenas the driver owns, over the runtime's registry. */
#include "audit.h"

static void audit_pools(kiln_runtime *rt) {
    pthread_mutex_lock(&rt->registry_lock);   /* no pool is destroyed meanwhile */
    for (int i = 0; i < KILN_MAX_POOLS; i++)
        if (rt->pools[i]) kiln_pool_audit(rt->pools[i]);
    pthread_mutex_unlock(&rt->registry_lock);
}

static void audit_arenas(kiln_runtime *rt) {
    pthread_mutex_lock(&rt->registry_lock);   /* no arena is deleted meanwhile */
    for (kiln_arena_record *record = rt->arenas; record; record = record->next)
        kiln_arena_audit(&record->arena);   /* those this thread owns */
    pthread_mutex_unlock(&rt->registry_lock);
}

void kiln_runtime_audit(kiln_runtime *rt) {
    audit_pools(rt);
    audit_arenas(rt);
}
