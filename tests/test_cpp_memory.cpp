// tests/test_cpp_memory.cpp — kiln/kiln.hpp's memory layer: the RAII owners (moves,
// self-move, moved-from objects), the frame and arena allocators (non-trivial elements
// destroyed when they should, rebinding into node containers, equality, propagation),
// the pmr resources under std::pmr containers, allocation failure as std::bad_alloc with
// kiln's logged item, typed pools (constructor and destructor counts) and typed handle
// tables (stale after free and after frame end), every container under the debug layer,
// and misuse through the wrappers ending in kiln's own refusals.
#include <kiln/kiln.hpp>

#include <pthread.h>
#include <stdio.h>

extern "C" {
#include "recording_log.h"
}

#include <criterion/criterion.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <map>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

// The recorder outlives the runtime that logs into it: declared first, freed last.
struct recorder {
    recording_log *rec = recording_log_new();
    recorder() = default;
    recorder(const recorder &) = delete;
    recorder &operator=(const recorder &) = delete;
    ~recorder() { recording_log_free(rec); }
};

kiln_desc desc_for(recording_log *rec, uint32_t workers = KILN_NO_WORKERS) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    return desc;
}

// A runtime logging into a recorder, with the test thread attached.
struct env {
    recorder      log;
    kiln::runtime rt;
    kiln::context ctx;
    explicit env(uint32_t workers = KILN_NO_WORKERS)
        : rt(desc_for(log.rec, workers)), ctx(rt.get()) {}
    explicit env(const kiln_desc &desc) : rt(desc), ctx(rt.get()) {}
    recording_log *rec() const { return log.rec; }
};

kiln_stats runtime_stats(kiln_runtime *rt) {
    kiln_stats s{};
    cr_assert(kiln_stats_get(rt, &s));
    return s;
}

size_t frame_bytes(kiln_ctx *ctx) {
    kiln_arena_stats s{};
    cr_assert(kiln_arena_stats_get(kiln_frame_arena(ctx), &s));
    return s.bytes_in_use;
}

size_t arena_bytes(kiln_arena *arena) {
    kiln_arena_stats s{};
    cr_assert(kiln_arena_stats_get(arena, &s));
    return s.bytes_in_use;
}

// Counts its constructions and destructions (every constructor, copies and moves too).
struct counted {
    static inline int made = 0;
    static inline int destroyed = 0;
    static void reset() { made = destroyed = 0; }
    static int live() { return made - destroyed; }

    int value;
    std::string text;   // non-trivial: owns heap memory, which ASan's leak check watches

    explicit counted(int v) : value(v), text(std::to_string(v) + " with a string too long for SSO") { made++; }
    counted(const counted &o) : value(o.value), text(o.text) { made++; }
    counted(counted &&o) noexcept : value(o.value), text(std::move(o.text)) { made++; }
    counted &operator=(const counted &) = default;
    counted &operator=(counted &&) = default;
    ~counted() { destroyed++; }
};

// A constructor that throws when asked.
struct fragile {
    static inline int destroyed = 0;
    int value;
    explicit fragile(int v) : value(v) {
        if (v < 0) throw std::runtime_error("fragile: negative");
    }
    ~fragile() { destroyed++; }
};

struct alignas(64) wide { unsigned char bytes[64]; };

struct enemy { int health; float pos[3]; };
struct bullet { float velocity[2]; };

// The test thread's stderr while f runs: what kiln logs for a call that names no runtime.
template <class F>
std::string stderr_of(F &&f) {
    stderr_capture cap;
    stderr_capture_begin(&cap);
    f();
    char *text = stderr_capture_end(&cap);
    std::string out(text);
    std::free(text);
    return out;
}

}  // namespace

TestSuite(cpp_memory, .timeout = 60);

// ---------- owners ----------

Test(cpp_memory, runtime_owner_moves_and_self_moves) {
    recorder log;
    kiln::runtime a(desc_for(log.rec));
    cr_assert(a);
    kiln_runtime *raw = a.get();
    kiln::runtime b(std::move(a));
    cr_assert_null(a.get(), "a moved-from runtime holds nothing");
    cr_assert(!a);
    cr_assert_eq(b.get(), raw);
    kiln::runtime &alias = b;
    b = std::move(alias);
    cr_assert_eq(b.get(), raw, "self-move-assignment keeps the runtime");
    kiln::runtime c(desc_for(log.rec));
    kiln_runtime *raw_c = c.get();
    c = std::move(b);   // destroys c's own runtime, takes b's
    cr_assert_eq(c.get(), raw);
    cr_assert_null(b.get());
    cr_assert_neq(raw_c, raw);
    cr_assert_eq(kiln_frame_number(c.get()), 0u);
    cr_assert_eq(recorded_count(log.rec), 0u, "log:%s", recorded_summary(log.rec));
}   // a and b destroyed moved-from: nothing happens

Test(cpp_memory, runtime_refused_desc_leaves_it_null_and_logged) {
    recorder log;
    kiln_desc desc = desc_for(log.rec);
    desc.block_size = 1000;   // not a power of two
    kiln::runtime rt(desc);
    cr_assert_null(rt.get());
    cr_assert_eq(count_items(log.rec, KILN_LOGITEM_BLOCK_SIZE_INVALID), 1u, "log:%s",
                 recorded_summary(log.rec));
    std::string err = stderr_of([&] {
        kiln::context ctx(rt.get());   // kiln refuses the null runtime
        cr_assert_null(ctx.get());
    });
    cr_assert_eq(count_substrings(err.c_str(), "RUNTIME_NULL"), 1u, "stderr: %s", err.c_str());
}

Test(cpp_memory, default_runtime_is_kiln_create_null) {
    kiln::runtime rt;
    cr_assert(rt);
    kiln_desc desc = kiln_runtime_desc(rt.get());
    cr_assert_eq(desc.block_size, (size_t)64 << 10);
}

Test(cpp_memory, context_owner_attaches_detaches_and_moves) {
    recorder log;
    kiln::runtime rt(desc_for(log.rec));
    {
        kiln::context a(rt.get());
        cr_assert(a);
        cr_assert_eq(runtime_stats(rt.get()).contexts, 1u);
        kiln::context b(std::move(a));
        cr_assert_null(a.get());
        kiln::context &alias = b;
        b = std::move(alias);
        cr_assert(b);
        cr_assert_eq(runtime_stats(rt.get()).contexts, 1u);
        kiln::context c(rt.get());
        cr_assert_eq(runtime_stats(rt.get()).contexts, 2u);
        c = std::move(b);   // detaches c's own
        cr_assert_eq(runtime_stats(rt.get()).contexts, 1u);
        cr_assert_eq(kiln_ctx_runtime(c.get()), rt.get());
    }
    cr_assert_eq(runtime_stats(rt.get()).contexts, 0u, "every context detached once");
    cr_assert_eq(recorded_count(log.rec), 0u, "log:%s", recorded_summary(log.rec));
}

