#pragma once
/// \file Loading scenarios, topologies and model cards from YAML into *Spec structs.
/// All functions throw InputError listing *every* problem found, each with file:line:column
/// (1-based) and the dotted key.
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::config {

/// Loads a scenario, resolving `model:` and `cluster.topology:` (paths relative to the
/// scenario file, or inline mappings), then applies `overrides` ("KEY=VALUE", KEY a dotted path,
/// VALUE parsed with the same units as the YAML), then validates the whole.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

TopologySpec load_topology(const std::string& path);
ModelSpec load_model(const std::string& path);

/// Every dotted key a scenario may set (for `--vary` checks and "did you mean").
std::vector<std::string> scenario_keys();

/// Levenshtein-closest candidate within a small distance, or "" if none is close.
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace ironlaw::config
