#include "run/data_parallel.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace ironlaw::run::detail {

using comm::CollectiveOp;

namespace {

/// What the strategies share: the bytes and label of a unit, and collective names.
struct Units {
  explicit Units(StepBuilder& b, ParamPart part = ParamPart::all)
      : b_(b), L_(b.world().scenario.model.layers),
        elem_(workload::stored_parameter_bytes(b.world().scenario.training)),
        reduce_(workload::reduce_bytes(b.world().scenario.training)), part_(part) {}

  double params(int u) const { return unit_params(b_.costs(), L_, u, part_); }
  /// Bytes of the unit's parameters as stored and as ZeRO 1/2 all-gather them.
  double bytes(int u) const { return params(u) * elem_; }
  /// Bytes of the unit's gradients in the reduce dtype (training.reduce_dtype).
  double grad_bytes(int u) const { return params(u) * reduce_; }
  /// Bytes a ZeRO-3 all-gather of the unit moves: its linear weights at gathered_linear_bytes
  /// (1 under fp8 all-gather), the rest (norms; embedding and LM head) at the parameters' bytes.
  double gather_bytes(int u) const { return unit_gather_bytes(b_.costs(), b_.world().scenario.training, L_, u, part_); }
  std::string label(int u) const {
    return u < L_ ? "layer" + std::to_string(u) : u == L_ ? std::string("embedding") : std::string("head");
  }
  std::uint32_t name(CollectiveOp op, const std::string& what) const {
    return b_.name(std::string(part_ == ParamPart::experts ? "edp " : "dp ") + comm::op_name(op) + " " + what);
  }
  int layers() const { return L_; }

 private:
  StepBuilder& b_;
  int L_;
  double elem_, reduce_;
  ParamPart part_;
};

/// ZeRO 0, 1 and 2: gradient buckets reduced as backward fills them.
class Buckets : public DataParallelStrategy {
 public:
  explicit Buckets(CollectiveOp op) : op_(op) {}

  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    const Units u(b, g.part);
    UnitTasks& t = b.units();
    const double bucket_bytes = b.world().scenario.parallel.bucket_bytes;
    std::vector<TaskId> done;
    double filled = 0;
    int bucket = 0;
    for (std::size_t i = 0; i < g.units.size(); ++i) {
      filled += u.grad_bytes(g.units[i]);
      // (An expert group's last units, the dense ones, may leave nothing to reduce.)
      if (filled >= bucket_bytes || (i + 1 == g.units.size() && (filled > 0 || g.part != ParamPart::experts))) {
        const TaskId c = b.collective(op_, g.group, filled, u.name(op_, "bucket" + std::to_string(bucket++)), g.members,
                                      g.communicator);
        for (int mem : g.members) b.depend(t.at(t.bwd_last, mem, g.last_microbatch, g.units[i]), c);
        for (TaskId a : g.after) b.depend(a, c);
        done.push_back(c);
        filled = 0;
      }
    }
    return done;
  }
  bool splits_experts() const override { return true; }

 private:
  CollectiveOp op_;
};

