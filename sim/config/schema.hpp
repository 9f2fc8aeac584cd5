#pragma once
/// \file The reference of the scenario keys (`ironlaw keys`, docs/scenario-keys.md), generated
/// from the loader itself: the keys, their types, defaults, units and choices are what the
/// scenario reader's accessors record when run over nothing (reader.hpp, collecting mode); the
/// bounds are key_bounds() of validate.cpp, the table the loader checks values against. Only
/// the sentence saying what a key means is written here, and a test checks that every key the
/// loader reads has one and that no sentence names a key the loader does not read.
///
/// Also: re-running the loader's checks between keys on a scenario changed in code (a layout
/// the planner proposes), so that no second copy of those checks exists.
#include <optional>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "config/units.hpp"
#include "core/error.hpp"

namespace ironlaw::config {

/// One scenario key as the loader reads it.
struct KeyInfo {
  std::string key;            ///< dotted path, e.g. "parallel.tp"
  std::string type;           ///< text, choice, flag, integer, number, duration, list, value, section, include
  std::string unit;           ///< SI unit of the value: B, B/s, s, FLOP, FLOP/s, 1 (a count); "" for non-numbers
  std::optional<Dimension> dimension;  ///< what the value is read as (numbers and durations); needs_unit() tells
                                       ///< whether a bare number is refused
  std::string default_value;  ///< the value when absent, in `unit`; "" when none or required
  std::string bounds;         ///< accepted range ("1 to 1.04858e+06", "> 0", "0 or 1e+06 to 1e+20"); "" = any
  std::vector<std::string> choices;  ///< choice keys: every accepted value
  bool required = false;
  bool sourced = false;       ///< a hardware constant: written { value, source }
  std::string meaning;        ///< one sentence; "" only for a key the table does not document (a test forbids it)
};

/// Every key a scenario may contain, sections included, in the order the loader reads them.
/// Cost: one pass of the scenario reader over an empty document (well under a millisecond).
std::vector<KeyInfo> scenario_key_table();

/// Every key of a failure-rate file (the document `reliability.failures` names;
/// config/failures.hpp), as the failure-rate reader reads them, under the prefix "failures."
/// ("failures.observation.nodes"); a cause's keys under failures.causes.CAUSE, CAUSE being any of
/// the choices of "failures.causes" (kFailureCauses). Each with its meaning. Same cost as
/// scenario_key_table().
std::vector<KeyInfo> failure_key_table();

/// The documented patterns: a key's meaning is the entry whose pattern its dotted name ends
/// in (at a dot boundary), most specific first. For the test that no entry is stale.
std::vector<std::string> documented_key_patterns();

/// docs/scenario-keys.md: every key of scenario_key_table() as a Markdown table, and how units
/// are written, then the keys of failure-rate files (failure_key_table()). Deterministic text.
std::string scenario_keys_markdown();

/// Re-runs the loader's checks between keys (the layout against the cluster and the model,
/// batch divisibility, schedule and virtual stages, the precision against the device) and the
/// bounds of the parallel and training keys on `scenario`, changed in code after it was
/// loaded. Fills parallel.dp when it is 0 (auto). Returns every problem, located where the
/// original file set the key. O(number of checks).
std::vector<Diagnostic> recheck_scenario(Scenario& scenario);

}  // namespace ironlaw::config
