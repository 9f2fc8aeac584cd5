#pragma once
/// \file Step-level simulation of a scenario: builds every simulated rank's task graph for a
/// training step, runs it on the engine and measures what happened. Utilisation, exposed
/// communication, bubbles and the rest are *measured on the simulated timeline*; none of them
/// is an input (DESIGN.md principle 1).
///
/// The parts, one job each (README, "Layout of the repository"):
/// - step_costs: what each pass of each unit costs, cut where communication attaches (by op role);
/// - step_builder: the task graph of a step and the world it runs in;
/// - model_parallel: tensor, expert and context parallelism inside a pass;
/// - pipeline_schedule / pipeline_wiring: the order of F / B / W slots per stage, and the sends;
/// - data_parallel: the gradient collectives, one strategy per ZeRO stage;
/// - step_metrics: the breakdown measured from the timeline;
/// - this file: memory, FLOPs, the step loop and the means.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "run/layout.hpp"
#include "run/link_series.hpp"
#include "run/trace_level.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run {

/// Traffic one link carried over the whole simulation.
struct LinkUsage {
  std::string name;     ///< "node0/gpu3->node0/nvswitch", ...
  double bytes = 0;     ///< payload carried
  double busy_s = 0;    ///< time with at least one flow on it
};

/// A step's time cut by what the ranks were doing [s], measured on the simulated timeline
/// (run/step_metrics.cpp): compute + exposed_comm + bubble + data_stall + other = the step
/// time. One value type carried by SimulationResult, StepStatistics and report::PlanRow, which
/// take its fields as their own (so `r.compute_s` reads as before) and copy it whole with
/// breakdown(). O(1) everywhere.
struct StepBreakdown {
  double compute_s = 0;       ///< busy compute time
  double exposed_comm_s = 0;  ///< communication not hidden behind compute
  double bubble_s = 0;        ///< idle inside the pipeline phase (pp > 1)
  double data_stall_s = 0;    ///< waiting for the input pipeline
  double other_s = 0;         ///< idle time that is not a pipeline bubble

  /// The parts of one step's record.
  static StepBreakdown of(const StepRecord& step) {
    return {step.compute_s, step.exposed_comm_s, step.bubble_s, step.data_stall_s, step.other_s};
  }
  StepBreakdown& breakdown() { return *this; }
  const StepBreakdown& breakdown() const { return *this; }
  /// Part by part.
  StepBreakdown& operator+=(const StepBreakdown& o) {
    compute_s += o.compute_s;
    exposed_comm_s += o.exposed_comm_s;
    bubble_s += o.bubble_s;
    data_stall_s += o.data_stall_s;
    other_s += o.other_s;
    return *this;
  }
  /// Part by part (a mean over `n` steps).
  StepBreakdown& operator/=(double n) {
    for (double* v : {&compute_s, &exposed_comm_s, &bubble_s, &data_stall_s, &other_s}) *v /= n;
    return *this;
  }
};

/// What one simulated scenario produced. Times in seconds; FLOPs per step over all GPUs. Its
/// StepBreakdown is the mean over the simulated steps and ranks.
struct SimulationResult : StepBreakdown {
  Layout layout;
  workload::MemoryBreakdown memory;  ///< per GPU, on the rank that needs the most
  double hbm_bytes = 0;              ///< capacity per GPU (device.hbm_bytes)
  /// What the caching allocator may reserve of it (allocator_capacity: less the CUDA context
  /// and the NCCL communicators' buffers).
  double allocator_capacity = 0;
  /// Peak memory PyTorch's caching allocator reserves on that rank [B]: the step's allocations
  /// and frees replayed through the device's memory_allocator rules
  /// (workload/step_memory.hpp); memory.total() where the device gives no allocator rules or
  /// the model is a layer list.
  double memory_reserved = 0;
  /// Peak of the replayed live tensors [B] (0 where nothing was replayed): memory.total()'s
  /// terms placed in time, with the allocator's block rounding.
  double memory_allocated_peak = 0;
  bool out_of_memory = false;        ///< memory_reserved > allocator_capacity: nothing was simulated
  /// The pipeline stage whose replay reserved memory_reserved (the first such), −1 where nothing
  /// was replayed.
  int memory_peak_stage = -1;
  /// The most cudaMalloc retries one steady step of any pipeline stage's replay needed (the
  /// allocator freed its cache to fit: workload::StepMemoryPeaks::alloc_retries); their time
  /// (a device synchronisation and cudaFree per cached segment) is not simulated.
  int memory_alloc_retries = 0;
  /// That stage's live tensors at its allocated peak, by kind, in name order [B]
  /// (workload::StepMemoryPeaks::ledger): what fills the memory when it is fullest.
  std::vector<std::pair<std::string, double>> memory_peak_ledger;
  /// Every pipeline stage's replay, in stage order (empty where nothing was replayed): the
  /// stages differ in layers, root modules (embedding on the first, LM head and loss on the
  /// last) and the microbatches their schedule keeps in flight, so the peak over all GPUs that
  /// frameworks report (memory_reserved) hides how unbalanced they are.
  struct StageMemory {
    double reserved = 0;   ///< the stage's peak reserved by the caching allocator [B]
    double allocated = 0;  ///< the stage's peak of live tensors [B]
  };
  std::vector<StageMemory> memory_by_stage;

