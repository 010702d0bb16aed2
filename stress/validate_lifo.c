/* stress/validate_lifo.c — kiln_lifo's contract (alloc/lifo.h) on its own: any number
 * of threads push, push_chain and pop one fixed set of nodes at once, and no node is
 * ever held by two threads, lost, or on the stack twice (the ABA corruption a Treiber
 * stack without its generation tag suffers).
 *
 * Each node carries a holder word (0 while on the stack, else the holding thread's
 * id + 1), swapped on every pop and before every push: a pop that returns a node
 * another thread holds, or a holder that finds its word changed, is a failure. The
 * holder also stamps the node (a plain field) and checks the stamp before it lets go:
 * under ThreadSanitizer an unordered hand-over shows as a race on that field.
 *
 * Two phases, each on a fresh stack:
 *   hot   threads / 2 + 1 nodes, each thread holds at most two: the same few nodes
 *         cycle through the top and the stack often runs empty; the ABA case (a popper
 *         descheduled between reading top->next and its CAS while others pop that top,
 *         pop its successor and push the top back) has its best chance
 *   deep  32 nodes per thread, each thread holds up to 32 and gives some back as one
 *         chain (kiln_lifo_push_chain)
 * At the end of each phase main pops the stack empty: it must hold every node exactly
 * once, the depth each pop reports must count down to 0, and the tag's pop count must
 * equal the pops the threads made plus main's.
 * Usage: validate-lifo [--threads N] [--iterations N] [--seed S]; --iterations counts
 * the operations of each thread in each phase. Exit status 0 when every check held. */
#include "stress_common.h"   /* first: it sets the feature macros */

#include "alloc/lifo.h"
#include <pthread.h>

enum {
    DEEP_PER_THREAD = 32,   /* nodes per thread in the deep phase, and the most one holds */
    HOLD_MAX        = DEEP_PER_THREAD,
};

typedef struct node {
    kiln_lifo_node    link;      /* first: the LIFO's link word */
    _Atomic unsigned  holder;    /* 0 on the stack, else the holding thread's id + 1 */
    uint64_t          stamp;     /* written by the holder; checked before it lets go */
    bool              drained;   /* main only: seen by the final drain */
} node;

typedef struct worker {
    pthread_t  thread;
    unsigned   id;
    stress_rng rng;
    node      *held[HOLD_MAX];
    uint64_t   stamps[HOLD_MAX];
    unsigned   count;
    /* Results, read by main after the join. */
    uint64_t   pops, empty_pops, pushes, chains;
} worker;

/* The stack every thread shares and its nodes, rebuilt for each phase by main. */
static kiln_lifo         lifo;
static node             *nodes;
static size_t            node_count;
static unsigned          hold;          /* the most nodes one thread holds */
static stress_options    opt;
static pthread_barrier_t start_line;

static size_t node_index(const node *n) { return (size_t)(n - nodes); }

static uint64_t stamp_of(const worker *w, uint64_t op) {
    return stress_mix(((uint64_t)w->id << 48) ^ op ^ opt.seed);
}

/* ---- one thread's operations ---------------------------------------------------- */

static void pop_one(worker *w, uint64_t op) {
    uint64_t depth = 0;
    kiln_lifo_node *got = kiln_lifo_pop_depth(&lifo, &depth);
    if (!got) {
        w->empty_pops++;
        return;
    }
    w->pops++;
    node *n = (node *)(void *)got;
    if (n < nodes || n >= nodes + node_count) {
        stress_fail("thread %u popped %p, which is none of the %zu nodes", w->id, (void *)got,
                    node_count);
        return;
    }
    STRESS_CHECK(depth < node_count, "thread %u: pop left depth %" PRIu64 " of %zu nodes",
                 w->id, depth, node_count);
    unsigned was = kiln_exchange_relaxed(&n->holder, w->id + 1);
    if (was != 0)
        stress_fail("node %zu popped by thread %u while thread %u holds it: the stack handed "
                    "out a node that was not on it", node_index(n), w->id, was - 1);
    n->stamp = stamp_of(w, op);
    w->stamps[w->count] = n->stamp;
    w->held[w->count++] = n;
}

