#pragma once
/// \file The parallelisms inside one pass of one unit: tensor parallelism (Megatron's
/// all-reduces at the sync points), expert parallelism (the MoE all-to-alls) and context
/// parallelism (ring attention), each adding its own tasks, and the PassRunner that lays a
/// pass's parts (step_costs: ops cut where communication must happen) on the ranks of one TP
/// group and asks the right parallelism for the task after each part.
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "run/step_builder.hpp"

namespace ironlaw::run::detail {

/// Megatron tensor parallelism: the all-reduce of one microbatch's activations (or their
/// gradients) over a TP group, on a stream of the group's own, so that the group's
/// collectives run one at a time and in order. Under parallel.sequence_parallel (Megatron SP,
/// Korthikanti et al. 2022 §4.2.2) each all-reduce is a reduce-scatter and an all-gather of
/// the same buffer: the same bytes on a ring, as two collectives.
class TensorParallel {
 public:
  explicit TensorParallel(StepBuilder& b);
  /// Creates the stream of the TP group whose first member is global rank `first`.
  void add_group(int first);
  /// The all-reduce over `group` (local indices of one TP group) of what `inputs` computed;
  /// under sequence parallelism its reduce-scatter and all-gather, the all-gather of 1-byte
  /// elements when `fp8_gather` (Float8 TP). Returns the last collective (what the next part
  /// waits for).
  TaskId all_reduce(const std::vector<int>& group, const std::vector<TaskId>& inputs, bool fp8_gather = false);
  /// Whether the group runs Megatron sequence parallelism (its syncs are reduce-scatters and
  /// all-gathers).
  bool sequence_parallel() const { return sequence_parallel_; }
  /// Sequence parallelism only: the reduce-scatter of what `inputs` computed, alone.
  TaskId reduce_scatter(const std::vector<int>& group, const std::vector<TaskId>& inputs);
  /// The all-gather of one microbatch's activations over `group` that follows reduce-scatter
  /// `rs` (kNoTask: none) once `inputs` are done as well (1-byte elements when `fp8_gather`):
  /// sequence parallelism's, and DeepSpeed's PartitionedTensor.full() (parallel.pp_runtime
  /// deepspeed).
  TaskId all_gather(const std::vector<int>& group, TaskId rs, const std::vector<TaskId>& inputs, bool fp8_gather);

  /// Whether the group runs AsyncTP (parallel.async_tp): its all-gathers are fused with the
  /// GEMMs that consume them and its forward reduce-scatters with the GEMMs that produce them
  /// (Part::fused parts); only the reduce-scatters of backward input gradients and the
  /// embedding's collectives stay plain.
  bool async() const { return async_; }
  /// A fused part (Part::fused) on every member of `group`, as torch's symmetric-memory kernels
  /// run it (torch/distributed/_symmetric_memory, _pipelined_all_gather_and_consume and
  /// _pipelined_produce_and_all2all): copy-engine pulls over NVLink, no SMs, each step a
  /// permutation of the group. gather: the shard copied into the rank's buffer, a barrier, the
  /// GEMM on the rank's own shard; then for k = 1 … tp−1 rank r pulls the shard of rank r + k
  /// (pulls one at a time; the k-th also after the GEMM of step k−2, which shared its stream)
  /// and runs the GEMM on it. scatter: for k = 1 … tp−1 the GEMM of the rows of rank r + k, a
  /// barrier, and that rank pulls them (a step's GEMM also waits for the pull of step k−2: two
  /// buffers alternate), then the rank's own rows, then the sum of its tp partials. The GEMM
  /// chunks run in order on the compute stream. `first[g]` gets member g's first task when it
  /// is kNoTask; the first task waits for `gates[g]`. Returns each member's last task.
  std::vector<TaskId> fused(const std::vector<int>& group, const Part& part, EventKind kind, std::uint32_t name,
                            const std::vector<TaskId>& gates, std::vector<TaskId>& first);

