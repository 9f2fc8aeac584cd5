#include "output/tables.hpp"

#include <array>
#include <utility>

namespace ironlaw::output {

std::size_t TableColumn::size() const {
  return std::visit([](const auto& v) { return v.size(); }, values);
}

std::string default_metric_unit(std::string_view metric_name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> known{{
      {"step_time_s", "s"},
      {"tokens_per_s_per_gpu", "tokens/s"},
      {"tokens_per_s", "tokens/s"},
      {"model_tflops_per_gpu", "TFLOP/s"},
      {"hardware_tflops_per_gpu", "TFLOP/s"},
      {"mfu", "1"},
      {"mfu_6nd", "1"},
      {"hfu", "1"},
      {"goodput", "1"},
      {"interruptions", "1"},
      {"wall_days", "d"},
      {"gpu_hours", "h"},
      {"peak_memory_bytes", "B"},
      {"exposed_comm_s", "s"},
      {"bubble_s", "s"},
      {"data_stall_s", "s"},
  }};
  for (const auto& [name, unit] : known) {
    if (name == metric_name) return std::string(unit);
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> suffixes{{
      {"_ns", "ns"},
      {"_s", "s"},
      {"_bytes", "B"},
      {"_days", "d"},
      {"_hours", "h"},
      {"_flops", "FLOP"},
      {"_fraction", "1"},
  }};
  for (const auto& [suffix, unit] : suffixes) {
    if (metric_name.size() > suffix.size() && metric_name.ends_with(suffix)) {
      return std::string(unit);
    }
  }
  return "";
}

std::string metric_description(std::string_view metric_name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 47> known{{
      {"step_time_s", "simulated time of one training step (mean over the simulated steps)"},
      {"tokens_per_s_per_gpu", "training throughput per GPU"},
      {"model_tflops_per_gpu", "model FLOPs (PaLM convention) per second per GPU"},
      {"mfu", "model FLOPs utilisation (PaLM: 6N + 12LHQT per token), a fraction 0-1"},
      {"mfu_6nd", "MFU counting 6N FLOPs per token only, a fraction 0-1"},
      {"hfu", "hardware FLOPs utilisation (adds recomputation), a fraction 0-1"},
      {"compute_s", "busy compute time per step (mean over the simulated ranks)"},
      {"exposed_comm_s", "communication per step not hidden behind compute"},
      {"comm_s", "all communication time per step, hidden or not"},
      {"bubble_s", "pipeline idle time per step"},
      {"data_stall_s", "time per step waiting for the input pipeline"},
      {"other_s", "idle time per step that is not a pipeline bubble"},
      {"peak_memory_bytes", "peak memory of the most loaded GPU"},
      {"peak_memory_reserved_bytes", "peak memory PyTorch's caching allocator reserves on that GPU (the step's allocations replayed)"},
      {"memory_weights_bytes", "weights per GPU on the most loaded GPU"},
      {"memory_gradients_bytes", "gradients per GPU on the most loaded GPU"},
      {"memory_optimizer_bytes", "optimizer state per GPU on the most loaded GPU"},
      {"memory_activations_bytes", "activations in flight per GPU on the most loaded GPU"},
      {"gpus", "GPUs in the job"},
      {"tokens_per_step", "tokens per optimizer step"},
      {"model_flops_per_step", "model FLOPs of one step over all GPUs (PaLM convention)"},
      {"baseline_6nd_step_time_s", "step time a 6ND calculator claims at 100 % of peak"},
      {"baseline_6nd_attention_step_time_s", "step time of 6ND plus the attention term at 100 % of peak"},
      {"steps", "optimizer steps in the final model (the batch ramp included)"},
      {"wall_days", "wall-clock duration of the whole training run (whole-run layer)"},
      {"gpu_hours", "allocated GPU-hours: wall time x (job + hot-spare) GPUs (whole-run layer)"},
      {"productive_gpu_hours", "job GPUs x time running steps whose progress was kept"},
      {"interruptions", "failures that stopped the job"},
      {"lost_work_s", "step time whose progress a failure discarded"},
      {"checkpoint_pause_s", "training paused for checkpoint writes or snapshots"},
      {"down_s", "from each failure to training again"},
      {"evaluation_s", "evaluation pauses (training.evaluation), not productive"},
      {"elastic_shrinks", "restarts on fewer nodes because no spare was ready (reliability.elastic)"},
      {"shrunk_idle_gpu_hours", "job GPU-hours left idle by an elastic shrink during kept steps"},
      {"ettr", "effective training time ratio: productive time / wall time"},
      {"goodput", "kept steps at their undisturbed step times / wall time"},
      {"mfu_productive", "model FLOPs of the kept steps / (peak x GPUs x productive time)"},
      {"mfu_allocated", "model FLOPs of the kept steps / (peak x allocated GPU-seconds)"},
      {"checkpoint_interval_s", "training time between checkpoints; 0 = none"},
      {"young_daly_interval_s", "sqrt(2 x one checkpoint's cost x job MTBF); 0 without failures"},
      {"ideal_wall_days", "training.tokens at the simulated tokens/s, no failures or checkpoints, in days"},
      {"ideal_gpu_hours", "GPU-hours of ideal_wall_days on the job's GPUs"},
      {"tokens_per_s", "training throughput of the whole job"},
      {"hardware_tflops_per_gpu", "hardware FLOPs (with recomputation) per second per GPU"},
      {"status", "ok, or why the point was not simulated (its metrics are then NaN)"},
      {"events_executed", "engine events executed"},
      {"flows_started", "network flows started"},
  }};
  for (const auto& [name, text] : known) {
    if (name == metric_name) return std::string(text);
  }
  constexpr std::string_view kCause = "interruptions_";
  if (metric_name.substr(0, kCause.size()) == kCause && metric_name.size() > kCause.size()) {
    return "failures that stopped the job caused by " + std::string(metric_name.substr(kCause.size()));
  }
  return "";
}

}  // namespace ironlaw::output
