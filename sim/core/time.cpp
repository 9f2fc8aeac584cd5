#include "core/time.hpp"

#include <cmath>

namespace ironlaw {

void Time::overflow(const char* op) {
  throw TimeOverflow(std::string("simulated time left the representable range (") + kRangeText + ") in a Time '" +
                     op + "'");
}

Time Time::from_seconds(double seconds) {
  if (!(seconds > 0.0)) return Time::zero();
  const double ns = std::ceil(seconds * 1e9 - 1e-6);  // absorb representation noise of exact ns
  if (!(ns < 9.2e18)) return Time::max();
  return Time::ns(static_cast<std::int64_t>(ns < 1.0 ? 1.0 : ns));
}

Time transfer_time(double bytes, double bytes_per_s) {
  if (bytes <= 0.0) return Time::zero();
  if (!(bytes_per_s > 0.0)) return Time::max();
  return Time::from_seconds(bytes / bytes_per_s);
}

}  // namespace ironlaw
