// Framework modes (fused kernels, eager PyTorch, torch.compile), the fp8 linear-layer recipe
// and torchtitan's op-level recompute policy, on Llama 3 8B with one 8,192-token sequence.
// Every expected figure is counted by hand from the kernels PyTorch runs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec llama_training(const std::string& framework, const std::string& precision = "bf16",
                                    const std::string& recompute = "none") {
  config::TrainingSpec t;
  t.sequence_length = 8192;
  t.precision = precision;
  t.optimizer = "adam";
  t.activation_checkpointing = recompute;
  t.flash_attention = true;
  t.framework = framework;
  return t;
}

constexpr double kTokenHidden = 8192.0 * 4096;  // t·h of one sequence

}  // namespace

TEST_CASE("eager RMSNorm is eight kernels over 36 bytes per bf16 element, fused it is one over 4",
          "[workload][framework]") {
  // x.float() 2+4, pow 4+4, mean 4, x·rsqrt 4+4, type_as 4+2, ·gain 2+2 = 36 B per element.
  const auto eager = layer_forward_ops(llama3_8b(), llama_training("eager"), 1, 1);
  CHECK(find(eager, "norm_attn").bytes == kTokenHidden * 36);
  CHECK(find(eager, "norm_attn").kernels == 8);
  for (const char* mode : {"compile", "fused"}) {
    const auto ops = layer_forward_ops(llama3_8b(), llama_training(mode), 1, 1);
    CHECK(find(ops, "norm_attn").bytes == kTokenHidden * 4);
    CHECK(find(ops, "norm_attn").kernels == 1);
  }
  // Backward doubles both.
  const auto back = layer_backward_ops(llama3_8b(), llama_training("eager"), 1, 1);
  CHECK(find(back, "norm_attn_bwd").kernels == 16);
}

TEST_CASE("eager SwiGLU and rotary move more bytes than their fused kernels", "[workload][framework]") {
  const auto eager = layer_forward_ops(llama3_8b(), llama_training("eager"), 1, 1);
  const auto fused = layer_forward_ops(llama3_8b(), llama_training("compile"), 1, 1);
  // silu(gate) (2+2) then ·up (2+2+2): 10 B per element of the 14,336-wide FFN vs 6 B fused.
  CHECK(find(eager, "mlp_act").bytes == 8192.0 * 14336 * 10);
  CHECK(find(fused, "mlp_act").bytes == 8192.0 * 14336 * 6);
  // q and k (32 + 8 heads of 128): float copy 2+4, complex multiply 4+4, type_as 4+2 = 20 B.
  CHECK(find(eager, "rotary").bytes == 8192.0 * 40 * 128 * 20);
  CHECK(find(fused, "rotary").bytes == 8192.0 * 40 * 128 * 4);
}

TEST_CASE("eager cross-entropy upcasts the logits to fp32", "[workload][framework]") {
  // Forward: float copy (2 + 4), log-softmax (4 + 4) = 14 B per logit; backward: NLL gradient
  // written (4), log-softmax backward (4 + 4 + 4), copy back (4 + 2) = 22 B.
  const double logits = 8192.0 * 128256;
  CHECK(find(head_forward_ops(llama3_8b(), llama_training("eager"), 1, 1), "cross_entropy").bytes == logits * 14);
  CHECK(find(head_backward_ops(llama3_8b(), llama_training("eager"), 1, 1), "cross_entropy_bwd").bytes ==
        logits * 22);
  CHECK(find(head_forward_ops(llama3_8b(), llama_training("fused"), 1, 1), "cross_entropy").bytes == logits * 6);
  // torch.compile as torchtitan applies it (per transformer block) leaves the loss eager.
  CHECK(find(head_forward_ops(llama3_8b(), llama_training("compile"), 1, 1), "cross_entropy").bytes ==
        logits * 14);
}

