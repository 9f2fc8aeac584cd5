#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "workload/model_cost.hpp"
#include "workload/model_shape.hpp"

namespace ironlaw::workload {

MemoryBreakdown model_state_memory(double params_local, const config::TrainingSpec& training, int zero, int dp) {
  if (params_local < 0) throw std::invalid_argument("params_local must be >= 0");
  if (zero < 0 || zero > 3) throw std::invalid_argument("zero stage must be 0, 1, 2 or 3");
  if (dp < 1) throw std::invalid_argument("dp must be >= 1");
  // fp32 master copy under mixed precision; none under autocast, whose parameters are fp32, nor
  // under a bf16 optimizer (training.optimizer_dtype), which updates the bf16 parameters in place.
  const double pb = stored_parameter_bytes(training);
  const double sb = optimizer_state_bytes(training);
  const double master = pb < sb ? sb : 0.0;
  double state = 0;
  if (training.optimizer == "adam") {
    state = 2 * sb;  // m and v
  } else if (training.optimizer == "momentum" || training.optimizer == "rmsprop") {
    state = sb;  // one buffer (velocity / mean square)
  } else if (training.optimizer != "sgd") {
    throw std::invalid_argument("optimizer must be sgd, momentum, rmsprop or adam, got \"" + training.optimizer +
                                "\"");
  }
  const double ranks = dp;
  MemoryBreakdown m;
  m.weights = params_local * pb / (zero >= 3 ? ranks : 1.0);
  m.gradients = params_local * pb / (zero >= 2 ? ranks : 1.0);
  // Megatron-core's DDP (the hand-fused frameworks' code, gradients whole on every rank: ZeRO 0
  // or its distributed optimizer, ZeRO 1) holds the gradients in one contiguous buffer of the
  // reduction's dtype, which the weight-gradient GEMMs accumulate into: fp32 under
  // grad_reduce_in_fp32 (megatron/core/distributed/distributed_data_parallel.py: grad_dtype =
  // torch.float if ddp_config.grad_reduce_in_fp32 else param.dtype; the ParamAndGradBuffer is
  // allocated in grad_dtype). PyTorch's DDP and FSDP keep .grad in the parameter's dtype;
  // DeepSpeed's BF16_Optimizer has its own fp32 buffer (below).
  if (!pytorch_model_code(training) && zero <= 1 && !training.bf16_optimizer) {
    m.gradients = params_local * reduce_bytes(training);
  }
  // DeepSpeed's BF16_Optimizer accumulates the gradients in one fp32 buffer of every parameter
  // of the rank, allocated with the optimizer and not sharded (bigscience tr11-176B-ml README:
  // "It doesn't shard the static fp32 buffer it reuses, which consumes 4 bytes * params of
  // additional memory"; deepspeed/runtime/bf16_optimizer.py: fp32_groups_gradients_flat, a
  // zeros_like of the whole flat bf16 group in fp32).
  if (training.bf16_optimizer) m.gradients += params_local * 4.0;
  m.optimizer = params_local * (master + state) / (zero >= 1 ? ranks : 1.0);
  return m;
}

namespace {

/// Bytes per token one layer keeps for backward, by what keeps them (see
/// activation_bytes_per_layer); `sp` divides the parts replicated over TP ranks.
struct LayerActivations {
  double replicated = 0;  ///< per token, on every TP rank unless sequence-parallel
  double split = 0;       ///< per token, already divided over TP
  double scores = 0;      ///< per token per key (s² terms, unfused attention), divided over TP
};

}  // namespace

bool torch_tensor_parallel(const config::TrainingSpec& training, const config::ParallelSpec& parallel) {
  return parallel.tp > 1 && pytorch_model_code(training) && parallel.tp_runtime != "megatron";
}

namespace {

/// Whether a norm keeps fp32 copies in place of its input: PyTorch's eager RMSNorm as Llama-style
/// code writes it (x.float(), pow, mean, rsqrt, mul, type_as, mul by the gain).
bool norm_keeps_fp32_copies(const Shape& sh, const config::TrainingSpec& training) {
  return training.framework == "eager" && sh.rmsnorm;
}

/// What autograd keeps of one layer with nothing recomputed, per token (Korthikanti et al. 2022
/// §4.1 generalised to the layer's ops: grouped-query K/V, SwiGLU, RMSNorm, rotary); `moe`: a
/// mixture-of-experts layer (its MLP block as moe_forward runs it, below).
LayerActivations kept_without_recompute(const Shape& sh, const config::TrainingSpec& training,
                                        const config::ParallelSpec& parallel, bool attention_dropout, bool moe) {
  const double tp = parallel.tp;
  const double bpe = bytes_per_element(training.precision);
  const bool eager = training.framework == "eager";
  const double h = sh.hidden;
  const double q = sh.heads * sh.head_dim / tp;
  const double kv = sh.kv_heads * sh.head_dim / tp;
  const double v = sh.kv_heads * sh.v_head_dim / tp;
  const double o = sh.heads * sh.v_head_dim / tp;
  const double f = sh.ffn / tp;
  // Transformer Engine's fp8 linear layers keep the fp8 copy of their input (below).
  const bool te_fp8 = training.precision == "fp8" && !pytorch_model_code(training);
  LayerActivations a;
  // Each norm keeps its input; PyTorch's eager RMSNorm as Llama-style code writes it (x.float(),
  // pow, mean, rsqrt, mul, type_as, mul by the gain) keeps the fp32 copy and the normalised
  // value instead. Its output is the next GEMM's input, kept once more.
  const double norm_kept = norm_keeps_fp32_copies(sh, training) ? (4.0 + bpe) * h : bpe * h;
  a.replicated += 2.0 * norm_kept;
  if (parallel.sequence_parallel && torch_tensor_parallel(training, parallel)) {
    // PyTorch's DTensor sequence parallelism (torchtitan apply_tp: PrepareModuleInput with
    // desired Replicate before attention and the MLP) all-gathers the norm output and the
    // column-parallel linears save that gathered tensor: every token of the sequence, not 1/tp
    // (Megatron-LM instead saves its own shard and re-gathers in backward). Float8 TP
    // (PrepareFloat8ModuleInput) casts before the all-gather, so the saved input is fp8.
    a.split += 2.0 * (training.precision == "fp8" ? 1.0 : bpe) * h;
  } else {
    a.replicated += 2.0 * bpe * h;
  }
  // Q and K (rotated) and V for the attention core, its output for the output projection.
  // PyTorch's model code expands grouped K/V to every local query head before SDPA
  // (torchtitan's repeat_kv, models/llama/model.py at 9dec370: expand then reshape, a copy), and
  // SDPA saves its inputs as passed (the flash backward reads K and V of every head): the
  // expanded K/V are what autograd keeps; repeat_kv's own backward keeps nothing. Fused kernels
  // (FlashAttention-2 with GQA, Megatron-LM) read the grouped K/V and keep those.
  const bool expanded = sdpa_expands_kv(training) && !sh.mla && sh.kv_heads < sh.heads;
  a.split += bpe * (q + (expanded ? sh.heads * sh.head_dim / tp : kv) + (expanded ? o : v) + o);
  // The query/key norms keep their inputs, the projections' outputs (eager RMSNorm its fp32 copy
  // and the normalised value instead, as the block's norms above); their outputs are the rotary's
  // inputs.
  if (sh.qk_norm) a.split += (norm_keeps_fp32_copies(sh, training) ? 4.0 + bpe : bpe) * (q + kv);
  // Eager rotary (complex multiply in fp32) keeps its fp32 inputs.
  if (sh.rope && eager) a.split += 4.0 * (q + kv);
  if (training.flash_attention) {
    a.split += 4.0 * sh.heads / tp;  // fp32 log-sum-exp row statistics
    // Unpadded around a varlen kernel (training.attention_unpad): the kernel keeps its gathered
    // Q, K, V (in place of the projection's views) and its unpadded output, while the output
    // projection keeps the padded copy pad_input wrote: one output more.
    if (training.attention_unpad) a.split += bpe * o;
  } else {
    // Per key: the softmax output, and under attention dropout its keep mask and output (with
    // p = 0 torch's dropout returns its input: ATen's _dropout, no mask and no copy).
    a.scores = (attention_dropout ? bpe + 1.0 + bpe : bpe) * sh.heads / tp;
  }
  // MLP: GELU keeps its input and output (the down projection's input); SwiGLU the gate and up
  // outputs and their product (eager also the SiLU output).
  if (!moe) a.split += sh.swiglu ? bpe * f * (eager ? 4.0 : 3.0) : bpe * 2.0 * f;
  if (moe) {
    // A mixture-of-experts block as Megatron-core runs it (moe_forward's ops; transformer_engine
    // pytorch/permutation.py and module/grouped_linear.py, megatron/core/transformer/moe): the
    // router keeps its softmax (fp32, E per token: router.py computes it in float32) and the
    // top-k indices (int64) and gates (fp32); the permutation only its row map; then every one
    // of a token's k copies, on the rank that runs its expert (balanced: as many as it sends),
    // keeps the first grouped GEMM's input (h), the activation's input (the first GEMM's output,
    // 2 f_e gated), the second GEMM's input (f_e) and, for the unpermute's gate gradients, the
    // second GEMM's output rows (h): k·(2h + 3 f_e) per token gated, k·(2h + 2 f_e) not, where
    // the dense MLP keeps 3f (2f). The GEMM inputs are fp8 under Transformer Engine's fp8.
    // Folded (expert_tp 1): the rank's own t/tp sequence-parallel tokens, whole experts;
    // otherwise every token of the microbatch on every TP rank, each expert split over TP.
    // The pre-MLP norm's output is the router's input (kept at bpe: the router is no fp8
    // linear); shared experts keep what a dense MLP of their width keeps, split over TP.
    const ExpertShare e = expert_share(sh, parallel.tp, parallel.expert_folded());
    const double in = te_fp8 ? 1.0 : bpe;
    const double k = sh.experts_per_token;
    const double per_copy = in * h + (sh.swiglu ? 2.0 : 1.0) * bpe * e.width + in * e.width + bpe * h;
    // The router runs on the rank's sequence-parallel shard before any gather.
    const double router_share = parallel.expert_folded() || parallel.sequence_parallel ? 1.0 / tp : 1.0;
    a.split += e.tokens * k * per_copy + router_share * (4.0 * sh.experts + k * (4.0 + 8.0));
    if (sh.shared_experts > 0) {
      const double fs = sh.shared_experts * sh.moe_ffn / tp;
      a.split += (sh.swiglu ? 2.0 : 1.0) * bpe * fs + in * fs;
      if (te_fp8) a.replicated += 1.0 * h;  // the shared experts' fp8 copy of the norm output
    }
  }
  if (te_fp8) {
    // Transformer Engine's fp8 linear layers keep the fp8 copy of their input that the
    // weight-gradient GEMM reads, not the higher-precision tensor (transformer_engine/pytorch/
    // module/linear.py _Linear.forward: saved_inputmat = inputmat, the quantized input, unless the
    // recipe overrides the wgrad precision; LayerNormLinear likewise its fp8 ln_out): the two
    // norm outputs and the down projection's input at 1 B instead of bpe, while the attention
    // output, which the attention kernel keeps for its own backward, gains the output
    // projection's fp8 copy. (torchao's Float8Linear keeps its high-precision input: this is TE's.)
    // (A MoE block's norm output is the router's bf16 input instead, and its expert GEMMs'
    // inputs are counted above.)
    a.replicated -= (moe ? 1.0 : 2.0) * (bpe - 1.0) * h;
    if (!moe) a.split -= (bpe - 1.0) * f;
    a.split += 1.0 * o;
  }
  return a;
}

}  // namespace

double activation_bytes_per_layer(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  const config::ParallelSpec& parallel, int sequences) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (parallel.tp < 1 || parallel.cp < 1) throw std::invalid_argument("tp and cp must be >= 1");
  check_recompute_policy(training.activation_checkpointing);
  const Shape sh = shape_of(model);
  const double t = parallel.tp;
  // training.sequence_length is this rank's share of a sequence (the run layer passes
  // sequence_length / cp, as the op costs take it); the keys span the whole sequence.
  const double s = training.sequence_length;
  const double s_kv = s * parallel.cp;
  const double tokens = s * sequences;
  const double sp = parallel.sequence_parallel ? t : 1.0;
  const double bpe = bytes_per_element(training.precision);
  const double h = sh.hidden;
  const std::string& policy = training.activation_checkpointing;
  if (policy == "full") return tokens * bpe * h / sp;  // the layer input only
  // A mixture-of-experts model's layers are not alike: the mean over its dense and MoE layers
  // (the step's replay takes one size for every layer of a stage).
  const double moe_share = sh.experts > 1 ? sh.moe_layers / (sh.moe_layers + sh.dense_layers) : 0.0;
  const LayerActivations a = kept_without_recompute(sh, training, parallel, model.attention_dropout > 0, false);
  double layer_mean = a.replicated / sp + a.split;
  if (moe_share > 0) {
    const LayerActivations m = kept_without_recompute(sh, training, parallel, model.attention_dropout > 0, true);
    layer_mean = (1.0 - moe_share) * layer_mean + moe_share * (m.replicated / sp + m.split);
  }
  // Dropout keep masks (1 B per element): the attention and MLP block outputs.
  const double masks = model.hidden_dropout > 0 ? 2.0 * h : 0.0;
  const double per_token = masks / sp + layer_mean;
  const double scores = (policy == "none" && !training.flash_attention) ? a.scores * s_kv : 0.0;
  if (policy == "op") {
    // torchtitan's op-level policy: the layer input, the attention core's outputs and every
    // second matmul's output (the 1st, 3rd, ... in forward order) are kept; the rest is
    // recomputed.
    std::vector<double> mm_outputs;  // per token, in forward order
    const double q = sh.heads * sh.head_dim / t;
    const double kv = sh.kv_heads * sh.head_dim / t;
    const double f = sh.ffn / t;
    mm_outputs = {q, kv, sh.kv_heads * sh.v_head_dim / t, h};
    if (sh.swiglu) {
      mm_outputs.insert(mm_outputs.end(), {f, f, h});
    } else {
      mm_outputs.insert(mm_outputs.end(), {f, h});
    }
    // Eager, its selective-checkpoint cache stores every output the policy saves; compiled, the
    // partitioner saves of those only what a backward node reads, which the layer's last matmul
    // output (SwiGLU's w2, kept by the count) is not. Under DTensor sequence parallelism the
    // reduce-scatter outputs are saved too (torchtitan's _save_list, 9dec370): wo's and w2's
    // (h/tp each), of which compiled only wo's, the residual stream the MLP's norm reads.
    const bool compiled = training.framework == "compile";
    double kept = bpe * h / sp;
    for (std::size_t i = 0; i < mm_outputs.size(); i += 2) {
      if (compiled && i + 1 == mm_outputs.size()) continue;
      kept += bpe * mm_outputs[i];
    }
    kept += bpe * sh.heads * sh.v_head_dim / t + 4.0 * sh.heads / t;
    if (parallel.sequence_parallel && torch_tensor_parallel(training, parallel)) kept += (compiled ? 1.0 : 2.0) * bpe * h / t;
    return tokens * kept;
  }
  return tokens * per_token + scores * tokens;
}

