#include <stdexcept>
#include <string>
#include <vector>

#include "workload/model_cost.hpp"
#include "workload/model_shape.hpp"

namespace ironlaw::workload {

namespace {

/// A GEMM (m×k)·(k×n) repeated `batch` times: reads both operands, writes the output.
Op gemm(std::string name, double m, double n, double k, double batch, double bpe) {
  Op op;
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

/// What every op builder of one layer needs.
struct Microbatch {
  Shape sh;
  double bpe = 2;        ///< bytes per activation / GEMM operand element
  double sequences = 1;  ///< sequences in the microbatch
  double s = 0;          ///< sequence length
  double tokens = 0;     ///< sequences · s
  double tp = 1;
  bool flash = true;
};

Microbatch microbatch(const config::ModelSpec& model, const config::TrainingSpec& training, int sequences,
                      int tp) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (tp <= 0) throw std::invalid_argument("tp must be positive");
  if (training.sequence_length <= 0) throw std::invalid_argument("sequence_length must be positive");
  check_recompute_policy(training.activation_checkpointing);
  Microbatch mb;
  mb.sh = shape_of(model);
  mb.bpe = bytes_per_element(training.precision);
  mb.sequences = sequences;
  mb.s = training.sequence_length;
  mb.tokens = mb.sequences * mb.s;
  mb.tp = tp;
  mb.flash = training.flash_attention;
  return mb;
}

// Rough CUDA-core FLOPs per element of the vector kernels (only for completeness; these ops are
// memory-bound): layernorm mean, variance, normalise, scale, shift ≈ 8; rmsnorm ≈ 4; tanh-GELU
// ≈ 8; SiLU·gate ≈ 6; rotary (2 multiplies + 1 add) 3; softmax (max, sub, exp, sum, div) 5.
constexpr double kLayernormFlops = 8, kRmsnormFlops = 4, kGeluFlops = 8, kSwigluFlops = 6;
constexpr double kRotaryFlops = 3, kSoftmaxFlops = 5, kCrossEntropyFlops = 5;

/// The attention-core ops (forward) of one layer.
std::vector<Op> attention_core_forward(const Microbatch& mb) {
  const Shape& sh = mb.sh;
  const double heads = sh.heads / mb.tp;
  const double kv_heads = sh.kv_heads / mb.tp;
  const double d = sh.head_dim;
  const double s = mb.s;
  const double batch = mb.sequences * heads;  // one (s × s) problem per sequence and local head
  std::vector<Op> ops;
  if (mb.flash) {
    // One fused causal kernel. Model FLOPs as seed 003 counts them: s(s+1)/2 cells of the
    // causal triangle × 4·d (2·d for QKᵀ, 2·d for PV) per head. No s² tensor touches HBM:
    // read Q, K, V, write O, plus the fp32 log-sum-exp row statistics kept for backward.
    Op op;
    op.name = "attn_core";
    op.m = s;
    op.n = s;
    op.k = 2.0 * d;
    op.batch = batch;
    op.causal = true;
    op.fused_attention = true;
    op.flops = batch * s * (s + 1.0) / 2.0 * 4.0 * d;
    op.bytes = mb.tokens * d * (2.0 * heads + 2.0 * kv_heads) * mb.bpe + mb.tokens * heads * 4.0;
    ops.push_back(op);
  } else {
    // Unfused (Megatron's baddbmm path): the full s × s score matrix is computed (the causal
    // mask is applied afterwards, so the masked half is computed too), written, soft-maxed and
    // read back — HBM traffic ∝ s²·heads.
    ops.push_back(gemm("attn_scores", s, s, d, batch, mb.bpe));
    ops.push_back(elementwise("attn_softmax", batch * s * s, 1, 1, kSoftmaxFlops, mb.bpe));
    ops.push_back(gemm("attn_values", s, d, s, batch, mb.bpe));
  }
  return ops;
}

std::vector<Op> forward_ops(const Microbatch& mb) {
  const Shape& sh = mb.sh;
  const double t = mb.tokens;
  const double h = sh.hidden;
  const double tp = mb.tp;
  const double norm_flops = sh.rmsnorm ? kRmsnormFlops : kLayernormFlops;
  std::vector<Op> ops;

  ops.push_back(elementwise("norm_attn", t * h, 1, 1, norm_flops, mb.bpe));
  // Column-parallel fused QKV projection: output a·d + 2·g·d features, split over tp.
  ops.push_back(gemm("qkv", t, (sh.heads + 2.0 * sh.kv_heads) * sh.head_dim / tp, h, 1, mb.bpe));
  if (sh.relative_positions) {
    // Projection of the s relative-position encodings, shared by the sequences of the
    // microbatch. The extra query-position score term of Transformer-XL is not modelled.
    ops.push_back(gemm("rel_pos", mb.s, h / tp, h, 1, mb.bpe));
  }
  if (!sh.learned_positions && !sh.relative_positions) {
    ops.push_back(elementwise("rotary", t * (sh.heads + sh.kv_heads) * sh.head_dim / tp, 1, 1, kRotaryFlops,
                              mb.bpe));
  }
  for (Op& op : attention_core_forward(mb)) ops.push_back(std::move(op));
  // Row-parallel output projection: k = a·d / tp local features in, h out (partial sums that
  // the TP all-reduce — comm layer — adds up).
  ops.push_back(gemm("attn_out", t, h, sh.heads * sh.head_dim / tp, 1, mb.bpe));
  ops.push_back(elementwise("residual_attn", t * h, 2, 1, 1, mb.bpe));

  ops.push_back(elementwise("norm_mlp", t * h, 1, 1, norm_flops, mb.bpe));
  // MoE: tokens · experts_per_token routed rows spread evenly over the experts, run as one
  // grouped GEMM of `experts` problems; dense: one problem of all tokens.
  const double routed_rows = t * sh.experts_per_token / sh.experts;
  if (sh.experts > 1) ops.push_back(gemm("router", t, sh.experts, h, 1, mb.bpe));
  const double up_width = (sh.swiglu ? 2.0 : 1.0) * sh.ffn / tp;  // swiglu: gate and up fused
  ops.push_back(gemm("mlp_up", routed_rows, up_width, h, sh.experts, mb.bpe));
  const double act_elements = t * sh.experts_per_token * sh.ffn / tp;
  ops.push_back(elementwise("mlp_act", act_elements, sh.swiglu ? 2 : 1, 1, sh.swiglu ? kSwigluFlops : kGeluFlops,
                            mb.bpe));
  ops.push_back(gemm("mlp_down", routed_rows, h, sh.ffn / tp, sh.experts, mb.bpe));
  ops.push_back(elementwise("residual_mlp", t * h, 2, 1, 1, mb.bpe));
  return ops;
}

/// Backward of a list of forward ops, in reverse order.
std::vector<Op> backward_of(const std::vector<Op>& forward, const Microbatch& mb) {
  std::vector<Op> ops;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Op& f = *it;
    if (f.name == "attn_core") {
      // Flash-attention backward: 5 s×s×d matmuls (S = QKᵀ recomputed, dV, dP, dQ, dK) vs the
      // forward's 2 → 2.5× FLOPs. Reads Q, K, V, O, dO and the row statistics; writes dQ, dK, dV.
      const double heads = mb.sh.heads / mb.tp;
      const double kv_heads = mb.sh.kv_heads / mb.tp;
      Op b = f;
      b.name = "attn_core_bwd";
      b.k = 5.0 * mb.sh.head_dim;
      b.flops = 2.5 * f.flops;
      b.bytes = mb.tokens * mb.sh.head_dim * (4.0 * heads + 4.0 * kv_heads) * mb.bpe + mb.tokens * heads * 4.0;
      ops.push_back(b);
    } else if (f.is_gemm()) {
      // dX (m×k) = dY (m×n)·Wᵀ (n×k); dW (k×n) = Xᵀ (k×m)·dY (m×n).
      ops.push_back(gemm(f.name + "_dgrad", f.m, f.k, f.n, f.batch, mb.bpe));
      ops.push_back(gemm(f.name + "_wgrad", f.k, f.n, f.m, f.batch, mb.bpe));
    } else {
      Op b = f;
      b.name = f.name + "_bwd";
      b.bytes = 2.0 * f.bytes;
      b.flops = 2.0 * f.flops;
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
  ops.push_back(elementwise("final_norm", t * h, 1, 1, sh.rmsnorm ? kRmsnormFlops : kLayernormFlops, mb.bpe));
  ops.push_back(gemm("lm_head", t, vocab_local, h, 1, mb.bpe));
  // Fused cross-entropy: read the logits, keep fp32 probabilities for the backward.
  Op ce;
  ce.name = "cross_entropy";
  ce.bytes = t * vocab_local * (mb.bpe + 4.0);
  ce.flops = t * vocab_local * kCrossEntropyFlops;
  ops.push_back(ce);
  return ops;
}

std::vector<Op> with_prefix(std::vector<Op> ops, const std::string& prefix) {
  for (Op& op : ops) op.name = prefix + op.name;
  return ops;
}

}  // namespace

double bytes_per_element(const std::string& precision) {
  if (precision == "fp32" || precision == "tf32") return 4.0;
  if (precision == "bf16" || precision == "fp16") return 2.0;
  if (precision == "fp8") return 1.0;
  throw std::invalid_argument("precision must be fp32, tf32, bf16, fp16 or fp8, got \"" + precision + "\"");
}

double parameter_bytes(const std::string& precision) {
  return bytes_per_element(precision) >= 4.0 ? 4.0 : 2.0;
}

std::vector<Op> layer_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp) {
  return forward_ops(microbatch(model, training, sequences, tp));
}

std::vector<Op> layer_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   int sequences, int tp) {
  const Microbatch mb = microbatch(model, training, sequences, tp);
  return backward_of(forward_ops(mb), mb);
}