TEST_CASE("a compiled loss reads the logits twice and writes their gradient once", "[workload][framework]") {
  // torchtitan since April 2025 compiles F.cross_entropy(logits.float()) (training.compile_loss):
  // forward, a maximum pass and a sum-of-exponentials pass over the bf16 logits (2 × 2 B per
  // logit, nothing written per logit); backward, one kernel that reads them and writes the bf16
  // gradient (2 + 2 B): 4 B each way against the eager 14 and 22.
  config::TrainingSpec t = llama_training("compile");
  t.compile_loss = true;
  const double logits = 8192.0 * 128256;
  const Op forward = find(head_forward_ops(llama3_8b(), t, 1, 1), "cross_entropy");
  const Op backward = find(head_backward_ops(llama3_8b(), t, 1, 1), "cross_entropy_bwd");
  CHECK(forward.bytes == logits * 4);
  CHECK(forward.kernels == 2);
  CHECK(backward.bytes == logits * 4);
  CHECK(backward.kernels == 1);
}

TEST_CASE("the fp8 recipe runs linear layers in fp8 and times their casts — attention stays bf16",
          "[workload][precision]") {
  const auto ops = layer_forward_ops(llama3_8b(), llama_training("compile", "fp8"), 1, 1);
  const Op& qkv = find(ops, "qkv");
  CHECK(qkv.dtype == "fp8");
  // fp8 operands (1 B) and a bf16 output: (t·h + h·n)·1 + t·n·2 with n = 6,144.
  CHECK(qkv.bytes == (8192.0 * 4096 + 4096.0 * 6144) + 8192.0 * 6144 * 2);
  CHECK(find(ops, "attn_core").dtype == "bf16");
  // The cast of input and weight: amax (read 2) and cast (read 2, write 1) = 5 B per element.
  CHECK(find(ops, "qkv_cast").bytes == (8192.0 * 4096 + 4096.0 * 6144) * 5);
  CHECK(find(ops, "mlp_down").dtype == "fp8");
  CHECK(find(head_forward_ops(llama3_8b(), llama_training("compile", "fp8"), 1, 1), "lm_head").dtype == "bf16");
  const auto back = layer_backward_ops(llama3_8b(), llama_training("compile", "fp8"), 1, 1);
  CHECK(find(back, "qkv_dgrad").dtype == "fp8");
  CHECK(find(back, "qkv_wgrad").dtype == "fp8");
  // Both frameworks accumulate the forward GEMM fast and the backward ones in the split
  // accumulator (torchao Float8LinearConfig: gemm_config_output use_fast_accum=True,
  // gemm_config_grad_input / gemm_config_grad_weight the default False; Transformer Engine:
  // _2X_ACC_FPROP False, _2X_ACC_DGRAD and _2X_ACC_WGRAD True).
  CHECK_FALSE(qkv.fp8_split_accumulator);
  CHECK(find(back, "qkv_dgrad").fp8_split_accumulator);
  CHECK(find(back, "mlp_down_wgrad").fp8_split_accumulator);
  CHECK_FALSE(find(layer_backward_ops(llama3_8b(), llama_training("compile"), 1, 1), "qkv_dgrad").fp8_split_accumulator);
  CHECK(has(back, "qkv_bwd_cast"));
  CHECK_FALSE(has(back, "qkv_cast_bwd"));
  // Activations stay bf16: the norm moves 2 B per element each way.
  CHECK(find(ops, "norm_attn").bytes == kTokenHidden * 4);
  // An fp8 linear at the fp8 peak against its bf16 self on the same device.
  const Op& up = find(ops, "mlp_up");
  const auto bf16_ops = layer_forward_ops(llama3_8b(), llama_training("compile"), 1, 1);
  const double ratio = op_time(find(bf16_ops, "mlp_up"), h100_sxm(), "bf16").seconds() /
                       op_time(up, h100_sxm(), "bf16").seconds();
  CHECK(ratio == Approx(1978.9 / 989.4).epsilon(1e-6));
}

