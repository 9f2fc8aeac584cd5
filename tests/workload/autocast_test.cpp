// training.autocast: torch.autocast over fp32 parameters (Lightning's bf16-mixed, Hugging Face's
// Trainer bf16 = True). Each forward casts every matmul weight to bf16 (read 4, write 2 B per
// weight), each backward casts the weight gradient back to fp32 (read 2, write 4 B); the model,
// its gradients and the optimizer's parameters are fp32 and there is no master copy; the cast
// copies are cached by the forward and kept by autograd. Against hand counts.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload/step_memory.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec bf16_fused(bool autocast, const std::string& recompute = "none") {
  config::TrainingSpec t = bf16_adam_1k("fused");
  t.activation_checkpointing = recompute;
  t.autocast = autocast;
  return t;
}

int kernels(const std::vector<Op>& ops) {
  int sum = 0;
  for (const Op& op : ops) sum += op.kernels;
  return sum;
}

// GPT-2 small's matmul weights per layer: qkv 768 × 2,304, attention output 768 × 768, MLP
// 768 × 3,072 and 3,072 × 768 = 12 · 768² = 7,077,888; its LM head (tied) 768 × 50,257.
constexpr double kLayerWeights = 12.0 * 768 * 768;
constexpr double kHeadWeights = 768.0 * 50257;

}  // namespace

TEST_CASE("autocast casts every matmul weight per forward and its gradient back per backward", "[workload][ops][autocast]") {
  const auto model = gpt2_124m();
  const auto plain_fwd = layer_forward_ops(model, bf16_fused(false), 2, 1);
  const auto cast_fwd = layer_forward_ops(model, bf16_fused(true), 2, 1);
  // One cast kernel before each of the four GEMMs, 4 + 2 B per weight; nothing else changes.
  for (const char* gemm : {"qkv", "attn_out", "mlp_up", "mlp_down"}) {
    REQUIRE(has(cast_fwd, std::string(gemm) + "_weight_cast"));
    CHECK_FALSE(has(plain_fwd, std::string(gemm) + "_weight_cast"));
    CHECK(find(cast_fwd, std::string(gemm) + "_weight_cast").flops == 0);
  }
  CHECK(find(cast_fwd, "qkv_weight_cast").bytes == 768.0 * 2304 * 6);
  CHECK(find(cast_fwd, "mlp_down_weight_cast").bytes == 3072.0 * 768 * 6);
  CHECK(cast_fwd.size() == plain_fwd.size() + 4);
  CHECK(total(cast_fwd, &Op::bytes) - total(plain_fwd, &Op::bytes) == Approx(kLayerWeights * 6));
  CHECK(total(cast_fwd, &Op::flops) == total(plain_fwd, &Op::flops));
  // Backward: ToCopyBackward per weight, the bf16 gradient read and its fp32 copy written (6 B),
  // one kernel each; the GEMMs' backward unchanged.
  const auto plain_bwd = layer_backward_ops(model, bf16_fused(false), 2, 1);
  const auto cast_bwd = layer_backward_ops(model, bf16_fused(true), 2, 1);
  REQUIRE(has(cast_bwd, "mlp_up_weight_cast_bwd"));
  CHECK(find(cast_bwd, "mlp_up_weight_cast_bwd").bytes == 768.0 * 3072 * 6);
  CHECK(total(cast_bwd, &Op::bytes) - total(plain_bwd, &Op::bytes) == Approx(kLayerWeights * 6));
  CHECK(kernels(cast_bwd) - kernels(plain_bwd) == 4);
  CHECK(total(cast_bwd, &Op::flops) == total(plain_bwd, &Op::flops));
  // The LM head's (tied) weight is cast too; its gradient cast back.
  const auto head_fwd = head_forward_ops(model, bf16_fused(true), 2, 1);
  CHECK(find(head_fwd, "lm_head_weight_cast").bytes == kHeadWeights * 6);
  CHECK(find(head_backward_ops(model, bf16_fused(true), 2, 1), "lm_head_weight_cast_bwd").bytes == kHeadWeights * 6);
  // Full recompute casts again: the recomputed forward holds the four casts.
  const auto recompute = layer_recompute_ops(model, bf16_fused(true, "full"), 2, 1);
  CHECK(has(recompute, "recompute_qkv_weight_cast"));
  CHECK(has(recompute, "recompute_mlp_down_weight_cast"));
}

