/* tests/expect/frame_poison.c — reads frame memory after kiln_frame_end, with the
 * runtime's KILN_DEBUG_POISON on. It exists to be caught: in an AddressSanitizer build
 * as a use-after-poison, under Valgrind's memcheck as an invalid read.
 * scripts/test-all.sh runs it and checks the report; reaching the end of main means
 * the read went unnoticed. */
#include <kiln/kiln.h>

#include <stdio.h>

int main(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS,
                                                 .debug = KILN_DEBUG_POISON });
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    if (!ctx) return 2;
    kiln_frame_begin(ctx);
    volatile char *scratch = kiln_frame_alloc(ctx, 64, 0);
    if (!scratch) return 2;
    scratch[0] = 42;
    kiln_frame_end(ctx);
    char stale = scratch[0];   /* the misuse: frame memory outlived its frame */
    printf("read %d from frame memory after its frame ended: not caught\n", stale);
    kiln_detach(ctx);
    kiln_destroy(rt);
    return 0;
}
