#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "workload/model_cost.hpp"

namespace ironlaw::workload {

namespace {

/// Output tiles of an m × n causal output: row block i (rows i·tm … min((i+1)·tm, m) − 1)
/// needs the column tiles that start left of its last row.
double causal_tiles(double m, double n, double tm, double tn) {
  const double row_blocks = std::ceil(m / tm);
  const double col_blocks = std::ceil(n / tn);
  double tiles = 0;
  for (double i = 0; i < row_blocks; i += 1) {
    const double row_end = std::min((i + 1.0) * tm, m);
    tiles += std::min(std::ceil(row_end / tn), col_blocks);
  }
  return tiles;
}

double gemm_seconds(const Op& op, const config::DeviceSpec& device, const std::string& precision) {
  const auto peak = device.peak_flops.find(precision);
  if (peak == device.peak_flops.end() || !(peak->second > 0)) {
    throw std::invalid_argument("device " + device.name + " has no tensor-core peak for precision \"" +
                                precision + "\"");
  }
  if (device.sm_count <= 0 || device.gemm_tile_m <= 0 || device.gemm_tile_n <= 0 ||
      !(device.max_gemm_fraction > 0)) {
    throw std::invalid_argument("device " + device.name +
                                ": sm_count, gemm tile and max_gemm_fraction must be positive");
  }
  if (op.n <= 0 || op.k <= 0 || op.batch <= 0) return 0.0;
  const double tm = device.gemm_tile_m;
  const double tn = device.gemm_tile_n;
  const double tiles_per_problem =
      op.causal ? causal_tiles(op.m, op.n, tm, tn) : std::ceil(op.m / tm) * std::ceil(op.n / tn);
  const double tiles = tiles_per_problem * std::ceil(op.batch);
  const double sms = device.sm_count;
  const double waves = std::ceil(tiles / sms);
  // Each SM computes one whole tile per wave at its share of the best measured rate of this
  // kind of kernel (plain GEMM, or fused attention where the profile measures one).
  const double fraction = op.fused_attention && device.max_attention_fraction > 0 ? device.max_attention_fraction
                                                                                  : device.max_gemm_fraction;
  const double sm_rate = peak->second * fraction / sms;
  return waves * 2.0 * tm * tn * op.k / sm_rate;
}

}  // namespace

Time op_time(const Op& op, const config::DeviceSpec& device, const std::string& precision) {
  if (!op.is_gemm() && op.flops <= 0 && op.bytes <= 0) return Time::zero();  // a marker: no kernel
  double compute = 0.0;
  if (op.is_gemm()) {
    compute = gemm_seconds(op, device, precision);
  } else if (op.flops > 0) {
    // Vector kernels: CUDA-core fp32 rate, when the profile lists one.
    const auto fp32 = device.peak_flops.find("fp32");
    if (fp32 != device.peak_flops.end() && fp32->second > 0) compute = op.flops / fp32->second;
  }
  double memory = 0.0;
  if (op.bytes > 0) {
    if (!(device.hbm_bandwidth > 0)) {
      throw std::invalid_argument("device " + device.name + ": hbm_bandwidth must be positive");
    }
    memory = op.bytes / device.hbm_bandwidth;
  }
  return Time::from_seconds(std::max(compute, memory)) + device.kernel_launch_overhead;
}

}  // namespace ironlaw::workload
