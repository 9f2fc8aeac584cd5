#pragma once
/// \file Simulated time: a strong type over int64 nanoseconds (DESIGN.md principle 5).
///
/// Built only through named constructors. Conversions from real-valued seconds round *up*
/// to the next nanosecond so a non-zero duration never becomes zero; doubles appear only at
/// the edges (input parsing, output formatting), never accumulated across events.
///
/// Arithmetic is checked: a sum, difference or product that leaves the int64 range (about
/// ±292 years) throws TimeOverflow instead of wrapping. Time::max() stands for "never" or
/// "does not apply"; adding a positive duration to it throws.
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace ironlaw {

/// Thrown when simulated time would leave the representable range; the command line turns it
/// into exit status 2 (an input drove the clock past its limit).
class TimeOverflow : public std::overflow_error {
 public:
  explicit TimeOverflow(const std::string& what) : std::overflow_error(what) {}
};

/// A TimeOverflow whose message already names the keys that drive it (thrown where a layer
/// knows them: a step simulation, a whole run); outer layers pass it on unchanged.
class KeyedTimeOverflow : public TimeOverflow {
 public:
  using TimeOverflow::TimeOverflow;
};

class Time {
 public:
  /// Largest representable time, in seconds (int64 nanoseconds: about 292.3 years).
  static constexpr double kMaxSeconds = 9.223372036854775807e9;
  /// The representable range as users read it, for messages.
  static constexpr const char* kRangeText = "0 to 9.22e9 s (about 292 years of simulated time)";

  constexpr Time() = default;

  static constexpr Time ns(std::int64_t n) { return Time(n); }
  static constexpr Time us(std::int64_t n) { return Time(checked_mul(n, 1'000)); }
  static constexpr Time ms(std::int64_t n) { return Time(checked_mul(n, 1'000'000)); }
  static constexpr Time s(std::int64_t n) { return Time(checked_mul(n, 1'000'000'000)); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  /// Seconds → Time, rounded up to whole nanoseconds (a positive duration is never 0 ns).
  /// Values beyond the int64 range (and +inf, NaN counts as 0) saturate at Time::max().
  static Time from_seconds(double seconds);
  /// True when `seconds` converts to a finite Time below Time::max().
  static bool representable(double seconds) { return seconds >= 0 && seconds < kMaxSeconds; }

  constexpr std::int64_t count_ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr Time operator+(Time o) const { return Time(checked_add(ns_, o.ns_)); }
  constexpr Time operator-(Time o) const { return Time(checked_sub(ns_, o.ns_)); }
  constexpr Time& operator+=(Time o) { ns_ = checked_add(ns_, o.ns_); return *this; }
  constexpr Time& operator-=(Time o) { ns_ = checked_sub(ns_, o.ns_); return *this; }
  constexpr Time operator*(std::int64_t k) const { return Time(checked_mul(ns_, k)); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t n) : ns_(n) {}

  [[noreturn]] static void overflow(const char* op);

  // O(1), one overflow-flag branch each.
  static constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) overflow("+");
    return r;
  }
  static constexpr std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) overflow("-");
    return r;
  }
  static constexpr std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow("*");
    return r;
  }

  std::int64_t ns_ = 0;
};

/// Time to move `bytes` at `bytes_per_s`, rounded up; zero bytes take zero time. Saturates at
/// Time::max() (never) for a zero or non-finite rate or a result past the clock.
Time transfer_time(double bytes, double bytes_per_s);

}  // namespace ironlaw
