/* alloc/heap.c — the general heap's classes, tags and credit, realloc, and finding a
 * pointer (alloc/heap.h). Large allocations are alloc/heap_large.c's. */
#include "heap.h"

#include <stdio.h>
#include <string.h>

static const kiln_tag_payer heap_payer = { "heap", "credit" };

/* Whether a class of size bytes surely fits a block with every debug layout (guards on
 * each side, the header, its entries and bytes): at least two slots. */
static bool class_fits(const kiln_heap_config *config, size_t size) {
    size_t usable = kiln_debug_block_usable(config->debug, config->blocks->block_size);
    return size <= config->blocks->block_size / 4 && 2 * (size + 64 + 16 + 1) + 512 <= usable;
}

/* A class's magazines: about 32 KiB of objects, 8 to 128 of them. Larger than a pool's
 * default (8 KiB): a heap's sizes mix, so each class sees a share of the traffic, and an
 * exchange with the depot per 16 allocations of a 512-byte class cost more than the
 * allocations themselves (H3). A context then holds at most 64 KiB idle per class. */
static uint32_t magazine_size(size_t size) {
    size_t n = 32768 / size;
    return n > 128 ? 128 : n < 8 ? 8 : (uint32_t)n;
}

void kiln_heap_init(kiln_heap *heap, const kiln_heap_config *config) {
    heap->blocks = config->blocks;
    heap->log = config->log;
    heap->debug = config->debug;
    heap->exchange = (config->debug & KILN_DEBUG_CHECKS) != 0;
    heap->accounts = config->accounts;
    heap->untagged = config->untagged;
    kiln_heap_large_init(&heap->large);
    pthread_rwlock_init(&heap->fork_gate, NULL);   /* readers first: a carver may nest */
    uint32_t c = 0;
    bool hooked = false;
    for (; c < KILN_SIZE_CLASSES; c++) {
        size_t size = kiln_size_class_bytes(c);
        if (!class_fits(config, size)) break;
        kiln_pool_config pool_config = {
            .blocks = config->blocks,
            .desc = { .size = size, .align = (size & -size) < 4096 ? (size & -size) : 4096,
                      .magazine_size = magazine_size(size) },
            .index = UINT32_MAX,   /* no runtime slot: the heap's caches are its own */
            .serial = kiln_pool_serial_new(),
            .log = config->log,
            .debug = config->debug,
            .audit_sample = config->audit_sample,
            .warn_percent = config->warn_percent,
            .slot_tags = true,
            .shared_known = (_Atomic uintptr_t *)(void *)heap->head.known,
            .shared_class = c,
            .fork_gate = &heap->fork_gate,
        };
        char name[24];
        snprintf(name, sizeof name, "heap %zu", size);
        pool_config.desc.name = name;
        if (!kiln_pool_init(&heap->classes[c], &pool_config)) break;
        const kiln_pool *pool = &heap->classes[c];
        heap->head.classes[c] = (kiln_heap_class_head){
            .size = (uint32_t)pool->slot, .first_offset = (uint32_t)pool->first_offset,
            .tags_offset = (uint32_t)pool->tags_offset, .last_start = (uint32_t)pool->last_start,
            .slot_recip = pool->slot_recip,
        };
        hooked |= (pool->flags & (KILN_POOL_ALLOC_HOOKS | KILN_POOL_FREE_HOOKS)) != 0;
    }
    heap->class_count = c;
    heap->class_max = c ? kiln_size_class_bytes(c - 1) : 0;
    /* The inline paths: none with a hook (the debug layer) or the exchanging free. */
    heap->head.class_max = hooked || heap->exchange ? 0 : heap->class_max;
    heap->head.block_shift = config->blocks->map.block_shift;
}

void kiln_heap_cache_init(kiln_heap_cache *cache) {
    for (uint32_t c = 0; c < KILN_SIZE_CLASSES; c++) kiln_pool_cache_unbind(&cache->classes[c]);
    for (unsigned t = 0; t < KILN_HEAP_TAG_BYTES; t++) {
        kiln_store_relaxed(&cache->tags[t].credit, 0);
        kiln_store_relaxed(&cache->tags[t].allocs, 0);
        kiln_store_relaxed(&cache->tags[t].frees, 0);
    }
}

