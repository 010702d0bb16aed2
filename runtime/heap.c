/* runtime/heap.c — the general heap of a runtime (kiln/heap.h): the public calls with
 * their argument checks, contexts' heap caches, and the heap's figures. The heap itself
 * is alloc/heap.c's. */
#include "heap.h"
#include "check.h"
#include "tags.h"

#include <stdint.h>
#include <string.h>

void kiln_runtime_heap_init(kiln_runtime *rt) {
    kiln_heap_config config = {
        .blocks = &rt->blocks,
        .log = rt->log,
        .debug = rt->desc.debug,
        .audit_sample = rt->desc.audit_sample,
        .warn_percent = rt->desc.warn_percent,
        .accounts = rt->tags,
        .untagged = &rt->untagged_account,
    };
    kiln_heap_init(&rt->heap, &config);
    pthread_mutex_init(&rt->orphan_lock, NULL);
    kiln_heap_cache_init(&rt->orphan_cache);
    rt->heap_open = true;   /* published with the runtime by its listing (a lock) */
}

/* Under registry_lock: the class caches of every attached context summed for class c. */
static void tally_class(kiln_runtime *rt, uint32_t c, kiln_pool_tally *tally) {
    *tally = (kiln_pool_tally){ 0 };
    for (kiln_ctx *ctx = rt->contexts; ctx; ctx = ctx->next)
        kiln_pool_tally_cache(&rt->heap.classes[c], &ctx->heap_cache.classes[c], tally);
}

static void read_totals(kiln_runtime *rt, kiln_heap_stats *out) {
    kiln_heap *heap = &rt->heap;
    *out = (kiln_heap_stats){ 0 };
    uint64_t class_live_bytes = 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (uint32_t c = 0; c < heap->class_count; c++) {
        kiln_pool_tally tally;
        tally_class(rt, c, &tally);
        kiln_heap_class_stats cs;
        kiln_heap_class_read(heap, c, &tally, &cs);
        class_live_bytes += cs.live * cs.size;
        out->live_objects += cs.live;
        out->allocs += cs.allocs;
        out->frees += cs.frees;
        out->class_bytes += (uint64_t)cs.blocks * heap->blocks->block_size;
    }
    pthread_mutex_unlock(&rt->registry_lock);
    kiln_heap_large *large = &heap->large;
    out->large_live = kiln_load_relaxed(&large->live);
    out->large_bytes = kiln_load_relaxed(&large->live_bytes);
    out->large_kept_bytes = kiln_load_relaxed(&large->kept_bytes);
    out->large_reused = kiln_load_relaxed(&large->reused);
    out->remaps = kiln_load_relaxed(&large->remaps);
    out->live_bytes = class_live_bytes + out->large_bytes;
    out->live_objects += out->large_live;
    out->allocs += kiln_load_relaxed(&large->allocs);
    out->frees += kiln_load_relaxed(&large->frees);
    out->class_free_bytes = out->class_bytes - class_live_bytes;
    out->failures = kiln_load_relaxed(&heap->failures);
    out->bad_frees = kiln_load_relaxed(&heap->bad_frees);
    out->double_frees = kiln_load_relaxed(&heap->double_frees);
    out->reallocs_in_place = kiln_load_relaxed(&heap->reallocs_in_place);
    pthread_mutex_lock(&large->lock);
    out->large_kept = large->kept_count;
    pthread_mutex_unlock(&large->lock);
}

void kiln_runtime_heap_fini(kiln_runtime *rt) {
    kiln_runtime_heap_close(rt);   /* no bare-pointer lookup reaches it from here on */
    kiln_heap_stats stats;
    read_totals(rt, &stats);
    if (stats.live_objects != 0) {
        kiln_log(&rt->log, KILN_LOGITEM_HEAP_OBJECTS_LIVE,
                 "kiln_destroy: %llu heap allocations (%llu bytes; %llu of them large) are "
                 "still live; their memory is returned", (unsigned long long)stats.live_objects,
                 (unsigned long long)stats.live_bytes, (unsigned long long)stats.large_live);
        for (uint32_t c = 0; c < rt->heap.class_count; c++)
            kiln_pool_report_leaks(&rt->heap.classes[c]);   /* KILN_DEBUG_SITES: by site */
    }
    kiln_heap_fini(&rt->heap);
    pthread_mutex_destroy(&rt->orphan_lock);
}

void kiln_ctx_heap_attach(kiln_ctx *ctx) {
    kiln_heap_cache_init(&ctx->heap_cache);
}

void kiln_ctx_flush_heap(kiln_ctx *ctx) {
    kiln_runtime *rt = ctx->rt;
    /* Under the lock, as pools are: stats readers sum the caches under it, so the fold
     * and the reset are one step for them. */
    pthread_mutex_lock(&rt->registry_lock);
    kiln_heap_cache_flush(&rt->heap, &ctx->heap_cache);
    pthread_mutex_unlock(&rt->registry_lock);
}

/* ---- the calls ---- */

