#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workload/model_cost.hpp"
#include "workload/model_shape.hpp"

namespace ironlaw::workload {

namespace {

/// A GEMM (m×k)·(k×n) repeated `batch` times: reads both operands, writes the output.
Op gemm(std::string name, double m, double n, double k, double batch, double bpe, OpRole role = OpRole::plain) {
  Op op;
  op.role = role;
  op.name = std::move(name);
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = batch * (m * k + k * n + m * n) * bpe;
  return op;
}

/// A memory-bound vector kernel over `elements` values, each read `reads` times and written
/// `writes` times, with `flops_per_element` CUDA-core FLOPs.
Op elementwise(std::string name, double elements, double reads, double writes, double flops_per_element,
               double bpe) {
  Op op;
  op.name = std::move(name);
  op.bytes = elements * (reads + writes) * bpe;
  op.flops = elements * flops_per_element;
  return op;
}

/// Bytes a GEMM `g` touches: its operands at 1 B under fp8 (g.dtype), else at `bpe`, and its
/// output at `bpe` (the training precision).
double gemm_bytes(const Op& g, double bpe) {
  const double in = g.dtype == "fp8" ? 1.0 : bpe;
  return g.batch * ((g.m * g.k + g.k * g.n) * in + g.m * g.n * bpe);
}

/// What every op builder of one layer needs.
struct Microbatch {
  Shape sh;
  double bpe = 2;        ///< bytes per activation / GEMM operand element
  double sequences = 1;  ///< sequences in the microbatch
  double s = 0;          ///< sequence length
  double tokens = 0;     ///< sequences · s
  double tp = 1;
  double ep = 1;
  /// Megatron sequence parallelism: the ops between the TP regions (norms, dropout, residual
  /// adds) run on 1/sp of the tokens; sp = tp under parallel.sequence_parallel, otherwise 1.
  double sp = 1;
  bool flash = true;
  /// The attention inputs are unpadded around a varlen flash kernel (TrainingSpec::attention_unpad).
  bool unpad = false;
  bool attention_dropout = false;  ///< dropout on the attention probabilities
  bool hidden_dropout = false;     ///< dropout on the attention and MLP block outputs
  bool fused_mlp = false;          ///< the GELU runs in the MLP GEMMs' epilogues (TrainingSpec::fused_mlp)
  bool fused_add_norm = false;     ///< dropout, residual add and norm in one kernel (TrainingSpec::fused_dropout_add_norm)
  bool eager = false;              ///< PyTorch eager: element-wise ops as the model code writes them
  bool compiled = false;           ///< torch.compile: inductor fuses the element-wise ops it can
  /// The loss outside the transformer blocks runs eager: also under compile, which torchtitan
  /// applied per transformer block before April 2025 (torch.compile on each block, not on the
  /// head and loss); false when the loss is compiled (compiled_loss).
  bool eager_loss = false;
  /// The loss is compiled (training.compile_loss): its reductions read the logits without an
  /// fp32 copy, and one fused kernel writes their gradient.
  bool compiled_loss = false;
  /// The loss is flash-attn's fused cross-entropy kernel (training.fused_cross_entropy).
  bool fused_loss = false;
  /// The loss is Megatron's unfused vocab_parallel_cross_entropy (Megatron-style code with
  /// training.cross_entropy_loss_fusion false).
  bool megatron_loss = false;
  bool fp8_linear = false;         ///< linear layers in fp8 (torchtitan Float8 / Transformer Engine)
  /// The fp8 weights come from FSDP's fp8 all-gather (training.fp8_all_gather): cast once per
  /// gather on the shard, not per GEMM.
  bool fp8_gathered_weights = false;
  /// Transformer Engine caches the fp8 weights (and their transposes) across the step's
  /// microbatches (fp8_weight_cache_bytes > 0): the weight cast is a first-microbatch op, and no
  /// backward casts the weight.
  bool fp8_weight_cache = false;
  /// fp8 parameters of Megatron-style code (fp8_gathered_weights under framework fused or
  /// cuda_graphs): each weight's transpose is made once per step.
  bool fp8_weight_transpose = false;
  /// Transformer Engine's fp8 linear layers (precision fp8 under Megatron-style code): each
  /// operand cast once with its transposed copy (cast_transpose), the input's kept for the
  /// weight gradient; torchao's Float8 (PyTorch model code) instead re-casts the saved input in
  /// backward.
  bool fp8_te = false;
  /// The recipe finds each tensor's scale in an amax pass of its own (TrainingSpec::fp8_recipe
  /// current); delayed scaling and blockwise tiles find it in the casting pass.
  bool fp8_amax_pass = false;
  /// The blockwise fp8 recipe (TrainingSpec::fp8_recipe): per-tile scales, every GEMM with the
  /// split accumulator.
  bool fp8_blockwise = false;
  /// torchao's rowwise Float8 recipe (TrainingSpec::fp8_recipe rowwise): per-row scales along
  /// each GEMM's contraction dimension, the backward GEMMs rescaled after cuBLAS.
  bool fp8_rowwise = false;
  /// The model code expands grouped K/V to every query head before SDPA (sdpa_expands_kv).
  bool expands_kv = false;
  /// Megatron's gradient_accumulation_fusion: the wgrad GEMM accumulates into the fp32 main_grad.
  bool wgrad_accumulates_fp32 = false;
  /// torch.autocast over fp32 parameters (TrainingSpec::autocast): every matmul weight cast per forward.
  bool autocast = false;
  /// MoE parallel folding (parallel.expert_tp 1 with tp > 1): a MoE layer routes this TP rank's
  /// own t/tp sequence-parallel tokens to whole experts, with no TP collective (moe_forward; a
  /// dense layer reads nothing of it).
  bool expert_folded = false;
  /// The MoE token permutation as fused kernels (TrainingSpec::moe_permute_fusion), else as
  /// Megatron-core 0.8-0.9's PyTorch ops.
  bool moe_permute_fusion = true;
  /// A MoE layer's local experts run as Transformer Engine's GroupedLinear (TrainingSpec::
  /// moe_expert_gemm per_expert): a batched GEMM op is one GEMM and one quantization per expert.
  bool per_expert_kernels = false;
};

Microbatch microbatch(const config::ModelSpec& model, const config::TrainingSpec& training, int sequences,
                      int tp, int ep = 1, bool sequence_parallel = false, bool expert_folded = false) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (tp <= 0) throw std::invalid_argument("tp must be positive");
  if (ep <= 0 || model.experts % ep != 0) {
    throw std::invalid_argument("ep must be positive and divide experts (" + std::to_string(model.experts) +
                                "), got " + std::to_string(ep));
  }
  if (training.sequence_length <= 0) throw std::invalid_argument("sequence_length must be positive");
  check_recompute_policy(training.activation_checkpointing);
  Microbatch mb;
  mb.sh = shape_of(model);
  mb.bpe = bytes_per_element(training.precision);
  mb.sequences = sequences;
  mb.s = training.sequence_length;
  mb.tokens = mb.sequences * mb.s;
  mb.tp = tp;
  mb.ep = ep;
  mb.sp = sequence_parallel ? tp : 1;
  mb.expert_folded = expert_folded && tp > 1;
  mb.moe_permute_fusion = training.moe_permute_fusion;
  mb.per_expert_kernels = training.moe_expert_gemm == "per_expert" ||
                          (training.moe_expert_gemm == "auto" && training.megatron_style());
  mb.flash = training.flash_attention;
  mb.unpad = training.flash_attention && training.attention_unpad;
  mb.attention_dropout = model.attention_dropout > 0;
  mb.hidden_dropout = model.hidden_dropout > 0;
  mb.fused_mlp = training.fused_mlp;
  mb.fused_add_norm = training.fused_dropout_add_norm;
  mb.eager = training.framework == "eager";
  mb.compiled = training.framework == "compile";
  mb.compiled_loss = training.compile_loss;
  mb.fused_loss = training.fused_cross_entropy;
  mb.eager_loss = pytorch_model_code(training) && !mb.compiled_loss && !mb.fused_loss;
  mb.megatron_loss = !pytorch_model_code(training) && !training.cross_entropy_loss_fusion;
  mb.expands_kv = sdpa_expands_kv(training) && !mb.sh.mla && mb.sh.kv_heads < mb.sh.heads;
  mb.fp8_linear = training.precision == "fp8";
  mb.fp8_gathered_weights = mb.fp8_linear && training.fp8_all_gather;
  mb.fp8_weight_cache = mb.fp8_linear && !mb.fp8_gathered_weights && fp8_weight_cache_bytes(training) > 0;
  mb.fp8_weight_transpose = mb.fp8_gathered_weights && !pytorch_model_code(training);
  mb.fp8_te = mb.fp8_linear && !pytorch_model_code(training);
  mb.fp8_amax_pass = mb.fp8_linear && training.fp8_recipe == "current";
  mb.fp8_blockwise = mb.fp8_linear && training.fp8_recipe == "blockwise";
  mb.fp8_rowwise = mb.fp8_linear && training.fp8_recipe == "rowwise";
  mb.wgrad_accumulates_fp32 = training.gradient_accumulation_fusion;
  mb.autocast = training.autocast;
  return mb;
}

/// Autocast's cast of a k × n fp32 weight (`batch` of them) to the training precision before its
/// GEMM (torch.autocast's cached_cast: one copy kernel, read 4 B, write bpe per element); its
/// backward (Op::autocast_weight_cast) casts the weight gradient back to fp32.
Op autocast_weight_cast(const std::string& gemm_name, double k, double n, double batch, double bpe) {
  Op cast;
  cast.name = gemm_name + "_weight_cast";
  cast.autocast_weight_cast = true;
  cast.bytes = batch * k * n * (4.0 + bpe);
  return cast;
}

/// Blockwise fp8 scales per element cast: one fp32 scale per 1×128 tile in each of the two
/// directions written (row tiles and column tiles), 2 · 4 / 128 B.
constexpr double kBlockScaleBytes = 2.0 * 4.0 / 128.0;

/// Bytes per element of one Transformer Engine cast of a tensor in the training precision:
/// the cast with its transposed copy (read bpe, write 1 + 1 B), after an amax pass (read bpe)
/// under current scaling.
double te_cast_bytes(const Microbatch& mb) { return mb.bpe + 2.0 + (mb.fp8_amax_pass ? mb.bpe : 0.0); }

/// Kernels of one Transformer Engine quantization of a tensor: current scaling zeroes the amax,
/// reduces the tensor into it, computes the scale, then casts (TE 2.x pytorch/csrc/quantizer.cpp
/// Float8CurrentScalingQuantizer::quantize_impl; common/recipe/current_scaling.cu
/// zero_amax_kernel, compute_scale_from_amax_kernel): 4; delayed scaling and blockwise tiles cast
/// in one kernel that updates the amax or computes the tiles' scales: 1. The kernels after the
/// first are issued by TE's C++ code (Op::library_kernels).
int te_quantize_kernels(const Microbatch& mb) { return mb.fp8_amax_pass ? 4 : 1; }

/// The kernels of an op over `batch` equal problems (a batched GEMM or its quantization),
/// `per_problem` of them per problem: under TE's GroupedLinear (Microbatch::per_expert_kernels)
/// every local expert's own, else one set for the whole batch (a grouped kernel). `library`: the
/// kernels after the first are issued by the library's C++ code in one framework call (Op::
/// library_kernels).
void set_kernels(Op& op, const Microbatch& mb, double batch, int per_problem, bool library) {
  const int groups = mb.per_expert_kernels ? std::max(1, static_cast<int>(batch)) : 1;
  op.kernels = groups * per_problem;
  op.library_kernels = library ? op.kernels - 1 : 0;
}

/// A linear layer (m×k)·(k×n): under the fp8 recipe its GEMM runs on fp8 operands (1 B each,
/// output in the training precision), preceded by the casts of its input and weight: an amax
/// reduction (read) and a scaled cast (read, write 1 B) of each, 5 B per bf16 element, as
/// torchtitan's dynamic tensorwise Float8 does. Under fp8 all-gather the weight arrives in fp8
/// (torchao casts the shard before FSDP gathers it): only the input is cast. torchao's rowwise
/// recipe casts the same two operands, each scaled per row along K (an amax reduction along the
/// row and the scaled cast: the same bytes), and runs the forward GEMM in PyTorch's rowwise-scaled
/// CUTLASS kernel with fast accumulation (aten RowwiseScaledMM.cu), timed as the per-tensor fp8
/// GEMM: pytorch/pytorch#147971 measures most shapes within 90-100 % of the per-tensor cuBLAS
/// kernel's speed with fast accumulation (a tail down to 50 % that no per-shape table gives).
/// Transformer Engine (Megatron-style code) casts each operand once with its transposed copy
/// (te_cast_bytes); its blockwise recipe also times the forward GEMM with the split accumulator.
void linear(std::vector<Op>& ops, const Microbatch& mb, std::string name, double m, double n, double k,
            double batch = 1, OpRole role = OpRole::plain, bool sp_gathered = false) {
  if (mb.autocast) ops.push_back(autocast_weight_cast(name, k, n, batch, mb.bpe));
  if (!mb.fp8_linear) {
    ops.push_back(gemm(std::move(name), m, n, k, batch, mb.bpe, role));
    set_kernels(ops.back(), mb, batch, 1, true);
    return;
  }
  Op cast;
  cast.name = name + "_cast";
  cast.fp8_cast = true;
  const double weight = mb.fp8_gathered_weights || mb.fp8_weight_cache ? 0.0 : k * n;
  // Under sequence parallelism the input of a column-parallel layer is the all-gathered
  // sequence, cast on this rank's 1/sp of the rows before the gather (Op::fp8_sp_gathered):
  // Transformer Engine's per-tensor recipes (without its transposed copy), and torchao's
  // tensorwise Float8 TP (float8_tensor_parallel.py: PrepareFloat8ModuleInput and
  // Float8ColwiseParallel cast the Shard(1) input before redistributing it to Replicate, "so that
  // if there are multiple float8 users of the input activation, we perform fp8 allgather only
  // once"). Not torchao's rowwise recipe, which torchtitan runs with the plain TP styles.
  const bool sp_cast = (mb.fp8_te ? !mb.fp8_blockwise : !mb.fp8_rowwise) && sp_gathered && mb.sp > 1;
  if (mb.fp8_te) {
    // Transformer Engine (module/linear.py: fp8_cast_transpose_fused; TE 2.x quantizers with
    // row- and column-wise usage): one pass writes the fp8 copy this GEMM reads and the
    // transposed copy the weight gradient will read, bpe + 2 B per element; current scaling
    // first reads the tensor for its amax (bpe); blockwise tiles keep two fp32 scales per 128
    // elements (per 128×128 weight block: negligible, not counted). A sequence-parallel
    // column-parallel input: only the local rows, without the transposed copy.
    const double per = te_cast_bytes(mb);
    const bool local = sp_cast && role == OpRole::tp_column_parallel;
    const double input = local ? m / mb.sp * k : m * k;
    const double input_per = local ? per - 1.0 : per + (mb.fp8_blockwise ? kBlockScaleBytes : 0.0);
    cast.bytes = batch * (input * input_per + weight * per);
    cast.flops = batch * (input + weight) * 2.0;
    set_kernels(cast, mb, batch, (weight > 0 ? 2 : 1) * te_quantize_kernels(mb), true);
  } else {
    const double input = sp_cast && role == OpRole::tp_column_parallel ? m / mb.sp * k : m * k;
    cast.bytes = batch * (input + weight) * (2.0 * mb.bpe + 1.0);
    cast.flops = batch * (input + weight) * 2.0;
    set_kernels(cast, mb, batch, weight > 0 ? 4 : 2, false);
  }
  ops.push_back(cast);
  if (mb.fp8_weight_transpose) {
    // Megatron-core's fp8 parameters: the dgrad GEMM's transposed copy of each weight is made
    // on its first use in the step (read 1, write 1 B) and kept for the later microbatches.
    Op w;
    w.name = name + "_weight_transpose";
    w.fp8_cast = true;
    w.first_microbatch_only = true;
    w.bytes = batch * k * n * 2.0;
    set_kernels(w, mb, batch, 1, true);
    ops.push_back(w);
  }
  if (mb.fp8_weight_cache) {
    // Transformer Engine on the step's first microbatch: the weight cast with the transpose the
    // dgrad GEMM takes (fp8_cast_transpose_fused: read bpe, write 1 + 1), after its amax pass
    // under current scaling (read bpe), cached for the later microbatches.
    Op w;
    w.name = name + "_weight_cast";
    w.fp8_cast = true;
    w.first_microbatch_only = true;
    w.bytes = batch * k * n * te_cast_bytes(mb);
    w.flops = batch * k * n * 2.0;
    set_kernels(w, mb, batch, te_quantize_kernels(mb), true);
    ops.push_back(w);
  }
  Op g = gemm(std::move(name), m, n, k, batch, mb.bpe, role);
  set_kernels(g, mb, batch, 1, true);
  g.dtype = "fp8";
  // Blockwise scales change along K every 128 elements: the forward GEMM too promotes its
  // partial sums to fp32 on the CUDA cores (DeepSeek-V3 §3.3.2, N_C = 128).
  g.fp8_split_accumulator = mb.fp8_blockwise;
  g.fp8_sp_gathered = sp_cast;  // column-parallel: the input; row-parallel: the output gradient
  g.fp8_cast_after_gather = mb.fp8_rowwise;
  g.bytes = gemm_bytes(g, mb.bpe);
  ops.push_back(g);
}

// Rough CUDA-core FLOPs per element of the vector kernels (only for completeness; these ops are
// memory-bound): layernorm mean, variance, normalise, scale, shift ≈ 8; rmsnorm ≈ 4; tanh-GELU
// ≈ 8; SiLU·gate ≈ 6; rotary (2 multiplies + 1 add) 3; softmax (max, sub, exp, sum, div) 5.
constexpr double kLayernormFlops = 8, kRmsnormFlops = 4, kGeluFlops = 8, kSwigluFlops = 6, kSquaredReluFlops = 2;
constexpr double kRotaryFlops = 3, kSoftmaxFlops = 5, kCrossEntropyFlops = 5;
// Dropout forward: compare a random number with p, scale by 1/(1 − p) ≈ 2 (the random-number
// generation itself is not counted); backward: multiply by the stored mask and scale ≈ 1.
constexpr double kDropoutFlops = 2, kDropoutBackwardFlops = 1;

/// A normalisation over `elements` values. Fused kernels (Megatron, torch.compile, PyTorch's
/// F.layer_norm): one read, one write. RMSNorm in eager PyTorch as Llama-style code writes it —
/// x.float(), pow(2), mean, add ε, rsqrt, multiply, type_as, multiply by the gain — is 8 kernels
/// over (bpe + 4) + 8 + 4 + 8 + (4 + bpe) + 2·bpe = 28 + 4·bpe bytes per element (the scalars
/// per row neglected). `on_residual`: a norm of the residual stream, which
/// training.fused_dropout_add_norm fuses with the residual add before it (the query/key norms
/// are not).
Op norm(const Microbatch& mb, std::string name, double elements, double flops_per_element, bool on_residual = true) {
  Op op = elementwise(std::move(name), elements, 1, 1, flops_per_element, mb.bpe);
  if (mb.fused_add_norm && on_residual) {
    // flash-attn's dropout_add_layer_norm (prenorm): the previous block's output x0 and the
    // residual read, the new residual and the normalised output written, and the keep mask
    // (1 B) when there is hidden dropout; its backward reads the gradients of both outputs, the
    // saved residual and the mask, and writes the gradients of x0 and of the residual.
    const double mask = mb.hidden_dropout ? 1.0 : 0.0;
    op.bytes = elements * (4.0 * mb.bpe + mask);
    op.backward_bytes = elements * (5.0 * mb.bpe + mask);
    op.flops = elements * (flops_per_element + 1.0 + (mb.hidden_dropout ? kDropoutFlops : 0.0));
    return op;
  }
  if (mb.eager && mb.sh.rmsnorm) {
    op.bytes = elements * (28.0 + 4.0 * mb.bpe);
    op.kernels = 8;
  }
  return op;
}


/// A fused dropout over `elements` values: reads the input, writes the output and a 1-byte keep
/// mask per element.
Op dropout(std::string name, double elements, double bpe) {
  Op op;
  op.name = std::move(name);
  op.bytes = elements * (2.0 * bpe + 1.0);
  op.flops = elements * kDropoutFlops;
  return op;
}

bool is_dropout(const std::string& name) { return name.find("dropout") != std::string::npos; }

/// The attention-core ops (forward) of one layer.
std::vector<Op> attention_core_forward(const Microbatch& mb) {
  const Shape& sh = mb.sh;
  const double heads = sh.heads / mb.tp;
  const double kv_heads = (mb.expands_kv ? sh.heads : sh.kv_heads) / mb.tp;  // what SDPA reads
  const double d = sh.head_dim;
  const double dv = sh.v_head_dim;
  const double s = mb.s;
  const double batch = mb.sequences * heads;  // one (s × s) problem per sequence and local head
  std::vector<Op> ops;
  if (mb.unpad) {
    // flash-attn's bert_padding.unpad_input on Q, K and V in turn (TrainingSpec::attention_unpad):
    // each sums the mask's rows, finds the kept tokens (torch.nonzero: a count kernel, its size
    // copied to the host, the fill kernel), copies max(seqlens).item() to the host, builds
    // cu_seqlens (cumsum, pad) and gathers the kept rows (IndexFirstAxis: torch.gather, read and
    // write bpe per element): nine launches and two reads of device values each. Backward
    // (IndexFirstAxis.backward): a zero tensor written, the gradient scattered into it (read and
    // write bpe): two kernels each. The bool mask and the int64 indices, ~20 B per token, are
    // neglected beside the rows.
    const double features = heads * d + kv_heads * (d + dv);
    Op unpad = memory_pass("attn_unpad", mb.tokens * features * 2.0 * mb.bpe, 3 * 9);
    unpad.host_syncs = 3 * 2;
    unpad.backward_bytes = mb.tokens * features * 3.0 * mb.bpe;
    unpad.backward_kernels = 3 * 2;
    ops.push_back(unpad);
  }
  if (mb.flash) {
    // One fused causal kernel. Model FLOPs as seed 003 counts them: s(s+1)/2 cells of the
    // causal triangle × (2·d for QKᵀ + 2·d_v for PV) per head. No s² tensor touches HBM:
    // read Q, K (d each), V, write O (d_v each), plus the fp32 log-sum-exp row statistics
    // kept for backward.
    Op op;
    op.name = "attn_core";
    op.m = s;
    op.n = s;
    op.k = d + dv;
    op.batch = batch;
    op.causal = true;
    op.fused_attention = true;
    op.head_dim = d;
    op.role = OpRole::attention_core;
    op.flops = batch * s * (s + 1.0) / 2.0 * 2.0 * (d + dv);
    op.bytes = mb.tokens * (heads + kv_heads) * (d + dv) * mb.bpe + mb.tokens * heads * 4.0;
    // Attention dropout, if any, is applied to the probability tiles inside the kernel (its
    // random numbers are regenerated from the seed in backward): no extra op, no mask in HBM.
    // ALiBi inside a fused kernel (FlashAttention-2's alibi_slopes, Triton kernels) is a bias
    // computed per tile from the head's slope: no HBM traffic; its few extra instructions per
    // tile are not modelled.
    ops.push_back(op);
    if (mb.unpad) {
      // bert_padding.pad_input (IndexPutFirstAxis): a zero [tokens, heads·d_v] tensor written,
      // the kernel's output rows put into it (read and write bpe): two kernels. Backward:
      // grad_output[indices], one gather (read and write bpe).
      Op pad = memory_pass("attn_pad", mb.tokens * heads * dv * 3.0 * mb.bpe, 2);
      pad.backward_bytes = mb.tokens * heads * dv * 2.0 * mb.bpe;
      pad.backward_kernels = 1;
      ops.push_back(pad);
    }
  } else {
    // Unfused (Megatron's baddbmm path): the full s × s score matrix is computed (the causal
    // mask is applied afterwards, so the masked half is computed too), written, soft-maxed and
    // read back — HBM traffic ∝ s²·heads.
    if (sh.alibi) {
      // ALiBi as Megatron-DeepSpeed adds it (BLOOM): the scores are baddbmm(alibi, q, kᵀ,
      // beta = 1) with the bias broadcast over the queries, and ATen's baddbmm first copies its
      // expanded input into the result, which the GEMM then reads back (beta ≠ 0): one write
      // and one read of the s × s scores more than the plain path's beta = 0.
      ops.push_back(elementwise("alibi_bias", batch * s * s, 1, 1, 1, mb.bpe));
    }
    ops.push_back(gemm("attn_scores", s, s, d, batch, mb.bpe));
    ops.push_back(elementwise("attn_softmax", batch * s * s, 1, 1, kSoftmaxFlops, mb.bpe));
    if (mb.attention_dropout) ops.push_back(dropout("attn_dropout", batch * s * s, mb.bpe));
    ops.push_back(gemm("attn_values", s, dv, s, batch, mb.bpe));
  }
  return ops;
}

/// The projections from the normalised input to the per-head queries, keys and values.
void attention_projections(const Microbatch& mb, double norm_flops, std::vector<Op>& ops) {
  const Shape& sh = mb.sh;
  const double t = mb.tokens;
  const double h = sh.hidden;
  const double tp = mb.tp;
  if (!sh.mla) {
    // Column-parallel fused QKV projection: output a·d + 2·g·d features, split over tp.
    linear(ops, mb, "qkv", t, (sh.heads + 2.0 * sh.kv_heads) * sh.head_dim / tp, h, 1, OpRole::tp_column_parallel,
           true);
    return;
  }
  // MLA (DeepSeek-V3 report §2.1.1): low-rank query and joint key/value latents, replicated on
  // the TP ranks, then column-parallel up projections to the local heads.
  const double q_width = sh.heads * sh.head_dim / tp;
  if (sh.q_lora_rank > 0) {
    ops.push_back(gemm("q_down", t, sh.q_lora_rank, h, 1, mb.bpe));
    ops.push_back(elementwise("q_norm", t * sh.q_lora_rank, 1, 1, norm_flops, mb.bpe));
    ops.push_back(gemm("q_up", t, q_width, sh.q_lora_rank, 1, mb.bpe, OpRole::tp_column_parallel));
  } else {
    ops.push_back(gemm("q_proj", t, q_width, h, 1, mb.bpe, OpRole::tp_column_parallel));
  }
  ops.push_back(gemm("kv_down", t, sh.kv_lora_rank + sh.qk_rope_dim, h, 1, mb.bpe));
  ops.push_back(elementwise("kv_norm", t * sh.kv_lora_rank, 1, 1, norm_flops, mb.bpe));
  ops.push_back(gemm("kv_up", t, sh.heads * (sh.qk_nope_dim + sh.v_head_dim) / tp, sh.kv_lora_rank, 1, mb.bpe,
                     OpRole::tp_column_parallel));
}

/// The activation between the up and down projections over `elements` values.
Op activation(const Microbatch& mb, const std::string& prefix, double elements) {
  const Shape& sh = mb.sh;
  if (sh.squared_relu) {
    // torch.pow(F.relu(x), 2), as Megatron-core writes it (megatron/core/activations.py
    // squared_relu; Megatron's bias-activation fusion covers GELU and SwiGLU only, so hand-fused
    // code runs it eager too): relu and pow, each a read and a write. Backward, autograd's
    // PowBackward0 (ATen pow_backward: grad · (2 · x.pow(1)): the pow(1) copy, the scaling, the
    // product with the gradient: 2 + 2 + 3 element accesses) and ReluBackward0
    // (threshold_backward: the gradient and the kept output read, one written). Compiled,
    // inductor fuses each pass into one kernel: x read, relu(x)² written; the gradient and x
    // read, the input gradient written.
    Op act = memory_pass(prefix + "_act", elements * (mb.compiled ? 2.0 : 4.0) * mb.bpe, mb.compiled ? 1 : 2);
    act.flops = elements * kSquaredReluFlops;
    act.backward_bytes = elements * (mb.compiled ? 3.0 : 10.0) * mb.bpe;
    act.backward_kernels = mb.compiled ? 1 : 4;
    return act;
  }
  Op act = elementwise(prefix + "_act", elements, sh.swiglu ? 2 : 1, 1, sh.swiglu ? kSwigluFlops : kGeluFlops, mb.bpe);
  if (mb.eager && sh.swiglu) {
    // Eager F.silu(gate) * up: silu reads and writes (2·bpe), the product reads two and writes
    // one (3·bpe): two kernels.
    act.bytes = elements * 5.0 * mb.bpe;
    act.kernels = 2;
  }
  return act;
}

/// One feed-forward block of width `width` (already divided over TP) over `rows` rows, run as
/// `batch` equal problems: up (gate and up fused under swiglu), activation, down.
/// `sp_gathered`: the block reads the sequence-parallel all-gather and its output gradient
/// comes back through one (the dense MLP and the shared experts; not the routed experts, whose
/// tokens arrive by the all-to-all).
void ffn(const Microbatch& mb, const std::string& prefix, double rows, double width, double batch,
         std::vector<Op>& ops, bool tensor_parallel = true, bool sp_gathered = false) {
  const Shape& sh = mb.sh;
  const double up_width = (sh.swiglu ? 2.0 : 1.0) * width;
  linear(ops, mb, prefix + "_up", rows, up_width, sh.hidden, batch,
         tensor_parallel ? OpRole::tp_column_parallel : OpRole::plain, sp_gathered);
  // Fused MLP: the GELU (and, in backward, its gradient) runs in the GEMMs' epilogues.
  if (!mb.fused_mlp) ops.push_back(activation(mb, prefix, rows * batch * width));
  linear(ops, mb, prefix + "_down", rows, sh.hidden, width, batch,
         tensor_parallel ? OpRole::tp_row_parallel : OpRole::plain, sp_gathered);
}

/// A marker op: where an all-to-all sits in the op list; no work of its own.
Op marker(std::string name, OpRole role) {
  Op op;
  op.name = std::move(name);
  op.role = role;
  return op;
}

/// The feed-forward half of a MoE layer after norm_mlp (see layer_forward_ops).
void moe_forward(const Microbatch& mb, std::vector<Op>& ops) {
  const Shape& sh = mb.sh;
  // Folded (expert TP 1): this TP rank's own sequence-parallel tokens; otherwise every token
  // of the microbatch, each expert split over the TP group as the dense MLP is.
  const ExpertShare e = expert_share(sh, mb.tp, mb.expert_folded);
  const double t = mb.tokens * e.tokens;
  const double h = sh.hidden;
  const double k = sh.experts_per_token;
  ops.push_back(gemm("router", t, sh.experts, h, 1, mb.bpe));
  ops.push_back(elementwise("router_topk", t * sh.experts, 1, 0, kSoftmaxFlops, mb.bpe));
  // T: the t·k token copies this rank sends (and, balanced, receives); U: its t tokens.
  const double copies = t * k * h;
  const double rows = t * h;
  const double local_experts = sh.experts / mb.ep;
  // Each token's row gathered once per chosen expert: T read, T written. Transformer Engine's
  // fused kernel (transformer_engine/pytorch/permutation.py moe_permute); its backward,
  // moe_permute_bwd, sums the k gradient rows of each token (T read, U written).
  Op permute = elementwise("moe_permute", copies, 1, 1, 0, mb.bpe);
  permute.backward_bytes = (copies + rows) * mb.bpe;
  if (!mb.moe_permute_fusion) {
    // Megatron-core 0.8-0.9 moe_utils.permute: argsort of the t·k expert indices, their
    // division by k, then the row gather (index_select; moe_gather, torch.gather, in 0.9).
    // Backward (index_select_backward / moe_gather.backward): zeros of U, then scatter_add_ of
    // the T gradient rows into them (U read and written).
    permute.kernels = 3;
    permute.backward_bytes = (copies + 3.0 * rows) * mb.bpe;
    permute.backward_kernels = 2;
  }
  ops.push_back(permute);
  ops.push_back(marker("moe_dispatch", OpRole::expert_dispatch));
  // The all-to-all delivers the T rows ordered by source rank; with more than one local expert
  // the grouped GEMM needs them ordered by expert: a row gather (Megatron-core's alltoall
  // dispatcher "permutation 2", sort_chunks_by_idxs; TE's moe_sort_chunks_by_index when fused),
  // and its inverse before the combine. Each backward is the inverse gather: the same bytes.
  const bool sort_by_expert = local_experts > 1;
  if (sort_by_expert) {
    Op sort = elementwise("moe_sort_chunks", copies, 1, 1, 0, mb.bpe);
    sort.backward_bytes = sort.bytes;
    sort.backward_kernels = 1;
    if (!mb.moe_permute_fusion) sort.kernels = 3;  // core 0.8-0.9: the same argsort-and-gather permute
    ops.push_back(sort);
  }
  // The EP group's ep·t·k token copies spread evenly over its E experts; this GPU runs its E/ep.
  ffn(mb, "mlp", t * k * mb.ep / sh.experts, e.width, local_experts, ops, !mb.expert_folded);
  if (sort_by_expert) {
    Op unsort = elementwise("moe_unsort_chunks", copies, 1, 1, 0, mb.bpe);
    unsort.backward_bytes = unsort.bytes;
    unsort.backward_kernels = 1;
    if (!mb.moe_permute_fusion) {
      // core 0.8-0.9: unpermute without probabilities: zeros of T, then the scatter (T read and
      // written); its backward the gather.
      unsort.bytes = 3.0 * copies * mb.bpe;
      unsort.kernels = 2;
      unsort.backward_bytes = 2.0 * copies * mb.bpe;
    }
    ops.push_back(unsort);
  }
  ops.push_back(marker("moe_combine", OpRole::expert_combine));
  if (mb.moe_permute_fusion) {
    // TE's moe_unpermute: read the T expert outputs, scale each by its gate weight and sum per
    // token, U written. Backward (moe_unpermute_bwd): the U gradient and the saved T inputs read
    // (the gates' gradients), the T input gradients written.
    Op unpermute = elementwise("moe_unpermute", copies, 1, 1.0 / k, 2, mb.bpe);
    unpermute.backward_bytes = (2.0 * copies + rows) * mb.bpe;
    ops.push_back(unpermute);
  } else {
    // Megatron-core 0.8-0.9 moe_utils.unpermute with probabilities, as PyTorch ops: zeros of T
    // and the scatter of the expert outputs back into token order (index_copy_; moe_scatter,
    // scatter_add_, in 0.9): T written, then T read and written; backward the gather of the
    // gradient (T read and written).
    Op scatter = memory_pass("moe_unpermute_scatter", 3.0 * copies * mb.bpe, 2);
    scatter.backward_bytes = 2.0 * copies * mb.bpe;
    scatter.backward_kernels = 1;
    ops.push_back(scatter);
    // The product with the gates broadcast over h (T read, T written). Backward (MulBackward0):
    // the expanded U gradient times the gates into T, the expanded gradient times the saved
    // tokens into T and its sum over h for the gates' gradients: 2U + 2T read, 2T written.
    Op weight = elementwise("moe_unpermute_weight", copies, 1, 1, 1, mb.bpe);
    weight.backward_bytes = (2.0 * rows + 4.0 * copies) * mb.bpe;
    weight.backward_kernels = 3;
    ops.push_back(weight);
    // The sum over each token's k rows (T read, U written). Its backward is an expand, a view
    // that launches nothing: no bytes, no kernel (its adds are not counted: the pass is bound by
    // its bytes, and a count would give the view a time).
    Op sum = memory_pass("moe_unpermute_sum", (copies + rows) * mb.bpe, 1);
    sum.backward_bytes = 0;
    sum.backward_kernels = 0;
    ops.push_back(sum);
  }
  // Shared experts run as the dense MLP does, over the TP group, on every token (folded or not:
  // Megatron-core's SharedExpertMLP takes the dense layers' TP config).
  if (sh.shared_experts > 0) ffn(mb, "shared", mb.tokens, sh.shared_experts * sh.moe_ffn / mb.tp, 1, ops, true, true);
}

std::vector<Op> forward_ops(const Microbatch& mb, bool moe) {
  const Shape& sh = mb.sh;
  const double t = mb.tokens;
  const double h = sh.hidden;
  const double tp = mb.tp;
  const double norm_flops = sh.rmsnorm ? kRmsnormFlops : kLayernormFlops;
  std::vector<Op> ops;

  const double outside = t * h / mb.sp;  // elements outside the TP regions, per rank
  ops.push_back(norm(mb, "norm_attn", outside, norm_flops));
  attention_projections(mb, norm_flops, ops);
  if (sh.qk_norm) {
    // The queries and keys normalised after their projections, before the rotation (olmo_core's
    // Attention: q_norm(w_q(x)), k_norm(w_k(x)); per head in Megatron-core's qk_layernorm): one
    // norm over every local query feature and one over every local key feature, whichever form.
    ops.push_back(norm(mb, "q_norm", t * sh.heads * sh.head_dim / tp, norm_flops, false));
    ops.push_back(norm(mb, "k_norm", t * sh.kv_width / tp, norm_flops, false));
  }
  if (sh.relative_positions) {
    // Projection of the s relative-position encodings, shared by the sequences of the
    // microbatch. The extra query-position score term of Transformer-XL is not modelled.
    ops.push_back(gemm("rel_pos", mb.s, h / tp, h, 1, mb.bpe));
  }
  if (sh.rope) {
    // MLA rotates only the decoupled RoPE parts: qk_rope of each local query head and of the
    // one key head all query heads share.
    const double rotated =
        sh.mla ? (sh.heads / tp + 1.0) * sh.qk_rope_dim : (sh.heads + sh.kv_heads) * sh.head_dim / tp;
    if (rotated > 0) {
      Op rot = elementwise("rotary", t * rotated, 1, 1, kRotaryFlops, mb.bpe);
      if (mb.eager) {
        // Eager complex rotation of q and k: x.float() (bpe + 4), complex multiply (8),
        // type_as (4 + bpe) per element, three kernels per tensor.
        rot.bytes = t * rotated * (16.0 + 2.0 * mb.bpe);
        rot.kernels = 6;
      }
      ops.push_back(rot);
    }
  }
  if (mb.expands_kv) {
    // torchtitan's repeat_kv (models/llama/model.py, 9dec370): K and V expanded to every local
    // query head, x[:, :, :, None, :].expand(...).reshape(...), a copy of each: the grouped
    // heads read, the expanded ones written.
    const double grouped = t * sh.kv_heads * sh.head_dim / tp, expanded = t * sh.heads * sh.head_dim / tp;
    Op repeat = elementwise("repeat_kv", 2.0 * grouped, 1, 0, 0, mb.bpe);
    repeat.bytes += 2.0 * expanded * mb.bpe;
    repeat.kernels = 2;
    ops.push_back(repeat);
  }
  for (Op& op : attention_core_forward(mb)) ops.push_back(std::move(op));
  // Row-parallel output projection: k = a·d_v / tp local features in, h out (partial sums that
  // the TP all-reduce — comm layer — adds up).
  linear(ops, mb, "attn_out", t, h, sh.heads * sh.v_head_dim / tp, 1, OpRole::tp_row_parallel, true);
  if (!mb.fused_add_norm) {  // fused: in norm_mlp's kernel
    if (mb.hidden_dropout) ops.push_back(dropout("hidden_dropout_attn", outside, mb.bpe));
    ops.push_back(elementwise("residual_attn", outside, 2, 1, 1, mb.bpe));
  }

  ops.push_back(norm(mb, "norm_mlp", outside, norm_flops));
  if (moe) {
    moe_forward(mb, ops);
  } else {
    ffn(mb, "mlp", t, sh.ffn / tp, 1, ops, true, true);
  }
  if (!mb.fused_add_norm) {  // fused: in the next layer's norm_attn kernel (the last layer's: final_norm's)
    if (mb.hidden_dropout) ops.push_back(dropout("hidden_dropout_mlp", outside, mb.bpe));
    ops.push_back(elementwise("residual_mlp", outside, 2, 1, 1, mb.bpe));
  }
  return ops;
}

/// Backward of a list of forward ops, in reverse order.
std::vector<Op> backward_of(const std::vector<Op>& forward, const Microbatch& mb) {
  std::vector<Op> ops;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Op& f = *it;
    if (f.role == OpRole::attention_core) {
      // Flash-attention backward: 5 s×s matmuls (S = QKᵀ recomputed, dQ, dK over d; dV, dP over
      // d_v) vs the forward's 2 → (3·d + 2·d_v)/(d + d_v) × FLOPs, 2.5× when d_v = d. Reads Q, K,
      // V, O, dO and the row statistics; writes dQ, dK, dV.
      const double heads = mb.sh.heads / mb.tp;
      const double kv_heads = (mb.expands_kv ? mb.sh.heads : mb.sh.kv_heads) / mb.tp;
      const double d = mb.sh.head_dim;
      const double dv = mb.sh.v_head_dim;
      Op b = f;
      b.name = "attn_core_bwd";
      b.role = OpRole::attention_core_grad;
      b.k = 3.0 * d + 2.0 * dv;
      b.flops = (3.0 * d + 2.0 * dv) / (d + dv) * f.flops;
      b.bytes = mb.tokens * (heads + kv_heads) * 2.0 * (d + dv) * mb.bpe + mb.tokens * heads * 4.0;
      ops.push_back(b);
    } else if (f.fp8_cast) {
      continue;  // the backward casts belong to the GEMM's backward below
    } else if (f.autocast_weight_cast) {
      // ToCopyBackward: the weight gradient (training precision) read, its fp32 copy written.
      Op b = f;
      b.name = f.name + "_bwd";
      ops.push_back(b);
    } else if (f.is_gemm()) {
      // dX (m×k) = dY (m×n)·Wᵀ (n×k); dW (k×n) = Xᵀ (k×m)·dY (m×n).
      const OpRole dgrad_role = f.role == OpRole::tp_column_parallel ? OpRole::tp_column_input_grad
                                : f.role == OpRole::tp_row_parallel  ? OpRole::tp_row_input_grad
                                                                     : OpRole::input_grad;
      Op dgrad = gemm(f.name + "_dgrad", f.m, f.k, f.n, f.batch, mb.bpe, dgrad_role);
      Op wgrad = gemm(f.name + "_wgrad", f.k, f.n, f.m, f.batch, mb.bpe, OpRole::weight_grad);
      if (f.dtype == "fp8") {
        // torchao (PyTorch model code, the branch below): cast the output gradient, re-cast the
        // kept input and the weight, and transpose the fp8 copies the wgrad GEMM needs (Hopper
        // fp8 GEMMs take K-major operands only): dY and X 5 B cast + 2 B transpose per element,
        // W 5 B (none when FSDP gathered it in fp8). Transformer Engine: the first branch.
        Op cast;
        cast.name = f.name + "_bwd_cast";
        cast.fp8_cast = true;
        const double weight = mb.fp8_gathered_weights || mb.fp8_weight_cache ? 0.0 : f.k * f.n;
        if (mb.fp8_te) {
          // Transformer Engine: only the output gradient is cast, with its transpose (dgrad reads
          // one, wgrad the other: fp8_cast_transpose_bgrad_fused), after its amax pass under
          // current scaling; the input's transposed copy was written in the forward and kept, the
          // weight's transpose is cached or gathered. Under sequence parallelism
          // (Op::fp8_sp_gathered) a row-parallel layer's output gradient arrives by the
          // all-gather: its local rows are cast without the copy and the gathered fp8 copy is
          // transposed; a column-parallel layer's re-gathered fp8 input is transposed for the
          // weight gradient (read 1, write 1 B per gathered element).
          const double per = te_cast_bytes(mb);
          const bool row_sp = f.fp8_sp_gathered && f.role == OpRole::tp_row_parallel;
          const bool column_sp = f.fp8_sp_gathered && f.role == OpRole::tp_column_parallel;
          const double grad = row_sp ? f.m / mb.sp * f.n : f.m * f.n;
          const double grad_per = row_sp ? per - 1.0 : per + (mb.fp8_blockwise ? kBlockScaleBytes : 0.0);
          const double transposed = row_sp ? f.m * f.n : column_sp ? f.m * f.k : 0.0;
          cast.bytes = f.batch * (grad * grad_per + transposed * 2.0 + weight * per);
          cast.flops = f.batch * (grad + weight) * 2.0;
          set_kernels(cast, mb, f.batch, (weight > 0 ? 2 : 1) * te_quantize_kernels(mb) + (transposed > 0 ? 1 : 0),
                      true);
        } else if (mb.fp8_rowwise) {
          // torchao's rowwise recipe (float8/float8_linear.py matmul_with_hp_or_float8_args):
          // a scale per row along the contraction dimension, so no forward copy serves a
          // backward GEMM and none is transposed: dgrad casts dY along N and the kept bf16 weight
          // along N, wgrad casts dY along M and the kept bf16 input along M; each cast an amax
          // reduction along its axis and the scaled cast (read bpe twice, write 1 B).
          cast.bytes = f.batch * (2.0 * f.m * f.n + f.m * f.k + weight) * (2.0 * mb.bpe + 1.0);
          cast.flops = f.batch * (2.0 * f.m * f.n + f.m * f.k + weight) * 2.0;
          set_kernels(cast, mb, f.batch, 8, false);
        } else if (f.fp8_sp_gathered) {
          // torchao's tensorwise Float8 TP (Float8ColwiseParallel, Float8RowwiseParallel): every
          // linear's input arrived as fp8 (cast before the gather, or by the row-parallel style's
          // input preparation) and was saved so: the weight gradient's transposed copy is made
          // from it (read 1, write 1 B), nothing re-cast. A row-parallel layer's output gradient
          // is cast on its local 1/sp of the rows before the backward all-gather
          // (NoopFwToFloat8BwDynamic after the forward reduce-scatter), the gathered fp8 copy
          // transposed; a column-parallel layer's, local to the rank, is cast whole, with its
          // transposed copy. The weight is re-cast.
          const bool row = f.role == OpRole::tp_row_parallel;
          const double grad = row ? f.m / mb.sp * f.n : f.m * f.n;
          cast.bytes = f.batch * (grad * (2.0 * mb.bpe + 1.0) + f.m * f.n * 2.0 + f.m * f.k * 2.0 +
                                  weight * (2.0 * mb.bpe + 1.0));
          cast.flops = f.batch * (grad + weight) * 2.0;
          set_kernels(cast, mb, f.batch, weight > 0 ? 6 : 4, false);
        } else {
          cast.bytes = f.batch * ((f.m * f.n + f.m * f.k) * (2.0 * mb.bpe + 1.0 + 2.0) + weight * (2.0 * mb.bpe + 1.0));
          cast.flops = f.batch * (f.m * f.n + f.m * f.k + weight) * 2.0;
          set_kernels(cast, mb, f.batch, 8, false);
        }
        ops.push_back(cast);
        for (Op* g : {&dgrad, &wgrad}) {
          g->dtype = "fp8";
          g->fp8_split_accumulator = true;  // both frameworks' backward GEMMs (Op::fp8_split_accumulator)
          g->fp8_cast_after_gather = mb.fp8_rowwise;
          g->bytes = gemm_bytes(*g, mb.bpe);
        }
      }
      // Megatron's gradient_accumulation_fusion: the wgrad GEMM's epilogue reads and writes the
      // fp32 main_grad (beta = 1) instead of writing a fresh gradient in the training precision.
      if (mb.wgrad_accumulates_fp32) wgrad.bytes += wgrad.batch * wgrad.m * wgrad.n * (8.0 - mb.bpe);
      for (Op* g : {&dgrad, &wgrad}) {
        g->kernels = f.kernels;
        g->library_kernels = f.library_kernels;
      }
      ops.push_back(dgrad);
      ops.push_back(wgrad);
      if (f.dtype == "fp8" && mb.fp8_rowwise) {
        // torchao's addmm_float8_unwrapped: without fast accumulation (the backward GEMMs'
        // default Float8GemmConfig) PyTorch's rowwise kernel is so slow that torchao runs
        // cuBLAS's per-tensor kernel with unit scales and multiplies the output by the outer
        // product of the row and column scales afterwards (pytorch/ao#1325, `output *=
        // post_inverse_scale`): one pass over each backward GEMM's output, read and written in
        // the training precision (assumed a kernel of its own: the multiply follows a library
        // GEMM, which Inductor cannot fuse it into).
        for (const Op* g : {&dgrad, &wgrad}) {
          ops.push_back(elementwise(g->name + "_rescale", g->batch * g->m * g->n, 1, 1, 1, mb.bpe));
        }
      }
    } else if (f.name == "repeat_kv") {
      // The expansion's backward sums each group's query-head gradients of K and V: the
      // expanded gradients read, the grouped ones written, the forward's bytes.
      Op b = f;
      b.name = "repeat_kv_bwd";
      ops.push_back(b);
    } else if (is_dropout(f.name)) {
      // Read the output gradient and the mask, write the input gradient: the forward's bytes.
      Op b = f;
      b.name = f.name + "_bwd";
      b.flops = f.flops / kDropoutFlops * kDropoutBackwardFlops;
      ops.push_back(b);
    } else {
      Op b = f;
      b.name = f.name + "_bwd";
      b.bytes = f.backward_bytes >= 0 ? f.backward_bytes : 2.0 * f.bytes;
      b.flops = 2.0 * f.flops;
      if (f.role == OpRole::vocab_embedding) b.role = OpRole::vocab_embedding_grad;
      b.kernels = f.backward_kernels >= 0 ? f.backward_kernels : 2 * f.kernels;
      b.host_syncs = 0;  // autograd's backward kernels need no value on the host
      ops.push_back(b);
    }
  }
  return ops;
}

