/* bench/cpp_bench.cpp — C1: a frame of C++ containers. Every frame fills 10 000
 * vectors of 1-64 elements by push_back (sizes from a fixed seed, the same for every
 * entry) and drops them all at its end, with each allocator a C++ engine could use:
 *   - kiln::frame_allocator over the context's frame arena (the frame end frees all);
 *   - std::pmr::monotonic_buffer_resource over an upstream buffer, released per frame
 *     (the standard library's own frame allocator);
 *   - std::allocator's calls on glibc's malloc (looked up in libc itself: linking
 *     mimalloc replaces the process's malloc, see bench/harness.h);
 *   - mimalloc's STL allocator (mi_stl_allocator), when mimalloc is installed;
 *   - the floor: an inline pointer bump over one buffer, reset per frame (the vectors'
 *     own work with an allocator that costs nothing).
 * Figures: ns per push_back, medians of alternating rounds (../shared/BENCH.md method).
 *
 *   cpp_bench [--quick]     --quick: two frames per round, a few rounds (the test suite) */
#include <kiln/kiln.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory_resource>
#include <new>
#include <vector>

extern "C" {
#include "bench_config.h"
#include "harness.h"
}

#ifdef BENCH_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

namespace {

constexpr size_t vectors_per_frame = 10000;

struct run_size {
    int frames;   /* per round */
    int rounds;
};
constexpr run_size full_run = { 8, 15 };
constexpr run_size quick_run = { 2, 3 };

/* The sizes of one frame's vectors, 1-64, and their total. */
struct frame_plan {
    uint8_t sizes[vectors_per_frame];
    size_t  pushes = 0;
    frame_plan() {
        bench_rng rng = { 0x9e3779b97f4a7c15ull };
        for (size_t i = 0; i < vectors_per_frame; i++) {
            sizes[i] = (uint8_t)(1 + bench_rng_next(&rng) % 64);
            pushes += sizes[i];
        }
    }
};

frame_plan plan;
bench_malloc_fns glibc;
volatile uint64_t sink_sum;   /* keeps the work observable */

/* One frame's work with vectors of type Vec: construct, fill, read, destroy. */
template <class Vec, class MakeVec>
void fill_frame(MakeVec make) {
    alignas(Vec) static unsigned char storage[vectors_per_frame * sizeof(Vec)];
    Vec *vecs = reinterpret_cast<Vec *>(storage);
    for (size_t i = 0; i < vectors_per_frame; i++) {
        Vec *v = new (&vecs[i]) Vec(make());
        for (uint32_t k = 0; k < plan.sizes[i]; k++) v->push_back(k);
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < vectors_per_frame; i++) sum += vecs[i].back();
    for (size_t i = 0; i < vectors_per_frame; i++) vecs[i].~Vec();
    sink_sum = sink_sum + sum;
}

/* ---- kiln ---- */
struct kiln_state {
    kiln::runtime rt;
    kiln::context ctx;
    int frames;
    static kiln_desc one_thread() {
        kiln_desc d{};
        d.worker_count = KILN_NO_WORKERS;   /* one thread, as every other entry */
        return d;
    }
    explicit kiln_state(int f) : rt(one_thread()), ctx(rt.get()), frames(f) {}
};

void kiln_round(void *state, bench_series *s) {
    kiln_state *k = static_cast<kiln_state *>(state);
    using vec = kiln::frame_vector<uint32_t>;
    for (int f = 0; f < k->frames; f++) {
        uint64_t start = bench_now_ns();
        {
            kiln::frame frame(k->ctx.get());
            kiln_ctx *ctx = k->ctx.get();
            fill_frame<vec>([ctx] { return vec(kiln::frame_allocator<uint32_t>(ctx)); });
        }   /* kiln_frame_end: the frame's memory goes back at once */
        bench_add_sample(s, (double)(bench_now_ns() - start), (double)plan.pushes);
    }
}

/* ---- std::pmr::monotonic_buffer_resource ---- */
struct pmr_state {
    std::vector<unsigned char> upstream;   /* big enough for a frame: no upstream growth */
    int frames;
    explicit pmr_state(int f) : upstream((size_t)64 << 20), frames(f) {}
};

void pmr_round(void *state, bench_series *s) {
    pmr_state *p = static_cast<pmr_state *>(state);
    using vec = std::pmr::vector<uint32_t>;
    for (int f = 0; f < p->frames; f++) {
        uint64_t start = bench_now_ns();
        {
            std::pmr::monotonic_buffer_resource frame(p->upstream.data(), p->upstream.size(),
                                                      std::pmr::null_memory_resource());
            fill_frame<vec>([&frame] { return vec(&frame); });
        }   /* the resource's destructor is its release */
        bench_add_sample(s, (double)(bench_now_ns() - start), (double)plan.pushes);
    }
}

/* ---- the floor: an inline bump over one buffer, reset per frame ---- */
/* What no allocator can beat: allocate is a pointer bump the compiler inlines into
 * push_back's growth, with no call, no check and no bookkeeping. It tells how much of a
 * figure is the vectors' own work (push_back, the copies at each growth). */
struct floor_buffer {
    std::vector<unsigned char> bytes;
    size_t used = 0;
    floor_buffer() : bytes((size_t)64 << 20) {}
};

floor_buffer floor_memory;

template <class T>
struct floor_allocator {
    using value_type = T;
    floor_allocator() = default;
    template <class U> floor_allocator(const floor_allocator<U> &) {}
    T *allocate(size_t n) {
        size_t at = (floor_memory.used + alignof(T) - 1) & ~(alignof(T) - 1);
        floor_memory.used = at + n * sizeof(T);
        if (floor_memory.used > floor_memory.bytes.size()) throw std::bad_alloc();
        return reinterpret_cast<T *>(floor_memory.bytes.data() + at);
    }
    void deallocate(T *, size_t) {}
    template <class U> bool operator==(const floor_allocator<U> &) const { return true; }
    template <class U> bool operator!=(const floor_allocator<U> &) const { return false; }
};

struct plain_state {
    int frames;
};

void floor_round(void *state, bench_series *s) {
    plain_state *p = static_cast<plain_state *>(state);
    using vec = std::vector<uint32_t, floor_allocator<uint32_t>>;
    for (int f = 0; f < p->frames; f++) {
        uint64_t start = bench_now_ns();
        fill_frame<vec>([] { return vec(); });
        floor_memory.used = 0;   /* the frame's reset */
        bench_add_sample(s, (double)(bench_now_ns() - start), (double)plan.pushes);
    }
}

/* ---- std::allocator's calls on glibc's malloc ---- */
template <class T>
struct glibc_allocator {
    using value_type = T;
    glibc_allocator() = default;
    template <class U> glibc_allocator(const glibc_allocator<U> &) {}
    T *allocate(size_t n) {
        void *p = glibc.malloc(n * sizeof(T));
        if (!p) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t) { glibc.free(p); }
    template <class U> bool operator==(const glibc_allocator<U> &) const { return true; }
    template <class U> bool operator!=(const glibc_allocator<U> &) const { return false; }
};

void glibc_round(void *state, bench_series *s) {
    plain_state *p = static_cast<plain_state *>(state);
    using vec = std::vector<uint32_t, glibc_allocator<uint32_t>>;
    for (int f = 0; f < p->frames; f++) {
        uint64_t start = bench_now_ns();
        fill_frame<vec>([] { return vec(); });
        bench_add_sample(s, (double)(bench_now_ns() - start), (double)plan.pushes);
    }
}

#ifdef BENCH_HAVE_MIMALLOC
void mimalloc_round(void *state, bench_series *s) {
    plain_state *p = static_cast<plain_state *>(state);
    using vec = std::vector<uint32_t, mi_stl_allocator<uint32_t>>;
    for (int f = 0; f < p->frames; f++) {
        uint64_t start = bench_now_ns();
        fill_frame<vec>([] { return vec(); });
        bench_add_sample(s, (double)(bench_now_ns() - start), (double)plan.pushes);
    }
}

bool in_mimalloc(const void *p) { return mi_is_in_heap_region(p); }
#endif

}   // namespace

