// Golden summaries of every shipped scenario (scenarios/**/*.yaml): the simulated step time in
// nanoseconds, the events and flows the engine ran, the tasks of the step, the breakdown and
// the MFU, one block per scenario in tests/report/data/goldens.txt. Any change to any of these
// figures is a visible diff of that file. The figures are not "right" — they pin behaviour, so
// that a change in the simulated timeline is always a decision, never an accident.
//
// Regenerate after an intended change with one command (README, "Golden summaries"):
//   scripts/update-goldens.sh
// which runs this test with IRONLAW_UPDATE_GOLDENS=1: it then writes the file instead of
// comparing, and the diff goes into the commit that changed the behaviour.
//
// Every scenario runs one step (run.steps=1) to keep the suite short. Scenarios that take
// minutes per step are listed in kTooSlow with the reason, and the golden file says
// "skipped: <reason>" for them: none is left out silently, and a new scenario without a golden
// block fails the test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "report/metrics.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = IRONLAW_SOURCE_DIR;
const std::string kGoldens = kRepo + "/tests/report/data/goldens.txt";

/// Scenarios whose one step takes minutes on two cores (the data-parallel all-reduce flows of
/// hundreds to thousands of GPUs): pinned by name with the reason, not simulated here.
const std::map<std::string, std::string> kTooSlow = {
    {"scenarios/megatron-2021/04-gpt-18b.yaml", "minutes per step (256 GPUs, TP 8; see tests/report/validation_test.cpp)"},
    {"scenarios/megatron-2021/05-gpt-39b.yaml", "minutes per step (512 GPUs)"},
    {"scenarios/megatron-2021/06-gpt-76b.yaml", "minutes per step (1,024 GPUs)"},
    {"scenarios/megatron-2021/07-gpt-145b.yaml", "minutes per step (1,536 GPUs)"},
    {"scenarios/megatron-2021/08-gpt-310b.yaml", "minutes per step (1,920 GPUs)"},
    {"scenarios/megatron-2021/09-gpt-530b.yaml", "minutes per step (2,520 GPUs)"},
    {"scenarios/megatron-2021/10-gpt-1t.yaml", "minutes per step (3,072 GPUs)"},
};

/// Every shipped scenario, relative to the repository, sorted.
std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kRepo + "/scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(fs::relative(e.path(), kRepo).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string line(const char* key, const char* format, double value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, value);
  return std::string("  ") + key + ": " + buf + "\n";
}

/// The golden block of one scenario.
std::string golden_block(const std::string& relative) {
  std::string out = "scenario: " + relative + "\n";
  if (auto it = kTooSlow.find(relative); it != kTooSlow.end()) return out + "  skipped: " + it->second + "\n";
  const auto s = config::load_scenario(kRepo + "/" + relative, {"run.steps=1"});
  NullSink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::none);
  const auto& lay = r.layout;
  char layout[160];
  std::snprintf(layout, sizeof layout, "  layout: gpus %d, dp %d, tp %d, pp %d, cp %d, ep %d, microbatches %d\n", lay.gpus,
                lay.dp, lay.tp, lay.pp, lay.cp, lay.ep, lay.microbatches);
  out += layout;
  out += line("memory_per_gpu_bytes", "%.0f", r.memory.total());
  if (r.out_of_memory) return out + "  out_of_memory: true\n";
  const auto m = report::summary_metrics(s, r);
  const StepRecord& step = r.steps.front();
  out += line("step_time_ns", "%.0f", static_cast<double>(step.end_ns - step.start_ns));
  out += line("events", "%.0f", static_cast<double>(r.events_executed));
  out += line("flows", "%.0f", static_cast<double>(r.flows_started));
  out += line("tasks", "%.0f", static_cast<double>(r.tasks));
  out += line("compute_ns", "%.0f", r.compute_s * 1e9);
  out += line("exposed_comm_ns", "%.0f", r.exposed_comm_s * 1e9);
  out += line("bubble_ns", "%.0f", r.bubble_s * 1e9);
  out += line("data_stall_ns", "%.0f", r.data_stall_s * 1e9);
  out += line("other_ns", "%.0f", r.other_s * 1e9);
  out += line("mfu", "%.6f", report::metric(m, "mfu"));
  out += line("hfu", "%.6f", report::metric(m, "hfu"));
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The blocks of a golden file by scenario ("scenario: X" opens a block).
std::map<std::string, std::string> blocks_of(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string l, current;
  while (std::getline(in, l)) {
    if (l.rfind("scenario: ", 0) == 0) current = l.substr(10);
    if (!current.empty()) out[current] += l + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("every shipped scenario reproduces its golden summary", "[golden]") {
  const char* update = std::getenv("IRONLAW_UPDATE_GOLDENS");
  const auto scenarios = shipped_scenarios();
  REQUIRE(scenarios.size() >= 4);
  std::string text =
      "# Golden summaries of the shipped scenarios, one step each (run.steps=1).\n"
      "# Written by scripts/update-goldens.sh; checked by tests/report/golden_summary_test.cpp.\n";
  std::map<std::string, std::string> got;
  for (const auto& sc : scenarios) {
    got[sc] = golden_block(sc);
    text += got[sc];
  }
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(kGoldens, std::ios::binary) << text;
    WARN("wrote " << kGoldens);
    return;
  }
  const auto expected = blocks_of(read_all(kGoldens));
  for (const auto& sc : scenarios) {
    INFO("scenario " << sc << " (regenerate with scripts/update-goldens.sh after an intended change)");
    const auto it = expected.find(sc);
    if (it == expected.end()) FAIL_CHECK("no golden block for " << sc);
    else CHECK(got[sc] == it->second);
  }
  for (const auto& [sc, block] : expected) {
    INFO("golden block for a scenario that is no longer shipped: " << sc);
    CHECK(got.count(sc) == 1);
  }
}