/// ZeRO 1 and 2: reduce-scattered buckets; the updated shards are all-gathered after the
/// optimizer, or, under parallel.overlap_param_gather, unit by unit during the forward.
class ShardedOptimizer final : public Buckets {
 public:
  ShardedOptimizer() : Buckets(CollectiveOp::reduce_scatter) {}

  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    if (b.world().scenario.parallel.overlap_param_gather) gather_during_forward(b, g);
    return Buckets::reduce_gradients(b, g);
  }

  void after_optimizer(StepBuilder& b, const ReductionGroup& g, const std::vector<TaskId>& optimizer) const override {
    if (b.world().scenario.parallel.overlap_param_gather) return;  // the next step's forward gathers
    gather_updated_parameters(b, g, optimizer);
  }

  /// The all-gather of the updated shards after the optimizer: every unit the rank holds.
  static void gather_updated_parameters(StepBuilder& b, const ReductionGroup& g, const std::vector<TaskId>& optimizer) {
    const Units u(b, g.part);
    double held = 0;
    for (int unit : g.units) held += bytes(b, u, unit);
    const TaskId ag = b.collective(CollectiveOp::all_gather, g.group, held, u.name(CollectiveOp::all_gather, "params"),
                                   g.members, g.communicator);
    for (TaskId o : optimizer) b.depend(o, ag);
  }

 private:
  /// Megatron-core's fp8_param_gather (training.fp8_all_gather under ZeRO 1/2): the updated
  /// linear weights are gathered as the fp8 parameters they are.
  static double bytes(StepBuilder& b, const Units& u, int unit) {
    return b.world().scenario.training.fp8_all_gather ? u.gather_bytes(unit) : u.bytes(unit);
  }

  /// Megatron-core's overlap_param_gather in its steady state: each unit's gather, in the order
  /// of first use, before the unit's first forward; the first waits for nothing (the step's
  /// first forward pre-hook starts and waits for it), the i-th is dispatched by the forward
  /// pre-hook of unit i − 1, i.e. once unit i − 2's first forward is done (finish_param_sync
  /// dispatches the next bucket group's all-gather).
  static void gather_during_forward(StepBuilder& b, const ReductionGroup& g) {
    const Units u(b, g.part);
    UnitTasks& t = b.units();
    for (std::size_t i = 0; i < g.first_use.size(); ++i) {
      const auto [unit, mb] = g.first_use[i];
      const TaskId ag = b.collective(CollectiveOp::all_gather, g.group, bytes(b, u, unit),
                                     u.name(CollectiveOp::all_gather, "params " + u.label(unit)), g.members,
                                     g.communicator);
      for (int mem : g.members) {
        b.depend(ag, t.at(t.fwd_first, mem, mb, unit));
        if (i >= 2) {
          const auto [earlier, earlier_mb] = g.first_use[i - 2];
          b.depend(t.at(t.fwd_first, mem, earlier_mb, earlier), ag);
        }
      }
    }
  }
};

