/* runtime/frame.h — frame boundaries other than the clock's: a thread outside the
 * frame clock that resets its own frame arena ends a frame of its own. Never
 * installed. */
#ifndef KILN_RUNTIME_FRAME_H
#define KILN_RUNTIME_FRAME_H

#include "types.h"

/* kiln_arena_reset of ctx's own frame arena by ctx's thread, which does not drive the
 * clock: from now on ctx runs only its own jobs (never another thread's frame job,
 * whose memory would vanish at this boundary), and it holds no pointer from a handle
 * get (a quiescent point). ctx's own thread. */
KILN_INTERNAL void kiln_ctx_frame_boundary(kiln_ctx *ctx);

#endif /* KILN_RUNTIME_FRAME_H */
