// The step's allocations replayed through the caching allocator: with byte-granular rules the
// replayed peak is memory_per_gpu's sum of terms (the same tensors, placed in time); with
// PyTorch's rules the reserved peak exceeds it by rounding and fragmentation only.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload/step_memory.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

/// Rules under which every request is its own size and any cached block that is large enough
/// serves it: no rounding, so the allocated peak is the sum of the live tensors.
AllocatorRules byte_granular() {
  AllocatorRules r;
  r.min_block = 1;
  r.small_size = 1;
  r.small_buffer = 1;
  r.large_buffer = 1;
  r.min_large_alloc = 1;
  r.round_large = 1;
  return r;
}

config::TrainingSpec bf16_adam(const std::string& recompute) {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.sequence_length = 8192;
  t.activation_checkpointing = recompute;
  t.framework = "compile";
  return t;
}

/// GPipe order of one stage: every forward, then every backward (last in, first out).
std::vector<MemoryPass> gpipe(int microbatches) {
  std::vector<MemoryPass> out;
  for (int m = 0; m < microbatches; ++m) out.push_back({true, m, 0});
  for (int m = microbatches - 1; m >= 0; --m) out.push_back({false, m, 0});
  return out;
}

}  // namespace

TEST_CASE("the replayed peak of live tensors is memory_per_gpu's sum of terms", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.tp = 2;
  par.microbatch_size = 1;
  for (const char* policy : {"none", "full"}) {
    const auto t = bf16_adam(policy);
    const int microbatches = 2;
    const double expected = memory_per_gpu(model, t, par, 1, microbatches).total();
    const StepMemoryPeaks peaks = replay_step_memory(model, t, par, 1, gpipe(microbatches), 1, byte_granular());
    // Each of the ~10^2 tensors is rounded up to a whole byte: < 1e-9 of ~10^11 B.
    CHECK(peaks.allocated == Approx(expected).epsilon(1e-9));
    CHECK(peaks.reserved >= peaks.allocated);
  }
}

TEST_CASE("with equal tensors every step, the second step reuses the first one's cache", "[workload][memory][allocator]") {
  // Byte-granular classic segments: a freed block of exactly the size asked for is found again,
  // so nothing is reserved beyond the live peak.
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.microbatch_size = 1;
  const auto t = bf16_adam("none");
  const StepMemoryPeaks peaks = replay_step_memory(model, t, par, 1, gpipe(1), 1, byte_granular());
  CHECK(peaks.reserved == peaks.allocated);
}

TEST_CASE("PyTorch's rules reserve more than the live tensors, by rounding and fragmentation", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.microbatch_size = 2;
  par.zero = 3;
  auto t = bf16_adam("op");
  t.reduce_dtype = "fp32";
  const StepMemoryPeaks exact = replay_step_memory(model, t, par, 8, gpipe(1), 1, byte_granular());
  for (bool expandable : {false, true}) {
    AllocatorRules rules;
    rules.expandable_segments = expandable;
    const StepMemoryPeaks real = replay_step_memory(model, t, par, 8, gpipe(1), 1, rules);
    CHECK(real.allocated >= exact.allocated);
    CHECK(real.reserved > real.allocated);
  }
}

TEST_CASE("the replay refuses an empty schedule and a chunk out of range", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  const auto t = bf16_adam("none");
  CHECK_THROWS_AS(replay_step_memory(model, t, par, 1, {}, 1, AllocatorRules{}), std::invalid_argument);
  CHECK_THROWS_AS(replay_step_memory(model, t, par, 1, {{true, 0, 1}}, 1, AllocatorRules{}), std::invalid_argument);
}
