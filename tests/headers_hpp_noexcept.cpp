// tests/headers_hpp_noexcept.cpp — the C++ layer built with -fno-exceptions, as many
// engines build: kiln/kiln.hpp compiles, and its owners, allocators, typed pool,
// task_group (with run_after and the isolated wait) and parallel_for work (allocation
// failure would abort instead of throw).
#include <kiln/kiln.hpp>

#include <atomic>

namespace {
struct particle {
    float x = 0, y = 0;
    explicit particle(float start) : x(start) {}
};
}   // namespace

int main() {
    kiln::runtime rt;
    kiln::context ctx(rt.get());
    if (!rt || !ctx) return 1;
    kiln::pool<particle> particles(rt.get(), "particles");
    particle *p = particles.create(ctx.get(), 2.0f);
    if (!p || p->x != 2.0f) return 2;
    std::atomic<int> ran{0};
    {
        kiln::frame frame(ctx.get());
        kiln::frame_vector<int> v(kiln::frame_allocator<int>(ctx.get()));
        for (int i = 0; i < 1000; i++) v.push_back(i);
        kiln::task_group group(ctx.get());
        for (int i = 0; i < 8; i++) group.run([&](kiln_ctx *) { ran++; });
        group.wait();
        kiln::task_group after(ctx.get());
        group.run([&](kiln_ctx *) { ran++; });
        after.run_after({&group}, [&](kiln_ctx *) { ran++; });
        after.wait(kiln::isolate);
        kiln::parallel_for(ctx.get(), 100, 0, [&](kiln_ctx *, std::size_t b, std::size_t e) {
            ran += (int)(e - b);
        });
        if (v.size() != 1000 || v[999] != 999) return 3;
    }
    particles.destroy(ctx.get(), p);
    struct spark_item { int lit = 1; };
    kiln::handle_table<spark_item> sparks(rt.get(), "sparks", 8);
    kiln::handle<spark_item> spark = sparks.alloc(ctx.get());
    sparks.foreach([&](kiln::handle<spark_item>, spark_item &s) { ran += s.lit; });
    sparks.parallel_for(ctx.get(), 0, [&](kiln::handle<spark_item>, spark_item &s) { ran += s.lit; });
    if (!sparks.free(ctx.get(), spark)) return 5;
    return ran == 112 ? 0 : 4;
}
