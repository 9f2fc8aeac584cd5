// Benchmarks of whole training runs (make bench): the full Llama 3 405B run of issue 9 —
// 15.6T tokens with the batch ramp (about a million steps), 16,384 GPUs, the Llama 3 failure
// counts, Young/Daly asynchronous checkpoints. Target: ≤ 10 s wall and ≤ 1 GiB peak memory.
#include <sys/resource.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "bench.hpp"
#include "config/load.hpp"
#include "training/whole_run.hpp"

namespace {

void bench_llama3_405b_full() {
  const auto scenario = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/runs/llama3-405b-full.yaml");
  // First run: everything, its step simulations on parallel threads. Second run: the same,
  // its step simulations answered from the first's results, so its wall is the run process.
  std::mutex mutex;
  std::map<std::pair<double, double>, ironlaw::run::SimulationResult> results;
  const auto recording = [&](const ironlaw::config::Scenario& s) {
    auto r = ironlaw::training::simulate_step(s);
    const std::lock_guard<std::mutex> lock(mutex);
    results[{s.training.global_batch_tokens, s.topology.node.nic.bandwidth}] = r;
    return r;
  };
  const auto replaying = [&](const ironlaw::config::Scenario& s) {
    const std::lock_guard<std::mutex> lock(mutex);
    return results.at({s.training.global_batch_tokens, s.topology.node.nic.bandwidth});
  };
  ironlaw::training::WholeRunResult w;
  const double s =
      ironlaw::bench::wall_seconds([&] { w = ironlaw::training::simulate_whole_run(scenario, nullptr, {}, recording); });
  const double process_s = ironlaw::bench::wall_seconds(
      [&] { ironlaw::training::simulate_whole_run(scenario, nullptr, {}, replaying); });
  ironlaw::bench::report("training.llama3_405b_full.wall", s, "s");
  ironlaw::bench::report("training.llama3_405b_full.run_process_wall", process_s, "s");
  ironlaw::bench::report("training.llama3_405b_full.step_simulations", w.step_simulations, "simulations");
  ironlaw::bench::report("training.llama3_405b_full.steps_run", static_cast<double>(w.steps_run), "steps");
  ironlaw::bench::report("training.llama3_405b_full.interruptions", w.interruptions, "interruptions");
  ironlaw::bench::report("training.llama3_405b_full.wall_days", w.wall_s / 86400, "d");
  ironlaw::bench::report("training.llama3_405b_full.ettr", w.ettr, "1");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  ironlaw::bench::report("training.llama3_405b_full.peak_rss_so_far", static_cast<double>(usage.ru_maxrss) / 1024.0,
                         "MiB");
}

const ironlaw::bench::Register reg_full("training.llama3_405b_full", bench_llama3_405b_full);

}  // namespace
