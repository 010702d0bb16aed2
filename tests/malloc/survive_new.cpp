// tests/malloc/survive_new.cpp — C++ on the preloaded library: every operator new and
// delete form goes to kiln's heap, the new_handler is called and bad_alloc thrown,
// thread_local objects that allocate as each thread sets them up, containers churned
// across threads. Exits 0 when all held.
#include <kiln/kiln.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <vector>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "survive-new: line %d: check failed: %s\n", __LINE__, #cond); \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

struct alignas(256) Wide {
    char bytes[300];
};

static thread_local std::vector<int> per_thread(1000, 7);   // allocates at TLS set-up
static thread_local std::string per_thread_name = std::string(200, 'x');

static volatile std::size_t huge_size = SIZE_MAX / 2;   // unseen by the compiler
static int handler_calls;
static void count_and_give_up() {
    handler_calls++;
    std::set_new_handler(nullptr);   // the next failure throws
}

int main() {
    int *one = new int(5);
    CHECK(kiln_heap_usable_size(one) != 0);   // kiln's heap served it
    delete one;
    int *many = new int[1000]();
    CHECK(many[999] == 0);
    delete[] many;
    Wide *w = new Wide;
    CHECK(reinterpret_cast<std::uintptr_t>(w) % 256 == 0);
    delete w;
    Wide *ws = new Wide[3];
    CHECK(reinterpret_cast<std::uintptr_t>(ws) % 256 == 0);
    delete[] ws;
    CHECK(new (std::nothrow) char[huge_size] == nullptr);
    std::set_new_handler(count_and_give_up);
    bool threw = false;
    try {
        char *huge = new char[huge_size];
        delete[] huge;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && handler_calls == 1);

    std::vector<std::thread> threads;
    std::vector<std::map<int, std::string>> maps(4);
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t, &maps] {
            CHECK(per_thread.size() == 1000 && per_thread[999] == 7);
            CHECK(per_thread_name.size() == 200);
            for (int i = 0; i < 20000; i++) maps[t][i % 500] = std::string(static_cast<size_t>(i % 300), 'a');
        });
    for (auto &t : threads) t.join();
    maps.clear();   // freed on this thread, allocated on theirs
    kiln_heap_stats s;
    CHECK(kiln_stats_heap(kiln_process_runtime(), &s) && s.bad_frees == 0);
    std::printf("survive-new: ok\n");
    return 0;
}
