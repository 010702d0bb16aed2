/* alloc/handle_table.c — generational handle tables: desc validation and the layout,
 * the slow paths of get, alloc and free, the batch exchanges of a cache with the reuse
 * ring, flushing and retiring caches, the live-item walk, and the figures. The layout and the ownership of
 * every field: alloc/handle_table.h. */
#include "handle_table.h"

#include "../base/sys_alloc.h"
#include "../base/near_limit.h"
#include "os.h"

#include <stddef.h>
#include <stdio.h>

/* get, alloc and free (and the owner's cache lookup by index) read one cache line. */
_Static_assert(offsetof(kiln_handle_table, gen_max) + sizeof(uint32_t) <= KILN_CACHE_LINE,
               "the fields of the fast paths share the table's first cache line");

/* Process-wide, so that a table of another runtime has another tag and a cache never
 * matches a table it was not bound to. Relaxed: only uniqueness matters. */
static _Atomic uint32_t next_tag;
static _Atomic uint64_t next_serial;

#define HANDLES_DEFAULT_CAPACITY  65536u
#define HANDLES_MAX_ITEM          ((size_t)1 << 20)
#define HANDLES_MAX_ALIGN         4096u

/* ---------- create and destroy ---------- */

bool kiln_handle_table_desc_ok(const kiln_handles_desc *desc, const char *name,
                               const kiln_log_sink *log) {
    kiln_log_item item = KILN_LOGITEM_NONE;
    const char *bad = NULL;
    if (desc->item_size == 0 || desc->item_size > HANDLES_MAX_ITEM)
        item = KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, bad = "item_size must be 1 byte to 1 MiB";
    else if (desc->item_align && (!kiln_is_pow2(desc->item_align) || desc->item_align > HANDLES_MAX_ALIGN))
        item = KILN_LOGITEM_HANDLES_BAD_ALIGN, bad = "item_align must be a power of two up to 4096";
    else if (desc->capacity > KILN_HANDLES_MAX_CAPACITY)
        item = KILN_LOGITEM_HANDLES_BAD_CAPACITY, bad = "capacity must be at most 16777215";
    else if (desc->reserve > (desc->capacity ? desc->capacity : HANDLES_DEFAULT_CAPACITY))
        item = KILN_LOGITEM_HANDLES_BAD_RESERVE, bad = "reserve must be at most the capacity";
    if (bad)
        kiln_log_misuse(log, item,
                        "kiln_handles_create: table '%s': %s (item_size %zu, item_align %zu, "
                        "capacity %u, reserve %u)", name, bad, desc->item_size, desc->item_align,
                        desc->capacity, desc->reserve);
    return bad == NULL;
}

bool kiln_handle_table_init(kiln_handle_table *table, const kiln_handle_table_config *config) {
    const kiln_handles_desc *desc = &config->desc;
    size_t align = desc->item_align ? desc->item_align : _Alignof(max_align_t);
    if (align < _Alignof(kiln_handle_slot)) align = _Alignof(kiln_handle_slot);
    table->header = kiln_align_up(sizeof(kiln_handle_slot), align);
    table->stride = kiln_align_up(table->header + desc->item_size, align);
    table->capacity = desc->capacity ? desc->capacity : HANDLES_DEFAULT_CAPACITY;
    table->capacity_asked = table->capacity;
    table->item_size = desc->item_size;
    /* One mapping: the slots, then the reuse ring (an entry per slot). */
    size_t ring_offset = kiln_align_up(table->stride * table->capacity, _Alignof(kiln_reuse_entry));
    table->map_bytes = ring_offset + sizeof(kiln_reuse_entry) * table->capacity;
    size_t map_align = align > kiln_os_page_size() ? align : kiln_os_page_size();
    table->slots = kiln_block_pool_map_large(config->blocks, table->map_bytes, map_align, true);
    if (!table->slots) return false;   /* the block pool logged the refusal */
    kiln_tag_payer payer = { "handle table", config->name };
    if (!kiln_tag_charge(config->account, kiln_block_pool_large_bytes(table->map_bytes), payer)) {
        kiln_block_pool_unmap_large(config->blocks, table->slots, table->map_bytes);   /* logged */
        return false;
    }
    kiln_handle_ring_init(&table->ring, (kiln_reuse_entry *)(table->slots + ring_offset),
                          table->capacity);
    /* desc.reserve: fault the first slots' pages in now, writing the zero they hold (a
     * slot of generation 0 must read as zero). */
    kiln_os_touch_pages(table->slots, (size_t)desc->reserve * table->stride, false);
    /* KILN_DEBUG_SITES: the site of each slot's item, beside the slots. */
    if (config->sites) table->sites = kiln_sys_calloc(table->capacity, sizeof *table->sites);
    if (config->sites && !table->sites) {
        kiln_log(&config->log, KILN_LOGITEM_HANDLES_OUT_OF_MEMORY,
                 "kiln_handles_create: table '%s': no memory for its allocation-site array",
                 config->name);
        kiln_block_pool_unmap_large(config->blocks, table->slots, table->map_bytes);
        kiln_tag_release(config->account, kiln_block_pool_large_bytes(table->map_bytes));
        return false;
    }
    snprintf(table->name, sizeof table->name, "%s", config->name);
    table->tag_bits = (kiln_add_relaxed(&next_tag, 1) % 255u + 1u) << KILN_HANDLE_TAG_SHIFT;
    table->serial = kiln_add_relaxed(&next_serial, 1) + 1;
    table->index = config->index;
    table->gen_max = UINT32_MAX;
    table->reclaim_epoch = config->reclaim_epoch;
    table->safe_epoch = config->safe_epoch;
    table->blocks = config->blocks;
    table->account = config->account;
    table->log = config->log;
    table->warn_percent = config->warn_percent;
    pthread_mutex_init(&table->lock, NULL);
    return true;
}

