// Per-GPU kernel-time factors: their distribution, the expected slowest of a group against the
// closed-form order statistics of the normal, and the stability of each GPU's draw.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "hardware/gpu_speed.hpp"

using namespace ironlaw;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Mean over `samples` seeds of the slowest of GPUs 0 … n−1 of node 0.
double mean_slowest(double cv, int n, int samples) {
  double sum = 0;
  for (int seed = 0; seed < samples; ++seed) {
    double worst = 0;
    for (int g = 0; g < n; ++g) worst = std::max(worst, hardware::kernel_time_factor(cv, static_cast<std::uint64_t>(seed), 0, g));
    sum += worst;
  }
  return sum / samples;
}

}  // namespace

TEST_CASE("kernel-time factors are normal around 1 with the device's coefficient of variation", "[hardware][speed]") {
  const double cv = 0.05;
  const auto f = hardware::kernel_time_factors(cv, 42, 1000, 8);
  REQUIRE(f.size() == 8000u);
  double mean = 0, var = 0;
  for (double x : f) mean += x;
  mean /= static_cast<double>(f.size());
  for (double x : f) var += (x - mean) * (x - mean);
  const double sd = std::sqrt(var / static_cast<double>(f.size() - 1));
  // Standard errors for 8,000 draws: mean cv/√8000 = 0.00056, sd ≈ cv/√16000 = 0.0004.
  CHECK(mean == Approx(1.0).margin(0.0025));
  CHECK(sd == Approx(cv).margin(0.002));
}

TEST_CASE("the slowest of n GPUs is, on average, the expected maximum of n normal draws", "[hardware][speed]") {
  // E[max(Z1, Z2)] = 1/√π and E[max(Z1, Z2, Z3)] = 3/(2√π) for standard normals (order
  // statistics of the normal; e.g. David & Nagaraja, Order Statistics, 3rd ed., §3.2). With
  // 20,000 seeds the standard error of the mean maximum is below 0.006·cv; the margin is 0.03·cv.
  const double cv = 0.05;
  CHECK(mean_slowest(cv, 1, 20000) == Approx(1.0).margin(0.03 * cv));
  CHECK(mean_slowest(cv, 2, 20000) == Approx(1.0 + cv / std::sqrt(kPi)).margin(0.03 * cv));
  CHECK(mean_slowest(cv, 3, 20000) == Approx(1.0 + 1.5 * cv / std::sqrt(kPi)).margin(0.03 * cv));
}

TEST_CASE("a GPU's factor depends on the seed and its own place only, not on the cluster's size", "[hardware][speed]") {
  const auto small = hardware::kernel_time_factors(0.0148, 7, 2, 8);
  const auto large = hardware::kernel_time_factors(0.0148, 7, 16, 8);
  REQUIRE(large.size() == 128u);
  CHECK(std::equal(small.begin(), small.end(), large.begin()));
  CHECK(hardware::kernel_time_factor(0.0148, 7, 1, 3) == small[11]);
  CHECK(hardware::kernel_time_factors(0.0148, 8, 2, 8) != small);  // another seed, other draws
  // No variability: every factor exactly 1, nothing drawn.
  for (double f : hardware::kernel_time_factors(0, 7, 2, 8)) CHECK(f == 1.0);
  // The slowest member of a group is the largest factor among its indices.
  CHECK(hardware::slowest(small, {0, 5, 11}) == std::max({small[0], small[5], small[11]}));
  CHECK(hardware::slowest(small, {}) == 1.0);
}

TEST_CASE("the shipped device profiles carry the measured spread of GPU speeds", "[hardware][speed]") {
  // Sinha et al. (SC'22) report a spread (Q3 + 1.5 IQR − (Q1 − 1.5 IQR), over the median) of 8 %
  // on average; for a normal that range is 4 · 1.349 σ, so cv = 0.08 / 5.396 = 0.0148.
  for (const char* file : {"/topologies/dgx-h100-leaf-spine.yaml", "/topologies/dgx-a100-leaf-spine.yaml",
                           "/topologies/grand-teton-h100-96gb.yaml", "/topologies/v100-gpt3-cluster.yaml",
                           "/topologies/dgx-h800-deepseek.yaml", "/topologies/whitefiber-h200.yaml"}) {
    INFO(file);
    const auto t = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + file);
    CHECK(t.device.speed_variation_cv == Approx(0.08 / (4 * 1.349)).epsilon(0.01));
  }
}

TEST_CASE("the H200 profile is the H100 SXM5's die with the H200 datasheet's memory", "[hardware][device]") {
  // NVIDIA's H200 datasheet: the H100 SXM5's tensor-core peaks and 700 W limit, 141 GB of HBM3e
  // at 4.8 TB/s against the H100 SXM5's 80 GB at 3.35 TB/s; CUDA reports 139.80 GiB of it.
  const auto h200 = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + "/topologies/whitefiber-h200.yaml").device;
  const auto h100 = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + "/topologies/dgx-h100-leaf-spine.yaml").device;
  for (const char* p : {"bf16", "fp16", "fp8", "tf32", "fp32"}) {
    INFO(p);
    CHECK(h200.chip_peak_flops(p) == h100.chip_peak_flops(p));
  }
  CHECK(h200.power_limit_w == h100.power_limit_w);
  CHECK(h200.sm_count == h100.sm_count);
  CHECK(h200.hbm_bytes == Approx(139.80 * 1024 * 1024 * 1024));
  // The achieved bandwidth keeps the H100's measured fraction of its datasheet figure.
  CHECK(h200.hbm_bandwidth / h100.hbm_bandwidth == Approx(4.8 / 3.35).epsilon(0.01));
}

TEST_CASE("a speed spread outside the key's bounds is bad input naming the key", "[hardware][speed][config]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  for (const char* value : {"0.5", "-0.01"}) {
    INFO(value);
    try {
      config::load_scenario(scenario, {std::string("cluster.topology.device.speed_variation_cv=") + value});
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      REQUIRE(e.diagnostics().size() == 1);
      CHECK(e.diagnostics()[0].key == "cluster.topology.device.speed_variation_cv");
    }
  }
  CHECK(config::load_scenario(scenario, {"cluster.topology.device.speed_variation_cv=0"}).topology.device.speed_variation_cv == 0);
}
