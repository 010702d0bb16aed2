/* tests/malloc/survive_locale.c — a program whose first malloc happens inside setlocale,
 * which holds the C library's locale lock meanwhile: the process runtime is made there.
 * Run with LD_PRELOAD=libkiln-malloc.so and KILN_OPTIONS that make it log while it is
 * made (a log_file that cannot be opened): the log must not take that lock again (the C
 * library's error texts are translated under it), and every later setlocale must go on.
 * Prints "survive-locale: ok" and exits 0. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    if (!setlocale(LC_ALL, "")) setlocale(LC_ALL, "C");   /* the first malloc is in here */
    for (int i = 0; i < 3; i++) {
        setlocale(LC_ALL, "");
        setlocale(LC_CTYPE, "C");
        free(malloc(100));
    }
    puts("survive-locale: ok");
    return 0;
}