void kiln_handle_table_fini(kiln_handle_table *table, const kiln_handle_tally *tally) {
    kiln_store_relaxed(&table->folded_allocs, tally->allocs);
    kiln_store_relaxed(&table->folded_frees, tally->frees);
    kiln_handle_ring_fini(&table->ring);
    kiln_block_pool_unmap_large(table->blocks, table->slots, table->map_bytes);
    kiln_tag_release(table->account, kiln_block_pool_large_bytes(table->map_bytes));
    kiln_sys_free(table->sites);
    table->sites = NULL;
    table->slots = NULL;
    table->capacity = 0;
    table->serial = 0;
    pthread_mutex_destroy(&table->lock);
}

bool kiln_handle_table_refuse_dead(const kiln_handle_table *table, const char *function) {
    if (kiln_likely(table->serial != 0)) return false;
    kiln_log_misuse(&table->log, KILN_LOGITEM_HANDLES_DESTROYED,
                    "%s: table '%s' has been destroyed; refused", function, table->name);
    return true;
}

void kiln_handle_table_set_generation_limit(kiln_handle_table *table, uint32_t max_generation) {
    table->gen_max = max_generation | 1u;
}

void kiln_handle_table_set_epochs(kiln_handle_table *table, const _Atomic uint64_t *reclaim_epoch,
                                  const _Atomic uint64_t *safe_epoch) {
    table->reclaim_epoch = reclaim_epoch;
    table->safe_epoch = safe_epoch;
}

/* ---------- get ---------- */

void *kiln_handle_table_get_miss(kiln_handle_table *table, kiln_handle h) {
    if (kiln_handle_table_refuse_dead(table, "kiln_handle_get")) return NULL;
    uint32_t index = kiln_handle_index(h);
    bool ours = h.bits == 0 ||
                ((h.bits & ~(uint64_t)KILN_HANDLE_INDEX_MASK & 0xffffffffu) == table->tag_bits &&
                 index < table->capacity && (kiln_handle_generation(h) & 1u));
    /* Exact: a relaxed atomic add, on the miss path only (a hit writes nothing shared),
     * still wait-free; the stale count is striped by slot so that threads missing on
     * different slots seldom share a line. */
    kiln_add_relaxed(ours ? &table->stale[index % KILN_HANDLES_STALE_STRIPES].count : &table->foreign, 1);
    return NULL;
}

/* ---------- the cache and the batch exchanges ---------- */

void kiln_handle_caches_init(kiln_handle_cache *caches, size_t count) {
    for (size_t i = 0; i < count; i++) {
        kiln_store_relaxed(&caches[i].serial, 0);
        kiln_store_relaxed(&caches[i].ready_count, 0);
        kiln_store_relaxed(&caches[i].freed_count, 0);
    }
}

