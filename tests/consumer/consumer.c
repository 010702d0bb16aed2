/* A program outside kiln's tree that uses only the installed public API: what a user's
 * build meets through pkg-config or a meson subproject. */
#include <kiln/kiln.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .frame_budget = 1u << 20 });
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    if (!ctx) return 1;
    for (int frame = 0; frame < 10; frame++) {
        kiln_frame_begin(ctx);
        char *scratch = kiln_frame_alloc(ctx, 1000, 64);
        if (!scratch || ((uintptr_t)scratch & 63) != 0) return 1;
        memset(scratch, frame, 1000);
        kiln_frame_end(ctx);
    }
    kiln_stats stats;
    if (!kiln_stats_get(rt, &stats) || stats.frame != 10) return 1;
    if (stats.contexts != 1 + stats.worker_count) return 1;   /* the workers' contexts too */
    kiln_detach(ctx);
    kiln_destroy(rt);
    puts("consumer ok");
    return 0;
}
