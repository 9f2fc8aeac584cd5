// `ironlaw explain`: account for a model card's published GPU-hours with a waterfall from 6ND at
// peak through the simulated step and the simulated whole run, print what stays unexplained,
// then search cluster and batch sizes for the ones that would spend the published hours.
#include <boost/program_options.hpp>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_ps.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "report/inverse_search.hpp"
#include "report/metrics.hpp"
#include "report/waterfall.hpp"
#include "run/layout.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"
#include "workload/model_cost.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// Most --what-if options in one command: each is one more row of simulations (per scenario).
constexpr std::size_t kMaxWhatIfs = 16;

/// "0.5,1,2" → {0.5, 1, 2}; each factor in [1/64, 64] (a denormal factor would only make
/// rows of zero nodes or tokens).
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
    if (used == 0 || used != item.size() || !(v >= 1.0 / 64) || v > 64)
      throw InputError({}, option, "expected a comma-separated list of factors from 1/64 to 64, got \"" + text + "\"");
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
  report::Waterfall waterfall;    ///< its bars, for the per-bar comparison
};

/// Simulates `s`, prints its waterfall (and the search unless `search` is false).
Explained explain(const config::Scenario& s, double published_hours, bool search, const report::SearchBounds& bounds,
                  unsigned jobs, int& exit_code) {
  Explained e;
  e.name = s.model.name;
  e.published_hours = published_hours;
  // Bounded by --step-cpu-limit like every simulation (run/cpu_budget.hpp): past it, exit 2.
  NullSink sink;
  const run::SimulationResult r = run::simulate(s, sink, run::TraceLevel::none);
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
  e.waterfall = w;
  if (full) e.ettr = whole.ettr;
  std::printf("%s: %s, %.4g tokens on %d GPUs (%d x %s, %s)\n", printable(s.name).c_str(), printable(s.model.name).c_str(),
              s.training.tokens, r.gpus, s.nodes, printable(s.topology.node.name).c_str(),
              printable(s.topology.device.name).c_str());
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
    std::printf("%-46s %18s %18s\n", "Beside it, the same counts:", "published hours", "simulated hours");
    std::printf("  %-44s %18.0f %18.0f\n", "GPU-hours of the run", published_hours, w.simulated_hours);
    std::printf("  %-44s %16.1f %% %16.1f %%\n", "MFU, 6N over all parameters (naive)", 100 * naive_mfu,
                100 * w.simulated_mfu_6n);
    std::printf("  %-44s %16.1f %% %16.1f %%\n", "MFU, PaLM count (activated parameters)",
                100 * report::implied_utilisation(w.model_flops, w.peak_flops_per_gpu, published_hours),
                100 * w.simulated_mfu);
    std::printf("  %-44s %18s %16.1f %%\n", "MFU per simulated step (PaLM count)", "",
                100 * report::metric(m, "mfu"));
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
    std::printf("\n%s", printable(report::format_search(res, bounds, 6)).c_str());  // reasons quote values
  }
  return e;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
  return buf;
}

/// One row of the what-if table: the scenario with some keys changed, simulated step and run.
struct WhatIf {
  std::string change;        ///< "KEY=VALUE; KEY=VALUE", or why it was not simulated
  bool simulated = false;
  double step_mfu = 0;
  double ettr = 1;
  double simulated_hours = 0;
  double run_mfu = 0;        ///< PaLM count over the simulated GPU-hours
};

/// "K=V;K=V" → {"K=V", "K=V"} (spaces around items dropped).
std::vector<std::string> split_changes(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) {
    const auto first = item.find_first_not_of(' ');
    const auto last = item.find_last_not_of(' ');
    if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
  }
  if (out.empty()) throw InputError({}, "--what-if", "expected KEY=VALUE[;KEY=VALUE...], got \"" + text + "\"");
  return out;
}

