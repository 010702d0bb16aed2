/* runtime/runtime.c — kiln_create and kiln_destroy: the desc and its defaults, the
 * block pool, and the teardown report. */
#define _DEFAULT_SOURCE   /* PTHREAD_MUTEX_RECURSIVE */
#include "arenas.h"
#include "check.h"
#include "tags.h"
#include "context.h"
#include "crash.h"
#include "handle_reclaim.h"
#include "handles.h"
#include "heap.h"
#include "malloc.h"
#include "thread_ctx.h"
#include "pools.h"
#include "stats_print.h"
#include "trace.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "../base/sys_alloc.h"
#include "../base/near_limit.h"

/* Every worker holds a job queue slot, and an attached thread needs one too. */
_Static_assert(KILN_MAX_WORKERS == KILN_MAX_QUEUES - 1, "one queue slot left for an attached thread");

/* A zero field means the default: one macro, one place. */
#define KILN_DEFAULT(value, fallback) ((value) ? (value) : (fallback))

static kiln_desc desc_with_defaults(const kiln_desc *desc) {
    kiln_desc d = desc ? *desc : (kiln_desc){ 0 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t spare_cpus = cpus > 1 ? (uint32_t)(cpus - 1) : 0;
    if (spare_cpus > KILN_MAX_WORKERS) spare_cpus = KILN_MAX_WORKERS;   /* a default never fails */
    d.worker_count = d.worker_count == KILN_NO_WORKERS ? 0 : KILN_DEFAULT(d.worker_count, spare_cpus);
    d.block_size = KILN_DEFAULT(d.block_size, (size_t)64 << 10);
    d.reserve_size = KILN_DEFAULT(d.reserve_size, 64 * d.block_size);
    d.log = KILN_DEFAULT(d.log, kiln_log_stderr);
    d.audit_sample = KILN_DEFAULT(d.audit_sample, 64);
    d.warn_percent = KILN_DEFAULT(d.warn_percent, KILN_WARN_PERCENT_DEFAULT);
    d.idle_spin_us = KILN_DEFAULT(d.idle_spin_us, KILN_IDLE_SPIN_US_DEFAULT);
    d.log_level = KILN_DEFAULT(d.log_level, KILN_LOG_THRESHOLD_INFO);
    d.stuck_wait_ms = KILN_DEFAULT(d.stuck_wait_ms, KILN_STUCK_WAIT_MS_DEFAULT);
    return d;
}

/* The scheduler's background hook: jobs/ knows contexts only as opaque owners. */
static void background_changed(void *owner, bool running) {
    kiln_handles_background(owner, running);
}

/* The desc fields the runtime itself checks (the block pool checks its own: block_size,
 * reserve_size, memory_limit): false, logged, for a refused desc; unknown debug bits
 * are dropped with a warning. */
static bool desc_check(kiln_desc *d, const kiln_log_sink *early) {
    if (d->worker_count > KILN_MAX_WORKERS) {
        kiln_log(early, KILN_LOGITEM_WORKER_COUNT_INVALID,
                 "kiln_create: worker_count %u is more than the %u workers the job system has "
                 "queues for (KILN_MAX_WORKERS; KILN_NO_WORKERS for none)",
                 d->worker_count, (unsigned)KILN_MAX_WORKERS);
        return false;
    }
    if (d->frame_reserve > ((size_t)1 << KILN_ADDRESS_BITS) ||
        (d->memory_limit != 0 && d->frame_reserve > d->memory_limit)) {
        kiln_log(early, KILN_LOGITEM_FRAME_RESERVE_INVALID,
                 "kiln_create: frame_reserve %zu is more than %s (%zu bytes)", d->frame_reserve,
                 d->memory_limit != 0 ? "memory_limit" : "the user address space",
                 d->memory_limit != 0 ? d->memory_limit : (size_t)1 << KILN_ADDRESS_BITS);
        return false;
    }
    /* Every worker and one attached thread each reserve it, in whole blocks (one more for
     * a block's header): a limit that cannot hold that would refuse every context. */
    size_t contexts = (size_t)d->worker_count + 1;
    size_t per_context = d->block_size ? (d->frame_reserve / d->block_size + 1) * d->block_size : 0;
    bool block_size_ok = d->block_size >= 4096 && (d->block_size & (d->block_size - 1)) == 0;
    if (d->frame_reserve != 0 && d->memory_limit != 0 && block_size_ok &&   /* else the block pool refuses it */
        per_context > d->memory_limit / contexts) {
        kiln_log(early, KILN_LOGITEM_FRAME_RESERVE_INVALID,
                 "kiln_create: frame_reserve %zu for each of %zu contexts (the workers and one "
                 "attached thread) takes about %zu bytes of blocks each, more than memory_limit "
                 "%zu leaves them", d->frame_reserve, contexts, per_context, d->memory_limit);
        return false;
    }
    if (d->frame_budget_policy != KILN_BUDGET_WARN && d->frame_budget_policy != KILN_BUDGET_REFUSE) {
        kiln_log(early, KILN_LOGITEM_FRAME_BUDGET_POLICY_INVALID,
                 "kiln_create: frame_budget_policy %d is not KILN_BUDGET_WARN (0) or "
                 "KILN_BUDGET_REFUSE (1)", (int)d->frame_budget_policy);
        return false;
    }
    if (d->warn_percent > 100) {
        kiln_log(early, KILN_LOGITEM_WARN_PERCENT_INVALID,
                 "kiln_create: warn_percent %u is over 100 (a share of a limit, 1-100; 0: %u)",
                 d->warn_percent, KILN_WARN_PERCENT_DEFAULT);
        return false;
    }
    if (d->idle_spin_us > KILN_MAX_IDLE_SPIN_US) {
        kiln_log(early, KILN_LOGITEM_IDLE_SPIN_INVALID,
                 "kiln_create: idle_spin_us %u is more than KILN_MAX_IDLE_SPIN_US (%u us; 0: %u)",
                 d->idle_spin_us, (unsigned)KILN_MAX_IDLE_SPIN_US, (unsigned)KILN_IDLE_SPIN_US_DEFAULT);
        return false;
    }
    if (d->log_mode != KILN_LOG_SYNC && d->log_mode != KILN_LOG_ASYNC) {
        kiln_log(early, KILN_LOGITEM_LOG_MODE_INVALID,
                 "kiln_create: log_mode %d is not KILN_LOG_SYNC (0) or KILN_LOG_ASYNC (1)",
                 (int)d->log_mode);
        return false;
    }
    if ((uint32_t)d->log_level > KILN_LOG_THRESHOLD_OFF) {
        kiln_log(early, KILN_LOGITEM_LOG_LEVEL_INVALID,
                 "kiln_create: log_level %u is no kiln_log_threshold (0 to %u)",
                 (unsigned)d->log_level, (unsigned)KILN_LOG_THRESHOLD_OFF);
        return false;
    }
    uint32_t unknown = d->debug & ~(uint32_t)KILN_DEBUG_ALL;
    if (unknown) {
        kiln_log(early, KILN_LOGITEM_DEBUG_UNKNOWN_BITS,
                 "kiln_create: debug bits 0x%x are not KILN_DEBUG_* bits; ignored", unknown);
        d->debug &= (uint32_t)KILN_DEBUG_ALL;
    }
    return true;
}

/* The scheduler's switch of a context's frame memory, on its own thread, when a frame
 * job of another epoch starts or returns (jobs/scheduler.h): the job arena of the
 * epoch's parity, made at its first use, or the thread's own. The inline bump follows,
 * unless KILN_DEBUG_CHECKS keeps it closed. A job arena that cannot be made (memory
 * limit, heap) leaves the job without frame memory: its frame allocations are refused
 * (JOB_FRAME_MEMORY_NONE), never served from memory another frame end resets. */
static void switch_frame_memory(void *owner, uint32_t epoch) {
    kiln_ctx *ctx = owner;
    kiln_arena *arena = ctx->frame_arena;
    if (epoch != KILN_FRAME_MEMORY_OWN) {
        arena = kiln_load_relaxed(&ctx->job_arenas[epoch & 1]);   /* this thread's store */
        if (kiln_unlikely(!arena)) {
            arena = kiln_job_arena_new(ctx, epoch & 1);
            if (arena) ctx->frame_none_logged = false;
        }
    }
    ctx->frame_now = arena;
    if (!ctx->debug_checks && kiln_ctx_word(ctx) == KILN_CTX_MAGIC)
        ctx->frame_head = arena ? (kiln_arena_head *)(void *)arena
                                : (kiln_arena_head *)&kiln_arena_closed_head;
}

/* The bytes of a runtime's record (zeroed, mapped: mostly idle pages). */
static size_t runtime_bytes(void) { return kiln_align_up(sizeof(kiln_runtime), KILN_CACHE_LINE); }

kiln_runtime *kiln_create(const kiln_desc *desc) {
    if (!kiln_outside_log_callback(NULL, "kiln_create")) return NULL;
    kiln_desc given = desc ? *desc : (kiln_desc){ 0 };
    /* No layer changes a callback: the early sink is the runtime's. */
    kiln_log_sink early = { given.log, given.log_user, NULL, given.error_hook,
                            given.error_hook_user, given.log_item, NULL };
    kiln_option_sources sources;
    if (!kiln_options_apply(&given, &sources, &early)) return NULL;   /* logged; nothing made */
    kiln_desc d = desc_with_defaults(&given);
    if (!desc_check(&d, &early)) return NULL;
    size_t size = runtime_bytes();
    kiln_runtime *rt = kiln_sys_zeroed(KILN_CACHE_LINE, size);
    if (!rt) {
        kiln_log(&early, KILN_LOGITEM_RUNTIME_OUT_OF_MEMORY,
                 "kiln_create: no memory for the runtime (%zu bytes)", size);
        return NULL;
    }
    rt->desc = d;
    rt->option_sources = sources;
    kiln_options_bind_paths(&rt->desc, &rt->option_sources);
    if (!kiln_log_state_init(&rt->log_state, &rt->desc, &early)) {   /* logged */
        kiln_sys_zeroed_free(rt, runtime_bytes());
        return NULL;
    }
    rt->log_fold.frame = &rt->frame;
    rt->log_state.recent = &rt->log_recent;
    if (!d.log_every_repeat) rt->log_state.fold = &rt->log_fold;
    /* With a log file and no callback, the file takes the stderr default's place. */
    kiln_log_fn fn = d.log == kiln_log_stderr && rt->log_state.file_fd >= 0 ? NULL : d.log;
    rt->log = (kiln_log_sink){ fn, d.log_user, &rt->api_errors, d.error_hook, d.error_hook_user,
                               d.log_item, &rt->log_state };
    if (d.log_mode == KILN_LOG_ASYNC && !kiln_log_state_start_async(&rt->log_state, &rt->log)) {
        kiln_log(&early, KILN_LOGITEM_LOG_START_FAILED,
                 "kiln_create: no memory or thread for the async log's ring (log_mode=async)");
        kiln_log_state_fini(&rt->log_state);
        kiln_sys_zeroed_free(rt, runtime_bytes());
        return NULL;
    }
    kiln_block_pool_config pool_config = {
        .block_size = d.block_size,
        .reserve_bytes = d.reserve_size,
        .memory_limit = d.memory_limit,
        .warn_percent = d.warn_percent,
        .log = rt->log,
    };
    if (!kiln_block_pool_init(&rt->blocks, &pool_config)) {   /* logged */
        kiln_log_state_fini(&rt->log_state);
        kiln_sys_zeroed_free(rt, runtime_bytes());
        return NULL;
    }
    if ((d.debug & KILN_DEBUG_SITES) && !kiln_site_registry_init(&rt->sites)) {
        kiln_log(&rt->log, KILN_LOGITEM_SITES_OUT_OF_MEMORY,
                 "kiln_create: no heap memory for the site counts of KILN_DEBUG_SITES");
        kiln_block_pool_fini(&rt->blocks);
        kiln_log_state_fini(&rt->log_state);
        kiln_sys_zeroed_free(rt, runtime_bytes());
        return NULL;
    }
    if (d.debug & KILN_DEBUG_SITES) rt->blocks.sites = &rt->sites;
    if ((d.debug & KILN_DEBUG_GUARD_PAGES) &&
        kiln_debug_block_usable(d.debug, d.block_size) == d.block_size) {
        /* The free list's link word would lie in the guard page (alloc/debug.h). */
        kiln_log(&rt->log, KILN_LOGITEM_DEBUG_GUARD_PAGES_OFF,
                 "kiln_create: blocks of %zu bytes are one page; guard pages need two or more, "
                 "so KILN_DEBUG_GUARD_PAGES is off", d.block_size);
        rt->desc.debug &= ~(uint32_t)KILN_DEBUG_GUARD_PAGES;
    }
    /* Recursive: kiln logs some messages while it holds the registry (a pool destroyed
     * with live objects, the frame-end audit, a refusal at create), and a log callback
     * may read the figures, which takes the registry again on the same thread. */
    kiln_runtime_registry_lock_init(rt);
    kiln_job_system_init(&rt->jobs, d.worker_count, d.idle_spin_us, rt->log);
    rt->jobs.stuck_wait_ns = (uint64_t)KILN_DEFAULT(d.stuck_wait_ms, KILN_STUCK_WAIT_MS_DEFAULT) * 1000000u;
    rt->jobs.on_background = background_changed;
    rt->jobs.frame_epoch = &rt->handle_epoch;
    rt->jobs.frame_memory = switch_frame_memory;
    kiln_trace_init(&rt->trace);
    rt->next_ctx_id = 1;
    kiln_store_relaxed(&rt->handle_epoch, 1);
    kiln_store_relaxed(&rt->handle_safe_epoch, 1);
    kiln_tags_init(rt);   /* before any allocator charges the untagged or frame account */
    /* Before the runtime is listed: a bare-pointer lookup (kiln_heap_usable_size) on
     * another thread walks the listed runtimes' heaps. */
    kiln_runtime_heap_init(rt);
    rt->magic = KILN_RUNTIME_MAGIC;
    kiln_runtime_register(rt);
    rt->heap.head.tag_salt = rt->tag_salt;   /* the heap's inline paths tell its tags by it */
    rt->crash_fd = -1;
    rt->pid = getpid();
    if (!kiln_crash_init(rt) || !kiln_workers_start(rt)) {   /* logged */
        kiln_destroy(rt);
        return NULL;
    }
    return rt;
}

void kiln_runtime_registry_lock_init(kiln_runtime *rt) {
    pthread_mutexattr_t recursive;
    pthread_mutexattr_init(&recursive);
    pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rt->registry_lock, &recursive);
    pthread_mutexattr_destroy(&recursive);
}

