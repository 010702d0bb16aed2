// kiln/jobs.hpp — lambda jobs for C++17 over kiln/jobs.h: kiln::task_group runs callables
// as jobs (at once, or after other groups: run_after) and rethrows the first exception one
// threw; kiln::parallel_for runs a callable over ranges. Header-only; the C library does
// the scheduling.
//
// Exceptions never cross kiln's C frames: every job and range runs through a noexcept
// trampoline that catches everything, keeps the first exception (std::exception_ptr) and
// counts the others, so the job's counter still reaches zero.
#ifndef KILN_JOBS_HPP
#define KILN_JOBS_HPP

#include <kiln/kiln.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

// Without exceptions (-fno-exceptions) nothing can throw: the trampolines call the
// callable directly, nothing is captured or rethrown, and a closure that finds no frame
// memory aborts, as kiln.hpp's allocators do. kiln.hpp's handle-table walks use them
// too, so they stay defined (kiln's own names).
#if defined(__cpp_exceptions)
#  define KILN_HPP_TRY try
#  define KILN_HPP_CATCH_ALL(handler) catch (...) { handler; }
#else
#  define KILN_HPP_TRY if (true)
#  define KILN_HPP_CATCH_ALL(handler) else { handler; }   /* never runs */
#endif

namespace kiln {

namespace detail {

// The first exception a batch of jobs threw, and how many were dropped behind it.
// capture: any thread, inside a catch handler. take and reading the first one: only
// after the batch's counter reached zero (kiln_wait's acquire orders the jobs' writes
// before it), on the waiting thread.
class exception_slot {
public:
    // Keeps the exception being handled if it is the first since the last take();
    // counts it as dropped otherwise. The flag's exchange picks exactly one first.
    void capture() noexcept {
        if (!claimed_.exchange(true, std::memory_order_acq_rel))
            first_ = std::current_exception();
        else
            dropped_.fetch_add(1, std::memory_order_relaxed);
    }

    // Hands the first exception over (null when none) and opens the next batch. The
    // next batch's jobs see the reset through kiln_run's publication of the job.
    std::exception_ptr take() noexcept {
        std::exception_ptr first = std::move(first_);
        first_ = nullptr;
        claimed_.store(false, std::memory_order_relaxed);
        return first;
    }

    bool pending() const noexcept { return first_ != nullptr; }

    // Whether some call of this batch threw already. Any thread (relaxed: a hint to skip
    // work that would be thrown away; the first exception itself is read after the wait).
    bool claimed() const noexcept { return claimed_.load(std::memory_order_relaxed); }

    // Exceptions dropped so far (every one after a batch's first). Any thread: a
    // relaxed count that jobs still running may raise.
    std::size_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    std::atomic<bool>        claimed_{false};
    std::atomic<std::size_t> dropped_{0};
    std::exception_ptr       first_;
};

// One task_group job as it lies in frame memory: where its exception goes, and the
// callable. call is the kiln_job_fn: it calls the callable, then destroys it (its
// destructor runs exactly once, after the call, whether the call threw or not).
template <class F>
struct job_record {
    exception_slot *slot;
    F               fn;

    template <class G>
    job_record(exception_slot *s, G &&g) : slot(s), fn(std::forward<G>(g)) {}

    static void call(kiln_ctx *ctx, void *arg) noexcept {
        job_record *self = static_cast<job_record *>(arg);
        exception_slot *slot = self->slot;
        KILN_HPP_TRY {
            self->fn(ctx);
        } KILN_HPP_CATCH_ALL(slot->capture())
        destroy(self);
    }

