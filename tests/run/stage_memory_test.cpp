// Memory per pipeline stage: every stage's allocator replay is kept (SimulationResult::
// memory_by_stage), not only the peak over all GPUs that frameworks report. The stages of a 1F1B
// pipeline differ by the microbatches their schedule keeps in flight, which a hand count gives.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";
const std::string kAllocator = IRONLAW_SOURCE_DIR "/topologies/pytorch-caching-allocator.yaml";

run::SimulationResult replay(std::vector<std::string> overrides) {
  overrides.push_back("cluster.topology.device.memory_allocator=" + kAllocator);
  return run::simulate_memory(config::load_scenario(kPipeline, overrides));
}

}  // namespace

TEST_CASE("each pipeline stage's memory is replayed — adjacent 1F1B stages differ by one microbatch's activations",
          "[run][memory][pipeline]") {
  // tests/run/data/pipeline.yaml: pp 4, 1F1B, 8 microbatches of one 2,048-token sequence, the
  // uniform model (8 layers of hidden 4,096, FFN 16,384, 32 heads, GELU, RMSNorm, no dropout):
  // 2 layers per stage. Under 1F1B stage s runs pp − s − 1 warm-up forwards and one more before
  // its first backward, so it holds pp − s microbatches at its peak (Narayanan et al. 2021).
  // One layer keeps, with flash attention, in bf16 (Korthikanti et al. 2022 §4.1 without dropout
  // and biases): norm inputs 2·2, QKV and MLP inputs 2·2, Q K V 6, attention output 2, GELU input
  // and output 2·8 = 32 bytes per token and hidden unit, and 4 B of log-sum-exp per head and
  // token: 32·2048·4096 + 4·32·2048 = 268,697,600 B, a multiple of the allocator's 512-B blocks.
  const auto r = replay({"training.flash_attention=true"});
  REQUIRE(r.memory_by_stage.size() == 4);
  const double layer = 32.0 * 2048 * 4096 + 4.0 * 32 * 2048;
  // Stages 1 and 2 hold the same weights and no root module: one microbatch of two layers apart.
  CHECK(r.memory_by_stage[1].allocated - r.memory_by_stage[2].allocated == 2 * layer);
  // Every stage holds less than the one before it; the reported peak is the largest.
  double largest = 0;
  for (std::size_t s = 0; s < r.memory_by_stage.size(); ++s) {
    INFO("stage " << s);
    if (s > 0) CHECK(r.memory_by_stage[s].allocated < r.memory_by_stage[s - 1].allocated);
    CHECK(r.memory_by_stage[s].reserved >= r.memory_by_stage[s].allocated);
    largest = std::max(largest, r.memory_by_stage[s].reserved);
  }
  CHECK(r.memory_reserved == largest);
  CHECK(r.memory_by_stage[static_cast<std::size_t>(r.memory_peak_stage)].reserved == largest);

  // Without flash attention the unfused core also keeps its softmax output, 2·a·s²·b = 2·32·2048²
  // B per layer (no dropout: no keep mask and no dropout output).
  const auto unfused = replay({"training.flash_attention=false"});
  const double unfused_layer = 32.0 * 2048 * 4096 + 2.0 * 32 * 2048 * 2048;
  CHECK(unfused.memory_by_stage[1].allocated - unfused.memory_by_stage[2].allocated == 2 * unfused_layer);
}

TEST_CASE("without pipeline parallelism there is one stage's replay", "[run][memory][pipeline]") {
  const auto r = replay({"parallel.pp=1", "parallel.dp=4"});
  REQUIRE(r.memory_by_stage.size() == 1);
  CHECK(r.memory_by_stage[0].reserved == r.memory_reserved);
}
