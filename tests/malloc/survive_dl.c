/* tests/malloc/survive_dl.c — libsurvive-dl.so: a library that allocates in its
 * constructor (freed in its destructor, at dlclose) and hands out memory that outlives
 * it. */
#define _GNU_SOURCE   /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *own;

__attribute__((constructor)) static void load(void) { own = strdup("the library's own"); }

__attribute__((destructor)) static void unload(void) { free(own); }

__attribute__((visibility("default"))) char *survive_dl_make(int n) {
    char *s = malloc(32);
    snprintf(s, 32, "made %d", n);
    return s;
}
