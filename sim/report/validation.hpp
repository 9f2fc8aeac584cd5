#pragma once
/// \file Validation cases: published figures beside what ironlaw predicts for the published
/// configuration, with the error. Nothing is fitted per case (DESIGN.md principle 2): a case
/// that misses is reported as a miss.
///
/// A case is a list of jobs, each simulating one published configuration and giving its rows,
/// so that `ironlaw validate` can run the jobs of all cases side by side; a job's rows do not
/// depend on which thread runs it or when (every simulation is pure in its scenario and seed).
#include <functional>
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::report {

struct ValidationRow {
  std::string label;     ///< what is compared, e.g. "all_reduce busbw, 8 GPUs, 8 GiB"
  double published = 0;
  double predicted = 0;  ///< NaN when the configuration was not simulated (the label says why)
  std::string unit;
  std::string source;    ///< where the published figure comes from
  /// Whether the figure is a duration (an iteration time): a prediction below the published one
  /// is then too fast, where for a rate (TFLOP/s, tokens/s, bandwidth) it is too slow.
  bool duration = false;
  /// Whether the figure is a memory footprint (peak GiB per GPU): counted in the summary's median
  /// and maximum |error|, and as over or under, never as too fast or too slow.
  bool memory = false;
  /// (predicted − published) / published.
  double error() const { return published != 0 ? (predicted - published) / published : 0; }
};

struct ValidationCase {
  std::string name;
  std::string description;
  std::vector<ValidationRow> rows;
  /// Whether the rows compare with measurements of real runs (counted in the summary's median
  /// and maximum error); false for arithmetic checks such as seed003.
  bool measured = true;
};

/// One unit of work of a case: simulates one configuration, returns its rows in order.
struct ValidationJob {
  std::string label;                              ///< for progress lines
  std::function<std::vector<ValidationRow>()> run;
};

/// A case's description and its jobs, not yet run (`rows` empty). Throws
/// std::invalid_argument for an unknown name. Cheap: nothing is simulated here.
struct ValidationPlan {
  ValidationCase header;
  std::vector<ValidationJob> jobs;
};
ValidationPlan plan_validation(const std::string& name, const std::string& data_dir);

/// Names of the known cases, in the order `ironlaw validate` runs them.
std::vector<std::string> validation_case_names();
/// Cases that `ironlaw validate --case NAME` runs but a plain `validate` leaves out because a row
/// costs a minute of CPU or more (llama3-paper: its 16,384-GPU row simulates a three-tier fabric;
/// nemo-h100-long: a 405B row of 192 microbatches per step on 128 ranks, 70–90 CPU s, 4.9 GB).
std::vector<std::string> validation_long_case_names();
/// Runs one case, its jobs one after the other. `data_dir` holds topologies/, models/ and
/// scenarios/. Throws std::invalid_argument for an unknown name.
ValidationCase run_validation(const std::string& name, const std::string& data_dir);

/// Median and maximum |error| over the measured rows that have a prediction; how many of the
/// speed rows (rates and durations) are too fast (error > 0, or < 0 for a duration) and too slow
/// (the other sign); how many memory rows are over and under their published figure.
struct ValidationSummary {
  int rows = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  int positive = 0;      ///< speed rows too fast
  int negative = 0;      ///< speed rows too slow
  int memory_over = 0;   ///< memory rows predicted above the published peak
  int memory_under = 0;  ///< memory rows predicted below it
  /// Rows past the bounds the project holds its predictions to (README, Validation): speed and
  /// other rows beyond kSpeedBound, memory rows beyond kMemoryBound.
  int beyond_speed_bound = 0;
  int beyond_memory_bound = 0;
  /// Measured rows without a prediction: not simulated, or a published layout refused (out of
  /// memory: its label says so). Left out of the median and maximum, and counted here.
  int without_prediction = 0;
  static constexpr double kSpeedBound = 0.20;
  static constexpr double kMemoryBound = 0.10;
};
ValidationSummary summarize(const std::vector<ValidationCase>& cases);

/// FLOPs of one iteration of `batch` sequences of the scenario's model as Megatron-Core r0.8.0
/// counts them (megatron/training/training.py num_floating_point_operations at core_v0.8.0, the
/// same at core_v0.9.0), the convention of Megatron's logged TFLOP/s and of the README figures it
/// produced: 12·B·s·L·h²·((1 + g/a + s/h)·(a·d/h) + (f/h)·k·(3/2 if gated) + V'/(2·L·h)), B
/// sequences of s tokens, L layers, hidden h, a heads of dimension d, g key/value groups, FFN width
/// f (--ffn-hidden-size: the model's ffn_hidden, for a MoE model too), k the experts a token is
/// routed to (--moe-router-topk; 1 for a dense model), V' the vocabulary padded as Megatron pads it
/// (to a multiple of 128·TP). Forward and backward of every GEMM and of full (non-causal)
/// attention scores; no router, no shared experts, no recomputation.
double megatron_core_iteration_flops(const config::Scenario& s, double batch);

}  // namespace ironlaw::report
