/* base/futex.c — the futex system calls behind base/futex.h, the only place kiln makes
 * them. */
#define _GNU_SOURCE
#include "futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void kiln_futex_wait(_Atomic uint32_t *word, uint32_t expected, long timeout_ns) {
    struct timespec timeout = { 0, timeout_ns };
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &timeout, NULL, 0);
}

void kiln_futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}