/* tag's slot byte, or false (logged) for a tag that is no tag of rt's. */
static inline bool slot_byte_of(kiln_runtime *rt, kiln_tag tag, uint8_t *out, const char *function) {
    unsigned byte = kiln_heap_tag_byte(tag, rt->tag_salt);   /* the inline paths' mapping */
    if (kiln_likely(byte == KILN_HEAP_UNTAGGED ||
                    (byte != 0 && kiln_load_acquire(&rt->tags[kiln_tag_slot(tag.id)]) != NULL))) {
        *out = (uint8_t)byte;
        return true;
    }
    bool ok;
    kiln_tag_lookup(rt, tag, function, &ok);   /* says which: foreign, or never made */
    return false;
}

/* size with align (0 or a power of two) can be asked for; logged otherwise. */
static inline bool request_ok(kiln_runtime *rt, size_t size, size_t align, const char *function) {
    if (kiln_unlikely((align & (align - 1)) || align > KILN_HEAP_MAX_ALIGN)) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HEAP_BAD_ALIGN,
                        "%s: alignment %zu is not a power of two up to %zu", function, align,
                        (size_t)KILN_HEAP_MAX_ALIGN);
        return false;
    }
    if (kiln_unlikely(size > (size_t)PTRDIFF_MAX - (align > 16 ? align : 16))) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_HEAP_TOO_LARGE,
                        "%s: %zu bytes aligned to %zu are more than can be mapped", function, size, align);
        return false;
    }
    return true;
}

static void *alloc_checked(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align, bool zero,
                           kiln_debug_site site, const char *function) {
    if (kiln_unlikely(!kiln_ctx_attached(ctx))) {
        kiln_ctx_check(ctx, function);   /* logs which */
        return NULL;
    }
    kiln_runtime *rt = ctx->rt;
    uint8_t byte;
    if (!slot_byte_of(rt, tag, &byte, function) || !request_ok(rt, size, align, function)) return NULL;
    return kiln_heap_alloc_in(&rt->heap, &ctx->heap_cache, byte, size, align, zero, site);
}

void *(kiln_heap_alloc)(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align) {
    return alloc_checked(ctx, tag, size, align, false, (kiln_debug_site){ 0 }, "kiln_heap_alloc");
}

void *kiln_heap_alloc_at(kiln_ctx *ctx, kiln_tag tag, size_t size, size_t align, const char *file,
                         int line) {
    return alloc_checked(ctx, tag, size, align, false, (kiln_debug_site){ file, line }, "kiln_heap_alloc");
}

void *kiln_heap_calloc(kiln_ctx *ctx, kiln_tag tag, size_t count, size_t size) {
    size_t bytes;
    if (kiln_unlikely(__builtin_mul_overflow(count, size, &bytes))) {
        if (kiln_ctx_check(ctx, "kiln_heap_calloc"))
            kiln_log_misuse(&ctx->rt->log, KILN_LOGITEM_HEAP_TOO_LARGE,
                            "kiln_heap_calloc: %zu * %zu bytes overflows", count, size);
        return NULL;
    }
    return alloc_checked(ctx, tag, bytes, 0, true, (kiln_debug_site){ 0 }, "kiln_heap_calloc");
}

void (kiln_heap_free)(kiln_ctx *ctx, void *ptr) {
    if (!ptr) return;
    if (kiln_unlikely(!kiln_ctx_attached(ctx))) {
        kiln_ctx_check(ctx, "kiln_heap_free");   /* logs which; ptr stays live */
        return;
    }
    kiln_heap_free_in(&ctx->rt->heap, &ctx->heap_cache, ptr, "kiln_heap_free");
}

void *kiln_heap_realloc(kiln_ctx *ctx, void *ptr, size_t size, size_t align) {
    if (!ptr) return alloc_checked(ctx, (kiln_tag){ ctx && kiln_ctx_attached(ctx) ? ctx->tag_current : 0 },
                                   size, align, false, (kiln_debug_site){ 0 }, "kiln_heap_realloc");
    if (kiln_unlikely(!kiln_ctx_attached(ctx))) {
        kiln_ctx_check(ctx, "kiln_heap_realloc");
        return NULL;
    }
    kiln_runtime *rt = ctx->rt;
    if (size == 0) {
        kiln_heap_free_in(&rt->heap, &ctx->heap_cache, ptr, "kiln_heap_realloc");
        return NULL;
    }
    if (!request_ok(rt, size, align, "kiln_heap_realloc")) return NULL;
    return kiln_heap_realloc_in(&rt->heap, &ctx->heap_cache, ptr, size, align);
}

/* ---- the shared cache: threads with no context of rt ---- */

static void orphan_enter(kiln_runtime *rt) { pthread_mutex_lock(&rt->orphan_lock); }

/* Empties the cache (its figures into the heap's, under registry_lock as a context's
 * flush), then lets the next thread in. */
static void orphan_leave(kiln_runtime *rt) {
    pthread_mutex_lock(&rt->registry_lock);
    kiln_heap_cache_flush(&rt->heap, &rt->orphan_cache);
    pthread_mutex_unlock(&rt->registry_lock);
    pthread_mutex_unlock(&rt->orphan_lock);
}