int main(int argc, char **argv) {
    const run_size *size = &full_run;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            size = &quick_run;
        } else {
            std::fprintf(stderr, "usage: cpp_bench [--quick]\n");
            return 2;
        }
    }
    std::printf("cpp_bench: %s run, malloc from %s\n", size == &quick_run ? "quick" : "full",
                bench_malloc_provider());
    bench_print_load();

    bench_workload w = {};
    w.title = "C1 a frame of C++ vectors (1 thread)";
    w.detail = "10 000 vectors of 1-64 uint32_t (same sizes for all) filled by push_back, "
               "dropped at frame end";
    w.op = "push_back";
    w.sample = "frame";
    w.rounds = size->rounds;

    kiln_state kiln_s(size->frames);
    pmr_state pmr_s(size->frames);
    plain_state plain_s = { size->frames };
    bench_add_entry(&w, "kiln::frame_allocator", kiln_round, &kiln_s);
    bench_add_entry(&w, "pmr::monotonic_buffer", pmr_round, &pmr_s);
    bench_add_entry(&w, "inline bump (the floor)", floor_round, &plain_s);
    char why[256];
#ifdef BENCH_HAVE_MIMALLOC
    bool (*foreign)(const void *) = in_mimalloc;
#else
    bool (*foreign)(const void *) = nullptr;
#endif
    if (bench_glibc_find(&glibc, foreign, why, sizeof why))
        bench_add_entry(&w, "std::allocator on glibc", glibc_round, &plain_s);
    else
        bench_add_skipped(&w, "std::allocator on glibc", "%s", why);
#ifdef BENCH_HAVE_MIMALLOC
    bench_add_entry(&w, "mi_stl_allocator", mimalloc_round, &plain_s);
#else
    bench_add_skipped(&w, "mi_stl_allocator", "mimalloc not found at configure time");
#endif
    bench_run(&w);
    bench_print(&w);
    bench_workload_free(&w);
    return 0;
}
