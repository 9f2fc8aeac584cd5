// What recording link utilisation over time costs (run/link_series.hpp): one step simulated
// with the trace level none (no recording) and step (recording; the sink drops the records, so
// the difference is the recorder's samplers), on a 16-node GPT-2 XL step and the default
// Llama 3 8B step on 128 GPUs.
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

namespace {

void compare(const char* label, const std::string& file, std::vector<std::string> overrides) {
  overrides.push_back("run.steps=1");
  const auto scenario = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/" + file, overrides);
  ironlaw::NullSink sink;
  ironlaw::run::SimulationResult plain, recorded;
  const double cpu_plain = ironlaw::bench::cpu_seconds(
      [&] { plain = ironlaw::run::simulate(scenario, sink, ironlaw::run::TraceLevel::none); });
  const double cpu_recorded = ironlaw::bench::cpu_seconds(
      [&] { recorded = ironlaw::run::simulate(scenario, sink, ironlaw::run::TraceLevel::step); });
  const std::string base = std::string("links.") + label;
  using ironlaw::bench::report;
  report((base + ".cpu_without_recording").c_str(), cpu_plain, "s (user+sys)");
  report((base + ".cpu_with_recording").c_str(), cpu_recorded, "s (user+sys)");
  report((base + ".links_with_traffic").c_str(), static_cast<double>(plain.links.size()), "links");
  report((base + ".bins").c_str(), static_cast<double>(recorded.link_series.bins()), "bins");
  report((base + ".bin_width").c_str(), recorded.link_series.bin_s, "s");
  report((base + ".same_step_time").c_str(), plain.step_time_s == recorded.step_time_s ? 1 : 0, "bool");
}

void bench_gpt2_xl() { compare("gpt2_xl_ddp_16nodes", "gpt2-1.5b-ddp-multinode.yaml", {"cluster.nodes=16"}); }
void bench_default() { compare("default_llama3_8b_fsdp_128", "llama3-8b-fsdp-128.yaml", {}); }

const ironlaw::bench::Register reg_xl("links.gpt2_xl_ddp_16nodes", bench_gpt2_xl);
const ironlaw::bench::Register reg_default("links.default_scenario", bench_default);

}  // namespace
