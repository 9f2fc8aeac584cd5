// `ironlaw sweep`: the same scenario at every combination of the --vary values, one row per
// point to stdout and to /sweep of the HDF5 file. Points run on -j threads; each point is a
// world of its own, so the rows are identical whatever the thread count. A point that cannot be
// simulated (invalid combination, out of memory, over a limit) becomes a row with its reason;
// the sweep goes on and its exit status counts such points (sweep_exit_status).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/run_ps.hpp"
#include "cli/machine_output.hpp"
#include "cli/ranks.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"
#include "config/units.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "core/time.hpp"
#include "output/h5_writer.hpp"
#include "report/metrics.hpp"
#include "run/cpu_budget.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

/// Most values one A..B:STEP range may expand to (the sweep's --max-points bounds the product).
constexpr double kMaxRangeValues = 100'000;

/// A number as a sweep value: integers without a decimal point, others with up to 12 digits.
std::string format_value(double v) {
  char buf[64];
  if (std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v)) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", std::round(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.12g", v);
  }
  return buf;
}

double parse_number(const std::string& text, const std::string& key, const std::string& whole) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw InputError({"--vary", 0, 0}, key,
                     "expected a number in the range \"" + whole + "\" (A..B:STEP, then any unit), got \"" + text +
                         "\"");
  }
  return v;
}

/// The reading of `key`'s values: its dimension, a count for integers.
std::optional<config::Dimension> dimension_of(const std::string& key) {
  const auto table = config::scenario_key_table();
  const auto info = std::find_if(table.begin(), table.end(), [&](const config::KeyInfo& k) { return k.key == key; });
  if (info == table.end()) return std::nullopt;
  if (info->dimension) return info->dimension;
  if (info->type == "integer" || info->type == "number") return config::Dimension::count;
  return std::nullopt;
}

/// Refuses an axis that already holds more values than the sweep may have points: checked as
/// values are added, so no list or range is expanded past the bound first.
void check_axis_size(const std::string& key, std::size_t values, std::size_t max_points) {
  if (values > max_points) {
    throw InputError(SourceLoc{"--vary", 0, 0}, key,
                     "the sweep has more than " + std::to_string(max_points) +
                         " points (the product of the --vary lists); raise the limit with --max-points");
  }
}

/// Expands "A..B" or "A..B:STEP" (STEP > 0, default 1) into A, A+STEP, ... ≤ B; a unit after
/// the last number ("25..50:5 GB/s") is written after every value, and must be one the key
/// reads (the same mistake at every point is bad input, not a failed row each).
void expand_range(const std::string& written, const std::string& key, std::vector<std::string>& out,
                  std::size_t max_points) {
  std::size_t end = written.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(written[end - 1])) && written[end - 1] != '.') --end;
  std::string unit = written.substr(end);
  unit.erase(0, unit.find_first_not_of(' '));
  const std::string item = written.substr(0, end);
  const std::string suffix = unit.empty() ? "" : " " + unit;
  const auto dots = item.find("..");
  const auto colon = item.find(':', dots);
  const std::string a_text = item.substr(0, dots);
  const std::string b_text = item.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2);
  const double a = parse_number(a_text, key, item);
  const double b = parse_number(b_text, key, item);
  const double step = colon == std::string::npos ? 1.0 : parse_number(item.substr(colon + 1), key, item);
  if (step <= 0) throw InputError({"--vary", 0, 0}, key, "the step of \"" + item + "\" must be positive");
  if (b < a) throw InputError({"--vary", 0, 0}, key, "the range \"" + item + "\" ends below its start");
  const double n = std::floor((b - a) / step * (1 + 1e-12)) + 1;
  if (n > kMaxRangeValues) {
    throw InputError({"--vary", 0, 0}, key, "the range \"" + item + "\" has more than " +
                                                format_value(kMaxRangeValues) + " values");
  }
  check_axis_size(key, out.size() + static_cast<std::size_t>(n), max_points);
  if (!unit.empty()) {
    const auto dimension = dimension_of(key);
    std::string error;
    if (!dimension) {
      throw InputError({"--vary", 0, 0}, key, "the range \"" + written + "\" ends in \"" + unit +
                                                  "\", but this key takes no unit");
    }
    if (!config::parse_quantity(format_value(b) + suffix, *dimension, &error)) {
      throw InputError({"--vary", 0, 0}, key, "the range \"" + written + "\" ends in \"" + unit +
                                                  "\", which is not a unit of this key: " + error);
    }
  }
  for (double i = 0; i < n; ++i) out.push_back(format_value(a + i * step) + suffix);
}

