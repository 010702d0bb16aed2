/* runtime/handles.c — generational handle tables: create and destroy, the wait-free get,
 * alloc and free through each context's cache of free slots, the deferred reuse of freed
 * slots (the reclaim epoch, advanced at frame end), and the tables' statistics.
 * The layout and the ownership of every field: runtime/handles.h. */
#include "runtime_internal.h"

#include "../alloc/os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide, so that a table of another runtime has another tag and a cache never
 * matches a table it was not bound to. Relaxed: only uniqueness matters. */
static _Atomic uint32_t next_tag;
static _Atomic uint64_t next_serial;

#define HANDLES_DEFAULT_CAPACITY  65536u
#define HANDLES_MAX_ITEM          ((size_t)1 << 20)
#define HANDLES_MAX_ALIGN         4096u

static inline kiln_handle make_handle(const kiln_handles *table, uint32_t index, uint32_t gen) {
    return (kiln_handle){ (uint64_t)gen << 32 | table->tag_bits | index };
}

static inline void *item_of(const kiln_handles *table, kiln_handle_slot *slot) {
    return (char *)slot + table->header;
}

/* ---------- create and destroy ---------- */

static bool desc_valid(kiln_runtime *rt, const kiln_handles_desc *desc, const char *name) {
    kiln_log_item item = KILN_LOGITEM_NONE;
    const char *bad = NULL;
    if (desc->item_size == 0 || desc->item_size > HANDLES_MAX_ITEM)
        item = KILN_LOGITEM_HANDLES_BAD_ITEM_SIZE, bad = "item_size must be 1 byte to 1 MiB";
    else if (desc->item_align && (!kiln_is_pow2(desc->item_align) || desc->item_align > HANDLES_MAX_ALIGN))
        item = KILN_LOGITEM_HANDLES_BAD_ALIGN, bad = "item_align must be a power of two up to 4096";
    else if (desc->capacity > KILN_HANDLES_MAX_CAPACITY)
        item = KILN_LOGITEM_HANDLES_BAD_CAPACITY, bad = "capacity must be at most 16777215";
    if (bad)
        kiln_log_misuse(&rt->log, item,
                        "kiln_handles_create: table '%s': %s (item_size %zu, item_align %zu, "
                        "capacity %u)", name, bad, desc->item_size, desc->item_align, desc->capacity);
    return bad == NULL;
}

/* Fills the read-only layout and maps the slots. false when the block pool refuses. */
static bool table_init(kiln_runtime *rt, kiln_handles *table, const kiln_handles_desc *desc,
                       const char *name, uint32_t index) {
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
    table->slots = kiln_block_pool_map_large(&rt->pool, table->map_bytes, map_align);
    if (!table->slots) return false;   /* the block pool logged the refusal */
    table->ring = (kiln_reuse_entry *)(table->slots + ring_offset);
    if (!kiln_handles_sites_init(table, rt->desc.debug)) {
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_OUT_OF_MEMORY,
                 "kiln_handles_create: table '%s': no memory for its allocation-site array", name);
        kiln_block_pool_unmap_large(&rt->pool, table->slots, table->map_bytes);
        return false;
    }
    snprintf(table->name, sizeof table->name, "%s", name);
    table->tag_bits = (kiln_add_relaxed(&next_tag, 1) % 255u + 1u) << KILN_HANDLE_TAG_SHIFT;
    table->serial = kiln_add_relaxed(&next_serial, 1) + 1;
    table->index = index;
    table->gen_max = UINT32_MAX;
    table->owner = rt;
    table->log = rt->log;
    pthread_mutex_init(&table->lock, NULL);
    return true;
}

