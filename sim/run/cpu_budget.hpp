#pragma once
/// \file A CPU-time bound on every step simulation (run::simulate), whichever command or thread
/// runs it (run, sweep points, plan layouts, explain's scenarios, what-ifs and search points,
/// whole runs' step simulations): a scenario too large to simulate in reasonable time ends with
/// exit 2 naming `--step-cpu-limit` and the keys that make it large, not after hours.
///
/// The limit is process-wide (set once by the command line); each simulation measures the CPU
/// time of the thread that runs it from its start. The run layer polls it as tasks complete and
/// at each link-series sample, and between events (CpuWatchdog): past the limit, or once
/// kProjectAfterCpuS have been spent since simulated time first moved, when the pace since then
/// projects past it, the simulation stops with CpuLimitReached. The projection is conservative:
/// CPU used + (a lower bound of the simulated time the simulation must reach — its step FLOPs at
/// the device's best GEMM rate, run/resource_estimate.hpp — minus the time reached) × CPU per
/// simulated second since that moment (projected_step_cpu_s), so it stops only a simulation
/// that, at its measured pace, could not finish even if its steps were that fast; building the
/// task graph counts against the limit but is not taken as a pace. Records observe and never schedule: a simulation that finishes is
/// the same with or without the bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/sanitizer.hpp"
#include "core/time.hpp"

namespace ironlaw::run {

/// CPU seconds spent before a projection may stop a simulation.
inline constexpr double kProjectAfterCpuS = 5.0;
/// Default of --step-cpu-limit [CPU s]. The costliest shipped step simulation is DeepSeek-V3's
/// (scenarios/explain/deepseek-v3.yaml: about 285 CPU s per step simulation in a Release build,
/// README "Explaining published runs"); the next are ~21 s (the GPT-3 175B ZeRO-3 validation row
/// on 1,536 GPUs) and below. 600 s keeps every shipped scenario, `make bench` and `validate`
/// within it with twice DeepSeek's cost to spare, and the projection (kProjectAfterCpuS) stops
/// most larger inputs after 5 CPU s. Sanitizer builds run 5-20x slower: kSanitizerSlowdown times the
/// default (core/sanitizer.hpp).
inline constexpr double kDefaultStepCpuLimitS = 600.0 * kSanitizerSlowdown;

/// Thrown when a simulation passes the limit (or its projection does). An InputError keyed
/// `--step-cpu-limit`: exit 2 on the command line, a row saying so in sweeps, plans and searches.
class CpuLimitReached : public InputError {
 public:
  CpuLimitReached(const std::string& message) : InputError(SourceLoc{}, "--step-cpu-limit", message) {}
};

/// The simulation begun last in this process, for the command's CPU bound (cli/common.hpp,
/// --cpu-limit) to name when it stops the command: "NAME (its size is mostly KEYS)", or "" if
/// none began. Written by each SimulationCpuBudget; read from another thread into `out`
/// (at most `size` bytes with its NUL), without allocating. O(1).
void last_simulation(char* out, std::size_t size);

/// Sets the process-wide limit [CPU s of the simulating thread per simulation]; +inf = none.
/// Not negative, not NaN (the command line checks its option).
void set_step_cpu_limit(double seconds);
double step_cpu_limit();

/// Installs the bound for the simulation this thread runs from now until destruction (nested:
/// the previous one is restored). `what` names the scenario, `lower_bound_s` is the simulated
/// time it reaches at least (0: unknown, no projection), `driver` the keys behind its size.
class SimulationCpuBudget {
 public:
  SimulationCpuBudget(std::string what, double lower_bound_s, std::string driver);
  ~SimulationCpuBudget();
  SimulationCpuBudget(const SimulationCpuBudget&) = delete;
  SimulationCpuBudget& operator=(const SimulationCpuBudget&) = delete;

  /// The simulated time the simulation must reach at least [s], as raised so far.
  double lower_bound_s() const { return lower_bound_s_; }

  /// Throws CpuLimitReached when the budget is spent at simulated time `reached`, or, once
  /// kProjectAfterCpuS are spent since simulated time first moved, when the pace since then
  /// projects past it (projected_step_cpu_s: building the task graph before the first event is
  /// counted against the limit but not taken as a pace); a simulation that must reach a positive
  /// simulated time and, kProjectAfterCpuS after its first event, has not left time 0 projects
  /// without end (all its events so far at one instant). O(1): one read of the thread's CPU clock.
  void check(Time reached) const;