std::vector<Op> head_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp) {
  return head_forward(microbatch(model, training, sequences, tp));
}

std::vector<Op> head_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp) {
  const Microbatch mb = microbatch(model, training, sequences, tp);
  std::vector<Op> forward = head_forward(mb);
  std::vector<Op> ops;
  // The loss backward is exact rather than the 2× rule: read the fp32 probabilities, write
  // dlogits in the training precision.
  const Op& ce = forward.back();
  Op ce_bwd = ce;
  ce_bwd.name = "cross_entropy_bwd";
  ce_bwd.flops = ce.flops / kCrossEntropyFlops;  // one subtraction per logit
  ops.push_back(ce_bwd);
  forward.pop_back();
  for (Op& op : backward_of(forward, mb)) ops.push_back(std::move(op));
  return ops;
}

std::vector<Op> layer_recompute_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                    int sequences, int tp) {
  const Microbatch mb = microbatch(model, training, sequences, tp);
  const std::string& policy = training.activation_checkpointing;
  if (policy == "full") return with_prefix(forward_ops(mb), "recompute_");
  if (policy == "selective") return with_prefix(attention_core_forward(mb), "recompute_");
  return {};
}

Op optimizer_op(const config::TrainingSpec& training, double params_local) {
  if (params_local < 0) throw std::invalid_argument("params_local must be >= 0");
  const double pb = parameter_bytes(training.precision);
  const bool mixed = pb < 4.0;
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
  const double bytes_per_param = 8.0 + 8.0 * state_tensors + pb + (mixed ? pb : 0.0);
  Op op;
  op.name = "optimizer_step";
  op.bytes = params_local * bytes_per_param;
  op.flops = params_local * flops_per_param;
  return op;
}

}  // namespace ironlaw::workload