    // Runs the callable's destructor; one that throws is captured like a call's throw.
    static void destroy(job_record *self) noexcept {
        exception_slot *slot = self->slot;
        KILN_HPP_TRY {
            self->~job_record();
        } KILN_HPP_CATCH_ALL(slot->capture())
    }
};

// Exceptions task_group destructors dropped, process-wide (see
// task_group::dropped_at_destruction). A function-local static of an inline function:
// one object however many translation units include this.
inline std::atomic<std::size_t> &destructor_drops() noexcept {
    static std::atomic<std::size_t> count{0};
    return count;
}

} // namespace detail

// The tag of task_group::wait(kiln::isolate): an isolated wait (kiln_wait_ex with
// .isolate, see "Isolated waits" in kiln/jobs.h).
struct isolate_t {
    explicit constexpr isolate_t() = default;
};
inline constexpr isolate_t isolate{};

class task_group;

// One prerequisite of task_group::run_after: a task_group (its jobs not yet waited for)
// or a raw kiln_counter (the jobs a kiln_run counts on it). Converts implicitly, so a
// braced list mixes them: g.run_after({&physics, animation, &loads}, f). A null pointer
// is a NULL entry, which kiln refuses (JOB_AFTER_NULL_ENTRY). It holds the counter's
// address only: what it names must outlive the run_after call (and more, see there).
class prerequisite {
public:
    prerequisite(const task_group &group) noexcept;   // defined after task_group
    prerequisite(const task_group *group) noexcept;
    prerequisite(const kiln_counter &counter) noexcept : counter_(&counter) {}
    prerequisite(const kiln_counter *counter) noexcept : counter_(counter) {}

    // The counter kiln waits for; null for a null pointer.
    const kiln_counter *counter() const noexcept { return counter_; }

private:
    const kiln_counter *counter_;
};

// A group of jobs that run callables, like oneTBB's task_group:
//
//     kiln::task_group g(ctx);
//     g.run([&](kiln_ctx *job_ctx) { ... });   // job_ctx: the thread running it
//     g.run([&](kiln_ctx *job_ctx) { ... });
//     g.wait();                                 // rethrows the first exception
//
// Where closures live: every run() copies (or moves) the callable into the submitting
// context's frame memory (kiln_frame_alloc: a pointer bump, nothing to free). A kiln_job
// carries one pointer, so the callable must lie somewhere that outlives the job and
// that the job can reach through that pointer; frame memory costs no heap allocation
// per job and no bookkeeping, and kiln never resets it under a running frame job. There
// is no inline storage: the one pointer must also name the group's exception slot. Big
// captures take as much frame memory (counted against desc.frame_budget); capture big
// things by reference.
//
// Lifetime rule: wait on a task_group (or let its destructor) within the frame it was
// created in, and on an attached thread outside the frame clock before that thread
// resets its frame arena. What happens otherwise:
// - the driver's kiln_frame_end with the group's jobs unfinished runs and waits for them
//   (they are frame jobs, see "The frame a job belongs to" in kiln/jobs.h) before it
//   resets any frame arena, so the closures have run and been destroyed; a later wait()
//   returns at once and still rethrows what they threw;
// - a thread outside the clock that resets its frame arena under unfinished jobs of a
//   group pulls the closures from under them: kiln does not refuse that reset from the
//   thread's top level (it does from inside a job, ARENA_RESET_INSIDE_JOB). Keep the
//   group inside one iteration of that thread's loop;
// - kiln_detach of the group's context runs the jobs still queued there, not those
//   workers took, then frees the frame arena their closures live in; a wait() after it
//   is refused (CONTEXT_DETACHED) and returns at once. Jobs of run_after() still waiting
//   for their prerequisites then run later, on closures in the freed arena: nothing
//   catches that. Let the group go first (declared after the kiln::context it uses, its
//   destructor runs before the detach, and waits for those jobs too).
// Not inside a background job: its frame memory may be reset under it (kiln refuses the
// allocation there with KILN_DEBUG_CHECKS, JOB_BACKGROUND_FRAME_ALLOC, and run() then
// throws std::bad_alloc, see below).
//
// Threads: construct, run(), run_after(), wait() and destroy on the thread of the context
// given (a job may make a task_group of its own with the ctx it was given: nested groups
// are fine, since kiln_wait runs other jobs meanwhile). Never wait on a group from one of its
// own jobs: that job is among those waited for, so the wait never returns (kiln cannot
// tell that job from any other, and says nothing). exceptions_dropped() from any thread.
//
// Neither copyable nor movable: the group's jobs hold its exception slot's address, and
// kiln holds its counter's address, until they are done; a move while they run would
// leave them both behind. Make it where it is used (or hold it by pointer).
class task_group {
public:
    // A group whose jobs are submitted from ctx. Nothing is checked here: a bad ctx is
    // refused by the first run() (kiln logs it; run() throws std::bad_alloc).
    explicit task_group(kiln_ctx *ctx) noexcept : ctx_(ctx) {}

