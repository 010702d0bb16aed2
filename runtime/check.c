/* runtime/check.c — the argument checks of runtime/ entry points (check.h): the
 * runtime, the context, the stats arguments. Calls nothing above it in runtime/. */
#include "check.h"

#include <string.h>

/* The process's live runtimes, newest first: a runtime is on the list from kiln_create
 * until kiln_destroy frees it. The runtime check finds a pointer here before it reads
 * anything of it, so a destroyed runtime, a small object or an unreadable page passed as
 * one is refused without a read. Under live_lock, which is never held while logging. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_runtime   *live_runtimes;

/* The last tag salt handed out (runtime/tags.h); under live_lock. */
static uint32_t last_salt;

void kiln_runtime_register(kiln_runtime *rt) {
    pthread_mutex_lock(&live_lock);
    /* A salt no live runtime has (1 to 65535; fewer runtimes than that live at once), so
     * one live runtime's tag is never taken for another's. */
    for (bool taken = true; taken;) {
        last_salt = last_salt % 0xffffu + 1u;
        taken = false;
        for (const kiln_runtime *r = live_runtimes; r && !taken; r = r->live_next)
            taken = r->tag_salt == last_salt;
    }
    rt->tag_salt = last_salt;
    rt->live_next = live_runtimes;
    live_runtimes = rt;
    pthread_mutex_unlock(&live_lock);
}

void kiln_runtime_heap_close(kiln_runtime *rt) {
    pthread_mutex_lock(&live_lock);
    rt->heap_open = false;
    pthread_mutex_unlock(&live_lock);
}

kiln_runtime *kiln_heap_owner_find(const void *ptr, kiln_heap_find *found) {
    *found = (kiln_heap_find){ KILN_HEAP_NOT_OURS, 0, 0 };
    kiln_runtime *owner = NULL;
    pthread_mutex_lock(&live_lock);
    for (kiln_runtime *r = live_runtimes; r && !owner; r = r->live_next) {
        if (!r->heap_open) continue;
        kiln_heap_find f = kiln_heap_find_ptr(&r->heap, ptr);
        if (f.kind != KILN_HEAP_NOT_OURS) {
            *found = f;
            owner = r;
        }
    }
    pthread_mutex_unlock(&live_lock);
    return owner;
}

void kiln_runtime_unregister(kiln_runtime *rt) {
    pthread_mutex_lock(&live_lock);
    kiln_runtime **link = &live_runtimes;
    while (*link && *link != rt) link = &(*link)->live_next;
    if (*link) *link = rt->live_next;
    pthread_mutex_unlock(&live_lock);
}

bool kiln_runtime_is_live(const kiln_runtime *rt) {
    if (!rt) return false;
    pthread_mutex_lock(&live_lock);
    const kiln_runtime *r = live_runtimes;
    while (r && r != rt) r = r->live_next;
    pthread_mutex_unlock(&live_lock);
    return r != NULL && rt->magic == KILN_RUNTIME_MAGIC;
}

bool kiln_runtime_check(const kiln_runtime *rt, const char *function) {
    if (kiln_likely(kiln_runtime_is_live(rt))) return true;
    kiln_log_misuse(NULL, rt ? KILN_LOGITEM_RUNTIME_INVALID : KILN_LOGITEM_RUNTIME_NULL,
                    "%s: the runtime is %s", function, rt ? "not a live runtime" : "NULL");
    return false;
}

const kiln_log_sink *kiln_runtime_log(const kiln_runtime *rt) {
    return kiln_runtime_is_live(rt) ? &rt->log : NULL;
}

bool kiln_stats_list_args_ok(const kiln_runtime *rt, const void *out, size_t cap,
                             const char *function) {
    if (!kiln_runtime_check(rt, function)) return false;
    if (out || cap == 0) return true;
    kiln_log_misuse(&((kiln_runtime *)rt)->log, KILN_LOGITEM_STATS_NULL_OUT,
                    "%s: out is NULL with cap %zu; nothing copied", function, cap);
    return false;
}

