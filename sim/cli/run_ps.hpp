#pragma once
/// \file `ironlaw run` of a scenario with a parameter_server section: simulate it with
/// run::simulate_parameter_server, write the HDF5 output, print the summary.
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "config/spec.hpp"
#include "output/h5_writer.hpp"
#include "run/simulation.hpp"
#include "run/trace_level.hpp"

namespace ironlaw::cli {

/// How the summary is printed.
enum class PsPrint { text, csv, json, quiet };

/// Refuses run.steps above --max-steps and a run whose gradient records would exceed
/// --max-memory (InputError, exit 2). O(1).
void check_ps_limits(const config::Scenario& scenario, const Limits& limits);

/// Simulates, writes /summary, /steps, /events (at `trace`), /links, /run/ps_gradients and
/// /run/ps_servers into `writer`, commits it, exports `chrome_path` when not empty, and
/// prints. Returns the exit status (0; 1 when a worker's batch does not fit its GPU).
int run_parameter_server(const config::Scenario& scenario, output::H5Writer& writer, run::TraceLevel trace,
                         PsPrint print, const std::string& target, const std::string& chrome_path);

/// The end of `ironlaw run` for both modes: writes /links (name, bytes [B], busy seconds per
/// link that carried traffic) into `writer`, commits it to `target`, then, when `chrome_path` is
/// not empty, exports the committed file's timeline as Chrome-trace JSON batch by batch (memory
/// bounded for any trace), keeping the ranks of `chrome_ranks` (empty = every rank in the file).
/// O(links + events). Defined in cmd_run.cpp.
void commit_run_outputs(output::H5Writer& writer, const std::vector<run::LinkUsage>& links, const std::string& target,
                        const std::string& chrome_path, const std::vector<int>& chrome_ranks = {});

/// Throws InputError (exit 2) when `scenario` has a parameter_server section: `command`
/// (sweep, explain) does not simulate that mode, and must not silently simulate another.
void refuse_parameter_server(const config::Scenario& scenario, const std::string& command);

}  // namespace ironlaw::cli
