#pragma once
/// \file A set of time intervals whose union length is measured: how much of a step a rank
/// spent computing, communicating, or either.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/time.hpp"

namespace ironlaw::run {

class IntervalSet {
 public:
  /// Adds [start, end). Empty or reversed intervals are ignored. An interval that starts inside
  /// or at the end of the last one added extends it instead (the union is the same; a stream's
  /// back-to-back kernels then take one entry, not millions). O(1) amortised.
  void add(Time start, Time end) {
    if (!(end > start)) return;
    const std::int64_t a = start.count_ns(), b = end.count_ns();
    if (!spans_.empty() && a >= spans_.back().first && a <= spans_.back().second) {
      spans_.back().second = std::max(spans_.back().second, b);
      return;
    }
    spans_.emplace_back(a, b);
  }
  void add_all(const IntervalSet& other) { spans_.insert(spans_.end(), other.spans_.begin(), other.spans_.end()); }

  /// Length of the union of all intervals. O(n log n).
  Time total() const {
    auto s = spans_;
    std::sort(s.begin(), s.end());
    std::int64_t sum = 0, cur_start = 0, cur_end = 0;
    bool open = false;
    for (const auto& [a, b] : s) {
      if (!open || a > cur_end) {
        if (open) sum += cur_end - cur_start;
        cur_start = a;
        cur_end = b;
        open = true;
      } else {
        cur_end = std::max(cur_end, b);
      }
    }
    if (open) sum += cur_end - cur_start;
    return Time::ns(sum);
  }

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> spans_;
};

}  // namespace ironlaw::run
