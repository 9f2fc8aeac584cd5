#pragma once
/// \file What a model costs, computed from its shape alone: parameters, FLOPs per op and per
/// token, bytes touched, memory per GPU. Pure functions of the specs; no simulation here.
///
/// Shape vocabulary: L layers, h hidden, f ffn_hidden, a heads, g kv_heads (0 means a),
/// d = h / a head dimension, V vocab, s sequence length, t = sequences·s tokens of a
/// microbatch. Unknown enum strings (activation, norm, precision, ...) throw
/// std::invalid_argument naming the field; the config loader is expected to have rejected
/// them with a file position first.
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::workload {

/// Parameter count by part, from the shape (Llama 3 8B → 8.03e9).
///
/// Per layer: attention Q and O h·h each, K and V h·(g·d) each (+ a bias per output when
/// `bias`); MLP gelu 2·h·f (+ f + h biases), swiglu 3·h·f, × experts (mlp) or
/// × experts_per_token (mlp_active), + an h × experts router when experts > 1; norms
/// layernorm 2·h (gain + bias), rmsnorm h, two per layer plus the final one. Embedding V·h,
/// learned positions max_position·h, LM head V·h unless tied.
/// position_embedding "relative" (Transformer-XL style, Gopher/Chinchilla) adds the per-layer
/// h·h projection of the relative position encodings to `attention` — this is what makes
/// Gopher-family counts 13·L·h² + V·h rather than 12·L·h² + V·h.
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
  /// PaLM's N for MFU: parameters that take part in matmuls per token — attention, the active
  /// MLP (MoE: routed experts and router) and the LM head (tied or not), biases included;
  /// not the embedding/position lookups and not the norm gains (no matmul).
  double matmul_active() const;
  double lm_head_matmul = 0;  ///< vocab × hidden, counted in matmuls even when tied
};
ParamCount count_params(const config::ModelSpec& model);

/// Model FLOPs per token under the conventions of ../shared/reference/calibration.md.
/// N_matmul = ParamCount::matmul_active() (weights and biases of the linear layers a token
/// passes through, LM head included even when tied; norm gains and lookup tables excluded);
/// H = heads, Q = head dimension, T = `sequence_length`.
struct FlopsPerToken {
  double six_n = 0;          ///< 6·N (N = total params, as seed 003 / GPT-3 count)
  double palm = 0;           ///< 6·N_matmul + 12·L·H·Q·T (PaLM appendix B; Llama 3 MFU)
  double attention_palm = 0; ///< the 12·L·H·Q·T term alone
};
FlopsPerToken flops_per_token(const config::ModelSpec& model, int sequence_length);

/// One kernel of the step, with what it costs on one GPU for one microbatch.
///
/// GEMM ops (m > 0) run on the tensor cores; their `flops` are matmul FLOPs. Every other op is
/// a memory-bound vector kernel whose `flops` are a rough CUDA-core count (a few per element),
/// kept for completeness: a hardware-FLOP (HFU) tally should sum GEMM ops only.
/// The attention core is a GEMM op: with flash attention one fused kernel whose tiles each do
/// the work of k = 2·d (forward: QKᵀ and PV) or 5·d (backward) of an s × s output, `causal`.
struct Op {
  std::string name;          ///< e.g. "qkv", "attn_core", "mlp_up", "mlp_down", "norm_attn"
  double flops = 0;          ///< floating-point operations (multiply-add = 2)
  double bytes = 0;          ///< HBM bytes read + written
  // GEMM shape (m×k)·(k×n), repeated `batch` times; m == 0 means not a GEMM.
  double m = 0, n = 0, k = 0;
  double batch = 1;
  /// Only output tiles touching the lower triangle (row ≥ column) of an m × n output are
  /// computed (causal attention); the rest are skipped by the kernel.
  bool causal = false;
  /// A fused attention kernel (flash attention): its tensor-core rate is the device's measured
  /// max_attention_fraction of peak instead of max_gemm_fraction.
  bool fused_attention = false;