/* Lets go of held node j: its stamp and holder word must be as this thread left them. */
static node *release_one(worker *w, unsigned j) {
    node *n = w->held[j];
    STRESS_CHECK(n->stamp == w->stamps[j], "node %zu held by thread %u: its stamp changed "
                 "while held (0x%016" PRIx64 ", not 0x%016" PRIx64 "): another thread wrote it",
                 node_index(n), w->id, n->stamp, w->stamps[j]);
    unsigned was = kiln_exchange_relaxed(&n->holder, 0);
    STRESS_CHECK(was == w->id + 1, "node %zu held by thread %u: its holder word is %u (0: "
                 "on the stack, else a thread id + 1): another thread took it meanwhile",
                 node_index(n), w->id, was);
    w->held[j] = w->held[w->count - 1];
    w->stamps[j] = w->stamps[w->count - 1];
    w->count--;
    return n;
}

static void push_one(worker *w) {
    unsigned j = (unsigned)stress_below(&w->rng, w->count);
    kiln_lifo_push(&lifo, &release_one(w, j)->link);
    w->pushes++;
}

/* Gives back every held node as one chain, linked here, pushed by one CAS. */
static void push_all_as_chain(worker *w) {
    uint64_t count = w->count;
    node *first = release_one(w, w->count - 1), *last = first;
    while (w->count > 0) {
        node *n = release_one(w, w->count - 1);
        last->link.next = &n->link;
        last = n;
    }
    kiln_lifo_push_chain(&lifo, &first->link, &last->link, count);
    w->pushes += count;
    w->chains++;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(&start_line);
    for (uint64_t i = 0; i < opt.iterations; i++) {
        uint64_t r = stress_next(&w->rng);
        if (w->count < hold && (w->count == 0 || r % 100 < 50)) pop_one(w, i);
        else if (w->count >= 2 && (r >> 32) % 8 == 0) push_all_as_chain(w);
        else push_one(w);
    }
    while (w->count > 0) push_one(w);
    return NULL;
}

/* ---- one phase ------------------------------------------------------------------ */

typedef struct phase_result {
    uint64_t pops, empty_pops, chains;
    double   seconds;
} phase_result;

/* With the threads gone: pops the stack empty; every node must come off exactly once,
 * with its holder word 0, and each pop must report one node fewer. */
static uint64_t drain_and_check(const char *name) {
    STRESS_CHECK(kiln_lifo_depth(&lifo) == node_count, "%s: depth %" PRIu64 " with every "
                 "one of the %zu nodes given back", name, kiln_lifo_depth(&lifo), node_count);
    size_t seen = 0;
    uint64_t depth = 0;
    for (kiln_lifo_node *got; seen <= node_count && (got = kiln_lifo_pop_depth(&lifo, &depth));) {
        node *n = (node *)(void *)got;
        seen++;
        if (n < nodes || n >= nodes + node_count) {
            stress_fail("%s: the drain popped %p, which is none of the nodes", name, (void *)got);
            break;
        }
        STRESS_CHECK(!n->drained, "%s: node %zu is on the stack twice", name, node_index(n));
        STRESS_CHECK(kiln_load_relaxed(&n->holder) == 0, "%s: node %zu is on the stack but "
                     "thread %u holds it", name, node_index(n), kiln_load_relaxed(&n->holder) - 1);
        STRESS_CHECK(depth == node_count - seen, "%s: pop %zu of the drain reported depth %"
                     PRIu64 ", not %zu", name, seen, depth, node_count - seen);
        n->drained = true;
    }
    STRESS_CHECK(seen == node_count, "%s: the drain popped %s%zu nodes of %zu", name,
                 seen > node_count ? "more than " : "", seen > node_count ? node_count : seen,
                 node_count);
    for (size_t i = 0; i < node_count; i++)
        STRESS_CHECK(nodes[i].drained, "%s: node %zu was lost (never came off the stack)",
                     name, i);
    return seen;
}