Test(cpp_memory, frame_scope_begins_and_ends_once_across_moves) {
    env e;
    {
        kiln::frame f(e.ctx.get());
        cr_assert(f);
        cr_assert_eq(f.number(), 1u);
        cr_assert_eq(f.get(), e.ctx.get());
        cr_assert_not_null(kiln_frame_alloc(e.ctx.get(), 256, 16));
        kiln::frame g(std::move(f));
        cr_assert(!f);
        cr_assert_null(f.get());
        cr_assert_eq(f.number(), 0u);
        kiln::frame &alias = g;
        g = std::move(alias);
        cr_assert(g, "self-move-assignment keeps the frame open");
    }
    cr_assert_eq(frame_bytes(e.ctx.get()), 0u, "the frame ended: its arena was reset");
    {
        kiln::frame f(e.ctx.get());
        cr_assert_eq(f.number(), 2u);
    }
    cr_assert_eq(kiln_frame_number(e.rt.get()), 2u);
    cr_assert_eq(recorded_count(e.rec()), 0u, "ended once each:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, nested_frame_is_refused_and_leaves_the_outer_one_open) {
    env e;
    kiln::frame outer(e.ctx.get());
    void *p = kiln_frame_alloc(e.ctx.get(), 64, 16);
    cr_assert_not_null(p);
    size_t before = frame_bytes(e.ctx.get());
    {
        kiln::frame inner(e.ctx.get());
        cr_assert(!inner, "a second begin is refused");
        cr_assert_eq(inner.number(), 0u);
    }
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_FRAME_ALREADY_OPEN), 1u, "log:%s",
                 recorded_summary(e.rec()));
    cr_assert_eq(frame_bytes(e.ctx.get()), before, "the inner scope ended no frame");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN), 0u);
    cr_assert_eq(recorded_count(e.rec()), 1u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, frame_move_assignment_ends_its_own_frame_first) {
    env e;
    kiln::frame f(e.ctx.get());
    cr_assert_eq(f.number(), 1u);
    kiln::frame g(e.ctx.get());   // refused: frame 1 is open
    cr_assert(!g);
    f = std::move(g);             // ends frame 1, takes nothing open
    cr_assert(!f);
    kiln::frame h(e.ctx.get());
    cr_assert_eq(h.number(), 2u, "frame 1 ended at the move-assignment");
}

Test(cpp_memory, frame_on_a_detached_context_is_refused_once) {
    recorder other_log;
    kiln::runtime rt(desc_for(other_log.rec));
    kiln_ctx *stale = kiln_attach(rt.get());
    kiln_detach(stale);
    {
        kiln::frame f(stale);
        cr_assert(!f);
    }
    cr_assert_eq(count_items(other_log.rec, KILN_LOGITEM_CONTEXT_DETACHED), 1u, "log:%s",
                 recorded_summary(other_log.rec));
    cr_assert_eq(recorded_count(other_log.rec), 1u, "log:%s", recorded_summary(other_log.rec));
}

// A frame made inside a job: on the driver's own context (no workers: the job runs in the
// driver's wait), kiln refuses it as FRAME_INSIDE_JOB, and the open frame stays open.
namespace {
struct frame_in_job {
    bool opened = true;
    uint64_t number = 99;
    kiln_ctx *ran_on = nullptr;
    std::atomic<bool> done{false};
};
void frame_in_job_fn(kiln_ctx *ctx, void *arg) {
    auto *s = static_cast<frame_in_job *>(arg);
    {
        kiln::frame f(ctx);
        s->opened = static_cast<bool>(f);
        s->number = f.number();
    }
    s->ran_on = ctx;
    s->done.store(true, std::memory_order_release);
}
}  // namespace

Test(cpp_memory, frame_inside_a_job_on_the_driver_is_refused_with_its_item) {
    env e;
    kiln::frame outer(e.ctx.get());
    frame_in_job s;
    kiln_counter counter{};
    kiln_job job{ frame_in_job_fn, &s };
    kiln_run(e.ctx.get(), &job, 1, &counter);
    kiln_wait(e.ctx.get(), &counter);
    cr_assert_eq(s.ran_on, e.ctx.get(), "no workers: the driver ran it");
    cr_assert(!s.opened);
    cr_assert_eq(s.number, 0u);
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_FRAME_INSIDE_JOB), 1u, "log:%s",
                 recorded_summary(e.rec()));
    cr_assert_eq(kiln_frame_number(e.rt.get()), 1u);
    cr_assert_eq(recorded_count(e.rec()), 1u, "only the begin was refused:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, frame_on_a_worker_context_is_refused_with_its_item) {
    env e(1);
    cr_assert(e.ctx);
    kiln::frame outer(e.ctx.get());
    frame_in_job s;
    kiln_counter counter{};
    kiln_job job{ frame_in_job_fn, &s };
    kiln_run(e.ctx.get(), &job, 1, &counter);
    // The test thread runs no job while it spins, so the worker takes this one.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!s.done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    cr_assert(s.done.load(), "the worker never ran the job");
    kiln_wait(e.ctx.get(), &counter);
    cr_assert_neq(s.ran_on, e.ctx.get());
    cr_assert(!s.opened);
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_FRAME_WORKER_CONTEXT), 1u, "log:%s",
                 recorded_summary(e.rec()));
    cr_assert_eq(recorded_count(e.rec()), 1u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, arena_owner_moves_and_reports_stats) {
    env e;
    kiln::arena a(e.rt.get(), "level");
    cr_assert(a);
    cr_assert_not_null(kiln_arena_alloc(a.get(), 100, 8));
    cr_assert_geq(a.stats().bytes_in_use, 100u);
    kiln_arena_stats named = a.stats();   // the name lives in the struct: keep it alive
    cr_assert_str_eq(named.name, "level");
    kiln_arena *raw = a.get();
    kiln::arena b(std::move(a));
    cr_assert_null(a.get());
    kiln::arena &alias = b;
    b = std::move(alias);
    cr_assert_eq(b.get(), raw);
    uint32_t arenas = runtime_stats(e.rt.get()).arenas;
    kiln::arena c(e.rt.get(), "stage");
    cr_assert_eq(runtime_stats(e.rt.get()).arenas, arenas + 1);
    c = std::move(b);   // destroys "stage"
    cr_assert_eq(runtime_stats(e.rt.get()).arenas, arenas);
    cr_assert_eq(c.get(), raw);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, arena_scope_releases_what_the_scope_allocated) {
    env e;
    kiln::arena level(e.rt.get(), "level");
    cr_assert_not_null(kiln_arena_alloc(level.get(), 40, 8));
    size_t before = arena_bytes(level.get());
    {
        kiln::arena_scope outer(level.get());
        cr_assert_eq(outer.get(), level.get());
        cr_assert_not_null(kiln_arena_alloc(level.get(), 1000, 8));
        {
            kiln::arena_scope inner(level.get());
            cr_assert_not_null(kiln_arena_alloc(level.get(), 200000, 8));   // a large mapping too
            kiln::arena_scope moved(std::move(inner));
            cr_assert_null(inner.get());
            kiln::arena_scope &alias = moved;
            moved = std::move(alias);
            cr_assert_eq(moved.get(), level.get());
        }
        cr_assert_gt(arena_bytes(level.get()), before);
        cr_assert_lt(arena_bytes(level.get()), before + 200000);
    }
    cr_assert_eq(arena_bytes(level.get()), before, "back to the outer mark");
    cr_assert_eq(recorded_count(e.rec()), 0u, "each mark released once:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, arena_scopes_ended_out_of_order_are_refused_by_kiln) {
    env e;
    kiln::arena level(e.rt.get(), "level");
    auto *outer = new kiln::arena_scope(level.get());
    kiln::arena_scope inner(level.get());
    cr_assert_not_null(kiln_arena_alloc(level.get(), 64, 8));
    delete outer;   // releases past inner's mark
    cr_assert_eq(arena_bytes(level.get()), 0u);
    inner = kiln::arena_scope(level.get());   // inner's own release: a mark released past
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_ARENA_BAD_MARK), 1u, "log:%s",
                 recorded_summary(e.rec()));
}

