// tests/test_cpp_jobs.cpp — kiln/jobs.hpp: task_group run/wait with results, the
// context a job gets, nested groups inside jobs, the destructor's wait, exceptions (the
// first rethrown, the others counted, the group and later groups still working),
// closures with non-trivial, large and over-aligned captures (each destructor runs
// exactly once), frame end under a group's jobs, bad contexts and priorities, run_after
// (chains, fan-out, fan-in, checked through stamps; prerequisites destroyed or throwing;
// its refusals), isolated waits (which thread ran which job, never time), and
// parallel_for coverage and exceptions; with workers and with KILN_NO_WORKERS.
//
// Criterion's assertions must run on the test's own thread, so a job records what it
// found wrong with JOB_CHECK and the test asserts afterwards that nothing was. Nothing
// waits on time: every test ends when its jobs are done.
#include <criterion/criterion.h>

#include <kiln/jobs.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "recording_log.h"
}

namespace {

recording_log *rec;
kiln_runtime  *rt;
kiln_ctx      *main_ctx;

std::atomic<unsigned> job_failures;
char                  job_failure_text[256];

void job_fail(int line, const char *what) {
    if (job_failures.fetch_add(1) == 0)
        std::snprintf(job_failure_text, sizeof job_failure_text, "line %d: %s", line, what);
}

#define JOB_CHECK(cond) \
    do { \
        if (!(cond)) job_fail(__LINE__, #cond); \
    } while (0)

#define assert_no_job_failures() \
    cr_assert_eq(job_failures.load(), 0u, "%u check(s) failed inside jobs, the first at %s", \
                 job_failures.load(), job_failure_text)

#define assert_no_log() \
    cr_assert_eq(recorded_count(rec), 0, "unexpected log:%s", recorded_summary(rec))

void setup() {
    rec = recording_log_new();
    job_failures.store(0);
    job_failure_text[0] = '\0';
}

void teardown() {
    recording_fixture_end(&main_ctx, &rt, &rec);
}

// The suite's runtime with this many workers (or KILN_NO_WORKERS) and main_ctx.
void start(uint32_t workers, uint32_t debug = 0) {
    kiln_desc desc = recording_desc(rec);
    desc.worker_count = workers;
    desc.debug = debug;
    rt = kiln_create(&desc);
    cr_assert_not_null(rt, "kiln_create failed:%s", recorded_summary(rec));
    main_ctx = kiln_attach(rt);
    cr_assert_not_null(main_ctx, "kiln_attach failed:%s", recorded_summary(rec));
}

constexpr uint32_t WORKERS = 3;

// Counts the lives of closure captures: every construction (default, copy or move)
// and every destruction. alive() is 0 once each copy has been destroyed exactly once;
// a destructor run twice makes it negative, one never run leaves it positive.
struct tracked {
    static std::atomic<long> constructed;
    static std::atomic<long> destroyed;
    static long alive() { return constructed.load() - destroyed.load(); }
    static void reset() { constructed = 0; destroyed = 0; }

    std::atomic<int> *calls;
    bool              live = true;

    explicit tracked(std::atomic<int> *c) : calls(c) { constructed++; }
    tracked(const tracked &o) : calls(o.calls) { constructed++; }
    tracked(tracked &&o) noexcept : calls(o.calls) { constructed++; }
    tracked &operator=(const tracked &) = delete;
    ~tracked() {
        JOB_CHECK(live);   // a second destruction of the same object
        live = false;
        destroyed++;
    }
};
std::atomic<long> tracked::constructed{0};
std::atomic<long> tracked::destroyed{0};

} // namespace

TestSuite(cpp_jobs, .init = setup, .fini = teardown, .timeout = 60);

// ---------- run and wait ----------

static void run_wait_results(uint32_t workers) {
    start(workers);
    std::vector<uint64_t> results(256, 0);
    kiln::task_group g(main_ctx);
    for (size_t i = 0; i < results.size(); i++)
        g.run([&results, i](kiln_ctx *ctx) {
            JOB_CHECK(ctx != nullptr);
            // The job's own frame memory, from the context it was given.
            auto *scratch = static_cast<uint64_t *>(kiln_frame_alloc(ctx, 64, 8));
            JOB_CHECK(scratch != nullptr);
            if (scratch) {
                scratch[0] = i;
                results[i] = scratch[0] * scratch[0];
            }
        });
    g.wait();
    assert_no_job_failures();
    for (size_t i = 0; i < results.size(); i++)
        cr_assert_eq(results[i], (uint64_t)(i * i), "job %zu's result", i);
    cr_assert_eq(g.exceptions_dropped(), 0);
    g.wait();   // nothing since the last wait: returns at once
    assert_no_log();
}
Test(cpp_jobs, run_wait_results) { run_wait_results(WORKERS); }
Test(cpp_jobs, run_wait_results_no_workers) { run_wait_results(KILN_NO_WORKERS); }

static void high_priority(uint32_t workers) {
    start(workers);
    std::atomic<int> ran{0};
    kiln::task_group g(main_ctx);
    for (int i = 0; i < 16; i++) g.run([&ran](kiln_ctx *) { ran++; }, KILN_PRIORITY_HIGH);
    for (int i = 0; i < 16; i++) g.run([&ran](kiln_ctx *) { ran++; });
    g.wait();
    cr_assert_eq(ran.load(), 32);
    assert_no_log();
}
Test(cpp_jobs, high_priority) { high_priority(WORKERS); }
Test(cpp_jobs, high_priority_no_workers) { high_priority(KILN_NO_WORKERS); }

// A job makes a task_group of its own with the context it was given, runs jobs on it
// (their closures in that thread's frame memory) and waits inside the job.
static void nested_groups(uint32_t workers) {
    start(workers);
    constexpr int OUTER = 8, INNER = 8, LEAF = 4;
    std::atomic<int> leaves{0};
    kiln::task_group outer(main_ctx);
    for (int o = 0; o < OUTER; o++)
        outer.run([&leaves](kiln_ctx *ctx) {
            kiln::task_group inner(ctx);
            for (int i = 0; i < INNER; i++)
                inner.run([&leaves](kiln_ctx *ctx2) {
                    kiln::task_group leaf(ctx2);
                    for (int l = 0; l < LEAF; l++) leaf.run([&leaves](kiln_ctx *) { leaves++; });
                    // no wait(): the destructor waits
                });
            inner.wait();
        });
    outer.wait();
    assert_no_job_failures();
    cr_assert_eq(leaves.load(), OUTER * INNER * LEAF);
    assert_no_log();
}
Test(cpp_jobs, nested_groups) { nested_groups(WORKERS); }
Test(cpp_jobs, nested_groups_no_workers) { nested_groups(KILN_NO_WORKERS); }

static void destructor_waits(uint32_t workers) {
    start(workers);
    std::atomic<int> ran{0};
    {
        kiln::task_group g(main_ctx);
        for (int i = 0; i < 64; i++) g.run([&ran](kiln_ctx *) { ran++; });
    }
    cr_assert_eq(ran.load(), 64, "the destructor returned before the group's jobs were done");
    {
        kiln::task_group unused(main_ctx);   // nothing run: nothing to wait for, nothing logged
    }
    assert_no_log();
}
Test(cpp_jobs, destructor_waits) { destructor_waits(WORKERS); }
Test(cpp_jobs, destructor_waits_no_workers) { destructor_waits(KILN_NO_WORKERS); }

// ---------- exceptions ----------

static void exceptions(uint32_t workers) {
    start(workers);
    constexpr int JOBS = 40, THROWERS = 10;
    std::atomic<int> finished{0};
    kiln::task_group g(main_ctx);
    for (int i = 0; i < JOBS; i++)
        g.run([&finished, i](kiln_ctx *) {
            finished++;
            if (i % (JOBS / THROWERS) == 0) throw std::runtime_error("job " + std::to_string(i));
        });
    bool caught = false;
    try {
        g.wait();
    } catch (const std::runtime_error &e) {
        caught = std::strncmp(e.what(), "job ", 4) == 0;
    }
    cr_assert(caught, "wait() rethrew the first exception");
    cr_assert_eq(finished.load(), JOBS, "every job ran: the counter reached zero");
    cr_assert_eq(g.exceptions_dropped(), (size_t)(THROWERS - 1));

    // The same group works on, and rethrows nothing more.
    g.run([&finished](kiln_ctx *) { finished++; });
    g.wait();
    cr_assert_eq(finished.load(), JOBS + 1);

    // A second round: one more first exception rethrown, dropped ones add up.
    for (int i = 0; i < 3; i++) g.run([](kiln_ctx *) { throw 7; });
    int thrown = 0;
    try {
        g.wait();
    } catch (int v) {
        thrown = v;
    }
    cr_assert_eq(thrown, 7);
    cr_assert_eq(g.exceptions_dropped(), (size_t)(THROWERS - 1 + 2));

    // A later group is not touched by any of it.
    kiln::task_group later(main_ctx);
    later.run([&finished](kiln_ctx *) { finished++; });
    later.wait();
    cr_assert_eq(later.exceptions_dropped(), 0);
    cr_assert_eq(finished.load(), JOBS + 2);
    assert_no_log();
}
Test(cpp_jobs, exceptions) { exceptions(WORKERS); }
Test(cpp_jobs, exceptions_no_workers) { exceptions(KILN_NO_WORKERS); }

// A group destroyed with an exception pending drops it (the destructor never throws)
// and counts it process-wide; so does one destroyed while another exception unwinds.
static void destructor_drops(uint32_t workers) {
    start(workers);
    size_t before = kiln::task_group::dropped_at_destruction();
    std::atomic<int> ran{0};
    {
        kiln::task_group g(main_ctx);
        g.run([&ran](kiln_ctx *) { ran++; throw std::logic_error("dropped"); });
        g.run([&ran](kiln_ctx *) { ran++; throw std::logic_error("dropped too"); });
    }
    cr_assert_eq(ran.load(), 2);
    cr_assert_eq(kiln::task_group::dropped_at_destruction(), before + 1);

    bool caught = false;
    try {
        kiln::task_group g(main_ctx);
        g.run([&ran](kiln_ctx *) { ran++; throw std::logic_error("in the group"); });
        throw std::range_error("in the scope");
    } catch (const std::range_error &) {
        caught = true;
    }
    cr_assert(caught, "the scope's own exception left it");
    cr_assert_eq(ran.load(), 3, "unwinding waited for the group's job");
    cr_assert_eq(kiln::task_group::dropped_at_destruction(), before + 2);
    assert_no_log();
}
Test(cpp_jobs, destructor_drops) { destructor_drops(WORKERS); }
Test(cpp_jobs, destructor_drops_no_workers) { destructor_drops(KILN_NO_WORKERS); }

// ---------- closures ----------

// Throws from its destructor, only in the copy a move made last (the one in the job):
// the temporary it was moved from dies quietly in the test.
struct throwing_on_destroy {
    std::atomic<int> *destroyed;
    bool              armed = true;

