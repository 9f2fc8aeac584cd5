// Benchmarks of whole training runs (make bench): the full Llama 3 405B run of issue 9 —
// 15.6T tokens with the batch ramp (about a million steps), 16,384 GPUs, the Llama 3 failure
// counts, Young/Daly asynchronous checkpoints — and a sweep of 20 checkpoint intervals over it
// on 2 threads, as `ironlaw sweep -j 2 --vary reliability.checkpoint.interval=...` runs it.
// Targets: the run ≤ 10 s and ≤ 1 GiB, the sweep ≤ 60 s. CPU seconds (user + system, all
// threads) are the measure that other processes on the machine do not change; wall is printed
// beside them.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "config/load.hpp"
#include "report/metrics.hpp"
#include "training/whole_run.hpp"

namespace {

const char* const kScenario = IRONLAW_SOURCE_DIR "/scenarios/runs/llama3-405b-full.yaml";

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Makespan of jobs of `cost` CPU seconds on `threads` idle threads that each take the next
/// ready job of the queue (in index order) as they come free, the pool's rule; a job with a
/// parent becomes ready when the parent ends. O(n²).
double makespan(const std::vector<double>& cost, const std::vector<int>& parent, int threads) {
  const std::size_t n = cost.size();
  std::vector<double> end(n, 0);
  std::vector<bool> placed(n, false);
  std::vector<double> free_at(static_cast<std::size_t>(threads), 0);
  auto known = [&](std::size_t j) { return !placed[j] && (parent[j] < 0 || placed[static_cast<std::size_t>(parent[j])]); };
  auto ready = [&](std::size_t j) { return parent[j] < 0 ? 0.0 : end[static_cast<std::size_t>(parent[j])]; };
  double last = 0;
  for (std::size_t k = 0; k < n; ++k) {
    // The thread free first takes the first queued job ready by then, or waits for the first
    // to become ready.
    auto t = std::min_element(free_at.begin(), free_at.end());
    double earliest = 1e300;
    for (std::size_t j = 0; j < n; ++j) {
      if (known(j)) earliest = std::min(earliest, ready(j));
    }
    const double start = std::max(*t, earliest);
    std::size_t pick = 0;
    while (!(known(pick) && ready(pick) <= start)) ++pick;
    end[pick] = start + cost[pick];
    placed[pick] = true;
    *t = end[pick];
    last = std::max(last, end[pick]);
  }
  return last;
}

/// The run's step simulations one at a time on this thread, each timed in thread CPU seconds
/// (what another process on the machine does not change), and the wall time two idle cores
/// would take for them: in one pool where a stage's contended step joins as soon as its own
/// step is done (this version), and in two rounds, the stages' steps and then the contended ones
/// (the version before; each round in ramp order).
void bench_llama3_405b_schedule() {
  const auto scenario = ironlaw::config::load_scenario(kScenario);
  ironlaw::training::clear_shared_steps();
  std::mutex mutex;
  std::map<std::pair<double, bool>, double> cpu;  // (batch, beside a write) → CPU seconds
  std::map<std::pair<double, bool>, double> step_s;  // (batch, beside a write) → simulated step time
  const double nic = scenario.topology.node.nic.bandwidth;
  const ironlaw::training::StepCache::Simulate timed = [&](const ironlaw::config::Scenario& s) {
    const double t0 = thread_cpu_seconds();
    auto r = ironlaw::training::simulate_step(s);
    const double used = thread_cpu_seconds() - t0;
    const std::lock_guard<std::mutex> lock(mutex);
    cpu[{s.training.global_batch_tokens, s.topology.node.nic.bandwidth < nic}] = used;
    step_s[{s.training.global_batch_tokens, s.topology.node.nic.bandwidth < nic}] = r.step_time_s;
    return r;
  };
  ironlaw::training::simulate_whole_run(scenario, nullptr, {}, timed);
  std::vector<double> batches;
  for (const auto& [key, seconds] : cpu) {
    if (!key.second) batches.push_back(key.first);
  }
  if (batches.empty()) return;
  double total = 0;
  for (const auto& [key, seconds] : cpu) {
    total += seconds;
    char name[128];
    std::snprintf(name, sizeof name, "training.llama3_405b_schedule.step_%.0fMi%s_cpu", key.first / (1 << 20),
                  key.second ? "_beside_write" : "");
    ironlaw::bench::report(name, seconds, "s");
    std::snprintf(name, sizeof name, "training.llama3_405b_schedule.step_%.0fMi%s_simulated_step", key.first / (1 << 20),
                  key.second ? "_beside_write" : "");
    ironlaw::bench::report(name, step_s[key], "s");
  }
  // This version: stages largest batch first, each contended step queued when its stage's ends.
  std::vector<double> cost;
  std::vector<int> parent;
  std::vector<double> desc = batches;
  std::sort(desc.rbegin(), desc.rend());
  for (const double b : desc) {
    cost.push_back(cpu[{b, false}]);
    parent.push_back(-1);
  }
  for (std::size_t i = 0; i < desc.size(); ++i) {
    if (!cpu.count({desc[i], true})) continue;
    cost.push_back(cpu[{desc[i], true}]);
    parent.push_back(static_cast<int>(i));
  }
  const double pool = makespan(cost, parent, 2);
  // Before: two rounds, ramp order (ascending batch), each waiting for the whole round.
  double rounds = 0;
  for (const bool beside : {false, true}) {
    std::vector<double> c;
    for (const double b : batches) {
      if (cpu.count({b, beside})) c.push_back(cpu[{b, beside}]);
    }
    if (!c.empty()) rounds += makespan(c, std::vector<int>(c.size(), -1), 2);
  }
  ironlaw::bench::report("training.llama3_405b_schedule.step_simulations_cpu", total, "s");
  ironlaw::bench::report("training.llama3_405b_schedule.two_core_wall_one_pool", pool, "s");
  ironlaw::bench::report("training.llama3_405b_schedule.two_core_wall_two_rounds", rounds, "s");
}

void bench_llama3_405b_full() {
  const auto scenario = ironlaw::config::load_scenario(kScenario);
  // Cold: every step simulation of the run (the three batch stages, each also beside a write).
  ironlaw::training::clear_shared_steps();
  const std::uint64_t before = ironlaw::training::shared_step_simulations();
  ironlaw::training::WholeRunResult w;
  double wall = 0;
  const double cpu = ironlaw::bench::cpu_seconds(
      [&] { wall = ironlaw::bench::wall_seconds([&] { w = ironlaw::training::simulate_whole_run(scenario); }); });
  const auto simulated = static_cast<double>(ironlaw::training::shared_step_simulations() - before);
  // Warm: the same run with its steps answered from the cache, so what is left is the run
  // process itself (failures, checkpoints, restarts over 1.1 M steps).
  double process_wall = 0;
  const double process_cpu = ironlaw::bench::cpu_seconds([&] {
    process_wall = ironlaw::bench::wall_seconds([&] { ironlaw::training::simulate_whole_run(scenario); });
  });
  ironlaw::bench::report("training.llama3_405b_full.cpu", cpu, "s");
  ironlaw::bench::report("training.llama3_405b_full.wall", wall, "s");
  ironlaw::bench::report("training.llama3_405b_full.run_process_cpu", process_cpu, "s");
  ironlaw::bench::report("training.llama3_405b_full.run_process_wall", process_wall, "s");
  ironlaw::bench::report("training.llama3_405b_full.step_simulations", simulated, "simulations");
  ironlaw::bench::report("training.llama3_405b_full.steps_run", static_cast<double>(w.steps_run), "steps");
  ironlaw::bench::report("training.llama3_405b_full.interruptions", w.interruptions, "interruptions");
  ironlaw::bench::report("training.llama3_405b_full.wall_days", w.wall_s / 86400, "d");
  ironlaw::bench::report("training.llama3_405b_full.ettr", w.ettr, "1");
  ironlaw::bench::report("training.llama3_405b_full.peak_rss_so_far", peak_rss_mib(), "MiB");
}

void bench_llama3_405b_sweep() {
  // 20 fixed intervals, 2 min to 4 h in equal ratios; each point as a sweep runs it: its step
  // (shared cache), then its whole run.
  std::vector<ironlaw::config::Scenario> points;
  for (int i = 0; i < 20; ++i) {
    const double minutes = 2 * std::pow(120.0, i / 19.0);
    char interval[64];
    std::snprintf(interval, sizeof interval, "reliability.checkpoint.interval=%.3f min", minutes);
    points.push_back(ironlaw::config::load_scenario(kScenario, {"reliability.checkpoint.policy=fixed", interval}));
  }
  ironlaw::training::clear_shared_steps();
  const std::uint64_t before = ironlaw::training::shared_step_simulations();
  std::vector<double> goodput(points.size());
  double wall = 0;
  const double cpu = ironlaw::bench::cpu_seconds([&] {
    wall = ironlaw::bench::wall_seconds([&] {
      std::atomic<std::size_t> next{0};
      auto worker = [&] {
        for (std::size_t i = next++; i < points.size(); i = next++) {
          const auto step = ironlaw::training::shared_simulate_step(points[i]);
          goodput[i] = ironlaw::training::simulate_whole_run(points[i], &step).goodput;
        }
      };
      std::thread other(worker);
      worker();
      other.join();
    });
  });
  std::size_t best = 0;
  for (std::size_t i = 1; i < goodput.size(); ++i) best = goodput[i] > goodput[best] ? i : best;
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.cpu", cpu, "s");
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.wall", wall, "s");
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.step_simulations",
                         static_cast<double>(ironlaw::training::shared_step_simulations() - before), "simulations");
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.best_interval", 2 * std::pow(120.0, best / 19.0), "min");
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.best_goodput", goodput[best], "1");
  ironlaw::bench::report("training.llama3_405b_sweep20_j2.peak_rss_so_far", peak_rss_mib(), "MiB");
}

const ironlaw::bench::Register reg_full("training.llama3_405b_full", bench_llama3_405b_full);
const ironlaw::bench::Register reg_schedule("training.llama3_405b_schedule", bench_llama3_405b_schedule);
const ironlaw::bench::Register reg_sweep("training.llama3_405b_sweep", bench_llama3_405b_sweep);

}  // namespace
