/* tests/headers_handles_c.c — <kiln/handles.h> compiles on its own as strict C11,
 * KILN_HANDLE_TYPE included, kiln_handles_stats keeps its layout (64-bit size_t), and a
 * typed table works through the shared library. */
#include <kiln/handles.h>

#include <stddef.h>

#if SIZE_MAX == UINT64_MAX
_Static_assert(offsetof(kiln_handles_stats, item_size) == 48, "handles stats layout");
_Static_assert(offsetof(kiln_handles_stats, pending_reuse) == 136, "handles stats layout");
#endif

struct particle { float x, y; };
KILN_HANDLE_TYPE(particle, struct particle)

int headers_handles_c(kiln_runtime *rt, kiln_ctx *ctx);
int headers_handles_c(kiln_runtime *rt, kiln_ctx *ctx) {
    particle_table table = particle_table_create(rt, "particles", 8);
    if (!table.raw) return 1;
    struct particle *p = 0;
    particle_handle h = particle_alloc(ctx, table, &p);
    if (particle_handle_is_null(h) || !p || p->x != 0.0f) return 2;
    p->x = 3.0f;
    if (particle_get(table, h) != p || kiln_handle_index(h.raw) >= 8) return 3;
    if (!particle_free(ctx, table, h) || particle_get(table, h) != 0) return 4;
    particle_table_destroy(table);
    return 0;
}