/// Simulates `scenario_path` with `sets` and `changes` applied: its step and (run.mode full) its
/// whole run, as explain does, without printing. A change that makes the layout invalid or
/// out of memory, or above the command's resource limits, is a row saying so.
WhatIf what_if(const std::string& scenario_path, std::vector<std::string> sets, const std::vector<std::string>& changes,
               const std::string& label, const Limits& limits) {
  WhatIf w;
  w.change = label;
  sets.insert(sets.end(), changes.begin(), changes.end());
  const auto s = config::load_scenario(scenario_path, sets);
  training::refuse_unsimulated(s);
  run::SimulationResult r;
  try {
    if (const std::string why = limits_refusal(s, run::resolve_layout(s), limits); !why.empty()) {
      w.change += "  (not simulated: " + why + ")";
      return w;
    }
    r = training::shared_simulate_step(s);
  } catch (const InputError& e) {
    w.change += "  (not simulated: " + std::string(e.what()) + ")";
    return w;
  }
  if (r.out_of_memory) {
    w.change += "  (out of memory)";
    return w;
  }
  training::WholeRunResult whole;
  const bool full = s.run.mode == "full";
  if (full) whole = training::simulate_whole_run(s, &r);
  const auto waterfall = report::build_waterfall(s, r, full ? &whole : nullptr);
  w.simulated = true;
  w.step_mfu = report::metric(report::summary_metrics(s, r, full ? &whole : nullptr), "mfu");
  if (full) w.ettr = whole.ettr;
  w.simulated_hours = waterfall.simulated_hours;
  w.run_mfu = waterfall.simulated_mfu;
  return w;
}

/// The what-if table: each change alone, then all of them together, against the published
/// hours; with --compare, the same changes applied to both scenarios and the ratio of their
/// MFUs over the simulated hours against the ratio the published hours imply.
void print_what_ifs(const std::vector<Explained>& base, const std::vector<std::vector<WhatIf>>& rows) {
  std::printf("\nwhat if (each change alone, then all together; every change is an assumption of the user's,\n"
              "a GUESS unless its source is given):\n");
  const bool two = base.size() == 2;
  std::printf("  %-60s %8s %8s %12s %11s", "change", "step MFU", "ETTR", "sim. GPU-h", "unexplained");
  if (two) std::printf(" | %8s %12s %11s | %9s", "step MFU", "sim. GPU-h", "unexplained", "MFU ratio");
  std::printf("\n");
  if (two) {
    std::printf("  %-60s %42s | %33s | %9s\n", "", base[0].name.c_str(), base[1].name.c_str(), "2nd / 1st");
  }
  const double published_ratio = two ? base[1].implied_mfu / base[0].implied_mfu : 0;
  auto cells = [](const Explained& e, double mfu, double ettr, double hours, bool with_ettr) {
    char buf[128];
    if (with_ettr) {
      std::snprintf(buf, sizeof buf, " %8s %8s %12.0f %11.0f", pct(mfu).c_str(), pct(ettr).c_str(), hours,
                    e.published_hours - hours);
    } else {
      std::snprintf(buf, sizeof buf, " %8s %12.0f %11.0f", pct(mfu).c_str(), hours, e.published_hours - hours);
    }
    return std::string(buf);
  };
  auto print_row = [&](const std::string& change, const std::vector<const WhatIf*>& w) {
    for (const WhatIf* x : w) {
      if (!x->simulated) {
        std::printf("  %s\n", printable(x->change).c_str());
        return;
      }
    }
    const bool wrap = change.size() > 60;  // a long change on its own line, its numbers below
    if (wrap) std::printf("  %s\n", printable(change).c_str());
    std::printf("  %-60s%s", wrap ? "" : printable(change).c_str(), cells(base[0], w[0]->step_mfu, w[0]->ettr, w[0]->simulated_hours, true).c_str());
    if (two) {
      std::printf(" |%s | %9.2f", cells(base[1], w[1]->step_mfu, 0, w[1]->simulated_hours, false).c_str(),
                  w[1]->run_mfu / w[0]->run_mfu);
    }
    std::printf("\n");
  };
  std::vector<WhatIf> given(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) {
    given[i].simulated = true;
    given[i].step_mfu = base[i].step_mfu;
    given[i].ettr = base[i].ettr;
    given[i].simulated_hours = base[i].simulated_hours;
    given[i].run_mfu = base[i].run_mfu;
  }
  std::vector<const WhatIf*> g;
  for (const auto& x : given) g.push_back(&x);
  print_row("(the scenarios as given)", g);
  for (std::size_t r = 0; r < rows[0].size(); ++r) {
    std::vector<const WhatIf*> w;
    for (const auto& per_scenario : rows) w.push_back(&per_scenario[r]);
    print_row(rows[0][r].change, w);
  }
  std::printf("  unexplained = published - simulated GPU-hours: what no simulated mechanism above accounts for.\n");
  if (two) {
    std::printf("  MFU ratio: over the simulated GPU-hours (PaLM count); the published hours imply %.2f.\n",
                published_ratio);
    // The row whose simulated ratio comes closest (in log terms) to the published one.
    const WhatIf* best[2] = {&given[0], &given[1]};
    std::string best_change = "(the scenarios as given)";
    auto distance = [&](const WhatIf& a, const WhatIf& b) {
      return std::fabs(std::log(b.run_mfu / a.run_mfu / published_ratio));
    };
    for (std::size_t r = 0; r < rows[0].size(); ++r) {
      const WhatIf& a = rows[0][r];
      const WhatIf& b = rows[1][r];
      if (a.simulated && b.simulated && a.run_mfu > 0 && b.run_mfu > 0 && distance(a, b) < distance(*best[0], *best[1])) {
        best[0] = &a;
        best[1] = &b;
        best_change = a.change;
      }
    }
    const double ratio = best[1]->run_mfu / best[0]->run_mfu;
    std::printf("  Closest to the published ratio: %s, a simulated ratio of %.2f; a factor %.2f stays unexplained.\n",
                printable(best_change).c_str(), ratio, published_ratio / ratio);
  }
}

