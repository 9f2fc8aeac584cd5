#include "run/step_metrics.hpp"

#include <algorithm>

namespace ironlaw::run {

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
    // compute | exposed communication | data stall | idle, each measured as union lengths
    // (each rank's kinds normalized once, then united in linear time).
    const IntervalSet::Spans compute_spans = t.compute.normalized();
    const IntervalSet::Spans comm_spans = t.comm.normalized();
    const IntervalSet::Spans working_spans = IntervalSet::unite(compute_spans, comm_spans);
    const IntervalSet::Spans busy_spans = IntervalSet::unite(working_spans, t.data.normalized());
    const Time compute = IntervalSet::length(compute_spans);
    const Time working = IntervalSet::length(working_spans);
    const Time covered = IntervalSet::length(busy_spans);
    const Time idle = end - start - covered;
    Time bubble;
    if (pipelined) {
      // Busy time of the rank from the step's start up to the pipeline's end.
      const Time busy_until = IntervalSet::length_within(busy_spans, start, pipeline_end);
      bubble = std::clamp(pipeline_end - start - busy_until, Time::zero(), idle);
    }
    rec.compute_s += compute.seconds() / n;
    rec.exposed_comm_s += (working - compute).seconds() / n;
    rec.data_stall_s += (covered - working).seconds() / n;
    rec.bubble_s += bubble.seconds() / n;
    rec.other_s += (idle - bubble).seconds() / n;
    out.optimizer_s += t.optimizer.seconds() / n;
    out.comm_s += IntervalSet::length(comm_spans).seconds() / n;
  }
  return out;
}

}  // namespace ironlaw::run
