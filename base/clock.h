/* base/clock.h — the one clock kiln reads: CLOCK_MONOTONIC in nanoseconds (a vDSO call,
 * about 20 ns), for sleep accounting, frame times and trace timestamps. Never
 * installed. */
#ifndef KILN_BASE_CLOCK_H
#define KILN_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t kiln_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* KILN_BASE_CLOCK_H */
