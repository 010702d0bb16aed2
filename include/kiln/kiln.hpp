// kiln/kiln.hpp — kiln for C++: RAII owners, standard allocators and pmr resources over
// arenas and frame memory, typed pools and typed handle tables; and, through kiln/jobs.hpp,
// lambda jobs (kiln::task_group, kiln::parallel_for). Include only this header.
//
// Header-only C++17 over the public C API (kiln/kiln.h); the library itself stays C. Every
// owner's .get() returns the C handle, so C and C++ calls mix freely.
//
//   kiln::runtime rt;                          // kiln_create(NULL)
//   kiln::context main_ctx(rt.get());          // kiln_attach
//   for (;;) {
//       kiln::frame f(main_ctx.get());         // kiln_frame_begin ... kiln_frame_end
//       kiln::frame_vector<int> ids(main_ctx.get());
//       ids.push_back(42);                     // frame memory: gone at the frame's end
//   }
//
// What the layer adds to the C API, and what it does not:
// - Owners never throw: a create kiln refuses leaves .get() null (kiln has logged why),
//   and every call through a null handle is refused by kiln as the C call would be.
// - Allocators and memory resources throw std::bad_alloc when kiln returns NULL (kiln has
//   logged why: MEMORY_LIMIT_REACHED, ARENA_BAD_ALIGN, ARENA_DESTROYED, ...), as the
//   standard requires. Without exceptions (-fno-exceptions) they call std::abort, as the
//   standard library's own allocators do then.
// - Owners are destroyed before the runtime that made them (declare them after it): kiln
//   cannot check a pointer into a runtime that kiln_destroy has freed. Likewise a
//   kiln::frame ends before its kiln::context goes: a context detached with its frame
//   open drops that frame, and the frame's destructor is then refused (CONTEXT_DETACHED).
// - Thread contracts are the C calls': each class says which it follows.
#ifndef KILN_KILN_HPP
#define KILN_KILN_HPP

#include <kiln/kiln.h>
#include <kiln/jobs.hpp>   // kiln::task_group, kiln::parallel_for

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <memory_resource>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

namespace detail {

[[noreturn]] inline void throw_bad_alloc() {
#if defined(__cpp_exceptions)
    throw std::bad_alloc();
#else
    std::abort();
#endif
}

[[noreturn]] inline void throw_bad_array_new_length() {
#if defined(__cpp_exceptions)
    throw std::bad_array_new_length();
#else
    std::abort();
#endif
}

// A move-only owner of one kiln object, Release(handle) when it goes: a moved-from or
// refused owner holds nullptr, which every Release takes as a no-op. Move assignment
// releases what it held, then takes the other's; a self-move changes nothing.
template <class H, void (*Release)(H)>
class owner {
public:
    owner(const owner &) = delete;
    owner &operator=(const owner &) = delete;