std::vector<Op> head_forward(const Microbatch& mb) {
  const Shape& sh = mb.sh;
  const double t = mb.tokens;
  const double h = sh.hidden;
  const double vocab_local = sh.vocab / mb.tp;  // vocab-parallel embedding and LM head
  std::vector<Op> ops;
  // Gather t rows of h (plus t rows of the learned position table, added), write t·h.
  ops.push_back(elementwise("embedding", t * h, sh.learned_positions ? 2 : 1, 1, sh.learned_positions ? 1 : 0,
                            mb.bpe));
  ops.back().role = OpRole::vocab_embedding;
  const double final_flops = sh.rmsnorm ? kRmsnormFlops : kLayernormFlops;
  ops.push_back(mb.fused_add_norm ? norm(mb, "final_norm", t * h / mb.sp, final_flops)
                                  : elementwise("final_norm", t * h / mb.sp, 1, 1, final_flops, mb.bpe));
  if (mb.autocast) ops.push_back(autocast_weight_cast("lm_head", h, vocab_local, 1, mb.bpe));
  ops.push_back(gemm("lm_head", t, vocab_local, h, 1, mb.bpe, OpRole::tp_column_parallel));
  // Fused cross-entropy: read the logits, keep fp32 probabilities for the backward.
  Op ce;
  ce.name = "cross_entropy";
  ce.bytes = t * vocab_local * (mb.bpe + 4.0);
  ce.flops = t * vocab_local * kCrossEntropyFlops;
  if (mb.eager_loss) {
    // F.cross_entropy(logits.float()): the fp32 copy (bpe + 4), log-softmax (read 4, write 4),
    // NLL gather: three kernels.
    ce.bytes = t * vocab_local * (12.0 + mb.bpe);
    ce.kernels = 3;
  }
  if (mb.compiled_loss) {
    // Inductor's looped row reductions over a 100K-wide row: one pass for the maximum, one for
    // the sum of exponentials (each reads the logits in the training precision), the target's
    // logit gathered in the second: two kernels, nothing written per logit.
    ce.bytes = t * vocab_local * 2.0 * mb.bpe;
    ce.kernels = 2;
  }
  if (mb.fused_loss) {
    // flash-attn's xentropy forward: one kernel per row block, a pass for the maximum and one
    // for the sum of exponentials over the logits in the training precision; it writes the
    // loss and the fp32 log-sum-exp per row only.
    ce.bytes = t * vocab_local * 2.0 * mb.bpe;
    ce.kernels = 1;
  }
  if (mb.megatron_loss) {
    // Megatron's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py at
    // core_v0.8.0; mpu/cross_entropy.py since 2020, the caller casting): per logit the fp32 copy
    // (read bpe, write 4), the row maximum (read 4), the in-place shift (read 4, write 4), exp
    // into itself (read 4, write 4), the row sum (read 4) and the in-place division by it into
    // the softmax kept for backward (read 4, write 4): bpe + 36 B. Six passes, and twelve small
    // kernels over one value per token (the target mask and its shifted copy, the predicted
    // logit's gather, clone and masking, the log and the subtraction). In fp32 training .float()
    // returns the logits themselves: no copy, 32 B in five passes.
    const bool copy = mb.bpe < 4.0;
    ce.bytes = t * vocab_local * (32.0 + (copy ? mb.bpe + 4.0 : 0.0));
    ce.kernels = copy ? 18 : 17;
  }
  ops.push_back(ce);
  return ops;
}

