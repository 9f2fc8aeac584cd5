#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

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

void check_gemm_device(const config::DeviceSpec& device) {
  if (device.sm_count <= 0 || device.gemm_tile_m <= 0 || device.gemm_tile_n <= 0 ||
      !(device.max_gemm_fraction > 0)) {
    throw std::invalid_argument("device " + device.name +
                                ": sm_count, gemm tile and max_gemm_fraction must be positive");
  }
}

/// Waves of one (tm × tn)-tiled problem set over the SMs.
double waves_of(double m, double n, double batch, bool causal, double tm, double tn, double sms) {
  const double tiles_per_problem = causal ? causal_tiles(m, n, tm, tn) : std::ceil(m / tm) * std::ceil(n / tn);
  return std::ceil(tiles_per_problem * std::ceil(batch) / sms);
}

/// Seconds of an m × n × k GEMM (× batch) on `sms` SMs at a mainloop rate of `sm_rate` FLOP/s
/// per SM, with the tile orientation (tm × tn or tn × tm) that takes fewer waves, as a library's
/// heuristic picks it; each tile pays the K-loop fill and drain of `k_fill` besides its k.
double tiled_seconds(double m, double n, double k, double batch, bool causal, const config::DeviceSpec& device,
                     double sm_rate, double sms) {
  const double tm = device.gemm_tile_m;
  const double tn = device.gemm_tile_n;
  double waves = waves_of(m, n, batch, causal, tm, tn, sms);
  if (!causal && tm != tn) waves = std::min(waves, waves_of(m, n, batch, causal, tn, tm, sms));
  return waves * 2.0 * tm * tn * (k + std::max(0.0, device.gemm_k_fill)) / sm_rate;
}

/// Seconds of a fused attention kernel at the device's measured per-pass rate (see
/// attention_kernel_rate), with the partial last wave of its thread blocks: one block per
/// gemm_tile_m rows of the dimension the pass parallelises over (forward: queries; backward:
/// keys) and (sequence, head), one block per SM at a time. The profile's rates are for its
/// reference chip (reference_sm_count SMs); a chip of sm_count SMs runs sm_count / reference of it.
double attention_seconds(const Op& op, const config::DeviceSpec& device, double peak) {
  const bool backward = op.role == OpRole::attention_core_grad;
  const double rate =
      std::min(peak, attention_kernel_rate(device, backward, op.causal, backward ? op.m : op.n, op.head_dim));
  const double rows = backward ? op.n : op.m;
  const double blocks = std::ceil(rows / device.gemm_tile_m) * std::ceil(op.batch);
  const double sms = device.sm_count;
  const double quantisation = std::ceil(blocks / sms) * sms / blocks;
  // Useful FLOPs as the measurement counts them: a causal s × s problem computes s(s+1)/2 cells.
  const double cells = op.causal ? op.m * (op.m + 1.0) / 2.0 : op.m * op.n;
  // A head dimension the kernel has no tile for runs the next one's (AttentionProfile::pads): the
  // padded columns cost what real ones do.
  const auto& profile = device.attention_kernel.at_head_dim(op.head_dim);
  const double padding = profile.pads(op.head_dim) ? profile.head_dim / op.head_dim : 1.0;
  const double flops = 2.0 * cells * op.k * std::ceil(op.batch) * padding;
  // The clock of a sustained step under the power limit, as for GEMMs (gemm_seconds): the
  // profile's rates are bursts at the boost clock (the FlashAttention-3 paper's benchmark, like
  // the MAMF scan behind max_gemm_fraction), and the kernel keeps every SM issuing for its whole
  // run — its rate is bound by the softmax (exp, rescaling) and HMMA issue between the tensor
  // cores' bursts, not by idle SMs — so its dynamic power is taken as the full-load GEMM's, not
  // as its share of tensor-core peak.
  const double clock = sustained_clock_fraction(device, gemm_mainloop_fraction(device));
  const double chip = sms / device.reference_sm_count();
  return flops * quantisation / (rate * chip * clock);
}

