#include "run/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace ironlaw::run {

namespace {

/// Megatron's mapping of the k-th forward (or backward) of a stage to (microbatch, chunk).
PipelineSlot interleaved_slot(Pass pass, int k, int stages, int virtual_stages) {
  const int group = k / stages;
  int chunk = group % virtual_stages;
  if (pass == Pass::backward) chunk = virtual_stages - 1 - chunk;
  const int microbatch = (k / (stages * virtual_stages)) * stages + k % stages;
  return {pass, microbatch, chunk};
}

int warmup_count(const std::string& schedule, int stage, int stages, int microbatches, int virtual_stages) {
  const int total = microbatches * virtual_stages;
  if (schedule == "gpipe") return total;
  if (schedule == "1f1b") return std::min(stages - stage - 1, total);
  return std::min((stages - stage - 1) * 2 + (virtual_stages - 1) * stages, total);
}

}  // namespace

std::vector<PipelineSlot> pipeline_order(const std::string& schedule, int stage, int stages, int microbatches,
                                         int virtual_stages) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1 || virtual_stages < 1)
    throw std::invalid_argument("pipeline_order: inconsistent sizes");
  if (schedule != "gpipe" && schedule != "1f1b" && schedule != "interleaved")
    throw std::invalid_argument("pipeline_order: unknown schedule \"" + schedule + "\"");
  if (schedule != "interleaved" && virtual_stages != 1)
    throw std::invalid_argument("pipeline_order: virtual stages need the interleaved schedule");
  if (schedule == "interleaved" && virtual_stages > 1 && microbatches % stages != 0)
    throw std::invalid_argument("pipeline_order: interleaved needs microbatches to be a multiple of stages");

  const int total = microbatches * virtual_stages;
  auto fwd = [&](int k) {
    return schedule == "interleaved" ? interleaved_slot(Pass::forward, k, stages, virtual_stages)
                                     : PipelineSlot{Pass::forward, k, 0};
  };
  auto bwd = [&](int k) {
    if (schedule == "interleaved") return interleaved_slot(Pass::backward, k, stages, virtual_stages);
    // GPipe runs backwards last-in first-out; 1F1B in microbatch order.
    return PipelineSlot{Pass::backward, schedule == "gpipe" ? microbatches - 1 - k : k, 0};
  };
  std::vector<PipelineSlot> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  const int warmup = warmup_count(schedule, stage, stages, microbatches, virtual_stages);
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

double in_flight_microbatches(const std::string& schedule, int stage, int stages, int microbatches,
                              int virtual_stages) {
  const int warmup = warmup_count(schedule, stage, stages, microbatches, virtual_stages);
  const int total = microbatches * virtual_stages;
  const int peak = std::min(warmup + 1, total);
  return static_cast<double>(peak) / virtual_stages;
}

}  // namespace ironlaw::run