    explicit throwing_on_destroy(std::atomic<int> *d) : destroyed(d) {}
    throwing_on_destroy(throwing_on_destroy &&o) noexcept : destroyed(o.destroyed), armed(o.armed) {
        o.armed = false;
    }
    void operator()(kiln_ctx *) const {}
    ~throwing_on_destroy() noexcept(false) {
        if (!armed) return;
        (*destroyed)++;
        throw std::runtime_error("from a destructor");
    }
};

static void closure_lifetimes(uint32_t workers) {
    start(workers);
    tracked::reset();
    std::atomic<int> calls{0};
    {
        kiln::task_group g(main_ctx);
        // Moved in (a temporary), copied in (an lvalue that lives on), and a closure that
        // throws: each copy destroyed exactly once, after its call.
        for (int i = 0; i < 32; i++)
            g.run([t = tracked(&calls)](kiln_ctx *) { (*t.calls)++; });
        tracked keep(&calls);
        auto by_copy = [keep](kiln_ctx *) { (*keep.calls)++; };
        for (int i = 0; i < 32; i++) g.run(by_copy);
        for (int i = 0; i < 8; i++)
            g.run([t = tracked(&calls)](kiln_ctx *) {
                (*t.calls)++;
                throw std::runtime_error("after the call, the closure is still destroyed");
            });
        try {
            g.wait();
        } catch (const std::runtime_error &) {
        }
        cr_assert_eq(calls.load(), 72);
        // Left alive: keep and by_copy's copy of it.
        cr_assert_eq(tracked::alive(), 2, "alive %ld", tracked::alive());
    }
    cr_assert_eq(tracked::alive(), 0, "constructed %ld, destroyed %ld",
                 tracked::constructed.load(), tracked::destroyed.load());

    // A destructor that throws is captured like a call that throws.
    std::atomic<int> destroyed{0};
    kiln::task_group g(main_ctx);
    g.run(throwing_on_destroy(&destroyed));
    bool caught = false;
    try {
        g.wait();
    } catch (const std::runtime_error &) {
        caught = true;
    }
    cr_assert(caught);
    cr_assert_eq(destroyed.load(), 1);
    assert_no_job_failures();
    assert_no_log();
}
Test(cpp_jobs, closure_lifetimes) { closure_lifetimes(WORKERS); }
Test(cpp_jobs, closure_lifetimes_no_workers) { closure_lifetimes(KILN_NO_WORKERS); }

// A move-only capture (unique_ptr) is moved into frame memory and freed after the call.
static void move_only_capture(uint32_t workers) {
    start(workers);
    std::atomic<int> sum{0};
    kiln::task_group g(main_ctx);
    for (int i = 0; i < 16; i++) {
        auto p = std::make_unique<int>(i);
        g.run([p = std::move(p), &sum](kiln_ctx *) { sum += *p; });
    }
    g.wait();
    cr_assert_eq(sum.load(), 120);
    assert_no_log();
}
Test(cpp_jobs, move_only_capture) { move_only_capture(WORKERS); }
Test(cpp_jobs, move_only_capture_no_workers) { move_only_capture(KILN_NO_WORKERS); }

struct alignas(256) overaligned {
    unsigned char bytes[256];
};

// Captures larger than a 16 KiB block (a mapping of their own in frame memory) and an
// over-aligned one arrive intact.
static void large_captures(uint32_t workers) {
    start(workers);
    std::array<uint64_t, 8192> big{};   // 64 KiB
    for (size_t i = 0; i < big.size(); i++) big[i] = i;
    overaligned odd{};
    std::memset(odd.bytes, 0x5a, sizeof odd.bytes);
    std::atomic<uint64_t> sums[4]{};
    std::atomic<int> aligned{0};
    kiln::task_group g(main_ctx);
    for (int j = 0; j < 4; j++)
        g.run([big, &sums, j](kiln_ctx *) {
            uint64_t s = 0;
            for (uint64_t v : big) s += v;
            sums[j] = s;
        });
    for (int j = 0; j < 4; j++)
        g.run([odd, &aligned](kiln_ctx *) {
            bool ok = reinterpret_cast<uintptr_t>(&odd) % 256 == 0;
            for (unsigned char b : odd.bytes) ok = ok && b == 0x5a;
            if (ok) aligned++;
        });
    g.wait();
    for (auto &s : sums) cr_assert_eq(s.load(), (uint64_t)8192 * 8191 / 2);
    cr_assert_eq(aligned.load(), 4);
    assert_no_log();
}
Test(cpp_jobs, large_captures) { large_captures(WORKERS); }
Test(cpp_jobs, large_captures_no_workers) { large_captures(KILN_NO_WORKERS); }

// ---------- frames ----------

// kiln_frame_end with a group's jobs unfinished runs and waits for them before it resets
// the frame memory their closures live in: by its return each has run and been
// destroyed, and the group's later wait() returns at once with what they threw.
static void frame_end_under_group(uint32_t workers) {
    start(workers);
    tracked::reset();
    std::atomic<int> calls{0};
    kiln_frame_begin(main_ctx);
    kiln::task_group g(main_ctx);
    for (int i = 0; i < 16; i++)
        g.run([t = tracked(&calls)](kiln_ctx *ctx) {
            JOB_CHECK(kiln_frame_alloc(ctx, 128, 16) != nullptr);
            (*t.calls)++;
        });
    g.run([](kiln_ctx *) { throw std::runtime_error("before frame end"); });
    kiln_frame_end(main_ctx);
    cr_assert_eq(calls.load(), 16, "frame end returned with the group's jobs unfinished");
    cr_assert_eq(tracked::alive(), 0, "a closure outlived frame end");
    bool caught = false;
    try {
        g.wait();
    } catch (const std::runtime_error &) {
        caught = true;
    }
    cr_assert(caught);
    // The group works on in the next frame.
    kiln_frame_begin(main_ctx);
    g.run([&calls](kiln_ctx *) { calls++; });
    g.wait();
    kiln_frame_end(main_ctx);
    cr_assert_eq(calls.load(), 17);
    assert_no_job_failures();
    assert_no_log();
}
Test(cpp_jobs, frame_end_under_group) { frame_end_under_group(WORKERS); }
Test(cpp_jobs, frame_end_under_group_no_workers) { frame_end_under_group(KILN_NO_WORKERS); }

// ---------- refusals ----------

Test(cpp_jobs, null_context_throws_bad_alloc) {
    start(KILN_NO_WORKERS);
    tracked::reset();
    std::atomic<int> calls{0};
    stderr_capture cap;
    stderr_capture_begin(&cap);   // a NULL context has no runtime: the default sink
    bool threw = false;
    {
        kiln::task_group g(nullptr);
        try {
            g.run([t = tracked(&calls)](kiln_ctx *) { (*t.calls)++; });
        } catch (const std::bad_alloc &) {
            threw = true;
        }
    }   // nothing was submitted: the destructor waits for nothing, logs nothing
    char *text = stderr_capture_end(&cap);
    size_t logged = count_substrings(text, "CONTEXT_NULL");
    free(text);
    cr_assert(threw, "run() with a NULL context throws std::bad_alloc");
    cr_assert_eq(logged, 1, "kiln logged the NULL context once");
    cr_assert_eq(calls.load(), 0);
    cr_assert_eq(tracked::alive(), 0, "the temporary closure was destroyed");
}

Test(cpp_jobs, bad_priority_is_refused) {
    start(WORKERS);
    tracked::reset();
    std::atomic<int> calls{0};
    kiln::task_group g(main_ctx);
    g.run([t = tracked(&calls)](kiln_ctx *) { (*t.calls)++; }, static_cast<kiln_priority>(7));
    g.wait();
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_BAD_PRIORITY), 1, "log:%s", recorded_summary(rec));
    cr_assert_eq(calls.load(), 0, "a refused job never runs");
    cr_assert_eq(tracked::alive(), 0, "the refused closure was destroyed");
    assert_no_job_failures();
}

