#pragma once
/// \file Step-level simulation of a scenario: builds every simulated rank's task graph for a
/// training step — compute kernels on the rank's stream, tensor-parallel collectives inside its
/// TP group, pipeline sends between stages under the chosen schedule, data-parallel gradient
/// collectives (DDP buckets, ZeRO 1–3) on the fabric — runs it on the engine and measures what
/// happened. Utilisation, exposed communication, bubbles and the rest are *measured on the
/// simulated timeline*; none of them is an input (DESIGN.md principle 1).
#include <cstdint>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "run/layout.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run {

/// How much of the timeline goes to the record sink.
enum class TraceLevel { none, step, op, flow };
TraceLevel parse_trace_level(const std::string& text);  ///< throws std::invalid_argument

/// Traffic one link carried over the whole simulation.
struct LinkUsage {
  std::string name;     ///< "node0/gpu3->node0/nvswitch", ...
  double bytes = 0;     ///< payload carried
  double busy_s = 0;    ///< time with at least one flow on it
};

/// What one simulated scenario produced. Times in seconds; FLOPs per step over all GPUs.
struct SimulationResult {
  Layout layout;
  workload::MemoryBreakdown memory;  ///< per GPU, on the rank that needs the most
  double hbm_bytes = 0;              ///< capacity per GPU
  bool out_of_memory = false;        ///< memory.total() > hbm_bytes: nothing was simulated

  std::vector<StepRecord> steps;
  /// Means over the simulated steps and ranks; compute + exposed_comm + bubble + data_stall +
  /// other = step time on every rank, so also for the mean.
  double step_time_s = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double comm_s = 0;                 ///< all communication time of a rank, hidden or not
  double bubble_s = 0;               ///< idle inside the pipeline phase (pp > 1)
  double data_stall_s = 0;
  double other_s = 0;                ///< idle time that is not a pipeline bubble
  double optimizer_s = 0;            ///< the optimizer step (part of compute)

  double tokens_per_step = 0;
  double model_flops_per_step = 0;       ///< PaLM convention (6·N_matmul + 12·L·H·Q·T per token)
  double model_flops_6n_per_step = 0;    ///< 6·N per token (seed 003)
  double hardware_flops_per_step = 0;    ///< model FLOPs + recomputation
  double peak_flops_per_gpu = 0;         ///< dense peak of the training precision
  int gpus = 0;
  int ranks_simulated = 0;               ///< ranks simulated op by op (symmetric: one replica)

  std::vector<LinkUsage> links;          ///< every link that carried traffic, in link order

  std::uint64_t events_executed = 0;
  std::uint64_t flows_started = 0;
  std::uint64_t tasks = 0;
};

/// Simulates `scenario.run.steps` training steps. Records go to `sink` at `trace` detail.
/// An OOM layout returns with out_of_memory set and no steps.
SimulationResult simulate(const config::Scenario& scenario, RecordSink& sink, TraceLevel trace);

}  // namespace ironlaw::run
