#pragma once
/// \file Step-level simulation of a scenario: builds every rank's task graph for a training
/// step (compute ops on the rank's stream, collectives on the fabric), runs it on the engine,
/// and measures what happened. Utilisation, exposed communication and the rest are *measured
/// on the simulated timeline*; none of them is an input (DESIGN.md principle 1).
#include <cstdint>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run {

/// How much of the timeline goes to the record sink.
enum class TraceLevel { none, step, op, flow };
TraceLevel parse_trace_level(const std::string& text);  ///< throws std::invalid_argument

/// The parallel layout resolved against the cluster.
struct Layout {
  int gpus = 1;
  int tp = 1, pp = 1, cp = 1, dp = 1;
  int microbatch_sequences = 1;  ///< sequences per microbatch
  int microbatches = 1;          ///< per optimizer step per DP rank (gradient accumulation)
  double tokens_per_step = 0;    ///< global batch
};
/// Resolves the layout of `scenario`; throws InputError for what this version cannot simulate.
Layout resolve_layout(const config::Scenario& scenario);

/// What one simulated scenario produced. Times in seconds, FLOPs per step over all GPUs.
struct SimulationResult {
  Layout layout;
  workload::MemoryBreakdown memory;  ///< per GPU
  double hbm_bytes = 0;              ///< capacity per GPU
  bool out_of_memory = false;        ///< memory.total() > hbm_bytes: nothing was simulated

  std::vector<StepRecord> steps;
  // Means over the simulated steps, on the critical rank.
  double step_time_s = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double comm_s = 0;                 ///< all communication time, hidden or not
  double bubble_s = 0;
  double data_stall_s = 0;
  double other_s = 0;

  double tokens_per_step = 0;
  double model_flops_per_step = 0;       ///< PaLM convention (6·N_matmul + 12·L·H·Q·T per token)
  double model_flops_6n_per_step = 0;    ///< 6·N per token (seed 003)
  double hardware_flops_per_step = 0;    ///< FLOPs actually executed, recomputation included
  double peak_flops_per_gpu = 0;         ///< dense peak of the training precision
  int gpus = 0;

  std::uint64_t events_executed = 0;
  std::uint64_t flows_started = 0;
  std::uint64_t tasks = 0;
};

/// Simulates `scenario.run.steps` training steps. Records go to `sink` at `trace` detail.
/// An OOM layout returns with out_of_memory set and no steps.
SimulationResult simulate(const config::Scenario& scenario, RecordSink& sink, TraceLevel trace);

}  // namespace ironlaw::run
