/* runtime/handles.h — the handle tables of a runtime, as the rest of the runtime uses
 * them: a table (struct kiln_handles, in types.h) is the core of alloc/handle_table.h
 * plus its runtime, kept in the runtime's table of slots; each context holds one cache
 * per slot. Never installed. runtime/handles.c has the public
 * calls and the registry; runtime/handle_reclaim.h says when a freed slot is reusable. */
#ifndef KILN_RUNTIME_HANDLES_H
#define KILN_RUNTIME_HANDLES_H

#include "types.h"

/* At detach, on the context's thread: hands the caches' slots back to their tables and
 * folds their counters in. Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_handles(struct kiln_ctx *ctx);

/* Under registry_lock: the figures of every cache of the runtime's contexts bound to
 * the table, with what the table folded in. */
KILN_INTERNAL void kiln_handles_tally(kiln_handles *table, kiln_handle_tally *tally);

/* kiln_destroy: destroys the tables still alive (logged); their records stay readable. */
KILN_INTERNAL void kiln_runtime_handles_fini(struct kiln_runtime *rt);

/* kiln_destroy, after its last message: frees every table's record. */
KILN_INTERNAL void kiln_runtime_handles_free(struct kiln_runtime *rt);

/* Test hook: slots retire once their generation would pass max_generation (odd, >= 3)
 * instead of 2^32 - 1, so retirement can be tested in a few reuses. Before any alloc. */
KILN_INTERNAL void kiln_handles_set_generation_limit(kiln_handles *table, uint32_t max_generation);

#endif /* KILN_RUNTIME_HANDLES_H */
