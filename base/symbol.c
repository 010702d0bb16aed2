/* base/symbol.c — an address's function name from the ELF file it was loaded from
 * (base/symbol.h), with system calls alone. */
#define _GNU_SOURCE   /* pread */
#include "symbol.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>   /* ElfW: the process's own ELF class */
#include <string.h>
#include <unistd.h>

#define SYMBOLS_PER_READ 32   /* 32 x 24 bytes on the stack per pread */

static bool read_at(int fd, void *buf, size_t size, uint64_t at) {
    return pread(fd, buf, size, (off_t)at) == (ssize_t)size;
}

/* ---- /proc/self/maps: which file holds an address, and where in it ---- */

typedef struct line_reader {
    int    fd;
    size_t length, at;
    char   buf[512];
} line_reader;

/* The next line of the file into line (cut at cap - 1 bytes, NUL-ended): false at its end. */
static bool next_line(line_reader *r, char *line, size_t cap) {
    size_t used = 0;
    for (;;) {
        if (r->at == r->length) {
            ssize_t n = read(r->fd, r->buf, sizeof r->buf);
            if (n <= 0) {
                line[used] = '\0';
                return used > 0;
            }
            r->length = (size_t)n;
            r->at = 0;
        }
        char c = r->buf[r->at++];
        if (c == '\n') break;
        if (used + 1 < cap) line[used++] = c;
    }
    line[used] = '\0';
    return true;
}

static uintptr_t parse_hex(const char **p) {
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (digit < 0) return v;
        v = v * 16 + (uintptr_t)digit;
    }
}

static const char *skip_field(const char *p) {
    while (*p && *p != ' ') p++;
    while (*p == ' ') p++;
    return p;
}

/* The mapped file that holds address (a line "start-end perms offset dev inode path"):
 * its path into line, and the address's offset in that file. */
static bool find_mapping(uintptr_t address, char *line, size_t cap, uint64_t *file_offset) {
    line_reader r = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
    if (r.fd < 0) return false;
    bool found = false;
    while (!found && next_line(&r, line, cap)) {
        const char *p = line;
        uintptr_t start = parse_hex(&p);
        if (*p++ != '-') continue;
        uintptr_t end = parse_hex(&p);
        if (address < start || address >= end) continue;
        p = skip_field(p);   /* to the offset */
        p = skip_field(p);
        uintptr_t offset = parse_hex(&p);
        p = skip_field(skip_field(skip_field(p)));   /* past offset, dev and inode */
        if (*p != '/') break;   /* anonymous, the stack, [vdso]: no file to read */
        *file_offset = address - start + offset;
        memmove(line, p, strlen(p) + 1);
        found = true;
    }
    close(r.fd);
    return found;
}

/* ---- the ELF file ---- */

/* The virtual address (as the file's symbols count) of a file offset: through the
 * loadable segment that holds it. */
static bool file_to_vaddr(int fd, const ElfW(Ehdr) *eh, uint64_t offset, uint64_t *vaddr) {
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        ElfW(Phdr) ph;
        if (!read_at(fd, &ph, sizeof ph, eh->e_phoff + (uint64_t)i * sizeof ph)) return false;
        if (ph.p_type == PT_LOAD && offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) {
            *vaddr = ph.p_vaddr + (offset - ph.p_offset);
            return true;
        }
    }
    return false;
}

/* The file's symbol table: .symtab, or .dynsym when the file is stripped. */
static bool find_symbols(int fd, const ElfW(Ehdr) *eh, ElfW(Shdr) *symbols, ElfW(Shdr) *names) {
    bool found = false;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        ElfW(Shdr) sh;
        if (!read_at(fd, &sh, sizeof sh, eh->e_shoff + (uint64_t)i * sizeof sh)) return false;
        if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !found)) {
            *symbols = sh;
            found = true;
            if (sh.sh_type == SHT_SYMTAB) break;
        }
    }
    if (!found || symbols->sh_entsize != sizeof(ElfW(Sym)) || symbols->sh_link >= eh->e_shnum)
        return false;
    return read_at(fd, names, sizeof *names, eh->e_shoff + (uint64_t)symbols->sh_link * sizeof *names);
}

/* Whether sym is a defined function that holds vaddr (one without a size holds what
 * lies above it, unless a sized one holds vaddr). */
static bool holds(const ElfW(Sym) *sym, uint64_t vaddr) {
    unsigned type = ELF64_ST_TYPE(sym->st_info);   /* the same bits in both classes */
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF) return false;
    return sym->st_value <= vaddr && (sym->st_size == 0 || vaddr < sym->st_value + sym->st_size);
}

static bool lookup(int fd, uint64_t offset, char *name, size_t cap, uintptr_t *from_start) {
    ElfW(Ehdr) eh;
    if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_shentsize != sizeof(ElfW(Shdr)))
        return false;
    uint64_t vaddr;
    ElfW(Shdr) symbols = { 0 }, names = { 0 };
    if (!file_to_vaddr(fd, &eh, offset, &vaddr) || !find_symbols(fd, &eh, &symbols, &names))
        return false;
    ElfW(Sym) best = { 0 };
    bool found = false;
    uint64_t count = symbols.sh_size / sizeof(ElfW(Sym));
    for (uint64_t first = 0; first < count; first += SYMBOLS_PER_READ) {
        ElfW(Sym) chunk[SYMBOLS_PER_READ];
        uint64_t n = count - first < SYMBOLS_PER_READ ? count - first : SYMBOLS_PER_READ;
        if (!read_at(fd, chunk, n * sizeof chunk[0], symbols.sh_offset + first * sizeof chunk[0]))
            return false;
        for (uint64_t i = 0; i < n; i++) {
            if (!holds(&chunk[i], vaddr)) continue;
            /* A sized symbol that holds it beats an unsized one; among those, the nearest. */
            bool better = !found || (chunk[i].st_size != 0 && best.st_size == 0) ||
                          ((chunk[i].st_size != 0) == (best.st_size != 0) &&
                           chunk[i].st_value > best.st_value);
            if (better) best = chunk[i];
            found = true;
        }
    }
    if (!found || best.st_name >= names.sh_size) return false;
    ssize_t got = pread(fd, name, cap - 1, (off_t)(names.sh_offset + best.st_name));
    if (got <= 0) return false;
    name[got] = '\0';   /* the name's own NUL, when it was read, ends it first */
    *from_start = (uintptr_t)(vaddr - best.st_value);
    return name[0] != '\0';
}

bool kiln_symbol_name(uintptr_t address, char *name, size_t cap, uintptr_t *offset) {
    if (!name || cap < 2 || !offset) return false;
    char path[512];
    uint64_t file_offset;
    if (!find_mapping(address, path, sizeof path, &file_offset)) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool found = lookup(fd, file_offset, name, cap, offset);
    close(fd);
    return found;
}
