#include "run/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/collective.hpp"
#include "data/loader.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "engine/task_graph.hpp"
#include "hardware/cluster.hpp"
#include "run/intervals.hpp"
#include "run/pipeline_schedule.hpp"

namespace ironlaw::run {

TraceLevel parse_trace_level(const std::string& text) {
  if (text == "none") return TraceLevel::none;
  if (text == "step") return TraceLevel::step;
  if (text == "op") return TraceLevel::op;
  if (text == "flow") return TraceLevel::flow;
  throw std::invalid_argument("trace level must be none, step, op or flow, got \"" + text + "\"");
}

namespace {

using comm::CollectiveOp;
using engine::StreamId;
using engine::TaskGraph;
using engine::TaskId;
constexpr TaskId kNone = 0xffffffffu;

/// Ops run back to back as one task, with their simulated durations on the device.
struct TimedOps {
  std::vector<workload::Op> ops;
  std::vector<Time> times;
  std::vector<std::uint32_t> name_ids;
  Time total;
  double flops = 0;
  double bytes = 0;
};

/// What follows a compute part: nothing, or a tensor-parallel collective that the next part
/// waits for (`sync`), or one that runs concurrently with the next part — the weight-gradient
/// GEMM — and that the part after it waits for (`sync_async`, Megatron's async all-reduce).
enum class After { none, sync, sync_async };

struct Part {
  TimedOps ops;
  After after = After::none;
};

/// One pass (forward, recompute or backward) of one unit, cut into parts at TP sync points.
using PartList = std::vector<Part>;

std::string base_name(const std::string& name) {
  static const std::string prefix = "recompute_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

/// Megatron's tensor-parallel sync points: the row-parallel GEMMs (attention output, MLP down)
/// and the vocab-parallel embedding end with an all-reduce of the activations in forward; the
/// column-parallel GEMMs' input gradients (QKV, MLP up, LM head) are all-reduced in backward,
/// overlapping the weight-gradient GEMM that follows.
After sync_after(const std::string& op_name) {
  const std::string n = base_name(op_name);
  if (n == "attn_out" || n == "mlp_down" || n == "embedding") return After::sync;
  if (n == "qkv_dgrad" || n == "mlp_up_dgrad" || n == "lm_head_dgrad") return After::sync_async;
  return After::none;
}

class OpTimer {
 public:
  OpTimer(const config::DeviceSpec& device, std::string precision, RecordSink& sink)
      : device_(device), precision_(std::move(precision)), sink_(sink) {}

  void add(TimedOps& t, const workload::Op& op) {
    const Time d = workload::op_time(op, device_, precision_);
    t.ops.push_back(op);
    t.times.push_back(d);
    auto it = names_.find(op.name);
    if (it == names_.end()) it = names_.emplace(op.name, sink_.intern_name(op.name)).first;
    t.name_ids.push_back(it->second);
    t.total += d;
    t.flops += op.flops;
    t.bytes += op.bytes;
  }

  TimedOps whole(const std::vector<workload::Op>& ops) {
    TimedOps t;
    for (const auto& op : ops) add(t, op);
    return t;
  }

  /// Cuts `ops` at the TP sync points (only when tp > 1: otherwise one part).
  PartList parts(const std::vector<workload::Op>& ops, bool tensor_parallel) {
    PartList out;
    if (ops.empty()) return out;
    out.emplace_back();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      add(out.back().ops, ops[i]);
      const After a = tensor_parallel ? sync_after(ops[i].name) : After::none;
      if (a == After::none || i + 1 == ops.size()) {
        if (i + 1 == ops.size()) out.back().after = a;
        continue;
      }
      out.back().after = a;
      out.emplace_back();
      if (a == After::sync_async && i + 1 < ops.size() && base_name(ops[i + 1].name).ends_with("_wgrad")) {
        // The weight-gradient GEMM runs alone, concurrently with the collective.
        add(out.back().ops, ops[++i]);
        if (i + 1 < ops.size()) out.emplace_back();
      }
    }
    if (out.back().ops.ops.empty()) out.pop_back();
    return out;
  }

 private:
  const config::DeviceSpec& device_;
  std::string precision_;
  RecordSink& sink_;
  std::map<std::string, std::uint32_t> names_;
};

/// Costs of every kind of pass, computed once per simulation.
struct Costs {
  PartList layer_forward, layer_recompute, layer_backward;
  PartList embed_forward, embed_backward;  // first chunk: before its layers / after them
  PartList head_forward, head_backward;    // last chunk: after its layers / before them
  TimedOps optimizer;
  double layer_params = 0;                 // per TP rank
  double embed_params = 0, head_params = 0; // per TP rank (tied: the table counts once, as embedding)
  double activation_bytes = 0;             // one microbatch's hidden states: tokens × hidden × bytes
};

struct TaskMeta {
  std::int32_t rank = -1;   // compute: the global rank; communication: -1
  EventKind kind = EventKind::forward;
  std::uint32_t name = 0;
  const TimedOps* ops = nullptr;
  double bytes = 0;
  std::uint32_t first_participant = 0;  // communication: range in StepRun::participants_
  std::uint32_t participant_count = 0;
};

/// Everything that lives for the whole simulation.
struct World {
  World(const config::Scenario& s, const Layout& l, RecordSink& record_sink, TraceLevel level)
      : scenario(s), layout(l), sink(record_sink), trace(level), net(sim), cluster(s.topology, s.nodes, net),
        comm(sim, net, cluster),
        data(sim, net, s.data, s.topology.device, s.nodes, s.topology.node.gpus, l.microbatch_sequences, s.seed) {
    if (data.enabled()) data.start();  // loaders warm up before the first step, as a DataLoader does
  }