TEST_CASE("autocast keeps fp32 parameters and gradients and no master copy", "[workload][memory][autocast]") {
  // 1e9 parameters, Adam, ZeRO 1 over 8 ranks. bf16 mixed precision: 2 + 2 B, master and
  // moments 12 B / 8. Autocast: 4 + 4 B, moments 8 B / 8.
  const double P = 1e9;
  const MemoryBreakdown mixed = model_state_memory(P, bf16_fused(false), 1, 8);
  const MemoryBreakdown amp = model_state_memory(P, bf16_fused(true), 1, 8);
  CHECK(mixed.weights == 2 * P);
  CHECK(mixed.gradients == 2 * P);
  CHECK(mixed.optimizer == 12 * P / 8);
  CHECK(amp.weights == 4 * P);
  CHECK(amp.gradients == 4 * P);
  CHECK(amp.optimizer == 8 * P / 8);
  CHECK(stored_parameter_bytes(bf16_fused(true)) == 4);
  CHECK(reduce_bytes(bf16_fused(true)) == 4);  // DDP reduces the fp32 gradients
  // The fused Adam step: fp32 weights and two moments read and written (24 B), the fp32 gradient
  // read (4), no bf16 copy written; clipping reads the gradients twice and writes them once (12).
  CHECK(optimizer_op(bf16_fused(true), P).bytes == Approx(P * (24 + 4 + 12)));
  CHECK(optimizer_op(bf16_fused(false), P).bytes == Approx(P * (24 + 2 + 2 + 6)));
}

TEST_CASE("autocast's weight copies live from the forward to the layer's backward", "[workload][memory][autocast]") {
  // One rank, one microbatch, GPT-2 small: the replay's peak (at the first backward) holds every
  // layer's bf16 copies (12 × 7,077,888 × 2 B) and the LM head's (768 × 50,257 × 2 B) on top of
  // the fp32 model state (2 + 2 B more per parameter than bf16's, 4 B less of optimizer state:
  // 0 net), all of which memory_per_gpu counts too.
  const auto model = gpt2_124m();
  config::ParallelSpec par;
  par.microbatch_size = 1;
  StageMemory one;
  one.passes = {{true, 0, 0}, {false, 0, 0}};
  one.chunk_layers = {model.layers};
  one.microbatches = 1;
  const auto plain = replay_step_memory(model, bf16_fused(false), par, 1, one, byte_granular());
  const auto amp = replay_step_memory(model, bf16_fused(true), par, 1, one, byte_granular());
  const double copies = (12 * kLayerWeights + kHeadWeights) * 2;
  // The layer's bias vectors count as weights of its copies in the replay (a layer's parameters
  // less its norms): qkv 2,304, attention output 768, MLP 3,072 and 768 per layer.
  const double biases = 12.0 * (2304 + 768 + 3072 + 768) * 2;
  // fp32 state: weights +2, gradients +2, optimizer −4 (no master) per parameter: 0.
  // (Each replayed tensor is rounded up to a whole byte: a few bytes apart.)
  CHECK(amp.allocated - plain.allocated == Approx(copies + biases).margin(64));
  const auto analytic = memory_per_gpu(model, bf16_fused(true), par, 1, 1);
  CHECK(analytic.autocast_copies == Approx(12 * kLayerWeights * 2 + kHeadWeights * 2).epsilon(1e-3));
  // Full recompute: the checkpointed layers' copies are freed with the forward's autocast cache;
  // in backward only the layer recomputing holds its copies, beside the LM head's.
  const auto plain_full = replay_step_memory(model, bf16_fused(false, "full"), par, 1, one, byte_granular());
  const auto amp_full = replay_step_memory(model, bf16_fused(true, "full"), par, 1, one, byte_granular());
  const double one_layer = (kLayerWeights + (2304 + 768 + 3072 + 768)) * 2;
  CHECK(amp_full.allocated - plain_full.allocated == Approx(one_layer + kHeadWeights * 2).margin(64));
}

TEST_CASE("autocast is refused where it is not simulated", "[config][autocast]") {
  const std::string gpt3 = IRONLAW_SOURCE_DIR "/scenarios/validation/flash-attn-gpt3/gpt3-1.3b-8gpu.yaml";
  CHECK_NOTHROW(config::load_scenario(gpt3, {"training.autocast=true"}));
  CHECK_THROWS_WITH(config::load_scenario(gpt3, {"training.autocast=true", "parallel.zero=3"}),
                    Catch::Contains("training.autocast") && Catch::Contains("parallel.zero 0-2"));
  CHECK_THROWS_WITH(config::load_scenario(gpt3, {"training.autocast=true", "training.reduce_dtype=bf16"}),
                    Catch::Contains("training.autocast") && Catch::Contains("got bf16"));
  CHECK_THROWS_WITH(config::load_scenario(gpt3, {"training.autocast=true", "training.precision=fp32", "training.reduce_dtype=fp32"}),
                    Catch::Contains("training.autocast") && Catch::Contains("got fp32"));
  CHECK_THROWS_WITH(config::load_scenario(gpt3, {"training.autocast=true", "training.activation_checkpointing=selective"}),
                    Catch::Contains("training.autocast") && Catch::Contains("got selective"));
}
