#pragma once
/// \file What a model costs, computed from its shape alone: parameters, FLOPs per op and per
/// token, bytes touched, memory per GPU. Pure functions of the specs; no simulation here.
///
/// Shape vocabulary: L layers, h hidden, f ffn_hidden, a heads, g kv_heads (0 means a),
/// d head dimension (head_dim, else h / a; MLA: d = qk_nope + qk_rope for queries and keys and
/// d_v = v_head_dim for values, otherwise d_v = d), V vocab, s sequence length, t = sequences·s
/// tokens of a microbatch. Mixture of experts: E routed experts, k experts_per_token, S
/// shared_experts, f_e moe_ffn_hidden (0 means f); layers [0, dense_layers) are dense with f,
/// the others MoE (experts == 1: all dense). Unknown enum strings (activation, norm,
/// precision, ...) throw std::invalid_argument naming the field; the config loader is expected
/// to have rejected them with a file position first.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::workload {

/// Parameter count by part, from the shape (Llama 3 8B → 8.03e9).
///
/// Per layer: attention Q and O h·(a·d) each, K and V h·(g·d) each (+ a bias per output when
/// `bias`); under multi-head latent attention (DeepSeek-V3 report §2.1.1) instead
/// W^DQ h·q_lora_rank + W^UQ/W^QR q_lora_rank·a·d (q_lora_rank 0: h·a·d), W^DKV/W^KR
/// h·(kv_lora_rank + qk_rope), W^UK/W^UV kv_lora_rank·a·(qk_nope + d_v), W^O a·d_v·h, and the
/// two latent RMSNorms (q_lora_rank + kv_lora_rank, in `norm`). One FFN of width w: gelu 2·h·w
/// (+ w + h biases), swiglu 3·h·w. Dense layers: one FFN of f. MoE layers: E + S experts of f_e
/// (mlp) of which k + S are active (mlp_active), + an h × E router (+ E biases). Norms layernorm
/// 2·h (gain + bias), rmsnorm h, two per layer plus the final one. Embedding V·h, learned
/// positions max_position·h, LM head V·h unless tied. Not counted: DeepSeek-V3's per-expert
/// routing bias (E per MoE layer, set by the balancing rule, not by gradients) and its
/// multi-token-prediction module (see models/deepseek-v3.yaml).
/// position_embedding "relative" (Transformer-XL style, Gopher/Chinchilla) adds the per-layer
/// h·h projection of the relative position encodings to `attention` — this is what makes
/// Gopher-family counts 13·L·h² + V·h rather than 12·L·h² + V·h.
struct ParamCount {
  double embedding = 0;      ///< token embedding table (vocab × hidden)
  double position = 0;       ///< learned position table (0 for RoPE)
  double attention = 0;      ///< Q, K, V, O projections (+ biases), all layers
  double mlp = 0;            ///< feed-forward weights (+ biases), all layers, all experts, routers
  /// Feed-forward weights a token actually uses: dense layers, and per MoE layer k routed +
  /// S shared experts + the router.
  double mlp_active = 0;
  double routed_experts = 0; ///< the routed experts' weights, all MoE layers (what EP shards)
  double norm = 0;           ///< norm gains/biases, all layers + final norm
  double lm_head = 0;        ///< output projection (0 when tied to the embedding)

  double total() const { return embedding + position + attention + mlp + norm + lm_head; }
  /// Kaplan's N: everything but embedding and position tables.
  double non_embedding() const { return attention + mlp + norm + lm_head; }
  /// Parameters a token activates: total() less the routed experts it is not sent to (the
  /// "37B activated" of DeepSeek-V3: embedding and LM head included). = total() when dense.
  double active() const;
  /// PaLM's N for MFU: parameters that take part in matmuls per token — attention, the active
  /// MLP (MoE: k routed + S shared experts and the router) and the LM head (tied or not),
  /// biases included; not the embedding/position lookups and not the norm gains (no matmul).
  double matmul_active() const;
  double lm_head_matmul = 0;  ///< vocab × hidden, counted in matmuls even when tied
};
ParamCount count_params(const config::ModelSpec& model);

/// Model FLOPs per token under the conventions of ../shared/reference/calibration.md.
/// N_matmul = ParamCount::matmul_active() (weights and biases of the linear layers a token
/// passes through, LM head included even when tied; norm gains and lookup tables excluded);
/// H = heads, Q = head dimension, T = `sequence_length`. For a mixture of experts N_matmul
/// counts the activated experts only, so `palm` is the MFU numerator of a MoE model too.
struct FlopsPerToken {
  double six_n = 0;          ///< 6·N (N = total params, as seed 003 / GPT-3 count; naive for MoE)
  double six_n_active = 0;   ///< 6·N_active (ParamCount::active(); = six_n when dense)
  /// 6·N_matmul + 12·L·H·Q·T (PaLM appendix B; Llama 3 MFU). MLA: 6·N_matmul + 6·L·H·T·(d + d_v).
  double palm = 0;
  double attention_palm = 0; ///< the attention term alone
};
FlopsPerToken flops_per_token(const config::ModelSpec& model, int sequence_length);

