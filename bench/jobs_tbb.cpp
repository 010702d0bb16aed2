// bench/jobs_tbb.cpp — the oneTBB peer of jobs_bench (J1, J2, J3), behind a small C
// interface so that its rounds alternate with kiln's and OpenMP's in one process.
//
// Thread count and the arena: tbb_arena.hpp (opened by tbb_arena.cpp).
//
// The functions below are declared again, with C linkage, at the top of jobs_bench.c;
// the two lists must match (there is no header, on purpose: two files, one owner).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>

#include "tbb_arena.hpp"

#include <cstddef>
#include <cstdint>

extern "C" {
// Defined in jobs_bench.c: the empty job's body, and the per-range sum of J3 (adds the
// range's sum to the calling thread's slot). Not inlined on any side.
void jb_empty(void);
void jb_range_add(const float *data, size_t begin, size_t end);

void  jb_tbb_j1(void *handle, int batches, int batch, uint64_t *stamps);
long  jb_tbb_fib(void *handle, int n);
void  jb_tbb_sum(void *handle, const float *data, size_t n, size_t grain);
}

namespace {

// J2: one task per recursive call, both children spawned, then wait (no cutoff).
long fib(int n) {
    if (n < 2) return n;
    long x = 0, y = 0;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    g.run([&] { y = fib(n - 2); });
    g.wait();
    return x + y;
}

}  // namespace

// J1: batches of `batch` empty tasks on one task_group, waited per batch; stamps[0] before
// the first batch, stamps[b + 1] after batch b.
extern "C" void jb_tbb_j1(void *handle, int batches, int batch, uint64_t *stamps) {
    jb_tbb_side_of(handle)->arena.execute([&] {
        tbb::task_group g;
        stamps[0] = jb_tbb_now_ns();
        for (int b = 0; b < batches; b++) {
            for (int i = 0; i < batch; i++) g.run([] { jb_empty(); });
            g.wait();
            stamps[b + 1] = jb_tbb_now_ns();
        }
    });
}

extern "C" long jb_tbb_fib(void *handle, int n) {
    long result = 0;
    jb_tbb_side_of(handle)->arena.execute([&] { result = fib(n); });
    return result;
}

// J3: simple_partitioner splits the range by halving down to `grain` elements.
extern "C" void jb_tbb_sum(void *handle, const float *data, size_t n, size_t grain) {
    jb_tbb_side_of(handle)->arena.execute([&] {
        tbb::parallel_for(
            tbb::blocked_range<size_t>(0, n, grain),
            [data](const tbb::blocked_range<size_t> &r) { jb_range_add(data, r.begin(), r.end()); },
            tbb::simple_partitioner());
    });
}
