/* base/symbol.h — the name of the function an address lies in, found with system calls
 * alone (open, read, pread, close; no malloc, no lock, no stdio, no dynamic linker), so a
 * signal handler may ask: the mapping that holds the address (/proc/self/maps), then the
 * symbol table of exactly the file mapped there (opened through
 * /proc/self/map_files, so a renamed, deleted or replaced file is still the one read;
 * .symtab, or .dynsym when stripped). Only a function symbol with a size that holds the
 * address names it: an address in code no sized symbol covers (a PLT entry, assembly
 * without .size, a stripped static function) gets no name rather than a wrong one.
 * A file rewritten in place while mapped (cp over it) is read as it is now.
 *
 * The reading goes through one scratch area of static storage (64 KiB of symbols per
 * pread), taken with an atomic flag: a second caller at the same instant gets no name.
 * The crash report names each running job's function with it. Never installed. */
#ifndef KILN_BASE_SYMBOL_H
#define KILN_BASE_SYMBOL_H

#include <stdbool.h>

#include "common.h"

/* The function symbol that holds address: its name (cut to cap - 1 bytes ending in
 * "...", NUL-ended) into name and the address's offset from its start into *offset;
 * false when it cannot be told (no /proc, no file, a stripped object, no sized function
 * there, the scratch area busy). Writes name's cap bytes at most; under 256 bytes of
 * stack. Async-signal-safe. Concurrency: any thread. */
KILN_INTERNAL bool kiln_symbol_name(uintptr_t address, char *name, size_t cap,
                                    uintptr_t *offset);

#endif /* KILN_BASE_SYMBOL_H */
