// `ironlaw run`: simulate a scenario's training steps, write the HDF5 trace, print the summary.
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "output/chrome_trace.hpp"
#include "output/h5_reader.hpp"
#include "output/h5_writer.hpp"
#include "report/metrics.hpp"
#include "run/simulation.hpp"

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

}  // namespace

int cmd_run(const Args& args) {
  po::options_description opts("ironlaw run SCENARIO.yaml [options]");
  std::string scenario_path, out_path, trace_text, chrome_path;
  std::vector<std::string> sets;
  std::string seed_text;
  opts.add_options()
      ("help,h", "show this help")
      ("scenario", po::value(&scenario_path), "scenario YAML")
      ("set", po::value(&sets)->composing(), "KEY=VALUE override of a scenario key (repeatable), e.g. cluster.nodes=32")
      ("output,o", po::value(&out_path), "HDF5 output (default: the scenario's output.path)")
      ("trace", po::value(&trace_text), "none | step | op | flow (default: the scenario's output.trace)")
      ("chrome-trace", po::value(&chrome_path), "also write the timeline as Chrome-trace JSON (Perfetto)")
      ("seed", po::value(&seed_text), "root random seed, 0 … 2^64-1 (default: the scenario's seed)")
      ("quiet,q", "print nothing on success");
  Limits limits;
  add_limit_options(opts, limits, false);
  po::variables_map vm;
  if (!parse_command_line(args, opts, "scenario", vm)) return kExitOk;
  if (scenario_path.empty()) throw InputError({}, "SCENARIO", "a scenario file is required");
  if (vm.count("output") && out_path.empty()) throw InputError({}, "-o", "the output path is empty");
  if (vm.count("chrome-trace") && chrome_path.empty()) throw InputError({}, "--chrome-trace", "the output path is empty");

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
  check_scenario_limits(scenario, run::resolve_layout(scenario), limits);

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
  const run::SimulationResult result = run::simulate(scenario, writer, trace);
  if (result.out_of_memory) {
    std::cerr << "ironlaw run: " << scenario.name << ": out of memory: the layout needs "
              << result.memory.total() / (1024.0 * 1024 * 1024) << " GiB per GPU, the "
              << scenario.topology.device.name << " has " << result.hbm_bytes / (1024.0 * 1024 * 1024)
              << " GiB; nothing was simulated and no output written.\n"
              << report::format_memory_table(result);
    return kExitJobFailed;  // the writer's temporary file is removed on destruction
  }
  const auto metrics = report::summary_metrics(scenario, result);
  std::vector<std::pair<std::string, double>> row;
  std::vector<std::string> units;
  for (const auto& m : metrics) {
    row.emplace_back(m.name, m.value);
    units.push_back(m.unit);
  }
  writer.write_summary(row, units);
  std::vector<std::string> link_names;
  std::vector<double> link_bytes, link_busy;
  for (const auto& l : result.links) {
    link_names.push_back(l.name);
    link_bytes.push_back(l.bytes);
    link_busy.push_back(l.busy_s);
  }
  writer.write_links(link_names, link_bytes, link_busy);
  writer.commit();
  // Exported from the committed file batch by batch, so memory stays bounded for any trace.
  if (!chrome_path.empty()) output::export_chrome_trace(output::H5Reader(target), chrome_path);

  if (!vm.count("quiet")) {
    std::cout << report::format_summary(scenario, result);
    std::cout << "\nwrote " << target.string();
    if (!chrome_path.empty()) std::cout << " and " << chrome_path;
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace ironlaw::cli
