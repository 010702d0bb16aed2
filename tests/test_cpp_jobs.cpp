// tests/test_cpp_jobs.cpp — kiln/jobs.hpp: task_group run/wait with results, the
// context a job gets, nested groups inside jobs, the destructor's wait, exceptions (the
// first rethrown, the others counted, the group and later groups still working),
// closures with non-trivial, large and over-aligned captures (each destructor runs
// exactly once), frame end under a group's jobs, bad contexts and priorities, and
// parallel_for coverage and exceptions; with workers and with KILN_NO_WORKERS.
//
// Criterion's assertions must run on the test's own thread, so a job records what it
// found wrong with JOB_CHECK and the test asserts afterwards that nothing was. Nothing
// waits on time: every test ends when its jobs are done.
#include <criterion/criterion.h>

#include <kiln/jobs.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
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