/// Under the fp8 recipe only the linear layers run in fp8: every other GEMM (attention core, LM
/// head, router) keeps bf16.
std::vector<Op> with_recipe(std::vector<Op> ops, const Microbatch& mb) {
  if (!mb.fp8_linear) return ops;
  for (Op& op : ops) {
    if (op.is_gemm() && op.dtype.empty()) op.dtype = "bf16";
  }
  return ops;
}

}  // namespace

std::vector<Op> steady_microbatch(std::vector<Op> ops) {
  std::erase_if(ops, [](const Op& op) { return op.first_microbatch_only; });
  return ops;
}

namespace {

/// PyTorch's recompute ends where the layer's last tensor for backward is rebuilt. Under
/// torch.compile the partitioner puts in the backward graph only the recomputed nodes whose
/// values the backward reads; in eager, torch.utils.checkpoint without reentrancy (torchtitan's
/// checkpoint_wrapper, CheckpointImpl.NO_REENTRANT, and its selective policies) stops the rerun
/// as soon as the pack hook has seen as many saved tensors as the forward saved
/// (set_checkpoint_early_stop, on by default since torch 2.1). A dense layer's last saved tensor
/// is the MLP down projection's input (after its fp8 cast under Float8): the down projection's
/// output, its tensor-parallel reduction and the residual add are never rebuilt. An aten matmul
/// saves its inputs before it runs, so in eager the down-projection GEMM itself is skipped;
/// torchao's Float8 matmul (an autograd.Function, whose ctx.save_for_backward is packed once its
/// forward has returned) runs it, and the stop comes before its reduction. Megatron-LM's and
/// DeepSpeed's reentrant checkpoints rerun the whole layer and backpropagate through its output
/// (not called for them). Layers with hidden dropout keep the tail: the dropout's mask is saved
/// from the down projection's output.
void stop_at_last_saved_tensor(std::vector<Op>& ops, const Microbatch& mb) {
  auto act = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.name == "mlp_act"; });
  if (act == ops.end()) return;
  auto cut = act + 1;
  if (cut != ops.end() && cut->name == "mlp_down_cast") ++cut;
  if (cut != ops.end() && cut->is_gemm() && cut->name == "mlp_down" && mb.eager && mb.fp8_linear) {
    cut->role = OpRole::plain;  // the GEMM runs; nothing reduces its output
    ++cut;
  }
  ops.erase(cut, ops.end());
}

