/* runtime/heap.h — a runtime's general heap (kiln/heap.h, alloc/heap.h): set up and torn
 * down with the runtime, a context's caches made ready and flushed, and the figures the
 * tags' statistics need. Never installed. */
#ifndef KILN_RUNTIME_HEAP_H
#define KILN_RUNTIME_HEAP_H

#include "types.h"

/* kiln_create, once the block pool and the untagged account are ready, before the
 * runtime is listed (runtime/check.h): carves nothing. */
KILN_INTERNAL void kiln_runtime_heap_init(kiln_runtime *rt);

/* kiln_destroy, once every context is detached: logs what is still live
 * (HEAP_OBJECTS_LIVE, leak sites) and returns the heap's memory. */
KILN_INTERNAL void kiln_runtime_heap_fini(kiln_runtime *rt);

/* A context's heap cache at attach. ctx's thread (or its creator), before use. */
KILN_INTERNAL void kiln_ctx_heap_attach(kiln_ctx *ctx);

/* At detach: the cache's objects back to the classes, its credit back to the tags, its
 * counts folded into the heap. ctx's thread. Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_heap(kiln_ctx *ctx);

/* The heap through rt's shared cache, for a thread with no context of rt (the malloc
 * shape's): untagged, size and align checked by the caller; a bad pointer is logged as
 * kiln_heap_free's. Every call flushes the cache before it returns. Concurrency: any
 * thread (orphan_lock, then registry_lock). */
KILN_INTERNAL void *kiln_heap_orphan_alloc(kiln_runtime *rt, size_t size, size_t align, bool zero);
KILN_INTERNAL void  kiln_heap_orphan_free(kiln_runtime *rt, void *ptr);
KILN_INTERNAL void *kiln_heap_orphan_realloc(kiln_runtime *rt, void *ptr, size_t size);

#endif /* KILN_RUNTIME_HEAP_H */
