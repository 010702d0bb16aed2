/* alloc/heap_large.c — the heap's large allocations (alloc/heap.h): a dedicated mapping
 * each, found through a registry (open addressing by address, under a lock: a large
 * alloc or free maps or unmaps anyway), freed mappings kept for reuse within bounds, and
 * resizing by moving pages (mremap).
 *
 * Concurrency: every function here may be called by any thread at the same time; the
 * registry and the kept list are under large->lock, which is never held across a log
 * call or a tag charge (a log callback may not re-enter, but an error hook might). */
#include "heap.h"

#include "../base/sys_alloc.h"

#include <string.h>

#define MIN_CAPACITY      64
#define KEPT_MAX_BYTES    ((size_t)32 << 20)   /* a mapping bigger than this is never kept */
#define KEPT_TOTAL_BYTES  ((size_t)64 << 20)   /* the kept ones together, at most, or */
#define KEPT_LIVE_SHARE   2                     /* 1/2 of the live large bytes, if more */

static const kiln_tag_payer large_payer = { "heap", "large allocation" };

void kiln_heap_large_init(kiln_heap_large *large) {
    pthread_mutex_init(&large->lock, NULL);
    large->table = NULL;
    large->capacity = large->count = 0;
    large->kept_count = 0;
}

static size_t home_of(uintptr_t ptr, size_t capacity) {
    return (size_t)(((uint64_t)(ptr >> 12) * 0x9E3779B97F4A7C15ull) >> 40) & (capacity - 1);
}

/* Under lock: ptr's entry (the one a resize is moving, or the other), or NULL. */
static kiln_heap_large_entry *lookup(kiln_heap_large *large, uintptr_t ptr, bool moving) {
    if (large->capacity == 0 || ptr == 0) return NULL;
    for (size_t i = home_of(ptr, large->capacity);; i = (i + 1) & (large->capacity - 1)) {
        if (large->table[i].ptr == ptr && large->table[i].moving == moving) return &large->table[i];
        if (large->table[i].ptr == 0) return NULL;
    }
}

static void place(kiln_heap_large_entry *table, size_t capacity, const kiln_heap_large_entry *e) {
    size_t i = home_of(e->ptr, capacity);
    while (table[i].ptr != 0) i = (i + 1) & (capacity - 1);
    table[i] = *e;
}

/* Under lock: room for one more entry (the table at most half full); false when the
 * system allocator refuses a bigger table. */
static bool make_room(kiln_heap_large *large) {
    if ((large->count + 1) * 2 <= large->capacity) return true;
    size_t capacity = large->capacity ? large->capacity * 2 : MIN_CAPACITY;
    kiln_heap_large_entry *table = kiln_sys_calloc(capacity, sizeof *table);
    if (!table) return false;
    for (size_t i = 0; i < large->capacity; i++)
        if (large->table[i].ptr) place(table, capacity, &large->table[i]);
    kiln_sys_free(large->table);
    large->table = table;
    large->capacity = capacity;
    return true;
}

/* Under lock: removes entry e, moving later entries of its probe run back. */
static void erase(kiln_heap_large *large, kiln_heap_large_entry *e) {
    size_t mask = large->capacity - 1, hole = (size_t)(e - large->table);
    large->table[hole].ptr = 0;
    for (size_t i = (hole + 1) & mask; large->table[i].ptr != 0; i = (i + 1) & mask) {
        size_t home = home_of(large->table[i].ptr, large->capacity);
        /* The entry may fill the hole when its home is not in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stays) continue;
        large->table[hole] = large->table[i];
        large->table[i].ptr = 0;
        hole = i;
    }
    large->count--;
}

/* Under lock: the smallest kept mapping that holds bytes, at most twice over, aligned to
 * align, taken off the list (the rest keep their order: oldest first); {0} for none. */
static kiln_heap_kept take_kept(kiln_heap_large *large, size_t bytes, size_t align) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < large->kept_count; i++) {
        kiln_heap_kept k = large->kept[i];
        if (k.bytes < bytes || k.bytes - bytes > bytes || ((uintptr_t)k.map & (align - 1))) continue;
        if (best == UINT32_MAX || k.bytes < large->kept[best].bytes) best = i;
    }
    if (best == UINT32_MAX) return (kiln_heap_kept){ 0 };
    kiln_heap_kept k = large->kept[best];
    memmove(&large->kept[best], &large->kept[best + 1], (large->kept_count - best - 1) * sizeof k);
    large->kept_count--;
    kiln_sub_relaxed(&large->kept_bytes, k.bytes);
    return k;
}

