// The CPU bound of every step simulation (run/cpu_budget.hpp): spent, it stops the simulation
// with an InputError keyed --step-cpu-limit; not spent, it changes nothing (the watchdog's
// events only read and are left out of the event count). No wall-clock assertion: a limit of 0
// is spent before the first step whatever the machine's speed.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "config/load.hpp"
#include "core/records.hpp"
#include "engine/simulator.hpp"
#include "run/cpu_budget.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kOneNode = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";

/// Sets the process-wide limit for one scope.
struct LimitScope {
  explicit LimitScope(double s) : before(run::step_cpu_limit()) { run::set_step_cpu_limit(s); }
  ~LimitScope() { run::set_step_cpu_limit(before); }
  double before;
};

}  // namespace

TEST_CASE("a spent CPU limit stops a step simulation with an input error naming --step-cpu-limit", "[run][hostile]") {
  const auto s = config::load_scenario(kOneNode, {"run.steps=1"});
  LimitScope zero(0);
  NullSink sink;
  try {
    (void)run::simulate(s, sink, run::TraceLevel::op);
    FAIL("the simulation was not stopped");
  } catch (const run::CpuLimitReached& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics().front().key == "--step-cpu-limit");
    CHECK(e.diagnostics().front().message.find("gpt2-ddp-1node: the step simulation did not finish within") !=
          std::string::npos);
  }
  // An InputError: every per-point handler (sweep, plan, search) that turns bad input into a row
  // turns this into one too.
  CHECK_THROWS_AS(run::simulate(s, sink, run::TraceLevel::none), InputError);
}

TEST_CASE("an unspent CPU limit and its watchdog change no figure of the step", "[run][hostile]") {
  const auto s = config::load_scenario(kOneNode, {"run.steps=2"});
  NullSink sink;
  run::SimulationResult bounded, unbounded;
  {
    LimitScope generous(1e9);
    bounded = run::simulate(s, sink, run::TraceLevel::step);
  }
  {
    LimitScope none(std::numeric_limits<double>::infinity());
    unbounded = run::simulate(s, sink, run::TraceLevel::step);
  }
  REQUIRE(bounded.steps.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(bounded.steps[i].start_ns == unbounded.steps[i].start_ns);
    CHECK(bounded.steps[i].end_ns == unbounded.steps[i].end_ns);
  }
  CHECK(bounded.events_executed == unbounded.events_executed);
  CHECK(bounded.flows_started == unbounded.flows_started);
  CHECK(bounded.link_series.busy == unbounded.link_series.busy);
}

TEST_CASE("the watchdog checks within one event when every event falls at one instant", "[run][hostile]") {
  // 5,000 events at time 0 (a collective whose flows all start together): with a spent limit the
  // run stops after the first, not after the 1,024 events of a fixed interval.
  engine::Simulator sim;
  int ran = 0;
  for (int i = 0; i < 5000; ++i) sim.schedule_at(Time::zero(), [&ran] { ++ran; });
  LimitScope zero(0);
  const run::SimulationCpuBudget budget("instant", 1.0, "");
  run::CpuWatchdog watchdog(sim);
  watchdog.resume();
  CHECK_THROWS_AS(sim.run(), run::CpuLimitReached);
  CHECK(ran == 1);
  CHECK(sim.pending() == 4999);  // the rest stay pending, as after any exception from an action
  watchdog.pause();
}

TEST_CASE("an unlimited budget arms no watchdog", "[run][hostile]") {
  engine::Simulator sim;
  int ran = 0;
  for (int i = 0; i < 3000; ++i) sim.schedule_at(Time::ns(i), [&ran] { ++ran; });
  LimitScope none(std::numeric_limits<double>::infinity());
  const run::SimulationCpuBudget budget("unlimited", 1.0, "");
  run::CpuWatchdog watchdog(sim);
  watchdog.resume();
  CHECK(sim.run() == 3000);
  CHECK(ran == 3000);
  CHECK(watchdog.every() == run::CpuWatchdog::kWatchdogEvents);  // never armed: never adapted
}