TEST_CASE("torchtitan's op policy recomputes wk, wo, w3 and the element-wise ops, not attention",
          "[workload][recompute]") {
  const auto ops = layer_recompute_ops(llama3_8b(), llama_training("compile", "bf16", "op"), 1, 1);
  CHECK_FALSE(has(ops, "recompute_attn_core"));
  // wk only: n = 8 kv heads · 128 = 1,024 of the fused 6,144-wide QKV.
  CHECK(find(ops, "recompute_qkv").n == 1024);
  CHECK(find(ops, "recompute_attn_out").n == 4096);
  // w3 only: half of the fused 2 × 14,336 gate-and-up GEMM.
  CHECK(find(ops, "recompute_mlp_up").n == 14336);
  CHECK_FALSE(has(ops, "recompute_mlp_down"));
  for (const char* name : {"recompute_norm_attn", "recompute_rotary", "recompute_mlp_act", "recompute_norm_mlp"})
    CHECK(has(ops, name));
}

TEST_CASE("PyTorch's full recompute stops at the down projection's input — Megatron's reruns the whole layer",
          "[workload][recompute]") {
  // Llama 3 8B at TP 2, one 8,192-token sequence. The forward's last saved tensor is w2's input
  // (aten mm saves its inputs before it runs), so torch.compile's partitioner and
  // torch.utils.checkpoint's early stop rebuild nothing after it: the recompute is the forward
  // less w2 (2·t·h·(f/tp) = 2 × 8192 × 4096 × 7168 FLOP), its TP reduction and the residual add.
  const double w2_flops = 2.0 * 8192 * 4096 * (14336 / 2);
  auto total_flops = [](const std::vector<Op>& ops) {
    double f = 0;
    for (const Op& op : ops) f += op.flops;
    return f;
  };
  const auto fused = layer_recompute_ops(llama3_8b(), llama_training("fused", "bf16", "full"), 1, 2);
  CHECK(has(fused, "recompute_mlp_down"));
  CHECK(has(fused, "recompute_residual_mlp"));
  CHECK(find(fused, "recompute_mlp_down").role == OpRole::tp_row_parallel);
  for (const char* mode : {"eager", "compile"}) {
    INFO(mode);
    const auto training = llama_training(mode, "bf16", "full");
    const auto ops = layer_recompute_ops(llama3_8b(), training, 1, 2);
    const auto forward = steady_microbatch(layer_forward_ops(llama3_8b(), training, 1, 2));
    CHECK_FALSE(has(ops, "recompute_mlp_down"));
    CHECK_FALSE(has(ops, "recompute_residual_mlp"));
    CHECK(ops.back().name == "recompute_mlp_act");  // w2's input, the last tensor saved
    CHECK(ops.size() + 2 == forward.size());
    const double residual_flops = find(forward, "residual_mlp").flops;
    CHECK(total_flops(ops) == Approx(total_flops(forward) - w2_flops - residual_flops).epsilon(1e-12));
  }
  // torchao's Float8 matmul packs its saved tensors after its forward ran: in eager the fp8
  // GEMM runs and nothing reduces its output; compiled, the partitioner drops it (its fp8 input,
  // which the backward reads, is still cast).
  const auto eager_fp8 = layer_recompute_ops(llama3_8b(), llama_training("eager", "fp8", "full"), 1, 2);
  CHECK(find(eager_fp8, "recompute_mlp_down").role == OpRole::plain);
  CHECK(eager_fp8.back().name == "recompute_mlp_down");
  const auto compiled_fp8 = layer_recompute_ops(llama3_8b(), llama_training("compile", "fp8", "full"), 1, 2);
  CHECK_FALSE(has(compiled_fp8, "recompute_mlp_down"));
  CHECK(compiled_fp8.back().name == "recompute_mlp_down_cast");
  // With sequence parallelism the forward's gather of the layer input is the tail of the
  // previous layer's last reduction, which the recompute does not run: it gathers the
  // attention norm's output itself (a marker after the norm, no kernel). The MLP's gather still
  // follows attn_out's reduction. Megatron's recompute has the previous layer's pattern.
  const auto sp = layer_recompute_ops(llama3_8b(), llama_training("compile", "bf16", "full"), 1, 2, 0, 1, true);
  const auto gather = std::find_if(sp.begin(), sp.end(), [](const Op& op) { return op.name == "recompute_norm_attn_gather"; });
  REQUIRE(gather != sp.end());
  CHECK(gather->role == OpRole::tp_sequence_gather);
  CHECK((gather->kernels == 0 && gather->bytes == 0 && gather->flops == 0));
  CHECK((gather - 1)->name == "recompute_norm_attn");
  CHECK_FALSE(has(sp, "recompute_norm_mlp_gather"));
  CHECK(find(sp, "recompute_attn_out").role == OpRole::tp_row_parallel);
  const auto fused_sp = layer_recompute_ops(llama3_8b(), llama_training("fused", "bf16", "full"), 1, 2, 0, 1, true);
  CHECK_FALSE(has(fused_sp, "recompute_norm_attn_gather"));
}

