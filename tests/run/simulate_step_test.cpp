// simulate_step(scenario, seed): the step statistics a whole-run layer calls for and caches.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kOneNode = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";  // with data loaders

bool same(const run::StepStatistics& a, const run::StepStatistics& b) {
  return a.durations_s == b.durations_s && a.mean_s == b.mean_s && a.compute_s == b.compute_s &&
         a.exposed_comm_s == b.exposed_comm_s && a.data_stall_s == b.data_stall_s && a.other_s == b.other_s;
}

}  // namespace

TEST_CASE("simulate_step is a function of the scenario and the seed alone", "[run][step]") {
  auto s = config::load_scenario(kOneNode, {"run.steps=3"});
  const auto a = run::simulate_step(s, 7);
  s.seed = 12345;  // the argument, not the scenario's seed, decides
  const auto b = run::simulate_step(s, 7);
  CHECK(same(a, b));
  REQUIRE(a.durations_s.size() == 3);
  CHECK(a.mean_s == Approx(std::accumulate(a.durations_s.begin(), a.durations_s.end(), 0.0) / 3));
  // The loaders' decode times are drawn from the seed's streams: another seed, another step.
  const auto c = run::simulate_step(s, 8);
  CHECK_FALSE(same(a, c));
}
