/* kiln — predictable memory, cheap parallel jobs and thread-safe references for
 * game engines. This umbrella header is the whole public API; include only it.
 *
 * Compiles as C11 and as C++17. Every function is safe to call with bad input:
 * it returns NULL / false / a zero value, counts the event in the stats and
 * reports it once through the log callback. Nothing in kiln aborts. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <kiln/core.h>
#include <kiln/memory.h>
#include <kiln/pool.h>
#include <kiln/handles.h>
#include <kiln/jobs.h>
#include <kiln/stats.h>
#include <kiln/trace.h>

#endif /* KILN_KILN_H */
