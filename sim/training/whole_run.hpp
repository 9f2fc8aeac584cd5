#pragma once
/// \file The whole training run, above the step simulation: advances a scenario to
/// `training.tokens` as a coarse event process of segments of steps, failures, detections,
/// restarts and checkpoints, on the project's integer nanosecond Time.
///
/// Why a tight loop and not engine::Simulator: the job is one sequential state machine (train a
/// step, or checkpoint, or be down); the only concurrent processes are the per-node failure
/// clocks, kept in one min-heap. Every event the loop handles happens at a step boundary or at
/// the head of that heap, so a general event queue would add a callback per step (about a
/// million) and nothing else. Same Time, same determinism (RngStreams keyed by path + seed).
///
/// Nothing here is an efficiency input (DESIGN.md principle 1): step durations come from the
/// step simulation of the same configuration; checkpoint and restart costs from bytes over the
/// storage and network bandwidths; the slowdown that an asynchronous checkpoint write causes
/// from re-simulating the step with the NIC capacity that the write leaves to training.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/time.hpp"
#include "run/simulation.hpp"

namespace ironlaw::training {

/// The one adapter to the step simulation (today run::simulate with no records; to become
/// run::simulate_step). Simulates `scenario.run.steps` steps of that exact configuration.
run::SimulationResult simulate_step(const config::Scenario& scenario);

/// simulate_step() answered from a process-wide cache keyed by the parts of the scenario that
/// the step simulation reads: the resolved scenario text without its run-level keys
/// (reliability, training.tokens, training.batch_ramp, training.evaluation, run.mode, output,
/// name), plus the fields a whole run overrides on its copies (nodes, layout, batch, NIC
/// capacity) and the seed. So the points of a sweep that differ only in run-level keys (the
/// checkpoint interval, the failure file) simulate each step configuration once between them.
/// A scenario without resolved text (built in code, not loaded) is simulated, never cached.
/// Thread-safe: a configuration being simulated by one thread is waited for by the others, not
/// simulated twice. Holds at most kSharedStepEntries results (links dropped); the oldest go
/// first. Cost of a hit: one YAML parse and emit of the scenario text (milliseconds).
run::SimulationResult shared_simulate_step(const config::Scenario& scenario);

/// Results shared_simulate_step() keeps at most.
inline constexpr std::size_t kSharedStepEntries = 64;

/// How many step simulations shared_simulate_step() has run in this process (hits excluded).
std::uint64_t shared_step_simulations();

/// Empties shared_simulate_step()'s cache (for benchmarks that time a cold run). Not to be
/// called while another thread simulates.
void clear_shared_steps();

/// What the whole run needs to know about one configuration's steps.
struct StepProfile {
  std::vector<Time> durations;    ///< steady-state step times (the warm-up step dropped when > 1)
  double mean_s = 0;              ///< mean of durations [s]
  double tokens_per_step = 0;
  double model_flops_per_step = 0;  ///< PaLM convention, all GPUs [FLOP]
  double peak_flops_per_gpu = 0;    ///< [FLOP/s]
  int gpus = 0;
  double checkpoint_bytes = 0;          ///< whole checkpoint: weights once + every optimizer shard [B]
  double checkpoint_bytes_per_gpu = 0;  ///< most any GPU holds (weights + optimizer state) [B]
  bool out_of_memory = false;
};

/// Step simulations cached by configuration (layout, nodes, batch, NIC capacity): each distinct
/// configuration is simulated once. Not thread-safe (one per whole run).
class StepCache {
 public:
  using Simulate = std::function<run::SimulationResult(const config::Scenario&)>;
  explicit StepCache(Simulate simulate) : simulate_(std::move(simulate)) {}
  /// The profile of `scenario` (simulated on first request). O(log entries) on a hit.
  const StepProfile& get(const config::Scenario& scenario);
  /// Seeds the cache with a result already simulated for `scenario`.
  void put(const config::Scenario& scenario, const run::SimulationResult& result);
  /// Simulates the configurations of `scenarios` not cached yet, on up to `threads` threads at
  /// once (each simulation is independent and deterministic, so the results do not depend on
  /// the thread count). Rethrows the first failure in `scenarios` order.
  void prefetch(const std::vector<config::Scenario>& scenarios, unsigned threads);
  /// The configurations a simulated one leads to (e.g. the same step beside a checkpoint
  /// write, whose NIC share depends on the first's checkpoint bytes). Called on a worker
  /// thread: it must only read shared state.
  using Derive = std::function<std::vector<config::Scenario>(const config::Scenario&, const StepProfile&)>;
  /// As prefetch() above, and as each configuration of `first` is known (simulated, or found
  /// in the cache), the configurations `then` derives from its profile join the same pool of
  /// `threads` threads: no thread waits for a whole round to end. Results do not depend on
  /// the thread count or the order the jobs finish in (each simulation is pure); the first
  /// failure is rethrown in a fixed order (each of `first`, then what it derived). Out-of-memory
  /// profiles derive nothing. Cost: the simulations, plus O(jobs²) key comparisons.
  void prefetch(const std::vector<config::Scenario>& first, const Derive& then, unsigned threads);
  int simulations() const { return simulations_; }
  /// The profile of a simulated result of `scenario`. Pure.
  static StepProfile profile(const config::Scenario& scenario, const run::SimulationResult& result);