  std::vector<StepRecord> steps;
  /// Means over the simulated steps and ranks; the breakdown's parts sum to step_time_s on
  /// every rank, so also for the mean.
  double step_time_s = 0;
  double comm_s = 0;                 ///< all communication time of a rank, hidden or not
  double optimizer_s = 0;            ///< the optimizer step (part of compute)

  double tokens_per_step = 0;
  double model_flops_per_step = 0;       ///< PaLM convention (6·N_matmul + 12·L·H·Q·T per token)
  double model_flops_6n_per_step = 0;    ///< 6·N per token (seed 003)
  double hardware_flops_per_step = 0;    ///< model FLOPs + recomputation
  double peak_flops_per_gpu = 0;         ///< dense peak of the training precision
  int gpus = 0;
  int ranks_simulated = 0;               ///< ranks simulated op by op (symmetric: one replica)

  std::vector<LinkUsage> links;          ///< every link that carried traffic, in link order
  /// Busy time per link per time bin over the simulated steps, the kLinkSeriesLinks busiest
  /// links (run/link_series.hpp); recorded when the trace level is not none, else empty.
  LinkSeries link_series;

  std::uint64_t events_executed = 0;
  std::uint64_t flows_started = 0;
  std::uint64_t flow_records = 0;        ///< flow records the network solved (a flow group counts once)
  std::uint64_t resolves = 0;            ///< re-solve passes of the flow network
  std::uint64_t tasks = 0;
};

/// Simulates `scenario.run.steps` training steps. Records go to `sink` at `trace` detail.
/// With run.forward_only (an evaluation pass) each step runs every microbatch forward only:
/// no backward, recomputation, gradient collectives or optimizer; its model FLOPs are the
/// forward third of the PaLM count; refused (InputError) under ZeRO 3; memory is checked as for
/// training. An OOM layout returns with out_of_memory set and no steps. `scenario` must have passed the
/// config layer's validation (e.g. the device has a peak for the training precision).
SimulationResult simulate(const config::Scenario& scenario, RecordSink& sink, TraceLevel trace);

/// The part of simulate() before any step runs: the layout, the memory per GPU and the
/// allocator replay (memory, memory_reserved, memory_allocated_peak, out_of_memory), the FLOPs
/// and tokens per step and the device peak; no step is simulated (steps empty, times 0).
/// simulate() starts with exactly this. O(ops of the model + allocator replay).
SimulationResult simulate_memory(const config::Scenario& scenario);

/// What a whole-run layer needs of the step level: the statistics of `scenario.run.steps`
/// simulated steps. Times in seconds; the StepBreakdown holds means whose parts sum to mean_s.
struct StepStatistics : StepBreakdown {
  bool out_of_memory = false;
  double mean_s = 0;                 ///< mean step duration
  std::vector<double> durations_s;   ///< each simulated step, in order (the first has the loaders' warm-up)
  double tokens_per_step = 0;
  double model_flops_per_step = 0;   ///< PaLM convention, all GPUs
  double peak_flops_per_gpu = 0;
  int gpus = 0;
};

/// The step statistics of `scenario` with root seed `seed` (replacing scenario.seed): a pure
/// function of its arguments — no records, no globals — so a caller may cache it by (scenario,
/// seed). Same cost as simulate().
StepStatistics simulate_step(const config::Scenario& scenario, std::uint64_t seed);

}  // namespace ironlaw::run
