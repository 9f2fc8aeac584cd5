// The roofline with tile and wave quantisation, on the H100 SXM datasheet numbers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "config/load.hpp"
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

TEST_CASE("a GEMM of one tile row on 132 SMs is much slower per FLOP unless cuBLAS splits its k",
          "[workload][roofline]") {
  // m = 128, k = 512: 1 × 32 tiles, one wave on 32 of 132 SMs, too short a k to split
  // (⌈512 / 512⌉ = 1 slice) → 32/132 = 24 % of the best rate.
  const Op small = gemm(128, 8192, 512);
  const double rate = achieved(small, h100_sxm());
  CHECK(rate == Approx(kBest * 32.0 / 132.0).epsilon(2e-4));  // a 5.6 µs kernel, rounded to whole ns
  CHECK(rate < 0.25 * achieved(gemm(16896, 8192, 8192), h100_sxm()));
  // A partial tile costs a whole one: m = 129 needs two tile rows (64 tiles, still one wave)
  // and takes as long as m = 256 — with half the useful FLOPs.
  CHECK(op_time(gemm(129, 8192, 512), h100_sxm(), "bf16") == op_time(gemm(256, 8192, 512), h100_sxm(), "bf16"));
  // k = 8192: split-K in s = min(⌊132 / 32⌋, ⌈8192 / 512⌉) = 4 slices, 128 tiles of k = 2,048 in
  // one wave (22.35 µs of math), each slice writing its fp32 partial 128 × 8192 output; the
  // sliced GEMM is bound by its bytes (the 8192² weight read once, 134 MB, and the partials):
  // 155.2 MB at 3.35 TB/s = 46.3 µs; then the reduction reads the 4 partials and writes the bf16
  // output: 18.9 MB, 5.6 µs. 52.0 µs against one wave of k = 8,192: 89.4 µs.
  const Op split = gemm(128, 8192, 8192);
  const double per_sm = kBest / 132;
  const double partials = 4.0 * 128 * 8192 * 4;
  const double sliced = std::max(2.0 * 128 * 256 * 2048 / per_sm, (split.bytes + partials) / 3.35e12);
  const double reduce = (partials + 128.0 * 8192 * 2) / 3.35e12;
  CHECK(op_time(split, h100_sxm(), "bf16").seconds() == Approx(sliced + reduce).epsilon(1e-4));
  CHECK(sliced + reduce < 2.0 * 128 * 256 * 8192 / per_sm);
  const auto parts = split_k(split, h100_sxm(), 2);
  REQUIRE(parts.has_value());
  CHECK(parts->first.batch == 4);
  CHECK(parts->first.k == 2048);
  CHECK(parts->first.flops == split.flops);
  CHECK(parts->second.name == "gemm_splitk_reduce");
  // Full waves are never split, nor a causal or fused-attention op.
  CHECK_FALSE(split_k(gemm(16896, 8192, 8192), h100_sxm(), 2).has_value());
  Op causal = split;
  causal.causal = true;
  CHECK_FALSE(split_k(causal, h100_sxm(), 2).has_value());
}