/// A sequence-parallel all-gather that a PyTorch recompute (DTensor TP with sequence
/// parallelism) reruns of its own: of the output of the norm `norm` (norm_attn, norm_mlp), the
/// input every column-parallel linear after it reads for its weight gradient — all-gather
/// outputs are never saved (torchtitan's op policy saves reduce-scatter outputs only) — where no
/// reduce-scatter in the list comes before it (a forward pass has it as the tail of the
/// previous row-parallel GEMM's reduction).
void gather_after(std::vector<Op>& ops, const std::string& norm) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == norm; });
  if (it == ops.end()) return;
  Op gather;
  gather.name = norm + "_gather";
  gather.role = OpRole::tp_sequence_gather;
  gather.kernels = 0;
  ops.insert(it + 1, gather);
}

std::vector<Op> with_prefix(std::vector<Op> ops, const std::string& prefix) {
  for (Op& op : ops) op.name = prefix + op.name;
  return ops;
}

}  // namespace

double bytes_per_element(const std::string& precision) {
  if (precision == "fp32" || precision == "tf32") return 4.0;
  if (precision == "bf16" || precision == "fp16" || precision == "fp8") return 2.0;
  throw std::invalid_argument("precision must be fp32, tf32, bf16, fp16 or fp8, got \"" + precision + "\"");
}