void kiln_heap_cache_flush(kiln_heap *heap, kiln_heap_cache *cache) {
    for (uint32_t c = 0; c < heap->class_count; c++)
        if (kiln_pool_cache_bound(&heap->classes[c], &cache->classes[c]))
            kiln_pool_cache_flush(&heap->classes[c], &cache->classes[c]);
    for (unsigned t = 0; t < KILN_HEAP_TAG_BYTES; t++) {
        kiln_heap_tag_use *use = &cache->tags[t];
        kiln_tag_account *account = kiln_heap_account(heap, (uint8_t)t);
        int64_t credit = kiln_load_relaxed(&use->credit);
        if (account && credit > 0) kiln_tag_give_back(account, (uint64_t)credit);
        kiln_add_relaxed(&heap->retired_allocs[t], kiln_load_relaxed(&use->allocs));
        kiln_add_relaxed(&heap->retired_frees[t], kiln_load_relaxed(&use->frees));
    }
    kiln_heap_cache_init(cache);
}

static KILN_COLD void *failed(kiln_heap *heap) {
    kiln_add_relaxed(&heap->failures, 1);
    return NULL;
}

/* ---- credit ---- */

/* The bytes every REFUSE budget on tag's way has room for now (UINT64_MAX: none). A
 * glance, not a promise: the draw itself is judged by CAS. */
static uint64_t budget_room(const kiln_tag_account *account) {
    uint64_t room = UINT64_MAX;
    for (const kiln_tag_account *level = account; level; level = level->parent) {
        if (!level->refuse || level->budget == 0) continue;
        uint64_t live = kiln_load_relaxed(&level->live);
        uint64_t left = live < level->budget ? level->budget - live : 0;
        if (left < room) room = left;
    }
    return room;
}

/* Raises use's credit to at least need: a chunk, or just what is missing when a REFUSE
 * budget has no room for a chunk. false when the tag (or a parent) refuses. */
static KILN_COLD bool draw_credit(kiln_heap *heap, kiln_heap_tag_use *use, uint8_t tag, int64_t need) {
    kiln_tag_account *account = kiln_heap_account(heap, tag);
    int64_t credit = kiln_load_relaxed(&use->credit);
    uint64_t missing = (uint64_t)(need - credit);
    uint64_t chunk = missing > KILN_HEAP_TAG_CREDIT ? missing : KILN_HEAP_TAG_CREDIT;
    if (chunk > missing && budget_room(account) < chunk) chunk = missing;
    if (!kiln_tag_draw(account, chunk, heap_payer)) return false;
    kiln_store_relaxed(&use->credit, credit + (int64_t)chunk);
    return true;
}

/* use holds more than twice a chunk: gives back all but one. */
static KILN_COLD void give_back_credit(kiln_heap *heap, kiln_heap_tag_use *use, uint8_t tag) {
    uint64_t extra = (uint64_t)kiln_load_relaxed(&use->credit) - KILN_HEAP_TAG_CREDIT;
    kiln_tag_give_back(kiln_heap_account(heap, tag), extra);
    kiln_store_relaxed(&use->credit, (int64_t)KILN_HEAP_TAG_CREDIT);
}

/* Before a large charge to a REFUSE tag: the calling context's credit of it goes back, so
 * that its own leftovers never refuse it (only other contexts' credit may). */
static void give_back_own_credit(kiln_heap *heap, kiln_heap_cache *cache, uint8_t tag) {
    kiln_tag_account *account = kiln_heap_account(heap, tag);
    kiln_heap_tag_use *use = &cache->tags[tag];
    int64_t credit = kiln_load_relaxed(&use->credit);
    if (!account->refuse || credit <= 0) return;
    kiln_tag_give_back(account, (uint64_t)credit);
    kiln_store_relaxed(&use->credit, 0);
}

/* Whether extra bytes more fit the tag's REFUSE budgets and memory_limit now (a glance):
 * the growth's headroom is asked for only then, so that it is never what gets refused,
 * counted and logged. */
static bool headroom_fits(const kiln_heap *heap, uint8_t tag, size_t extra) {
    return kiln_block_pool_has_room(heap->blocks, extra) &&
           budget_room(kiln_heap_account(heap, tag)) >= extra;
}

/* ---- class allocations ---- */

static inline _Atomic uint8_t *slot_byte(const kiln_pool *pool, uintptr_t block, uintptr_t offset) {
    return (_Atomic uint8_t *)(block + pool->tags_offset) + kiln_pool_slot_of(pool, offset);
}

/* The class for size bytes aligned to align (16 or more, a power of two), or
 * class_count for none (large). */
static uint32_t class_for(const kiln_heap *heap, size_t size, size_t align) {
    if (size > heap->class_max || align > 4096) return heap->class_count;   /* a pool's most */
    uint32_t c = kiln_size_class(size > align ? size : align);
    while (c < heap->class_count && (kiln_size_class_bytes(c) & (align - 1)) != 0) c++;
    return c;
}

