// training.fused_mlp: the MLP's GELU in its GEMMs' epilogues (flash-attn's FusedMLP, Apex's
// FusedDenseGeluDense; cuBLASLt GELU_AUX_BIAS forward, DGELU_BGRAD backward). No activation
// kernel in either pass; the GEMMs are the same. Against hand counts.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec fused_bf16(bool fused_mlp) {
  config::TrainingSpec t = bf16_adam_1k("fused");
  t.fused_mlp = fused_mlp;
  return t;
}

}  // namespace

TEST_CASE("a fused MLP runs its GELU in the GEMMs' epilogues: no activation kernel either way", "[workload][ops][mlp]") {
  // GPT-2 small, 2 sequences × 1,024 tokens: the activation kernel reads and writes the
  // 2,048 × 3,072 bf16 tensor, 2 × 2 B per element = 25,165,824 B forward.
  const double elements = 2.0 * 1024 * 3072;
  const auto plain_fwd = layer_forward_ops(gpt2_124m(), fused_bf16(false), 2, 1);
  const auto fused_fwd = layer_forward_ops(gpt2_124m(), fused_bf16(true), 2, 1);
  REQUIRE(has(plain_fwd, "mlp_act"));
  CHECK(find(plain_fwd, "mlp_act").bytes == elements * 2 * 2);
  CHECK_FALSE(has(fused_fwd, "mlp_act"));
  CHECK(fused_fwd.size() + 1 == plain_fwd.size());
  // Everything else is the same: the removed bytes are the activation's, the GEMM FLOPs unchanged.
  CHECK(total(plain_fwd, &Op::bytes) - total(fused_fwd, &Op::bytes) == Approx(elements * 4));
  CHECK(find(fused_fwd, "mlp_up").flops == find(plain_fwd, "mlp_up").flops);
  CHECK(find(fused_fwd, "mlp_down").flops == find(plain_fwd, "mlp_down").flops);
  const auto plain_bwd = layer_backward_ops(gpt2_124m(), fused_bf16(false), 2, 1);
  const auto fused_bwd = layer_backward_ops(gpt2_124m(), fused_bf16(true), 2, 1);
  REQUIRE(has(plain_bwd, "mlp_act_bwd"));
  CHECK_FALSE(has(fused_bwd, "mlp_act_bwd"));
  CHECK(total(plain_bwd, &Op::bytes) - total(fused_bwd, &Op::bytes) == Approx(find(plain_bwd, "mlp_act_bwd").bytes));
  CHECK(total(plain_bwd, &Op::flops) - total(fused_bwd, &Op::flops) == Approx(find(plain_bwd, "mlp_act_bwd").flops));
}

TEST_CASE("a fused MLP is refused where it is not simulated", "[config][mlp]") {
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(gpt2, {"training.fused_mlp=true"}));
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"training.fused_mlp=true", "training.activation_checkpointing=selective"}),
                    Catch::Contains("training.fused_mlp") && Catch::Contains("activation_checkpointing selective"));
  // SwiGLU (Llama 3 8B): two inputs to the activation, no such epilogue.
  const std::string llama = IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml";
  CHECK_THROWS_WITH(config::load_scenario(llama, {"training.fused_mlp=true"}),
                    Catch::Contains("training.fused_mlp") && Catch::Contains("activation swiglu"));
}