/// Each model's GPU-hours per GPU-hour of its model FLOPs at peak (so 1 / MFU in all), bar by
/// bar, side by side: the bars in which the two differ are the mechanisms that set their MFUs
/// apart; the published hours' 1 / MFU minus the simulated is what no bar accounts for.
void print_cost_per_useful_hour(const Explained& a, const Explained& b) {
  std::printf("\n%-70s %10s %10s\n", "GPU-hours per GPU-hour of model FLOPs at peak (1 / MFU), by bar", a.name.c_str(),
              b.name.c_str());
  std::vector<std::string> names;
  for (const auto* e : {&a, &b}) {
    for (const auto& bar : e->waterfall.bars) {
      if (bar.section != "flops" && std::find(names.begin(), names.end(), bar.name) == names.end()) names.push_back(bar.name);
    }
  }
  auto per = [](const Explained& e, const std::string& name) {
    double h = 0;
    for (const auto& bar : e.waterfall.bars) {
      if (bar.name == name) h += bar.gpu_hours;
    }
    return e.waterfall.model_flops_hours > 0 ? h / e.waterfall.model_flops_hours : 0;
  };
  auto line = [](const std::string& what, double x, double y) {
    std::printf("  %-68s %10.3f %10.3f\n", what.c_str(), x, y);
  };
  line("model FLOPs at peak (PaLM count)", 1, 1);
  for (const auto& n : names) line("+ " + n, per(a, n), per(b, n));
  auto inv = [](double v) { return v > 0 ? 1 / v : 0; };
  line("= simulated (1 / MFU of the simulated hours)", inv(a.run_mfu), inv(b.run_mfu));
  line("published (1 / MFU of the published hours)", inv(a.implied_mfu), inv(b.implied_mfu));
  line("unexplained (published - simulated)", inv(a.implied_mfu) - inv(a.run_mfu), inv(b.implied_mfu) - inv(b.run_mfu));
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
  print_cost_per_useful_hour(a, b);
  // The simulated ratio, split: the steps' MFU ratio × what the whole runs add on top.
  const double step_ratio = b.step_mfu / a.step_mfu;
  std::printf("  The MFU ratio (%s / %s), in factors: published %.2f = simulated steps %.2f x simulated whole runs %.2f\n"
              "  x unexplained %.2f.\n",
              b.name.c_str(), a.name.c_str(), implied_ratio, step_ratio, simulated_ratio / step_ratio,
              implied_ratio / simulated_ratio);
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
  std::vector<std::string> sets, what_ifs;
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
      ("what-if", po::value(&what_ifs)->composing(),
       "\"KEY=VALUE[;KEY=VALUE...]\": explain the first scenario again with these changes (repeatable; each alone, "
       "then all together) and tabulate the GPU-hours each accounts for")
      ("jobs,j", po::value(&jobs), "step simulations of the search run at once (default 2)");
  Limits limits;
  add_limit_options(opts, limits, false);
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  note_command_input(scenario_path);
  report::SearchBounds bounds;
  bounds.node_factors = factors("--search-nodes", search_nodes);
  bounds.batch_factors = factors("--search-batch", search_batch);
  if (jobs < 1 || jobs > 256) throw InputError({}, "--jobs", "expected 1 to 256");
  if (what_ifs.size() > kMaxWhatIfs) {
    throw InputError({}, "--what-if", "given " + std::to_string(what_ifs.size()) + " times; at most " +
                                          std::to_string(kMaxWhatIfs) + " (each is simulated for every scenario)");
  }
  check_limit_options(limits);
  std::vector<config::Scenario> scenarios{config::load_scenario(scenario_path, sets)};
  if (!compare_path.empty()) scenarios.push_back(config::load_scenario(compare_path, sets));
  std::vector<double> published;
  for (const auto& s : scenarios) {
    training::refuse_unsimulated(s);
    refuse_parameter_server(s, "explain");
    if (!(s.training.tokens > 0))
      throw InputError(s.where("training.tokens"), "training.tokens", "explain needs the run length in tokens");
    check_scenario_limits(s, run::resolve_layout(s), limits);
  }
  bounds.refuse = [&limits](const config::Scenario& c) { return limits_refusal(c, run::resolve_layout(c), limits); };
  published.push_back(vm.count("published-gpu-hours") ? published_hours
                                                       : published_for(scenarios[0], "--published-gpu-hours"));
  if (scenarios.size() > 1) published.push_back(published_for(scenarios[1], "--compare"));
  for (const double p : published)
    // The bound of model.published.gpu_hours (config/validate.cpp) holds for the option too.
    if (!(p >= 1e-3 && p <= 1e12))
      throw InputError({}, "--published-gpu-hours", "expected a number of hours from 0.001 to 1e12");

  // Every --what-if is read and loaded (keys, values, layout) before anything is simulated: a bad
  // change is exit 2 at once, not after the scenarios' step simulations.
  std::vector<std::string> paths{scenario_path};
  if (!compare_path.empty()) paths.push_back(compare_path);
  std::vector<std::vector<std::string>> changes_of;
  std::vector<std::string> all;
  for (const auto& text : what_ifs) {
    changes_of.push_back(split_changes(text));
    all.insert(all.end(), changes_of.back().begin(), changes_of.back().end());
  }
  if (what_ifs.size() > 1) changes_of.push_back(all);
  for (const auto& changes : changes_of) {
    for (const auto& path : paths) {
      std::vector<std::string> with = sets;
      with.insert(with.end(), changes.begin(), changes.end());
      training::refuse_unsimulated(config::load_scenario(path, with));
    }
  }

  int exit_code = kExitOk;
  std::vector<Explained> done;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (i > 0) std::printf("\n\n");
    const bool search = !vm.count("no-search") && scenarios.size() == 1;  // --compare: no search
    done.push_back(explain(scenarios[i], published[i], search, bounds, jobs, exit_code));
    if (exit_code != kExitOk) return exit_code;
  }
  if (done.size() == 2) print_comparison(done[0], done[1]);
  if (!what_ifs.empty()) {
    std::vector<std::vector<WhatIf>> rows(paths.size());
    for (std::size_t w = 0; w < changes_of.size(); ++w) {
      const std::string label = w < what_ifs.size() ? what_ifs[w] : "all of the above together";
      for (std::size_t i = 0; i < paths.size(); ++i) rows[i].push_back(what_if(paths[i], sets, changes_of[w], label, limits));
    }
    print_what_ifs(done, rows);
  }
  return kExitOk;
}

}  // namespace ironlaw::cli
