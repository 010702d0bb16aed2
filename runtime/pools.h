/* runtime/pools.h — what the rest of the runtime asks of the pools it owns: a
 * context's caches flushed, the pools' audit and their teardown. Never installed. */
#ifndef KILN_RUNTIME_POOLS_H
#define KILN_RUNTIME_POOLS_H

#include "types.h"

/* Gives every pool cache of ctx back to its pool's depot. ctx's thread (or, for a
 * worker, the thread that joined it). Takes registry_lock. */
KILN_INTERNAL void kiln_ctx_flush_pools(kiln_ctx *ctx);

/* kiln_destroy: destroys the pools still alive (logged); their records stay readable. */
KILN_INTERNAL void kiln_runtime_pools_fini(kiln_runtime *rt);

/* kiln_destroy, after its last message: frees every pool's record. */
KILN_INTERNAL void kiln_runtime_pools_free(kiln_runtime *rt);

#endif /* KILN_RUNTIME_POOLS_H */
