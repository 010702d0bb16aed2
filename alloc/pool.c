/* alloc/pool.c — the pools' core: desc validation, the slot layout, carving objects and
 * magazines from blocks, the magazine exchange with the depot, flushing and statistics.
 * Above it, the debug layer (pool_debug.c), which the core reaches only through
 * pool->hooks (a new object block, an object handed out), and the free checks
 * (pool_check.c). */
#include "pool.h"

#include <kiln/heap.h>   /* KILN_HEAP_HEAD_KNOWN: the shared table's size */

#include "../base/clock.h"

#include "../base/near_limit.h"
#include "os.h"

#include <stdio.h>
#include <string.h>

#define KILN_POOL_MAGAZINE_MAGIC 0x6b696c6e4d41475aull   /* "kilnMAGZ" */
#define KILN_POOL_MAX_ALIGN      4096
#define KILN_POOL_MAX_MAGAZINE   256

kiln_magazine kiln_pool_unbound = { .count = 0, .capacity = 0 };

/* Pool serials, process-wide, so that a cache bound to a pool of one runtime never
 * matches the pool of another runtime at the same index (kiln_pool_cache_bound), nor a
 * heap's class (alloc/heap.h). */
static _Atomic uint64_t next_serial;

uint64_t kiln_pool_serial_new(void) {
    return kiln_add_relaxed(&next_serial, 1) + 1;   /* relaxed: only uniqueness matters */
}

static size_t magazine_bytes(uint32_t capacity) {
    return kiln_align_up(sizeof(kiln_magazine) + capacity * sizeof(void *), 16);
}

/* Default magazine: about 8 KiB of objects, 4 to 64 of them. Small objects get 64: an
 * exchange with the depot (a CAS pair) is then amortised over 64 allocations, while a
 * context's two magazines hold at most 16 KiB of idle objects per pool. */
static uint32_t default_magazine_size(size_t slot) {
    size_t n = 8192 / slot;
    return n > 64 ? 64 : n < 4 ? 4 : (uint32_t)n;
}

/* The table of known object blocks (pool.h): emptied for a new life and at its end, an
 * entry written when an object block is carved (under carve_lock). */
static void forget_blocks(kiln_pool *pool) {
    for (unsigned i = 0; i < KILN_POOL_KNOWN; i++) kiln_store_relaxed(&pool->known[i], KILN_POOL_NO_BLOCK);
}

/* A block's entry in the shared table (the heap's known blocks). */
static _Atomic uintptr_t *shared_entry(const kiln_pool *pool, const kiln_pool_block *block) {
    return &pool->shared_known[((uintptr_t)block >> pool->block_shift) % KILN_HEAP_HEAD_KNOWN];
}

/* Every entry that holds from holds to instead. Under carve_lock (or before the pool
 * is published). */
static void replace_entries(kiln_pool *pool, uintptr_t from, uintptr_t to) {
    for (unsigned i = 0; i < KILN_POOL_KNOWN; i++)
        if (kiln_load_relaxed(&pool->known[i]) == from) kiln_store_relaxed(&pool->known[i], to);
}

/* A new object block takes its own entry, and every empty one: entries no block of their
 * own maps to name some object block of the pool, so a pointer in their window is that
 * block's, and no empty entry's window (a pointer the test would take for the pool's,
 * kiln/pool.h) is left while the pool has a block. */
static void know_block(kiln_pool *pool, const kiln_pool_block *block) {
    uintptr_t first = (uintptr_t)block + pool->first_offset;
    kiln_store_relaxed(kiln_pool_known_entry(pool, (uintptr_t)block), first);
    replace_entries(pool, KILN_POOL_NO_BLOCK, first);
    if (pool->shared_known)   /* relaxed: a reader that misses it takes the checked path */
        kiln_store_relaxed(shared_entry(pool, block), (uintptr_t)block | pool->shared_class);
}

/* A block a trim returns (or fini): the entries naming it are emptied. Under
 * carve_lock. The shared table's by CAS: another pool may have taken the entry. */
static void forget_block(kiln_pool *pool, const kiln_pool_block *gone) {
    replace_entries(pool, (uintptr_t)gone + pool->first_offset, KILN_POOL_NO_BLOCK);
    if (pool->shared_known) {
        uintptr_t mine = (uintptr_t)gone | pool->shared_class;
        kiln_cas_strong_relaxed(shared_entry(pool, gone), &mine, 0);
    }
}

/* After a trim: the emptied entries name a block that stays, if any. Under carve_lock. */
static void refill_entries(kiln_pool *pool) {
    for (const kiln_pool_block *b = pool->block_list; b; b = b->next)
        if (b->magic == KILN_POOL_BLOCK_MAGIC && b->trim_free != KILN_POOL_TRIMMED) {
            replace_entries(pool, KILN_POOL_NO_BLOCK, (uintptr_t)b + pool->first_offset);
            return;
        }
}

