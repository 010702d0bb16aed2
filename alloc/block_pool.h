/* alloc/block_pool.h — the global block pool: fixed-size blocks, aligned to their
 * size, carved from large OS reservations and recycled through a lock-free LIFO.
 * Everything else in kiln (arenas, pools, handle tables) takes its memory from here.
 *
 * Invariants:
 *   blocks_reserved == blocks_in_use + depth of the free LIFO + depth of the trimmed LIFO
 *                      + blocks held by a trim step
 *                      + uncarved (blocks of the newest reservation not pushed yet)
 * Free blocks lie on two LIFOs: free_blocks, whose pages are resident (put back after
 * use), and trimmed_blocks, whose pages a trim step gave back (only the page of the link
 * word is touched again). A get pops free_blocks first and trimmed_blocks only when that
 * is empty, so warm memory is reused first. Each free count is its LIFO's depth, kept in
 * its tag word by the same CAS that moves a block, so a get or put touches one shared
 * cache line (the LIFO's) and no counter.
 *   reserved_bytes  == blocks_reserved * block_size + bytes of live large mappings
 *   reserved_bytes  <= memory_limit (when a limit is set)
 * The owner of any pointer inside a block is found by masking: block = p & ~(size-1).
 * Reservations are never unmapped while the pool lives; kiln_block_pool_trim_step gives
 * free blocks' pages back with madvise, a bounded number of blocks at a time. */
#ifndef KILN_ALLOC_BLOCK_POOL_H
#define KILN_ALLOC_BLOCK_POOL_H

#include <kiln/stats.h>
#include <pthread.h>

#include "../base/log.h"
#include "address_map.h"
#include "lifo.h"
#include "os.h"

typedef struct kiln_reservation kiln_reservation;

typedef struct kiln_block_pool {
    /* Hot and shared: the free LIFO, alone on its cache line. */
    _Alignas(KILN_CACHE_LINE) kiln_lifo free_blocks;
    /* Free blocks whose pages were given back; popped only when free_blocks is empty. */
    _Alignas(KILN_CACHE_LINE) kiln_lifo trimmed_blocks;

    /* Shared counters, relaxed atomics (statistics and the limit check only). */
    _Alignas(KILN_CACHE_LINE) _Atomic uint64_t peak_in_use;  /* written only on a new peak */
    _Atomic uint64_t trim_held;           /* blocks between the LIFOs inside trim steps */
    _Atomic uint64_t trim_pops;           /* pops by trim steps: gets = both LIFOs' pops - these */
    _Atomic uint64_t failures;
    _Atomic uint64_t os_maps;
    _Atomic uint64_t large_mappings;
    _Atomic uint64_t trims;
    _Atomic size_t   trimmed_bytes;
    _Atomic size_t   reserved_bytes;      /* changed only under grow_lock */
    _Atomic size_t   peak_reserved_bytes;
    _Atomic uint64_t blocks_reserved;     /* changed only under grow_lock */
    _Atomic uint64_t uncarved;            /* changed only under grow_lock (see carve_next) */
    _Atomic int      limit_reported;      /* 1 after a refusal was logged, 0 after a success */
    _Atomic int      trims_running;       /* gets that find the LIFOs empty wait for trims */
    bool             near_limit;          /* in a MEMORY_LIMIT_NEAR episode; under grow_lock */

    /* Growth: serialised by grow_lock (an OS call is slow anyway). */
    pthread_mutex_t   grow_lock;
    kiln_reservation *reservations;       /* chunks to unmap at destroy; under grow_lock */
    /* The newest reservation's blocks not yet on the LIFO, [carve_next, carve_end): they
     * go onto it a batch at a time, so a large reservation costs address space, not a
     * page touched per block (the LIFO's link word) all at once; under grow_lock. */
    char             *carve_next, *carve_end;
    kiln_address_map  map;                /* which addresses are blocks; written under grow_lock */

    /* Read-only after init. */
    size_t        block_size;
    size_t        block_mask;             /* block_size - 1 */
    size_t        reserve_blocks;         /* blocks per OS reservation */
    size_t        memory_limit;           /* 0: none */
    uint32_t      warn_percent;           /* MEMORY_LIMIT_NEAR's share of memory_limit; 0: never */
    kiln_log_sink log;
    /* KILN_DEBUG_SITES: the site counts every allocator taking blocks from this pool
     * feeds (alloc/debug.h); set by the owner before any allocator exists, NULL
     * without the bit. */
    struct kiln_site_registry *sites;
} kiln_block_pool;

typedef struct kiln_block_pool_config {
    size_t        block_size;        /* power of two, >= page size */
    size_t        reserve_bytes;     /* per reservation; rounded up to whole blocks */
    size_t        memory_limit;      /* 0: none */
    uint32_t      warn_percent;      /* 1-100: MEMORY_LIMIT_NEAR at that share; 0: never */
    kiln_log_sink log;
} kiln_block_pool_config;