// Inside a background job, frame memory is refused with KILN_DEBUG_CHECKS: run() throws
// std::bad_alloc there, caught inside the job (nothing crosses kiln's frames).
struct background_probe {
    std::atomic<int> threw{0};
    std::atomic<int> ran{0};
};

static void background_job(kiln_ctx *ctx, void *arg) {
    auto *probe = static_cast<background_probe *>(arg);
    try {
        kiln::task_group g(ctx);
        g.run([probe](kiln_ctx *) { probe->ran++; });
    } catch (const std::bad_alloc &) {
        probe->threw++;
    }
}

Test(cpp_jobs, background_job_context_throws_bad_alloc) {
    start(WORKERS, KILN_DEBUG_CHECKS);
    background_probe probe;
    kiln_counter done{};
    kiln_job job{background_job, &probe};
    kiln_run_desc desc{};
    desc.background = true;
    kiln_run_ex(main_ctx, &job, 1, &done, &desc);
    kiln_wait(main_ctx, &done);
    cr_assert_eq(probe.threw.load(), 1);
    cr_assert_eq(probe.ran.load(), 0);
    cr_assert_eq(count_items(rec, KILN_LOGITEM_JOB_BACKGROUND_FRAME_ALLOC), 1, "log:%s",
                 recorded_summary(rec));
}

