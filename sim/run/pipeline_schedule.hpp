#pragma once
/// \file The order in which one pipeline stage runs its forward and backward passes. Bubbles
/// are not computed from a formula anywhere: they emerge when these orders meet the
/// dependencies between stages on the simulated timeline.
#include <string>
#include <vector>

namespace ironlaw::run {

enum class Pass { forward, backward };

/// One pass of one microbatch through one of the stage's model chunks.
struct PipelineSlot {
  Pass pass = Pass::forward;
  int microbatch = 0;
  int local_chunk = 0;  ///< 0 … virtual_stages−1; model chunk = local_chunk · stages + stage
  bool operator==(const PipelineSlot&) const = default;
};

/// The slots of `stage` (0-based) of `stages`, for `microbatches` microbatches, in execution
/// order. Schedules:
/// - "gpipe": every forward, then every backward (Huang et al. 2019);
/// - "1f1b": stages − stage − 1 warm-up forwards, then one forward / one backward, then the
///   remaining backwards (PipeDream-Flush; Narayanan et al. 2021);
/// - "interleaved": Megatron-LM's interleaved 1F1B over `virtual_stages` chunks per stage:
///   forwards walk the chunks in groups of `stages` microbatches; warm-up
///   (stages − stage − 1)·2 + (virtual_stages − 1)·stages (Narayanan et al. 2021, §2.2).
/// Throws std::invalid_argument for an unknown schedule or inconsistent sizes. O(slots).
std::vector<PipelineSlot> pipeline_order(const std::string& schedule, int stage, int stages, int microbatches,
                                         int virtual_stages);

/// Microbatches whose activations a stage holds at once under the schedule (its peak), for
/// memory: gpipe m; 1f1b min(stages − stage, m); interleaved: the warm-up count + 1, in
/// chunk-microbatches, divided by virtual_stages (a chunk holds 1/v of the stage's layers).
double in_flight_microbatches(const std::string& schedule, int stage, int stages, int microbatches,
                              int virtual_stages);

}  // namespace ironlaw::run
