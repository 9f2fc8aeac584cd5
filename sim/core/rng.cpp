#include "core/rng.hpp"

#include <cmath>

namespace ironlaw {

namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// SplitMix64 output function: a bijective mix of all 64 bits.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One step of the SplitMix64 sequence.
std::uint64_t splitmix64(std::uint64_t& state) {
  state += kGolden;
  return mix64(state);
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = kFnvOffset;
  for (const char c : bytes) {
    h ^= static_cast<std::uint8_t>(c);
    h *= kFnvPrime;
  }
  return h;
}

RngStream::RngStream(std::uint64_t scenario_seed, std::string_view component_path) {
  std::uint64_t state = mix64(mix64(scenario_seed + kGolden) ^ fnv1a64(component_path));
  for (std::uint64_t& word : s_) word = splitmix64(state);
  if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = kGolden;  // the one forbidden state
}

std::uint64_t RngStream::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double RngStream::uniform01() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint64_t RngStream::uniform_below(std::uint64_t n) {
  if (n == 0) return 0;
  // Values below `threshold` would make the low residues more likely: reject them.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = next_u64();
    if (r >= threshold) return r % n;
  }
}

double RngStream::exponential(double mean) {
  if (!(mean > 0)) return 0;
  return -mean * std::log(1.0 - uniform01());  // 1 − U ∈ (0, 1]: the log is finite
}

double RngStream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  double u = 0;
  double v = 0;
  double s = 0;
  do {
    u = 2.0 * uniform01() - 1.0;
    v = 2.0 * uniform01() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double factor = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = v * factor;
  has_spare_ = true;
  return u * factor;
}

double RngStream::lognormal(double mean, double cv) {
  if (!(mean > 0)) return 0;
  if (!(cv > 0)) return mean;
  const double sigma2 = std::log1p(cv * cv);
  const double mu = std::log(mean) - 0.5 * sigma2;
  return std::exp(mu + std::sqrt(sigma2) * normal());
}

}  // namespace ironlaw
