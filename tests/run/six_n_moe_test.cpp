// MFU (6N only) and the 6ND baseline count N as the parameters a token passes through
// (report/metrics.hpp): every parameter of a dense model, the activated ones of a mixture of
// experts. With all of a MoE model's parameters the count claims more than the hardware can do
// (seed 000: DeepSeek-V3's 6 x 14.8T x 671B over its H800-hours is 205 %).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

run::SimulationResult flops_of(std::vector<std::string> overrides) {
  overrides.push_back("parallel.pp=1");
  return run::simulate_memory(config::load_scenario(kPipeline, overrides));
}

}  // namespace

TEST_CASE("6N counts a mixture of experts' activated parameters, a dense model's all", "[run][metrics][moe]") {
  // tiny-moe, hand count (hidden 1,024, 4 layers of 8 heads, vocabulary 1,024, untied head):
  //   embedding and LM head          2 · 1,024 · 1,024            =  2,097,152
  //   attention Q, K, V, O            4 layers · 4 · 1,024²        = 16,777,216
  //   dense layer SwiGLU              3 · 1,024 · 4,096            = 12,582,912
  //   3 MoE layers, per token 2 routed + 1 shared expert of width 512 and the router (1,024 · 8):
  //                                   3 · (3 · 3 · 1,024 · 512 + 8,192) = 14,180,352
  //   RMSNorm gains                   (2 · 4 + 1) · 1,024          =      9,216
  //   activated                                                      45,646,848
  // Its 8 experts per MoE layer hold 3 · 8 · 3 · 1,024 · 512 = 37,748,736 weights, of which a
  // token passes through 2 per layer: 28,311,552 more than the activated count if all counted.
  const auto moe = flops_of({"model=tiny-moe.yaml", "parallel.dp=4", "parallel.ep=4"});
  REQUIRE(moe.tokens_per_step > 0);
  CHECK(moe.model_flops_6n_per_step / moe.tokens_per_step == Approx(6.0 * 45646848).epsilon(1e-12));

  // A dense model: every parameter. The pipeline fixture's uniform model (8 layers of hidden
  // 4,096, 32 heads, GELU FFN 16,384, RMSNorm, no biases, RoPE, vocabulary 8, untied head):
  //   attention 8 · 4 · 4,096² = 536,870,912; FFN 8 · 2 · 4,096 · 16,384 = 1,073,741,824;
  //   embedding and head 2 · 8 · 4,096 = 65,536; norm gains 17 · 4,096 = 69,632.
  const auto dense = flops_of({"parallel.dp=4"});
  CHECK(dense.model_flops_6n_per_step / dense.tokens_per_step == Approx(6.0 * 1610747904).epsilon(1e-12));
}
