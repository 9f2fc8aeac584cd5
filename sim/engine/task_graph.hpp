#pragma once
/// \file A dependency graph of tasks executed on the simulator. A task becomes ready when all
/// its predecessors have completed; it is then launched (its `launch` callback starts whatever
/// activity it stands for: a timed op on a stream, a flow, a collective) and later reports
/// completion with `complete(id)`. Knows nothing about what the tasks are.
///
/// Streams give in-order execution like CUDA streams: a task placed on a stream starts only
/// after the previous task on that stream completed *and* its own dependencies are met.
#include <cstdint>
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
  /// Observes every task start and completion (for tracing). Optional.
  using Observer = std::function<void(TaskId id, Time start, Time end)>;

  explicit TaskGraph(Simulator& sim);

  StreamId add_stream(std::string name);

  /// Adds a task with a custom activity. O(1).
  TaskId add_task(Launch launch, StreamId stream = kNoStream);
  /// Adds a task that simply occupies its stream for `duration`. O(1).
  TaskId add_timed(Time duration, StreamId stream = kNoStream);
  /// `after` cannot start before `before` completes. O(1).
  void add_dependency(TaskId before, TaskId after);

  /// Launches every task without unmet dependencies. Call once, then run the simulator.
  void start();
  /// Marks a running task complete; releases its successors (launched at the current time).
  void complete(TaskId id);

  void set_observer(Observer observer) { observer_ = std::move(observer); }

  Simulator& simulator() { return sim_; }
  std::size_t size() const { return tasks_.size(); }
  std::size_t completed() const { return completed_; }
  Time start_time(TaskId id) const { return tasks_[id].started; }
  Time end_time(TaskId id) const { return tasks_[id].ended; }

 private:
  struct Task {
    Launch launch;
    Time duration;          // used when launch is empty (timed task)
    StreamId stream = kNoStream;
    std::uint32_t unmet = 0;
    bool stream_blocked = false;  // waits for the previous task on its stream
    Time started, ended;
    std::vector<TaskId> successors;
    TaskId stream_next = 0xffffffffu;
  };
  void release(TaskId id);
  void launch(TaskId id);

  Simulator& sim_;
  std::vector<Task> tasks_;
  std::vector<TaskId> stream_last_;
  std::vector<std::string> stream_names_;
  std::size_t completed_ = 0;
  Observer observer_;
};

}  // namespace ironlaw::engine