  /// Whether the group's plain sequence-parallel collectives re-lay their tensors, as torch's
  /// functional collectives do for a dimension other than 0 (PyTorch model code under SP:
  /// DTensor's Shard(1) of a (batch, sequence, hidden) activation, torch/distributed/
  /// _functional_collectives.py): reduce_scatter_tensor(scatter_dim=1) first copies its input
  /// into rank order (torch.cat(torch.chunk(x, tp, dim=1))), all_gather_tensor(gather_dim=1)
  /// copies the rank-stacked output into sequence order (torch.cat(torch.chunk(out, tp, dim=0),
  /// dim=1)). Each copy reads and writes the whole microbatch's tensor on every member, at the
  /// device's achieved HBM bandwidth; torch.cat copies even where the layouts coincide (one
  /// sequence per microbatch), and compiled blocks keep it (a copy kernel between the collective
  /// and the cuBLAS GEMM that reads its result). Megatron's SP gathers along its first dimension
  /// (sequence-first activations): no copy. AsyncTP's fused collectives are not these.
  bool relayouts() const { return relayout_; }
  /// A pass's sequence-parallel reduce-scatter of what `inputs` computed, after each member's
  /// copy of its input when relayouts() (in `kind` records).
  TaskId scatter_in_pass(const std::vector<int>& group, const std::vector<TaskId>& inputs, EventKind kind);
  /// A pass's sequence-parallel all-gather (all_gather's arguments), then each member's copy of
  /// its output when relayouts(): what the next part waits for, per member (the all-gather for
  /// every member otherwise).
  std::vector<TaskId> gather_in_pass(const std::vector<int>& group, TaskId rs, const std::vector<TaskId>& inputs,
                                     bool fp8_gather, EventKind kind);

 private:
  /// Each member's copy of its reduce-scatter input, after `inputs[g]` (relayouts() only; else
  /// `inputs` unchanged): what the reduce-scatter waits for.
  std::vector<TaskId> relayout_before_scatter(const std::vector<int>& group, const std::vector<TaskId>& inputs,
                                              EventKind kind);
  /// Each member's copy of all-gather `ag`'s output (1-byte elements when `fp8_gather`): what the
  /// next part waits for (relayouts() only; else `ag` for every member).
  std::vector<TaskId> relayout_after_gather(const std::vector<int>& group, TaskId ag, bool fp8_gather, EventKind kind);

  std::vector<int> global_of(const std::vector<int>& group) const;

  StepBuilder& b_;
  std::uint32_t name_;
  bool sequence_parallel_;
  bool async_;
  bool relayout_ = false;
  std::uint32_t relayout_name_ = 0;
  TimedOps scatter_copy_, gather_copy_, fp8_gather_copy_;
  std::uint32_t reduce_scatter_name_ = 0, all_gather_name_ = 0, fused_gather_name_ = 0, fused_scatter_name_ = 0;
  std::map<int, StreamId> streams_;  // by the group's first global rank
};

/// Expert parallelism: the dispatch and combine all-to-alls of an EP group.
class ExpertParallel {
 public:
  explicit ExpertParallel(StepBuilder& b);
  /// The first and the last task of an expert exchange: the computation before it waits for
  /// `entry`, the computation after it for `exit` (the same task without a routing exchange).
  struct Exchange {
    TaskId entry, exit;
  };
  /// The all-to-all of `local`'s EP group at part `part` of the pass `key`, shared with the
  /// other TP groups in it. In the symmetric mode the other EP groups of the same (tp, cp, pp)
  /// coordinate — in replicas that are not simulated op by op — run theirs at the same
  /// moment, so their flows are started too. `routing`: a forward dispatch, preceded by the
  /// dispatcher's all-gather of routing metadata over the same groups (StepCosts::
  /// routing_exchange_bytes), which the tokens wait for: the dispatcher sizes its receive
  /// buffers from it (HybridEP's metadata preprocessing, Megatron-core's all-to-all-v splits).
  Exchange all_to_all(int local, const PassKey& key, int part, bool routing);

 private:
  /// The EP groups that exchange at once with `rank`'s (see all_to_all).
  std::vector<std::vector<int>> groups_with(int rank) const;

  StepBuilder& b_;
  std::uint32_t name_;
  std::optional<std::uint32_t> routing_name_;
};

/// Context parallelism as torch.distributed.tensor.experimental.context_parallel runs it by
/// default (torch _attention.py): each rank's K and V all-gathered over the CP group once per
/// pass, then cp attention steps on blocks of the rank's load-balanced chunks, merged in fp32.
class ContextParallel {
 public:
  explicit ContextParallel(StepBuilder& b);
  /// Ring attention on one rank: step 0 (`part.ops`) on its own K/V while the all-gather of
  /// every rank's K/V (`part.ring_bytes` each, shared by the CP group) runs; steps 1 … cp−1
  /// after it, `kv_half` for steps ≤ the rank's CP index and `q_half` after; backward: each
  /// step's accumulation waits for the previous step's dK, dV from the previous rank
  /// (`ring_gradient_bytes`, a send along the ring after every step), `finish` for the last.
  /// `gate`: a collective the first step waits for; `before`: the rank's task before the ring.
  /// Returns the first and last compute task.
  std::pair<TaskId, TaskId> ring_attention(int local, const Part& part, EventKind kind, std::uint32_t name,
                                           TaskId gate, TaskId before, const PassKey& key, int part_index);

