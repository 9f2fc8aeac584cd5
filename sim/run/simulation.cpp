#include "run/simulation.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/collective.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "engine/task_graph.hpp"
#include "hardware/cluster.hpp"
#include "run/intervals.hpp"

namespace ironlaw::run {

TraceLevel parse_trace_level(const std::string& text) {
  if (text == "none") return TraceLevel::none;
  if (text == "step") return TraceLevel::step;
  if (text == "op") return TraceLevel::op;
  if (text == "flow") return TraceLevel::flow;
  throw std::invalid_argument("trace level must be none, step, op or flow, got \"" + text + "\"");
}

Layout resolve_layout(const config::Scenario& s) {
  Layout l;
  l.gpus = s.gpus();
  const auto& p = s.parallel;
  l.tp = p.tp;
  l.pp = p.pp;
  l.cp = p.cp;
  l.dp = p.dp > 0 ? p.dp : l.gpus / (p.tp * p.pp * p.cp);
  std::vector<Diagnostic> unsupported;
  auto refuse = [&](const std::string& key, const std::string& what) {
    unsupported.push_back({s.where(key), key, what + " is not simulated by this version yet; use 1"});
  };
  if (p.tp != 1) refuse("parallel.tp", "tensor parallelism");
  if (p.pp != 1) refuse("parallel.pp", "pipeline parallelism");
  if (p.cp != 1) refuse("parallel.cp", "context parallelism");
  if (p.ep != 1) refuse("parallel.ep", "expert parallelism");
  if (s.model.experts > 1) refuse("model.experts", "a mixture-of-experts model");
  if (!unsupported.empty()) throw InputError(std::move(unsupported));

  const int seq = s.training.sequence_length;
  const double sequences = s.training.global_batch_tokens / seq;
  l.microbatch_sequences = p.microbatch_size;
  const double per_rank = sequences / l.dp;
  l.microbatches = static_cast<int>(per_rank / l.microbatch_sequences);
  if (l.microbatches < 1 || l.microbatches * l.microbatch_sequences * l.dp != static_cast<long long>(sequences)) {
    throw InputError(s.where("training.global_batch_tokens"), "training.global_batch_tokens",
                     "the global batch of " + std::to_string(static_cast<long long>(sequences)) +
                         " sequences does not split into microbatches of " +
                         std::to_string(l.microbatch_sequences) + " over " + std::to_string(l.dp) +
                         " data-parallel ranks");
  }
  l.tokens_per_step = sequences * seq;
  return l;
}

namespace {

using engine::StreamId;
using engine::TaskGraph;
using engine::TaskId;

/// Ops of one pass of one unit, with their simulated durations on the device.
struct TimedOps {
  std::vector<workload::Op> ops;
  std::vector<Time> times;
  std::vector<std::uint32_t> name_ids;
  Time total;
  double flops = 0;
  double bytes = 0;
};

TimedOps time_ops(std::vector<workload::Op> ops, const config::DeviceSpec& device,
                  const std::string& precision, RecordSink& sink) {
  TimedOps t;
  t.ops = std::move(ops);
  for (const auto& op : t.ops) {
    const Time d = workload::op_time(op, device, precision);
    t.times.push_back(d);
    t.name_ids.push_back(sink.intern_name(op.name));
    t.total += d;
    t.flops += op.flops;
    t.bytes += op.bytes;
  }
  return t;
}

/// A unit of the model as DDP buckets and FSDP wrapping see it: a transformer layer, or the
/// "root" (embedding, final norm, LM head), whose forward is split around the layers.
struct UnitCost {
  TimedOps forward, backward, recompute;
  double params = 0;
};

struct TaskMeta {
  std::int32_t rank = -1;  // -1: a collective over the whole DP group
  EventKind kind = EventKind::forward;
  std::uint32_t name = 0;
  const TimedOps* ops = nullptr;  // compute tasks: the ops inside, for op-level traces
  double flops = 0;
  double bytes = 0;
};

/// Everything that lives for the whole simulation.
struct World {
  World(const config::Scenario& s, RecordSink& record_sink, TraceLevel level)
      : scenario(s), sink(record_sink), trace(level), net(sim), cluster(s.topology, s.nodes, net),
        comm(sim, net, cluster) {}

