/* runtime/arenas.c — the arena's public face (kiln/memory.h): arenas that belong to a
 * runtime, their records, creation, destruction, the registry that stats and
 * kiln_destroy walk, reset and its refusals, their stats, and a context's frame arena
 * with the frame allocation fast path.
 *
 * Records: an arena's bookkeeping (struct kiln_arena) is a heap record outside its
 * blocks, kept after the arena is destroyed, with destroyed set, so that a call through
 * a stale pointer is refused (ARENA_DESTROYED) whoever has its blocks now. A user
 * arena's record is never reused (a stale pointer would name the new arena); it waits
 * for kiln_destroy, as destroyed pools do. A frame arena's record is reused for a later
 * frame arena, as the context it belonged to is reused by a later attach: detaching
 * and attaching over and over keeps as many records as contexts were attached at once.
 * Until its reuse, a call through it is refused too. Both kinds wait on the runtime's
 * lists (dead_arenas, spare_frame_arenas) until kiln_destroy frees them. */
#include "arenas.h"
#include "tags.h"
#include "check.h"

#include "../base/sys_alloc.h"

#include <stdio.h>

static void records_free(kiln_arena_record *list) {
    for (kiln_arena_record *a = list, *next; a; a = next) {
        next = a->next;
        kiln_sys_free(a);
    }
}

void kiln_runtime_arenas_fini(kiln_runtime *rt) {
    records_free(rt->dead_arenas);
    records_free(rt->spare_frame_arenas);
    rt->dead_arenas = rt->spare_frame_arenas = NULL;
}

/* A record for a new arena: a free frame record for a frame arena (*reused set), else a
 * new one. NULL when the heap refuses (logged). Any thread (takes registry_lock). */
static kiln_arena_record *record_take(kiln_runtime *rt, const char *name, bool is_frame,
                                      bool *reused) {
    kiln_arena_record *record = NULL;
    if (is_frame) {
        pthread_mutex_lock(&rt->registry_lock);
        record = rt->spare_frame_arenas;
        if (record) rt->spare_frame_arenas = record->next;
        pthread_mutex_unlock(&rt->registry_lock);
    }
    *reused = record != NULL;
    if (!record) record = kiln_sys_aligned(KILN_CACHE_LINE, sizeof *record);
    if (!record)
        kiln_log(&rt->log, KILN_LOGITEM_ARENA_OUT_OF_MEMORY,
                 "arena '%s': no heap memory for its record", name ? name : "arena");
    return record;
}

/* Keeps a record whose arena is gone (or never was: fresh says no pointer to it was
 * ever handed out, so it is freed). Any thread (takes registry_lock). */
static void record_keep(kiln_runtime *rt, kiln_arena_record *record, bool fresh) {
    if (fresh) {
        kiln_sys_free(record);
        return;
    }
    pthread_mutex_lock(&rt->registry_lock);
    kiln_arena_record **list = record->arena.is_frame ? &rt->spare_frame_arenas : &rt->dead_arenas;
    record->prev = NULL;
    record->next = *list;
    *list = record;
    pthread_mutex_unlock(&rt->registry_lock);
}

/* A new arena (see kiln_runtime_arena_new), on the registry when listed; a job arena
 * (unlisted) takes a record of its own, which stays with its context's memory. */
