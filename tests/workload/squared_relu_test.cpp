// Squared ReLU, relu(x)² (So et al. 2021, "Primer"; the Nemotron models): a dense, non-gated MLP
// whose activation Megatron-core writes as torch.pow(F.relu(x), 2) (megatron/core/activations.py)
// and does not fuse with a bias (its bias-activation fusion covers GELU and SwiGLU only). The
// counts below follow the two ATen kernels forward and autograd's PowBackward0 + ReluBackward0.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec gpt2_squared_relu() {
  config::ModelSpec m = gpt2_124m();
  m.activation = "squared_relu";
  return m;
}

}  // namespace

TEST_CASE("squared ReLU has GELU's two MLP matrices", "[workload][params][squared_relu]") {
  // Non-gated: up (768 × 3,072) and down (3,072 × 768), as GELU; SwiGLU would add a third.
  CHECK(count_params(gpt2_squared_relu()).total() == count_params(gpt2_124m()).total());
  const auto ops = layer_forward_ops(gpt2_squared_relu(), bf16_adam_1k("fused"), 2, 1);
  CHECK(find(ops, "mlp_up").n == 3072);  // ops outlives the reference find returns
}

TEST_CASE("squared ReLU runs as relu then pow, its backward as autograd's four kernels", "[workload][ops][squared_relu]") {
  // 2 sequences × 1,024 tokens × 3,072 features = 6,291,456 elements at 2 B.
  const double e = 2.0 * 1024 * 3072;
  for (const std::string framework : {"fused", "eager"}) {
    INFO(framework);
    const auto forward = layer_forward_ops(gpt2_squared_relu(), bf16_adam_1k(framework), 2, 1);
    const Op& act = find(forward, "mlp_act");
    CHECK(act.bytes == e * 4 * 2);  // relu: read + write; pow: read + write
    CHECK(act.kernels == 2);
    CHECK(act.flops == e * 2);      // max and multiply
    const auto backward = layer_backward_ops(gpt2_squared_relu(), bf16_adam_1k(framework), 2, 1);
    const Op& bwd = find(backward, "mlp_act_bwd");
    // pow(1) copy (2), × 2 (2), × grad (3), threshold_backward (3): 10 element accesses.
    CHECK(bwd.bytes == e * 10 * 2);
    CHECK(bwd.kernels == 4);
  }
  // Compiled, inductor fuses each pass: x read, y written; gradient and x read, input gradient written.
  const auto compiled_forward = layer_forward_ops(gpt2_squared_relu(), bf16_adam_1k("compile"), 2, 1);
  const Op& act = find(compiled_forward, "mlp_act");
  CHECK(act.bytes == e * 2 * 2);
  CHECK(act.kernels == 1);
  const auto compiled_backward = layer_backward_ops(gpt2_squared_relu(), bf16_adam_1k("compile"), 2, 1);
  const Op& bwd = find(compiled_backward, "mlp_act_bwd");
  CHECK(bwd.bytes == e * 3 * 2);
  CHECK(bwd.kernels == 1);
  // TP 2: each rank holds half the features.
  const auto tp2 = layer_forward_ops(gpt2_squared_relu(), bf16_adam_1k("fused"), 2, 2);
  CHECK(find(tp2, "mlp_act").bytes == e * 4);
}

TEST_CASE("squared ReLU keeps what GELU keeps for the backward", "[workload][memory][squared_relu]") {
  // ReluBackward0 and PowBackward0 share relu(x) (f per token), the down projection keeps
  // relu(x)² (f): GELU's input and output, 2·f.
  config::ParallelSpec p;
  const auto t = bf16_adam_1k("fused");
  CHECK(activation_bytes_per_layer(gpt2_squared_relu(), t, p, 2) == activation_bytes_per_layer(gpt2_124m(), t, p, 2));
}

TEST_CASE("a model card may name squared_relu, which the fused GELU MLP refuses", "[config][squared_relu]") {
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK(config::load_scenario(gpt2, {"model.activation=squared_relu"}).model.activation == "squared_relu");
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"model.activation=relu"}), Catch::Contains("model.activation"));
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"model.activation=squared_relu", "training.fused_mlp=true"}),
                    Catch::Contains("training.fused_mlp") && Catch::Contains("activation squared_relu"));
}
