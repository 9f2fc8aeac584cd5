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

  /// Sorted, disjoint intervals as [start, end) in ns.
  using Spans = std::vector<std::pair<std::int64_t, std::int64_t>>;

  /// The union as sorted, disjoint spans (touching ones joined). O(n) when the intervals were
  /// added in order of their starts, else O(n log n).
  Spans normalized() const {
    Spans s = spans_;
    if (!std::is_sorted(s.begin(), s.end())) std::sort(s.begin(), s.end());
    std::size_t out = 0;
    for (const auto& span : s) {
      if (out > 0 && span.first <= s[out - 1].second) {
        s[out - 1].second = std::max(s[out - 1].second, span.second);
      } else {
        s[out++] = span;
      }
    }
    s.resize(out);
    return s;
  }
  /// The union of two normalized span lists, normalized. O(|a| + |b|).
  static Spans unite(const Spans& a, const Spans& b) {
    Spans s;
    s.reserve(a.size() + b.size());
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      const auto& next = j == b.size() || (i < a.size() && a[i] < b[j]) ? a[i++] : b[j++];
      if (!s.empty() && next.first <= s.back().second) {
        s.back().second = std::max(s.back().second, next.second);
      } else {
        s.push_back(next);
      }
    }
    return s;
  }
  /// Total length of normalized spans. O(n).
  static Time length(const Spans& s) {
    std::int64_t sum = 0;
    for (const auto& [a, b] : s) sum += b - a;
    return Time::ns(sum);
  }
  /// Length of normalized spans inside [from, until). O(n).
  static Time length_within(const Spans& s, Time from, Time until) {
    const std::int64_t lo = from.count_ns(), hi = until.count_ns();
    std::int64_t sum = 0;
    for (const auto& [a, b] : s) {
      const std::int64_t x = std::max(a, lo), y = std::min(b, hi);
      if (y > x) sum += y - x;
    }
    return Time::ns(sum);
  }

  /// Length of the union of all intervals. O(n log n).
  Time total() const { return length(normalized()); }

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> spans_;
};

}  // namespace ironlaw::run