kiln_handles *kiln_handles_create(kiln_runtime *rt, const kiln_handles_desc *desc) {
    if (!kiln_runtime_check(rt, "kiln_handles_create")) return NULL;
    if (!desc) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HANDLES_NULL_DESC, "kiln_handles_create: desc is NULL");
        return NULL;
    }
    const char *name = desc->name ? desc->name : "handles";
    if (!desc_valid(rt, desc, name)) return NULL;
    kiln_handles *table = kiln_heap_aligned(KILN_CACHE_LINE, sizeof *table);
    if (!table) {
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_OUT_OF_MEMORY,
                 "kiln_handles_create: no memory for table '%s'", name);
        return NULL;
    }
    memset(table, 0, sizeof *table);
    pthread_mutex_lock(&rt->registry_lock);
    int slot = -1;
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES && slot < 0; i++)
        if (!rt->handle_tables[i]) slot = i;
    bool made = slot >= 0 && table_init(rt, table, desc, name, (uint32_t)slot);
    if (made) {
        rt->handle_tables[slot] = table;
        kiln_store_relaxed(&rt->handle_table_count, kiln_load_relaxed(&rt->handle_table_count) + 1);
    }
    pthread_mutex_unlock(&rt->registry_lock);
    if (slot < 0)
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HANDLES_TOO_MANY, "kiln_handles_create: table '%s': all %d "
                        "table slots are in use", name, KILN_MAX_HANDLE_TABLES);
    if (!made) kiln_heap_free(table);
    return made ? table : NULL;
}

static bool table_destroyed(kiln_handles *table, const char *function) {
    if (kiln_likely(table->serial != 0)) return false;
    kiln_log_misuse(&table->log, KILN_LOGITEM_HANDLES_DESTROYED,
                    "%s: table '%s' has been destroyed; refused", function, table->name);
    return true;
}

void kiln_handles_destroy(kiln_handles *table) {
    if (!table || table_destroyed(table, "kiln_handles_destroy")) return;
    kiln_runtime *rt = table->owner;
    pthread_mutex_lock(&rt->registry_lock);
    uint64_t allocs, frees, pending;
    kiln_handles_tally(table, &allocs, &frees, &pending);
    if (allocs != frees)
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_ITEMS_LIVE,
                 "kiln_handles_destroy: table '%s' still has %llu live items; their memory is "
                 "returned now", table->name, (unsigned long long)(allocs - frees));
    kiln_handles_report_leaks(table);   /* KILN_DEBUG_SITES: by allocation site */
    /* No thread may use the table now (the contract): every cache can be folded and
     * unbound, and the slots returned. get, alloc and free through a stale pointer then
     * meet serial 0 and capacity 0 and are refused. */
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next) {
        kiln_handle_cache *cache = &ctx->handle_caches[table->index];
        if (kiln_load_relaxed(&cache->serial) != table->serial) continue;
        /* An unbound cache holds no slot: alloc through the destroyed table (serial 0
         * too) then finds it empty and is refused, never pops a slot of the unmapped table. */
        kiln_store_relaxed(&cache->ready_count, 0);
        kiln_store_relaxed(&cache->freed_count, 0);
        kiln_store_relaxed(&cache->serial, 0);
    }
    kiln_store_relaxed(&table->folded_allocs, allocs);
    kiln_store_relaxed(&table->folded_frees, frees);
    kiln_store_relaxed(&table->limbo_count, 0);
    kiln_store_relaxed(&table->reusable_count, 0);
    table->ring = NULL;
    kiln_block_pool_unmap_large(&rt->pool, table->slots, table->map_bytes);
    kiln_handles_sites_fini(table);
    table->slots = NULL;
    table->capacity = 0;
    table->serial = 0;
    rt->handle_tables[table->index] = NULL;
    kiln_store_relaxed(&rt->handle_table_count, kiln_load_relaxed(&rt->handle_table_count) - 1);
    table->dead_next = rt->dead_handle_tables;
    rt->dead_handle_tables = table;
    pthread_mutex_unlock(&rt->registry_lock);
    pthread_mutex_destroy(&table->lock);
}

void kiln_runtime_handles_fini(kiln_runtime *rt) {
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (!table) continue;
        kiln_log(&rt->log, KILN_LOGITEM_HANDLES_STILL_ALIVE,
                 "kiln_destroy: handle table '%s' is still alive; destroying it", table->name);
        kiln_handles_destroy(table);
    }
    for (kiln_handles *table = rt->dead_handle_tables, *next; table; table = next) {
        next = table->dead_next;
        kiln_heap_free(table);
    }
    rt->dead_handle_tables = NULL;
}

