/* alloc/block_pool.c — the global block pool: the lock-free get/put fast path, growth
 * by OS reservation under a mutex, memory_limit, large mappings and trim. */
#include "block_pool.h"

#include <sched.h>
#include <string.h>

#include "../base/sys_alloc.h"
#include "../base/near_limit.h"
#include "os.h"

/* One OS reservation, kept so fini can unmap it. */
struct kiln_reservation {
    kiln_reservation *next;
    void             *base;
    size_t            size;
};

/* reserve bytes (0: 64 blocks) in whole blocks of bs, rounded up without overflow. */
static size_t reserve_blocks_of(size_t reserve, size_t bs) {
    if (reserve == 0) return 64;
    return reserve / bs + (reserve % bs != 0);
}

/* The most blocks one reservation may hold: the LIFO's depth field counts them, and
 * the address map covers the user address space. So blocks * bs never overflows. */
static size_t max_reserve_blocks(size_t bs) {
    size_t by_space = ((size_t)1 << KILN_ADDRESS_BITS) / bs;
    return by_space < KILN_LIFO_MAX_DEPTH ? by_space : (size_t)KILN_LIFO_MAX_DEPTH;
}

bool kiln_block_pool_init(kiln_block_pool *pool, const kiln_block_pool_config *config) {
    memset(pool, 0, sizeof *pool);
    pool->log = config->log;
    size_t page = kiln_os_page_size();
    size_t bs = config->block_size;
    if (!kiln_is_pow2(bs) || bs < page || bs > ((size_t)1 << 30)) {
        kiln_log(&pool->log, KILN_LOGITEM_BLOCK_SIZE_INVALID,
                 "block pool: block_size %zu is not a power of two from %zu to 1 GiB", bs, page);
        return false;
    }
    if (config->memory_limit != 0 && config->memory_limit < bs) {
        kiln_log(&pool->log, KILN_LOGITEM_MEMORY_LIMIT_INVALID,
                 "block pool: memory_limit %zu is smaller than one block (%zu bytes)",
                 config->memory_limit, bs);
        return false;
    }
    pool->block_size = bs;
    pool->block_mask = bs - 1;
    pool->reserve_blocks = reserve_blocks_of(config->reserve_bytes, bs);
    if (pool->reserve_blocks > max_reserve_blocks(bs)) {
        kiln_log(&pool->log, KILN_LOGITEM_RESERVE_SIZE_INVALID,
                 "block pool: reserve_size %zu is more than one reservation may be (%zu blocks "
                 "of %zu bytes: the block count and the user address space limit it)",
                 config->reserve_bytes, max_reserve_blocks(bs), bs);
        return false;
    }
    pool->memory_limit = config->memory_limit;
    pool->warn_percent = config->warn_percent;
    if (!kiln_address_map_init(&pool->map, (unsigned)__builtin_ctzll(bs))) {
        kiln_log(&pool->log, KILN_LOGITEM_RUNTIME_OUT_OF_MEMORY,
                 "block pool: no memory for the address map");
        return false;
    }
    pthread_mutex_init(&pool->grow_lock, NULL);
    return true;
}

void kiln_block_pool_fini(kiln_block_pool *pool) {
    uint64_t in_use = kiln_load_relaxed(&pool->blocks_reserved) - kiln_lifo_depth(&pool->free_blocks) -
                      kiln_lifo_depth(&pool->trimmed_blocks) - kiln_load_relaxed(&pool->uncarved);
    if (in_use != 0)
        kiln_log(&pool->log, KILN_LOGITEM_BLOCK_POOL_BLOCKS_LIVE,
                 "block pool: %llu blocks still in use at destroy; unmapping them",
                 (unsigned long long)in_use);
    kiln_reservation *r = pool->reservations;
    while (r) {
        kiln_reservation *next = r->next;
        kiln_os_unmap(r->base, r->size);
        kiln_sys_free(r);
        r = next;
    }
    pool->reservations = NULL;
    kiln_address_map_fini(&pool->map);
    pthread_mutex_destroy(&pool->grow_lock);
}

/* Counts and reports a refused request: logged once until a request succeeds.
 * BLOCK_POOL_OUT_OF_MEMORY is a growth whose bookkeeping (the reservation's record, a
 * leaf of the address map) found no heap memory. */
