// Golden summaries of every shipped scenario (scenarios/**/*.yaml): the simulated step time in
// nanoseconds, the events and flows the engine ran, the tasks of the step, the breakdown and
// the MFU, one file per scenario under tests/report/data/goldens/ (the scenario's path with '/'
// as '__'). Any change to any of these figures is a visible diff of that file. The figures are
// not "right" — they pin behaviour, so that a change in the simulated timeline is always a
// decision, never an accident.
//
// Regenerate after an intended change with one command (README, "Golden summaries"):
//   scripts/update-goldens.sh
// which runs these tests with IRONLAW_UPDATE_GOLDENS=1: they then write the files instead of
// comparing, and the diff goes into the commit that changed the behaviour.
//
// Every scenario runs one step (run.steps=1) to keep the suite short (about a minute on two
// cores in all). The two largest Megatron rows take minutes per step (their data-parallel
// all-reduces over thousands of GPUs); kNotSimulated names them, and their golden files say
// so and why. A shipped scenario without a golden file, or a golden file without a shipped
// scenario, fails the test: none is left out silently.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "report/metrics.hpp"
#include "run/parameter_server.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = IRONLAW_SOURCE_DIR;
const std::string kGoldens = kRepo + "/tests/report/data/goldens";

/// Scenarios whose golden holds only their layout and memory, with the reason they are not
/// simulated here.
const std::map<std::string, std::string> kNotSimulated = {
    {"scenarios/megatron-2021/09-gpt-530b.yaml", "one step takes about two minutes on two cores (2,520 GPUs, 280 microbatches)"},
    {"scenarios/megatron-2021/10-gpt-1t.yaml", "one step takes over five minutes on two cores (3,072 GPUs)"},
    {"scenarios/explain/",
     "the published runs `ironlaw explain` accounts for (thousands of GPUs; DeepSeek-V3's step runs for minutes); "
     "tests/report/waterfall_test.cpp and the explain CLI tests pin the waterfall on small fixtures"},
    {"scenarios/validation/llama3-paper/",
     "Llama 3 405B on 8,192 / 16,384 GPUs (Table 4 of the Llama 3 paper): the 16,384-GPU 8K step takes about seven "
     "CPU minutes, the CP 16 row is refused by the step CPU limit; `ironlaw validate` plan llama3-paper runs them"},
    {"scenarios/validation/nemo/llama31-405b-1024gpu-fp8-gbs1536.yaml",
     "one step takes 70–90 CPU s and 4.9 GB (Llama 3.1 405B on 1,024 GPUs, 192 microbatches); `ironlaw validate` "
     "plan nemo-h100-long runs it"},
    {"scenarios/gpt3-175b-zero3-1536.yaml",
     "one step takes over a minute of CPU on two cores (ZeRO-3 over 1,536 GPUs); `make bench` times it"},
};