double parameter_bytes(const std::string& precision) {
  return bytes_per_element(precision) >= 4.0 ? 4.0 : 2.0;
}

double stored_parameter_bytes(const config::TrainingSpec& training) {
  return training.autocast ? 4.0 : parameter_bytes(training.precision);
}

double reduce_bytes(const config::TrainingSpec& training) {
  if (training.reduce_dtype.empty()) return stored_parameter_bytes(training);
  return bytes_per_element(training.reduce_dtype);
}

double gathered_linear_bytes(const config::TrainingSpec& training) {
  return training.fp8_all_gather ? 1.0 : parameter_bytes(training.precision);
}

bool is_moe_layer(const config::ModelSpec& model, int layer) {
  const Shape sh = shape_of(model);
  if (layer < 0 || layer >= model.layers) {
    throw std::invalid_argument("layer must be in [0, " + std::to_string(model.layers) + "), got " +
                                std::to_string(layer));
  }
  return sh.is_moe_layer(layer);
}

std::vector<int> moe_layer_indices(const config::ModelSpec& model) {
  const Shape sh = shape_of(model);
  std::vector<int> layers;
  for (int l = 0; l < model.layers; ++l) {
    if (sh.is_moe_layer(l)) layers.push_back(l);
  }
  return layers;
}

