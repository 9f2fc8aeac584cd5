#pragma once
/// \file Data parallelism: the gradient collectives of each gradient-reduction group (DP × CP)
/// and the optimizer step after them, one strategy per ZeRO stage:
/// - ZeRO 0 (DDP): gradient buckets of `parallel.bucket_bytes`, filled in the order the last
///   microbatch's backward finishes the units, each all-reduced as soon as it is full,
///   overlapping the rest of backward (earlier microbatches only accumulate locally);
/// - ZeRO 1 and 2: the same buckets reduce-scattered, the optimizer updates the rank's shard,
///   and the updated parameters are all-gathered after it;
/// - ZeRO 3 (FSDP): each unit's parameters all-gathered before its forward and again before
///   its backward, one unit ahead of compute (at most two units unsharded), and its gradients
///   reduce-scattered after its backward — on the group's one communicator, so in backward
///   the next unit's gather queues behind the previous unit's reduce-scatter (under
///   parallel.reshard_after_forward false, FSDP's SHARD_GRAD_OP, a unit stays gathered from its
///   forward to its post-backward: no backward gathers); with pipeline
///   parallelism (torchtitan's FSDP2 with
///   reshard_after_forward=False) each unit gathered once per step before its first forward
///   and its accumulated gradients reduce-scattered after its chunk's last backward.
///   Under FSDP1 (parallel.fsdp_version 1, FullyShardedDataParallel with limit_all_gathers) a
///   unit's gather waits until the unit two before it has finished its pass (its reshard frees
///   the flat parameter: the rate limiter's event), not merely started it.
/// Gradients travel in training.reduce_dtype; ZeRO-3 gathers linear weights in fp8 under
/// training.fp8_all_gather. Under ZeRO 0–2 a MoE model's routed experts form groups of their own
/// (the ranks holding the same experts), reduced beside the dense groups on their own
/// communicators.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "run/pipeline_schedule.hpp"
#include "run/step_builder.hpp"

namespace ironlaw::run::detail {

/// Which of a unit's parameters a reduction group reduces.
enum class ParamPart : std::uint8_t {
  all,      ///< every parameter (no separate expert group)
  dense,    ///< all but the routed experts, over DP × CP
  experts,  ///< the routed experts, over the ranks that hold the same experts (Layout::edp_group)
};

/// One gradient-reduction group as the strategies see it.
struct ReductionGroup {
  std::vector<int> group;    ///< global ranks that hold the same parameters (DP × CP; experts: Layout::edp_group)
  ParamPart part = ParamPart::all;  ///< which of the units' parameters it reduces
  std::vector<int> members;  ///< their simulated local indices
  std::vector<int> units;    ///< the units the representative holds, in the order backward completes them
  int last_microbatch = 0;   ///< the microbatch whose backward completes the gradients
  /// Per entry of `units`: the unit whose backward ends its chunk's pass of last_microbatch
  /// (the chunk's last unit in backward order).
  std::vector<int> chunk_end;
  /// (unit, microbatch) of the representative's units in the order their first forward runs.
  std::vector<std::pair<int, int>> first_use;
  /// The group's communicator: every collective of the group, in the order the framework issues
  /// them. One NCCL communicator (one torch.distributed process group) runs one collective at a
  /// time, whatever CUDA streams the framework issues them from, so an all-gather queued behind a
  /// reduce-scatter waits for it (pytorch/pytorch#65299: FSDP's all-gather and post-backward
  /// streams "allow one process group to run single NCCL stream only"; #186335: FSDP2 issues both
  /// "through the same process group — one NCCL communicator, which processes one collective at
  /// a time and so serializes them on the wire"; Megatron-FSDP's runtime_schedule.md: "When AG and
  /// RS share a NCCL communicator, the communicator enforces the host-side launch order even if
  /// the operations use independent streams", with an nsys probe in docs/scripts; Megatron-core's
  /// distributed optimizer gathers and reduces over the same data-parallel group by default).
  StreamId communicator = 0;
  /// Tasks the group's gradient reduction waits for besides the backward (DeepSpeed's all-reduce
  /// of tied gradients, which its schedule runs first).
  std::vector<TaskId> after;
};

/// Adds the gradient collectives of one group; returns the tasks the optimizer waits for.
class DataParallelStrategy {
 public:
  virtual ~DataParallelStrategy() = default;
  /// The collectives that complete the group's gradients (the optimizer waits for all).
  virtual std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const = 0;
  /// What follows the optimizer (ZeRO 1/2: the parameter all-gather). `optimizer`: its tasks.
  virtual void after_optimizer(StepBuilder&, const ReductionGroup&, const std::vector<TaskId>&) const {}
  /// Whether the strategy reduces the routed experts over their own group (ParamPart): the
  /// bucketed ones (ZeRO 0–2), as Megatron-core's DistributedDataParallel keeps the expert
  /// parameters in buffers of their own, reduced over the expert-data-parallel group
  /// (distributed_data_parallel.py expert_parallel_buffers). FSDP and DeepSpeed's BF16_Optimizer
  /// reduce them with the rest over DP × CP (an overcount of their traffic).
  virtual bool splits_experts() const { return false; }
};

/// The parameters unit `u` holds on one rank: 0 … layers−1 the layers, `layers` the embedding,
/// layers+1 the head; of them, `part`'s. O(1).
double unit_params(const Costs& costs, int layers, int u, ParamPart part = ParamPart::all);
/// Bytes a ZeRO-3 all-gather of unit `u` moves (and leaves gathered): a layer's linear weights
/// at gathered_linear_bytes (1 under fp8 all-gather), its norm gains and the embedding and head
/// at parameter_bytes. O(1).
double unit_gather_bytes(const Costs& costs, const config::TrainingSpec& training, int layers, int u,
                         ParamPart part = ParamPart::all);

/// The strategy of the scenario: DeepSpeed's BF16_Optimizer reduction under
/// training.bf16_optimizer (ZeRO 0–2), else that of ZeRO stage parallel.zero (0–3); throws
/// std::invalid_argument for another stage.
std::unique_ptr<DataParallelStrategy> make_data_parallel(const config::Scenario& s);

/// For every gradient-reduction group of the step (represented by its rank with dp = cp = 0):
/// its collectives under `strategy`, then the optimizer on each simulated member, then what
/// follows it. With pp > 1 and tied embeddings, the all-reduce of the tied gradients between
/// the first and the last stage, before (DeepSpeed) or after (Megatron) the groups' reduction;
/// the two stages' optimizers wait for it. Units complete in the order of `schedule`'s last backward (or weight-gradient)
/// slots. O(groups · units · microbatches).
void build_data_parallel(StepBuilder& b, const DataParallelStrategy& strategy, const PipelineSchedule& schedule);

}  // namespace ironlaw::run::detail
