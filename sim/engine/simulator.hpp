#pragma once
/// \file The discrete-event core. Knows nothing about GPUs, models or networks.
///
/// Events are ordered by (time, insertion sequence): two events at the same time run in the
/// order they were scheduled (a FIFO contract, as in SimPy), never by pointer or hash order.
///
/// Implementation: a 4-ary min-heap of (time, sequence, slot) entries; the actions live in a
/// slot table indexed by slot. Cancelling marks the slot free (lazy deletion): the stale heap
/// entry is skipped when it reaches the top, and the heap is compacted whenever stale entries
/// outnumber live ones, so memory stays O(pending events) even under heavy cancellation.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/time.hpp"

namespace ironlaw::engine {

/// Identifies a scheduled event; never reused within one Simulator.
/// Encodes (slot generation << 32 | slot); generations start at 1, so 0 is never an id.
using EventId = std::uint64_t;

/// An EventId that no Simulator ever returns; a convenient "no event" value. cancel() of it
/// returns false.
inline constexpr EventId kNoEvent = 0;

class Simulator {
 public:
  using Action = std::function<void()>;

  Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Current simulated time.
  Time now() const { return now_; }

  /// Schedules `action` at absolute time `at` (≥ now()). O(log n).
  /// Throws std::logic_error if `at` < now() or `action` is empty.
  /// May be called from inside a running action.
  EventId schedule_at(Time at, Action action);
  /// Schedules `action` after `delay` (≥ 0). O(log n).
  EventId schedule_in(Time delay, Action action) { return schedule_at(now_ + delay, std::move(action)); }

  /// Cancels a pending event. O(1); idempotent; returns false if the event already ran,
  /// was already cancelled, or never existed. Releases the action (and its captures) at once.
  /// Amortised O(1) including the occasional heap compaction.
  bool cancel(EventId id);

  /// Runs events until none are left (or stop() is called). Returns the number of events
  /// executed by this call. Throws std::logic_error if called from inside an action.
  std::uint64_t run();
  /// Runs every event with time ≤ `until`, then sets now() to `until` (if later).
  /// If stop() is called from an action, returns after that action and leaves now() at its
  /// time. Returns the number of events executed by this call.
  /// Throws std::logic_error if called from inside an action.
  std::uint64_t run_until(Time until);
  /// Asks the current run()/run_until() to return after the action being executed. Pending
  /// events stay pending; a later run continues with them. No effect outside a run.
  void stop() { stop_requested_ = true; }
  /// Calls `hook` after every `every`-th event executed from now on, between events (never
  /// inside an action): how a caller observes a long run (a CPU budget) without scheduling
  /// events of its own, so the events, their order and every count are the same with it as
  /// without. An exception from the hook leaves run() / run_until() as one from an action does,
  /// with the events still pending. every = 0 or an empty hook removes it. O(1).
  void set_tick(std::uint64_t every, std::function<void()> hook) {
    tick_every_ = hook ? every : 0;
    tick_ = tick_every_ != 0 ? std::move(hook) : nullptr;
    since_tick_ = 0;
  }
  /// Inside an action: whether stop() has been asked (the run returns after this action).
  bool stop_requested() const { return stop_requested_; }
  /// Inside an action: schedules `action` at now() in the running event's place, ahead of
  /// every other pending event (all of them were scheduled after it or are later). For an
  /// action that does the work of several consecutive events and, on stop(), must leave the
  /// rest pending exactly where those events would have been. O(log n). Throws
  /// std::logic_error outside an action or for an empty action.
  EventId schedule_in_place(Action action);

  /// Events executed since construction (cancelled ones not counted).
  std::uint64_t events_executed() const { return executed_; }
  /// Events currently pending (cancelled ones excluded). O(1), exact.
  std::size_t pending() const { return live_; }
  /// Events scheduled since construction (run, pending or cancelled; schedule_in_place takes
  /// an existing place and is not counted). A caller that remembers
  /// it right after scheduling an event knows, while it is unchanged, that no event was
  /// scheduled after that one: another action for the same time would run right after it.
  std::uint64_t scheduled() const { return next_seq_; }

 private:
  struct Entry {
    Time at;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Slot {
    Action action;
    std::uint64_t seq = kFreeSeq;  // seq of the event occupying this slot, kFreeSeq if none
    std::uint32_t generation = 0;  // generation of the current/last occupant
  };
  static constexpr std::uint64_t kFreeSeq = ~std::uint64_t{0};

  std::uint64_t run_events(Time until);
  EventId schedule_with_seq(Time at, Action action, std::uint64_t seq);
  void release_slot(std::uint32_t slot);
  void heap_push(const Entry& e);
  void heap_pop();
  void sift_down(std::size_t i);
  void compact();

  Time now_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t running_seq_ = 0;  // seq of the event being executed
  std::function<void()> tick_;     // set_tick's hook, called every tick_every_ events
  std::uint64_t tick_every_ = 0;
  std::uint64_t since_tick_ = 0;
  std::uint64_t executed_ = 0;
  std::size_t live_ = 0;
  std::size_t stale_ = 0;  // heap entries whose event was cancelled
  bool running_ = false;
  bool stop_requested_ = false;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace ironlaw::engine
