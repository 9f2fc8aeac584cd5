// The optimizer step's temporaries by Adam implementation (training.optimizer_impl), in the
// allocator replay of a whole scenario.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

TEST_CASE("foreach Adam holds every square root at once, a for-loop Adam one tensor's", "[workload][memory][optimizer]") {
  // MPT-30B on 8 A100 80GB (llm-foundry's table, FSDP PURE): with torch's foreach AdamW the step's
  // peak is the optimizer's, where the square roots of all second moments are alive together:
  // 29,975,214,080 parameters / 8 × 4 B = 14,987,607,040 B. Composer's DecoupledAdamW (what the
  // run used) holds one FSDP unit's root and quotient at a time: the peak moves off the optimizer.
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-30b-8gpu-a100-80gb.yaml";
  const auto ledger_of = [&](const std::string& impl) {
    NullSink sink;
    return run::simulate(config::load_scenario(file, {"training.optimizer_impl=" + impl}), sink,
                         run::TraceLevel::none);
  };
  const auto foreach = ledger_of("foreach");
  double roots = 0;
  for (const auto& [what, bytes] : foreach.memory_peak_ledger)
    if (what == "optimizer sqrt") roots = bytes;
  CHECK(roots == Approx(29'975'214'080.0 / 8 * 4).epsilon(1e-4));
  const auto loop = ledger_of("for_loop");
  for (const auto& [what, bytes] : loop.memory_peak_ledger) {
    INFO(what << ": " << bytes);
    if (what == "optimizer sqrt") CHECK(bytes < roots / 20);  // 2 of 49 units at most
  }
  CHECK(loop.memory_reserved < foreach.memory_reserved);
}