  const config::Scenario& scenario;
  const Layout& layout;
  RecordSink& sink;
  TraceLevel trace;
  engine::Simulator sim;
  engine::FlowNetwork net;
  hardware::Cluster cluster;
  comm::Communicator comm;
  data::DataPipeline data;
};

/// Per-rank timeline measurements of one step.
struct RankTimeline {
  IntervalSet compute, comm, data;
  Time last_backward_end;
  Time optimizer;
};

/// Builds and runs one training step of every simulated rank.
class StepRun {
 public:
  StepRun(World& w, const Costs& costs, std::int64_t index)
      : w_(w), lay_(w.layout), costs_(costs), index_(index), graph_(w.sim) {
    const bool full = w.scenario.run.detail == "full";
    for (int r = 0; r < lay_.gpus; ++r) {
      if (full || lay_.coord_of(r)[Dim::dp] == 0) {
        local_of_.emplace(r, static_cast<int>(ranks_.size()));
        ranks_.push_back(r);
      }
    }
    timeline_.resize(ranks_.size());
    compute_resource_ = w.sink.intern_resource("compute");
    comm_resource_ = w.sink.intern_resource("comm");
    data_resource_ = w.sink.intern_resource("data");
  }

  StepRecord run() {
    const Time start = w_.sim.now();
    build();
    graph_.set_observer([this](TaskId id, Time s, Time e) {
      observe(id, s, e);
      // The step ends with its last task; the data loaders' background work goes on into the
      // next step, so the simulator is stopped here rather than run dry.
      if (graph_.completed() == graph_.size()) w_.sim.stop();
    });
    graph_.start();
    if (graph_.size() > 0) w_.sim.run();
    if (graph_.completed() != graph_.size()) {
      throw std::logic_error("step " + std::to_string(index_) + " deadlocked: " +
                             std::to_string(graph_.size() - graph_.completed()) + " tasks never ran");
    }
    const Time end = w_.sim.now();
    StepRecord rec;
    rec.step = index_;
    rec.start_ns = start.count_ns();
    rec.end_ns = end.count_ns();
    const double n = static_cast<double>(ranks_.size());
    // The pipeline phase ends when the last rank finishes its last backward; idle time inside
    // it is the pipeline's bubble (warm-up, drain and any wait on a neighbour stage).
    Time pipeline_end = start;
    for (const auto& t : timeline_) pipeline_end = std::max(pipeline_end, t.last_backward_end);
    for (auto& t : timeline_) {
      // compute | exposed communication | data stall | idle, each measured as union lengths.
      const Time compute = t.compute.total();
      IntervalSet busy = t.compute;
      busy.add_all(t.comm);
      const Time working = busy.total();
      busy.add_all(t.data);
      const Time covered = busy.total();
      const Time idle = end - start - covered;
      Time bubble;
      if (lay_.pp > 1) {
        bubble = std::clamp(pipeline_end - start - covered_until(t, pipeline_end, start), Time::zero(), idle);
      }
      rec.compute_s += compute.seconds() / n;
      rec.exposed_comm_s += (working - compute).seconds() / n;
      rec.data_stall_s += (covered - working).seconds() / n;
      rec.bubble_s += bubble.seconds() / n;
      rec.other_s += (idle - bubble).seconds() / n;
      optimizer_s_ += t.optimizer.seconds() / n;
      comm_total_s_ += t.comm.total().seconds() / n;
    }
    return rec;
  }

  double comm_total_s() const { return comm_total_s_; }
  double optimizer_s() const { return optimizer_s_; }
  std::size_t tasks() const { return graph_.size(); }
  int ranks_simulated() const { return static_cast<int>(ranks_.size()); }

