/* base/symbol.c — an address's function name from the ELF file it was loaded from
 * (base/symbol.h), with system calls alone. */
#define _GNU_SOURCE   /* pread */
#include "symbol.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>   /* ElfW: the process's own ELF class */
#include <string.h>
#include <unistd.h>

#include "atomics.h"

#define SYMBOLS_PER_READ (65536 / sizeof(ElfW(Sym)))
#define MAPS_LINE 4096   /* a maps line holds a path of up to PATH_MAX */

/* The scratch area: one caller at a time (busy), static so that a signal handler on a
 * small alternate stack can use it. */
static struct {
    char      line[MAPS_LINE];
    char      maps[4096];
    ElfW(Sym) symbols[SYMBOLS_PER_READ];
} scratch;
static _Atomic int busy;

static bool read_at(int fd, void *buf, size_t size, uint64_t at) {
    return pread(fd, buf, size, (off_t)at) == (ssize_t)size;
}

/* ---- /proc/self/maps: which file holds an address, and where in it ---- */

typedef struct line_reader {
    int    fd;
    size_t length, at;
} line_reader;

/* The next line of maps into scratch.line: false at its end, or for a line longer than
 * the buffer (cut: its path would be another's). */
static bool next_line(line_reader *r, bool *whole) {
    size_t used = 0;
    *whole = true;
    for (;;) {
        if (r->at == r->length) {
            ssize_t n = read(r->fd, scratch.maps, sizeof scratch.maps);
            if (n <= 0) {
                scratch.line[used] = '\0';
                return used > 0;
            }
            r->length = (size_t)n;
            r->at = 0;
        }
        char c = scratch.maps[r->at++];
        if (c == '\n') break;
        if (used + 1 < sizeof scratch.line) scratch.line[used++] = c;
        else *whole = false;
    }
    scratch.line[used] = '\0';
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

/* The file mapped where address lies ("start-end perms offset dev inode path"), opened
 * through /proc/self/map_files/start-end (exactly the mapped file), and the address's
 * offset in it; -1 for none (anonymous, the stack, [vdso], no /proc). */
static int open_mapping(uintptr_t address, uint64_t *file_offset) {
    line_reader r = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
    if (r.fd < 0) return -1;
    int fd = -1;
    bool whole;
    while (fd < 0 && next_line(&r, &whole)) {
        const char *p = scratch.line;
        uintptr_t start = parse_hex(&p);
        if (*p++ != '-') continue;
        uintptr_t end = parse_hex(&p);
        if (address < start || address >= end) continue;
        size_t range = (size_t)(p - scratch.line);   /* "start-end" */
        p = skip_field(skip_field(p));               /* past the range and perms */
        uintptr_t offset = parse_hex(&p);
        p = skip_field(skip_field(skip_field(p)));   /* past offset, dev and inode */
        if (*p != '/') break;
        *file_offset = address - start + offset;
        char path[64] = "/proc/self/map_files/";
        size_t at = strlen(path);
        if (range >= sizeof path - at) break;
        memcpy(path + at, scratch.line, range);
        path[at + range] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && whole && !strstr(p, " (deleted)"))   /* no map_files: the path */
            fd = open(p, O_RDONLY | O_CLOEXEC);
        break;
    }
    close(r.fd);
    return fd;
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

/* Whether sym is a defined function with a size that holds vaddr. */
static bool holds(const ElfW(Sym) *sym, uint64_t vaddr) {
    unsigned type = ELF64_ST_TYPE(sym->st_info);   /* the same bits in both classes */
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF) return false;
    return sym->st_size != 0 && sym->st_value <= vaddr && vaddr - sym->st_value < sym->st_size;
}

/* The symbol of the file that holds the file offset: its name into name (cap bytes). */
static bool lookup(int fd, uint64_t offset, char *name, size_t cap, uintptr_t *from_start) {
    ElfW(Ehdr) eh;
    if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_shentsize != sizeof(ElfW(Shdr)))
        return false;
    uint64_t vaddr;
    ElfW(Shdr) symbols = { 0 }, names = { 0 };
    if (!file_to_vaddr(fd, &eh, offset, &vaddr) || !find_symbols(fd, &eh, &symbols, &names))
        return false;
    uint64_t count = symbols.sh_size / sizeof(ElfW(Sym)), name_at = 0;
    bool found = false;
    for (uint64_t first = 0; first < count && !found; first += SYMBOLS_PER_READ) {
        uint64_t n = count - first < SYMBOLS_PER_READ ? count - first : SYMBOLS_PER_READ;
        if (!read_at(fd, scratch.symbols, n * sizeof(ElfW(Sym)),
                     symbols.sh_offset + first * sizeof(ElfW(Sym))))
            return false;
        for (uint64_t i = 0; i < n && !found; i++) {
            if (!holds(&scratch.symbols[i], vaddr)) continue;
            found = true;   /* sized functions do not overlap: the first is the one */
            name_at = scratch.symbols[i].st_name;
            *from_start = (uintptr_t)(vaddr - scratch.symbols[i].st_value);
        }
    }
    if (!found || name_at >= names.sh_size) return false;
    ssize_t got = pread(fd, name, cap - 1, (off_t)(names.sh_offset + name_at));
    if (got <= 0) return false;
    name[got] = '\0';   /* the name's own NUL, when it was read, ends it first */
    if (strlen(name) == cap - 1 && cap > 4) memcpy(name + cap - 4, "...", 3);   /* cut */
    return name[0] != '\0';
}

bool kiln_symbol_name(uintptr_t address, char *name, size_t cap, uintptr_t *offset) {
    if (!name || cap < 2 || !offset) return false;
    if (kiln_exchange_acq_rel(&busy, 1) != 0) return false;   /* another caller has it */
    uint64_t file_offset = 0;
    int fd = open_mapping(address, &file_offset);
    bool found = fd >= 0 && lookup(fd, file_offset, name, cap, offset);
    if (fd >= 0) close(fd);
    kiln_store_release(&busy, 0);   /* the scratch area's uses before the next caller's */
    return found;
}
