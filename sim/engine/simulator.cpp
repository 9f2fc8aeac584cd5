#include "engine/simulator.hpp"

#include <algorithm>
#include <stdexcept>

namespace ironlaw::engine {

namespace {

// Min-heap on (time, sequence): the comparator says "a comes later than b".
struct Later {
  template <class E>
  bool operator()(const E& a, const E& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

constexpr std::uint32_t kMaxGeneration = 0xffffffffu;
// Children per heap node. 4 halves the depth of a binary heap and keeps a node's children in
// one or two cache lines: measured 1.8x faster than 2 with a million pending events, and on
// par with 8.
constexpr std::size_t kArity = 4;

// Resets a flag on scope exit, also when an action throws.
struct FlagGuard {
  bool& flag;
  ~FlagGuard() { flag = false; }
};

}  // namespace

Simulator::Simulator() = default;

void Simulator::heap_push(const Entry& e) {
  heap_.push_back(e);
  std::size_t i = heap_.size() - 1;
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!Later{}(heap_[parent], e)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Simulator::sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  const Entry e = heap_[i];
  for (;;) {
    const std::size_t first = kArity * i + 1;
    if (first >= n) break;
    const std::size_t last = std::min(first + kArity, n);
    std::size_t best = first;
    for (std::size_t c = first + 1; c < last; ++c) {
      if (Later{}(heap_[best], heap_[c])) best = c;
    }
    if (!Later{}(e, heap_[best])) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = e;
}

void Simulator::heap_pop() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

EventId Simulator::schedule_in_place(Action action) {
  if (!running_) throw std::logic_error("Simulator::schedule_in_place: not inside an action");
  if (!action) throw std::logic_error("Simulator::schedule_in_place: empty action");
  return schedule_with_seq(now_, std::move(action), running_seq_);
}

EventId Simulator::schedule_at(Time at, Action action) {
  if (at < now_) throw std::logic_error("Simulator::schedule_at: time is in the past");
  if (!action) throw std::logic_error("Simulator::schedule_at: empty action");
  return schedule_with_seq(at, std::move(action), next_seq_++);
}

EventId Simulator::schedule_with_seq(Time at, Action action, std::uint64_t seq) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  ++s.generation;  // generation 0 is never handed out, so EventId 0 never exists
  s.seq = seq;
  s.action = std::move(action);
  heap_push(Entry{at, s.seq, slot});
  ++live_;
  return (static_cast<EventId>(s.generation) << 32) | slot;
}

void Simulator::release_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.seq = kFreeSeq;
  // A slot whose generation is exhausted is retired, so that no EventId is ever reused.
  if (s.generation != kMaxGeneration) free_slots_.push_back(slot);
}

bool Simulator::cancel(EventId id) {
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(id >> 32);
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (s.generation != generation || s.seq == kFreeSeq) return false;
  s.action = nullptr;
  release_slot(slot);
  --live_;
  ++stale_;
  if (stale_ > 1024 && stale_ > live_) compact();
  return true;
}

void Simulator::compact() {
  std::erase_if(heap_, [this](const Entry& e) { return slots_[e.slot].seq != e.seq; });
  for (std::size_t i = heap_.size() / kArity + 1; i-- > 0;) {
    if (i < heap_.size()) sift_down(i);
  }
  stale_ = 0;
}

std::uint64_t Simulator::run_events(Time until) {
  if (running_) throw std::logic_error("Simulator::run: called from inside an action");
  running_ = true;
  stop_requested_ = false;
  FlagGuard guard{running_};
  std::uint64_t count = 0;
  while (!heap_.empty()) {
    const Entry top = heap_.front();
    Slot& s = slots_[top.slot];
    if (s.seq != top.seq) {  // cancelled; its slot may already hold a newer event
      heap_pop();
      --stale_;
      continue;
    }
    if (top.at > until) break;
    heap_pop();
    now_ = top.at;
    Action action = std::move(s.action);
    s.action = nullptr;
    release_slot(top.slot);
    --live_;
    ++executed_;
    ++count;
    running_seq_ = top.seq;
    action();
    if (tick_every_ != 0 && ++since_tick_ >= tick_every_) {
      since_tick_ = 0;
      tick_();
    }
    if (stop_requested_) {
      stop_requested_ = false;
      return count;
    }
  }
  if (until != Time::max() && until > now_) now_ = until;
  return count;
}

std::uint64_t Simulator::run() { return run_events(Time::max()); }

std::uint64_t Simulator::run_until(Time until) { return run_events(until); }

}  // namespace ironlaw::engine
