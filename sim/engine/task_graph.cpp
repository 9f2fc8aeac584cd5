#include "engine/task_graph.hpp"

#include <stdexcept>

namespace ironlaw::engine {

namespace {

struct FlagGuard {
  bool& flag;
  ~FlagGuard() { flag = false; }
};

}  // namespace

TaskGraph::TaskGraph(Simulator& sim) : sim_(sim) {}

StreamId TaskGraph::add_stream(std::string name) {
  stream_names_.push_back(std::move(name));
  stream_last_.push_back(kNone);
  return static_cast<StreamId>(stream_last_.size() - 1);
}

TaskId TaskGraph::add(Launch launch_fn, Time duration, StreamId stream) {
  if (stream != kNoStream && stream >= stream_last_.size()) {
    throw std::out_of_range("TaskGraph: unknown stream");
  }
  if (duration < Time::zero()) throw std::logic_error("TaskGraph::add_timed: negative duration");
  const auto id = static_cast<TaskId>(tasks_.size());
  Task task;
  task.launch = std::move(launch_fn);
  task.ended = duration;
  task.stream = stream;
  if (stream != kNoStream) {
    const TaskId prev = stream_last_[stream];
    if (prev != kNone && tasks_[prev].state != State::done) {
      tasks_[prev].stream_next = id;
      task.unmet = 1;
    }
    stream_last_[stream] = id;
  }
  tasks_.push_back(std::move(task));
  return id;
}

TaskId TaskGraph::add_task(Launch launch_fn, StreamId stream) {
  if (!launch_fn) throw std::logic_error("TaskGraph::add_task: empty launch");
  return add(std::move(launch_fn), Time::zero(), stream);
}

TaskId TaskGraph::add_timed(Time duration, StreamId stream) { return add(nullptr, duration, stream); }

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  if (before >= tasks_.size() || after >= tasks_.size()) {
    throw std::out_of_range("TaskGraph::add_dependency: unknown task");
  }
  if (before == after) throw std::logic_error("TaskGraph::add_dependency: task depends on itself");
  Task& a = tasks_[after];
  if (a.state != State::waiting) {
    throw std::logic_error("TaskGraph::add_dependency: dependant already released or launched");
  }
  Task& b = tasks_[before];
  if (b.state == State::done) return;
  const auto edge = static_cast<std::uint32_t>(edges_.size());
  edges_.push_back(Edge{after, kNone});
  if (b.succ_tail == kNone) {
    b.succ_head = edge;
  } else {
    edges_[b.succ_tail].next = edge;
  }
  b.succ_tail = edge;
  ++a.unmet;
}

void TaskGraph::start() {
  for (TaskId id = 0; id < tasks_.size(); ++id) {
    Task& t = tasks_[id];
    if (t.state == State::waiting && t.unmet == 0) {
      t.state = State::ready;
      ready_.push_back(id);
    }
  }
  drain_ready();
}

void TaskGraph::release(TaskId id) {
  Task& t = tasks_[id];
  if (--t.unmet == 0 && t.state == State::waiting) {
    t.state = State::ready;
    ready_.push_back(id);
  }
}

void TaskGraph::drain_ready() {
  if (draining_) return;  // the outer loop will launch what was queued
  draining_ = true;
  FlagGuard guard{draining_};
  while (ready_head_ < ready_.size()) launch(ready_[ready_head_++]);
  ready_.clear();
  ready_head_ = 0;
}

void TaskGraph::launch(TaskId id) {
  Task& t = tasks_[id];
  t.state = State::running;
  t.started = sim_.now();
  if (t.launch) {
    // Moved out: the launch may add tasks, which can reallocate tasks_.
    Launch fn = std::move(t.launch);
    t.launch = nullptr;
    fn(*this, id);
  } else if (t.ended == Time::zero()) {  // `ended` holds the duration until completion
    complete(id);
  } else {
    sim_.schedule_in(t.ended, [this, id] { complete(id); });
  }
}

void TaskGraph::complete(TaskId id) {
  if (id >= tasks_.size()) throw std::out_of_range("TaskGraph::complete: unknown task");
  Task& t = tasks_[id];
  if (t.state != State::running) {
    throw std::logic_error(t.state == State::done ? "TaskGraph::complete: task completed twice"
                                                  : "TaskGraph::complete: task not launched");
  }
  t.state = State::done;
  t.ended = sim_.now();
  ++completed_;
  if (observer_) observer_(id, t.started, t.ended);
  // The observer may add tasks (reallocating tasks_): index afresh from here on.
  if (tasks_[id].stream_next != kNone) release(tasks_[id].stream_next);
  for (std::uint32_t e = tasks_[id].succ_head; e != kNone; e = edges_[e].next) release(edges_[e].to);
  drain_ready();
}

}  // namespace ironlaw::engine