void kiln_handle_cache_bind(kiln_handle_table *table, kiln_handle_cache *cache) {
    kiln_store_relaxed(&cache->ready_count, 0);
    kiln_store_relaxed(&cache->freed_count, 0);
    kiln_store_relaxed(&cache->allocs, 0);
    kiln_store_relaxed(&cache->frees, 0);
    kiln_store_relaxed(&cache->serial, table->serial);
}

/* The safe epoch. acquire: pairs with the owner's release store, so every read of an
 * item through an old handle happens before a slot judged reusable with it is zeroed. */
static uint64_t safe_epoch(const kiln_handle_table *table) {
    return kiln_load_acquire(table->safe_epoch);
}

/* Under the table's lock: gives the cache's freed slots to the ring. */
static void give_freed(kiln_handle_table *table, kiln_handle_cache *cache) {
    uint32_t n = kiln_load_relaxed(&cache->freed_count);
    kiln_handle_ring_append(&table->ring, cache->freed, n);
    kiln_handle_ring_promote(&table->ring, safe_epoch(table));   /* its frees of earlier frames */
    kiln_handle_ring_publish(&table->ring);
    kiln_store_relaxed(&cache->freed_count, 0);
}

/* Under the table's lock: fills the (empty) cache's ready list, reusable slots first
 * (the longest-freed first), then never-used ones. */
static void take_ready(kiln_handle_table *table, kiln_handle_cache *cache) {
    /* alloc pops from the top: the first taken goes there, so slots come out in order. */
    uint32_t reusable = kiln_handle_ring_reusable(&table->ring);
    uint32_t from_ring = reusable < KILN_HANDLES_BATCH ? reusable : KILN_HANDLES_BATCH;
    uint32_t fresh = table->capacity - table->fresh;
    uint32_t from_fresh = KILN_HANDLES_BATCH - from_ring < fresh ? KILN_HANDLES_BATCH - from_ring : fresh;
    uint32_t total = from_ring + from_fresh;
    kiln_handle_ring_take(&table->ring, &cache->ready[from_fresh], from_ring);
    for (uint32_t k = from_ring; k < total; k++) cache->ready[total - 1 - k] = table->fresh++;
    kiln_handle_ring_publish(&table->ring);
    kiln_store_relaxed(&cache->ready_count, total);
}

/* Zeroes the items of the cache's ready slots that were used before (a never-used slot,
 * generation 0, is still zero from the OS, and its pages stay untouched), so that the pop
 * that hands one out zeroes nothing: every pointer to the old item is gone (the safe
 * epoch made the slot reusable) and only this cache holds the slot. A slot that a flush
 * gives back unused is zeroed again when it is next taken. The cache's thread. */
static void zero_ready(kiln_handle_table *table, kiln_handle_cache *cache, uint32_t n) {
    for (uint32_t r = 0; r < n; r++) {
        kiln_handle_slot *slot = kiln_handle_slot_at(table, cache->ready[r]);
        if (kiln_handle_word_gen(kiln_load_relaxed(&slot->word)) != 0)
            memset(kiln_handle_item_of(table, slot), 0, table->item_size);
    }
}

kiln_handle kiln_handle_table_alloc_slow(kiln_handle_table *table, kiln_handle_cache *cache,
                                         void **item) {
    pthread_mutex_lock(&table->lock);
    give_freed(table, cache);
    take_ready(table, cache);
    pthread_mutex_unlock(&table->lock);
    uint32_t n = kiln_load_relaxed(&cache->ready_count);
    zero_ready(table, cache, n);
    if (n != 0) {
        if (kiln_load_relaxed(&table->full_warned)) kiln_store_relaxed(&table->full_warned, 0);
        return kiln_handle_cache_pop(table, cache, n, item);
    }
    kiln_add_relaxed(&table->failures, 1);
    if (kiln_exchange_relaxed(&table->full_warned, 1) == 0)
        kiln_log(&table->log, KILN_LOGITEM_HANDLES_FULL,
                 "kiln_handle_alloc: table '%s' is full: capacity %u, %u freed slots wait for a "
                 "frame end or a quiescent point, %llu retired", table->name, table->capacity,
                 kiln_load_relaxed(&table->ring.limbo_count),
                 (unsigned long long)kiln_load_relaxed(&table->retired));
    return (kiln_handle){ 0 };
}