/// DeepSpeed's BF16_Optimizer (training.bf16_optimizer) at the end of a step, as DeepSpeed's
/// engine runs it (microsoft/DeepSpeed 56c52238, "bf16+pipeline parallelism (#1801)", the work
/// BLOOM's training ran: pipe/engine.py _exec_reduce_grads → _bf16_reduce_grads; engine.py
/// buffered_allreduce_fallback → allreduce_bucket; bf16_optimizer.py step). Once the step's
/// backward is done, the rank's fp32 gradient buffers (get_grads_for_reduction, unsharded) are
/// flattened into a bucket (torch.cat: read 4, write 4 B per parameter), cast to the
/// communication dtype c unless that is fp32 (read 4, write c), all-reduced over the group —
/// an all-reduce, not a reduce-scatter: every rank keeps every fp32 gradient —, scaled by 1/dp
/// (postscale_gradients: read c, write c), cast back (read c, write 4) and copied into the
/// buffers (read 4, write 4). BF16_Optimizer.step then takes the global norm of those unsharded
/// gradients (read 4) and clips them (read 4, write 4), updates its 1/dp shard (the optimizer
/// task; ZeRO 1, how the scenarios name its partitioning) and all-gathers the bf16 parameters;
/// clear_hp_grads zeroes the buffers (write 4; timed before the update, the same sum). The
/// engine reduces in buckets of 500M elements, one after another (each flattened, reduced and
/// copied back before the next): the bytes of one bucket, as built here. Kernels: one per pass
/// and flat group (two: with and without weight decay), the norms and clips one per unit (the
/// per-tensor launches of a unit are counted once). The bucket's own memory (at most 500M fp32
/// elements and their cast: 3 GB) is not replayed: it lives after the last backward, when the
/// step's activations are freed, below the step's peak.
class Bf16OptimizerReduction final : public DataParallelStrategy {
 public:
  explicit Bf16OptimizerReduction(bool sharded) : sharded_(sharded) {}

  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    const Units u(b);
    UnitTasks& t = b.units();
    double params = 0;
    for (int unit : g.units) params += u.params(unit);
    const Ops& ops = ops_for(b, params, static_cast<int>(g.units.size()));
    const double c = comm_bytes(b.world().scenario.training);
    std::vector<TaskId> flattened;
    for (int mem : g.members) {
      const TaskId f = b.compute(mem, EventKind::backward, ops.flatten, b.name("bf16 gradient flatten"));
      for (int unit : g.units) b.depend(t.at(t.bwd_last, mem, g.last_microbatch, unit), f);
      for (TaskId a : g.after) b.depend(a, f);
      flattened.push_back(f);
    }
    const TaskId ar = b.collective(CollectiveOp::all_reduce, g.group, params * c,
                                   u.name(CollectiveOp::all_reduce, "fp32 gradients"), g.members, g.communicator);
    for (TaskId f : flattened) b.depend(f, ar);
    std::vector<TaskId> done;
    for (int mem : g.members) {
      const TaskId back = b.compute(mem, EventKind::backward, ops.copy_back, b.name("bf16 gradient copy back"));
      b.depend(ar, back);
      const TaskId clip = b.compute(mem, EventKind::optimizer, ops.clip, b.name("bf16 gradient clip"));
      b.depend(back, clip);
      done.push_back(clip);
    }
    return done;
  }

  void after_optimizer(StepBuilder& b, const ReductionGroup& g, const std::vector<TaskId>& optimizer) const override {
    if (sharded_) ShardedOptimizer::gather_updated_parameters(b, g, optimizer);
  }

 private:
  struct Ops {
    TimedOps flatten, copy_back, clip;
  };

  /// Bytes per element on the wire: communication_data_type, else the fp32 buffers' own.
  static double comm_bytes(const config::TrainingSpec& training) {
    return workload::bytes_per_element(training.communication_data_type.empty() ? std::string("fp32")
                                                                               : training.communication_data_type);
  }

  /// The passes over `params` fp32 gradients of `units` units, timed once per size (they live
  /// as long as the strategy: the step's tasks point at them).
  const Ops& ops_for(StepBuilder& b, double params, int units) const {
    const auto key = std::make_pair(params, units);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const auto& s = b.world().scenario;
    OpTimer timer(s.topology.device, s.training.precision, s.training.framework, b.world().sink,
                  s.training.launch_blocking);
    const double c = comm_bytes(s.training);
    const bool cast = c != 4.0;
    const auto pass = workload::memory_pass;
    constexpr int kFlatGroups = 2;
    std::vector<workload::Op> flatten{pass("grad_flatten", params * 8.0, 1)};
    if (cast) flatten.push_back(pass("grad_to_comm_dtype", params * (4.0 + c), 1));
    std::vector<workload::Op> back{pass("grad_postscale", params * 2.0 * c, 1)};
    if (cast) back.push_back(pass("grad_from_comm_dtype", params * (c + 4.0), 1));
    back.push_back(pass("grad_unflatten", params * 8.0, kFlatGroups));
    const std::vector<workload::Op> clip{pass("grad_norm", params * 4.0, units),
                                         pass("grad_clip", params * 8.0, units),
                                         pass("hp_grad_zero", params * 4.0, kFlatGroups)};
    Ops ops{timer.whole(flatten), timer.whole(back), timer.whole(clip)};
    return cache_.emplace(key, std::move(ops)).first->second;
  }

  bool sharded_;
  mutable std::map<std::pair<double, int>, Ops> cache_;
};