Test(cpp_memory, arena_scope_over_a_null_arena_is_refused_once) {
    std::string err = stderr_of([] { kiln::arena_scope scope(nullptr); });
    cr_assert_eq(count_substrings(err.c_str(), "ARENA_NULL"), 1u, "stderr: %s", err.c_str());
}

// ---------- allocators ----------

Test(cpp_memory, allocator_traits_are_the_documented_choices) {
    using fa = kiln::frame_allocator<int>;
    using aa = kiln::arena_allocator<int>;
    using fat = std::allocator_traits<fa>;
    static_assert(std::is_same_v<fat::rebind_alloc<double>, kiln::frame_allocator<double>>);
    static_assert(std::is_same_v<std::allocator_traits<aa>::rebind_alloc<char>, kiln::arena_allocator<char>>);
    static_assert(!fat::propagate_on_container_copy_assignment::value);
    static_assert(fat::propagate_on_container_move_assignment::value);
    static_assert(fat::propagate_on_container_swap::value);
    static_assert(!fat::is_always_equal::value);
    static_assert(std::is_nothrow_move_assignable_v<kiln::frame_vector<int>>);
    static_assert(std::is_nothrow_copy_constructible_v<fa>);
    static_assert(std::is_convertible_v<kiln_ctx *, fa>);
    static_assert(!std::is_convertible_v<kiln::handle<bullet>, kiln::handle<enemy>>);
    static_assert(!std::is_constructible_v<kiln::handle<enemy>, kiln::handle<bullet>>);
    static_assert(!std::is_copy_constructible_v<kiln::runtime> && std::is_nothrow_move_constructible_v<kiln::runtime>);
    static_assert(!std::is_copy_constructible_v<kiln::frame_resource>);
    cr_assert(true);
}

Test(cpp_memory, frame_allocators_are_equal_per_context_across_rebinding) {
    env e;
    kiln::context other(e.rt.get());
    kiln::frame_allocator<int> a(e.ctx.get());
    kiln::frame_allocator<double> b(a);
    kiln::frame_allocator<int> c(other.get());
    cr_assert(a == b);
    cr_assert(!(a != b));
    cr_assert(a != c);
    kiln::frame_allocator<int> back(b);
    cr_assert(back == a);
    cr_assert_eq(back.context(), e.ctx.get());
    kiln::arena x(e.rt.get(), "x"), y(e.rt.get(), "y");
    kiln::arena_allocator<int> ax(x.get());
    kiln::arena_allocator<char> ax2(ax);
    cr_assert(ax == ax2);
    cr_assert(ax != kiln::arena_allocator<int>(y.get()));
}

Test(cpp_memory, frame_vector_takes_frame_memory_and_destroys_its_elements) {
    env e;
    counted::reset();
    {
        kiln::frame f(e.ctx.get());
        size_t before = frame_bytes(e.ctx.get());
        {
            kiln::frame_vector<counted> v(e.ctx.get());
            for (int i = 0; i < 100; i++) v.emplace_back(i);
            cr_assert_eq(v.size(), 100u);
            cr_assert_eq(v[57].value, 57);
            cr_assert_gt(frame_bytes(e.ctx.get()), before + 100 * sizeof(counted) - 1);
            cr_assert_eq(counted::live(), 100);
            v.erase(v.begin(), v.begin() + 10);
            cr_assert_eq(counted::live(), 90, "erase destroys");
            v.pop_back();
            cr_assert_eq(counted::live(), 89);
        }
        cr_assert_eq(counted::live(), 0, "the vector's destructor destroyed every element");
        cr_assert_gt(frame_bytes(e.ctx.get()), before, "deallocate gives nothing back");
    }
    cr_assert_eq(frame_bytes(e.ctx.get()), 0u);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, over_aligned_elements_are_aligned) {
    env e;
    kiln::frame f(e.ctx.get());
    kiln::frame_vector<wide> v(e.ctx.get());
    for (int i = 0; i < 10; i++) {
        v.emplace_back();
        cr_assert_eq(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u);
    }
    kiln::arena level(e.rt.get(), "level");
    kiln::arena_vector<wide> w(level.get());
    w.resize(3);
    cr_assert_eq(reinterpret_cast<uintptr_t>(w.data()) % 64, 0u);
}