 private:
  /// Busy time of a rank from `start` up to `until`.
  static Time covered_until(const RankTimeline& t, Time until, Time start) {
    IntervalSet busy;
    busy.add_all(t.compute);
    busy.add_all(t.comm);
    busy.add_all(t.data);
    IntervalSet cut;
    cut.add(start, until);
    // |busy ∩ [start, until)| = |busy| + |cut| − |busy ∪ cut| (the union stays inside the step).
    IntervalSet both = busy;
    both.add_all(cut);
    return busy.total() + cut.total() - both.total();
  }

  // ---- task creation ------------------------------------------------------------------

  TaskId compute_task(int local, EventKind kind, const TimedOps& ops, std::uint32_t name) {
    const TaskId id = graph_.add_timed(ops.total, streams_[static_cast<std::size_t>(local)]);
    remember(id, TaskMeta{ranks_[static_cast<std::size_t>(local)], kind, name, &ops, ops.bytes, 0, 0});
    return id;
  }

  /// A collective over `group` (global ranks), recorded on the simulated `participants`.
  TaskId collective(CollectiveOp op, std::vector<int> group, double bytes, std::uint32_t name,
                    const std::vector<int>& participants, StreamId stream) {
    const TaskId id = graph_.add_task(
        [this, op, group = std::move(group), bytes](TaskGraph& g, TaskId self) {
          w_.comm.start(op, group, bytes, comm::Algorithm::automatic, [&g, self] { g.complete(self); });
        },
        stream);
    remember_comm(id, name, bytes, participants);
    return id;
  }

  /// A point-to-point send of `bytes` from global rank `src` to `dst` (a pipeline activation or
  /// gradient), over the cluster route, after the collective library's launch latency.
  TaskId send(int src, int dst, double bytes, std::uint32_t name, const std::vector<int>& participants) {
    const TaskId id = graph_.add_task([this, src, dst, bytes](TaskGraph& g, TaskId self) {
      auto path = w_.cluster.route(src, dst);
      w_.sim.schedule_in(w_.scenario.topology.comm.launch_latency, [this, path = std::move(path), bytes, &g, self] {
        w_.net.start_flow(path, bytes, [&g, self](engine::FlowId) { g.complete(self); });
      });
    });
    remember_comm(id, name, bytes, participants);
    return id;
  }

  /// Waits on the rank's compute stream for its next input batch (stall, if the loaders are
  /// behind) and its host-to-device copy.
  TaskId data_task(int local) {
    const int gpu = ranks_[static_cast<std::size_t>(local)];
    const TaskId id = graph_.add_task(
        [this, gpu](TaskGraph& g, TaskId self) { w_.data.request(gpu, [&g, self] { g.complete(self); }); },
        streams_[static_cast<std::size_t>(local)]);
    remember(id, TaskMeta{gpu, EventKind::data, data_name_, nullptr, w_.data.batch_bytes(), 0, 0});
    return id;
  }

  void remember(TaskId id, TaskMeta meta) {
    if (meta_.size() <= id) meta_.resize(static_cast<std::size_t>(id) + 1);
    meta_[id] = meta;
  }

  void remember_comm(TaskId id, std::uint32_t name, double bytes, const std::vector<int>& participants) {
    TaskMeta m;
    m.kind = EventKind::collective;
    m.name = name;
    m.bytes = bytes;
    m.first_participant = static_cast<std::uint32_t>(participants_.size());
    m.participant_count = static_cast<std::uint32_t>(participants.size());
    participants_.insert(participants_.end(), participants.begin(), participants.end());
    remember(id, m);
  }

  /// Runs `parts` on every rank of `group` (local indices, one TP group), in lockstep: a TP
  /// collective after each sync part, which the right later parts wait for. `gate` carries a
  /// pending collective across calls. Returns per rank the first and last compute task.
  struct PassTasks {
    std::vector<TaskId> first, last;
  };
  PassTasks run_parts(const std::vector<int>& group, const PartList& parts, EventKind kind, std::uint32_t name,
                      TaskId& gate) {
    PassTasks out{std::vector<TaskId>(group.size(), kNone), std::vector<TaskId>(group.size(), kNone)};
    TaskId async_gate = kNone;  // collective running beside the current (wgrad) part
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& part = parts[i];
      std::vector<TaskId> tasks(group.size());
      for (std::size_t g = 0; g < group.size(); ++g) {
        tasks[g] = compute_task(group[g], kind, part.ops, name);
        if (gate != kNone) graph_.add_dependency(gate, tasks[g]);
        if (out.first[g] == kNone) out.first[g] = tasks[g];
        out.last[g] = tasks[g];
      }
      gate = async_gate;  // the part after the async one waits for its collective
      async_gate = kNone;
      if (part.after != After::none) {
        const TaskId c = tp_collective(group);
        for (TaskId t : tasks) graph_.add_dependency(t, c);
        if (part.after == After::sync) gate = c;
        else async_gate = c;
      }
    }
    if (async_gate != kNone) gate = async_gate;
    return out;
  }