static kiln_arena *arena_new(kiln_runtime *rt, const char *name, kiln_ctx *frame_owner, bool listed) {
    bool is_frame = frame_owner != NULL;
    kiln_arena_config config = {
        .pool = &rt->blocks,
        .name = name,
        .budget = is_frame ? rt->desc.frame_budget : 0,
        .warn_percent = rt->desc.warn_percent,
        .refuse_over_budget = rt->desc.frame_budget_policy == KILN_BUDGET_REFUSE,
        .fallback = is_frame && rt->desc.frame_fallback,
        .frame_clock = &rt->frame,
        .is_frame = is_frame,
        .log = rt->log,
        .debug = rt->desc.debug,
        .audit_sample = rt->desc.audit_sample,
        .account = is_frame ? &rt->frame_account : &rt->untagged_account,
    };
    bool reused = false;
    kiln_arena_record *record = listed ? record_take(rt, name, is_frame, &reused)
                                       : kiln_sys_aligned(KILN_CACHE_LINE, sizeof *record);
    if (!record) {
        if (!listed)
            kiln_log(&rt->log, KILN_LOGITEM_ARENA_OUT_OF_MEMORY,
                     "arena '%s': no heap memory for its record", name);
        return NULL;
    }
    if (!kiln_arena_init(&record->arena, &config)) {   /* the pool logged why, once per episode */
        /* A context's own frame arena: the attach fails, which the pool's message (said
         * once while the limit stays reached, perhaps long ago) does not say. */
        if (listed && is_frame)
            kiln_log(&rt->log, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY,
                     "a new context (a worker's at kiln_create, or kiln_attach's): the block "
                     "pool refused its frame arena's first block (memory_limit %zu bytes, or "
                     "no memory from the OS); the context is not made", rt->desc.memory_limit);
        record->arena.is_frame = is_frame;
        record_keep(rt, record, !reused);
        return NULL;
    }
    /* desc.frame_reserve: taken and touched before the context's first frame (logged on
     * refusal: ARENA_RESERVE_FAILED); the context is then not made, and that is said too,
     * since the arena's own message speaks of an arena that lives on. */
    if (is_frame && rt->desc.frame_reserve != 0 &&
        !kiln_arena_reserve_bytes(&record->arena, rt->desc.frame_reserve)) {
        kiln_log(&rt->log, KILN_LOGITEM_CONTEXT_OUT_OF_MEMORY,
                 "a new context (a worker's at kiln_create, or kiln_attach's): desc.frame_reserve "
                 "of %zu bytes could not be taken for its frame arena; the context is not made "
                 "and the blocks taken go back", rt->desc.frame_reserve);
        kiln_arena_fini(&record->arena);
        record_keep(rt, record, !reused);
        return NULL;
    }
    record->rt = rt;
    record->frame_owner = frame_owner;
    record->is_job = !listed;
    record->prev = record->next = NULL;
    if (!listed) return &record->arena;
    pthread_mutex_lock(&rt->registry_lock);
    record->next = rt->arenas;
    if (rt->arenas) rt->arenas->prev = record;
    rt->arenas = record;
    rt->arena_count++;
    pthread_mutex_unlock(&rt->registry_lock);
    return &record->arena;
}

kiln_arena *kiln_runtime_arena_new(kiln_runtime *rt, const char *name, kiln_ctx *frame_owner) {
    return arena_new(rt, name, frame_owner, true);
}

kiln_arena *kiln_job_arena_new(kiln_ctx *ctx, unsigned parity) {
    char name[48];
    snprintf(name, sizeof name, "frame%s ctx %u jobs %s", ctx->is_worker ? " worker" : "",
             kiln_load_relaxed(&ctx->id), parity ? "odd" : "even");
    kiln_arena *arena = arena_new(ctx->rt, name, ctx, false);   /* logged on refusal */
    /* release: the driver's frame end reads the arena it resets through this pointer. */
    if (arena) kiln_store_release(&ctx->job_arenas[parity], arena);
    return arena;
}

void kiln_job_arena_free(kiln_ctx *ctx, unsigned parity) {
    kiln_arena *arena = kiln_load_relaxed(&ctx->job_arenas[parity]);
    if (!arena) return;
    kiln_store_relaxed(&ctx->job_arenas[parity], NULL);
    kiln_arena_fini(arena);
    kiln_sys_free(kiln_arena_record_of(arena));
}

/* Under registry_lock: takes arena off the registry and marks it destroyed. */
static void unregister_locked(kiln_runtime *rt, kiln_arena_record *record) {
    if (record->prev) record->prev->next = record->next;
    else rt->arenas = record->next;
    if (record->next) record->next->prev = record->prev;
    rt->arena_count--;
    kiln_store_relaxed(&record->arena.destroyed, true);
}

/* Off the registry (done): gives back the arena's memory and keeps its record. */
static void arena_bury(kiln_runtime *rt, kiln_arena_record *record) {
    kiln_arena_fini(&record->arena);
    record_keep(rt, record, false);
}

void kiln_runtime_arena_delete(kiln_runtime *rt, kiln_arena *arena) {
    kiln_arena_record *record = kiln_arena_record_of(arena);
    pthread_mutex_lock(&rt->registry_lock);
    unregister_locked(rt, record);
    pthread_mutex_unlock(&rt->registry_lock);
    arena_bury(rt, record);
}

