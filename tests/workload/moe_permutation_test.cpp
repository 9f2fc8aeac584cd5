// The MoE token permutation around the expert all-to-alls: Transformer Engine's fused kernels
// (training.moe_permute_fusion true, the default) and Megatron-core 0.8-0.9's PyTorch ops
// (false). Hand counts of each pass's bytes from the code the ops follow:
// transformer_engine/pytorch/permutation.py (moe_permute_fwd / _bwd, moe_unpermute_fwd / _bwd)
// and megatron/core/transformer/moe/moe_utils.py permute / unpermute at core_v0.8.0 and
// core_v0.9.0. Mixtral 8x7B's layer shape (h 4,096, 8 experts, 2 per token) on one sequence of
// 4,096 tokens, bf16: U = t·h = 4,096 · 4,096 elements, T = k·U the token copies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec mixtral_8x7b() {
  config::ModelSpec m;
  m.name = "mixtral-8x7b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.vocab = 32000;
  m.activation = "swiglu";
  m.norm = "rmsnorm";
  m.experts = 8;
  m.experts_per_token = 2;
  return m;
}

config::TrainingSpec megatron_bf16(bool fusion) {
  config::TrainingSpec t = bf16_adam_1k("fused");
  t.sequence_length = 4096;
  t.moe_permute_fusion = fusion;
  return t;
}

constexpr double kU = 4096.0 * 4096;  // t·h
constexpr double kT = 2 * kU;         // t·k·h
constexpr double kBpe = 2;

double sum_bytes(const std::vector<Op>& ops, std::initializer_list<const char*> names) {
  double b = 0;
  for (const char* n : names) b += find(ops, n).bytes;
  return b;
}

}  // namespace

TEST_CASE("fused MoE permutation: TE's one-pass kernels forward and backward", "[workload][moe]") {
  // EP 8 over 8 experts: one local expert, so no sort of the received rows by expert.
  const auto fwd = layer_forward_ops(mixtral_8x7b(), megatron_bf16(true), 1, 1, 0, 8);
  const auto bwd = layer_backward_ops(mixtral_8x7b(), megatron_bf16(true), 1, 1, 0, 8);
  // moe_permute_fwd: each token row gathered once per chosen expert (T read, T written);
  // moe_permute_bwd: the k gradient rows of a token summed (T read, U written).
  CHECK(find(fwd, "moe_permute").bytes == 2 * kT * kBpe);
  CHECK(find(bwd, "moe_permute_bwd").bytes == (kT + kU) * kBpe);
  // moe_unpermute_fwd: T read, weighted, summed into U; moe_unpermute_bwd: the U gradient and the
  // saved T inputs read, the T input gradients written.
  CHECK(find(fwd, "moe_unpermute").bytes == (kT + kU) * kBpe);
  CHECK(find(bwd, "moe_unpermute_bwd").bytes == (2 * kT + kU) * kBpe);
  CHECK(find(fwd, "moe_permute").kernels == 1);
  CHECK(find(bwd, "moe_unpermute_bwd").kernels == 2);  // the default rule (2 x the forward's one)
  CHECK_FALSE(has(fwd, "moe_sort_chunks"));
  CHECK_FALSE(has(fwd, "moe_unpermute_scatter"));
}