/// ZeRO 3 (FSDP), in the two ways torchtitan runs FSDP2: without pipeline parallelism every
/// unit is gathered before each forward and again before each backward and its gradients are
/// reduce-scattered after each backward; with pp > 1 (reshard_after_forward=False, and the
/// pipeline stage's post-backward deferred to the last microbatch) each unit is gathered once
/// per step, before its first forward, the microbatches reuse the gathered weights, and the
/// gradients, accumulated unsharded, are reduce-scattered once the chunk's last backward is
/// done.
class FullyShardedZero3 final : public DataParallelStrategy {
 public:
  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    return b.layout().pp > 1 ? gather_once(b, g) : gather_per_pass(b, g);
  }

 private:
  static TaskId gather(StepBuilder& b, const Units& u, const ReductionGroup& g, int unit) {
    return b.collective(CollectiveOp::all_gather, g.group, u.gather_bytes(unit),
                        u.name(CollectiveOp::all_gather, u.label(unit)), g.members, g.communicator);
  }
  static TaskId reduce_scatter(StepBuilder& b, const Units& u, const ReductionGroup& g, int unit) {
    return b.collective(CollectiveOp::reduce_scatter, g.group, u.grad_bytes(unit),
                        u.name(CollectiveOp::reduce_scatter, u.label(unit)), g.members, g.communicator);
  }

  /// pp > 1: one gather per unit, in the order of first use, each waiting until the first task
  /// of the unit two before it is done (prefetch depth one: under ZeRO-3 that task is FSDP's
  /// copy-out, which frees that gather's buffer, FsdpCopies); one reduce-scatter per unit after
  /// the last backward of its chunk.
  static std::vector<TaskId> gather_once(StepBuilder& b, const ReductionGroup& g) {
    const Units u(b);
    UnitTasks& t = b.units();
    for (std::size_t i = 0; i < g.first_use.size(); ++i) {
      const auto [unit, mb] = g.first_use[i];
      const TaskId ag = gather(b, u, g, unit);
      for (int mem : g.members) {
        b.depend(ag, t.at(t.fwd_first, mem, mb, unit));
        if (i >= 2) {
          const auto [earlier, earlier_mb] = g.first_use[i - 2];
          b.depend(t.at(t.fwd_first, mem, earlier_mb, earlier), ag);
        }
      }
    }
    std::vector<TaskId> done;
    for (std::size_t i = 0; i < g.units.size(); ++i) {
      const TaskId rs = reduce_scatter(b, u, g, g.units[i]);
      for (int mem : g.members) b.depend(t.at(t.bwd_last, mem, g.last_microbatch, g.chunk_end[i]), rs);
      done.push_back(rs);
    }
    return done;
  }

  /// pp == 1: gathered before every forward and every backward (before every forward only under
  /// SHARD_GRAD_OP), reduce-scattered after every backward; all on the group's communicator, in
  /// issue order.
  static std::vector<TaskId> gather_per_pass(StepBuilder& b, const ReductionGroup& g) {
    const Units u(b);
    UnitTasks& t = b.units();
    const int L = u.layers();
    const int m = b.layout().microbatches;
    // Forward: embedding, the layers, the head; each gather waits until the first task of the
    // unit two before it is done (prefetch depth one; see gather_once) — under FSDP1 until its
    // last: the rate limiter issues a gather once the unit two before has been resharded, a
    // free recorded after its forward (limit_all_gathers: _free_event_queue, two in flight).
    const bool fsdp1 = b.world().scenario.parallel.fsdp1();
    // SHARD_GRAD_OP (parallel.reshard_after_forward false): a unit stays gathered from its
    // forward to its post-backward, so backward gathers nothing; FSDP1's rate limiter then waits
    // on no free event in forward (only a reshard records one: _free_event_queue stays empty).
    const bool keep = !b.world().scenario.parallel.reshard_after_forward;
    std::vector<int> fwd_units{L};
    for (int l = 0; l < L; ++l) fwd_units.push_back(l);
    fwd_units.push_back(L + 1);
    std::vector<TaskId> done;
    for (int k = 0; k < m; ++k) {
      for (std::size_t i = 0; i < fwd_units.size(); ++i) {
        const TaskId ag = gather(b, u, g, fwd_units[i]);
        for (int mem : g.members) {
          b.depend(ag, t.at(t.fwd_first, mem, k, fwd_units[i]));
          if (i >= 2 && !(fsdp1 && keep)) b.depend(t.at(fsdp1 ? t.fwd_last : t.fwd_first, mem, k, fwd_units[i - 2]), ag);
        }
      }
      // Backward, in the order FSDP issues it on the communicator: the first unit's gather and
      // the prefetch of the second, then per unit its reduce-scatter (post-backward hook) and
      // the gather of the unit two later (FSDP1's BACKWARD_PRE prefetches it in the next
      // unit's pre-backward hook, BACKWARD_POST — Composer's default — in this unit's
      // post-backward hook just before the reduce-scatter, FSDP2 in the next pre-backward: the
      // communicator's order is the same, the gather waits for the reduce-scatter before it).
      // That order also bounds the prefetch: the gather of unit i follows unit i − 2's
      // reduce-scatter, which waits for that unit's whole backward — where FSDP2's buffer is
      // free and FSDP1's rate limiter lets the gather go.
      const auto backward_gather = [&](std::size_t i) {
        const int unit = g.units[i];
        const TaskId ag = gather(b, u, g, unit);
        for (int mem : g.members) {
          b.depend(ag, t.at(t.bwd_first, mem, k, unit));
          b.depend(t.at(t.fwd_first, mem, k, L + 1), ag);  // backward gathers follow the forward
        }
      };
      const std::size_t prefetched = keep ? 0 : std::min<std::size_t>(2, g.units.size());
      for (std::size_t i = 0; i < prefetched; ++i) backward_gather(i);
      for (std::size_t i = 0; i < g.units.size(); ++i) {
        const TaskId rs = reduce_scatter(b, u, g, g.units[i]);
        for (int mem : g.members) b.depend(t.at(t.bwd_last, mem, k, g.units[i]), rs);
        done.push_back(rs);
        if (!keep && i + 2 < g.units.size()) backward_gather(i + 2);
      }
    }
    return done;
  }
};