void kiln_handles_set_generation_limit(kiln_handles *table, uint32_t max_generation) {
    table->gen_max = max_generation | 1u;
}

/* ---------- get ---------- */

/* Why a lookup missed, counted; never logged (a stale lookup is normal use). */
static KILN_COLD void *get_miss(kiln_handles *table, kiln_handle h) {
    if (!table) {
        kiln_log_misuse(NULL, KILN_LOGITEM_HANDLES_NULL, "kiln_handle_get: the table is NULL");
        return NULL;
    }
    if (table_destroyed(table, "kiln_handle_get")) return NULL;
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

void *kiln_handle_get(kiln_handles *table, kiln_handle h) {
    uint32_t index = kiln_handle_index(h);
    uint32_t gen = kiln_handle_generation(h);
    if (kiln_likely(table && (uint32_t)h.bits - index == table->tag_bits && index < table->capacity)) {
        kiln_handle_slot *slot = kiln_handle_slot_at(table, index);
        /* acquire: pairs with alloc's release store, so the zeroed item is visible. The
         * parity test refuses a forged even generation that would match a freed slot. */
        if (kiln_likely(kiln_load_acquire(&slot->gen) == gen && (gen & 1u)))
            return item_of(table, slot);
    }
    return get_miss(table, h);
}

/* ---------- the per-context cache ---------- */

void kiln_handle_caches_init(kiln_handle_cache *caches, size_t count) {
    for (size_t i = 0; i < count; i++) {
        kiln_store_relaxed(&caches[i].serial, 0);
        kiln_store_relaxed(&caches[i].ready_count, 0);
        kiln_store_relaxed(&caches[i].freed_count, 0);
    }
}

/* Binds the cache to this life of the table (after an attach, or when a new table took
 * the slot of a destroyed one: what the cache held belonged to the old table). */
static void cache_bind(kiln_handles *table, kiln_handle_cache *cache) {
    kiln_store_relaxed(&cache->ready_count, 0);
    kiln_store_relaxed(&cache->freed_count, 0);
    kiln_store_relaxed(&cache->allocs, 0);
    kiln_store_relaxed(&cache->frees, 0);
    kiln_store_relaxed(&cache->serial, table->serial);
}

/* Checks the arguments of a slow path (NULLs, a destroyed table, a context that is not
 * attached — a detached one's cache would strand the slots it takes — or one of another
 * runtime) and binds the cache when it is not bound yet; NULL when refused (logged). A
 * detached context's caches were unbound at its detach, so its every call comes here. */
static kiln_handle_cache *cache_for(kiln_ctx *ctx, kiln_handles *table, const char *function) {
    if (!ctx || !table) {
        kiln_log_misuse(table ? &table->log : kiln_ctx_log(ctx), ctx ? KILN_LOGITEM_HANDLES_NULL : KILN_LOGITEM_CONTEXT_NULL,
                        "%s: the %s is NULL", function, ctx ? "table" : "context");
        return NULL;
    }
    if (table_destroyed(table, function)) return NULL;
    if (!kiln_ctx_may_use(ctx, table->owner, &table->log, KILN_LOGITEM_HANDLES_WRONG_RUNTIME, function,
                          "table", table->name))
        return NULL;
    kiln_handle_cache *cache = &ctx->handle_caches[table->index];
    if (kiln_load_relaxed(&cache->serial) != table->serial) {
        pthread_mutex_lock(&ctx->rt->registry_lock);   /* stats readers sum bound caches */
        cache_bind(table, cache);
        pthread_mutex_unlock(&ctx->rt->registry_lock);
    }
    return cache;
}

/* ---------- alloc ---------- */

/* Hands out the top slot of a cache that has n > 0 ready. */
static inline kiln_handle alloc_from(kiln_handles *table, kiln_handle_cache *cache, uint32_t n,
                                     void **item) {
    uint32_t index = cache->ready[--n];
    kiln_store_relaxed(&cache->ready_count, n);
    kiln_handle_slot *slot = kiln_handle_slot_at(table, index);
    uint32_t gen = kiln_load_relaxed(&slot->gen) + 1;   /* was even: free; only we hold it */
    void *p = item_of(table, slot);
    if (gen != 1) memset(p, 0, table->item_size);       /* generation 0: zero from the OS */
    /* release: the zeroed item happens before any get that sees the new generation. */
    kiln_store_release(&slot->gen, gen);
    kiln_owner_add(&cache->allocs, 1);
    if (item) *item = p;
    return make_handle(table, index, gen);
}

/* The cache is empty, unbound, or the arguments are bad: exchange a batch with the table
 * (its own freed slots go back first, so its frees of earlier frames come back too). */
static KILN_COLD kiln_handle alloc_slow(kiln_ctx *ctx, kiln_handles *table, void **item) {
    if (item) *item = NULL;
    kiln_handle_cache *cache = cache_for(ctx, table, "kiln_handle_alloc");
    if (!cache) return (kiln_handle){ 0 };
    pthread_mutex_lock(&table->lock);
    kiln_handles_give_freed(table, cache);
    kiln_handles_take_ready(table, cache);
    pthread_mutex_unlock(&table->lock);
    uint32_t n = kiln_load_relaxed(&cache->ready_count);
    if (n != 0) {
        if (kiln_load_relaxed(&table->full_warned)) kiln_store_relaxed(&table->full_warned, 0);
        return alloc_from(table, cache, n, item);
    }
    kiln_add_relaxed(&table->failures, 1);
    if (kiln_exchange_relaxed(&table->full_warned, 1) == 0)
        kiln_log(&table->log, KILN_LOGITEM_HANDLES_FULL,
                 "kiln_handle_alloc: table '%s' is full: capacity %u, %u freed slots wait for a "
                 "frame end or a quiescent point, %llu retired", table->name, table->capacity,
                 kiln_load_relaxed(&table->limbo_count),
                 (unsigned long long)kiln_load_relaxed(&table->retired));
    return (kiln_handle){ 0 };
}

kiln_handle kiln_handle_alloc(kiln_ctx *ctx, kiln_handles *table, void **item) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !table)) return alloc_slow(ctx, table, item);
    kiln_handle_cache *cache = &ctx->handle_caches[table->index];
    uint32_t n = kiln_load_relaxed(&cache->ready_count);
    if (kiln_unlikely(kiln_load_relaxed(&cache->serial) != table->serial || n == 0))
        return alloc_slow(ctx, table, item);
    return alloc_from(table, cache, n, item);
}

