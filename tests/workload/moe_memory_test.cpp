// What a mixture-of-experts layer keeps for backward (activation_bytes_per_layer), counted by
// hand from the tensors Megatron-core's MoE block and Transformer Engine's grouped GEMMs and
// fused permutation save: the router's fp32 softmax and top-k indices and gates, and per routed
// token copy the first grouped GEMM's input, the activation's input, the second GEMM's input and
// the combined rows the unpermute keeps for the gates' gradients.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

// Mixtral 8x7B's layer shape (models/mixtral-8x7b.yaml): Llama 3 8B's attention and widths
// (hidden 4,096, 32 heads, 8 K/V heads of 128), 8 experts of FFN 14,336, top-2.
config::ModelSpec mixtral_like() {
  config::ModelSpec m = llama3_8b();
  m.name = "mixtral-like";
  m.experts = 8;
  m.experts_per_token = 2;
  return m;
}

config::TrainingSpec megatron_bf16(int sequence_length) {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.framework = "fused";
  t.flash_attention = true;
  t.activation_checkpointing = "none";
  t.sequence_length = sequence_length;
  return t;
}

}  // namespace

TEST_CASE("a MoE layer keeps its router's softmax and k copies of each token's expert tensors", "[workload][memory][moe]") {
  // One 4,096-token sequence, TP 1, bf16, per token: the norms' inputs and outputs
  // 2·(8,192 + 8,192) = 32,768; Q, K, V, O (4,096 + 1,024 + 1,024 + 4,096)·2 = 20,480 and the
  // log-sum-exp 4·32 = 128 (as the dense Llama layer, memory_test.cpp); the MoE block: per copy
  // the grouped GEMM input 4,096·2 = 8,192, the SwiGLU input (gate and up) 2·14,336·2 = 57,344,
  // the second GEMM's input 14,336·2 = 28,672 and the combined row 8,192: 102,400, × k = 2 →
  // 204,800; the router's fp32 softmax 4·8 = 32 and the top-2 indices (8 B) and gates (4 B), 24.
  // Sum 32,768 + 20,608 + 204,800 + 56 = 258,232 B, where a dense layer of one expert's width
  // keeps 139,392 (its SwiGLU 3·14,336·2 = 86,016 in place of the MoE block's 204,856).
  const config::TrainingSpec t = megatron_bf16(4096);
  config::ParallelSpec p;
  CHECK(activation_bytes_per_layer(mixtral_like(), t, p, 1) == 4096.0 * 258'232);
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 4096.0 * 139'392);
  // Two sequences per microbatch: twice the tokens.
  CHECK(activation_bytes_per_layer(mixtral_like(), t, p, 2) == 2.0 * 4096.0 * 258'232);
}

TEST_CASE("expert TP splits each expert's width, and folding gives each TP rank its own tokens and whole experts",
          "[workload][memory][moe]") {
  // TP 2 with sequence parallelism, bf16. Replicated terms halved: (16,384 + 16,384) / 2 =
  // 16,384; attention per rank: Q, K, V, O (2,048 + 512 + 512 + 2,048)·2 = 10,240, log-sum-exp
  // 4·16 = 64; the router on the rank's sequence-parallel half: 56 / 2 = 28.
  const config::TrainingSpec t = megatron_bf16(4096);
  config::ParallelSpec p;
  p.tp = 2;
  p.sequence_parallel = true;
  // Expert TP = TP (the default): every token on each TP rank, each expert 7,168 wide there:
  // per copy 8,192 + 2·7,168·2 + 7,168·2 + 8,192 = 59,392, × 2 = 118,784.
  // 16,384 + 10,304 + 118,784 + 28 = 145,500.
  CHECK(activation_bytes_per_layer(mixtral_like(), t, p, 1) == 4096.0 * 145'500);
  // Folded (expert_tp 1): each TP rank routes its own 2,048 tokens to whole experts: half of
  // the TP-1 block's 204,800 per sequence token, 102,400. 16,384 + 10,304 + 102,400 + 28 =
  // 129,116.
  p.expert_tp = 1;
  CHECK(activation_bytes_per_layer(mixtral_like(), t, p, 1) == 4096.0 * 129'116);
}

TEST_CASE("under Transformer Engine's fp8 the expert GEMMs keep fp8 inputs, the router its bf16 input",
          "[workload][memory][moe]") {
  // TP 1, fp8 (Megatron-style code): the attention's norm output is kept as the QKV GEMM's fp8
  // copy (−4,096), the MLP norm's output stays bf16 as the router's input; the attention output
  // gains the output projection's fp8 copy (+4,096). Per copy: 4,096 (fp8 input) + 57,344 +
  // 14,336 (fp8) + 8,192 = 83,968, × 2 = 167,936. 32,768 − 4,096 + 20,608 + 4,096 + 167,936 +
  // 56 = 221,368.
  config::TrainingSpec t = megatron_bf16(4096);
  t.precision = "fp8";
  config::ParallelSpec p;
  CHECK(activation_bytes_per_layer(mixtral_like(), t, p, 1) == 4096.0 * 221'368);
}

TEST_CASE("a MoE model's dense and MoE layers count as their mean, shared experts as a dense MLP", "[workload][memory][moe]") {
  // Half the 32 layers dense (FFN 14,336: 139,392 per token), half MoE (258,232): 198,812.
  const config::TrainingSpec t = megatron_bf16(4096);
  config::ParallelSpec p;
  config::ModelSpec m = mixtral_like();
  m.dense_layers = 16;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 4096.0 * 198'812);
  // A shared expert of the routed width keeps what a dense SwiGLU MLP keeps, 86,016: 258,232 +
  // 86,016 = 344,248 with every layer MoE.
  m.dense_layers = 0;
  m.shared_experts = 1;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 4096.0 * 344'248);
  // Full recompute keeps only the layer input, MoE or not.
  config::TrainingSpec full = t;
  full.activation_checkpointing = "full";
  CHECK(activation_bytes_per_layer(m, full, p, 1) == 4096.0 * 8'192);
}

TEST_CASE("a MoE layer's backward holds the gradients of each token's k copies", "[workload][memory][moe]") {
  // Mixtral-like, TP 1, bf16, per token in elements: the layer's output gradient h = 4,096
  // beside the larger block peak. Dense SwiGLU of width 14,336: max(h + f, 3f, 2f + h, f + 2h)
  // = 3f = 43,008 (Llama 3 8B: (4,096 + 43,008)·2 = 94,208 B). The MoE block: the block's
  // output gradient h beside k = 2 copies' SwiGLU peak, 4,096 + 2·43,008 = 90,112; attention
  // max(8,192, 10,240, 14,336) is smaller. (4,096 + 90,112)·2 = 188,416 B per token.
  const config::TrainingSpec t = megatron_bf16(4096);
  config::ParallelSpec p;
  CHECK(backward_gradient_bytes(llama3_8b(), t, p, 1) == 4096.0 * 94'208);
  CHECK(backward_gradient_bytes(mixtral_like(), t, p, 1) == 4096.0 * 188'416);
  // Folded over TP 2 with sequence parallelism: the output gradient h/2 = 2,048 beside the
  // rank's own half of the copies, 4,096 + 43,008 = 47,104: (2,048 + 47,104)·2 = 98,304 B.
  p.tp = 2;
  p.sequence_parallel = true;
  p.expert_tp = 1;
  CHECK(backward_gradient_bytes(mixtral_like(), t, p, 1) == 4096.0 * 98'304);
}
