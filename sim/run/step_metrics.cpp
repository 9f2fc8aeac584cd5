#include "run/step_metrics.hpp"

#include <algorithm>

namespace ironlaw::run {

namespace {

/// Busy time of a rank from `start` up to `until`.
Time covered_until(const RankTimeline& t, Time until, Time start) {
  IntervalSet busy;
  busy.add_all(t.compute);
  busy.add_all(t.comm);
  busy.add_all(t.data);
  IntervalSet cut;
  cut.add(start, until);
  // |busy ∩ [start, until)| = |busy| + |cut| − |busy ∪ cut| (the union stays inside the step).
  IntervalSet both = busy;
  both.add_all(cut);
  return busy.total() + cut.total() - both.total();
}

}  // namespace

StepMeasurement measure_step(const std::vector<RankTimeline>& ranks, std::int64_t index, Time start, Time end,
                             bool pipelined) {
  StepMeasurement out;
  StepRecord& rec = out.record;
  rec.step = index;
  rec.start_ns = start.count_ns();
  rec.end_ns = end.count_ns();
  out.ranks = static_cast<int>(ranks.size());
  const double n = static_cast<double>(ranks.size());
  // The pipeline phase ends when the last rank finishes its last backward; idle time inside
  // it is the pipeline's bubble (warm-up, drain and any wait on a neighbour stage).
  Time pipeline_end = start;
  for (const auto& t : ranks) pipeline_end = std::max(pipeline_end, t.last_backward_end);
  for (const auto& t : ranks) {
    // compute | exposed communication | data stall | idle, each measured as union lengths.
    const Time compute = t.compute.total();
    IntervalSet busy = t.compute;
    busy.add_all(t.comm);
    const Time working = busy.total();
    busy.add_all(t.data);
    const Time covered = busy.total();
    const Time idle = end - start - covered;
    Time bubble;
    if (pipelined) bubble = std::clamp(pipeline_end - start - covered_until(t, pipeline_end, start), Time::zero(), idle);
    rec.compute_s += compute.seconds() / n;
    rec.exposed_comm_s += (working - compute).seconds() / n;
    rec.data_stall_s += (covered - working).seconds() / n;
    rec.bubble_s += bubble.seconds() / n;
    rec.other_s += (idle - bubble).seconds() / n;
    out.optimizer_s += t.optimizer.seconds() / n;
    out.comm_s += t.comm.total().seconds() / n;
  }
  return out;
}

}  // namespace ironlaw::run
