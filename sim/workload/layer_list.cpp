#include "workload/layer_list.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace ironlaw::workload {

namespace {

// CUDA-core FLOPs per element of the memory-bound kernels (rough counts, as in model_ops).
constexpr double kNormFlops = 8;
constexpr double kActivationFlops = 1;
constexpr double kGateFlops = 10;

struct Builder {
  int batch = 1;
  double bpe = 2;
  const config::DeviceSpec* device = nullptr;
  LayerModelCost out;

  /// Appends `op` to `ops`, split along k when its output tiles leave SMs idle (split_k: the
  /// sliced GEMM and its reduction as two ops).
  void push(std::vector<Op>& ops, Op op) const {
    if (device != nullptr) {
      if (auto parts = split_k(op, *device, bpe)) {
        ops.push_back(std::move(parts->first));
        ops.push_back(std::move(parts->second));
        return;
      }
    }
    ops.push_back(std::move(op));
  }

  [[noreturn]] void fail(const std::string& layer, const std::string& message) const {
    throw std::invalid_argument("layer " + layer + ": " + message);
  }

  static Op gemm(std::string name, double m, double n, double k, double bpe, OpRole role) {
    Op op;
    op.name = std::move(name);
    op.m = m;
    op.n = n;
    op.k = k;
    op.flops = 2 * m * n * k;
    op.bytes = (m * k + k * n + m * n) * bpe;
    op.role = role;
    return op;
  }
  static Op vector(std::string name, double elements, double accesses, double bpe, double flops_per_element) {
    Op op;
    op.name = std::move(name);
    op.bytes = elements * accesses * bpe;
    op.flops = elements * flops_per_element;
    return op;
  }

  /// A GEMM layer part: forward op, its dX and dW, and FLOP tallies (per sample).
  void add_gemm(LayerCost& c, const std::string& name, double m, double n, double k) {
    push(c.forward, gemm(name, m, n, k, bpe, OpRole::plain));
    push(c.backward, gemm(name + "_dx", m, k, n, bpe, OpRole::input_grad));
    push(c.backward, gemm(name + "_dw", k, n, m, bpe, OpRole::weight_grad));
    c.matmul_flops += 2 * m * n * k / batch;
    c.forward_flops += 2 * m * n * k / batch;
  }
  void add_vector(LayerCost& c, const std::string& name, double elements, double reads_writes, double bwd_reads_writes,
                  double flops_per_element) {
    c.forward.push_back(vector(name, elements, reads_writes, bpe, flops_per_element));
    c.backward.push_back(vector(name + "_grad", elements, bwd_reads_writes, bpe, flops_per_element));
    c.forward_flops += elements * flops_per_element / batch;
  }

  SampleShape conv(LayerCost& c, const std::string& name, const SampleShape& in, int filters, int kernel, int stride,
                   int padding, bool bias) {
    const int h = (in.height + 2 * padding - kernel) / stride + 1;
    const int w = (in.width + 2 * padding - kernel) / stride + 1;
    if (in.height + 2 * padding < kernel || in.width + 2 * padding < kernel || h < 1 || w < 1) {
      fail(name, "kernel " + std::to_string(kernel) + " does not fit the " + std::to_string(in.height) + "x" +
                     std::to_string(in.width) + " input");
    }
    const double k = static_cast<double>(in.channels) * kernel * kernel;
    c.params += k * filters + (bias ? filters : 0);
    add_gemm(c, name, static_cast<double>(batch) * h * w, filters, k);
    return SampleShape{filters, h, w};
  }
  void batch_norm(LayerCost& c, const std::string& name, const SampleShape& s) {
    c.params += 2.0 * s.channels;
    // Forward: read for the statistics, read again to normalise, write. Backward: read x and
    // dy twice (two reductions, then the input gradient), write dx.
    add_vector(c, name, batch * s.elements(), 3, 5, kNormFlops);
  }
  void relu(LayerCost& c, const std::string& name, const SampleShape& s) {
    add_vector(c, name, batch * s.elements(), 2, 3, kActivationFlops);
  }

