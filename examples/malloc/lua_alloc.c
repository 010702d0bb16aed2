/* examples/malloc/lua_alloc.c — a third-party library on kiln's heap, tagged: Lua's
 * lua_Alloc over kiln_heap_alloc/realloc/free with a "Lua" tag, so every byte the
 * interpreter holds shows under that tag (kiln_stats_tags, the stats report), with a
 * budget that warns. The same works for any library that takes a malloc-shaped
 * callback. Prints the tag's figures after a script ran and after lua_close. */
#include <kiln/kiln.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>

typedef struct lua_heap {
    kiln_ctx *ctx;   /* the thread that runs the interpreter: Lua calls back on it */
    kiln_tag  tag;
} lua_heap;

/* lua_Alloc: nsize 0 frees; otherwise a realloc (ptr NULL: an allocation). */
static void *kiln_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)osize;
    lua_heap *heap = ud;
    if (nsize == 0) {
        kiln_heap_free(heap->ctx, ptr);
        return NULL;
    }
    if (!ptr) return kiln_heap_alloc(heap->ctx, heap->tag, nsize, 0);
    return kiln_heap_realloc(heap->ctx, ptr, nsize, 0);
}

static void print_tag(kiln_runtime *rt, kiln_tag tag, const char *when) {
    kiln_tag_stats s;
    kiln_tag_stats_get(rt, tag, &s);
    printf("%-22s Lua: %8llu bytes live, peak %8llu, %llu allocations, %llu freed\n", when,
           (unsigned long long)s.live_bytes, (unsigned long long)s.peak_bytes,
           (unsigned long long)s.allocs, (unsigned long long)s.frees);
}

int main(void) {
    kiln_runtime *rt = kiln_create(&(kiln_desc){ .worker_count = KILN_NO_WORKERS });
    kiln_ctx *ctx = kiln_attach(rt);
    lua_heap heap = { ctx, kiln_tag_create(rt, &(kiln_tag_desc){ .name = "Lua", .budget = 64u << 20 }) };
    lua_State *L = lua_newstate(kiln_lua_alloc, &heap);
    luaL_openlibs(L);
    const char *script =
        "local t = {} for i = 1, 50000 do t[i] = ('item %d'):format(i) end\n"
        "local n = 0 for _, s in ipairs(t) do n = n + #s end\n"
        "result = n";
    if (luaL_dostring(L, script) != 0) {
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
        return 1;
    }
    lua_getglobal(L, "result");
    printf("script result: %lld\n", (long long)lua_tointeger(L, -1));
    lua_pop(L, 1);
    print_tag(rt, heap.tag, "after the script:");
    lua_close(L);
    print_tag(rt, heap.tag, "after lua_close:");
    kiln_tag_stats s;
    kiln_tag_stats_get(rt, heap.tag, &s);
    kiln_detach(ctx);
    kiln_destroy(rt);
    return s.live_bytes == 0 && s.allocs > 1000 ? 0 : 1;   /* all of it went through kiln */
}
