// Ops of one layer and of the head, per GPU and microbatch, against hand arithmetic.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec training_8k(bool flash = true, const std::string& recompute = "none") {
  config::TrainingSpec t;
  t.sequence_length = 8192;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.activation_checkpointing = recompute;
  t.flash_attention = flash;
  return t;
}

double total_flops(const std::vector<Op>& ops, bool gemm_only) {
  double sum = 0;
  for (const Op& op : ops) {
    if (!gemm_only || op.is_gemm()) sum += op.flops;
  }
  return sum;
}

}  // namespace

TEST_CASE("Llama 3 8B layer GEMMs have the Megatron shapes and 2·m·n·k FLOPs", "[workload][ops]") {
  const auto ops = layer_forward_ops(llama3_8b(), training_8k(), 1, 1);
  const Op& qkv = find(ops, "qkv");
  // m = 1·8192 tokens; n = (32 + 2·8)·128 = 6144; k = 4096.
  CHECK(qkv.m == 8192);
  CHECK(qkv.n == 6144);
  CHECK(qkv.k == 4096);
  CHECK(qkv.flops == 2.0 * 8192 * 6144 * 4096);  // 412,316,860,416
  // bf16 bytes: (m·k + k·n + m·n)·2.
  CHECK(qkv.bytes == (8192.0 * 4096 + 4096.0 * 6144 + 8192.0 * 6144) * 2);
  CHECK(find(ops, "attn_out").flops == 2.0 * 8192 * 4096 * 4096);
  // SwiGLU gate and up fused: n = 2·14336 = 28672.
  CHECK(find(ops, "mlp_up").n == 28672);
  CHECK(find(ops, "mlp_down").k == 14336);
  // All weight GEMMs of a layer: 2 FLOPs per weight per token,
  // 2·8192·(41,943,040 + 176,160,768) = 3,573,412,790,272.
  const double weight_gemms = find(ops, "qkv").flops + find(ops, "attn_out").flops + find(ops, "mlp_up").flops +
                              find(ops, "mlp_down").flops;
  CHECK(weight_gemms == 3'573'412'790'272.0);
  CHECK(has(ops, "rotary"));
  CHECK(has(ops, "norm_attn"));
  CHECK(has(ops, "residual_mlp"));
}

TEST_CASE("flash attention counts the causal triangle as seed 003 does", "[workload][ops]") {
  const auto ops = layer_forward_ops(llama3_8b(), training_8k(), 1, 1);
  const Op& core = find(ops, "attn_core");
  // s(s+1)/2 = 33,558,528 cells × 4·128 FLOPs × 32 heads = 549,822,922,752.
  CHECK(core.flops == 33'558'528.0 * 512 * 32);
  CHECK(core.causal);
  CHECK(core.batch == 32);
  // Per token, × 3 for forward + backward, it is the seed's 6·d·(s+1) per layer:
  // 549,822,922,752 · 3 / 8192 = 6·4096·8193.
  CHECK(core.flops * 3 / 8192 == 6.0 * 4096 * 8193);
  // Bytes: read Q (32 heads), K, V (8 each), write O (32) at 128·2 B per head-token, plus
  // fp32 row statistics: 8192·128·(64 + 16)·2 + 8192·32·4 = 168,820,736 — no s² term.
  CHECK(core.bytes == 168'820'736.0);
  const auto ops_16k = [] {
    config::TrainingSpec t = training_8k();
    t.sequence_length = 16384;
    return layer_forward_ops(llama3_8b(), t, 1, 1);
  }();
  CHECK(find(ops_16k, "attn_core").bytes == 2 * core.bytes);
}

