/* kiln — predictable memory, cheap parallel jobs and thread-safe references for
 * game engines. This umbrella header is the whole public API; include only it.
 *
 * Compiles as C11 and as C++17. Every function is safe to call with bad input:
 * it returns NULL / false / a zero value, counts the event in the stats and
 * reports it once through the log callback (the runtime's whenever the arguments name
 * one, stderr otherwise). Bad input means NULL pointers, contexts that are detached or
 * are no context at all, objects that were destroyed or belong to another runtime,
 * forged, stale or foreign handles, bad sizes, counts, alignments, flags and priorities,
 * and calls from the wrong thread or from inside a job where a header forbids them.
 * The exceptions: a pool, handle table or arena pointer that never was one (a cast
 * from something else) is not detected, since checking it would cost every fast path a
 * load; a destroyed one is, until kiln_destroy. A runtime is looked up in the process's
 * list of live runtimes before anything of it is read, so any pointer that is none (a
 * destroyed runtime, a small object, an unreadable page) is refused. A context is
 * checked by its first 8 bytes (the fast paths' one load): a "context" pointing at fewer
 * readable bytes is read out of bounds, and a context used after kiln_destroy (its
 * memory is freed then) or a byte copy of one is not detected. Nothing in kiln aborts. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <kiln/core.h>
#include <kiln/memory.h>
#include <kiln/pool.h>
#include <kiln/handles.h>
#include <kiln/heap.h>
#include <kiln/jobs.h>
#include <kiln/stats.h>
#include <kiln/trace.h>

#endif /* KILN_KILN_H */