/// The values `auto` stands for: parallel.tp, the powers of two up to the GPUs of a node that
/// divide the model's heads; parallel.pp, the divisors of the model's layers. Combinations that
/// do not fit the rest of the layout become rows with their reason, like any invalid point.
std::vector<std::string> auto_values(const std::string& key, const config::Scenario& base) {
  std::vector<std::string> out;
  if (key == "parallel.tp") {
    for (int tp = 1; tp <= base.topology.node.gpus; tp *= 2) {
      if (base.model.heads > 0 && base.model.heads % tp == 0) out.push_back(std::to_string(tp));
    }
  } else if (key == "parallel.pp") {
    for (int pp = 1; pp <= base.model.layers; ++pp) {
      if (base.model.layers % pp == 0) out.push_back(std::to_string(pp));
    }
  } else {
    throw InputError({"--vary", 0, 0}, key, "\"auto\" is accepted for parallel.tp and parallel.pp only");
  }
  return out;
}

/// Parses KEY=ITEM,ITEM,... where an ITEM is a value, a range A..B[:STEP], or `auto`.
Axis parse_vary(const std::string& text, const config::Scenario& base, std::size_t max_points) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError({}, "--vary", "expected KEY=V1,V2,... or KEY=A..B:STEP, got \"" + text + "\"");
  Axis a{text.substr(0, eq), {}};
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.empty()) throw InputError({"--vary", 0, 0}, a.key, "empty value in \"" + text + "\"");
    if (v == "auto") {
      const auto values = auto_values(a.key, base);
      a.values.insert(a.values.end(), values.begin(), values.end());
    } else if (v.find("..") != std::string::npos) {
      expand_range(v, a.key, a.values, max_points);
    } else {
      a.values.push_back(v);
    }
    check_axis_size(a.key, a.values.size(), max_points);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

/// A bare number for a key that needs a unit is the same mistake at every point: refused as bad
/// input before anything runs, with the forms that would be read (as the loader's message).
void refuse_bare_numbers(const std::vector<Axis>& axes) {
  const auto table = config::scenario_key_table();
  for (const auto& a : axes) {
    const auto info = std::find_if(table.begin(), table.end(), [&](const config::KeyInfo& k) { return k.key == a.key; });
    if (info == table.end() || !info->dimension || !config::needs_unit(*info->dimension)) continue;
    for (const auto& v : a.values) {
      const auto si = config::parse_quantity(v, *info->dimension, nullptr);
      if (!si || *si == 0 || !config::is_bare_number(v)) continue;
      const auto forms = config::unit_suggestions(v, *si, *info->dimension);
      std::string message = v + " has no unit; write ";
      for (std::size_t i = 0; i < forms.size(); ++i) message += (i ? " or " : "") + ("--vary '" + a.key + "=" + forms[i] + "'");
      throw InputError(SourceLoc{"--vary", 0, 0}, a.key, message + " (a range takes its unit last: A..B:STEP UNIT)");
    }
  }
}

struct Point {
  std::vector<std::string> values;  // one per axis
  config::Scenario scenario;
  std::vector<report::Metric> metrics;
  std::string status = "ok";        // else why the point was not simulated
  std::string detail;               // the full diagnostics of a failed point (stderr)
};

/// "cluster.nodes=2, parallel.pp=3"
std::string describe(const std::vector<Axis>& axes, const Point& p) {
  std::string out;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (a) out += ", ";
    out += axes[a].key + "=" + p.values[a];
  }
  return out;
}

/// The status of a point refused as input: "invalid: " and its first problem (key: message).
void mark_invalid(Point& p, const InputError& e) {
  const auto& ds = e.diagnostics();
  p.status = "invalid: " + (ds.empty() ? std::string(e.what())
                                       : (ds.front().key.empty() ? "" : ds.front().key + ": ") + ds.front().message);
  p.detail.clear();
  for (const auto& d : ds) p.detail += (p.detail.empty() ? "" : "\n  ") + d.str();
}

