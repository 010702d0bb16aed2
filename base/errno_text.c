/* base/errno_text.c — errno's text without the locale (base/log.h). */
#define _GNU_SOURCE   /* strerrordesc_np */
#include "log.h"

#include <string.h>

const char *kiln_errno_text(int error) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *text = strerrordesc_np(error);   /* glibc's untranslated table */
    return text ? text : "unknown error";
#else
    return strerror(error);
#endif
}