bool kiln_stats_args_ok(const kiln_log_sink *log, const void *object, kiln_log_item null_item,
                        const char *noun, void *out, size_t out_size, const char *function) {
    if (object && out) return true;
    if (out) memset(out, 0, out_size);
    kiln_log_misuse(log, object ? KILN_LOGITEM_STATS_NULL_OUT : null_item, "%s: %s is NULL", function,
                    object ? "out" : noun);
    return false;
}

/* The magic of a non-NULL ctx, or 0 when it is not aligned as a context is (then it is
 * none, and nothing of it is read). */
static uint64_t ctx_magic(const kiln_ctx *ctx) {
    return kiln_aligned_as(ctx, kiln_ctx) ? kiln_ctx_word(ctx) : 0;
}

static bool ctx_detached(const kiln_ctx *ctx) { return ctx_magic(ctx) == KILN_CTX_DETACHED_MAGIC; }

const kiln_log_sink *kiln_ctx_log(const kiln_ctx *ctx) {
    if (!ctx || (ctx_magic(ctx) != KILN_CTX_MAGIC && !ctx_detached(ctx))) return NULL;
    return &ctx->rt->log;
}

bool kiln_ctx_may_use(const kiln_ctx *ctx, const kiln_runtime *owner, const kiln_log_sink *log,
                      kiln_log_item wrong_runtime_item, const char *function, const char *kind,
                      const char *name) {
    if (ctx_magic(ctx) != KILN_CTX_MAGIC) {
        if (ctx_detached(ctx))
            kiln_log_misuse(log, KILN_LOGITEM_CONTEXT_DETACHED, "%s: %s '%s': context %u has been detached; "
                            "refused", function, kind, name, ctx->id);
        else
            kiln_log_misuse(log, KILN_LOGITEM_CONTEXT_INVALID, "%s: %s '%s': %p is not a kiln context; "
                            "refused", function, kind, name, (const void *)ctx);
        return false;
    }
    if (ctx->rt != owner) {
        kiln_log_misuse(log, wrong_runtime_item, "%s: %s '%s' belongs to another runtime than "
                        "context %u; refused", function, kind, name, ctx->id);
        return false;
    }
    return true;
}

static KILN_COLD void refuse_ctx(const kiln_ctx *ctx, const char *function) {
    if (!ctx)
        kiln_log_misuse(NULL, KILN_LOGITEM_CONTEXT_NULL, "%s: the context is NULL", function);
    else if (ctx_detached(ctx))
        kiln_log_misuse(kiln_ctx_log(ctx), KILN_LOGITEM_CONTEXT_DETACHED,
                        "%s: context %u has been detached; refused", function, ctx->id);
    else
        kiln_log_misuse(NULL, KILN_LOGITEM_CONTEXT_INVALID, "%s: %p is not a kiln context", function,
                        (const void *)ctx);
}

bool kiln_ctx_check(const kiln_ctx *ctx, const char *function) {
    if (kiln_likely(ctx && ctx_magic(ctx) == KILN_CTX_MAGIC)) return true;
    refuse_ctx(ctx, function);
    return false;
}

bool kiln_outside_log_callback(const kiln_log_sink *log, const char *function) {
    if (kiln_likely(!kiln_log_in_callback())) return true;
    kiln_log_sink to_stderr = { .misuse = log ? log->misuse : NULL };
    kiln_log_misuse(&to_stderr, KILN_LOGITEM_LOG_CALLBACK_CALL,
                    "%s: called from inside a log callback, which may run while kiln changes "
                    "what this call changes; refused (a log callback may read figures only)",
                    function);
    return false;
}

void kiln_live_list_lock(void) { pthread_mutex_lock(&live_lock); }

void kiln_live_list_unlock(void) { pthread_mutex_unlock(&live_lock); }
