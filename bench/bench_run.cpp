// Benchmarks of whole scenarios: the wall time to simulate the default scenario's training
// step, with the events and flows it took (make bench).
#include <cstdio>
#include <string>

#include "bench.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

namespace {

void simulate_scenario(const char* label, const std::string& file, std::vector<std::string> overrides) {
  overrides.push_back("run.steps=1");
  const auto scenario = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/" + file, overrides);
  ironlaw::NullSink sink;
  ironlaw::run::SimulationResult result;
  const double s = ironlaw::bench::wall_seconds(
      [&] { result = ironlaw::run::simulate(scenario, sink, ironlaw::run::TraceLevel::none); });
  const std::string base = std::string("run.") + label;
  ironlaw::bench::report((base + ".wall_per_step").c_str(), s, "s");
  ironlaw::bench::report((base + ".events").c_str(), static_cast<double>(result.events_executed), "events");
  ironlaw::bench::report((base + ".flows").c_str(), static_cast<double>(result.flows_started), "flows");
  ironlaw::bench::report((base + ".tasks").c_str(), static_cast<double>(result.tasks), "tasks");
  ironlaw::bench::report((base + ".events_per_s").c_str(), static_cast<double>(result.events_executed) / s, "events/s");
}

void bench_default_scenario() { simulate_scenario("default_llama3_8b_fsdp_128", "llama3-8b-fsdp-128.yaml", {}); }
void bench_gpt2_one_node() { simulate_scenario("gpt2_ddp_1node", "gpt2-ddp-1node.yaml", {}); }
void bench_gpt2_xl_16_nodes() {
  simulate_scenario("gpt2_xl_ddp_16nodes", "gpt2-1.5b-ddp-multinode.yaml", {"cluster.nodes=16"});
}

const ironlaw::bench::Register reg_default("run.default_scenario", bench_default_scenario);
const ironlaw::bench::Register reg_gpt2("run.gpt2_ddp_1node", bench_gpt2_one_node);
const ironlaw::bench::Register reg_xl("run.gpt2_xl_ddp_16nodes", bench_gpt2_xl_16_nodes);

}  // namespace