/* Whether rt is the program's process runtime and its heap has live allocations: memory
 * that malloc handed out to whoever called it (under libkiln-malloc.so, the C library's
 * stdio buffers and threads' TLS tables too), which a destroy would unmap under them.
 * Then it is kept, told once per destroy. */
static bool process_runtime_in_use(kiln_runtime *rt) {
    if (kiln_process_runtime_peek() != rt) return false;
    kiln_heap_stats heap;
    if (!kiln_stats_heap(rt, &heap) || heap.live_objects == 0) return false;
    kiln_log(&rt->log, KILN_LOGITEM_PROCESS_RUNTIME_IN_USE,
             "kiln_destroy: %" PRIu64 " allocations (%" PRIu64 " bytes) of the process runtime's "
             "heap are live, and malloc handed them out (the C library's own among them, under "
             "libkiln-malloc): the runtime is kept, serving on; destroy it once they are freed",
             heap.live_objects, heap.live_bytes);
    return true;
}

void kiln_destroy(kiln_runtime *rt) {
    if (!rt) return;
    if (!kiln_runtime_check(rt, "kiln_destroy")) return;
    if (!kiln_outside_log_callback(&rt->log, "kiln_destroy")) return;
    if (kiln_process_runtime_is_kilns(rt)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_PROCESS_RUNTIME_DESTROY,
                        "kiln_destroy: this is the process runtime kiln made for malloc; it "
                        "lives until the process ends; refused");
        return;
    }
    if (process_runtime_in_use(rt)) return;
    kiln_process_runtime_forget(rt);   /* a program's: malloc goes back to kiln's own */
    if (rt->desc.stats.at_exit) kiln_stats_log(rt);   /* before anything is torn down */
    uint64_t ran_before = kiln_load_relaxed(&rt->jobs.retire_runs);
    kiln_workers_stop(rt);
    kiln_log_fold_tell(&rt->log, true);   /* through the ring, in order */
    kiln_log_state_stop_async(&rt->log_state);   /* the rest of the teardown logs in sync */
    while (rt->contexts) {
        kiln_ctx *ctx = rt->contexts;
        if (!kiln_load_relaxed(&ctx->by_malloc))   /* malloc's own: the program never attached it */
            kiln_log(&rt->log, KILN_LOGITEM_CONTEXT_STILL_ATTACHED,
                     "kiln_destroy: context %u is still attached; detaching it", ctx->id);
        kiln_detach(ctx);
    }
    uint64_t ran = kiln_load_relaxed(&rt->jobs.retire_runs) - ran_before;
    if (ran)
        kiln_log(&rt->log, KILN_LOGITEM_JOBS_RAN_AT_DESTROY,
                 "kiln_destroy: %llu queued jobs ran before it could go (workers' and still "
                 "attached contexts' leftovers, background ones included), each on the thread "
                 "that held it", (unsigned long long)ran);
    kiln_jobs_free_waiting(&rt->jobs);   /* no thread runs jobs any more */
    kiln_runtime_pools_fini(rt);
    if (rt->heap_open) kiln_runtime_heap_fini(rt);   /* open unless create failed before it */
    kiln_runtime_handles_fini(rt);
    while (rt->arenas) {
        kiln_arena *arena = &rt->arenas->arena;
        kiln_arena_stats stats;
        kiln_arena_stats_read(arena, &stats);
        kiln_log(&rt->log, KILN_LOGITEM_ARENA_STILL_ALIVE,
                 "kiln_destroy: arena '%s' is still alive (%zu bytes in use); destroying it",
                 stats.name, stats.bytes_in_use);
        kiln_arena_report_leaks(arena);   /* KILN_DEBUG_SITES: what is in it, by site */
        kiln_runtime_arena_delete(rt, arena);
    }
    for (kiln_ctx *ctx = rt->detached; ctx; ctx = ctx->next)
        for (unsigned p = 0; p < 2; p++) kiln_job_arena_free(ctx, p);
    kiln_trace_fini(&rt->trace);   /* every context is detached: nobody records */
    kiln_block_pool_fini(&rt->blocks);   /* the last message it may log: blocks still out */
    kiln_log_fold_tell(&rt->log, true);   /* the repeats not told yet */
    /* No message from here on: a log callback may read the figures of any object until
     * then, so the records go last. */
    kiln_contexts_free(rt);
    kiln_job_system_fini(&rt->jobs);
    kiln_runtime_pools_free(rt);
    kiln_runtime_handles_free(rt);
    kiln_runtime_arenas_fini(rt);
    kiln_site_registry_fini(&rt->sites);   /* every allocator that fed it is gone */
    kiln_tags_fini(rt);                     /* and every one that charged a tag */
    pthread_mutex_destroy(&rt->registry_lock);
    kiln_runtime_unregister(rt);
    kiln_thread_ctx_runtime_gone();   /* threads check the contexts they remember */
    kiln_crash_fini(rt);
    kiln_log_state_fini(&rt->log_state);   /* no message after the block pool's */
    rt->magic = 0;
    kiln_sys_zeroed_free(rt, runtime_bytes());
}

uint64_t kiln_frame_number(const kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_frame_number")) return 0;
    return kiln_load_relaxed(&((kiln_runtime *)rt)->frame);
}

size_t kiln_trim(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_trim")) return 0;
    size_t unmapped = kiln_heap_trim(&rt->heap);   /* its free blocks and kept mappings first */
    return unmapped + kiln_block_pool_trim(&rt->blocks);
}

size_t kiln_trim_step(kiln_runtime *rt, size_t max_blocks) {
    if (!kiln_runtime_check(rt, "kiln_trim_step")) return 0;
    if (max_blocks) kiln_heap_trim(&rt->heap);   /* one pass over the classes' depots */
    return kiln_block_pool_trim_step(&rt->blocks, max_blocks);
}