TEST_CASE("torchtitan's op policy under sequence-parallel TP keeps wo's reduce-scattered output",
          "[workload][recompute][tp]") {
  // _save_list holds _c10d_functional.reduce_scatter_tensor: nothing the backward reads needs
  // wo's output, so compiled the partitioner drops wo from the recompute; eager reruns the GEMM
  // and takes the reduction from the cache. Both gather the two norm outputs (all-gathers are
  // never saved, and wq, wv, w1 read their gathered inputs for their weight gradients), and
  // neither reruns anything after w2's input.
  for (const char* mode : {"eager", "compile"}) {
    INFO(mode);
    const auto ops = layer_recompute_ops(llama3_8b(), llama_training(mode, "bf16", "op"), 1, 2, 0, 1, true);
    CHECK(has(ops, "recompute_norm_attn_gather"));
    CHECK(has(ops, "recompute_norm_mlp_gather"));
    CHECK_FALSE(has(ops, "recompute_residual_mlp"));
    CHECK(ops.back().name == "recompute_mlp_act");
    CHECK(find(ops, "recompute_mlp_up").n == 14336 / 2);  // w3 only
  }
  const auto eager = layer_recompute_ops(llama3_8b(), llama_training("eager", "bf16", "op"), 1, 2, 0, 1, true);
  CHECK(find(eager, "recompute_attn_out").role == OpRole::plain);
  const auto compiled = layer_recompute_ops(llama3_8b(), llama_training("compile", "bf16", "op"), 1, 2, 0, 1, true);
  CHECK_FALSE(has(compiled, "recompute_attn_out"));
  // Without TP wo's output is the residual stream the MLP's norm reads: recomputed.
  const auto single = layer_recompute_ops(llama3_8b(), llama_training("compile", "bf16", "op"), 1, 1);
  CHECK(find(single, "recompute_attn_out").role == OpRole::tp_row_parallel);
  CHECK_FALSE(has(single, "recompute_norm_attn_gather"));
}

