// malloc/new_delete.cpp — libkiln-malloc.so: C++'s replaceable operator new and delete,
// every C++17 form (plain, array, nothrow, aligned, sized), over kiln's malloc shape.
//
// A C program that preloads the library must not load libstdc++ for it (a megabyte of
// resident pages for nothing): this file is compiled without exceptions and names
// libstdc++'s two functions it needs weakly. They are there whenever operator new is
// called, since only a C++ program calls it. new retries through the installed
// new_handler, then throws std::bad_alloc; the nothrow forms return nullptr instead
// (a new_handler that throws under them lets the exception through, where the standard
// would return nullptr: it is compiled without handlers).
#pragma weak _ZSt15get_new_handlerv
#pragma weak _ZSt17__throw_bad_allocv

#include <kiln/heap.h>

#include <cstddef>
#include <new>

namespace std {
[[noreturn]] void __throw_bad_alloc();   // libstdc++'s: throws std::bad_alloc
}

namespace {

std::new_handler current_handler() {
    return &std::get_new_handler != nullptr ? std::get_new_handler() : nullptr;
}

// size bytes aligned to align (0: malloc's), through the new_handler while there is one;
// nullptr when there is none.
void *allocate_or_null(std::size_t size, std::size_t align) {
    for (;;) {
        void *p = align <= 16 ? kiln_malloc(size) : kiln_aligned_alloc(align, size);
        if (p) return p;
        std::new_handler handler = current_handler();
        if (!handler) return nullptr;
        handler();
    }
}

void *allocate(std::size_t size, std::size_t align) {
    void *p = allocate_or_null(size, align);
    if (p) return p;
    if (&std::__throw_bad_alloc != nullptr) std::__throw_bad_alloc();
    __builtin_trap();   // unreachable: operator new is only called where libstdc++ is loaded
}

}  // namespace

#define KILN_OVERRIDE __attribute__((visibility("default")))

KILN_OVERRIDE void *operator new(std::size_t size) { return allocate(size, 0); }
KILN_OVERRIDE void *operator new[](std::size_t size) { return allocate(size, 0); }
KILN_OVERRIDE void *operator new(std::size_t size, const std::nothrow_t &) noexcept { return allocate_or_null(size, 0); }
KILN_OVERRIDE void *operator new[](std::size_t size, const std::nothrow_t &) noexcept { return allocate_or_null(size, 0); }
KILN_OVERRIDE void *operator new(std::size_t size, std::align_val_t align) {
    return allocate(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new[](std::size_t size, std::align_val_t align) {
    return allocate(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new(std::size_t size, std::align_val_t align, const std::nothrow_t &) noexcept {
    return allocate_or_null(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t &) noexcept {
    return allocate_or_null(size, static_cast<std::size_t>(align));
}

KILN_OVERRIDE void operator delete(void *p) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete(void *p, const std::nothrow_t &) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p, const std::nothrow_t &) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete(void *p, std::size_t) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p, std::size_t) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete(void *p, std::align_val_t) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p, std::align_val_t) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete(void *p, std::size_t, std::align_val_t) noexcept { kiln_free(p); }
KILN_OVERRIDE void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { kiln_free(p); }
