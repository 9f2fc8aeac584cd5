// training.cross_entropy_loss_fusion false: Megatron's unfused vocab_parallel_cross_entropy
// (megatron/core/tensor_parallel/cross_entropy.py at core_v0.8.0, Megatron-core's default;
// mpu/cross_entropy.py in Megatron-LM since 2020). Hand counts of its passes over the logits of
// one microbatch: GPT-2 small's vocabulary (50,257) on 2 sequences of 1,024 tokens, bf16.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec unfused_megatron_loss() {
  config::TrainingSpec t = bf16_adam_1k("fused");
  t.cross_entropy_loss_fusion = false;
  return t;
}

}  // namespace

TEST_CASE("Megatron's unfused cross-entropy makes six passes over the logits forward and two backward",
          "[workload][loss]") {
  // N = 2,048 tokens × 50,257 logits. Forward: the fp32 copy (read 2, write 4), the maximum
  // (read 4), the in-place shift (4 + 4), exp into itself (4 + 4), the sum (4), the in-place
  // division (4 + 4): 38 B per logit. Backward: the in-place scale (4 + 4) and the cast of the
  // gradient to bf16 (read 4, write 2): 14 B per logit.
  const double logits = 2048.0 * 50257;
  const auto forward = head_forward_ops(gpt2_124m(), unfused_megatron_loss(), 2, 1);
  CHECK(find(forward, "cross_entropy").bytes == logits * 38);
  CHECK(find(forward, "cross_entropy").kernels == 18);
  const auto backward = head_backward_ops(gpt2_124m(), unfused_megatron_loss(), 2, 1);
  CHECK(find(backward, "cross_entropy_bwd").bytes == logits * 14);
  CHECK(find(backward, "cross_entropy_bwd").kernels == 8);
  // The fused pass (the default) reads the bf16 logits and writes the fp32 softmax: 6 B per
  // logit each way; the unfused loss moves 52 against 12 B per logit over forward and backward.
  const auto fused_forward = head_forward_ops(gpt2_124m(), bf16_adam_1k("fused"), 2, 1);
  const auto fused_backward = head_backward_ops(gpt2_124m(), bf16_adam_1k("fused"), 2, 1);
  CHECK(find(fused_forward, "cross_entropy").bytes == logits * 6);
  CHECK(find(fused_backward, "cross_entropy_bwd").bytes == logits * 6);
  // Vocabulary-parallel: under TP 2 each rank works on its half of the vocabulary.
  const auto tp2 = head_forward_ops(gpt2_124m(), unfused_megatron_loss(), 2, 2);
  CHECK(find(tp2, "cross_entropy").bytes == Approx(2048.0 * 50257 / 2 * 38));
  // fp32 training: .float() returns the logits themselves, so no copy forward (32 B in five
  // passes) and no cast backward (8 B).
  config::TrainingSpec fp32 = unfused_megatron_loss();
  fp32.precision = "fp32";
  CHECK(find(head_forward_ops(gpt2_124m(), fp32, 2, 1), "cross_entropy").bytes == logits * 32);
  CHECK(find(head_forward_ops(gpt2_124m(), fp32, 2, 1), "cross_entropy").kernels == 17);
  CHECK(find(head_backward_ops(gpt2_124m(), fp32, 2, 1), "cross_entropy_bwd").bytes == logits * 8);
}

TEST_CASE("Megatron's unfused cross-entropy keeps the logits beside their fp32 copy", "[workload][loss][memory]") {
  // Forward: the bf16 logits its caller still holds (2 B) beside the fp32 copy worked in place
  // (4 B); backward: the kept fp32 softmax beside the bf16 gradient: 6 B per logit against the
  // fused pass's 4 (the fp32 softmax alone).
  config::ParallelSpec p;
  CHECK(loss_bytes_per_logit(unfused_megatron_loss(), p) == 6.0);
  config::TrainingSpec fp32 = unfused_megatron_loss();
  fp32.precision = "fp32";
  CHECK(loss_bytes_per_logit(fp32, p) == 4.0);  // the logits are the tensor worked in place
  CHECK(loss_bytes_per_logit(bf16_adam_1k("fused"), p) == 4.0);
}

TEST_CASE("the unfused Megatron loss is refused outside Megatron-style code", "[config][loss]") {
  // PyTorch model code has its own losses (F.cross_entropy, compile_loss, fused_cross_entropy).
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(scenario, {"training.framework=fused", "training.cross_entropy_loss_fusion=false"}));
  CHECK_NOTHROW(
      config::load_scenario(scenario, {"training.framework=cuda_graphs", "training.cross_entropy_loss_fusion=false"}));
  for (const std::string framework : {"eager", "compile"}) {
    INFO(framework);
    CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=" + framework,
                                                       "training.cross_entropy_loss_fusion=false"}),
                      Catch::Contains("training.cross_entropy_loss_fusion") &&
                          Catch::Contains("needs Megatron-style code"));
  }
}
