/* base/membarrier.c — membarrier(2) behind base/membarrier.h: registered once per
 * process (the private expedited command needs it), then one call per heavy fence. */
#define _GNU_SOURCE
#include "membarrier.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t registration = PTHREAD_ONCE_INIT;
static bool           registered;   /* written once under registration, read after it */

static void register_process(void) {
    registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

bool kiln_membarrier(void) {
    pthread_once(&registration, register_process);
    return registered && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}