/* Under lock: keeps a freed mapping, the oldest kept ones making way (at most
 * KILN_HEAP_KEPT_MAPPINGS, and KEPT_TOTAL_BYTES together or a share of the live large
 * bytes, whichever is more: a program that holds large buffers by the hundred megabytes
 * and replaces them finds its next one kept, not a fresh mapping whose every page faults);
 * the mappings to unmap go to gone[] (their count returned), the freed one among them
 * when it is too big to keep. The share is of the bytes that stay live. */
static uint32_t keep(kiln_heap_large *large, kiln_heap_kept freed, kiln_heap_kept gone[KILN_HEAP_KEPT_MAPPINGS + 1]) {
    size_t all = kiln_load_relaxed(&large->live_bytes), live = all > freed.bytes ? all - freed.bytes : 0;
    size_t cap = live / KEPT_LIVE_SHARE > KEPT_TOTAL_BYTES ? live / KEPT_LIVE_SHARE : KEPT_TOTAL_BYTES;
    bool kept = freed.bytes <= KEPT_MAX_BYTES;
    size_t adding = kept ? freed.bytes : 0;
    uint32_t n = 0, oldest = 0;
    while (large->kept_count - oldest == KILN_HEAP_KEPT_MAPPINGS ||
           (oldest < large->kept_count && kiln_load_relaxed(&large->kept_bytes) + adding > cap)) {
        gone[n++] = large->kept[oldest++];
        kiln_sub_relaxed(&large->kept_bytes, gone[n - 1].bytes);
    }
    large->kept_count -= oldest;
    memmove(&large->kept[0], &large->kept[oldest], large->kept_count * sizeof freed);
    if (!kept) {
        gone[n++] = freed;
        return n;
    }
    large->kept[large->kept_count++] = freed;
    kiln_add_relaxed(&large->kept_bytes, freed.bytes);
    return n;
}

/* ASan's poison outlives munmap: a later mapping at the address would inherit it. */
static void unmap(kiln_heap *heap, kiln_heap_kept k) {
    if (!k.map) return;
    kiln_debug_unpoison(k.map, k.bytes);
    kiln_block_pool_unmap_large(heap->blocks, k.map, k.bytes);
}

/* The debug layer's work on a mapping handed out (a kept one was poisoned): all of it
 * usable (kiln_heap_usable_size says so), its size filled. */
static void debug_taken(kiln_heap *heap, char *p, size_t size, size_t bytes) {
    kiln_debug_unpoison(p, bytes);
    if (heap->debug & KILN_DEBUG_FILL) memset(p, KILN_FILL_FRESH, size);
}