/* Bytes of the CHECKED bitmap in an object block (a bit per slot that could fit). */
static size_t bitmap_bytes(const kiln_pool *pool) {
    if (!(pool->flags & KILN_POOL_CHECKED)) return 0;
    return ((pool->blocks->block_size / pool->slot + 63) / 64) * sizeof(uint64_t);
}

/* The layout of an object block: the header, the CHECKED bitmap, the debug layer's slot
 * entries, then the slots on their alignment grid — or, with a guard page, the slots
 * packed against it, so that an overrun of the last object faults. With guards a slot
 * is [front guard][object][back guard], 16 bytes each at least, on a grid of 16 at least
 * (ASan poisons in 8-byte granules). Sets slot, slots_per_block, first_offset and the
 * debug offsets and last_start; false when not one slot fits. */
static bool plan_slots(kiln_pool *pool) {
    size_t grid = pool->align, front = 0, back = 0;
    if (pool->debug & KILN_DEBUG_GUARDS) {
        grid = grid > KILN_GUARD_BYTES ? grid : KILN_GUARD_BYTES;
        front = kiln_align_up(KILN_GUARD_BYTES, grid);
        back = KILN_GUARD_BYTES;
    }
    pool->slot = kiln_align_up(front + pool->size + back, grid);
    pool->debug_front = front;
    size_t info = (pool->debug & KILN_POOL_HEADER_BITS) ? KILN_POOL_SLOT_INFO : 0;
    info += pool->tags_offset ? 1 : 0;   /* slot_tags: a byte each, after the entries */
    size_t head = sizeof(kiln_pool_block) + bitmap_bytes(pool), usable = pool->usable;
    pool->info_offset = head;
    size_t n = usable > head ? (usable - head) / (pool->slot + info) : 0;
    while (n > 0 && kiln_align_up(head + n * info, grid) + n * pool->slot > usable) n--;
    if (n == 0) return false;
    bool packed = usable != pool->blocks->block_size;   /* against the guard page */
    size_t slot0 = packed ? usable - n * pool->slot : kiln_align_up(head + n * info, grid);
    pool->slots_per_block = (uint32_t)n;
    if (pool->tags_offset) pool->tags_offset = head + n * (info - 1);
    pool->slot_recip = (((uint64_t)1 << 32) + pool->slot - 1) / pool->slot;
    pool->first_offset = slot0 + front;
    pool->last_start = (n - 1) * pool->slot;
    return true;
}

bool kiln_pool_init_core(kiln_pool *pool, const kiln_pool_config *config) {
    const kiln_pool_desc *d = &config->desc;
    /* Validate before touching *pool: a refused create must leave a destroyed pool in
     * a reused slot intact (its bookkeeping lives on until kiln_destroy). */
    char name[sizeof pool->name];
    snprintf(name, sizeof name, "%s", d->name ? d->name : "pool");
    size_t block_size = config->blocks->block_size;
    size_t align = d->align ? d->align : _Alignof(max_align_t);
    if (d->size == 0 || d->size > block_size / 4) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_SIZE,
                        "pool '%s': object size %zu is not from 1 to a quarter block (%zu)",
                        name, d->size, block_size / 4);
        return false;
    }
    if (!kiln_is_pow2(align) || align > KILN_POOL_MAX_ALIGN) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_ALIGN,
                        "pool '%s': alignment %zu is not a power of two up to %d",
                        name, align, KILN_POOL_MAX_ALIGN);
        return false;
    }
    if (d->flags & ~(uint32_t)(KILN_POOL_ZERO | KILN_POOL_CHECKED | KILN_POOL_CLEAR_ON_FREE)) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_FLAGS,
                        "pool '%s': flags 0x%x has bits that are no KILN_POOL_* flag", name,
                        (unsigned)d->flags);
        return false;
    }
    if (d->magazine_size != 0 && (d->magazine_size < 2 || d->magazine_size > KILN_POOL_MAX_MAGAZINE)) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_MAGAZINE_SIZE,
                        "pool '%s': magazine_size %u is not from 2 to %d",
                        name, d->magazine_size, KILN_POOL_MAX_MAGAZINE);
        return false;
    }
    /* Built in a copy, for the same reason: the layout may still refuse. */
    kiln_pool made = {
        .size = d->size,
        .align = align,
        .capacity = d->capacity,
        .key = KILN_POOL_KEY_CLOSED,   /* until init has succeeded */
        .index = config->index,
        .block_shift = config->blocks->map.block_shift,
        .blocks = config->blocks,
        .map = config->blocks->map,
        .block_mask = config->blocks->block_mask,
        .log = config->log,
        .debug = config->debug & (KILN_POOL_HOOK_BITS | KILN_DEBUG_GUARD_PAGES),
        .audit_sample = config->audit_sample,
        .reserve = d->reserve,
        .warn_percent = config->warn_percent,
        .account = config->account,
        .tags_offset = config->slot_tags,   /* plan_slots places the bytes */
        .shared_known = config->shared_known,
        .shared_class = config->shared_class,
        .fork_gate = config->fork_gate,
    };
    made.flags = (d->flags & (KILN_POOL_ZERO | KILN_POOL_CHECKED | KILN_POOL_CLEAR_ON_FREE)) |
                 (config->checked ? KILN_POOL_CHECKED : 0) |
                 ((made.debug & KILN_POOL_HOOK_BITS) ? KILN_POOL_DEBUG_HOOKS : 0);
    made.usable = kiln_debug_block_usable(made.debug, block_size);
    if (!plan_slots(&made)) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_SIZE,
                        "pool '%s': not one object of %zu bytes aligned to %zu fits a block of "
                        "%zu bytes with its header%s", name, d->size, align, block_size,
                        made.debug ? ", guards and guard page" : "");
        return false;
    }
    if ((d->capacity != 0 && d->reserve > d->capacity) || d->reserve > SIZE_MAX / made.slot) {
        kiln_log_misuse(&config->log, KILN_LOGITEM_POOL_BAD_RESERVE,
                        "pool '%s': reserve %zu is over %s %zu", name, d->reserve,
                        d->capacity != 0 && d->reserve > d->capacity ? "its capacity" : "the objects "
                        "of that many bytes that fit in memory,", d->capacity != 0 && d->reserve > d->capacity
                        ? d->capacity : SIZE_MAX / made.slot);
        return false;
    }
    memcpy(made.name, name, sizeof made.name);
    made.magazine_size = d->magazine_size ? d->magazine_size : default_magazine_size(made.slot);
    memcpy(pool, &made, sizeof *pool);
    if (pool->debug & KILN_DEBUG_POISON) kiln_debug_mempool_create(pool);
    forget_blocks(pool);
    pthread_mutex_init(&pool->carve_lock, NULL);
    kiln_store_release(&pool->serial, config->serial);
    /* The inline paths serve a pool without hooks; every hook is the library's. */
    bool hooked = (pool->flags & (KILN_POOL_ALLOC_HOOKS | KILN_POOL_FREE_HOOKS)) != 0;
    kiln_store_relaxed(&pool->key, hooked ? KILN_POOL_KEY_CLOSED : config->serial);
    return true;
}