TEST_CASE("the CPU projection takes its pace from when simulated time first moved, not from the build", "[run][hostile]") {
  // Hand numbers: 6 CPU s building the task graph, then 4 CPU s took simulated time from 0.5 s to
  // 1.0 s: 8 CPU s per simulated second; 2 s remain to the 3 s it must reach: 10 + 2 × 8 = 26.
  // (Taking the whole 10 s as the pace from time 0 would give 10 × 3 / 1 = 30.)
  CHECK(run::projected_step_cpu_s(10, 6, 0.5, 1.0, 3.0) == Approx(26.0));
  // A build of 6 CPU s that ended at 1 us of simulated time is not a pace of 6e6 CPU s per
  // simulated second: with 5 CPU s of events from 1 us to 0.1 s, 3.15 s need 11 + 3.05 × 50.
  CHECK(run::projected_step_cpu_s(11, 6, 1e-6, 0.1, 3.15) == Approx(11 + 3.05 * 5 / (0.1 - 1e-6)));
  // Past the simulated time it must reach, the projection is what was spent.
  CHECK(run::projected_step_cpu_s(10, 6, 0.5, 4.0, 3.0) == 10);
  // No simulated time since the reference: no pace.
  CHECK(std::isnan(run::projected_step_cpu_s(10, 6, 0.5, 0.5, 3.0)));
}

#include "comm/comm_world.hpp"

TEST_CASE("half a collective's closed-form prediction is below its simulated duration", "[run][hostile]") {
  // The projection's floor (run::kCollectiveFloorFraction × Communicator::predict of the
  // algorithm the collective runs) must never exceed what the simulation takes, or the CPU
  // bound could stop a simulation that would finish. Checked against the simulation itself
  // (test::CommWorld runs one collective alone, the case the closed forms describe; shared
  // links only slow it) for every algorithm that applies, stepped and fluid rings, 8 B .. 1 GiB.
  using comm::Algorithm;
  using comm::CollectiveOp;
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& spec : {test::dgx_h100(), test::dgx_h100_nvls()}) {
    for (int nodes : {1, 2, 4, 16}) {
      const int gpus = nodes * spec.node.gpus;
      std::vector<std::vector<int>> groups{test::iota(0, gpus)};
      if (nodes > 1) {
        std::vector<int> rail;  // one GPU per node, as a DP group across tensor-parallel nodes
        for (int n = 0; n < nodes; ++n) rail.push_back(n * spec.node.gpus);
        groups.push_back(rail);
      }
      for (const auto& ranks : groups) {
        for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
          for (double bytes : {8.0, 65536.0, 8e6, test::GiB}) {
            for (Algorithm a : {Algorithm::ring, Algorithm::hierarchical, Algorithm::tree, Algorithm::nvls}) {
              for (bool fluid : {false, true}) {
                test::CommWorld w(spec, nodes, fluid);
                const Time predicted = w.comm.predict(op, ranks, bytes, a);
                if (predicted == Time::max()) continue;  // does not apply
                const double floor_ns = run::kCollectiveFloorFraction * static_cast<double>(predicted.count_ns());
                const auto simulated = static_cast<double>(w.time(op, ranks, bytes, a));
                INFO(nodes << " nodes, " << ranks.size() << " ranks, op " << static_cast<int>(op) << ", " << bytes
                           << " B, " << comm::algorithm_name(a) << (fluid ? " fluid" : " stepped") << ": floor "
                           << floor_ns << " ns, simulated " << simulated << " ns");
                CHECK(floor_ns <= simulated);
                worst = std::min(worst, simulated / static_cast<double>(predicted.count_ns()));
              }
            }
          }
        }
      }
    }
  }
  INFO("smallest simulated / predicted " << worst);
  CHECK(worst >= run::kCollectiveFloorFraction);
}

TEST_CASE("a raised floor makes the projection stop a simulation its first bound let run", "[run][hostile]") {
  // The pace is 1 CPU s per simulated second (projected_step_cpu_s): 10 CPU s brought it from
  // 0 to 10 s. Must reach 20 s: 10 + 10 × 1 = 20 CPU s. Raised to 1000 s: 10 + 990 = 1000 CPU s.
  CHECK(run::projected_step_cpu_s(10, 0, 0, 10, 20) == Approx(20));
  CHECK(run::projected_step_cpu_s(10, 0, 0, 10, 1000) == Approx(1000));
  // Without a budget on this thread, raising does nothing and wants nothing.
  CHECK_FALSE(run::cpu_budget_wants_floor());
  run::raise_cpu_budget_floor(Time{}, Time::from_seconds(5));
  {
    LimitScope limit(100);
    run::SimulationCpuBudget budget("t", 2.0, "");
    CHECK(run::cpu_budget_wants_floor());
    run::raise_cpu_budget_floor(Time{}, Time::from_seconds(1));  // earlier than the bound: kept
    CHECK(budget.lower_bound_s() == 2.0);
    run::raise_cpu_budget_floor(Time{}, Time::from_seconds(7.5));
    CHECK(budget.lower_bound_s() == Approx(7.5));
  }
  {
    run::SimulationCpuBudget unknown("t", 0, "");  // no bound, no projection: left so
    run::raise_cpu_budget_floor(Time{}, Time::from_seconds(7.5));
    CHECK(unknown.lower_bound_s() == 0);
  }
}
