#include "run/model_parallel.hpp"

#include <algorithm>

#include "run/data_parallel.hpp"

namespace ironlaw::run::detail {

using comm::CollectiveOp;

TensorParallel::TensorParallel(StepBuilder& b)
    : b_(b), name_(b.name("tp all_reduce")), sequence_parallel_(b.world().scenario.parallel.sequence_parallel),
      async_(sequence_parallel_ && b.world().scenario.parallel.fused_tp_collectives() && b.layout().tp > 1) {
  if (sequence_parallel_) {
    reduce_scatter_name_ = b.name("tp reduce_scatter");
    all_gather_name_ = b.name("tp all_gather");
  } else if (b.world().scenario.parallel.pp_runtime == "deepspeed" && b.layout().tp > 1 && b.layout().pp > 1) {
    all_gather_name_ = b.name("tp all_gather");  // PartitionedTensor.full() (pipeline_wiring.cpp)
  }
  if (async_) {
    fused_gather_name_ = b.name("tp async all_gather");
    fused_scatter_name_ = b.name("tp async reduce_scatter");
  }
  const auto& s = b.world().scenario;
  relayout_ = sequence_parallel_ && b.layout().tp > 1 && workload::torch_tensor_parallel(s.training, s.parallel);
  if (relayout_) {
    relayout_name_ = b.name("tp relayout");
    OpTimer timer(s.topology.device, s.training.precision, s.training.framework, b.world().sink,
                  s.training.launch_blocking);
    auto copy = [&](const char* name, double bytes) {
      return timer.whole({workload::memory_pass(name, 2.0 * bytes)});  // read and write the whole tensor
    };
    const double bytes = b.costs().activation_bytes;
    scatter_copy_ = copy("tp_scatter_relayout", bytes);
    gather_copy_ = copy("tp_gather_relayout", bytes);
    fp8_gather_copy_ = copy("tp_gather_relayout", bytes / workload::bytes_per_element(s.training.precision));
  }
}

std::vector<TaskId> TensorParallel::relayout_before_scatter(const std::vector<int>& group,
                                                            const std::vector<TaskId>& inputs, EventKind kind) {
  if (!relayout_) return inputs;
  std::vector<TaskId> copies(group.size());
  for (std::size_t g = 0; g < group.size(); ++g) {
    copies[g] = b_.compute(group[g], kind, scatter_copy_, relayout_name_);
    if (inputs[g] != kNoTask) b_.depend(inputs[g], copies[g]);
  }
  return copies;
}

std::vector<TaskId> TensorParallel::relayout_after_gather(const std::vector<int>& group, TaskId ag, bool fp8_gather,
                                                          EventKind kind) {
  if (!relayout_) return std::vector<TaskId>(group.size(), ag);
  std::vector<TaskId> copies(group.size());
  for (std::size_t g = 0; g < group.size(); ++g) {
    copies[g] = b_.compute(group[g], kind, fp8_gather ? fp8_gather_copy_ : gather_copy_, relayout_name_);
    b_.depend(ag, copies[g]);
  }
  return copies;
}

TaskId TensorParallel::scatter_in_pass(const std::vector<int>& group, const std::vector<TaskId>& inputs, EventKind kind) {
  return reduce_scatter(group, relayout_before_scatter(group, inputs, kind));
}

std::vector<TaskId> TensorParallel::gather_in_pass(const std::vector<int>& group, TaskId rs,
                                                   const std::vector<TaskId>& inputs, bool fp8_gather, EventKind kind) {
  return relayout_after_gather(group, all_gather(group, rs, inputs, fp8_gather), fp8_gather, kind);
}

void TensorParallel::add_group(int first) { streams_.emplace(first, b_.add_stream("tp" + std::to_string(first))); }

std::vector<int> TensorParallel::global_of(const std::vector<int>& group) const {
  std::vector<int> global;
  for (int l : group) global.push_back(b_.ranks()[static_cast<std::size_t>(l)]);
  return global;
}

TaskId TensorParallel::all_reduce(const std::vector<int>& group, const std::vector<TaskId>& inputs, bool fp8_gather) {
  if (!sequence_parallel_) {
    std::vector<int> global = global_of(group);
    const StreamId stream = streams_.at(global.front());
    const TaskId c = b_.collective(CollectiveOp::all_reduce, std::move(global), b_.costs().activation_bytes, name_,
                                   group, stream);
    for (TaskId t : inputs) b_.depend(t, c);
    return c;
  }
  // Megatron SP: the reduce-scatter that leaves each rank its 1/tp of the sequence, then the
  // all-gather that restores it for the next TP region, back to back on the group's stream
  // (the ops between them already run on 1/tp of the tokens: model_ops).
  return all_gather(group, reduce_scatter(group, inputs), {}, fp8_gather);
}

TaskId TensorParallel::reduce_scatter(const std::vector<int>& group, const std::vector<TaskId>& inputs) {
  std::vector<int> global = global_of(group);
  const StreamId stream = streams_.at(global.front());
  const TaskId rs = b_.collective(CollectiveOp::reduce_scatter, std::move(global), b_.costs().activation_bytes,
                                  reduce_scatter_name_, group, stream);
  for (TaskId t : inputs) b_.depend(t, rs);
  return rs;
}

TaskId TensorParallel::all_gather(const std::vector<int>& group, TaskId rs, const std::vector<TaskId>& inputs,
                                  bool fp8_gather) {
  std::vector<int> global = global_of(group);
  const StreamId stream = streams_.at(global.front());
  const double bytes = b_.costs().activation_bytes;
  const double gathered = fp8_gather ? bytes / workload::bytes_per_element(b_.world().scenario.training.precision) : bytes;
  const TaskId ag = b_.collective(CollectiveOp::all_gather, std::move(global), gathered, all_gather_name_, group, stream);
  if (rs != kNoTask) b_.depend(rs, ag);
  for (TaskId t : inputs)
    if (t != kNoTask) b_.depend(t, ag);
  return ag;
}

std::vector<TaskId> TensorParallel::fused(const std::vector<int>& group, const Part& part, EventKind kind,
                                          std::uint32_t name, const std::vector<TaskId>& gates,
                                          std::vector<TaskId>& first) {
  const std::size_t n = group.size();
  const std::vector<int> global = global_of(group);
  const std::vector<int> participants = b_.simulated(global);
  std::vector<TaskId> last(n, kNoTask);
  auto start = [&](std::size_t g, const TimedOps& ops) {
    const TaskId t = b_.compute(group[g], kind, ops, name);
    if (last[g] == kNoTask) {
      if (gates[g] != kNoTask) b_.depend(gates[g], t);
      if (first[g] == kNoTask) first[g] = t;
    }
    last[g] = t;
    return t;
  };
  // Step k's transfers: member g pulls from member g + k (gather), or member g + k pulls the
  // rows member g produced for it (scatter): the same permutation of the group either way.
  auto transfers = [&](std::size_t k, std::uint32_t label) {
    std::vector<std::pair<int, int>> hops;
    for (std::size_t g = 0; g < n; ++g) {
      const int other = global[(g + k) % n];
      hops.emplace_back(part.fused == Part::Fused::gather ? other : global[g],
                        part.fused == Part::Fused::gather ? global[g] : other);
    }
    return b_.copies(std::move(hops), part.fused_bytes, label, participants);
  };
  std::vector<TaskId> pulls(n, kNoTask);          // by step
  std::vector<std::vector<TaskId>> chunk(n);      // by member, by step
  for (auto& c : chunk) c.assign(n, kNoTask);
  if (part.fused == Part::Fused::gather) {
    std::vector<TaskId> copied(n);
    for (std::size_t g = 0; g < n; ++g) copied[g] = start(g, part.fused_prologue);
    for (std::size_t g = 0; g < n; ++g) chunk[g][0] = start(g, part.ops);
    for (std::size_t k = 1; k < n; ++k) {
      pulls[k] = transfers(k, fused_gather_name_);
      if (k == 1) {
        for (TaskId c : copied) b_.depend(c, pulls[k]);  // the barrier: every shard is in place
      } else {
        b_.depend(pulls[k - 1], pulls[k]);
        for (std::size_t g = 0; g < n; ++g) b_.depend(chunk[g][k - 2], pulls[k]);
      }
      for (std::size_t g = 0; g < n; ++g) {
        chunk[g][k] = start(g, part.ops);
        b_.depend(pulls[k], chunk[g][k]);
      }
    }
    return last;
  }
  for (std::size_t k = 1; k < n; ++k) {
    for (std::size_t g = 0; g < n; ++g) {
      chunk[g][k] = start(g, part.ops);
      if (k >= 3) b_.depend(pulls[k - 2], chunk[g][k]);
    }
    pulls[k] = transfers(k, fused_scatter_name_);
    for (std::size_t g = 0; g < n; ++g) b_.depend(chunk[g][k], pulls[k]);  // the barrier
  }
  for (std::size_t g = 0; g < n; ++g) {
    start(g, part.ops);  // the rank's own rows
    const TaskId sum = start(g, part.fused_epilogue);
    for (std::size_t k = 1; k < n; ++k) b_.depend(pulls[k], sum);
  }
  return last;
}

ExpertParallel::ExpertParallel(StepBuilder& b) : b_(b), name_(b.name("ep all_to_all")) {}

std::vector<std::vector<int>> ExpertParallel::groups_with(int rank) const {
  const Layout& lay = b_.layout();
  std::vector<std::vector<int>> groups;
  if (b_.world().scenario.run.detail == "full") {
    groups.push_back(lay.ep_group(rank));
  } else if (lay.expert_folded) {
    // One replica (dp 0) is simulated: its TP ranks fall in the first `touched` groups of the
    // stage's TP × DP ranks; group b starts every group b' ≡ b (mod touched), each once.
    const int touched = (lay.tp - 1) / lay.ep + 1;
    const Coord c = lay.coord_of(rank);
    for (int b = lay.ep_group_index(rank); b < lay.ep_groups(); b += touched)
      groups.push_back(lay.ep_group(lay.rank_of(lay.at_expert_index(c, b * lay.ep))));
  } else {
    Coord c = lay.coord_of(rank);
    for (int block = 0; block < lay.dp / lay.ep; ++block) {
      c[Dim::dp] = block * lay.ep;
      groups.push_back(lay.ep_group(lay.rank_of(c)));
    }
  }
  return groups;
}

ExpertParallel::Exchange ExpertParallel::all_to_all(int local, const PassKey& key, int part, bool routing) {
  const int rank = b_.ranks()[static_cast<std::size_t>(local)];
  const std::vector<int> group = b_.layout().ep_group(rank);
  const double routing_bytes = b_.costs().routing_exchange_bytes;
  TaskId entry = kNoTask;
  if (routing && routing_bytes > 0) {
    entry = b_.shared({SharedKind::expert_routing, group.front(), key, part, 0}, [&] {
      // Named on first use, so that the trace's name table of a run without it is unchanged.
      if (!routing_name_) routing_name_ = b_.name("ep routing all_gather");
      return b_.collectives(CollectiveOp::all_gather, groups_with(rank), routing_bytes, *routing_name_,
                            b_.simulated(group));
    });
  }
  const TaskId tokens = b_.shared({SharedKind::expert_all_to_all, group.front(), key, part, 0}, [&] {
    // The flex dispatcher's kernels run on the SMs it is given (ParallelSpec::dispatcher_sms);
    // NCCL's all-to-all on its channels, as every collective (StepBuilder::kernel_sms).
    const auto& p = b_.world().scenario.parallel;
    const int sms = p.flex_dispatcher() ? p.dispatcher_sms(b_.spans_nodes(group)) : -1;
    const TaskId t = b_.collectives(CollectiveOp::all_to_all, groups_with(rank), b_.costs().all_to_all_bytes, name_,
                                    b_.simulated(group), sms);
    if (entry != kNoTask) b_.depend(entry, t);
    return t;
  });
  return {entry != kNoTask ? entry : tokens, tokens};
}

ContextParallel::ContextParallel(StepBuilder& b) : b_(b), name_(b.name("cp ring exchange")) {}

std::pair<TaskId, TaskId> ContextParallel::ring_attention(int local, const Part& part, EventKind kind,
                                                          std::uint32_t name, TaskId gate, TaskId before,
                                                          const PassKey& key, int part_index) {
  const int rank = b_.ranks()[static_cast<std::size_t>(local)];
  const std::vector<int> ring = b_.layout().group(rank, Dim::cp);
  const int cp_rank = b_.layout().coord_of(rank)[Dim::cp];
  auto after = [&](TaskId first, TaskId second) {
    if (first != kNoTask) b_.depend(first, second);
  };
  // K and V of every rank, all-gathered once (torch's "allgather" rotation: _AllGatherRotater),
  // issued before step 0 and awaited by step 1; the backward gathers them again.
  const TaskId gather = b_.shared({SharedKind::ring_exchange, ring.front(), key, part_index, -1}, [&] {
    return b_.collectives(CollectiveOp::all_gather, {ring}, part.ring_bytes * static_cast<double>(ring.size()), name_,
                          b_.simulated(ring));
  });
  after(before, gather);
  after(gate, gather);
  const bool backward = part.ring_gradient_bytes > 0;
  // The fp32 dK, dV each rank passes to the next after every backward step (_AllToAllRotater).
  auto gradient_exchange = [&](int step, TaskId sender) {
    const TaskId id = b_.shared({SharedKind::ring_exchange, ring.front(), key, part_index, step}, [&] {
      std::vector<std::pair<int, int>> hops;
      for (std::size_t i = 0; i < ring.size(); ++i) hops.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
      return b_.sends(std::move(hops), part.ring_gradient_bytes, name_, b_.simulated(ring));
    });
    after(sender, id);
    return id;
  };
  const TaskId first = b_.compute(local, kind, part.ops, name);
  after(gate, first);
  TaskId last = first;
  TaskId exchange = backward ? gradient_exchange(0, first) : kNoTask;
  for (int step = 1; step < part.ring_steps; ++step) {
    const bool kv_half = step <= cp_rank;  // the K/V block of an earlier chunk
    const TaskId block = b_.compute(local, kind, kv_half ? part.kv_half : part.q_half, name);
    b_.depend(gather, block);
    after(last, block);
    last = block;
    if (!backward) continue;
    const TimedOps& accumulate = kv_half ? part.kv_half_accumulate : part.q_half_accumulate;
    const TaskId acc = b_.compute(local, kind, accumulate, name);
    after(block, acc);
    b_.depend(exchange, acc);
    last = acc;
    exchange = gradient_exchange(step, acc);
  }
  if (!part.finish.ops.empty()) {
    const TaskId done = b_.compute(local, kind, part.finish, name);
    after(last, done);
    after(exchange, done);  // the backward's last dK, dV arrive from the previous rank
    last = done;
  }
  return {first, last};
}

FsdpCopies::FsdpCopies(StepBuilder& b)
    : b_(b), timer_(b.world().scenario.topology.device, b.world().scenario.training.precision,
              b.world().scenario.training.framework, b.world().sink, b.world().scenario.training.launch_blocking) {
  const auto& s = b.world().scenario;
  on_ = s.parallel.zero == 3 && b.layout().dp * b.layout().cp > 1 && !s.model.layer_list;
  pipelined_ = b.layout().pp > 1;
  kept_ = !s.parallel.reshard_after_forward;
  fsdp1_ = s.parallel.fsdp1();
  megatron_ = !workload::pytorch_model_code(s.training);
  fused_grads_ = megatron_ && s.training.gradient_accumulation_fusion;
}

const TimedOps& FsdpCopies::ops(int unit, Kind kind) {
  auto it = cache_.find({unit, kind});
  if (it != cache_.end()) return it->second;
  const auto& s = b_.world().scenario;
  const int L = s.model.layers;
  const double params = unit_params(b_.costs(), L, unit);
  const double pb = workload::parameter_bytes(s.training.precision);
  const double rb = workload::reduce_bytes(s.training);
  const auto copy = [](std::string name, double bytes) { return workload::memory_pass(std::move(name), bytes); };
  std::vector<workload::Op> list;
  const bool upcasting = rb != pb;
  switch (kind) {
    case copy_out: list.push_back(copy("fsdp_copy_out", 2.0 * unit_gather_bytes(b_.costs(), s.training, L, unit))); break;
    case copy_in: list.push_back(copy("fsdp_copy_in", params * (pb + rb))); break;
    case flat_grad:
      list.push_back(copy("fsdp_grad_cat", params * 2.0 * pb));
      if (upcasting) list.push_back(copy("fsdp_grad_cast", params * (pb + rb)));
      list.push_back(copy("fsdp_grad_predivide", params * 2.0 * rb));
      break;
    case upcast:
    case upcast_last:
      if (upcasting) list.push_back(copy("fsdp_grad_upcast", params * (pb + rb)));
      break;
    case accumulate:
    case accumulate_last:
      list.push_back(copy("fsdp_grad_accumulate", params * (upcasting ? pb + 2.0 * rb : 3.0 * pb)));
      break;
  }
  if (kind == upcast_last || kind == accumulate_last) list.push_back(copy("fsdp_copy_in", params * 2.0 * rb));
  return cache_.emplace(std::make_pair(unit, static_cast<int>(kind)), timer_.whole(list)).first->second;
}

const TimedOps* FsdpCopies::before(int local, const PassKey& key) {
  if (!on_ || fsdp1_ || megatron_) return nullptr;  // they gather into what the parameters view
  // With PP the unit stays gathered for the step: one copy-out, before its first forward.
  // Without: before each forward and before the first backward-direction pass of each microbatch
  // (before each forward only under SHARD_GRAD_OP, which keeps the forward's gather).
  if ((pipelined_ || kept_) && key.part != PassPart::forward) return nullptr;
  const int gather = pipelined_ ? 0 : 2 * key.microbatch + (key.part == PassPart::forward ? 0 : 1);
  if (!gathered_.emplace(local, gather, key.unit).second) return nullptr;
  const TimedOps& t = ops(key.unit, copy_out);
  return t.ops.empty() ? nullptr : &t;
}

namespace {

/// Whether a backward-direction pass produces its unit's gradients: it holds a weight-gradient
/// or embedding-gradient op (the fused backward, or the W pass of a split one).
bool produces_gradients(const PartList& parts) {
  return std::any_of(parts.begin(), parts.end(), [](const Part& p) {
    return std::any_of(p.ops.ops.begin(), p.ops.ops.end(), [](const workload::Op& op) {
      return op.role == workload::OpRole::weight_grad || op.role == workload::OpRole::vocab_embedding_grad;
    });
  });
}

}  // namespace

const TimedOps* FsdpCopies::after(int local, const PassKey& key, const PartList& parts) {
  if (!on_ || fused_grads_ || key.part != PassPart::backward) return nullptr;
  if (!produces_gradients(parts)) return nullptr;
  Kind kind = fsdp1_ ? flat_grad : copy_in;
  if (pipelined_) {
    const int seen = gradients_[{local, key.unit}]++;
    const bool last = seen + 1 == b_.layout().microbatches;
    kind = seen == 0 ? (last ? upcast_last : upcast) : (last ? accumulate_last : accumulate);
  }
  const TimedOps& t = ops(key.unit, kind);
  return t.ops.empty() ? nullptr : &t;
}

GradientAccumulation::GradientAccumulation(StepBuilder& b)
    : b_(b), timer_(b.world().scenario.topology.device, b.world().scenario.training.precision,
              b.world().scenario.training.framework, b.world().sink, b.world().scenario.training.launch_blocking) {
  const auto& s = b.world().scenario;
  const bool fsdp = s.parallel.zero == 3 && b.layout().dp * b.layout().cp > 1 && !s.model.layer_list;
  // Megatron's gradient_accumulation_fusion folds the add into the wgrad GEMM (workload::linear).
  // DeepSpeed's BF16_Optimizer copies every microbatch's gradients, even a step's only one.
  cast_copy_ = s.training.bf16_optimizer;
  on_ = !fsdp && (b.layout().microbatches > 1 || cast_copy_) && !s.training.gradient_accumulation_fusion;
}

const TimedOps* GradientAccumulation::after(int local, const PassKey& key, const PartList& parts) {
  if (!on_ || key.part != PassPart::backward || !produces_gradients(parts)) return nullptr;
  // The first microbatch's gradients start the sum (autograd's, Megatron's main_grad hooks).
  if (gradients_[{local, key.unit}]++ == 0 && !cast_copy_) return nullptr;
  auto it = cache_.find(key.unit);
  if (it == cache_.end()) {
    const auto& s = b_.world().scenario;
    workload::Op op;
    const double params = unit_params(b_.costs(), s.model.layers, key.unit);
    // The fresh gradient as autograd hands it over: fp32 under autocast (its cast back is timed
    // in the layer's backward ops), otherwise in the parameters' precision.
    const double pb = workload::stored_parameter_bytes(s.training), rb = workload::reduce_bytes(s.training);
    if (cast_copy_) {
      // update_hp_grads: lp.grad.to(fp32) reads pb and writes an fp32 temporary, add_ reads it
      // and the fp32 buffer and writes the buffer: pb + 4·rb, two kernels.
      op.name = "hp_grad_update";
      op.bytes = params * (pb + 4.0 * rb);
      op.kernels = 2;
    } else {
      op.name = "grad_accumulate";
      op.bytes = params * (pb + 2.0 * rb);
    }
    it = cache_.emplace(key.unit, timer_.whole({op})).first;
  }
  return it->second.ops.front().bytes > 0 ? &it->second : nullptr;
}

PassRunner::Cursor::Cursor(PassRunner& runner, const std::vector<int>& group, const PartList& parts, EventKind kind,
                           std::uint32_t name, std::vector<TaskId>& gates, const PassKey& key)
    : r_(runner), group_(group), parts_(parts), kind_(kind), name_(name), gates_(gates), key_(key),
      out_{std::vector<TaskId>(group.size(), kNoTask), std::vector<TaskId>(group.size(), kNoTask)},
      async_gates_(group.size(), kNoTask) {
  if (!parts_.empty()) {
    if (const TimedOps* copy = r_.fsdp_.before(group_.front(), key_)) {
      for (std::size_t g = 0; g < group_.size(); ++g)
        out_.first[g] = out_.last[g] = r_.b_.compute(group_[g], kind_, *copy, name_);
    }
  }
  // Float8 TP (torchao's Float8ColwiseParallel / Float8RowwiseParallel, as torchtitan applies
  // them under Float8): the activations are cast to fp8 before the sequence-parallel all-gather
  // that feeds a Float8 linear layer (forward), and the output gradients before the one that
  // feeds a row-parallel layer's backward. Two gathers feed no Float8 layer: the last layer's
  // last in forward (the LM head's input) and the first layer's last in backward (the
  // embedding's gradient). Not under torchao's rowwise recipe: torchtitan applies the plain TP
  // styles to it (parallelize_llama.py: enable_float8_tensorwise_tp = float8 and not rowwise),
  // and the rowwise casts run after the gather.
  const auto& s = r_.b_.world().scenario;
  fp8_tp_ = s.training.precision == "fp8" && s.parallel.sequence_parallel && s.training.fp8_recipe != "rowwise";
  for (std::size_t i = 0; i < parts_.size(); ++i)
    if (parts_[i].after == After::sync || parts_[i].after == After::sync_async) last_sync_ = static_cast<int>(i);
  if (parts_.empty()) finish();
}

void PassRunner::Cursor::step() {
  if (done_) return;
  StepBuilder& b = r_.b_;
  TensorParallel& tp = r_.tp_;
  const auto& s = b.world().scenario;
  const std::vector<int>& group = group_;
  std::vector<TaskId>& gates = gates_;
  const PassKey& key = key_;
  const EventKind kind = kind_;
  const std::uint32_t name = name_;
  const std::size_t i = next_++;
  const bool backward = key.part == PassPart::backward;
  const Part& part = parts_[i];
  std::vector<TaskId> tasks(group.size());
  if (part.gathers_input && tp.async()) {
    // A plain all-gather first, after the pass so far and what the part waited for: the
    // embedding's gradient, or the activations (output gradients) that a rowwise Float8 cast
    // reads before its GEMM (Part::gathers_input).
    std::vector<TaskId> before = out_.last;
    before.insert(before.end(), gates.begin(), gates.end());
    gates = tp.gather_in_pass(group, kNoTask, before, false, kind);
  }
  if (part.fused != Part::Fused::none) {
    tasks = tp.fused(group, part, kind, name, gates, out_.first);
    out_.last = tasks;
  }
  for (std::size_t g = 0; g < group.size() && part.fused == Part::Fused::none; ++g) {
    if (part.ring_steps > 0) {
      const auto [first, last] = r_.cp_.ring_attention(group[g], part, kind, name, gates[g], out_.last[g], key, static_cast<int>(i));
      tasks[g] = last;
      if (out_.first[g] == kNoTask) out_.first[g] = first;
    } else {
      tasks[g] = b.compute(group[g], kind, part.ops, name);
      if (gates[g] != kNoTask) b.depend(gates[g], tasks[g]);
      if (out_.first[g] == kNoTask) out_.first[g] = tasks[g];
    }
    out_.last[g] = tasks[g];
  }
  gates = async_gates_;  // the part after the async one waits for its collective
  std::fill(async_gates_.begin(), async_gates_.end(), kNoTask);
  if (pending_rs_ != kNoTask) {
    // SP backward: a column-parallel layer's input gradient is reduce-scattered; the
    // scattered gradient goes through the norm's backward on its 1/tp of the sequence, and
    // only then is all-gathered (the backward of the forward's reduce-scatter) for the
    // row-parallel layer before it — a data dependency of every SP implementation. Megatron-LM
    // (megatron/mpu/layers.py, LinearWithGradAccumulationAndAsyncCommunication, May 2022)
    // overlaps the reduce-scatter with the weight-gradient GEMM (this part), not the
    // all-gather: it waits for the reduce-scatter and for this part; the next part for it.
    // AsyncTP: the all-gather is fused with the GEMM that consumes it (a later gather part);
    // the part after this one waits for the reduce-scatter alone.
    if (tp.async()) {
      std::fill(gates.begin(), gates.end(), pending_rs_);
    } else {
      gates = tp.gather_in_pass(group, pending_rs_, tasks, pending_fp8_, kind);
    }
    pending_rs_ = kNoTask;
  }
  if (part.after == After::all_to_all) {
    // Each TP rank is in its own EP group (ranks that differ in dp only); the group's
    // all-to-all is one task shared with the other TP groups in it.
    const bool routing = part.dispatch && key.part != PassPart::backward;
    for (std::size_t g = 0; g < group.size(); ++g) {
      const auto exchange = r_.ep_.all_to_all(group[g], key, static_cast<int>(i), routing);
      b.depend(tasks[g], exchange.entry);
      gates[g] = exchange.exit;
    }
  } else if (part.after != After::none) {
    // (A recompute's gathers feed its own layer's Float8 linears.)
    const bool feeds_bf16 = static_cast<int>(i) == last_sync_ && key.part != PassPart::recompute &&
                            (backward ? key.unit == 0 : key.unit == s.model.layers - 1);
    const bool fp8_gather = fp8_tp_ && !feeds_bf16;
    if (part.after == After::gather) {
      // A PyTorch recompute's own all-gather of a norm output; under AsyncTP the GEMM that
      // takes it (a fused gather part) gathers.
      if (!tp.async()) gates = tp.gather_in_pass(group, kNoTask, tasks, fp8_gather, kind);
    } else if (part.after == After::sync_async && tp.sequence_parallel() && i + 1 < parts_.size()) {
      // its all-gather follows the next part (above)
      pending_rs_ = tp.scatter_in_pass(group, tasks, kind);
      pending_fp8_ = fp8_gather;
    } else {
      std::vector<TaskId> after(group.size(), kNoTask);
      if (tp.async()) {
        // AsyncTP: a sync left as a plain collective (the embedding's, a backward input
        // gradient's without weight gradients beside it) is its reduce-scatter; the gather is
        // fused later.
        std::fill(after.begin(), after.end(), tp.scatter_in_pass(group, tasks, kind));
      } else if (tp.relayouts()) {
        after = tp.gather_in_pass(group, tp.scatter_in_pass(group, tasks, kind), {}, fp8_gather, kind);
      } else {
        std::fill(after.begin(), after.end(), tp.all_reduce(group, tasks, fp8_gather));
      }
      for (std::size_t g = 0; g < group.size(); ++g) (part.after == After::sync ? gates : async_gates_)[g] = after[g];
    }
  }
  if (next_ == parts_.size()) finish();
}

void PassRunner::Cursor::finish() {
  done_ = true;
  for (std::size_t g = 0; g < group_.size(); ++g)
    if (async_gates_[g] != kNoTask) gates_[g] = async_gates_[g];
  if (const TimedOps* copy = r_.fsdp_.after(group_.front(), key_, parts_)) {
    for (std::size_t g = 0; g < group_.size(); ++g) out_.last[g] = r_.b_.compute(group_[g], kind_, *copy, name_);
  }
  if (const TimedOps* add = r_.accumulation_.after(group_.front(), key_, parts_)) {
    for (std::size_t g = 0; g < group_.size(); ++g) out_.last[g] = r_.b_.compute(group_[g], kind_, *add, name_);
  }
}

PassRunner::PassTasks PassRunner::run(const std::vector<int>& group, const PartList& parts, EventKind kind,
                                      std::uint32_t name, std::vector<TaskId>& gates, const PassKey& key) {
  Cursor c(*this, group, parts, kind, name, gates, key);
  while (!c.done()) c.step();
  return c.tasks();
}

}  // namespace ironlaw::run::detail
