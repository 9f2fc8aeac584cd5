#pragma once
/// \file Simulated time: a strong type over int64 nanoseconds (DESIGN.md principle 5).
///
/// Built only through named constructors. Conversions from real-valued seconds round *up*
/// to the next nanosecond so a non-zero duration never becomes zero; doubles appear only at
/// the edges (input parsing, output formatting), never accumulated across events.
#include <compare>
#include <cstdint>
#include <limits>

namespace ironlaw {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time ns(std::int64_t n) { return Time(n); }
  static constexpr Time us(std::int64_t n) { return Time(n * 1'000); }
  static constexpr Time ms(std::int64_t n) { return Time(n * 1'000'000); }
  static constexpr Time s(std::int64_t n) { return Time(n * 1'000'000'000); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  /// Seconds → Time, rounded up to whole nanoseconds (a positive duration is never 0 ns).
  /// Values beyond the int64 range saturate at Time::max().
  static Time from_seconds(double seconds);

  constexpr std::int64_t count_ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  constexpr Time operator-(Time o) const { return Time(ns_ - o.ns_); }
  constexpr Time& operator+=(Time o) { ns_ += o.ns_; return *this; }
  constexpr Time& operator-=(Time o) { ns_ -= o.ns_; return *this; }
  constexpr Time operator*(std::int64_t k) const { return Time(ns_ * k); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t n) : ns_(n) {}
  std::int64_t ns_ = 0;
};

/// Time to move `bytes` at `bytes_per_s`, rounded up; zero bytes take zero time.
Time transfer_time(double bytes, double bytes_per_s);

}  // namespace ironlaw
