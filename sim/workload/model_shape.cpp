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
  const bool mla = model.kv_lora_rank > 0;
  if (model.head_dim < 0) bad(model, "head_dim must be >= 0");
  if (!mla && model.head_dim == 0 && model.hidden % model.heads != 0) bad(model, "heads must divide hidden");
  if (model.kv_heads < 0 || model.kv_heads > model.heads) bad(model, "kv_heads must be in [0, heads]");
  if (model.experts < 1) bad(model, "experts must be >= 1");
  if (model.experts_per_token < 1 || model.experts_per_token > model.experts) {
    bad(model, "experts_per_token must be in [1, experts]");
  }
  if (model.shared_experts < 0 || model.moe_ffn_hidden < 0 || model.dense_layers < 0) {
    bad(model, "shared_experts, moe_ffn_hidden and dense_layers must be >= 0");
  }
  if (model.experts == 1 && (model.shared_experts > 0 || model.moe_ffn_hidden > 0 || model.dense_layers > 0)) {
    bad(model, "shared_experts, moe_ffn_hidden and dense_layers need experts > 1");
  }
  if (model.dense_layers > model.layers) bad(model, "dense_layers must be at most layers");
  if (model.q_lora_rank < 0 || model.kv_lora_rank < 0 || model.qk_nope_head_dim < 0 || model.qk_rope_head_dim < 0 ||
      model.v_head_dim < 0) {
    bad(model, "MLA ranks and head dimensions must be >= 0");
  }
  if (!mla && (model.q_lora_rank > 0 || model.qk_nope_head_dim > 0 || model.qk_rope_head_dim > 0 ||
               model.v_head_dim > 0)) {
    bad(model, "q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim need kv_lora_rank > 0");
  }
  if (mla) {
    if (model.qk_nope_head_dim + model.qk_rope_head_dim == 0 || model.v_head_dim == 0) {
      bad(model, "multi-head latent attention needs qk_nope_head_dim + qk_rope_head_dim > 0 and v_head_dim > 0");
    }
    if (model.head_dim > 0 || (model.kv_heads != 0 && model.kv_heads != model.heads) || model.bias) {
      bad(model, "multi-head latent attention takes no head_dim, kv_heads other than heads, or bias");
    }
  }

  Shape s;
  s.layers = model.layers;
  s.hidden = model.hidden;
  s.ffn = model.ffn_hidden;
  s.heads = model.heads;
  s.kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  s.mla = mla;
  if (mla) {
    s.q_lora_rank = model.q_lora_rank;
    s.kv_lora_rank = model.kv_lora_rank;
    s.qk_nope_dim = model.qk_nope_head_dim;
    s.qk_rope_dim = model.qk_rope_head_dim;
    s.head_dim = s.qk_nope_dim + s.qk_rope_dim;
    s.v_head_dim = model.v_head_dim;
  } else {
    s.head_dim = model.head_dim > 0 ? model.head_dim : static_cast<double>(model.hidden / model.heads);
    s.v_head_dim = s.head_dim;
  }
  s.kv_width = s.kv_heads * s.head_dim;
  s.vocab = model.vocab;
  s.experts = model.experts;
  s.experts_per_token = model.experts_per_token;
  s.shared_experts = model.shared_experts;
  s.moe_ffn = model.moe_ffn_hidden > 0 ? model.moe_ffn_hidden : model.ffn_hidden;
  s.dense_layers = model.experts > 1 ? model.dense_layers : model.layers;
  s.moe_layers = s.layers - s.dense_layers;

  if (model.activation == "swiglu") {
    s.swiglu = true;
  } else if (model.activation == "squared_relu") {
    s.squared_relu = true;
  } else if (model.activation != "gelu") {
    bad(model, "activation must be gelu, swiglu or squared_relu, got \"" + model.activation + "\"");
  }
  if (model.norm == "rmsnorm") {
    s.rmsnorm = true;
  } else if (model.norm != "layernorm") {
    bad(model, "norm must be layernorm or rmsnorm, got \"" + model.norm + "\"");
  }
  if (model.qk_norm == "full" || model.qk_norm == "head") {
    s.qk_norm = true;
    s.qk_norm_per_head = model.qk_norm == "head";
  } else if (model.qk_norm != "none") {
    bad(model, "qk_norm must be none, full or head, got \"" + model.qk_norm + "\"");
  }
  if (model.position_embedding == "rope") {
    s.rope = true;
  } else if (model.position_embedding == "learned") {
    s.learned_positions = true;
  } else if (model.position_embedding == "relative") {
    s.relative_positions = true;
  } else if (model.position_embedding == "alibi") {
    s.alibi = true;
  } else {
    bad(model, "position_embedding must be rope, learned, relative or alibi, got \"" +
                   model.position_embedding + "\"");
  }
  return s;
}

void check_recompute_policy(const std::string& policy) {
  if (policy != "none" && policy != "selective" && policy != "full" && policy != "op") {
    throw std::invalid_argument("activation_checkpointing must be none, selective, full or op, got \"" +
                                policy + "\"");
  }
}

}  // namespace ironlaw::workload
