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

ParamCount count_params(const config::ModelSpec& model) {
  const Shape sh = shape_of(model);
  const double h = sh.hidden;
  const double L = sh.layers;
  ParamCount p;

  p.embedding = sh.vocab * h;
  p.position = sh.learned_positions ? static_cast<double>(model.max_position) * h : 0.0;

  // Q and O: h → a·d = h; K and V: h → g·d.
  double attn = 2.0 * h * h + 2.0 * h * sh.kv_width;
  if (model.bias) attn += 2.0 * h + 2.0 * sh.kv_width;
  // Transformer-XL relative attention projects the relative position encodings with an
  // h × h matrix per layer (Dai et al. 2019, eq. for A^rel: W_{k,R}).
  if (sh.relative_positions) attn += h * h;
  p.attention = L * attn;

  const double f = sh.ffn;
  double expert = sh.swiglu ? 3.0 * h * f : 2.0 * h * f;
  if (model.bias) expert += sh.swiglu ? 2.0 * f + h : f + h;
  const double router = sh.experts > 1 ? h * sh.experts : 0.0;
  p.mlp = L * (expert * sh.experts + router);
  p.mlp_active = L * (expert * sh.experts_per_token + router);

  const double per_norm = sh.rmsnorm ? h : 2.0 * h;
  p.norm = (2.0 * L + 1.0) * per_norm;

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
  // PaLM appendix B: 12·L·H·Q·T, the non-causal QKᵀ and PV matmuls, forward + backward.
  f.attention_palm = 12.0 * sh.layers * sh.heads * sh.head_dim * sequence_length;
  f.palm = 6.0 * p.matmul_active() + f.attention_palm;
  return f;
}

}  // namespace ironlaw::workload