// ---------- run_after and isolated waits ----------

namespace {

// Every job takes a stamp when it starts and when it ends: a job after another starts
// after the other ended.
std::atomic<uint32_t> clock_tick{0};

struct stamp {
    uint32_t begin = 0, end = 0;
};

void busy_ns(uint64_t ns) {
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < until) {}
}

void take_stamp(stamp &s) {
    s.begin = clock_tick.fetch_add(1) + 1;
    busy_ns(20000);
    s.end = clock_tick.fetch_add(1) + 1;
}

// Every stamp of later begins after every stamp of earlier ended.
template <size_t N, size_t M>
void assert_after(const std::array<stamp, N> &later, const std::array<stamp, M> &earlier,
                  const char *what) {
    for (size_t i = 0; i < N; i++) {
        cr_assert_neq(later[i].end, 0u, "%s: job %zu ran", what, i);
        for (size_t p = 0; p < M; p++)
            cr_assert_gt(later[i].begin, earlier[p].end, "%s: job %zu began before job %zu of "
                         "its prerequisite ended", what, i, p);
    }
}

// A stamping job on prerequisite for each of first, and one on dependent after it for
// each of later.
template <size_t N, size_t M>
void run_stamped_pair(kiln::task_group &prerequisite, kiln::task_group &dependent,
                      std::array<stamp, N> &first, std::array<stamp, M> &later) {
    for (stamp &s : first) prerequisite.run([&s](kiln_ctx *) { take_stamp(s); });
    for (stamp &s : later)
        dependent.run_after({&prerequisite}, [&s](kiln_ctx *) { take_stamp(s); });
}

} // namespace