/// Every shipped scenario under scenarios/`folder`, relative to the repository, sorted.
std::vector<std::string> shipped_scenarios(const std::string& folder, bool recursive) {
  std::vector<std::string> out;
  auto take = [&](const fs::directory_entry& e) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(fs::relative(e.path(), kRepo).string());
  };
  if (recursive) {
    for (const auto& e : fs::recursive_directory_iterator(kRepo + "/scenarios/" + folder)) take(e);
  } else {
    for (const auto& e : fs::directory_iterator(kRepo + "/scenarios/" + folder)) take(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// tests/report/data/goldens/<relative with '/' as "__">.txt
std::string golden_path(std::string relative) {
  for (std::size_t i = relative.find('/'); i != std::string::npos; i = relative.find('/', i)) relative.replace(i, 1, "__");
  return kGoldens + "/" + relative + ".txt";
}

std::string line(const char* key, const char* format, double value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, value);
  return std::string(key) + ": " + buf + "\n";
}

/// The golden summary of one scenario, one step.
std::string golden_summary(const std::string& relative) {
  std::string out = "# golden summary (run.steps=1) of " + relative + "; regenerate: scripts/update-goldens.sh\n";
  // Whole-run scenarios (scenarios/runs/) pin the step their run is made of: the same scenario
  // with run.mode=steps (the whole-run layer has its own tests in tests/training/).
  std::vector<std::string> overrides{"run.steps=1"};
  if (relative.rfind("scenarios/runs/", 0) == 0) overrides.push_back("run.mode=steps");
  const auto s = config::load_scenario(kRepo + "/" + relative, overrides);
  auto skip = kNotSimulated.find(relative);
  if (skip == kNotSimulated.end() && relative.rfind("scenarios/explain/", 0) == 0) skip = kNotSimulated.find("scenarios/explain/");
  if (skip == kNotSimulated.end() && relative.rfind("scenarios/validation/llama3-paper/", 0) == 0) {
    skip = kNotSimulated.find("scenarios/validation/llama3-paper/");
  }
  if (skip != kNotSimulated.end()) {
    const auto lay = run::resolve_layout(s);
    char layout[200];
    std::snprintf(layout, sizeof layout, "layout: gpus %d, dp %d, tp %d, pp %d (%s), cp %d, ep %d, microbatches %d\n",
                  lay.gpus, lay.dp, lay.tp, lay.pp, s.parallel.pp_schedule.c_str(), lay.cp, lay.ep, lay.microbatches);
    return out + layout + "not simulated by this test: " + skip->second + "\n";
  }
  NullSink sink;
  if (s.parameter_server.enabled) {
    // A parameter-server scenario runs its own mode (sim/run/parameter_server.hpp).
    const auto ps = run::simulate_parameter_server(s, sink, run::TraceLevel::none);
    char head[200];
    std::snprintf(head, sizeof head, "parameter_server: %s, %zu workers, %zu servers, %zu shards\n",
                  s.parameter_server.mode.c_str(), ps.plan.worker_gpus.size(), ps.plan.servers.size(),
                  ps.plan.shards.size());
    out += head;
    out += line("worker_compute_ns", "%.0f", static_cast<double>(ps.worker_compute.count_ns()));
    out += line("makespan_ns", "%.0f", static_cast<double>(ps.makespan.count_ns()));
    out += line("events", "%.0f", static_cast<double>(ps.events_executed));
    out += line("flows", "%.0f", static_cast<double>(ps.flows_started));
    out += line("server_nic_out_utilisation", "%.6f", ps.server_nic_out_utilisation);
    out += line("staleness_max", "%.0f", ps.staleness_max);
    return out;
  }
  run::SimulationResult r;
  try {
    r = run::simulate(s, sink, run::TraceLevel::none);
  } catch (const std::exception& e) {
    // A layout this version does not simulate is pinned too, its message without the checkout's path.
    std::string message = e.what();
    for (std::size_t i = message.find(kRepo + "/"); i != std::string::npos; i = message.find(kRepo + "/"))
      message.erase(i, kRepo.size() + 1);
    return out + "refused: " + message + "\n";
  }
  const auto& lay = r.layout;
  char layout[200];
  std::snprintf(layout, sizeof layout, "layout: gpus %d, dp %d, tp %d, pp %d (%s), cp %d, ep %d, microbatches %d\n", lay.gpus,
                lay.dp, lay.tp, lay.pp, s.parallel.pp_schedule.c_str(), lay.cp, lay.ep, lay.microbatches);
  out += layout;
  out += line("memory_per_gpu_bytes", "%.0f", r.memory.total());
  if (r.out_of_memory) return out + "out_of_memory: true\n";
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

bool updating() {
  const char* update = std::getenv("IRONLAW_UPDATE_GOLDENS");
  return update != nullptr && std::string(update) == "1";
}

/// Compares (or, when updating, writes) the golden summary of every scenario in `scenarios`.
void check_goldens(const std::vector<std::string>& scenarios) {
  REQUIRE_FALSE(scenarios.empty());
  for (const auto& sc : scenarios) {
    const std::string got = golden_summary(sc);
    const std::string path = golden_path(sc);
    if (updating()) {
      fs::create_directories(kGoldens);
      std::ofstream(path, std::ios::binary) << got;
      continue;
    }
    INFO("scenario " << sc << ": golden " << path << " (regenerate with scripts/update-goldens.sh after an intended change)");
    REQUIRE(fs::exists(path));
    CHECK(got == read_all(path));
  }
}

}  // namespace

TEST_CASE("the top-level scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("", false));
}

TEST_CASE("the megatron-2021 scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("megatron-2021", false));
}

TEST_CASE("the validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation", false));
}

