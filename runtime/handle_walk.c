/* runtime/handle_walk.c — the live-item walk of a handle table, on the calling thread
 * (kiln_handles_foreach) or split over jobs (kiln_handles_parallel_for): the argument
 * checks and the count of walks in progress that kiln_handles_destroy refuses under.
 * The slots' reading: alloc/handle_table.h. */
#include "handles.h"

#include <kiln/jobs.h>

#include "check.h"

/* One walk's arguments, read by every range of a parallel walk. */
typedef struct walk {
    kiln_handles        *table;
    kiln_handle_visit_fn fn;
    void                *user;
} walk;

/* Counts a walk in (true) or refuses it (false, logged): a NULL or destroyed table, a
 * NULL fn. A NULL table is logged through log (the caller's context's runtime; NULL: the
 * stderr default, where no context names one). The count comes first, so a destroy
 * from inside fn (this thread, or a job of this walk, which runs after its submission)
 * finds it. Relaxed: only those threads need to see it, and the walk's own sequencing
 * and job hand-over order them. */
static bool walk_begin(kiln_handles *table, kiln_handle_visit_fn fn, const kiln_log_sink *log,
                       const char *function) {
    if (!table) {
        kiln_log_misuse(log, KILN_LOGITEM_HANDLES_NULL, "%s: the table is NULL", function);
        return false;
    }
    if (kiln_handle_table_refuse_dead(&table->core, function)) return false;
    if (!fn) {
        kiln_log_misuse(&table->core.log, KILN_LOGITEM_HANDLES_NULL_VISIT,
                        "%s: table '%s': fn is NULL", function, table->core.name);
        return false;
    }
    kiln_add_relaxed(&table->walks, 1);
    return true;
}

static void walk_end(kiln_handles *table) {
    kiln_add_relaxed(&table->walks, (uint32_t)-1);
}

void kiln_handles_foreach(kiln_handles *table, kiln_handle_visit_fn fn, void *user) {
    if (!walk_begin(table, fn, NULL, "kiln_handles_foreach")) return;
    kiln_handle_table_walk(&table->core, 0, kiln_handle_table_used_slots(&table->core), fn, user);
    walk_end(table);
}

static void walk_range(kiln_ctx *ctx, size_t begin, size_t end, void *arg) {
    (void)ctx;
    const walk *w = arg;
    kiln_handle_table_walk(&w->table->core, (uint32_t)begin, (uint32_t)end, w->fn, w->user);
}

void kiln_handles_parallel_for(kiln_ctx *ctx, kiln_handles *table, size_t grain,
                               kiln_handle_visit_fn fn, void *user) {
    const char *function = "kiln_handles_parallel_for";
    if (!ctx) {
        kiln_log_misuse(table ? &table->core.log : NULL, KILN_LOGITEM_CONTEXT_NULL,
                        "%s: the context is NULL", function);
        return;
    }
    if (!walk_begin(table, fn, kiln_ctx_log(ctx), function)) return;
    if (kiln_ctx_may_use(ctx, table->owner, &table->core.log, KILN_LOGITEM_HANDLES_WRONG_RUNTIME,
                         function, "table", table->core.name)) {
        walk w = { table, fn, user };
        uint32_t used = kiln_handle_table_used_slots(&table->core);
        if (used) kiln_parallel_for(ctx, used, grain, walk_range, &w);
    }
    walk_end(table);
}
