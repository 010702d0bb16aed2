// stress/stress_cpp.cpp — kiln/jobs.hpp under load: the driver's frames run task_groups
// whose jobs make task_groups of their own (two levels deep, some left to the
// destructor), call parallel_for, take frame memory in every job and check it after
// their children have run, and throw now and then; an attached thread with a frame loop
// of its own does the same between resets of its frame arena.
//
// Every frame allocation is filled with a pattern of its own and checked once the job's
// children are done: two jobs given the same bytes, or memory reset under a job, show as
// a bad pattern. Every closure carries a tracked capture: each must be destroyed exactly
// once (the live count returns to zero). Every thrown exception is either rethrown by a
// wait() or counted as dropped. Any kiln log message fails the run.
//
//   stress-cpp --threads N --iterations FRAMES --seed S
//
// The C stress programs share stress_common.h, which is C11 (_Atomic); this one keeps
// the same command line and exit status with a few lines of its own.
#include <kiln/jobs.hpp>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace {

// ---- command line, failures --------------------------------------------------------

struct options {
    unsigned threads    = 4;
    uint64_t iterations = 200;
    uint64_t seed       = 1;
};

bool parse(int argc, char **argv, options &opt) {
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) return false;   // --help included: the usage says it all
        char *end = nullptr;
        unsigned long long value = std::strtoull(argv[i + 1], &end, 0);
        if (!end || *end != '\0') return false;
        if (std::strcmp(argv[i], "--threads") == 0 && value >= 1 && value <= 64)
            opt.threads = static_cast<unsigned>(value);
        else if (std::strcmp(argv[i], "--iterations") == 0 && value >= 1)
            opt.iterations = value;
        else if (std::strcmp(argv[i], "--seed") == 0)
            opt.seed = value;
        else
            return false;
    }
    return true;
}

std::atomic<uint64_t> failures{0};

// Reports one failed check (the first 20 printed, all counted). Any thread.
#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond) && failures.fetch_add(1, std::memory_order_relaxed) < 20) {      \
            std::fprintf(stderr, "FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            std::fprintf(stderr, __VA_ARGS__);                                        \
            std::fputc('\n', stderr);                                                 \
        }                                                                             \
    } while (0)

// Every kiln message is a failure here: nothing in this program misuses kiln.
void log_fn(void *, kiln_log_level level, const char *message) {
    CHECK(false, "kiln log message (level %d): %s", static_cast<int>(level), message);
}

// splitmix64's finaliser: every random choice is a mix of the seed and where it is made.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double seconds() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---- what the jobs count -----------------------------------------------------------

std::atomic<long>     live_captures{0};   // tracked captures alive
std::atomic<uint64_t> jobs_run{0}, thrown{0}, pfor_indices{0};
std::atomic<uint64_t> destructor_drops{0};   // groups left to their destructor with a throw
std::atomic<int>      stop{0};

// A capture whose lives are counted: constructed, copied and moved ones add one,
// destroyed ones take one away; destroyed twice is a failure of its own.
struct tracked {
    uint64_t key;
    bool     live = true;
    explicit tracked(uint64_t k) : key(k) { live_captures.fetch_add(1, std::memory_order_relaxed); }
    tracked(const tracked &o) : key(o.key) { live_captures.fetch_add(1, std::memory_order_relaxed); }
    tracked &operator=(const tracked &) = delete;
    ~tracked() {
        CHECK(live, "a capture destroyed twice (key %" PRIx64 ")", key);
        live = false;
        live_captures.fetch_sub(1, std::memory_order_relaxed);
    }
};

// Takes frame memory from ctx and fills it with key's pattern; checked by intact().
uint64_t *take(kiln_ctx *ctx, size_t words, uint64_t key) {
    auto *p = static_cast<uint64_t *>(kiln_frame_alloc(ctx, words * 8, 8));
    CHECK(p != nullptr, "kiln_frame_alloc of %zu words", words);
    if (p)
        for (size_t i = 0; i < words; i++) p[i] = mix(key + i);
    return p;
}

void intact(const uint64_t *p, size_t words, uint64_t key) {
    if (!p) return;
    size_t bad = 0;
    for (size_t i = 0; i < words; i++) bad += p[i] != mix(key + i);
    CHECK(bad == 0, "%zu of %zu frame words overwritten (key %" PRIx64 ")", bad, words, key);
}

constexpr int OUTER = 6, LEAF = 3;   // middles per round, leaves per middle

// A leaf job: frame memory, sometimes a parallel_for over frame memory, sometimes throws.
bool throws(uint64_t key) { return (key >> 24) % 16 == 0; }

void leaf(kiln_ctx *ctx, uint64_t key) {
    jobs_run.fetch_add(1, std::memory_order_relaxed);
    size_t words = 8 + (key & 63);
    uint64_t *mine = take(ctx, words, key);
    if ((key >> 8) % 4 == 0) {
        size_t n = 64 + (key >> 16) % 256;
        kiln::parallel_for(ctx, n, 16, [key](kiln_ctx *range_ctx, size_t b, size_t e) {
            uint64_t *scratch = take(range_ctx, e - b, key ^ b);
            intact(scratch, e - b, key ^ b);
            pfor_indices.fetch_add(e - b, std::memory_order_relaxed);
        });
    }
    intact(mine, words, key);
    if (throws(key)) {
        thrown.fetch_add(1, std::memory_order_relaxed);
        throw std::runtime_error("leaf");
    }
}

// A middle job: its own group of leaves, waited on (or left to the destructor). Which
// leaves throw follows from their keys, so every exception is accounted for: one
// rethrown by wait() and the rest in exceptions_dropped(), or one dropped by the
// destructor.
void middle(kiln_ctx *ctx, uint64_t key) {
    jobs_run.fetch_add(1, std::memory_order_relaxed);
    uint64_t *mine = take(ctx, 32, key);
    size_t throwers = 0;
    {
        kiln::task_group g(ctx);
        for (int l = 0; l < LEAF; l++) {
            tracked t(mix(key + static_cast<uint64_t>(l)));
            throwers += throws(t.key);
            g.run([t](kiln_ctx *c) { leaf(c, t.key); });
        }
        if (key % 3 != 0) {
            size_t caught = 0;
            try {
                g.wait();
            } catch (const std::runtime_error &) {
                caught = 1;
            }
            CHECK(caught + g.exceptions_dropped() == throwers,
                  "%zu rethrown, %zu dropped of %zu thrown", caught, g.exceptions_dropped(), throwers);
        } else if (throwers > 0) {
            destructor_drops.fetch_add(1, std::memory_order_relaxed);
        }
    }
    intact(mine, 32, key);
}

// One round: a group of middles from ctx (the driver's or the loop thread's), each in a
// closure with a tracked capture and some frame memory of its own copy.
void round(kiln_ctx *ctx, uint64_t key) {
    kiln::task_group g(ctx);
    for (int o = 0; o < OUTER; o++) {
        tracked t(mix(key + 100 + static_cast<uint64_t>(o)));
        g.run([t](kiln_ctx *c) { middle(c, t.key); }, o % 2 ? KILN_PRIORITY_HIGH : KILN_PRIORITY_NORMAL);
    }
    uint64_t *mine = take(ctx, 16, key);
    g.wait();   // middles never throw: what leaves throw stops at their middle
    intact(mine, 16, key);
}

// An attached thread with a frame loop of its own: a round, then a reset of its frame
// arena (the group was waited on before it, as task_group's lifetime rule asks).
void loop_thread(kiln_runtime *rt, uint64_t seed, uint64_t *rounds) {
    kiln_ctx *ctx = kiln_attach(rt);
    CHECK(ctx != nullptr, "kiln_attach of the loop thread");
    if (!ctx) return;
    uint64_t n = 0;
    while (!stop.load(std::memory_order_acquire)) {
        round(ctx, mix(seed ^ (0x1000000ull + n)));
        kiln_arena_reset(kiln_frame_arena(ctx));
        n++;
    }
    kiln_detach(ctx);
    *rounds = n;
}

} // namespace

