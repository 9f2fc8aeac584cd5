// The roofline with tile and wave quantisation, on the H100 SXM datasheet numbers.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

Op gemm(double m, double n, double k, double batch = 1) {
  Op op;
  op.name = "gemm";
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2 * m * n * k * batch;
  op.bytes = batch * (m * k + k * n + m * n) * 2;
  return op;
}

double achieved(const Op& op, const config::DeviceSpec& d) {
  return op.flops / op_time(op, d, "bf16").seconds();
}

// Best achievable BF16 rate of the profile: 0.801 × 989.4e12.
constexpr double kBest = 0.801 * 989.4e12;

}  // namespace

TEST_CASE("a GEMM whose tiles fill whole waves reaches max_gemm_fraction of peak", "[workload][roofline]") {
  // 16896 × 8192 output = 132 × 32 tiles of 128 × 256 = 4,224 = 32 full waves on 132 SMs.
  const Op op = gemm(16896, 8192, 8192);
  CHECK(achieved(op, h100_sxm()) == Approx(kBest).epsilon(1e-6));
}

TEST_CASE("8192³ loses the part-filled last wave", "[workload][roofline]") {
  // 64 × 32 = 2,048 tiles = 15.5 waves → 16 waves: 2048 / 2112 = 97.0 % of the best rate,
  // 776.9 TFLOP/s. (The wave model on 132 SMs cannot put a power-of-two GEMM within 1 % of
  // the best rate; the benchmark's best shape is the one that fills its waves.)
  const Op op = gemm(8192, 8192, 8192);
  const double rate = achieved(op, h100_sxm());
  CHECK(rate == Approx(kBest * 2048.0 / 2112.0).epsilon(1e-6));
  CHECK(rate == Approx(kBest).epsilon(0.031));
}

TEST_CASE("a GEMM of one tile row on 132 SMs is much slower per FLOP", "[workload][roofline]") {
  // m = 128: 1 × 32 tiles, one wave on 32 of 132 SMs → 32/132 = 24 % of the best rate.
  const Op small = gemm(128, 8192, 8192);
  const double rate = achieved(small, h100_sxm());
  CHECK(rate == Approx(kBest * 32.0 / 132.0).epsilon(1e-6));
  CHECK(rate < 0.25 * achieved(gemm(16896, 8192, 8192), h100_sxm()));
  // A partial tile costs a whole one: m = 129 needs two tile rows (64 tiles, still one wave)
  // and takes as long as m = 256 — with half the useful FLOPs.
  CHECK(op_time(gemm(129, 8192, 8192), h100_sxm(), "bf16") == op_time(gemm(256, 8192, 8192), h100_sxm(), "bf16"));
}

TEST_CASE("133 tiles take two waves, twice the time of 132", "[workload][roofline]") {
  const Op full = gemm(128 * 12, 256 * 11, 8192);   // 132 tiles: one wave
  const Op over = gemm(128 * 7, 256 * 19, 8192);    // 133 tiles: two waves
  // One wave: 2·128·256·8192 FLOPs per SM at 0.801·989.4e12/132 FLOP/s = 89.41 µs (compute
  // bound: 133-tile bytes ≈ 103 MB take 30.7 µs at 3.35 TB/s).
  const auto t132 = op_time(full, h100_sxm(), "bf16").count_ns();
  const auto t133 = op_time(over, h100_sxm(), "bf16").count_ns();
  CHECK(t132 == Approx(2.0 * 128 * 256 * 8192 / (kBest / 132) * 1e9).margin(1));
  CHECK(std::abs(t133 - 2 * t132) <= 1);
}

