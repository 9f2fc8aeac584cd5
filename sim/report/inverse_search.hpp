#pragma once
/// \file The inverse question of `ironlaw explain`: which cluster sizes and batch sizes, within
/// stated bounds (factors of the scenario's own), would spend the published GPU-hours, and what
/// share of time in training steps (or what failure rate) that would take.
///
/// Each candidate is one step simulation (run.mode steps, the scenario's layout with dp derived
/// from the GPU count); nothing is fitted. The failure rate a candidate would need is a
/// first-order extrapolation from the whole run simulated for the scenario itself: the
/// measured wall time each interruption cost (lost work + down time), held fixed per
/// interruption. It is labelled as such where printed.
#include <functional>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "training/whole_run.hpp"

namespace ironlaw::report {

struct SearchBounds {
  std::vector<double> node_factors{0.5, 1, 2};   ///< × scenario cluster.nodes
  std::vector<double> batch_factors{0.5, 1, 2};  ///< × scenario training.global_batch_tokens
  /// Called for each candidate before it is simulated: "" to simulate it, else why not (the
  /// command's resource limits; the row shows the reason). May throw InputError (an invalid
  /// layout). Called from the search's threads. Null: every candidate is simulated.
  std::function<std::string(const config::Scenario&)> refuse;
};

struct SearchRow {
  int nodes = 0;
  int gpus = 0;
  int tp = 0, pp = 0, dp = 0;
  double batch_tokens = 0;
  std::string status;         ///< "" when simulated; else why not (out of memory, invalid layout)
  double step_time_s = 0;
  double mfu = 0;             ///< of the simulated step (PaLM)
  double step_gpu_hours = 0;  ///< ⌈D / batch⌉ × step time × GPUs
  /// step_gpu_hours / published: the share of the published hours that training steps would
  /// fill (the ETTR the published hours imply for this candidate); > 1: cannot reproduce them.
  double needed_ettr = 0;
  /// Interruptions per 1,000 node-days that would fill the rest of the published hours, at the
  /// scenario's simulated cost per interruption and its checkpoint overhead; < 0: none possible.
  double needed_failures_per_knd = -1;
  double distance = 0;        ///< ranking key: |ln(needed_ettr / simulated ETTR)|
};

struct SearchResult {
  std::vector<SearchRow> rows;          ///< ranked, closest first; unsimulated rows last
  double simulated_ettr = 1;            ///< of the scenario's own whole run (1 without one)
  double configured_failures_per_knd = 0;  ///< interruptions per 1,000 node-days in the file
  double cost_per_interruption_s = 0;   ///< measured: (lost work + down) / interruptions
};

/// Runs the search over `bounds` (every node × batch factor; distinct configurations only) on up
/// to `threads` threads; `whole` is the scenario's simulated whole run (or null). Deterministic.
/// Cost: one step simulation per candidate.
SearchResult inverse_search(const config::Scenario& scenario, double published_hours, const SearchBounds& bounds,
                            const training::WholeRunResult* whole, unsigned threads);

/// The ranked table (at most `max_rows` rows), with the bounds and the extrapolation stated.
std::string format_search(const SearchResult& result, const SearchBounds& bounds, std::size_t max_rows);

}  // namespace ironlaw::report