static KILN_COLD void report_refusal(kiln_block_pool *pool, kiln_log_item item, size_t asked) {
    kiln_add_relaxed(&pool->failures, 1);
    if (kiln_exchange_relaxed(&pool->limit_reported, 1) != 0) return;
    size_t reserved = kiln_load_relaxed(&pool->reserved_bytes);
    if (item == KILN_LOGITEM_BLOCK_POOL_OUT_OF_MEMORY)
        kiln_log(&pool->log, item,
                 "block pool: no heap memory for the record and address map of a reservation "
                 "of %zu bytes (%zu reserved)", asked, reserved);
    else if (pool->memory_limit != 0 && reserved + asked > pool->memory_limit)
        kiln_log(&pool->log, item,
                 "block pool: memory_limit of %zu bytes reached (%zu reserved, %zu more asked)",
                 pool->memory_limit, reserved, asked);
    else
        kiln_log(&pool->log, item,
                 "block pool: the OS refused a mapping of %zu bytes (%zu reserved)", asked, reserved);
}

static void note_success(kiln_block_pool *pool) {
    /* A read of a rarely written line on the common path; the store only after a refusal. */
    if (kiln_unlikely(kiln_load_relaxed(&pool->limit_reported)))
        kiln_store_relaxed(&pool->limit_reported, 0);
}


/* Under grow_lock: accounts a new mapping. */
static void add_reserved(kiln_block_pool *pool, size_t size) {
    size_t now = kiln_load_relaxed(&pool->reserved_bytes) + size;
    kiln_store_relaxed(&pool->reserved_bytes, now);
    if (now > kiln_load_relaxed(&pool->peak_reserved_bytes))
        kiln_store_relaxed(&pool->peak_reserved_bytes, now);
    kiln_add_relaxed(&pool->os_maps, 1);
}

/* Under grow_lock, after reserved_bytes changed: the MEMORY_LIMIT_NEAR episode rule
 * (base/near_limit.h); true when this sample starts an episode, *reserved then says at
 * what figure (the caller logs it once the lock is dropped: see log_near_limit). */
static bool sample_near_limit_locked(kiln_block_pool *pool, size_t *reserved) {
    *reserved = kiln_load_relaxed(&pool->reserved_bytes);
    if (pool->warn_percent == 0) return false;
    kiln_near_limit_step step = kiln_near_limit_next(pool->near_limit, *reserved, pool->memory_limit,
                                                     pool->warn_percent);
    if (step != KILN_NEAR_LIMIT_STAY) pool->near_limit = step == KILN_NEAR_LIMIT_START;
    return step == KILN_NEAR_LIMIT_START;
}

static KILN_COLD void log_near_limit(kiln_block_pool *pool, size_t reserved) {
    kiln_log(&pool->log, KILN_LOGITEM_MEMORY_LIMIT_NEAR,
             "block pool: %zu bytes reserved from the OS, %u%% or more of memory_limit (%zu "
             "bytes); warned once until it falls under %u%%", reserved, pool->warn_percent,
             pool->memory_limit,
             pool->warn_percent > KILN_WARN_HYSTERESIS ? pool->warn_percent - KILN_WARN_HYSTERESIS : 0);
}

/* Blocks moved from the newest reservation onto the LIFO at a time. */
#define KILN_CARVE_BATCH 64

/* Under grow_lock: pushes the next batch of the newest reservation's blocks; false when
 * none is left. They go on trimmed_blocks: like a trimmed block, a block no one has used
 * holds no page but its link's, so kiln_trim_step has nothing to give back from it.
 * uncarved goes down before the push, whose release then publishes it with the blocks
 * (a reader that pops one never counts it twice). */
static bool carve_locked(kiln_block_pool *pool) {
    size_t bs = pool->block_size;
    size_t left = (size_t)(pool->carve_end - pool->carve_next) / bs;
    if (left == 0) return false;
    size_t n = left < KILN_CARVE_BATCH ? left : KILN_CARVE_BATCH;
    char *base = pool->carve_next;
    for (size_t i = 0; i + 1 < n; i++)
        ((kiln_lifo_node *)(base + i * bs))->next = (kiln_lifo_node *)(base + (i + 1) * bs);
    pool->carve_next = base + n * bs;
    kiln_store_relaxed(&pool->uncarved, left - n);
    kiln_lifo_push_chain(&pool->trimmed_blocks, (kiln_lifo_node *)base,
                         (kiln_lifo_node *)(base + (n - 1) * bs), n);
    return true;
}

/* Under grow_lock: maps a new reservation and pushes its first batch of blocks. false
 * when the limit, the OS or the heap refuses (*refusal and *asked say why). */