 private:
  friend void poll_cpu_budget(Time reached);
  friend bool cpu_budget_wants_floor();
  friend void raise_cpu_budget_floor(Time now, Time must_reach);
  friend class CpuWatchdog;
  std::string what_;
  mutable double lower_bound_s_;
  std::string driver_;
  double limit_s_;
  double start_cpu_s_;
  // Pace reference: CPU [s since start] and simulated time [s] at the first check after
  // simulated time moved; CPU at the first event the watchdog saw (-1: not yet).
  mutable double ref_cpu_s_ = -1, ref_at_s_ = 0;
  mutable double first_event_cpu_s_ = -1;
  // The stretch of simulated time a collective must run through (raise_cpu_budget_floor): CPU
  // [s since start] and simulated time [s] when it began, the time it ends at least (-1: none).
  mutable double span_cpu_s_ = -1, span_at_s_ = 0, span_end_s_ = -1;
  unsigned polls_ = 0;
  SimulationCpuBudget* previous_;
};

/// The CPU a step simulation needs in all [s], projected from its pace since simulated time first
/// moved: `used` CPU so far, `ref_cpu` the CPU when simulated time first moved (both since the
/// simulation began), `ref_at` the simulated time then, `at` now, `must_reach` the simulated time
/// it reaches at least: used + (must_reach - at) × (used - ref_cpu) / (at - ref_at), or `used`
/// once at >= must_reach. NaN when no pace is known (at <= ref_at). Pure, for tests.
double projected_step_cpu_s(double used, double ref_cpu, double ref_at, double at, double must_reach);

/// Fraction of a collective's closed-form prediction (comm::Communicator::predict of the
/// algorithm it runs, with nothing else on the network) taken as a lower bound of its simulated
/// duration. Shared links only slow a collective, and the closed forms match the uncontended
/// simulation within a few per cent (tests/comm), so half of it is below every simulated
/// duration (tests/run/cpu_budget_test.cpp checks it over rings, hierarchical rings, trees and
/// NVLS, stepped and fluid, 8 B .. 1 GiB, 1 .. 16 nodes).
inline constexpr double kCollectiveFloorFraction = 0.5;
/// Collectives over fewer ranks raise no floor (their closed form is not worth its O(ranks)
/// cost: a ring of 64 ranks is at most 2·63·64 flows per channel, within the step's own pace).
inline constexpr std::size_t kCollectiveFloorMinRanks = 64;

/// Whether this thread runs a simulation whose budget could use a sharper lower bound (a
/// finite limit and a projection): callers skip computing one otherwise. O(1).
bool cpu_budget_wants_floor();
/// Raises the simulated time the current thread's simulation must reach at least to
/// `must_reach` [absolute simulated time] if that is later than the bound it has: a collective
/// that starts at t and lasts at least d (kCollectiveFloorFraction × its prediction) ends the
/// step no earlier than t + d. It also opens a span, [now, must_reach], the simulation must run
/// through (extended by later raises while it lasts): once kProjectAfterCpuS are spent since it
/// opened, the span is projected at its own pace as the whole step is (projected_step_cpu_s),
/// so a collective whose events cost far more than the step before it (a ring or tree over tens
/// of thousands of ranks) is stopped for its own pace, which the step's average would hide.
/// `now` is the simulated time of the call. Only read by the projection: no figure changes. O(1).
void raise_cpu_budget_floor(Time now, Time must_reach);

/// The current thread's budget, if any, checked every 64th call (task completions). O(1).
void poll_cpu_budget(Time reached);
/// The current thread's budget, if any, checked now (for callers that are themselves rare). O(1).
void check_cpu_budget(Time reached);

}  // namespace ironlaw::run

namespace ironlaw::engine {
class Simulator;
}

namespace ironlaw::run {

/// Checks the thread's budget between the events of a running step, so that a single task
/// that runs long (a collective of a million ranks is one task, its flows events of the flow
/// network) is bounded too: the simulator's tick (engine::Simulator::set_tick) calls it after
/// every event, and it reads the CPU clock every `every` events: kWatchdogEvents while events
/// are cheap, fewer (down to one) as soon as a stretch of events costs more than
/// kWatchdogStretchCpuS, so the CPU spent between two checks stays bounded by about that
/// stretch (or one event) whatever the event pattern — a million events at one instant, or
/// events that each do the work of many (a collective's launch over every rank). It schedules nothing and only reads, so the events, their order,
/// every count and every figure of the step are the same with it as without it, on any machine
/// at any load (a check paced by CPU time would not be: its own events would land wherever the
/// machine's speed put them).
class CpuWatchdog {
 public:
  /// Events between two checks: a check reads the thread's CPU clock (well under a
  /// microsecond), an event costs about one, so the checks cost under 0.1 % and come every few
  /// milliseconds of CPU.
  static constexpr std::uint64_t kWatchdogEvents = 1024;
  /// CPU seconds between two checks past which the interval shrinks (in proportion, down to
  /// one event); it starts at one event and doubles while a stretch costs under a tenth of it.
  static constexpr double kWatchdogStretchCpuS = 0.01;

  explicit CpuWatchdog(engine::Simulator& sim) : sim_(sim) {}
  ~CpuWatchdog();
  CpuWatchdog(const CpuWatchdog&) = delete;
  CpuWatchdog& operator=(const CpuWatchdog&) = delete;
  /// Starts checking (a step begins), when the thread has a finite budget. O(1).
  void resume();
  /// Stops checking (the step ended). O(1).
  void pause();
  /// Events between two clock reads now (1 .. kWatchdogEvents).
  std::uint64_t every() const { return every_; }

 private:
  void on_event();
  engine::Simulator& sim_;
  bool armed_ = false;
  std::uint64_t every_ = kWatchdogEvents;
  std::uint64_t since_ = 0;
  double last_cpu_s_ = 0;
};

}  // namespace ironlaw::run
