/* tests/malloc/survive_tls.c — libsurvive-tls.so: a dlopened module's thread-local
 * storage, which glibc allocates with malloc on each thread's first touch. */
static __thread int values[2048];

__attribute__((visibility("default"))) int *survive_tls_touch(int i) {
    values[i % 2048] = i;
    return &values[i % 2048];
}