/// The all-reduce of a tied word embedding's gradients between the first pipeline stage, which
/// holds the table, and the last, which holds its copy as the LM head (pp > 1 with
/// model.tied_embeddings): one instance per (tp, dp, cp) position, over the two ranks, as
/// Megatron's embedding group (_allreduce_word_embedding_grads, the gradients in its main_grad's
/// dtype: reduce_bytes) and DeepSpeed's tied modules (_exec_reduce_tied_grads: the fp32 _hp_grad
/// under bf16_optimizer, else the parameters' gradient) run it. DeepSpeed's waits for the two
/// ranks' last backward of the embedding and of the head (`grads_done` empty); Megatron's for
/// both ranks' gradient reductions (`grads_done`, per group). The representative of one
/// simulated data-parallel replica also runs the instances of the replicas not simulated, whose
/// traffic shares its links. Sets `tied_of` for every participant.
void tied_embedding_reduction(StepBuilder& b, const std::vector<ReductionGroup>& groups,
                              const std::vector<int>& group_of, const std::vector<std::vector<TaskId>>& grads_done,
                              std::vector<TaskId>& tied_of) {
  const Layout& lay = b.layout();
  const auto& s = b.world().scenario;
  if (!s.model.tied_embeddings || lay.pp == 1 || b.costs().head_params <= 0) return;
  const int L = s.model.layers;
  const Units u(b);
  const int head = L + 1;
  const double bytes = s.parallel.pp_runtime != "deepspeed" ? u.grad_bytes(head)
                       : s.training.bf16_optimizer           ? u.params(head) * 4.0
                                                             : u.bytes(head);
  const std::uint32_t name = b.name("emb all_reduce tied word embedding");
  UnitTasks& t = b.units();
  for (const int r : b.ranks()) {
    const Coord c = lay.coord_of(r);
    if (c[Dim::pp] != 0) continue;
    const auto pair_of = [&](Coord x) {
      Coord last = x;
      last[Dim::pp] = lay.pp - 1;
      return std::vector<int>{lay.rank_of(x), lay.rank_of(last)};
    };
    std::vector<std::vector<int>> instances{pair_of(c)};
    if (c[Dim::dp] == 0) {
      for (int d = 1; d < lay.dp; ++d) {
        Coord x = c;
        x[Dim::dp] = d;
        if (b.local_of(lay.rank_of(x)) < 0) instances.push_back(pair_of(x));
      }
    }
    std::vector<int> all;
    for (const auto& pair : instances) all.insert(all.end(), pair.begin(), pair.end());
    const std::vector<int> participants = b.simulated(all);
    const TaskId task = b.collectives(CollectiveOp::all_reduce, std::move(instances), bytes, name, participants);
    for (int p : participants) {
      const auto k = static_cast<std::size_t>(group_of[static_cast<std::size_t>(p)]);
      if (grads_done.empty()) {
        const int unit = lay.coord_of(b.ranks()[static_cast<std::size_t>(p)])[Dim::pp] == 0 ? L : head;
        const TaskId last = t.at(t.bwd_last, p, groups[k].last_microbatch, unit);
        if (last != kNoTask) b.depend(last, task);
      } else {
        for (TaskId d : grads_done[k]) b.depend(d, task);
      }
      tied_of[static_cast<std::size_t>(p)] = task;
    }
  }
}

}  // namespace