MoeAllToAll moe_all_to_all_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int ep) {
  const Microbatch mb = microbatch(model, training, sequences, 1, ep);
  if (!(mb.sh.experts > 1)) throw std::invalid_argument("model " + model.name + " has no experts to dispatch to");
  MoeAllToAll a;
  a.routed_bytes = mb.tokens * mb.sh.experts_per_token * mb.sh.hidden * mb.bpe;
  a.dispatch_bytes = a.routed_bytes * (mb.ep - 1.0) / mb.ep;
  a.combine_bytes = a.dispatch_bytes;
  a.routing_map_bytes = mb.tokens * mb.sh.experts;
  a.expert_count_bytes = mb.sh.experts * 8.0;
  return a;
}

double expert_split(const config::ParallelSpec& p) {
  return p.expert_folded() ? static_cast<double>(p.ep) / p.tp : static_cast<double>(p.ep);
}

std::vector<Op> layer_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp, int layer, int ep, bool sequence_parallel,
                                  bool expert_folded) {
  const bool moe = is_moe_layer(model, layer);
  const Microbatch mb = microbatch(model, training, sequences, tp, ep, sequence_parallel, expert_folded);
  return with_recipe(forward_ops(mb, moe), mb);
}

std::vector<Op> layer_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   int sequences, int tp, int layer, int ep, bool sequence_parallel,
                                   bool expert_folded) {
  const bool moe = is_moe_layer(model, layer);
  const Microbatch mb = microbatch(model, training, sequences, tp, ep, sequence_parallel, expert_folded);
  return with_recipe(backward_of(forward_ops(mb, moe), mb), mb);
}

