#pragma once
/// \file The task graph of one training step and the world it runs in. The StepBuilder knows
/// how to add a task of each kind — a compute kernel on a rank's stream, a collective, a
/// point-to-point send, a wait for an input batch — and records what each task was, so that
/// when the step runs every task's interval lands on the right rank's timeline (step_metrics)
/// and, at the requested detail, in the record sink. It knows no parallelism: each parallelism
/// (model_parallel, pipeline_wiring, data_parallel) adds its own tasks through it.
#include <compare>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/collective.hpp"
#include "config/spec.hpp"
#include "core/records.hpp"
#include "data/loader.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "engine/task_graph.hpp"
#include "hardware/cluster.hpp"
#include "run/gpu_sms.hpp"
#include "run/layout.hpp"
#include "run/step_costs.hpp"
#include "run/step_metrics.hpp"
#include "run/trace_level.hpp"

namespace ironlaw::run::detail {

using engine::StreamId;
using engine::TaskId;
inline constexpr TaskId kNoTask = 0xffffffffu;

/// Everything that lives for the whole simulation: the engine, the network, the cluster, the
/// collectives, the input pipeline and the speed of every GPU.
struct World {
  World(const config::Scenario& s, const Layout& l, RecordSink& record_sink, TraceLevel level);

  const config::Scenario& scenario;
  const Layout& layout;
  RecordSink& sink;
  TraceLevel trace;
  engine::Simulator sim;
  engine::FlowNetwork net;
  hardware::Cluster cluster;
  comm::Communicator comm;
  data::DataPipeline data;
  /// Kernel-time factor of every GPU of the cluster, by global GPU (hardware/gpu_speed.hpp),
  /// drawn once from the scenario seed: a GPU keeps its speed from step to step.
  std::vector<double> kernel_time_factor;
};

/// Which part of a unit's work a pass is, for tasks shared between TP groups.
enum class PassPart : std::uint8_t { forward, recompute, backward };

/// Identifies one pass of one unit (layer, embedding, head) of one microbatch.
struct PassKey {
  int microbatch = 0;
  int unit = 0;
  PassPart part = PassPart::forward;
  auto operator<=>(const PassKey&) const = default;
};

/// What a shared task is.
enum class SharedKind : std::uint8_t { expert_all_to_all, expert_routing, ring_exchange };

/// A task that several TP groups of the step wait for (an EP group's all-to-all, a CP ring's
/// key/value exchange), created by whichever member reaches it first.
struct SharedTaskKey {
  SharedKind kind = SharedKind::expert_all_to_all;
  int group = 0;      ///< the first global rank of the group that runs it
  PassKey pass;
  int part = 0;       ///< index of the part in the pass
  int step = 0;       ///< ring step (ring exchanges), 0 otherwise
  auto operator<=>(const SharedTaskKey&) const = default;
};

/// Units of the model: 0 … L−1 layers, L embedding, L+1 head.
struct UnitTasks {
  using Table = std::vector<TaskId>;
  /// Per local rank, microbatch and unit the rank holds: the first and the last task of its
  /// forward, the first of its backward (the recompute or input-gradient pass included) and the
  /// last of its backward (the weight-gradient pass, where split): what the data-parallel
  /// collectives hang on.
  Table fwd_first, fwd_last, bwd_first, bwd_last;

  /// Sizes the tables for `held[local]`, the units each simulated rank holds, and `microbatches`
  /// out of `units` units; every cell kNoTask. Room: Σ held × microbatches cells per table
  /// (a pipeline rank holds its own chunks' units, not all of them). O(ranks · units + cells).
  void reset(const std::vector<std::vector<int>>& held, int microbatches, int units);
  /// The cell of (local, mb, unit) in `t`; a unit `local` does not hold reads kNoTask (a spare
  /// cell, reset on every such access, that nothing may be stored in). O(1).
  TaskId& at(Table& t, int local, int mb, int unit) {
    const std::int32_t slot = slot_[static_cast<std::size_t>(local) * units_ + static_cast<std::size_t>(unit)];
    if (slot < 0) {
      spare_ = kNoTask;
      return spare_;
    }
    const std::size_t held = count_[static_cast<std::size_t>(local)];
    return t[base_[static_cast<std::size_t>(local)] + static_cast<std::size_t>(mb) * held + static_cast<std::size_t>(slot)];
  }

 private:
  std::size_t units_ = 0;
  std::vector<std::int32_t> slot_;   // per local and unit: its index among the local's held units, −1 if not held
  std::vector<std::size_t> count_;   // per local: units held
  std::vector<std::size_t> base_;    // per local: its first cell
  TaskId spare_ = kNoTask;
};

/// Builds the task graph of one step and runs it. Not copyable; one per step.
class StepBuilder {
 public:
  /// Simulates every rank (run.detail full) or one data-parallel replica (symmetric). A
  /// simulated rank runs its kernels at its GPU's kernel-time factor (full), or in symmetric
  /// mode at the slowest factor among its data-parallel peers — the replica it stands for waits
  /// at every data-parallel collective for that member, so the simulated one runs at its pace
  /// (exact for the draw: the maximum of the very factors a full run gives those GPUs).
  StepBuilder(World& w, const Costs& costs, std::int64_t index);
  StepBuilder(const StepBuilder&) = delete;
  StepBuilder& operator=(const StepBuilder&) = delete;

  World& world() { return w_; }
  const Layout& layout() const { return w_.layout; }
  const Costs& costs() const { return costs_; }
  engine::TaskGraph& graph() { return graph_; }