/// What an op means to the layers that schedule it, beyond its cost: where Megatron's
/// tensor-parallel all-reduces, the expert-parallel all-to-alls and context parallelism's ring
/// attention attach, and which backward GEMMs are weight gradients. Carried by the op and kept
/// by its backward and recompute copies as stated, so that a scheduler never infers a role from
/// an op's name.
enum class OpRole : std::uint8_t {
  plain,                 ///< nothing attaches to it
  tp_column_parallel,    ///< forward GEMM split by output columns over TP (qkv, q_proj, q_up, kv_up, mlp_up, shared_up, lm_head)
  tp_row_parallel,       ///< forward GEMM split by input rows over TP (attn_out, mlp_down, shared_down): its output is partial sums
  vocab_embedding,       ///< the vocab-parallel embedding lookup (forward): partial rows on each TP rank
  vocab_embedding_grad,  ///< the embedding lookup's backward
  input_grad,            ///< backward: the input gradient (dX) of a GEMM that is not split over TP
  tp_row_input_grad,     ///< backward: dX of a tp_row_parallel GEMM, from the gathered output gradient
  tp_column_input_grad,  ///< backward: dX of a tp_column_parallel GEMM, partial sums over TP
  weight_grad,           ///< backward: the weight gradient (dW) of a GEMM
  expert_dispatch,       ///< MoE marker: the dispatch all-to-all (forward and recompute; backward: the input gradients' trip home)
  expert_combine,        ///< MoE marker: the combine all-to-all (backward: the output gradients' trip to the experts)
  attention_core,        ///< the fused (flash) attention core, forward or recompute
  attention_core_grad,   ///< its backward
  /// A marker (no kernel): the sequence-parallel all-gather of the norm output before it, which
  /// a PyTorch recompute reruns where no reduce-scatter of its own precedes it
  /// (layer_recompute_ops); nothing under AsyncTP, where the GEMM that takes it gathers.
  tp_sequence_gather,
};

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
  /// A fused attention kernel (flash attention): timed at the device's measured attention_kernel
  /// rate for its pass (attention_kernel_rate), not by the GEMM model.
  bool fused_attention = false;
  /// A fused attention op's query/key head dimension, which picks the kernel profile measured
  /// nearest to it (DeviceSpec::AttentionKernel::at_head_dim); 0 on other ops.
  double head_dim = 0;
  /// Its role for the schedulers (OpRole); backward GEMMs are input_grad / tp_column_input_grad
  /// (dX) or weight_grad (dW), elementwise backwards and recompute copies keep the forward's
  /// role except vocab_embedding → vocab_embedding_grad and attention_core → attention_core_grad.
  OpRole role = OpRole::plain;
  /// The precision the op runs in; "" = the training precision op_time is given. Under the fp8
  /// recipe the linear layers' GEMMs are "fp8", everything else stays in the training dtype.
  std::string dtype;
  /// Kernels the op launches (eager PyTorch runs an RMSNorm as 8); each pays the launch overhead.
  int kernels = 1;
  /// Of `kernels`, those a library's C++ code issues in a loop after the op's one framework call
  /// (Transformer Engine's GroupedLinear: one cuBLAS GEMM and one quantization per local expert,
  /// common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm, pytorch/csrc/extensions/cast.cpp
  /// split_quantize): each costs the library's call on the host, not the framework's per-op
  /// dispatch — a GEMM the device's library_gemm_call, any other kernel its bare
  /// kernel_launch_overhead (run::detail::OpTimer, HostQueue::push). At most kernels − 1.
  int library_kernels = 0;
  /// An fp8 cast (amax and scaled cast of a GEMM's operands) whose backward belongs to the GEMM.
  bool fp8_cast = false;
  /// An fp8 GEMM that promotes its partial sums out of the tensor cores' accumulator into fp32
  /// as it goes (the split accumulator: cuBLAS with fast accumulation off), as the backward
  /// GEMMs of Transformer Engine (_2X_ACC_DGRAD, _2X_ACC_WGRAD) and of torchao's Float8Linear
  /// (gemm_config_grad_input, gemm_config_grad_weight: use_fast_accum False) do; their forward
  /// GEMMs accumulate fast. Timed at the device's fp8_split_accumulator_rate.
  bool fp8_split_accumulator = false;
  /// Transformer Engine's per-tensor fp8 under sequence parallelism: this GEMM's input (a
  /// column-parallel layer) or its output gradient (a row-parallel layer) reaches it through the
  /// sequence-parallel all-gather. The local 1/sp of the rows is cast before the gather, without
  /// a transposed copy, and the backward transposes the gathered fp8 copy for the weight gradient
  /// (TE module/linear.py: no fp8_cast_transpose_fused under sequence_parallel; base.py
  /// grad_output_preprocess: "FP8 case with gather: unfused bgrad, cast, transpose"). The same
  /// under torchao's tensorwise Float8 TP (float8_tensor_parallel.py), whose linears also keep
  /// their fp8 inputs for backward: transposed there, not re-cast (workload::backward_of).
  bool fp8_sp_gathered = false;
  /// An fp8 GEMM of torchao's rowwise recipe: its operands are cast after any tensor-parallel
  /// all-gather (torchtitan applies the plain TP styles to the rowwise recipe), so a gather that
  /// feeds it moves the training precision, not fp8, and under AsyncTP is not fused with it:
  /// torch's micro-pipeline pass fuses an all-gather only with matmuls that read its result
  /// directly (run::detail::OpTimer::fused_kind, casts_gathered_input).
  bool fp8_cast_after_gather = false;
  /// A weight's fp8 cast that Transformer Engine caches for the step's later microbatches
  /// (fp8_weight_cache_bytes): only a step's first microbatch runs it, and never a recompute.
  bool first_microbatch_only = false;

  /// Autocast's cast of an fp32 weight to the training precision (TrainingSpec::autocast): its
  /// backward is the weight gradient's cast back to fp32 (ToCopyBackward), one kernel reading
  /// the training precision and writing 4 B per element, the forward's bytes.
  bool autocast_weight_cast = false;

  /// HBM bytes of the op's backward where the default rule (twice the forward's) does not hold:
  /// a fused dropout-add-norm kernel's backward reads and writes other tensors than its forward
  /// (TrainingSpec::fused_dropout_add_norm). < 0: the default rule.
  double backward_bytes = -1;
  /// Kernels of the op's backward where the default rule (twice the forward's) does not hold
  /// (flash-attn's unpadding: nine launches forward, two backward). < 0: the default rule.
  int backward_kernels = -1;
  /// Times the op's host code reads a value back from the device before it can go on (a
  /// data-dependent size: torch.nonzero, .item()): each waits until the GPU has finished every
  /// kernel issued before it (HostQueue::push). Backward and recompute ops: see backward_of.
  int host_syncs = 0;
  bool is_gemm() const { return m > 0; }
};

