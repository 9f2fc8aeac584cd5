// Benchmarks of whole training runs (make bench): the full Llama 3 405B run of issue 9 —
// 15.6T tokens with the batch ramp (about a million steps), 16,384 GPUs, the Llama 3 failure
// counts, Young/Daly asynchronous checkpoints. Target: ≤ 10 s wall and ≤ 1 GiB peak memory.
#include <sys/resource.h>

#include <string>

#include "bench.hpp"
#include "config/load.hpp"
#include "training/whole_run.hpp"

namespace {

void bench_llama3_405b_full() {
  const auto scenario = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/runs/llama3-405b-full.yaml");
  ironlaw::training::WholeRunResult w;
  double step_s = 0;  // the step simulations the run needs (cached: each configuration once)
  const auto timed_step = [&](const ironlaw::config::Scenario& s) {
    ironlaw::run::SimulationResult r;
    step_s += ironlaw::bench::wall_seconds([&] { r = ironlaw::training::simulate_step(s); });
    return r;
  };
  const double s =
      ironlaw::bench::wall_seconds([&] { w = ironlaw::training::simulate_whole_run(scenario, nullptr, {}, timed_step); });
  ironlaw::bench::report("training.llama3_405b_full.wall", s, "s");
  ironlaw::bench::report("training.llama3_405b_full.step_simulations_wall", step_s, "s");
  ironlaw::bench::report("training.llama3_405b_full.run_process_wall", s - step_s, "s");
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
