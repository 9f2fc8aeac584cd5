#pragma once
/// \file The order in which one pipeline stage runs its passes. Bubbles are not computed from
/// a formula anywhere: they emerge when these orders meet the dependencies between stages on
/// the simulated timeline.
///
/// A schedule is a list of slots per stage. A slot is one pass of one microbatch through one of
/// the stage's model chunks: a forward (F), a whole backward (autograd's fused backward: every
/// op's input gradient and weight gradient, layer by layer), or — for schedules that split the
/// backward, as the zero-bubble family does (Qi et al. 2024, "Zero Bubble Pipeline
/// Parallelism") — an input-gradient pass (B: what the previous stage waits for) and a
/// weight-gradient pass (W: what only the optimizer waits for). A new schedule is one more
/// implementation of PipelineSchedule and one more name in make_schedule (and in the config
/// layer's list of accepted `parallel.pp_schedule` values).
#include <memory>
#include <string>
#include <vector>

namespace ironlaw::run {

enum class Pass {
  forward,      ///< F
  backward,     ///< B and W fused, op by op (what autograd runs)
  input_grad,   ///< B alone: the input gradients (activation gradients) of every op
  weight_grad,  ///< W alone: the weight gradients of the GEMMs
};

/// Whether the pass runs the model backwards (backward, input_grad or weight_grad).
inline bool is_backward(Pass p) { return p != Pass::forward; }

/// One pass of one microbatch through one of the stage's model chunks.
struct PipelineSlot {
  Pass pass = Pass::forward;
  int microbatch = 0;
  int local_chunk = 0;  ///< 0 … virtual_stages−1; model chunk = local_chunk · stages + stage
  bool operator==(const PipelineSlot&) const = default;
};

/// A pipeline schedule: the slots of every stage, and the activations a stage holds at once.
class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  /// The slots of `stage` (0-based) of `stages`, for `microbatches` microbatches, in execution
  /// order. Every (microbatch, chunk) appears once as forward and either once as backward or
  /// once as input_grad followed later by once as weight_grad. Throws std::invalid_argument for
  /// inconsistent sizes. O(slots).
  virtual std::vector<PipelineSlot> order(int stage, int stages, int microbatches, int virtual_stages) const = 0;
  /// Microbatches whose activations the stage holds at once (its peak), for memory, in whole
  /// stage-microbatches (a chunk holds 1/virtual_stages of the stage's layers).
  virtual double in_flight(int stage, int stages, int microbatches, int virtual_stages) const = 0;
  /// Whether the schedule splits the backward into input_grad and weight_grad slots.
  virtual bool splits_backward() const { return false; }
};

/// The schedule called `name`:
/// - "gpipe": every forward, then every backward, last in first out (Huang et al. 2019);
/// - "1f1b": stages − stage − 1 warm-up forwards, then one forward / one backward, then the
///   remaining backwards (PipeDream-Flush; Narayanan et al. 2021);
/// - "interleaved": Megatron-LM's interleaved 1F1B over `virtual_stages` chunks per stage:
///   forwards walk the chunks in groups of `microbatch_group` microbatches (0: `stages`, the
///   only grouping of Narayanan et al. 2021 §2.2; Megatron-core's microbatch_group_size_per_vp_
///   stage, from stages to the microbatches, the last group whole or at least stages: its
///   get_schedule_table); warm-up (stages − stage − 1)·2 + (virtual_stages − 1)·microbatch_group;
/// - "zb-h1": ZB-H1 (Qi et al. 2024, §3.1): 1F1B's warm-up and order with the input-gradient
///   pass B in place of the backward; stage s keeps up to s weight-gradient passes W pending
///   (a W runs right after a B once more than s are pending) and runs the rest after its last
///   B, where 1F1B's drain leaves the stage idle. Same activations in flight as 1F1B; with
///   equal F, B, W per stage its bubble is (stages − 1)(F + B − W) against 1F1B's
///   (stages − 1)(F + B + W).
/// Throws std::invalid_argument for an unknown name.
std::unique_ptr<PipelineSchedule> make_schedule(const std::string& name, int microbatch_group = 0);

/// make_schedule(schedule, microbatch_group)->order(...), also checking that virtual stages > 1
/// come with the interleaved schedule and a microbatch group it can run.
std::vector<PipelineSlot> pipeline_order(const std::string& schedule, int stage, int stages, int microbatches,
                                         int virtual_stages, int microbatch_group = 0);

/// make_schedule(schedule, microbatch_group)->in_flight(...): gpipe m; 1f1b and zb-h1
/// min(stages − stage, m); interleaved: the warm-up count + 1, in chunk-microbatches, divided by
/// virtual_stages.
double in_flight_microbatches(const std::string& schedule, int stage, int stages, int microbatches,
                              int virtual_stages, int microbatch_group = 0);

}  // namespace ironlaw::run