static bool grow_locked(kiln_block_pool *pool, kiln_log_item *refusal, size_t *asked) {
    size_t bs = pool->block_size;
    size_t blocks = pool->reserve_blocks;
    if (pool->memory_limit != 0) {
        size_t reserved = kiln_load_relaxed(&pool->reserved_bytes);
        size_t room = reserved < pool->memory_limit ? (pool->memory_limit - reserved) / bs : 0;
        if (room < blocks) blocks = room;
    }
    *asked = (blocks ? blocks : 1) * bs;
    if (blocks == 0) {
        *refusal = KILN_LOGITEM_MEMORY_LIMIT_REACHED;
        return false;
    }
    uint64_t reserved_blocks = kiln_load_relaxed(&pool->blocks_reserved);
    if (reserved_blocks + blocks > KILN_LIFO_MAX_DEPTH) {   /* the LIFO's depth field */
        *refusal = KILN_LOGITEM_BLOCK_COUNT_LIMIT;
        return false;
    }
    kiln_reservation *record = kiln_sys_alloc(sizeof *record);
    char *base = record ? kiln_os_map_aligned(blocks * bs, bs, true) : NULL;
    *refusal = record ? KILN_LOGITEM_OS_MAP_FAILED : KILN_LOGITEM_BLOCK_POOL_OUT_OF_MEMORY;
    if (base && !kiln_address_map_add(&pool->map, base, blocks * bs)) {
        kiln_os_unmap(base, blocks * bs);   /* a failed add sets no bit */
        base = NULL;
        *refusal = KILN_LOGITEM_BLOCK_POOL_OUT_OF_MEMORY;
    }
    if (!base) {
        kiln_sys_free(record);
        return false;
    }
    *record = (kiln_reservation){ pool->reservations, base, blocks * bs };
    pool->reservations = record;
    add_reserved(pool, blocks * bs);
    /* Counted, uncarved, before any block is free, so blocks_in_use never reads negative. */
    kiln_store_relaxed(&pool->uncarved, blocks);
    kiln_store_relaxed(&pool->blocks_reserved, reserved_blocks + blocks);
    pool->carve_next = base;
    pool->carve_end = base + blocks * bs;
    return carve_locked(pool);
}

/* A free block, warm ones first: a pop of free_blocks, else of trimmed_blocks; *depth
 * receives the free blocks left on both (at slightly different instants: a figure for
 * the peak only). NULL when both are empty. */
static void *pop_free(kiln_block_pool *pool, uint64_t *depth) {
    void *block = kiln_lifo_pop_depth(&pool->free_blocks, depth);
    if (block) {
        *depth += kiln_lifo_depth(&pool->trimmed_blocks);
        return block;
    }
    block = kiln_lifo_pop_depth(&pool->trimmed_blocks, depth);
    if (block) *depth += kiln_lifo_depth(&pool->free_blocks);
    return block;
}

/* free_blocks was empty: a trimmed block, else grow (or wait for a trim step) and pop
 * again. NULL on refusal. */
static KILN_COLD void *get_slow(kiln_block_pool *pool, uint64_t *depth) {
    void *block = pop_free(pool, depth);
    if (block) return block;
    for (;;) {
        pthread_mutex_lock(&pool->grow_lock);
        /* Read before the pop: a step that ends between the pop and the check still held
         * the block the pop missed (otherwise: growth, or a refusal at memory_limit). */
        uint64_t passes = kiln_load_acquire(&pool->trims);
        block = pop_free(pool, depth);   /* another thread may have grown or put one back */
        kiln_log_item refusal = KILN_LOGITEM_NONE;
        size_t asked = 0, reserved = 0;
        bool trimming = !block && (kiln_load_acquire(&pool->trims_running) != 0 ||
                                   kiln_load_acquire(&pool->trims) != passes);
        bool carved = !block && !trimming && carve_locked(pool);
        bool grew = !block && !trimming && !carved && grow_locked(pool, &refusal, &asked);
        bool grown = carved || grew;
        bool near = grew && sample_near_limit_locked(pool, &reserved);   /* a reservation taken */
        pthread_mutex_unlock(&pool->grow_lock);
        if (kiln_unlikely(near)) log_near_limit(pool, reserved);
        if (block) return block;
        if (!grown && !trimming) {
            report_refusal(pool, refusal, asked);
            return NULL;
        }
        /* Grown: pop what was pushed (others may take some; then go round again).
         * Trimming: a step holds a free block for a moment; wait, don't grow. */
        if (trimming) sched_yield();
        block = pop_free(pool, depth);
        if (block) return block;
    }
}