Test(cpp_memory, rebinding_node_containers_over_frame_memory) {
    env e;
    counted::reset();
    {
        kiln::frame f(e.ctx.get());
        size_t before = frame_bytes(e.ctx.get());
        {
            std::list<counted, kiln::frame_allocator<counted>> l(e.ctx.get());
            for (int i = 0; i < 50; i++) l.emplace_back(i);
            std::map<int, counted, std::less<int>, kiln::frame_allocator<std::pair<const int, counted>>>
                m(e.ctx.get());
            for (int i = 0; i < 50; i++) m.emplace(i, counted(i * 2));
            cr_assert_eq(l.back().value, 49);
            cr_assert_eq(m.at(21).value, 42);
            cr_assert_eq(counted::live(), 100);
            cr_assert_gt(frame_bytes(e.ctx.get()), before + 100 * sizeof(counted));
            m.erase(10);
            l.pop_front();
            cr_assert_eq(counted::live(), 98);
            cr_assert(l.get_allocator() == kiln::frame_allocator<int>(e.ctx.get()));
        }
        cr_assert_eq(counted::live(), 0);
    }
}

Test(cpp_memory, frame_string_grows_in_frame_memory) {
    env e;
    kiln::frame f(e.ctx.get());
    size_t before = frame_bytes(e.ctx.get());
    kiln::frame_string s("frame:", e.ctx.get());
    for (int i = 0; i < 100; i++) s += std::to_string(i);
    cr_assert_gt(frame_bytes(e.ctx.get()), before + s.size());
    cr_assert_eq(s.compare(0, 7, "frame:0"), 0);
    kiln::frame_string copy(s);
    cr_assert(copy.get_allocator() == s.get_allocator(), "a copy stays in the same frame");
    cr_assert(copy == s);
}

Test(cpp_memory, arena_vector_lives_until_the_scope_releases_it) {
    env e;
    counted::reset();
    kiln::arena level(e.rt.get(), "level");
    {
        kiln::arena_scope scope(level.get());
        kiln::arena_vector<counted> v(level.get());
        v.reserve(4);
        for (int i = 0; i < 40; i++) v.emplace_back(i);
        cr_assert_eq(counted::live(), 40);
        cr_assert_gt(arena_bytes(level.get()), 40 * sizeof(counted));
    }   // v destroyed first (declared after the scope), then the scope releases
    cr_assert_eq(counted::live(), 0);
    cr_assert_eq(arena_bytes(level.get()), 0u);
}

Test(cpp_memory, move_assignment_and_swap_carry_the_arena) {
    env e;
    kiln::arena x(e.rt.get(), "x"), y(e.rt.get(), "y");
    kiln::arena_vector<int> a(x.get()), b(y.get());
    a.assign(100, 1);
    b.assign(200, 2);
    const int *b_data = b.data();
    a = std::move(b);
    cr_assert_eq(a.data(), b_data, "moved, not copied");
    cr_assert(a.get_allocator() == kiln::arena_allocator<int>(y.get()));
    kiln::arena_vector<int> c(x.get());
    c.assign(5, 3);
    kiln::arena_vector<int> d(y.get());
    d.assign(7, 4);
    const int *c_data = c.data();
    std::swap(c, d);
    cr_assert_eq(d.data(), c_data);
    cr_assert(d.get_allocator().arena() == x.get());
    cr_assert(c.get_allocator().arena() == y.get());
    kiln::arena_vector<int> copy_target(x.get());
    copy_target = a;   // copy assignment: stays in x
    cr_assert(copy_target.get_allocator().arena() == x.get());
    cr_assert_eq(copy_target.size(), 200u);
}

Test(cpp_memory, allocate_overflow_is_bad_array_new_length) {
    env e;
    kiln::frame f(e.ctx.get());
    kiln::frame_allocator<uint64_t> a(e.ctx.get());
    cr_assert_throw(a.allocate(SIZE_MAX / 4), std::bad_array_new_length, "overflow");
    cr_assert_eq(recorded_count(e.rec()), 0u, "refused before kiln is asked:%s", recorded_summary(e.rec()));
}

// ---------- pmr resources ----------

Test(cpp_memory, pmr_containers_over_the_frame_resource) {
    env e;
    counted::reset();
    kiln::frame f(e.ctx.get());
    kiln::frame_resource frame_memory(e.ctx.get());
    cr_assert_eq(frame_memory.context(), e.ctx.get());
    size_t before = frame_bytes(e.ctx.get());
    {
        std::pmr::vector<counted> v(&frame_memory);
        for (int i = 0; i < 64; i++) v.emplace_back(i);
        std::pmr::string s("a pmr string longer than the small-string buffer", &frame_memory);
        s += s;
        std::pmr::vector<std::pmr::string> strings(&frame_memory);
        strings.emplace_back("nested strings take the vector's resource, long enough to allocate");
        cr_assert_eq(strings[0].get_allocator().resource(), &frame_memory);
        cr_assert_eq(counted::live(), 64);
        cr_assert_gt(frame_bytes(e.ctx.get()), before + 64 * sizeof(counted) + s.size());
    }
    cr_assert_eq(counted::live(), 0);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, pmr_containers_over_the_arena_resource) {
    env e;
    kiln::arena level(e.rt.get(), "level");
    kiln::arena_resource level_memory(level.get());
    cr_assert_eq(level_memory.arena(), level.get());
    {
        kiln::arena_scope scope(level.get());
        std::pmr::vector<int> v(&level_memory);
        v.resize(10000, 7);
        std::pmr::string s(300, 'x', &level_memory);
        cr_assert_gt(arena_bytes(level.get()), 10000 * sizeof(int) + 300);
        cr_assert_eq(v[9999], 7);
    }
    cr_assert_eq(arena_bytes(level.get()), 0u);
}

Test(cpp_memory, pmr_resources_are_equal_only_over_the_same_arena) {
    env e;
    kiln::context other(e.rt.get());
    kiln::arena x(e.rt.get(), "x"), y(e.rt.get(), "y");
    kiln::frame_resource f1(e.ctx.get()), f2(e.ctx.get()), f3(other.get());
    kiln::arena_resource a1(x.get()), a2(x.get()), a3(y.get()), over_frame(kiln_frame_arena(e.ctx.get()));
    cr_assert(f1.is_equal(f1));
    cr_assert(f1.is_equal(f2));
    cr_assert(!f1.is_equal(f3));
    cr_assert(a1.is_equal(a2));
    cr_assert(!a1.is_equal(a3));
    cr_assert(!f1.is_equal(over_frame), "another kind of resource is never equal");
    cr_assert(!over_frame.is_equal(f1));
    cr_assert(!a1.is_equal(*std::pmr::new_delete_resource()));
    // A pmr container move-assigned across unequal resources copies into its own.
    std::pmr::vector<int> in_x(&a1), in_y(&a3);
    in_y.assign(50, 9);
    const int *y_data = in_y.data();
    in_x = std::move(in_y);
    cr_assert_neq(in_x.data(), y_data);
    cr_assert_eq(in_x.get_allocator().resource(), &a1);
    std::pmr::vector<int> in_x2(&a2);
    in_x2.assign(20, 1);
    const int *x2_data = in_x2.data();
    in_x = std::move(in_x2);   // equal resources: the storage moves
    cr_assert_eq(in_x.data(), x2_data);
}

