/* tests/headers_c.c — the umbrella header compiles as strict C11 (-std=c11 -Wall
 * -Wextra -Wpedantic -Werror -pedantic-errors) and a minimal client links against the
 * shared library and runs: create, attach, a frame with frame memory, an arena, stats,
 * detach, destroy. Exits 0 on success. The other headers_*_c.c files include each
 * public header on its own. */
#include <kiln/kiln.h>

#include <stdio.h>
#include <string.h>

int headers_core_c(void);
int headers_memory_c(void);
int headers_stats_c(void);
int headers_stats_fields_c(void);
int headers_handles_c(kiln_runtime *rt, kiln_ctx *ctx);
int headers_trace_c(kiln_runtime *rt);
int headers_log_items_c(void);

typedef struct headers_vec headers_vec;
headers_vec *headers_memory_new(kiln_arena *arena, kiln_ctx *ctx, size_t count);

/* The typed macros of kiln/memory.h (headers_memory_c.c compiles them on their own),
 * run: aligned, and the frame string formatted. */
static int headers_memory_typed(kiln_arena *level, kiln_ctx *ctx) {
    headers_vec *v = headers_memory_new(level, ctx, 4);
    return v && ((size_t)v & 31) == 0 ? 0 : 1;
}

int main(void) {
    if (headers_core_c() + headers_memory_c() + headers_stats_c() + headers_stats_fields_c() != 0)
        return 1;
    if (headers_log_items_c() != 0) return 10;
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .frame_budget = 1u << 20 });
    if (!rt) return 2;
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) return 3;
    if (kiln_frame_begin(ctx) != 1) return 4;
    char *scratch = kiln_frame_alloc(ctx, 4096, 64);
    if (!scratch || ((size_t)scratch & 63) != 0) return 5;
    memset(scratch, 1, 4096);
    kiln_frame_end(ctx);
    kiln_arena *level = kiln_arena_create(rt, "level");
    kiln_mark mark = kiln_arena_mark(level);
    if (!kiln_arena_alloc(level, 100, 0)) return 6;
    kiln_arena_release(level, mark);
    int *ids = KILN_ARENA_NEW(level, int, 8);
    char *name = kiln_arena_printf(level, "level %d", 1);
    char *grown = kiln_arena_grow(level, name, 8, 64, 1);
    if (!ids || !name || strcmp(name, "level 1") != 0 || grown != name) return 11;
    if (headers_memory_typed(level, ctx) != 0) return 12;
    kiln_stats stats;
    if (!kiln_stats_get(rt, &stats) || stats.arenas != 2 + stats.worker_count ||
        stats.contexts != 1 + stats.worker_count)
        return 7;   /* every worker has a context and a frame arena too */
    kiln_arena_destroy(level);
    if (headers_handles_c(rt, ctx) != 0) return 8;
    if (headers_trace_c(rt) != 0) return 9;
    kiln_detach(ctx);
    kiln_destroy(rt);
    puts("check-headers-c: ok");
    return 0;
}