    task_group(const task_group &) = delete;
    task_group &operator=(const task_group &) = delete;
    task_group(task_group &&) = delete;
    task_group &operator=(task_group &&) = delete;

    // Waits for every job not yet waited for (kiln_wait, running jobs meanwhile), never
    // throws: a first exception that no wait() rethrew is dropped and counted in
    // dropped_at_destruction(). Runs during unwinding too, so an exception leaving the
    // scope waits for the jobs that may reference its locals. That wait also keeps a
    // group that others run_after alive until their jobs are runnable (see run_after).
    ~task_group() {
        drain(false);
        if (slot_.pending()) {
            slot_.take();
            detail::destructor_drops().fetch_add(1, std::memory_order_relaxed);
        }
    }

    // Submits f as one job: kiln calls f(job_ctx) on some thread (a worker, or a thread
    // that waits), job_ctx being that thread's context, so f may take frame memory from
    // it. f is decay-copied (moved from an rvalue) into this context's frame memory and
    // destroyed right after its call returns or throws. What f throws is caught there
    // (see wait()).
    // - The frame allocation refused (kiln logs why: a NULL or detached ctx, a background
    //   job with KILN_DEBUG_CHECKS, memory_limit reached): throws std::bad_alloc before
    //   anything is submitted. A failure is an exception rather than a call of f on the
    //   spot: the NULL means kiln refused the context, and f would get that context.
    // - f's copy or move throwing: that exception leaves run(), nothing is submitted.
    // Either way the jobs run() before stay in the group (wait or the destructor).
    // The thread of the group's context.
    template <class F>
    void run(F &&f) {
        submit(std::forward<F>(f), KILN_PRIORITY_NORMAL, {});
    }

    // run() at a priority (KILN_PRIORITY_HIGH: every thread looking for work takes it
    // first). A value that is no kiln_priority is refused by kiln_run_ex
    // (JOB_BAD_PRIORITY, logged): f is then destroyed without being called. No pins and
    // no background jobs here: a pin kiln refuses (JOB_BAD_PIN, JOB_PIN_DETACHING)
    // cannot be told apart from one queued, so the closure's destructor could not be
    // guaranteed; and a background job may outlive the frame memory the closure lives in.
    template <class F>
    void run(F &&f, kiln_priority priority) {
        submit(std::forward<F>(f), priority, {});
    }

    // run() whose job becomes runnable once the jobs of every prerequisite have finished
    // (kiln_run_desc.after, see "Dependencies" in kiln/jobs.h): of each group, its jobs
    // not yet waited for at the time of the call; of each counter, the jobs counted on it
    // then. A prerequisite with none (a group just waited for, or one that never ran)
    // counts as done. Chains, fan-out (several run_after on one group) and fan-in (one
    // after several) all work; no thread blocks meanwhile, and wait() or the destructor
    // of this group waits for the job too, as does frame end.
    //     physics.run(step);  animation.run(pose);
    //     skinning.run_after({&physics, &animation}, [&](kiln_ctx *) { skin(); });
    // - A prerequisite whose job threw still finished: the job runs; the exception is
    //   rethrown by the prerequisite's own wait(), not by this group's.
    // - An empty list is no dependency: run(f, priority). The list is read during the
    //   call only (copied into frame memory next to the closure).
    // - Lifetime: every prerequisite must stay alive, and get no new job, until the job
    //   is runnable. A task_group prerequisite keeps that by itself when it is destroyed:
    //   its destructor waits for its jobs, and a wait on a counter returns only once the
    //   jobs waiting on it are runnable. So does its wait(): run() on it again after its
    //   wait(), not before (the new job would count for this one too; with
    //   KILN_DEBUG_CHECKS kiln logs COUNTER_REUSED_WAITING). A raw kiln_counter is the
    //   caller's to keep so, as in C.
    // - Refused, f destroyed without being called and nothing submitted (kiln logs it,
    //   counted in api_errors): this group itself in the list (its job would wait for
    //   itself: JOB_AFTER_CYCLE), a null entry (JOB_AFTER_NULL_ENTRY), a priority that is
    //   no kiln_priority (JOB_BAD_PRIORITY). Cycles through other groups are not seen:
    //   their jobs never run, and a wait on either group never returns.
    // - Two refusals the layer cannot foresee leave f neither called nor destroyed (its
    //   frame memory is reclaimed at frame end, what it owns is not): a prerequisite
    //   (group or counter) whose unfinished jobs are another runtime's
    //   (JOB_AFTER_FOREIGN), and no heap memory for kiln's record of the call
    //   (JOB_OUT_OF_MEMORY). kiln_run_ex returns nothing to tell them by.
    // - The frame allocation refused, or f's copy throwing: as run().
    // The thread of the group's context; a prerequisite may be another thread's group.
    template <class F>
    void run_after(std::initializer_list<prerequisite> after, F &&f,
                   kiln_priority priority = KILN_PRIORITY_NORMAL) {
        submit(std::forward<F>(f), priority, after);
    }