/// Forward ops of transformer layer `layer` (0-based; dense and MoE layers differ) on one GPU:
/// a microbatch of `sequences` sequences of `sequence_length` tokens, the layer's weights split
/// `tp` ways (Megatron column/row split), the routed experts of a MoE layer spread over `ep`
/// GPUs (E/ep local experts each). The defaults (layer 0, ep 1) keep the dense-model calls.
///
/// In order (pre-norm): norm_attn; the projections in — standard: qkv (m = t,
/// n = (a + 2g)·d/tp, k = h); MLA: q_down (n = q_lora_rank, k = h), q_norm, q_up
/// (n = a·d/tp, k = q_lora_rank) — or q_proj (n = a·d/tp, k = h) when q_lora_rank is 0 —
/// kv_down (n = kv_lora_rank + qk_rope, k = h), kv_norm, kv_up (n = a·(qk_nope + d_v)/tp,
/// k = kv_lora_rank); the down projections and latent norms are not split by TP (every TP rank
/// computes them whole, as DeepSeek-V3's reference model.py keeps wq_a / wkv_a plain Linear
/// layers) —; rel_pos (relative positions only), rotary (RoPE only; MLA: the a/tp query heads
/// and the one shared key head of qk_rope each), the attention core, attn_out (m = t, n = h,
/// k = a·d_v/tp), hidden_dropout_attn (hidden_dropout > 0 only), residual_attn, norm_mlp, then
///   dense layer: mlp_up (n = f/tp, swiglu 2·f/tp: gate and up fused), mlp_act, mlp_down
///     (n = h, k = f/tp);
///   MoE layer: router (m = t, n = E, k = h; whole on every TP rank), router_topk (scores read
///     once), moe_permute (t·k token rows of h gathered in expert order), moe_dispatch,
///     moe_sort_chunks (E/ep > 1 only: the received rows gathered into local-expert order),
///     mlp_up / mlp_act / mlp_down as grouped GEMMs over the local experts — batch = E/ep,
///     m = t·k·ep/E rows each: every expert gets exactly its share of the EP group's t·k·ep
///     token copies (perfect balance, an idealisation: real routers are uneven and the busiest
///     expert sets the pace), widths f_e/tp —, moe_unsort_chunks (E/ep > 1 only: back into
///     source-rank order), moe_combine, moe_unpermute (t·k rows read, weighted and summed into t
///     rows; under training.moe_permute_fusion false Megatron-core 0.8-0.9's three PyTorch passes
///     moe_unpermute_scatter, moe_unpermute_weight, moe_unpermute_sum, and a three-kernel
///     moe_permute), shared_up / shared_act / shared_down (one FFN of width S·f_e over all t
///     tokens, when S > 0);
/// hidden_dropout_mlp (hidden_dropout > 0 only), residual_mlp.
/// "moe_dispatch" and "moe_combine" are markers: 0 FLOPs, 0 bytes, no GEMM, and op_time 0.
/// They sit where the dispatch and combine all-to-alls go (moe_all_to_all_bytes): each
/// all-to-all starts after the ops before its marker and the ops after it wait for it. The
/// shared-expert ops need only norm_mlp's output, so a scheduler may run them while the
/// all-to-alls are in flight (DeepSeek-V3 §3.2.1 overlaps them). Under TP the partial sums to
/// all-reduce end, besides attn_out and a dense mlp_down, at shared_down and at the routed
/// mlp_down (expert TP = TP); in backward the column-parallel input gradients are q_up_dgrad
/// (or q_proj_dgrad) and kv_up_dgrad under MLA, shared_up_dgrad and the routed mlp_up_dgrad.
/// Attention core: flash → one causal "attn_core" op, FLOPs = sequences·(a/tp)·s(s+1)/2·
/// 2·(d + d_v) (seed 003's 4·d per cell when d_v = d), k = d + d_v, bytes = Q, K, V, O + fp32
/// row statistics (no s² term); no flash → alibi_bias (position_embedding alibi only: s²
/// written and read back, baddbmm's copy of the broadcast bias), attn_scores (full s × s, the
/// mask applied afterwards), attn_softmax (s² read + written), attn_dropout (attention_dropout >
/// 0 only), attn_values. Elementwise ops: bytes = elements · (reads + writes) · bytes_per_element; those
/// outside the TP regions (the norms, hidden dropouts and residual adds; the final norm) run on
/// all t·h elements on every TP rank, or on t·h/tp under `sequence_parallel` (Megatron SP,
/// Korthikanti et al. 2022 §4.2.2: the sequence split between the reduce-scatter and the
/// all-gather that replace each TP all-reduce). Under
/// training.framework eager the ops PyTorch runs as several kernels cost what those kernels
/// move: RMSNorm 8 kernels, (28 + 4·bpe) B per element; rotary 6 kernels (q and k), (16 + 2·bpe)
/// B; SwiGLU 2 kernels, 5·bpe B per element of the FFN; cross-entropy over fp32 copies of the
/// logits (also under compile, which torchtitan applies per transformer block, not to the
/// loss); fused and compile: one pass each. Under the fp8 recipe every linear layer's GEMM has
/// dtype "fp8" (operands 1 B, output bpe) and is preceded by "<name>_cast" (input and weight:
/// amax read + cast read/write 1 B, 4 kernels; the weight not under training.fp8_all_gather,
/// where FSDP gathers it already cast); the other GEMMs get dtype "bf16".
/// Dropout (ModelSpec attention_dropout / hidden_dropout; 0 = none, as in Llama-style
/// training) is a fused memory-bound kernel that reads its input and writes its output and a
/// 1-byte keep mask: bytes = elements · (2·bytes_per_element + 1). hidden_dropout_attn and
/// hidden_dropout_mlp act on the t·h block outputs (after attn_out's and mlp_down's TP
/// all-reduce; MoE: after moe_unpermute and the shared experts); attn_dropout on the
/// sequences·(a/tp)·s² probabilities of the unfused core. With flash attention the attention
/// dropout happens inside the attn_core kernel (masks regenerated from the seed, never stored):
/// no op and no extra bytes. The dropout probability does not change the cost. TP all-reduces
/// and the all-to-alls belong to the comm layer. `expert_folded` (MoE parallel folding,
/// parallel.expert_tp 1, with tp > 1 and sequence parallelism): a MoE layer's router, permutation
/// and experts run on this TP rank's t/tp tokens, each of its E/ep experts whole (its GEMMs of
/// role plain: no TP collective in the MoE block). Throws std::invalid_argument unless
/// 0 ≤ layer < layers, ep ≥ 1 and ep divides experts.
std::vector<Op> layer_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp, int layer = 0, int ep = 1, bool sequence_parallel = false,
                                  bool expert_folded = false);
/// Backward ops of the same layer, in reverse order: every GEMM becomes its input-gradient and
/// weight-gradient GEMMs (2× forward FLOPs); elementwise ops ≈ 2× bytes (and FLOPs), except a
/// dropout's backward ("<name>_bwd"), which reads the output gradient and the mask and writes
/// the input gradient: the forward's elements · (2·bytes_per_element + 1) bytes. The
/// flash-attention core backward is one kernel of five s×s matmuls (QKᵀ recomputed inside the
/// kernel over d, dV = PᵀdO over d_v, dP = dO·Vᵀ over d_v, dQ = dS·K over d, dK = dSᵀQ over d)
/// against the forward's two: (3·d + 2·d_v)/(d + d_v) × its FLOPs, 2.5× when d_v = d —
/// hardware FLOPs, so the in-kernel recompute counts. The MoE markers come back as
/// "moe_combine_bwd" (before the experts' backward: the output gradients travel to the
/// experts) and "moe_dispatch_bwd" (after it: the input gradients travel home), each an
/// all-to-all of the same bytes as its forward.
std::vector<Op> layer_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   int sequences, int tp, int layer = 0, int ep = 1, bool sequence_parallel = false,
                                   bool expert_folded = false);