Test(cpp_memory, pmr_alignment_above_the_block_size_is_bad_alloc_with_its_item) {
    env e;
    kiln::frame f(e.ctx.get());
    kiln::frame_resource frame_memory(e.ctx.get());
    kiln::arena level(e.rt.get(), "level");
    kiln::arena_resource level_memory(level.get());
    void *p = frame_memory.allocate(100, 4096);
    cr_assert_eq(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    cr_assert_throw(static_cast<void>(frame_memory.allocate(16, (size_t)1 << 20)), std::bad_alloc, "frame");
    cr_assert_throw(static_cast<void>(level_memory.allocate(16, (size_t)1 << 20)), std::bad_alloc, "arena");
    cr_assert_throw(static_cast<void>(level_memory.allocate(16, 24)), std::bad_alloc, "not a power of two");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_ARENA_BAD_ALIGN), 3u, "log:%s", recorded_summary(e.rec()));
}

// ---------- allocation failure ----------

Test(cpp_memory, memory_limit_reached_is_bad_alloc_and_logged) {
    recorder log;
    kiln_desc desc = desc_for(log.rec);
    desc.memory_limit = (size_t)1 << 20;
    env e(desc);
    cr_assert(e.ctx, "log:%s", recorded_summary(log.rec));
    kiln::frame f(e.ctx.get());
    kiln::frame_vector<int> v(e.ctx.get());
    v.push_back(1);
    cr_assert_throw(v.reserve((size_t)1 << 20), std::bad_alloc, "4 MiB over a 1 MiB limit");
    cr_assert_eq(v.size(), 1u, "a failed reserve leaves the vector as it was");
    cr_assert_eq(v[0], 1);
    cr_assert_eq(count_items(log.rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1u, "log:%s",
                 recorded_summary(log.rec));
    kiln::frame_resource frame_memory(e.ctx.get());
    std::pmr::vector<char> pv(&frame_memory);
    cr_assert_throw(pv.resize((size_t)2 << 20), std::bad_alloc, "pmr too");
    kiln::arena level(e.rt.get(), "level");
    kiln::arena_vector<char> av(level.get());
    cr_assert_throw(av.resize((size_t)2 << 20), std::bad_alloc, "arena too");
    cr_assert_geq(count_items(log.rec, KILN_LOGITEM_MEMORY_LIMIT_REACHED), 1u);
    v.push_back(2);   // small allocations still succeed
    cr_assert_eq(v.size(), 2u);
}

Test(cpp_memory, allocators_over_a_destroyed_arena_or_detached_context_throw) {
    env e;
    kiln_arena *raw = nullptr;
    {
        kiln::arena level(e.rt.get(), "level");
        raw = level.get();
    }
    kiln::arena_allocator<int> stale(raw);
    cr_assert_throw(stale.allocate(4), std::bad_alloc, "destroyed arena");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_ARENA_DESTROYED), 1u, "log:%s", recorded_summary(e.rec()));
    kiln_ctx *gone = kiln_attach(e.rt.get());
    kiln_detach(gone);
    kiln::frame_allocator<int> detached(gone);
    cr_assert_throw(detached.allocate(4), std::bad_alloc, "detached context");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_CONTEXT_DETACHED), 1u, "log:%s", recorded_summary(e.rec()));
    kiln::frame_allocator<int> none(static_cast<kiln_ctx *>(nullptr));
    std::string err = stderr_of([&] {
        cr_assert_throw(none.allocate(1), std::bad_alloc, "null context");
    });
    cr_assert_eq(count_substrings(err.c_str(), "CONTEXT_NULL"), 1u, "stderr: %s", err.c_str());
}

// ---------- typed pools ----------

Test(cpp_memory, pool_creates_and_destroys_with_constructor_and_destructor_counts) {
    env e;
    counted::reset();
    kiln::pool<counted> p(e.rt.get(), "counted");
    cr_assert(p);
    std::vector<counted *> objs;
    for (int i = 0; i < 200; i++) objs.push_back(p.create(e.ctx.get(), i));
    for (int i = 0; i < 200; i++) {
        cr_assert_not_null(objs[i]);
        cr_assert_eq(objs[i]->value, i);
        cr_assert_eq(reinterpret_cast<uintptr_t>(objs[i]) % alignof(counted), 0u);
    }
    cr_assert_eq(counted::made, 200);
    kiln_pool_stats s = p.stats();
    cr_assert_eq(s.live, 200u);
    cr_assert_eq(s.object_size, sizeof(counted));
    cr_assert_str_eq(s.name, "counted");
    for (counted *c : objs) p.destroy(e.ctx.get(), c);
    cr_assert_eq(counted::destroyed, 200);
    cr_assert_eq(p.stats().live, 0u);
    cr_assert_eq(p.stats().frees, 200u);
    p.destroy(e.ctx.get(), nullptr);   // a no-op
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, pool_moves_and_self_moves) {
    env e;
    kiln::pool<enemy> a(e.rt.get(), "enemies", 8);
    kiln_pool *raw = a.get();
    kiln::pool<enemy> b(std::move(a));
    cr_assert_null(a.get());
    kiln::pool<enemy> &alias = b;
    b = std::move(alias);
    cr_assert_eq(b.get(), raw);
    enemy *x = b.create(e.ctx.get(), enemy{ 5, { 1, 2, 3 } });
    cr_assert_eq(x->health, 5);
    cr_assert_eq(b.stats().capacity, 8u);
    kiln::pool<enemy> c(e.rt.get(), "other");
    c = std::move(b);   // destroys "other"
    cr_assert_eq(runtime_stats(e.rt.get()).pools, 1u);
    c.destroy(e.ctx.get(), x);
    cr_assert_eq(c.stats().live, 0u);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
    // A moved-from pool is refused by kiln, through the context's runtime: POOL_NULL.
    cr_assert_null(a.create(e.ctx.get()));
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_NULL), 1u, "log:%s", recorded_summary(e.rec()));
    a.destroy(e.ctx.get(), x);   // refused the same way; x is not read
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_NULL), 2u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, pool_constructor_that_throws_gives_the_slot_back) {
    env e;
    kiln::pool<fragile> p(e.rt.get(), "fragile");
    fragile::destroyed = 0;
    cr_assert_throw(p.create(e.ctx.get(), -1), std::runtime_error, "the constructor throws");
    cr_assert_eq(p.stats().live, 0u);
    cr_assert_eq(fragile::destroyed, 0, "no destructor for an object never made");
    fragile *ok = p.create(e.ctx.get(), 3);
    cr_assert_eq(ok->value, 3);
    p.destroy(e.ctx.get(), ok);
    cr_assert_eq(fragile::destroyed, 1);
}