bool kiln_handle_cache_push_last(kiln_handle_table *table, kiln_handle_cache *cache, kiln_handle h) {
    uint64_t seen;
    if (!kiln_handle_head_release(kiln_handle_table_head(table), h, &seen))
        return kiln_handle_refuse_seen(table, h, seen);
    kiln_owner_inc(&cache->frees);
    kiln_add_relaxed(&table->retired, 1);
    return true;
}

/* A generation the slot has not reached yet was never handed out: forged, not stale.
 * Generations never wrap (a slot retires before gen_max), so a plain compare; the one
 * exception, a slot retired from generation 2^32 - 1, whose free word reads 0, calls a
 * second free of that last handle forged. */
bool kiln_handle_table_refuse_free(kiln_handle_table *table, kiln_handle h, uint32_t seen_gen,
                                   bool ours) {
    uint32_t index = kiln_handle_index(h), gen = kiln_handle_generation(h);
    if (ours && seen_gen <= gen) ours = false;
    if (!ours) {
        kiln_add_relaxed(&table->foreign, 1);
        kiln_log_misuse(&table->log, h.bits ? KILN_LOGITEM_HANDLE_FOREIGN : KILN_LOGITEM_HANDLE_NULL,
                        "kiln_handle_free: table '%s': handle 0x%016llx %s; ignored", table->name,
                        (unsigned long long)h.bits,
                        h.bits ? "is not a handle of this table" : "is the zero handle");
        return false;
    }
    kiln_add_relaxed(&table->double_frees, 1);
    kiln_log_misuse(&table->log, KILN_LOGITEM_HANDLE_DOUBLE_FREE,
                    "kiln_handle_free: table '%s': handle 0x%016llx (slot %u, generation %u) is "
                    "stale: %s; ignored", table->name, (unsigned long long)h.bits, index, gen,
                    seen_gen == gen + 1 ? "it was freed already"
                                        : "it was freed and its slot reused since");
    return false;
}

void kiln_handle_cache_drain(kiln_handle_table *table, kiln_handle_cache *cache) {
    pthread_mutex_lock(&table->lock);
    give_freed(table, cache);
    pthread_mutex_unlock(&table->lock);
}

void kiln_handle_cache_flush(kiln_handle_table *table, kiln_handle_cache *cache) {
    if (!kiln_handle_cache_bound(table, cache)) return;
    pthread_mutex_lock(&table->lock);
    give_freed(table, cache);
    /* Ready slots are free and safe: stamped one epoch below the safe one, they are
     * promoted as soon as the entries before them are. */
    uint32_t ready = kiln_load_relaxed(&cache->ready_count);
    uint64_t stamp = safe_epoch(table) - 1;   /* the safe epoch is at least 1 */
    for (uint32_t r = ready; r-- > 0;)
        kiln_handle_ring_append(&table->ring,
                                &(kiln_reuse_entry){ .index = cache->ready[r], .epoch = stamp }, 1);
    kiln_handle_ring_promote(&table->ring, safe_epoch(table));
    kiln_handle_ring_publish(&table->ring);
    pthread_mutex_unlock(&table->lock);
    kiln_add_relaxed(&table->folded_allocs, kiln_load_relaxed(&cache->allocs));
    kiln_add_relaxed(&table->folded_frees, kiln_load_relaxed(&cache->frees));
    kiln_store_relaxed(&cache->ready_count, 0);
    kiln_store_relaxed(&cache->serial, 0);
}

void kiln_handle_cache_retire(kiln_handle_table *table, kiln_handle_cache *cache) {
    if (!kiln_handle_cache_bound(table, cache)) return;
    /* An unbound cache holds no slot: alloc through the destroyed table (serial 0 too)
     * then finds it empty and is refused, never pops a slot of the unmapped table. */
    kiln_store_relaxed(&cache->ready_count, 0);
    kiln_store_relaxed(&cache->freed_count, 0);
    kiln_store_relaxed(&cache->serial, 0);
}

/* ---------- the live-item walk ---------- */

uint32_t kiln_handle_table_used_slots(kiln_handle_table *table) {
    pthread_mutex_lock(&table->lock);   /* fresh is the exchanges' */
    uint32_t used = table->fresh;
    pthread_mutex_unlock(&table->lock);
    return used;
}