/// Forward ops that run once per microbatch outside the layers: embedding lookup (gather t
/// rows of h, plus t position rows when learned; written t·h), final norm, LM head GEMM
/// (m = t, n = V/tp, k = h; vocab-parallel), cross-entropy (reads the logits, writes fp32
/// probabilities: t·V/tp·(bytes_per_element + 4)). Backward of these: `head_backward_ops`
/// (cross-entropy backward: read fp32 probabilities, write dlogits; the rest by the layer rules).
std::vector<Op> head_forward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp, bool sequence_parallel = false);
/// The training loop's metrics on a microbatch's logits after its backward
/// (training.logit_metrics), one op per metric, outside autograd: a cross-entropy under the
/// precision's autocast runs as an eager fp32 loss does — the fp32 copy of the logits (bpe + 4 B
/// per logit; none in fp32 training), the log-softmax (read 4, write 4) and the NLL gather —
/// plus the metric's two reductions (the summed loss, the count of targets): t·V/tp·(8 + bpe + 4)
/// bytes, 5 kernels (4 without the copy). Empty when training.logit_metrics is 0.
std::vector<Op> logit_metric_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int tp);
std::vector<Op> head_backward_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  int sequences, int tp, bool sequence_parallel = false);
/// Forward ops recomputed in backward under the activation-checkpointing policy
/// (none: empty; selective: the attention core, attn_dropout included; full: the whole layer
/// forward, dropouts included, MoE markers included as "recompute_moe_dispatch" /
/// "recompute_moe_combine": the all-to-alls repeat; op (torchtitan): every element-wise op and
/// the matmuls whose outputs the policy does not keep — wk (a qkv GEMM of n = g·d/tp), wo, and
/// w3 (half of the fused SwiGLU up GEMM; GELU MLP: the down projection) — never the attention
/// core).
/// PyTorch model code (training.framework eager or compile) on a dense layer without hidden
/// dropout, full and op: the recompute ends at the MLP down projection's input, the layer's last
/// saved tensor (torch.compile's partitioner; torch.utils.checkpoint's early stop): no
/// down-projection GEMM (eager Float8: the GEMM, role plain), no reduction after it, no residual
/// add. With tp > 1 and sequence parallelism (DTensor TP) it reruns the all-gathers it needs as
/// "recompute_norm_attn_gather" / "recompute_norm_mlp_gather" markers (OpRole::
/// tp_sequence_gather, no kernel) after the norms: after norm_attn always, after norm_mlp
/// under op, whose save list keeps wo's reduce-scattered output — so compiled wo is not
/// recomputed and eager it is, role plain, its reduction taken from the cache.
std::vector<Op> layer_recompute_ops(const config::ModelSpec& model, const config::TrainingSpec& training,
                                    int sequences, int tp, int layer = 0, int ep = 1, bool sequence_parallel = false,
                                    bool expert_folded = false);

/// Whether layer `layer` (0-based) is a mixture-of-experts layer: experts > 1 and
/// layer ≥ dense_layers. Throws std::invalid_argument unless 0 ≤ layer < layers.
bool is_moe_layer(const config::ModelSpec& model, int layer);
/// The 0-based indices of the MoE layers, ascending (empty for a dense model). O(layers).
std::vector<int> moe_layer_indices(const config::ModelSpec& model);

/// The expert-parallel all-to-all traffic of one MoE layer for one microbatch, per GPU.
///
/// A GPU holds t = sequences·sequence_length tokens and sends each of them to k experts:
/// routed = t·k·h·bytes_per_element(precision) bytes of token copies. Under perfect balance the
/// experts of a token are spread uniformly over the ep GPUs of the EP group, so the fraction
/// (ep − 1)/ep of those copies leaves the GPU in the dispatch all-to-all, and the same share of
/// expert outputs (h each) comes back in the combine: dispatch = combine =
/// t·k·h·bpe·(ep − 1)/ep, and as many bytes arrive as leave. Backward repeats both with the
/// gradients (moe_combine_bwd, moe_dispatch_bwd), full recompute repeats the forward pair.
/// Not modelled: DeepSeek-V3's FP8 dispatch (the training precision is used for both),
/// node-limited routing and the de-duplication of copies bound for one node (§3.2.2), token
/// dropping and router imbalance. TP ranks hold the same tokens; which of them sends what is the
/// run layer's choice. Throws std::invalid_argument for a dense model, sequences < 1, ep < 1
/// or ep not dividing experts.
struct MoeAllToAll {
  double routed_bytes = 0;    ///< t·k·h·bpe: every token copy, the ones staying local included
  double dispatch_bytes = 0;  ///< bytes this GPU sends to the other EP ranks in the dispatch
  double combine_bytes = 0;   ///< bytes this GPU sends back in the combine
  /// What a rank contributes to the routing metadata its dispatcher exchanges over the EP group
  /// before each forward dispatch, so that every rank can size what it will receive:
  /// `routing_map_bytes`, the t × E boolean routing map (1 B per entry: torch.bool), which
  /// HybridEP all-gathers (DeepEP hybrid-ep csrc/hybrid_ep/executor/executor.cu,
  /// Executor::allgather_routing_map); `expert_count_bytes`, the E per-expert token counts
  /// (int64: routing_map.sum(dim=0).long(), torch.bincount in Megatron-core 0.8), which
  /// Megatron-core's alltoall dispatcher all-gathers (MoEAlltoAllTokenDispatcher.preprocess).
  double routing_map_bytes = 0;
  double expert_count_bytes = 0;
};
MoeAllToAll moe_all_to_all_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                                 int sequences, int ep);
/// How many ways the routed experts' weights are split relative to the rest of a layer under
/// tensor parallelism: a rank holds (rest + routed / expert_split(p)) / tp of them. ep when each
/// expert is split over TP as the dense MLP is; ep / tp when the experts are folded over TP × DP
/// (parallel.expert_tp 1 with tp > 1): whole experts, E / ep of them on a rank.
double expert_split(const config::ParallelSpec& p);
/// The optimizer step over `params_local` parameters held by this GPU (memory-bound update).
/// Bytes per parameter (fp32 state; under training.optimizer_dtype bf16 every state tensor at 2 B
/// and the bf16 parameters updated in place, no master: adam/bf16 = 20 B/param): the fp32
/// weights (master copy under mixed precision, the weights
/// themselves in fp32) read + written 8, each fp32 state tensor read + written 8 (adam 2
/// tensors, momentum and rmsprop 1, sgd 0), the gradient read (parameter_bytes), and under mixed
/// precision the low-precision weight copy written (parameter_bytes), gradient-norm clipping
/// (norm: read; clip: read + write) 3·parameter_bytes, and under fp16 the loss-scale pass (inf/nan
/// check: read; unscale: read + write) 3·parameter_bytes more: adam/bf16 = 34 B/param.
/// FLOPs per parameter (CUDA-core, rough): adam 12, rmsprop 8, momentum 4, sgd 2.
/// Adam run unfused by PyTorch model code (optimizer_impl foreach or for_loop) moves instead the
/// bytes of its kernel sequence over fp32 tensors, counted from the code: foreach (torch's
/// _multi_tensor_adamw) the weight decay mul_ 8, lerp_ of the first moment 12, mul_ and addcmul_
/// of the second 8 + 12, sqrt 8, div_ 8, add_ of eps 8, addcdiv_ of the weights 16: 80 B, in 8
/// kernels; for_loop (Composer's DecoupledAdamW.adamw) the weight decay mul_ 8, mul_ and add_ of
/// the first moment 8 + 12, mul_ and addcmul_ of the second 8 + 12, sqrt 8, division 8, add_ of
/// eps 8, addcdiv_ 16: 88 B, in 9 kernels (per tensor: the launches of the other tensors are not
/// counted); clipping and loss scaling as above. Under training.bf16_optimizer no clipping here:
/// DeepSpeed's BF16_Optimizer clips the rank's unsharded fp32 gradients (run/data_parallel.cpp).
Op optimizer_op(const config::TrainingSpec& training, double params_local);
/// A memory-bound pass (a copy, cast or scale of a buffer): `bytes` of HBM traffic, read and
/// written, in `kernels` kernels; no FLOPs, no GEMM. O(1).
Op memory_pass(std::string name, double bytes, int kernels = 1);
/// Bytes per element of the optimizer's state and master weights: 2 under
/// training.optimizer_dtype bf16, otherwise 4. A master copy exists only when the stored
/// parameters are narrower than this (mixed precision with fp32 state). O(1).
double optimizer_state_bytes(const config::TrainingSpec& training);
/// The Adam implementation a step runs (TrainingSpec::optimizer_impl resolved): foreach,
/// for_loop or fused; fused for Megatron-style code and for every optimizer but adam.
std::string optimizer_impl(const config::TrainingSpec& training);

