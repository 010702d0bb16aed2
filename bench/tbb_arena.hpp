// bench/tbb_arena.hpp — the oneTBB side of one thread count, shared by the oneTBB peers
// of the job programs (jobs_tbb.cpp, graph_tbb.cpp); opened and closed by tbb_arena.cpp
// (jb_tbb_open / jb_tbb_close, declared in jobs_common.h).
//
// Thread count: a tbb::global_control(max_allowed_parallelism, T) alive for the whole
// phase, and every round runs inside a tbb::task_arena of concurrency T (the main thread
// plus T-1 workers). Without the arena, T above the core count would still get only the
// default arena's one-per-core concurrency.
#ifndef KILN_BENCH_TBB_ARENA_HPP
#define KILN_BENCH_TBB_ARENA_HPP

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

struct jb_tbb_side {
    tbb::global_control control;
    tbb::task_arena     arena;
    explicit jb_tbb_side(int threads)
        : control(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads)),
          arena(threads) {}
};

inline jb_tbb_side *jb_tbb_side_of(void *handle) { return static_cast<jb_tbb_side *>(handle); }

inline uint64_t jb_tbb_now_ns() {   // the clock of bench_now_ns
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

#endif  // KILN_BENCH_TBB_ARENA_HPP
