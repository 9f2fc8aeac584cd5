#include "run/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

#include "comm/collective.hpp"
#include "data/loader.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "engine/task_graph.hpp"
#include "hardware/cluster.hpp"
#include "run/intervals.hpp"
#include "run/gpu_sms.hpp"
#include "run/pipeline_schedule.hpp"
#include "run/step_costs.hpp"

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
using detail::After;
using detail::Costs;
using detail::GpuSms;
using detail::LayerCosts;
using detail::Part;
using detail::PartList;
using detail::TimedOps;
using engine::StreamId;
using engine::TaskGraph;
using engine::TaskId;
constexpr TaskId kNone = 0xffffffffu;

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
    comm.set_fluid_rings(s.run.collectives == "fluid");
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
    const auto& topo = w.scenario.topology;
    const int comm_sms = topo.comm.channels > 0 ? topo.comm.channels : topo.node.nics;
    const double shared_rate =
        topo.device.sm_count > comm_sms ? static_cast<double>(topo.device.sm_count - comm_sms) / topo.device.sm_count : 1.0;
    sms_.reserve(ranks_.size());
    for (std::size_t i = 0; i < ranks_.size(); ++i) sms_.emplace_back(w.sim, shared_rate);
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
    const TaskId id = graph_.add_task(
        [this, local, work = ops.total](TaskGraph& g, TaskId self) {
          sms_[static_cast<std::size_t>(local)].start(work, [&g, self] { g.complete(self); });
        },
        streams_[static_cast<std::size_t>(local)]);
    remember(id, TaskMeta{ranks_[static_cast<std::size_t>(local)], kind, name, &ops, ops.bytes, 0, 0});
    return id;
  }

  /// A collective over `group` (global ranks), recorded on the simulated `participants`.
  TaskId collective(CollectiveOp op, std::vector<int> group, double bytes, std::uint32_t name,
                    const std::vector<int>& participants, StreamId stream) {
    const TaskId id = graph_.add_task(
        [this, op, group = std::move(group), bytes](TaskGraph& g, TaskId self) {
          comm_begin(self);
          w_.comm.start(op, group, bytes, comm::Algorithm::automatic, [this, &g, self] { comm_end(g, self); });
        },
        stream);
    remember_comm(id, name, bytes, participants);
    return id;
  }

  /// A point-to-point send of `bytes` from global rank `src` to `dst` (a pipeline activation or
  /// gradient), over the cluster route, after the collective library's launch latency.
  TaskId send(int src, int dst, double bytes, std::uint32_t name, const std::vector<int>& participants) {
    const TaskId id = graph_.add_task([this, src, dst, bytes](TaskGraph& g, TaskId self) {
      comm_begin(self);
      send_all({{src, dst}}, bytes, [this, &g, self] { comm_end(g, self); });
    });
    remember_comm(id, name, bytes, participants);
    return id;
  }

  /// Point-to-point transfers of `bytes` each, all at once; `done` when the last arrives.
  void send_all(const std::vector<std::pair<int, int>>& hops, double bytes, std::function<void()> done) {
    auto left = std::make_shared<std::size_t>(hops.size());
    auto finish = std::make_shared<std::function<void()>>(std::move(done));
    for (const auto& [src, dst] : hops) {
      w_.comm.send(src, dst, bytes, [left, finish] {
        if (--*left == 0) (*finish)();
      });
    }
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

  /// A communication task's kernels occupy SMs on its simulated participants from launch to
  /// completion.
  void comm_begin(TaskId id) {
    const TaskMeta& m = meta_[id];
    for (std::uint32_t i = 0; i < m.participant_count; ++i)
      sms_[static_cast<std::size_t>(participants_[m.first_participant + i])].comm_begin();
  }
  void comm_end(TaskGraph& g, TaskId id) {
    const TaskMeta& m = meta_[id];
    for (std::uint32_t i = 0; i < m.participant_count; ++i)
      sms_[static_cast<std::size_t>(participants_[m.first_participant + i])].comm_end();
    g.complete(id);
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
  /// Identifies one pass of one unit of one microbatch, for tasks shared between TP groups
  /// (expert all-to-alls, ring-attention exchanges).
  struct PassKey {
    int microbatch = 0;
    int unit = 0;
    int pass = 0;  // 0 forward, 1 recompute, 2 backward
  };

  /// `gates[g]`: the communication task member g's next part must wait for (kNone: none);
  /// carried across calls, so a pass that ends in a collective holds back the next one.
  PassTasks run_parts(const std::vector<int>& group, const PartList& parts, EventKind kind, std::uint32_t name,
                      std::vector<TaskId>& gates, const PassKey& key) {
    PassTasks out{std::vector<TaskId>(group.size(), kNone), std::vector<TaskId>(group.size(), kNone)};
    std::vector<TaskId> async_gates(group.size(), kNone);  // collectives beside the current (wgrad) part
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& part = parts[i];
      std::vector<TaskId> tasks(group.size());
      for (std::size_t g = 0; g < group.size(); ++g) {
        if (part.ring_steps > 0) {
          const auto [first, last] =
              ring_attention(group[g], part, kind, name, gates[g], out.last[g], key, static_cast<int>(i));
          tasks[g] = last;
          if (out.first[g] == kNone) out.first[g] = first;
        } else {
          tasks[g] = compute_task(group[g], kind, part.ops, name);
          if (gates[g] != kNone) graph_.add_dependency(gates[g], tasks[g]);
          if (out.first[g] == kNone) out.first[g] = tasks[g];
        }
        out.last[g] = tasks[g];
      }
      gates = async_gates;  // the part after the async one waits for its collective
      std::fill(async_gates.begin(), async_gates.end(), kNone);
      if (part.after == After::all_to_all) {
        // Each TP rank is in its own EP group (ranks that differ in dp only); the group's
        // all-to-all is one task shared with the other TP groups in it.
        for (std::size_t g = 0; g < group.size(); ++g) {
          gates[g] = expert_all_to_all(group[g], key, static_cast<int>(i));
          graph_.add_dependency(tasks[g], gates[g]);
        }
      } else if (part.after != After::none) {
        const TaskId c = tp_collective(group);
        for (TaskId t : tasks) graph_.add_dependency(t, c);
        for (std::size_t g = 0; g < group.size(); ++g) (part.after == After::sync ? gates : async_gates)[g] = c;
      }
    }
    for (std::size_t g = 0; g < group.size(); ++g)
      if (async_gates[g] != kNone) gates[g] = async_gates[g];
    return out;
  }

  /// Tasks shared across TP groups, created by whichever member reaches them first.
  TaskId shared(int kind, int group_id, const PassKey& k, int part, int step, const std::function<TaskId()>& make) {
    const auto key = std::make_tuple(kind, group_id, k.microbatch, k.unit, k.pass, part, step);
    auto it = shared_.find(key);
    if (it == shared_.end()) it = shared_.emplace(key, make()).first;
    return it->second;
  }

  /// The expert-parallel all-to-all of `local`'s EP group at part `part` of the pass. In the
  /// symmetric mode the other EP groups of the same (tp, cp, pp) coordinate — in replicas
  /// that are not simulated op by op — run theirs at the same moment, so their flows are
  /// started too.
  TaskId expert_all_to_all(int local, const PassKey& k, int part) {
    const int rank = ranks_[static_cast<std::size_t>(local)];
    const std::vector<int> group = lay_.ep_group(rank);
    return shared(0, group.front(), k, part, 0, [&] {
      std::vector<std::vector<int>> groups;
      if (w_.scenario.run.detail == "full") {
        groups.push_back(group);
      } else {
        Coord c = lay_.coord_of(rank);
        for (int block = 0; block < lay_.dp / lay_.ep; ++block) {
          c[Dim::dp] = block * lay_.ep;
          groups.push_back(lay_.ep_group(lay_.rank_of(c)));
        }
      }
      std::vector<int> participants;
      for (int g : group)
        if (auto it = local_of_.find(g); it != local_of_.end()) participants.push_back(it->second);
      const double bytes = costs_.all_to_all_bytes;
      const TaskId id = graph_.add_task([this, groups, bytes](TaskGraph& g, TaskId self) {
        comm_begin(self);
        auto left = std::make_shared<std::size_t>(groups.size());
        for (const auto& members : groups)
          w_.comm.start(CollectiveOp::all_to_all, members, bytes, comm::Algorithm::automatic, [this, &g, self, left] {
            if (--*left == 0) comm_end(g, self);
          });
      });
      remember_comm(id, ep_name_, bytes, participants);
      return id;
    });
  }

  /// Ring attention (context parallelism) on one rank: `ring_steps` blocks of the attention
  /// core; block k waits for the k-th key/value exchange of the CP ring, and exchange k follows
  /// exchange k−1 (each rank forwards the block it just received). Exchanges are shared by the
  /// CP group. Returns the first and last compute task.
  std::pair<TaskId, TaskId> ring_attention(int local, const Part& part, EventKind kind, std::uint32_t name, TaskId gate,
                                           TaskId before, const PassKey& k, int part_index) {
    const int rank = ranks_[static_cast<std::size_t>(local)];
    const std::vector<int> ring = lay_.group(rank, Dim::cp);
    TaskId first = kNone, last = kNone, previous_exchange = kNone;
    for (int step = 0; step < part.ring_steps; ++step) {
      const TaskId block = compute_task(local, kind, part.ops, name);
      if (gate != kNone) graph_.add_dependency(gate, block);
      if (previous_exchange != kNone) graph_.add_dependency(previous_exchange, block);
      if (first == kNone) first = block;
      last = block;
      if (step + 1 == part.ring_steps) break;
      const TaskId exchange = shared(1, ring.front(), k, part_index, step, [&] {
        std::vector<std::pair<int, int>> hops;
        std::vector<int> participants;
        for (std::size_t i = 0; i < ring.size(); ++i) {
          hops.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
          if (auto it = local_of_.find(ring[i]); it != local_of_.end()) participants.push_back(it->second);
        }
        const TaskId id = graph_.add_task([this, hops, bytes = part.ring_bytes](TaskGraph& g, TaskId self) {
          comm_begin(self);
          send_all(hops, bytes, [this, &g, self] { comm_end(g, self); });
        });
        remember_comm(id, cp_name_, part.ring_bytes, participants);
        if (previous_exchange != kNone) graph_.add_dependency(previous_exchange, id);
        return id;
      });
      // The first block leaves once this rank has computed it (the task before the ring) and
      // any collective it waits on is done; it travels while the local block is computed.
      if (step == 0) {
        if (before != kNone) graph_.add_dependency(before, exchange);
        if (gate != kNone) graph_.add_dependency(gate, exchange);
      }
      previous_exchange = exchange;
    }
    return {first, last};
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
  std::vector<GpuSms> sms_;             // per local rank
  std::map<int, StreamId> tp_streams_;  // TP-group stream by its first global rank
  std::vector<TaskMeta> meta_;
  std::vector<int> participants_;
  std::vector<RankTimeline> timeline_;
  std::uint32_t compute_resource_ = 0, comm_resource_ = 0, data_resource_ = 0;
  std::uint32_t tp_name_ = 0, pp_name_ = 0, data_name_ = 0, ep_name_ = 0, cp_name_ = 0;
  std::map<std::tuple<int, int, int, int, int, int, int>, TaskId> shared_;
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
  ep_name_ = w_.sink.intern_name("ep all_to_all");
  cp_name_ = w_.sink.intern_name("cp ring exchange");

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
    std::vector<TaskId> gates(group.size(), kNone);
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
      auto pass = [&](const PartList& parts, EventKind kind, std::uint32_t name, int unit, int pass_id) {
        note(run_parts(group, parts, kind, name, gates, PassKey{mb, unit, pass_id}), unit);
      };
      if (slot.pass == Pass::forward) {
        if (first_chunk && w_.data.enabled())
          for (int local : group) data_task(local);
        if (first_chunk) pass(costs_.embed_forward, EventKind::forward, embed_name, L, 0);
        for (int l = first; l < first + count; ++l)
          pass(costs_.layer(l).forward, EventKind::forward, layer_names[static_cast<std::size_t>(l)], l, 0);
        if (last_chunk) pass(costs_.head_forward, EventKind::forward, head_name, L + 1, 0);
      } else {
        if (last_chunk) pass(costs_.head_backward, EventKind::backward, head_name, L + 1, 2);
        for (int l = first + count - 1; l >= first; --l) {
          const auto name = layer_names[static_cast<std::size_t>(l)];
          const LayerCosts& lc = costs_.layer(l);
          if (!lc.recompute.empty()) pass(lc.recompute, EventKind::recompute, name, l, 1);
          pass(lc.backward, EventKind::backward, name, l, 2);
        }
        if (first_chunk) pass(costs_.embed_backward, EventKind::backward, embed_name, L, 2);
      }
      for (std::size_t g = 0; g < group.size(); ++g) {
        const auto local = static_cast<std::size_t>(group[g]);
        entry[slot_index(local, mb, chunk, slot.pass)] = slot_entry[g];
        // A pass whose last part ended in a synchronous collective is done when it is.
        exit_[slot_index(local, mb, chunk, slot.pass)] = gates[g] != kNone ? gates[g] : slot_exit[g];
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

  // One representative per gradient-reduction group (DP × CP): the rank with dp = cp = 0.
  std::vector<int> representatives;
  for (std::size_t i = 0; i < n; ++i) {
    const Coord c = lay_.coord_of(ranks_[i]);
    if (c[Dim::dp] == 0 && c[Dim::cp] == 0) representatives.push_back(static_cast<int>(i));
  }
  build_data_parallel(representatives);
}

void StepRun::build_data_parallel(const std::vector<int>& representatives) {
  const auto& s = w_.scenario;
  const int L = s.model.layers;
  const int m = lay_.microbatches;
  const int zero = s.parallel.zero;
  const double elem = workload::parameter_bytes(s.training.precision);
  const std::uint32_t opt_name = w_.sink.intern_name("optimizer");

  auto unit_params = [&](int u) {
    return u < L ? costs_.layer(u).params : u == L ? costs_.embed_params : costs_.head_params;
  };
  auto unit_label = [&](int u) { return u < L ? "layer" + std::to_string(u) : u == L ? std::string("embedding") : std::string("head"); };

  for (int rep : representatives) {
    const int r = ranks_[static_cast<std::size_t>(rep)];
    // Gradients are reduced over the ranks that hold the same parameters: DP × CP. (Routed
    // experts are reduced over the same group here, a slight overcount of their group.)
    std::vector<int> group = lay_.group(r, Dim::dp, Dim::cp);
    std::vector<int> members;  // the simulated members (local): all, or replica 0's CP ranks
    for (int g : group)
      if (auto it = local_of_.find(g); it != local_of_.end()) members.push_back(it->second);
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
  // Compute: one record per op inside the task, laid end to end, each stretched by the
  // slowdown the task met (SMs shared with communication kernels).
  const double stretch = m.ops->total.count_ns() > 0
                             ? static_cast<double>((e - s).count_ns()) / static_cast<double>(m.ops->total.count_ns())
                             : 1.0;
  Time cumulative;
  Time t = s;
  for (std::size_t i = 0; i < m.ops->ops.size(); ++i) {
    cumulative += m.ops->times[i];
    const Time end = i + 1 == m.ops->ops.size()
                         ? e
                         : s + Time::ns(static_cast<std::int64_t>(static_cast<double>(cumulative.count_ns()) * stretch));
    w_.sink.on_event(EventRecord{m.rank, compute_resource_, m.kind, m.ops->name_ids[i], t.count_ns(), end.count_ns(),
                                 m.ops->ops[i].flops, m.ops->ops[i].bytes});
    t = end;
  }
}


}  // namespace

SimulationResult simulate(const config::Scenario& s, RecordSink& sink, TraceLevel trace) {
  SimulationResult res;
  res.layout = resolve_layout(s);
  const Layout& lay = res.layout;
  res.gpus = lay.gpus;
  res.hbm_bytes = s.topology.device.hbm_bytes;
  const double in_flight = in_flight_microbatches(s.parallel.pp_schedule, 0, lay.pp, lay.microbatches, lay.virtual_stages);
  config::TrainingSpec per_rank = s.training;  // a CP rank holds 1/cp of each sequence
  per_rank.sequence_length = s.training.sequence_length / lay.cp;
  res.memory = workload::memory_per_gpu(s.model, per_rank, s.parallel, lay.dp, static_cast<int>(std::ceil(in_flight)));
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
  const Costs costs = detail::build_costs(s, lay, per_rank, sink);

  if (trace == TraceLevel::flow) {
    const std::uint32_t net_resource = sink.intern_resource("network");
    const std::uint32_t flow_name = sink.intern_name("flow");
    world.comm.set_flow_trace(comm::FlowTrace{[&sink, net_resource, flow_name](int src, int, double bytes, Time a, Time b) {
      sink.on_event(EventRecord{src, net_resource, EventKind::flow, flow_name, a.count_ns(), b.count_ns(), 0, bytes});
    }});
  }

  double recompute_flops = 0;  // one rank, one microbatch, all layers
  for (int l = 0; l < s.model.layers; ++l)
    for (const auto& p : costs.layer(l).recompute) recompute_flops += p.ops.flops * std::max(1, p.ring_steps);
  // Recomputation per step over all GPUs: every microbatch on every rank of every pipeline.
  res.hardware_flops_per_step = res.model_flops_per_step + recompute_flops * lay.microbatches * lay.gpus / lay.pp;

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