TEST_CASE("a memory-bound op takes bytes / bandwidth", "[workload][roofline]") {
  Op op;
  op.name = "norm";
  op.bytes = 1e9;
  op.flops = 4e8;  // 6 µs at 66.9 TFLOP/s fp32, well under the memory time
  // 1e9 B / 3.35e12 B/s = 298,507.46 ns → rounded up to 298,508 ns.
  CHECK(op_time(op, h100_sxm(), "bf16").count_ns() == 298'508);
  // With a launch overhead, exactly that much more.
  config::DeviceSpec d = h100_sxm();
  d.kernel_launch_overhead = Time::us(4);
  CHECK(op_time(op, d, "bf16").count_ns() == 298'508 + 4'000);
}

TEST_CASE("a vector op with many FLOPs and few bytes runs at the fp32 CUDA-core rate", "[workload][roofline]") {
  Op op;
  op.name = "vector";
  op.flops = 66.9e9;  // 1 ms at 66.9 TFLOP/s
  op.bytes = 1e6;
  CHECK(op_time(op, h100_sxm(), "bf16").count_ns() == Approx(1'000'000).margin(1));
}

TEST_CASE("a large GEMM with little reuse is memory bound", "[workload][roofline]") {
  // 65536 × 128 × 128 moves (8.4M + 16K + 8.4M)·2 B ≈ 33.6 MB = 10.0 µs at 3.35 TB/s; its 512
  // tiles (one 128-wide column of 256-wide tiles, half empty) take 4 waves of
  // 2·128·256·128 FLOPs per SM = 4 · 1.40 µs = 5.6 µs.
  const Op op = gemm(65536, 128, 128);
  const double memory_s = op.bytes / 3.35e12;
  CHECK(op_time(op, h100_sxm(), "bf16").seconds() == Approx(memory_s).margin(1e-9));
}

TEST_CASE("causal attention computes only the tiles reaching the diagonal", "[workload][roofline]") {
  // s = 8192 with 128 × 256 tiles: row block i needs ⌈(i+1)/2⌉ column tiles, Σ over 64 blocks
  // = 2·(1 + … + 32) = 1,056 tiles instead of 64·32 = 2,048. With 132 heads, waves are
  // 1,056 and 2,048 exactly.
  Op full = gemm(8192, 8192, 256, 132);
  full.bytes = 0;  // as a fused kernel: the s × s output never reaches HBM
  Op causal = full;
  causal.causal = true;
  const double t_full = op_time(full, h100_sxm(), "bf16").seconds();
  const double t_causal = op_time(causal, h100_sxm(), "bf16").seconds();
  CHECK(t_causal / t_full == Approx(1056.0 / 2048.0).epsilon(1e-6));
}

TEST_CASE("fp8 GEMMs run at the fp8 peak and a missing precision is an error", "[workload][roofline]") {
  const Op op = gemm(16896, 8192, 8192);
  const double bf16 = op_time(op, h100_sxm(), "bf16").seconds();
  const double fp8 = op_time(op, h100_sxm(), "fp8").seconds();
  CHECK(bf16 / fp8 == Approx(1978.9 / 989.4).epsilon(1e-6));
  CHECK_THROWS_WITH(op_time(op, h100_sxm(), "fp4"), Catch::Contains("fp4"));
}

TEST_CASE("small models lose efficiency because their GEMMs are small", "[workload][roofline]") {
  // One GPT-2-small layer vs one Llama 3 8B layer, both one 1024-token sequence on one H100:
  // achieved GEMM rate emerges from the shapes.
  config::TrainingSpec t;
  t.sequence_length = 1024;
  auto gemm_rate = [&](const config::ModelSpec& m) {
    double flops = 0, seconds = 0;
    for (const Op& op : layer_forward_ops(m, t, 1, 1)) {
      if (!op.is_gemm() || op.name == "attn_core") continue;
      flops += op.flops;
      seconds += op_time(op, h100_sxm(), "bf16").seconds();
    }
    return flops / seconds;
  };
  const double small = gemm_rate(gpt2_124m());
  const double large = gemm_rate(llama3_8b());
  CHECK(small < 0.5 * large);
  CHECK(large <= kBest);
}
