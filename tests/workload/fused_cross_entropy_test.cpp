// flash-attn's fused cross-entropy (training.fused_cross_entropy, MosaicML llm-foundry's default
// loss): one forward and one backward kernel over the logits in the training precision, the
// logits and their gradient alive at the loss's peak, no fp32 copy. Against hand counts.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec eager_bf16(bool fused) {
  config::TrainingSpec t = bf16_adam_1k("eager");
  t.fused_cross_entropy = fused;
  return t;
}

}  // namespace

TEST_CASE("the fused cross-entropy keeps the bf16 logits and their gradient, no fp32 copy",
          "[workload][memory][loss]") {
  config::ParallelSpec p;
  // Eager F.cross_entropy(logits.float()): max(bpe + 8, 12) = 12 B per logit; fused: 2 × 2 = 4 B.
  CHECK(loss_bytes_per_logit(eager_bf16(false), p) == 12.0);
  CHECK(loss_bytes_per_logit(eager_bf16(true), p) == 4.0);
}

TEST_CASE("the fused cross-entropy is one kernel each way reading the logits in bf16", "[workload][ops][loss]") {
  // GPT-2 small: 2 sequences × 1,024 tokens × 50,257 logits = 102,926,336 logits.
  const double logits = 2.0 * 1024 * 50257;
  const auto fwd = head_forward_ops(gpt2_124m(), eager_bf16(true), 2, 1, false);
  const Op& ce = find(fwd, "cross_entropy");
  CHECK(ce.kernels == 1);
  CHECK(ce.bytes == logits * 2 * 2.0);  // the maximum pass and the sum-of-exponentials pass, 2 B each
  const auto bwd = head_backward_ops(gpt2_124m(), eager_bf16(true), 2, 1, false);
  const Op& ce_bwd = find(bwd, "cross_entropy_bwd");
  CHECK(ce_bwd.kernels == 1);
  CHECK(ce_bwd.bytes == logits * 2 * 2.0);  // read the logits, write their gradient
  // Eager, for contrast: three kernels each way and the fp32 copy.
  CHECK(find(head_forward_ops(gpt2_124m(), eager_bf16(false), 2, 1, false), "cross_entropy").kernels == 3);
}

TEST_CASE("the fused cross-entropy is refused where it is not simulated", "[config][loss]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(scenario, {"training.framework=eager", "training.fused_cross_entropy=true"}));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=fused", "training.fused_cross_entropy=true"}),
                    Catch::Contains("training.fused_cross_entropy"));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=compile", "training.compile_loss=true",
                                                     "training.fused_cross_entropy=true"}),
                    Catch::Contains("compile_loss"));
}
