/* tests/malloc/sanitized_client.c — a correct program on the malloc shape, built with the
 * sanitizers (scripts/test-all.sh runs it in the ASan+UBSan build, LeakSanitizer on): it
 * must exit 0 with no report, although kiln's process runtime is never destroyed (what
 * it holds is reachable, so not leaked). */
#include <kiln/kiln.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *worker(void *arg) {
    (void)arg;
    char *p = kiln_malloc(100);
    memset(p, 1, 100);
    return p;   /* freed by main */
}

int main(void) {
    char *p = kiln_calloc(10, 10);
    p = kiln_realloc(p, 100000);
    pthread_t thread;
    void *theirs = NULL;
    if (pthread_create(&thread, NULL, worker, NULL) != 0 || pthread_join(thread, &theirs) != 0) return 1;
    kiln_free(theirs);
    kiln_free(p);
    puts("sanitized-client: ok");
    return 0;
}