void kiln_handle_table_walk(const kiln_handle_table *table, uint32_t begin, uint32_t end,
                            kiln_handle_visit_fn fn, void *user) {
    for (uint32_t index = begin; index < end; index++) {
        kiln_handle_slot *slot = kiln_handle_slot_at(table, index);
        /* acquire: pairs with alloc's release store, as in get: the zeroed item, and what
         * the allocating thread wrote before publishing the slot, is visible to fn. */
        uint64_t word = kiln_load_acquire(&slot->word);
        if (kiln_handle_word_live(word))
            fn(user, kiln_handle_make(table, index, kiln_handle_word_gen(word)), kiln_handle_item_of(table, slot));
    }
}

/* ---------- reuse and figures ---------- */

void kiln_handle_table_promote(kiln_handle_table *table, uint64_t safe) {
    pthread_mutex_lock(&table->lock);
    kiln_handle_ring_promote(&table->ring, safe);
    kiln_handle_ring_publish(&table->ring);
    pthread_mutex_unlock(&table->lock);
}

bool kiln_handle_tally_begin(const kiln_handle_table *table, kiln_handle_tally *tally) {
    *tally = (kiln_handle_tally){
        .allocs = kiln_load_relaxed(&table->folded_allocs),
        .frees = kiln_load_relaxed(&table->folded_frees),
    };
    if (table->serial == 0) return false;
    tally->safe = safe_epoch(table);
    return true;
}

void kiln_handle_tally_cache(const kiln_handle_table *table, const kiln_handle_cache *cache,
                             kiln_handle_tally *tally) {
    if (!kiln_handle_cache_bound(table, cache)) return;
    tally->allocs += kiln_load_relaxed(&cache->allocs);
    tally->frees += kiln_load_relaxed(&cache->frees);
    /* A cache's freed list is in epoch order: if its newest entry is reusable, all are;
     * otherwise all count as pending (some may be reusable already: a bound). */
    if (!kiln_epoch_reusable(kiln_load_relaxed(&cache->freed_last_epoch), tally->safe))
        tally->pending += kiln_load_relaxed(&cache->freed_count);
}

/* allocs - frees of a tally. Its caches are read one after another while their threads
 * go on, so an item allocated through a cache already read and freed through one read
 * later is a free without its alloc: such a sum is at least 0, never a wrapped count. */
static uint64_t tally_live(const kiln_handle_tally *tally) {
    return tally->allocs > tally->frees ? tally->allocs - tally->frees : 0;
}

void kiln_handle_table_sample_peak(kiln_handle_table *table, const kiln_handle_tally *tally) {
    uint64_t live = tally_live(tally);
    kiln_max_relaxed_u64(&table->peak_live, live);
    if (kiln_near_limit_sample_shared(&table->near_warned, live, table->capacity, table->warn_percent,
                                      true))
        kiln_log(&table->log, KILN_LOGITEM_HANDLES_CAPACITY_NEAR,
                 "handle table '%s': %llu of its capacity of %u items are live (%llu%%), at or over "
                 "warn_percent %u%%", table->name, (unsigned long long)live, table->capacity,
                 (unsigned long long)(live * 100 / table->capacity), table->warn_percent);
}

void kiln_handle_table_stats(kiln_handle_table *table, const kiln_handle_tally *tally,
                             kiln_handles_stats *out) {
    kiln_handle_table_sample_peak(table, tally);
    uint64_t stale = 0;
    for (int i = 0; i < KILN_HANDLES_STALE_STRIPES; i++) stale += kiln_load_relaxed(&table->stale[i].count);
    *out = (kiln_handles_stats){
        .item_size = table->item_size,
        .capacity = table->capacity_asked,
        .live = tally_live(tally),
        .peak_live = kiln_load_relaxed(&table->peak_live),
        .allocs = tally->allocs,
        .frees = tally->frees,
        .failures = kiln_load_relaxed(&table->failures),
        .stale_lookups = stale,
        .double_frees = kiln_load_relaxed(&table->double_frees),
        .foreign_handles = kiln_load_relaxed(&table->foreign),
        .retired_slots = kiln_load_relaxed(&table->retired),
        .pending_reuse = kiln_load_relaxed(&table->ring.limbo_count) + tally->pending,
    };
    memcpy(out->name, table->name, sizeof out->name);
}