std::vector<Op> head_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp, bool sequence_parallel) {
  const Microbatch mb = microbatch(model, training, sequences, tp, 1, sequence_parallel);
  return with_recipe(head_forward(mb), mb);
}

std::vector<Op> head_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp, bool sequence_parallel) {
  const Microbatch mb = microbatch(model, training, sequences, tp, 1, sequence_parallel);
  std::vector<Op> forward = head_forward(mb);
  std::vector<Op> ops;
  // The loss backward is exact rather than the 2× rule: read the fp32 probabilities, write
  // dlogits in the training precision.
  const Op& ce = forward.back();
  Op ce_bwd = ce;
  ce_bwd.name = "cross_entropy_bwd";
  ce_bwd.flops = ce.flops / kCrossEntropyFlops;  // one subtraction per logit
  if (mb.eager_loss) {
    // NLL backward writes an fp32 gradient (4), log-softmax backward reads it and its output
    // and writes (12), the fp32 → bf16 copy backward (4 + bpe).
    ce_bwd.bytes = mb.tokens * mb.sh.vocab / mb.tp * (20.0 + mb.bpe);
    ce_bwd.kernels = 3;
  }
  if (mb.compiled_loss || mb.fused_loss) {
    // One fused kernel: read the saved logits, recompute the softmax from the row statistics,
    // subtract the one-hot target, write the gradient in the training precision (xentropy's
    // backward the same, from its saved log-sum-exp).
    ce_bwd.bytes = mb.tokens * mb.sh.vocab / mb.tp * 2.0 * mb.bpe;
    ce_bwd.kernels = 1;
  }
  if (mb.megatron_loss) {
    // Its backward: the one-hot subtraction through an index over one logit per token, the
    // in-place scale of the kept softmax by the loss gradient (read 4, write 4) and the fp32
    // copy's backward, the cast to the training precision (read 4, write bpe): 12 + bpe B;
    // two passes and six small kernels (the index, its float mask and subtraction); in fp32
    // training no cast, 8 B.
    const bool copy = mb.bpe < 4.0;
    ce_bwd.bytes = mb.tokens * mb.sh.vocab / mb.tp * (8.0 + (copy ? 4.0 + mb.bpe : 0.0));
    ce_bwd.kernels = copy ? 8 : 7;
  }
  ops.push_back(ce_bwd);
  forward.pop_back();
  for (Op& op : backward_of(forward, mb)) ops.push_back(std::move(op));
  return with_recipe(ops, mb);
}

std::vector<Op> logit_metric_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp) {
  const Microbatch mb = microbatch(model, training, sequences, tp, 1);
  const double logits = mb.tokens * mb.sh.vocab / mb.tp;
  const bool copy = mb.bpe < 4.0;  // autocast's float32 policy for cross_entropy: a copy unless fp32 already
  std::vector<Op> ops;
  for (int k = 1; k <= training.logit_metrics; ++k) {
    Op metric;
    metric.name = "logit_metric_" + std::to_string(k);
    metric.bytes = logits * (8.0 + (copy ? mb.bpe + 4.0 : 0.0));
    metric.flops = logits * kCrossEntropyFlops;
    metric.kernels = copy ? 5 : 4;
    ops.push_back(metric);
  }
  return ops;
}

namespace {

/// `op`, a GEMM of the layer's forward, cut to its first `n` output columns (a recompute of one
/// of the linears fused into it): its FLOPs and bytes those of the narrower GEMM (gemm_bytes:
/// the input read whole).
Op narrowed_gemm(const Op& op, double n, const Microbatch& mb) {
  Op g = op;
  g.n = n;
  g.flops = 2.0 * g.m * g.n * g.k * g.batch;
  g.bytes = gemm_bytes(g, mb.bpe);
  return g;
}

}  // namespace

std::vector<Op> layer_recompute_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                    int sequences, int tp, int layer, int ep, bool sequence_parallel,
                                    bool expert_folded) {
  const bool moe = is_moe_layer(model, layer);
  const Microbatch mb = microbatch(model, training, sequences, tp, ep, sequence_parallel, expert_folded);
  const std::string& policy = training.activation_checkpointing;
  // A recompute runs after the step's first forward: TE's cached fp8 weights serve it.
  // PyTorch model code on a dense layer without hidden dropout: the recompute ends at its last
  // saved tensor, and DTensor TP with sequence parallelism reruns the all-gathers it needs.
  const bool torch_recompute = pytorch_model_code(training) && !moe && !mb.hidden_dropout;
  const bool torch_sp = torch_recompute && tp > 1 && sequence_parallel;
  if (policy == "full") {
    std::vector<Op> ops = steady_microbatch(forward_ops(mb, moe));
    if (torch_recompute) stop_at_last_saved_tensor(ops, mb);
    if (torch_sp) gather_after(ops, "norm_attn");  // the MLP's comes with attn_out's reduction
    return with_recipe(with_prefix(std::move(ops), "recompute_"), mb);
  }
  if (policy == "selective") return with_recipe(with_prefix(attention_core_forward(mb), "recompute_"), mb);
  if (policy == "op") {
    // torchtitan's op-level policy keeps the attention core's outputs and every second matmul's
    // output (Llama order: wq, wk, wv, wo, w1, w3, w2 → wq, wv, w1, w2 kept): recompute wk, wo,
    // w3 (GELU MLP: the down projection) and every element-wise op. Its save list holds the
    // reduce-scatter too (_c10d_functional.reduce_scatter_tensor): under sequence-parallel TP
    // wo's reduce-scattered output is kept, so compiled nothing reads wo's recomputed output
    // (the partitioner drops the GEMM) and eager reruns the GEMM but takes the reduction's
    // output from the cache.
    std::vector<Op> ops;
    for (const Op& op : steady_microbatch(forward_ops(mb, moe))) {
      if (op.fused_attention || !op.is_gemm()) {
        if (!op.fused_attention && (op.bytes > 0 || op.flops > 0)) ops.push_back(op);
        continue;
      }
      if (op.name == "qkv") {
        ops.push_back(narrowed_gemm(op, mb.sh.kv_heads * mb.sh.head_dim / mb.tp, mb));
      } else if (op.name == "attn_out" || (mb.sh.swiglu ? op.name == "mlp_up" : op.name == "mlp_down")) {
        Op g = op;
        if (op.name == "attn_out" && torch_sp) {
          if (!mb.eager) continue;
          g.role = OpRole::plain;
        }
        if (mb.sh.swiglu && op.name == "mlp_up") g = narrowed_gemm(g, op.n / 2, mb);  // w3: half of gate-and-up
        ops.push_back(g);
      }
    }
    if (torch_recompute) stop_at_last_saved_tensor(ops, mb);
    if (torch_sp) {
      gather_after(ops, "norm_attn");
      gather_after(ops, "norm_mlp");
    }
    return with_recipe(with_prefix(ops, "recompute_"), mb);
  }
  return {};
}