  const config::Scenario& scenario;
  RecordSink& sink;
  TraceLevel trace;
  engine::Simulator sim;
  engine::FlowNetwork net;
  hardware::Cluster cluster;
  comm::Communicator comm;
};

/// Builds and runs one training step of data parallelism (ZeRO 0–3) on every rank.
class StepRun {
 public:
  StepRun(World& w, const Layout& layout, const UnitCost& layer, const UnitCost& root, std::int64_t index)
      : w_(w), layout_(layout), layer_(layer), root_(root), index_(index), graph_(w.sim) {
    for (int r = 0; r < layout.gpus; ++r) group_.push_back(r);
    compute_resource_ = w.sink.intern_resource("compute");
    comm_resource_ = w.sink.intern_resource("comm");
  }

  StepRecord run() {
    const Time start = w_.sim.now();
    build();
    graph_.set_observer([this](TaskId id, Time s, Time e) { observe(id, s, e); });
    graph_.start();
    w_.sim.run();
    if (graph_.completed() != graph_.size()) {
      throw std::logic_error("step " + std::to_string(index_) + " deadlocked: " +
                             std::to_string(graph_.size() - graph_.completed()) + " tasks never ran");
    }
    const Time end = w_.sim.now();

    StepRecord rec;
    rec.step = index_;
    rec.start_ns = start.count_ns();
    rec.end_ns = end.count_ns();
    const Time compute = compute_.total();
    IntervalSet busy = compute_;
    busy.add_all(comm_);
    const Time covered = busy.total();
    rec.compute_s = compute.seconds();
    rec.exposed_comm_s = (covered - compute).seconds();
    rec.other_s = (end - start - covered).seconds();
    comm_total_s_ = comm_.total().seconds();
    return rec;
  }

  double comm_total_s() const { return comm_total_s_; }
  std::size_t tasks() const { return graph_.size(); }

 private:
  TaskId compute_task(int rank, StreamId stream, EventKind kind, const TimedOps& ops, std::uint32_t name) {
    const TaskId id = graph_.add_timed(ops.total, stream);
    remember(id, TaskMeta{rank, kind, name, &ops, ops.flops, ops.bytes});
    return id;
  }

  TaskId collective(comm::CollectiveOp op, double bytes, const std::string& name, StreamId stream) {
    const TaskId id = graph_.add_task(
        [this, op, bytes](TaskGraph& g, TaskId self) {
          w_.comm.start(op, group_, bytes, comm::Algorithm::automatic, [&g, self] { g.complete(self); });
        },
        stream);
    remember(id, TaskMeta{-1, EventKind::collective, w_.sink.intern_name(std::string(comm::op_name(op)) + " " + name),
                          nullptr, 0, bytes});
    return id;
  }

  void remember(TaskId id, TaskMeta meta) {
    if (meta_.size() <= id) meta_.resize(id + 1);
    meta_[id] = meta;
  }

  void depend_all(const std::vector<TaskId>& before, TaskId after) {
    for (TaskId b : before) graph_.add_dependency(b, after);
  }

