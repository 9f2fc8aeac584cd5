#include "run/data_parallel.hpp"

#include <stdexcept>
#include <string>

namespace ironlaw::run::detail {

using comm::CollectiveOp;

namespace {

/// What the strategies share: the size and label of a unit, and collective names.
struct Units {
  explicit Units(StepBuilder& b)
      : b_(b), L_(b.world().scenario.model.layers), elem_(workload::parameter_bytes(b.world().scenario.training.precision)) {}

  double bytes(int u) const {
    const Costs& c = b_.costs();
    return (u < L_ ? c.layer(u).params : u == L_ ? c.embed_params : c.head_params) * elem_;
  }
  std::string label(int u) const {
    return u < L_ ? "layer" + std::to_string(u) : u == L_ ? std::string("embedding") : std::string("head");
  }
  std::uint32_t name(CollectiveOp op, const std::string& what) const {
    return b_.name(std::string("dp ") + comm::op_name(op) + " " + what);
  }
  int layers() const { return L_; }

 private:
  StepBuilder& b_;
  int L_;
  double elem_;
};

/// ZeRO 0, 1 and 2: gradient buckets reduced as backward fills them.
class Buckets : public DataParallelStrategy {
 public:
  explicit Buckets(CollectiveOp op) : op_(op) {}

  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    const Units u(b);
    UnitTasks& t = b.units();
    const double bucket_bytes = b.world().scenario.parallel.bucket_bytes;
    std::vector<TaskId> done;
    double filled = 0;
    int bucket = 0;
    for (std::size_t i = 0; i < g.units.size(); ++i) {
      filled += u.bytes(g.units[i]);
      if (filled >= bucket_bytes || i + 1 == g.units.size()) {
        const TaskId c = b.collective(op_, g.group, filled, u.name(op_, "bucket" + std::to_string(bucket++)), g.members,
                                      g.all_reduce);
        for (int mem : g.members) b.depend(t.at(t.bwd_last, mem, g.last_microbatch, g.units[i]), c);
        done.push_back(c);
        filled = 0;
      }
    }
    return done;
  }

 private:
  CollectiveOp op_;
};

/// ZeRO 1 and 2: reduce-scattered buckets; the updated shards are all-gathered after the optimizer.
class ShardedOptimizer final : public Buckets {
 public:
  ShardedOptimizer() : Buckets(CollectiveOp::reduce_scatter) {}