TEST_CASE("the korthikanti-2022 validation scenarios reproduce their golden summaries", "[golden][slow][korthikanti]") {
  check_goldens(shipped_scenarios("validation/korthikanti-2022", false));
}

TEST_CASE("the bigscience (BLOOM) validation scenario reproduces its golden summary", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/bloom", false));
}

TEST_CASE("the BigScience pre-launch benchmark scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/bloom-prequel", false));
}

TEST_CASE("the MT-NLG 530B validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/mt-nlg", false));
}

TEST_CASE("the NeMo / Megatron-Bridge H100 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/nemo", false));
}

TEST_CASE("the Megatron-Bridge model-card validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/mbridge-cards", false));
}

TEST_CASE("the torchtitan 2025 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/torchtitan-2025", false));
}

TEST_CASE("the MosaicML MPT validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/mosaic-mpt", false));
}

TEST_CASE("the MosaicML MPT H100 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/mosaic-mpt-h100", false));
}

TEST_CASE("the MosaicML MPT A100 torch-2 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/mosaic-mpt-a100-torch2", false));
}

TEST_CASE("the FlashAttention GPT-3 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/flash-attn-gpt3", false));
}

TEST_CASE("the FlashAttention GPT-2 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/flash-attn-gpt2", false));
}

TEST_CASE("the LLaMA (2023) validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/llama1", false));
}

TEST_CASE("the OLMo-core validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/olmo-core", false));
}

TEST_CASE("the Megatron-LM 2024 H100 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/megatron-2024", false));
}

TEST_CASE("the Megatron-core MoE validation scenario reproduces its golden summary", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/megatron-moe", false));
}

TEST_CASE("the torchao float8 validation scenarios reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("validation/torchao", false));
}

TEST_CASE("the whole-run scenarios' steps reproduce their golden summaries", "[golden][slow]") {
  check_goldens(shipped_scenarios("runs", false));
}

TEST_CASE("the scenarios of every other folder reproduce their golden summaries", "[golden][slow]") {
  const std::set<std::string> named{"megatron-2021", "validation", "runs"};
  for (const auto& e : fs::directory_iterator(kRepo + "/scenarios")) {
    if (!e.is_directory() || named.count(e.path().filename().string())) continue;
    INFO("folder scenarios/" << e.path().filename().string());
    check_goldens(shipped_scenarios(e.path().filename().string(), true));
  }
}

TEST_CASE("every shipped scenario has a golden summary and every golden a scenario", "[golden][slow]") {
  std::vector<std::string> expected;
  for (const auto& sc : shipped_scenarios("", true)) expected.push_back(golden_path(sc));
  std::sort(expected.begin(), expected.end());
  // The test cases above cover the top level, each named folder, and every other folder
  // recursively: no scenario escapes them.
  if (updating()) return;
  std::vector<std::string> present;
  for (const auto& e : fs::directory_iterator(kGoldens)) present.push_back(e.path().string());
  std::sort(present.begin(), present.end());
  CHECK(present == expected);
}

TEST_CASE("the Llama 3 paper validation scenarios reproduce their golden layouts", "[golden][llama3-paper]") {
  check_goldens(shipped_scenarios("validation/llama3-paper", false));
}