/* A block of the pool's back to the block pool, and off its tag. */
static void give_block(kiln_pool *pool, kiln_pool_block *b) {
    if (pool->debug) kiln_debug_block_leaving(pool->debug, b, pool->blocks->block_size);
    kiln_block_put(pool->blocks, b);
    kiln_tag_release(pool->account, pool->blocks->block_size);
}

void kiln_pool_fini(kiln_pool *pool) {
    kiln_store_relaxed(&pool->key, KILN_POOL_KEY_CLOSED);
    kiln_store_relaxed(&pool->serial, 0);
    forget_blocks(pool);
    for (kiln_pool_block *b = pool->block_list, *next; b; b = next) {
        next = b->next;
        if (b->magic == KILN_POOL_BLOCK_MAGIC) forget_block(pool, b);
        b->magic = 0;   /* a stale pointer into a recycled block is no longer ours */
        give_block(pool, b);
    }
    if (pool->debug & KILN_DEBUG_POISON) kiln_debug_mempool_destroy(pool);
    pool->block_list = NULL;
    kiln_store_relaxed(&pool->blocks_held, 0);
    pool->full = (kiln_lifo){ 0 };
    pool->empty = (kiln_lifo){ 0 };
    pthread_mutex_destroy(&pool->carve_lock);
}

/* Under carve_lock: a fresh block on the pool's list with its header written; NULL when
 * the block pool or the pool's tag refuses. A magazine block a free needs (for_free) is
 * charged whatever the budget: refusing it would lose the object freed. */
static kiln_pool_block *new_block(kiln_pool *pool, uint64_t magic, bool for_free) {
    size_t block_size = pool->blocks->block_size;
    kiln_pool_block *block = kiln_block_get(pool->blocks);
    if (!block) return NULL;
    kiln_tag_payer payer = { "pool", pool->name };
    if (for_free) {
        kiln_tag_charge_always(pool->account, block_size, payer);
    } else if (!kiln_tag_charge(pool->account, block_size, payer)) {
        kiln_block_put(pool->blocks, block);
        return NULL;
    }
    if (pool->debug) kiln_debug_block_taken(pool->debug, block, pool->blocks->block_size, &pool->log);
    if (pool->touching) kiln_os_touch_pages(block, pool->usable, false);
    if (magic == KILN_POOL_BLOCK_MAGIC && (pool->flags & KILN_POOL_CLEAR_ON_FREE))
        memset((char *)block + pool->first_offset - pool->debug_front, 0,
               (size_t)pool->slots_per_block * pool->slot);   /* a recycled block's old bytes */
    size_t bitmap_words = (pool->flags & KILN_POOL_CHECKED) && magic == KILN_POOL_BLOCK_MAGIC
                              ? (pool->slots_per_block + 63) / 64 : 0;
    *block = (kiln_pool_block){
        .magic = magic,
        .pool = pool,
        .serial = kiln_load_relaxed(&pool->serial),
        .next = pool->block_list,
        .in_use = bitmap_words ? (_Atomic uint64_t *)(block + 1) : NULL,
        .first = (uintptr_t)block + pool->first_offset,
        .trim_free = 0,
    };
    for (size_t i = 0; i < bitmap_words; i++) kiln_store_relaxed(&block->in_use[i], 0);
    if (magic == KILN_POOL_BLOCK_MAGIC && pool->tags_offset)   /* published with the objects */
        memset((char *)block + pool->tags_offset, 0, pool->slots_per_block);
    if (magic == KILN_POOL_BLOCK_MAGIC && (pool->flags & KILN_POOL_DEBUG_HOOKS))
        pool->hooks->block(pool, block);
    pool->block_list = block;
    kiln_store_relaxed(&pool->blocks_held, kiln_load_relaxed(&pool->blocks_held) + 1);
    if (magic == KILN_POOL_MAGAZINE_MAGIC)
        kiln_store_relaxed(&pool->magazine_blocks, kiln_load_relaxed(&pool->magazine_blocks) + 1);
    return block;
}

