#pragma once
/// \file Failure-rate files (topologies/failure-rates-*.yaml): per-node rates of each cause of
/// job interruption, each with its source, read with the same unknown-key, unit and
/// file:line:column checks as every other file.
///
/// Format:
///
///     name: llama3-405b-54d
///     source: "where the numbers come from"
///     observation:            # required when a cause gives a count
///       nodes: {value: 2048, source: "..."}
///       duration: {value: 54 d, source: "..."}
///     causes:
///       gpu: {count: {value: 148, source: "..."}, detection: crash}
///       software: {per_1000_node_days: {value: 0.5, source: "..."}, detection: hang,
///                  distribution: weibull, shape: 0.8}
///
/// A count becomes a rate per node-second: count / (nodes × duration). Cause names are a fixed
/// set (kFailureCauses); every cause gives exactly one of count or per_1000_node_days.
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::config {

/// The causes a failure-rate file may list (Llama 3 Table 5's categories, plus planned stops
/// and a total rate a source does not break down).
extern const std::vector<std::string> kFailureCauses;

/// The name that stands for any cause of kFailureCauses in the listing of the keys
/// (`failures.causes.CAUSE.count`, failure_key_table()).
inline constexpr const char* kFailureCausePlaceholder = "CAUSE";

/// Loads a failure-rate file; throws InputError listing every problem with file:line:col.
FailureRatesSpec load_failures(const std::string& path);

namespace detail {
struct LoadState;
class Section;
/// Parses a failure-rate file's root mapping into `out` (used by the scenario loader, so its
/// problems join the scenario's list). O(keys).
void parse_failures(Section root, FailureRatesSpec& out);
/// The failure-rate file's schema: parse_failures() in collecting mode over nothing, its keys
/// under the prefix "failures" and every cause's keys under failures.causes.CAUSE.
LoadState collect_failures_schema();
}  // namespace detail

}  // namespace ironlaw::config
