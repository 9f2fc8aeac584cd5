#pragma once
/// \file The project's deterministic random numbers (DESIGN.md principle 3, STYLE.md §8).
///
/// Every random component owns one RngStream keyed by (scenario seed, stable component path,
/// e.g. "node17/gpu3/loader/worker0"). A stream's state is derived from a hash of that key
/// alone, never from creation order, so adding a component does not change what any other
/// component draws.
///
/// Generator: xoshiro256** (Blackman & Vigna), 256-bit state, seeded through SplitMix64 from
/// a 64-bit FNV-1a hash of the path mixed with the seed. The distributions are implemented
/// here rather than taken from <random>, whose algorithms differ between standard libraries.
/// The only platform functions used are std::log, std::exp and std::sqrt (sqrt is exact
/// under IEEE 754; log and exp are within an ulp on every mainstream libm).
#include <cstdint>
#include <string_view>

namespace ironlaw {

/// 64-bit FNV-1a hash of `bytes`: stable across platforms, compilers and runs (unlike
/// std::hash). Not cryptographic. O(bytes.size()).
std::uint64_t fnv1a64(std::string_view bytes);

/// One independent stream of pseudo-random numbers. Cheap to copy (40 bytes of state);
/// every draw is O(1) (normal and lognormal: expected O(1), a rejection loop).
class RngStream {
 public:
  /// The stream of `component_path` under `scenario_seed`. Same arguments → same sequence,
  /// on any machine. O(component_path.size()).
  RngStream(std::uint64_t scenario_seed, std::string_view component_path);

  /// Next 64 uniformly distributed bits.
  std::uint64_t next_u64();
  /// Uniform on [0, 1), with 53 random bits (every multiple of 2⁻⁵³ equally likely).
  double uniform01();
  /// Uniform integer on [0, n), unbiased (rejection). Requires n > 0; returns 0 for n == 0.
  std::uint64_t uniform_below(std::uint64_t n);
  /// Exponential with the given mean (≥ 0; same unit as the result). Inversion:
  /// −mean·ln(1 − U).
  double exponential(double mean);
  /// Standard normal N(0, 1) by Marsaglia's polar method; the second value of each pair is
  /// kept for the next call (it is part of the stream's state).
  double normal();
  /// Lognormal with the given arithmetic `mean` (> 0) and coefficient of variation `cv`
  /// (≥ 0): exp(μ + σ·Z) with σ² = ln(1 + cv²), μ = ln(mean) − σ²/2. cv == 0 returns `mean`
  /// without drawing; mean ≤ 0 returns 0.
  double lognormal(double mean, double cv);

 private:
  std::uint64_t s_[4];
  double spare_normal_ = 0;
  bool has_spare_ = false;
};

}  // namespace ironlaw