  void build() {
    const auto& s = w_.scenario;
    const int L = s.model.layers;
    const int m = layout_.microbatches;
    const int zero = s.parallel.zero;
    const double elem = workload::bytes_per_element(s.training.precision);
    const int G = layout_.gpus;

    compute_streams_.clear();
    for (int r = 0; r < G; ++r) compute_streams_.push_back(graph_.add_stream("rank" + std::to_string(r) + "/compute"));
    const StreamId ag_stream = graph_.add_stream("dp/all_gather");
    const StreamId rs_stream = graph_.add_stream("dp/reduce_scatter");
    const StreamId ar_stream = graph_.add_stream("dp/all_reduce");

    std::vector<std::uint32_t> layer_names;
    for (int l = 0; l < L; ++l) layer_names.push_back(w_.sink.intern_name("layer" + std::to_string(l)));
    const std::uint32_t root_fwd_name = w_.sink.intern_name("root");

    // Per rank and microbatch, the compute tasks: fwd[l], head fwd/bwd, recompute[l], bwd[l].
    // fwd_of[k][l][r], bwd_of[k][l][r]; index L stands for the root unit.
    auto grid = [&] { return std::vector<std::vector<std::vector<TaskId>>>(m, std::vector<std::vector<TaskId>>(L + 1, std::vector<TaskId>(G))); };
    auto fwd = grid();
    auto bwd = grid();
    auto first_bwd = grid();  // recompute task if any, else the backward task: what needs the params
    const bool recompute = !layer_.recompute.ops.empty();

    for (int r = 0; r < G; ++r) {
      const StreamId st = compute_streams_[r];
      for (int k = 0; k < m; ++k) {
        for (int l = 0; l < L; ++l) fwd[k][l][r] = compute_task(r, st, EventKind::forward, layer_.forward, layer_names[l]);
        fwd[k][L][r] = compute_task(r, st, EventKind::forward, root_.forward, root_fwd_name);
        bwd[k][L][r] = compute_task(r, st, EventKind::backward, root_.backward, root_fwd_name);
        first_bwd[k][L][r] = bwd[k][L][r];
        for (int l = L - 1; l >= 0; --l) {
          TaskId first = 0;
          if (recompute) first = compute_task(r, st, EventKind::recompute, layer_.recompute, layer_names[l]);
          bwd[k][l][r] = compute_task(r, st, EventKind::backward, layer_.backward, layer_names[l]);
          first_bwd[k][l][r] = recompute ? first : bwd[k][l][r];
        }
      }
    }

    auto unit_bytes = [&](int u) { return (u == L ? root_.params : layer_.params) * elem; };
    auto unit_label = [&](int u) { return u == L ? std::string("root") : "layer" + std::to_string(u); };
    std::vector<TaskId> grads_done;  // collectives the optimizer must wait for

    if (zero == 3) {
      // FSDP: gather each unit's parameters before its forward and again before its backward,
      // one unit ahead of compute (forward/backward prefetch, at most two units unsharded);
      // reduce-scatter its gradients after its backward, on a stream of their own.
      for (int k = 0; k < m; ++k) {
        const TaskId ag_root = collective(comm::CollectiveOp::all_gather, unit_bytes(L), unit_label(L), ag_stream);
        for (int r = 0; r < G; ++r) graph_.add_dependency(ag_root, fwd[k][0][r]);
        for (int l = 0; l < L; ++l) {
          const TaskId ag = collective(comm::CollectiveOp::all_gather, unit_bytes(l), unit_label(l), ag_stream);
          for (int r = 0; r < G; ++r) {
            graph_.add_dependency(ag, fwd[k][l][r]);
            if (l >= 2) graph_.add_dependency(fwd[k][l - 2][r], ag);  // only two units gathered at once
          }
        }
        for (int l = L - 1; l >= 0; --l) {
          const TaskId ag = collective(comm::CollectiveOp::all_gather, unit_bytes(l), unit_label(l), ag_stream);
          for (int r = 0; r < G; ++r) {
            graph_.add_dependency(ag, first_bwd[k][l][r]);
            graph_.add_dependency(fwd[k][L][r], ag);  // backward gathers start once forward is over
            if (l + 2 <= L - 1) graph_.add_dependency(bwd[k][l + 2][r], ag);
          }
          const TaskId rs = collective(comm::CollectiveOp::reduce_scatter, unit_bytes(l), unit_label(l), rs_stream);
          for (int r = 0; r < G; ++r) graph_.add_dependency(bwd[k][l][r], rs);
          grads_done.push_back(rs);
        }
        const TaskId rs_root = collective(comm::CollectiveOp::reduce_scatter, unit_bytes(L), unit_label(L), rs_stream);
        for (int r = 0; r < G; ++r) graph_.add_dependency(bwd[k][0][r], rs_root);
        grads_done.push_back(rs_root);
      }
    } else {
      // DDP (ZeRO 0) and ZeRO 1/2: gradient buckets, filled in backward order, each reduced
      // as soon as the last microbatch's backward has produced all of it (earlier
      // microbatches only accumulate locally), overlapping the rest of backward.
      const comm::CollectiveOp op = zero == 0 ? comm::CollectiveOp::all_reduce : comm::CollectiveOp::reduce_scatter;
      const int k = m - 1;
      double filled = 0;
      int bucket = 0;
      std::vector<int> order;
      for (int l = L - 1; l >= 0; --l) order.push_back(l);
      order.push_back(L);  // root gradients (embedding) are complete only at the very end
      for (std::size_t i = 0; i < order.size(); ++i) {
        filled += unit_bytes(order[i]);
        const bool last = i + 1 == order.size();
        if (filled >= s.parallel.bucket_bytes || last) {
          const int u = order[i];
          const TaskId c = collective(op, filled, "bucket" + std::to_string(bucket++), ar_stream);
          // The unit that completes this bucket: for the root, the last op of backward.
          for (int r = 0; r < G; ++r) graph_.add_dependency(u == L ? bwd[k][0][r] : bwd[k][u][r], c);
          grads_done.push_back(c);
          filled = 0;
        }
      }
    }

    // Optimizer step over the parameters this rank owns, after its gradients are reduced.
    const double params_total = L * layer_.params + root_.params;
    const double params_local = zero >= 1 ? params_total / layout_.dp : params_total;
    optimizer_ = time_ops({workload::optimizer_op(s.training, params_local)}, w_.cluster.device(),
                          s.training.precision, w_.sink);
    const std::uint32_t opt_name = w_.sink.intern_name("optimizer");
    std::vector<TaskId> opt_tasks;
    for (int r = 0; r < G; ++r) {
      const TaskId o = compute_task(r, compute_streams_[r], EventKind::optimizer, optimizer_, opt_name);
      depend_all(grads_done, o);
      opt_tasks.push_back(o);
    }
    if (zero == 1 || zero == 2) {
      // Sharded optimizer: gather the updated parameters back to every rank.
      const TaskId ag = collective(comm::CollectiveOp::all_gather, params_total * elem, "params", ag_stream);
      depend_all(opt_tasks, ag);
    }
  }