void *kiln_block_get(kiln_block_pool *pool) {
    uint64_t depth;
    void *block = kiln_lifo_pop_depth(&pool->free_blocks, &depth);
    if (kiln_unlikely(!block)) {
        block = get_slow(pool, &depth);
        if (!block) return NULL;
    } else {
        depth += kiln_lifo_depth(&pool->trimmed_blocks);
    }
    note_success(pool);
    /* The peak from the depth this pop left: loads of rarely written lines, no write
     * unless this is a new peak. reserved is stored before blocks are pushed, and this
     * pop acquired that push, so reserved >= depth + trim_held. */
    uint64_t free_blocks = depth + kiln_load_relaxed(&pool->trim_held) +
                           kiln_load_relaxed(&pool->uncarved);
    uint64_t reserved = kiln_load_relaxed(&pool->blocks_reserved);
    uint64_t in_use = reserved > free_blocks ? reserved - free_blocks : 0;
    if (kiln_unlikely(in_use > kiln_load_relaxed(&pool->peak_in_use)))
        kiln_max_relaxed_u64(&pool->peak_in_use, in_use);
    return block;
}

void kiln_block_put(kiln_block_pool *pool, void *block) {
    note_success(pool);   /* memory came back: the next refusal is a new episode, logged */
    kiln_lifo_push(&pool->free_blocks, (kiln_lifo_node *)block);
}

/* A large mapping's refusal: reported, or (the OS's, for a caller that answers for it
 * itself) only counted. */
static KILN_COLD void refuse_large(kiln_block_pool *pool, kiln_log_item item, size_t asked, bool log_os) {
    if (item == KILN_LOGITEM_OS_MAP_FAILED && !log_os) kiln_add_relaxed(&pool->failures, 1);
    else report_refusal(pool, item, asked);
}

void *kiln_block_pool_map_large(kiln_block_pool *pool, size_t size, size_t align, bool log_os) {
    if (size > SIZE_MAX - kiln_os_page_size()) {
        refuse_large(pool, KILN_LOGITEM_OS_MAP_FAILED, size, log_os);
        return NULL;
    }
    size = kiln_block_pool_large_bytes(size);
    pthread_mutex_lock(&pool->grow_lock);
    bool fits = kiln_block_pool_has_room(pool, size);
    void *p = fits ? kiln_os_map_aligned(size, align, false) : NULL;
    kiln_log_item refusal = fits ? KILN_LOGITEM_OS_MAP_FAILED : KILN_LOGITEM_MEMORY_LIMIT_REACHED;
    size_t reserved = 0;
    bool near = false;
    if (p) {
        add_reserved(pool, size);
        kiln_add_relaxed(&pool->large_mappings, 1);
        near = sample_near_limit_locked(pool, &reserved);
    }
    pthread_mutex_unlock(&pool->grow_lock);
    if (kiln_unlikely(near)) log_near_limit(pool, reserved);
    if (!p) refuse_large(pool, refusal, size, log_os);
    else note_success(pool);
    return p;
}

void *kiln_block_pool_remap_large(kiln_block_pool *pool, void *ptr, size_t old_size, size_t new_size,
                                  bool log_os) {
    if (new_size > SIZE_MAX - kiln_os_page_size()) {
        refuse_large(pool, KILN_LOGITEM_OS_MAP_FAILED, new_size, log_os);
        return NULL;
    }
    old_size = kiln_block_pool_large_bytes(old_size);
    new_size = kiln_block_pool_large_bytes(new_size);
    size_t growth = new_size > old_size ? new_size - old_size : 0;
    pthread_mutex_lock(&pool->grow_lock);
    bool fits = kiln_block_pool_has_room(pool, growth);
    void *p = fits ? kiln_os_remap(ptr, old_size, new_size) : NULL;
    size_t reserved = 0;
    bool near = false;
    if (p && growth) {
        add_reserved(pool, growth);
        near = sample_near_limit_locked(pool, &reserved);
    } else if (p) {
        kiln_store_relaxed(&pool->reserved_bytes, kiln_load_relaxed(&pool->reserved_bytes) - (old_size - new_size));
        (void)sample_near_limit_locked(pool, &reserved);   /* falling: may end an episode */
    }
    pthread_mutex_unlock(&pool->grow_lock);
    if (kiln_unlikely(near)) log_near_limit(pool, reserved);
    if (!p) refuse_large(pool, fits ? KILN_LOGITEM_OS_MAP_FAILED : KILN_LOGITEM_MEMORY_LIMIT_REACHED, new_size, log_os);
    else note_success(pool);
    return p;
}

