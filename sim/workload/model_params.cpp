#include <stdexcept>
#include <string>

#include "workload/model_cost.hpp"
#include "workload/model_shape.hpp"

namespace ironlaw::workload {

double ParamCount::matmul_active() const {
  // Linear layers a token passes through; the LM head multiplies even when it shares its
  // weights with the embedding lookup.
  return attention + mlp_active + lm_head_matmul;
}

namespace {

/// Weights (and biases) of one layer's attention block.
double attention_per_layer(const Shape& sh, bool bias) {
  const double h = sh.hidden;
  double attn = 0;
  if (sh.mla) {
    // DeepSeek-V3 report §2.1.1, eqs. 1–10: the query is compressed to q_lora_rank (W^DQ) and
    // expanded to heads × (nope + rope) (W^UQ, W^QR) — or projected from h directly when
    // q_lora_rank is 0 (DeepSeek-V2-Lite); keys and values share one compressed latent of
    // kv_lora_rank (W^DKV) plus one decoupled RoPE key of qk_rope_head_dim shared by all heads
    // (W^KR), expanded to heads × (nope + v) (W^UK, W^UV); the output projection maps heads × v
    // back to h (W^O).
    const double q_out = sh.heads * sh.head_dim;
    attn += sh.q_lora_rank > 0 ? h * sh.q_lora_rank + sh.q_lora_rank * q_out : h * q_out;
    attn += h * (sh.kv_lora_rank + sh.qk_rope_dim) + sh.kv_lora_rank * sh.heads * (sh.qk_nope_dim + sh.v_head_dim);
    attn += sh.heads * sh.v_head_dim * h;
  } else {
    // Q: h → a·d and O: a·d → h; K and V: h → g·d.
    const double q_width = sh.heads * sh.head_dim;
    attn = 2.0 * h * q_width + 2.0 * h * sh.kv_width;
    if (bias) attn += q_width + h + 2.0 * sh.kv_width;
  }
  // Transformer-XL relative attention projects the relative position encodings with an
  // h × h matrix per layer (Dai et al. 2019, eq. for A^rel: W_{k,R}).
  if (sh.relative_positions) attn += h * h;
  return attn;
}

/// Weights (and biases) of one feed-forward block of width `f`.
double ffn_params(const Shape& sh, double f, bool bias) {
  double w = sh.swiglu ? 3.0 * sh.hidden * f : 2.0 * sh.hidden * f;
  if (bias) w += sh.swiglu ? 2.0 * f + sh.hidden : f + sh.hidden;
  return w;
}

}  // namespace

double ParamCount::active() const { return total() - (mlp - mlp_active); }

ParamCount count_params(const config::ModelSpec& model) {
  const Shape sh = shape_of(model);
  const double h = sh.hidden;
  const double L = sh.layers;
  ParamCount p;

  p.embedding = sh.vocab * h;
  p.position = sh.learned_positions ? static_cast<double>(model.max_position) * h : 0.0;
  p.attention = L * attention_per_layer(sh, model.bias);

  const double dense = ffn_params(sh, sh.ffn, model.bias);
  const double expert = ffn_params(sh, sh.moe_ffn, model.bias);
  double router = 0;
  if (sh.experts > 1) router = h * sh.experts + (model.bias ? sh.experts : 0.0);
  p.routed_experts = sh.moe_layers * expert * sh.experts;
  p.mlp = sh.dense_layers * dense + sh.moe_layers * (expert * (sh.experts + sh.shared_experts) + router);
  p.mlp_active =
      sh.dense_layers * dense + sh.moe_layers * (expert * (sh.experts_per_token + sh.shared_experts) + router);

  const double per_norm_element = sh.rmsnorm ? 1.0 : 2.0;  // gain (+ bias for layernorm)
  p.norm = (2.0 * L + 1.0) * h * per_norm_element;
  // MLA normalises its compressed query and key/value latents (DeepSeek-V3 config.json:
  // q_a_layernorm, kv_a_layernorm).
  if (sh.mla) p.norm += L * (sh.q_lora_rank + sh.kv_lora_rank) * per_norm_element;
  // Query/key norms: a gain per query and per key feature (full), or per head dimension, one
  // for the queries and one for the keys, shared by the heads (head).
  if (sh.qk_norm) {
    p.norm += L * per_norm_element * (sh.qk_norm_per_head ? 2.0 * sh.head_dim : sh.heads * sh.head_dim + sh.kv_width);
  }

  p.lm_head_matmul = sh.vocab * h;
  p.lm_head = model.tied_embeddings ? 0.0 : p.lm_head_matmul;
  return p;
}

FlopsPerToken flops_per_token(const config::ModelSpec& model, int sequence_length) {
  if (sequence_length <= 0) throw std::invalid_argument("sequence_length must be positive");
  const Shape sh = shape_of(model);
  const ParamCount p = count_params(model);
  FlopsPerToken f;
  f.six_n = 6.0 * p.total();
  f.six_n_active = 6.0 * p.active();
  // PaLM appendix B: the non-causal QKᵀ (2·Q·T per head) and PV (2·Q·T) matmuls, × 3 for
  // forward + backward = 12·L·H·Q·T; with a value head dimension of its own (MLA) the two
  // terms differ: 6·L·H·T·(Q_qk + Q_v).
  f.attention_palm = 6.0 * sh.layers * sh.heads * (sh.head_dim + sh.v_head_dim) * sequence_length;
  f.palm = 6.0 * p.matmul_active() + f.attention_palm;
  return f;
}

}  // namespace ironlaw::workload