    // Runs jobs (this group's, and any others kiln hands this thread) until every job
    // of the group is done, then rethrows the first exception any of them threw since
    // the last wait(); the others are counted in exceptions_dropped(). The group is then
    // empty and may run() again. Without jobs since the last wait, returns at once.
    // The thread of the group's context.
    void wait() {
        drain(false);
        rethrow();
    }

    // wait(), isolated (kiln_wait_ex with .isolate): meanwhile this thread runs only the
    // group's jobs, what they submit while it runs them (their own nested groups
    // included), and jobs pinned to its context, never an unrelated job that sits on a
    // deque (a wait for a short batch does not turn into a long one). Jobs of the group
    // that wait for prerequisites of other groups (run_after) are left to other threads
    // while those run; with KILN_NO_WORKERS it runs any job it reaches once none of its
    // own is runnable (see "Isolated waits" in kiln/jobs.h). Rethrows as wait() does.
    // The thread of the group's context.
    void wait(isolate_t) {
        drain(true);
        rethrow();
    }

    // Exceptions the group's jobs threw that wait() did not rethrow: every one after the
    // first of each wait(), since construction. Any thread (jobs still running may add).
    std::size_t exceptions_dropped() const noexcept { return slot_.dropped(); }

    // First exceptions dropped by task_group destructors (a group destroyed without a
    // wait() after a job threw), all groups of the process together. The ones behind
    // such a first exception were in that group's exceptions_dropped(). Any thread.
    static std::size_t dropped_at_destruction() noexcept {
        return detail::destructor_drops().load(std::memory_order_relaxed);
    }

    // The context the group submits from.
    kiln_ctx *context() const noexcept { return ctx_; }

private:
    friend class prerequisite;