double recomputed_activation_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int sequences) {
  const std::string& policy = training.activation_checkpointing;
  config::TrainingSpec none = training;
  none.activation_checkpointing = "none";
  const double rebuilt = activation_bytes_per_layer(model, none, parallel, sequences);
  if (policy == "none") return 0;
  // selective keeps everything policy none keeps but the attention core's score tensors.
  if (policy == "selective") return rebuilt - activation_bytes_per_layer(model, training, parallel, sequences);
  const Shape sh = shape_of(model);
  const double t = parallel.tp;
  const double sp = parallel.sequence_parallel ? t : 1.0;
  const double bpe = bytes_per_element(training.precision);
  const double tokens = static_cast<double>(training.sequence_length) * sequences;  // the rank's share under CP
  // The layer input is policy none's first norm input, unless that norm keeps fp32 copies.
  double reused = norm_keeps_fp32_copies(sh, training) ? 0.0 : bpe * sh.hidden / sp;
  if (policy == "op") {
    const double f = (sh.is_moe_layer(0) ? sh.moe_ffn : sh.ffn) / t;
    reused += bpe * f + bpe * sh.heads * sh.v_head_dim / t + 4.0 * sh.heads / t;
  }
  return std::max(0.0, rebuilt - tokens * reused);
}

double backward_gradient_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int sequences) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (parallel.tp < 1 || parallel.cp < 1) throw std::invalid_argument("tp and cp must be >= 1");
  const Shape sh = shape_of(model);
  const double t = parallel.tp;
  const double sp = parallel.sequence_parallel ? t : 1.0;
  const double tokens = static_cast<double>(training.sequence_length) * sequences;  // the rank's share under CP
  // Per token, in elements. The tensor-parallel GEMMs take and give every token of the
  // microbatch: a row-parallel linear's backward all-gathers its output gradient under sequence
  // parallelism (it is replicated without), a column-parallel one's input gradient is a full
  // partial sum before its reduce-scatter or all-reduce. So h is whole, the TP-split widths are not.
  const double h = sh.hidden;
  const double f = sh.ffn / t;
  const double q = sh.heads * sh.head_dim / t;
  const double o = sh.heads * sh.v_head_dim / t;
  const double kv = (sh.kv_heads * sh.head_dim + sh.kv_heads * sh.v_head_dim) / t;
  const bool expanded = sdpa_expands_kv(training) && !sh.mla && sh.kv_heads < sh.heads;
  const double kv_attention = expanded ? q + o : kv;  // the K and V gradients the attention core writes
  // MLP, in autograd's order (the last node created runs first): the down projection holds its
  // output gradient and writes the activation's (h + f); SwiGLU's product writes the gate's and
  // the up projection's gradients from it (3f), the SiLU the gate's pre-activation gradient
  // beside the up projection's input gradient (2f + h); the gate projection writes its input
  // gradient beside the up projection's, before autograd adds them (f + 2h). GELU: h + f, 2f, f + h.
  auto mlp_of = [&](double width) {
    return sh.swiglu ? std::max({h + width, 3.0 * width, 2.0 * width + h, width + 2.0 * h})
                     : std::max({h + width, 2.0 * width, width + h});
  };
  // A MoE block (moe_forward): the same order per routed copy, k copies per token on the rank
  // that runs their experts (folded: its own t/tp tokens, whole experts; otherwise every token,
  // each expert split over TP), beside the block's output gradient, which the unpermute's
  // backward turns into the copies' gradients (k·h); shared experts run after the routed ones in
  // backward. The peak of the heavier kind of layer counts.
  double mlp = sh.dense_layers > 0 ? mlp_of(f) : 0.0;  // every layer when experts == 1
  if (sh.moe_layers > 0) {
    const ExpertShare e = expert_share(sh, parallel.tp, parallel.expert_folded());
    const double routed = h + e.tokens * sh.experts_per_token * mlp_of(e.width);
    const double shared = sh.shared_experts > 0 ? h + mlp_of(sh.shared_experts * sh.moe_ffn / t) : 0.0;
    mlp = std::max({mlp, routed, shared});
  }
  // Attention: the output projection (h + o); the attention core's backward writes the Q, K and V
  // gradients from the output's (o + q + K/V); the Q, K and V projections, the last of which
  // writes its input gradient beside the one before it (q + grouped K/V + 2h).
  const double attention = std::max({h + o, o + q + kv_attention, q + kv + 2.0 * h});
  // The layer's output gradient is held through the whole layer (the residual branch passes it
  // on after the block's backward): h, split over TP under sequence parallelism.
  return tokens * bytes_per_element(training.precision) * (h / sp + std::max(mlp, attention));
}

