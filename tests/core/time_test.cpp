// Checked simulated-time arithmetic: int64 nanoseconds hold ±9,223,372,036,854,775,807 ns
// (2^63 − 1, about 292.3 years); any sum, difference or product beyond throws TimeOverflow
// instead of wrapping to a time in the past.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "core/time.hpp"

using ironlaw::Time;
using ironlaw::TimeOverflow;

namespace {
constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();  // 2^63 − 1
}

TEST_CASE("Time arithmetic inside the int64 range is exact") {
  CHECK((Time::ns(kMaxNs - 5) + Time::ns(5)).count_ns() == kMaxNs);
  CHECK((Time::ns(-kMaxNs) - Time::ns(1)).count_ns() == std::numeric_limits<std::int64_t>::min());
  CHECK((Time::s(3) * 3'000'000'000LL).count_ns() == 9'000'000'000'000'000'000LL);
  CHECK(Time::s(9'223'372'036).count_ns() == 9'223'372'036'000'000'000LL);
}

TEST_CASE("Time arithmetic past the int64 range throws TimeOverflow, never wraps") {
  CHECK_THROWS_AS(Time::ns(kMaxNs) + Time::ns(1), TimeOverflow);
  CHECK_THROWS_AS(Time::max() + Time::s(1), TimeOverflow);
  CHECK_THROWS_AS(Time::ns(std::numeric_limits<std::int64_t>::min()) - Time::ns(1), TimeOverflow);
  CHECK_THROWS_AS(Time::s(4) * 3'000'000'000LL, TimeOverflow);  // 1.2e19 ns > 9.22e18
  CHECK_THROWS_AS(Time::s(9'223'372'037), TimeOverflow);        // one second past 292 years
  CHECK_THROWS_AS(Time::ms(std::numeric_limits<std::int64_t>::max() / 1000), TimeOverflow);
  Time t = Time::ns(kMaxNs - 1);
  CHECK_THROWS_AS(t += Time::ns(2), TimeOverflow);
  CHECK(t.count_ns() == kMaxNs - 1);  // unchanged after the refused update
}

TEST_CASE("Seconds past the clock saturate at Time::max() and are representable only below it") {
  CHECK(Time::from_seconds(1e300) == Time::max());
  CHECK(Time::from_seconds(9.3e9) == Time::max());
  CHECK(Time::from_seconds(9.1e9).count_ns() == 9'100'000'000'000'000'000LL);
  CHECK(Time::representable(9.2e9));
  CHECK_FALSE(Time::representable(9.3e9));
  CHECK_FALSE(Time::representable(-1));
  CHECK(ironlaw::transfer_time(1e9, 0.0) == Time::max());     // no rate: never
  CHECK(ironlaw::transfer_time(1e300, 1e-300) == Time::max());
  CHECK(ironlaw::transfer_time(1e9, 1e9).count_ns() == 1'000'000'000);
}