 private:
  static std::string key(const config::Scenario& scenario);
  Simulate simulate_;
  std::map<std::string, std::unique_ptr<StepProfile>> profiles_;
  int simulations_ = 0;
};

/// One failure that stopped the job (or, while it was down, delayed its restart).
struct FailureEvent {
  Time time;             ///< when the component failed
  std::string cause;     ///< failure-file cause name
  int node = 0;          ///< failure domain
  Time detected;         ///< when the job noticed (crash: at once; hang: after the timeout)
  double lost_work_s = 0;  ///< training time whose progress was discarded (since the checkpoint)
  std::int64_t step = 0;   ///< steps completed when it failed
  bool while_down = false; ///< it struck during a restart (no further work lost)
};

/// One checkpoint.
struct CheckpointEvent {
  Time start;            ///< state captured (training pauses)
  Time resumed;          ///< training resumes (sync: write done; async: snapshot in host memory)
  Time durable;          ///< written to storage (async: background write done); max() if lost
  std::int64_t step = 0;
  double bytes = 0;
};

/// One restart, from detection to training again.
struct RestartEvent {
  Time detected;
  Time resumed;
  double wait_for_node_s = 0;  ///< no spare left: waiting for a repaired node
  double reschedule_s = 0;
  double initialize_s = 0;
  double load_s = 0;           ///< checkpoint bytes over the shared storage path
  std::int64_t resumed_step = 0;
  int dp = 0;                  ///< data-parallel degree training resumes with (elastic: may be fewer)
  bool elastic_grow = false;   ///< a planned restart onto a node back from repair, not a failure's
};

/// The simulated whole run. Times in seconds unless a field is a Time.
struct WholeRunResult {
  std::int64_t steps = 0;        ///< optimizer steps in the final model
  std::int64_t steps_run = 0;    ///< steps executed, including those lost to failures
  double tokens = 0;
  double wall_s = 0;
  double productive_s = 0;       ///< time running steps whose progress was kept
  double lost_work_s = 0;        ///< time running steps whose progress was lost
  double checkpoint_pause_s = 0; ///< training paused for checkpoint writes or snapshots
  double down_s = 0;             ///< from failure to training again (detection, restart, load); elastic regrowth
  double evaluation_s = 0;       ///< evaluation pauses (training.evaluation)
  int evaluations = 0;
  int elastic_shrinks = 0;       ///< restarts on fewer nodes (no spare ready, reliability.elastic)
  int elastic_grows = 0;         ///< planned restarts back onto a returned node
  double shrunk_idle_gpu_hours = 0;  ///< job GPU-hours left idle by a shrink during kept steps
  double allocated_gpu_hours = 0;///< wall × (job + spare) GPUs
  double productive_gpu_hours = 0;
  int interruptions = 0;         ///< failures that stopped the job (planned stops included)
  std::map<std::string, int> interruptions_by_cause;
  double ettr = 0;               ///< productive time / wall time (Kokolis et al.'s ETTR)
  /// Ideal time / wall time: ideal = the kept steps at the undisturbed simulated step times,
  /// so it also charges the slowdown of steps that shared the network with a checkpoint write.
  double goodput = 0;
  double mfu_step = 0;           ///< the last batch stage's simulated step
  double mfu_productive = 0;     ///< model FLOPs of kept steps / (peak × GPUs × productive time)
  double mfu_allocated = 0;      ///< model FLOPs of kept steps / (peak × allocated GPU-seconds)
  double mtbf_s = 0;             ///< 1 / (Σ cause rates × nodes): the job's mean time between failures
  double checkpoint_write_s = 0; ///< one checkpoint's pause (sync) or snapshot + slowdown (async), last stage
  double checkpoint_interval_s = 0;  ///< the interval used (last stage); 0 = no checkpoints
  double young_daly_interval_s = 0;  ///< sqrt(2 · checkpoint_write_s · mtbf_s)
  int step_simulations = 0;
  std::vector<FailureEvent> failures;
  std::vector<CheckpointEvent> checkpoints;
  std::vector<RestartEvent> restarts;
};

/// Refuses (InputError, exit 2) a scenario that sets whole-run keys (reliability.*,
/// training.batch_ramp) while run.mode is steps: they would be accepted and ignored.
void refuse_unsimulated(const config::Scenario& scenario);

/// Called with the fraction of training.tokens done (0–1), about every 1 %.
using ProgressFn = std::function<void(double)>;

/// Simulates `scenario` (run.mode full) to training.tokens. The step simulations it needs
/// (each batch stage; beside a write with async checkpoints; forward-only for evaluations) run
/// in one pool on the machine's hardware threads (StepCache::prefetch). `base` (optional) is a step result
/// already simulated for the scenario as given, reused instead of simulating it again.
/// Throws InputError (exit 2) for a setting this version cannot simulate. Deterministic in
/// (scenario, seed). Cost: the distinct step simulations, plus O(steps + failures · log nodes).
WholeRunResult simulate_whole_run(const config::Scenario& scenario, const run::SimulationResult* base = nullptr,
                                  const ProgressFn& progress = {},
                                  const StepCache::Simulate& simulate = shared_simulate_step);

}  // namespace ironlaw::training