/* Under carve_lock: storage for one more magazine (for_free: a free needs it). */
static kiln_magazine *new_magazine(kiln_pool *pool, bool for_free) {
    size_t bytes = magazine_bytes(pool->magazine_size);
    if (!pool->magazine_next || (size_t)(pool->magazine_end - pool->magazine_next) < bytes) {
        kiln_pool_block *block = new_block(pool, KILN_POOL_MAGAZINE_MAGIC, for_free);
        if (!block) return NULL;
        pool->magazine_next = (char *)kiln_align_up((uintptr_t)(block + 1), 16);
        pool->magazine_end = (char *)block + pool->usable;
    }
    kiln_magazine *mag = (kiln_magazine *)pool->magazine_next;
    pool->magazine_next += bytes;
    mag->count = 0;
    mag->capacity = pool->magazine_size;
    return mag;
}

static kiln_magazine *take_empty_magazine(kiln_pool *pool, bool for_free) {
    kiln_magazine *mag = (kiln_magazine *)kiln_lifo_pop(&pool->empty);
    if (mag) return mag;
    kiln_pool_carve_lock(pool);
    mag = new_magazine(pool, for_free);
    kiln_pool_carve_unlock(pool);
    return mag;
}

/* Under carve_lock: fills mag with new slots, up to capacity; how many it carved. */
static uint32_t carve_into(kiln_pool *pool, kiln_magazine *mag) {
    uint32_t n = 0;
    uint64_t carved = kiln_load_relaxed(&pool->carved);
    while (n < mag->capacity && (pool->capacity == 0 || carved < pool->capacity)) {
        if (pool->carve_next == 0 || pool->carve_end - pool->carve_next < pool->slot) {
            kiln_pool_block *block = new_block(pool, KILN_POOL_BLOCK_MAGIC, false);
            if (!block) break;   /* the block pool logged why */
            pool->carve_block = block;
            pool->carve_next = block->first;
            know_block(pool, block);
            pool->carve_end = block->first + (uintptr_t)pool->slots_per_block * pool->slot;
        }
        mag->objects[n++] = (void *)pool->carve_next;
        pool->carve_next += pool->slot;
        carved++;
    }
    mag->count = n;
    kiln_store_relaxed(&pool->carved, carved);
    return n;
}

/* POOL_CAPACITY_NEAR's episode step (base/near_limit.h) on a live count: an exact one
 * (a stats read, every frame end) may end an episode, an estimate only start one. */
static void judge_live(kiln_pool *pool, uint64_t live, bool exact) {
    if (kiln_near_limit_sample_shared(&pool->near_reported, live, pool->capacity, pool->warn_percent, exact))
        kiln_log(&pool->log, KILN_LOGITEM_POOL_CAPACITY_NEAR,
                 "pool '%s': %llu of its capacity of %zu objects are live (%llu%%), at or over "
                 "warn_percent %u%%", pool->name, (unsigned long long)live, pool->capacity,
                 (unsigned long long)(live * 100 / pool->capacity), pool->warn_percent);
}

/* The estimate between frames: adds the cache's allocs - frees since its last sample to
 * the pool's live_sampled and judges that. At every exchange and at a flush, so the
 * figure lags each cache by at most its two magazines. */
static void sample_live(kiln_pool *pool, kiln_pool_cache *cache) {
    if (pool->capacity == 0) return;
    uint32_t now = (uint32_t)(kiln_load_relaxed(&cache->allocs) - kiln_load_relaxed(&cache->frees));
    uint64_t delta = (uint64_t)(int64_t)(int32_t)(now - cache->synced);
    cache->synced = now;
    int64_t sum = (int64_t)(kiln_add_relaxed(&pool->live_sampled, delta) + delta);
    judge_live(pool, sum > 0 ? (uint64_t)sum : 0, false);
}

