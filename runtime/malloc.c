/* runtime/malloc.c — the malloc shape (kiln/heap.h): each thread's contexts, found
 * without a lock; the paths of a thread that has none (the bootstrap memory, the heap's
 * shared cache); frees a signal handler made during a call, done as it returns; the
 * detach at thread exit. The process runtime itself is runtime/process.c's. */
#undef KILN_NO_INLINE   /* the heap's inline paths (kiln/heap.h) are this file's fast paths */
#include "malloc.h"
#include "thread_ctx.h"
#include "check.h"
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* This thread's state (runtime/thread_ctx.h). */
#define me kiln_thread

/* ---- the thread-exit detach ---- */

/* One implicit attach at a time, so that the count of job slots taken, read under this
 * lock, is exact against the others (a program's own attach may still race); held
 * across fork too. */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_key_t  exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void drain_deferred(void);
static void enter(void);
static void leave(void);

/* Destructor of exit_key: the shape's context goes (its caches flushed; what it
 * allocated stays live for whoever holds it); calls after this take the shared cache. */
static void thread_exit(void *unused) {
    (void)unused;
    enter();   /* the frees a handler left, if any */
    leave();
    me.state = KILN_THREAD_EXITED;
    if (me.destroys != kiln_load_relaxed(&kiln_runtime_destroys)) kiln_thread_recheck();
    if (me.implicit.ctx) (kiln_detach)(me.implicit.ctx);   /* forgets it (released) */
}

/* ---- the process runtime's hooks: the exit key and fork's handlers, set up before
 * the process runtime is made or named ---- */

static void fork_prepare(void) {
    pthread_mutex_lock(&attach_lock);
    kiln_process_fork_prepare();
}

static void fork_parent(void) {
    kiln_process_fork_release(false);
    pthread_mutex_unlock(&attach_lock);
}

static void fork_child(void) {
    kiln_process_fork_release(true);
    pthread_mutex_unlock(&attach_lock);
}