  /// The TP all-reduce of one microbatch's activations over `group` (local indices).
  TaskId tp_collective(const std::vector<int>& group) {
    std::vector<int> global;
    for (int l : group) global.push_back(ranks_[static_cast<std::size_t>(l)]);
    const StreamId stream = tp_streams_.at(global.front());
    return collective(CollectiveOp::all_reduce, std::move(global), costs_.activation_bytes, tp_name_, group, stream);
  }

  void build();
  void build_data_parallel(const std::vector<int>& representatives);
  void observe(TaskId id, Time s, Time e);

  World& w_;
  const Layout& lay_;
  const Costs& costs_;
  std::int64_t index_;
  TaskGraph graph_;
  std::vector<int> ranks_;              // simulated global ranks, ascending
  std::map<int, int> local_of_;         // global → local index
  std::vector<StreamId> streams_;       // compute stream per local rank
  std::map<int, StreamId> tp_streams_;  // TP-group stream by its first global rank
  std::vector<TaskMeta> meta_;
  std::vector<int> participants_;
  std::vector<RankTimeline> timeline_;
  std::uint32_t compute_resource_ = 0, comm_resource_ = 0, data_resource_ = 0;
  std::uint32_t tp_name_ = 0, pp_name_ = 0, data_name_ = 0;
  double comm_total_s_ = 0, optimizer_s_ = 0;