void *kiln_heap_large_alloc(kiln_heap *heap, uint8_t tag, size_t size, size_t align,
                            bool zero, kiln_debug_site site) {
    kiln_heap_large *large = &heap->large;
    size_t page = kiln_os_page_size();
    if (align < page) align = page;
    size_t bytes = kiln_block_pool_large_bytes(size);
    pthread_mutex_lock(&large->lock);
    kiln_heap_kept k = take_kept(large, bytes, align);
    pthread_mutex_unlock(&large->lock);
    bool reused = k.map != NULL;
    if (reused) {
        kiln_add_relaxed(&large->reused, 1);
    } else {
        kiln_heap_large_make_way(heap, bytes);   /* kept mappings before a refusal */
        k.map = kiln_block_pool_map_large(heap->blocks, bytes, align, false);   /* as malloc: quiet */
        k.bytes = bytes;
        if (!k.map) return NULL;
    }
    kiln_tag_account *account = kiln_heap_account(heap, tag);
    if (!kiln_tag_charge(account, k.bytes, large_payer)) {
        unmap(heap, k);
        return NULL;
    }
    kiln_heap_large_entry entry = { (uintptr_t)k.map, k.bytes, size, site.file, site.line, tag, false };
    pthread_mutex_lock(&large->lock);
    bool listed = make_room(large);
    if (listed) {
        place(large->table, large->capacity, &entry);
        large->count++;
    }
    pthread_mutex_unlock(&large->lock);
    if (!listed) {
        kiln_log(&heap->log, KILN_LOGITEM_HEAP_OUT_OF_MEMORY,
                 "kiln_heap_alloc: no system memory to list a large allocation of %zu bytes "
                 "(its registry holds %zu); refused", size, large->count);
        kiln_tag_release(account, k.bytes);
        unmap(heap, k);
        return NULL;
    }
    kiln_add_relaxed(&large->live, 1);
    kiln_add_relaxed(&large->live_bytes, k.bytes);
    kiln_add_relaxed(&large->allocs, 1);
    if (heap->debug) debug_taken(heap, k.map, size, k.bytes);
    if (zero && (reused || (heap->debug & KILN_DEBUG_FILL))) memset(k.map, 0, size);   /* fresh pages are zero */
    if (site.file && heap->blocks->sites) kiln_sites_alloc(heap->blocks->sites, site, size, true);
    return k.map;
}

bool kiln_heap_large_find(kiln_heap *heap, const void *ptr, kiln_heap_large_entry *out) {
    bool kept;   /* never: a look that keeps nothing */
    return kiln_heap_large_find_for(heap, ptr, 0, false, out, &kept);
}

bool kiln_heap_large_free(kiln_heap *heap, void *ptr) {
    kiln_heap_large *large = &heap->large;
    pthread_mutex_lock(&large->lock);
    kiln_heap_large_entry *e = lookup(large, (uintptr_t)ptr, false);
    kiln_heap_large_entry entry = e ? *e : (kiln_heap_large_entry){ 0 };
    if (e) erase(large, e);   /* ours alone now: no other free or lookup finds it */
    pthread_mutex_unlock(&large->lock);
    if (!e) return false;
    /* Filled and poisoned before it is kept: from then on another thread may take it. */
    if (heap->debug & KILN_DEBUG_FILL) memset(ptr, KILN_FILL_FREED, entry.size);
    if (heap->debug & KILN_DEBUG_POISON) kiln_debug_poison(ptr, entry.bytes);
    kiln_heap_kept gone[KILN_HEAP_KEPT_MAPPINGS + 1];
    pthread_mutex_lock(&large->lock);
    uint32_t n = keep(large, (kiln_heap_kept){ ptr, entry.bytes }, gone);
    pthread_mutex_unlock(&large->lock);
    for (uint32_t i = 0; i < n; i++) unmap(heap, gone[i]);
    kiln_tag_release(kiln_heap_account(heap, entry.tag), entry.bytes);
    kiln_sub_relaxed(&large->live, 1);
    kiln_sub_relaxed(&large->live_bytes, entry.bytes);
    kiln_add_relaxed(&large->frees, 1);
    if (entry.file && heap->blocks->sites)
        kiln_sites_freed(heap->blocks->sites, (kiln_debug_site){ entry.file, entry.line });
    return true;
}