TEST_CASE("compiled, torchtitan's op policy does not keep w2's output — eager's checkpoint cache does",
          "[workload][memory][recompute]") {
  // Llama 3 8B, one 8,192-token sequence, bf16. Kept per token under the op policy: the layer
  // input h, wq's q = 4,096, wv's 1,024, w1's 14,336, the attention output 4,096, fp32
  // log-sum-exp 4 B × 32 heads, and eager also w2's h = 4,096.
  config::ParallelSpec p;
  const double t = 8192;
  const double compiled_per_token = 2.0 * (4096 + 4096 + 1024 + 14336 + 4096) + 4.0 * 32;
  const double eager_per_token = compiled_per_token + 2.0 * 4096;
  CHECK(activation_bytes_per_layer(llama3_8b(), llama_training("compile", "bf16", "op"), p, 1) == t * compiled_per_token);
  CHECK(activation_bytes_per_layer(llama3_8b(), llama_training("eager", "bf16", "op"), p, 1) == t * eager_per_token);
  // TP 8 with sequence parallelism: the widths ÷8, the input h/8, w2's partial sums whole (h),
  // and the reduce-scatter outputs h/8 each: wo's and w2's eager, wo's compiled.
  p.tp = 8;
  p.sequence_parallel = true;
  const double sp_compiled = 2.0 * (4096 / 8 + 4096 / 8 + 1024 / 8 + 14336 / 8 + 4096 / 8) + 4.0 * 32 / 8 + 2.0 * 4096 / 8;
  const double sp_eager = sp_compiled + 2.0 * 4096 + 2.0 * 4096 / 8;
  CHECK(activation_bytes_per_layer(llama3_8b(), llama_training("compile", "bf16", "op"), p, 1) == Approx(t * sp_compiled).epsilon(1e-12));
  CHECK(activation_bytes_per_layer(llama3_8b(), llama_training("eager", "bf16", "op"), p, 1) == Approx(t * sp_eager).epsilon(1e-12));
}

TEST_CASE("PyTorch model code expands grouped K/V to every query head before SDPA — fused code does not",
          "[workload][framework][attention]") {
  // torchtitan's Llama (9dec370 models/llama/model.py) calls repeat_kv on K and V: per tensor the
  // 8 grouped heads of 128 read (2 B) and 32 heads written: 2 x 8192 x (8 + 32) x 128 x 2 B.
  // Its backward sums the groups back: the same bytes. Megatron-style code (fused) passes the
  // grouped heads to Transformer Engine: no such op.
  const double bytes = 2.0 * 8192 * (8 + 32) * 128 * 2;
  for (const char* mode : {"eager", "compile"}) {
    INFO(mode);
    const auto forward = layer_forward_ops(llama3_8b(), llama_training(mode), 1, 1);
    CHECK(find(forward, "repeat_kv").bytes == bytes);
    const auto backward = layer_backward_ops(llama3_8b(), llama_training(mode), 1, 1);
    CHECK(find(backward, "repeat_kv_bwd").bytes == bytes);
    // The flash kernel then reads 32 K and 32 V heads: Q, K, V, O at 8192 x 32 x 128 x 2 B each,
    // plus the fp32 log-sum-exp rows (8192 x 32 x 4 B).
    CHECK(find(forward, "attn_core").bytes == 8192.0 * 32 * 128 * 2 * 4 + 8192.0 * 32 * 4);
  }
  const auto fused = layer_forward_ops(llama3_8b(), llama_training("fused"), 1, 1);
  CHECK_FALSE(has(fused, "repeat_kv"));
  CHECK(find(fused, "attn_core").bytes == 8192.0 * (32 + 8) * 256 * 2 + 8192.0 * 32 * 4);
}