void *kiln_refuse_null_arena(const char *function) {
    kiln_log_misuse(NULL, KILN_LOGITEM_ARENA_NULL, "%s: arena is NULL", function);
    return NULL;
}

kiln_arena *kiln_arena_create(kiln_runtime *rt, const char *name) {
    if (!kiln_runtime_check(rt, "kiln_arena_create")) return NULL;
    if (!kiln_outside_log_callback(&rt->log, "kiln_arena_create")) return NULL;
    return kiln_runtime_arena_new(rt, name, NULL);
}

void kiln_arena_destroy(kiln_arena *arena) {
    if (!arena) return;
    kiln_arena_record *record = kiln_arena_record_of(arena);
    kiln_runtime *rt = record->rt;
    if (!kiln_outside_log_callback(&rt->log, "kiln_arena_destroy")) return;
    /* The check and the unregistering under one lock: of two destroys racing on one
     * arena, exactly one goes ahead. */
    pthread_mutex_lock(&rt->registry_lock);
    bool destroyed = kiln_load_relaxed(&arena->destroyed);
    bool refused = destroyed || arena->is_frame;
    if (!refused) unregister_locked(rt, record);
    pthread_mutex_unlock(&rt->registry_lock);
    if (destroyed) {
        kiln_arena_refuse_destroyed(arena, "kiln_arena_destroy");
    } else if (refused) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_ARENA_IS_FRAME_ARENA,
                        "kiln_arena_destroy: arena '%s' is a context's frame arena; it goes "
                        "with kiln_detach", arena->name);
    } else {
        arena_bury(rt, record);
    }
}

/* Whether kiln_arena_reset may reset the frame arena of owner now; logs why not. Never
 * under a job: a worker's is frame end's to reset, the driver's too while its frame is
 * open (the frame's jobs that ran on it may still use their memory), and no thread's
 * from inside a job running on it (the job's callers hold memory in it). Read on the
 * owner's thread, the only one that may reset it (job_depth and frame_open are that
 * thread's). */
static bool frame_reset_allowed(const kiln_arena *arena, const kiln_ctx *owner) {
    kiln_log_item item = KILN_LOGITEM_NONE;
    const char *why = NULL;
    if (owner->is_worker) {
        item = KILN_LOGITEM_ARENA_WORKER_FRAME_RESET;
        why = "is a worker's, which kiln_frame_end resets (other jobs of the frame may be "
              "using its memory)";
    } else if (owner->queue.job_depth > 0) {
        item = KILN_LOGITEM_ARENA_RESET_INSIDE_JOB;
        why = "belongs to a thread that is running a job (the jobs below it may be using its "
              "memory); reset it between jobs";
    } else if (kiln_load_relaxed(&owner->rt->driver) == owner && kiln_load_relaxed(&owner->rt->frame_open)) {
        item = KILN_LOGITEM_ARENA_DRIVER_FRAME_RESET;
        why = "is the frame driver's and its frame is open: kiln_frame_end resets it";
    }
    if (kiln_likely(item == KILN_LOGITEM_NONE)) return true;
    kiln_log_misuse(&arena->log, item, "kiln_arena_reset: arena '%s' of context %u %s; ignored",
                    arena->name, owner->id, why);
    return false;
}

void *kiln_arena_alloc(kiln_arena *arena, size_t size, size_t align) {
    if (kiln_unlikely(!arena)) return kiln_refuse_null_arena("kiln_arena_alloc");
    return kiln_arena_bump(arena, size, align);
}

void *kiln_arena_alloc_at(kiln_arena *arena, size_t size, size_t align, const char *file,
                          int line) {
    if (kiln_unlikely(!arena)) return kiln_refuse_null_arena("kiln_arena_alloc_at");
    return kiln_arena_alloc_site(arena, size, align, (kiln_debug_site){ file, line });
}

kiln_mark kiln_arena_mark(kiln_arena *arena) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_mark");
        return (kiln_mark){ { 0, 0 } };
    }
    return kiln_arena_take_mark(arena);
}

void kiln_arena_release(kiln_arena *arena, kiln_mark mark) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_release");
        return;
    }
    kiln_arena_release_to(arena, mark);
}

