#include "run/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace ironlaw::run {

namespace {

void check_sizes(int stage, int stages, int microbatches, int virtual_stages) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1 || virtual_stages < 1)
    throw std::invalid_argument("pipeline_order: inconsistent sizes");
}

/// Warm-up forwards, then one forward / one backward, then the remaining backwards; `fwd(k)`
/// and `bwd(k)` give the k-th forward and backward slot.
template <class Fwd, class Bwd>
std::vector<PipelineSlot> one_forward_one_backward(int total, int warmup, Fwd fwd, Bwd bwd) {
  std::vector<PipelineSlot> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

void single_chunk_only(int virtual_stages) {
  if (virtual_stages != 1) throw std::invalid_argument("pipeline_order: virtual stages need the interleaved schedule");
}

class GPipe final : public PipelineSchedule {
 public:
  std::vector<PipelineSlot> order(int stage, int stages, int m, int v) const override {
    check_sizes(stage, stages, m, v);
    single_chunk_only(v);
    // Backwards last in first out.
    return one_forward_one_backward(
        m, m, [](int k) { return PipelineSlot{Pass::forward, k, 0}; },
        [m](int k) { return PipelineSlot{Pass::backward, m - 1 - k, 0}; });
  }
  double in_flight(int, int, int m, int) const override { return m; }
};

class OneForwardOneBackward final : public PipelineSchedule {
 public:
  std::vector<PipelineSlot> order(int stage, int stages, int m, int v) const override {
    check_sizes(stage, stages, m, v);
    single_chunk_only(v);
    return one_forward_one_backward(
        m, std::min(stages - stage - 1, m), [](int k) { return PipelineSlot{Pass::forward, k, 0}; },
        [](int k) { return PipelineSlot{Pass::backward, k, 0}; });
  }
  double in_flight(int stage, int stages, int m, int) const override { return std::min(stages - stage, m); }
};

class Interleaved final : public PipelineSchedule {
 public:
  explicit Interleaved(int group) : group_(group) {}
  std::vector<PipelineSlot> order(int stage, int stages, int m, int v) const override {
    check_sizes(stage, stages, m, v);
    const int n = group(stages);
    if (v > 1 && (n < stages || n > m || (m % n != 0 && m % n < stages)))
      throw std::invalid_argument(
          "pipeline_order: interleaved needs a microbatch group from stages to microbatches whose last group is "
          "whole or at least stages");
    // Megatron-core's schedule table (get_schedule_table): groups of n consecutive microbatches
    // (the last one takes what is left), each run through chunk 0, then chunk 1, ...; the k-th
    // forward runs entry k, the k-th backward entry k with the chunks in reverse.
    std::vector<PipelineSlot> table;
    table.reserve(static_cast<std::size_t>(m) * static_cast<std::size_t>(v));
    for (int first = 0; first < m; first += n) {
      const int end = first + n >= m ? m : first + n;
      for (int chunk = 0; chunk < v; ++chunk)
        for (int mb = first; mb < end; ++mb) table.push_back({Pass::forward, mb, chunk});
    }
    return one_forward_one_backward(
        m * v, warmup(stage, stages, m, v, n), [&](int k) { return table[static_cast<std::size_t>(k)]; },
        [&](int k) {
          const PipelineSlot& t = table[static_cast<std::size_t>(k)];
          return PipelineSlot{Pass::backward, t.microbatch, v - 1 - t.local_chunk};
        });
  }
  double in_flight(int stage, int stages, int m, int v) const override {
    return static_cast<double>(std::min(warmup(stage, stages, m, v, group(stages)) + 1, m * v)) / v;
  }

 private:
  int group(int stages) const { return group_ > 0 ? group_ : stages; }
  /// Megatron-core's get_pp_rank_microbatches: (stages − stage − 1)·2 + (v − 1)·n.
  static int warmup(int stage, int stages, int m, int v, int n) {
    return std::min((stages - stage - 1) * 2 + (v - 1) * n, m * v);
  }
  int group_;  ///< microbatches per group; 0: the stages
};

class ZeroBubbleH1 final : public PipelineSchedule {
 public:
  std::vector<PipelineSlot> order(int stage, int stages, int m, int v) const override {
    check_sizes(stage, stages, m, v);
    single_chunk_only(v);
    const int warmup = std::min(stages - stage - 1, m);
    std::vector<PipelineSlot> out;
    out.reserve(static_cast<std::size_t>(3 * m));
    int f = 0, b = 0, w = 0;
    for (; f < warmup; ++f) out.push_back({Pass::forward, f, 0});
    while (b < m) {
      if (f < m) out.push_back({Pass::forward, f++, 0});
      out.push_back({Pass::input_grad, b++, 0});
      if (b - w > stage) out.push_back({Pass::weight_grad, w++, 0});
    }
    while (w < m) out.push_back({Pass::weight_grad, w++, 0});
    return out;
  }
  double in_flight(int stage, int stages, int m, int) const override { return std::min(stages - stage, m); }
  bool splits_backward() const override { return true; }
};

}  // namespace

std::unique_ptr<PipelineSchedule> make_schedule(const std::string& name, int microbatch_group) {
  if (name == "gpipe") return std::make_unique<GPipe>();
  if (name == "1f1b") return std::make_unique<OneForwardOneBackward>();
  if (name == "interleaved") return std::make_unique<Interleaved>(microbatch_group);
  if (name == "zb-h1") return std::make_unique<ZeroBubbleH1>();
  throw std::invalid_argument("pipeline_order: unknown schedule \"" + name + "\"");
}

std::vector<PipelineSlot> pipeline_order(const std::string& schedule, int stage, int stages, int microbatches,
                                         int virtual_stages, int microbatch_group) {
  return make_schedule(schedule, microbatch_group)->order(stage, stages, microbatches, virtual_stages);
}

double in_flight_microbatches(const std::string& schedule, int stage, int stages, int microbatches,
                              int virtual_stages, int microbatch_group) {
  return make_schedule(schedule, microbatch_group)->in_flight(stage, stages, microbatches, virtual_stages);
}

}  // namespace ironlaw::run