  /// The simulated global ranks, ascending; their index in this vector is their local index.
  const std::vector<int>& ranks() const { return ranks_; }
  /// The local index of global rank `global`, or −1 if it is not simulated op by op.
  int local_of(int global) const;
  /// The local indices of the simulated members of `group` (global ranks), in group order.
  std::vector<int> simulated(const std::vector<int>& group) const;
  /// The kernel-time factor the simulated rank `local` runs at (see the constructor).
  double kernel_time_factor(int local) const { return slowdown_[static_cast<std::size_t>(local)]; }

  std::uint32_t name(const std::string& text) { return w_.sink.intern_name(text); }
  StreamId add_stream(const std::string& label) { return graph_.add_stream(label); }
  /// Creates the compute stream of every simulated rank, in rank order (first thing built).
  void add_compute_streams();
  void depend(TaskId before, TaskId after) { graph_.add_dependency(before, after); }

  /// The ops `ops` as one kernel sequence on `local`'s compute stream, their time scaled by the
  /// rank's kernel-time factor, at the speed its SMs give (gpu_sms.hpp).
  TaskId compute(int local, EventKind kind, const TimedOps& ops, std::uint32_t name);
  /// A collective over `group` (global ranks) on `stream`, recorded on the simulated `participants`.
  TaskId collective(comm::CollectiveOp op, std::vector<int> group, double bytes, std::uint32_t name,
                    const std::vector<int>& participants, StreamId stream);
  /// The same collective over several groups at once (each its own instance); done when all are.
  /// Its kernels hold `kernel_sms` SMs on each member (-1: the communicator's, kernel_sms()).
  TaskId collectives(comm::CollectiveOp op, std::vector<std::vector<int>> groups, double bytes, std::uint32_t name,
                     const std::vector<int>& participants, int kernel_sms = -1);
  /// A point-to-point send of `bytes` from global rank `src` to `dst`, over the cluster route,
  /// after the collective library's launch latency.
  TaskId send(int src, int dst, double bytes, std::uint32_t name, const std::vector<int>& participants);
  /// Sends of `bytes` each along all `hops` at once; done when the last arrives.
  TaskId sends(std::vector<std::pair<int, int>> hops, double bytes, std::uint32_t name,
               const std::vector<int>& participants);
  /// The same transfers by the GPUs' copy engines (peer-to-peer copies of mapped memory, as
  /// torch's symmetric memory issues them): recorded as communication of the participants, but
  /// they take none of their SMs (gpu_sms.hpp) — no NCCL kernel runs.
  TaskId copies(std::vector<std::pair<int, int>> hops, double bytes, std::uint32_t name,
                const std::vector<int>& participants);
  /// Waits on `local`'s compute stream for its next input batch (a stall, if the loaders are
  /// behind) and its host-to-device copy.
  TaskId data(int local);

  /// The task under `key`, made by `make` the first time it is asked for.
  TaskId shared(const SharedTaskKey& key, const std::function<TaskId()>& make);

  UnitTasks& units() { return units_; }
  /// Whether `gpus` (global ranks) sit on more than one node. O(gpus).
  bool spans_nodes(const std::vector<int>& gpus) const;

  /// Runs the graph to its last task; throws std::logic_error on a deadlock. Then measures the
  /// step (step_metrics). O(tasks + events).
  StepMeasurement run();
  std::size_t tasks() const { return graph_.size(); }

 private:
  // 32 bytes: a step of a deep pipeline holds millions.
  struct TaskMeta {  // (copy_engine sits in kind's padding)
    /// Compute: the ops (their bytes are per op); data and communication: the bytes moved.
    union Payload {
      const TimedOps* ops;
      double bytes;
    };
    std::int32_t rank = -1;  // compute, data: the global rank; communication: -1
    EventKind kind = EventKind::forward;
    bool copy_engine = false;  // communication by copy engines: takes no SMs
    std::uint32_t name = 0;
    std::int32_t local = -1;  // compute, data: the local index of `rank`
    Payload what{nullptr};
    std::uint32_t first_participant = 0;  // communication: range in participants_
    std::uint32_t participant_count = 0;
  };

  void send_all(const std::vector<std::pair<int, int>>& hops, double bytes, std::function<void()> done);
  int kernel_sms(bool spans_nodes) const;
  void comm_begin(TaskId id, double hbm_rate, int sms);
  void comm_end(engine::TaskGraph& g, TaskId id, double hbm_rate, int sms);
  void remember(TaskId id, TaskMeta meta);
  void remember_comm(TaskId id, std::uint32_t name, double bytes, const std::vector<int>& participants);
  void observe(TaskId id, Time s, Time e);

  World& w_;
  const Costs& costs_;
  std::int64_t index_;
  engine::TaskGraph graph_;
  std::vector<int> ranks_;              // simulated global ranks, ascending
  std::map<int, int> local_of_;         // global → local index
  std::vector<StreamId> streams_;       // compute stream per local rank
  std::vector<GpuSms> sms_;             // per local rank
  std::vector<double> slowdown_;        // kernel-time factor per local rank
  std::deque<TaskMeta> meta_;  // a deque: no doubling copy of millions of entries (peak memory)
  std::vector<int> participants_;
  std::vector<RankTimeline> timeline_;
  std::uint32_t compute_resource_ = 0, comm_resource_ = 0, data_resource_ = 0, data_name_ = 0;
  std::map<SharedTaskKey, TaskId> shared_;
  UnitTasks units_;
};

}  // namespace ironlaw::run::detail