  void after_optimizer(StepBuilder& b, const ReductionGroup& g, const std::vector<TaskId>& optimizer) const override {
    const Units u(b);
    double held = 0;
    for (int unit : g.units) held += u.bytes(unit);
    const TaskId ag = b.collective(CollectiveOp::all_gather, g.group, held, u.name(CollectiveOp::all_gather, "params"),
                                   g.members, g.all_gather);
    for (TaskId o : optimizer) b.depend(o, ag);
  }
};

/// ZeRO 3 (FSDP). pp == 1 here (resolve_layout).
class FullyShardedZero3 final : public DataParallelStrategy {
 public:
  std::vector<TaskId> reduce_gradients(StepBuilder& b, const ReductionGroup& g) const override {
    const Units u(b);
    UnitTasks& t = b.units();
    const int L = u.layers();
    const int m = b.layout().microbatches;
    std::vector<TaskId> done;
    auto gather = [&](int unit) {
      return b.collective(CollectiveOp::all_gather, g.group, u.bytes(unit), u.name(CollectiveOp::all_gather, u.label(unit)),
                          g.members, g.all_gather);
    };
    for (int k = 0; k < m; ++k) {
      // Forward: embedding, the layers, the head; each gather waits until compute has reached
      // the unit two before it (prefetch depth one).
      std::vector<int> fwd_units{L};
      for (int l = 0; l < L; ++l) fwd_units.push_back(l);
      fwd_units.push_back(L + 1);
      for (std::size_t i = 0; i < fwd_units.size(); ++i) {
        const TaskId ag = gather(fwd_units[i]);
        for (int mem : g.members) {
          b.depend(ag, t.at(t.fwd_first, mem, k, fwd_units[i]));
          if (i >= 2) b.depend(t.at(t.fwd_first, mem, k, fwd_units[i - 2]), ag);
        }
      }
      for (std::size_t i = 0; i < g.units.size(); ++i) {
        const int unit = g.units[i];
        const TaskId ag = gather(unit);
        for (int mem : g.members) {
          b.depend(ag, t.at(t.bwd_first, mem, k, unit));
          b.depend(t.at(t.fwd_first, mem, k, L + 1), ag);  // backward gathers follow the forward
          if (i >= 2) b.depend(t.at(t.bwd_first, mem, k, g.units[i - 2]), ag);
        }
        const TaskId rs = b.collective(CollectiveOp::reduce_scatter, g.group, u.bytes(unit),
                                       u.name(CollectiveOp::reduce_scatter, u.label(unit)), g.members, g.reduce_scatter);
        for (int mem : g.members) b.depend(t.at(t.bwd_last, mem, k, unit), rs);
        done.push_back(rs);
      }
    }
    return done;
  }
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_data_parallel(int zero) {
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

  for (std::size_t i = 0; i < b.ranks().size(); ++i) {
    const int r = b.ranks()[i];
    const Coord c = lay.coord_of(r);
    if (c[Dim::dp] != 0 || c[Dim::cp] != 0) continue;  // one representative per group
    ReductionGroup g;
    // Gradients are reduced over the ranks that hold the same parameters: DP × CP. (Routed
    // experts are reduced over the same group here, a slight overcount of their group.)
    g.group = lay.group(r, Dim::dp, Dim::cp);
    g.members = b.simulated(g.group);  // all, or replica 0's CP ranks
    const std::string tag = "dp" + std::to_string(r);
    g.all_gather = b.add_stream(tag + "/all_gather");
    g.reduce_scatter = b.add_stream(tag + "/reduce_scatter");
    g.all_reduce = b.add_stream(tag + "/all_reduce");
    // The units this pipeline rank holds, in the order backward finishes them: the last
    // microbatch's backward of each chunk completes its gradients (GPipe runs the backwards
    // last in first out, so that is microbatch 0 there).
    const int stage = c[Dim::pp];
    const auto order = schedule.order(stage, lay.pp, lay.microbatches, lay.virtual_stages);
    g.last_microbatch = order.back().microbatch;
    for (const auto& slot : order) {
      if (slot.pass != completing || slot.microbatch != g.last_microbatch) continue;
      const int chunk = slot.local_chunk * lay.pp + stage;
      if (chunk == lay.chunks() - 1) g.units.push_back(L + 1);
      for (int l = lay.first_layer(chunk) + lay.chunk_layers[static_cast<std::size_t>(chunk)] - 1;
           l >= lay.first_layer(chunk); --l)
        g.units.push_back(l);
      if (chunk == 0) g.units.push_back(L);
    }
    // Units without kernels (a layer list's flatten, its absent embedding and head) hold no
    // parameters and have no backward to wait for.
    std::erase_if(g.units, [&](int unit) {
      return b.units().at(b.units().bwd_last, g.members.front(), g.last_microbatch, unit) == kNoTask;
    });
    const std::vector<TaskId> grads_done = strategy.reduce_gradients(b, g);
    // Optimizer over the parameters this rank owns, once its gradients are reduced.
    std::vector<TaskId> opt;
    for (int mem : g.members) {
      const TaskId o = b.compute(mem, EventKind::optimizer, b.costs().optimizer, opt_name);
      for (TaskId d : grads_done) b.depend(d, o);
      opt.push_back(o);
    }
    strategy.after_optimizer(b, g, opt);
  }
}

}  // namespace ironlaw::run::detail
