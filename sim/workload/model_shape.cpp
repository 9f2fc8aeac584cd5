#include "workload/model_shape.hpp"

#include <stdexcept>

namespace ironlaw::workload {

namespace {

[[noreturn]] void bad(const config::ModelSpec& model, const std::string& what) {
  throw std::invalid_argument("model " + model.name + ": " + what);
}

}  // namespace

Shape shape_of(const config::ModelSpec& model) {
  if (model.layers <= 0) bad(model, "layers must be positive");
  if (model.hidden <= 0) bad(model, "hidden must be positive");
  if (model.ffn_hidden <= 0) bad(model, "ffn_hidden must be positive");
  if (model.heads <= 0) bad(model, "heads must be positive");
  if (model.vocab <= 0) bad(model, "vocab must be positive");
  if (model.hidden % model.heads != 0) bad(model, "heads must divide hidden");
  if (model.kv_heads < 0 || model.kv_heads > model.heads) bad(model, "kv_heads must be in [0, heads]");
  if (model.experts < 1) bad(model, "experts must be >= 1");
  if (model.experts_per_token < 1 || model.experts_per_token > model.experts) {
    bad(model, "experts_per_token must be in [1, experts]");
  }

  Shape s;
  s.layers = model.layers;
  s.hidden = model.hidden;
  s.ffn = model.ffn_hidden;
  s.heads = model.heads;
  s.kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  s.head_dim = static_cast<double>(model.hidden / model.heads);
  s.kv_width = s.kv_heads * s.head_dim;
  s.vocab = model.vocab;
  s.experts = model.experts;
  s.experts_per_token = model.experts_per_token;

  if (model.activation == "swiglu") {
    s.swiglu = true;
  } else if (model.activation != "gelu") {
    bad(model, "activation must be gelu or swiglu, got \"" + model.activation + "\"");
  }
  if (model.norm == "rmsnorm") {
    s.rmsnorm = true;
  } else if (model.norm != "layernorm") {
    bad(model, "norm must be layernorm or rmsnorm, got \"" + model.norm + "\"");
  }
  if (model.position_embedding == "learned") {
    s.learned_positions = true;
  } else if (model.position_embedding == "relative") {
    s.relative_positions = true;
  } else if (model.position_embedding != "rope") {
    bad(model, "position_embedding must be rope, learned or relative, got \"" +
                   model.position_embedding + "\"");
  }
  return s;
}

void check_recompute_policy(const std::string& policy) {
  if (policy != "none" && policy != "selective" && policy != "full") {
    throw std::invalid_argument("activation_checkpointing must be none, selective or full, got \"" +
                                policy + "\"");
  }
}

}  // namespace ironlaw::workload
