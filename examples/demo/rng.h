/* examples/demo/rng.h — the demo's random numbers: a counter-based generator, so that a
 * job on any thread, in any order, draws the same numbers for the same entity in the
 * same frame. That is what makes the kiln and the malloc runs play the same game. */
#ifndef KILN_DEMO_RNG_H
#define KILN_DEMO_RNG_H

#include <stdint.h>

typedef struct demo_rng { uint64_t state; } demo_rng;

/* splitmix64 (Steele, Lea, Flood: OOPSLA 2014): one add and a mix per number. */
static inline uint64_t demo_rng_next(demo_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A stream for one (seed, subject, frame): the subject is an entity's serial, or a
 * fixed tag for the world's own draws. */
static inline demo_rng demo_rng_for(uint64_t seed, uint64_t subject, uint64_t frame) {
    demo_rng r = { seed ^ (subject * 0xd1b54a32d192ed03ull) ^ (frame * 0xabc98388fb8fac03ull) };
    demo_rng_next(&r);
    return r;
}

static inline uint32_t demo_rng_below(demo_rng *r, uint32_t n) {
    return (uint32_t)(((demo_rng_next(r) >> 32) * n) >> 32);
}

/* Uniform in [lo, hi). */
static inline float demo_rng_float(demo_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)(demo_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

#endif /* KILN_DEMO_RNG_H */