Op optimizer_op(const config::TrainingSpec& training, double params_local) {
  if (params_local < 0) throw std::invalid_argument("params_local must be >= 0");
  // The gradients and parameters as stored: under autocast the fp32 parameters are updated in
  // place from fp32 gradients, with no low-precision copy to write.
  const double pb = stored_parameter_bytes(training);
  const double sb = optimizer_state_bytes(training);
  const bool mixed = pb < sb;  // a master copy in the state's dtype beside the stored parameters
  double state_tensors = 0, flops_per_param = 0;
  if (training.optimizer == "adam") {
    state_tensors = 2;
    flops_per_param = 12;
  } else if (training.optimizer == "rmsprop") {
    state_tensors = 1;
    flops_per_param = 8;
  } else if (training.optimizer == "momentum") {
    state_tensors = 1;
    flops_per_param = 4;
  } else if (training.optimizer == "sgd") {
    flops_per_param = 2;
  } else {
    throw std::invalid_argument("optimizer must be sgd, momentum, rmsprop or adam, got \"" + training.optimizer +
                                "\"");
  }
  // Gradient-norm clipping (the norm reads every gradient; the clip coefficient multiplies them:
  // read + write), as Megatron-LM and torchtitan run it before every update: 3·pb. fp16 adds the
  // loss-scale pass: an inf/nan check (read) and the unscale (read + write): 3·pb more.
  // DeepSpeed's BF16_Optimizer clips the rank's whole unsharded fp32 gradients, not this shard's
  // (timed with its gradient reduction: run/data_parallel.cpp).
  const double clipping = training.bf16_optimizer ? 0.0 : 3.0 * pb;
  const double loss_scaling = training.precision == "fp16" ? 3.0 * pb : 0.0;
  const std::string impl = optimizer_impl(training);
  // Fused: one pass that reads and writes the weights it updates (the master copy, or the
  // stored parameters in place when there is none) and each state tensor, reads the gradient and
  // writes the low-precision copy of a master.
  double update = 2.0 * sb + 2.0 * sb * state_tensors + pb + (mixed ? pb : 0.0);
  int kernels = 1;
  if (impl == "foreach") {
    update = 80.0;
    kernels = 8;
  } else if (impl == "for_loop") {
    update = 88.0;
    kernels = 9;
  }
  Op op;
  op.name = "optimizer_step";
  op.bytes = params_local * (update + clipping + loss_scaling);
  op.flops = params_local * flops_per_param;
  op.kernels = kernels;
  return op;
}

Op memory_pass(std::string name, double bytes, int kernels) {
  Op op;
  op.name = std::move(name);
  op.bytes = bytes;
  op.kernels = kernels;
  return op;
}

double optimizer_state_bytes(const config::TrainingSpec& training) {
  return training.optimizer_dtype == "bf16" ? 2.0 : 4.0;
}

std::string optimizer_impl(const config::TrainingSpec& training) {
  if (training.optimizer != "adam" || !pytorch_model_code(training)) return "fused";
  return training.optimizer_impl.empty() ? "foreach" : training.optimizer_impl;
}

}  // namespace ironlaw::workload

namespace ironlaw::workload {

namespace {

/// A memory-bound kernel sequence of torch's context-parallel bookkeeping: `bytes` of HBM
/// traffic in `kernels` eager ATen kernels.
Op ring_copy(std::string name, double bytes, int kernels, OpRole role) {
  Op op = memory_pass(std::move(name), bytes, kernels);
  op.role = role;
  return op;
}

/// The core with another query × key shape and mask.
Op ring_block(const Op& core, double queries, double keys, bool causal) {
  Op op = core;
  op.m = queries;
  op.n = keys;
  op.causal = causal;
  const double cells = causal ? queries * (queries + 1.0) / 2.0 : queries * keys;
  op.flops = 2.0 * cells * core.k * core.batch;
  op.bytes = core.bytes * (queries + keys) / (core.m + core.n);
  return op;
}

}  // namespace

double fp8_weight_cache_bytes(const config::TrainingSpec& training) {
  return training.precision == "fp8" && !training.fp8_all_gather && !pytorch_model_code(training) ? 2.0 : 0.0;
}

bool pytorch_model_code(const config::TrainingSpec& training) { return !training.megatron_style(); }

bool sdpa_expands_kv(const config::TrainingSpec& training) { return pytorch_model_code(training); }

RingAttentionOps ring_attention_ops(const Op& core, const RingTensors& t) {
  if (core.m <= 0 || core.m != core.n || !core.causal) {
    throw std::invalid_argument("ring attention needs the local causal s × s attention core");
  }
  const bool backward = core.role == OpRole::attention_core_grad;
  const double s = core.m;
  const double half = s / 2.0;
  const double o = t.out_elements, q = t.query_elements, kv = t.kv_elements, lse = t.lse_elements;
  const OpRole role = core.role;
  RingAttentionOps r;
  r.first.push_back(core);
  r.kv_half.push_back(ring_block(core, s, half, false));
  r.q_half.push_back(ring_block(core, half, s, false));
  const double kv_cat = 2.0 * kv * (2.0 + 2.0);  // torch.cat([k.flatten(), v.flatten()]) in bf16
  // key.contiguous(), value.contiguous() before the steps, forward and backward alike: K and V
  // handed to SDPA as a (b, h, s, d) transpose of (b, s, h, d) tensors are copied, 2 + 2 B each.
  if (t.transposed_kv) r.first.insert(r.first.begin(), ring_copy("cp_kv_contiguous", kv_cat, 2, role));
  if (!backward) {
    // _SDPAMerger.step (convert_to_f32): the block output to fp32; then out − sigmoid(lse_b − lse)
    // · (out − out_b) and lse − logsigmoid(lse − lse_b), one eager kernel per operator.
    const auto merge = [&](double out, double rows, bool partial) {
      double bytes = out * (2 + 4) + out * 12 + out * 8 + out * 12 + rows * (12 + 8 + 12 + 8 + 12);
      int kernels = 9;
      if (partial) {  // _partial_update: torch.cat of the two halves of out and lse, in fp32
        bytes += 2 * out * 8 + 2 * rows * 8;
        kernels += 2;
      }
      return ring_copy("cp_merge", bytes, kernels, role);
    };
    r.first.push_back(ring_copy("cp_merge", o * 6, 1, role));
    r.first.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
    r.kv_half.push_back(merge(o, lse, false));
    r.kv_half.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
    r.q_half.push_back(merge(o / 2, lse / 2, true));
    r.q_half.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
    r.finish.push_back(ring_copy("cp_out_cast", o * 6, 1, role));  // results(): fp32 → bf16
    return r;
  }
  // _templated_ring_attention_backward (accumulation in fp32): zero-filled dQ, dK, dV; per step
  // dK, dV (+)= the block's bf16 gradients (a _partial_update, add into one half then torch.cat,
  // for the kv-half steps), the fp32 dK, dV concatenated for the next rank, dQ (+)= the block's.
  r.first.insert(r.first.begin(), ring_copy("cp_grad_zero", 4 * (q + 2 * kv), 3, role));
  r.first.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
  const double dq_add = q * 10, dkv_add = 2 * kv * 10, dkv_cat = 2 * kv * 8;
  r.first.push_back(ring_copy("cp_grad_accumulate", dkv_add + dkv_cat + dq_add, 4, role));
  r.kv_half.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
  r.kv_half_accumulate.push_back(
      ring_copy("cp_grad_accumulate", 2 * (kv * 5 + kv * 8) + dkv_cat + dq_add, 6, role));
  r.q_half.push_back(ring_copy("cp_kv_cat", kv_cat, 1, role));
  r.q_half_accumulate.push_back(ring_copy("cp_grad_accumulate", dkv_add + dkv_cat + q * 5 + q * 8, 5, role));
  r.finish.push_back(ring_copy("cp_grad_cast", 6 * (q + 2 * kv), 2, role));  // fp32 → bf16
  return r;
}

}  // namespace ironlaw::workload