/* Sets the pool up; reserves nothing yet. false on a bad config (logged). */
KILN_INTERNAL bool kiln_block_pool_init(kiln_block_pool *pool, const kiln_block_pool_config *config);

/* Unmaps every reservation. No other thread may use the pool meanwhile; blocks still
 * in use are reported (one log line with the count). */
KILN_INTERNAL void kiln_block_pool_fini(kiln_block_pool *pool);

/* A free block (contents undefined: recycled memory is not cleared), or NULL when
 * memory_limit is reached or the OS refuses (counted; logged once until a get succeeds).
 * A new reservation that brings reserved_bytes to warn_percent of memory_limit starts a
 * MEMORY_LIMIT_NEAR episode (one warning; see base/near_limit.h).
 * Concurrency: any thread; lock-free unless the pool must grow. */
KILN_INTERNAL void *kiln_block_get(kiln_block_pool *pool);

/* Whether size bytes more stay within memory_limit (always, without one). Exact under
 * grow_lock, where every change to reserved_bytes is made; elsewhere a glance (relaxed).
 * Any thread. */
static inline bool kiln_block_pool_has_room(const kiln_block_pool *pool, size_t size) {
    if (pool->memory_limit == 0) return true;
    size_t reserved = kiln_load_relaxed(&pool->reserved_bytes);
    return reserved <= pool->memory_limit && size <= pool->memory_limit - reserved;
}

/* Returns a block. Concurrency: any thread; lock-free. */
KILN_INTERNAL void kiln_block_put(kiln_block_pool *pool, void *block);

/* A dedicated mapping of size bytes (rounded up to pages) aligned to align, counted
 * against memory_limit (and judged for MEMORY_LIMIT_NEAR as a reservation is). NULL on
 * refusal (counted, logged once; the OS's refusal only counted unless log_os: the heap's
 * allocations fail as malloc's do, quietly). Concurrency: any thread. */
KILN_INTERNAL void *kiln_block_pool_map_large(kiln_block_pool *pool, size_t size, size_t align, bool log_os);

/* The bytes a dedicated mapping of size bytes reserves: size rounded up to pages (the
 * block pool's own rule, and what a tag is charged for it). size must not be within a
 * page of SIZE_MAX. */
static inline size_t kiln_block_pool_large_bytes(size_t size) {
    return kiln_align_up(size, kiln_os_page_size());
}
KILN_INTERNAL void  kiln_block_pool_unmap_large(kiln_block_pool *pool, void *ptr, size_t size);

/* A dedicated mapping of old_size bytes resized to new_size (each rounded up to pages),
 * in place or moved with its pages: the new address, or NULL (ptr untouched) when growth
 * would pass memory_limit or the OS refuses (counted, logged once as a map is, log_os as
 * there). The result is page-aligned only. Concurrency: any thread (not on the same
 * mapping). */
KILN_INTERNAL void *kiln_block_pool_remap_large(kiln_block_pool *pool, void *ptr, size_t old_size,
                                                size_t new_size, bool log_os);

/* Gives the pages of at most max_blocks free blocks back to the OS (those on free_blocks
 * move to trimmed_blocks); returns how many free blocks still hold their pages after the
 * step (free_blocks' depth at its end). max_blocks 0 gives nothing back. The bytes given
 * back are added to trimmed_bytes; a step that gives any counts as one trim. Each block
 * is off both LIFOs only while its pages are given back, so a step holds no more than
 * one block at a time. Concurrency: any thread; a get that meets both LIFOs empty
 * meanwhile waits for the block in flight instead of growing the pool. */
KILN_INTERNAL size_t kiln_block_pool_trim_step(kiln_block_pool *pool, size_t max_blocks);

/* Trim steps until free_blocks is empty; returns the bytes given back. Concurrency: as
 * kiln_block_pool_trim_step (blocks put back meanwhile may be trimmed too). */
KILN_INTERNAL size_t kiln_block_pool_trim(kiln_block_pool *pool);

/* Concurrency: any thread (relaxed reads; see kiln/stats.h). */
KILN_INTERNAL void kiln_block_pool_stats_get(kiln_block_pool *pool, kiln_block_pool_stats *out);

/* Whether p lies in a block of this pool (its reservations), without reading *p.
 * Any thread, wait-free. */
static inline bool kiln_block_pool_owns(const kiln_block_pool *pool, const void *p) {
    return kiln_address_map_has(&pool->map, p);
}

/* The block that holds p (p must point into a block of this pool). */
static inline void *kiln_block_of(const kiln_block_pool *pool, const void *p) {
    return (void *)((uintptr_t)p & ~(uintptr_t)pool->block_mask);
}

#endif /* KILN_ALLOC_BLOCK_POOL_H */