void kiln_arena_reset(kiln_arena *arena) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_reset");
        return;
    }
    if (!kiln_arena_live(arena, "kiln_arena_reset")) return;
    kiln_ctx *owner = kiln_arena_record_of(arena)->frame_owner;
    if (owner && !frame_reset_allowed(arena, owner)) return;
    if (kiln_unlikely(arena->debug)) kiln_arena_debug_reset(arena);   /* who owns it now */
    /* A thread that resets its own frame arena keeps a clock of its own: the reset is
     * its frame boundary, a quiescent point for handle reuse. */
    if (owner && kiln_load_relaxed(&owner->rt->driver) != owner) kiln_handles_quiescent(owner);
    kiln_arena_reset_all(arena);
}

void kiln_arena_set_tag(kiln_arena *arena, kiln_tag tag) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_set_tag");
        return;
    }
    if (!kiln_arena_live(arena, "kiln_arena_set_tag")) return;
    kiln_arena_record *record = kiln_arena_record_of(arena);
    if (arena->is_frame) {
        kiln_log_misuse(&arena->log, KILN_LOGITEM_ARENA_FRAME_TAG,
                        "kiln_arena_set_tag: arena '%s' is a frame arena: frame memory is its "
                        "own line, never tagged; refused", arena->name);
        return;
    }
    bool ok;
    kiln_tag_account *account = kiln_tag_lookup(record->rt, tag, "kiln_arena_set_tag", &ok);
    if (ok) kiln_arena_retag(arena, kiln_tag_or_untagged(record->rt, account));   /* a refusal is the tag's to log */
}

kiln_tag kiln_arena_tag(const kiln_arena *arena) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_tag");
        return (kiln_tag){ 0 };
    }
    if (!kiln_arena_live(arena, "kiln_arena_tag")) return (kiln_tag){ 0 };
    kiln_tag_account *account = kiln_load_relaxed(&((kiln_arena *)arena)->account);
    return (kiln_tag){ account ? account->id : 0 };
}

/* The figures that add up across arenas, of more into out. */
static void stats_add(kiln_arena_stats *out, const kiln_arena_stats *more) {
    out->bytes_in_use += more->bytes_in_use;
    out->peak_last_frame += more->peak_last_frame;
    out->allocs += more->allocs;
    out->failures += more->failures;
    out->budget_warnings += more->budget_warnings;
    out->large_allocs += more->large_allocs;
    out->blocks_held += more->blocks_held;
    out->blocks_taken += more->blocks_taken;
    out->guard_errors += more->guard_errors;
    out->wrong_thread += more->wrong_thread;
    out->reserved_blocks += more->reserved_blocks;
    out->budget_refusals += more->budget_refusals;
    out->fallback_allocs += more->fallback_allocs;
    out->fallback_bytes += more->fallback_bytes;
}

bool kiln_runtime_arena_stats(const kiln_arena *arena, kiln_arena_stats *out) {
    if (!kiln_arena_stats_read(arena, out)) return false;
    const kiln_arena_record *record = kiln_arena_record_of(arena);
    kiln_ctx *owner = record->frame_owner;   /* both read-only while the record is listed */
    if (!owner || record->is_job) return true;
    /* A context's frame arena stands for all its frame memory: its job arenas too. */
    for (int p = 0; p < 2; p++) {
        kiln_arena *job_arena = kiln_load_acquire(&owner->job_arenas[p]);
        kiln_arena_stats jobs;
        if (job_arena && kiln_arena_stats_read(job_arena, &jobs)) stats_add(out, &jobs);
    }
    return true;
}

bool kiln_arena_stats_get(const kiln_arena *arena, kiln_arena_stats *out) {
    if (!kiln_stats_args_ok(arena ? &arena->log : NULL, arena, KILN_LOGITEM_ARENA_NULL, "the arena", out, sizeof *out, "kiln_arena_stats_get"))
        return false;
    return kiln_runtime_arena_stats(arena, out);   /* false, logged, for a destroyed arena */
}

bool kiln_arena_reserve(kiln_arena *arena, size_t bytes) {
    if (!arena) {
        kiln_refuse_null_arena("kiln_arena_reserve");
        return false;
    }
    return kiln_arena_reserve_bytes(arena, bytes);
}

kiln_arena *kiln_frame_arena(kiln_ctx *ctx) {
    if (!kiln_ctx_check(ctx, "kiln_frame_arena")) return NULL;
    return ctx->frame_now;
}