/// Whether the step runs PyTorch's own modules (training.framework eager or compile, as
/// torchtitan does): torch.optim, FSDP2, torch's tensor parallelism and loss, the Llama model
/// code's SDPA call. `fused` (Megatron-style, Transformer Engine) and cuda_graphs do not.
bool pytorch_model_code(const config::TrainingSpec& training);

/// Whether the model code expands grouped K/V to every query head before SDPA: PyTorch model
/// code (training.framework eager or compile: torchtitan's Llama calls repeat_kv on K and V
/// before F.scaled_dot_product_attention, torchtitan 9dec370 torchtitan/models/llama/model.py),
/// not Megatron-style code (fused: Transformer Engine's attention takes grouped K/V).
bool sdpa_expands_kv(const config::TrainingSpec& training);

/// What one rank's tensors of context-parallel ring attention hold, in elements: its queries
/// (tokens_local · heads/tp · d), attention output (· d_v), each of K and V (· kv_heads/tp · d)
/// and its log-sum-exp rows (tokens_local · heads/tp).
struct RingTensors {
  double query_elements = 0, out_elements = 0, kv_elements = 0, lse_elements = 0;
  /// K and V reach SDPA as a transposed view (PyTorch model code: xk.transpose(1, 2)), which the
  /// ring copies contiguous first (_templated_ring_attention and its backward: key.contiguous()).
  bool transposed_kv = false;
};
/// The kernels of one rank's ring attention as torch.distributed.tensor.experimental's
/// context_parallel runs it with its defaults (load-balanced causal chunks, convert_to_f32;
/// torch _attention.py, _templated_ring_attention and its backward), from the local causal
/// attention core `core` (s × s, s = sequence_length / cp, forward or backward):
/// - `first`: step 0, the causal core on the rank's own K/V (backward: after zero-filling the
///   fp32 dQ, dK, dV; its dK, dV accumulated and concatenated for the next rank);
/// - `kv_half`: a step that meets a K/V block from an earlier chunk (steps 1 … cp_rank): all s
///   queries × the first s/2 keys, no mask;
/// - `q_half`: a step that meets a later one (the other steps): the last s/2 queries × all s
///   keys, no mask;
/// - forward steps merge the block output into the fp32 output by its log-sum-exp
///   (_SDPAMerger: 9 eager kernels, 38 B per output element, + torch.cat of the halves in
///   q_half steps); backward steps accumulate dQ, dK, dV in fp32 (`*_accumulate`, which waits
///   for the dK, dV the previous rank sends); each step concatenates K and V for the rotation
///   (torch skips it on the last step: a few MB, kept for simplicity);
/// - `finish`: the fp32 results cast back to bf16.
/// Throws std::invalid_argument unless `core` is a causal square attention core. O(1).
struct RingAttentionOps {
  std::vector<Op> first, kv_half, q_half, kv_half_accumulate, q_half_accumulate, finish;
};
RingAttentionOps ring_attention_ops(const Op& core, const RingTensors& tensors);

/// Duration of `op` on `device`: a roofline of tensor-core time against HBM time: the GPU's
/// execution time of its `op.kernels` kernels once they are queued (what issuing them costs the
/// host is HostQueue's). Small GEMMs lose efficiency *because*
/// their tiles do not fill the SMs and their K loops are short — that emerges here, it is not
/// an input. The op runs in `op.dtype`, or `precision` when that is empty.
///
/// GEMM: tiles = ⌈m/tile_m⌉·⌈n/tile_n⌉·⌈batch⌉ (causal: only tiles reaching the diagonal; the
/// tile is turned tile_n × tile_m when that takes fewer waves), waves = ⌈tiles / sm_count⌉,
/// compute = waves · 2·tile_m·tile_n·(k + gemm_k_fill) / (peak · gemm_mainloop_fraction · clock
/// / sm_count) (an fp8 GEMM with the split accumulator, Op::fp8_split_accumulator: the
/// mainloop and the ceiling × fp8_split_accumulator_rate), clock =
/// sustained_clock_fraction(device, gemm_mainloop_fraction): every SM
/// computes one whole tile per wave and fills and drains its K pipeline per tile, so partial
/// tiles, partial waves and short K loops cost full time. Fused attention (with a device
/// attention_kernel): useful FLOPs (causal: s(s+1)/2 cells) / attention_kernel_rate(pass, L) ×
/// the partial last wave of its thread blocks (⌈rows/tile_m⌉·⌈batch⌉ over sm_count; rows =
/// queries forward, keys backward), at the GEMMs' sustained clock (every SM busy for the
/// kernel's whole run: the full-load power, not its share of tensor peak); without one, as a
/// GEMM. Other ops: compute =
/// flops / peak_flops["fp32"] (CUDA-core rate; 0 if the device lists none). Memory = bytes /
/// hbm_bandwidth. Result = max(compute, memory), rounded up to whole ns; a GEMM that split_k
/// would slice takes the faster of that and its sliced GEMM plus reduction. An op with nothing to do (not a GEMM, 0 FLOPs, 0 bytes: the
/// MoE markers) launches no kernel and takes 0. Throws std::invalid_argument if the device has
/// no peak for a GEMM's `precision`. O(⌈m/tile_m⌉) for causal ops, O(1) otherwise.
Time op_time(const Op& op, const config::DeviceSpec& device, const std::string& precision);
/// The op's HBM time, bytes / hbm_bandwidth rounded as op_time rounds (zero without bytes or
/// bandwidth). An op whose op_time is no longer than this is memory-bound: it slows with the
/// HBM bandwidth it gets, not with its SMs' tensor rate (run/gpu_sms.hpp). O(1).
Time memory_time(const Op& op, const config::DeviceSpec& device);
/// cuBLAS's split-K, for a GEMM whose output tiles leave SMs idle (a weight gradient over many
/// tokens or pixels with a small m × n output; cuBLAS runs such K-heavy shapes as a split-K kernel
/// and cublasLt's splitKreduce_kernel, 2-8x faster than one pass: Dao-AILab/quack PR #157's
/// measurements of torch.bmm, 128×128×16384 … 512×512×16384; CUTLASS example 30, wgrad split-K): s = min(⌊SMs / tiles⌋, ⌈k / 512⌉) slices of k / s
/// (tiles: ⌈m / gemm_tile_m⌉·⌈n / gemm_tile_n⌉·⌈batch⌉), run as one batch of s GEMMs each writing
/// its fp32 partial output, then a reduction kernel reading the s partials and writing the result
/// (`out_bpe` bytes per element); FLOPs unchanged. Returns (the sliced GEMM, the reduction), or
/// nullopt when s < 2 or `op` is not a plain GEMM (causal, fused attention). op_time times a GEMM
/// both ways and keeps the faster, as the library's heuristic does; layer_list emits the two ops
/// of a convolution's split explicitly. O(1).
std::optional<std::pair<Op, Op>> split_k(const Op& op, const config::DeviceSpec& device, double out_bpe);