void kiln_block_pool_unmap_large(kiln_block_pool *pool, void *ptr, size_t size) {
    size = kiln_block_pool_large_bytes(size);
    kiln_os_unmap(ptr, size);
    pthread_mutex_lock(&pool->grow_lock);
    kiln_store_relaxed(&pool->reserved_bytes, kiln_load_relaxed(&pool->reserved_bytes) - size);
    size_t reserved;
    (void)sample_near_limit_locked(pool, &reserved);   /* falling: it may end an episode, never start one */
    pthread_mutex_unlock(&pool->grow_lock);
    kiln_sub_relaxed(&pool->large_mappings, 1);
}

/* The step's work: *given receives the blocks whose pages went back. */
static size_t trim_blocks(kiln_block_pool *pool, size_t max_blocks, size_t *given) {
    size_t count = 0;
    if (max_blocks != 0) {
        /* acq_rel: a get that then finds both LIFOs empty sees the step running and waits. */
        kiln_add_acq_rel(&pool->trims_running, 1);
        while (count < max_blocks) {
            /* Counted held before the pop, uncounted after the push: stats never read the
             * block as in use while it moves between the LIFOs. */
            kiln_add_relaxed(&pool->trim_held, 1);
            kiln_lifo_node *node = kiln_lifo_pop(&pool->free_blocks);
            if (!node) {
                kiln_sub_relaxed(&pool->trim_held, 1);
                break;
            }
            kiln_add_relaxed(&pool->trim_pops, 1);
            /* Decommitting zeroes the link word: the block is off both LIFOs meanwhile. */
            kiln_os_decommit(node, pool->block_size);
            kiln_lifo_push(&pool->trimmed_blocks, node);
            kiln_sub_relaxed(&pool->trim_held, 1);
            count++;
        }
        kiln_add_relaxed(&pool->trimmed_bytes, count * pool->block_size);
        /* Counted before the step ends: a get that saw the LIFOs empty and no step running
         * tells by this count that one ended in between (get_slow). */
        kiln_add_acq_rel(&pool->trims, 1);
        kiln_sub_acq_rel(&pool->trims_running, 1);
    }
    *given = count;
    return (size_t)kiln_lifo_depth(&pool->free_blocks);
}

size_t kiln_block_pool_trim_step(kiln_block_pool *pool, size_t max_blocks) {
    size_t given;
    return trim_blocks(pool, max_blocks, &given);
}

size_t kiln_block_pool_trim(kiln_block_pool *pool) {
    size_t given;
    trim_blocks(pool, SIZE_MAX, &given);
    return given * pool->block_size;
}

void kiln_block_pool_stats_get(kiln_block_pool *pool, kiln_block_pool_stats *out) {
    uint64_t reserved = kiln_load_relaxed(&pool->blocks_reserved);
    uint64_t free_blocks = kiln_lifo_depth(&pool->free_blocks) + kiln_lifo_depth(&pool->trimmed_blocks) +
                           kiln_load_relaxed(&pool->trim_held) + kiln_load_relaxed(&pool->uncarved);
    uint64_t in_use = reserved > free_blocks ? reserved - free_blocks : 0;
    uint64_t gets = (kiln_lifo_pops(&pool->free_blocks) + kiln_lifo_pops(&pool->trimmed_blocks) -
                     kiln_load_relaxed(&pool->trim_pops)) & KILN_LIFO_POPS_MASK;
    *out = (kiln_block_pool_stats){
        .block_size = pool->block_size,
        .memory_limit = pool->memory_limit,
        .reserved_bytes = kiln_load_relaxed(&pool->reserved_bytes),
        .peak_reserved_bytes = kiln_load_relaxed(&pool->peak_reserved_bytes),
        .blocks_reserved = reserved,
        .blocks_in_use = in_use,
        .blocks_peak = kiln_load_relaxed(&pool->peak_in_use),
        .blocks_free = reserved > in_use ? reserved - in_use : 0,
        .gets = gets,
        .failures = kiln_load_relaxed(&pool->failures),
        .os_maps = kiln_load_relaxed(&pool->os_maps),
        .large_mappings = kiln_load_relaxed(&pool->large_mappings),
        .trims = kiln_load_relaxed(&pool->trims),
        .trimmed_bytes = kiln_load_relaxed(&pool->trimmed_bytes),
    };
}
