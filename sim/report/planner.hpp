#pragma once
/// \file `ironlaw plan`: which layout, on how many GPUs. Three stages, each cheaper than the next:
///
/// 1. **Enumerate** every combination of the search space (GPU counts × tp × pp × cp × ep ×
///    ZeRO stage × microbatch size × schedule × virtual stages × sequence parallelism ×
///    recompute policy × precision recipe; values per axis from PlanSpace, by default the
///    loader's accepted choices and the divisors that can divide the model and the node).
/// 2. **Prune**, with the reason kept per candidate: the loader's own checks between keys
///    (config::recheck_scenario: GPUs, heads, layers, batch divisibility, ...), the run layer's
///    refusals (run::resolve_layout), and memory: workload::memory_per_gpu with the schedule's
///    activations in flight (run::in_flight_microbatches) against the device's HBM, the
///    per-term total of run::simulate_memory (a test holds the two equal). Where the device
///    has allocator rules the simulation refuses by the allocator replay instead, which can
///    lie either side of the total: plan() gives the best-predicted candidates that check
///    (PlanResult::memory_replayed) before it chooses what to simulate.
/// 3. **Predict** the step time of every survivor with a closed-form model (PlanPrediction) —
///    the workload layer's per-op roofline times, ring formulas for the collectives over the
///    node's NVLink and NIC bandwidths, and the textbook pipeline bubble — rank by the question
///    asked, and **simulate** the best `top_k` event by event (run::simulate) on `threads`
///    threads. The table ranks the simulated rows by their simulated figures.
///
/// The predictor is a ranking device only: no figure of it is reported as a result, and it
/// never feeds a simulation (DESIGN.md principle 1). Its agreement with the simulation is
/// measured and reported (PlanResult::agreement).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "run/simulation.hpp"

namespace ironlaw::report {

/// Values per axis; an empty list takes the default stated on the field.
struct PlanSpace {
  std::vector<int> gpus;             ///< GPU counts, multiples of node.gpus (default: the scenario's)
  std::vector<int> tp;               ///< default: powers of two up to node.gpus
  std::vector<int> pp;               ///< default: powers of two and divisors of layers, up to min(layers, 32)
  std::vector<int> cp;               ///< default: 1, 2
  std::vector<int> ep;               ///< default: 1 (dense); MoE: powers of two dividing experts, up to 64
  std::vector<int> zero;             ///< default: 0, 1, 2, 3
  std::vector<int> microbatch_size;  ///< default: 1, 2
  std::vector<int> virtual_stages;   ///< interleaved schedule only; default: 2, 4
  std::vector<std::string> schedules;   ///< default: every parallel.pp_schedule the loader accepts
  std::vector<std::string> recompute;   ///< default: every training.activation_checkpointing value
  std::vector<std::string> precisions;  ///< default: bf16, and fp8 when the device has an fp8 peak
  std::vector<int> sequence_parallel;   ///< 0/1; default: 0, 1 (1 only when tp > 1)
  /// Host memory one layout's simulation may need [B] (run::estimate_resources); a layout above
  /// it is pruned as "not simulated" before it is predicted or simulated. 0: no bound.
  double max_simulation_bytes = 0;
};

/// What the plan is asked.
struct PlanQuestion {
  /// fastest: least days; deadline: fewest GPUs that finish within deadline_days (then least
  /// days); budget: least days whose cost is within budget_usd.
  enum class Goal { fastest, deadline, budget } goal = Goal::fastest;
  double deadline_days = 0;
  double budget_usd = 0;
  double price_per_gpu_hour = 0;  ///< USD per GPU-hour for the cost column; 0 = no cost
};

/// The predictor's closed-form step (seconds). compute + exposed_comm + bubble + optimizer = step.
struct PlanPrediction {
  double step_s = 0;
  double compute_s = 0;       ///< the worst stage's passes of every microbatch (recompute included)
  double exposed_comm_s = 0;  ///< TP and EP collectives (blocking), CP and DP beyond the compute they overlap
  double bubble_s = 0;        ///< (pp − 1)/v microbatch passes (zb-h1: without the deferred W passes)
  double optimizer_s = 0;
};

/// One candidate layout and what became of it. Its run::StepBreakdown is the simulated step's
/// (status ok; zero otherwise).
struct PlanRow : run::StepBreakdown {
  int gpus = 0, nodes = 0;
  int tp = 1, pp = 1, cp = 1, dp = 1, ep = 1, zero = 0, microbatch_size = 1, virtual_stages = 1;
  bool sequence_parallel = false;
  std::string schedule, recompute, precision;
  /// "ok" (simulated), "predicted" (survived pruning, not among the top K), or why it was
  /// pruned: "invalid: KEY: ...", "not simulated: ...", "out of memory: ...", "failed: ...".
  std::string status;
  /// Per GPU: what the simulation compares with HBM (the allocator replay's reserved peak) for
  /// the rows that had that check (plan()'s best-predicted, the simulated), else the per-term
  /// total of the enumeration; 0 when pruned before any memory estimate.
  double memory_bytes = 0;
  PlanPrediction predicted;
  double predicted_days = 0;
  int predicted_rank = 0;   ///< 1-based among the survivors; 0 when pruned
  // Simulated (status ok):
  double step_time_s = 0;
  double mfu = 0;           ///< PaLM convention (report::summary_metrics)
  double days = 0;          ///< training.tokens at the simulated tokens/s, no failures
  double gpu_hours = 0;
  double cost_usd = 0;      ///< gpu_hours × price (0 without a price)
  bool meets = true;        ///< within the deadline or the budget of the question (simulated figures)
  int rank = 0;             ///< 1-based among the simulated rows; 0 otherwise

