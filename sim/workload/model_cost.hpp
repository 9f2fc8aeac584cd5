#pragma once
/// \file What a model costs, computed from its shape alone: parameters, FLOPs per op and per
/// token, bytes touched, memory per GPU. Pure functions of the specs; no simulation here.
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::workload {

/// Parameter count by part, from the shape (Llama 3 8B → 8.03e9).
struct ParamCount {
  double embedding = 0;      ///< token embedding table (vocab × hidden)
  double position = 0;       ///< learned position table (0 for RoPE)
  double attention = 0;      ///< Q, K, V, O projections (+ biases), all layers
  double mlp = 0;            ///< feed-forward weights (+ biases), all layers, all experts
  double mlp_active = 0;     ///< feed-forward weights a token actually uses (MoE: experts_per_token)
  double norm = 0;           ///< norm gains/biases, all layers + final norm
  double lm_head = 0;        ///< output projection (0 when tied to the embedding)

  double total() const { return embedding + position + attention + mlp + norm + lm_head; }
  /// Kaplan's N: everything but embedding and position tables.
  double non_embedding() const { return attention + mlp + norm + lm_head; }
  /// PaLM's N for MFU: parameters that take part in matmuls per token, i.e. all except the
  /// embedding/position lookups; the LM head counts (tied or not). MoE: active experts only.
  double matmul_active() const;
  double lm_head_matmul = 0;  ///< vocab × hidden, counted in matmuls even when tied
};
ParamCount count_params(const config::ModelSpec& model);

/// Model FLOPs per token under the conventions of ../shared/reference/calibration.md.
struct FlopsPerToken {
  double six_n = 0;          ///< 6·N (N = total params, as seed 003 / GPT-3 count)
  double palm = 0;           ///< 6·N_matmul + 12·L·H·Q·T (PaLM appendix B; Llama 3 MFU)
  double attention_palm = 0; ///< the 12·L·H·Q·T term alone
};
FlopsPerToken flops_per_token(const config::ModelSpec& model, int sequence_length);

/// One kernel of the step, with what it costs on one GPU for one microbatch.
struct Op {
  std::string name;          ///< e.g. "qkv", "attn_core", "mlp_up", "mlp_down", "norm"
  double flops = 0;          ///< floating-point operations (multiply-add = 2)
  double bytes = 0;          ///< HBM bytes read + written
  // GEMM shape (m×k)·(k×n), repeated `batch` times; m == 0 means not a GEMM.
  double m = 0, n = 0, k = 0;
  double batch = 1;
};

/// Forward ops of one transformer layer on one GPU: a microbatch of `sequences` sequences of
/// `sequence_length` tokens, the layer's weights split `tp` ways (Megatron column/row split).
std::vector<Op> layer_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp);
/// Backward ops of the same layer: every GEMM becomes its input-gradient and weight-gradient
/// GEMMs (2× forward FLOPs); elementwise ops ≈ 2× bytes.
std::vector<Op> layer_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   int sequences, int tp);
/// Forward ops that run once per microbatch outside the layers: embedding lookup, final norm,
/// LM head GEMM, loss. Backward of these: `head_backward_ops`.
std::vector<Op> head_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp);
std::vector<Op> head_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp);
/// Forward ops recomputed in backward under the activation-checkpointing policy
/// (none: empty; selective: the attention core; full: the whole layer forward).
std::vector<Op> layer_recompute_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                    int sequences, int tp);
/// The optimizer step over `params_local` parameters held by this GPU (memory-bound update).
Op optimizer_op(const config::TrainingSpec& training, double params_local);

/// Duration of `op` on `device`: a roofline of tensor-core time (peak of `precision` × the
/// measured max GEMM fraction, with tile and wave quantisation over the SMs) against HBM
/// time, plus the kernel launch overhead. Small GEMMs lose efficiency *because* their tiles
/// do not fill the SMs — that emerges here, it is not an input.
Time op_time(const Op& op, const config::DeviceSpec& device, const std::string& precision);

/// Bytes per element of the training precision (fp32 4, bf16/fp16 2, fp8 1).
double bytes_per_element(const std::string& precision);

/// Memory per GPU by term [bytes].
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double total() const { return weights + gradients + optimizer + activations; }
};
/// Mixed-precision training (weights/grads in the training precision, fp32 master + optimizer
/// moments), ZeRO stage `parallel.zero` sharding over `dp` ranks, activations of
/// `in_flight_microbatches` microbatches under the recompute policy.
MemoryBreakdown memory_per_gpu(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int dp, int in_flight_microbatches);

}  // namespace ironlaw::workload
