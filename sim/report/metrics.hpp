#pragma once
/// \file The user-visible numbers, each defined once, here, the way the field defines it.
///
/// - MFU (PaLM, Chowdhery et al. 2022, appendix B; Llama 3 reports MFU the same way):
///   model FLOPs per token 6·N + 12·L·H·Q·T (N = parameters in matmuls, L layers, H heads of
///   dimension Q, T sequence length), × tokens per step, ÷ (dense peak FLOP/s of the training
///   precision × GPUs × step time).
/// - mfu_6nd: the same with 6·N only (the seed 003 / GPT-3 convention), N the parameters a token
///   passes through: all of a dense model's, the activated ones of a mixture of experts (shared
///   and top-k routed experts, attention, embeddings). With all of a MoE model's parameters the
///   count exceeds what any GPU can do (seed 000: 6 x 14.8T x 671B over DeepSeek-V3's H800-hours
///   is 205 %); explain's waterfall shows that naive count and the correction as its first bars.
/// - HFU: model FLOPs plus the FLOPs of activation recomputation, same denominator.
/// - busbw: see comm::bus_factor (nccl-tests doc/PERFORMANCE.md).
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "run/simulation.hpp"
#include "training/whole_run.hpp"

namespace ironlaw::report {

/// FLOPs actually delivered per second per GPU over peak: flops_per_step / (peak × gpus × t).
double utilisation(double flops_per_step, double step_time_s, double peak_flops_per_gpu, int gpus);

/// Model FLOPs (the MFU numerator above) delivered per second per GPU, in TFLOP/s: model FLOPs
/// per step / (step time × GPUs) / 1e12; 0 for a result without steps or GPUs.
double model_tflops_per_gpu(const run::SimulationResult& result);

/// Optimizer steps that consume `tokens` training tokens: ⌈tokens / tokens_per_step⌉.
double steps_for_tokens(double tokens, double tokens_per_step);
/// Wall-clock seconds of `steps` steps of `step_time_s` each (no failures, no restarts).
double wall_seconds(double steps, double step_time_s);
/// GPU-hours of `steps` steps of `step_time_s` on `gpus` GPUs: wall_seconds / 3600 × gpus.
double gpu_hours(double steps, double step_time_s, int gpus);
/// The utilisation that `gpu_hours` of GPUs at `peak_flops_per_gpu` imply for `total_flops`
/// (e.g. a model card's published hours): total_flops / (peak × gpu_hours × 3600).
double implied_utilisation(double total_flops, double peak_flops_per_gpu, double gpu_hours);

struct Metric {
  std::string name;   ///< column name in /summary and in sweep tables
  double value = 0;
  std::string unit;   ///< "s", "1" (fraction), "B", "tokens/s", ...
};

/// The /summary row of a simulated scenario (INTERFACE.md names), in a fixed order. With
/// run.mode full it ends with the whole run's measured metrics (wall_days, gpu_hours,
/// interruptions, ettr, goodput, ...): from `whole` when given, else from a whole run simulated
/// here (training::simulate_whole_run, reusing `result`).
std::vector<Metric> summary_metrics(const config::Scenario& scenario, const run::SimulationResult& result,
                                    const training::WholeRunResult* whole = nullptr);
/// Looks a metric up by name; throws std::out_of_range if absent.
double metric(const std::vector<Metric>& metrics, const std::string& name);

/// The human-readable summary `ironlaw run` prints (with the whole run's, as above).
std::string format_summary(const config::Scenario& scenario, const run::SimulationResult& result,
                           const training::WholeRunResult* whole = nullptr);
/// The per-term memory table printed for an out-of-memory layout.
std::string format_memory_table(const run::SimulationResult& result);
/// The peak each pipeline stage reserves, eight stages a line, a star on those over the
/// allocator's capacity; empty without pipeline parallelism (or without an allocator replay).
/// Part of format_memory_table.
std::string format_stage_memory(const run::SimulationResult& result);

}  // namespace ironlaw::report