static void hooks_make(void) {
    pthread_key_create(&exit_key, thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void hooks_once(void) { pthread_once(&exit_key_once, hooks_make); }

/* The process runtime, the hooks first (a fork waits for a runtime being made). */
static kiln_runtime *process_runtime_try(void) {
    kiln_runtime *rt = kiln_process_runtime_peek();
    if (rt) return rt;
    hooks_once();
    return kiln_process_runtime_try();
}

kiln_runtime *kiln_process_runtime(void) {
    hooks_once();
    return kiln_process_runtime_wait();
}

bool kiln_set_process_runtime(kiln_runtime *rt) {
    if (!kiln_runtime_check(rt, "kiln_set_process_runtime")) return false;
    hooks_once();
    if (kiln_process_runtime_name(rt)) return true;
    kiln_log_misuse(&rt->log, KILN_LOGITEM_PROCESS_RUNTIME_TAKEN,
                    "kiln_set_process_runtime: the program named a process runtime already; "
                    "refused (it serves until it is destroyed)");
    return false;
}

/* ---- bootstrap memory: a thread's calls while the shape attaches it ----
 * The process runtime's making, and an attach, call into libc, which may call malloc
 * again on the same thread (pthread_setspecific, fopen, atexit); those calls, and other
 * threads' while the runtime is being made, are served from this static region: never
 * reused, a free of it ignored. */
#define BOOT_BYTES (1u << 20)
static _Alignas(4096) unsigned char boot[BOOT_BYTES];
static _Atomic size_t boot_used;   /* relaxed fetch-add: each caller's own range */

static bool boot_owns(const void *ptr) {
    return (uintptr_t)ptr - (uintptr_t)boot < BOOT_BYTES;
}

static size_t boot_size(const void *ptr) { return ((const size_t *)ptr)[-1]; }

static void *boot_alloc(size_t size, size_t align) {
    if (align < 16) align = 16;
    if (size > BOOT_BYTES || align > 4096) return NULL;
    size_t need = kiln_align_up(size + align + 16, 16);
    size_t at = kiln_add_relaxed(&boot_used, need);
    if (at + need > BOOT_BYTES) return NULL;
    uintptr_t p = kiln_align_up((uintptr_t)boot + at + 16, align);
    ((size_t *)p)[-1] = size;   /* static memory: zero already, never reused */
    return (void *)p;
}

/* ---- which context serves a call ---- */

static void enter(void) {
    me.depth++;
    atomic_signal_fence(memory_order_seq_cst);   /* a handler sees depth before the work */
}

static bool any_deferred(void) {
    return kiln_load_relaxed(&me.deferred.count) != 0 || kiln_load_relaxed(&me.deferred.overflow) != NULL;
}

/* Depth back to 0 first, then the look: a handler that came before the decrement
 * deferred its free and is seen; one after it frees at once (runtime/deferred_free.pml). */
static void leave(void) {
    atomic_signal_fence(memory_order_seq_cst);
    if (--me.depth == 0) {
        atomic_signal_fence(memory_order_seq_cst);
        if (kiln_unlikely(any_deferred())) drain_deferred();
    }
}

/* Attaches the calling thread to rt for the shape: its implicit context (the thread's
 * kiln_ctx_current stays the one it attached itself, if any). NULL when the job slots
 * are all taken (told once) or the attach fails (logged by it). */

static KILN_COLD kiln_ctx *attach_implicit(kiln_runtime *rt) {
    static bool told;   /* attach_lock */
    kiln_remembered before = me.current;   /* the attach makes its context current */
    pthread_mutex_lock(&attach_lock);
    kiln_ctx *ctx = NULL;
    if (kiln_load_relaxed(&rt->jobs.registered) < KILN_MAX_QUEUES) {
        ctx = (kiln_attach)(rt);
    } else if (!told) {
        told = true;
        kiln_log(&rt->log, KILN_LOGITEM_MALLOC_SHARED_CONTEXT,
                 "malloc: all %d job slots of the process runtime are taken; threads "
                 "without a context share one cache under a lock from now on", KILN_MAX_QUEUES);
    }
    pthread_mutex_unlock(&attach_lock);
    if (!ctx) return NULL;
    kiln_store_relaxed(&ctx->by_malloc, true);
    me.current = before;
    kiln_remember(&me.implicit, ctx);
    kiln_remember(&me.heap, ctx);
    pthread_setspecific(exit_key, &me);   /* may allocate: bootstrap memory */
    return ctx;
}

static KILN_COLD kiln_ctx *heap_ctx_slow(void) {
    if (me.destroys != kiln_load_relaxed(&kiln_runtime_destroys)) kiln_thread_recheck();
    if (me.heap.ctx || me.state != KILN_THREAD_LIVE) return me.heap.ctx;
    if (me.current.ctx && me.current.rt == kiln_process_runtime_peek()) {   /* named since */
        me.heap = me.current;
        return me.heap.ctx;
    }
    me.state = KILN_THREAD_ATTACHING;
    kiln_runtime *rt = process_runtime_try();
    kiln_ctx *ctx = rt ? attach_implicit(rt) : NULL;
    me.state = KILN_THREAD_LIVE;
    return ctx;
}

/* The calling thread's context of the process runtime, attached now if it has none;
 * NULL: it has none and can have none now (the caller takes memory without one). */
static inline kiln_ctx *heap_ctx(void) {
    if (kiln_likely(me.heap.ctx != NULL && me.destroys == kiln_load_relaxed(&kiln_runtime_destroys)))
        return me.heap.ctx;
    return heap_ctx_slow();
}

/* Memory for a thread with no context: bootstrap memory while it attaches or the process
 * runtime is being made; else the process runtime's shared cache. */
static KILN_COLD void *alloc_without_ctx(size_t size, size_t align, bool zero) {
    kiln_runtime *rt = me.state == KILN_THREAD_ATTACHING ? NULL : process_runtime_try();
    if (!rt) return boot_alloc(size, align);
    return kiln_heap_orphan_alloc(rt, size, align, zero);
}

static KILN_COLD void *alloc_slow(kiln_ctx *ctx, size_t size, size_t align, bool zero) {
    kiln_runtime *rt = ctx->rt;
    unsigned byte = kiln_heap_tag_byte((kiln_tag){ ctx->tag_current }, rt->tag_salt);
    return kiln_heap_alloc_in(&rt->heap, &ctx->heap_cache, (uint8_t)(byte ? byte : KILN_HEAP_UNTAGGED),
                              size, align, zero, (kiln_debug_site){ 0 });
}

/* size over what can be mapped with align: ENOMEM without a word, as malloc. */
static inline bool too_large(size_t size, size_t align) {
    return size > (size_t)PTRDIFF_MAX - (align > 16 ? align : 16) - 4096;
}

static inline void *shape_alloc(size_t size, size_t align, bool zero) {
    void *p = NULL;
    if (kiln_likely(!too_large(size, align))) {
        enter();
        kiln_ctx *ctx = heap_ctx();
        if (kiln_likely(ctx != NULL)) {
            if (!zero) p = kiln_heap_alloc_try_inline(ctx, (kiln_tag){ ctx->tag_current }, size, align);
            if (!p) p = alloc_slow(ctx, size, align, zero);
        } else {
            p = alloc_without_ctx(size, align, zero);
        }
        leave();
    }
    if (kiln_unlikely(!p)) errno = ENOMEM;
    return p;
}

/* ---- frees ---- */

static bool heap_has(kiln_runtime *rt, const void *ptr) {
    return kiln_heap_find_ptr(&rt->heap, ptr).kind != KILN_HEAP_NOT_OURS;
}

/* The runtime the shape's log and counts go to for a pointer nobody's heap owns. */
static void reject_foreign(kiln_ctx *ctx, const void *ptr, const char *function) {
    kiln_runtime *rt = ctx ? ctx->rt : kiln_process_runtime_peek();
    if (rt) kiln_heap_reject(&rt->heap, ptr, KILN_HEAP_NOT_OURS, function);
}

/* A free the inline path did not take: ctx's heap's (a full magazine, a large one, a
 * bad pointer there), another runtime's (through this thread's context of it, or its
 * shared cache), or nobody's. */
static KILN_COLD void free_slow(kiln_ctx *ctx, void *ptr) {
    if (boot_owns(ptr)) return;   /* bootstrap memory: never reused */
    if (ctx && heap_has(ctx->rt, ptr)) {
        kiln_heap_free_in(&ctx->rt->heap, &ctx->heap_cache, ptr, "free");
        return;
    }
    kiln_heap_find found;
    kiln_runtime *owner = kiln_heap_owner_find(ptr, &found);
    if (!owner) reject_foreign(ctx, ptr, "free");
    else if (me.implicit.ctx && me.implicit.rt == owner && me.implicit.ctx != ctx)
        kiln_heap_free_in(&owner->heap, &me.implicit.ctx->heap_cache, ptr, "free");
    else kiln_heap_orphan_free(owner, ptr);
}

/* A free inside a call here (depth counted by the caller). Bootstrap memory is in no
 * heap's known blocks: the inline path passes it to free_slow, which lets it be. */
static inline void free_inside(void *ptr) {
    kiln_ctx *ctx = heap_ctx();
    if (kiln_unlikely(!(ctx && kiln_heap_free_try_inline(ctx, ptr)))) free_slow(ctx, ptr);
}

static inline void free_now(void *ptr) {
    enter();
    free_inside(ptr);
    leave();
}

/* The frees handlers left, done by the call they interrupted as it returns, from depth
 * 0: at depth 1 again, so that a handler that comes meanwhile defers its free too, onto
 * the list while draining is set (never into the array the drain takes from); then depth
 * 0 and another look, until nothing is left (runtime/deferred_free.pml). */
static KILN_COLD void drain_deferred(void) {
    while (any_deferred()) {
        me.depth = 1;
        me.deferred.draining = true;
        atomic_signal_fence(memory_order_seq_cst);   /* a handler sees both before the takes */
        for (uint32_t n; (n = kiln_load_relaxed(&me.deferred.count)) != 0;) {
            void *ptr = me.deferred.ptrs[n - 1];
            kiln_store_relaxed(&me.deferred.count, n - 1);
            free_inside(ptr);
        }
        void *list = kiln_exchange_relaxed(&me.deferred.overflow, NULL);
        while (list) {
            void *next = *(void **)list;
            free_inside(list);
            list = next;
        }
        atomic_signal_fence(memory_order_seq_cst);
        me.deferred.draining = false;
        me.depth = 0;
        atomic_signal_fence(memory_order_seq_cst);   /* then the look at what came meanwhile */
    }
}

/* A handler's free, deferred: an array slot taken by compare-and-swap (a nested handler
 * may come between the look and the take), or the list. */
static void defer_free(void *ptr) {
    uint32_t n = kiln_load_relaxed(&me.deferred.count);
    while (!me.deferred.draining && n < KILN_DEFERRED_MAX) {
        if (kiln_cas_weak_relaxed(&me.deferred.count, &n, n + 1)) {
            me.deferred.ptrs[n] = ptr;   /* before this handler returns: the drain runs after */
            return;
        }
    }
    void *head = kiln_load_relaxed(&me.deferred.overflow);
    do *(void **)ptr = head;
    while (!kiln_cas_weak_relaxed(&me.deferred.overflow, &head, ptr));
}

void kiln_free(void *ptr) {
    if (!ptr) return;
    if (kiln_unlikely(me.depth != 0)) {   /* a handler interrupted a call here */
        defer_free(ptr);
        return;
    }
    free_now(ptr);
}

/* ---- the rest of the shape ---- */

void *kiln_malloc(size_t size) { return shape_alloc(size, 0, false); }

void *kiln_calloc(size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    if (bytes > KILN_HEAP_CLASS_MAX) return shape_alloc(bytes, 0, true);   /* fresh pages */
    void *p = shape_alloc(bytes, 0, false);
    if (p) memset(p, 0, bytes);
    return p;
}

/* realloc of a pointer the shape's heap does not hold: another runtime's (moved here),
 * bootstrap memory (copied out), or nobody's (refused). */
static KILN_COLD void *realloc_elsewhere(kiln_ctx *ctx, void *ptr, size_t size) {
    size_t old;
    if (boot_owns(ptr)) {
        old = boot_size(ptr);
    } else {
        kiln_heap_find found;
        kiln_runtime *owner = kiln_heap_owner_find(ptr, &found);
        if (!owner) {
            reject_foreign(ctx, ptr, "realloc");
            return NULL;
        }
        bool live = found.kind == KILN_HEAP_LARGE || (found.kind == KILN_HEAP_CLASS && found.tag != KILN_HEAP_FREE);
        if (!live) {
            kiln_heap_reject(&owner->heap, ptr, found.kind, "realloc");
            return NULL;
        }
        if (!ctx && owner == kiln_process_runtime_peek()) return kiln_heap_orphan_realloc(owner, ptr, size);
        old = found.usable;
    }
    void *p = kiln_malloc(size);
    if (p) {
        memcpy(p, ptr, old < size ? old : size);
        free_inside(ptr);
    }
    return p;
}

void *kiln_realloc(void *ptr, size_t size) {
    if (!ptr) return kiln_malloc(size);
    if (size == 0) {   /* glibc's: freed, NULL */
        kiln_free(ptr);
        return NULL;
    }
    void *p = NULL;
    if (kiln_likely(!too_large(size, 0))) {
        enter();
        kiln_ctx *ctx = heap_ctx();
        if (ctx && !boot_owns(ptr) && heap_has(ctx->rt, ptr))
            p = kiln_heap_realloc_in(&ctx->rt->heap, &ctx->heap_cache, ptr, size, 0);
        else p = realloc_elsewhere(ctx, ptr, size);
        leave();
    }
    if (!p) errno = ENOMEM;
    return p;
}

void *kiln_aligned_alloc(size_t align, size_t size) {
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    if (align > KILN_HEAP_MAX_ALIGN) {
        errno = ENOMEM;
        return NULL;
    }
    return shape_alloc(size, align <= 16 ? 0 : align, false);
}

int kiln_posix_memalign(void **out, size_t align, size_t size) {
    if (!out || align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
    int saved = errno;   /* posix_memalign says, it does not set errno */
    void *p = kiln_aligned_alloc(align, size);
    int error = p ? 0 : errno;
    errno = saved;
    if (p) *out = p;
    return error;
}

size_t kiln_malloc_usable_size(const void *ptr) {
    if (!ptr) return 0;
    if (boot_owns(ptr)) return boot_size(ptr);
    kiln_heap_find found = { KILN_HEAP_NOT_OURS, 0, 0 };
    kiln_ctx *ctx = heap_ctx();   /* its own heap first: no process-wide lock */
    if (ctx) found = kiln_heap_find_ptr(&ctx->rt->heap, ptr);
    if (found.kind == KILN_HEAP_NOT_OURS && !kiln_heap_owner_find(ptr, &found)) return 0;
    bool live = found.kind == KILN_HEAP_LARGE || (found.kind == KILN_HEAP_CLASS && found.tag != KILN_HEAP_FREE);
    return live ? found.usable : 0;
}
