// tests/headers_cpp.cpp — the public headers compile as C++17 (-Wall -Wextra
// -Wpedantic -Werror -pedantic-errors) and work from C++: a zero desc with fields set
// (designated initialisers are C++20), attach, frame memory (KILN_FRAME_NEW and
// kiln_frame_printf too), detach, destroy. Exits 0.
#include <kiln/kiln.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

struct enemy { int health; };
KILN_HANDLE_TYPE(enemy, enemy)

int headers_log_items_cpp();

int main() {
    if (headers_log_items_cpp() != 0) return 9;
    kiln_desc desc{};   // zero: every default
    desc.frame_budget = 1u << 20;
    kiln_runtime *rt = kiln_create(&desc);
    if (!rt) return 1;
    kiln_ctx *ctx = kiln_attach(rt);
    if (!ctx) return 2;
    if (kiln_frame_begin(ctx) != 1) return 3;
    auto *scratch = static_cast<unsigned char *>(kiln_frame_alloc(ctx, 1024, 32));
    if (!scratch || reinterpret_cast<std::uintptr_t>(scratch) % 32 != 0) return 4;
    std::memset(scratch, 0x5A, 1024);
    struct alignas(32) vec { float xyz[3]; };   // the typed macros and strings from C++
    vec *vs = KILN_FRAME_NEW(ctx, vec, 4);
    char *label = kiln_frame_printf(ctx, "%d vectors", 4);
    if (!vs || reinterpret_cast<std::uintptr_t>(vs) % 32 != 0 || !label ||
        std::strcmp(label, "4 vectors") != 0)
        return 10;
    kiln_frame_end(ctx);
    kiln_stats stats{};
    if (!kiln_stats_get(rt, &stats) || stats.frame != 1 ||
        stats.contexts != 1 + stats.worker_count)
        return 5;   // every worker has a context too
    kiln_mark mark{};
    (void)mark;
    enemy_table enemies = enemy_table_create(rt, "enemies", 4);   // typed handles from C++
    enemy *e = nullptr;
    enemy_handle h = enemy_alloc(ctx, enemies, &e);
    if (!e || enemy_get(enemies, h) != e || !enemy_free(ctx, enemies, h)) return 6;
    enemy_table_destroy(enemies);
    kiln_frame_record records[2]{};   // the history and stats as JSON from C++
    if (kiln_history_read(rt, records, 2) != 1 || records[0].frame != 1) return 7;
    std::FILE *sink = std::tmpfile();
    if (!sink || !kiln_stats_write_json(rt, sink)) return 8;
    std::fclose(sink);
    kiln_detach(ctx);
    kiln_destroy(rt);
    std::puts("check-headers-cpp: ok");
    return 0;
}
