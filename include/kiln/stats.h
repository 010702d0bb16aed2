/* kiln/stats.h — statistics of the block pool, the arenas and the runtime.
 *
 * Every figure is read with relaxed loads while other threads go on working: each
 * number is exact on its own, but two numbers read in one call may belong to
 * slightly different moments (sum them after the threads are quiet for exact
 * equations). All calls here may be made from any thread at any time.
 *
 * Each struct is made from an X-macro list of its fields, beside it (kiln/stats_fields.h
 * says how); the same lists make the columns and keys of kiln_stats_print and
 * kiln_stats_write_json. */
#ifndef KILN_STATS_H
#define KILN_STATS_H

#include <kiln/core.h>
#include <kiln/memory.h>
#include <kiln/pool.h>
#include <kiln/stats_fields.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The block pool's figures: X(type, name, doc) per field, in struct order. */
#define KILN_BLOCK_POOL_STATS_FIELDS(X)                                                        \
    X(size_t,   block_size,          "bytes per block")                                        \
    X(size_t,   memory_limit,        "0: none")                                                \
    X(size_t,   reserved_bytes,      "address space taken from the OS: reservations + large "  \
                                     "mappings")                                               \
    X(size_t,   peak_reserved_bytes, "most reserved_bytes at once")                            \
    X(uint64_t, blocks_reserved,     "blocks carved from reservations so far (never shrinks)") \
    X(uint64_t, blocks_in_use,       "handed out and not yet put back")                        \
    X(uint64_t, blocks_peak,         "most blocks in use at once")                             \
    X(uint64_t, blocks_free,         "blocks_reserved - blocks_in_use")                        \
    X(uint64_t, gets,                "successful block gets (counted by the free LIFO's pop "  \
                                     "tag, so it wraps at 2^40)")                              \
    X(uint64_t, failures,            "gets and large maps refused (memory_limit or OS)")       \
    X(uint64_t, os_maps,             "successful OS reservations (chunks and large mappings)") \
    X(uint64_t, large_mappings,      "dedicated mappings alive now")                           \
    X(uint64_t, trims,               "kiln_trim calls, and kiln_trim_step calls with "         \
                                     "max_blocks > 0")                                         \
    X(size_t,   trimmed_bytes,       "bytes given back to the OS by all trims")                \
    /* end of list */