 private:
  StepBuilder& b_;
  std::uint32_t name_;
};

/// FSDP's (ZeRO-3's) memory-bound copies around its collectives, on the compute stream of the
/// ranks that gather, at the device's achieved HBM bandwidth (workload::op_time), as FSDP2 runs
/// them (FSDP2's _fsdp_collectives.py, PyTorch 2.5–2.6):
/// - copy-out before the pass that follows a gather (foreach_all_gather_copy_out:
///   split_with_sizes_copy from the all-gather output into the unsharded parameters, in the
///   default stream): reads and writes the gathered bytes, 2 · unit_gather_bytes;
/// - without PP, after each backward that produces the unit's gradients, the reduce-scatter
///   copy-in (foreach_reduce_scatter_copy_in: the unsharded gradients cast into the flat input
///   in the reduce dtype): pb + rb per parameter;
/// - with PP (gradient sync off until the last microbatch), after each such backward the
///   accumulation of the unsharded gradients: with a reduce dtype other than the parameters'
///   FSDP2 upcasts the first (pb read, rb written) and adds the later ones (pb + rb read, rb
///   written); in the parameters' dtype autograd adds them (2·pb read, pb written) — and after the
///   last microbatch's, the copy-in (rb read, rb written).
/// Not timed: the all-gather copy-in of the shard (1/dp of the copy-out, on FSDP2's copy-in
/// stream). A pass produces a unit's gradients when it holds a weight-gradient or
/// embedding-gradient op (the fused backward, or the W pass of a split one).
/// FSDP1 (parallel.fsdp_version 1, FullyShardedDataParallel with flat parameters; pp 1 only):
/// the all-gather writes the flat parameter the module's parameters are views of, so there is
/// no copy-out; after each backward that produces a unit's gradients, autograd's backward of
/// those views (split_with_sizes_backward: a cat into the flat gradient) reads and writes pb per
/// parameter, "fsdp_grad_cat"; with a reduce dtype other than the parameters' the flat gradient
/// is cast to it (pb read, rb written), "fsdp_grad_cast"; and _reduce_grad divides it in place
/// by the gradient pre-divide factor (> 1 for every group of 2 or more ranks) before the
/// reduce-scatter, 2·rb, "fsdp_grad_predivide" (torch/distributed/fsdp/_runtime_utils.py).
/// Megatron-FSDP (ZeRO-3 under Megatron-style code: training.framework fused or cuda_graphs;
/// Megatron-LM megatron/core/distributed/fsdp, param_and_grad_buffer.py): the parameters view
/// the bucket the all-gather fills, so no copy-out; with gradient_accumulation_fusion,
/// Transformer Engine's weight-gradient GEMMs write into the bucket's main_grad ("zero-copy",
/// the GEMM's fp32 accumulation timed in its bytes), so nothing after the backward either;
/// without it the gradients go into the bucket as FSDP2's do (its copy-in; under a pipeline its
/// per-microbatch accumulation).
class FsdpCopies {
 public:
  explicit FsdpCopies(StepBuilder& b);
  /// The copy-out that precedes pass `key` on the TP group led by local rank `local`, or nullptr.
  const TimedOps* before(int local, const PassKey& key);
  /// The copies that follow pass `key` (with parts `parts`) on `local`'s group, or nullptr.
  const TimedOps* after(int local, const PassKey& key, const PartList& parts);

 private:
  enum Kind { copy_out, copy_in, upcast, accumulate, upcast_last, accumulate_last, flat_grad };
  const TimedOps& ops(int unit, Kind kind);

