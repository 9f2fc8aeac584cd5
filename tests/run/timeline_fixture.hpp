#pragma once
// The tiny world of tests/run/data/timeline.yaml shared by the timeline tests (timeline_test.cpp
// derives its figures): on the launch-bound node the host issues a kernel every 1 us and each
// does a vanishing amount of work (1 ns once rounded up), so a compute task of K kernels takes
// K us + 1 ns. A Trace is one simulated step of that world at --trace op, with look-ups of its
// records by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run_test {

inline const std::string kTimeline = IRONLAW_SOURCE_DIR "/tests/run/data/timeline.yaml";
inline constexpr double kUs = 1000.0;      // ns
inline constexpr double kKernel = 1001.0;  // ns, a task of one kernel on the launch-bound node

/// One simulated scenario with every record it produced.
struct Trace {
  config::Scenario scenario;
  MemorySink sink;
  run::SimulationResult result;

  /// Records named `name`: of `rank` for compute, of any rank for collectives, by start time.
  std::vector<EventRecord> named(const std::string& name, int rank = 0) const {
    std::vector<EventRecord> out;
    for (const auto& e : sink.events)
      if (sink.names.at(e.name) == name && (e.kind == EventKind::collective || e.rank == rank)) out.push_back(e);
    std::stable_sort(out.begin(), out.end(), [](const EventRecord& a, const EventRecord& b) { return a.start_ns < b.start_ns; });
    return out;
  }
  /// The first record named `name` of `kind` (fails the test when there is none).
  EventRecord first(const std::string& name, EventKind kind, int rank = 0) const {
    for (const auto& e : named(name, rank))
      if (e.kind == kind) return e;
    FAIL("no " << name);
    return {};
  }
  /// The compute record of rank 0 that starts first at or after `t`.
  EventRecord next_compute(std::int64_t t) const {
    EventRecord best{};
    best.start_ns = -1;
    for (const auto& e : sink.events) {
      if (e.rank != 0 || e.kind == EventKind::collective || e.kind == EventKind::data || e.start_ns < t) continue;
      if (best.start_ns < 0 || e.start_ns < best.start_ns) best = e;
    }
    return best;
  }
  /// The end of the last record of `kind` on `rank` (-1 when there is none).
  std::int64_t last_end(EventKind kind, int rank) const {
    std::int64_t end = -1;
    for (const auto& e : sink.events)
      if (e.rank == rank && e.kind == kind) end = std::max(end, e.end_ns);
    return end;
  }
};

/// Simulates the timeline world with `overrides` (--set syntax) at --trace op.
inline std::unique_ptr<Trace> simulate_timeline(const std::vector<std::string>& overrides) {
  auto t = std::make_unique<Trace>();
  t->scenario = config::load_scenario(kTimeline, overrides);
  t->result = run::simulate(t->scenario, t->sink, run::TraceLevel::op);
  return t;
}

inline double ns(std::int64_t v) { return static_cast<double>(v); }

/// Backward kernels of `rank` that run while a collective is in flight (with dp 1 and no
/// pipeline the only collectives are the TP group's).
inline int backward_kernels_beside_collectives(const Trace& t, int rank = 0) {
  int n = 0;
  for (const auto& c : t.sink.events) {
    if (c.kind != EventKind::collective || c.end_ns <= c.start_ns) continue;
    for (const auto& e : t.sink.events)
      if (e.rank == rank && e.kind == EventKind::backward && e.start_ns < c.end_ns && e.end_ns > c.start_ns) ++n;
  }
  return n;
}

/// Kernels an op list launches.
inline double kernel_count(const std::vector<workload::Op>& ops) {
  double k = 0;
  for (const auto& op : ops) k += op.kernels;
  return k;
}

/// Time of a compute task of `kernels` kernels on the launch-bound node [ns]: the host issues
/// one every 1 us from the task's start, the GPU idles between them, and the last one's work
/// (1 ns) ends 1 ns after the last launch: 1000·K + 1.
inline double task_ns(double kernels) { return 1000.0 * kernels + 1.0; }

}  // namespace ironlaw::run_test