// A -> B -> C, three jobs each, C waited for first: its wait runs the whole chain.
static void chain(uint32_t workers) {
    start(workers);
    std::array<stamp, 3> a{}, b{}, c{};
    kiln::task_group ga(main_ctx), gb(main_ctx), gc(main_ctx);
    for (stamp &s : a) ga.run([&s](kiln_ctx *) { take_stamp(s); });
    for (stamp &s : b) gb.run_after({&ga}, [&s](kiln_ctx *) { take_stamp(s); });
    for (stamp &s : c) gc.run_after({gb}, [&s](kiln_ctx *) { take_stamp(s); });   // by reference
    gc.wait();
    assert_after(c, b, "C after B");
    assert_after(b, a, "B after A");
    gb.wait();   // done already: return at once
    ga.wait();
    assert_no_log();
}
Test(cpp_jobs, run_after_chain) { chain(WORKERS); }
Test(cpp_jobs, run_after_chain_no_workers) { chain(KILN_NO_WORKERS); }

// Fan-out: several groups after one; fan-in: one group after two groups and a raw
// counter that a C kiln_run counts on.
static void fan_out_fan_in(uint32_t workers) {
    start(workers);
    std::array<stamp, 4> root{};
    std::array<std::array<stamp, 1>, 3> branch{};
    std::array<stamp, 2> joined{};
    std::array<stamp, 1> raw{};
    kiln::task_group roots(main_ctx), joins(main_ctx);
    std::array<std::unique_ptr<kiln::task_group>, 3> branches;
    for (stamp &s : root) roots.run([&s](kiln_ctx *) { take_stamp(s); });
    for (size_t i = 0; i < branches.size(); i++) {
        branches[i] = std::make_unique<kiln::task_group>(main_ctx);
        stamp *s = &branch[i][0];
        branches[i]->run_after({&roots}, [s](kiln_ctx *) { take_stamp(*s); });
    }
    kiln_counter raw_done{};
    kiln_job raw_job{[](kiln_ctx *, void *arg) { take_stamp(*static_cast<stamp *>(arg)); },
                     &raw[0]};
    kiln_run(main_ctx, &raw_job, 1, &raw_done);
    for (stamp &s : joined)
        joins.run_after({branches[0].get(), *branches[1], branches[2].get(), &raw_done},
                        [&s](kiln_ctx *) { take_stamp(s); });
    joins.wait();
    for (size_t i = 0; i < branches.size(); i++) {
        assert_after(branch[i], root, "branch after the roots");
        assert_after(joined, branch[i], "joined after a branch");
    }
    assert_after(joined, raw, "joined after the raw counter");
    for (auto &g : branches) g->wait();
    roots.wait();
    kiln_wait(main_ctx, &raw_done);
    assert_no_log();
}
Test(cpp_jobs, run_after_fan_out_fan_in) { fan_out_fan_in(WORKERS); }
Test(cpp_jobs, run_after_fan_out_fan_in_no_workers) { fan_out_fan_in(KILN_NO_WORKERS); }