int expert_zero_ranks(const config::ParallelSpec& parallel, int dp) {
  const int holders = parallel.expert_folded() ? parallel.tp * dp : dp;
  return std::max(1, holders / std::max(1, parallel.ep));
}

MemoryBreakdown model_state_memory(double params_local, double expert_local, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp) {
  MemoryBreakdown m = model_state_memory(params_local - expert_local, training, parallel.zero, dp);
  if (expert_local > 0) {
    const MemoryBreakdown e =
        model_state_memory(expert_local, training, parallel.zero, expert_zero_ranks(parallel, dp));
    m.weights += e.weights;
    m.gradients += e.gradients;
    m.optimizer += e.optimizer;
  }
  return m;
}

MemoryBreakdown memory_per_gpu(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int dp, int in_flight_microbatches) {
  if (parallel.tp < 1 || parallel.pp < 1 || parallel.ep < 1) throw std::invalid_argument("tp, pp and ep must be >= 1");
  if (in_flight_microbatches < 0) throw std::invalid_argument("in_flight_microbatches must be >= 0");
  if (parallel.microbatch_size < 1) throw std::invalid_argument("microbatch_size must be >= 1");
  const ParamCount p = count_params(model);
  const double params_local =
      (p.total() - p.routed_experts + p.routed_experts / expert_split(parallel)) / (parallel.tp * parallel.pp);
  const double expert_local = p.routed_experts / expert_split(parallel) / (parallel.tp * parallel.pp);
  MemoryBreakdown m = model_state_memory(params_local, expert_local, training, parallel, dp);

  const double layers_local = std::ceil(static_cast<double>(model.layers) / parallel.pp);
  const double per_layer = activation_bytes_per_layer(model, training, parallel, parallel.microbatch_size);
  const double s = static_cast<double>(training.sequence_length);  // the rank's share under CP
  const double logits_count = s * parallel.microbatch_size * static_cast<double>(model.vocab) / parallel.tp;
  m.activations = per_layer * layers_local * in_flight_microbatches + logits_count * loss_bytes_per_logit(training, parallel) +
                  head_input_bytes(model, training, parallel, parallel.microbatch_size) * in_flight_microbatches;
  if (training.activation_checkpointing != "none" && in_flight_microbatches > 0) {
    // Backward of a checkpointed layer holds what it rebuilt of that layer.
    m.transient += recomputed_activation_bytes(model, training, parallel, parallel.microbatch_size);
  }
  if (in_flight_microbatches > 0) m.transient += backward_gradient_bytes(model, training, parallel, parallel.microbatch_size);
  // The linear layers' weights on the rank: all it holds but the norms, embedding and LM head.
  const double other = (p.norm + p.embedding + p.position + p.lm_head) / (parallel.tp * parallel.pp);
  const double linear = std::max(0.0, params_local - other);
  // Transformer Engine's fp8 weights and transposes, kept across the step's microbatches.
  m.weight_cache = linear * fp8_weight_cache_bytes(training);
  // Autocast: every linear weight and the LM head's (tied or not) cast once per forward of each
  // microbatch, kept by autograd until its backward. Under full recompute the checkpointed
  // layers keep none, but the forward's autocast cache holds one microbatch's copies of them all
  // until the forward ends; the LM head is not checkpointed.
  if (training.autocast && in_flight_microbatches > 0) {
    const double head = static_cast<double>(model.vocab) * model.hidden / (parallel.tp * parallel.pp);
    const double layers_copies = training.activation_checkpointing == "full" ? linear : linear * in_flight_microbatches;
    m.autocast_copies = (layers_copies + head * in_flight_microbatches) * bytes_per_element(training.precision);
  }
  if (parallel.zero >= 3 && dp > 1) {
    const double layer_params = (p.attention + p.mlp - p.routed_experts + p.routed_experts / expert_split(parallel)) /
                                model.layers / parallel.tp;
    const double pb = parameter_bytes(training.precision);
    const double rb = reduce_bytes(training);
    if (parallel.pp > 1) {
      // No reshard after forward (torchtitan with PP): every unit of the stage stays gathered
      // from its first forward to the reduce-scatters after the last backward, and its
      // gradients accumulate unsharded in the reduce dtype.
      m.unsharded = linear * gathered_linear_bytes(training) + other * pb + params_local * rb;
      // One layer's gradients as autograd produces them (pb), before FSDP2 adds them to the
      // accumulated ones, and after the last microbatch its reduce-scatter input (rb).
      m.transient += layer_params * (pb + rb);
    } else if (!parallel.reshard_after_forward) {
      // SHARD_GRAD_OP: every unit of the rank gathered from its forward to its post-backward;
      // one layer's unsharded gradients and their reduce-scatter input at a time, and the root
      // unit's gradients around the loss (the root's weights are in `other`).
      m.unsharded = linear * gathered_linear_bytes(training) + other * pb;
      m.transient += layer_params * (pb + rb) + (p.embedding + p.lm_head) / parallel.tp * pb;
    } else {
      // FSDP/ZeRO-3 working set: the gathered parameters of the layer computing and of the one
      // prefetched, the unsharded gradients of one layer, and the reduce-scatter input they
      // are copied into in the reduce dtype.
      m.transient += layer_params * (2.0 * gathered_linear_bytes(training) + pb + rb);
      // The root unit (embedding, final norm, LM head) is gathered around the loss with its
      // gradient: FSDP wraps it apart from the blocks (torchtitan: fully_shard on the model).
      m.transient += (p.embedding + p.lm_head) / parallel.tp * (pb + pb);
    }
  }
  return m;
}