double gemm_seconds(const Op& op, const config::DeviceSpec& device, const std::string& precision) {
  const auto peak = device.peak_flops.find(precision);
  if (peak == device.peak_flops.end() || !(peak->second > 0)) {
    throw std::invalid_argument("device " + device.name + " has no tensor-core peak for precision \"" +
                                precision + "\"");
  }
  check_gemm_device(device);
  if (op.n <= 0 || op.k <= 0 || op.batch <= 0) return 0.0;
  if (op.fused_attention && device.attention_kernel.given()) return attention_seconds(op, device, peak->second);
  const double sms = device.sm_count;
  const double peak_sms = device.reference_sm_count();  // each SM at the profile chip's per-SM rate
  const double clock = sustained_clock_fraction(device, gemm_mainloop_fraction(device));
  // The split accumulator's fp32 promotions run on the CUDA cores inside the K loop: the loop
  // (and the best shape's ceiling) slows by the measured ratio; the clock is the GEMMs' own.
  const double accumulate = op.fp8_split_accumulator && precision == "fp8" ? device.fp8_split_accumulator_rate : 1.0;
  const double sm_rate = peak->second * gemm_mainloop_fraction(device) * accumulate * clock / peak_sms;
  const double tiled = tiled_seconds(op.m, op.n, op.k, op.batch, op.causal, device, sm_rate, sms);
  // No shape beats the measured maximum: the MAMF scan that gave max_gemm_fraction covered
  // shapes up to 20,480 in every dimension, so a long K loop that the fill model would put
  // above it is held at it (at this kernel's clock).
  const double ceiling = 2.0 * op.m * op.n * op.k * std::ceil(op.batch) /
                         (peak->second * sms / peak_sms * device.max_gemm_fraction * accumulate * clock);
  return op.causal ? tiled : std::max(tiled, ceiling);  // the scan measured dense GEMMs
}

}  // namespace

std::optional<std::pair<Op, Op>> split_k(const Op& op, const config::DeviceSpec& device, double out_bpe) {
  if (!op.is_gemm() || op.causal || op.fused_attention || op.k <= 0 || device.sm_count <= 0 ||
      device.gemm_tile_m <= 0 || device.gemm_tile_n <= 0) {
    return std::nullopt;
  }
  const double tiles = std::ceil(op.m / device.gemm_tile_m) * std::ceil(op.n / device.gemm_tile_n) * std::ceil(op.batch);
  const double splits = std::min(std::floor(device.sm_count / tiles), std::ceil(op.k / 512.0));
  if (splits < 2) return std::nullopt;
  const double partials = splits * op.m * op.n * std::ceil(op.batch);
  Op sliced = op;
  sliced.batch = std::ceil(op.batch) * splits;
  sliced.k = op.k / splits;
  sliced.bytes = op.bytes + partials * 4;  // each slice writes its fp32 partial output
  Op reduce;
  reduce.name = op.name + "_splitk_reduce";
  reduce.bytes = partials * 4 + op.m * op.n * std::ceil(op.batch) * out_bpe;
  reduce.flops = partials;
  reduce.role = op.role == OpRole::weight_grad ? OpRole::weight_grad : OpRole::plain;
  return std::make_pair(std::move(sliced), std::move(reduce));
}

double gemm_mainloop_fraction(const config::DeviceSpec& device) {
  check_gemm_device(device);
  const double m = device.max_gemm_shape_m, n = device.max_gemm_shape_n, k = device.max_gemm_shape_k;
  if (!(m > 0 && n > 0 && k > 0)) return device.max_gemm_fraction;
  // The model's own time for the benchmark's best shape at a mainloop rate of the whole peak,
  // on the chip the benchmark ran on (reference_sm_count SMs, whatever sm_count simulates):
  // the measured fraction over the modelled one is the mainloop's share of peak.
  const double sms = device.reference_sm_count();
  const double ideal = tiled_seconds(m, n, k, 1, false, device, 1.0 / sms, sms);  // peak normalised to 1 FLOP/s
  const double modelled = 2.0 * m * n * k / ideal;
  return std::min(1.0, device.max_gemm_fraction / modelled);
}

double attention_kernel_rate(const config::DeviceSpec& device, bool backward, bool causal, double loop_length,
                             double head_dim) {
  if (!device.attention_kernel.given()) {
    throw std::invalid_argument("device " + device.name + " has no fused attention kernel profile");
  }
  const auto& k = device.attention_kernel.at_head_dim(head_dim);
  const config::DeviceSpec::AttentionPass& pass =
      backward ? (causal ? k.backward_causal : k.backward) : (causal ? k.forward_causal : k.forward);
  if (!(pass.plateau_rate > 0) || !(loop_length > 0)) {
    throw std::invalid_argument("device " + device.name + ": attention_kernel needs a positive plateau_rate per pass");
  }
  return pass.plateau_rate * loop_length / (loop_length + std::max(0.0, pass.half_length));
}