/// Host time to issue one kernel under `framework` (training.framework): the device profile's
/// framework_dispatch entry for it, else kernel_launch_overhead. O(log frameworks).
Time host_dispatch_cost(const config::DeviceSpec& device, const std::string& framework);

/// One rank's CPU thread issuing kernels into one CUDA stream, and the GPU running them.
///
/// The host issues kernel i at H_i = H_(i−1) + c (c = host_dispatch_cost, the clock starting at
/// 0 when the queue is created: the host reaches the ops of a part when the part may start); the
/// GPU starts it at S_i = max(E_(i−1), H_i) and ends it at E_i = S_i + e_i. While the host is
/// ahead the kernels run back to back (E_n = c + Σ e_i); where it falls behind, the GPU idles
/// and the gaps of a launch-bound stretch emerge (E_n = n·c + e_n when every e_i < c). An op of
/// k kernels is k kernels of e/k each (the last takes the rounding remainder). Blocking launches
/// (CUDA_LAUNCH_BLOCKING=1, training.launch_blocking): a launch returns once its kernel ended,
/// so H_i = max(H_(i−1), E_(i−1)) + c and the GPU idles c before every kernel
/// (E_n = n·c + Σ e_i). An op whose host code reads `syncs` values back from the device (Op::
/// host_syncs) makes the host wait, before each of its kernels 1 … syncs (after the first, which
/// computes the value), until the GPU has ended every kernel issued so far: H_i = max(H_(i−1),
/// E_(i−1)) + c for those, so the queue the host had built up ahead of the GPU drains and the
/// GPU idles c at each. Of an op's kernels, the last `library_kernels` (Op::library_kernels) are
/// issued by the library's own loop after the op's framework call: each costs the library's
/// call l instead of c (a bare launch, or a cuBLASLt GEMM call: OpTimer picks l). O(k) per push.
class HostQueue {
 public:
  explicit HostQueue(Time dispatch_cost, bool blocking = false) : cost_(dispatch_cost), blocking_(blocking) {}
  /// Queues an op of `kernels` kernels (at least 1 is issued when `execution` > 0; an op with
  /// nothing to do, execution 0 and the marker ops, issues none) that run `execution` on the
  /// GPU. Returns the time the GPU spends on it from the end of the previous op: its execution
  /// plus any idle gap waiting for the host. `syncs` (< kernels; more are clamped): the op's
  /// reads of device values, as above. `library_kernels` (< kernels; more are clamped): the
  /// kernels issued at `library_cost` each.
  Time push(Time execution, int kernels, int syncs = 0, int library_kernels = 0, Time library_cost = Time::zero());
  /// When the GPU has finished every queued kernel, from the queue's start.
  Time gpu_end() const { return gpu_; }
  /// When the host has issued every queued kernel, from the queue's start.
  Time host_end() const { return host_; }

 private:
  Time cost_;
  bool blocking_ = false;
  Time host_;
  Time gpu_;
};

/// The share of the dense peak the GEMM kernel's mainloop sustains, per SM, at the benchmark's
/// clock: max_gemm_fraction divided by what the tile, wave and K-fill model loses at the shape
/// the fraction was measured at (max_gemm_shape_*), at most 1; max_gemm_fraction itself when the
/// shape is not given. O(1).
double gemm_mainloop_fraction(const config::DeviceSpec& device);
/// The measured rate of the device's fused attention kernel for one pass (forward or backward,
/// with or without causal mask) whose inner loop runs over `loop_length` tokens (forward: the
/// keys; backward: the queries): plateau_rate · L / (L + half_length) [FLOP/s of useful work],
/// from the kernel's profile for `head_dim` (DeviceSpec::AttentionKernel::at_head_dim).
/// Throws std::invalid_argument if the device has no profile, the pass has no positive
/// plateau_rate or L ≤ 0. O(profiles).
double attention_kernel_rate(const config::DeviceSpec& device, bool backward, bool causal, double loop_length,
                             double head_dim);
/// The SM clock, as a fraction of the clock max_gemm_fraction was measured at, that a kernel
/// whose tensor cores run at `tensor_fraction` of peak sustains under power_limit_w. Dynamic
/// power ∝ activity · f^x (x = clock_power_exponent; 3 when V ∝ f); the benchmark's GEMM
/// (activity = gemm_mainloop_fraction) holds max_gemm_power_limit_w under continuous load at
/// f = s = sustained_gemm_clock (its measurement, a burst after idle, ran at f = 1);
/// static_power_w does not scale. f = min(1, s · ((P − P_s) / ((P_ref − P_s) · activity))^(1/x)).
/// 1 when the device gives no power limit. Throws std::invalid_argument if a limit does not
/// exceed static power or s is not in (0, 1].
double sustained_clock_fraction(const config::DeviceSpec& device, double tensor_fraction);

/// Bytes per element of the activations and the bf16/fp16 GEMM operands under the training
/// precision: fp32 4, bf16/fp16 2, fp8 2 (the fp8 recipe — torchtitan Float8, Transformer
/// Engine — runs only the linear layers' GEMMs on 1-byte operands, cast per GEMM; activations,
/// attention, norms and the optimizer stay in bf16/fp32).
double bytes_per_element(const std::string& precision);
/// Bytes per stored weight or gradient under `precision`: fp32 4, otherwise 2 (fp8 training
/// keeps bf16 weights and casts to fp8 per GEMM, as Transformer Engine does).
double parameter_bytes(const std::string& precision);
/// Bytes per parameter as the model holds it, and per gradient autograd leaves in .grad: 4
/// under training.autocast (fp32 parameters cast per forward), otherwise
/// parameter_bytes(precision).
double stored_parameter_bytes(const config::TrainingSpec& training);
/// Bytes per gradient element in the gradient collectives: 4 under training.reduce_dtype fp32,
/// 2 under bf16/fp16, stored_parameter_bytes(training) when reduce_dtype is unset.
double reduce_bytes(const config::TrainingSpec& training);
/// Bytes per gathered weight of a linear layer under ZeRO-3/FSDP: 1 under
/// training.fp8_all_gather (torchao's fp8 all-gather hands the fp8 weight to the GEMM),
/// otherwise parameter_bytes(precision). Norm gains, embedding and LM head gather at
/// parameter_bytes.
double gathered_linear_bytes(const config::TrainingSpec& training);

