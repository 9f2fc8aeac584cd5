// `ironlaw run`: simulate a scenario's training steps, write the HDF5 trace, print the summary.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/machine_output.hpp"
#include "cli/run_ps.hpp"
#include "core/error.hpp"
#include "config/failures.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "output/chrome_trace.hpp"
#include "output/h5_reader.hpp"
#include "output/h5_writer.hpp"
#include "report/metrics.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// A seed is an unsigned 64-bit integer; "-1" or "1e3" are input errors, not wrapped values.
std::uint64_t parse_seed(const std::string& text) {
  std::size_t used = 0;
  unsigned long long v = 0;
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (digits) v = std::stoull(text, &used);
  } catch (const std::out_of_range&) {
    used = 0;
  }
  if (!digits || used != text.size())
    throw InputError({}, "--seed", "expected an integer from 0 to 18446744073709551615, got \"" + text + "\"");
  return v;
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
training::ProgressFn progress_bar() {
  if (!isatty(STDERR_FILENO)) return {};
  return [](double fraction) {
    const int width = 40;
    const int filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "\rwhole run [%s%s] %3.0f %%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), 100 * fraction);
    if (fraction >= 1) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

/// /run/failures, /run/checkpoints, /run/restarts (outputs/README.md).
void write_run_tables(output::H5Writer& writer, const training::WholeRunResult& w) {
  using output::TableColumn;
  auto secs = [](Time t) { return t == Time::max() ? -1.0 : t.seconds(); };
  std::vector<double> f_time, f_detected, f_lost;
  std::vector<std::int64_t> f_node, f_step, f_cause, f_down;
  std::vector<std::string> causes(config::kFailureCauses);
  for (const auto& f : w.failures) {
    f_time.push_back(secs(f.time));
    f_detected.push_back(secs(f.detected));
    f_lost.push_back(f.lost_work_s);
    f_node.push_back(f.node);
    f_step.push_back(f.step);
    f_down.push_back(f.while_down ? 1 : 0);
    f_cause.push_back(std::find(causes.begin(), causes.end(), f.cause) - causes.begin());
  }
  writer.write_table("failures", {TableColumn{"time_s", "s", f_time}, TableColumn{"cause", "", f_cause},
                                  TableColumn{"node", "", f_node}, TableColumn{"detected_s", "s", f_detected},
                                  TableColumn{"lost_work_s", "s", f_lost}, TableColumn{"step", "1", f_step},
                                  TableColumn{"while_down", "1", f_down}});
  std::vector<double> c_start, c_resumed, c_durable, c_bytes;
  std::vector<std::int64_t> c_step;
  for (const auto& c : w.checkpoints) {
    c_start.push_back(secs(c.start));
    c_resumed.push_back(secs(c.resumed));
    c_durable.push_back(secs(c.durable));
    c_bytes.push_back(c.bytes);
    c_step.push_back(c.step);
  }
  writer.write_table("checkpoints", {TableColumn{"start_s", "s", c_start}, TableColumn{"resumed_s", "s", c_resumed},
                                     TableColumn{"durable_s", "s", c_durable}, TableColumn{"step", "1", c_step},
                                     TableColumn{"bytes", "B", c_bytes}});
  std::vector<double> r_detected, r_resumed, r_wait, r_resched, r_init, r_load;
  std::vector<std::int64_t> r_step, r_dp, r_grow;
  for (const auto& r : w.restarts) {
    r_dp.push_back(r.dp);
    r_grow.push_back(r.elastic_grow ? 1 : 0);
    r_detected.push_back(secs(r.detected));
    r_resumed.push_back(secs(r.resumed));
    r_wait.push_back(r.wait_for_node_s);
    r_resched.push_back(r.reschedule_s);
    r_init.push_back(r.initialize_s);
    r_load.push_back(r.load_s);
    r_step.push_back(r.resumed_step);
  }
  writer.write_table("restarts", {TableColumn{"detected_s", "s", r_detected}, TableColumn{"resumed_s", "s", r_resumed},
                                  TableColumn{"wait_for_node_s", "s", r_wait}, TableColumn{"reschedule_s", "s", r_resched},
                                  TableColumn{"initialize_s", "s", r_init}, TableColumn{"load_s", "s", r_load},
                                  TableColumn{"resumed_step", "1", r_step}, TableColumn{"dp", "1", r_dp},
                                  TableColumn{"elastic_grow", "1", r_grow}});
}

}  // namespace

int cmd_run(const Args& args) {
  po::options_description opts("ironlaw run SCENARIO.yaml [options]");
  std::string scenario_path, out_path, trace_text, chrome_path, chrome_ranks_text;
  std::vector<std::string> sets;
  std::string seed_text;
  opts.add_options()
      ("help,h", "show this help")
      ("scenario", po::value(&scenario_path), "scenario YAML")
      ("set", po::value(&sets)->composing(), "KEY=VALUE override of a scenario key (repeatable), e.g. cluster.nodes=32")
      ("output,o", po::value(&out_path), "HDF5 output (default: the scenario's output.path)")
      ("trace", po::value(&trace_text), "none | step | op | flow (default: the scenario's output.trace)")
      ("chrome-trace", po::value(&chrome_path), "also write the timeline as Chrome-trace JSON (Perfetto)")
      ("chrome-trace-ranks", po::value(&chrome_ranks_text), "ranks in the Chrome trace, e.g. 0,8-15 (default: every recorded rank)")
      ("seed", po::value(&seed_text), "root random seed, 0 … 2^64-1 (default: the scenario's seed)")
      ("quiet,q", "print nothing on success")
      ("csv", "print the summary metrics as CSV (name,value,unit) instead of the text summary")
      ("json", "print the summary metrics as JSON ({\"scenario\", \"metrics\": {name: {value, unit}}, and where the "
               "allocator was replayed \"memory_at_peak\": {\"stage\", \"bytes\": {kind: B}}})");
  Limits limits;
  add_limit_options(opts, limits, false);
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  note_command_input(scenario_path);
  check_limit_options(limits);
  if (vm.count("output") && out_path.empty()) throw InputError({}, "-o", "the output path is empty");
  if (vm.count("chrome-trace") && chrome_path.empty()) throw InputError({}, "--chrome-trace", "the output path is empty");
  if (vm.count("trace") && trace_text.empty()) throw InputError({}, "--trace", "empty: expected none, step, op or flow");
  if (vm.count("csv") && vm.count("json")) throw InputError({}, "--csv", "give --csv or --json, not both");
  if (vm.count("chrome-trace-ranks") && chrome_path.empty()) throw InputError({}, "--chrome-trace-ranks", "needs --chrome-trace");
  const std::vector<int> chrome_ranks = vm.count("chrome-trace-ranks") ? parse_rank_set(chrome_ranks_text, "--chrome-trace-ranks") : std::vector<int>{};

  config::Scenario scenario = config::load_scenario(scenario_path, sets);
  if (vm.count("seed")) scenario.seed = parse_seed(seed_text);
  run::TraceLevel trace;
  try {
    trace = run::parse_trace_level(trace_text.empty() ? scenario.output.trace : trace_text);
  } catch (const std::invalid_argument& e) {
    throw InputError({}, "--trace", e.what());
  }
  if (!out_path.empty()) scenario.output.path = out_path;
  if (scenario.output.path.empty()) throw InputError(scenario.where("output.path"), "output.path", "no output path");
  // Layout problems, limits and unwritable outputs are input errors: found before any file is
  // created and before anything is built.
  if (scenario.parameter_server.enabled) {
    check_ps_limits(scenario, limits);
  } else {
    check_scenario_limits(scenario, run::resolve_layout(scenario), limits);
  }
  training::refuse_unsimulated(scenario);
  if (!chrome_ranks.empty() && scenario.parameter_server.enabled)
    throw InputError({}, "--chrome-trace-ranks", "not available for parameter_server scenarios");
  if (!chrome_ranks.empty()) {
    // A rank the cluster does not have can never have events: refused before simulating.
    const long long ranks = static_cast<long long>(scenario.nodes) * scenario.topology.node.gpus;
    if (chrome_ranks.back() >= ranks) {
      throw InputError({}, "--chrome-trace-ranks",
                       "rank " + std::to_string(chrome_ranks.back()) + " is not in this run: its ranks are 0-" +
                           std::to_string(ranks - 1) + " (cluster.nodes x node.gpus)");
    }
  }

  const std::filesystem::path target(scenario.output.path);
  probe_output_path(target.string(), out_path.empty() ? scenario.where("output.path") : SourceLoc{},
                    out_path.empty() ? "output.path" : "-o");
  if (!chrome_path.empty()) {
    std::error_code ec;
    if (std::filesystem::path(chrome_path).lexically_normal() == target.lexically_normal() ||
        std::filesystem::equivalent(chrome_path, target, ec)) {
      throw InputError({}, "--chrome-trace", "must differ from the HDF5 output \"" + target.string() + "\"");
    }
    probe_output_path(chrome_path, {}, "--chrome-trace");
  }
  output::H5Writer writer(target);
  writer.write_scenario(scenario.resolved_yaml, scenario.seed, scenario.name);
  if (scenario.parameter_server.enabled) {
    const PsPrint print = vm.count("csv")     ? PsPrint::csv
                          : vm.count("json")  ? PsPrint::json
                          : vm.count("quiet") ? PsPrint::quiet
                                              : PsPrint::text;
    return run_parameter_server(scenario, writer, trace, print, target.string(), chrome_path);
  }
  const run::SimulationResult result = run::simulate(scenario, writer, trace);
  if (result.out_of_memory) {
    // memory_reserved is what the check compared (the allocator replay's peak, or memory.total()
    // where the device gives no allocator rules).
    char sizes[160];
    std::snprintf(sizes, sizeof sizes, "%.2f GiB per GPU at its peak, the %s's allocator has %.2f GiB",
                  result.memory_reserved / (1024.0 * 1024 * 1024), scenario.topology.device.name.c_str(),
                  result.allocator_capacity / (1024.0 * 1024 * 1024));
    std::cerr << "ironlaw run: " << scenario.name << ": out of memory: the layout needs " << sizes
              << "; nothing was simulated and no output written.\n"
              << report::format_memory_table(result);
    return kExitJobFailed;  // the writer's temporary file is removed on destruction
  }
  std::optional<training::WholeRunResult> whole;
  if (scenario.run.mode == "full") {
    whole = training::simulate_whole_run(scenario, &result, vm.count("quiet") ? training::ProgressFn{} : progress_bar());
    write_run_tables(writer, *whole);
  }
  const training::WholeRunResult* whole_ptr = whole ? &*whole : nullptr;
  const auto metrics = report::summary_metrics(scenario, result, whole_ptr);
  std::vector<std::pair<std::string, double>> row;
  std::vector<std::string> units;
  for (const auto& m : metrics) {
    row.emplace_back(m.name, m.value);
    units.push_back(m.unit);
  }
  writer.write_summary(row, units);
  if (result.memory_by_stage.size() > 1) {
    // Every pipeline stage's allocator replay, the summary's "reserved by pipeline stage".
    std::vector<std::int64_t> stage;
    std::vector<double> reserved, allocated;
    for (std::size_t i = 0; i < result.memory_by_stage.size(); ++i) {
      stage.push_back(static_cast<std::int64_t>(i));
      reserved.push_back(result.memory_by_stage[i].reserved);
      allocated.push_back(result.memory_by_stage[i].allocated);
    }
    using output::TableColumn;
    writer.write_table("memory_by_stage", {TableColumn{"stage", "1", stage}, TableColumn{"reserved_bytes", "B", reserved},
                                           TableColumn{"allocated_bytes", "B", allocated}});
  }
  const auto& series = result.link_series;
  if (!series.names.empty())
    writer.write_link_series(series.names, series.bandwidth, series.start_s, series.bin_s, series.end_s, series.busy);
  commit_run_outputs(writer, result.links, target.string(), chrome_path, chrome_ranks);

  if (vm.count("csv") || vm.count("json")) {
    std::vector<NamedValue> values;
    for (const auto& m : metrics) values.push_back({m.name, m.value, m.unit});
    if (vm.count("csv")) {
      std::cout << values_csv(values);
    } else {
      std::string peak;
      if (result.memory_peak_stage >= 0) {
        // What the text summary's "live at the replay's peak" lists: {"stage", "bytes": {kind: B}}.
        peak = ", \"memory_at_peak\": {\"stage\": " + std::to_string(result.memory_peak_stage) + ", \"bytes\": {";
        for (std::size_t i = 0; i < result.memory_peak_ledger.size(); ++i) {
          const auto& [kind, bytes] = result.memory_peak_ledger[i];
          peak += (i ? ", " : "") + json_string(kind) + ": " + json_number(bytes);
        }
        peak += "}}";
      }
      if (result.memory_by_stage.size() > 1) {
        // The text summary's "reserved by pipeline stage": [{"reserved": B, "allocated": B}, ...].
        peak += ", \"memory_by_stage\": [";
        for (std::size_t i = 0; i < result.memory_by_stage.size(); ++i) {
          const auto& m = result.memory_by_stage[i];
          peak += std::string(i ? ", " : "") + "{\"reserved\": " + json_number(m.reserved) +
                  ", \"allocated\": " + json_number(m.allocated) + "}";
        }
        peak += "]";
      }
      std::cout << values_json(scenario.name, values, peak);
    }
  } else if (!vm.count("quiet")) {
    std::cout << report::format_summary(scenario, result, whole_ptr);
    std::cout << "\nwrote " << printable(target.string());
    if (!chrome_path.empty()) std::cout << " and " << printable(chrome_path);
    std::cout << "\n";
  }
  return kExitOk;
}

void commit_run_outputs(output::H5Writer& writer, const std::vector<run::LinkUsage>& links, const std::string& target,
                        const std::string& chrome_path, const std::vector<int>& chrome_ranks) {
  std::vector<std::string> link_names;
  std::vector<double> link_bytes, link_busy;
  for (const auto& l : links) {
    link_names.push_back(l.name);
    link_bytes.push_back(l.bytes);
    link_busy.push_back(l.busy_s);
  }
  writer.write_links(link_names, link_bytes, link_busy);
  if (chrome_path.empty()) {
    writer.commit();
    return;
  }
  // Exported from the finished file batch by batch (memory stays bounded for any trace) while
  // it is still a temporary: the HDF5 file is renamed onto its target only once the trace is
  // complete, so both outputs appear or neither (a rank without events leaves no .h5 behind).
  writer.finish();
  output::export_chrome_trace(output::H5Reader(writer.temporary()), chrome_path, chrome_ranks, "--chrome-trace-ranks",
                              target);
  try {
    writer.publish();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(chrome_path, ignored);
    throw;
  }
}

}  // namespace ironlaw::cli
