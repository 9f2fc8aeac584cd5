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

}  // namespace ironlaw::output