/* Whether ctx may take frame memory now: an attached context, not running a background
 * job under KILN_DEBUG_CHECKS. The fast path: a load and a compare of the magic. */
static inline bool frame_alloc_ok(const kiln_ctx *ctx) {
    /* The magic first: a detached context, or a pointer that is no context, is never
     * read further (relaxed: the context is this thread's, or it is misuse anyway). An
     * attached context always has its frame arena. */
    if (kiln_unlikely(!ctx || kiln_ctx_word(ctx) != KILN_CTX_MAGIC)) return false;
    if (kiln_unlikely(!ctx->frame_now)) return false;   /* a job arena could not be made */
    return !(kiln_unlikely(ctx->debug_checks) && (kiln_load_relaxed(&ctx->queue.running_flags) & KILN_TASK_BACKGROUND));
}

/* Logs why frame_alloc_ok said no; NULL, so that callers reach it by a tail call. */
static KILN_COLD void *refuse_frame_alloc(const kiln_ctx *ctx, const char *function) {
    /* NULL, detached, not a context: the context check says which, in its own words. */
    if (!kiln_ctx_check(ctx, function)) return NULL;
    if (!ctx->frame_now) {
        /* Once until a job arena is made again: every allocation of such a job fails. */
        if (((kiln_ctx *)ctx)->frame_none_logged) return NULL;
        ((kiln_ctx *)ctx)->frame_none_logged = true;
        kiln_log(&ctx->rt->log, KILN_LOGITEM_JOB_FRAME_MEMORY_NONE,
                 "%s: context %u runs a job of a frame whose frame memory could not be made "
                 "(memory limit or heap; logged when it was refused); refused, and not logged again "
                 "until one is made", function, ctx->id);
        return NULL;
    }
    kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC,
                    "%s: a background job on context %u asked for frame memory, which frame "
                    "end may reset under it; refused", function, ctx->id);
    return NULL;
}

void *kiln_frame_alloc(kiln_ctx *ctx, size_t size, size_t align) {
    if (kiln_unlikely(!frame_alloc_ok(ctx))) return refuse_frame_alloc(ctx, "kiln_frame_alloc");
    return kiln_arena_bump(ctx->frame_now, size, align);
}

void *kiln_frame_alloc_at(kiln_ctx *ctx, size_t size, size_t align, const char *file, int line) {
    if (kiln_unlikely(!frame_alloc_ok(ctx))) return refuse_frame_alloc(ctx, "kiln_frame_alloc_at");
    return kiln_arena_alloc_site(ctx->frame_now, size, align, (kiln_debug_site){ file, line });
}

/* A stamped allocation whose container was made before the frame arena's last reset. */
static KILN_COLD void *refuse_stale_frame_memory(const kiln_ctx *ctx, uint64_t stamp, uint64_t now) {
    kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_FRAME_MEMORY_STALE,
                    "kiln_frame_alloc_stamped: context %u: a frame container made %llu frame "
                    "resets ago grows in frame %llu; its memory was reset, so growing would copy "
                    "reset memory; refused", ctx->id, (unsigned long long)(now - stamp),
                    (unsigned long long)kiln_load_relaxed(&ctx->rt->frame));   /* a figure */
    return NULL;
}

void *kiln_frame_alloc_stamped(kiln_ctx *ctx, size_t size, size_t align, uint64_t *stamp) {
    if (kiln_unlikely(!frame_alloc_ok(ctx))) return refuse_frame_alloc(ctx, "kiln_frame_alloc_stamped");
    kiln_arena *arena = ctx->frame_now;
    if (stamp) {
        /* relaxed: the reset count is this thread's own (the frame arena's owner). */
        uint64_t now = kiln_load_relaxed(&arena->resets) + 1;
        if (*stamp == 0) *stamp = now;
        else if (kiln_unlikely(ctx->debug_checks && *stamp != now))
            return refuse_stale_frame_memory(ctx, *stamp, now);
    }
    return kiln_arena_bump(arena, size, align);
}

kiln_arena *kiln_frame_arena_for(kiln_ctx *ctx, const char *function) {
    if (kiln_unlikely(!frame_alloc_ok(ctx))) return refuse_frame_alloc(ctx, function);
    return ctx->frame_now;
}