  SampleShape layer(const config::LayerSpec& l, const std::string& name, const SampleShape& in, LayerCost& c,
                    bool first_of_repeat) {
    const double b = batch;
    if (l.kind == "dense") {
      c.params += static_cast<double>(in.channels) * l.units + (l.bias ? l.units : 0);
      add_gemm(c, name, b * in.positions(), l.units, in.channels);
      return SampleShape{l.units, in.height, in.width};
    }
    if (l.kind == "conv2d") return conv(c, name, in, l.filters, l.kernel, l.stride, l.padding, l.bias);
    if (l.kind == "max_pool" || l.kind == "avg_pool") {
      const int h = (in.height + 2 * l.padding - l.kernel) / l.stride + 1;
      const int w = (in.width + 2 * l.padding - l.kernel) / l.stride + 1;
      if (h < 1 || w < 1) fail(name, "pool kernel does not fit its input");
      const SampleShape pooled{in.channels, h, w};
      c.forward.push_back(vector(name, b * (in.elements() + pooled.elements()), 1, bpe, 0));
      c.forward.back().flops = b * pooled.elements() * l.kernel * l.kernel;
      c.backward.push_back(vector(name + "_grad", b * (in.elements() + 2 * pooled.elements()), 1, bpe, 0));
      c.forward_flops += pooled.elements() * l.kernel * l.kernel;
      return pooled;
    }
    if (l.kind == "global_avg_pool") {
      const SampleShape pooled{in.channels, 1, 1};
      c.forward.push_back(vector(name, b * (in.elements() + pooled.elements()), 1, bpe, 0));
      c.forward.back().flops = b * in.elements();
      c.backward.push_back(vector(name + "_grad", b * (in.elements() + pooled.elements()), 1, bpe, 0));
      c.forward_flops += in.elements();
      return pooled;
    }
    if (l.kind == "batch_norm") {
      batch_norm(c, name, in);
      return in;
    }
    if (l.kind == "relu") {
      relu(c, name, in);
      return in;
    }
    if (l.kind == "flatten") return SampleShape{static_cast<int>(in.elements()), 1, 1};
    if (l.kind == "dropout") {
      // Writes a 1-byte keep mask; backward reads it with dy and writes dx.
      c.forward.push_back(vector(name, b * in.elements(), 1, 2 * bpe + 1, kActivationFlops));
      c.backward.push_back(vector(name + "_grad", b * in.elements(), 1, 2 * bpe + 1, kActivationFlops));
      c.forward_flops += in.elements() * kActivationFlops;
      return in;
    }
    if (l.kind == "embedding") {
      if (in.channels != 1) fail(name, "an embedding takes token ids (input_kind tokens) as its input");
      c.params += static_cast<double>(l.vocab) * l.units;
      const double rows = b * in.positions() * l.units;
      c.forward.push_back(vector(name, rows, 2, bpe, 0));              // gather: read the rows, write them
      c.backward.push_back(vector(name + "_grad", rows, 3, bpe, 1));  // scatter-add into the table
      return SampleShape{l.units, in.height, in.width};
    }
    if (l.kind == "lstm" || l.kind == "gru") {
      const double gates = l.kind == "lstm" ? 4 : 3;
      const double u = l.units, f = in.channels, t = in.positions();
      c.params += gates * u * (f + u) + l.biases * gates * u;
      add_gemm(c, name + "_input", b * t, gates * u, f);
      // The recurrence: step j needs step j−1's hidden state, so its GEMMs run one at a time.
      for (int j = 0; j < in.positions(); ++j) {
        push(c.forward, gemm(name + "_recurrent", b, gates * u, u, bpe, OpRole::plain));
        push(c.backward, gemm(name + "_recurrent_dh", b, u, gates * u, bpe, OpRole::input_grad));
        c.matmul_flops += 2 * gates * u * u;
        c.forward_flops += 2 * gates * u * u;
      }
      push(c.backward, gemm(name + "_recurrent_dw", u, gates * u, b * t, bpe, OpRole::weight_grad));
      add_vector(c, name + "_gates", b * t * gates * u, 3, 5, kGateFlops);
      return SampleShape{l.units, in.height, in.width};
    }
    if (l.kind == "attention") {
      const double d = in.channels, t = in.positions();
      if (in.channels % l.heads != 0) fail(name, "heads must divide the width " + std::to_string(in.channels));
      const double dh = d / l.heads;
      c.params += 4 * d * d + (l.bias ? 4 * d : 0);
      add_gemm(c, name + "_qkv", b * t, 3 * d, d);
      Op core;
      core.name = name + "_core";
      core.m = t;
      core.n = t;
      core.k = 2 * dh;
      core.batch = b * l.heads;
      core.flops = 4 * b * t * t * d;
      core.bytes = 4 * b * t * d * bpe;  // Q, K, V read, output written
      core.fused_attention = true;
      core.head_dim = dh;
      core.role = OpRole::attention_core;
      c.forward.push_back(core);
      Op grad = core;
      grad.name = name + "_core_grad";
      grad.k = 5 * dh;
      grad.flops = 2.5 * core.flops;
      grad.bytes = 8 * b * t * d * bpe;
      grad.role = OpRole::attention_core_grad;
      c.backward.push_back(grad);
      c.matmul_flops += core.flops / b;
      c.forward_flops += core.flops / b;
      add_gemm(c, name + "_out", b * t, d, d);
      return in;
    }
    if (l.kind == "bottleneck") {
      // ResNet v1.5 (torchvision): the stride sits on the 3×3 convolution.
      const int stride = first_of_repeat ? l.stride : 1;
      SampleShape s = conv(c, name + "_conv1", in, l.width, 1, 1, 0, false);
      batch_norm(c, name + "_bn1", s);
      relu(c, name + "_relu1", s);
      s = conv(c, name + "_conv2", s, l.width, 3, stride, 1, false);
      batch_norm(c, name + "_bn2", s);
      relu(c, name + "_relu2", s);
      s = conv(c, name + "_conv3", s, l.units, 1, 1, 0, false);
      batch_norm(c, name + "_bn3", s);
      if (first_of_repeat && l.downsample) {
        const SampleShape d = conv(c, name + "_downsample", in, l.units, 1, stride, 0, false);
        batch_norm(c, name + "_downsample_bn", d);
      } else if (in.channels != l.units || stride != 1) {
        fail(name, "the residual needs downsample: true (input " + std::to_string(in.channels) + " channels, output " +
                       std::to_string(l.units) + ")");
      }
      add_vector(c, name + "_add", b * s.elements(), 3, 3, kActivationFlops);
      relu(c, name + "_relu3", s);
      return s;
    }
    fail(name, "unknown kind \"" + l.kind + "\"");
  }
};

}  // namespace