void *kiln_heap_orphan_alloc(kiln_runtime *rt, size_t size, size_t align, bool zero) {
    orphan_enter(rt);
    void *p = kiln_heap_alloc_in(&rt->heap, &rt->orphan_cache, KILN_HEAP_UNTAGGED, size, align, zero,
                                 (kiln_debug_site){ 0 });
    orphan_leave(rt);
    return p;
}

void kiln_heap_orphan_free(kiln_runtime *rt, void *ptr) {
    orphan_enter(rt);
    kiln_heap_free_in(&rt->heap, &rt->orphan_cache, ptr, "free");
    orphan_leave(rt);
}

void *kiln_heap_orphan_realloc(kiln_runtime *rt, void *ptr, size_t size) {
    orphan_enter(rt);
    void *p = kiln_heap_realloc_in(&rt->heap, &rt->orphan_cache, ptr, size, 0);
    orphan_leave(rt);
    return p;
}

/* ptr's heap and what it is there; logs a pointer that is no live allocation. */
static kiln_runtime *find_live(const void *ptr, kiln_heap_find *found, const char *function) {
    kiln_runtime *rt = kiln_heap_owner_find(ptr, found);
    if (rt && (found->kind == KILN_HEAP_LARGE || (found->kind == KILN_HEAP_CLASS && found->tag != KILN_HEAP_FREE)))
        return rt;
    if (rt) kiln_heap_reject(&rt->heap, ptr, found->kind, function);
    else kiln_log_misuse(NULL, KILN_LOGITEM_HEAP_FOREIGN_POINTER,
                         "%s: %p is no live allocation of any runtime's heap", function, ptr);
    return NULL;
}

size_t kiln_heap_usable_size(const void *ptr) {
    if (!ptr) return 0;
    kiln_heap_find found;
    return find_live(ptr, &found, "kiln_heap_usable_size") ? found.usable : 0;
}

kiln_tag kiln_heap_tag(const void *ptr) {
    if (!ptr) return (kiln_tag){ 0 };
    kiln_heap_find found;
    kiln_runtime *rt = find_live(ptr, &found, "kiln_heap_tag");
    if (!rt || found.tag < KILN_HEAP_FIRST_TAG) return (kiln_tag){ 0 };
    return (kiln_tag){ rt->tag_salt << 16 | (uint32_t)(found.tag - KILN_HEAP_FIRST_TAG + 1) };
}

/* ---- figures ---- */

bool kiln_stats_heap(kiln_runtime *rt, kiln_heap_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!kiln_runtime_check(rt, "kiln_stats_heap")) return false;
    if (!out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_STATS_NULL_OUT, "kiln_stats_heap: out is NULL");
        return false;
    }
    read_totals(rt, out);
    return true;
}

bool kiln_stats_memory(kiln_runtime *rt, kiln_memory_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!kiln_runtime_check(rt, "kiln_stats_memory")) return false;
    if (!out) {
        kiln_log_misuse(&rt->log, KILN_LOGITEM_STATS_NULL_OUT, "kiln_stats_memory: out is NULL");
        return false;
    }
    kiln_heap_stats heap;
    read_totals(rt, &heap);
    kiln_block_pool_stats blocks;
    kiln_block_pool_stats_get(&rt->blocks, &blocks);
    pthread_mutex_lock(&rt->registry_lock);
    kiln_heap_tag_sums_read(rt, rt->tag_count);
    for (uint32_t i = 0; i < rt->tag_count; i++) {
        const kiln_tag_account *a = kiln_load_relaxed(&rt->tags[i]);
        if (!a->parent) out->tagged += kiln_heap_tag_used(a, &rt->tag_sums);   /* roots hold the rest */
    }
    uint64_t untagged = kiln_load_relaxed(&rt->untagged_account.live);
    out->untagged = untagged - rt->tag_sums.untagged_credit;
    pthread_mutex_unlock(&rt->registry_lock);
    out->reserved = blocks.reserved_bytes;
    out->frame = kiln_load_relaxed(&rt->frame_account.live);
    out->heap_free = heap.class_free_bytes;
    out->heap_kept = heap.large_kept_bytes;
    out->free_blocks = blocks.blocks_free * blocks.block_size;
    return true;
}

size_t kiln_stats_heap_classes(kiln_runtime *rt, kiln_heap_class_stats *out, size_t cap) {
    if (!kiln_stats_list_args_ok(rt, out, cap, "kiln_stats_heap_classes")) return 0;
    pthread_mutex_lock(&rt->registry_lock);
    for (uint32_t c = 0; c < KILN_HEAP_CLASSES && c < cap; c++) {
        kiln_pool_tally tally = { 0 };
        if (c < rt->heap.class_count) tally_class(rt, c, &tally);
        kiln_heap_class_read(&rt->heap, c, &tally, &out[c]);
    }
    pthread_mutex_unlock(&rt->registry_lock);
    return KILN_HEAP_CLASSES;
}
