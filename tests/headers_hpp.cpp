// tests/headers_hpp.cpp — <kiln/kiln.hpp> compiles on its own with every warning as an
// error (C++17 and C++20; with the other C++ compiler too, tests/meson.build) and works
// when linked with the shared library: each owner, the allocators and containers, the pmr
// resources, a typed pool, a typed handle table and a task_group after another. Exits 0.
#include <kiln/kiln.hpp>

#include <cstdio>
#include <list>
#include <map>
#include <memory_resource>
#include <string>
#include <vector>

struct enemy { int health; };

int main() {
    kiln_desc desc{};
    desc.worker_count = KILN_NO_WORKERS;
    kiln::runtime rt(desc);
    if (!rt) return 1;
    kiln::context ctx(rt.get());
    if (!ctx) return 2;
    kiln::arena level(rt.get(), "level");
    if (!level) return 3;
    kiln::pool<enemy> enemies(rt.get(), "enemies");
    kiln::handle_table<enemy> targets(rt.get(), "targets", 16);
    {
        kiln::frame f(ctx.get());
        if (!f || f.number() != 1) return 4;
        kiln::frame_vector<int> ids(ctx.get());
        for (int i = 0; i < 100; i++) ids.push_back(i);
        kiln::frame_string name("a name longer than any small-string buffer", ctx.get());
        std::list<int, kiln::frame_allocator<int>> order(ctx.get());
        order.push_back(1);
        std::map<int, int, std::less<int>, kiln::frame_allocator<std::pair<const int, int>>>
            by_id(ctx.get());
        by_id[3] = 4;
        kiln::frame_resource frame_memory(ctx.get());
        std::pmr::vector<int> pmr_ids(&frame_memory);
        pmr_ids.assign(ids.begin(), ids.end());
        if (ids.size() != 100 || pmr_ids[99] != 99 || order.front() != 1 || by_id[3] != 4)
            return 5;
    }
    {
        kiln::arena_scope scope(level.get());
        kiln::arena_vector<double> values(level.get());
        values.resize(1000, 1.5);
        kiln::arena_resource level_memory(level.get());
        std::pmr::string text("a string in the level arena, longer than the small buffer",
                              &level_memory);
        if (values[999] != 1.5 || text.size() < 20) return 6;
    }
    enemy *e = enemies.create(ctx.get(), enemy{ 7 });
    if (!e || e->health != 7 || enemies.stats().live != 1) return 7;
    enemies.destroy(ctx.get(), e);
    kiln::handle<enemy> h = targets.alloc(ctx.get());
    if (!h || !targets.get(h) || targets.get(h)->health != 0 || !targets.free(ctx.get(), h))
        return 8;
    if (targets.get(h) != nullptr) return 9;
    kiln::handle<enemy> alive = targets.alloc(ctx.get());
    int visits = 0;
    targets.foreach([&](kiln::handle<enemy> seen, enemy &item) { visits += seen == alive && item.health == 0; });
    targets.parallel_for(ctx.get(), 0, [](kiln::handle<enemy>, enemy &item) { item.health = 1; });
    if (visits != 1 || targets.get(alive)->health != 1 || !targets.free(ctx.get(), alive)) return 10;
    int order[2] = { 0, 0 }, step = 0;
    {
        kiln::task_group first(ctx.get()), then(ctx.get());
        first.run([&](kiln_ctx *) { order[0] = ++step; });
        then.run_after({&first}, [&](kiln_ctx *) { order[1] = ++step; });
        then.wait(kiln::isolate);
    }
    if (order[0] != 1 || order[1] != 2) return 11;
    std::puts("check-headers-hpp: ok");
    return 0;
}