static void note_exchange(kiln_pool *pool, kiln_pool_cache *cache) {
    kiln_add_relaxed(&pool->exchanges, 1);
    /* carved is read first: a reserve that carves meanwhile raises in_depot after it,
     * and a trim lowers carved before in_depot, so the difference may read negative. */
    uint64_t carved = kiln_load_relaxed(&pool->carved), in_depot = kiln_load_relaxed(&pool->in_depot);
    kiln_max_relaxed_u64(&pool->peak_outside, carved > in_depot ? carved - in_depot : 0);
    sample_live(pool, cache);
}

static void give_to_depot(kiln_pool *pool, kiln_pool_cache *cache, kiln_magazine *mag) {
    if (mag->count == 0) {
        kiln_lifo_push(&pool->empty, &mag->link);
        return;
    }
    kiln_add_relaxed(&pool->in_depot, mag->count);
    if (cache) kiln_owner_add(&cache->given, mag->count);
    kiln_lifo_push(&pool->full, &mag->link);
}

/* Binds cache to the pool's current life: two empty magazines, counters at zero
 * (for_free: a free binds it). */
static bool bind(kiln_pool *pool, kiln_pool_cache *cache, bool for_free) {
    kiln_magazine *loaded = take_empty_magazine(pool, for_free);
    kiln_magazine *spare = loaded ? take_empty_magazine(pool, for_free) : NULL;
    if (!spare) {
        if (loaded) kiln_lifo_push(&pool->empty, &loaded->link);
        return false;
    }
    cache->loaded = loaded;
    cache->spare = spare;
    kiln_store_relaxed(&cache->allocs, 0);
    kiln_store_relaxed(&cache->frees, 0);
    kiln_store_relaxed(&cache->received, 0);
    kiln_store_relaxed(&cache->given, 0);
    cache->refused_at = 0;
    cache->synced = 0;
    /* Release: a stats reader that sees the serial sees the zeroed counters. */
    kiln_store_release(&cache->serial, kiln_load_relaxed(&pool->serial));
    return true;
}

/* POOL_CAPACITY_REACHED at most this often per pool. */
#define KILN_POOL_CAPACITY_WARN_NS 1000000000u

/* One warning per episode, and an episode ends when an alloc succeeds. A success in the
 * slow path clears the flag itself; one served from the cache's own frees (the fast
 * path, which touches nothing shared) shows at this cache's next refusal: its allocs
 * moved since its last one, so a new episode has begun. Threads that keep a pool at its
 * capacity start episodes as fast as they alloc and free, so at most one warning per
 * KILN_POOL_CAPACITY_WARN_NS is logged, saying how many episodes went unlogged since
 * the last one (relaxed: a figure; two racing warnings cost one more line). */
static KILN_COLD void report_capacity(kiln_pool *pool, kiln_pool_cache *cache) {
    uint32_t stamp = (uint32_t)kiln_load_relaxed(&cache->allocs) * 2u + 1u;   /* never 0 */
    if (cache->refused_at != 0 && cache->refused_at != stamp)
        kiln_store_relaxed(&pool->capacity_reported, 0);
    cache->refused_at = stamp;
    if (kiln_exchange_relaxed(&pool->capacity_reported, 1) != 0) return;
    uint64_t now = kiln_now_ns(), last = kiln_load_relaxed(&pool->capacity_warned_ns);
    if (last != 0 && now - last < KILN_POOL_CAPACITY_WARN_NS) {
        kiln_add_relaxed(&pool->capacity_quiet, 1);
        return;
    }
    kiln_store_relaxed(&pool->capacity_warned_ns, now);
    uint64_t quiet = kiln_exchange_relaxed(&pool->capacity_quiet, 0);
    char more[96] = "";
    if (quiet)
        snprintf(more, sizeof more, " (and %llu times since the last warning, not logged: at "
                 "most one a second)", (unsigned long long)quiet);
    kiln_log(&pool->log, KILN_LOGITEM_POOL_CAPACITY_REACHED,
             "pool '%s': all %zu objects of its capacity are live or cached; alloc returns NULL%s",
             pool->name, pool->capacity, more);
}

static KILN_COLD void *refuse_destroyed(kiln_pool *pool, const char *function) {
    kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_DESTROYED, "%s: pool '%s' has been destroyed; refused",
                    function, pool->name);
    return NULL;
}

/* cache->loaded (empty) goes to the depot's empties and full, from its full ones, is
 * loaded instead. */
static void load_full(kiln_pool *pool, kiln_pool_cache *cache, kiln_magazine *full) {
    kiln_sub_relaxed(&pool->in_depot, full->count);
    kiln_owner_add(&cache->received, full->count);
    kiln_lifo_push(&pool->empty, &cache->loaded->link);
    cache->loaded = full;
    note_exchange(pool, cache);
}

