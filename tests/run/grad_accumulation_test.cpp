// Gradient accumulation across microbatches outside FSDP (run/model_parallel.hpp,
// GradientAccumulation): every backward after a unit's first adds the fresh gradients into the
// accumulated ones, reading P·pb and reading and writing P·rb. Timelines of
// tests/run/data/timeline.yaml (tiny-dense on the launch-bound node, see timeline_test.cpp).
//
// Hand count of one tiny-dense layer (hidden 64, ffn 256, 2 heads of 32, no biases, RMSNorm):
// Q, K, V, O 4·64·64 = 16,384 and GELU MLP 2·64·256 = 32,768 linear weights, 49,152, plus its
// norm gains (at most two RMSNorms of 64).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

constexpr double kLinearParams = 49152;
constexpr double kNormParams = 128;

using run_test::Trace;

std::unique_ptr<Trace> trace(std::vector<std::string> overrides) {
  overrides.push_back("cluster.topology.node.nvlink.bandwidth=1e18 B/s");
  overrides.push_back("cluster.topology.device.hbm_bandwidth=1 TB/s");
  return run_test::simulate_timeline(overrides);
}

/// The adds of a layer: the three of equal size that lie within the hand count's bounds.
std::vector<EventRecord> layer_adds(const std::vector<EventRecord>& events, double bytes_per_param) {
  std::vector<EventRecord> out;
  for (const auto& e : events)
    if (e.bytes >= kLinearParams * bytes_per_param && e.bytes <= (kLinearParams + kNormParams) * bytes_per_param)
      out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("the second microbatch's gradients are added into the first's: P·(2 + 2·2) bytes per layer in bf16",
          "[run][grad-accumulate]") {
  // dp 2, 2048 tokens of 512 per step: two microbatches of one sequence per rank.
  const auto t = trace({"training.global_batch_tokens=2048"});
  const auto adds = t->named("grad_accumulate");
  // One add per unit with gradients (3 layers, embedding, head), after microbatch 1's backward.
  CHECK(adds.size() == 5);
  const auto layers = layer_adds(adds, 6.0);
  REQUIRE(layers.size() == 3);
  for (const auto& e : layers) {
    CHECK(e.bytes == layers[0].bytes);
    // Its time: the 1 us launch of the fixture plus its bytes at 1 TB/s.
    CHECK(static_cast<double>(e.end_ns - e.start_ns) == Approx(1000.0 + e.bytes / 1e12 * 1e9).margin(2));
  }
}

TEST_CASE("fp32 accumulation buffers read and write 4 bytes per gradient", "[run][grad-accumulate]") {
  const auto bf16 = trace({"training.global_batch_tokens=2048"});
  const auto fp32 = trace({"training.global_batch_tokens=4096", "training.reduce_dtype=fp32"});
  // Four microbatches per rank: three adds per unit, each P·(2 + 2·4) bytes for a layer, 10/6 of
  // the bf16 add of the same layer.
  const auto adds = fp32->named("grad_accumulate");
  CHECK(adds.size() == 15);
  const auto layers = layer_adds(adds, 10.0);
  REQUIRE(layers.size() == 9);
  CHECK(layers[0].bytes == Approx(layer_adds(bf16->named("grad_accumulate"), 6.0).at(0).bytes * 10.0 / 6.0));
}

TEST_CASE("one microbatch accumulates nothing, and FSDP accumulates its own way", "[run][grad-accumulate]") {
  CHECK(trace({})->named("grad_accumulate").empty());
  CHECK(trace({"training.global_batch_tokens=2048", "parallel.zero=3"})->named("grad_accumulate").empty());
}

TEST_CASE("Megatron's gradient_accumulation_fusion: no add pass — each wgrad GEMM reads and writes the fp32 main_grad",
          "[run][grad-accumulate]") {
  // Megatron-LM (arguments.py: --no-gradient-accumulation-fusion, dest gradient_accumulation_fusion,
  // store_false: on by default) accumulates the weight gradient in the wgrad GEMM's epilogue into
  // the fp32 main_grad. Two microbatches per rank: no grad_accumulate pass at all, and each wgrad
  // GEMM moves 8 B per weight (fp32 read + write) instead of writing 2 B: 6 B more per weight.
  // tiny-dense's mlp_up is 64 × 256 = 16,384 weights: 98,304 B more per wgrad.
  const auto plain = trace({"training.global_batch_tokens=2048"});
  const auto fused = trace({"training.global_batch_tokens=2048", "training.gradient_accumulation_fusion=true"});
  CHECK(fused->named("grad_accumulate").empty());
  const auto before = plain->named("mlp_up_wgrad");
  const auto after = fused->named("mlp_up_wgrad");
  REQUIRE(before.size() == after.size());
  REQUIRE_FALSE(before.empty());
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i].bytes - before[i].bytes == Approx(16384.0 * 6));
}

TEST_CASE("DeepSpeed's BF16_Optimizer casts and adds every microbatch's gradients: P·(2 + 4·4) bytes per layer",
          "[run][grad-accumulate]") {
  // update_hp_grads (deepspeed/runtime/bf16_optimizer.py) after each microbatch's backward:
  // lp.grad.to(fp32) reads 2 B and writes 4, hp_grad.add_ reads 4 + 4 and writes 4.
  const auto two = trace({"training.global_batch_tokens=2048", "training.reduce_dtype=fp32", "training.bf16_optimizer=true"});
  const auto updates = two->named("hp_grad_update");
  // Two microbatches, the first included: two updates per unit (3 layers, embedding, head).
  CHECK(updates.size() == 10);
  CHECK(two->named("grad_accumulate").empty());
  const auto layers = layer_adds(updates, 18.0);
  REQUIRE(layers.size() == 6);
  // Two kernels, each half the bytes: the second is launched 2 us in (the fixture's 1 us per
  // launch; the first one's half, < 1 us at 1 TB/s, has ended) and runs its half at 1 TB/s.
  for (const auto& e : layers) {
    REQUIRE(e.bytes / 2 / 1e12 * 1e9 < 1000.0);
    CHECK(static_cast<double>(e.end_ns - e.start_ns) == Approx(2000.0 + e.bytes / 2 / 1e12 * 1e9).margin(3));
  }
  // One microbatch still copies its gradients into the fp32 buffers.
  CHECK(trace({"training.reduce_dtype=fp32", "training.bf16_optimizer=true"})->named("hp_grad_update").size() == 5);
}

TEST_CASE("autocast accumulates fp32 gradients: its add reads and writes 4 bytes per gradient, the fresh one too",
          "[run][grad-accumulate][autocast]") {
  const auto bf16 = trace({"training.global_batch_tokens=2048"});
  const auto amp = trace({"training.global_batch_tokens=2048", "training.autocast=true"});
  // ToCopyBackward hands AccumulateGrad an fp32 gradient: P·(4 + 2·4) bytes per layer, twice
  // the bf16 add (P·(2 + 2·2)) of the same layer.
  const auto adds = amp->named("grad_accumulate");
  CHECK(adds.size() == 5);
  const auto layers = layer_adds(adds, 12.0);
  REQUIRE(layers.size() == 3);
  CHECK(layers[0].bytes == Approx(layer_adds(bf16->named("grad_accumulate"), 6.0).at(0).bytes * 2.0));
}
