/* tests/expect/guards.c — writes one byte past a pool object and one byte past an arena
 * allocation, with the runtime's KILN_DEBUG_GUARDS on, then frees the object and resets
 * the arena: kiln's guard checks must log POOL_GUARD_DAMAGED and ARENA_GUARD_DAMAGED,
 * as errors, naming the pool and the arena. Prints every message it receives ("LEVEL
 * MESSAGE", one per line) and exits 0; scripts/test-all.sh checks the lines. */
#include <kiln/kiln.h>

#include <stdio.h>

static void print_log(void *user, kiln_log_level level, const char *message) {
    static const char *const names[] = { "debug", "info", "warn", "error" };
    (void)user;
    printf("%s %s\n", names[level], message);
}

int main(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS,
                                                 .debug = KILN_DEBUG_GUARDS,
                                                 .log = print_log });
    kiln_ctx *ctx = rt ? kiln_attach(rt) : NULL;
    kiln_pool *bullets = ctx ? kiln_pool_create(rt, &(kiln_pool_desc){ .name = "bullets",
                                                                       .size = 24 }) : NULL;
    kiln_arena *level = rt ? kiln_arena_create(rt, "level") : NULL;
    if (!bullets || !level) return 2;

    unsigned char *bullet = kiln_pool_alloc(ctx, bullets);
    unsigned char *path = kiln_arena_alloc(level, 40, 0);
    if (!bullet || !path) return 2;
    bullet[24] = 0x55;   /* the misuse: one byte past the 24-byte object */
    path[40] = 0x55;     /* and one past the 40-byte allocation */
    kiln_pool_free(ctx, bullets, bullet);
    kiln_arena_reset(level);

    kiln_arena_destroy(level);
    kiln_pool_destroy(bullets);
    kiln_detach(ctx);
    kiln_destroy(rt);
    return 0;
}
