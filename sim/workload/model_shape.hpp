#pragma once
/// \file Internal to the workload layer: a ModelSpec / precision read once into numbers, with
/// its enum strings checked (std::invalid_argument names the bad field).
#include <string>

#include "config/spec.hpp"

namespace ironlaw::workload {

struct Shape {
  double layers = 0;
  double hidden = 0;
  double ffn = 0;            ///< FFN width of a dense layer
  double heads = 0;
  double kv_heads = 0;       ///< kv_heads, or heads when the spec leaves it 0 (MLA: heads)
  double head_dim = 0;       ///< query/key head dimension: head_dim, hidden / heads, or MLA nope + rope
  double v_head_dim = 0;     ///< value (and attention output) head dimension: head_dim unless MLA
  double kv_width = 0;       ///< kv_heads · head_dim (standard attention)
  double vocab = 0;
  // Mixture of experts (experts == 1: every layer dense).
  double experts = 1;        ///< routed experts per MoE layer
  double experts_per_token = 1;
  double shared_experts = 0;
  double moe_ffn = 0;        ///< FFN width of one routed or shared expert
  double dense_layers = 0;   ///< leading dense layers of a MoE model (all layers when experts == 1)
  double moe_layers = 0;     ///< layers − dense_layers
  // Multi-head latent attention.
  bool mla = false;
  double q_lora_rank = 0;
  double kv_lora_rank = 0;
  double qk_nope_dim = 0;
  double qk_rope_dim = 0;
  bool swiglu = false;
  bool squared_relu = false;  ///< relu(x)² (So et al. 2021, Primer; Nemotron), a dense non-gated MLP
  bool rmsnorm = false;
  bool qk_norm = false;        ///< queries and keys normalised after their projections (either form)
  bool qk_norm_per_head = false;  ///< ... per head over head_dim (gains shared by the heads)
  bool learned_positions = false;
  bool relative_positions = false;
  bool rope = false;
  bool alibi = false;  ///< ALiBi: a bias on the attention scores (Press et al. 2022), no table

  /// Whether layer `layer` (0-based) is a mixture-of-experts layer.
  bool is_moe_layer(int layer) const { return experts > 1 && layer >= dense_layers; }
};

/// What one rank of a MoE block works on: folded (parallel.expert_tp 1 with tp > 1) its own t/tp
/// sequence-parallel tokens with whole experts, otherwise every token of the microbatch with each
/// expert split over the TP group as the dense MLP is.
struct ExpertShare {
  double tokens = 1;  ///< the rank's routed tokens per token of the microbatch
  double width = 0;   ///< an expert's FFN width on the rank
};
inline ExpertShare expert_share(const Shape& sh, double tp, bool folded) {
  return folded ? ExpertShare{1.0 / tp, sh.moe_ffn} : ExpertShare{1.0, sh.moe_ffn / tp};
}

/// Reads and checks `model` (positive sizes, heads dividing hidden unless head_dim or MLA gives
/// the head dimension, consistent MoE and MLA keys, known enum strings).
Shape shape_of(const config::ModelSpec& model);

/// Checks the activation-checkpointing policy: "none", "selective" or "full".
void check_recompute_policy(const std::string& policy);

}  // namespace ironlaw::workload
