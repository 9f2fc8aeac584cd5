#pragma once
/// \file Internal to the workload layer: a ModelSpec / precision read once into numbers, with
/// its enum strings checked (std::invalid_argument names the bad field).
#include <string>

#include "config/spec.hpp"

namespace ironlaw::workload {

struct Shape {
  double layers = 0;
  double hidden = 0;
  double ffn = 0;
  double heads = 0;
  double kv_heads = 0;       ///< kv_heads, or heads when the spec leaves it 0
  double head_dim = 0;       ///< hidden / heads
  double kv_width = 0;       ///< kv_heads · head_dim
  double vocab = 0;
  double experts = 1;
  double experts_per_token = 1;
  bool swiglu = false;
  bool rmsnorm = false;
  bool learned_positions = false;
  bool relative_positions = false;
};

/// Reads and checks `model` (positive sizes, heads dividing hidden, known enum strings).
Shape shape_of(const config::ModelSpec& model);

/// Checks the activation-checkpointing policy: "none", "selective" or "full".
void check_recompute_policy(const std::string& policy);

}  // namespace ironlaw::workload
