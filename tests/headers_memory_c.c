/* tests/headers_memory_c.c — <kiln/memory.h> compiles on its own as strict C11, its
 * typed macros included (KILN_ARENA_NEW, KILN_FRAME_NEW: headers_c.c runs them). */
#include <kiln/memory.h>

int headers_memory_c(void);
int headers_memory_c(void) {
    kiln_mark mark = { { 0, 0 } };
    return (int)(mark.opaque[0] + mark.opaque[1]);
}

typedef struct headers_vec { _Alignas(32) float xyz[3]; } headers_vec;

headers_vec *headers_memory_new(kiln_arena *arena, kiln_ctx *ctx, size_t count);
headers_vec *headers_memory_new(kiln_arena *arena, kiln_ctx *ctx, size_t count) {
    headers_vec *in_arena = KILN_ARENA_NEW(arena, headers_vec, count);
    headers_vec *in_frame = KILN_FRAME_NEW(ctx, headers_vec, count);
    const char *label = kiln_frame_printf(ctx, "%zu vectors", count);
    return in_arena && in_frame && label ? in_frame : NULL;
}
