/* kiln/stats.h — statistics of the block pool, the arenas and the runtime.
 *
 * Every figure is read with relaxed loads while other threads go on working: each
 * number is exact on its own, but two numbers read in one call may belong to
 * slightly different moments (sum them after the threads are quiet for exact
 * equations). All calls here may be made from any thread at any time. */
#ifndef KILN_STATS_H
#define KILN_STATS_H

#include <kiln/core.h>
#include <kiln/memory.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_block_pool_stats {
    size_t   block_size;       /* bytes per block */
    size_t   memory_limit;     /* 0: none */
    size_t   reserved_bytes;   /* address space taken from the OS: reservations + large mappings */
    size_t   peak_reserved_bytes;
    uint64_t blocks_reserved;  /* blocks carved from reservations so far (never shrinks) */
    uint64_t blocks_in_use;    /* handed out and not yet put back */
    uint64_t blocks_peak;      /* most blocks in use at once */
    uint64_t blocks_free;      /* blocks_reserved - blocks_in_use */
    uint64_t gets;             /* successful block gets (counted by the free LIFO's pop tag,
                                  so it wraps at 2^40) */
    uint64_t failures;         /* gets and large maps refused (memory_limit or OS) */
    uint64_t os_maps;          /* successful OS reservations (chunks and large mappings) */
    uint64_t large_mappings;   /* dedicated mappings alive now */
    uint64_t trims;            /* kiln_trim calls */
    size_t   trimmed_bytes;    /* bytes given back to the OS by all trims */
} kiln_block_pool_stats;

typedef struct kiln_arena_stats {
    char     name[48];
    size_t   bytes_in_use;     /* bump bytes (with alignment padding) + large allocations */
    size_t   peak_frame;       /* most bytes in use since the last reset (the frame's high-water) */
    size_t   peak_last_frame;  /* peak_frame of the frame closed by the last reset */
    size_t   peak_total;       /* most bytes in use ever */
    size_t   budget;           /* frame_budget for frame arenas; 0: none */
    uint64_t allocs;           /* successful allocations */
    uint64_t failures;         /* allocations that returned NULL */
    uint64_t resets;
    uint64_t releases;         /* kiln_arena_release calls that took effect */
    uint64_t budget_warnings;  /* frames that went over the budget */
    uint64_t large_allocs;     /* allocations that needed a dedicated mapping */
    uint32_t blocks_held;      /* blocks in use plus blocks kept for reuse */
    uint64_t blocks_taken;     /* blocks fetched from the global pool over the arena's life */
} kiln_arena_stats;

typedef struct kiln_stats {
    uint64_t              frame;          /* current frame number */
    uint32_t              worker_count;
    uint32_t              contexts;       /* attached contexts, workers included */
    uint32_t              arenas;         /* live arenas, frame arenas included */
    uint64_t              api_errors;     /* calls refused for bad arguments or misuse */
    kiln_block_pool_stats blocks;
} kiln_stats;

/* Fills *out with the runtime-wide figures. false (and *out zeroed) for bad input. */
KILN_API bool kiln_stats_get(kiln_runtime *rt, kiln_stats *out);

/* Copies the figures of up to cap live arenas (contexts' frame arenas included, newest
 * first) into out, and returns how many arenas are live, which may exceed cap. out may
 * be NULL when cap is 0. */
KILN_API size_t kiln_stats_arenas(kiln_runtime *rt, kiln_arena_stats *out, size_t cap);

/* The figures of one arena. false (and *out zeroed) for bad input. */
KILN_API bool kiln_arena_stats_get(const kiln_arena *arena, kiln_arena_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_STATS_H */