  // Per local rank, microbatch, unit: tasks the data-parallel collectives hang on.
  // Units: 0 … L−1 layers, L embedding, L+1 head.
  std::vector<std::vector<std::vector<TaskId>>> fwd_first_, bwd_first_, bwd_last_;
  std::vector<TaskId> optimizer_tasks_;
};

void StepRun::build() {
  const auto& s = w_.scenario;
  const int L = s.model.layers;
  const int m = lay_.microbatches;
  const int units = L + 2;
  const bool tp = lay_.tp > 1;
  tp_name_ = w_.sink.intern_name("tp all_reduce");
  pp_name_ = w_.sink.intern_name("pp send");
  data_name_ = w_.sink.intern_name("input batch");

  const std::size_t n = ranks_.size();
  for (std::size_t i = 0; i < n; ++i) streams_.push_back(graph_.add_stream("rank" + std::to_string(ranks_[i]) + "/compute"));
  auto table = [&] {
    return std::vector<std::vector<std::vector<TaskId>>>(
        n, std::vector<std::vector<TaskId>>(static_cast<std::size_t>(m), std::vector<TaskId>(static_cast<std::size_t>(units), kNone)));
  };
  fwd_first_ = table();
  bwd_first_ = table();
  bwd_last_ = table();

  std::vector<std::uint32_t> layer_names;
  for (int l = 0; l < L; ++l) layer_names.push_back(w_.sink.intern_name("layer" + std::to_string(l)));
  const std::uint32_t embed_name = w_.sink.intern_name("embedding");
  const std::uint32_t head_name = w_.sink.intern_name("head");

  // Entry and exit tasks of every (rank, microbatch, chunk, pass), for pipeline sends.
  const int chunks = lay_.chunks();
  auto slot_index = [&](std::size_t local, int mb, int chunk, Pass pass) {
    return ((local * static_cast<std::size_t>(m) + static_cast<std::size_t>(mb)) * static_cast<std::size_t>(chunks) +
            static_cast<std::size_t>(chunk)) * 2 + (pass == Pass::backward ? 1 : 0);
  };
  std::vector<TaskId> entry(n * static_cast<std::size_t>(m * chunks * 2), kNone), exit_(entry.size(), kNone);

  // TP groups among the simulated ranks: the local indices of ranks that differ only in tp.
  std::vector<std::vector<int>> tp_groups;
  for (std::size_t i = 0; i < n; ++i) {
    const int r = ranks_[i];
    if (lay_.coord_of(r)[Dim::tp] != 0) continue;
    std::vector<int> g;
    for (int member : lay_.group(r, Dim::tp)) g.push_back(local_of_.at(member));
    if (tp) tp_streams_.emplace(r, graph_.add_stream("tp" + std::to_string(r)));
    tp_groups.push_back(std::move(g));
  }

  for (const auto& group : tp_groups) {
    const int stage = lay_.coord_of(ranks_[static_cast<std::size_t>(group.front())])[Dim::pp];
    const auto order = pipeline_order(s.parallel.pp_schedule, stage, lay_.pp, m, lay_.virtual_stages);
    TaskId gate = kNone;
    for (const auto& slot : order) {
      const int chunk = slot.local_chunk * lay_.pp + stage;
      const int first = lay_.first_layer(chunk);
      const int count = lay_.chunk_layers[static_cast<std::size_t>(chunk)];
      const bool first_chunk = chunk == 0, last_chunk = chunk == chunks - 1;
      const int mb = slot.microbatch;
      std::vector<TaskId> slot_entry(group.size(), kNone), slot_exit(group.size(), kNone);
      auto note = [&](const PassTasks& p, int unit) {
        for (std::size_t g = 0; g < group.size(); ++g) {
          const auto local = static_cast<std::size_t>(group[g]);
          if (slot_entry[g] == kNone) slot_entry[g] = p.first[g];
          slot_exit[g] = p.last[g];
          if (unit < 0) continue;
          if (slot.pass == Pass::forward) {
            if (fwd_first_[local][static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit)] == kNone)
              fwd_first_[local][static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit)] = p.first[g];
          } else {
            auto& bf = bwd_first_[local][static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit)];
            if (bf == kNone) bf = p.first[g];  // the recompute, if any, comes first
            bwd_last_[local][static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit)] = p.last[g];
          }
        }
      };
      if (slot.pass == Pass::forward) {
        if (first_chunk && w_.data.enabled())
          for (int local : group) data_task(local);
        if (first_chunk) note(run_parts(group, costs_.embed_forward, EventKind::forward, embed_name, gate), L);
        for (int l = first; l < first + count; ++l)
          note(run_parts(group, costs_.layer_forward, EventKind::forward, layer_names[static_cast<std::size_t>(l)], gate), l);
        if (last_chunk) note(run_parts(group, costs_.head_forward, EventKind::forward, head_name, gate), L + 1);
      } else {
        if (last_chunk) note(run_parts(group, costs_.head_backward, EventKind::backward, head_name, gate), L + 1);
        for (int l = first + count - 1; l >= first; --l) {
          const auto name = layer_names[static_cast<std::size_t>(l)];
          if (!costs_.layer_recompute.empty()) note(run_parts(group, costs_.layer_recompute, EventKind::recompute, name, gate), l);
          note(run_parts(group, costs_.layer_backward, EventKind::backward, name, gate), l);
        }
        if (first_chunk) note(run_parts(group, costs_.embed_backward, EventKind::backward, embed_name, gate), L);
      }
      for (std::size_t g = 0; g < group.size(); ++g) {
        const auto local = static_cast<std::size_t>(group[g]);
        entry[slot_index(local, mb, chunk, slot.pass)] = slot_entry[g];
        // A pass whose last part ended in a synchronous TP collective is done when it is.
        exit_[slot_index(local, mb, chunk, slot.pass)] = gate != kNone ? gate : slot_exit[g];
      }
    }
  }

  // Pipeline sends: activations forward to the next chunk, gradients backward to the previous.
  if (chunks > 1) {
    const double bytes = costs_.activation_bytes / lay_.tp;  // Megatron's scatter/gather: 1/tp per TP rank
    for (std::size_t i = 0; i < n; ++i) {
      const int r = ranks_[i];
      const Coord c = lay_.coord_of(r);
      for (int chunk = 0; chunk < chunks; ++chunk) {
        if (lay_.stage_of_chunk(chunk) != c[Dim::pp]) continue;
        for (int mb = 0; mb < m; ++mb) {
          if (chunk + 1 < chunks) {
            Coord nc = c;
            nc[Dim::pp] = lay_.stage_of_chunk(chunk + 1);
            const int dst = lay_.rank_of(nc);
            const std::size_t dl = static_cast<std::size_t>(local_of_.at(dst));
            if (dst == r) {  // consecutive chunks on one rank (pp = 1 with virtual stages): no send
              graph_.add_dependency(exit_[slot_index(i, mb, chunk, Pass::forward)], entry[slot_index(dl, mb, chunk + 1, Pass::forward)]);
              graph_.add_dependency(exit_[slot_index(dl, mb, chunk + 1, Pass::backward)], entry[slot_index(i, mb, chunk, Pass::backward)]);
              continue;
            }
            const TaskId f = send(r, dst, bytes, pp_name_, {static_cast<int>(i), static_cast<int>(dl)});
            graph_.add_dependency(exit_[slot_index(i, mb, chunk, Pass::forward)], f);
            graph_.add_dependency(f, entry[slot_index(dl, mb, chunk + 1, Pass::forward)]);
            const TaskId b = send(dst, r, bytes, pp_name_, {static_cast<int>(dl), static_cast<int>(i)});
            graph_.add_dependency(exit_[slot_index(dl, mb, chunk + 1, Pass::backward)], b);
            graph_.add_dependency(b, entry[slot_index(i, mb, chunk, Pass::backward)]);
          }
        }
      }
    }
  }

  std::vector<int> representatives;  // simulated ranks with dp index 0: one per DP group
  for (std::size_t i = 0; i < n; ++i)
    if (lay_.coord_of(ranks_[i])[Dim::dp] == 0) representatives.push_back(static_cast<int>(i));
  build_data_parallel(representatives);
}

