// `ironlaw sweep`: the same scenario at every combination of the --vary values, one row per
// point to stdout and to /sweep of the HDF5 file. Points run on -j threads; each point is a
// world of its own, so the rows are identical whatever the thread count.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "output/h5_writer.hpp"
#include "report/metrics.hpp"
#include "run/simulation.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

Axis parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError({}, "--vary", "expected KEY=V1,V2,..., got \"" + text + "\"");
  Axis a{text.substr(0, eq), {}};
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.empty()) throw InputError({"--vary", 0, 0}, a.key, "empty value in \"" + text + "\"");
    a.values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

struct Point {
  std::vector<std::string> values;  // one per axis
  config::Scenario scenario;
  std::vector<report::Metric> metrics;
  bool oom = false;
};

/// The metrics a sweep row shows on the terminal.
const std::vector<std::string> kShown = {"step_time_s", "tokens_per_s_per_gpu", "mfu", "hfu", "exposed_comm_s",
                                         "peak_memory_bytes"};

}  // namespace

int cmd_sweep(const Args& args) {
  po::options_description opts("ironlaw sweep SCENARIO.yaml --vary KEY=V1,V2,... [options]");
  std::string scenario_path, out_path;
  std::vector<std::string> varies, sets;
  int threads = 1;
  opts.add_options()
      ("help,h", "show this help")
      ("scenario", po::value(&scenario_path), "scenario YAML")
      ("vary", po::value(&varies)->composing(), "KEY=V1,V2,... (repeatable: the cartesian product is swept)")
      ("set", po::value(&sets)->composing(), "KEY=VALUE applied to every point")
      ("output,o", po::value(&out_path), "sweep HDF5 file (default: outputs/<name>-sweep.h5 beside the scenario's output)")
      ("jobs,j", po::value(&threads)->default_value(1), "points simulated at once");
  Limits limits;
  add_limit_options(opts, limits, true);
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  if (varies.empty()) throw InputError({}, "--vary", "at least one --vary KEY=V1,V2,... is required");
  if (threads < 1 || threads > 1024) throw InputError({}, "-j", "expected 1 to 1024 threads");
  if (vm.count("output") && out_path.empty()) throw InputError({}, "-o", "the output path is empty");

  std::vector<Axis> axes;
  const std::vector<std::string> known = config::scenario_keys();
  for (const auto& v : varies) {
    axes.push_back(parse_vary(v));
    const std::string& key = axes.back().key;
    for (std::size_t a = 0; a + 1 < axes.size(); ++a) {
      if (axes[a].key == key) {
        throw InputError(SourceLoc{"--vary", 0, 0}, key, "varied twice; give all its values in one --vary");
      }
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string hint = config::did_you_mean(key, known);
      throw InputError(SourceLoc{"--vary", 0, 0}, key, std::string("unknown key") + (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
    }
  }

  // Every point is loaded and validated before anything runs: a bad value fails fast (exit 2).
  std::vector<Point> points;
  std::size_t total = 1;
  for (const auto& a : axes) {
    // Checked before multiplying further, so the product cannot wrap.
    if (a.values.size() > limits.max_points || total > limits.max_points / a.values.size()) {
      throw InputError(SourceLoc{"--vary", 0, 0}, a.key,
                       "the sweep has more than " + std::to_string(limits.max_points) +
                           " points (the product of the --vary lists); raise the limit with --max-points");
    }
    total *= a.values.size();
  }
  for (std::size_t i = 0; i < total; ++i) {
    // Mixed-radix decomposition of i: the last --vary changes fastest.
    Point p;
    p.values.resize(axes.size());
    std::vector<std::string> overrides = sets;
    std::size_t rest = i;
    for (std::size_t a = axes.size(); a-- > 0;) {
      p.values[a] = axes[a].values[rest % axes[a].values.size()];
      rest /= axes[a].values.size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a) overrides.push_back(axes[a].key + "=" + p.values[a]);
    p.scenario = config::load_scenario(scenario_path, overrides);
    check_scenario_limits(p.scenario, run::resolve_layout(p.scenario), limits);
    points.push_back(std::move(p));
  }

  // The sweep file: checked (regular file or absent, folder writable) before anything runs.
  if (out_path.empty()) {
    const std::string& base = points.front().scenario.output.path;
    const auto dot = base.rfind(".h5");
    out_path = (dot == std::string::npos ? base : base.substr(0, dot)) + "-sweep.h5";
  }
  probe_output_path(out_path, {}, "-o");

  const bool progress = isatty(STDERR_FILENO);
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto worker = [&] {
    while (true) {
      const std::size_t i = next++;
      if (i >= points.size()) return;
      try {
        NullSink sink;
        const auto result = run::simulate(points[i].scenario, sink, run::TraceLevel::none);
        points[i].oom = result.out_of_memory;
        points[i].metrics = report::summary_metrics(points[i].scenario, result);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
      const std::size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(mu);
        std::fprintf(stderr, "\r[%zu/%zu] points simulated", d, points.size());
        std::fflush(stderr);
      }
    }
  };
  std::vector<std::thread> pool;
  const int n_threads = std::min<int>(threads, static_cast<int>(points.size()));
  for (int t = 0; t < n_threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (progress) std::fprintf(stderr, "\n");
  if (failure) std::rethrow_exception(failure);

  // Table to stdout.
  for (const auto& a : axes) std::printf("%-16s ", a.key.c_str());
  for (const auto& m : kShown) std::printf("%22s ", m.c_str());
  std::printf("\n");
  for (const auto& p : points) {
    for (const auto& v : p.values) std::printf("%-16s ", v.c_str());
    if (p.oom) {
      std::printf("%22s\n", "out of memory");
      continue;
    }
    for (const auto& m : kShown) std::printf("%22.6g ", report::metric(p.metrics, m));
    std::printf("\n");
  }

  // /sweep: the varied values and every summary metric per point.
  std::vector<std::string> keys;
  for (const auto& a : axes) keys.push_back(a.key);
  std::vector<std::string> metric_names;
  for (const auto& p : points)
    if (!p.oom) {
      for (const auto& m : p.metrics) metric_names.push_back(m.name);
      break;
    }
  output::H5Writer writer(out_path);
  writer.write_scenario(points.front().scenario.resolved_yaml, points.front().scenario.seed,
                        points.front().scenario.name);
  std::vector<output::SweepRow> rows;
  for (const auto& p : points) {
    output::SweepRow row;
    row.values = p.values;
    for (const auto& name : metric_names) row.metrics.push_back(p.oom ? std::nan("") : report::metric(p.metrics, name));
    rows.push_back(std::move(row));
  }
  writer.write_sweep(keys, metric_names, rows);
  writer.commit();
  std::printf("# wrote %s\n", out_path.c_str());
  return kExitOk;
}

}  // namespace ironlaw::cli