// A prerequisite group destroyed while jobs wait on it: its destructor waits for its
// jobs, which makes the dependents runnable, so they run after it and nothing dangles.
// A group that never ran (or was waited for) counts as done.
static void prerequisite_destroyed_first(uint32_t workers) {
    start(workers);
    std::array<stamp, 3> first{};
    std::array<stamp, 2> later{};
    std::array<stamp, 1> free_standing{};
    kiln::task_group dependents(main_ctx);
    {
        kiln::task_group prerequisite(main_ctx);
        run_stamped_pair(prerequisite, dependents, first, later);
        kiln::task_group idle(main_ctx);
        dependents.run_after({&idle}, [&](kiln_ctx *) { take_stamp(free_standing[0]); });
    }
    dependents.wait();
    assert_after(later, first, "after a destroyed group");
    cr_assert_neq(free_standing[0].end, 0u, "a job after a group without jobs ran");
    assert_no_log();
}
Test(cpp_jobs, run_after_prerequisite_destroyed_first) { prerequisite_destroyed_first(WORKERS); }
Test(cpp_jobs, run_after_prerequisite_destroyed_first_no_workers) {
    prerequisite_destroyed_first(KILN_NO_WORKERS);
}

// A prerequisite that throws still finishes: the dependent runs, the exception is
// rethrown by the prerequisite's wait() only, and each closure is destroyed once.
static void run_after_exceptions(uint32_t workers) {
    start(workers);
    tracked::reset();
    std::atomic<int> calls{0};
    bool dependent_ran = false;
    {
        kiln::task_group prerequisite(main_ctx), dependent(main_ctx);
        prerequisite.run([t = tracked(&calls)](kiln_ctx *) {
            (*t.calls)++;
            throw std::runtime_error("prerequisite");
        });
        dependent.run_after({&prerequisite}, [t = tracked(&calls), &dependent_ran](kiln_ctx *) {
            (*t.calls)++;
            dependent_ran = true;
        });
        dependent.wait();   // rethrows nothing: its own job did not throw
        cr_assert(dependent_ran);
        bool caught = false;
        try {
            prerequisite.wait();
        } catch (const std::runtime_error &) {
            caught = true;
        }
        cr_assert(caught, "the prerequisite's wait() rethrew its job's exception");
        // A dependent that throws, under an isolated wait.
        dependent.run_after({&prerequisite}, [](kiln_ctx *) { throw 11; });
        int thrown = 0;
        try {
            dependent.wait(kiln::isolate);
        } catch (int v) {
            thrown = v;
        }
        cr_assert_eq(thrown, 11);
    }
    cr_assert_eq(calls.load(), 2);
    cr_assert_eq(tracked::alive(), 0, "constructed %ld, destroyed %ld",
                 tracked::constructed.load(), tracked::destroyed.load());
    assert_no_job_failures();
    assert_no_log();
}
Test(cpp_jobs, run_after_exceptions) { run_after_exceptions(WORKERS); }
Test(cpp_jobs, run_after_exceptions_no_workers) { run_after_exceptions(KILN_NO_WORKERS); }

// Frame end waits for a group's jobs that still wait for their prerequisites.
static void run_after_frame_end(uint32_t workers) {
    start(workers);
    std::array<stamp, 2> first{}, later{};
    kiln_frame_begin(main_ctx);
    kiln::task_group prerequisite(main_ctx), dependent(main_ctx);
    run_stamped_pair(prerequisite, dependent, first, later);
    kiln_frame_end(main_ctx);
    assert_after(later, first, "after frame end");
    dependent.wait();
    prerequisite.wait();
    assert_no_log();
}
Test(cpp_jobs, run_after_frame_end) { run_after_frame_end(WORKERS); }
Test(cpp_jobs, run_after_frame_end_no_workers) { run_after_frame_end(KILN_NO_WORKERS); }

// ---------- run_after: bad input ----------

// An empty list is no dependency: run(f), nothing logged.
Test(cpp_jobs, run_after_empty_list_runs_at_once) {
    start(WORKERS);
    std::atomic<int> ran{0};
    kiln::task_group g(main_ctx);
    g.run_after({}, [&ran](kiln_ctx *) { ran++; });
    g.run_after({}, [&ran](kiln_ctx *) { ran++; }, KILN_PRIORITY_HIGH);
    g.wait();
    cr_assert_eq(ran.load(), 2);
    assert_no_log();
}

static uint64_t api_errors() {
    kiln_stats stats{};
    kiln_stats_get(rt, &stats);
    return stats.api_errors;
}

