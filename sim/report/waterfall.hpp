#pragma once
/// \file The GPU-hours waterfall of `ironlaw explain`: from 6·N·D at peak to the simulated
/// whole run, one bar per named quantity, each taken from the simulation's measured outputs
/// (run::SimulationResult's timeline breakdown, training::WholeRunResult's run accounting).
///
/// Invariant: the bars of each section add up to its subtotal, and the sum of all bars is the
/// simulated GPU-hours (the whole run's allocated GPU-hours with run.mode full, else the steps'
/// GPU-hours). Nothing here is fitted: the gap to a published figure is returned as is.
#include <optional>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"

namespace ironlaw::report {

/// One bar of the waterfall [GPU-hours]; may be negative (e.g. MoE: fewer FLOPs than 6·N_total).
struct WaterfallBar {
  std::string section;  ///< "flops", "step" or "run"
  std::string name;     ///< what the bar measures, as printed
  double gpu_hours = 0;
};

struct Waterfall {
  std::vector<WaterfallBar> bars;
  double tokens = 0;               ///< trained tokens: whole steps × tokens per step
  double steps = 0;                ///< steps of the scenario's batch to `tokens`: ⌈D / tokens per step⌉
  double peak_flops_per_gpu = 0;   ///< dense peak of the training precision [FLOP/s]
  double model_flops = 0;          ///< PaLM model FLOPs of `tokens` (6·N_matmul + attention)
  double six_n_flops = 0;          ///< 6·N_total·tokens (the naive count; N_total for a MoE too)
  double model_flops_hours = 0;    ///< subtotal: model FLOPs at peak [GPU-h]
  double step_hours = 0;           ///< subtotal: steps × simulated step time × GPUs [GPU-h]
  bool whole_run = false;          ///< the run section was simulated (run.mode full)
  double simulated_hours = 0;      ///< sum of every bar [GPU-h]
  double simulated_mfu = 0;        ///< model_flops / (peak × simulated_hours × 3600)
  double simulated_mfu_6n = 0;     ///< six_n_flops / (same)
};

/// Builds the waterfall of `scenario` from its step result `step` (means over its simulated
/// steps) and, when given, its whole run `whole`. Pure; O(1).
Waterfall build_waterfall(const config::Scenario& scenario, const run::SimulationResult& step,
                          const training::WholeRunResult* whole);

/// The waterfall as a table, beside `published_hours` (and the MFU they imply), with the gap
/// printed as unexplained.
std::string format_waterfall(const Waterfall& w, double published_hours);

}  // namespace ironlaw::report
