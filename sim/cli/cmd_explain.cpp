// `ironlaw explain`: account for a model card's published GPU-hours with a waterfall from 6ND at
// peak through the simulated step and the simulated whole run, print what stays unexplained,
// then search cluster and batch sizes for the ones that would spend the published hours.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "report/inverse_search.hpp"
#include "report/metrics.hpp"
#include "report/waterfall.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"
#include "workload/model_cost.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// "0.5,1,2" → {0.5, 1, 2}; each factor in (0, 64].
std::vector<double> factors(const std::string& option, const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v > 0) || v > 64)
      throw InputError({}, option, "expected a comma-separated list of factors in (0, 64], got \"" + text + "\"");
    out.push_back(v);
  }
  if (out.empty() || out.size() > 8) throw InputError({}, option, "expected 1 to 8 factors, got \"" + text + "\"");
  return out;
}

/// What one explained scenario comes to, for the side-by-side comparison.
struct Explained {
  std::string name;
  double published_hours = 0;
  double simulated_hours = 0;
  double implied_mfu_6n = 0;      ///< 6N over the published hours (seed 003's convention)
  double implied_mfu = 0;         ///< PaLM count over the published hours
  double step_mfu = 0;            ///< simulated step
  double run_mfu = 0;             ///< PaLM count over the simulated GPU-hours
  double ettr = 1;
  int gpus = 0;
};

/// Simulates `s`, prints its waterfall (and the search unless `search` is false).
Explained explain(const config::Scenario& s, double published_hours, bool search, const report::SearchBounds& bounds,
                  unsigned jobs, int& exit_code) {
  Explained e;
  e.name = s.model.name;
  e.published_hours = published_hours;
  NullSink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::none);
  if (r.out_of_memory) {
    std::cerr << "ironlaw explain: " << s.name << ": the layout does not fit in memory\n" << report::format_memory_table(r);
    exit_code = kExitJobFailed;
    return e;
  }
  training::WholeRunResult whole;
  const bool full = s.run.mode == "full";
  if (full) whole = training::simulate_whole_run(s, &r);
  const auto w = report::build_waterfall(s, r, full ? &whole : nullptr);
  const auto m = report::summary_metrics(s, r, full ? &whole : nullptr);
  e.gpus = r.gpus;
  e.simulated_hours = w.simulated_hours;
  e.implied_mfu_6n = report::implied_utilisation(w.six_n_flops, w.peak_flops_per_gpu, published_hours);
  e.implied_mfu = report::implied_utilisation(w.model_flops, w.peak_flops_per_gpu, published_hours);
  e.step_mfu = report::metric(m, "mfu");
  e.run_mfu = w.simulated_mfu;
  if (full) e.ettr = whole.ettr;
  std::printf("%s: %s, %.4g tokens on %d GPUs (%d x %s, %s)\n", s.name.c_str(), s.model.name.c_str(),
              s.training.tokens, r.gpus, s.nodes, s.topology.node.name.c_str(), s.topology.device.name.c_str());
  std::printf("layout: tp %d, pp %d%s, dp %d, ep %d, ZeRO %d; batch %.4g tokens; %s at %.1f TFLOP/s peak per GPU\n\n",
              r.layout.tp, r.layout.pp, r.layout.pp > 1 ? (" (" + s.parallel.pp_schedule + ")").c_str() : "",
              r.layout.dp, r.layout.ep, s.parallel.zero, r.tokens_per_step, s.training.precision.c_str(),
              r.peak_flops_per_gpu / 1e12);
  std::printf("  %-44s %14.0f\n", "published GPU-hours", published_hours);
  std::printf("  %-44s %14.3f s\n", "simulated step time", r.step_time_s);
  std::printf("  %-44s %13.1f %%\n", "simulated MFU per step (PaLM)", 100.0 * report::metric(m, "mfu"));
  if (full) {
    std::printf("  %-44s %14.1f\n", "simulated wall-clock days", whole.wall_s / 86400.0);
    std::printf("  %-44s %14d\n", "simulated interruptions", whole.interruptions);
    std::printf("  %-44s %13.1f %%\n", "simulated ETTR", 100.0 * whole.ettr);
  }
  std::printf("\n%s", report::format_waterfall(w, published_hours).c_str());

  const double naive_mfu = report::implied_utilisation(w.six_n_flops, w.peak_flops_per_gpu, published_hours);
  if (naive_mfu > 1) {
    const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
    std::printf("\nNaive 6ND over all %.4g parameters implies %.0f %% MFU from the published hours: impossible.\n"
                "Each token passes through %.4g activated parameters (6N_active = %.3g FLOP/token against\n"
                "6N = %.3g); the PaLM count of those gives the %.1f %% above.\n",
                fpt.six_n / 6, 100 * naive_mfu, fpt.six_n_active / 6, fpt.six_n_active, fpt.six_n,
                100 * report::implied_utilisation(w.model_flops, w.peak_flops_per_gpu, published_hours));
  }
  if (w.simulated_hours < published_hours) {
    std::printf("\nThe simulation accounts for %.1f %% of the published hours; the other %.0f GPU-hours are not\n"
                "explained by this layout and run, and are not absorbed into any constant.\n",
                100.0 * w.simulated_hours / published_hours, published_hours - w.simulated_hours);
  } else {
    std::printf("\nThe simulation needs %.1f %% of the published hours: the published run was faster than this\n"
                "configuration simulates (another layout or cluster, or a schedule the simulation misses).\n",
                100.0 * w.simulated_hours / published_hours);
  }
  if (search) {
    const auto res = report::inverse_search(s, published_hours, bounds, full ? &whole : nullptr, jobs);
    std::printf("\n%s", report::format_search(res, bounds, 6).c_str());
  }
  return e;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
  return buf;
}