Test(cpp_memory, pool_at_capacity_returns_null_and_logs) {
    env e;
    kiln::pool<enemy> p(e.rt.get(), "two", 2);
    cr_assert_not_null(p.create(e.ctx.get()));
    cr_assert_not_null(p.create(e.ctx.get()));
    cr_assert_null(p.create(e.ctx.get()));
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_CAPACITY_REACHED), 1u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, pool_destroy_with_a_foreign_or_detached_context_runs_no_destructor) {
    env e;
    counted::reset();
    kiln::pool<counted> p(e.rt.get(), "counted");
    counted *c = p.create(e.ctx.get(), 11);
    recorder other_log;
    kiln::runtime other(desc_for(other_log.rec));
    kiln::context foreign(other.get());
    p.destroy(foreign.get(), c);
    cr_assert_eq(counted::destroyed, 0, "refused before the destructor");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_WRONG_RUNTIME), 1u, "log:%s", recorded_summary(e.rec()));
    kiln_ctx *gone = kiln_attach(e.rt.get());
    kiln_detach(gone);
    p.destroy(gone, c);
    cr_assert_eq(counted::destroyed, 0);
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_CONTEXT_DETACHED), 1u, "log:%s", recorded_summary(e.rec()));
    cr_assert_eq(c->value, 11, "still a live object");
    cr_assert_eq(p.stats().live, 1u);
    p.destroy(nullptr, c);   // refused by kiln through the pool's runtime
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_CONTEXT_NULL), 1u, "log:%s", recorded_summary(e.rec()));
    cr_assert_eq(counted::destroyed, 0);
    p.destroy(e.ctx.get(), c);
    cr_assert_eq(counted::destroyed, 1);
    cr_assert_eq(p.stats().live, 0u);
    cr_assert_null(p.create(foreign.get(), 1), "create with a foreign context: refused by kiln");
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_WRONG_RUNTIME), 2u, "log:%s", recorded_summary(e.rec()));
    cr_assert_eq(counted::made, 1);
}

Test(cpp_memory, pool_of_an_oversized_type_is_refused_by_kiln) {
    env e;
    struct huge { unsigned char bytes[(64 << 10) / 4 + 1]; };
    kiln::pool<huge> p(e.rt.get(), "huge");
    cr_assert_null(p.get());
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_BAD_SIZE), 1u, "log:%s", recorded_summary(e.rec()));
}

// ---------- typed handle tables ----------

Test(cpp_memory, handle_table_alloc_get_free_and_stale_handles) {
    env e;
    kiln::handle_table<enemy> enemies(e.rt.get(), "enemies", 64);
    cr_assert(enemies);
    kiln::handle<enemy> h, kept;
    {
        kiln::frame f(e.ctx.get());
        h = enemies.alloc(e.ctx.get());
        cr_assert(h);
        cr_assert(!h.is_null());
        enemy *x = enemies.get(h);
        cr_assert_not_null(x);
        cr_assert_eq(x->health, 0, "value-initialised");
        x->health = 30;
        cr_assert_eq(enemies.get(h)->health, 30);
        kept = enemies.alloc(e.ctx.get());
        cr_assert(kept != h);
        cr_assert(enemies.free(e.ctx.get(), h));
        cr_assert_null(enemies.get(h), "stale at once after free");
        cr_assert(!enemies.free(e.ctx.get(), h), "a second free is refused");
        cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_HANDLE_DOUBLE_FREE), 1u, "log:%s", recorded_summary(e.rec()));
    }
    cr_assert_null(enemies.get(h), "still stale after the frame end");
    cr_assert_not_null(enemies.get(kept));
    for (int frame = 0; frame < 3; frame++) {
        kiln::frame f(e.ctx.get());
        kiln::handle<enemy> n = enemies.alloc(e.ctx.get());   // may reuse h's slot
        cr_assert(n != h);
        cr_assert_null(enemies.get(h), "a reused slot's new generation does not revive h");
        cr_assert(enemies.free(e.ctx.get(), n));
    }
    cr_assert(enemies.free(e.ctx.get(), kept));
    kiln_handles_stats s = enemies.stats();
    cr_assert_eq(s.live, 0u);
    cr_assert_eq(s.item_size, sizeof(enemy));
    cr_assert_geq(s.stale_lookups, 2u);
    cr_assert(!kiln::handle<enemy>());
    cr_assert_null(enemies.get(kiln::handle<enemy>()));
    cr_assert_eq(kiln::handle<enemy>(h.raw()), h);
}

Test(cpp_memory, handle_table_moves_self_moves_and_refuses_when_moved_from) {
    env e;
    kiln::handle_table<bullet> a(e.rt.get(), "bullets");
    kiln::handle<bullet> h = a.alloc(e.ctx.get());
    kiln_handles *raw = a.get();
    kiln::handle_table<bullet> b(std::move(a));
    cr_assert_null(a.get());
    kiln::handle_table<bullet> &alias = b;
    b = std::move(alias);
    cr_assert_eq(b.get(), raw);
    cr_assert_not_null(b.get(h));
    kiln::handle_table<bullet> c(e.rt.get(), "other");
    c = std::move(b);   // destroys "other"
    cr_assert_eq(runtime_stats(e.rt.get()).handle_tables, 1u);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
    // A moved-from table is refused by kiln: through the context's runtime where there is
    // one, on stderr for a lookup (it names no runtime).
    std::string err = stderr_of([&] { cr_assert_null(a.get(h)); });
    cr_assert_eq(count_substrings(err.c_str(), "HANDLES_NULL"), 1u, "stderr: %s", err.c_str());
    cr_assert(!a.alloc(e.ctx.get()));
    cr_assert(!a.free(e.ctx.get(), h));
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_HANDLES_NULL), 2u, "log:%s", recorded_summary(e.rec()));
    cr_assert(c.free(e.ctx.get(), h), "the item was never freed");
}

