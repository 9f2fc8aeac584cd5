#include "workload/step_memory.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "workload/model_cost.hpp"

namespace ironlaw::workload {

namespace {

constexpr int kCompute = 0;        ///< the default stream: compute, activations, model state
constexpr int kAllGather = 1;      ///< FSDP2's all-gather stream
constexpr int kReduceScatter = 2;  ///< FSDP2's reduce-scatter stream

/// A CachingAllocator that takes sizes in (fractional) bytes and ignores empty tensors.
class Replay {
 public:
  explicit Replay(const AllocatorRules& rules) : a_(rules) {}
  int alloc(double bytes, int stream) {
    if (!(bytes >= 1)) return -1;
    return a_.allocate(static_cast<std::uint64_t>(std::ceil(bytes)), stream);
  }
  void release(int& handle) {
    if (handle >= 0) a_.free(handle);
    handle = -1;
  }
  const CachingAllocator& allocator() const { return a_; }

 private:
  CachingAllocator a_;
};

}  // namespace

StepMemoryPeaks replay_step_memory(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp, const std::vector<MemoryPass>& passes,
                                   int chunks, const AllocatorRules& rules) {
  if (model.layer_list) throw std::invalid_argument("replay_step_memory: transformer models only");
  if (passes.empty()) throw std::invalid_argument("replay_step_memory: no passes");
  if (chunks < 1 || dp < 1 || parallel.tp < 1 || parallel.pp < 1 || parallel.ep < 1) {
    throw std::invalid_argument("replay_step_memory: chunks, dp, tp, pp and ep must be >= 1");
  }
  const ParamCount p = count_params(model);
  const double params_local =
      (p.total() - p.routed_experts + p.routed_experts / parallel.ep) / (parallel.tp * parallel.pp);
  const int layers_local = static_cast<int>(std::ceil(static_cast<double>(model.layers) / parallel.pp));
  const int per_chunk = (layers_local + chunks - 1) / chunks;
  const double layer_params =
      (p.attention + p.mlp - p.routed_experts + p.routed_experts / parallel.ep) / model.layers / parallel.tp;
  const double other = std::max(0.0, params_local - layers_local * layer_params);
  const MemoryBreakdown state = model_state_memory(params_local, training, parallel.zero, dp);

  const double activations = activation_bytes_per_layer(model, training, parallel, parallel.microbatch_size);
  double recomputed = 0;
  if (training.activation_checkpointing != "none") {
    config::TrainingSpec none = training;
    none.activation_checkpointing = "none";
    recomputed = activation_bytes_per_layer(model, none, parallel, parallel.microbatch_size);
  }
  const double s = static_cast<double>(training.sequence_length) / parallel.cp;
  const double loss = s * parallel.microbatch_size * static_cast<double>(model.vocab) / parallel.tp *
                      loss_bytes_per_logit(training);
  const double pb = parameter_bytes(training.precision);
  const double rb = reduce_bytes(training);
  const double gathered = layer_params * gathered_linear_bytes(training);
  const bool zero3 = parallel.zero >= 3 && dp > 1;
  const bool reshard = parallel.pp == 1;  // torchtitan: reshard_after_forward = not pp_enabled

  // The last backward microbatch of each chunk: the reduce-scatter follows it (pp > 1).
  std::vector<int> last_backward(static_cast<std::size_t>(chunks), -1);
  for (const MemoryPass& pass : passes) {
    if (pass.chunk < 0 || pass.chunk >= chunks) throw std::invalid_argument("replay_step_memory: chunk out of range");
    if (!pass.forward) last_backward[static_cast<std::size_t>(pass.chunk)] = pass.microbatch;
  }

  Replay r(rules);
  // Model state, held for good: per layer, then the rest (embedding, norms, LM head).
  const int optimizer_tensors =
      params_local > 0
          ? std::max(1, static_cast<int>(std::lround(state.optimizer * (parallel.zero >= 1 ? dp : 1) / params_local / 4)))
          : 1;
  auto hold_state = [&](double share) {
    if (!(params_local > 0)) return;
    const double f = share / params_local;
    r.alloc(state.weights * f, kCompute);
    r.alloc(state.gradients * f, kCompute);
    for (int k = 0; k < optimizer_tensors; ++k) r.alloc(state.optimizer * f / optimizer_tensors, kCompute);
  };
  for (int l = 0; l < layers_local; ++l) hold_state(layer_params);
  hold_state(other);

  for (int step = 0; step < 2; ++step) {
    std::vector<int> unsharded(static_cast<std::size_t>(layers_local), -1);
    std::vector<int> accumulated(static_cast<std::size_t>(layers_local), -1);
    std::map<std::pair<int, int>, int> saved;  // (microbatch, layer) → activations
    int root = -1, root_grad = -1;
    if (zero3 && reshard) {
      const double root_params = (p.embedding + p.lm_head) / parallel.tp;
      root = r.alloc(root_params * pb, kCompute);
      root_grad = r.alloc(root_params * pb, kCompute);
    }
    auto gather = [&](int l) {
      int& u = unsharded[static_cast<std::size_t>(l)];
      if (!zero3 || u >= 0) return;
      int output = r.alloc(gathered, kAllGather);
      u = r.alloc(gathered, kCompute);
      r.release(output);
    };
    for (const MemoryPass& pass : passes) {
      const int first = pass.chunk * per_chunk;
      const int end = std::min(layers_local, first + per_chunk);
      if (pass.forward) {
        for (int l = first; l < end; ++l) {
          gather(l);
          if (reshard && l + 1 < end) gather(l + 1);
          saved[{pass.microbatch, l}] = r.alloc(activations, kCompute);
          if (zero3 && reshard) r.release(unsharded[static_cast<std::size_t>(l)]);
        }
        continue;
      }
      int loss_buffers = pass.chunk == chunks - 1 ? r.alloc(loss, kCompute) : -1;
      const bool last = pass.microbatch == last_backward[static_cast<std::size_t>(pass.chunk)];
      for (int l = end - 1; l >= first; --l) {
        gather(l);
        if (reshard && l - 1 >= first) gather(l - 1);
        int recompute = r.alloc(recomputed, kCompute);
        if (zero3) {
          int fresh = r.alloc(layer_params * pb, kCompute);
          int& acc = accumulated[static_cast<std::size_t>(l)];
          if (!reshard && acc < 0) acc = r.alloc(layer_params * rb, kCompute);
          if (reshard || last) {
            int input = r.alloc(layer_params * rb, kReduceScatter);
            r.release(fresh);
            r.release(acc);
            r.release(input);
            r.release(unsharded[static_cast<std::size_t>(l)]);
          }
          r.release(fresh);
        }
        r.release(recompute);
        const auto it = saved.find({pass.microbatch, l});
        if (it != saved.end()) {
          r.release(it->second);
          saved.erase(it);
        }
        r.release(loss_buffers);
      }
    }
    for (int& u : unsharded) r.release(u);
    for (int& g : accumulated) r.release(g);
    for (auto& [key, h] : saved) r.release(h);
    r.release(root);
    r.release(root_grad);
  }
  StepMemoryPeaks out;
  out.allocated = static_cast<double>(r.allocator().peak_allocated());
  out.reserved = static_cast<double>(r.allocator().peak_reserved());
  return out;
}

}  // namespace ironlaw::workload