TEST_CASE("without flash attention the s² score matrix goes through HBM", "[workload][ops]") {
  const auto ops = layer_forward_ops(llama3_8b(), training_8k(false), 1, 1);
  CHECK_FALSE(has(ops, "attn_core"));
  const Op& scores = find(ops, "attn_scores");
  // The unfused path computes the full square: 2·s²·d per head, 32 heads.
  CHECK(scores.flops == 2.0 * 8192 * 8192 * 128 * 32);
  const Op& softmax = find(ops, "attn_softmax");
  // 32 heads · 8192² scores, read + written at 2 B = 8,589,934,592 B.
  CHECK(softmax.bytes == 8'589'934'592.0);
  CHECK_FALSE(softmax.is_gemm());
  CHECK(find(ops, "attn_values").flops == scores.flops);
}

TEST_CASE("tensor parallelism splits every GEMM and the heads, and keeps the total", "[workload][ops]") {
  const auto one = layer_forward_ops(llama3_8b(), training_8k(), 1, 1);
  const auto eight = layer_forward_ops(llama3_8b(), training_8k(), 1, 8);
  CHECK(find(eight, "qkv").n == 6144 / 8);         // column parallel
  CHECK(find(eight, "attn_out").k == 4096 / 8);    // row parallel
  CHECK(find(eight, "mlp_up").n == 28672 / 8);
  CHECK(find(eight, "mlp_down").k == 14336 / 8);
  CHECK(find(eight, "attn_core").batch == 4);      // 32 heads / 8
  CHECK(8 * total_flops(eight, true) == Approx(total_flops(one, true)).epsilon(1e-12));
}

TEST_CASE("backward turns each GEMM into dgrad and wgrad and flash attention into 2.5×", "[workload][ops]") {
  const auto fwd = layer_forward_ops(llama3_8b(), training_8k(), 2, 1);
  const auto bwd = layer_backward_ops(llama3_8b(), training_8k(), 2, 1);
  const Op& qkv = find(fwd, "qkv");
  const Op& dgrad = find(bwd, "qkv_dgrad");
  const Op& wgrad = find(bwd, "qkv_wgrad");
  // dX (m×k) = dY (m×n)·Wᵀ; dW (k×n) = Xᵀ (k×m)·dY.
  CHECK((dgrad.m == qkv.m && dgrad.n == qkv.k && dgrad.k == qkv.n));
  CHECK((wgrad.m == qkv.k && wgrad.n == qkv.n && wgrad.k == qkv.m));
  CHECK(dgrad.flops + wgrad.flops == 2 * qkv.flops);
  const Op& core_bwd = find(bwd, "attn_core_bwd");
  CHECK(core_bwd.flops == 2.5 * find(fwd, "attn_core").flops);
  CHECK(core_bwd.k == 5 * 128);
  CHECK(find(bwd, "norm_attn_bwd").bytes == 2 * find(fwd, "norm_attn").bytes);
  // Backward runs in reverse: the last forward op's gradient comes first.
  CHECK(bwd.front().name == "residual_mlp_bwd");
  const double gemm_fwd_no_attn = total_flops(fwd, true) - find(fwd, "attn_core").flops;
  CHECK(total_flops(bwd, true) == Approx(2 * gemm_fwd_no_attn + core_bwd.flops).epsilon(1e-12));
}

TEST_CASE("recompute follows the activation-checkpointing policy", "[workload][ops]") {
  CHECK(layer_recompute_ops(llama3_8b(), training_8k(true, "none"), 1, 1).empty());
  const auto sel = layer_recompute_ops(llama3_8b(), training_8k(true, "selective"), 1, 1);
  REQUIRE(sel.size() == 1);
  CHECK(sel[0].name == "recompute_attn_core");
  CHECK(sel[0].flops == find(layer_forward_ops(llama3_8b(), training_8k(), 1, 1), "attn_core").flops);
  const auto sel_unfused = layer_recompute_ops(llama3_8b(), training_8k(false, "selective"), 1, 1);
  CHECK(sel_unfused.size() == 3);  // scores, softmax, values (Korthikanti et al. 2022)
  const auto full = layer_recompute_ops(llama3_8b(), training_8k(true, "full"), 1, 1);
  const auto fwd = layer_forward_ops(llama3_8b(), training_8k(), 1, 1);
  CHECK(full.size() == fwd.size());
  CHECK(total_flops(full, false) == total_flops(fwd, false));
  CHECK_THROWS_WITH(layer_recompute_ops(llama3_8b(), training_8k(true, "some"), 1, 1),
                    Catch::Contains("activation_checkpointing"));
}

TEST_CASE("head ops: embedding lookup, final norm, vocab-parallel LM head, loss", "[workload][ops]") {
  const auto fwd = head_forward_ops(llama3_8b(), training_8k(), 1, 2);
  const Op& emb = find(fwd, "embedding");
  CHECK_FALSE(emb.is_gemm());
  CHECK(emb.bytes == 8192.0 * 4096 * 2 * 2);  // gather t·h, write t·h, 2 B each
  const Op& head = find(fwd, "lm_head");
  CHECK((head.m == 8192 && head.n == 128256 / 2 && head.k == 4096));
  CHECK(head.flops == 2.0 * 8192 * 64128 * 4096);
  // Loss: read bf16 logits, write fp32 probabilities: 8192·64128·(2 + 4).
  CHECK(find(fwd, "cross_entropy").bytes == 8192.0 * 64128 * 6);
  const auto bwd = head_backward_ops(llama3_8b(), training_8k(), 1, 2);
  CHECK(bwd.front().name == "cross_entropy_bwd");
  CHECK(find(bwd, "lm_head_dgrad").flops + find(bwd, "lm_head_wgrad").flops == 2 * head.flops);
  CHECK(has(bwd, "embedding_bwd"));
  // Learned positions add a second gathered row per token (GPT-2).
  config::TrainingSpec t = training_8k();
  t.sequence_length = 1024;
  CHECK(find(head_forward_ops(gpt2_124m(), t, 1, 1), "embedding").bytes == 1024.0 * 768 * 3 * 2);
  CHECK_FALSE(has(layer_forward_ops(gpt2_124m(), t, 1, 1), "rotary"));
}

TEST_CASE("forward GEMMs of a whole bias-free model do 2·N_matmul FLOPs per token", "[workload][ops]") {
  const config::ModelSpec m = llama3_8b();
  const auto layer = layer_forward_ops(m, training_8k(), 1, 1);
  const auto head = head_forward_ops(m, training_8k(), 1, 1);
  const double weight_flops =
      32 * (total_flops(layer, true) - find(layer, "attn_core").flops) + total_flops(head, true);
  CHECK(weight_flops / 8192 == 2 * count_params(m).matmul_active());
}

TEST_CASE("a mixture-of-experts layer runs a router and a grouped GEMM over the experts", "[workload][ops]") {
  config::ModelSpec m = llama3_8b();
  m.experts = 8;
  m.experts_per_token = 2;
  const auto ops = layer_forward_ops(m, training_8k(), 1, 1);
  const Op& up = find(ops, "mlp_up");
  // 8192 tokens · 2 experts each, spread over 8 experts: 2048 rows per expert GEMM.
  CHECK((up.batch == 8 && up.m == 2048));
  CHECK(up.flops == 2.0 * 8192 * 2 * 28672 * 4096);
  CHECK(find(ops, "router").n == 8);
}

TEST_CASE("the optimizer step is a memory-bound update with bytes per parameter by optimizer", "[workload][ops]") {
  config::TrainingSpec t = training_8k();
  // Adam, bf16: fp32 master r+w 8, m r+w 8, v r+w 8, bf16 grad read 2, bf16 weight write 2 = 28,
  // plus gradient-norm clipping (norm: read 2; clip: read + write 4) = 34.
  const Op adam = optimizer_op(t, 1e9);
  CHECK_FALSE(adam.is_gemm());
  CHECK(adam.bytes == 34e9);
  t.optimizer = "sgd";  // master r+w 8 + grad 2 + weight 2 + clipping 6
  CHECK(optimizer_op(t, 1e9).bytes == 18e9);
  t.optimizer = "momentum";  // + velocity r+w 8
  CHECK(optimizer_op(t, 1e9).bytes == 26e9);
  t.optimizer = "adam";
  t.precision = "fp16";  // + the loss-scale pass: inf/nan check (read 2) and unscale (read + write 4)
  CHECK(optimizer_op(t, 1e9).bytes == 40e9);
  t.precision = "fp32";  // weights are the master: r+w 8, m 8, v 8, grad 4, clipping 12
  CHECK(optimizer_op(t, 1e9).bytes == 40e9);
  t.optimizer = "lamb";
  CHECK_THROWS_WITH(optimizer_op(t, 1e9), Catch::Contains("lamb"));
}

TEST_CASE("PyTorch's unfused Adam moves the bytes of its kernel sequence", "[workload][ops][optimizer]") {
  config::TrainingSpec t = training_8k();
  t.framework = "eager";  // torch.optim: foreach by default
  // _multi_tensor_adamw over fp32 tensors: weight decay mul_ (r+w 8), lerp_ of exp_avg (r m, r g,
  // w m: 12), mul_ of exp_avg_sq (8), addcmul_ (12), sqrt into new tensors (8), div_ (8), add_ eps
  // (8), addcdiv_ of the weights (r p, m, root; w p: 16) = 80, plus clipping 6 (bf16 gradients).
  CHECK(workload::optimizer_impl(t) == "foreach");
  CHECK(optimizer_op(t, 1e9).bytes == 86e9);
  CHECK(optimizer_op(t, 1e9).kernels == 8);
  // Composer's DecoupledAdamW.adamw: mul_ 8, mul_ + add_ 8 + 12, mul_ + addcmul_ 8 + 12, sqrt 8,
  // division 8, add_ 8, addcdiv_ 16 = 88, in nine kernels per tensor.
  t.optimizer_impl = "for_loop";
  CHECK(optimizer_op(t, 1e9).bytes == 94e9);
  CHECK(optimizer_op(t, 1e9).kernels == 9);
  t.optimizer_impl = "fused";  // one pass, as the fused frameworks' kernels
  CHECK(optimizer_op(t, 1e9).bytes == 34e9);
  CHECK(optimizer_op(t, 1e9).kernels == 1);
  t.framework = "fused";  // Megatron-style code: a fused Adam whatever the key says
  t.optimizer_impl = "";
  CHECK(workload::optimizer_impl(t) == "fused");
}