static void *alloc_class(kiln_heap *heap, kiln_heap_cache *cache, uint32_t c, uint8_t tag,
                         kiln_debug_site site) {
    kiln_pool *pool = &heap->classes[c];
    kiln_heap_tag_use *use = &cache->tags[tag];
    int64_t size = (int64_t)pool->size;
    if (kiln_unlikely(kiln_load_relaxed(&use->credit) < size) && !draw_credit(heap, use, tag, size))
        return failed(heap);
    void *obj = kiln_pool_cache_alloc(pool, &cache->classes[c]);
    if (kiln_unlikely(!obj) && kiln_heap_large_make_way(heap, heap->blocks->block_size))
        obj = kiln_pool_cache_alloc(pool, &cache->classes[c]);   /* the kept mappings went */
    if (kiln_unlikely(!obj)) return failed(heap);
    kiln_store_relaxed(&use->credit, kiln_load_relaxed(&use->credit) - size);
    kiln_owner_inc(&use->allocs);
    uintptr_t block = (uintptr_t)obj & ~(uintptr_t)pool->block_mask;
    kiln_store_relaxed(slot_byte(pool, block, (uintptr_t)obj - block - pool->first_offset), tag);
    if (kiln_unlikely(site.file != NULL) && (pool->debug & KILN_DEBUG_SITES))
        kiln_pool_debug_site(pool, obj, site);
    return obj;
}

void *kiln_heap_alloc_in(kiln_heap *heap, kiln_heap_cache *cache, uint8_t tag, size_t size,
                         size_t align, bool zero, kiln_debug_site site) {
    if (align < 16) align = 16;
    uint32_t c = class_for(heap, size, align);
    if (kiln_likely(c < heap->class_count)) {
        void *obj = alloc_class(heap, cache, c, tag, site);
        if (zero && obj) memset(obj, 0, size);
        return obj;
    }
    give_back_own_credit(heap, cache, tag);
    void *p = kiln_heap_large_alloc(heap, tag, size ? size : 1, align, zero, site);
    return p ? p : failed(heap);
}

/* ---- finding a pointer ---- */

/* Where ptr lies: a class slot's start (*pool, *block, *offset set), or not. Reads only
 * block headers of the block pool's (mapped while the runtime lives). */
static int locate_class(const kiln_heap *heap, const void *ptr, kiln_pool **pool_out,
                        uintptr_t *block_out, uintptr_t *offset_out) {
    uintptr_t addr = (uintptr_t)ptr, shift = heap->head.block_shift;
    uintptr_t known = kiln_load_relaxed((const _Atomic uintptr_t *)&heap->head.known[(addr >> shift) %
                                                                                     KILN_HEAP_HEAD_KNOWN]);
    const kiln_pool_block *b;
    kiln_pool *pool;
    if (known != 0 && ((addr ^ known) >> shift) == 0) {   /* a known class block: no header read */
        b = (const kiln_pool_block *)(known & ~(uintptr_t)63);
        pool = (kiln_pool *)&heap->classes[known & 63];
    } else {
        if (!kiln_block_pool_owns(heap->blocks, ptr)) return KILN_HEAP_LARGE;   /* or nobody's */
        b = kiln_block_of(heap->blocks, ptr);
        uintptr_t index = (uintptr_t)b->pool - (uintptr_t)heap->classes;
        if (b->magic != KILN_POOL_BLOCK_MAGIC || index >= sizeof heap->classes ||
            index % sizeof(kiln_pool) != 0)
            return KILN_HEAP_NOT_OURS;   /* another allocator's block, or a free one */
        pool = b->pool;
        if (b->serial != kiln_load_relaxed(&pool->serial)) return KILN_HEAP_NOT_OURS;
    }
    uintptr_t offset = (uintptr_t)ptr - (uintptr_t)b - pool->first_offset;
    if (offset > pool->last_start)   /* the header (wrapped round), or past the last slot */
        return (uintptr_t)ptr >= (uintptr_t)b + pool->first_offset &&
               offset < pool->last_start + pool->slot ? KILN_HEAP_INTERIOR : KILN_HEAP_NOT_OURS;
    if ((uint64_t)kiln_pool_slot_of(pool, offset) * pool->slot != offset) return KILN_HEAP_INTERIOR;
    *pool_out = pool;
    *block_out = (uintptr_t)b;
    *offset_out = offset;
    return KILN_HEAP_CLASS;
}