    H get() const noexcept { return handle_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

protected:
    explicit owner(H handle) noexcept : handle_(handle) {}
    ~owner() { Release(handle_); }
    owner(owner &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    owner &operator=(owner &&other) noexcept {
        if (this != &other) {
            Release(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }

    H handle_;
};


// The bytes of n objects of type T; throws std::bad_array_new_length when they overflow
// size_t (as std::allocator does).
template <class T>
inline std::size_t array_bytes(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw_bad_array_new_length();
    return n * sizeof(T);
}

// The most alignment a pool or a handle table serves (kiln_pool_desc.align,
// kiln_handles_desc.item_align).
inline constexpr std::size_t max_object_align = 4096;

}  // namespace detail

// ---------- RAII owners ----------
// Move-only. A moved-from owner holds nothing: its .get() is null and its destructor does
// nothing. Self-move-assignment leaves the owner as it was.

// A runtime: kiln_create in the constructor, kiln_destroy in the destructor.
// Thread contract: kiln_destroy's: no other thread uses the runtime during or after the
// destructor.
class runtime : public detail::owner<kiln_runtime *, kiln_destroy> {
public:
    // kiln_create(NULL): every default. .get() is null when kiln refuses (logged).
    runtime() noexcept : owner(kiln_create(nullptr)) {}
    // kiln_create(&desc). .get() is null when kiln refuses desc (logged as one ERROR).
    explicit runtime(const kiln_desc &desc) noexcept : owner(kiln_create(&desc)) {}
    // A move destroys the runtime held, then takes other's.
    runtime(runtime &&) noexcept = default;
    runtime &operator=(runtime &&) noexcept = default;
};

// The calling thread's context: kiln_attach in the constructor, kiln_detach in the
// destructor. Thread contract: the attaching thread constructs, uses and destroys it (a
// context is used only by the thread that attached it). kiln refuses a detach from inside
// a job on the context (CONTEXT_INSIDE_JOB) and of a worker's context (CONTEXT_IS_WORKER);
// the context then stays attached until kiln_destroy.
class context : public detail::owner<kiln_ctx *, kiln_detach> {
public:
    // kiln_attach(rt). .get() is null when kiln refuses (logged: a bad rt, no memory).
    explicit context(kiln_runtime *rt) noexcept : owner(kiln_attach(rt)) {}
    // A move detaches the context held, then takes other's.
    context(context &&) noexcept = default;
    context &operator=(context &&) noexcept = default;
};

// A frame as a scope: kiln_frame_begin in the constructor, kiln_frame_end in the
// destructor, which runs and waits for every frame job first. Thread contract: the
// frame-driving context's thread.
// - A begin kiln refuses (logged: FRAME_NOT_DRIVER, FRAME_ALREADY_OPEN,
//   FRAME_WORKER_CONTEXT, FRAME_INSIDE_JOB, CONTEXT_DETACHED, ...) opens nothing, and the
//   destructor then ends nothing: a frame nested in an open one, or made inside a job,
//   never ends the frame that is open.
// - How a refusal is told from a begin: kiln_frame_begin returns the frame number it
//   opened, one more than kiln_frame_number before it, and a refusal returns the number
//   as it is. That is exact on the driving context (only it moves the clock). On another
//   context, the driver may open a frame between the two reads; the destructor's
//   kiln_frame_end is then refused by kiln too (FRAME_NOT_DRIVER, logged).
class frame {
public:
    explicit frame(kiln_ctx *ctx) noexcept : ctx_(ctx) {
        kiln_runtime *rt = kiln_ctx_runtime(ctx);   // a bad ctx: refused here, logged once
        if (!rt) return;
        uint64_t before = kiln_frame_number(rt);
        uint64_t number = kiln_frame_begin(ctx);
        if (number != 0 && number == before + 1) {
            number_ = number;
            open_ = true;
        }
    }
    ~frame() { end(); }

    frame(frame &&other) noexcept
        : ctx_(std::exchange(other.ctx_, nullptr)),
          number_(std::exchange(other.number_, 0)),
          open_(std::exchange(other.open_, false)) {}
    // Ends the frame this object opened, then takes other's.
    frame &operator=(frame &&other) noexcept {
        if (this != &other) {
            end();
            ctx_ = std::exchange(other.ctx_, nullptr);
            number_ = std::exchange(other.number_, 0);
            open_ = std::exchange(other.open_, false);
        }
        return *this;
    }
    frame(const frame &) = delete;
    frame &operator=(const frame &) = delete;

    // The context the frame was begun on (null once moved from).
    kiln_ctx *get() const noexcept { return ctx_; }
    // The number of the frame this object opened; 0 when it opened none.
    uint64_t number() const noexcept { return number_; }
    // Whether this object opened a frame that its destructor will end.
    explicit operator bool() const noexcept { return open_; }

private:
    void end() noexcept {
        if (open_) kiln_frame_end(ctx_);
        open_ = false;
    }

    kiln_ctx *ctx_;
    uint64_t  number_ = 0;
    bool      open_ = false;
};

// An arena: kiln_arena_create in the constructor, kiln_arena_destroy in the destructor.
// Thread contract: kiln's (one owner thread at a time; create and destroy from any
// thread). A call through a destroyed arena (an allocator or scope kept past it) is
// refused by kiln (ARENA_DESTROYED).
class arena : public detail::owner<kiln_arena *, kiln_arena_destroy> {
public:
    // kiln_arena_create(rt, name); name is copied, NULL names it "arena". .get() is null
    // when kiln refuses (logged).
    arena(kiln_runtime *rt, const char *name) noexcept : owner(kiln_arena_create(rt, name)) {}
    // A move destroys the arena held, then takes other's.
    arena(arena &&) noexcept = default;
    arena &operator=(arena &&) noexcept = default;

    // kiln_arena_stats_get: zeroed when refused (a moved-from arena: ARENA_NULL, logged).
    // Any thread.
    kiln_arena_stats stats() const noexcept {
        kiln_arena_stats s{};
        kiln_arena_stats_get(get(), &s);
        return s;
    }

    // kiln_arena_reserve: blocks taken (pages touched) now so that bytes can be allocated
    // without the block pool, and kept across resets. false when kiln refuses (logged:
    // ARENA_RESERVE_FAILED at memory_limit or the OS, ARENA_NULL for a moved-from arena).
    // The arena's owner thread.
    bool reserve(std::size_t bytes) noexcept { return kiln_arena_reserve(get(), bytes); }
};

// A stack-allocator scope over an arena: kiln_arena_mark at construction,
// kiln_arena_release to that mark at destruction, so everything allocated in the arena
// during the scope is freed at its end. Thread contract: the arena's owner thread.
// - Scopes nest; one released out of order (an outer scope ended first) is refused by
//   kiln (ARENA_BAD_MARK, logged), as is a scope over a destroyed arena (ARENA_DESTROYED).
// - A null arena is refused by kiln at construction (ARENA_NULL, logged); the destructor
//   then releases nothing.
class arena_scope {
public:
    explicit arena_scope(kiln_arena *arena) noexcept
        : arena_(arena), mark_(kiln_arena_mark(arena)) {}
    ~arena_scope() { end(); }

    arena_scope(arena_scope &&other) noexcept
        : arena_(std::exchange(other.arena_, nullptr)), mark_(other.mark_) {}
    // Releases this scope's mark, then takes other's.
    arena_scope &operator=(arena_scope &&other) noexcept {
        if (this != &other) {
            end();
            arena_ = std::exchange(other.arena_, nullptr);
            mark_ = other.mark_;
        }
        return *this;
    }
    arena_scope(const arena_scope &) = delete;
    arena_scope &operator=(const arena_scope &) = delete;

    // The arena the scope releases (null once moved from).
    kiln_arena *get() const noexcept { return arena_; }
    // The mark taken at construction.
    kiln_mark mark() const noexcept { return mark_; }

private:
    void end() noexcept {
        if (arena_) kiln_arena_release(arena_, mark_);
        arena_ = nullptr;
    }

    kiln_arena *arena_;
    kiln_mark   mark_;
};

// ---------- standard allocators ----------
// C++17 Allocator requirements over kiln's bump arenas.
// - allocate(n): n * sizeof(T) bytes aligned to alignof(T); std::bad_alloc when kiln
//   returns NULL (logged by kiln: the limit reached, a bad context or arena, an
//   alignment above the arena's block size: ARENA_BAD_ALIGN, a size past what one
//   mapping may be: ARENA_SIZE_OVERFLOW), std::bad_array_new_length when the bytes
//   overflow size_t.
// - deallocate frees nothing: the arena's reset or release does. No give-back of the
//   arena's last allocation either: the C API frees only to a mark, and a release to a
//   mark taken before an allocation also ends every mark taken after it (an arena_scope
//   the allocator cannot see), so no release is ever safe from inside deallocate.
// - Equal when they allocate from the same arena (the same context, for
//   frame_allocator): memory from one may be handed to the other's deallocate.
// - Propagation, deliberately as std::allocator, but for swap:
//   - copy assignment does not propagate: a container copied into keeps its own arena,
//     and the copy lands there;
//   - move assignment propagates: the storage moves, and the arena goes with it (O(1),
//     noexcept, never allocates);
//   - swap propagates, so swapping two containers of different arenas is defined (with
//     unequal allocators that do not propagate, it would be undefined behaviour);
//   - a copy-constructed container uses the same arena as its source.
//   So a container moved into another takes the source's arena: its lifetime and thread
//   (for frame memory, the source's context) come with it.

namespace detail {

// The library's allocation calls, inline where the headers have inline paths (kiln/core.h),
// by their function names otherwise: never KILN_TRACK_SITES's macros, which would name
// this header as every allocation's site.
#ifdef KILN_INLINE_PATHS
#  define KILN_HPP_FAST(name) name##_inline
#else
#  define KILN_HPP_FAST(name) (name)
#endif

// Where a bump allocator takes its memory: a context's frame memory or an arena. alloc
// serves the allocators, whose copies each carry a state (the frame stamp of
// kiln_frame_alloc_stamped for frame memory, nothing for an arena); alloc_plain serves
// the pmr resources, which are shared by many containers and so carry none.
struct frame_source {
    using handle = kiln_ctx *;
    struct state {
        std::uint64_t stamp = 0;   // the frame of this copy's first allocation; 0: none yet
    };
    static void *alloc(kiln_ctx *ctx, state &s, std::size_t bytes, std::size_t align) noexcept {
        return kiln_frame_alloc_stamped(ctx, bytes, align, &s.stamp);
    }
    static void *alloc_plain(kiln_ctx *ctx, std::size_t bytes, std::size_t align) noexcept {
        return KILN_HPP_FAST(kiln_frame_alloc)(ctx, bytes, align);
    }
};
struct arena_source {
    using handle = kiln_arena *;
    struct state {};
    static void *alloc(kiln_arena *arena, state &, std::size_t bytes, std::size_t align) noexcept {
        return KILN_HPP_FAST(kiln_arena_alloc)(arena, bytes, align);
    }
    static void *alloc_plain(kiln_arena *arena, std::size_t bytes, std::size_t align) noexcept {
        return KILN_HPP_FAST(kiln_arena_alloc)(arena, bytes, align);
    }
};

// What frame_allocator and arena_allocator share: the propagation choices above,
// allocate through the source (std::bad_alloc when kiln refuses, having logged why),
// deallocate that frees nothing, equality by source. The source's state is a base, so
// an empty one (an arena's) costs nothing.
template <class T, class Source>
class bump_allocator : private Source::state {
public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;

    bump_allocator(typename Source::handle source) noexcept : source_(source) {}
    // A rebound copy: the same source and state (a container's node allocator made from
    // its allocator keeps the container's frame stamp).
    template <class U>
    bump_allocator(const bump_allocator<U, Source> &other) noexcept
        : Source::state(other.source_state()), source_(other.source()) {}

    T *allocate(std::size_t n) {
        void *p = Source::alloc(source_, *this, array_bytes<T>(n), alignof(T));
        if (!p) throw_bad_alloc();
        return static_cast<T *>(p);
    }
    // Frees nothing (see above).
    void deallocate(T *, std::size_t) noexcept {}

    typename Source::handle source() const noexcept { return source_; }
    const typename Source::state &source_state() const noexcept { return *this; }

private:
    typename Source::handle source_;
};

template <class T, class U, class Source>
inline bool operator==(const bump_allocator<T, Source> &a, const bump_allocator<U, Source> &b) noexcept {
    return a.source() == b.source();
}
template <class T, class U, class Source>
inline bool operator!=(const bump_allocator<T, Source> &a, const bump_allocator<U, Source> &b) noexcept {
    return !(a == b);
}

}   // namespace detail

// Allocates from a context's frame memory (kiln_frame_alloc): valid until the next
// kiln_frame_end (for an attached thread outside the frame clock, until it resets its own
// frame arena).
// - Thread contract: kiln_frame_alloc's: allocate only on the context's thread (inside a
//   job, the ctx the job was given). With KILN_DEBUG_OWNERSHIP another thread's use of
//   a frame arena is reported (ARENA_WRONG_THREAD).
// - A frame container is destroyed before its frame ends: one kept longer reads reset
//   memory (KILN_DEBUG_POISON reports it under AddressSanitizer and memcheck).
// - With KILN_DEBUG_CHECKS, a container that grows after the frame of its first
//   allocation has ended is refused (FRAME_MEMORY_STALE, then std::bad_alloc): each
//   allocator copy carries the frame of its first allocation (kiln_frame_alloc_stamped)
//   and compares it at every later one.
//   - An allocator that has not allocated yet may live across frames: a system can keep
//     one and make each frame's containers from it. A copy of one that has allocated
//     carries its stamp: get_allocator() of a container, and the allocator a moved-from
//     container keeps, belong to that frame (give a kept container a fresh allocator,
//     v = frame_vector<int>(ctx), to use it in a later frame).
//   - Caught before anything is read: vector, string and deque growth, list and set
//     inserts (they allocate first). Not caught, or only after reset memory was read,
//     since no allocation of the stored allocator comes first: a map or unordered
//     container's lookup-then-insert (operator[], insert: the lookup walks the old nodes
//     or buckets), an unordered container's bucket array (libstdc++ allocates it through
//     a temporary copy of the allocator, whose stamp is lost), and a container built by
//     the allocator-extended move constructor from an equal allocator (it takes the
//     storage but not the stamp). KILN_DEBUG_POISON under AddressSanitizer or memcheck
//     reports every read of reset memory, these included.
//   - frame_resource carries no stamp (many containers share it), so pmr containers are
//     not checked.
// - Refused by kiln, then std::bad_alloc: a null or detached context (CONTEXT_NULL,
//   CONTEXT_DETACHED); a background job's frame memory with KILN_DEBUG_CHECKS
//   (JOB_BACKGROUND_FRAME_ALLOC).
// The constructor from a context is implicit, so frame_vector<int> v(ctx) reads as the
// declaration of a frame container.
template <class T>
class frame_allocator : public detail::bump_allocator<T, detail::frame_source> {
public:
    using detail::bump_allocator<T, detail::frame_source>::bump_allocator;
    template <class U>
    struct rebind { using other = frame_allocator<U>; };
    template <class U>
    frame_allocator(const frame_allocator<U> &other) noexcept
        : detail::bump_allocator<T, detail::frame_source>(other) {}

    kiln_ctx *context() const noexcept { return this->source(); }
};

// Allocates from an arena (kiln_arena_alloc): valid until the arena's reset, a release
// to a mark taken before it, or its destroy.
// - Thread contract: the arena's (one owner thread at a time).
// - Refused by kiln, then std::bad_alloc: a null arena (ARENA_NULL), a destroyed one
//   (ARENA_DESTROYED).
// Implicit from an arena, like frame_allocator from a context.
template <class T>
class arena_allocator : public detail::bump_allocator<T, detail::arena_source> {
public:
    using detail::bump_allocator<T, detail::arena_source>::bump_allocator;
    template <class U>
    struct rebind { using other = arena_allocator<U>; };
    template <class U>
    arena_allocator(const arena_allocator<U> &other) noexcept
        : detail::bump_allocator<T, detail::arena_source>(other) {}

    kiln_arena *arena() const noexcept { return this->source(); }
};

// Containers whose type says where their memory lives.
template <class T>
using frame_vector = std::vector<T, frame_allocator<T>>;
using frame_string = std::basic_string<char, std::char_traits<char>, frame_allocator<char>>;
template <class T>
using arena_vector = std::vector<T, arena_allocator<T>>;

// ---------- pmr resources ----------
// std::pmr::memory_resource over the same arenas, so every std::pmr container works on
// kiln memory. The resource object must outlive the containers that use it (they keep
// its address); it is neither copyable nor movable, like the standard's own resources.
// - do_allocate: std::bad_alloc when kiln returns NULL (logged by kiln), an alignment
//   above the arena's block size (ARENA_BAD_ALIGN) included.
// - do_deallocate frees nothing, as the allocators above.
// - do_is_equal, deliberately: equal to a resource of the same kind over the same
//   context (frame_resource) or arena (arena_resource), and to nothing else. A pmr
//   container move-assigned from an equal resource's container takes its storage; from
//   any other it copies into its own, so a container's memory always has its own
//   resource's lifetime. The kind is told by dynamic_cast; built without RTTI, a
//   resource is equal only to itself.

namespace detail {

// What frame_resource and arena_resource share (see above), over a Source as the
// allocators' bump_allocator.
template <class Source>
class bump_resource : public std::pmr::memory_resource {
public:
    bump_resource(const bump_resource &) = delete;
    bump_resource &operator=(const bump_resource &) = delete;

protected:
    explicit bump_resource(typename Source::handle source) noexcept : source_(source) {}
    ~bump_resource() override = default;
    typename Source::handle source() const noexcept { return source_; }

private:
    void *do_allocate(std::size_t bytes, std::size_t alignment) override {
        void *p = Source::alloc_plain(source_, bytes, alignment);
        if (!p) throw_bad_alloc();
        return p;
    }
    void do_deallocate(void *, std::size_t, std::size_t) noexcept override {}
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        if (this == &other) return true;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
        const auto *same_kind = dynamic_cast<const bump_resource *>(&other);
        return same_kind && same_kind->source_ == source_;
#else
        return false;
#endif
    }

    typename Source::handle source_;
};

}   // namespace detail

// Frame memory of a context (kiln_frame_alloc); the thread contract and refusals of
// frame_allocator.
class frame_resource final : public detail::bump_resource<detail::frame_source> {
public:
    explicit frame_resource(kiln_ctx *ctx) noexcept : bump_resource(ctx) {}
    kiln_ctx *context() const noexcept { return source(); }
};

// An arena's memory (kiln_arena_alloc); the thread contract and refusals of
// arena_allocator.
class arena_resource final : public detail::bump_resource<detail::arena_source> {
public:
    explicit arena_resource(kiln_arena *arena) noexcept : bump_resource(arena) {}
    kiln_arena *arena() const noexcept { return source(); }
};

// ---------- typed pools ----------

// A pool of T objects (kiln_pool_create with sizeof(T) and alignof(T)), destroyed with
// the owner. Objects are constructed by create and destroyed by destroy; kiln_pool_destroy
// (the owner's destructor) frees the blocks of objects still live without running their
// destructors, after logging how many there are (POOL_OBJECTS_LIVE).
// - Thread contract: kiln's. create on the context's thread; destroy from any thread
//   with its own context, whoever created the object; no other thread uses the pool
//   during or after the owner's destructor.
// - sizeof(T) must be at most a quarter of the runtime's block size (kiln refuses the
//   pool otherwise: POOL_BAD_SIZE, and .get() is null); alignof(T) at most 4096, checked
//   at compile time.
template <class T>
class pool : public detail::owner<kiln_pool *, kiln_pool_destroy> {
    static_assert(alignof(T) <= detail::max_object_align,
                  "kiln::pool: kiln pools align objects to at most 4096 bytes");

public:
    // kiln_pool_create(rt, {name, sizeof(T), alignof(T), capacity, reserve}); capacity 0:
    // grows without limit; reserve: objects carved now and kept by trim
    // (kiln_pool_desc.reserve). .get() is null when kiln refuses (logged).
    pool(kiln_runtime *rt, const char *name, std::size_t capacity = 0, std::size_t reserve = 0) noexcept
        : owner(create_pool(rt, name, capacity, reserve)), rt_(rt) {}
    // A move destroys the pool held, then takes other's (and its runtime).
    pool(pool &&other) noexcept : owner(std::move(other)), rt_(std::exchange(other.rt_, nullptr)) {}
    pool &operator=(pool &&other) noexcept {
        if (this != &other) {
            owner::operator=(std::move(other));
            rt_ = std::exchange(other.rt_, nullptr);
        }
        return *this;
    }

    // A new T(args...) in a pool slot; nullptr when kiln_pool_alloc returns NULL (logged by
    // kiln: capacity reached, no memory, a bad or foreign context, a moved-from pool). A
    // constructor that throws: the slot is freed and the exception passed on.
    template <class... Args>
    T *create(kiln_ctx *ctx, Args &&...args) {
        void *slot = KILN_HPP_FAST(kiln_pool_alloc)(ctx, this->get());
        if (!slot) return nullptr;
#if defined(__cpp_exceptions)
        try {
            return ::new (slot) T(std::forward<Args>(args)...);
        } catch (...) {
            kiln_pool_free(ctx, this->get(), slot);
            throw;
        }
#else
        return ::new (slot) T(std::forward<Args>(args)...);
#endif
    }

    // Runs obj's destructor, then kiln_pool_free. nullptr is a no-op.
    // - A context kiln would refuse is refused before the destructor runs, so obj stays a
    //   live, constructed object: a null, detached or invalid one (CONTEXT_*, logged), one
    //   of another runtime (POOL_WRONG_RUNTIME), a moved-from pool (POOL_NULL).
    // - Not checked before the destructor runs (the C API has no call that says whether a
    //   pointer is a live object of a pool): a pointer of another pool or a second destroy
    //   of one object. kiln refuses the free itself (POOL_FOREIGN_POINTER; with
    //   KILN_DEBUG_CHECKS, POOL_DOUBLE_FREE), but the destructor has run by then.
    void destroy(kiln_ctx *ctx, T *obj) noexcept(std::is_nothrow_destructible_v<T>) {
        if (!obj) return;
        if (!this->get() || !ctx) {
            kiln_pool_free(ctx, this->get(), obj);   // refused and logged by kiln
            return;
        }
        kiln_runtime *ctx_rt = kiln_ctx_runtime(ctx);   // NULL: refused and logged
        if (ctx_rt != rt_) {
            if (ctx_rt) kiln_pool_free(ctx, this->get(), obj);   // POOL_WRONG_RUNTIME
            return;
        }
        obj->~T();
        kiln_pool_free(ctx, this->get(), obj);
    }

    // kiln_pool_stats_get: zeroed when refused (a moved-from pool: POOL_NULL, logged).
    // Any thread.
    kiln_pool_stats stats() const noexcept {
        kiln_pool_stats s{};
        kiln_pool_stats_get(this->get(), &s);
        return s;
    }

    // Memory planning, the C calls' contracts (kiln/pool.h):
    // - reserve(count): kiln_pool_reserve, objects carved (pages touched) now so that count
    //   objects need no new block; returns how many can be created without one. Any thread.
    // - trim(): kiln_pool_trim, every block whose objects are all free and uncached goes
    //   back to the block pool; returns the blocks given back. Any thread.
    // - flush(ctx): kiln_pool_flush, ctx's cached objects go to the depot, so a trim can
    //   reach their blocks. ctx's thread.
    // A moved-from pool: refused by kiln (POOL_NULL, logged), 0.
    std::size_t reserve(std::size_t count) noexcept { return kiln_pool_reserve(this->get(), count); }
    std::size_t trim() noexcept { return kiln_pool_trim(this->get()); }
    void flush(kiln_ctx *ctx) noexcept { kiln_pool_flush(ctx, this->get()); }

private:
    static kiln_pool *create_pool(kiln_runtime *rt, const char *name, std::size_t capacity,
                                  std::size_t reserve) noexcept {
        kiln_pool_desc desc{};
        desc.name = name;
        desc.size = sizeof(T);
        desc.align = alignof(T);
        desc.capacity = capacity;
        desc.reserve = reserve;
        return kiln_pool_create(rt, &desc);
    }

    kiln_runtime *rt_;
};

// ---------- typed handle tables ----------

// A handle to a T of a handle_table<T>: a kiln_handle whose type names its items, so a
// handle<bullet> does not convert to a handle<enemy>. The default one is the null handle.
template <class T>
class handle {
public:
    constexpr handle() noexcept = default;
    constexpr explicit handle(kiln_handle raw) noexcept : raw_(raw) {}

    constexpr kiln_handle raw() const noexcept { return raw_; }
    constexpr bool is_null() const noexcept { return raw_.bits == 0; }
    constexpr explicit operator bool() const noexcept { return raw_.bits != 0; }

    friend constexpr bool operator==(handle a, handle b) noexcept { return a.raw_.bits == b.raw_.bits; }
    friend constexpr bool operator!=(handle a, handle b) noexcept { return a.raw_.bits != b.raw_.bits; }

private:
    kiln_handle raw_{};
};

// A generational handle table of T items (kiln_handles_create with sizeof(T) and
// alignof(T)), destroyed with the owner. kiln/handles.h tells the reuse rule: how long
// a pointer from get stays valid.
// - Thread contract: kiln's. alloc on the context's thread; get and free from any
//   thread (free with its own context); no other thread uses the table during or after
//   the owner's destructor.
// - T is trivially destructible: free runs no destructor, since other threads may still
//   read the item until the reuse rule lets its slot go (items keep their last contents
//   until then).
// - sizeof(T) at most 1 MiB and alignof(T) at most 4096, checked at compile time.
// - The walks over live items (foreach, parallel_for) call f(handle<T> h, T &item) under
//   kiln_handles_foreach's rules (items allocated or freed meanwhile may or may not be
//   visited; the reference follows get's lifetime rule). An exception from f never
//   crosses kiln's C frames: it is caught, the walk visits nothing more (kiln's loop runs
//   on to its end calling nothing; a parallel walk's other ranges stop visiting as soon
//   as they see it), and the first exception is rethrown once the walk has returned;
//   the others are dropped.
template <class T>
class handle_table : public detail::owner<kiln_handles *, kiln_handles_destroy> {
    static_assert(std::is_trivially_destructible_v<T>,
                  "kiln::handle_table: free runs no destructor, so T must be trivially destructible");
    static_assert(alignof(T) <= detail::max_object_align,
                  "kiln::handle_table: kiln handle tables align items to at most 4096 bytes");
    static_assert(sizeof(T) <= (std::size_t{1} << 20),
                  "kiln::handle_table: kiln handle tables hold items of at most 1 MiB");

public:
    // kiln_handles_create(rt, {name, sizeof(T), alignof(T), capacity, reserve}); capacity
    // 0: 65536; reserve: slots whose pages are touched now (kiln_handles_desc.reserve).
    // .get() is null when kiln refuses (logged).
    handle_table(kiln_runtime *rt, const char *name, uint32_t capacity = 0, uint32_t reserve = 0) noexcept
        : owner(create_table(rt, name, capacity, reserve)) {}
    // A move destroys the table held, then takes other's.
    handle_table(handle_table &&) noexcept = default;
    handle_table &operator=(handle_table &&) noexcept = default;
    using owner::get;   // .get(): the C table, beside get(handle) below

    // A handle to a new value-initialised T (T()); the null handle when kiln_handle_alloc
    // refuses (logged by kiln: HANDLES_FULL, a bad or foreign context, a moved-from table).
    // A T() that throws: the item is freed and the exception passed on.
    handle<T> alloc(kiln_ctx *ctx) {
        void *item = nullptr;
        kiln_handle raw = (kiln_handle_alloc)(ctx, this->handle_, &item);
        if (!item) return handle<T>();
#if defined(__cpp_exceptions)
        try {
            ::new (item) T();
        } catch (...) {
            kiln_handle_free(ctx, this->handle_, raw);
            throw;
        }
#else
        ::new (item) T();
#endif
        return handle<T>(raw);
    }

    // The item, or nullptr for a stale, freed, null or foreign handle (not logged: a stale
    // lookup is normal use). Wait-free, any thread. A moved-from table: nullptr, refused
    // by kiln (HANDLES_NULL, on stderr).
    T *get(handle<T> h) const noexcept {
        T *item = static_cast<T *>(kiln_handle_get(this->handle_, h.raw()));
        return item ? std::launder(item) : nullptr;   // the T that alloc constructed there
    }

    // Frees the item: h is stale at once on every thread. false when kiln refuses
    // (logged: HANDLE_DOUBLE_FREE, HANDLE_NULL, HANDLE_FOREIGN, a bad or foreign context).
    bool free(kiln_ctx *ctx, handle<T> h) noexcept { return kiln_handle_free(ctx, this->handle_, h.raw()); }

    // kiln_handles_stats_get: zeroed when refused (a moved-from table: HANDLES_NULL,
    // logged). Any thread.
    kiln_handles_stats stats() const noexcept {
        kiln_handles_stats s{};
        kiln_handles_stats_get(this->handle_, &s);
        return s;
    }

    // f(handle<T>, T &) for every live item, in slot order, on this thread
    // (kiln_handles_foreach). f may free the item it is given, with its own context. Any
    // thread. A moved-from table: refused by kiln (HANDLES_NULL), nothing visited.
    template <class F>
    void foreach(F &&f) {
        walk(nullptr, 0, f, false);
    }

    // The same walk over the workers (kiln_handles_parallel_for, grain slots per range,
    // 0: kiln picks): f is called on many threads at once, so its call must be safe to
    // make concurrently, and it must not use the caller's context (it is given none). The
    // thread of ctx.
    template <class F>
    void parallel_for(kiln_ctx *ctx, std::size_t grain, F &&f) {
        walk(ctx, grain, f, true);
    }

private:
    template <class F>
    void walk(kiln_ctx *ctx, std::size_t grain, F &f, bool parallel) {
        using fn_type = std::remove_reference_t<F>;
        static_assert(std::is_invocable_v<fn_type &, handle<T>, T &>,
                      "kiln::handle_table: a walk's f must be callable as f(handle<T>, T &)");
        struct state {
            fn_type               *fn;
            detail::exception_slot slot;

            static void visit(void *user, kiln_handle h, void *item) noexcept {
                state *self = static_cast<state *>(user);
                if (self->slot.claimed()) return;   // a visit threw: the walk is over
                KILN_HPP_TRY {
                    (*self->fn)(handle<T>(h), *std::launder(static_cast<T *>(item)));
                } KILN_HPP_CATCH_ALL(self->slot.capture())
            }
        };
        state s{std::addressof(f), {}};
        if (parallel) kiln_handles_parallel_for(ctx, this->handle_, grain, &state::visit, &s);
        else kiln_handles_foreach(this->handle_, &state::visit, &s);
#if defined(__cpp_exceptions)
        if (std::exception_ptr first = s.slot.take()) std::rethrow_exception(first);
#endif
    }

    static kiln_handles *create_table(kiln_runtime *rt, const char *name, uint32_t capacity,
                                      uint32_t reserve) noexcept {
        kiln_handles_desc desc{};
        desc.name = name;
        desc.item_size = sizeof(T);
        desc.item_align = alignof(T);
        desc.capacity = capacity;
        desc.reserve = reserve;
        return kiln_handles_create(rt, &desc);
    }
};

}  // namespace kiln

#endif  // KILN_KILN_HPP