/* Refills cache->loaded: the spare, a full magazine from the depot, or fresh slots. */
static bool refill(kiln_pool *pool, kiln_pool_cache *cache) {
    if (cache->spare->count > 0) {
        kiln_magazine *t = cache->loaded;
        cache->loaded = cache->spare;
        cache->spare = t;
        return true;
    }
    kiln_magazine *full = (kiln_magazine *)kiln_lifo_pop(&pool->full);
    if (!full) {
        kiln_pool_carve_lock(pool);
        /* Again under the lock: a trim holds the depot's magazines while it has it, and
         * gives them back before it lets go; carving instead would take a new block
         * (or fail at the capacity) while free objects wait. */
        full = (kiln_magazine *)kiln_lifo_pop(&pool->full);
        uint32_t n = full ? 0 : carve_into(pool, cache->loaded);
        kiln_pool_carve_unlock(pool);
        if (!full) {
            kiln_owner_add(&cache->received, n);
            note_exchange(pool, cache);
            return n > 0;
        }
    }
    load_full(pool, cache, full);
    return true;
}

void *kiln_pool_alloc_slow(kiln_pool *pool, kiln_pool_cache *cache) {
    if (kiln_load_relaxed(&pool->serial) == 0) return refuse_destroyed(pool, "kiln_pool_alloc");
    bool ready = cache->loaded != &kiln_pool_unbound || bind(pool, cache, false);
    if (!ready || !refill(pool, cache)) {
        kiln_add_relaxed(&pool->failures, 1);
        if (pool->capacity != 0 && kiln_load_relaxed(&pool->carved) >= pool->capacity)
            report_capacity(pool, cache);
        return NULL;
    }
    if (kiln_unlikely(kiln_load_relaxed(&pool->capacity_reported)))
        kiln_store_relaxed(&pool->capacity_reported, 0);
    return kiln_pool_cache_alloc(pool, cache);
}

void kiln_pool_free_slow(kiln_pool *pool, kiln_pool_cache *cache, void *obj) {
    if (cache->loaded == &kiln_pool_unbound && !bind(pool, cache, true)) {
        kiln_add_relaxed(&pool->failures, 1);
        kiln_log(&pool->log, KILN_LOGITEM_POOL_FREE_NO_MAGAZINE,
                 "pool '%s': no memory for a cache magazine; object %p stays unusable",
                 pool->name, obj);
        return;
    }
    if (cache->loaded->count == cache->loaded->capacity) {
        if (cache->spare->count == 0) {
            kiln_magazine *t = cache->loaded;
            cache->loaded = cache->spare;
            cache->spare = t;
        } else {
            kiln_magazine *empty = take_empty_magazine(pool, true);
            if (!empty) {
                kiln_add_relaxed(&pool->failures, 1);
                kiln_log(&pool->log, KILN_LOGITEM_POOL_FREE_NO_MAGAZINE,
                         "pool '%s': no memory for a magazine; object %p stays unusable",
                         pool->name, obj);
                return;
            }
            give_to_depot(pool, cache, cache->spare);
            cache->spare = cache->loaded;
            cache->loaded = empty;
            note_exchange(pool, cache);
        }
    }
    kiln_pool_cache_free(pool, cache, obj);
}

void *kiln_pool_on_alloc(kiln_pool *pool, void *obj) {
    if (pool->flags & KILN_POOL_DEBUG_HOOKS) pool->hooks->alloc(pool, obj);
    if (pool->flags & KILN_POOL_ZERO) memset(obj, 0, pool->size);
    if (pool->flags & KILN_POOL_CHECKED) {
        kiln_pool_block *block = kiln_block_of(pool->blocks, obj);
        size_t slot = ((uintptr_t)obj - block->first) / pool->slot;
        kiln_or_relaxed(&block->in_use[slot / 64], (uint64_t)1 << (slot % 64));
    }
    return obj;
}

static bool bound_to(kiln_pool *pool, kiln_pool_cache *cache) {
    uint64_t serial = kiln_load_relaxed(&pool->serial);
    return serial != 0 && kiln_load_relaxed(&cache->serial) == serial;
}

void kiln_pool_cache_flush(kiln_pool *pool, kiln_pool_cache *cache) {
    if (!bound_to(pool, cache)) return;
    sample_live(pool, cache);   /* its last share: live_sampled keeps what it leaves live */
    give_to_depot(pool, cache, cache->loaded);
    give_to_depot(pool, cache, cache->spare);
    kiln_pool_cache_retire(pool, cache);
}

void kiln_pool_cache_retire(kiln_pool *pool, kiln_pool_cache *cache) {
    if (!bound_to(pool, cache)) return;
    kiln_add_relaxed(&pool->retired_allocs, kiln_load_relaxed(&cache->allocs));
    kiln_add_relaxed(&pool->retired_frees, kiln_load_relaxed(&cache->frees));
    kiln_add_relaxed(&pool->retired_received, kiln_load_relaxed(&cache->received));
    kiln_add_relaxed(&pool->retired_given, kiln_load_relaxed(&cache->given));
    kiln_pool_cache_unbind(cache);
}

/* ---- planning: reserve and trim (both under carve_lock) ---- */

/* Under carve_lock: the objects an alloc can get without a new block: the depot's.
 * Not the room left in the block being carved: a refill carves a whole magazine, and
 * when that room runs out partway it takes a new block to finish it, so the room is no
 * promise. */