/* What a pointer that is no class slot's start nor a large allocation's is: interior to
 * a class slot (kind), or to a large allocation, or nobody's. */
static int large_miss(kiln_heap *heap, const void *ptr, int kind) {
    if (kind == KILN_HEAP_INTERIOR) return KILN_HEAP_INTERIOR;
    return kind == KILN_HEAP_LARGE && kiln_heap_large_contains(heap, ptr) ? KILN_HEAP_INTERIOR
                                                                         : KILN_HEAP_NOT_OURS;
}

kiln_heap_find kiln_heap_find_ptr(kiln_heap *heap, const void *ptr) {
    kiln_pool *pool;
    uintptr_t block, offset;
    int kind = locate_class(heap, ptr, &pool, &block, &offset);
    if (kind == KILN_HEAP_CLASS)
        return (kiln_heap_find){ KILN_HEAP_CLASS, pool->size,
                                 kiln_load_relaxed(slot_byte(pool, block, offset)) };
    kiln_heap_large_entry entry;
    if (kind == KILN_HEAP_LARGE && kiln_heap_large_find(heap, ptr, &entry))
        return (kiln_heap_find){ KILN_HEAP_LARGE, entry.bytes, entry.tag };
    return (kiln_heap_find){ large_miss(heap, ptr, kind), 0, 0 };
}

void kiln_heap_reject(kiln_heap *heap, const void *ptr, int kind, const char *function) {
    kiln_add_relaxed(&heap->bad_frees, 1);
    if (kind == KILN_HEAP_CLASS) {   /* a class slot that is free */
        kiln_add_relaxed(&heap->double_frees, 1);
        kiln_log_misuse(&heap->log, KILN_LOGITEM_HEAP_DOUBLE_FREE,
                        "%s: %p is a heap allocation freed already (a double free); ignored",
                        function, ptr);
    } else if (kind == KILN_HEAP_INTERIOR) {
        kiln_log_misuse(&heap->log, KILN_LOGITEM_HEAP_INTERIOR_POINTER,
                        "%s: %p points into a heap allocation, not at its start; ignored",
                        function, ptr);
    } else {
        kiln_log_misuse(&heap->log, KILN_LOGITEM_HEAP_FOREIGN_POINTER,
                        "%s: %p is no live allocation of this runtime's heap (another "
                        "runtime's, another allocator's, or a large one freed already); ignored",
                        function, ptr);
    }
}

/* ---- frees ---- */

/* Frees a class slot that locate_class found; false (nothing done) when it is free. */
static bool free_class(kiln_heap *heap, kiln_heap_cache *cache, kiln_pool *pool,
                       uintptr_t block, uintptr_t offset, void *ptr) {
    _Atomic uint8_t *byte = slot_byte(pool, block, offset);
    uint8_t tag;
    if (kiln_unlikely(heap->exchange)) {
        tag = kiln_exchange_relaxed(byte, KILN_HEAP_FREE);
    } else {
        tag = kiln_load_relaxed(byte);
        if (tag != KILN_HEAP_FREE) kiln_store_relaxed(byte, KILN_HEAP_FREE);
    }
    if (kiln_unlikely(tag == KILN_HEAP_FREE)) return false;
    kiln_heap_tag_use *use = &cache->tags[tag];
    int64_t credit = kiln_load_relaxed(&use->credit) + (int64_t)pool->size;
    kiln_store_relaxed(&use->credit, credit);
    kiln_owner_inc(&use->frees);
    if (kiln_unlikely(credit > 2 * (int64_t)KILN_HEAP_TAG_CREDIT))
        give_back_credit(heap, use, tag);
    kiln_pool_cache *pc = &cache->classes[pool - heap->classes];
    if (kiln_unlikely(pool->flags & KILN_POOL_FREE_HOOKS)) kiln_pool_free_checked(pool, pc, ptr);
    else kiln_pool_cache_free(pool, pc, ptr);
    return true;
}

void kiln_heap_free_in(kiln_heap *heap, kiln_heap_cache *cache, void *ptr, const char *function) {
    kiln_pool *pool;
    uintptr_t block, offset;
    int kind = locate_class(heap, ptr, &pool, &block, &offset);
    if (kiln_likely(kind == KILN_HEAP_CLASS)) {
        if (!free_class(heap, cache, pool, block, offset, ptr)) kiln_heap_reject(heap, ptr, kind, function);
        return;
    }
    if (kind == KILN_HEAP_LARGE && kiln_heap_large_free(heap, ptr)) return;
    kiln_heap_reject(heap, ptr, large_miss(heap, ptr, kind), function);
}

