/* base/symbol.h — the name of the function an address lies in, found with open(2),
 * pread(2) and close(2) alone (no malloc, no lock, no stdio, no dynamic linker), so a
 * signal handler may ask: the mapping that holds the address (/proc/self/maps), then the
 * symbol table of that mapping's ELF file on disk (.symtab, or .dynsym when stripped).
 * The crash report names each running job's function with it. Never installed. */
#ifndef KILN_BASE_SYMBOL_H
#define KILN_BASE_SYMBOL_H

#include <stdbool.h>

#include "common.h"

/* The function symbol that holds address: its name (cut to cap - 1 bytes, NUL-ended)
 * into name and the address's offset from its start into *offset; false when it cannot
 * be told (no /proc, no file, a stripped object, no function there). Writes name's cap
 * bytes at most and uses under 2 KiB of stack. Async-signal-safe. Concurrency: any
 * thread. */
KILN_INTERNAL bool kiln_symbol_name(uintptr_t address, char *name, size_t cap,
                                    uintptr_t *offset);

#endif /* KILN_BASE_SYMBOL_H */
