/* base/fault_signals.h — kiln's own threads take the fault signals: a thread made while
 * its creator blocked every signal (a program that takes its signals with sigwait) would
 * otherwise die of a fault in it without any handler running, for the kernel does not
 * queue a fault signal it cannot deliver. Never installed. */
#ifndef KILN_BASE_FAULT_SIGNALS_H
#define KILN_BASE_FAULT_SIGNALS_H

#include <pthread.h>
#include <signal.h>

/* Unblocks SIGSEGV, SIGBUS, SIGILL and SIGFPE on the calling thread (a new thread of
 * kiln's, first thing). The calling thread. */
static inline void kiln_take_fault_signals(void) {
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    sigaddset(&faults, SIGILL);
    sigaddset(&faults, SIGFPE);
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}

#endif /* KILN_BASE_FAULT_SIGNALS_H */
