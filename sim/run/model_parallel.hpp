#pragma once
/// \file The parallelisms inside one pass of one unit: tensor parallelism (Megatron's
/// all-reduces at the sync points), expert parallelism (the MoE all-to-alls) and context
/// parallelism (ring attention), each adding its own tasks, and the PassRunner that lays a
/// pass's parts (step_costs: ops cut where communication must happen) on the ranks of one TP
/// group and asks the right parallelism for the task after each part.
#include <utility>
#include <vector>

#include "run/step_builder.hpp"

namespace ironlaw::run::detail {

/// Megatron tensor parallelism: the all-reduce of one microbatch's activations (or their
/// gradients) over a TP group, on a stream of the group's own, so that the group's
/// collectives run one at a time and in order.
class TensorParallel {
 public:
  explicit TensorParallel(StepBuilder& b);
  /// Creates the stream of the TP group whose first member is global rank `first`.
  void add_group(int first);
  /// The all-reduce over `group` (local indices of one TP group).
  TaskId all_reduce(const std::vector<int>& group);

 private:
  StepBuilder& b_;
  std::uint32_t name_;
  std::map<int, StreamId> streams_;  // by the group's first global rank
};

/// Expert parallelism: the dispatch and combine all-to-alls of an EP group.
class ExpertParallel {
 public:
  explicit ExpertParallel(StepBuilder& b);
  /// The all-to-all of `local`'s EP group at part `part` of the pass `key`, shared with the
  /// other TP groups in it. In the symmetric mode the other EP groups of the same (tp, cp, pp)
  /// coordinate — in replicas that are not simulated op by op — run theirs at the same
  /// moment, so their flows are started too.
  TaskId all_to_all(int local, const PassKey& key, int part);

 private:
  StepBuilder& b_;
  std::uint32_t name_;
};

/// Context parallelism: ring attention, the key/value blocks passed around the CP group while
/// each rank computes attention against the block it holds.
class ContextParallel {
 public:
  explicit ContextParallel(StepBuilder& b);
  /// Ring attention on one rank: `part.ring_steps` blocks of the attention core; block k waits
  /// for the k-th key/value exchange of the CP ring, and exchange k follows exchange k−1 (each
  /// rank forwards the block it just received). Exchanges are shared by the CP group. `gate`:
  /// a collective the first block waits for; `before`: the rank's task before the ring.
  /// Returns the first and last compute task.
  std::pair<TaskId, TaskId> ring_attention(int local, const Part& part, EventKind kind, std::uint32_t name,
                                           TaskId gate, TaskId before, const PassKey& key, int part_index);

 private:
  StepBuilder& b_;
  std::uint32_t name_;
};

/// Lays passes on the ranks of a TP group.
class PassRunner {
 public:
  explicit PassRunner(StepBuilder& b) : b_(b), tp_(b), ep_(b), cp_(b) {}

  TensorParallel& tensor_parallel() { return tp_; }

  /// Per member of the group, the first and last compute task of a pass.
  struct PassTasks {
    std::vector<TaskId> first, last;
  };

  /// Runs `parts` on every rank of `group` (local indices, one TP group), in lockstep: a TP
  /// collective after each sync part, which the right later parts wait for, an all-to-all
  /// after an expert marker, ring attention for a ring part. `gates[g]`: the communication
  /// task member g's next part must wait for (kNoTask: none); carried across calls, so a pass
  /// that ends in a collective holds back the next one. O(parts · group).
  PassTasks run(const std::vector<int>& group, const PartList& parts, EventKind kind, std::uint32_t name,
                std::vector<TaskId>& gates, const PassKey& key);

 private:
  StepBuilder& b_;
  TensorParallel tp_;
  ExpertParallel ep_;
  ContextParallel cp_;
};

}  // namespace ironlaw::run::detail
