/* runtime/crash.h — the crash report (desc.crash_file): the report's text, written with
 * write(2) alone, and the process's fatal-signal handlers that write it for every runtime
 * that asked, chained to the handlers installed before them. Never installed. */
#ifndef KILN_RUNTIME_CRASH_H
#define KILN_RUNTIME_CRASH_H

#include "types.h"

/* kiln_create, once the runtime is whole: opens desc.crash_file (appending), renders the
 * effective options for the report, and joins the runtime to the handlers (installing
 * them for the first). false, logged (CRASH_FILE_FAILED, CRASH_REPORTERS_FULL), when the
 * file cannot be opened or KILN_CRASH_RUNTIMES runtimes report already. Nothing without
 * a crash_file. The creating thread. */
KILN_INTERNAL bool kiln_crash_init(kiln_runtime *rt);

/* kiln_destroy: leaves the handlers (the last one restores the handlers found at
 * install, where they are still kiln's) and closes the file. */
KILN_INTERNAL void kiln_crash_fini(kiln_runtime *rt);

#endif /* KILN_RUNTIME_CRASH_H */
