#pragma once
/// \file Costs of a layer-list model (config/layer_model.hpp): parameters, FLOPs and bytes of
/// every layer from its shape, and its kernels as Ops timed by the same roofline as the
/// transformer GEMMs (op_time). Pure functions; no simulation here.
///
/// Shapes: a sample is [channels, height, width] (images), [features] (vectors: height =
/// width = 1) or [sequence] token ids (channels 1, height = sequence). Dense layers act on the
/// channel (feature) axis at every one of the height·width positions.
///
/// Kernels for a batch of B samples, bpe = bytes_per_element(precision):
/// - dense: GEMM m = B·positions, k = in, n = units. Backward: dX (m, n = in, k = units) and
///   dW (m = in, n = units, k = B·positions).
/// - conv2d: an implicit GEMM m = B·H_out·W_out, n = filters, k = C_in·kernel² (H_out =
///   ⌊(H + 2·padding − kernel) / stride⌋ + 1). Backward: dX as the GEMM (m, n = C_in·kernel²,
///   k = filters) plus its col2im scatter, dW (m = C_in·kernel², n = filters, k = B·H_out·W_out).
/// - lstm (4 gates) / gru (3 gates), u units, in features, T steps: the input projection of all
///   steps as one GEMM (m = B·T, k = in, n = G·u), then T recurrent GEMMs one after another
///   (m = B, k = u, n = G·u) — the recurrence keeps them sequential — and the gate
///   elementwise kernel. Backward mirrors them.
/// - attention, width d, a heads, T positions: QKV GEMM (n = 3d), the fused attention core
///   (m = n = T, k = 2·d/a per head, B·a problems; backward k = 5·d/a), output GEMM (n = d).
/// - memory-bound kernels (batch norm, relu, pooling, dropout, embedding gathers, residual
///   adds): bytes = elements × (reads + writes) × bpe, a few CUDA-core FLOPs per element.
/// Multiply-add = 2 FLOPs. Parameters: dense in·u (+u), conv C_in·k²·F (+F), batch norm 2·C
/// (running statistics are buffers, not parameters), embedding vocab·units, lstm/gru
/// G·u·(in + u) + biases·G·u, attention 4·d² (+4·d).
#include <string>
#include <vector>

#include "config/layer_model.hpp"
#include "config/spec.hpp"
#include "core/time.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::workload {

/// The shape of one sample between layers.
struct SampleShape {
  int channels = 1;
  int height = 1;
  int width = 1;
  double elements() const { return static_cast<double>(channels) * height * width; }
  int positions() const { return height * width; }
};

/// One layer (a bottleneck block counts as one entry; `repeat` makes separate entries).
struct LayerCost {
  std::string name;
  std::string kind;
  double params = 0;
  double matmul_flops = 0;   ///< per sample, forward: GEMM and convolution FLOPs only
  double forward_flops = 0;  ///< per sample, forward: all kernels
  SampleShape out;
  std::vector<Op> forward;   ///< kernels for the whole batch
  std::vector<Op> backward;
};

struct LayerModelCost {
  std::vector<LayerCost> layers;
  int batch = 0;
  double params() const;
  /// Forward GEMM/convolution FLOPs of one sample (the MFU numerator's unit: training costs
  /// 3× this, forward plus input and weight gradients).
  double matmul_flops_per_sample() const;
  /// 3 × matmul_flops_per_sample(): the model FLOPs of training on one sample.
  double model_flops_per_sample() const { return 3 * matmul_flops_per_sample(); }
};

/// Costs of `model` for a batch of `batch` samples in `precision`. Throws std::invalid_argument
/// for batch < 1, a layer that does not fit its input (e.g. a kernel larger than the padded
/// image, an embedding not first), or an unknown kind. O(layers + recurrent steps).
///
/// With a `device`, GEMMs whose m × n output fills fewer than the device's SMs with tiles are
/// split along k as cuBLAS does (split-K): s = min(⌊SMs / tiles⌋, ⌈k / 512⌉) slices of k / s,
/// timed as a batch of s GEMMs, followed by a reduction kernel reading the s fp32 partial
/// outputs and writing the result. This matters for the weight gradients of convolutions
/// (m · n = C_in·k² × filters, k = B·H·W in the hundred thousands); FLOPs are unchanged.
LayerModelCost layer_model_cost(const config::LayerModelSpec& model, int batch, const std::string& precision,
                                const config::DeviceSpec* device = nullptr);

/// Memory per GPU under data parallelism: model_state_memory of all parameters (ZeRO stage
/// `zero` over `dp` ranks) plus the activations one batch keeps for backward, every layer's
/// output: batch × elements × bytes_per_element (a bottleneck block counts its output once;
/// its inner tensors are not added — a lower bound). O(layers).
MemoryBreakdown layer_model_memory(const LayerModelCost& cost, const config::TrainingSpec& training, int zero, int dp);

/// Forward plus backward time of one batch on `device`: every kernel one after another, each
/// timed by op_time. O(ops).
Time layer_model_step_compute(const LayerModelCost& cost, const config::DeviceSpec& device,
                              const std::string& precision);

}  // namespace ironlaw::workload