double unit_params(const Costs& costs, int layers, int u, ParamPart part) {
  if (u < layers) {
    const LayerCosts& l = costs.layer(u);
    return part == ParamPart::all ? l.params : part == ParamPart::experts ? l.expert_params : l.params - l.expert_params;
  }
  if (part == ParamPart::experts) return 0;
  return u == layers ? costs.embed_params : costs.head_params;
}

double unit_gather_bytes(const Costs& costs, const config::TrainingSpec& training, int layers, int u, ParamPart part) {
  const double pb = workload::parameter_bytes(training.precision);
  const double gathered = workload::gathered_linear_bytes(training);
  if (u < layers) {
    const LayerCosts& l = costs.layer(u);
    if (part == ParamPart::experts) return l.expert_params * gathered;
    const double linear = part == ParamPart::dense ? l.linear_params - l.expert_params : l.linear_params;
    return linear * gathered + (l.params - l.linear_params) * pb;
  }
  return unit_params(costs, layers, u, part) * pb;
}

std::unique_ptr<DataParallelStrategy> make_data_parallel(const config::Scenario& s) {
  const int zero = s.parallel.zero;
  if (s.training.bf16_optimizer && zero >= 0 && zero <= 2) return std::make_unique<Bf16OptimizerReduction>(zero >= 1);
  if (zero == 0) return std::make_unique<Buckets>(CollectiveOp::all_reduce);
  if (zero == 1 || zero == 2) return std::make_unique<ShardedOptimizer>();
  if (zero == 3) return std::make_unique<FullyShardedZero3>();
  throw std::invalid_argument("ZeRO stage must be 0, 1, 2 or 3, got " + std::to_string(zero));
}