/* ---- realloc ---- */

/* A new allocation of size bytes with ptr's first keep bytes, then ptr freed; NULL (ptr
 * untouched) when the new one is refused. */
static void *move_to_new(kiln_heap *heap, kiln_heap_cache *cache, void *ptr, uint8_t tag,
                         size_t keep, size_t size, size_t align, kiln_debug_site site) {
    void *fresh = kiln_heap_alloc_in(heap, cache, tag, size, align, false, site);
    if (!fresh) return NULL;
    memcpy(fresh, ptr, keep < size ? keep : size);
    kiln_heap_free_in(heap, cache, ptr, "kiln_heap_realloc");
    return fresh;
}

static void *in_place(kiln_heap *heap, void *ptr) {
    kiln_add_relaxed(&heap->reallocs_in_place, 1);
    return ptr;
}

void *kiln_heap_realloc_in(kiln_heap *heap, kiln_heap_cache *cache, void *ptr, size_t size,
                           size_t align) {
    if (align < 16) align = 16;
    bool aligned = ((uintptr_t)ptr & (align - 1)) == 0;
    kiln_pool *pool;
    uintptr_t block, offset;
    int kind = locate_class(heap, ptr, &pool, &block, &offset);
    if (kind == KILN_HEAP_CLASS) {
        uint8_t tag = kiln_load_relaxed(slot_byte(pool, block, offset));
        if (tag == KILN_HEAP_FREE) {
            kiln_heap_reject(heap, ptr, kind, "kiln_heap_realloc");
            return NULL;
        }
        /* Same class (or a shrink to no less than half): in place. */
        if (aligned && size <= pool->size && (size > pool->size / 2 || pool == heap->classes))
            return in_place(heap, ptr);
        kiln_debug_site site = (pool->debug & KILN_DEBUG_SITES) ? kiln_pool_debug_site_of(pool, ptr)
                                                                : (kiln_debug_site){ 0 };
        return move_to_new(heap, cache, ptr, tag, pool->size, size, align, site);
    }
    kiln_heap_large_entry entry;
    bool kept;
    if (kind != KILN_HEAP_LARGE || !kiln_heap_large_find_for(heap, ptr, size, aligned, &entry, &kept)) {
        kiln_heap_reject(heap, ptr, large_miss(heap, ptr, kind), "kiln_heap_realloc");
        return NULL;
    }
    if (kept) return in_place(heap, ptr);
    bool stays_large = class_for(heap, size, align) >= heap->class_count;
    if (stays_large && align <= kiln_os_page_size()) {
        /* A growth takes a quarter more: a vector grown in small steps then moves pages
         * once per 25 % of growth, not once per page (each mremap costs a TLB flush). */
        size_t roomy = size > entry.bytes ? size + size / 4 : size;
        if (roomy != size && !headroom_fits(heap, entry.tag, roomy - entry.bytes)) roomy = size;
        give_back_own_credit(heap, cache, entry.tag);
        void *moved = kiln_heap_large_resize(heap, ptr, roomy);
        if (moved) return moved;
    }
    return move_to_new(heap, cache, ptr, entry.tag, entry.bytes, size, align,
                       (kiln_debug_site){ entry.file, entry.line });
}

/* ---- trim, statistics, teardown ---- */

size_t kiln_heap_trim(kiln_heap *heap) {
    for (uint32_t c = 0; c < heap->class_count; c++) kiln_pool_trim_blocks(&heap->classes[c]);
    return kiln_heap_large_trim(heap);
}

void kiln_heap_class_read(kiln_heap *heap, uint32_t c, const kiln_pool_tally *tally,
                          kiln_heap_class_stats *out) {
    *out = (kiln_heap_class_stats){ .size = (uint32_t)kiln_size_class_bytes(c) };
    if (c >= heap->class_count) return;
    kiln_pool_stats ps;
    kiln_pool_stats_read(&heap->classes[c], tally, &ps);
    out->live = ps.live;
    out->allocs = ps.allocs;
    out->frees = ps.frees;
    out->free_slots = ps.carved - ps.live;
    out->blocks = ps.blocks_held;
}

void kiln_heap_fini(kiln_heap *heap) {
    for (uint32_t c = 0; c < heap->class_count; c++) kiln_pool_fini(&heap->classes[c]);
    kiln_heap_large_fini(heap);
    pthread_rwlock_destroy(&heap->fork_gate);
}
