#pragma once
/// \file What one step's timeline says, measured from the intervals each simulated rank spent
/// computing, communicating and waiting for data. Nothing here is modelled: it is arithmetic
/// on the simulated timeline (DESIGN.md principle 1).
#include <cstdint>
#include <vector>

#include "core/records.hpp"
#include "core/time.hpp"
#include "run/intervals.hpp"

namespace ironlaw::run {

/// The intervals of one rank in one step.
struct RankTimeline {
  IntervalSet compute, comm, data;
  Time last_backward_end;  ///< end of the rank's last backward (recompute, B or W) kernel
  Time optimizer;          ///< time in optimizer kernels
};

/// One step measured: the record (means over the ranks) and what the record does not hold.
struct StepMeasurement {
  StepRecord record;
  double comm_s = 0;       ///< mean over ranks of the time any collective of the rank ran
  double optimizer_s = 0;  ///< mean over ranks of the optimizer's time
  int ranks = 0;
};

/// Splits each rank's step [start, end) into compute (kernels running), exposed communication
/// (collectives or sends running while no kernel runs), data stall (waiting for a batch while
/// neither runs), pipeline bubble (idle before the last rank's last backward, only when
/// `pipelined`) and other (the rest of the idle time), each the length of a union of intervals;
/// the five add up to end − start on every rank, and the record holds their means.
/// O(n log n) in the intervals.
StepMeasurement measure_step(const std::vector<RankTimeline>& ranks, std::int64_t index, Time start, Time end,
                             bool pipelined);

}  // namespace ironlaw::run