  StepBuilder& b_;
  bool on_ = false;
  bool pipelined_ = false;
  bool kept_ = false;           // SHARD_GRAD_OP (reshard_after_forward false): no backward gather
  bool fsdp1_ = false;
  bool megatron_ = false;       // Megatron-FSDP: no copy-out
  bool fused_grads_ = false;    // ... and, with gradient_accumulation_fusion, no copy-in
  OpTimer timer_;
  std::map<std::pair<int, int>, TimedOps> cache_;           // (unit, kind)
  std::set<std::tuple<int, int, int>> gathered_;             // (local, gather index, unit)
  std::map<std::pair<int, int>, int> gradients_;             // (local, unit) → passes seen
};

/// Gradient accumulation across the microbatches of a step, outside FSDP: after the first
/// microbatch's backward of a unit, each later backward that produces the unit's gradients adds
/// them into the accumulated ones, a memory-bound pass on the compute stream at the device's
/// achieved HBM bandwidth: the fresh gradient read (pb), the accumulated one read and written in
/// its dtype (rb = reduce_bytes: the parameters' dtype, or fp32 under reduce_dtype fp32, as
/// Megatron's accumulate_allreduce_grads_in_fp32 keeps main_grad): pb + 2·rb per parameter,
/// "grad_accumulate". PyTorch's AccumulateGrad does this in place for microbatches 2…m
/// (`.grad += new`, under DDP's no_sync); Megatron-LM's LocalDDP (2021) registers a hook per
/// parameter that runs param.main_grad.add_(param.grad) after every backward
/// (megatron/model/distributed.py, _make_param_hook). Not modelled: LocalDDP's add of the first
/// microbatch into its zeroed buffer and the zeroing itself (2 of the m + 1 passes). Off under
/// Megatron's later gradient_accumulation_fusion (training.gradient_accumulation_fusion: the wgrad
/// GEMM's epilogue adds into the fp32 main_grad, timed in the GEMM's bytes), under FSDP
/// (FsdpCopies accumulates there) and with one microbatch. DeepSpeed's BF16_Optimizer
/// (training.bf16_optimizer) instead runs update_hp_grads after every microbatch's backward, the
/// first included: each bf16 gradient cast to an fp32 temporary, then added into the fp32
/// buffer, pb + 4·rb per parameter in two kernels, "hp_grad_update" (its per-parameter-tensor
/// launches are counted as two per unit; the fp32 temporary's memory is not replayed). O(1) per pass.
class GradientAccumulation {
 public:
  explicit GradientAccumulation(StepBuilder& b);
  /// The accumulation that follows pass `key` (with parts `parts`) on `local`'s group, or nullptr.
  const TimedOps* after(int local, const PassKey& key, const PartList& parts);

 private:
  StepBuilder& b_;
  bool on_ = false;
  bool cast_copy_ = false;  // training.bf16_optimizer: every microbatch, through an fp32 temporary
  OpTimer timer_;
  std::map<int, TimedOps> cache_;                 // unit → its accumulation
  std::map<std::pair<int, int>, int> gradients_;  // (local, unit) → backward passes seen
};

/// Lays passes on the ranks of a TP group.
class PassRunner {
 public:
  explicit PassRunner(StepBuilder& b) : b_(b), tp_(b), ep_(b), cp_(b), fsdp_(b), accumulation_(b) {}

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

  /// The same pass laid one part at a time, so that another pass's parts can be laid between
  /// two of its parts on the same compute streams (parallel.moe_a2a_overlap): run() is a cursor
  /// stepped to its end. The FSDP copy-out, if any, is laid on construction; the copies after the
  /// pass with its last part. `group`, `parts` and `gates` must outlive the cursor; `gates` is
  /// the caller's, carried as run() carries it.
  class Cursor {
   public:
    Cursor(PassRunner& runner, const std::vector<int>& group, const PartList& parts, EventKind kind,
           std::uint32_t name, std::vector<TaskId>& gates, const PassKey& key);
    bool done() const { return done_; }
    /// Lays the next part (and, after the last, the copies that follow the pass).
    void step();
    /// Per member, the first and last compute task laid so far.
    const PassTasks& tasks() const { return out_; }

   private:
    void finish();

    PassRunner& r_;
    const std::vector<int>& group_;
    const PartList& parts_;
    EventKind kind_;
    std::uint32_t name_;
    std::vector<TaskId>& gates_;
    PassKey key_;
    PassTasks out_;
    std::vector<TaskId> async_gates_;  // collectives beside the current (wgrad) part
    bool fp8_tp_ = false;
    int last_sync_ = -1;
    TaskId pending_rs_ = kNoTask;  // SP: a reduce-scatter whose all-gather waits for the next part
    bool pending_fp8_ = false;
    std::size_t next_ = 0;
    bool done_ = false;
  };

 private:
  StepBuilder& b_;
  TensorParallel tp_;
  ExpertParallel ep_;
  ContextParallel cp_;
  FsdpCopies fsdp_;
  GradientAccumulation accumulation_;
};

}  // namespace ironlaw::run::detail
