// examples/cpp/frame_loop.cpp — a frame loop the way a C++ engine writes it on kiln:
// a kiln::frame scope per frame, per-frame scratch in frame_vectors filled by a
// parallel_for, long-lived objects from a typed pool, references to them through typed
// handles that go stale safely when an object dies.
//
//   frame-loop-cpp [FRAMES [ENTITIES]]   (defaults: 120 frames, 2000 entities)
#include <kiln/kiln.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct transform {
    float x, y, vx, vy;
};

struct enemy {
    kiln::handle<transform> body;   // a reference that may outlive the transform
    int hp;
};

}   // namespace

int main(int argc, char **argv) {
    int frames = argc > 1 ? std::atoi(argv[1]) : 120;
    size_t count = argc > 2 ? (size_t)std::atoll(argv[2]) : 2000;
    if (frames <= 0 || count == 0) {
        std::fprintf(stderr, "usage: frame-loop-cpp [FRAMES [ENTITIES]]\n");
        return 2;
    }

    kiln::runtime rt;                     // kiln_create(NULL): a worker per spare core
    kiln::context main_ctx(rt.get());     // this thread's context
    kiln::handle_table<transform> bodies(rt.get(), "bodies", (uint32_t)count);
    kiln::pool<enemy> enemies(rt.get(), "enemies");

    std::vector<enemy *> alive;
    for (size_t i = 0; i < count; i++) {
        kiln::handle<transform> h = bodies.alloc(main_ctx.get());
        if (transform *t = bodies.get(h)) *t = transform{ (float)i, 0.0f, 1.0f, 0.5f };
        alive.push_back(enemies.create(main_ctx.get(), enemy{ h, 3 }));
    }

    double checksum = 0;
    for (int f = 0; f < frames; f++) {
        kiln::frame frame(main_ctx.get());   // kiln_frame_begin .. kiln_frame_end

        // Per-frame scratch: positions gathered in parallel into frame memory, gone at
        // the end of the frame with no free call.
        kiln::frame_vector<float> xs(alive.size(), 0.0f, kiln::frame_allocator<float>(main_ctx.get()));
        kiln::parallel_for(main_ctx.get(), alive.size(), 0,
                           [&](kiln_ctx *, size_t begin, size_t end) {
                               for (size_t i = begin; i < end; i++) {
                                   transform *t = bodies.get(alive[i]->body);
                                   if (!t) continue;   // its body died: a stale handle, not a crash
                                   t->x += t->vx;
                                   t->y += t->vy;
                                   xs[i] = t->x;
                               }
                           });
        for (float x : xs) checksum += x;

        // Every tenth frame an enemy dies: its body goes back to the table, and a
        // handle anyone kept to it reads as stale from now on.
        if (f % 10 == 9 && !alive.empty()) {
            enemy *dead = alive.back();
            alive.pop_back();
            bodies.free(main_ctx.get(), dead->body);
            enemies.destroy(main_ctx.get(), dead);
        }
    }

    for (enemy *e : alive) {
        bodies.free(main_ctx.get(), e->body);
        enemies.destroy(main_ctx.get(), e);
    }
    std::printf("frame-loop-cpp: %d frames, %zu entities left, checksum %.1f\n", frames,
                alive.size(), checksum);
    return 0;
}
