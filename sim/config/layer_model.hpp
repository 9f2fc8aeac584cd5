#pragma once
/// \file Model cards that are not transformers: a list of layers (dense, conv2d, pooling,
/// batch norm, embedding, LSTM/GRU, attention, ResNet bottleneck blocks), each with its shape,
/// from which sim/workload/layer_list derives parameters, FLOPs and bytes. A card says
/// `architecture: layer_list`; `input` is the shape of one sample.
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::config {

/// One entry of a layer list. Which fields apply depends on `kind`:
/// - dense: units (output features), bias. Acts on the feature axis of every position.
/// - conv2d: filters, kernel, stride, padding, bias (square kernels).
/// - max_pool / avg_pool: kernel, stride, padding. global_avg_pool: none.
/// - batch_norm, relu, flatten, dropout: none.
/// - embedding: vocab, units (the embedding width). Input: token ids.
/// - lstm / gru: units (hidden size), biases (bias vectors per gate: 1 as in TensorFlow /
///   Keras / Zaremba et al., 2 as in PyTorch and cuDNN).
/// - attention: heads (units = model width, taken from the input); Q, K, V, O projections
///   with biases when `bias`.
/// - bottleneck: a ResNet-50 v1.5 bottleneck (1×1 width, 3×3 width with `stride`, 1×1 units,
///   batch norm after each, no conv biases, ReLU, residual add); `downsample` adds the 1×1
///   projection shortcut (stride `stride`) with its batch norm.
/// `repeat` repeats the entry (a bottleneck repeated n times downsamples in the first only).
struct LayerSpec {
  std::string kind;
  std::string name;      ///< optional label; default kind + index
  int units = 0;
  int filters = 0;
  int kernel = 1;
  int stride = 1;
  int padding = 0;
  int vocab = 0;
  int heads = 0;
  int width = 0;
  int biases = 1;
  bool bias = true;
  bool downsample = false;
  int repeat = 1;
};

struct LayerModelSpec {
  std::string name;
  std::string file;
  std::string source;
  /// image: [channels, height, width]; vector: [features]; tokens: [sequence_length].
  std::string input_kind = "vector";
  std::vector<int> input;
  std::vector<LayerSpec> layers;
  PublishedFacts published;
};

namespace detail {
class Section;
/// Reads a layer-list card from `s` (used for standalone cards and for `model:` in scenarios).
void parse_layer_card(Section s, LayerModelSpec& m);
}  // namespace detail

/// True when the YAML card at `path` says `architecture: layer_list`. Throws InputError when
/// the file cannot be read.
bool is_layer_model(const std::string& path);

/// Loads a layer-list card. Throws InputError listing every problem with file:line:col.
LayerModelSpec load_layer_model(const std::string& path);

}  // namespace ironlaw::config
