// Benchmark of `ironlaw plan` (issue 10): Llama 3 70B on 1,024 to 8,192 H100s, 15T tokens,
// 8M-token batches of 8,192 — "the fewest GPUs that finish in 60 days" — with the top 20
// layouts simulated event by event on 2 threads. Reports the CPU time (user + sys; target
// ≤ 60 s on the shared 2-core machine), the wall time, the peak RSS, how many layouts each
// stage kept or discarded, how many step simulations ran (ZeRO 1/2 twins share one), how
// often the predictor's choice was the simulation's, and a profile: each step simulation's
// CPU time on its thread with the engine's events, flows and re-solves. The scenario has no
// data pipeline, so the planner simulates one step per layout.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "config/load.hpp"
#include "report/planner.hpp"

namespace {

/// CPU seconds of the calling thread.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Profiled {
  std::string layout;
  int gpus = 0;
  double cpu_s = 0;
  ironlaw::report::SimulationWork work;
};

/// One profile line, printed as each simulation ends (a long run shows its progress) and again
/// sorted at the end.
void print_profile(const char* what, const Profiled& p) {
  std::printf("plan.llama3_70b_1k_8k.%s: %7.2f s cpu %10llu events %9llu flows %9llu records %9llu resolves %8llu tasks  %5d GPUs %s\n",
              what, p.cpu_s, static_cast<unsigned long long>(p.work.events), static_cast<unsigned long long>(p.work.flows),
              static_cast<unsigned long long>(p.work.flow_records), static_cast<unsigned long long>(p.work.resolves),
              static_cast<unsigned long long>(p.work.tasks), p.gpus, p.layout.c_str());
  std::fflush(stdout);
}

void bench_plan_llama3_70b() {
  namespace report = ironlaw::report;
  const auto base = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/explain/llama3-70b.yaml",
                                                   {"run.mode=steps", "output.path=none"});
  report::PlanSpace space;
  space.gpus = {1024, 2048, 4096, 8192};
  report::PlanQuestion q;
  q.goal = report::PlanQuestion::Goal::deadline;
  q.deadline_days = 60;
  q.price_per_gpu_hour = 2;
  constexpr unsigned kThreads = 2;
  constexpr std::size_t kTop = 20;

  // The planner's own thread pool, with each step simulation timed on its thread.
  std::vector<Profiled> profile;
  std::mutex profile_mutex;
  const report::SimulateRows timed = [&](std::vector<report::PlanRow>& rows, const std::function<void(report::PlanRow&)>&) {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t j = next++; j < rows.size(); j = next++) {
        const double t0 = thread_cpu_seconds();
        const report::SimulationWork w = report::simulate_row(base, q, rows[j]);
        const double t1 = thread_cpu_seconds();
        const std::lock_guard<std::mutex> lock(profile_mutex);
        profile.push_back({rows[j].layout(), rows[j].gpus, t1 - t0, w});
        print_profile("simulated", profile.back());
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < kThreads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    return true;
  };

  report::PlanResult res;
  double cpu = 0;
  const double wall = ironlaw::bench::wall_seconds(
      [&] { cpu = ironlaw::bench::cpu_seconds([&] { res = report::plan(base, space, q, kTop, kThreads, timed); }); });
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const std::string b = "plan.llama3_70b_1k_8k.";
  auto put = [&](const char* name, double v, const char* unit) { ironlaw::bench::report((b + name).c_str(), v, unit); };
  put("cpu", cpu, "s (user+sys)");
  put("wall", wall, "s");
  put("peak_rss", static_cast<double>(usage.ru_maxrss) / 1024.0, "MiB");
  put("layouts_enumerated", static_cast<double>(res.enumerated), "layouts");
  put("pruned_invalid", static_cast<double>(res.pruned_invalid), "layouts");
  put("pruned_not_simulated", static_cast<double>(res.pruned_not_simulated), "layouts");
  put("pruned_out_of_memory", static_cast<double>(res.pruned_memory), "layouts");
  put("memory_replayed", static_cast<double>(res.memory_replayed), "layouts");
  put("memory_rescued", static_cast<double>(res.memory_rescued), "layouts");
  put("ranked_by_predictor", static_cast<double>(res.survivors), "layouts");
  put("discarded_by_predictor", static_cast<double>(res.survivors - res.simulated - res.failed), "layouts");
  put("simulated", static_cast<double>(res.simulated), "layouts");
  put("failed", static_cast<double>(res.failed), "layouts");
  put("step_simulations", static_cast<double>(res.step_simulations), "simulations");
  put("shared_with_zero1_twin", static_cast<double>(res.shared), "layouts");
  put("top_choice_agreed", res.agreement.top_choice ? 1 : 0, "bool");
  put("best_per_gpu_count_agreed", res.agreement.per_gpu_agree, "counts");
  put("gpu_counts_compared", res.agreement.per_gpu_total, "counts");
  put("kendall_tau", res.agreement.kendall_tau, "1");
  put("median_abs_step_error", res.agreement.median_abs_error, "1");

  // Top-5 overlap: of the simulation's best five, how many the predictor also put in its five.
  std::vector<const report::PlanRow*> sim;
  for (const auto& r : res.rows)
    if (r.status == "ok") sim.push_back(&r);
  std::vector<const report::PlanRow*> by_pred = sim;
  std::stable_sort(by_pred.begin(), by_pred.end(),
                   [](const report::PlanRow* x, const report::PlanRow* y) { return x->predicted_rank < y->predicted_rank; });
  const std::size_t five = std::min<std::size_t>(5, sim.size());
  std::size_t overlap = 0;
  for (std::size_t i = 0; i < five; ++i)
    if (std::find(by_pred.begin(), by_pred.begin() + static_cast<long>(five), sim[i]) != by_pred.begin() + static_cast<long>(five))
      ++overlap;
  put("top5_overlap", static_cast<double>(overlap), "of 5");
  for (const auto* r : sim) {
    if (r->rank != 1) continue;
    put("answer_gpus", r->gpus, "GPUs");
    put("answer_days", r->days, "d");
    std::printf("%sanswer_layout: %s\n", b.c_str(), r->layout().c_str());
  }

  // Profile, most expensive first. Shared rows and retries after a failed twin are not here.
  std::stable_sort(profile.begin(), profile.end(), [](const Profiled& x, const Profiled& y) { return x.cpu_s > y.cpu_s; });
  double total = 0;
  for (const auto& p : profile) total += p.cpu_s;
  put("simulation_cpu_total", total, "s (thread CPU)");
  for (const auto& p : profile) print_profile("profile", p);
}

const ironlaw::bench::Register reg_plan("plan.llama3_70b_1k_8k", bench_plan_llama3_70b);

}  // namespace
