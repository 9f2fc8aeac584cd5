// ALiBi (Press et al. 2022, "Train Short, Test Long"; BLOOM, MPT): a per-head linear bias on
// the attention scores instead of a position table or rotary embedding. No parameters; under
// unfused attention as Megatron-DeepSpeed writes it (the scores are baddbmm(alibi, q, kᵀ,
// beta = 1)), ATen's baddbmm copies the broadcast bias into its result and the GEMM reads it
// back: one more write and read of the s × s scores; fused kernels compute it in place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec gpt2_alibi() {
  config::ModelSpec m = gpt2_124m();
  m.position_embedding = "alibi";
  m.max_position = 0;
  return m;
}

config::TrainingSpec fp16_1k(bool flash) {
  config::TrainingSpec t;
  t.sequence_length = 1024;
  t.precision = "fp16";
  t.optimizer = "adam";
  t.activation_checkpointing = "none";
  t.flash_attention = flash;
  return t;
}

}  // namespace

TEST_CASE("ALiBi has no position parameters", "[workload][params][alibi]") {
  // GPT-2 small's learned table is 1,024 × 768 = 786,432 parameters; ALiBi has none.
  const config::ModelSpec learned = gpt2_124m();
  REQUIRE(learned.position_embedding == "learned");
  CHECK(count_params(learned).position == 1024.0 * 768);
  CHECK(count_params(gpt2_alibi()).position == 0);
  CHECK(count_params(gpt2_alibi()).total() == count_params(learned).total() - 1024.0 * 768);
}

TEST_CASE("unfused ALiBi writes and reads the s² scores once more — fused kernels add nothing",
          "[workload][ops][alibi]") {
  const auto ops = layer_forward_ops(gpt2_alibi(), fp16_1k(false), 2, 1);
  // 2 sequences · 12 heads · 1,024² = 25,165,824 scores, written and read at 2 B: 100,663,296 B,
  // right before the score GEMM.
  const Op& bias = find(ops, "alibi_bias");
  CHECK(bias.bytes == 100'663'296.0);
  CHECK_FALSE(bias.is_gemm());
  const auto at = [&](const std::string& n) {
    return std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == n; }) - ops.begin();
  };
  CHECK(at("attn_scores") == at("alibi_bias") + 1);
  // TP 2: six local heads, half the scores.
  CHECK(find(layer_forward_ops(gpt2_alibi(), fp16_1k(false), 2, 2), "alibi_bias").bytes == 50'331'648.0);
  // Nothing rotates (no RoPE) and the embedding adds no position table.
  CHECK_FALSE(has(ops, "rotary"));
  // Flash attention: the bias is computed inside the kernel, the ops equal a plain fused core's.
  config::ModelSpec rope = gpt2_alibi();
  rope.position_embedding = "rope";
  const auto fused = layer_forward_ops(gpt2_alibi(), fp16_1k(true), 2, 1);
  CHECK_FALSE(has(fused, "alibi_bias"));
  CHECK(find(fused, "attn_core").bytes == find(layer_forward_ops(rope, fp16_1k(true), 2, 1), "attn_core").bytes);
  // The backward has no bias gradient.
  const auto bwd = layer_backward_ops(gpt2_alibi(), fp16_1k(false), 2, 1);
  CHECK_FALSE(has(bwd, "alibi_bias"));
}

TEST_CASE("a model card may name alibi", "[config][alibi]") {
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml",
                                       {"model.position_embedding=alibi"});
  CHECK(s.model.position_embedding == "alibi");
  CHECK_THROWS(config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml",
                                     {"model.position_embedding=sinusoidal"}));
}