  bool is_gemm() const { return m > 0; }
};

/// Forward ops of one transformer layer on one GPU: a microbatch of `sequences` sequences of
/// `sequence_length` tokens, the layer's weights split `tp` ways (Megatron column/row split).
///
/// In order (pre-norm): norm_attn, qkv (m = t, n = (a + 2g)·d/tp, k = h), rel_pos (relative
/// positions only), rotary (RoPE only), the attention core, attn_out (m = t, n = h,
/// k = a·d/tp), residual_attn, norm_mlp, router (MoE only), mlp_up (n = f/tp, swiglu 2·f/tp:
/// gate and up fused), mlp_act, mlp_down (n = h, k = f/tp), residual_mlp. MoE expert GEMMs are
/// grouped: batch = experts, m = t·experts_per_token/experts (perfect balance).
/// Attention core: flash → one causal "attn_core" op, FLOPs = sequences·(a/tp)·s(s+1)/2·4·d
/// (seed 003's count), bytes = Q, K, V, O + fp32 row statistics (no s² term); no flash →
/// attn_scores (full s × s, the mask applied afterwards), attn_softmax (s² read + written),
/// attn_values. Elementwise ops: bytes = elements · (reads + writes) · bytes_per_element; they
/// run on all t·h elements on every TP rank (no sequence parallelism). Dropout is not modelled
/// (Llama-style training has none); TP all-reduces belong to the comm layer.
std::vector<Op> layer_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp);
/// Backward ops of the same layer: every GEMM becomes its input-gradient and weight-gradient
/// GEMMs (2× forward FLOPs); elementwise ops ≈ 2× bytes (and FLOPs). The flash-attention core
/// backward is one kernel of 2.5× its forward FLOPs: five s×s×d matmuls (QKᵀ recomputed inside
/// the kernel, dV = PᵀdO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀQ) against the forward's two —
/// hardware FLOPs, so the in-kernel recompute counts.
std::vector<Op> layer_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   int sequences, int tp);
/// Forward ops that run once per microbatch outside the layers: embedding lookup (gather t
/// rows of h, plus t position rows when learned; written t·h), final norm, LM head GEMM
/// (m = t, n = V/tp, k = h; vocab-parallel), cross-entropy (reads the logits, writes fp32
/// probabilities: t·V/tp·(bytes_per_element + 4)). Backward of these: `head_backward_ops`
/// (cross-entropy backward: read fp32 probabilities, write dlogits; the rest by the layer rules).
std::vector<Op> head_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp);
std::vector<Op> head_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp);
/// Forward ops recomputed in backward under the activation-checkpointing policy
/// (none: empty; selective: the attention core; full: the whole layer forward).
std::vector<Op> layer_recompute_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                    int sequences, int tp);
/// The optimizer step over `params_local` parameters held by this GPU (memory-bound update).
/// Bytes per parameter: the fp32 weights (master copy under mixed precision, the weights
/// themselves in fp32) read + written 8, each fp32 state tensor read + written 8 (adam 2
/// tensors, momentum and rmsprop 1, sgd 0), the gradient read (parameter_bytes), and under mixed
/// precision the low-precision weight copy written (parameter_bytes): adam/bf16 = 28 B/param.
/// FLOPs per parameter (CUDA-core, rough): adam 12, rmsprop 8, momentum 4, sgd 2.
Op optimizer_op(const config::TrainingSpec& training, double params_local);