int main(int argc, char **argv) {
    options opt;
    if (!parse(argc, argv, opt)) {
        std::fprintf(stderr, "usage: %s [--threads N] [--iterations N] [--seed S]\n"
                             "  defaults: --threads 4 --iterations 200 --seed 1\n", argv[0]);
        return 2;
    }
    double start = seconds();
    kiln_desc desc{};
    desc.worker_count = opt.threads;
    desc.debug = KILN_DEBUG_CHECKS;
    desc.log = log_fn;
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = rt ? kiln_attach(rt) : nullptr;
    if (!ctx) {
        std::fprintf(stderr, "FAIL: kiln_create or kiln_attach failed\n");
        return 2;
    }
    uint64_t loop_rounds = 0;
    std::thread loop(loop_thread, rt, opt.seed, &loop_rounds);
    for (uint64_t f = 1; f <= opt.iterations; f++) {
        kiln_frame_begin(ctx);
        round(ctx, mix(opt.seed ^ f));
        // Now and then a group is left running into frame end, which runs it first.
        kiln::task_group late(ctx);
        late.run([t = tracked(mix(f))](kiln_ctx *c) { middle(c, t.key); });
        if (f % 2) late.wait();
        kiln_frame_end(ctx);
    }
    stop.store(1, std::memory_order_release);
    loop.join();

    uint64_t middles = (opt.iterations * (OUTER + 1)) + loop_rounds * OUTER;
    uint64_t expected_jobs = middles * (1 + LEAF);
    CHECK(jobs_run.load() == expected_jobs, "%" PRIu64 " jobs ran, %" PRIu64 " expected",
          jobs_run.load(), expected_jobs);
    CHECK(live_captures.load() == 0, "%ld captures alive at the end", live_captures.load());
    CHECK(kiln::task_group::dropped_at_destruction() == destructor_drops.load(),
          "%zu exceptions dropped by destructors, %" PRIu64 " expected",
          kiln::task_group::dropped_at_destruction(), destructor_drops.load());
    CHECK(opt.iterations < 50 || (thrown.load() > 0 && pfor_indices.load() > 0),
          "%" PRIu64 " thrown, %" PRIu64 " parallel_for indices", thrown.load(), pfor_indices.load());
    kiln_detach(ctx);
    kiln_destroy(rt);

    uint64_t n = failures.load();
    std::printf("stress-cpp: %s: threads %u, frames %" PRIu64 ", seed %" PRIu64 ", %.2fs | %" PRIu64
                " jobs, %" PRIu64 " loop rounds, %" PRIu64 " thrown, %" PRIu64
                " parallel_for indices, %zu dropped by destructors | %" PRIu64 " failures\n",
                n ? "FAILED" : "ok", opt.threads, opt.iterations, opt.seed, seconds() - start,
                jobs_run.load(), loop_rounds, thrown.load(), pfor_indices.load(),
                kiln::task_group::dropped_at_destruction(), n);
    return n ? 1 : 0;
}