static phase_result run_phase(const char *name, unsigned phase, size_t count, unsigned most) {
    phase_result result = { 0 };
    node_count = count;
    hold = most;
    nodes = calloc(count, sizeof *nodes);
    worker *workers = calloc(opt.threads, sizeof *workers);
    if (!nodes || !workers) {
        stress_fail("%s: no memory for %zu nodes and %u workers", name, count, opt.threads);
        exit(2);
    }
    lifo = (kiln_lifo){ 0 };
    /* The first half one by one, the rest as one chain. */
    size_t half = count / 2;
    for (size_t i = 0; i < half; i++) kiln_lifo_push(&lifo, &nodes[i].link);
    for (size_t i = half; i + 1 < count; i++) nodes[i].link.next = &nodes[i + 1].link;
    kiln_lifo_push_chain(&lifo, &nodes[half].link, &nodes[count - 1].link, count - half);

    pthread_barrier_init(&start_line, NULL, opt.threads);
    double start = stress_seconds();
    for (unsigned t = 0; t < opt.threads; t++) {
        workers[t].id = t;
        workers[t].rng = stress_rng_make(opt.seed, (uint64_t)phase * 1000 + t);
        if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]) != 0) {
            stress_fail("%s: pthread_create failed", name);
            exit(2);
        }
    }
    for (unsigned t = 0; t < opt.threads; t++) pthread_join(workers[t].thread, NULL);
    result.seconds = stress_seconds() - start;
    pthread_barrier_destroy(&start_line);

    uint64_t pushes = 0;
    for (unsigned t = 0; t < opt.threads; t++) {
        result.pops += workers[t].pops;
        result.empty_pops += workers[t].empty_pops;
        result.chains += workers[t].chains;
        pushes += workers[t].pushes;
    }
    STRESS_CHECK(pushes == result.pops, "%s: %" PRIu64 " pushes for %" PRIu64 " pops", name,
                 pushes, result.pops);
    uint64_t drained = drain_and_check(name);
    uint64_t want = (result.pops + drained) & KILN_LIFO_POPS_MASK;
    STRESS_CHECK(kiln_lifo_pops(&lifo) == want, "%s: the tag counts %" PRIu64 " pops, the "
                 "threads and the drain made %" PRIu64, name, kiln_lifo_pops(&lifo), want);
    free(workers);
    free(nodes);
    nodes = NULL;
    return result;
}

int main(int argc, char **argv) {
    opt = (stress_options){ .threads = 4, .iterations = 1000000, .seed = 1 };
    if (!stress_parse(argc, argv, &opt)) return 2;
    struct {
        const char *name;
        size_t      nodes;
        unsigned    hold;
    } phases[] = {
        { "hot", (size_t)opt.threads / 2 + 1, 2 },
        { "deep", (size_t)opt.threads * DEEP_PER_THREAD, HOLD_MAX },
    };
    double start = stress_seconds();
    char summary[512];
    size_t used = 0;
    uint64_t total_pops = 0;
    for (unsigned p = 0; p < sizeof phases / sizeof phases[0]; p++) {
        phase_result r = run_phase(phases[p].name, p, phases[p].nodes, phases[p].hold);
        total_pops += r.pops;
        used += (size_t)snprintf(summary + used, sizeof summary - used,
                                 " | %s: %zu nodes, %" PRIu64 " pops, %" PRIu64 " empty, %"
                                 PRIu64 " chains, %.2fs", phases[p].name, phases[p].nodes,
                                 r.pops, r.empty_pops, r.chains, r.seconds);
        if (used >= sizeof summary) used = sizeof summary - 1;   /* truncated, never past */
    }
    uint64_t failures = stress_failure_count();
    printf("validate-lifo: %s: threads %u, iterations %" PRIu64 ", seed %" PRIu64 ", %" PRIu64
           " pops in %.2fs%s, %" PRIu64 " failures\n", failures ? "FAILED" : "ok", opt.threads,
           opt.iterations, opt.seed, total_pops, stress_seconds() - start, summary, failures);
    return failures ? 1 : 0;
}