double sustained_clock_fraction(const config::DeviceSpec& device, double tensor_fraction) {
  const double limit = device.power_limit_w;
  const double reference = device.max_gemm_power_limit_w;
  const double idle = device.static_power_w;
  if (!(limit > 0) || !(reference > 0) || !(tensor_fraction > 0)) return 1.0;
  if (!(reference > idle) || !(limit > idle)) {
    throw std::invalid_argument("device " + device.name + ": power limits must exceed static_power");
  }
  // Dynamic power ∝ activity · f^x (x = clock_power_exponent). The best GEMM (activity ∝ its
  // mainloop fraction) holds the reference limit under continuous load at f = s, the
  // sustained_gemm_clock (the benchmark's burst ran at f = 1); a kernel of another activity
  // under another limit runs at the clock where its dynamic power meets the limit, never above
  // the benchmark's (boost) clock.
  const double sustained = device.sustained_gemm_clock;
  if (!(sustained > 0 && sustained <= 1)) {
    throw std::invalid_argument("device " + device.name + ": sustained_gemm_clock must be in (0, 1]");
  }
  const double activity = tensor_fraction / gemm_mainloop_fraction(device);
  const double fx = (limit - idle) / ((reference - idle) * activity);
  const double x = device.clock_power_exponent >= 1 ? device.clock_power_exponent : 3.0;
  return std::min(1.0, sustained * std::pow(fx, 1.0 / x));
}

namespace {

/// op_time of one kernel, without the split-K alternative.
Time unsplit_op_time(const Op& op, const config::DeviceSpec& device, const std::string& dtype) {
  double compute = 0.0;
  if (op.is_gemm()) {
    compute = gemm_seconds(op, device, dtype);
  } else if (op.flops > 0) {
    // Vector kernels: CUDA-core fp32 rate, when the profile lists one.
    const auto fp32 = device.peak_flops.find("fp32");
    if (fp32 != device.peak_flops.end() && fp32->second > 0) compute = op.flops / device.chip_peak_flops("fp32");
  }
  double memory = 0.0;
  if (op.bytes > 0) {
    if (!(device.hbm_bandwidth > 0)) {
      throw std::invalid_argument("device " + device.name + ": hbm_bandwidth must be positive");
    }
    memory = op.bytes / device.hbm_bandwidth;
  }
  return Time::from_seconds(std::max(compute, memory));
}

}  // namespace

Time op_time(const Op& op, const config::DeviceSpec& device, const std::string& precision) {
  if (!op.is_gemm() && op.flops <= 0 && op.bytes <= 0) return Time::zero();  // a marker: no kernel
  const std::string& dtype = op.dtype.empty() ? precision : op.dtype;
  const Time unsplit = unsplit_op_time(op, device, dtype);
  if (op.is_gemm()) {
    // cuBLAS splits k where the output tiles leave SMs idle, and only where that is faster
    // than one pass (its heuristic picks the faster kernel): the sliced GEMM, then its reduction
    // into the output type. (The host model counts the op as one launch: cuBLAS launches the
    // reduction inside the same library call, so the framework's dispatch is paid once; the
    // reduction's raw launch, a few µs, is not added. Charging it at the framework's dispatch
    // cost would overstate it: tried in round 20, it moved no validate row and took the
    // planner's predictor on GPT-2 124M off its agreement with the simulation.)
    if (const auto parts = split_k(op, device, bytes_per_element(dtype))) {
      return std::min(unsplit, op_time(parts->first, device, precision) + op_time(parts->second, device, precision));
    }
  }
  return unsplit;
}

Time memory_time(const Op& op, const config::DeviceSpec& device) {
  if (!(op.bytes > 0) || !(device.hbm_bandwidth > 0)) return Time::zero();
  return Time::from_seconds(op.bytes / device.hbm_bandwidth);
}

Time host_dispatch_cost(const config::DeviceSpec& device, const std::string& framework) {
  const auto it = device.framework_dispatch.find(framework);
  return it != device.framework_dispatch.end() ? it->second : device.kernel_launch_overhead;
}

Time HostQueue::push(Time execution, int kernels, int syncs, int library_kernels, Time library_cost) {
  if (execution <= Time::zero()) return Time::zero();
  const Time before = gpu_;
  const std::int64_t k = std::max(1, kernels);
  const std::int64_t waits = std::clamp<std::int64_t>(syncs, 0, k - 1);
  const std::int64_t framework_calls = k - std::clamp<std::int64_t>(library_kernels, 0, k - 1);
  const Time share = Time::ns(execution.count_ns() / k);
  for (std::int64_t i = 0; i < k; ++i) {
    // The previous launch returned when its kernel ended; or the host reads back a value the
    // kernels issued so far compute (kernels 1 … waits of this op).
    if (blocking_ || (i >= 1 && i <= waits)) host_ = std::max(host_, gpu_);
    host_ += i < framework_calls ? cost_ : library_cost;
    const Time run = i + 1 == k ? execution - share * (k - 1) : share;
    gpu_ = std::max(gpu_, host_) + run;
  }
  return gpu_ - before;
}

}  // namespace ironlaw::workload