TEST_CASE("Megatron-core 0.8-0.9's unfused permutation moves 5T more forward and 4T + 3U more backward",
          "[workload][moe]") {
  const auto fwd = layer_forward_ops(mixtral_8x7b(), megatron_bf16(false), 1, 1, 0, 8);
  const auto bwd = layer_backward_ops(mixtral_8x7b(), megatron_bf16(false), 1, 1, 0, 8);
  // permute: argsort, division, index_select (T read, T written); backward zeros(U) and
  // scatter_add_ of T rows into them (U read and written).
  CHECK(find(fwd, "moe_permute").bytes == 2 * kT * kBpe);
  CHECK(find(fwd, "moe_permute").kernels == 3);
  CHECK(find(bwd, "moe_permute_bwd").bytes == (kT + 3 * kU) * kBpe);
  CHECK(find(bwd, "moe_permute_bwd").kernels == 2);
  // unpermute: zeros(T) + index_copy_ (T read, T written); x gates (T, T); sum over k (T read,
  // U written). Backward: the gather (T, T); MulBackward0 (2U + 2T read, 2T written); the sum's
  // expand is a view.
  CHECK(find(fwd, "moe_unpermute_scatter").bytes == 3 * kT * kBpe);
  CHECK(find(fwd, "moe_unpermute_weight").bytes == 2 * kT * kBpe);
  CHECK(find(fwd, "moe_unpermute_sum").bytes == (kT + kU) * kBpe);
  CHECK(find(bwd, "moe_unpermute_scatter_bwd").bytes == 2 * kT * kBpe);
  CHECK(find(bwd, "moe_unpermute_weight_bwd").bytes == (2 * kU + 4 * kT) * kBpe);
  const Op& sum_bwd = find(bwd, "moe_unpermute_sum_bwd");
  CHECK(op_time(sum_bwd, h100_sxm(), "bf16") == Time::zero());
  CHECK_FALSE(has(fwd, "moe_unpermute"));

  // Against the fused kernels: forward 8T + U against 3T + U, backward 7T + 5U against 3T + 2U.
  const auto fused_fwd = layer_forward_ops(mixtral_8x7b(), megatron_bf16(true), 1, 1, 0, 8);
  const auto fused_bwd = layer_backward_ops(mixtral_8x7b(), megatron_bf16(true), 1, 1, 0, 8);
  const double unfused_f =
      sum_bytes(fwd, {"moe_permute", "moe_unpermute_scatter", "moe_unpermute_weight", "moe_unpermute_sum"});
  const double fused_f = sum_bytes(fused_fwd, {"moe_permute", "moe_unpermute"});
  CHECK(unfused_f - fused_f == 5 * kT * kBpe);
  const double unfused_b = sum_bytes(bwd, {"moe_permute_bwd", "moe_unpermute_scatter_bwd", "moe_unpermute_weight_bwd",
                                           "moe_unpermute_sum_bwd"});
  const double fused_b = sum_bytes(fused_bwd, {"moe_permute_bwd", "moe_unpermute_bwd"});
  CHECK(unfused_b - fused_b == (4 * kT + 3 * kU) * kBpe);
  // Everything else of the layer is the same op for op.
  CHECK(find(fwd, "mlp_up").flops == find(fused_fwd, "mlp_up").flops);
}

TEST_CASE("with several local experts the received rows are sorted by expert and back", "[workload][moe]") {
  // EP 4 over 8 experts: 2 local experts. The all-to-all delivers the T rows by source rank; the
  // grouped GEMM needs them by expert (Megatron's sort_chunks_by_idxs, "permutation 2").
  for (const bool fusion : {true, false}) {
    INFO(fusion);
    const auto fwd = layer_forward_ops(mixtral_8x7b(), megatron_bf16(fusion), 1, 1, 0, 4);
    const auto bwd = layer_backward_ops(mixtral_8x7b(), megatron_bf16(fusion), 1, 1, 0, 4);
    std::vector<std::string> names;
    for (const Op& op : fwd) names.push_back(op.name);
    const auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
    CHECK(at("moe_dispatch") < at("moe_sort_chunks"));
    CHECK(at("moe_sort_chunks") < at("mlp_up"));
    CHECK(at("mlp_down") < at("moe_unsort_chunks"));
    CHECK(at("moe_unsort_chunks") < at("moe_combine"));
    // A row gather each way (T read, T written); the unfused unsort is zeros(T) and a scatter.
    CHECK(find(fwd, "moe_sort_chunks").bytes == 2 * kT * kBpe);
    CHECK(find(fwd, "moe_unsort_chunks").bytes == (fusion ? 2 : 3) * kT * kBpe);
    CHECK(find(bwd, "moe_sort_chunks_bwd").bytes == 2 * kT * kBpe);
    CHECK(find(bwd, "moe_unsort_chunks_bwd").bytes == 2 * kT * kBpe);
  }
  // One local expert: nothing to sort.
  CHECK_FALSE(has(layer_forward_ops(mixtral_8x7b(), megatron_bf16(true), 1, 1, 0, 8), "moe_sort_chunks"));
}

TEST_CASE("the unfused MoE permutation is refused without experts or outside Megatron-style code",
          "[config][moe]") {
  const std::string dense = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_THROWS_WITH(
      config::load_scenario(dense, {"training.framework=fused", "training.moe_permute_fusion=false"}),
      Catch::Contains("training.moe_permute_fusion") && Catch::Contains("needs a MoE model"));
  const std::string moe = IRONLAW_SOURCE_DIR "/scenarios/validation/megatron-moe/mixtral-8x7b-64gpu.yaml";
  CHECK_NOTHROW(config::load_scenario(moe, {"training.moe_permute_fusion=false"}));
  CHECK_NOTHROW(config::load_scenario(moe, {"training.moe_permute_fusion=true"}));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"training.framework=eager"}),
                    Catch::Contains("training.moe_permute_fusion") && Catch::Contains("framework eager"));
}