static size_t available(const kiln_pool *pool) {
    uint64_t in_depot = kiln_load_relaxed(&((kiln_pool *)pool)->in_depot);   /* read only */
    return in_depot > SIZE_MAX ? SIZE_MAX : (size_t)in_depot;
}

size_t kiln_pool_reserve_objects(kiln_pool *pool, size_t count) {
    size_t target = pool->capacity != 0 && count > pool->capacity ? pool->capacity : count;
    if (target > SIZE_MAX / pool->slot) {
        kiln_log_misuse(&pool->log, KILN_LOGITEM_POOL_RESERVE_TOO_LARGE,
                        "kiln_pool_reserve: pool '%s': %zu objects of %zu bytes overflow size_t; "
                        "nothing carved", pool->name, count, pool->slot);
        kiln_pool_carve_lock(pool);
        size_t now = available(pool);
        kiln_pool_carve_unlock(pool);
        return now;
    }
    kiln_pool_carve_lock(pool);
    /* The room of the block being carved is carved first: fault its pages in now too.
     * Its slots are nobody's yet; with KILN_DEBUG_POISON they are poisoned, and left
     * alone. */
    if (pool->carve_block && !(pool->debug & KILN_DEBUG_POISON))
        kiln_os_touch_pages((void *)pool->carve_next, pool->carve_end - pool->carve_next, true);
    pool->touching = true;
    size_t now = available(pool);
    while (now < target) {
        kiln_magazine *mag = (kiln_magazine *)kiln_lifo_pop(&pool->empty);
        if (!mag) mag = new_magazine(pool, false);
        if (!mag) break;   /* the block pool logged why */
        if (carve_into(pool, mag) == 0) {
            kiln_lifo_push(&pool->empty, &mag->link);
            break;
        }
        give_to_depot(pool, NULL, mag);
        now = available(pool);
    }
    pool->touching = false;
    uint64_t carved = kiln_load_relaxed(&pool->carved);
    kiln_pool_carve_unlock(pool);
    if (now < count) {
        /* Short by the capacity (the count was over it, or every object is carved and some
         * are out of the depot), or because the block pool refused a block. */
        bool capped = pool->capacity != 0 && (count > pool->capacity || carved >= pool->capacity);
        kiln_log(&pool->log, KILN_LOGITEM_POOL_RESERVE_SHORT,
                 "kiln_pool_reserve: pool '%s': %zu of the %zu objects asked can be allocated "
                 "without a new block: %s", pool->name, now, count,
                 capped ? "the capacity is carved" : "a block was refused (memory_limit, the "
                 "OS, or the pool's tag's budget: logged apart)");
    }
    return now;
}

static kiln_pool_block *object_block(const kiln_pool *pool, const void *obj) {
    return (kiln_pool_block *)kiln_block_of(pool->blocks, obj);
}

/* Under carve_lock: how many objects were carved from an object block. */
static uint32_t carved_in(const kiln_pool *pool, const kiln_pool_block *block) {
    if (block != pool->carve_block) return pool->slots_per_block;
    return (uint32_t)((pool->carve_next - block->first) / pool->slot);
}

/* Under carve_lock: packs the objects of the chain of magazines from first that lie in
 * no block being returned into its first magazines (each pushed back full, the last
 * partly), pushes the rest onto the empties. In place: an object is never written to
 * a place before the one it was read from is passed. */
static void give_back_kept(kiln_pool *pool, kiln_magazine *first) {
    kiln_magazine *to = first;
    uint32_t n = 0;
    for (kiln_magazine *from = first; from; from = (kiln_magazine *)from->link.next) {
        for (uint32_t i = 0; i < from->count; i++) {
            void *obj = from->objects[i];
            if (object_block(pool, obj)->trim_free == KILN_POOL_TRIMMED) continue;
            if (n == to->capacity) {
                to->count = n;
                to = (kiln_magazine *)to->link.next;
                n = 0;
            }
            to->objects[n++] = obj;
        }
    }
    for (kiln_magazine *mag = first, *next; mag; mag = next) {
        next = (kiln_magazine *)mag->link.next;
        if (mag == to) mag->count = n, to = NULL;
        else if (to == NULL) mag->count = 0;
        if (mag->count > 0) kiln_lifo_push(&pool->full, &mag->link);
        else kiln_lifo_push(&pool->empty, &mag->link);
    }
}