double metric_or_nan(const std::vector<report::Metric>& metrics, const std::string& name) {
  for (const auto& m : metrics)
    if (m.name == name) return m.value;
  return std::nan("");
}

/// Training days and GPU-hours of a steps-mode point: training.tokens at the simulated
/// throughput, with no failures, checkpoints or restarts (run.mode: full simulates those).
void append_ideal_run(Point& p) {
  const double tokens = p.scenario.training.tokens;
  const double step_s = metric_or_nan(p.metrics, "step_time_s");
  const double per_step = metric_or_nan(p.metrics, "tokens_per_step");
  const double gpus = metric_or_nan(p.metrics, "gpus");
  const bool known = tokens > 0 && step_s > 0 && per_step > 0;
  const double steps = known ? report::steps_for_tokens(tokens, per_step) : std::nan("");
  const double seconds = known ? report::wall_seconds(steps, step_s) : std::nan("");
  p.metrics.push_back({"ideal_wall_days", seconds / 86400.0, "d"});
  p.metrics.push_back({"ideal_gpu_hours", seconds / 3600.0 * gpus, "h"});
}

/// The metrics a sweep row shows on the terminal.
const std::vector<std::string> kShown = {"step_time_s", "tokens_per_s_per_gpu", "mfu", "exposed_comm_s",
                                         "peak_memory_bytes"};

/// One point's result as bytes, for gathering over ranks: status, detail, then each metric's
/// name, unit and value (its exact bits), every field length-prefixed. decode_result() is the
/// inverse, so a gathered point is the point its rank simulated, bit for bit.
void put(std::string& out, const std::string& field) {
  out += std::to_string(field.size()) + ":" + field;
}

std::string encode_result(const Point& p) {
  std::string out;
  put(out, p.status);
  put(out, p.detail);
  put(out, std::to_string(p.metrics.size()));
  for (const auto& m : p.metrics) {
    put(out, m.name);
    put(out, m.unit);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &m.value, sizeof bits);
    put(out, std::to_string(bits));
  }
  return out;
}

void decode_result(const std::string& in, Point& p) {
  std::size_t at = 0;
  const auto take = [&] {
    const std::size_t colon = in.find(':', at);
    if (colon == std::string::npos) throw std::runtime_error("a gathered sweep point is truncated");
    const std::size_t n = std::stoull(in.substr(at, colon - at));
    if (colon + 1 + n > in.size()) throw std::runtime_error("a gathered sweep point is truncated");
    at = colon + 1 + n;
    return in.substr(colon + 1, n);
  };
  p.status = take();
  p.detail = take();
  const std::size_t n = std::stoull(take());
  p.metrics.clear();
  for (std::size_t i = 0; i < n; ++i) {
    report::Metric m;
    m.name = take();
    m.unit = take();
    const std::uint64_t bits = std::stoull(take());
    std::memcpy(&m.value, &bits, sizeof bits);
    p.metrics.push_back(std::move(m));
  }
}

std::string clock_text(double s) {
  s = std::round(s);  // whole seconds first, so 119.6 s is "2 min 00 s", never "1 min 60 s"
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f h %02.0f min", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
  }
  return buf;
}

}  // namespace

int sweep_exit_status(std::size_t failed_points) {
  if (failed_points == 0) return kExitOk;
  return kExitSweepFailedBase + static_cast<int>(std::min<std::size_t>(failed_points, kExitSweepFailedMax));
}