/* ---------- free ---------- */

/* Why a free was refused: logged and counted. ours: the handle has this table's tag,
 * an index in range and an odd generation; seen_gen is the slot's generation then. A
 * generation the slot has not reached yet was never handed out: forged, not stale. */
static KILN_COLD bool refuse_free(kiln_handles *table, kiln_handle h, uint32_t seen_gen, bool ours) {
    uint32_t index = kiln_handle_index(h), gen = kiln_handle_generation(h);
    if (ours && (int32_t)(seen_gen - gen) <= 0) ours = false;
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

/* Whether h has this table's tag, an index in range and a live (odd) generation. */
static inline bool handle_shape_ok(const kiln_handles *table, kiln_handle h) {
    uint32_t index = kiln_handle_index(h);
    return (uint32_t)h.bits - index == table->tag_bits && index < table->capacity &&
           (kiln_handle_generation(h) & 1u);
}

/* Frees a well-shaped handle into a bound cache with room. */
static inline bool free_into(kiln_handles *table, kiln_handle_cache *cache, kiln_handle h) {
    uint32_t index = kiln_handle_index(h), gen = kiln_handle_generation(h);
    kiln_handle_slot *slot = kiln_handle_slot_at(table, index);
    /* seq_cst: of two threads freeing the same handle exactly one wins, and the stale
     * generation comes before the epoch read below in the single total order, which the
     * reuse rule needs (runtime/handles.h). */
    uint32_t seen = gen;
    if (kiln_unlikely(!kiln_cas_strong_seq_cst(&slot->gen, &seen, gen + 1)))
        return refuse_free(table, h, seen, true);
    kiln_owner_add(&cache->frees, 1);
    if (kiln_unlikely((uint64_t)gen + 2 > table->gen_max)) {   /* generations ran out */
        kiln_add_relaxed(&table->retired, 1);
        return true;
    }
    uint32_t epoch = (uint32_t)kiln_load_seq_cst(&table->owner->handle_epoch);
    uint32_t n = kiln_load_relaxed(&cache->freed_count);
    cache->freed[n] = (kiln_reuse_entry){ index, epoch };
    kiln_store_relaxed(&cache->freed_last_epoch, epoch);
    kiln_store_relaxed(&cache->freed_count, n + 1);
    return true;
}

/* Bad arguments, an unbound cache or a full freed list: checked, bound, flushed. */
static KILN_COLD bool free_slow(kiln_ctx *ctx, kiln_handles *table, kiln_handle h) {
    kiln_handle_cache *cache = cache_for(ctx, table, "kiln_handle_free");
    if (!cache) return false;
    if (!handle_shape_ok(table, h)) return refuse_free(table, h, 0, false);
    if (kiln_load_relaxed(&cache->freed_count) == KILN_HANDLES_BATCH) {
        pthread_mutex_lock(&table->lock);
        kiln_handles_give_freed(table, cache);
        pthread_mutex_unlock(&table->lock);
    }
    return free_into(table, cache, h);
}

bool kiln_handle_free(kiln_ctx *ctx, kiln_handles *table, kiln_handle h) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx) || !table)) return free_slow(ctx, table, h);
    kiln_handle_cache *cache = &ctx->handle_caches[table->index];
    if (kiln_unlikely(!handle_shape_ok(table, h) ||
                      kiln_load_relaxed(&cache->serial) != table->serial ||
                      kiln_load_relaxed(&cache->freed_count) == KILN_HANDLES_BATCH))
        return free_slow(ctx, table, h);
    return free_into(table, cache, h);
}

