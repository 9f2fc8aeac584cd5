#include "report/inverse_search.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <thread>

#include "core/error.hpp"
#include "core/records.hpp"
#include "report/metrics.hpp"
#include "run/cpu_budget.hpp"
#include "run/simulation.hpp"

namespace ironlaw::report {

namespace {

struct Candidate {
  config::Scenario scenario;
  SearchRow row;
};

}  // namespace

SearchResult inverse_search(const config::Scenario& s, double published, const SearchBounds& bounds,
                            const training::WholeRunResult* whole, unsigned threads) {
  SearchResult out;
  double rate_per_node_s = 0;
  for (const auto& c : s.reliability.failure_rates.causes) rate_per_node_s += c.rate_per_node_s;
  out.configured_failures_per_knd = rate_per_node_s * 86400.0 * 1000.0;
  // Wall-time overheads of the scenario's own run, per unit of productive time and per interruption.
  double checkpoint_per_productive = 0;
  if (whole && whole->wall_s > 0) {
    out.simulated_ettr = whole->ettr;
    if (whole->interruptions > 0) out.cost_per_interruption_s = (whole->lost_work_s + whole->down_s) / whole->interruptions;
    if (whole->productive_s > 0) checkpoint_per_productive = whole->checkpoint_pause_s / whole->productive_s;
  }

  std::vector<Candidate> cands;
  for (const double nf : bounds.node_factors) {
    for (const double bf : bounds.batch_factors) {
      Candidate c{s, {}};
      c.scenario.nodes = std::max(1, static_cast<int>(std::lround(s.nodes * nf)));
      c.scenario.training.global_batch_tokens = s.training.global_batch_tokens * bf;
      c.scenario.training.batch_ramp.clear();
      c.scenario.run.mode = "steps";
      c.scenario.run.steps = std::min(c.scenario.run.steps, 2);
      c.scenario.parallel.dp = 0;  // derived from the GPU count
      c.row.nodes = c.scenario.nodes;
      c.row.gpus = c.scenario.nodes * s.topology.node.gpus;
      c.row.batch_tokens = c.scenario.training.global_batch_tokens;
      const bool seen = std::any_of(cands.begin(), cands.end(), [&](const Candidate& o) {
        return o.row.nodes == c.row.nodes && o.row.batch_tokens == c.row.batch_tokens;
      });
      if (!seen) cands.push_back(std::move(c));
    }
  }

  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < cands.size(); i = next++) {
      Candidate& c = cands[i];
      try {
        if (bounds.refuse) {
          c.row.status = bounds.refuse(c.scenario);
          if (!c.row.status.empty()) {
            c.row.status = "not simulated: " + c.row.status;
            continue;
          }
        }
        NullSink sink;
        const auto r = run::simulate(c.scenario, sink, run::TraceLevel::none);
        c.row.tp = r.layout.tp;
        c.row.pp = r.layout.pp;
        c.row.dp = r.layout.dp;
        if (r.out_of_memory) {
          c.row.status = "out of memory";
          continue;
        }
        c.row.step_time_s = r.step_time_s;
        c.row.mfu = utilisation(r.model_flops_per_step, r.step_time_s, r.peak_flops_per_gpu, r.gpus);
        c.row.step_gpu_hours = gpu_hours(steps_for_tokens(s.training.tokens, r.tokens_per_step), r.step_time_s, r.gpus);
      } catch (const run::CpuLimitReached&) {
        c.row.status = "not simulated: past --step-cpu-limit " + std::to_string(static_cast<long long>(run::step_cpu_limit())) +
                       " CPU s";
      } catch (const InputError& e) {
        std::string why = e.what();
        if (const auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
        c.row.status = "not a valid layout (" + why.substr(0, 60) + ")";
      }
    }
  };
  std::vector<std::thread> pool;
  const std::size_t n = std::min<std::size_t>(std::max(1u, threads), cands.size());
  for (std::size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  for (auto& c : cands) {
    SearchRow& row = c.row;
    if (row.status.empty()) {
      row.needed_ettr = row.step_gpu_hours / published;
      row.distance = std::fabs(std::log(row.needed_ettr / std::max(1e-9, out.simulated_ettr)));
      // Wall time the published hours allow this job, less its steps and their checkpoints:
      // what interruptions would have to fill, at the scenario's measured cost per interruption.
      const double wall = published * 3600.0 / row.gpus;
      const double steps_wall = row.step_gpu_hours * 3600.0 / row.gpus;
      const double spare = wall - steps_wall * (1 + checkpoint_per_productive);
      if (out.cost_per_interruption_s > 0 && spare >= 0) {
        row.needed_failures_per_knd = spare / out.cost_per_interruption_s / (row.nodes * wall / 86400.0) * 1000.0;
      }
    } else {
      row.distance = std::numeric_limits<double>::infinity();
    }
    out.rows.push_back(row);
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const SearchRow& a, const SearchRow& b) { return a.distance < b.distance; });
  return out;
}

std::string format_search(const SearchResult& res, const SearchBounds& bounds, std::size_t max_rows) {
  auto list = [](const std::vector<double>& v) {
    std::string s;
    char buf[32];
    for (const double x : v) {
      std::snprintf(buf, sizeof buf, "%s%g", s.empty() ? "" : ", ", x);
      s += buf;
    }
    return s;
  };
  std::string out = "Which cluster and batch would spend the published hours? (bounds: nodes x {" +
                    list(bounds.node_factors) + "}, batch x {" + list(bounds.batch_factors) +
                    "}; layout's tp and pp kept, dp from the GPU count; one step simulation each)\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-4s %6s %7s %-14s %9s %11s %6s %12s %11s %13s\n", "rank", "nodes", "GPUs",
                "tp/pp/dp", "batch", "step", "MFU", "step GPU-h", "needed ETTR", "failures/1knd");
  out += buf;
  std::size_t shown = 0;
  for (const auto& r : res.rows) {
    if (shown++ >= max_rows) break;
    char layout[48];
    std::snprintf(layout, sizeof layout, "%d/%d/%d", r.tp, r.pp, r.dp);
    if (!r.status.empty()) {
      std::snprintf(buf, sizeof buf, "  %-4zu %6d %7d %-14s %8.3gM  %s\n", shown, r.nodes, r.gpus,
                    r.tp > 0 ? layout : "-", r.batch_tokens / 1e6, r.status.c_str());
      out += buf;
      continue;
    }
    char fail[32] = "-";
    if (r.needed_failures_per_knd >= 0) std::snprintf(fail, sizeof fail, "%.1f", r.needed_failures_per_knd);
    std::snprintf(buf, sizeof buf, "  %-4zu %6d %7d %-14s %8.3gM %9.3f s %5.1f%% %12.0f %10.1f%% %13s\n", shown,
                  r.nodes, r.gpus, layout, r.batch_tokens / 1e6, r.step_time_s, 100 * r.mfu, r.step_gpu_hours,
                  100 * r.needed_ettr, fail);
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "  ranked by how close the needed ETTR is to the simulated run's %.1f %%. needed ETTR = step GPU-h /\n"
                "  published (over 100 %%: even without failures these steps need more than was published).\n",
                100 * res.simulated_ettr);
  out += buf;
  if (res.cost_per_interruption_s > 0) {
    std::snprintf(buf, sizeof buf,
                  "  failures/1knd: interruptions per 1,000 node-days that would fill the rest, extrapolated at the\n"
                  "  simulated run's %.2f h of lost work + down time per interruption (configured: %.2f).\n",
                  res.cost_per_interruption_s / 3600, res.configured_failures_per_knd);
    out += buf;
  }
  return out;
}

}  // namespace ironlaw::report