double LayerModelCost::params() const {
  double p = 0;
  for (const auto& l : layers) p += l.params;
  return p;
}

double LayerModelCost::matmul_flops_per_sample() const {
  double f = 0;
  for (const auto& l : layers) f += l.matmul_flops;
  return f;
}

LayerModelCost layer_model_cost(const config::LayerModelSpec& model, int batch, const std::string& precision,
                                const config::DeviceSpec* device) {
  if (batch < 1) throw std::invalid_argument("layer_model_cost: batch must be >= 1");
  Builder b;
  b.device = device;
  b.batch = batch;
  b.bpe = bytes_per_element(precision);
  b.out.batch = batch;
  SampleShape shape;
  if (model.input_kind == "image") {
    if (model.input.size() != 3) throw std::invalid_argument("layer_model_cost: an image input is [c, h, w]");
    shape = SampleShape{model.input[0], model.input[1], model.input[2]};
  } else {
    if (model.input.size() != 1) throw std::invalid_argument("layer_model_cost: input must be [n]");
    shape = model.input_kind == "tokens" ? SampleShape{1, model.input[0], 1} : SampleShape{model.input[0], 1, 1};
  }
  int index = 0;
  for (std::size_t entry = 0; entry < model.layers.size(); ++entry) {
    const config::LayerSpec& l = model.layers[entry];
    try {
      for (int r = 0; r < l.repeat; ++r, ++index) {
        LayerCost c;
        c.kind = l.kind;
        c.name = (l.name.empty() ? l.kind + std::to_string(index) : l.name) + (l.repeat > 1 ? "." + std::to_string(r) : "");
        if (l.kind == "embedding" && index != 0) b.fail(c.name, "an embedding must be the first layer");
        shape = b.layer(l, c.name, shape, c, r == 0);
        c.out = shape;
        b.out.layers.push_back(std::move(c));
      }
    } catch (const std::invalid_argument& e) {
      // A shape the card cannot have (a kernel larger than its input, heads that do not divide
      // the width) is a mistake in the card: bad input naming the entry, not an internal error.
      throw InputError(SourceLoc{model.file, 0, 0}, "model.layers[" + std::to_string(entry) + "]", e.what());
    }
  }
  return std::move(b.out);
}

MemoryBreakdown layer_model_memory(const LayerModelCost& cost, const config::TrainingSpec& training, int zero, int dp) {
  MemoryBreakdown m = model_state_memory(cost.params(), training, zero, dp);
  const double bpe = bytes_per_element(training.precision);
  for (const auto& l : cost.layers) m.activations += static_cast<double>(cost.batch) * l.out.elements() * bpe;
  return m;
}

Time layer_model_step_compute(const LayerModelCost& cost, const config::DeviceSpec& device,
                              const std::string& precision) {
  Time total;
  for (const auto& l : cost.layers) {
    for (const auto& op : l.forward) total += op_time(op, device, precision);
    for (const auto& op : l.backward) total += op_time(op, device, precision);
  }
  return total;
}

}  // namespace ironlaw::workload