    // One job of f, after the prerequisites in after (none: at once). The after array
    // follows the record in the same frame allocation.
    template <class F>
    void submit(F &&f, kiln_priority priority, std::initializer_list<prerequisite> after) {
        using fn_type = std::decay_t<F>;
        using record = detail::job_record<fn_type>;
        using entry = const kiln_counter *;
        static_assert(std::is_invocable_v<fn_type &, kiln_ctx *>,
                      "kiln::task_group::run: f must be callable as f(kiln_ctx *)");
        constexpr std::size_t list_at =
            (sizeof(record) + alignof(entry) - 1) / alignof(entry) * alignof(entry);
        constexpr std::size_t align = alignof(record) > alignof(entry) ? alignof(record)
                                                                       : alignof(entry);
        std::size_t bytes = after.size() ? list_at + after.size() * sizeof(entry) : sizeof(record);
        void *memory = (kiln_frame_alloc)(ctx_, bytes, align);
        if (!memory) {
#if defined(__cpp_exceptions)
            throw std::bad_alloc();
#else
            std::abort();
#endif
        }
        record *r = ::new (memory) record(&slot_, std::forward<F>(f));
        kiln_job job{&record::call, r};
        if (priority == KILN_PRIORITY_NORMAL && after.size() == 0) {
            kiln_run(ctx_, &job, 1, &counter_);
            submitted_ = true;
            return;
        }
        // The refusals kiln_run_ex makes that this call can tell (see run and run_after).
        bool refused = priority != KILN_PRIORITY_NORMAL && priority != KILN_PRIORITY_HIGH;
        kiln_run_desc desc{};
        desc.priority = priority;
        if (after.size()) {
            entry *list = reinterpret_cast<entry *>(static_cast<unsigned char *>(memory) + list_at);
            std::size_t n = 0;
            for (const prerequisite &p : after) {
                ::new (static_cast<void *>(list + n++)) entry(p.counter());
                refused = refused || !p.counter() || p.counter() == &counter_;
            }
            desc.after = list;
            desc.after_count = static_cast<uint32_t>(n);   // a braced list: far below 2^32
        }
        kiln_run_ex(ctx_, &job, 1, &counter_, &desc);
        if (refused) {   // logged by kiln: never runs
            record::destroy(r);
            return;
        }
        submitted_ = true;
    }

    void drain(bool isolate) noexcept {
        if (!submitted_) return;
        if (isolate) {
            kiln_wait_desc desc{};
            desc.isolate = true;
            kiln_wait_ex(ctx_, &counter_, &desc);
        } else {
            kiln_wait(ctx_, &counter_);
        }
        submitted_ = false;
    }

    void rethrow() {
#if defined(__cpp_exceptions)
        if (std::exception_ptr first = slot_.take()) std::rethrow_exception(first);
#endif
    }

    kiln_ctx             *ctx_;
    kiln_counter          counter_{};
    bool                  submitted_ = false;   // jobs run since the last wait
    detail::exception_slot slot_;
};

inline prerequisite::prerequisite(const task_group &group) noexcept : counter_(&group.counter_) {}
inline prerequisite::prerequisite(const task_group *group) noexcept
    : counter_(group ? &group->counter_ : nullptr) {}

// Calls f(range_ctx, begin, end) over disjoint ranges that cover [0, count) exactly once,
// in parallel (kiln_parallel_for: ranges split by halving down to grain indices; grain
// 0: kiln picks), and returns when all are done. range_ctx is the context of the thread
// running the range (frame memory from it lives as a job's does).
// - f is not copied: every range calls the same object through a reference, from
//   several threads at once, so its call must be safe to make concurrently. Nothing is
//   allocated: the callable and the exception slot live on this call's stack frame,
//   which kiln_parallel_for outlives no range of.
// - A range that throws: the exception is caught in that range; the other ranges still
//   run (kiln does not cancel), and once all are done the first exception is rethrown
//   here; the others are dropped.
// - A bad ctx is refused by kiln_parallel_for (logged) and f never runs; count 0 runs
//   nothing. Every range runs as a job: what a job may not do, f may not either.
// The thread of ctx.
template <class F>
void parallel_for(kiln_ctx *ctx, std::size_t count, std::size_t grain, F &&f) {
    using fn_type = std::remove_reference_t<F>;
    static_assert(std::is_invocable_v<fn_type &, kiln_ctx *, std::size_t, std::size_t>,
                  "kiln::parallel_for: f must be callable as f(kiln_ctx *, size_t, size_t)");
    struct state {
        fn_type               *fn;
        detail::exception_slot slot;

        static void call(kiln_ctx *range_ctx, std::size_t begin, std::size_t end,
                         void *arg) noexcept {
            state *self = static_cast<state *>(arg);
            KILN_HPP_TRY {
                (*self->fn)(range_ctx, begin, end);
            } KILN_HPP_CATCH_ALL(self->slot.capture())
        }
    };
    state s{std::addressof(f), {}};
    kiln_parallel_for(ctx, count, grain, &state::call, &s);
#if defined(__cpp_exceptions)
    if (std::exception_ptr first = s.slot.take()) std::rethrow_exception(first);
#endif
}

} // namespace kiln

#endif // KILN_JOBS_HPP