/// Memory per GPU by term [bytes].
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  /// Buffers alive only around one layer: the gradients its backward holds
  /// (backward_gradient_bytes), its recomputed activations during its backward under
  /// activation checkpointing, and under ZeRO-3/FSDP the gathered parameters of the layer
  /// computing and of the one prefetched plus the unsharded gradients of one layer.
  double transient = 0;
  /// ZeRO-3/FSDP composed with pipeline parallelism (parameters not resharded after forward,
  /// as torchtitan runs it): the stage's gathered weights and its unsharded gradients,
  /// accumulated over the microbatches, held for the whole step.
  double unsharded = 0;
  /// Transformer Engine's fp8 copies of the linear weights and their transposes, kept from a
  /// step's first microbatch for the others (fp8_weight_cache_bytes per linear parameter).
  double weight_cache = 0;
  /// Autocast's copies of the matmul weights in the training precision (training.autocast):
  /// cached by the forward's autocast region and kept by autograd for the GEMMs' backward, all
  /// of them alive when the forward ends.
  double autocast_copies = 0;
  double total() const {
    return weights + gradients + optimizer + activations + transient + unsharded + weight_cache + autocast_copies;
  }
};

/// Weights, gradients and optimizer state of `params_local` parameters (already divided by
/// TP/PP/EP) under ZeRO stage `zero` over `dp` ranks; activations are 0. Under
/// training.autocast the parameters and gradients are fp32 and the optimizer keeps no master
/// copy (stored_parameter_bytes). Under training.bf16_optimizer the gradients add DeepSpeed's
/// fp32 accumulation buffer, 4 B per parameter, never sharded.
/// weights parameter_bytes each (÷dp from ZeRO-3), gradients parameter_bytes (÷dp from
/// ZeRO-2), optimizer state (÷dp from ZeRO-1): fp32 master copy 4 when parameter_bytes < 4,
/// plus 4 per fp32 state tensor (adam m and v: 8; momentum 4; rmsprop 4; sgd 0); under
/// training.optimizer_dtype bf16 no master and 2 per state tensor (adam: 4).
/// Mixed-precision Adam at ZeRO-0: 2 + 2 + 12 = 16 B/param exactly; ZeRO-3: 16/dp.
MemoryBreakdown model_state_memory(double params_local, const config::TrainingSpec& training, int zero, int dp);
/// The same for a rank holding `expert_local` routed-expert parameters among its `params_local`:
/// the rest sharded over `dp` (the ZeRO ranks, dp × cp), the experts over the ranks that hold the
/// same experts, expert_zero_ranks(parallel, dp) — Megatron-core's distributed optimizer and
/// DeepSpeed shard expert parameters over the expert-data-parallel group.
MemoryBreakdown model_state_memory(double params_local, double expert_local, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp);
/// The ranks that hold the same routed experts, among `dp` ZeRO ranks (dp × cp): dp / ep, or
/// tp · dp / ep under MoE parallel folding; at least 1.
int expert_zero_ranks(const config::ParallelSpec& parallel, int dp);

/// Activation bytes one transformer layer keeps for backward, per microbatch of `sequences`
/// sequences, on one GPU: what autograd keeps per op of the actual layer, Korthikanti et al.
/// 2022 §4 generalised (their 34·s·b·h + 5·a·s²·b comes out for GPT-3's LayerNorm, GELU,
/// multi-head attention and 0.1 dropout). Per token, bpe bytes per element, t = tp:
///   replicated over TP (÷t under sequence_parallel): each norm's input (eager RMSNorm: its
///     fp32 copy and the normalised value, (4 + bpe)·h) and its output, and 1-byte dropout masks
///     of the two block outputs when hidden_dropout > 0; under PyTorch's sequence parallelism
///     (torch_tensor_parallel) each norm's output is kept as the all-gathered linear input,
///     every token (not ÷t), in fp8 (1 B) under the fp8 recipe (Float8 TP gathers fp8);
///   split over TP: Q, K, V (grouped-query widths) and the attention output; flash: fp32
///     log-sum-exp per head; eager rotary: its fp32 inputs; MLP: GELU input and output, SwiGLU
///     gate, up and product (eager: + the SiLU output);
///   a mixture-of-experts layer's block instead (Megatron-core's, Transformer Engine's grouped
///     GEMMs and fused permutation): the router's fp32 softmax (4·E) and top-k indices and gates
///     (12·k), and per routed copy (k per token, balanced over the EP group) the first grouped
///     GEMM's input h, the activation's input 2·f_e (gated; f_e not), the second GEMM's input
///     f_e and the combined rows h the unpermute keeps for the gates' gradients; folded
///     (parallel.expert_tp 1) on the rank's t/tp tokens with whole experts, otherwise on every
///     token with f_e/t; shared experts as a dense MLP of their width; the GEMM inputs and the
///     shared experts' copy of the norm output in fp8 (1 B) under Transformer Engine's fp8.
///     A MoE model's layers count as the mean over its dense and MoE layers;
///   unfused attention: per key the softmax output, mask and dropout output (5·a/t per key at
///     bpe 2), only under policy none.
/// Policies: none; selective (Korthikanti: the s² terms recomputed); full: the layer input
/// bpe·h (÷t under sequence_parallel); op (torchtitan): the layer input, the attention output
/// and log-sum-exp, and the outputs of the 1st, 3rd, ... matmuls in forward order (wq, wk, wv,
/// wo, w1, w3, w2 → wq, wv, w1, w2) — compiled less the last one (w2's: no backward node reads
/// it, and the partitioner saves only what one does; eager's checkpoint cache keeps it) —, and
/// under DTensor sequence parallelism the reduce-scatter outputs (h/t each): wo's and w2's
/// eager, wo's compiled. Under context parallelism training.sequence_length is the
/// rank's own share of a sequence (callers pass sequence_length / cp, as the op costs take it;
/// the unfused score term spans the keys of the whole sequence, that share × cp).
double activation_bytes_per_layer(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  const config::ParallelSpec& parallel, int sequences);

/// What the backward of one checkpointed layer rebuilds, per microbatch of `sequences` [B]: the
/// tensors policy none keeps (activation_bytes_per_layer) less those the policy saved, which
/// the recompute reuses instead of making again (they are counted in the saved activations):
/// full, the layer input where policy none keeps it as the first norm's input (not under eager
/// RMSNorm, which keeps fp32 copies in its place); selective (the attention core), all but the
/// core's score tensors; op (torchtitan's per-op policy), that input, the first MLP projection's
/// output, the attention output and its log-sum-exp (the kept outputs of wq, wv and w2 are not
/// what policy none keeps: it holds the rotated Q, the expanded V and no w2 output). 0 for
/// policy none. Throws as activation_bytes_per_layer. O(1).
double recomputed_activation_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int sequences);