TEST_CASE("Transformer Engine casts a weight to fp8 on the step's first microbatch only and caches it with its transpose",
          "[workload][precision]") {
  // Megatron-core's schedules call set_is_first_microbatch(), so that TE's modules cast the
  // weights once per step (TE Linear.forward is_first_microbatch: "caching of FP8-cast weights").
  const auto t = llama_training("fused", "fp8", "full");
  const auto ops = layer_forward_ops(llama3_8b(), t, 1, 1);
  // qkv (h = 4,096 → n = 6,144): the input alone is cast per microbatch, with the transposed
  // copy the weight gradient reads (TE module/linear.py fp8_cast_transpose_fused): under current
  // scaling (the default recipe) amax 2, then cast 2 + 1 + 1 = 6 B per element ...
  CHECK(find(ops, "qkv_cast").bytes == 8192.0 * 4096 * 6);
  // Four kernels (TE 2.x Float8CurrentScalingQuantizer::quantize_impl: zero the amax, reduce into
  // it, compute the scale, cast), the three after the first issued by TE's C++ code.
  CHECK(find(ops, "qkv_cast").kernels == 4);
  CHECK(find(ops, "qkv_cast").library_kernels == 3);
  CHECK_FALSE(find(ops, "qkv_cast").first_microbatch_only);
  // ... the weight on the first microbatch the same way: 6 B per element.
  const Op& w = find(ops, "qkv_weight_cast");
  CHECK(w.first_microbatch_only);
  CHECK(w.bytes == 4096.0 * 6144 * 6);
  // Later microbatches and the recompute run without it; the backward casts no weight (the
  // transpose is cached) and not the input (its transposed fp8 copy was kept): dY alone, amax and
  // cast-transpose, 6 B per element (t·n).
  CHECK_FALSE(has(steady_microbatch(ops), "qkv_weight_cast"));
  CHECK(steady_microbatch(ops).size() + 4 == ops.size());  // qkv, attn_out, mlp_up (gate and up in one), mlp_down
  for (const Op& op : layer_recompute_ops(llama3_8b(), t, 1, 1)) CHECK_FALSE(op.first_microbatch_only);
  const auto back = layer_backward_ops(llama3_8b(), t, 1, 1);
  CHECK(find(back, "qkv_bwd_cast").bytes == 8192.0 * 6144 * 6);
  // Delayed scaling (the amax history) has no amax pass: 4 B per element, one kernel each.
  auto delayed = t;
  delayed.fp8_recipe = "delayed";
  CHECK(find(layer_forward_ops(llama3_8b(), delayed, 1, 1), "qkv_cast").bytes == 8192.0 * 4096 * 4);
  CHECK(find(layer_forward_ops(llama3_8b(), delayed, 1, 1), "qkv_cast").kernels == 1);
  CHECK(find(layer_backward_ops(llama3_8b(), delayed, 1, 1), "qkv_bwd_cast").bytes == 8192.0 * 6144 * 4);
  // The cache: the fp8 weight and its transpose, 2 B per linear parameter; none for PyTorch
  // model code (torchao casts per use) or fp8 parameters (they are the cache).
  CHECK(fp8_weight_cache_bytes(t) == 2);
  CHECK(fp8_weight_cache_bytes(llama_training("compile", "fp8")) == 0);
  CHECK(fp8_weight_cache_bytes(llama_training("fused", "bf16")) == 0);
  auto fp8_params = t;
  fp8_params.fp8_all_gather = true;
  CHECK(fp8_weight_cache_bytes(fp8_params) == 0);
}

TEST_CASE("Megatron's fp8 parameters need no weight cast, only a transpose once per step", "[workload][precision]") {
  // fp8_param_gather (training.fp8_all_gather with framework fused): the weight is already fp8;
  // the dgrad GEMM's transposed copy (read 1, write 1 B) is made on the step's first microbatch.
  auto t = llama_training("fused", "fp8");
  t.fp8_all_gather = true;
  const auto ops = layer_forward_ops(llama3_8b(), t, 1, 1);
  CHECK(find(ops, "qkv_cast").bytes == 8192.0 * 4096 * 6);
  const Op& w = find(ops, "qkv_weight_transpose");
  CHECK(w.first_microbatch_only);
  CHECK(w.bytes == 4096.0 * 6144 * 2);
  CHECK_FALSE(has(ops, "qkv_weight_cast"));
  // torchtitan's FSDP fp8 all-gather (PyTorch model code): neither.
  auto tt = llama_training("compile", "fp8");
  tt.fp8_all_gather = true;
  const auto tt_ops = layer_forward_ops(llama3_8b(), tt, 1, 1);
  CHECK_FALSE(has(tt_ops, "qkv_weight_transpose"));
  CHECK_FALSE(has(tt_ops, "qkv_weight_cast"));
}
