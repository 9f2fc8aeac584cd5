// training.fused_dropout_add_norm: each block's output dropout, the residual add and the next
// norm as one kernel (flash-attn's dropout_add_layer_norm, fused_dropout_add_ln in its GPT
// code). Against hand counts of the bytes each kernel reads and writes.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec fused_bf16(bool fused_add_norm) {
  config::TrainingSpec t = bf16_adam_1k("fused");
  t.fused_dropout_add_norm = fused_add_norm;
  return t;
}

config::ModelSpec gpt2_with_dropout() {
  config::ModelSpec m = gpt2_124m();
  m.hidden_dropout = 0.1;
  return m;
}

double total_bytes(const std::vector<Op>& ops) {
  double sum = 0;
  for (const Op& op : ops) sum += op.bytes;
  return sum;
}

}  // namespace

TEST_CASE("a fused dropout-add-norm kernel replaces the dropout, residual and norm passes", "[workload][ops][norm]") {
  // GPT-2 small with hidden dropout, 2 sequences × 1,024 tokens: n = 2,048 × 768 elements per
  // block output. Unfused, each of a layer's two block outputs pays dropout (2 + 2 + 1 B),
  // residual (3 × 2 B) and norm (2 × 2 B) = 15 B per element forward; fused, one kernel:
  // x0 and residual read, new residual and normalised output written, 1-B mask = 9 B.
  const double n = 2.0 * 1024 * 768;
  const auto plain = layer_forward_ops(gpt2_with_dropout(), fused_bf16(false), 2, 1);
  const auto fused = layer_forward_ops(gpt2_with_dropout(), fused_bf16(true), 2, 1);
  for (const char* gone : {"hidden_dropout_attn", "residual_attn", "hidden_dropout_mlp", "residual_mlp"}) {
    INFO(gone);
    CHECK(has(plain, gone));
    CHECK_FALSE(has(fused, gone));
  }
  CHECK(find(fused, "norm_attn").bytes == Approx(n * 9));
  CHECK(find(fused, "norm_mlp").bytes == Approx(n * 9));
  CHECK(total_bytes(plain) - total_bytes(fused) == Approx(2 * n * (15 - 9)));
  // Backward: unfused dropout 5 B, residual 2 × 6 B, norm 2 × 4 B = 25 B per element; fused, one
  // kernel reading both output gradients, the saved residual and the mask and writing the
  // gradients of x0 and of the residual: 5 × 2 + 1 = 11 B.
  const auto plain_bwd = layer_backward_ops(gpt2_with_dropout(), fused_bf16(false), 2, 1);
  const auto fused_bwd = layer_backward_ops(gpt2_with_dropout(), fused_bf16(true), 2, 1);
  CHECK(find(fused_bwd, "norm_attn_bwd").bytes == Approx(n * 11));
  CHECK(find(fused_bwd, "norm_mlp_bwd").bytes == Approx(n * 11));
  CHECK(total_bytes(plain_bwd) - total_bytes(fused_bwd) == Approx(2 * n * (25 - 11)));
  // The last layer's dropout and residual go into the final norm's kernel: 9 B forward, 11 B
  // backward (unfused: a plain 4-B norm, 8 B backward).
  const auto head = head_forward_ops(gpt2_with_dropout(), fused_bf16(true), 2, 1, false);
  CHECK(find(head, "final_norm").bytes == Approx(n * 9));
  const auto head_bwd = head_backward_ops(gpt2_with_dropout(), fused_bf16(true), 2, 1, false);
  CHECK(find(head_bwd, "final_norm_bwd").bytes == Approx(n * 11));
  CHECK(find(head_forward_ops(gpt2_with_dropout(), fused_bf16(false), 2, 1, false), "final_norm").bytes == Approx(n * 4));
  // Without hidden dropout there is no mask: 8 B forward, 10 B backward.
  const auto no_dropout = layer_forward_ops(gpt2_124m(), fused_bf16(true), 2, 1);
  CHECK(find(no_dropout, "norm_mlp").bytes == Approx(n * 8));
}

TEST_CASE("a fused dropout-add-norm kernel is refused where it is not simulated", "[config][norm]") {
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(gpt2, {"training.fused_dropout_add_norm=true"}));
  CHECK_THROWS_WITH(
      config::load_scenario(gpt2, {"training.fused_dropout_add_norm=true", "training.activation_checkpointing=selective"}),
      Catch::Contains("training.fused_dropout_add_norm") && Catch::Contains("activation_checkpointing selective"));
}
