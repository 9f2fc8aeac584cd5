#include "workload/step_memory.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
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
  /// Allocates `bytes` on `stream` for a tensor of `category` (the ledger's key).
  int alloc(double bytes, int stream, const char* category) {
    if (!(bytes >= 1)) return -1;
    const auto size = static_cast<std::uint64_t>(std::ceil(bytes));
    const int h = a_.allocate(size, stream);
    if (static_cast<std::size_t>(h) >= tags_.size()) tags_.resize(static_cast<std::size_t>(h) + 1);
    tags_[static_cast<std::size_t>(h)] = {category, static_cast<double>(size)};
    live_[category] += static_cast<double>(size);
    if (a_.allocated() > ledger_bytes_) {
      ledger_bytes_ = a_.allocated();
      ledger_ = live_;
    }
    return h;
  }
  void release(int& handle) {
    if (handle >= 0) {
      a_.free(handle);
      const auto& [category, size] = tags_[static_cast<std::size_t>(handle)];
      live_[category] -= size;
    }
    handle = -1;
  }
  const CachingAllocator& allocator() const { return a_; }
  /// Live bytes by category at the peak of the allocated bytes.
  std::vector<std::pair<std::string, double>> ledger() const {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [category, bytes] : ledger_)
      if (bytes > 0) out.emplace_back(category, bytes);
    return out;
  }

 private:
  CachingAllocator a_;
  std::vector<std::pair<std::string, double>> tags_;  // handle → (category, bytes)
  std::map<std::string, double> live_, ledger_;
  std::uint64_t ledger_bytes_ = 0;
};

}  // namespace

