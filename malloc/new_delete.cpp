// malloc/new_delete.cpp — libkiln-malloc.so: C++'s replaceable operator new and delete,
// every C++17 form (plain, array, nothrow, aligned, sized), over kiln's malloc shape.
// new retries through the installed new_handler, then throws std::bad_alloc.
#include <kiln/heap.h>

#include <cstddef>
#include <new>

namespace {

void *allocate(std::size_t size, std::size_t align) {
    for (;;) {
        void *p = align <= 16 ? kiln_malloc(size) : kiln_aligned_alloc(align, size);
        if (p) return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

void *allocate_nothrow(std::size_t size, std::size_t align) noexcept {
    try {
        return allocate(size, align);
    } catch (...) {
        return nullptr;
    }
}

}  // namespace

#define KILN_OVERRIDE __attribute__((visibility("default")))

KILN_OVERRIDE void *operator new(std::size_t size) { return allocate(size, 0); }
KILN_OVERRIDE void *operator new[](std::size_t size) { return allocate(size, 0); }
KILN_OVERRIDE void *operator new(std::size_t size, const std::nothrow_t &) noexcept { return allocate_nothrow(size, 0); }
KILN_OVERRIDE void *operator new[](std::size_t size, const std::nothrow_t &) noexcept { return allocate_nothrow(size, 0); }
KILN_OVERRIDE void *operator new(std::size_t size, std::align_val_t align) {
    return allocate(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new[](std::size_t size, std::align_val_t align) {
    return allocate(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new(std::size_t size, std::align_val_t align, const std::nothrow_t &) noexcept {
    return allocate_nothrow(size, static_cast<std::size_t>(align));
}
KILN_OVERRIDE void *operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t &) noexcept {
    return allocate_nothrow(size, static_cast<std::size_t>(align));
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