/// The gradient tensors one transformer layer's backward holds at its peak, per microbatch of
/// `sequences` sequences on one GPU, beyond the activations it kept or recomputed and its weight
/// gradients: the layer's output gradient (h, ÷tp under sequence parallelism) held through the
/// layer, plus the larger of its two blocks' peaks in autograd's node order (the node created last
/// runs first), per token at bpe bytes, f = FFN/tp, q, o the local query and output widths, K/V
/// the local grouped key and value widths:
///   MLP: max(h + f, 3f, 2f + h, f + 2h) with SwiGLU (down projection; product; SiLU; gate
///     projection, whose input gradient is written beside the up projection's before autograd
///     adds them), max(h + f, 2f, f + h) with GELU;
///   attention: max(h + o, o + q + K/V as the core writes them (SDPA with expanded K/V: q + o),
///     q + K/V + 2h);
///   a MoE block: h (the block's output gradient) + the MLP's peak per routed copy, with f = f_e
///     (f_e/tp unless folded), times k (÷tp folded: the rank's own tokens); shared experts as a
///     dense MLP of their width; the heavier of a MoE model's dense and MoE layers.
/// h is whole under TP: a row-parallel linear's backward all-gathers its output gradient under
/// sequence parallelism (replicated without), a column-parallel linear's input gradient is a full
/// partial sum before its reduce-scatter or all-reduce. Not counted: fp8 casts of gradients
/// (1 B per element) and the kernels' workspaces. Under context parallelism
/// training.sequence_length is the rank's share. Throws std::invalid_argument for sequences ≤ 0
/// or tp, cp < 1. O(1).
double backward_gradient_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int sequences);

/// Mixed-precision training (weights/grads in the training precision, fp32 master + optimizer
/// moments), ZeRO stage `parallel.zero` sharding over `dp` ranks (every replica of the weights:
/// the run layer passes dp × cp, torchtitan's dp_shard_cp mesh), activations of
/// `in_flight_microbatches` microbatches under the recompute policy.
/// Parameters per GPU: (all but the routed experts + routed experts / ep) / (tp · pp) — an even
/// split across stages (embedding and LM head are not placed on the first/last stage
/// separately). Activations follow Korthikanti et al. for every layer; a MoE layer's block keeps
/// the router's softmax and the k token copies' grouped-GEMM inputs, activation input and
/// combined rows (activation_bytes_per_layer), the mean over a MoE model's dense and MoE layers.
/// Activations: activation_bytes_per_layer × ⌈layers / pp⌉ × in_flight_microbatches, plus the
/// loss buffers of one microbatch (s·b·V/tp·loss_bytes_per_logit) and the LM head's kept input
/// (head_input_bytes) of every microbatch in flight (the last stage's), with b =
/// parallel.microbatch_size. Transient: one layer's backward gradients (backward_gradient_bytes);
/// under recompute one layer's activations without it;
/// under ZeRO-3 with dp > 1 two layers' gathered parameters (gathered_linear_bytes each) and one
/// layer's unsharded gradients (pb) and the gathered root unit (embedding + LM head, parameters and
/// gradients), and the reduce-scatter input of one layer in the reduce dtype (FSDP2 copies the
/// unsharded gradients into it). ZeRO-3 with pp > 1 (no reshard after forward, torchtitan's
/// choice for PP): `unsharded` holds every parameter of the stage gathered (linear weights at
/// gathered_linear_bytes, the rest at pb) and its gradients accumulated unsharded in the reduce
/// dtype (FSDP2 upcasts them to reduce_dtype while gradient sync is off), and the transient
/// keeps one layer's fresh gradients (pb) and its reduce-scatter input (rb) only. Under
/// training.autocast the weights and gradients are fp32 (4 B each, no master copy) and
/// `autocast_copies` holds the matmul weights cast to the training precision: the layers' and
/// the LM head's of every microbatch in flight (full recompute: the layers' of one microbatch,
/// cached until its forward ends). A bound for the worst stage, not a
/// placement of stages. Not counted: the CUDA
/// context and NCCL buffers (outside the framework's allocator: the capacity it is compared with
/// leaves them out, run::allocator_capacity) and allocator fragmentation.
MemoryBreakdown memory_per_gpu(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int dp, int in_flight_microbatches);

/// `ops` without the ops only a step's first microbatch runs (Op::first_microbatch_only): what
/// every later microbatch of the step runs. O(ops).
std::vector<Op> steady_microbatch(std::vector<Op> ops);

/// Bytes per linear-layer parameter of the fp8 weights Transformer Engine caches across a step's
/// microbatches: 2 (the fp8 weight and its transpose, which the dgrad GEMM takes) under the fp8
/// recipe with Megatron-style code (training.framework fused or cuda_graphs), whose schedules
/// call set_is_first_microbatch() so that TE's modules cast a weight on the step's first
/// microbatch only (megatron/core/transformer/module.py; TE Linear.forward is_first_microbatch,
/// "caching of FP8-cast weights"); 0 otherwise: PyTorch model code (torchao Float8) casts per
/// use, and with FSDP's fp8 all-gather the weight arrives in fp8. O(1).
double fp8_weight_cache_bytes(const config::TrainingSpec& training);

/// Whether tensor parallelism runs as PyTorch's DTensor styles (training.framework eager or
/// compile with tp > 1, as torchtitan's apply_tp does, unless parallel.tp_runtime is megatron)
/// rather than Megatron-style layers: sequence-parallel linears keep their all-gathered input,
/// each sequence-dimension collective copies its tensor into a contiguous layout, the
/// input-gradient collectives block, and the loss is torch's loss parallel (torchtitan's default
/// under TP: training.disable_loss_parallel is false).
bool torch_tensor_parallel(const config::TrainingSpec& training, const config::ParallelSpec& parallel);

/// Bytes per logit alive at the loss's peak (forward or backward), by framework: fused
/// (vocabulary-parallel fused cross-entropy) 4 — the fp32 probabilities; Megatron's unfused
/// vocab_parallel_cross_entropy (training.cross_entropy_loss_fusion false) bpe + 4 — the fp32
/// copy worked in place beside the logits, then the softmax beside the cast gradient (4 in fp32
/// training, where the copy is the logits themselves); eager and compile
/// (compiled per transformer block, as torchtitan does: the loss stays eager)
/// F.cross_entropy(logits.float()): max(bpe + 8, 12) (logits, fp32 copy and log-softmax output
/// in forward; log-softmax output, NLL gradient and log-softmax gradient in backward); the same
/// under torch TP (torch_tensor_parallel: loss parallel, whose backward
/// (grad_input + exp(x)) · grad_output keeps x, grad_input, exp(x) and the sum alive, all fp32):
/// max(bpe + 12, 16); a compiled loss (training.compile_loss) or flash-attn's fused cross-entropy
/// (training.fused_cross_entropy): 2 × bpe, the logits and their gradient.
double loss_bytes_per_logit(const config::TrainingSpec& training, const config::ParallelSpec& parallel);

/// Bytes the LM head keeps for its weight gradient per microbatch of `sequences` sequences
/// (the final norm's output, s·b·h at bpe, s the rank's share of a sequence under context
/// parallelism as in activation_bytes_per_layer), on the last pipeline stage from the forward of
/// the microbatch to its backward; ÷tp under Megatron-LM's sequence parallelism (the shard is
/// kept and re-gathered), every token under PyTorch's (torch_tensor_parallel: the gathered
/// input is kept). Throws std::invalid_argument for sequences ≤ 0 or tp, cp < 1. O(1).
double head_input_bytes(const config::ModelSpec& model, const config::TrainingSpec& training,
                        const config::ParallelSpec& parallel, int sequences);

}  // namespace ironlaw::workload