int cmd_sweep(const Args& args) {
  po::options_description opts(
      "ironlaw sweep SCENARIO.yaml --vary KEY=V1,V2,... [options]\n"
      "  values: V1,V2,... or a range A..B:STEP (A, A+STEP, ... up to B; STEP 1 if omitted), mixed\n"
      "  freely; a dimensioned key's values carry their unit (\"25 GB/s\"; a range: 25..50:5 GB/s);\n"
      "  `auto` for parallel.tp (powers of two up to a node's GPUs dividing the heads) and\n"
      "  parallel.pp (divisors of the layer count).\n"
      "  A point that cannot be simulated (invalid combination, out of memory, over a limit) is a\n"
      "  row with its reason; the sweep goes on. Exit status: 0 every point simulated; 10 + N when\n"
      "  N points failed (N capped at 100, so 11..110); 2 bad input before any point ran.\n"
      "  days and GPU-hours: from the whole-run layer with run.mode: full, else training.tokens at\n"
      "  the simulated tokens/s with no failures (HDF5 metrics wall_days/gpu_hours or\n"
      "  ideal_wall_days/ideal_gpu_hours)\n"
      "  Over MPI ranks (one host or many): mpirun -n N ironlaw-mpi sweep ... (or srun) writes the\n"
      "  same table and HDF5 file, each rank simulating every N-th point (built when Boost.MPI is)");
  std::string scenario_path, out_path;
  std::vector<std::string> varies, sets;
  int threads = 1;
  opts.add_options()
      ("help,h", "show this help")
      ("scenario", po::value(&scenario_path), "scenario YAML")
      ("vary", po::value(&varies)->composing(), "KEY=V1,V2,... or KEY=A..B:STEP (repeatable: the cartesian product is swept)")
      ("set", po::value(&sets)->composing(), "KEY=VALUE applied to every point")
      ("output,o", po::value(&out_path), "sweep HDF5 file (default: outputs/<name>-sweep.h5 beside the scenario's output)")
      ("jobs,j", po::value(&threads)->default_value(1), "points simulated at once")
      ("no-progress", "no progress line on stderr even on a terminal")
      ("csv", "print the rows as CSV (the varied keys, status, then every metric) instead of the table")
      ("json", "print the rows as JSON ({\"varied_keys\", \"metrics\": [{name, unit}], \"rows\"}) instead of the table");
  Limits limits;
  add_limit_options(opts, limits, true);
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  note_command_input(scenario_path);
  if (varies.empty()) throw InputError({}, "--vary", "at least one --vary KEY=V1,V2,... is required");
  check_limit_options(limits);
  if (threads < 1 || threads > 1024) throw InputError({}, "-j", "expected 1 to 1024 threads");
  if (vm.count("output") && out_path.empty()) throw InputError({}, "-o", "the output path is empty");
  if (vm.count("csv") && vm.count("json")) throw InputError({}, "--csv", "give --csv or --json, not both");
  const OutputFormat format = vm.count("csv") ? OutputFormat::csv : vm.count("json") ? OutputFormat::json : OutputFormat::text;

  // The keys first (unknown or repeated keys are bad input before anything is loaded), then
  // the scenario with the --set values alone: a broken base file is bad input, not a row.
  const std::vector<std::string> known = config::scenario_keys();
  std::vector<std::string> keys;
  for (const auto& v : varies) {
    const auto eq = v.find('=');
    const std::string key = v.substr(0, eq);
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      throw InputError({}, "--vary", "expected KEY=V1,V2,... or KEY=A..B:STEP, got \"" + v + "\"");
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      throw InputError(SourceLoc{"--vary", 0, 0}, key, "varied twice; give all its values in one --vary");
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string hint = config::did_you_mean(key, known);
      throw InputError(SourceLoc{"--vary", 0, 0}, key, std::string("unknown key") + (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
    }
    keys.push_back(key);
  }
  const config::Scenario base = config::load_scenario(scenario_path, sets);
  refuse_parameter_server(base, "sweep");
  std::vector<Axis> axes;
  for (const auto& v : varies) axes.push_back(parse_vary(v, base, limits.max_points));

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
  refuse_bare_numbers(axes);

  // The sweep file: checked (regular file or absent, folder writable) before anything runs.
  if (out_path.empty()) {
    const std::string& b = base.output.path;
    const auto dot = b.rfind(".h5");
    out_path = (dot == std::string::npos ? b : b.substr(0, dot)) + "-sweep.h5";
  }
  probe_output_path(out_path, {}, "-o");

  // Every point is loaded and validated before anything runs; one that is refused becomes a
  // row with its reason.
  std::vector<Point> points;
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
    try {
      p.scenario = config::load_scenario(scenario_path, overrides);
      check_scenario_limits(p.scenario, run::resolve_layout(p.scenario), limits);
    } catch (const InputError& e) {
      mark_invalid(p, e);
    }
    points.push_back(std::move(p));
  }

  // Under MPI (ironlaw-mpi) each rank simulates every size-th point and rank 0 gathers them;
  // one process simulates them all.
  Ranks& group = ranks();
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(group.rank()); i < points.size(); i += static_cast<std::size_t>(group.size()))
    mine.push_back(i);

  const bool progress = isatty(STDERR_FILENO) && !vm.count("no-progress") && group.rank() == 0;
  const auto started = std::chrono::steady_clock::now();
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex mu;
  auto worker = [&] {
    while (true) {
      const std::size_t k = next++;
      if (k >= mine.size()) return;
      Point& p = points[mine[k]];
      if (p.status == "ok") {
        try {
          // A whole run's step comes from the process-wide step cache, so points that vary
          // only run-level keys (checkpoint interval, failures) share their step simulations.
          NullSink sink;
          const auto result = p.scenario.run.mode == "full" ? training::shared_simulate_step(p.scenario)
                                                             : run::simulate(p.scenario, sink, run::TraceLevel::none);
          if (result.out_of_memory) {
            p.status = "out of memory";
            char buf[128];
            std::snprintf(buf, sizeof buf, "needs %.2f GiB per GPU at its peak, the allocator has %.2f GiB",
                          result.memory_reserved / (1024.0 * 1024 * 1024),
                          result.allocator_capacity / (1024.0 * 1024 * 1024));
            p.detail = buf;
          } else {
            p.metrics = report::summary_metrics(p.scenario, result);
            if (p.scenario.run.mode != "full") append_ideal_run(p);
          }
        } catch (const run::CpuLimitReached& e) {
          mark_invalid(p, e);
          p.status = "too large: " + p.status.substr(std::string("invalid: ").size());
        } catch (const InputError& e) {
          mark_invalid(p, e);
        } catch (const TimeOverflow& e) {
          p.status = std::string("invalid: the simulated clock overflowed: ") + e.what();
        } catch (const std::bad_alloc&) {
          p.status = "too large: out of host memory";
        } catch (const std::exception& e) {
          p.status = std::string("internal error: ") + e.what();
        }
      }
      const std::size_t d = ++done;
      if (progress) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const double eta = elapsed / static_cast<double>(d) * static_cast<double>(mine.size() - d);
        std::lock_guard<std::mutex> lock(mu);
        std::fprintf(stderr, "\r[%zu/%zu] points, %s elapsed, ETA %s   ", d, mine.size(), clock_text(elapsed).c_str(),
                     clock_text(eta).c_str());
        std::fflush(stderr);
      }
    }
  };
  std::vector<std::thread> pool;
  const int n_threads = std::min<int>(threads, static_cast<int>(mine.size()));
  for (int t = 0; t < n_threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (progress) std::fprintf(stderr, "\n");
  if (group.size() > 1) {
    std::vector<std::string> encoded;
    for (const std::size_t i : mine) encoded.push_back(encode_result(points[i]));
    const auto gathered = group.gather(encoded);
    if (group.rank() != 0) return kExitOk;  // rank 0 prints, writes and sets the exit status
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      for (std::size_t j = 0; j < gathered[r].size(); ++j) decode_result(gathered[r][j], points[r + j * gathered.size()]);
    }
  }

  // The metric columns: the first simulated point's, then any a later point adds (a sweep over
  // run.mode mixes the step and whole-run metrics).
  std::vector<std::string> metric_names;
  for (const auto& p : points) {
    for (const auto& m : p.metrics) {
      if (std::find(metric_names.begin(), metric_names.end(), m.name) == metric_names.end())
        metric_names.push_back(m.name);
    }
  }

  std::vector<std::string> metric_units(metric_names.size());
  for (std::size_t k = 0; k < metric_names.size(); ++k) {
    for (const auto& p : points) {
      for (const auto& m : p.metrics)
        if (m.name == metric_names[k]) metric_units[k] = m.unit;
      if (!metric_units[k].empty()) break;
    }
  }
  std::size_t failed = 0;
  for (const auto& p : points) failed += p.status != "ok";
  if (format == OutputFormat::csv) {
    std::string header;
    for (const auto& k : keys) header += csv_field(k) + ",";
    header += "status";
    for (const auto& m : metric_names) header += "," + csv_field(m);
    std::printf("%s\n", header.c_str());
    for (const auto& p : points) {
      std::string line;
      for (const auto& v : p.values) line += csv_field(v) + ",";
      line += csv_field(p.status);
      for (const auto& m : metric_names) line += "," + csv_number(metric_or_nan(p.metrics, m));
      std::printf("%s\n", line.c_str());
    }
  } else if (format == OutputFormat::json) {
    std::string out = "{\"scenario\": " + json_string(base.name) + ", \"varied_keys\": [";
    for (std::size_t k = 0; k < keys.size(); ++k) out += (k ? ", " : "") + json_string(keys[k]);
    out += "], \"metrics\": [";
    for (std::size_t k = 0; k < metric_names.size(); ++k) {
      out += (k ? ", " : "") + std::string("{\"name\": ") + json_string(metric_names[k]) +
             ", \"unit\": " + json_string(metric_units[k]) + "}";
    }
    out += "], \"rows\": [";
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& p = points[i];
      out += i ? ", " : "";
      out += "{\"values\": {";
      for (std::size_t k = 0; k < keys.size(); ++k) out += (k ? ", " : "") + json_string(keys[k]) + ": " + json_string(p.values[k]);
      out += "}, \"status\": " + json_string(p.status) + ", \"metrics\": {";
      for (std::size_t k = 0; k < metric_names.size(); ++k) {
        out += (k ? ", " : "") + json_string(metric_names[k]) + ": " + json_number(metric_or_nan(p.metrics, metric_names[k]));
      }
      out += "}}";
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    // Table to stdout.
    const bool full = base.run.mode == "full";
    // Keys, values and reasons quote the scenario and the command line: printable (no control
    // characters or invalid UTF-8 reach the terminal; the HDF5 /sweep keeps them as data).
    for (const auto& a : axes) std::printf("%-16s ", printable(a.key).c_str());
    for (const auto& m : kShown) std::printf("%22s ", m.c_str());
    std::printf("%12s %14s  %s\n", "days", "gpu_hours", "status");
    for (const auto& p : points) {
      for (const auto& v : p.values) std::printf("%-16s ", printable(v).c_str());
      if (p.status != "ok") {
        for (std::size_t k = 0; k < kShown.size(); ++k) std::printf("%22s ", "-");
        std::printf("%12s %14s  %s\n", "-", "-", printable(p.status).c_str());
        continue;
      }
      for (const auto& m : kShown) std::printf("%22.6g ", metric_or_nan(p.metrics, m));
      const bool whole = p.scenario.run.mode == "full";
      std::printf("%12.4g %14.6g  ok\n", metric_or_nan(p.metrics, whole ? "wall_days" : "ideal_wall_days"),
                  metric_or_nan(p.metrics, whole ? "gpu_hours" : "ideal_gpu_hours"));
    }
    std::printf(full ? "# days, gpu_hours: the whole-run layer (run.mode: full: failures, checkpoints, restarts)\n"
                     : "# days, gpu_hours: training.tokens / simulated tokens/s, no failures or checkpoints "
                       "(run.mode: full simulates them); nan when training.tokens is 0\n");
  }

  // /sweep: the varied values, the status and every summary metric per point.
  output::H5Writer writer(out_path);
  writer.write_scenario(base.resolved_yaml, base.seed, base.name);
  std::vector<output::SweepRow> rows;
  for (const auto& p : points) {
    output::SweepRow row;
    row.values = p.values;
    row.status = p.status;
    for (const auto& name : metric_names) row.metrics.push_back(metric_or_nan(p.metrics, name));
    rows.push_back(std::move(row));
  }
  writer.write_sweep(keys, metric_names, rows);
  writer.commit();
  if (format == OutputFormat::text) std::printf("# wrote %s\n", printable(out_path).c_str());

  for (const auto& p : points) {
    if (p.status == "ok") continue;
    std::fprintf(stderr, "ironlaw sweep: point %s: %s\n", printable(describe(axes, p)).c_str(),
                 printable(p.detail.empty() ? p.status : p.detail).c_str());
  }
  if (failed > 0) std::fprintf(stderr, "ironlaw sweep: %zu of %zu points failed\n", failed, points.size());
  return sweep_exit_status(failed);
}

}  // namespace ironlaw::cli
