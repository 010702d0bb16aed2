/* tests/headers_heap_c.c — <kiln/heap.h> compiles on its own as strict C11. */
#include <kiln/heap.h>

int headers_heap_c(kiln_runtime *rt);
int headers_heap_c(kiln_runtime *rt) {
    kiln_tag tag = kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Audio", .budget = 1 << 20,
                                                         .policy = KILN_BUDGET_REFUSE });
    kiln_tag_stats stats;
    return kiln_tag_stats_get(rt, tag, &stats) ? (int)stats.live_bytes : KILN_MAX_TAGS;
}