void StepRun::build_data_parallel(const std::vector<int>& representatives) {
  const auto& s = w_.scenario;
  const int L = s.model.layers;
  const int m = lay_.microbatches;
  const int zero = s.parallel.zero;
  const double elem = workload::parameter_bytes(s.training.precision);
  const std::uint32_t opt_name = w_.sink.intern_name("optimizer");
  const bool full = s.run.detail == "full";

  auto unit_params = [&](int u) { return u < L ? costs_.layer_params : u == L ? costs_.embed_params : costs_.head_params; };
  auto unit_label = [&](int u) { return u < L ? "layer" + std::to_string(u) : u == L ? std::string("embedding") : std::string("head"); };

  for (int rep : representatives) {
    const int r = ranks_[static_cast<std::size_t>(rep)];
    std::vector<int> group = lay_.group(r, Dim::dp);
    std::vector<int> members;  // simulated members (local)
    if (full) {
      for (int g : group) members.push_back(local_of_.at(g));
    } else {
      members.push_back(rep);
    }
    const std::string tag = "dp" + std::to_string(r);
    const StreamId ag_stream = graph_.add_stream(tag + "/all_gather");
    const StreamId rs_stream = graph_.add_stream(tag + "/reduce_scatter");
    const StreamId ar_stream = graph_.add_stream(tag + "/all_reduce");
    // The units this pipeline rank holds, in the order backward finishes them.
    const int stage = lay_.coord_of(r)[Dim::pp];
    // The last microbatch's backward of each chunk completes its gradients (GPipe runs the
    // backwards last-in first-out, so that is microbatch 0 there).
    std::vector<int> units;
    const auto order = pipeline_order(s.parallel.pp_schedule, stage, lay_.pp, m, lay_.virtual_stages);
    const int last_mb = order.back().microbatch;
    for (const auto& slot : order) {
      if (slot.pass != Pass::backward || slot.microbatch != last_mb) continue;
      const int chunk = slot.local_chunk * lay_.pp + stage;
      if (chunk == lay_.chunks() - 1) units.push_back(L + 1);
      for (int l = lay_.first_layer(chunk) + lay_.chunk_layers[static_cast<std::size_t>(chunk)] - 1;
           l >= lay_.first_layer(chunk); --l)
        units.push_back(l);
      if (chunk == 0) units.push_back(L);
    }
    auto at = [](auto& t, int local, int mb, int u) -> TaskId {
      return t[static_cast<std::size_t>(local)][static_cast<std::size_t>(mb)][static_cast<std::size_t>(u)];
    };
    std::vector<TaskId> grads_done;
    auto bytes_of = [&](int u) { return unit_params(u) * elem; };
    auto name_of = [&](CollectiveOp op, const std::string& what) {
      return w_.sink.intern_name(std::string("dp ") + comm::op_name(op) + " " + what);
    };

    if (zero == 3) {
      // FSDP: gather each unit's parameters before its forward and again before its backward,
      // one unit ahead of compute (at most two units unsharded); reduce-scatter its gradients
      // after its backward, on a stream of their own. pp == 1 here (resolve_layout).
      for (int k = 0; k < m; ++k) {
        std::vector<int> fwd_units{L};
        for (int l = 0; l < L; ++l) fwd_units.push_back(l);
        fwd_units.push_back(L + 1);
        for (std::size_t i = 0; i < fwd_units.size(); ++i) {
          const int u = fwd_units[i];
          const TaskId ag = collective(CollectiveOp::all_gather, group, bytes_of(u), name_of(CollectiveOp::all_gather, unit_label(u)), members, ag_stream);
          for (int mem : members) {
            graph_.add_dependency(ag, at(fwd_first_, mem, k, u));
            if (i >= 2) graph_.add_dependency(at(fwd_first_, mem, k, fwd_units[i - 2]), ag);
          }
        }
        for (std::size_t i = 0; i < units.size(); ++i) {
          const int u = units[i];
          const TaskId ag = collective(CollectiveOp::all_gather, group, bytes_of(u), name_of(CollectiveOp::all_gather, unit_label(u)), members, ag_stream);
          for (int mem : members) {
            graph_.add_dependency(ag, at(bwd_first_, mem, k, u));
            graph_.add_dependency(at(fwd_first_, mem, k, L + 1), ag);  // backward gathers follow the forward
            if (i >= 2) graph_.add_dependency(at(bwd_first_, mem, k, units[i - 2]), ag);
          }
          const TaskId rs = collective(CollectiveOp::reduce_scatter, group, bytes_of(u), name_of(CollectiveOp::reduce_scatter, unit_label(u)), members, rs_stream);
          for (int mem : members) graph_.add_dependency(at(bwd_last_, mem, k, u), rs);
          grads_done.push_back(rs);
        }
      }
    } else {
      // DDP (ZeRO 0) and ZeRO 1/2: gradient buckets filled in the order the last microbatch's
      // backward finishes the units; each is reduced as soon as it is full, overlapping the
      // rest of backward (earlier microbatches only accumulate locally).
      const CollectiveOp op = zero == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
      const int k = last_mb;
      double filled = 0;
      int bucket = 0;
      for (std::size_t i = 0; i < units.size(); ++i) {
        filled += bytes_of(units[i]);
        if (filled >= s.parallel.bucket_bytes || i + 1 == units.size()) {
          const TaskId c = collective(op, group, filled, name_of(op, "bucket" + std::to_string(bucket++)), members, ar_stream);
          for (int mem : members) graph_.add_dependency(at(bwd_last_, mem, k, units[i]), c);
          grads_done.push_back(c);
          filled = 0;
        }
      }
    }

    // Optimizer over the parameters this rank owns, once its gradients are reduced.
    std::vector<TaskId> opt;
    for (int mem : members) {
      const TaskId o = compute_task(mem, EventKind::optimizer, costs_.optimizer, opt_name);
      for (TaskId g : grads_done) graph_.add_dependency(g, o);
      opt.push_back(o);
    }
    if (zero == 1 || zero == 2) {
      double held = 0;
      for (int u : units) held += bytes_of(u);
      const TaskId ag = collective(CollectiveOp::all_gather, group, held, name_of(CollectiveOp::all_gather, "params"), members, ag_stream);
      for (TaskId o : opt) graph_.add_dependency(o, ag);
    }
  }
}

