// Benchmark of `ironlaw plan` (issue 10): Llama 3 70B on 1,024 to 8,192 H100s, 15T tokens,
// 8M-token batches of 8,192 — "the fewest GPUs that finish in 60 days" — with the top 20
// layouts simulated event by event on 2 threads. Reports the CPU time (target ≤ 60 s on the
// shared 2-core machine), how many layouts each stage kept or discarded, how many step
// simulations ran (ZeRO 1/2 twins share one), and how often the predictor's choice was the
// simulation's. The scenario has no data pipeline, so the planner simulates one step per layout.
#include <cstdio>
#include <string>

#include "bench.hpp"
#include "config/load.hpp"
#include "report/planner.hpp"

namespace {

void bench_plan_llama3_70b() {
  const auto base = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/explain/llama3-70b.yaml",
                                                   {"run.mode=steps", "output.path=none"});
  ironlaw::report::PlanSpace space;
  space.gpus = {1024, 2048, 4096, 8192};
  ironlaw::report::PlanQuestion q;
  q.goal = ironlaw::report::PlanQuestion::Goal::deadline;
  q.deadline_days = 60;
  q.price_per_gpu_hour = 2;
  ironlaw::report::PlanResult res;
  double cpu = 0;
  const double wall = ironlaw::bench::wall_seconds(
      [&] { cpu = ironlaw::bench::cpu_seconds([&] { res = ironlaw::report::plan(base, space, q, 20, 2); }); });
  using ironlaw::bench::report;
  report("plan.llama3_70b_1k_8k.cpu", cpu, "s");
  report("plan.llama3_70b_1k_8k.wall", wall, "s");
  report("plan.llama3_70b_1k_8k.layouts_enumerated", static_cast<double>(res.enumerated), "layouts");
  report("plan.llama3_70b_1k_8k.pruned_invalid", static_cast<double>(res.pruned_invalid), "layouts");
  report("plan.llama3_70b_1k_8k.pruned_not_simulated", static_cast<double>(res.pruned_not_simulated), "layouts");
  report("plan.llama3_70b_1k_8k.pruned_out_of_memory", static_cast<double>(res.pruned_memory), "layouts");
  report("plan.llama3_70b_1k_8k.ranked_by_predictor", static_cast<double>(res.survivors), "layouts");
  report("plan.llama3_70b_1k_8k.discarded_by_predictor", static_cast<double>(res.survivors - res.simulated - res.failed),
         "layouts");
  report("plan.llama3_70b_1k_8k.simulated", static_cast<double>(res.simulated), "layouts");
  report("plan.llama3_70b_1k_8k.step_simulations", static_cast<double>(res.step_simulations), "simulations");
  report("plan.llama3_70b_1k_8k.shared_with_zero1_twin", static_cast<double>(res.shared), "layouts");
  report("plan.llama3_70b_1k_8k.top_choice_agreed", res.agreement.top_choice ? 1 : 0, "bool");
  report("plan.llama3_70b_1k_8k.best_per_gpu_count_agreed", res.agreement.per_gpu_agree, "counts");
  report("plan.llama3_70b_1k_8k.gpu_counts_compared", res.agreement.per_gpu_total, "counts");
  report("plan.llama3_70b_1k_8k.kendall_tau", res.agreement.kendall_tau, "1");
  report("plan.llama3_70b_1k_8k.median_abs_step_error", res.agreement.median_abs_error, "1");
  for (const auto& r : res.rows) {
    if (r.rank != 1) continue;
    report("plan.llama3_70b_1k_8k.answer_gpus", r.gpus, "GPUs");
    report("plan.llama3_70b_1k_8k.answer_days", r.days, "d");
    std::printf("plan.llama3_70b_1k_8k.answer_layout: %s\n", r.layout().c_str());
  }
}

const ironlaw::bench::Register reg_plan("plan.llama3_70b_1k_8k", bench_plan_llama3_70b);

}  // namespace