/* ---------- statistics ---------- */

/* Under registry_lock (tally_caches walks the contexts). */
static void stats_read(kiln_handles *table, kiln_handles_stats *out) {
    uint64_t allocs, frees, pending;
    kiln_handles_tally(table, &allocs, &frees, &pending);
    uint64_t live = allocs - frees;
    kiln_max_relaxed_u64(&table->peak_live, live);
    uint64_t stale = 0;
    for (int i = 0; i < KILN_HANDLES_STALE_STRIPES; i++) stale += kiln_load_relaxed(&table->stale[i].count);
    *out = (kiln_handles_stats){
        .item_size = table->item_size,
        .capacity = table->capacity_asked,
        .live = live,
        .peak_live = kiln_load_relaxed(&table->peak_live),
        .allocs = allocs,
        .frees = frees,
        .failures = kiln_load_relaxed(&table->failures),
        .stale_lookups = stale,
        .double_frees = kiln_load_relaxed(&table->double_frees),
        .foreign_handles = kiln_load_relaxed(&table->foreign),
        .retired_slots = kiln_load_relaxed(&table->retired),
        .pending_reuse = kiln_load_relaxed(&table->limbo_count) + pending,
    };
    memcpy(out->name, table->name, sizeof out->name);
}

size_t kiln_stats_handles(kiln_runtime *rt, kiln_handles_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_handles")) return 0;
    size_t count = 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (int i = 0; i < KILN_MAX_HANDLE_TABLES; i++) {
        kiln_handles *table = rt->handle_tables[i];
        if (!table) continue;
        if (count < cap) stats_read(table, &out[count]);
        count++;
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return count;
}

bool kiln_handles_stats_get(kiln_handles *table, kiln_handles_stats *out) {
    if (!kiln_stats_args_ok(table ? &table->log : NULL, table, KILN_LOGITEM_HANDLES_NULL, "the table", out, sizeof *out,
                            "kiln_handles_stats_get"))
        return false;
    kiln_runtime *rt = table->owner;
    pthread_mutex_lock(&rt->registry_lock);
    stats_read(table, out);
    pthread_mutex_unlock(&rt->registry_lock);
    return true;
}