double loss_bytes_per_logit(const config::TrainingSpec& training, const config::ParallelSpec& parallel) {
  const double bpe = bytes_per_element(training.precision);
  if (torch_tensor_parallel(training, parallel)) {
    // torch loss parallel (torchtitan with TP: the LM head's logits stay sharded over the
    // vocabulary, torch/distributed/tensor/parallel/loss.py): backward computes
    // (grad_input + torch.exp(x)) * grad_output from the kept fp32 log-softmax output x, so x,
    // the zero-filled grad_input, exp(x) and their sum are alive together: 4 × 4 B. (Forward:
    // the bf16 logits, their fp32 copy, the shifted copy and its exp, 2 + 3 × 4 B.)
    return std::max(bpe + 12.0, 16.0);
  }
  if (training.fused_cross_entropy) {
    // flash-attn's fused cross-entropy (training.fused_cross_entropy): its forward saves the
    // logits themselves and an fp32 log-sum-exp per row (4 B per row, not per logit), its
    // backward writes the logits' gradient in the training precision: 2 × bpe per logit.
    return 2.0 * bpe;
  }
  if (training.compile_loss) {
    // torch.compile of F.cross_entropy(logits.float()) (training.compile_loss): the forward's
    // reductions read the logits without an fp32 copy, AOTAutograd's min-cut partition saves the
    // logits themselves (smaller than the fp32 log-softmax, which the backward kernel recomputes
    // in registers) and the fused backward writes their gradient in the training precision: the
    // saved logits and the gradient, 2 × bpe.
    return 2.0 * bpe;
  }
  if (pytorch_model_code(training)) {
    // F.cross_entropy(logits.float()), eager also under compile as torchtitan applied it before
    // April 2025 (per transformer block, the loss outside; compile_loss above after): the bf16
    // logits, their fp32 copy and the fp32 log-softmax output are alive together in forward; in
    // backward the log-softmax output, the NLL gradient and the log-softmax gradient (all fp32).
    return std::max(bpe + 8.0, 12.0);
  }
  if (!training.cross_entropy_loss_fusion) {
    // Megatron's unfused vocab_parallel_cross_entropy: the fp32 copy, shifted, exponentiated and
    // divided in place, beside the logits its caller still holds (forward); the kept softmax,
    // scaled in place, beside the gradient cast to the training precision (backward): bpe + 4;
    // in fp32 training the logits are the tensor worked in place: 4.
    return bpe < 4.0 ? bpe + 4.0 : 4.0;
  }
  return 4.0;  // fused vocabulary-parallel cross-entropy: the fp32 probabilities
}

double head_input_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                        const config::ParallelSpec& parallel, int sequences) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (parallel.tp < 1 || parallel.cp < 1) throw std::invalid_argument("tp and cp must be >= 1");
  const double tokens = static_cast<double>(training.sequence_length) * sequences;  // the rank's share under CP
  const double bytes = tokens * bytes_per_element(training.precision) * static_cast<double>(model.hidden);
  // Megatron-LM's output layer under sequence parallelism saves its shard of the input and
  // all-gathers it again for the weight gradient; PyTorch's ColwiseParallel(input_layouts =
  // Shard(1)) all-gathers first and the matmul saves the gathered input (every token).
  const bool sharded = parallel.sequence_parallel && !torch_tensor_parallel(training, parallel);
  return sharded ? bytes / parallel.tp : bytes;
}

}  // namespace ironlaw::workload