void build_data_parallel(StepBuilder& b, const DataParallelStrategy& strategy, const PipelineSchedule& schedule) {
  const Layout& lay = b.layout();
  const int L = b.world().scenario.model.layers;
  const std::uint32_t opt_name = b.name("optimizer");
  const Pass completing = schedule.splits_backward() ? Pass::weight_grad : Pass::backward;

  std::vector<ReductionGroup> groups;
  std::vector<int> group_of(b.ranks().size(), -1);  // simulated local → its entry of `groups`
  for (std::size_t i = 0; i < b.ranks().size(); ++i) {
    const int r = b.ranks()[i];
    const Coord c = lay.coord_of(r);
    if (c[Dim::dp] != 0 || c[Dim::cp] != 0) continue;  // one representative per group
    ReductionGroup g;
    // Gradients are reduced over the ranks that hold the same parameters: DP × CP (the routed
    // experts, under strategies that split them, over their own group: below).
    g.group = lay.group(r, Dim::dp, Dim::cp);
    g.members = b.simulated(g.group);  // all, or replica 0's CP ranks
    const std::string tag = "dp" + std::to_string(r);
    g.communicator = b.add_stream(tag + "/communicator");
    // The units this pipeline rank holds, in the order backward finishes them: the last
    // microbatch's backward of each chunk completes its gradients (GPipe runs the backwards
    // last in first out, so that is microbatch 0 there). Units without kernels (a layer
    // list's flatten, its absent embedding and head) hold no parameters and have no backward
    // to wait for.
    const int stage = c[Dim::pp];
    const auto order = schedule.order(stage, lay.pp, lay.microbatches, lay.virtual_stages);
    g.last_microbatch = order.back().microbatch;
    UnitTasks& t = b.units();
    const int first = g.members.front();
    std::vector<bool> used(static_cast<std::size_t>(lay.chunks()), false);
    for (const auto& slot : order) {
      const int chunk = slot.local_chunk * lay.pp + stage;
      const int begin = lay.first_layer(chunk), end = begin + lay.chunk_layers[static_cast<std::size_t>(chunk)];
      if (slot.pass == Pass::forward && !used[static_cast<std::size_t>(chunk)]) {
        // The chunk's first forward: the units in the order it runs them.
        used[static_cast<std::size_t>(chunk)] = true;
        std::vector<int> forward;
        if (chunk == 0) forward.push_back(L);
        for (int l = begin; l < end; ++l) forward.push_back(l);
        if (chunk == lay.chunks() - 1) forward.push_back(L + 1);
        for (int unit : forward)
          if (t.at(t.fwd_first, first, slot.microbatch, unit) != kNoTask) g.first_use.emplace_back(unit, slot.microbatch);
      }
      if (slot.pass != completing || slot.microbatch != g.last_microbatch) continue;
      std::vector<int> backward;
      if (chunk == lay.chunks() - 1) backward.push_back(L + 1);
      for (int l = end - 1; l >= begin; --l) backward.push_back(l);
      if (chunk == 0) backward.push_back(L);
      std::erase_if(backward, [&](int unit) { return t.at(t.bwd_last, first, g.last_microbatch, unit) == kNoTask; });
      for (int unit : backward) {
        g.units.push_back(unit);
        g.chunk_end.push_back(backward.back());
      }
    }
    for (int mem : g.members) group_of[static_cast<std::size_t>(mem)] = static_cast<int>(groups.size());
    groups.push_back(std::move(g));
  }

  // The tied embedding's gradients: DeepSpeed all-reduces them before the data-parallel
  // reduction (ReduceTiedGrads, then ReduceGrads), Megatron after it (finish_grad_sync, then
  // _allreduce_word_embedding_grads).
  const bool deepspeed = b.world().scenario.parallel.pp_runtime == "deepspeed";
  std::vector<TaskId> tied_of(b.ranks().size(), kNoTask);
  if (deepspeed) {
    tied_embedding_reduction(b, groups, group_of, {}, tied_of);
    for (std::size_t local = 0; local < tied_of.size(); ++local)
      if (tied_of[local] != kNoTask) groups[static_cast<std::size_t>(group_of[local])].after.push_back(tied_of[local]);
  }
  // The routed experts' own groups (strategy.splits_experts): each dense group keeps the rest,
  // and the ranks that hold the same experts (Layout::edp_group) reduce those, on a
  // communicator of their own (Megatron-core's expert-data-parallel process group).
  const std::size_t dense_groups = groups.size();
  if (strategy.splits_experts() && lay.ep > 1 && b.costs().moe.expert_params > 0) {
    std::set<int> made;  // the first rank of every expert group made
    for (std::size_t k = 0; k < dense_groups; ++k) {
      groups[k].part = ParamPart::dense;
      const ReductionGroup dense = groups[k];
      for (int mem : dense.members) {
        const std::vector<int> edp = lay.edp_group(b.ranks()[static_cast<std::size_t>(mem)]);
        // A rank alone with its experts (EP = TP·DP folded, or EP = DP·CP) reduces nothing.
        if (edp.size() < 2 || !made.insert(edp.front()).second) continue;
        ReductionGroup e = dense;
        e.part = ParamPart::experts;
        e.group = edp;
        e.members = b.simulated(edp);
        e.after.clear();
        e.communicator = b.add_stream("edp" + std::to_string(edp.front()) + "/communicator");
        groups.push_back(std::move(e));
      }
    }
  }
  std::vector<std::vector<TaskId>> grads_done;
  for (const ReductionGroup& g : groups) grads_done.push_back(strategy.reduce_gradients(b, g));
  if (!deepspeed) tied_embedding_reduction(b, groups, group_of, grads_done, tied_of);

  // Optimizer over the parameters each rank owns, once its gradients are reduced: one per rank,
  // made with its dense group, after that group's reduction and, with expert groups, theirs too.
  std::vector<TaskId> opt_of(b.ranks().size(), kNoTask);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const ReductionGroup& g = groups[k];
    std::vector<TaskId> opt;
    for (int mem : g.members) {
      TaskId& o = opt_of[static_cast<std::size_t>(mem)];
      if (k < dense_groups) {
        o = b.compute(mem, EventKind::optimizer, b.costs().optimizer, opt_name);
        if (tied_of[static_cast<std::size_t>(mem)] != kNoTask) b.depend(tied_of[static_cast<std::size_t>(mem)], o);
      }
      for (TaskId d : grads_done[k]) b.depend(d, o);
      opt.push_back(o);
    }
    strategy.after_optimizer(b, g, opt);
  }
}

}  // namespace ironlaw::run::detail
