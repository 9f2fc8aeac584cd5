#pragma once
/// \file The discrete-event core. Knows nothing about GPUs, models or networks.
///
/// Events are ordered by (time, insertion sequence): two events at the same time run in the
/// order they were scheduled (a FIFO contract, as in SimPy), never by pointer or hash order.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/time.hpp"

namespace ironlaw::engine {

/// Identifies a scheduled event; never reused within one Simulator.
using EventId = std::uint64_t;

class Simulator {
 public:
  using Action = std::function<void()>;

  Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Current simulated time.
  Time now() const { return now_; }

  /// Schedules `action` at absolute time `at` (≥ now()). O(log n).
  EventId schedule_at(Time at, Action action);
  /// Schedules `action` after `delay` (≥ 0). O(log n).
  EventId schedule_in(Time delay, Action action) { return schedule_at(now_ + delay, std::move(action)); }

  /// Cancels a pending event. O(1); idempotent; returns false if the event already ran,
  /// was already cancelled, or never existed.
  bool cancel(EventId id);

  /// Runs events until none are left. Returns the number of events executed.
  std::uint64_t run();
  /// Runs every event with time ≤ `until`, then sets now() to `until` (if later).
  std::uint64_t run_until(Time until);

  /// Events executed since construction (cancelled ones not counted).
  std::uint64_t events_executed() const { return executed_; }
  /// Events currently pending (cancelled ones excluded).
  std::size_t pending() const { return live_; }

 private:
  struct Entry {
    Time at;
    EventId seq;
    std::uint32_t slot;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  bool step(Time until);

  Time now_;
  EventId next_seq_ = 0;
  std::uint64_t executed_ = 0;
  std::size_t live_ = 0;
  std::vector<Entry> heap_;
  // Action storage by slot; a slot is recycled after its event runs or is cancelled.
  std::vector<Action> actions_;
  std::vector<EventId> slot_seq_;  // seq of the event occupying each slot (for cancel checks)
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> seq_slot_unused_;
};

}  // namespace ironlaw::engine