/// Two explained scenarios side by side (seed 003's puzzle: two models on one cluster).
void print_comparison(const Explained& a, const Explained& b) {
  std::printf("\n%-48s %16s %16s\n", "side by side", a.name.c_str(), b.name.c_str());
  auto line = [](const char* what, const std::string& x, const std::string& y) {
    std::printf("  %-46s %16s %16s\n", what, x.c_str(), y.c_str());
  };
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return std::string(buf);
  };
  line("GPUs", num(a.gpus), num(b.gpus));
  line("published GPU-hours", num(a.published_hours), num(b.published_hours));
  line("MFU implied by published hours (6N)", pct(a.implied_mfu_6n), pct(b.implied_mfu_6n));
  line("MFU implied by published hours (PaLM)", pct(a.implied_mfu), pct(b.implied_mfu));
  line("simulated MFU per step (PaLM)", pct(a.step_mfu), pct(b.step_mfu));
  line("simulated ETTR", pct(a.ettr), pct(b.ettr));
  line("simulated MFU over simulated GPU-hours", pct(a.run_mfu), pct(b.run_mfu));
  line("simulated / published GPU-hours", pct(a.simulated_hours / a.published_hours),
       pct(b.simulated_hours / b.published_hours));
  line("unexplained GPU-hours (published - simulated)", num(a.published_hours - a.simulated_hours),
       num(b.published_hours - b.simulated_hours));
  const double implied_ratio = b.implied_mfu / a.implied_mfu;
  const double simulated_ratio = b.run_mfu / a.run_mfu;
  std::printf("  The published hours imply MFUs a factor %.2f apart (%s / %s); the simulated runs, a factor %.2f.\n",
              implied_ratio, b.name.c_str(), a.name.c_str(), simulated_ratio);
  if ((implied_ratio > 1) == (simulated_ratio > 1) && std::fabs(std::log(implied_ratio)) > 0) {
    std::printf("  The simulation explains %s of that factor (in log terms); a factor %.2f stays unexplained.\n",
                pct(std::log(simulated_ratio) / std::log(implied_ratio)).c_str(), implied_ratio / simulated_ratio);
  } else {
    std::printf("  The simulation orders them the other way round, so it explains none of it: a factor %.2f\n"
                "  stays unexplained.\n",
                implied_ratio / simulated_ratio);
  }
}

double published_for(const config::Scenario& s, const char* option) {
  if (!s.model.published.gpu_hours)
    throw InputError({}, option, "required: the model card " + s.model.name + " publishes no gpu_hours");
  return *s.model.published.gpu_hours;
}

}  // namespace

int cmd_explain(const Args& args) {
  po::options_description opts("ironlaw explain SCENARIO.yaml [--published-gpu-hours H] [--set KEY=VALUE]...");
  std::string scenario_path, compare_path;
  std::vector<std::string> sets;
  double published_hours = 0;
  std::string search_nodes = "0.5,1,2";
  std::string search_batch = "0.5,1,2";
  unsigned jobs = 2;
  opts.add_options()
      ("help,h", "show this help")
      ("scenario", po::value(&scenario_path), "scenario YAML (training.tokens is the run length; run.mode full adds the whole run)")
      ("published-gpu-hours", po::value(&published_hours), "GPU-hours the model card reports (default: the model's published.gpu_hours)")
      ("set", po::value(&sets)->composing(), "KEY=VALUE override (repeatable, applies to both scenarios)")
      ("compare", po::value(&compare_path), "a second scenario (its model card's published.gpu_hours), explained and set beside the first (no search)")
      ("search-nodes", po::value(&search_nodes), "inverse search: factors of cluster.nodes (default 0.5,1,2)")
      ("search-batch", po::value(&search_batch), "inverse search: factors of training.global_batch_tokens (default 0.5,1,2)")
      ("no-search", "skip the inverse search")
      ("jobs,j", po::value(&jobs), "step simulations of the search run at once (default 2)");
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  report::SearchBounds bounds;
  bounds.node_factors = factors("--search-nodes", search_nodes);
  bounds.batch_factors = factors("--search-batch", search_batch);
  if (jobs < 1 || jobs > 256) throw InputError({}, "--jobs", "expected 1 to 256");
  std::vector<config::Scenario> scenarios{config::load_scenario(scenario_path, sets)};
  if (!compare_path.empty()) scenarios.push_back(config::load_scenario(compare_path, sets));
  std::vector<double> published;
  for (const auto& s : scenarios) {
    training::refuse_unsimulated(s);
    if (!(s.training.tokens > 0))
      throw InputError(s.where("training.tokens"), "training.tokens", "explain needs the run length in tokens");
  }
  published.push_back(vm.count("published-gpu-hours") ? published_hours
                                                       : published_for(scenarios[0], "--published-gpu-hours"));
  if (scenarios.size() > 1) published.push_back(published_for(scenarios[1], "--compare"));
  for (const double p : published)
    if (!(p > 0) || !std::isfinite(p)) throw InputError({}, "--published-gpu-hours", "expected a positive number of hours");

  int exit_code = kExitOk;
  std::vector<Explained> done;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (i > 0) std::printf("\n\n");
    const bool search = !vm.count("no-search") && scenarios.size() == 1;  // --compare: no search
    done.push_back(explain(scenarios[i], published[i], search, bounds, jobs, exit_code));
    if (exit_code != kExitOk) return exit_code;
  }
  if (done.size() == 2) print_comparison(done[0], done[1]);
  return kExitOk;
}

}  // namespace ironlaw::cli