Test(cpp_memory, handle_table_full_and_foreign_context_are_refused_by_kiln) {
    env e;
    kiln::handle_table<enemy> t(e.rt.get(), "tiny", 2);
    kiln::handle<enemy> a = t.alloc(e.ctx.get()), b = t.alloc(e.ctx.get());
    cr_assert(a && b);
    cr_assert(!t.alloc(e.ctx.get()));
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_HANDLES_FULL), 1u, "log:%s", recorded_summary(e.rec()));
    recorder other_log;
    kiln::runtime other(desc_for(other_log.rec));
    kiln::context foreign(other.get());
    cr_assert(!t.free(foreign.get(), a));
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_HANDLES_WRONG_RUNTIME), 1u, "log:%s", recorded_summary(e.rec()));
    cr_assert_not_null(t.get(a), "the item stays live");
}

Test(cpp_memory, handles_of_one_type_name_distinct_tables) {
    env e;
    kiln::handle_table<enemy> enemies(e.rt.get(), "enemies");
    kiln::handle_table<enemy> others(e.rt.get(), "others");
    kiln::handle<enemy> h = enemies.alloc(e.ctx.get());
    cr_assert_null(others.get(h), "another table's handle is foreign");
    cr_assert_geq(others.stats().foreign_handles + others.stats().stale_lookups, 1u);
    cr_assert(enemies.free(e.ctx.get(), h));
}

// ---------- memory planning ----------

Test(cpp_memory, pool_and_arena_reserve_trim_and_flush_through_the_owners) {
    env e;
    kiln::pool<enemy> enemies(e.rt.get(), "enemies", 0, 500);
    cr_assert(enemies);
    kiln_pool_stats s = enemies.stats();
    cr_assert_eq(s.reserve, 500u);
    uint64_t blocks_before = runtime_stats(e.rt.get()).blocks.blocks_in_use;
    std::vector<enemy *> made;
    for (int i = 0; i < 500; i++) made.push_back(enemies.create(e.ctx.get()));
    cr_assert_eq(runtime_stats(e.rt.get()).blocks.blocks_in_use, blocks_before,
                 "the reserved objects took no block");
    cr_assert_geq(enemies.reserve(5000), 5000u);
    for (enemy *x : made) enemies.destroy(e.ctx.get(), x);
    enemies.flush(e.ctx.get());
    cr_assert_gt(enemies.trim(), 0u, "the blocks of the 5000 go back; the 500 stay");
    cr_assert_geq(enemies.reserve(0), 500u);

    kiln::arena level(e.rt.get(), "level");
    cr_assert(level.reserve(1u << 20));
    cr_assert_geq(level.stats().reserved_blocks, 1u);
    kiln::handle_table<enemy> targets(e.rt.get(), "targets", 1024, 1024);
    cr_assert(targets);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
    kiln::pool<enemy> moved(std::move(enemies));
    std::string err = stderr_of([&] {
        cr_assert_eq(enemies.reserve(1), 0u);
        cr_assert_eq(enemies.trim(), 0u);
    });
    cr_assert_eq(count_substrings(err.c_str(), "POOL_NULL"), 2u, "stderr: %s", err.c_str());
    enemies.flush(e.ctx.get());
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_POOL_NULL), 1u, "flush through the context's runtime:%s",
                 recorded_summary(e.rec()));
}

// ---------- the live-item walks ----------