void StepRun::observe(TaskId id, Time s, Time e) {
  const TaskMeta& m = meta_[id];
  if (m.kind == EventKind::collective) {
    for (std::uint32_t i = 0; i < m.participant_count; ++i) {
      const int local = participants_[m.first_participant + i];
      timeline_[static_cast<std::size_t>(local)].comm.add(s, e);
    }
  } else if (m.kind == EventKind::data) {
    timeline_[static_cast<std::size_t>(local_of_.at(m.rank))].data.add(s, e);
  } else {
    auto& t = timeline_[static_cast<std::size_t>(local_of_.at(m.rank))];
    t.compute.add(s, e);
    if (m.kind == EventKind::backward || m.kind == EventKind::recompute) t.last_backward_end = std::max(t.last_backward_end, e);
    if (m.kind == EventKind::optimizer) t.optimizer += e - s;
  }
  if (w_.trace == TraceLevel::none || w_.trace == TraceLevel::step) return;
  if (m.kind == EventKind::data) {
    w_.sink.on_event(EventRecord{m.rank, data_resource_, m.kind, m.name, s.count_ns(), e.count_ns(), 0, m.bytes});
    return;
  }
  if (m.kind == EventKind::collective) {
    for (std::uint32_t i = 0; i < m.participant_count; ++i) {
      const int rank = ranks_[static_cast<std::size_t>(participants_[m.first_participant + i])];
      w_.sink.on_event(EventRecord{rank, comm_resource_, m.kind, m.name, s.count_ns(), e.count_ns(), 0, m.bytes});
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

/// Splits the root ops (embedding, final norm, LM head, loss) between the first and last chunk.
void split_root(const std::vector<workload::Op>& ops, std::vector<workload::Op>& embed, std::vector<workload::Op>& head) {
  for (const auto& op : ops) (op.name.rfind("embedding", 0) == 0 ? embed : head).push_back(op);
}

}  // namespace

SimulationResult simulate(const config::Scenario& s, RecordSink& sink, TraceLevel trace) {
  SimulationResult res;
  res.layout = resolve_layout(s);
  const Layout& lay = res.layout;
  res.gpus = lay.gpus;
  res.hbm_bytes = s.topology.device.hbm_bytes;
  const double in_flight = in_flight_microbatches(s.parallel.pp_schedule, 0, lay.pp, lay.microbatches, lay.virtual_stages);
  res.memory = workload::memory_per_gpu(s.model, s.training, s.parallel, lay.dp, static_cast<int>(std::ceil(in_flight)));
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

  World world(s, lay, sink, trace);
  OpTimer timer(s.topology.device, s.training.precision, sink);
  const int seqs = lay.microbatch_sequences;
  const bool tp = lay.tp > 1;
  Costs costs;
  costs.layer_forward = timer.parts(workload::layer_forward_ops(s.model, s.training, seqs, lay.tp), tp);
  costs.layer_backward = timer.parts(workload::layer_backward_ops(s.model, s.training, seqs, lay.tp), tp);
  costs.layer_recompute = timer.parts(workload::layer_recompute_ops(s.model, s.training, seqs, lay.tp), tp);
  std::vector<workload::Op> ef, hf, eb, hb;
  split_root(workload::head_forward_ops(s.model, s.training, seqs, lay.tp), ef, hf);
  split_root(workload::head_backward_ops(s.model, s.training, seqs, lay.tp), eb, hb);
  costs.embed_forward = timer.parts(ef, tp);
  costs.head_forward = timer.parts(hf, tp);
  costs.head_backward = timer.parts(hb, tp);
  costs.embed_backward = timer.parts(eb, tp);
  const auto params = workload::count_params(s.model);
  costs.layer_params = (params.attention + params.mlp) / s.model.layers / lay.tp + params.norm / (s.model.layers + 1);
  costs.embed_params = (params.embedding + params.position) / lay.tp;
  costs.head_params = params.lm_head / lay.tp;
  costs.activation_bytes = static_cast<double>(seqs) * s.training.sequence_length * s.model.hidden *
                           workload::parameter_bytes(s.training.precision);
  // The optimizer updates the parameters this rank holds (the largest pipeline stage).
  int max_layers = 0;
  for (int c : lay.chunk_layers) max_layers = std::max(max_layers, c);
  const double params_rank = (costs.layer_params * max_layers * lay.virtual_stages +
                              std::max(costs.embed_params, costs.head_params));
  costs.optimizer = timer.whole({workload::optimizer_op(s.training, s.parallel.zero >= 1 ? params_rank / lay.dp : params_rank)});

  if (trace == TraceLevel::flow) {
    const std::uint32_t net_resource = sink.intern_resource("network");
    const std::uint32_t flow_name = sink.intern_name("flow");
    world.comm.set_flow_trace(comm::FlowTrace{[&sink, net_resource, flow_name](int src, int, double bytes, Time a, Time b) {
      sink.on_event(EventRecord{src, net_resource, EventKind::flow, flow_name, a.count_ns(), b.count_ns(), 0, bytes});
    }});
  }

  double recompute_flops = 0;
  for (const auto& p : costs.layer_recompute) recompute_flops += p.ops.flops;
  // Recomputation per step over all GPUs: every layer, every microbatch, on every TP rank.
  res.hardware_flops_per_step = res.model_flops_per_step +
                                recompute_flops * s.model.layers * lay.microbatches * lay.tp * lay.dp * lay.cp;

  const int steps = std::max(1, s.run.steps);
  for (int i = 0; i < steps; ++i) {
    StepRun step(world, costs, i);
    StepRecord rec = step.run();
    rec.model_flops = res.model_flops_per_step;
    rec.hardware_flops = res.hardware_flops_per_step;
    rec.tokens = lay.tokens_per_step;
    sink.on_step(rec);
    res.steps.push_back(rec);
    res.comm_s += step.comm_total_s();
    res.optimizer_s += step.optimizer_s();
    res.tasks += step.tasks();
    res.ranks_simulated = step.ranks_simulated();
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
  for (double* v : {&res.step_time_s, &res.compute_s, &res.exposed_comm_s, &res.comm_s, &res.bubble_s,
                    &res.data_stall_s, &res.other_s, &res.optimizer_s})
    *v /= n;
  for (engine::LinkId id = 0; id < world.net.link_count(); ++id) {
    const auto& st = world.net.link_stats(id);
    if (st.bytes > 0) res.links.push_back({world.net.link_name(id), st.bytes, st.busy.seconds()});
  }
  res.events_executed = world.sim.events_executed();
  res.flows_started = world.net.flows_started();
  return res;
}

}  // namespace ironlaw::run
