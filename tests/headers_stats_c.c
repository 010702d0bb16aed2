/* tests/headers_stats_c.c — <kiln/stats.h> compiles on its own as strict C11, and its
 * structs keep their layout where size_t is 64 bits: the fields made from the X-macro
 * lists sit where they sat when the structs were written out by hand. */
#include <kiln/stats.h>

#include <stddef.h>

#if SIZE_MAX == UINT64_MAX
_Static_assert(offsetof(kiln_stats, api_errors) == 24, "kiln_stats layout");
_Static_assert(offsetof(kiln_stats, blocks) == 32, "kiln_stats layout");
_Static_assert(offsetof(kiln_stats, handle_tables) == 148, "kiln_stats layout");
_Static_assert(offsetof(kiln_block_pool_stats, trimmed_bytes) == 104, "block pool layout");
_Static_assert(offsetof(kiln_arena_stats, bytes_in_use) == 48, "arena layout");
_Static_assert(offsetof(kiln_arena_stats, blocks_taken) == 144, "arena layout");
_Static_assert(offsetof(kiln_arena_stats, wrong_thread) == 160, "arena layout");
_Static_assert(offsetof(kiln_pool_stats, alive) == 88, "pool layout");
_Static_assert(offsetof(kiln_pool_stats, live) == 96, "pool layout");
_Static_assert(offsetof(kiln_pool_stats, guard_errors) == 192, "pool layout");
_Static_assert(offsetof(kiln_ctx_stats, is_worker) == 4, "context layout");
_Static_assert(offsetof(kiln_ctx_stats, frame_peak_last_frame) == 56, "context layout");
_Static_assert(offsetof(kiln_ctx_stats, idle_spin_ns) == 72, "context layout");
#endif

int headers_stats_c(void);
int headers_stats_c(void) {
    kiln_stats stats = { 0 };
    kiln_arena_stats arena = { 0 };
    return (int)(stats.blocks.gets + arena.allocs);
}
