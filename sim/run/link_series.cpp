#include "run/link_series.hpp"

#include "run/cpu_budget.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ironlaw::run {

double LinkSeries::width(std::size_t b) const {
  if (b + 1 < bins()) return bin_s;
  return end_s - (start_s + static_cast<double>(b) * bin_s);
}

LinkSeriesRecorder::LinkSeriesRecorder(engine::Simulator& sim, const engine::FlowNetwork& net, Time first_bin,
                                       int max_bins)
    : sim_(sim), net_(net), width_(first_bin), max_bins_(max_bins) {
  if (first_bin <= Time::zero()) throw std::invalid_argument("link series: the first bin must be longer than 0");
  if (max_bins < 2 || max_bins % 2 != 0) throw std::invalid_argument("link series: max_bins must be even and >= 2");
}

LinkSeriesRecorder::~LinkSeriesRecorder() {
  if (pending_ != engine::kNoEvent) sim_.cancel(pending_);
}

void LinkSeriesRecorder::resume() {
  if (!started_) {
    started_ = true;
    origin_ = sim_.now();
    last_sample_ = origin_;
    last_busy_ns_.assign(net_.link_count(), 0);
    for (engine::LinkId id = 0; id < net_.link_count(); ++id) last_busy_ns_[id] = net_.link_stats(id).busy.count_ns();
    busy_ns_.assign(net_.link_count(), {});
  }
  if (pending_ == engine::kNoEvent) schedule_next();
}

void LinkSeriesRecorder::pause() {
  if (!started_) return;
  if (pending_ != engine::kNoEvent) {
    sim_.cancel(pending_);
    pending_ = engine::kNoEvent;
  }
  sample();
}

void LinkSeriesRecorder::schedule_next() {
  const std::int64_t k = (sim_.now() - origin_).count_ns() / width_.count_ns();
  const Time next = origin_ + width_ * (k + 1);
  pending_ = sim_.schedule_at(next, [this] {
    pending_ = engine::kNoEvent;
    ++events_;
    sample();
    // Nothing else left: let the simulation stop (when the last other event fell on this
    // instant after this sample was scheduled, the clock has come here one bin past it;
    // run::simulate stops each step at its last task and pauses, so no step runs on).
    if (sim_.pending() > 0) schedule_next();
  });
}

void LinkSeriesRecorder::sample() {
  const Time now = sim_.now();
  if (now <= last_sample_) return;
  check_cpu_budget(now);  // each sample reads every link: the simulation's CPU bound is checked here too
  // The bin holding (last_sample_, now]: samples fall on boundaries of the current bins (or
  // end a step inside one), and every coarser grid's boundaries are boundaries of the finer.
  std::int64_t b = ((now - origin_).count_ns() - 1) / width_.count_ns();
  while (b >= max_bins_) {
    for (auto& bins : busy_ns_) {
      if (bins.empty()) continue;
      for (int i = 0; i < max_bins_ / 2; ++i) bins[static_cast<std::size_t>(i)] = bins[2 * static_cast<std::size_t>(i)] + bins[2 * static_cast<std::size_t>(i) + 1];
      std::fill(bins.begin() + max_bins_ / 2, bins.end(), 0);
    }
    bins_used_ = (bins_used_ + 1) / 2;
    width_ = width_ * 2;
    b = ((now - origin_).count_ns() - 1) / width_.count_ns();
  }
  if (last_busy_ns_.size() < net_.link_count()) {
    last_busy_ns_.resize(net_.link_count(), 0);
    busy_ns_.resize(net_.link_count());
  }
  for (engine::LinkId id = 0; id < net_.link_count(); ++id) {
    const std::int64_t busy = net_.link_stats(id).busy.count_ns();
    const std::int64_t d = busy - last_busy_ns_[id];
    if (d == 0) continue;
    last_busy_ns_[id] = busy;
    auto& bins = busy_ns_[id];
    if (bins.empty()) bins.assign(static_cast<std::size_t>(max_bins_), 0);
    bins[static_cast<std::size_t>(b)] += d;
  }
  bins_used_ = std::max(bins_used_, static_cast<int>(b) + 1);
  last_sample_ = now;
}

LinkSeries LinkSeriesRecorder::series(std::size_t top) const {
  LinkSeries out;
  if (!started_ || bins_used_ == 0) return out;
  out.start_s = origin_.seconds();
  out.bin_s = width_.seconds();
  out.end_s = last_sample_.seconds();
  std::vector<std::pair<std::int64_t, engine::LinkId>> totals;
  for (engine::LinkId id = 0; id < busy_ns_.size(); ++id) {
    const auto& bins = busy_ns_[id];
    if (bins.empty()) continue;
    const std::int64_t total = std::accumulate(bins.begin(), bins.end(), std::int64_t{0});
    if (total > 0) totals.emplace_back(total, id);
  }
  // Busiest first; equal totals in link order.
  std::stable_sort(totals.begin(), totals.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (totals.size() > top) totals.resize(top);
  for (const auto& [total, id] : totals) {
    out.names.push_back(net_.link_name(id));
    out.bandwidth.push_back(net_.link_bandwidth(id));
    std::vector<double> busy(static_cast<std::size_t>(bins_used_));
    for (int b = 0; b < bins_used_; ++b) busy[static_cast<std::size_t>(b)] = static_cast<double>(busy_ns_[id][static_cast<std::size_t>(b)]) * 1e-9;
    out.busy.push_back(std::move(busy));
  }
  return out;
}

}  // namespace ironlaw::run
