#pragma once
/// \file What one training step costs on one rank, computed once per simulation: every pass of
/// every kind of unit (dense layer, MoE layer, embedding, head) as ops timed on the device and
/// cut into parts where communication must happen (tensor-parallel collectives, expert
/// all-to-alls, ring-attention exchanges); the parameters each rank holds; the bytes of its
/// activations and all-to-alls; its optimizer step.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "core/time.hpp"
#include "run/layout.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run::detail {

/// Ops run back to back as one task, with their simulated durations on the device: each op's
/// time is its execution plus any gap the GPU idled waiting for the rank's host thread to issue
/// its kernels (workload::HostQueue, the host starting on the part when the part may start).
struct TimedOps {
  std::vector<workload::Op> ops;
  std::vector<Time> times;
  workload::HostQueue queue{Time::zero()};
  std::vector<std::uint32_t> name_ids;
  Time total;
  /// Of `total`: the execution of memory-bound ops (workload::memory_time) and the gaps the GPU
  /// waits for the host; the rest is compute-bound execution (how each part slows beside
  /// communication: gpu_sms.hpp).
  Time memory_bound;
  Time host_wait;
  double flops = 0;
  double bytes = 0;
};

/// What follows a compute part: nothing, or a tensor-parallel collective that the next part
/// waits for (`sync`), or one that runs concurrently with the next part — the weight-gradient
/// GEMM — and that the part after it waits for (`sync_async`, Megatron's async all-reduce), or a
/// sequence-parallel all-gather alone that the next part waits for (`gather`: a PyTorch
/// recompute's, workload::OpRole::tp_sequence_gather).
enum class After { none, sync, sync_async, all_to_all, gather };

/// A run of ops on one rank. A ring part (`ring_steps` > 0) is context parallelism's ring
/// attention: its ops run `ring_steps` times, the k-th after the k-th key/value block has
/// arrived from the previous rank of the CP ring (`ring_bytes` per hop), overlapping the
/// exchange of the next block.
struct Part {
  TimedOps ops;
  After after = After::none;
  /// The all-to-all after this part (After::all_to_all) is at the dispatch marker: in a forward
  /// or recompute pass the tokens' trip to the experts, which the dispatcher's routing exchange
  /// precedes (ExpertParallel::all_to_all); in backward the input gradients' trip home.
  bool dispatch = false;
  int ring_steps = 0;
  /// Forward: this rank's K and V block, all-gathered over the CP group once (torch's default
  /// "allgather" rotation). Backward: the same all-gather, then this rank's fp32 dK and dV,
  /// passed to the next rank after every step.
  double ring_bytes = 0;
  double ring_gradient_bytes = 0;
  /// Ring steps after the first (workload::ring_attention_ops): `ops` is step 0; a step meeting
  /// an earlier chunk's K/V runs `kv_half`, a later one `q_half`; backward steps then run their
  /// accumulation once the previous rank's dK, dV have arrived; `finish` after the last step.
  TimedOps kv_half, q_half, kv_half_accumulate, q_half_accumulate, finish;
  /// AsyncTP (parallel.async_tp): a part that is one GEMM fused with a sequence-parallel
  /// collective over the TP group, run as `fused_chunks` equal chunks (`ops`: one chunk's GEMM,
  /// 1/tp of its rows) interleaved with copy-engine transfers of `fused_bytes` each
  /// (model_parallel.hpp, PassRunner). gather: the all-gather of the GEMM's left operand first
  /// copied into the rank's symmetric buffer (`fused_prologue`), then chunk k consumes the shard
  /// of rank r + k once it has been pulled. scatter: chunk k produces rank r + k's rows of the
  /// output, pulled by that rank, the rank's own last; then the tp partial sums of its rows are
  /// added (`fused_epilogue`).
  enum class Fused : std::uint8_t { none, gather, scatter };
  Fused fused = Fused::none;
  /// AsyncTP: the part begins with a plain all-gather of the sequence-parallel activations or
  /// gradient, because no matmul takes the gathered tensor directly: the embedding's backward
  /// (its lookup is no matmul), and the casts of torchao's rowwise Float8 recipe before its GEMMs
  /// (torch's micro-pipeline pass, _find_consumer_matmuls, fuses an all-gather only with the
  /// mm / _scaled_mm nodes that read its result).
  bool gathers_input = false;
  int fused_chunks = 0;
  double fused_bytes = 0;
  TimedOps fused_prologue, fused_epilogue;
  /// FLOPs of the whole part on one rank (a ring part: every step; a fused part: every chunk).
  double total_flops() const {
    if (fused != Fused::none) return fused_chunks * ops.flops;
    if (ring_steps <= 1) return ops.flops;
    return ops.flops + (ring_steps - 1) * (kv_half.flops + kv_half_accumulate.flops) + finish.flops;
  }
};

