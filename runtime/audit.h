/* runtime/audit.h — the frame-end guard audit (KILN_DEBUG_GUARDS). Never installed. */
#ifndef KILN_RUNTIME_AUDIT_H
#define KILN_RUNTIME_AUDIT_H

#include "types.h"

/* kiln_frame_end, after the frame's jobs, when KILN_DEBUG_GUARDS is on: checks the
 * guards of a sample of every live pool's objects and of the allocations of every arena
 * the calling thread (the driver) owns; a damaged guard is reported and repaired. The
 * driver; takes registry_lock (no pool or arena is destroyed meanwhile). */
KILN_INTERNAL void kiln_runtime_audit(kiln_runtime *rt);

#endif /* KILN_RUNTIME_AUDIT_H */