typedef struct kiln_block_pool_stats {
    KILN_BLOCK_POOL_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_block_pool_stats;

/* One arena's figures after its name: X(type, name, doc) per field, in struct order. */
#define KILN_ARENA_STATS_FIELDS(X)                                                             \
    X(size_t,   bytes_in_use,    "bump bytes (with alignment padding) + large allocations")    \
    X(size_t,   peak_frame,      "most bytes in use since the last reset (the frame's "        \
                                 "high-water)")                                                \
    X(size_t,   peak_last_frame, "peak_frame of the frame closed by the last reset")           \
    X(size_t,   peak_total,      "most bytes in use ever")                                     \
    X(size_t,   budget,          "frame_budget for frame arenas; 0: none")                     \
    X(uint64_t, allocs,          "successful allocations")                                     \
    X(uint64_t, failures,        "allocations that returned NULL")                             \
    X(uint64_t, resets,          "kiln_arena_reset calls that took effect, plus one per "      \
                                 "frame end for a frame arena")                                \
    X(uint64_t, releases,        "kiln_arena_release calls that took effect")                  \
    X(uint64_t, budget_warnings, "frames that went over the budget")                           \
    X(uint64_t, large_allocs,    "allocations that needed a dedicated mapping")                \
    X(uint32_t, blocks_held,     "blocks in use plus blocks kept for reuse")                   \
    X(uint64_t, blocks_taken,    "blocks fetched from the global pool over the arena's life")  \
    X(uint64_t, guard_errors,    "KILN_DEBUG_GUARDS: damaged guards found "                    \
                                 "(ARENA_GUARD_DAMAGED)")                                      \
    X(uint64_t, wrong_thread,    "KILN_DEBUG_OWNERSHIP: calls from a thread not owning it")    \
    X(uint32_t, reserved_blocks, "blocks every reset keeps for kiln_arena_reserve and "        \
                                 "desc.frame_reserve")                                         \
    X(uint64_t, budget_refusals, "KILN_BUDGET_REFUSE: allocations refused at the budget "      \
                                 "(counted in failures too)")                                  \
    X(uint64_t, fallback_allocs, "desc.frame_fallback: allocations the system allocator "      \
                                 "served")                                                     \
    X(size_t,   fallback_bytes,  "bytes of those live now (freed at reset; not in "            \
                                 "bytes_in_use)")                                              \
    /* end of list */

typedef struct kiln_arena_stats {
    char name[48];   /* the arena's name, cut at 47 bytes (an array, so not in the list) */
    KILN_ARENA_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_arena_stats;

/* One pool's figures after its name: X(type, name, doc) per field, in struct order. */
#define KILN_POOL_STATS_FIELDS(X)                                                              \
    X(size_t,   object_size,     "bytes asked per object")                                     \
    X(size_t,   slot_size,       "bytes per object in the block: size rounded up to align "    \
                                 "(with KILN_DEBUG_GUARDS, its guards included)")              \
    X(size_t,   align,           "alignment of each object")                                   \
    X(size_t,   capacity,        "0: none")                                                    \
    X(uint32_t, magazine_size,   "objects per magazine")                                       \
    X(uint32_t, blocks_held,     "blocks carved into objects and magazines")                   \
    X(bool,     alive,           "false after kiln_pool_destroy")                              \
    X(uint64_t, live,            "allocs - frees")                                             \
    X(uint64_t, peak_live,       "most objects outside the depot at a magazine exchange: "     \
                                 "live plus cached, so at most two magazines per context "     \
                                 "above the true peak (an exact peak would need a shared "     \
                                 "counter per op)")                                            \
    X(uint64_t, allocs,          "successful allocations")                                     \
    X(uint64_t, frees,           "objects given back")                                         \
    X(uint64_t, failures,        "allocs that returned NULL (capacity or memory)")             \
    X(uint64_t, depot_exchanges, "magazines taken from or given to the depot, carving "        \
                                 "included")                                                   \
    X(uint64_t, carved,          "objects cut from blocks: live + cached + in_depot")          \
    X(uint64_t, in_depot,        "free objects in full magazines on the depot")                \
    X(uint64_t, cached,          "free objects idle in contexts' caches")                      \
    X(size_t,   cached_bytes,    "cached * slot_size")                                         \
    X(uint64_t, bad_frees,       "foreign or interior pointers, frees into a destroyed pool")  \
    X(uint64_t, double_frees,    "detected with KILN_POOL_CHECKED (or KILN_DEBUG_GUARDS / "    \
                                 "KILN_DEBUG_SITES)")                                          \
    X(uint64_t, guard_errors,    "KILN_DEBUG_GUARDS: damaged guards found "                    \
                                 "(POOL_GUARD_DAMAGED)")                                       \
    X(size_t,   reserve,         "desc.reserve: objects kiln_pool_trim keeps carved")          \
    X(uint32_t, magazine_blocks, "of blocks_held, the blocks that hold magazines (never "      \
                                 "trimmed)")                                                   \
    X(uint64_t, trims,           "kiln_pool_trim calls that took effect")                      \
    X(uint64_t, blocks_trimmed,  "blocks kiln_pool_trim returned to the block pool")           \
    /* end of list */

typedef struct kiln_pool_stats {
    char name[48];   /* the pool's name, cut at 47 bytes (an array, so not in the list) */
    KILN_POOL_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_pool_stats;

/* One context's figures: X(type, name, doc) per field, in struct order. */
#define KILN_CTX_STATS_FIELDS(X)                                                               \
    X(uint32_t, id,                    "1, 2, ... in creation order")                          \
    X(bool,     is_worker,             "a worker's context")                                   \
    X(uint64_t, jobs_submitted,        "frame jobs this context pushed (parallel_for pieces "  \
                                       "too)")                                                 \
    X(uint64_t, jobs_run,              "jobs this context ran, its own and stolen ones")       \
    X(uint64_t, jobs_stolen,           "jobs it took from another context")                    \
    X(uint64_t, steal_misses,          "searches that found no job anywhere")                  \
    X(uint64_t, sleep_ns,              "time asleep (workers, and waits with nothing to run)") \
    X(size_t,   frame_bytes_in_use,    "its frame arena's bytes_in_use")                       \
    X(size_t,   frame_peak_last_frame, "its frame arena's high-water in the last frame")       \
    X(uint64_t, sleeps,                "times it went to sleep after a spin (workers, waits; " \
                                       "a long idle period is one, however often it wakes)")   \
    X(uint64_t, idle_spin_ns,          "time spent looking for work in vain before finding "   \
                                       "some or sleeping (workers, waits; desc.idle_spin_us)") \
    X(uint64_t, waits_stuck,           "JOB_WAIT_STUCK warnings of its waits "                 \
                                       "(desc.stuck_wait_ms)")                                 \
    /* end of list */

typedef struct kiln_ctx_stats {
    KILN_CTX_STATS_FIELDS(KILN_STATS_MEMBER)
} kiln_ctx_stats;

/* The runtime-wide figures: X(type, name, doc) per field, in three lists because the
 * struct and the outputs order them differently. The struct: KILN_STATS_FIELDS,
 * KILN_STATS_ERROR_FIELDS, blocks, KILN_STATS_TAIL_FIELDS. kiln_stats_print and
 * kiln_stats_write_json: KILN_STATS_FIELDS, KILN_STATS_TAIL_FIELDS, KILN_STATS_ERROR_FIELDS
 * (errors last), then blocks as a section of its own. A new figure goes at the end of
 * KILN_STATS_TAIL_FIELDS. */
#define KILN_STATS_FIELDS(X)                                                                   \
    X(uint64_t, frame,        "current frame number")                                          \
    X(uint32_t, worker_count, "workers the runtime started")                                   \
    X(uint32_t, contexts,     "attached contexts, workers included")                           \
    X(uint32_t, arenas,       "live arenas, frame arenas included")                            \
    /* end of list */

#define KILN_STATS_ERROR_FIELDS(X)                                                             \
    X(uint64_t, api_errors, "calls refused for bad arguments or misuse")                       \
    /* end of list */

#define KILN_STATS_TAIL_FIELDS(X)                                                              \
    X(uint32_t, pools,         "live pools")                                                   \
    X(uint32_t, handle_tables, "live handle tables")                                           \
    X(uint64_t, jobs_run_at_detach, "jobs that detaching contexts and stopping workers ran "   \
                                    "as they went: their queued and pinned ones, background "  \
                                    "ones included")                                           \
    X(uint64_t, log_dropped,   "messages the async log's ring had no room for (KILN_LOG_ASYNC)") \
    /* end of list */

typedef struct kiln_stats {
    KILN_STATS_FIELDS(KILN_STATS_MEMBER)
    KILN_STATS_ERROR_FIELDS(KILN_STATS_MEMBER)
    kiln_block_pool_stats blocks;   /* the block pool's figures (a struct, its own section) */
    KILN_STATS_TAIL_FIELDS(KILN_STATS_MEMBER)
} kiln_stats;

/* Bad input to the stats calls: a NULL or dead runtime (RUNTIME_NULL, RUNTIME_INVALID, on
 * stderr), a NULL object (ARENA_NULL, POOL_NULL, HANDLES_NULL), a NULL out where one is
 * needed, or a NULL out with cap > 0 for a list call (STATS_NULL_OUT, through the
 * runtime's log): false or 0. A kiln_*_stats_get zeroes *out when there is one; a list
 * call copies nothing. */

/* Fills *out with the runtime-wide figures. false (and *out zeroed) for bad input. */
KILN_API bool kiln_stats_get(kiln_runtime *rt, kiln_stats *out);

/* Copies the figures of up to cap live arenas (contexts' frame arenas included, newest
 * first) into out, and returns how many arenas are live, which may exceed cap. out may
 * be NULL when cap is 0. */
KILN_API size_t kiln_stats_arenas(kiln_runtime *rt, kiln_arena_stats *out, size_t cap);

/* Copies the figures of up to cap attached contexts (workers included, newest first)
 * and returns how many there are, which may exceed cap. */
KILN_API size_t kiln_stats_contexts(kiln_runtime *rt, kiln_ctx_stats *out, size_t cap);

/* Copies the figures of up to cap live pools into out (in creation slot order) and
 * returns how many pools are live, which may exceed cap. */
KILN_API size_t kiln_stats_pools(kiln_runtime *rt, kiln_pool_stats *out, size_t cap);

/* The figures of one pool (a destroyed one too, until kiln_destroy). false for bad input. */
KILN_API bool kiln_pool_stats_get(kiln_pool *pool, kiln_pool_stats *out);

/* The figures of one arena. false (and *out zeroed) for bad input. */
KILN_API bool kiln_arena_stats_get(const kiln_arena *arena, kiln_arena_stats *out);

/* ---------- allocation sites (KILN_DEBUG_SITES) ---------- */

/* One allocation site's figures: every arena, pool and handle-table allocation made at
 * file:line (through the _at calls, or the plain names with KILN_TRACK_SITES). */
typedef struct kiln_site_stats {
    const char *file;     /* as the call gave it; NULL: allocations made without a site */
    int         line;
    uint64_t    allocs;   /* allocations made there since kiln_create */
    uint64_t    bytes;    /* bytes they asked for (pool objects: the object size; handle
                             items: the item size) */
    uint64_t    live;     /* of those, arena allocations not yet released or reset, pool
                             objects not yet freed, handle items not yet freed */
} kiln_site_stats;

/* Sites kiln_stats_print lists under KILN_DEBUG_SITES. */
#define KILN_SITES_PRINTED 20

/* Fills out with the allocation sites that made the most allocations, most first (ties:
 * most live first), at most cap of them, and returns how many it wrote. At any time, not
 * only at destroy.
 * - The sites are counted as allocations are made, across every arena (frame arenas
 *   included), pool and handle table of the runtime; destroyed ones keep their counts
 *   (objects a pool still held at kiln_pool_destroy stay live: leaked; a destroyed
 *   table's items are no longer live).
 * - A handle item allocated without a site (kiln_handle_alloc) counts as live at the site
 *   its slot last recorded, none for a slot never allocated at one (as the leak report
 *   groups it).
 * - A pool object gets its site right after its allocation (kiln_pool_alloc_at): a reading
 *   meanwhile counts it under no site (file NULL), at most one object per context.
 * - Up to 3072 distinct sites are counted; the allocations of sites beyond are left out
 *   (kiln_stats_print says how many).
 * Bad input, 0 written: a NULL or destroyed runtime (RUNTIME_NULL, RUNTIME_INVALID, on
 * stderr); out NULL with cap > 0 (STATS_NULL_OUT); a runtime made without
 * KILN_DEBUG_SITES (SITES_OFF, whatever cap is); all counted in api_errors but the first
 * two. cap 0 writes nothing and, the bit on, logs nothing (out may be NULL then).
 * Concurrency: any thread at any time, while others allocate and free (lock-free
 * reads, but the registry lock for the walk of the handle tables' live items): each
 * figure is exact on its own, but a reading may miss allocations and frees made while it
 * runs, or see one's allocs and not yet its live; a site first used meanwhile may be
 * missing, and the ranking is that of the moment each site was read. */
KILN_API size_t kiln_sites_top(kiln_runtime *rt, kiln_site_stats *out, size_t cap);

/* ---------- every figure at once, for people and for tools ---------- */

/* Prints every figure above as readable tables: the runtime, the block pool, every
 * arena, pool, handle table and context (jobs run, stolen, sleep, frame bytes), the
 * tracer, and under KILN_DEBUG_SITES the KILN_SITES_PRINTED sites with the most
 * allocations (kiln_sites_top: "== sites (top N) ==", a row per site: allocs, bytes, live,
 * site). Column names are the struct fields' names. Nothing for bad input
 * (logged). Concurrency: any thread at any time (see the top of this header). */
KILN_API void kiln_stats_print(kiln_runtime *rt, FILE *out);

/* Writes the same figures as one JSON object (and a newline):
 *   {"runtime":{kiln_stats's numbers}, "block_pool":{kiln_block_pool_stats},
 *    "arenas":[kiln_arena_stats...], "pools":[kiln_pool_stats...],
 *    "handles":[kiln_handles_stats...], "contexts":[kiln_ctx_stats...],
 *    "trace":{kiln_trace_stats}}
 * with each struct's field names as keys, numbers as JSON integers, bools as
 * true/false, names as strings. false for bad input, when memory runs out or when the
 * stream reports an error. Concurrency: any thread at any time. */
KILN_API bool kiln_stats_write_json(kiln_runtime *rt, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_STATS_H */
