/* tests/headers_memory_c.c — <kiln/memory.h> compiles on its own as strict C11. */
#include <kiln/memory.h>

int headers_memory_c(void);
int headers_memory_c(void) {
    kiln_mark mark = { { 0, 0 } };
    return (int)(mark.opaque[0] + mark.opaque[1]);
}
