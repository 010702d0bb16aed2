// bench/graph_tbb.cpp — the oneTBB peer of graph_bench (J5-J8), behind a small C
// interface so that its rounds alternate with kiln's and OpenMP's in one process.
// Every round runs in the phase's arena (tbb_arena.hpp); the leaf work is graph_bench.c's,
// the same functions every side calls.
//
// The functions below are declared again, with C linkage, at the top of graph_bench.c;
// the two lists must match (there is no header, on purpose: two files, one owner).
#include <tbb/flow_graph.h>
#include <tbb/task_group.h>

#include "tbb_arena.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>

extern "C" {
struct wave_grid {   // graph_bench.c's
    uint32_t *cells;
    size_t    stride;
    int       blocks;
    int       tile;
};

long   gb_queens_count(int n, uint32_t cols, uint32_t left, uint32_t right);
int    gb_uts_expand(uint64_t id, int depth, int max_depth, uint64_t *kids);
void   gb_sort_seq(int32_t *src, int32_t *dst, size_t n, int to_dst);
void   gb_merge_seq(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *out);
size_t gb_lower_bound(const int32_t *a, size_t n, int32_t value);
void   gb_wave_tile(const wave_grid *g, int bi, int bj);

long   gb_tbb_queens(void *handle, int n, int spawn_rows);
long   gb_tbb_uts(void *handle, uint64_t root, int max_depth);
void   gb_tbb_sort(void *handle, int32_t *data, int32_t *scratch, size_t n, size_t cutoff);
void   gb_tbb_wave(void *handle, const wave_grid *g);
void  *gb_tbb_wave_build(void *handle, const wave_grid *g);
void   gb_tbb_wave_run(void *handle, void *graph);
void   gb_tbb_wave_free(void *graph);
}

namespace {

constexpr int uts_max_children = 64;   // UTS_MAX_CHILDREN

// J5: a task per placement down to spawn_rows, each waiting for its children.
long queens(int n, int spawn_rows, int row, uint32_t cols, uint32_t left, uint32_t right) {
    if (row == spawn_rows) return gb_queens_count(n, cols, left, right);
    long counts[32];
    int count = 0;
    tbb::task_group g;
    for (uint32_t free = ((1u << n) - 1) & ~(cols | left | right); free; count++) {
        uint32_t bit = free & -free;
        free ^= bit;
        long *slot = &counts[count];
        g.run([=] {
            *slot = queens(n, spawn_rows, row + 1, cols | bit, (left | bit) << 1, (right | bit) >> 1);
        });
    }
    g.wait();
    long total = 0;
    for (int k = 0; k < count; k++) total += counts[k];
    return total;
}

// J6: a task per node, leaves included; the node count of the subtree.
long uts(uint64_t id, int depth, int max_depth) {
    uint64_t ids[uts_max_children];
    long nodes[uts_max_children];
    int count = gb_uts_expand(id, depth, max_depth, ids);
    if (count == 0) return 1;
    tbb::task_group g;
    for (int k = 0; k < count; k++)
        g.run([&ids, &nodes, k, depth, max_depth] { nodes[k] = uts(ids[k], depth + 1, max_depth); });
    g.wait();
    long total = 1;
    for (int k = 0; k < count; k++) total += nodes[k];
    return total;
}

// J7: the same halving and roles as graph_bench.c's sort_job and merge_job.
void merge(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t *out, size_t cutoff) {
    if (na < nb) {
        merge(b, nb, a, na, out, cutoff);
        return;
    }
    if (na + nb <= cutoff) {
        gb_merge_seq(a, na, b, nb, out);
        return;
    }
    size_t ma = na / 2, mb = gb_lower_bound(b, nb, a[ma]);
    tbb::task_group g;
    g.run([=] { merge(a, ma, b, mb, out, cutoff); });
    g.run([=] { merge(a + ma, na - ma, b + mb, nb - mb, out + ma + mb, cutoff); });
    g.wait();
}

void sort(int32_t *src, int32_t *dst, size_t n, int to_dst, size_t cutoff) {
    if (n <= cutoff) {
        gb_sort_seq(src, dst, n, to_dst);
        return;
    }
    size_t half = n / 2;
    tbb::task_group g;
    g.run([=] { sort(src, dst, half, !to_dst, cutoff); });
    g.run([=] { sort(src + half, dst + half, n - half, !to_dst, cutoff); });
    g.wait();
    int32_t *from = to_dst ? src : dst, *to = to_dst ? dst : src;
    merge(from, half, from + half, n - half, to, cutoff);
}

// J8: one continue_node per block; a node fires once each of its predecessors (top,
// left) has, and resets itself for the next run.
using block_node = tbb::flow::continue_node<tbb::flow::continue_msg>;

struct wave_graph {
    tbb::flow::graph       graph;
    std::deque<block_node> nodes;   // a deque: nodes neither move nor copy

    explicit wave_graph(const wave_grid *g) {
        const int nb = g->blocks;
        for (int i = 0; i < nb; i++)
            for (int j = 0; j < nb; j++)
                nodes.emplace_back(graph, [g, i, j](const tbb::flow::continue_msg &) {
                    gb_wave_tile(g, i, j);
                });
        for (int i = 0; i < nb; i++)
            for (int j = 0; j < nb; j++) {
                if (i > 0) tbb::flow::make_edge(nodes[(size_t)((i - 1) * nb + j)], nodes[(size_t)(i * nb + j)]);
                if (j > 0) tbb::flow::make_edge(nodes[(size_t)(i * nb + j - 1)], nodes[(size_t)(i * nb + j)]);
            }
    }

    void run() {
        nodes.front().try_put(tbb::flow::continue_msg());
        graph.wait_for_all();
    }
};

}  // namespace

extern "C" long gb_tbb_queens(void *handle, int n, int spawn_rows) {
    long result = 0;
    jb_tbb_side_of(handle)->arena.execute([&] { result = queens(n, spawn_rows, 0, 0, 0, 0); });
    return result;
}

extern "C" long gb_tbb_uts(void *handle, uint64_t root, int max_depth) {
    long result = 0;
    jb_tbb_side_of(handle)->arena.execute([&] { result = uts(root, 0, max_depth); });
    return result;
}

// The result lands in data; scratch as large.
extern "C" void gb_tbb_sort(void *handle, int32_t *data, int32_t *scratch, size_t n, size_t cutoff) {
    jb_tbb_side_of(handle)->arena.execute([&] { sort(data, scratch, n, 0, cutoff); });
}

// Built and run in one go (the round's time includes the graph's construction).
extern "C" void gb_tbb_wave(void *handle, const wave_grid *g) {
    jb_tbb_side_of(handle)->arena.execute([&] {
        wave_graph graph(g);
        graph.run();
    });
}

// Built in the arena, so that its runs' tasks go to the arena's threads.
extern "C" void *gb_tbb_wave_build(void *handle, const wave_grid *g) {
    wave_graph *graph = nullptr;
    jb_tbb_side_of(handle)->arena.execute([&] { graph = new wave_graph(g); });
    return graph;
}

extern "C" void gb_tbb_wave_run(void *handle, void *graph) {
    jb_tbb_side_of(handle)->arena.execute([&] { static_cast<wave_graph *>(graph)->run(); });
}

extern "C" void gb_tbb_wave_free(void *graph) { delete static_cast<wave_graph *>(graph); }