// Refused: f never runs, its closure is destroyed at once (not only at the wait), kiln
// logs the item once and counts it as misuse, and the group works on, waits included.
Test(cpp_jobs, run_after_refusals) {
    start(WORKERS);
    tracked::reset();
    std::atomic<int> calls{0};
    kiln::task_group g(main_ctx), other(main_ctx);
    const kiln::task_group *no_group = nullptr;
    const kiln_counter *no_counter = nullptr;
    other.run([&calls](kiln_ctx *) { calls++; });
    uint64_t errors = api_errors();
    struct refusal {
        const char   *what;
        kiln_log_item item;
    };
    const refusal cases[] = {
        {"after itself", KILN_LOGITEM_JOB_AFTER_CYCLE},
        {"after itself by reference, among others", KILN_LOGITEM_JOB_AFTER_CYCLE},
        {"a null group", KILN_LOGITEM_JOB_AFTER_NULL_ENTRY},
        {"a null counter", KILN_LOGITEM_JOB_AFTER_NULL_ENTRY},
        {"a bad priority", KILN_LOGITEM_JOB_BAD_PRIORITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g.run([&calls](kiln_ctx *) { calls++; });   // g has a job not waited for
        auto f = [t = tracked(&calls)](kiln_ctx *) { (*t.calls) += 1000; };
        switch (i) {
        case 0: g.run_after({&g}, std::move(f)); break;
        case 1: g.run_after({&other, g}, std::move(f)); break;
        case 2: g.run_after({&other, no_group}, std::move(f)); break;
        case 3: g.run_after({no_counter}, std::move(f)); break;
        default: g.run_after({&other}, std::move(f), static_cast<kiln_priority>(7)); break;
        }
        cr_assert_eq(tracked::alive(), 1, "%s: the refused closure was destroyed at once "
                     "(the moved-from one lives on)", cases[i].what);
        cr_assert_eq(count_items(rec, cases[i].item), 1, "%s: log:%s", cases[i].what,
                     recorded_summary(rec));
        cr_assert_eq(recorded_count(rec), 1, "%s: log:%s", cases[i].what, recorded_summary(rec));
        cr_assert_eq(api_errors(), errors + i + 1, "%s: counted as misuse", cases[i].what);
        recording_log_clear(rec);
        g.wait();   // returns: the refused job is not counted
    }
    other.wait();
    cr_assert_eq(calls.load(), 1 + 5, "no refused job ran");
    cr_assert_eq(tracked::alive(), 0);
    // The group works on, after other groups too.
    g.run_after({&other}, [&calls](kiln_ctx *) { calls++; });
    g.wait();
    cr_assert_eq(calls.load(), 7);
    assert_no_job_failures();
    assert_no_log();
}

// ---------- isolated waits ----------

// Which thread ran what: an unrelated job records whether it ran on the main thread while
// the main thread was inside its isolated wait (as tests/test_job_graph.c does).
namespace {
std::thread::id       main_thread;
std::atomic<bool>     in_isolated_wait;
std::atomic<unsigned> unrelated_on_waiter, unrelated_ran, related_ran, related_children;
}

static void isolated_wait(uint32_t workers, bool related_first) {
    start(workers);
    main_thread = std::this_thread::get_id();
    in_isolated_wait = false;
    unrelated_on_waiter = unrelated_ran = related_ran = related_children = 0;
    constexpr unsigned UNRELATED = 8, RELATED = 10;
    kiln::task_group unrelated(main_ctx), related(main_ctx);
    auto unrelated_job = [](kiln_ctx *) {
        if (std::this_thread::get_id() == main_thread && in_isolated_wait) unrelated_on_waiter++;
        busy_ns(1000000);
        unrelated_ran++;
    };
    // A short job with a nested group of its own, waited for inside the job (a nested
    // wait, which keeps the isolation on the waiter).
    auto related_job = [](kiln_ctx *ctx) {
        busy_ns(10000);
        kiln::task_group children(ctx);
        for (int i = 0; i < 3; i++) children.run([](kiln_ctx *) { related_children++; });
        children.wait();
        related_ran++;
    };
    if (related_first)
        for (unsigned i = 0; i < RELATED; i++) related.run(related_job);
    for (unsigned i = 0; i < UNRELATED / 2; i++) unrelated.run(unrelated_job);
    if (!related_first)
        for (unsigned i = 0; i < RELATED; i++) related.run(related_job);
    for (unsigned i = 0; i < UNRELATED / 2; i++) unrelated.run(unrelated_job);
    in_isolated_wait = true;
    related.wait(kiln::isolate);
    in_isolated_wait = false;
    cr_assert_eq(related_ran.load(), RELATED);
    cr_assert_eq(related_children.load(), 3 * RELATED);
    cr_assert_eq(unrelated_on_waiter.load(), 0u, "an unrelated job ran on the waiting thread");
    unrelated.wait();
    cr_assert_eq(unrelated_ran.load(), UNRELATED);
    related.wait(kiln::isolate);   // nothing since the last wait: returns at once
    assert_no_log();
}
Test(cpp_jobs, isolated_wait_runs_no_unrelated_job) { isolated_wait(WORKERS, false); }
Test(cpp_jobs, isolated_wait_runs_no_unrelated_job_related_first) { isolated_wait(WORKERS, true); }
Test(cpp_jobs, isolated_wait_without_workers_reaches_its_jobs) {
    isolated_wait(KILN_NO_WORKERS, false);
}

// An isolated wait on jobs after another group: other threads run the prerequisites,
// and without workers the waiter runs them itself rather than wait for ever.
static void isolated_wait_after(uint32_t workers) {
    start(workers);
    std::array<stamp, 2> first{}, later{};
    kiln::task_group prerequisite(main_ctx), dependent(main_ctx);
    run_stamped_pair(prerequisite, dependent, first, later);
    dependent.wait(kiln::isolate);
    assert_after(later, first, "isolated, after a group");
    prerequisite.wait();
    assert_no_log();
}
Test(cpp_jobs, isolated_wait_after_a_group) { isolated_wait_after(WORKERS); }
Test(cpp_jobs, isolated_wait_after_a_group_no_workers) { isolated_wait_after(KILN_NO_WORKERS); }

// ---------- parallel_for ----------

static void parallel_for_coverage(uint32_t workers, size_t count, size_t grain) {
    std::vector<std::atomic<uint8_t>> hits(count);
    std::atomic<size_t> ranges{0};
    kiln::parallel_for(main_ctx, count, grain, [&](kiln_ctx *ctx, size_t begin, size_t end) {
        JOB_CHECK(ctx != nullptr);
        JOB_CHECK(begin < end && end <= count);
        JOB_CHECK(grain == 0 || end - begin <= grain || end - begin < 2 * grain);
        JOB_CHECK(kiln_frame_alloc(ctx, 32, 8) != nullptr);
        for (size_t i = begin; i < end; i++) hits[i]++;
        ranges++;
    });
    assert_no_job_failures();
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(hits[i].load(), 1, "index %zu covered %u times (workers %u, grain %zu)", i,
                     (unsigned)hits[i].load(), workers, grain);
    cr_assert_geq(ranges.load(), count ? 1u : 0u);
}

static void parallel_for_all(uint32_t workers) {
    start(workers);
    parallel_for_coverage(workers, 10000, 0);
    parallel_for_coverage(workers, 10000, 7);
    parallel_for_coverage(workers, 1, 1);
    parallel_for_coverage(workers, 0, 0);   // nothing runs
    // A const callable and an rvalue one both work, neither is copied.
    const auto sum_range = [](kiln_ctx *, size_t b, size_t e) { JOB_CHECK(b < e); };
    kiln::parallel_for(main_ctx, 100, 3, sum_range);
    tracked::reset();
    std::atomic<int> calls{0};
    kiln::parallel_for(main_ctx, 64, 1, [t = tracked(&calls)](kiln_ctx *, size_t, size_t) {
        (*t.calls)++;
    });
    cr_assert_eq(calls.load(), 64);
    cr_assert_eq(tracked::constructed.load(), 1, "parallel_for copied the callable");
    cr_assert_eq(tracked::alive(), 0);
    assert_no_job_failures();
    assert_no_log();
}
Test(cpp_jobs, parallel_for_coverage) { parallel_for_all(WORKERS); }
Test(cpp_jobs, parallel_for_coverage_no_workers) { parallel_for_all(KILN_NO_WORKERS); }

static void parallel_for_exceptions(uint32_t workers) {
    start(workers);
    constexpr size_t COUNT = 1000;
    std::vector<std::atomic<uint8_t>> hits(COUNT);
    bool caught = false;
    try {
        kiln::parallel_for(main_ctx, COUNT, 1, [&](kiln_ctx *, size_t begin, size_t end) {
            for (size_t i = begin; i < end; i++) hits[i]++;
            if (begin % 10 == 0) throw std::out_of_range("range " + std::to_string(begin));
        });
    } catch (const std::out_of_range &e) {
        caught = std::strncmp(e.what(), "range ", 6) == 0;
    }
    cr_assert(caught, "the first exception is rethrown after every range");
    for (size_t i = 0; i < COUNT; i++) cr_assert_eq(hits[i].load(), 1, "index %zu", i);

    // Later calls, and a task_group running parallel_for inside its jobs, work on.
    std::atomic<size_t> total{0};
    kiln::task_group g(main_ctx);
    for (int j = 0; j < 4; j++)
        g.run([&total](kiln_ctx *ctx) {
            kiln::parallel_for(ctx, 100, 0, [&total](kiln_ctx *, size_t b, size_t e) {
                total += e - b;
            });
        });
    g.wait();
    cr_assert_eq(total.load(), 400u);
    assert_no_log();
}
Test(cpp_jobs, parallel_for_exceptions) { parallel_for_exceptions(WORKERS); }
Test(cpp_jobs, parallel_for_exceptions_no_workers) { parallel_for_exceptions(KILN_NO_WORKERS); }

Test(cpp_jobs, parallel_for_null_context) {
    start(KILN_NO_WORKERS);
    std::atomic<int> calls{0};
    stderr_capture cap;
    stderr_capture_begin(&cap);
    kiln::parallel_for(nullptr, 10, 1, [&calls](kiln_ctx *, size_t, size_t) { calls++; });
    char *text = stderr_capture_end(&cap);
    size_t logged = count_substrings(text, "CONTEXT_NULL");
    free(text);
    cr_assert_eq(logged, 1);
    cr_assert_eq(calls.load(), 0);
}