/// Duration of `op` on `device`: a roofline of tensor-core time (peak of `precision` × the
/// measured max GEMM fraction, with tile and wave quantisation over the SMs) against HBM
/// time, plus the kernel launch overhead. Small GEMMs lose efficiency *because* their tiles
/// do not fill the SMs — that emerges here, it is not an input.
///
/// GEMM: tiles = ⌈m/tile_m⌉·⌈n/tile_n⌉·⌈batch⌉ (causal: only tiles reaching the diagonal),
/// waves = ⌈tiles / sm_count⌉, compute = waves · 2·tile_m·tile_n·k / (peak · max_gemm_fraction /
/// sm_count): every SM computes one whole tile per wave, so partial tiles and partial waves
/// cost full time. Other ops: compute = flops / peak_flops["fp32"] (CUDA-core rate; 0 if the
/// device lists none). Memory = bytes / hbm_bandwidth. Result = max(compute, memory) + launch
/// overhead, rounded up to whole ns. Throws std::invalid_argument if the device has no peak
/// for a GEMM's `precision`. O(⌈m/tile_m⌉) for causal ops, O(1) otherwise.
Time op_time(const Op& op, const config::DeviceSpec& device, const std::string& precision);

/// Bytes per element of the training precision (fp32 4, bf16/fp16 2, fp8 1): what GEMM
/// operands and activations moved by the ops of one step cost.
double bytes_per_element(const std::string& precision);
/// Bytes per stored weight or gradient under `precision`: fp32 4, otherwise 2 (fp8 training
/// keeps bf16 weights and casts to fp8 per GEMM, as Transformer Engine does).
double parameter_bytes(const std::string& precision);

/// Memory per GPU by term [bytes].
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double total() const { return weights + gradients + optimizer + activations; }
};

/// Weights, gradients and optimizer state of `params_local` parameters (already divided by
/// TP/PP/EP) under ZeRO stage `zero` over `dp` ranks; activations are 0.
/// weights parameter_bytes each (÷dp from ZeRO-3), gradients parameter_bytes (÷dp from
/// ZeRO-2), optimizer state (÷dp from ZeRO-1): fp32 master copy 4 when parameter_bytes < 4,
/// plus 4 per fp32 state tensor (adam m and v: 8; momentum 4; rmsprop 4; sgd 0).
/// Mixed-precision Adam at ZeRO-0: 2 + 2 + 12 = 16 B/param exactly; ZeRO-3: 16/dp.
MemoryBreakdown model_state_memory(double params_local, const config::TrainingSpec& training, int zero, int dp);

/// Activation bytes one transformer layer keeps for backward, per microbatch of `sequences`
/// sequences, on one GPU (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
/// Transformer Models", §4): with s = sequence_length, b = sequences, t = tp,
///   none:      s·b·h·(10 + 24/t + 5·a·s/(h·t))   (flash attention: the 5·a·s/(h·t) score /
///              softmax / dropout-mask term is never materialised and drops out)
///   selective: s·b·h·(10 + 24/t)
///   full:      2·s·b·h (the layer input only)
/// With sequence_parallel the 10 (layernorm and dropout inputs) and the full-recompute input
/// are split over t as well. Context parallelism keeps s/cp tokens per GPU (the score term:
/// s/cp queries against all s keys). The paper's figures assume 16-bit activations and 1-byte dropout
/// masks; fp32 training doubles them.
double activation_bytes_per_layer(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  const config::ParallelSpec& parallel, int sequences);

/// Mixed-precision training (weights/grads in the training precision, fp32 master + optimizer
/// moments), ZeRO stage `parallel.zero` sharding over `dp` ranks, activations of
/// `in_flight_microbatches` microbatches under the recompute policy.
/// Parameters per GPU: (all but experts + experts / ep) / (tp · pp) — an even split across
/// stages (embedding and LM head are not placed on the first/last stage separately).
/// Activations: activation_bytes_per_layer × ⌈layers / pp⌉ × in_flight_microbatches, plus the
/// fp32 logits of one microbatch (s·b·V/tp·4 B; the last stage's loss input), with b =
/// parallel.microbatch_size. A bound for the worst stage, not a placement of stages.
MemoryBreakdown memory_per_gpu(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int dp, int in_flight_microbatches);

}  // namespace ironlaw::workload
