/* runtime/arenas.c — arenas that belong to a runtime: creation, destruction and the
 * registry that stats and kiln_destroy walk. */
#include "runtime_internal.h"

kiln_arena *kiln_runtime_arena_new(kiln_runtime *rt, const char *name, bool is_frame) {
    kiln_arena_config config = {
        .pool = &rt->pool,
        .name = name,
        .budget = is_frame ? rt->desc.frame_budget : 0,
        .frame_clock = &rt->frame,
        .is_frame = is_frame,
        .log = rt->log,
        .debug = rt->desc.debug,
        .audit_sample = rt->desc.audit_sample,
    };
    kiln_arena *arena = kiln_arena_init(&config);
    if (!arena) return NULL;
    arena->registry_owner = rt;
    pthread_mutex_lock(&rt->registry_lock);
    arena->registry_next = rt->arenas;
    if (rt->arenas) rt->arenas->registry_prev = arena;
    rt->arenas = arena;
    rt->arena_count++;
    pthread_mutex_unlock(&rt->registry_lock);
    return arena;
}

void kiln_runtime_arena_delete(kiln_runtime *rt, kiln_arena *arena) {
    pthread_mutex_lock(&rt->registry_lock);
    if (arena->registry_prev) arena->registry_prev->registry_next = arena->registry_next;
    else rt->arenas = arena->registry_next;
    if (arena->registry_next) arena->registry_next->registry_prev = arena->registry_prev;
    rt->arena_count--;
    pthread_mutex_unlock(&rt->registry_lock);
    kiln_arena_fini(arena);
}

kiln_arena *kiln_arena_create(kiln_runtime *rt, const char *name) {
    if (!kiln_runtime_check(rt, "kiln_arena_create")) return NULL;
    return kiln_runtime_arena_new(rt, name, false);
}

void kiln_arena_destroy(kiln_arena *arena) {
    if (!arena) return;
    kiln_runtime *rt = arena->registry_owner;
    if (arena->is_frame) {
        kiln_log_misuse(&rt->log, "ARENA_IS_FRAME_ARENA",
                        "kiln_arena_destroy: arena '%s' is a context's frame arena; it goes "
                        "with kiln_detach", arena->name);
        return;
    }
    kiln_runtime_arena_delete(rt, arena);
}

void kiln_arena_reset(kiln_arena *arena) {
    if (!arena) {
        kiln_log_misuse(NULL, "ARENA_NULL", "kiln_arena_reset: arena is NULL");
        return;
    }
    if (kiln_unlikely(arena->debug)) kiln_arena_debug_reset(arena);   /* who owns it now */
    kiln_ctx *owner = arena->frame_owner;
    /* A thread that resets its own frame arena keeps a clock of its own: from now on it
     * runs only its own jobs, never another thread's frame job, whose frame memory
     * would otherwise live in this arena and vanish at this thread's boundary. */
    if (owner && kiln_load_relaxed(&owner->rt->driver) != owner) {
        owner->queue.steals = false;
        kiln_handles_quiescent(owner);   /* its frame boundary: it keeps no get pointer */
    }
    kiln_arena_reset_all(arena);
}

void kiln_runtime_audit_arenas(kiln_runtime *rt) {
    pthread_mutex_lock(&rt->registry_lock);   /* no arena is deleted meanwhile */
    for (kiln_arena *arena = rt->arenas; arena; arena = arena->registry_next)
        kiln_arena_audit(arena);   /* those this thread owns */
    pthread_mutex_unlock(&rt->registry_lock);
}
