#pragma once
/// \file What a scenario will cost before anything is built: memory (tasks, flows, events,
/// fabric, loader queues) and a lower bound on the simulated time it reaches. The command line
/// refuses a scenario above its limits with exit status 2, naming the input that drives the
/// estimate, instead of allocating until std::bad_alloc or running the clock past 292 years.
///
/// The figures are deliberately conservative (upper bounds on memory within a small factor:
/// Llama 3 405B on 16,384 GPUs is estimated at about 0.3 GB and measured at 110 MiB, README
/// "Scale"); they are a guard, not a report.
#include <cstdint>
#include <string>

#include "config/spec.hpp"
#include "run/layout.hpp"

namespace ironlaw::run {

struct ResourceEstimate {
  double tasks = 0;         ///< task-graph nodes of one step, all simulated ranks
  double live_flows = 0;    ///< flows in flight at once, at most
  double fabric_links = 0;  ///< links and switches of the modelled cluster
  double loader_slots = 0;  ///< loader workers and prefetch slots over every GPU
  double bytes = 0;         ///< memory the simulation is expected to need at its peak [B]
  std::string driver;       ///< the keys behind the largest term, e.g. "cluster.nodes"

  /// Lower bound on the simulated time of the whole run [s]: each step's dense matmul work at
  /// the device's best GEMM rate, times run.steps.
  double min_simulated_s = 0;
  std::string time_driver;  ///< the keys behind min_simulated_s
};

/// Estimates `scenario` laid out as `layout`. O(1): closed-form counts, nothing is built.
ResourceEstimate estimate_resources(const config::Scenario& scenario, const Layout& layout);

/// Default memory limit: half of this machine's physical memory [B] (sysconf), or 8 GiB where
/// the system does not say.
double default_memory_limit();

}  // namespace ironlaw::run
