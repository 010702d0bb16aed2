/* runtime/thread_ctx.c — each thread's contexts (kiln_ctx_current, the malloc shape's),
 * kept as attach, detach and destroy go, and where the process runtime is. */
#include "thread_ctx.h"
#include "check.h"

#include <pthread.h>

_Thread_local kiln_thread_state kiln_thread KILN_TLS_MODEL;
_Atomic uint64_t kiln_runtime_destroys;

void kiln_remember(kiln_remembered *r, kiln_ctx *ctx) {
    *r = (kiln_remembered){ ctx, ctx->rt, ctx->rt->tag_salt };
}

static bool still_there(const kiln_remembered *r) {
    return r->ctx != NULL && kiln_runtime_is_live(r->rt) && r->rt->tag_salt == r->salt;
}

void kiln_thread_recheck(void) {
    kiln_thread_state *me = &kiln_thread;
    me->destroys = kiln_load_relaxed(&kiln_runtime_destroys);   /* a later destroy: next time */
    if (me->current.ctx && !still_there(&me->current)) me->current = (kiln_remembered){ 0 };
    if (me->heap.ctx && !still_there(&me->heap)) me->heap = (kiln_remembered){ 0 };
    if (me->implicit.ctx && !still_there(&me->implicit)) me->implicit = (kiln_remembered){ 0 };
}

void kiln_thread_ctx_runtime_gone(void) { kiln_add_relaxed(&kiln_runtime_destroys, 1); }

void kiln_thread_ctx_attached(kiln_ctx *ctx) {
    kiln_thread_state *me = &kiln_thread;
    if (me->destroys != kiln_load_relaxed(&kiln_runtime_destroys)) kiln_thread_recheck();
    kiln_remember(&me->current, ctx);
    if (ctx->rt == kiln_process_runtime_peek()) kiln_remember(&me->heap, ctx);
}

void kiln_thread_ctx_released(kiln_ctx *ctx) {
    kiln_thread_state *me = &kiln_thread;
    if (me->current.ctx == ctx) me->current = (kiln_remembered){ 0 };
    if (me->heap.ctx == ctx) me->heap = (kiln_remembered){ 0 };
    if (me->implicit.ctx == ctx) me->implicit = (kiln_remembered){ 0 };
}

kiln_ctx *kiln_ctx_current(void) {
    kiln_thread_state *me = &kiln_thread;
    if (me->destroys != kiln_load_relaxed(&kiln_runtime_destroys)) kiln_thread_recheck();
    return me->current.ctx ? me->current.ctx : me->implicit.ctx;
}

/* ---- where the process runtime is ---- */

/* The program's (kiln_set_process_runtime) and kiln's own. Release stores once they are
 * set, acquire loads: a thread that finds one sees it whole. */
static _Atomic(kiln_runtime *) named, kilns;
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;   /* naming and forgetting */

kiln_runtime *kiln_process_runtime_peek(void) {
    kiln_runtime *rt = kiln_load_acquire(&named);
    return rt ? rt : kiln_load_acquire(&kilns);
}

bool kiln_process_runtime_is_kilns(const kiln_runtime *rt) {
    return rt != NULL && rt == kiln_load_acquire(&kilns);
}

void kiln_process_runtime_made(kiln_runtime *rt) { kiln_store_release(&kilns, rt); }

bool kiln_process_runtime_name(kiln_runtime *rt) {
    pthread_mutex_lock(&named_lock);
    bool free_slot = kiln_load_acquire(&named) == NULL;
    if (free_slot) kiln_store_release(&named, rt);
    pthread_mutex_unlock(&named_lock);
    return free_slot;
}

void kiln_process_runtime_forget(const kiln_runtime *rt) {
    pthread_mutex_lock(&named_lock);
    if (kiln_load_acquire(&named) == rt) kiln_store_release(&named, NULL);
    pthread_mutex_unlock(&named_lock);
}
