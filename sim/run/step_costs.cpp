#include "run/step_costs.hpp"

#include <algorithm>

#include "workload/layer_list.hpp"

namespace ironlaw::run::detail {

using workload::OpRole;

/// Megatron's tensor-parallel sync points: the row-parallel GEMMs (attention output, MLP down)
/// and the vocab-parallel embedding end with an all-reduce of the activations in forward; the
/// column-parallel GEMMs' input gradients (QKV, MLP up, LM head) are all-reduced in backward,
/// overlapping the weight-gradient GEMM that follows (or, without Megatron's
/// async_tensor_model_parallel_allreduce, after it: OpTimer::Cuts::async_input_grad_allreduce).
After sync_after(const workload::Op& op, bool weight_gradients_follow) {
  if (op.role == OpRole::tp_row_parallel || op.role == OpRole::vocab_embedding) return After::sync;
  if (op.role == OpRole::tp_column_input_grad) return weight_gradients_follow ? After::sync_async : After::sync;
  if (op.role == OpRole::tp_sequence_gather) return After::gather;
  return After::none;
}

/// Expert parallelism: the dispatch and combine all-to-alls sit at the marker ops.
bool all_to_all_after(const workload::Op& op) {
  return op.role == OpRole::expert_dispatch || op.role == OpRole::expert_combine;
}

bool is_attention_core(const workload::Op& op) {
  return op.role == OpRole::attention_core || op.role == OpRole::attention_core_grad;
}

Part::Fused OpTimer::fused_kind(const workload::Op& op) {
  if (!op.is_gemm()) return Part::Fused::none;
  // torch's micro-pipeline pass fuses an all-gather with the matmuls that take its result as
  // their left operand — the column-parallel projections of the gathered sequence in forward,
  // the row-parallel layer's input gradient from the gathered output gradient in backward (its
  // weight gradient takes the transpose: not fused) — and a reduce-scatter with the one matmul
  // it reduces: the row-parallel projections in forward. The backward reduce-scatter sums the
  // input gradients of several linears (torchtitan's wq, wk, wv; w1, w3): an add, not fused.
  // Under torchao's rowwise Float8 the gathered tensor goes to a cast, not to the matmul
  // (Op::fp8_cast_after_gather): that all-gather stays plain (casts_gathered_input).
  switch (op.role) {
    case OpRole::tp_column_parallel:
    case OpRole::tp_row_input_grad:
      return op.fp8_cast_after_gather ? Part::Fused::none : Part::Fused::gather;
    case OpRole::tp_row_parallel:
      return Part::Fused::scatter;
    default:
      return Part::Fused::none;
  }
}

bool OpTimer::casts_gathered_input(const std::vector<workload::Op>& ops, std::size_t i) {
  if (!ops[i].fp8_cast || i + 1 >= ops.size()) return false;
  const workload::Op& gemm = ops[i + 1];
  return gemm.fp8_cast_after_gather &&
         (gemm.role == OpRole::tp_column_parallel || gemm.role == OpRole::tp_row_input_grad);
}

Part OpTimer::fused_part(const workload::Op& op, int tp) {
  // Bytes per element of the operands and of the output, from the op's own byte count
  // (workload::gemm and workload::linear: fp8 operands 1 B, output in the activations' dtype).
  const bool fp8 = op.dtype == "fp8";
  const double a = op.m * op.k, b = op.k * op.n, c = op.m * op.n;
  const double out_bpe = fp8 ? (op.bytes / op.batch - (a + b)) / c : op.bytes / (op.batch * (a + b + c));
  const double in_bpe = fp8 ? 1.0 : out_bpe;
  auto rows = [&](double m) {
    workload::Op g = op;
    g.m = m;
    g.flops = op.flops * m / op.m;
    g.bytes = op.batch * ((m * op.k + b) * in_bpe + m * op.n * out_bpe);
    return g;
  };
  const workload::Op chunk = rows(op.m / tp);
  // Consecutive chunks alternate between two streams (the kernels' own comment: "allows for
  // computation/computation overlapping, greatly reducing quantization inefficiency"): two run
  // at once, so the SMs see a GEMM of twice a chunk's rows, and each chunk takes half its time.
  Part part;
  part.fused_chunks = tp;
  add(part.ops, chunk, Time::from_seconds(workload::op_time(rows(2.0 * op.m / tp), device_, precision_).seconds() / 2));
  if (fused_kind(op) == Part::Fused::gather) {
    part.fused = Part::Fused::gather;
    part.fused_bytes = op.batch * chunk.m * op.k * in_bpe;  // one rank's shard of the left operand
    workload::Op copy;  // the shard into the rank's symmetric-memory buffer: read and written
    copy.name = op.name + "_ag_copy";
    copy.bytes = 2.0 * part.fused_bytes;
    part.fused_prologue = whole({copy});
  } else {
    part.fused = Part::Fused::scatter;
    part.fused_bytes = op.batch * chunk.m * op.n * out_bpe;  // one destination's rows of the output
    workload::Op sum;  // the tp partial sums of the rank's rows read, their sum written
    sum.name = op.name + "_rs_sum";
    sum.bytes = (tp + 1.0) * part.fused_bytes;
    sum.flops = (tp - 1.0) * op.batch * chunk.m * op.n;
    part.fused_epilogue = whole({sum});
  }
  return part;
}

namespace {

/// Splits the root ops (embedding, final norm, LM head, loss) between the first and last chunk.
void split_root(const std::vector<workload::Op>& ops, std::vector<workload::Op>& embed, std::vector<workload::Op>& head) {
  for (const auto& op : ops) {
    const bool lookup = op.role == OpRole::vocab_embedding || op.role == OpRole::vocab_embedding_grad;
    (lookup ? embed : head).push_back(op);
  }
}

/// A layer-list model (config/layer_model.hpp) under data parallelism alone: every listed layer
/// is a unit of its own, with its forward and backward kernels; no embedding or head units.
Costs build_layer_list_costs(const config::Scenario& s, const Layout& lay, OpTimer& timer, bool split_backward) {
  const auto cost = workload::layer_model_cost(*s.model.layer_list, lay.microbatch_sequences, s.training.precision,
                                               &s.topology.device);
  Costs costs;
  double params = 0, widest = 0;
  for (const auto& layer : cost.layers) {
    LayerCosts lc;
    lc.forward = timer.parts(layer.forward, {});
    lc.backward = timer.parts(layer.backward, {});
    if (split_backward) {
      std::vector<workload::Op> b, w;
      for (const auto& op : layer.backward) (op.role == OpRole::weight_grad ? w : b).push_back(op);
      lc.input_grad = timer.parts(b, {});
      lc.weight_grad = timer.parts(w, {});
    }
    lc.params = layer.params;
    params += layer.params;
    widest = std::max(widest, layer.out.elements());
    costs.listed.push_back(std::move(lc));
  }
  costs.activation_bytes = widest * lay.microbatch_sequences * workload::bytes_per_element(s.training.precision);
  costs.optimizer = timer.whole({workload::optimizer_op(s.training, s.parallel.zero >= 1 ? params / (lay.dp * lay.cp) : params)});
  return costs;
}

}  // namespace

Costs build_costs(const config::Scenario& s, const Layout& lay, const config::TrainingSpec& per_rank, RecordSink& sink,
                  bool split_backward) {
  OpTimer timer(s.topology.device, s.training.precision, s.training.framework, sink, s.training.launch_blocking);
  if (s.model.layer_list) return build_layer_list_costs(s, lay, timer, split_backward);
  const int seqs = lay.microbatch_sequences;
  // Under context parallelism a rank holds sequence_length / cp tokens of every sequence; its
  // attention covers the whole sequence as cp blocks of ring attention.
  const config::TrainingSpec& local = per_rank;
  const double elem = workload::parameter_bytes(s.training.precision);
  const double tokens_local = static_cast<double>(seqs) * local.sequence_length;
  const auto shape = workload::count_params(s.model);
  const bool sp = s.parallel.sequence_parallel && lay.tp > 1;  // Megatron sequence parallelism
  OpTimer::Cuts cuts;
  cuts.tensor_parallel = lay.tp > 1;
  cuts.expert_parallel = lay.ep > 1;
  cuts.context_parallel = lay.cp;
  cuts.async_tp = s.parallel.fused_tp_collectives() && sp ? lay.tp : 0;
  // A column-parallel layer's input gradient is communicated before its weight gradient only
  // where the framework launches it so (Megatron's LinearWithGradAccumulationAndAsync...,
  // parallel.async_tensor_parallel_allreduce). Under torch's TP (PyTorch model code) autograd's
  // MmBackward computes both gradients in one node before the DTensor redistribute's backward
  // issues the collective, which the next op (the norm's backward) then waits for: blocking.
  cuts.async_input_grad_allreduce =
      s.parallel.async_tensor_parallel_allreduce && !workload::torch_tensor_parallel(s.training, s.parallel);
  // The K and V that reach SDPA, and so the ring: PyTorch model code (training.framework eager
  // or compile, torchtitan's Llama at 9dec370, torchtitan/models/llama/model.py Attention.forward)
  // expands grouped K/V to every query head with repeat_kv before F.scaled_dot_product_attention
  // (its flash backend took no GQA then), so torch's context_parallel gathers, concatenates and
  // accumulates heads/kv_heads times the bytes of the model's K and V. Megatron-style code
  // (fused: Transformer Engine's attention) passes the grouped K/V as they are.
  const bool expanded_kv = workload::sdpa_expands_kv(s.training);
  const int kv_width = (expanded_kv || s.model.kv_heads <= 0 ? s.model.heads : s.model.kv_heads) *
                       (s.model.head_dim > 0 ? s.model.head_dim : s.model.hidden / s.model.heads);
  cuts.ring_bytes = tokens_local * 2.0 * kv_width / lay.tp * elem;  // this rank's K and V block
  {
    const int heads = s.model.heads;
    const double d = s.model.head_dim > 0 ? s.model.head_dim : static_cast<double>(s.model.hidden) / heads;
    const double dv = s.model.v_head_dim > 0 ? s.model.v_head_dim : d;
    cuts.ring_tensors.query_elements = tokens_local * heads / lay.tp * d;
    cuts.ring_tensors.out_elements = tokens_local * heads / lay.tp * dv;
    cuts.ring_tensors.kv_elements = tokens_local * kv_width / lay.tp;
    cuts.ring_tensors.lse_elements = tokens_local * heads / lay.tp;
    cuts.ring_tensors.transposed_kv = expanded_kv;  // PyTorch model code hands SDPA transposed views
  }

  OpTimer::Cuts input_grad_cuts = cuts;
  input_grad_cuts.weight_gradients_follow = false;
  // The input-gradient and weight-gradient halves of a backward op list.
  auto split = [&](const std::vector<workload::Op>& backward, PartList& input_grad, PartList& weight_grad) {
    if (!split_backward) return;
    std::vector<workload::Op> b, w;
    for (const auto& op : backward) (op.role == OpRole::weight_grad ? w : b).push_back(op);
    input_grad = timer.parts(b, input_grad_cuts);
    weight_grad = timer.parts(w, cuts);
  };

  Costs costs;
  // One layer's parameters on a rank: attention, MLP (routed experts split over EP) and norms.
  auto layer_costs = [&](LayerCosts& lc, int layer) {
    const auto forward = workload::layer_forward_ops(s.model, local, seqs, lay.tp, layer, lay.ep, sp, lay.expert_folded);
    const auto steady = workload::steady_microbatch(forward);
    lc.forward = timer.parts(steady, cuts);
    if (steady.size() != forward.size()) lc.first_forward = timer.parts(forward, cuts);
    const auto backward = workload::layer_backward_ops(s.model, local, seqs, lay.tp, layer, lay.ep, sp, lay.expert_folded);
    lc.backward = timer.parts(backward, cuts);
    split(backward, lc.input_grad, lc.weight_grad);
    lc.recompute = timer.parts(workload::layer_recompute_ops(s.model, local, seqs, lay.tp, layer, lay.ep, sp, lay.expert_folded), cuts);
    config::ModelSpec one = s.model;
    one.layers = 1;
    if (s.model.experts > 1) one.dense_layers = workload::is_moe_layer(s.model, layer) ? 0 : 1;
    const auto p = workload::count_params(one);
    lc.linear_params = (p.attention + p.mlp - p.routed_experts + p.routed_experts / workload::expert_split(s.parallel)) / lay.tp;
    lc.expert_params = p.routed_experts / workload::expert_split(s.parallel) / lay.tp;
    // The layer's norms: a two-layer model counts the final norm once as this one-layer model
    // does, so the difference is one layer's norm gains (and biases, MLA latent norms).
    config::ModelSpec two = one;
    two.layers = 2;
    two.dense_layers = 2 * one.dense_layers;
    lc.params = lc.linear_params + (workload::count_params(two).norm - p.norm);
  };
  const auto moe_layers = workload::moe_layer_indices(s.model);
  const bool any_dense = static_cast<int>(moe_layers.size()) < s.model.layers;
  if (any_dense) layer_costs(costs.dense, 0);
  if (!moe_layers.empty()) layer_costs(costs.moe, moe_layers.front());
  for (int l = 0; l < s.model.layers; ++l)
    costs.is_moe.push_back(workload::is_moe_layer(s.model, l) ? 1 : 0);
  std::vector<workload::Op> ef, hf, eb, hb;
  split_root(workload::head_forward_ops(s.model, local, seqs, lay.tp, sp), ef, hf);
  split_root(workload::head_backward_ops(s.model, local, seqs, lay.tp, sp), eb, hb);
  // The training loop's metrics on the logits (training.logit_metrics, pp 1: the embedding's
  // backward is the microbatch's last) run once its backward has returned.
  for (auto& op : workload::logit_metric_ops(s.model, local, seqs, lay.tp)) eb.push_back(std::move(op));
  costs.embed_forward = timer.parts(ef, cuts);
  costs.head_forward = timer.parts(hf, cuts);
  costs.head_backward = timer.parts(hb, cuts);
  costs.embed_backward = timer.parts(eb, cuts);
  split(hb, costs.head_input_grad, costs.head_weight_grad);
  split(eb, costs.embed_input_grad, costs.embed_weight_grad);
  costs.embed_params = (shape.embedding + shape.position) / lay.tp;
  costs.head_params = (s.model.tied_embeddings && lay.pp > 1 ? shape.lm_head_matmul : shape.lm_head) / lay.tp;
  costs.activation_bytes = tokens_local * s.model.hidden * elem;
  if (s.parallel.pp_runtime == "deepspeed" && lay.tp > 1 && lay.pp > 1) {
    const double S = costs.activation_bytes, tp = lay.tp;
    const auto copy = workload::memory_pass;
    costs.pipe_gather_in = timer.whole({copy("pipe_full_in", S + 2.0 * S / tp, 2)});
    costs.pipe_gather_out = timer.whole({copy("pipe_full_out", 4.0 * S, lay.tp + 1)});
    costs.pipe_partition = timer.whole({copy("pipe_partition", 2.0 * S / tp, 1)});
  }
  if (!moe_layers.empty() && lay.ep > 1) {
    // Each TP rank dispatches its 1/tp share of the tokens (Megatron's sequence-split dispatch).
    const workload::MoeAllToAll a2a = workload::moe_all_to_all_bytes(s.model, local, seqs, lay.ep);
    costs.all_to_all_bytes = a2a.routed_bytes / lay.tp;
    // Before a forward dispatch every rank needs to know what it will receive. HybridEP
    // all-gathers the routing maps over the EP group with NCCL across nodes (a custom NVLink
    // all-gather kernel within one, taken as the same all-gather); Megatron-core's alltoall
    // dispatcher all-gathers the per-expert counts to size its all-to-all-v. Both run on the
    // dispatching stream before the tokens move, and the host then reads the sizes back.
    if (s.parallel.moe_dispatcher == "hybridep") {
      costs.routing_exchange_bytes = a2a.routing_map_bytes / lay.tp * lay.ep;
    } else if (s.parallel.moe_dispatcher == "alltoall") {
      costs.routing_exchange_bytes = a2a.expert_count_bytes * lay.ep;
    }
  }
  // The optimizer updates the parameters this rank holds (the largest pipeline stage); ZeRO
  // shards them over dp × cp, the group the gradients are reduced over (simulation.cpp).
  double params_rank = 0;
  for (int j = 0; j < lay.chunks(); ++j) {
    double held = 0;
    for (int l = lay.first_layer(j); l < lay.first_layer(j) + lay.chunk_layers[static_cast<std::size_t>(j)]; ++l)
      held += costs.layer(l).params;
    params_rank = std::max(params_rank, held);
  }
  params_rank = params_rank * lay.virtual_stages + std::max(costs.embed_params, costs.head_params);
  costs.optimizer = timer.whole({workload::optimizer_op(s.training, s.parallel.zero >= 1 ? params_rank / (lay.dp * lay.cp) : params_rank)});
  return costs;
}

}  // namespace ironlaw::run::detail
