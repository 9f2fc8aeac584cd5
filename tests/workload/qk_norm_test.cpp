// model.qk_norm: the queries and keys normalised after their projections, before RoPE — OLMo 2's
// full-width norms (olmo_core Attention: q_norm over d_model, k_norm over n_kv_heads · head_dim)
// or per-head ones (Megatron-core qk_layernorm, Qwen3). Hand counts on Llama 3 8B's shape
// (h 4,096, 32 heads of 128, 8 K/V heads: a key width of 1,024).
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec with_qk_norm(const std::string& form) {
  config::ModelSpec m = llama3_8b();
  m.qk_norm = form;
  return m;
}

}  // namespace

TEST_CASE("query/key norms add their gains to the parameter count", "[workload][qk_norm]") {
  // RMSNorm, a gain per element. Full: 4,096 query + 1,024 key gains per layer; per head: 128 +
  // 128. Times 32 layers.
  const double none = count_params(llama3_8b()).norm;
  CHECK(count_params(with_qk_norm("full")).norm - none == 32.0 * (4096 + 1024));
  CHECK(count_params(with_qk_norm("head")).norm - none == 32.0 * (128 + 128));
  CHECK(count_params(with_qk_norm("none")).norm == none);
}

TEST_CASE("query/key norms run one norm over each token's queries and one over its keys", "[workload][qk_norm]") {
  // 2 sequences of 1,024 tokens: 2,048 tokens. Compiled (one fused kernel each): the query norm
  // reads and writes 2,048 × 4,096 bf16 elements (2 + 2 B), the key norm 2,048 × 1,024.
  const double t = 2048;
  const auto compiled = layer_forward_ops(with_qk_norm("full"), bf16_adam_1k("compile"), 2, 1);
  CHECK(find(compiled, "q_norm").bytes == t * 4096 * 4);
  CHECK(find(compiled, "k_norm").bytes == t * 1024 * 4);
  CHECK(find(compiled, "q_norm").kernels == 1);
  // Per head: the same elements.
  const auto per_head = layer_forward_ops(with_qk_norm("head"), bf16_adam_1k("compile"), 2, 1);
  CHECK(find(per_head, "q_norm").bytes == find(compiled, "q_norm").bytes);
  // Eager RMSNorm as Llama-style code writes it: 8 kernels over 28 + 4 · 2 = 36 B per element.
  const auto eager = layer_forward_ops(with_qk_norm("full"), bf16_adam_1k("eager"), 2, 1);
  CHECK(find(eager, "q_norm").bytes == t * 4096 * 36);
  CHECK(find(eager, "q_norm").kernels == 8);
  // Between the projections and the rotation, with a backward each.
  CHECK_FALSE(has(layer_forward_ops(llama3_8b(), bf16_adam_1k("compile"), 2, 1), "q_norm"));
  const auto backward = layer_backward_ops(with_qk_norm("full"), bf16_adam_1k("compile"), 2, 1);
  CHECK(has(backward, "q_norm_bwd"));
  CHECK(has(backward, "k_norm_bwd"));
}

TEST_CASE("query/key norms keep their inputs for the backward", "[workload][memory][qk_norm]") {
  // Each keeps the projection output it normalises: (4,096 + 1,024) × 2 B per token, compiled;
  // eager RMSNorm its fp32 copy and the normalised value instead, (4 + 2) B per element.
  config::ParallelSpec p;
  const double t = 2048;
  const auto compile = bf16_adam_1k("compile");
  const auto eager = bf16_adam_1k("eager");
  CHECK(activation_bytes_per_layer(with_qk_norm("full"), compile, p, 2) -
            activation_bytes_per_layer(llama3_8b(), compile, p, 2) ==
        t * 5120 * 2);
  CHECK(activation_bytes_per_layer(with_qk_norm("full"), eager, p, 2) -
            activation_bytes_per_layer(llama3_8b(), eager, p, 2) ==
        t * 5120 * 6);
  // Full recompute keeps the layer input only, with or without them.
  config::TrainingSpec full = compile;
  full.activation_checkpointing = "full";
  CHECK(activation_bytes_per_layer(with_qk_norm("full"), full, p, 2) == activation_bytes_per_layer(llama3_8b(), full, p, 2));
}

TEST_CASE("full query/key norms need the whole projection on one rank", "[config][qk_norm]") {
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK(config::load_scenario(gpt2, {"model.qk_norm=full"}).model.qk_norm == "full");
  CHECK(config::load_scenario(gpt2, {}).model.qk_norm == "none");
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"model.qk_norm=layer"}), Catch::Contains("model.qk_norm"));
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"model.qk_norm=full", "parallel.tp=2"}),
                    Catch::Contains("model.qk_norm") && Catch::Contains("tp 2"));
  CHECK(config::load_scenario(gpt2, {"model.qk_norm=head", "parallel.tp=2"}).model.qk_norm == "head");
}