  void observe(TaskId id, Time s, Time e) {
    const TaskMeta& m = meta_[id];
    if (m.kind == EventKind::collective) {
      comm_.add(s, e);
    } else if (m.rank == 0) {
      compute_.add(s, e);
    }
    if (w_.trace == TraceLevel::none || w_.trace == TraceLevel::step) return;
    if (m.kind == EventKind::collective) {
      for (int r : group_) {
        w_.sink.on_event(EventRecord{r, comm_resource_, m.kind, m.name, s.count_ns(), e.count_ns(), 0, m.bytes});
      }
      return;
    }
    // Compute: one record per op inside the task, laid end to end.
    Time t = s;
    for (std::size_t i = 0; i < m.ops->ops.size(); ++i) {
      const Time d = m.ops->times[i];
      w_.sink.on_event(EventRecord{m.rank, compute_resource_, m.kind, m.ops->name_ids[i], t.count_ns(),
                                   (t + d).count_ns(), m.ops->ops[i].flops, m.ops->ops[i].bytes});
      t += d;
    }
  }

  World& w_;
  const Layout& layout_;
  const UnitCost& layer_;
  const UnitCost& root_;
  std::int64_t index_;
  TaskGraph graph_;
  std::vector<int> group_;
  std::vector<StreamId> compute_streams_;
  std::vector<TaskMeta> meta_;
  TimedOps optimizer_;
  std::uint32_t compute_resource_ = 0;
  std::uint32_t comm_resource_ = 0;
  IntervalSet compute_;
  IntervalSet comm_;
  double comm_total_s_ = 0;
};

}  // namespace

SimulationResult simulate(const config::Scenario& s, RecordSink& sink, TraceLevel trace) {
  SimulationResult res;
  res.layout = resolve_layout(s);
  const Layout& lay = res.layout;
  res.gpus = lay.gpus;
  res.hbm_bytes = s.topology.device.hbm_bytes;
  res.memory = workload::memory_per_gpu(s.model, s.training, s.parallel, lay.dp, 1);
  res.out_of_memory = res.memory.total() > res.hbm_bytes;
  res.tokens_per_step = lay.tokens_per_step;
  const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
  res.model_flops_per_step = fpt.palm * lay.tokens_per_step;
  res.model_flops_6n_per_step = fpt.six_n * lay.tokens_per_step;
  const auto peak = s.topology.device.peak_flops.find(s.training.precision);
  if (peak == s.topology.device.peak_flops.end()) {
    throw InputError(s.where("training.precision"), "training.precision",
                     "the device profile " + s.topology.device.name + " has no peak_flops for \"" +
                         s.training.precision + "\"");
  }
  res.peak_flops_per_gpu = peak->second;
  if (res.out_of_memory) return res;

  World world(s, sink, trace);
  const auto& dev = s.topology.device;
  const auto& prec = s.training.precision;
  const int seqs = lay.microbatch_sequences;
  UnitCost layer;
  layer.forward = time_ops(workload::layer_forward_ops(s.model, s.training, seqs, lay.tp), dev, prec, sink);
  layer.backward = time_ops(workload::layer_backward_ops(s.model, s.training, seqs, lay.tp), dev, prec, sink);
  layer.recompute = time_ops(workload::layer_recompute_ops(s.model, s.training, seqs, lay.tp), dev, prec, sink);
  const auto params = workload::count_params(s.model);
  layer.params = (params.attention + params.mlp + params.norm) / s.model.layers;
  UnitCost root;
  root.forward = time_ops(workload::head_forward_ops(s.model, s.training, seqs, lay.tp), dev, prec, sink);
  root.backward = time_ops(workload::head_backward_ops(s.model, s.training, seqs, lay.tp), dev, prec, sink);
  root.params = params.total() - s.model.layers * layer.params;

  if (trace == TraceLevel::flow) {
    const std::uint32_t net_resource = sink.intern_resource("network");
    const std::uint32_t flow_name = sink.intern_name("flow");
    world.comm.set_flow_trace(comm::FlowTrace{[&sink, net_resource, flow_name](int src, int, double bytes, Time a, Time b) {
      sink.on_event(EventRecord{src, net_resource, EventKind::flow, flow_name, a.count_ns(), b.count_ns(), 0, bytes});
    }});
  }

  const double recompute_flops_per_rank =
      static_cast<double>(s.model.layers) * layer.recompute.flops * lay.microbatches;
  res.hardware_flops_per_step = res.model_flops_per_step + recompute_flops_per_rank * lay.gpus;

  const int steps = std::max(1, s.run.steps);
  for (int i = 0; i < steps; ++i) {
    StepRun step(world, lay, layer, root, i);
    StepRecord rec = step.run();
    rec.model_flops = res.model_flops_per_step;
    rec.hardware_flops = res.hardware_flops_per_step;
    rec.tokens = lay.tokens_per_step;
    sink.on_step(rec);
    res.steps.push_back(rec);
    res.comm_s += step.comm_total_s();
    res.tasks += step.tasks();
  }
  for (const auto& r : res.steps) {
    res.step_time_s += static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
    res.compute_s += r.compute_s;
    res.exposed_comm_s += r.exposed_comm_s;
    res.bubble_s += r.bubble_s;
    res.data_stall_s += r.data_stall_s;
    res.other_s += r.other_s;
  }
  const double n = static_cast<double>(res.steps.size());
  res.step_time_s /= n;
  res.compute_s /= n;
  res.exposed_comm_s /= n;
  res.comm_s /= n;
  res.bubble_s /= n;
  res.data_stall_s /= n;
  res.other_s /= n;
  res.events_executed = world.sim.events_executed();
  res.flows_started = world.net.flows_started();
  return res;
}

}  // namespace ironlaw::run