void *kiln_heap_large_resize(kiln_heap *heap, void *ptr, size_t size) {
    kiln_heap_large *large = &heap->large;
    pthread_mutex_lock(&large->lock);
    kiln_heap_large_entry *e = lookup(large, (uintptr_t)ptr, false);
    kiln_heap_large_entry entry = e ? *e : (kiln_heap_large_entry){ 0 };
    if (e) e->moving = true;   /* found again by that mark: the address may be reused */
    pthread_mutex_unlock(&large->lock);
    if (!e) return NULL;
    size_t bytes = kiln_block_pool_large_bytes(size);
    kiln_tag_account *account = kiln_heap_account(heap, entry.tag);
    bool charged = bytes <= entry.bytes || kiln_tag_draw(account, bytes - entry.bytes, large_payer);
    void *moved = charged ? kiln_block_pool_remap_large(heap->blocks, ptr, entry.bytes, bytes, false) : NULL;
    pthread_mutex_lock(&large->lock);
    e = lookup(large, (uintptr_t)ptr, true);
    e->moving = false;
    if (moved) {
        erase(large, e);   /* the count drops by one, so placing it again needs no room */
        kiln_heap_large_entry now = entry;
        now.ptr = (uintptr_t)moved;
        now.bytes = bytes;
        now.size = size;
        place(large->table, large->capacity, &now);
        large->count++;
    }
    pthread_mutex_unlock(&large->lock);
    if (!moved) {
        if (charged && bytes > entry.bytes) kiln_tag_give_back(account, bytes - entry.bytes);
        return NULL;
    }
    /* The resize is no allocation of the tag's: drawn and given back uncounted. */
    if (bytes < entry.bytes) kiln_tag_give_back(account, entry.bytes - bytes);
    kiln_add_relaxed(&large->live_bytes, bytes - entry.bytes);   /* mod 2^64 when it shrank */
    kiln_add_relaxed(&large->remaps, 1);
    return moved;
}

bool kiln_heap_large_find_for(kiln_heap *heap, const void *ptr, size_t size, bool aligned,
                              kiln_heap_large_entry *out, bool *kept) {
    pthread_mutex_lock(&heap->large.lock);
    kiln_heap_large_entry *e = lookup(&heap->large, (uintptr_t)ptr, false);
    *kept = e && aligned && size <= e->bytes && size > e->bytes / 2;
    if (*kept) e->size = size;
    if (e) *out = *e;
    pthread_mutex_unlock(&heap->large.lock);
    return e != NULL;
}

bool kiln_heap_large_contains(kiln_heap *heap, const void *ptr) {
    uintptr_t p = (uintptr_t)ptr;
    bool inside = false;
    pthread_mutex_lock(&heap->large.lock);
    for (size_t i = 0; i < heap->large.capacity && !inside; i++) {
        const kiln_heap_large_entry *e = &heap->large.table[i];
        inside = e->ptr != 0 && p > e->ptr && p - e->ptr < e->bytes;
    }
    pthread_mutex_unlock(&heap->large.lock);
    return inside;
}

bool kiln_heap_large_make_way(kiln_heap *heap, size_t bytes) {
    if (kiln_load_relaxed(&heap->large.kept_bytes) == 0 || kiln_block_pool_has_room(heap->blocks, bytes))
        return false;
    return kiln_heap_large_trim(heap) != 0;
}

size_t kiln_heap_large_trim(kiln_heap *heap) {
    kiln_heap_large *large = &heap->large;
    kiln_heap_kept kept[KILN_HEAP_KEPT_MAPPINGS];
    pthread_mutex_lock(&large->lock);
    uint32_t n = large->kept_count;
    memcpy(kept, large->kept, n * sizeof kept[0]);
    large->kept_count = 0;
    kiln_store_relaxed(&large->kept_bytes, 0);
    pthread_mutex_unlock(&large->lock);
    size_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        bytes += kept[i].bytes;
        unmap(heap, kept[i]);
    }
    return bytes;
}

void kiln_heap_large_fini(kiln_heap *heap) {
    kiln_heap_large *large = &heap->large;
    kiln_heap_large_trim(heap);
    for (size_t i = 0; i < large->capacity; i++)
        if (large->table[i].ptr)
            unmap(heap, (kiln_heap_kept){ (void *)large->table[i].ptr, large->table[i].bytes });
    kiln_sys_free(large->table);
    large->table = NULL;
    large->capacity = large->count = 0;
    pthread_mutex_destroy(&large->lock);
}
