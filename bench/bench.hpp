#pragma once
/// \file A tiny benchmark registry for `ironlaw_bench` (built only by `make bench`).
///
/// Adding a benchmark, in any bench/*.cpp:
///
///     namespace {
///     void bench_default_scenario() {
///       const double s = ironlaw::bench::wall_seconds([] { /* run the scenario */ });
///       ironlaw::bench::report("run.default_scenario.wall", s, "s");
///     }
///     const ironlaw::bench::Register reg("run.default_scenario", bench_default_scenario);
///     }  // namespace
///
/// `ironlaw_bench` runs every registered benchmark in name order, or only those whose name
/// contains argv[1]; `ironlaw_bench --list` prints the names. Results are printed as
/// `name: value unit` lines, one per measured quantity.
#include <sys/resource.h>
#include <sys/time.h>

#include <chrono>
#include <vector>

namespace ironlaw::bench {

struct Benchmark {
  const char* name;
  void (*fn)();
};

/// All registered benchmarks (registration order is unspecified across files; main sorts).
std::vector<Benchmark>& registry();

/// Registers a benchmark from a namespace-scope static object.
struct Register {
  Register(const char* name, void (*fn)()) { registry().push_back(Benchmark{name, fn}); }
};

/// Prints `name: value unit`.
void report(const char* name, double value, const char* unit);

/// Wall-clock seconds taken by `fn()`.
template <class F>
double wall_seconds(F&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

/// CPU seconds (user + system) of this process taken by `fn()` — the measure of the speed
/// targets, unaffected by other processes sharing the machine.
template <class F>
double cpu_seconds(F&& fn) {
  auto now = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return s(usage.ru_utime) + s(usage.ru_stime);
  };
  const double t0 = now();
  fn();
  return now() - t0;
}

}  // namespace ironlaw::bench
