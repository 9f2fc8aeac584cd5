#pragma once
/// \file Private to config/: checks between keys, run after parsing (STYLE.md §6). Each check
/// runs only when the keys it reads parsed cleanly, and reports at the offending key.
#include <string>
#include <vector>

#include "config/reader.hpp"
#include "config/spec.hpp"

namespace ironlaw::config::detail {

/// Longest scenario name: it becomes a file name ("<name>-sweep.h5" within NAME_MAX, 255).
inline constexpr std::size_t kMaxScenarioNameBytes = 200;

/// Most microbatches per step and pipeline (gradient accumulation steps) a scenario may ask for.
inline constexpr double kMaxMicrobatches = 1e6;
/// Most optimizer steps of a whole run (run.mode full): the run is stepped one optimizer step at
/// a time (about 25 ns each on the 2-core reference machine, so 1e8 steps take seconds); a
/// batch that small against training.tokens would run for minutes to hours. Llama 3 405B's run
/// is about 1e6 steps.
inline constexpr double kMaxWholeRunSteps = 1e8;

/// A physical sanity range for the keys whose dotted name ends in `key` (at a dot boundary),
/// in SI units (bytes, seconds, B/s, FLOP/s), both ends inclusive. Every bound is stated once,
/// in key_bounds(), and listed in README ("Limits").
struct KeyBound {
  const char* key;
  double min;
  double max;
  bool zero_ok;     ///< 0 is also accepted (it switches the feature off)
  const char* why;  ///< the physical reason, for the message
};

/// The table of bounds, most specific key first.
const std::vector<KeyBound>& key_bounds();

/// `key` with each list index written [] ("model.layers[3].units" -> "model.layers[].units",
/// "training.batch_ramp.0.until_tokens" -> "training.batch_ramp[].until_tokens"). O(size).
std::string list_item_key(const std::string& key);

/// The bound of `key` (a full dotted key; list indices are read as []), null when none
/// applies. O(table size).
const KeyBound* bound_for(const std::string& key);

/// "" when `value` is within the bound of `key` (or it has none), else the message
/// "must be from MIN to MAX (why), got VALUE". NaN and infinities are always refused.
std::string bound_problem(const std::string& key, double value);

/// Model shape consistency; `prefix` is "model" inside a scenario, "" for a model card alone.
void validate_model(const ModelSpec& model, LoadState& state, const std::string& prefix);

/// Node and fabric consistency; `prefix` is "cluster.topology" inside a scenario.
void validate_topology(const TopologySpec& topology, LoadState& state, const std::string& prefix);

/// The layout against the cluster and the model; fills `parallel.dp` when it was "auto".
void validate_scenario(Scenario& scenario, LoadState& state);

}  // namespace ironlaw::config::detail