/// One pass (forward, recompute or backward) of one unit, cut into parts at TP sync points.
using PartList = std::vector<Part>;

/// The tensor-parallel sync point that follows an op (Megatron's), if any, from its role:
/// row-parallel GEMM outputs and the vocab-parallel embedding are all-reduced before the next
/// op (`sync`); a column-parallel GEMM's input gradient is all-reduced while the weight
/// gradient that follows runs (`sync_async`), or before the next op when `weight_gradients_follow`
/// is false (a pass of input gradients only, whose weight gradients run later); a
/// tp_sequence_gather marker is an all-gather (`gather`).
After sync_after(const workload::Op& op, bool weight_gradients_follow = true);
/// Whether an expert-parallel all-to-all follows the op (the MoE markers).
bool all_to_all_after(const workload::Op& op);
/// Whether the op is the attention core (forward, recompute or backward), which CP turns into a ring.
bool is_attention_core(const workload::Op& op);

class OpTimer {
 public:
  /// Times ops on `device` in the training `precision`, their kernels issued by a host thread
  /// at the per-kernel cost of `framework`, each launch waiting for its kernel when
  /// `launch_blocking` (training.launch_blocking).
  OpTimer(const config::DeviceSpec& device, std::string precision, const std::string& framework, RecordSink& sink,
          bool launch_blocking = false)
      : device_(device), precision_(std::move(precision)), dispatch_(workload::host_dispatch_cost(device, framework)),
        launch_(library_call(device, framework, dispatch_, false)),
        gemm_call_(library_call(device, framework, dispatch_, true)),
        launch_blocking_(launch_blocking), sink_(sink) {}

  void add(TimedOps& t, const workload::Op& op) { add(t, op, workload::op_time(op, device_, precision_)); }
  /// `op` with the execution time `execution` (a kernel timed as part of a larger one).
  void add(TimedOps& t, const workload::Op& op, Time execution) {
    if (t.ops.empty()) t.queue = workload::HostQueue(dispatch_, launch_blocking_);
    const Time d =
        t.queue.push(execution, op.kernels, op.host_syncs, op.library_kernels, op.is_gemm() ? gemm_call_ : launch_);
    if (execution > Time::zero() && workload::memory_time(op, device_) >= execution) t.memory_bound += execution;
    t.host_wait += d - execution;
    t.ops.push_back(op);
    t.times.push_back(d);
    auto it = names_.find(op.name);
    if (it == names_.end()) it = names_.emplace(op.name, sink_.intern_name(op.name)).first;
    t.name_ids.push_back(it->second);
    t.total += d;
    t.flops += op.flops;
    t.bytes += op.bytes;
  }

  TimedOps whole(const std::vector<workload::Op>& ops) {
    TimedOps t;
    for (const auto& op : ops) add(t, op);
    return t;
  }

  /// How a pass is cut: TP sync points when tp > 1, all-to-alls when ep > 1, and a ring part
  /// around the attention core when cp > 1 (`ring_bytes` the key/value block of one hop).
  struct Cuts {
    bool tensor_parallel = false;
    bool expert_parallel = false;
    int context_parallel = 1;
    double ring_bytes = 0;
    workload::RingTensors ring_tensors;  ///< this rank's Q, O, K, V and log-sum-exp sizes
    bool weight_gradients_follow = true;  ///< false for a pass of input gradients only (sync_after)
    /// parallel.async_tensor_parallel_allreduce: false puts a column-parallel linear's weight
    /// gradient before its input gradient's all-reduce, which then blocks (sync): autograd's
    /// linear node computes both, then Megatron's copy-to-region backward all-reduces.
    bool async_input_grad_allreduce = true;
    /// parallel.async_tp with this TP degree (0: off): column-parallel GEMMs (forward,
    /// recompute) and row-parallel GEMMs' input gradients (backward) become fused gather
    /// parts, row-parallel GEMMs (forward, recompute) fused scatter parts (Part::fused).
    int async_tp = 0;
  };