  /// "tp8 pp4 cp1 dp32 ep1 z1 mb1 1f1b sp full bf16" — the layout in one token string.
  std::string layout() const;
};

/// How the predictor's ranking compared with the simulation's on the simulated rows.
struct PlanAgreement {
  bool top_choice = false;    ///< the predictor's first is the simulation's first
  /// Per GPU count with at least two simulated rows: whether the predictor's best at that count
  /// is the simulation's best at it.
  int per_gpu_agree = 0, per_gpu_total = 0;
  double kendall_tau = 0;     ///< rank correlation of predicted and simulated step times (−1..1)
  double median_abs_error = 0;  ///< median |predicted / simulated step time − 1|
};

struct PlanResult {
  /// Simulated rows in rank order, then the predicted ones by predicted rank, then the pruned
  /// ones in enumeration order.
  std::vector<PlanRow> rows;
  std::size_t enumerated = 0;
  std::size_t pruned_invalid = 0;       ///< refused by the loader's checks
  std::size_t pruned_not_simulated = 0; ///< refused by the run layer
  std::size_t pruned_memory = 0;        ///< out of HBM
  /// Rows checked with the simulation's own memory check (plan(): the predicted best, until
  /// every GPU count has top_k that fit), and how many of them the per-term total had put over
  /// HBM although they fit.
  std::size_t memory_replayed = 0;
  std::size_t memory_rescued = 0;
  std::size_t survivors = 0;            ///< ranked by the predictor
  std::size_t simulated = 0;
  std::size_t failed = 0;               ///< chosen for simulation but refused or failed there
  /// Simulated rows whose step timeline another simulated row had already given: layouts that
  /// differ only in ZeRO 1 against 2 (the run layer builds the same step for both; only their
  /// memory differs, and each row's memory is its own). Counted in `simulated`.
  std::size_t shared = 0;
  /// Simulations run event by event: one per distinct step timeline, plus a layout's own when
  /// its timeline's representative (the member with the least memory) failed and it then ran.
  std::size_t step_simulations = 0;
  std::map<std::string, std::size_t> prune_reasons;  ///< "invalid: parallel.tp" → count
  PlanAgreement agreement;
};

/// The defaults of PlanSpace resolved for `base` (every empty axis filled). O(layers).
PlanSpace resolve_space(const config::Scenario& base, const PlanSpace& space);

/// Stages 1 and 2: every combination of `space` (resolved) on `base`, pruned rows with their
/// status, the others with status "predicted" and their prediction (not yet ranked).
/// Deterministic; O(candidates · checks) plus the prediction of each distinct pass shape.
std::vector<PlanRow> enumerate_layouts(const config::Scenario& base, const PlanSpace& space);

/// The predictor alone, for one scenario whose layout passed the loader's checks. O(ops of a
/// layer) per call.
PlanPrediction predict_step(const config::Scenario& scenario);

/// How plan() gets its chosen rows simulated. Called once with the rows to simulate (one per
/// distinct step timeline) and `simulate_one`, which fills one row (simulate_row); it must
/// call it on every row, here on threads or elsewhere (cli/mpi: other processes, whose rows come
/// back through encode_simulated / decode_simulated), and return true with every row filled,
/// or false when this process is not the one that gathers the results (plan() then returns an
/// empty PlanResult at once).
using SimulateRows = std::function<bool(std::vector<PlanRow>& rows, const std::function<void(PlanRow&)>& simulate_one)>;

/// The whole plan: enumerate, prune, predict, rank by `question`, simulate the best `top_k`
/// on `threads` threads (or through `simulate_rows` when given), rank those by their simulated
/// figures. Each simulation runs one step when the scenario has no data pipeline (then every
/// step is the same: nothing random and nothing carried from one step to the next), else
/// run.steps of `base`, at most 2. Rows that share a step timeline (ZeRO 1 and 2 of one layout)
/// are simulated once (PlanResult::shared). Deterministic whatever `threads` and however
/// `simulate_rows` spreads the work.
PlanResult plan(const config::Scenario& base, const PlanSpace& space, const PlanQuestion& question,
                std::size_t top_k, unsigned threads, const SimulateRows& simulate_rows = {});

/// What one row's event-by-event simulation cost, in the engine's own counts (deterministic;
/// all 0 when the simulation was refused or ran out of memory before any step).
struct SimulationWork {
  std::uint64_t events = 0;        ///< engine events executed
  std::uint64_t flows = 0;         ///< flows started on the network
  std::uint64_t flow_records = 0;  ///< flow records solved (a flow group counts once)
  std::uint64_t resolves = 0;      ///< re-solve passes of the flow network
  std::uint64_t tasks = 0;         ///< tasks of the step graphs
};

/// Simulates `row` event by event on `base` under `question`: fills status ("ok" or "failed:
/// ...") and the simulated figures, and returns what the simulation cost (for profiling: the
/// plan's outputs never carry it). Thread-safe (no shared state).
SimulationWork simulate_row(const config::Scenario& base, const PlanQuestion& question, PlanRow& row);

/// The fields simulate_row() fills, as text (doubles by their exact bits), and back:
/// decode_simulated(encode_simulated(r), r2) gives r2 the figures of r bit for bit. Throws
/// std::runtime_error on a damaged text.
std::string encode_simulated(const PlanRow& row);
void decode_simulated(const std::string& text, PlanRow& row);

/// The scenario of a row: `base` with the row's layout (parallel.dp derived, cluster.nodes from
/// the GPU count), re-checked by the loader's checks (throws InputError when refused).
config::Scenario scenario_for(const config::Scenario& base, const PlanRow& row);

}  // namespace ironlaw::report