size_t kiln_pool_trim_blocks(kiln_pool *pool) {
    kiln_pool_carve_lock(pool);
    /* Every full magazine of the depot, chained through their links (popped: ours). The
     * objects stay counted in in_depot meanwhile, so the figures never show them live. */
    kiln_magazine *taken = NULL;
    for (kiln_magazine *mag; (mag = (kiln_magazine *)kiln_lifo_pop(&pool->full)) != NULL;) {
        mag->link.next = taken ? &taken->link : NULL;
        taken = mag;
    }
    for (kiln_pool_block *b = pool->block_list; b; b = b->next) b->trim_free = 0;
    for (kiln_magazine *mag = taken; mag; mag = (kiln_magazine *)mag->link.next)
        for (uint32_t i = 0; i < mag->count; i++) object_block(pool, mag->objects[i])->trim_free++;
    /* An object block whose carved objects are all here holds nothing live or cached. */
    uint64_t carved = kiln_load_relaxed(&pool->carved), gone = 0;
    size_t returned = 0;
    for (kiln_pool_block *b = pool->block_list; b; b = b->next) {
        uint32_t in = carved_in(pool, b);
        if (b->magic != KILN_POOL_BLOCK_MAGIC || b->trim_free != in || carved - gone - in < pool->reserve)
            continue;
        b->trim_free = KILN_POOL_TRIMMED;
        gone += in;
        returned++;
    }
    if (taken) give_back_kept(pool, taken);
    /* carved before in_depot: see note_exchange. */
    kiln_store_relaxed(&pool->carved, carved - gone);
    kiln_sub_relaxed(&pool->in_depot, gone);
    for (kiln_pool_block **link = &pool->block_list, *b; (b = *link) != NULL;) {
        if (b->magic != KILN_POOL_BLOCK_MAGIC || b->trim_free != KILN_POOL_TRIMMED) {
            link = &b->next;
            continue;
        }
        *link = b->next;
        forget_block(pool, b);
        if (b == pool->carve_block) pool->carve_block = NULL, pool->carve_next = pool->carve_end = 0;
        if (b == pool->audit_block) pool->audit_block = NULL, pool->audit_slot = 0;
        b->magic = 0;   /* as at fini: a stale pointer into it is no longer ours */
        give_block(pool, b);
    }
    if (returned) refill_entries(pool);
    kiln_store_relaxed(&pool->blocks_held, kiln_load_relaxed(&pool->blocks_held) - (uint32_t)returned);
    kiln_add_relaxed(&pool->trims, 1);
    kiln_add_relaxed(&pool->blocks_trimmed, returned);
    kiln_pool_carve_unlock(pool);
    return returned;
}

void kiln_pool_tally_cache(kiln_pool *pool, const kiln_pool_cache *cache, kiln_pool_tally *tally) {
    kiln_pool_cache *c = (kiln_pool_cache *)cache;   /* atomics are read, never written */
    /* An unbound cache (serial 0) keeps the counters of its last life, which were
     * folded into that pool's totals when it was unbound: never count them again. */
    uint64_t serial = kiln_load_acquire(&c->serial);
    if (serial == 0 || serial != kiln_load_relaxed(&pool->serial)) return;
    tally->allocs += kiln_load_relaxed(&c->allocs);
    tally->frees += kiln_load_relaxed(&c->frees);
    tally->received += kiln_load_relaxed(&c->received);
    tally->given += kiln_load_relaxed(&c->given);
}

void kiln_pool_stats_read(kiln_pool *pool, const kiln_pool_tally *caches, kiln_pool_stats *out) {
    kiln_pool_tally t = {
        caches->allocs + kiln_load_relaxed(&pool->retired_allocs),
        caches->frees + kiln_load_relaxed(&pool->retired_frees),
        caches->received + kiln_load_relaxed(&pool->retired_received),
        caches->given + kiln_load_relaxed(&pool->retired_given),
    };
    uint64_t in = t.received + t.frees, gone = t.allocs + t.given;
    uint64_t live = t.allocs > t.frees ? t.allocs - t.frees : 0;
    if (pool->capacity != 0 && kiln_load_relaxed(&pool->serial) != 0) judge_live(pool, live, true);
    *out = (kiln_pool_stats){
        .object_size = pool->size,
        .slot_size = pool->slot,
        .align = pool->align,
        .capacity = pool->capacity,
        .magazine_size = pool->magazine_size,
        .alive = kiln_load_relaxed(&pool->serial) != 0,
        .blocks_held = kiln_load_relaxed(&pool->blocks_held),
        .live = live,
        .peak_live = kiln_load_relaxed(&pool->peak_outside),
        .allocs = t.allocs,
        .frees = t.frees,
        .failures = kiln_load_relaxed(&pool->failures),
        .depot_exchanges = kiln_load_relaxed(&pool->exchanges),
        .carved = kiln_load_relaxed(&pool->carved),
        .in_depot = kiln_load_relaxed(&pool->in_depot),
        .cached = in > gone ? in - gone : 0,
        .bad_frees = kiln_load_relaxed(&pool->bad_frees),
        .double_frees = kiln_load_relaxed(&pool->double_frees),
        .guard_errors = kiln_load_relaxed(&pool->guard_errors),
        .reserve = pool->reserve,
        .magazine_blocks = kiln_load_relaxed(&pool->magazine_blocks),
        .trims = kiln_load_relaxed(&pool->trims),
        .blocks_trimmed = kiln_load_relaxed(&pool->blocks_trimmed),
    };
    out->cached_bytes = out->cached * pool->slot;
    if (out->live > out->peak_live) out->peak_live = out->live;
    memcpy(out->name, pool->name, sizeof out->name);
}
