/* runtime/check.h — the argument checks every runtime/ entry point starts with: is this
 * a live runtime, an attached context, a context that may use this object, are the
 * stats arguments given. The bottom of runtime/: it reads the structs (types.h) and
 * logs, and calls no other runtime/ file. Never installed. */
#ifndef KILN_RUNTIME_CHECK_H
#define KILN_RUNTIME_CHECK_H

#include "types.h"

/* kiln_create, once rt is whole, and kiln_destroy, just before it frees rt: rt joins and
 * leaves the process's list of live runtimes that kiln_runtime_check consults. Any
 * thread (a process-wide lock). */
KILN_INTERNAL void kiln_runtime_register(kiln_runtime *rt);
KILN_INTERNAL void kiln_runtime_unregister(kiln_runtime *rt);

/* kiln_destroy, before the heap goes: bare-pointer lookups pass rt's heap by from now on.
 * Any thread (the live-runtime lock). */
KILN_INTERNAL void kiln_runtime_heap_close(kiln_runtime *rt);

/* The live runtime whose heap ptr lies in (a class slot, an interior pointer of one, or a
 * large allocation: *found says which), or NULL (*found NOT_OURS). Reads nothing at ptr
 * before a heap's address map or registry says it is the heap's. Any thread (holds the
 * live-runtime lock; logs nothing). */
KILN_INTERNAL kiln_runtime *kiln_heap_owner_find(const void *ptr, kiln_heap_find *found);

/* Whether rt is a live runtime (on the list, then its magic: a pointer that is none is
 * never read); logs RUNTIME_NULL / RUNTIME_INVALID otherwise. Any thread. */
KILN_INTERNAL bool kiln_runtime_check(const kiln_runtime *rt, const char *function);

/* The process's list of live runtimes held (fork: no other thread may hold it in the
 * child). Concurrency: any thread. */
KILN_INTERNAL void kiln_live_list_lock(void);
KILN_INTERNAL void kiln_live_list_unlock(void);

/* Whether rt is a live runtime, told quietly: on the process's list (compared, not read),
 * then its magic. Concurrency: any thread. */
KILN_INTERNAL bool kiln_runtime_is_live(const kiln_runtime *rt);

/* rt's log when rt is a live runtime, else NULL (the stderr default): a refusal of
 * another argument never reads a dead runtime. Any thread. */
KILN_INTERNAL const kiln_log_sink *kiln_runtime_log(const kiln_runtime *rt);

/* The argument check of a list call (kiln_stats_pools and the like, kiln_history_read):
 * a live runtime (else RUNTIME_NULL / RUNTIME_INVALID), and out unless cap is 0 (else
 * STATS_NULL_OUT through rt's log). Any thread. */
KILN_INTERNAL bool kiln_stats_list_args_ok(const kiln_runtime *rt, const void *out, size_t cap,
                                           const char *function);

/* The argument check of a kiln_*_stats_get: true when object and out are both given;
 * otherwise logs through log which is NULL (null_item, or STATS_NULL_OUT), zeroes *out
 * when there is one, and returns false. Any thread. */
KILN_INTERNAL bool kiln_stats_args_ok(const kiln_log_sink *log, const void *object,
                                      kiln_log_item null_item, const char *noun, void *out,
                                      size_t out_size, const char *function);

/* Whether ctx looks like an attached context; logs otherwise: CONTEXT_DETACHED through
 * its runtime's log (a detached context's memory lives until kiln_destroy), or
 * CONTEXT_NULL / CONTEXT_INVALID on stderr. Concurrency: ctx's own thread. */
KILN_INTERNAL bool kiln_ctx_check(const kiln_ctx *ctx, const char *function);

/* The log of the runtime ctx belongs to, attached or detached; NULL (the stderr
 * default) when ctx is NULL or not a context. For refusing a valid context's other
 * arguments (a NULL pool or table) through its runtime. Concurrency: ctx's own thread. */
KILN_INTERNAL const kiln_log_sink *kiln_ctx_log(const kiln_ctx *ctx);

/* Whether p is aligned as a kiln struct of that type is: one that is not is no kiln
 * object, and the checks never read it as one (its fields would be misaligned). */
#define kiln_aligned_as(p, type) ((((uintptr_t)(const void *)(p)) & (_Alignof(type) - 1)) == 0)

/* The first word of what the caller says is a context (its magic), read as a 64-bit
 * word, not through the struct: memory that is no context, malloc'd or another object,
 * is read at the alignment it has, not the context's 64 bytes. Relaxed: a context is its
 * own thread's; another thread's view only matters for misuse, refused on a slow path. */
static inline uint64_t kiln_ctx_word(const kiln_ctx *ctx) {
    return kiln_load_relaxed((const _Atomic uint64_t *)(const void *)ctx);
}

/* Whether ctx is an attached context: the fast paths' check, one load and a compare of
 * the context's first word. */
static inline bool kiln_ctx_attached(const kiln_ctx *ctx) {
    return ctx && kiln_ctx_word(ctx) == KILN_CTX_MAGIC;
}

/* Whether a non-NULL ctx may use an object of runtime owner (a pool or a handle table:
 * kind and name say which, for the message): attached, and of that runtime. Otherwise
 * logs through the object's log CONTEXT_DETACHED, CONTEXT_INVALID (not a context at
 * all) or wrong_runtime_item, and returns false. Concurrency: ctx's own thread. */
KILN_INTERNAL bool kiln_ctx_may_use(const kiln_ctx *ctx, const kiln_runtime *owner,
                                    const kiln_log_sink *log, kiln_log_item wrong_runtime_item,
                                    const char *function, const char *kind, const char *name);

/* Whether the calling thread is outside every log callback: a call that creates,
 * destroys, attaches, detaches or drives the frame clock is refused inside one
 * (LOG_CALLBACK_CALL on stderr only, never back into the callbacks; counted through
 * log, which may be NULL), for kiln may be in the middle of changing what that call
 * changes. Any thread. */
KILN_INTERNAL bool kiln_outside_log_callback(const kiln_log_sink *log, const char *function);

#endif /* KILN_RUNTIME_CHECK_H */
