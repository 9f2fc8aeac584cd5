#pragma once
/// \file Pipeline parallelism: every TP group of the step runs the passes of its stage's model
/// chunks in the order the schedule gives (pipeline_schedule), and consecutive chunks are
/// wired by point-to-point sends — activations forward after a forward pass, gradients back
/// after a backward (or input-gradient) pass. With pp = 1 and one chunk this is the plain
/// sequence of forwards and backwards of gradient accumulation. Each slot is laid item by item
/// (a unit's pass part by part, through PassRunner::Cursor); under parallel.moe_a2a_overlap a
/// backward slot and the forward slot right after it are laid together, one part of each in turn,
/// the backward's first, so that one pass's all-to-alls run beside the other's computation
/// (Megatron-core's combined 1F1B).
#include "run/model_parallel.hpp"
#include "run/pipeline_schedule.hpp"
#include "run/step_builder.hpp"

namespace ironlaw::run::detail {

/// Adds the compute of every simulated rank in schedule order (through `runner`, which adds
/// the TP/EP/CP communication of each pass), the input-batch waits of the first chunk, and the
/// pipeline sends; fills b.units() for the data-parallel part. O(tasks).
void build_pipeline(StepBuilder& b, PassRunner& runner, const PipelineSchedule& schedule);

}  // namespace ironlaw::run::detail