  /// Cuts `ops` into parts (one part when nothing cuts them).
  PartList parts(const std::vector<workload::Op>& ops, const Cuts& cuts) {
    PartList out;
    if (ops.empty()) return out;
    out.emplace_back();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (cuts.context_parallel > 1 && is_attention_core(ops[i])) {
        if (out.back().ops.ops.empty()) out.pop_back();
        Part ring;
        const workload::RingAttentionOps steps = workload::ring_attention_ops(ops[i], cuts.ring_tensors);
        ring.ops = whole(steps.first);
        ring.kv_half = whole(steps.kv_half);
        ring.q_half = whole(steps.q_half);
        ring.kv_half_accumulate = whole(steps.kv_half_accumulate);
        ring.q_half_accumulate = whole(steps.q_half_accumulate);
        ring.finish = whole(steps.finish);
        ring.ring_steps = cuts.context_parallel;
        ring.ring_bytes = cuts.ring_bytes;
        // Backward passes this rank's dK and dV, accumulated in fp32, to the next rank.
        if (ops[i].role == workload::OpRole::attention_core_grad) ring.ring_gradient_bytes = 2 * cuts.ring_bytes;
        out.push_back(std::move(ring));
        out.emplace_back();
        continue;
      }
      if (cuts.async_tp > 1 && fused_kind(ops[i]) != Part::Fused::none) {
        if (out.back().ops.ops.empty()) out.pop_back();
        out.push_back(fused_part(ops[i], cuts.async_tp));
        out.emplace_back();
        continue;
      }
      if (cuts.async_tp > 1 && (ops[i].role == workload::OpRole::vocab_embedding_grad || casts_gathered_input(ops, i))) {
        if (!out.back().ops.ops.empty()) out.emplace_back();
        out.back().gathers_input = true;
      }
      add(out.back().ops, ops[i]);
      After a = cuts.tensor_parallel ? sync_after(ops[i], cuts.weight_gradients_follow) : After::none;
      if (cuts.expert_parallel && all_to_all_after(ops[i])) {
        a = After::all_to_all;
        out.back().dispatch = ops[i].role == workload::OpRole::expert_dispatch;
      }
      if (a == After::sync_async && !cuts.async_input_grad_allreduce) {
        if (i + 1 < ops.size() && ops[i + 1].role == workload::OpRole::weight_grad) add(out.back().ops, ops[++i]);
        a = After::sync;
      }
      if (a == After::none || i + 1 == ops.size()) {
        if (i + 1 == ops.size()) out.back().after = a;
        continue;
      }
      out.back().after = a;
      out.emplace_back();
      if (a == After::sync_async && i + 1 < ops.size() && ops[i + 1].role == workload::OpRole::weight_grad) {
        // The weight-gradient GEMM runs alone, concurrently with the collective.
        add(out.back().ops, ops[++i]);
        if (i + 1 < ops.size()) out.emplace_back();
      }
    }
    if (out.back().ops.ops.empty()) out.pop_back();
    return out;
  }

 private:
  /// What AsyncTP fuses with `op` (see Cuts::async_tp).
  static Part::Fused fused_kind(const workload::Op& op);
  /// Whether ops[i] is the rowwise Float8 cast of a GEMM that reads a sequence-parallel all-gather
  /// (Op::fp8_cast_after_gather): under AsyncTP the gather stays plain, before the cast.
  static bool casts_gathered_input(const std::vector<workload::Op>& ops, std::size_t i);
  /// `op` as a fused part over `tp` ranks (Part::fused).
  Part fused_part(const workload::Op& op, int tp);

  /// The host time of a kernel a library issues from its own loop (Op::library_kernels): a bare
  /// launch, or for a GEMM a cuBLASLt call (device library_gemm_call, else the bare launch); a
  /// CUDA graph replays them as every other kernel, at the framework's `dispatch`.
  static Time library_call(const config::DeviceSpec& device, const std::string& framework, Time dispatch,
                           bool gemm) {
    if (framework == "cuda_graphs") return dispatch;
    return gemm && device.library_gemm_call > Time::zero() ? device.library_gemm_call : device.kernel_launch_overhead;
  }

  const config::DeviceSpec& device_;
  std::string precision_;
  Time dispatch_;
  Time launch_;
  Time gemm_call_;
  bool launch_blocking_ = false;
  RecordSink& sink_;
  std::map<std::string, std::uint32_t> names_;
};