StepMemoryPeaks replay_step_memory(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp, const StageMemory& stage,
                                   const AllocatorRules& rules) {
  if (model.layer_list) throw std::invalid_argument("replay_step_memory: transformer models only");
  if (stage.passes.empty()) throw std::invalid_argument("replay_step_memory: no passes");
  const int chunks = static_cast<int>(stage.chunk_layers.size());
  if (chunks < 1 || dp < 1 || parallel.tp < 1 || parallel.pp < 1 || parallel.ep < 1 || stage.microbatches < 1) {
    throw std::invalid_argument("replay_step_memory: chunks, dp, tp, pp, ep and microbatches must be >= 1");
  }
  std::vector<int> first_layer(static_cast<std::size_t>(chunks), 0);
  int layers_local = 0;
  for (int c = 0; c < chunks; ++c) {
    // Only the model's first chunk (the embedding alone) or its last (the LM head alone) may hold
    // no layer (run::split_layers); not one that is both, the whole model.
    const bool end_chunk = (c == 0 && stage.first) != (c == chunks - 1 && stage.last);
    if (stage.chunk_layers[static_cast<std::size_t>(c)] < (end_chunk ? 0 : 1))
      throw std::invalid_argument("replay_step_memory: a chunk holds no layer");
    first_layer[static_cast<std::size_t>(c)] = layers_local;
    layers_local += stage.chunk_layers[static_cast<std::size_t>(c)];
  }
  const ParamCount p = count_params(model);
  // One layer's norms: a two-layer model counts the final norm once, as a one-layer model does.
  config::ModelSpec one = model;
  one.layers = 1;
  one.dense_layers = 0;
  config::ModelSpec two = one;
  two.layers = 2;
  const double layer_norms = count_params(two).norm - count_params(one).norm;
  const double final_norm = p.norm - model.layers * layer_norms;
  // Split over TP as memory_per_gpu splits them (norm gains included: ≤ 1e-5 of the weights).
  const double t = parallel.tp;
  const double layer_params =
      (p.attention + p.mlp - p.routed_experts + p.routed_experts / expert_split(parallel) + model.layers * layer_norms) /
      model.layers / t;
  const double head = p.lm_head > 0 || stage.first ? p.lm_head : p.lm_head_matmul;  // tied: a copy on the last stage
  const double first_params = stage.first ? (p.embedding + p.position) / t : 0.0;
  const double last_params = stage.last ? (head + final_norm) / t : 0.0;
  const double root_params = first_params + last_params;
  const double params_local = layers_local * layer_params + root_params;
  // The routed experts' share of them, sharded over the ranks that hold the same experts.
  const double expert_local = layers_local * p.routed_experts / expert_split(parallel) / model.layers / t;
  const MemoryBreakdown state = model_state_memory(params_local, expert_local, training, parallel, dp);

  const double activations = activation_bytes_per_layer(model, training, parallel, parallel.microbatch_size);
  const double recomputed = recomputed_activation_bytes(model, training, parallel, parallel.microbatch_size);
  const double backward_grads = backward_gradient_bytes(model, training, parallel, parallel.microbatch_size);
  const double bpe = bytes_per_element(training.precision);
  const double s = static_cast<double>(training.sequence_length);  // the rank's share under CP
  const double tokens = s * parallel.microbatch_size;
  const double logits = tokens * static_cast<double>(model.vocab) / t;
  const double loss = logits * loss_bytes_per_logit(training, parallel);
  const double head_input = head_input_bytes(model, training, parallel, parallel.microbatch_size);
  // The tensor one stage sends the next: the layer output, split over TP under sequence parallelism.
  const double boundary = tokens * bpe * model.hidden / (parallel.sequence_parallel ? t : 1.0);
  const double pb = parameter_bytes(training.precision);
  const double rb = reduce_bytes(training);
  const double layer_linear = layer_params - layer_norms / t;  // a layer's linear weights on the rank
  const double gathered = layer_linear * gathered_linear_bytes(training) + layer_norms / t * pb;
  // Autocast (training.autocast): a layer's matmul weights cast to the training precision by its
  // forward, cached until the forward's autocast region ends and kept by autograd for the GEMMs'
  // backward: with the layer's saved activations, or, under full recompute (whose forward saves
  // nothing), until the forward ends and again from the layer's recompute to its backward. The
  // LM head's weight likewise, until the head's backward.
  const double cast_copies = training.autocast ? layer_linear * bpe : 0.0;
  const double head_cast_copy = training.autocast ? static_cast<double>(model.vocab) * model.hidden / t * bpe : 0.0;
  const bool copies_until_forward_end = training.activation_checkpointing == "full";
  const bool zero3 = parallel.zero >= 3 && dp > 1;
  // PyTorch's FSDP2 (the frameworks that run torch's own modules); otherwise a ZeRO-3 that
  // keeps a sharded low-precision copy and its gradient shard for good.
  const bool fsdp2 = zero3 && pytorch_model_code(training);
  // FSDP1 (parallel.fsdp_version 1; replayed as FSDP2 but for this): the all-gather writes the
  // flat parameter itself (no separate output buffer, no copy-out), and the flat gradient that
  // autograd assembles is the reduce-scatter's input (freed once it is issued).
  const bool fsdp1 = fsdp2 && parallel.fsdp1();
  // FSDP1 and Megatron-FSDP gather into the buffer the parameters view: no separate output.
  const bool gather_in_place = zero3 && (fsdp1 || !pytorch_model_code(training));
  const bool reshard = parallel.pp == 1;  // torchtitan: reshard_after_forward = not pp_enabled
  // pp 1 under SHARD_GRAD_OP (parallel.reshard_after_forward false): each unit stays gathered
  // from its forward to its post-backward, where it is resharded and reduce-scattered as under
  // FULL_SHARD (the next microbatch's forward gathers it again).
  const bool free_after_forward = reshard && parallel.reshard_after_forward;
  auto first_stage = [&](int c) { return c == 0 && stage.first; };
  auto last_stage = [&](int c) { return c == chunks - 1 && stage.last; };
  // The root modules a chunk holds (FSDP wraps each chunk's model apart from its blocks).
  auto chunk_root = [&](int c) { return (first_stage(c) ? first_params : 0.0) + (last_stage(c) ? last_params : 0.0); };

  // The last backward microbatch of each chunk: the reduce-scatter follows it (pp > 1).
  std::vector<int> last_backward(static_cast<std::size_t>(chunks), -1);
  for (const MemoryPass& pass : stage.passes) {
    if (pass.chunk < 0 || pass.chunk >= chunks) throw std::invalid_argument("replay_step_memory: chunk out of range");
    if (!pass.forward) last_backward[static_cast<std::size_t>(pass.chunk)] = pass.microbatch;
  }
  Replay r(rules);
  // Model state, held for good: per layer, then the root modules (embedding, final norm, LM head).
  // (Per parameter, unsharded: the master copy and the moments.)
  const int optimizer_tensors =
      params_local > 0
          ? std::max(1, static_cast<int>(std::lround(model_state_memory(params_local, training, 0, 1).optimizer /
                                                   params_local / optimizer_state_bytes(training))))
          : 1;
  // torch.optim (the frameworks that run torch's own modules, training.framework eager or
  // compile) creates its state lazily, in the first step() (AdamW _init_group: exp_avg and
  // exp_avg_sq = zeros_like(param) per parameter), so the first step's forward and backward run
  // without the moments and they land wherever the cache has room after that backward; the
  // master weights (FSDP2: the sharded fp32 parameters) exist from the model's construction.
  const bool torch_optim = pytorch_model_code(training);
  const int moments_per_param = training.optimizer == "adam" ? 2 : training.optimizer == "sgd" ? 0 : 1;
  const int moment_tensors = torch_optim ? std::min(optimizer_tensors, moments_per_param) : 0;
  // FSDP2 (torch's fully_shard, dp > 1): the sharded parameter is the fp32 master itself (no
  // sharded low-precision copy: the all-gather casts on the fly), and the sharded gradient is the
  // reduce-scatter output, allocated on the reduce-scatter stream by the reduce-scatter and held
  // by the parameter's .grad until the next step's zero_grad (set_to_none).
  auto hold_state = [&](double share) {
    if (!(params_local > 0)) return;
    const double f = share / params_local;
    if (!fsdp2) {
      r.alloc(state.weights * f, kCompute, "weights");
      r.alloc(state.gradients * f, kCompute, "gradients");
    }
    for (int k = moment_tensors; k < optimizer_tensors; ++k) r.alloc(state.optimizer * f / optimizer_tensors, kCompute, "optimizer state");
  };
  for (int l = 0; l < layers_local; ++l) hold_state(layer_params);
  hold_state(root_params);
  // Transformer Engine's fp8 weights and their transposes, cast on a step's first microbatch and
  // kept for the others (and the next step's first microbatch refills them in place).
  if (const double cache = fp8_weight_cache_bytes(training); cache > 0)
    for (int l = 0; l < layers_local; ++l) r.alloc(layer_linear * cache, kCompute, "fp8 weight cache");
  // The optimizer step, after the step's backward passes: the first one creates torch.optim's
  // state tensors; foreach AdamW (torchtitan: foreach = not fused, fused off) takes the square
  // root of every second moment into new tensors (_multi_tensor_adamw: exp_avg_sq_sqrt =
  // torch._foreach_sqrt(exp_avg_sqs)), alive until the parameters' addcdiv, then freed. A
  // for-loop Adam (Composer's DecoupledAdamW: denom = (exp_avg_sq.sqrt() / c).add_(eps)) holds
  // one tensor's square root and its quotient at a time; a fused one, nothing.
  auto optimizer_step = [&](bool first_step) {
    if (!(params_local > 0) || moment_tensors == 0) return;
    const double moment = state.optimizer / optimizer_tensors;  // one 4-B tensor per parameter
    std::vector<double> shares(static_cast<std::size_t>(layers_local), layer_params);
    shares.push_back(root_params);
    if (first_step)
      for (double share : shares)
        for (int k = 0; k < moment_tensors; ++k) r.alloc(moment * share / params_local, kCompute, "optimizer state");
    const std::string impl = optimizer_impl(training);
    if (impl == "foreach") {
      std::vector<int> sqrt_out;
      for (double share : shares) sqrt_out.push_back(r.alloc(moment * share / params_local, kCompute, "optimizer sqrt"));
      for (int& h : sqrt_out) r.release(h);
    } else if (impl == "for_loop") {
      for (double share : shares) {
        int root = r.alloc(moment * share / params_local, kCompute, "optimizer sqrt");
        int denom = r.alloc(moment * share / params_local, kCompute, "optimizer sqrt");
        r.release(root);
        r.release(denom);
      }
    }
  };
  // torch.distributed.pipelining: one receive buffer per microbatch for the activations and for
  // the gradients of each chunk that has a neighbour on that side, held for good.
  if (stage.torch_pipelining) {
    for (int c = 0; c < chunks; ++c)
      for (int m = 0; m < stage.microbatches; ++m) {
        if (!first_stage(c)) r.alloc(boundary, kCompute, "pp receive buffers");
        if (!last_stage(c)) r.alloc(boundary, kCompute, "pp receive buffers");
      }
  }

  std::vector<int> kept;           // torch pipelining: outputs and input gradients, until the next step
  std::vector<int> sharded_grads;  // FSDP2: reduce-scatter outputs, until the next step's zero_grad
  int retries_before_second = 0;
  for (int step = 0; step < 2; ++step) {
    if (step == 1) retries_before_second = r.allocator().alloc_retries();
    // torchtitan's step: optimizers.zero_grad() (set_to_none), then the schedule's
    // clear_runtime_states().
    for (int& h : sharded_grads) r.release(h);
    sharded_grads.clear();
    for (int& h : kept) r.release(h);
    kept.clear();
    std::vector<int> unsharded(static_cast<std::size_t>(layers_local), -1);
    std::vector<int> accumulated(static_cast<std::size_t>(layers_local), -1);
    std::vector<bool> reduced(static_cast<std::size_t>(layers_local), false);  // sharded grad exists
    std::map<std::pair<int, int>, int> saved;  // (microbatch, layer) → activations
    std::map<std::pair<int, int>, int> copies;  // (microbatch, layer) → autocast's weight copies
    std::map<int, int> head_copies;             // microbatch → autocast's copy of the LM head weight
    std::map<int, int> head_inputs;            // microbatch → the LM head's kept input (last stage)
    std::map<int, int> metric_logits;          // microbatch → its logits, kept for the loop's metrics
    int root = -1, root_grad = -1;  // pp = 1: the root unit, gathered for the step
    std::vector<int> chunk_root_params(static_cast<std::size_t>(chunks), -1);  // pp > 1: per chunk
    std::vector<int> chunk_root_grads(static_cast<std::size_t>(chunks), -1);
    // FSDP2's all_gather_state: in forward the flat all-gather output of the last unit stays
    // alive until the next unit's all-gather has been copied out (freed then, or by the root's
    // post-forward), so that no recordStream is needed; in backward it is freed after its copy-out.
    int all_gather_state = -1;
    // FSDP2's reduce_scatter_state: the reduce-scatter input (reduce dtype, compute stream: the
    // copy-in runs there) stays alive until the next unit's post-backward, or the end of the backward.
    int reduce_scatter_state = -1;
    if (zero3 && reshard) {
      root = r.alloc(root_params * pb, kCompute, "unsharded weights");
      root_grad = r.alloc(root_params * pb, kCompute, "unsharded gradients");
    }
    auto gather_unit = [&](double bytes, bool forward) {
      if (gather_in_place) return r.alloc(bytes, kAllGather, "unsharded weights");
      int output = r.alloc(bytes, kAllGather, "all-gather output");
      const int unsharded_unit = r.alloc(bytes, kCompute, "unsharded weights");
      if (forward && fsdp2) {
        r.release(all_gather_state);
        all_gather_state = output;
      } else {
        r.release(output);
      }
      return unsharded_unit;
    };
    auto gather = [&](int l, bool forward) {
      int& u = unsharded[static_cast<std::size_t>(l)];
      if (!zero3 || u >= 0) return;
      u = gather_unit(gathered, forward);
    };
    // One unit's reduce-scatter: `grads` (its unsharded gradients, or -1) are copied into the
    // reduce-scatter input and freed; the output, 1/dp of it, is the sharded gradient (FSDP2:
    // on the reduce-scatter stream, the first of the step kept as .grad, later ones added to it),
    // in the sharded parameter's dtype, the fp32 master: a reduce dtype narrower than that is
    // cast back before .grad is set (FSDP2's foreach_reduce: _to_dtype_if_needed(reduce_output,
    // orig_dtype); FSDP1 casts to the parameter's dtype into _saved_grad_shard).
    auto reduce_scatter = [&](double unit_params, int& grads, bool first_of_step) {
      if (fsdp2) {
        r.release(reduce_scatter_state);
        if (!fsdp1) reduce_scatter_state = r.alloc(unit_params * rb, kCompute, "reduce-scatter input");
        r.release(grads);
        constexpr double kMasterBytes = 4.0;  // fp32
        int output = r.alloc(unit_params * rb / dp, kReduceScatter, "sharded gradients");
        if (rb < kMasterBytes) {
          int narrow = output;
          output = r.alloc(unit_params * kMasterBytes / dp, kReduceScatter, "sharded gradients");
          r.release(narrow);
        }
        if (first_of_step) {
          sharded_grads.push_back(output);
        } else {
          r.release(output);
        }
        return;
      }
      int input = r.alloc(unit_params * rb, kReduceScatter, "reduce-scatter input");
      r.release(grads);
      r.release(input);
    };
    for (const MemoryPass& pass : stage.passes) {
      const auto chunk = static_cast<std::size_t>(pass.chunk);
      const int first = first_layer[chunk];
      const int end = first + stage.chunk_layers[chunk];
      // The chunk's input is a receive buffer: its first layer keeps nothing more of it.
      const bool received = stage.torch_pipelining && !first_stage(pass.chunk);
      if (pass.forward) {
        if (zero3 && !reshard && chunk_root_params[chunk] < 0)
          chunk_root_params[chunk] = gather_unit(chunk_root(pass.chunk) * pb, true);
        for (int l = first; l < end; ++l) {
          gather(l, true);
          if (reshard && l + 1 < end) gather(l + 1, true);
          const double keep = l == first && received ? std::max(0.0, activations - boundary) : activations;
          saved[{pass.microbatch, l}] = r.alloc(keep, kCompute, "saved activations");
          if (cast_copies > 0) copies[{pass.microbatch, l}] = r.alloc(cast_copies, kCompute, "autocast weight copies");
          if (zero3 && free_after_forward) r.release(unsharded[static_cast<std::size_t>(l)]);
        }
        r.release(all_gather_state);  // the root's post-forward
        if (last_stage(pass.chunk)) head_inputs[pass.microbatch] = r.alloc(head_input, kCompute, "LM-head input");
        if (last_stage(pass.chunk) && head_cast_copy > 0)
          head_copies[pass.microbatch] = r.alloc(head_cast_copy, kCompute, "autocast weight copies");
        if (copies_until_forward_end) {
          // The checkpointed layers saved nothing: the autocast cache held the copies until now.
          for (int l = first; l < end; ++l) {
            const auto it = copies.find({pass.microbatch, l});
            if (it != copies.end()) {
              r.release(it->second);
              copies.erase(it);
            }
          }
        }
        if (last_stage(pass.chunk) && training.logit_metrics > 0)
          metric_logits[pass.microbatch] = r.alloc(logits * bpe, kCompute, "logits kept for metrics");
        if (stage.torch_pipelining) kept.push_back(r.alloc(last_stage(pass.chunk) ? logits * bpe : boundary, kCompute, "pp outputs kept"));
        continue;
      }
      // Every loss form PyTorch model code runs (loss_bytes_per_logit) counts the model's logits
      // once; kept for the loop's metrics they are held from the forward instead.
      const double loss_here = training.logit_metrics > 0 ? std::max(0.0, loss - logits * bpe) : loss;
      int loss_buffers = last_stage(pass.chunk) ? r.alloc(loss_here, kCompute, "loss buffers") : -1;
      int head_input_kept = -1;  // the LM head's input, freed with the loss buffers
      if (const auto held = head_inputs.find(pass.microbatch); held != head_inputs.end()) {
        head_input_kept = held->second;
        head_inputs.erase(held);
      }
      int head_copy_kept = -1;  // autocast's copy of the LM head weight, freed alike
      if (const auto held = head_copies.find(pass.microbatch); held != head_copies.end() && last_stage(pass.chunk)) {
        head_copy_kept = held->second;
        head_copies.erase(held);
      }
      if (zero3 && !reshard && chunk_root_grads[chunk] < 0)
        chunk_root_grads[chunk] = r.alloc(chunk_root(pass.chunk) * rb, kCompute, "accumulated gradients");
      const bool last = pass.microbatch == last_backward[chunk];
      for (int l = end - 1; l >= first; --l) {
        gather(l, false);
        if (reshard && l - 1 >= first) gather(l - 1, false);
        int recompute = r.alloc(recomputed, kCompute, "recomputed activations");
        if (copies_until_forward_end && cast_copies > 0)
          copies[{pass.microbatch, l}] = r.alloc(cast_copies, kCompute, "autocast weight copies");
        int layer_grads = r.alloc(backward_grads, kCompute, "backward gradients");
        if (zero3) {
          int fresh = r.alloc(layer_params * pb, kCompute, "fresh gradients");
          int& acc = accumulated[static_cast<std::size_t>(l)];
          if (!reshard && acc < 0) acc = r.alloc(layer_params * rb, kCompute, "accumulated gradients");
          if (reshard) {
            // post-backward: reshard, then reduce-scatter the fresh gradients.
            r.release(unsharded[static_cast<std::size_t>(l)]);
            reduce_scatter(layer_params, fresh, !reduced[static_cast<std::size_t>(l)]);
            reduced[static_cast<std::size_t>(l)] = true;
          } else if (!fsdp2 && last) {
            int input = r.alloc(layer_params * rb, kReduceScatter, "reduce-scatter input");
            r.release(fresh);
            r.release(acc);
            r.release(input);
            r.release(unsharded[static_cast<std::size_t>(l)]);
          }
          r.release(fresh);  // added to the accumulated gradients
        }
        r.release(layer_grads);
        r.release(recompute);
        const auto it = saved.find({pass.microbatch, l});
        if (it != saved.end()) {
          r.release(it->second);
          saved.erase(it);
        }
        const auto copy = copies.find({pass.microbatch, l});
        if (copy != copies.end()) {
          r.release(copy->second);
          copies.erase(copy);
        }
        r.release(loss_buffers);
        r.release(head_input_kept);
        r.release(head_copy_kept);
      }
      // A last chunk of the LM head alone (no layer) frees them after the head's backward.
      r.release(loss_buffers);
      r.release(head_input_kept);
      r.release(head_copy_kept);
      if (stage.torch_pipelining && !first_stage(pass.chunk)) kept.push_back(r.alloc(boundary, kCompute, "pp input gradients kept"));
      // The loop's metrics once the microbatch's backward has returned (pp 1): per metric, the
      // logits' fp32 copy under autocast (none in fp32 training) and the fp32 log-softmax.
      if (const auto held = metric_logits.find(pass.microbatch); held != metric_logits.end() && first_stage(pass.chunk)) {
        for (int k = 0; k < training.logit_metrics; ++k) {
          int copy = bpe < 4.0 ? r.alloc(logits * 4.0, kCompute, "metric buffers") : -1;
          int log_probs = r.alloc(logits * 4.0, kCompute, "metric buffers");
          r.release(copy);
          r.release(log_probs);
        }
        r.release(held->second);
        metric_logits.erase(held);
      }
      if (last && !reshard) {
        if (fsdp2) {
          // torch.distributed.pipelining runs FSDP's post-backward for every unit of the chunk
          // after its last backward (stage.py backward_maybe_with_nosync → run_post_backward, over
          // the FSDP states in module order: the chunk's root, then its blocks), each resharding
          // and reduce-scattering its accumulated gradients.
          r.release(chunk_root_params[chunk]);
          reduce_scatter(chunk_root(pass.chunk), chunk_root_grads[chunk], true);
          for (int l = first; l < end; ++l) {
            r.release(unsharded[static_cast<std::size_t>(l)]);
            reduce_scatter(layer_params, accumulated[static_cast<std::size_t>(l)], true);
          }
        }
        r.release(chunk_root_params[chunk]);
        r.release(chunk_root_grads[chunk]);
      }
      if (reshard || last) r.release(reduce_scatter_state);  // the final callback of the last backward
    }
    if (fsdp2 && reshard && root_grad >= 0) reduce_scatter(root_params, root_grad, true);
    r.release(reduce_scatter_state);
    for (int& u : unsharded) r.release(u);
    for (int& g : accumulated) r.release(g);
    for (int& h : chunk_root_params) r.release(h);
    for (int& h : chunk_root_grads) r.release(h);
    for (auto& [key, h] : saved) r.release(h);
    for (auto& [key, h] : copies) r.release(h);
    for (auto& [key, h] : head_copies) r.release(h);
    for (auto& [key, h] : head_inputs) r.release(h);
    for (auto& [key, h] : metric_logits) r.release(h);
    r.release(root);
    r.release(root_grad);
    if (stage.torch_pipelining && stage.last) {
      // The schedule's step() returns the last stage's outputs merged (_merge_outputs: one
      // torch.cat of output_chunks, torch 2.5-2.6, before the return_outputs flag of 2025);
      // torchtitan drops the result (train.py: pp_schedule.step(...) unused), so it is alive
      // only beside the kept outputs it copies, before the optimizer step.
      int merged = r.alloc(logits * bpe * stage.microbatches, kCompute, "pp merged outputs");
      r.release(merged);
    }
    optimizer_step(step == 0);
  }
  StepMemoryPeaks out;
  out.allocated = static_cast<double>(r.allocator().peak_allocated());
  out.reserved = static_cast<double>(r.allocator().peak_reserved());
  out.ledger = r.ledger();
  out.alloc_retries = r.allocator().alloc_retries() - retries_before_second;
  return out;
}

}  // namespace ironlaw::workload
