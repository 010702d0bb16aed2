/* tests/consumer/consumer_malloc.c — a program linked with libkiln-malloc (pkg-config
 * kiln-malloc), not preloaded: its malloc, strdup's and free are kiln's heap. */
#define _POSIX_C_SOURCE 200809L   /* strdup */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char *s = strdup("on kiln's heap");
    void *p = malloc(1000);
    int ok = s && p && kiln_heap_usable_size(s) != 0 && kiln_heap_usable_size(p) >= 1000;
    free(s);
    free(p);
    printf("consumer-malloc: %s\n", ok ? "malloc is kiln's" : "malloc is NOT kiln's");
    return ok ? 0 : 1;
}