/// The costs of one kind of layer (dense, or mixture of experts), computed once per simulation.
/// `backward` is autograd's fused backward (each op's input gradient, then its weight
/// gradient). For schedules that split it (PipelineSchedule::splits_backward) `input_grad`
/// holds every backward op but the weight gradients — for a GEMM the dgrad, with the forward's
/// FLOPs — and `weight_grad` the weight-gradient GEMMs (the wgrad, the forward's FLOPs again);
/// both are empty otherwise. In an input-gradient pass a column-parallel GEMM's input gradient
/// is all-reduced before the next op runs: the weight gradient it overlapped comes later.
struct LayerCosts {
  PartList forward, recompute, backward;
  /// The forward of a step's first microbatch where it differs from `forward` (Transformer
  /// Engine's fp8 weight casts, cached for the later microbatches); empty otherwise.
  PartList first_forward;
  PartList input_grad, weight_grad;
  double params = 0;  // held by one rank: split over TP, routed experts over EP
  double linear_params = 0;  // the part of params in linear layers (not the norms)
  double expert_params = 0;  // the part of linear_params in routed experts (reduced over their own DP group)
};

struct Costs {
  LayerCosts dense, moe;
  std::vector<char> is_moe;                // by layer index
  /// A layer-list model: the costs of every layer, by index (dense, moe and is_moe unused).
  std::vector<LayerCosts> listed;
  /// The costs of layer `l` (its kind's, or its own in a layer list).
  const LayerCosts& layer(int l) const {
    if (!listed.empty()) return listed[static_cast<std::size_t>(l)];
    return is_moe[static_cast<std::size_t>(l)] ? moe : dense;
  }
  PartList embed_forward, embed_backward;  // first chunk: before its layers / after them
  PartList head_forward, head_backward;    // last chunk: after its layers / before them
  PartList embed_input_grad, embed_weight_grad, head_input_grad, head_weight_grad;  // split backward only
  TimedOps optimizer;
  /// Parameters of the embedding and of the LM head per TP rank. Tied embeddings count once, as
  /// the embedding, where one rank holds both (pp 1); with pp > 1 the last stage holds a copy of
  /// the table as its head (Megatron's word_embeddings on the last stage, DeepSpeed's TiedLayerSpec),
  /// with its own gradient, reduced over data parallelism like any other and then all-reduced
  /// with the first stage's (data_parallel.cpp, tied_embedding_reduction).
  double embed_params = 0, head_params = 0;
  double activation_bytes = 0;             // one microbatch's hidden states on a rank: tokens × hidden × bytes
  double all_to_all_bytes = 0;             // nccl-tests size of one MoE all-to-all per rank
  /// nccl-tests size (the gathered total) of the all-gather of routing metadata over the EP group
  /// that precedes each forward dispatch (ExpertParallel::all_to_all): hybridep the routing map,
  /// alltoall the per-expert token counts (workload::MoeAllToAll); 0 for deepep, whose notify
  /// kernel exchanges a few counts directly (not simulated: latency only, unmeasured).
  double routing_exchange_bytes = 0;
  /// DeepSpeed's pipeline engine with TP (parallel.pp_runtime deepspeed, tp > 1): the copies of
  /// PartitionedTensor (deepspeed/runtime/utils.py) around the TP all-gather of a tensor passed
  /// between stages, S = activation_bytes. full(): `gather_in` zero-fills the flat buffer and
  /// copies the rank's part in (S + 2S/tp, 2 kernels), the all-gather runs, `gather_out` copies
  /// the gathered parts out of NCCL's flat buffer and clones the result (4S, tp + 1 kernels);
  /// `partition` clones the rank's 1/tp before a send, or the received part before a forward
  /// (2S/tp, 1 kernel). Empty otherwise.
  TimedOps pipe_gather_in, pipe_gather_out, pipe_partition;
};

/// The costs of `scenario` under `layout` for a rank holding `per_rank` (the training spec with
/// the sequence split over CP), with the backward split into input and weight gradients when
/// `split_backward`. Op names are interned in `sink`.
Costs build_costs(const config::Scenario& scenario, const Layout& layout, const config::TrainingSpec& per_rank,
                  RecordSink& sink, bool split_backward = false);

}  // namespace ironlaw::run::detail