TEST_CASE("split-K is taken only where it is faster: a short k gains nothing from slicing",
          "[workload][roofline]") {
  // 1024 × 768 × 1024: 8 × 3 = 24 tiles; s = min(⌊132/24⌋, ⌈1024/512⌉) = 2 slices of 512 → 48
  // tiles, one wave of half the k, plus the partials' write and the reduction. The library's
  // heuristic keeps the faster; op_time is never above the unsplit wave's time.
  const Op op = gemm(1024, 768, 1024);
  const double per_sm = kBest / 132;
  const double one_wave = 2.0 * 128 * 256 * 1024 / per_sm;
  CHECK(op_time(op, h100_sxm(), "bf16").seconds() <= one_wave * (1 + 1e-9));
  const auto parts = split_k(op, h100_sxm(), 2);
  REQUIRE(parts.has_value());
  const double split =
      op_time(parts->first, h100_sxm(), "bf16").seconds() + op_time(parts->second, h100_sxm(), "bf16").seconds();
  CHECK(op_time(op, h100_sxm(), "bf16").seconds() == Approx(std::min(split, one_wave)).epsilon(1e-6));
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
  // op_time is the GPU's execution only: issuing the kernel is the host queue's cost.
  config::DeviceSpec d = h100_sxm();
  d.kernel_launch_overhead = Time::us(4);
  CHECK(op_time(op, d, "bf16").count_ns() == 298'508);
}

TEST_CASE("the host's dispatch cost follows the framework mode, else the launch overhead", "[workload][host]") {
  config::DeviceSpec d = h100_sxm();
  d.kernel_launch_overhead = Time::us(4);
  d.framework_dispatch["eager"] = Time::ns(7'200);
  CHECK(host_dispatch_cost(d, "eager") == Time::ns(7'200));
  CHECK(host_dispatch_cost(d, "compile") == Time::us(4));
}

TEST_CASE("a GPU ahead of its host idles: launch-bound gaps emerge, long kernels hide the host", "[workload][host]") {
  // Host cost c = 5 us per kernel. Ten 1 us kernels: kernel i is issued at 5·i us and ends
  // 1 us later (the GPU waits for each), so the stream ends at 10·5 + 1 = 51 us, not 10 us.
  HostQueue launch_bound(Time::us(5));
  for (int i = 0; i < 10; ++i) launch_bound.push(Time::us(1), 1);
  CHECK(launch_bound.gpu_end() == Time::us(51));
  CHECK(launch_bound.host_end() == Time::us(50));
  // Ten 20 us kernels: only the first waits for its launch (5 us), the rest are queued in time:
  // 5 + 10·20 = 205 us. The old serial model (20 + 5 per kernel) gave 250 us.
  HostQueue gpu_bound(Time::us(5));
  Time sum;
  for (int i = 0; i < 10; ++i) sum += gpu_bound.push(Time::us(20), 1);
  CHECK(gpu_bound.gpu_end() == Time::us(205));
  CHECK(sum == gpu_bound.gpu_end());  // each op's share, idle gaps included, adds up to the span
  // An op of 4 kernels of 2 us each (8 us in all) behind a 5 us host: issued at 5, 10, 15, 20,
  // the last ends at 22 us; a marker (no execution) issues nothing.
  HostQueue eager(Time::us(5));
  CHECK(eager.push(Time::us(8), 4) == Time::us(22));
  CHECK(eager.push(Time::zero(), 1) == Time::zero());
  CHECK(eager.host_end() == Time::us(20));
}

TEST_CASE("with blocking launches (CUDA_LAUNCH_BLOCKING=1) every kernel waits for its own dispatch", "[workload][host]") {
  // Each launch returns only when its kernel has ended, so the host issues kernel i at
  // E_(i-1) + c. Ten 20 us kernels behind a 5 us host: 10 · (5 + 20) = 250 us, where the
  // queued stream above took 205; ten 1 us kernels: 10 · (5 + 1) = 60 us (51 queued).
  HostQueue gpu_bound(Time::us(5), true);
  Time sum;
  for (int i = 0; i < 10; ++i) sum += gpu_bound.push(Time::us(20), 1);
  CHECK(gpu_bound.gpu_end() == Time::us(250));
  CHECK(gpu_bound.host_end() == Time::us(230));  // the 10th launch: the 9th ended at 225, + 5
  CHECK(sum == gpu_bound.gpu_end());
  HostQueue launch_bound(Time::us(5), true);
  for (int i = 0; i < 10; ++i) launch_bound.push(Time::us(1), 1);
  CHECK(launch_bound.gpu_end() == Time::us(60));
  // An op of 4 kernels of 2 us: 4 · (5 + 2) = 28 us.
  HostQueue op(Time::us(5), true);
  CHECK(op.push(Time::us(8), 4) == Time::us(28));
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

TEST_CASE("an fp8 GEMM with the split accumulator runs at the measured split/fast ratio of the fast one",
          "[workload][roofline][precision]") {
  // stas00/ml-engineering's MAMF table (mamf-finder, torch 2.7.0+cu126 for both rows): H100 SXM
  // FP8 1402.6 TFLOPS of 1979 with torch._scaled_mm's default use_fast_accum=False, BF16 794.5
  // of 989. Fast accumulation taken at the bf16 mainloop fraction, the split one at
  // (1402.6 / 1979) / (794.5 / 989) of it: a GEMM of whole waves (132 × 32 tiles) then reaches
  // 1402.6 / 1979 of the fp8 peak when the profile's bf16 fraction is the table's 794.5 / 989.
  config::DeviceSpec d = h100_sxm();
  d.max_gemm_fraction = 794.5 / 989.0;
  d.fp8_split_accumulator_rate = (1402.6 / 1979.0) / (794.5 / 989.0);
  Op fast = gemm(16896, 8192, 8192);
  Op split = fast;
  split.fp8_split_accumulator = true;
  const double peak = 1978.9e12;
  CHECK(fast.flops / op_time(fast, d, "fp8").seconds() == Approx(peak * 794.5 / 989.0).epsilon(1e-6));
  CHECK(split.flops / op_time(split, d, "fp8").seconds() == Approx(peak * 1402.6 / 1979.0).epsilon(1e-6));
  // The flag is the fp8 accumulator's: a bf16 GEMM (its own fp32 accumulator) is not slowed.
  CHECK(op_time(split, d, "bf16") == op_time(fast, d, "bf16"));
  // A profile without the key (rate 1) times both alike.
  CHECK(op_time(split, h100_sxm(), "fp8") == op_time(fast, h100_sxm(), "fp8"));
}



TEST_CASE("the GEMM model reproduces the MAMF measurement at the shape it was measured at", "[workload][roofline]") {
  // stas00/ml-engineering: 792.1 TFLOP/s = 0.801 of 989.4 at 6144 × 17920 × 2816.
  const Op best = gemm(6144, 17920, 2816);
  CHECK(achieved(best, h100_shaped()) == Approx(0.801 * 989.4e12).epsilon(1e-6));
  // By hand: 48 × 70 = 3,360 tiles in 26 waves of 132 (3,360 / 3,432 = 0.97902), and
  // 2,816 / (2,816 + 256) = 0.91667 of each tile's time does math: the mainloop runs at
  // 0.801 / (0.97902 · 0.91667) = 0.89255 of peak.
  CHECK(gemm_mainloop_fraction(h100_shaped()) == Approx(0.801 / (3360.0 / 3432.0 * 2816.0 / 3072.0)).epsilon(1e-9));
}

TEST_CASE("a small-K GEMM loses the K-loop fill of every tile", "[workload][roofline]") {
  // Same output (whole waves), K = 256 vs K = 1024: per tile (K + 256) of time for K of math,
  // so the rates are in the ratio (256 / 512) / (1024 / 1280) = 0.625.
  const double small = achieved(gemm(16896, 8192, 256), h100_shaped());
  const double large = achieved(gemm(16896, 8192, 1024), h100_shaped());
  CHECK(small / large == Approx(0.5 / 0.8).epsilon(1e-4));  // times round to whole ns
  // A long K loop would pass the measured maximum (0.8926 · 8192 / 8448 = 0.866 of peak): no
  // shape beats the MAMF scan's best, 0.801.
  CHECK(achieved(gemm(16896, 8192, 8192), h100_shaped()) == Approx(0.801 * 989.4e12).epsilon(1e-6));
}

TEST_CASE("a 500 W limit slows GEMMs by the cube root of the dynamic power ratio", "[workload][roofline]") {
  // Dynamic power ∝ f³: at 500 W with 120 W static, f = ∛((500 − 120) / (700 − 120)) = 0.86846
  // of the clock at which the 700 W card ran the benchmark.
  config::DeviceSpec capped = h100_shaped();
  capped.power_limit_w = 500;
  const Op op = gemm(16896, 8192, 8192);
  const double ratio = op_time(op, h100_shaped(), "bf16").seconds() / op_time(op, capped, "bf16").seconds();
  CHECK(ratio == Approx(std::cbrt(380.0 / 580.0)).epsilon(1e-6));
  CHECK(sustained_clock_fraction(capped, gemm_mainloop_fraction(capped)) == Approx(0.86846).epsilon(1e-4));
  // A kernel with less tensor activity draws less power: flash attention at 35 % of peak
  // (activity 0.35 / 0.8926 = 0.392) needs ∛(380 / (580 · 0.392)) > 1 — it keeps the full clock.
  CHECK(sustained_clock_fraction(capped, 0.35) == 1.0);
  // With the exponent the profiles derive from a published 600 W capping loss (x = 1.42):
  // (380 / 580)^(1 / 1.42) = 0.7425.
  capped.clock_power_exponent = 1.42;
  CHECK(sustained_clock_fraction(capped, gemm_mainloop_fraction(capped)) == Approx(0.7425).epsilon(1e-3));
  // Without a power limit in the profile nothing changes.
  CHECK(sustained_clock_fraction(h100_sxm(), 0.8) == 1.0);
}

TEST_CASE("a step of continuous GEMMs holds the settled clock, not the benchmark's burst", "[workload][roofline]") {
  // mamf-finder on H200 (stas00/ml-engineering benchmarks/README): sustained 744.5 vs burst
  // 846.5 TFLOP/s, s = 0.88 of the burst clock at the 700 W limit the burst was measured under.
  config::DeviceSpec settled = h100_shaped();
  settled.sustained_gemm_clock = 0.88;
  settled.clock_power_exponent = 1.42;
  // The MAMF shape: 0.801 · 989.4 · 0.88 = 697.4 TFLOP/s.
  CHECK(achieved(gemm(6144, 17920, 2816), settled) == Approx(0.801 * 989.4e12 * 0.88).epsilon(1e-6));
  // At 500 W the power law scales the settled clock: 0.88 · (380 / 580)^(1 / 1.42) = 0.65336.
  settled.power_limit_w = 500;
  CHECK(sustained_clock_fraction(settled, gemm_mainloop_fraction(settled)) ==
        Approx(0.88 * std::pow(380.0 / 580.0, 1.0 / 1.42)).epsilon(1e-9));
  // Flash attention at 35 % of peak, activity 0.35 / 0.89255 = 0.39214, draws less: at 500 W
  // 0.88 · ((380 / 580) / 0.39214)^(1 / 1.42) = 0.88 · 1.4354 = 1.263 → the boost clock, 1.
  CHECK(sustained_clock_fraction(settled, 0.35) == 1.0);
  // At 700 W a kernel at half the best GEMM's activity: 0.88 · 2^(1 / 1.42) = 1.43 → 1; at
  // 0.9 of it: 0.88 · (1 / 0.9)^(1 / 1.42) = 0.94778.
  settled.power_limit_w = 700;
  const double best = gemm_mainloop_fraction(settled);
  CHECK(sustained_clock_fraction(settled, 0.5 * best) == 1.0);
  CHECK(sustained_clock_fraction(settled, 0.9 * best) == Approx(0.88 * std::pow(1.0 / 0.9, 1.0 / 1.42)).epsilon(1e-9));
  // Without a power limit the profile's measurement stands.
  settled.power_limit_w = 0;
  CHECK(sustained_clock_fraction(settled, best) == 1.0);
}

TEST_CASE("a GEMM is tiled in the orientation that takes fewer waves", "[workload][roofline]") {
  // m = 128 × 11 = 1408, n = 256 × 12 = 3072: 128 × 256 tiles give 11 × 12 = 132 (one wave on
  // 132 SMs), 256 × 128 tiles ⌈1408 / 256⌉ · ⌈3072 / 128⌉ = 6 · 24 = 144 (two waves); the
  // model keeps one wave. Transposed (m = 3072, n = 1408) it picks 256 × 128: one wave too.
  const Op op = gemm(1408, 3072, 4096);
  const double one_wave = 2.0 * 128 * 256 * 4096 / (0.801 * 989.4e12 / 132);
  CHECK(op_time(op, h100_sxm(), "bf16").seconds() == Approx(one_wave).epsilon(1e-4));
  CHECK(op_time(gemm(3072, 1408, 4096), h100_sxm(), "bf16").seconds() == Approx(one_wave).epsilon(1e-4));
}

TEST_CASE("fewer SMs than the profile's peak was rated for are a smaller chip, never a faster one",
          "[workload][roofline][hostile]") {
  // The profile's 989.4 TFLOP/s is the 132-SM chip's (peak_sm_count 132): 7.4955 TFLOP/s per SM.
  // 1024 × 1024 × 512: 8 × 4 = 32 tiles of 128 × 256, each 2·128·256·512 = 33.55 MFLOP; a k of
  // 512 is too short to split (one slice), so waves decide.
  const Op op = gemm(1024, 1024, 512);
  const double per_sm = 0.801 * 989.4e12 / 132;  // best rate per SM
  const double tile_s = 2.0 * 128 * 256 * 512 / per_sm;  // 5.588 µs
  auto on_chip = [&](const Op& o, int sms) {
    config::DeviceSpec d = h100_sxm();
    d.peak_sm_count = 132;
    d.sm_count = sms;
    return op_time(o, d, "bf16").seconds();
  };
  auto on = [&](int sms) { return on_chip(op, sms); };
  // 132 SMs: one wave of 32 tiles (100 SMs idle), 5.588 µs; the MAMF ceiling 2·1024²·512 /
  // (0.801 · 989.4e12) = 1.355 µs is below it.
  CHECK(on(132) == Approx(tile_s).margin(1e-9));  // whole ns
  // 16 SMs: ⌈32 / 16⌉ = 2 waves at the same per-SM rate: 11.18 µs. (With the 132-SM peak shared
  // by 16 SMs, each 8.25× faster, it took 1.35 µs: faster than the whole chip.)
  CHECK(on(16) == Approx(2 * tile_s).margin(1e-9));  // whole ns
  // 9 SMs: ⌈32 / 9⌉ = 4 waves, 22.35 µs; the ceiling on a 9-SM chip, 1.355 µs × 132 / 9 =
  // 19.87 µs, is below it too.
  CHECK(on(9) == Approx(4 * tile_s).margin(1e-9));  // whole ns
  // 7 SMs: 5 waves = 27.94 µs; the 7-SM chip's MAMF ceiling 1.355 µs × 132 / 7 = 25.55 µs is
  // below it, so waves decide.
  CHECK(on(7) == Approx(5 * tile_s).margin(1e-9));  // whole ns
  // With a k long enough to split (8,192: up to 16 slices), fewer SMs still never help.
  double previous_split = on_chip(gemm(1024, 1024, 8192), 132);
  for (int sms = 131; sms >= 1; --sms) {
    const double t = on_chip(gemm(1024, 1024, 8192), sms);
    CHECK(t >= previous_split);
    previous_split = t;
  }
  // Never faster with fewer SMs, for every count from 132 down to 1.
  double previous = on(132);
  for (int sms = 131; sms >= 1; --sms) {
    const double t = on(sms);
    CHECK(t >= previous);
    previous = t;
  }
  // Without peak_sm_count the peak is the chip's own, as before (the profile gives sm_count only).
  config::DeviceSpec own = h100_sxm();
  own.sm_count = 16;
  CHECK(own.reference_sm_count() == 16);
  CHECK(own.chip_peak_flops("bf16") == Approx(989.4e12));
  config::DeviceSpec small = h100_sxm();
  small.peak_sm_count = 132;
  small.sm_count = 33;
  CHECK(small.chip_peak_flops("bf16") == Approx(989.4e12 / 4));
  CHECK(small.chip_peak_flops("tf32") == 0);
}

TEST_CASE("the mainloop fraction is the benchmark chip's whatever sm_count simulates", "[workload][roofline][hostile]") {
  // Measured on the 132-SM chip (3,360 tiles in 26 waves there); a 100-SM chip of the same SMs
  // keeps that kernel's per-SM mainloop rate: 0.801 / (3360/3432 · 2816/3072), as on 132.
  config::DeviceSpec d = h100_shaped();
  d.peak_sm_count = 132;
  d.sm_count = 100;
  CHECK(gemm_mainloop_fraction(d) == Approx(0.801 / (3360.0 / 3432.0 * 2816.0 / 3072.0)).epsilon(1e-9));
  // The best shape on 100 SMs fills its waves better (3,360 tiles in 34 waves of 100: 1.0232 ms
  // at that rate) than on 132, which would beat the measured maximum; it is held at the 100-SM
  // chip's ceiling, 2·6144·17920·2816 / (0.801 × 989.4e12 × 100/132) = 1.0328 ms.
  const Op best = gemm(6144, 17920, 2816);
  const double per_sm = 989.4e12 / 132 * gemm_mainloop_fraction(d);
  CHECK(34 * 2.0 * 128 * 256 * (2816 + 256) / per_sm == Approx(1.0232e-3).epsilon(1e-4));
  CHECK(op_time(best, d, "bf16").seconds() == Approx(2.0 * 6144 * 17920 * 2816 / (0.801 * 989.4e12 * 100 / 132)).epsilon(1e-6));
}

namespace {

// The device of topologies/h100-sxm.yaml as the loader reads it (through a cluster that uses it).
const config::DeviceSpec& h100_profile() {
  static const config::DeviceSpec d =
      config::load_topology((std::filesystem::path(IRONLAW_SOURCE_DIR) / "topologies" / "dgx-h100-leaf-spine.yaml").string())
          .device;
  return d;
}

// The same device running a benchmark burst after idle, at the clock the FA3 paper's (and the
// MAMF scan's) figures were measured at: the boost clock, sustained_gemm_clock 1.
const config::DeviceSpec& h100_burst() {
  static const config::DeviceSpec d = [] {
    config::DeviceSpec b = h100_profile();
    b.sustained_gemm_clock = 1.0;
    return b;
  }();
  return d;
}

// One FlashAttention call of the FA3 paper's benchmark: batch × s = 16k tokens, 16 heads of
// 128, BF16 (Shah et al. 2024, §4.1), forward (k = 2d) or backward (k = 5d); the FlashAttention-2
// paper's A100 benchmark is the same with hidden 2,048 at head dimension 64 too (32 heads).
Op flash(double s, bool causal, bool backward, double head_dim = 128) {
  Op op;
  op.name = backward ? "attn_core_bwd" : "attn_core";
  op.m = s;
  op.n = s;
  op.k = backward ? 5 * head_dim : 2 * head_dim;
  op.batch = 16384 / s * (2048 / head_dim);
  op.causal = causal;
  op.fused_attention = true;
  op.head_dim = head_dim;
  op.role = backward ? OpRole::attention_core_grad : OpRole::attention_core;
  return op;
}

// Achieved TFLOP/s as the paper counts it: 4·s²·d·heads·batch forward (half of it causal),
// 2.5 × that backward.
double paper_tflops(const Op& op, const config::DeviceSpec& device = h100_burst()) {
  const double forward = 4.0 * op.m * op.n * op.head_dim * op.batch * (op.causal ? 0.5 : 1.0);
  const double flops = op.role == OpRole::attention_core_grad ? 2.5 * forward : forward;
  return flops / op_time(op, device, "bf16").seconds() / 1e12;
}

}  // namespace

TEST_CASE("FlashAttention-2 on H100: each pass's rate by sequence length matches the FA3 paper's figures",
          "[workload][roofline][attention]") {
  // Shah et al. 2024 (arXiv:2407.08608), FlashAttention-2 bars, head dim 128, BF16, H100 SXM5 at
  // 700 W: Figure 5 forward without / with causal mask, Figure 6 backward without causal mask.
  const double lengths[] = {512, 1024, 2048, 4096, 8192, 16384};
  const double forward[] = {309, 350, 362, 368, 370, 370};
  const double forward_causal[] = {191, 260, 298, 319, 333, 335};
  const double backward[] = {214, 260, 291, 310, 318, 322};
  // The two-parameter curve of each pass holds every bar within 4 % (the fits: 2.2, 3.4 and
  // 0.5 % before the profile's rounding to whole TFLOP/s).
  for (int i = 0; i < 6; ++i) {
    INFO("sequence " << lengths[i]);
    CHECK(paper_tflops(flash(lengths[i], false, false)) == Approx(forward[i]).epsilon(0.04));
    CHECK(paper_tflops(flash(lengths[i], true, false)) == Approx(forward_causal[i]).epsilon(0.04));
    CHECK(paper_tflops(flash(lengths[i], false, true)) == Approx(backward[i]).epsilon(0.04));
  }
  // The backward runs below the forward at every length, and the causal forward below the full one.
  for (double s : lengths) {
    CHECK(paper_tflops(flash(s, false, true)) < paper_tflops(flash(s, false, false)));
    CHECK(paper_tflops(flash(s, true, false)) < paper_tflops(flash(s, false, false)));
  }
}

TEST_CASE("fused attention on fewer SMs than the profile's chip is slower in proportion, never faster",
          "[workload][roofline][attention][hostile]") {
  // The per-pass rates are the 132-SM chip's (peak_sm_count 132); 16 × 1,024 tokens of 16 heads
  // is 16 × 16 × 8 = 2,048 query blocks. On 66 SMs each SM keeps its rate: half the chip's rate,
  // and 2,048 blocks fill 31.03 waves of 66 as they fill 15.52 of 132, so exactly twice the time.
  const Op op = flash(1024, true, false);
  config::DeviceSpec half = h100_profile();
  REQUIRE(half.reference_sm_count() == 132);
  half.sm_count = 66;
  const double full_s = op_time(op, h100_profile(), "bf16").seconds();
  CHECK(op_time(op, half, "bf16").seconds() == Approx(2 * full_s).epsilon(2e-6));
  double previous = full_s;
  for (int sms : {100, 66, 33, 9, 1}) {
    config::DeviceSpec d = h100_profile();
    d.sm_count = sms;
    const double t = op_time(op, d, "bf16").seconds();
    CHECK(t > previous);
    previous = t;
  }
}

TEST_CASE("cuDNN fused attention on H100: each pass's rate by sequence length matches the FA3 paper's cuDNN bars",
          "[workload][roofline][attention]") {
  // Shah et al. 2024 (arXiv:2407.08608), cuDNN bars, head dim 128, BF16, H100 SXM5: Figure 5
  // forward without / with causal mask, Figure 6 backward without causal mask. The device's
  // cudnn_attention_kernel in place of its FlashAttention-2 profile (what training.attention_kernel:
  // cudnn does). The forward bars fall after 2k, which the two-parameter curve cannot follow: 5 %.
  config::DeviceSpec cudnn = h100_burst();
  REQUIRE(cudnn.attention_kernels.count("cudnn") == 1);
  cudnn.attention_kernel = cudnn.attention_kernels.at("cudnn");
  const auto tflops = [&](const Op& op) { return paper_tflops(op, cudnn); };
  const double lengths[] = {512, 1024, 2048, 4096, 8192, 16384};
  const double forward[] = {497, 574, 617, 609, 600, 595};
  const double forward_causal[] = {315, 410, 484, 518, 529, 539};
  const double backward[] = {305, 408, 465, 499, 518, 516};
  for (int i = 0; i < 6; ++i) {
    INFO("sequence " << lengths[i]);
    CHECK(tflops(flash(lengths[i], false, false)) == Approx(forward[i]).epsilon(0.05));
    CHECK(tflops(flash(lengths[i], true, false)) == Approx(forward_causal[i]).epsilon(0.04));
    CHECK(tflops(flash(lengths[i], false, true)) == Approx(backward[i]).epsilon(0.04));
    // cuDNN is 1.5-1.7x FlashAttention-2 at 2k and above in every pass (the same figures).
    if (lengths[i] >= 2048) {
      CHECK(tflops(flash(lengths[i], false, true)) > 1.5 * paper_tflops(flash(lengths[i], false, true)));
    }
  }
}

TEST_CASE("an attention pass's loop length sets its rate: a short key block costs more per FLOP",
          "[workload][roofline][attention]") {
  // Forward, no mask, 4,096 queries × 1,024 keys vs × 16,384 keys, 64 heads (2,048 query blocks,
  // whole waves of 132 SMs in neither: the same 16/15.52), as a burst. By hand from h100-sxm.yaml:
  // rate(L) = 389 · L / (L + 104): 1024 → 353.1, 16384 → 386.5 TFLOP/s.
  Op short_keys = flash(4096, false, false);
  short_keys.batch = 64;
  short_keys.n = 1024;
  Op long_keys = short_keys;
  long_keys.n = 16384;
  const double q = 16.0 / (2048.0 / 132.0);
  const double t_short = 2.0 * 4096 * 1024 * 256 * 64 * q / (389e12 * 1024 / 1128);
  const double t_long = 2.0 * 4096 * 16384 * 256 * 64 * q / (389e12 * 16384 / 16488);
  CHECK(op_time(short_keys, h100_burst(), "bf16").seconds() == Approx(t_short).margin(2e-9));  // whole ns
  CHECK(op_time(long_keys, h100_burst(), "bf16").seconds() == Approx(t_long).margin(2e-9));
  // Backward parallelises over keys and loops over queries: its length is m, not n.
  Op backward = short_keys;
  backward.role = OpRole::attention_core_grad;
  backward.k = 5 * 128;
  const double blocks = std::ceil(1024.0 / 128) * 64;  // 512 key blocks: 3.88 of 4 waves
  const double qb = std::ceil(blocks / 132) * 132 / blocks;
  const double t_backward = 2.0 * 4096 * 1024 * 640 * 64 * qb / (339e12 * 4096 / (4096 + 274));
  CHECK(op_time(backward, h100_burst(), "bf16").seconds() == Approx(t_backward).margin(2e-9));
}

TEST_CASE("a sustained step runs fused attention at the GEMMs' settled clock, not the paper's burst",
          "[workload][roofline][attention]") {
  // The FA3 paper's bars are bursts at the boost clock, as the MAMF scan is. A training step
  // holds attention for seconds with its SMs busy throughout, so the kernel settles where the
  // best GEMM does. h100-sxm.yaml (700 W, the limit the burst ran under): sustained_gemm_clock
  // 0.88 of the burst, the same for every attention pass and length.
  for (bool causal : {false, true}) {
    for (bool backward : {false, true}) {
      for (double s : {1024.0, 16384.0}) {
        const Op op = flash(s, causal, backward);
        INFO("causal " << causal << " backward " << backward << " sequence " << s);
        CHECK(op_time(op, h100_burst(), "bf16").seconds() / op_time(op, h100_profile(), "bf16").seconds() ==
              Approx(0.88).epsilon(1e-6));
      }
    }
  }
  // The torchtitan cards (h100-96gb-500w.yaml): 500 W, 120 W static, exponent 1.42: the clock
  // 0.88 * ((500 - 120) / (700 - 120))^(1 / 1.42) = 0.88 * 0.74247 = 0.65337 of the burst. By hand
  // for the non-causal forward at 16k (the paper's 370 TFLOP/s bar; rate 389 * 16384 / 16488 =
  // 386.55 TFLOP/s on the 2,048 query blocks' 16 / 15.515 waves): 2 * 16384^2 * 256 * 16 FLOPs.
  config::DeviceSpec capped = h100_profile();
  capped.power_limit_w = 500;
  capped.static_power_w = 120;
  capped.max_gemm_power_limit_w = 700;
  capped.clock_power_exponent = 1.42;
  capped.sustained_gemm_clock = 0.88;
  const double clock = 0.88 * std::pow(380.0 / 580.0, 1.0 / 1.42);
  REQUIRE(clock == Approx(0.65337).epsilon(1e-4));
  const double waves = 16.0 / (2048.0 / 132.0);
  const double by_hand = 2.0 * 16384.0 * 16384.0 * 256 * 16 * waves / (389e12 * 16384.0 / 16488.0 * clock);
  CHECK(op_time(flash(16384, false, false), capped, "bf16").seconds() == Approx(by_hand).margin(2e-9));
}

namespace {

// The device of topologies/a100-sxm.yaml at the benchmark's boost clock (sustained_gemm_clock 1),
// running the named kernel of its profile (what training.attention_kernel does).
config::DeviceSpec a100_burst(const std::string& kernel) {
  config::DeviceSpec d =
      config::load_topology((std::filesystem::path(IRONLAW_SOURCE_DIR) / "topologies" / "dgx-a100-leaf-spine.yaml").string())
          .device;
  d.sustained_gemm_clock = 1.0;
  d.attention_kernel = d.attention_kernels.at(kernel);
  return d;
}

// Forward + backward TFLOP/s as the FlashAttention-2 benchmark counts it: 3.5 × the forward's
// 4·s²·d·heads·batch (half of it causal) over the two passes' time.
double fwd_bwd_tflops(const config::DeviceSpec& device, double s, bool causal, double head_dim) {
  const Op f = flash(s, causal, false, head_dim);
  const Op b = flash(s, causal, true, head_dim);
  const double forward = 4.0 * s * s * head_dim * f.batch * (causal ? 0.5 : 1.0);
  return 3.5 * forward / (op_time(f, device, "bf16").seconds() + op_time(b, device, "bf16").seconds()) / 1e12;
}

}  // namespace

TEST_CASE("fused attention on A100 by head dimension: FlashAttention-2 and the Triton kernel (at FlashAttention 1's bars) match the FA2 paper's figure",
          "[workload][roofline][attention]") {
  // The FlashAttention-2 paper's A100 figure (Dao 2023, arXiv:2307.08691; Dao-AILab/flash-attention
  // assets/flash2_a100_fwd_bwd_benchmark.png): forward + backward TFLOP/s on A100 80GB SXM4, hidden
  // 2,048, batch × sequence = 16k, at sequence 512 … 16k. Each profile is a two-parameter curve
  // per pass fitted to these bars (see topologies/a100-sxm.yaml): every bar within 7 %.
  const double lengths[] = {512, 1024, 2048, 4096, 8192, 16384};
  struct Panel {
    const char* kernel;
    bool causal;
    double head_dim;
    double bars[6];  // 0: the label is hidden by the figure's legend
  };
  const Panel panels[] = {
      {"flash2", true, 64, {88, 119, 140, 156, 165, 171}},   {"flash2", true, 128, {99, 133, 155, 173, 182, 189}},
      {"flash2", false, 64, {132, 0, 162, 171, 175, 176}},    {"flash2", false, 128, {0, 0, 187, 196, 201, 203}},
      // FlashAttention 1.x's CUDA kernel: the figure's FlashAttention bars.
      {"flash1", true, 64, {58, 70, 77, 87, 92, 97}},     {"flash1", true, 128, {55, 62, 69, 76, 80, 83}},
      {"flash1", false, 64, {91, 92, 104, 108, 110, 110}}, {"flash1", false, 128, {76, 72, 76, 80, 82, 83}},
      // The Triton kernel has no A100 measurement and takes the same profile (round 23;
      // topologies/a100-sxm.yaml says why).
      {"flash_triton", true, 64, {58, 70, 77, 87, 92, 97}},     {"flash_triton", true, 128, {55, 62, 69, 76, 80, 83}},
  };
  for (const Panel& p : panels) {
    const config::DeviceSpec d = a100_burst(p.kernel);
    for (int i = 0; i < 6; ++i) {
      if (p.bars[i] == 0) continue;
      INFO(p.kernel << (p.causal ? " causal" : "") << " head dim " << p.head_dim << " sequence " << lengths[i]);
      CHECK(fwd_bwd_tflops(d, lengths[i], p.causal, p.head_dim) == Approx(p.bars[i]).epsilon(0.07));
    }
  }
  // The figure's orderings hold: FlashAttention-2 is about twice FlashAttention 1 at 2k and above
  // with causal mask (1.76-2.28x in the bars), and at head dimension 64 FlashAttention-2 runs below
  // its 128 rate while FlashAttention 1 runs above it (causal, 2k: 140 vs 155 and 77 vs 69).
  const config::DeviceSpec fa2 = a100_burst("flash2");
  const config::DeviceSpec triton = a100_burst("flash_triton");
  for (double s : {2048.0, 4096.0, 8192.0, 16384.0}) {
    for (double hd : {64.0, 128.0}) {
      const double ratio = fwd_bwd_tflops(fa2, s, true, hd) / fwd_bwd_tflops(triton, s, true, hd);
      CHECK(ratio > 1.7);
      CHECK(ratio < 2.4);
    }
  }
  CHECK(fwd_bwd_tflops(fa2, 2048, true, 64) < fwd_bwd_tflops(fa2, 2048, true, 128));
  CHECK(fwd_bwd_tflops(triton, 2048, true, 64) > fwd_bwd_tflops(triton, 2048, true, 128));
}

TEST_CASE("a head dimension without a tile of its own runs the next tile padded: FlashAttention 1 at 96 costs what 128 does",
          "[workload][roofline][attention]") {
  // FlashAttention 1.x dispatches 64 < d <= 128 to its hdim128 kernel (topologies/a100-sxm.yaml,
  // padded_above 64): the same sequences and heads at head dimension 96 take exactly the time of
  // head dimension 128. FlashAttention-2 compiles a 96 kernel (its 128 profile pads only the
  // head dimensions above 96): the nearest profile (128) runs the 96-wide problem at its own
  // rate, in 96/128 of the time; at 112 it pads to 128 as FlashAttention 1 does.
  const config::DeviceSpec fa1 = a100_burst("flash1");
  const config::DeviceSpec fa2 = a100_burst("flash2");
  for (bool backward : {false, true}) {
    for (bool causal : {false, true}) {
      const Op at128 = flash(2048, causal, backward, 128);
      Op at96 = at128;  // same batch and heads, narrower heads
      at96.head_dim = 96;
      at96.k = at128.k * 96 / 128;
      INFO((backward ? "backward" : "forward") << (causal ? " causal" : ""));
      CHECK(op_time(at96, fa1, "bf16").seconds() == Approx(op_time(at128, fa1, "bf16").seconds()));
      CHECK(op_time(at96, fa2, "bf16").seconds() == Approx(op_time(at128, fa2, "bf16").seconds() * 96 / 128));
      Op at112 = at128;
      at112.head_dim = 112;
      at112.k = at128.k * 112 / 128;
      CHECK(op_time(at112, fa2, "bf16").seconds() == Approx(op_time(at128, fa2, "bf16").seconds()));
    }
  }
  // At 48 (between its 32 and 64 tiles) FlashAttention 1 runs the 64 tile: the time of 64.
  const Op at64 = flash(2048, true, false, 64);
  Op at48 = at64;
  at48.head_dim = 48;
  at48.k = at64.k * 48 / 64;
  CHECK(op_time(at48, fa1, "bf16").seconds() == Approx(op_time(at64, fa1, "bf16").seconds()));
  // The padded profile wins over the nearest one: 80 is nearer 64 on the log scale, but FlashAttention 1
  // has no tile between 64 and 128.
  CHECK(fa1.attention_kernel.at_head_dim(80).head_dim == 128);
  CHECK(fa2.attention_kernel.at_head_dim(80).head_dim == 64);
}

TEST_CASE("a fused attention op takes its kernel's profile at the nearest measured head dimension",
          "[workload][roofline][attention]") {
  config::DeviceSpec::AttentionKernel kernel;
  config::DeviceSpec::AttentionProfile p64, p128;
  p64.head_dim = 64;
  p64.forward.plateau_rate = 1;
  p128.head_dim = 128;
  p128.forward.plateau_rate = 2;
  kernel.profiles = {p64, p128};
  const auto picked = [&](double hd) { return kernel.at_head_dim(hd).forward.plateau_rate; };
  CHECK(picked(64) == 1);
  CHECK(picked(128) == 2);
  CHECK(picked(32) == 1);   // below every profile: the smallest
  CHECK(picked(256) == 2);  // above: the largest
  CHECK(picked(80) == 1);   // log2 distance 0.32 to 64, 0.68 to 128
  CHECK(picked(96) == 2);   // 0.58 to 64, 0.42 to 128
  // Equidistant on the log scale (64 between 32 and 128, one octave each way): the larger.
  config::DeviceSpec::AttentionKernel wide;
  wide.profiles = {p64, p128};
  wide.profiles.front().head_dim = 32;
  CHECK(wide.at_head_dim(64).forward.plateau_rate == 2);
  // One profile without a stated head dimension serves every head dimension.
  config::DeviceSpec::AttentionKernel only;
  only.profiles = {config::DeviceSpec::AttentionProfile{}};
  only.profiles.front().forward.plateau_rate = 3;
  CHECK(only.at_head_dim(64).forward.plateau_rate == 3);
  CHECK(only.at_head_dim(256).forward.plateau_rate == 3);
  CHECK_THROWS_AS(config::DeviceSpec::AttentionKernel{}.at_head_dim(128), std::logic_error);
}

TEST_CASE("small models lose efficiency because their GEMMs are small", "[workload][roofline]") {
  // One GPT-2-small layer vs one Llama 3 8B layer, both one 1024-token sequence on one H100
  // (topologies/h100-sxm.yaml: tiles, waves, the K loop's fill and split-K): the achieved GEMM rate
  // emerges from the shapes.
  config::TrainingSpec t;
  t.sequence_length = 1024;
  auto gemm_rate = [&](const config::ModelSpec& m) {
    double flops = 0, seconds = 0;
    for (const Op& op : layer_forward_ops(m, t, 1, 1)) {
      if (!op.is_gemm() || op.name == "attn_core") continue;
      flops += op.flops;
      seconds += op_time(op, h100_profile(), "bf16").seconds();
    }
    return flops / seconds;
  };
  const double small = gemm_rate(gpt2_124m());
  const double large = gemm_rate(llama3_8b());
  CHECK(small < 0.5 * large);
  CHECK(large <= kBest);
}
