/* tests/headers_stats_c.c — <kiln/stats.h> compiles on its own as strict C11. */
#include <kiln/stats.h>

int headers_stats_c(void);
int headers_stats_c(void) {
    kiln_stats stats = { 0 };
    kiln_arena_stats arena = { 0 };
    return (int)(stats.blocks.gets + arena.allocs);
}