Test(cpp_memory, handle_table_foreach_visits_live_items_with_typed_handles) {
    env e;
    kiln::handle_table<enemy> enemies(e.rt.get(), "enemies", 256);
    std::vector<kiln::handle<enemy>> hs;
    for (int i = 0; i < 100; i++) {
        hs.push_back(enemies.alloc(e.ctx.get()));
        enemies.get(hs.back())->health = i;
    }
    for (int i = 0; i < 100; i += 2) cr_assert(enemies.free(e.ctx.get(), hs[(size_t)i]));
    int visits = 0, sum = 0;
    enemies.foreach([&](kiln::handle<enemy> h, enemy &x) {
        cr_assert_eq(enemies.get(h), &x, "the visit's reference is get's item");
        visits++;
        sum += x.health;
    });
    cr_assert_eq(visits, 50);
    cr_assert_eq(sum, 50 * 50, "the odd healths 1..99");
    // "despawn what died": the visit frees its own item.
    enemies.foreach([&](kiln::handle<enemy> h, enemy &x) {
        if (x.health > 50) cr_assert(enemies.free(e.ctx.get(), h));
    });
    cr_assert_eq(enemies.stats().live, 25u);
    std::atomic<int> parallel{0};
    enemies.parallel_for(e.ctx.get(), 4, [&](kiln::handle<enemy>, enemy &x) {
        parallel.fetch_add(x.health, std::memory_order_relaxed);
    });
    cr_assert_eq(parallel.load(), 25 * 25, "the odd healths 1..49");
    enemies.foreach([&](kiln::handle<enemy> h, enemy &) { enemies.free(e.ctx.get(), h); });
    cr_assert_eq(enemies.stats().live, 0u);
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, handle_table_walk_rethrows_the_first_exception_and_stops_visiting) {
    env e(2);
    kiln::handle_table<enemy> enemies(e.rt.get(), "enemies", 2048);
    std::vector<kiln::handle<enemy>> hs;
    for (int i = 0; i < 1000; i++) hs.push_back(enemies.alloc(e.ctx.get()));
    int visits = 0;
    bool caught = false;
    try {
        enemies.foreach([&](kiln::handle<enemy>, enemy &) {
            if (++visits == 10) throw std::runtime_error("tenth");
        });
    } catch (const std::runtime_error &err) {
        caught = std::string(err.what()) == "tenth";
    }
    cr_assert(caught, "the visit's exception reaches the caller");
    cr_assert_eq(visits, 10, "no visit after the one that threw");
    std::atomic<int> thrown{0}, parallel_visits{0};
    caught = false;
    try {
        enemies.parallel_for(e.ctx.get(), 16, [&](kiln::handle<enemy>, enemy &) {
            parallel_visits.fetch_add(1, std::memory_order_relaxed);
            thrown.fetch_add(1, std::memory_order_relaxed);
            throw std::logic_error("every visit");
        });
    } catch (const std::logic_error &) {
        caught = true;
    }
    cr_assert(caught);
    cr_assert_geq(thrown.load(), 1);
    cr_assert_lt(parallel_visits.load(), 1000, "ranges stop visiting once one threw");
    for (auto h : hs) cr_assert(enemies.free(e.ctx.get(), h));
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

Test(cpp_memory, handle_table_walk_of_a_moved_from_table_is_refused_by_kiln) {
    env e;
    kiln::handle_table<enemy> a(e.rt.get(), "enemies");
    kiln::handle_table<enemy> b(std::move(a));
    int visits = 0;
    std::string err = stderr_of([&] { a.foreach([&](kiln::handle<enemy>, enemy &) { visits++; }); });
    cr_assert_eq(count_substrings(err.c_str(), "HANDLES_NULL"), 1u, "stderr: %s", err.c_str());
    /* With a context, through its runtime's log. */
    a.parallel_for(e.ctx.get(), 0, [&](kiln::handle<enemy>, enemy &) { visits++; });
    cr_assert_eq(count_items(e.rec(), KILN_LOGITEM_HANDLES_NULL), 1u, "log:%s", recorded_summary(e.rec()));
    cr_assert_eq(visits, 0);
}

// ---------- frame lifetime: FRAME_MEMORY_STALE ----------

// A frame container that grows after its frame ended is refused, with KILN_DEBUG_CHECKS,
// before it copies anything out of reset memory; an allocator that never allocated may
// live across frames.
Test(cpp_memory, frame_container_growing_after_its_frame_is_refused_with_checks) {
    recorder log;
    kiln_desc desc = desc_for(log.rec);
    desc.debug = KILN_DEBUG_CHECKS;
    env e(desc);
    kiln_ctx *ctx = e.ctx.get();
    kiln::frame_allocator<int> kept_allocator(ctx);   // a system's, made once
    std::aligned_storage_t<sizeof(kiln::frame_vector<int>), alignof(kiln::frame_vector<int>)> storage;
    kiln::frame_vector<int> *stale = nullptr;
    {
        kiln::frame f(ctx);
        stale = new (&storage) kiln::frame_vector<int>(kept_allocator);
        for (int i = 0; i < 4; i++) stale->push_back(i);
        stale->shrink_to_fit();
    }
    bool refused = false;
    {
        kiln::frame f(ctx);
        try {
            stale->push_back(4);   // full: grows, in a frame after its own
        } catch (const std::bad_alloc &) {
            refused = true;
        }
        cr_assert(refused, "a stale frame container grew");
        cr_assert_eq(count_items(log.rec, KILN_LOGITEM_FRAME_MEMORY_STALE), 1u, "log:%s",
                     recorded_summary(log.rec));
        cr_assert_eq(count_items_with(log.rec, KILN_LOGITEM_FRAME_MEMORY_STALE, "made 1 frame resets ago"), 1u,
                     "log:%s", recorded_summary(log.rec));
        // The kept allocator made this frame's containers fine, and they grow freely.
        kiln::frame_vector<int> fresh(kept_allocator);
        for (int i = 0; i < 1000; i++) fresh.push_back(i);
        kiln::frame_vector<int> copy(fresh);
        copy.push_back(1);
        std::list<int, kiln::frame_allocator<int>> nodes(kept_allocator);
        for (int i = 0; i < 100; i++) nodes.push_back(i);
    }
    stale->~vector();   // frees nothing: only reset memory's bookkeeping goes
    cr_assert_eq(recorded_count(log.rec), 1u, "log:%s", recorded_summary(log.rec));
    cr_assert_eq(runtime_stats(e.rt.get()).api_errors, 1u);
}

// Without KILN_DEBUG_CHECKS the stamp is not compared: the same growth allocates.
Test(cpp_memory, frame_container_stale_check_is_off_without_checks) {
    env e;
    kiln_ctx *ctx = e.ctx.get();
    std::aligned_storage_t<sizeof(kiln::frame_vector<int>), alignof(kiln::frame_vector<int>)> storage;
    kiln::frame_vector<int> *stale = nullptr;
    {
        kiln::frame f(ctx);
        stale = new (&storage) kiln::frame_vector<int>(ctx);
        stale->reserve(1);
    }
    {
        kiln::frame f(ctx);
        stale->reserve(64);   // its one element slot was never written: nothing is read
    }
    stale->~vector();
    cr_assert_eq(recorded_count(e.rec()), 0u, "log:%s", recorded_summary(e.rec()));
}

// ---------- with the debug layer ----------

Test(cpp_memory, containers_under_every_debug_bit) {
    recorder log;
    kiln_desc desc = desc_for(log.rec);
    desc.debug = KILN_DEBUG_ALL;
    env e(desc);
    counted::reset();
    kiln::pool<counted> p(e.rt.get(), "counted");
    kiln::arena level(e.rt.get(), "level");
    for (int frame = 0; frame < 3; frame++) {
        kiln::frame f(e.ctx.get());
        kiln::frame_vector<counted> v(e.ctx.get());
        for (int i = 0; i < 300; i++) v.emplace_back(i);
        kiln::frame_string s(e.ctx.get());
        for (int i = 0; i < 50; i++) s += "text ";
        kiln::arena_scope scope(level.get());
        kiln::arena_vector<int> w(level.get());
        w.assign(5000, frame);
        counted *c = p.create(e.ctx.get(), frame);
        p.destroy(e.ctx.get(), c);
        cr_assert_eq(v[299].value, 299);
    }
    cr_assert_eq(counted::live(), 0);
    cr_assert_eq(recorded_count(log.rec), 0u, "no guard, poison or ownership report:%s",
                 recorded_summary(log.rec));
}

namespace {
struct background_try {
    bool threw = false;
    bool ran = false;
};
void background_frame_vector(kiln_ctx *ctx, void *arg) {
    auto *t = static_cast<background_try *>(arg);
    t->ran = true;
    try {   // no exception may leave a job: kiln's C frames are below it
        kiln::frame_vector<int> v(ctx);
        v.push_back(1);
    } catch (const std::bad_alloc &) {
        t->threw = true;
    }
}
}  // namespace

Test(cpp_memory, frame_memory_in_a_background_job_is_refused_with_checks) {
    recorder log;
    kiln_desc desc = desc_for(log.rec);
    desc.debug = KILN_DEBUG_CHECKS;
    env e(desc);
    background_try t;
    kiln_counter counter{};
    kiln_job job{ background_frame_vector, &t };
    kiln_run_desc run{};
    run.background = true;
    kiln_run_ex(e.ctx.get(), &job, 1, &counter, &run);
    kiln_wait(e.ctx.get(), &counter);   // no workers: the wait runs it
    cr_assert(t.ran);
    cr_assert(t.threw, "kiln refused, the allocator threw");
    cr_assert_eq(count_items(log.rec, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC), 1u, "log:%s",
                 recorded_summary(log.rec));
}
