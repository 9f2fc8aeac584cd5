#pragma once
/// \file Private to config/: checks between keys, run after parsing (STYLE.md §6). Each check
/// runs only when the keys it reads parsed cleanly, and reports at the offending key.
#include <string>

#include "config/reader.hpp"
#include "config/spec.hpp"

namespace ironlaw::config::detail {

/// Model shape consistency; `prefix` is "model" inside a scenario, "" for a model card alone.
void validate_model(const ModelSpec& model, LoadState& state, const std::string& prefix);

/// Node and fabric consistency; `prefix` is "cluster.topology" inside a scenario.
void validate_topology(const TopologySpec& topology, LoadState& state, const std::string& prefix);

/// The layout against the cluster and the model; fills `parallel.dp` when it was "auto".
void validate_scenario(Scenario& scenario, LoadState& state);

}  // namespace ironlaw::config::detail
