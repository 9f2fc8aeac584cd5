#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"

using ironlaw::fnv1a64;
using ironlaw::RngStream;

namespace {

std::vector<std::uint64_t> draws(RngStream& rng, int n) {
  std::vector<std::uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(rng.next_u64());
  return out;
}

struct Moments {
  double mean = 0;
  double cv = 0;
};

template <class Draw>
Moments moments(int n, Draw draw) {
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  return Moments{mean, std::sqrt(var) / mean};
}

}  // namespace

TEST_CASE("FNV-1a matches its published test vectors", "[rng]") {
  // Reference values of the 64-bit FNV-1a hash (Fowler/Noll/Vo).
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("the same seed and path give the same sequence", "[rng]") {
  RngStream a(42, "node3/gpu1/loader/worker0");
  RngStream b(42, "node3/gpu1/loader/worker0");
  CHECK(draws(a, 1000) == draws(b, 1000));
}

TEST_CASE("different paths or seeds give different sequences", "[rng]") {
  RngStream base(42, "node3/gpu1/loader/worker0");
  RngStream other_path(42, "node3/gpu1/loader/worker1");
  RngStream other_seed(43, "node3/gpu1/loader/worker0");
  const auto x = draws(base, 64);
  const auto y = draws(other_path, 64);
  const auto z = draws(other_seed, 64);
  int same_path = 0;
  int same_seed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    same_path += x[i] == y[i];
    same_seed += x[i] == z[i];
  }
  CHECK(same_path == 0);
  CHECK(same_seed == 0);
}

TEST_CASE("adding a stream does not change what an existing stream draws", "[rng]") {
  RngStream alone(7, "node0/gpu0/failures");
  const auto expected = draws(alone, 100);

  RngStream first(7, "node0/gpu0/failures");
  std::vector<std::uint64_t> interleaved;
  RngStream added(7, "node0/gpu1/failures");  // a new component created in between
  for (int i = 0; i < 100; ++i) {
    added.next_u64();
    interleaved.push_back(first.next_u64());
    added.normal();
  }
  CHECK(interleaved == expected);
}

TEST_CASE("uniform01 lies at or above 0 and below 1, uniform_below below n", "[rng]") {
  RngStream rng(1, "test/uniform");
  double sum = 0;
  for (int i = 0; i < 100'000; ++i) {
    const double u = rng.uniform01();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(sum / 100'000 == Approx(0.5).epsilon(0.01));
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70'000; ++i) {
    const std::uint64_t k = rng.uniform_below(7);
    REQUIRE(k < 7);
    ++counts[k];
  }
  for (const int c : counts) CHECK(c == Approx(10'000).epsilon(0.05));
  CHECK(rng.uniform_below(0) == 0);
}

TEST_CASE("exponential draws have the requested mean within 2 %", "[rng]") {
  RngStream rng(2024, "test/exponential");
  const Moments m = moments(100'000, [&] { return rng.exponential(3e-3); });
  CHECK(m.mean == Approx(3e-3).epsilon(0.02));
  CHECK(m.cv == Approx(1.0).epsilon(0.02));  // an exponential's cv is 1
  CHECK(rng.exponential(0.0) == 0.0);
}

TEST_CASE("normal draws have mean 0 and standard deviation 1", "[rng]") {
  RngStream rng(5, "test/normal");
  double sum = 0;
  double sum_sq = 0;
  const int n = 100'000;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    sum += z;
    sum_sq += z * z;
  }
  CHECK(std::abs(sum / n) < 0.02);  // standard error 1/sqrt(1e5) ≈ 0.003
  CHECK(std::sqrt(sum_sq / n) == Approx(1.0).epsilon(0.02));
}

TEST_CASE("lognormal draws have the requested mean and cv within 2 %", "[rng]") {
  RngStream rng(11, "test/lognormal");
  for (const double cv : {0.25, 0.5}) {
    const Moments m = moments(100'000, [&] { return rng.lognormal(2e-3, cv); });
    CHECK(m.mean == Approx(2e-3).epsilon(0.02));
    CHECK(m.cv == Approx(cv).epsilon(0.02));
  }
  CHECK(rng.lognormal(2e-3, 0.0) == 2e-3);
  CHECK(rng.lognormal(0.0, 0.5) == 0.0);
}
