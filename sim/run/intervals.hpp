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
  /// Adds [start, end). Empty or reversed intervals are ignored. O(1) amortised.
  void add(Time start, Time end) {
    if (end > start) spans_.emplace_back(start.count_ns(), end.count_ns());
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
