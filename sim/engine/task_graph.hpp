#pragma once
/// \file A dependency graph of tasks executed on the simulator. A task becomes ready when all
/// its predecessors have completed; it is then launched (its `launch` callback starts whatever
/// activity it stands for: a timed op on a stream, a flow, a collective) and later reports
/// completion with `complete(id)`. Knows nothing about what the tasks are.
///
/// Streams give in-order execution like CUDA streams: a task placed on a stream starts only
/// after the previous task on that stream completed *and* its own dependencies are met.
///
/// Pinned-down semantics:
/// - A task released at time t launches at time t, inside the call that released it (no extra
///   event). When one completion releases several tasks, they launch in this order: the next
///   task on the completed task's stream first, then its dependants in the order the
///   dependencies were added.
/// - `complete()` may be called synchronously from inside `launch`; releases are queued and
///   processed iteratively (breadth first), so long synchronous chains do not grow the stack.
/// - Tasks may be added after start(); a task added later whose dependencies are already met
///   launches at the next call to start().
/// - Misuse throws std::logic_error: completing a task that is not running (twice, or before
///   it launched), adding a dependency to a task already launched, a self-dependency.
///   Unknown ids or streams throw std::out_of_range.
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::engine {

using TaskId = std::uint32_t;
using StreamId = std::uint32_t;
inline constexpr StreamId kNoStream = 0xffffffffu;

class TaskGraph {
 public:
  /// Called when the task starts; the activity must eventually call graph.complete(id).
  using Launch = std::function<void(TaskGraph& graph, TaskId id)>;
  /// Observes every task at its completion: (id, start, end) in simulated time. Optional.
  using Observer = std::function<void(TaskId id, Time start, Time end)>;

  explicit TaskGraph(Simulator& sim);

  /// Adds an in-order stream. O(1) amortised.
  StreamId add_stream(std::string name);
  /// Name given to add_stream. O(1).
  const std::string& stream_name(StreamId stream) const { return stream_names_.at(stream); }

  /// Adds a task with a custom activity. O(1).
  TaskId add_task(Launch launch, StreamId stream = kNoStream);
  /// Adds a task that simply occupies its stream for `duration` (≥ 0; 0 completes at once). O(1).
  TaskId add_timed(Time duration, StreamId stream = kNoStream);
  /// `after` cannot start before `before` completes. O(1). A no-op if `before` already completed.
  void add_dependency(TaskId before, TaskId after);

  /// Launches every task not yet launched that has no unmet dependencies, in id order.
  /// Call once after building the graph, then run the simulator. O(tasks).
  void start();
  /// Marks a running task complete at now(); releases its successors (launched at the current
  /// time). O(successors) plus their launches.
  void complete(TaskId id);

  void set_observer(Observer observer) { observer_ = std::move(observer); }

  Simulator& simulator() { return sim_; }
  std::size_t size() const { return tasks_.size(); }
  std::size_t completed() const { return completed_; }
  /// True once `id` has launched (its start_time is valid). O(1).
  bool started(TaskId id) const { return tasks_.at(id).state >= State::running; }
  /// True once `id` has completed (its end_time is valid). O(1).
  bool done(TaskId id) const { return tasks_.at(id).state == State::done; }
  Time start_time(TaskId id) const { return tasks_[id].started; }
  Time end_time(TaskId id) const { return tasks_[id].ended; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  enum class State : std::uint8_t { waiting, ready, running, done };
  // 72 bytes (the 1-byte state last, after the 4-byte fields: no padding in the middle); a
  // step of a deep pipeline holds millions.
  struct Task {
    Launch launch;
    Time started;
    Time ended;  // until the task completes: a timed task's duration (used when launch is empty)
    StreamId stream = kNoStream;
    std::uint32_t unmet = 0;  // unmet dependencies, counting the stream predecessor
    std::uint32_t succ_head = kNone;  // first edge in edges_ (singly linked, insertion order)
    std::uint32_t succ_tail = kNone;
    TaskId stream_next = kNone;
    State state = State::waiting;
  };
  struct Edge {
    TaskId to;
    std::uint32_t next;
  };
  TaskId add(Launch launch, Time duration, StreamId stream);
  void release(TaskId id);
  void launch(TaskId id);
  void drain_ready();

  Simulator& sim_;
  // Deques, not vectors: a step of a deep pipeline holds millions of tasks and edges, and a
  // vector's doubling copy would hold the old and the new array at once (peak memory ≈ 2× the
  // graph at the last doubling); a deque grows block by block and never moves an element.
  std::deque<Task> tasks_;
  std::deque<Edge> edges_;
  std::vector<TaskId> stream_last_;
  std::vector<std::string> stream_names_;
  std::vector<TaskId> ready_;       // released, not yet launched (FIFO from ready_head_)
  std::size_t ready_head_ = 0;
  bool draining_ = false;
  std::size_t completed_ = 0;
  Observer observer_;
};

}  // namespace ironlaw::engine
