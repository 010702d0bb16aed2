// bench/tbb_arena.cpp — opens and closes the oneTBB side of one thread count
// (tbb_arena.hpp) for the job programs' C code.
#include "tbb_arena.hpp"

#include <cstdio>
#include <exception>

extern "C" {
void *jb_tbb_open(int threads, char *err, size_t err_size);
void  jb_tbb_close(void *handle);
int   jb_tbb_concurrency(void *handle);
}

extern "C" void *jb_tbb_open(int threads, char *err, size_t err_size) {
    try {
        jb_tbb_side *side = new jb_tbb_side(threads);
        side->arena.initialize();
        return side;
    } catch (const std::exception &e) {
        std::snprintf(err, err_size, "oneTBB set-up failed: %s", e.what());
    } catch (...) {
        std::snprintf(err, err_size, "oneTBB set-up failed");
    }
    return nullptr;
}

extern "C" void jb_tbb_close(void *handle) { delete jb_tbb_side_of(handle); }

extern "C" int jb_tbb_concurrency(void *handle) {
    return jb_tbb_side_of(handle)->arena.execute(
        [] { return tbb::this_task_arena::max_concurrency(); });
}
