#include <cmath>
#include <stdexcept>
#include <string>

#include "workload/model_cost.hpp"
#include "workload/model_shape.hpp"

namespace ironlaw::workload {

MemoryBreakdown model_state_memory(double params_local, const config::TrainingSpec& training, int zero, int dp) {
  if (params_local < 0) throw std::invalid_argument("params_local must be >= 0");
  if (zero < 0 || zero > 3) throw std::invalid_argument("zero stage must be 0, 1, 2 or 3");
  if (dp < 1) throw std::invalid_argument("dp must be >= 1");
  const double pb = parameter_bytes(training.precision);
  const double master = pb < 4.0 ? 4.0 : 0.0;  // fp32 master copy under mixed precision
  double state = 0;
  if (training.optimizer == "adam") {
    state = 8;  // m and v, fp32
  } else if (training.optimizer == "momentum" || training.optimizer == "rmsprop") {
    state = 4;  // one fp32 buffer (velocity / mean square)
  } else if (training.optimizer != "sgd") {
    throw std::invalid_argument("optimizer must be sgd, momentum, rmsprop or adam, got \"" + training.optimizer +
                                "\"");
  }
  const double ranks = dp;
  MemoryBreakdown m;
  m.weights = params_local * pb / (zero >= 3 ? ranks : 1.0);
  m.gradients = params_local * pb / (zero >= 2 ? ranks : 1.0);
  m.optimizer = params_local * (master + state) / (zero >= 1 ? ranks : 1.0);
  return m;
}

double activation_bytes_per_layer(const config::ModelSpec& model, const config::TrainingSpec& training,
                                  const config::ParallelSpec& parallel, int sequences) {
  if (sequences <= 0) throw std::invalid_argument("sequences per microbatch must be positive");
  if (parallel.tp < 1 || parallel.cp < 1) throw std::invalid_argument("tp and cp must be >= 1");
  check_recompute_policy(training.activation_checkpointing);
  const Shape sh = shape_of(model);
  const double t = parallel.tp;
  const double s_kv = training.sequence_length;
  const double s = s_kv / parallel.cp;  // local query tokens under context parallelism
  const double b = sequences;
  const double h = sh.hidden;
  const double sbh = s * b * h;
  const double sp = parallel.sequence_parallel ? t : 1.0;
  // Korthikanti et al. 2022 §4.1: per layer 34·sbh (attention block 11 + MLP 19 + 2 layernorms
  // 4) + 5·a·s²·b (QKᵀ 2, softmax 2, dropout mask 1); 10·sbh of it (layernorm inputs and
  // dropout masks/outputs) is replicated across TP ranks unless sequence parallelism splits it.
  const double both = 10.0 / sp + 24.0 / t;
  const double scores = training.flash_attention ? 0.0 : 5.0 * sh.heads * s * s_kv * b / t;
  double bytes = 0;
  const std::string& policy = training.activation_checkpointing;
  if (policy == "none") {
    bytes = sbh * both + scores;
  } else if (policy == "selective") {
    bytes = sbh * both;
  } else {
    bytes = 2.0 * sbh / sp;
  }
  // The paper counts 16-bit activations; fp32 training stores twice as many bytes.
  return bytes * (parameter_bytes(training.precision) / 2.0);
}

MemoryBreakdown memory_per_gpu(const config::ModelSpec& model, const config::TrainingSpec& training,
                               const config::ParallelSpec& parallel, int dp, int in_flight_microbatches) {
  if (parallel.tp < 1 || parallel.pp < 1 || parallel.ep < 1) throw std::invalid_argument("tp, pp and ep must be >= 1");
  if (in_flight_microbatches < 0) throw std::invalid_argument("in_flight_microbatches must be >= 0");
  if (parallel.microbatch_size < 1) throw std::invalid_argument("microbatch_size must be >= 1");
  const ParamCount p = count_params(model);
  const double params_local =
      (p.total() - p.routed_experts + p.routed_experts / parallel.ep) / (parallel.tp * parallel.pp);
  MemoryBreakdown m = model_state_memory(params_local, training, parallel.zero, dp);

  const double layers_local = std::ceil(static_cast<double>(model.layers) / parallel.pp);
  const double per_layer = activation_bytes_per_layer(model, training, parallel, parallel.microbatch_size);
  const double s = static_cast<double>(training.sequence_length) / parallel.cp;
  const double logits = s * parallel.microbatch_size * static_cast<double>(model.vocab) / parallel.tp * 4.0;
  m.activations = per_layer * layers_local * in_flight_microbatches + logits;
  return m;
}

}  // namespace ironlaw::workload
