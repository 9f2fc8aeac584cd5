#include "run/step_builder.hpp"

#include <memory>
#include <stdexcept>

#include "hardware/gpu_speed.hpp"
#include "run/cpu_budget.hpp"
#include "run/data_input.hpp"

namespace ironlaw::run::detail {

using engine::TaskGraph;

World::World(const config::Scenario& s, const Layout& l, RecordSink& record_sink, TraceLevel level)
    : scenario(s), layout(l), sink(record_sink), trace(level), net(sim), cluster(s.topology, s.nodes, net),
      comm(sim, net, cluster),
      data(sim, net, s.data, s.topology.device, s.nodes, s.topology.node.gpus, l.microbatch_sequences, s.seed,
           data_resources(s, l, cluster)),
      kernel_time_factor(hardware::kernel_time_factors(s.topology.device.speed_variation_cv, s.seed, s.nodes,
                                                       s.topology.node.gpus)) {
  comm.set_fluid_rings(s.run.collectives == "fluid");
  // The flex dispatcher (parallel.moe_dispatcher deepep or hybridep; the expert all-to-alls are
  // the only all-to-alls here): a token once per GPU holding any of its experts and once per node
  // between nodes, at the rates its library's kernels reach on this system (comm.ep_kernels).
  if (s.parallel.flex_dispatcher()) {
    comm.set_all_to_all_routing(s.model.experts, s.model.experts_per_token);
    const auto kernels = s.topology.comm.ep_kernels(s.parallel.moe_dispatcher);
    comm.set_all_to_all_kernels(kernels.rdma_rate, kernels.forward_rate);
  }
  if (level == TraceLevel::op || level == TraceLevel::flow) data.set_sink(&record_sink);
  if (data.enabled()) data.start();  // loaders warm up before the first step, as a DataLoader does
}

StepBuilder::StepBuilder(World& w, const Costs& costs, std::int64_t index)
    : w_(w), costs_(costs), index_(index), graph_(w.sim) {
  const Layout& lay = w.layout;
  const bool full = w.scenario.run.detail == "full";
  for (int r = 0; r < lay.gpus; ++r) {
    if (full || lay.coord_of(r)[Dim::dp] == 0) {
      local_of_.emplace(r, static_cast<int>(ranks_.size()));
      ranks_.push_back(r);
    }
  }
  timeline_.resize(ranks_.size());
  const auto& topo = w.scenario.topology;
  sms_.reserve(ranks_.size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) sms_.emplace_back(w.sim, topo.device.sm_count, topo.device.hbm_bandwidth);
  slowdown_.reserve(ranks_.size());
  for (int r : ranks_) {
    slowdown_.push_back(full ? w.kernel_time_factor.at(static_cast<std::size_t>(r))
                             : hardware::slowest(w.kernel_time_factor, lay.group(r, Dim::dp)));
  }
  compute_resource_ = w.sink.intern_resource("compute");
  comm_resource_ = w.sink.intern_resource("comm");
  data_resource_ = w.sink.intern_resource("data");

  // The units each simulated rank holds: the layers of its pipeline stage's chunks, the
  // embedding with chunk 0, the head with the last chunk.
  const int L = w.scenario.model.layers;
  std::vector<std::vector<int>> held(ranks_.size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const int stage = lay.coord_of(ranks_[i])[Dim::pp];
    for (int chunk = 0; chunk < lay.chunks(); ++chunk) {
      if (lay.stage_of_chunk(chunk) != stage) continue;
      for (int l = 0; l < lay.chunk_layers[static_cast<std::size_t>(chunk)]; ++l) held[i].push_back(lay.first_layer(chunk) + l);
      if (chunk == 0) held[i].push_back(L);
      if (chunk == lay.chunks() - 1) held[i].push_back(L + 1);
    }
  }
  units_.reset(held, lay.microbatches, L + 2);
}

void UnitTasks::reset(const std::vector<std::vector<int>>& held, int microbatches, int units) {
  units_ = static_cast<std::size_t>(units);
  slot_.assign(held.size() * units_, -1);
  count_.assign(held.size(), 0);
  base_.assign(held.size(), 0);
  std::size_t cells = 0;
  for (std::size_t i = 0; i < held.size(); ++i) {
    for (int u : held[i]) {
      std::int32_t& slot = slot_[i * units_ + static_cast<std::size_t>(u)];
      if (slot < 0) slot = static_cast<std::int32_t>(count_[i]++);
    }
    base_[i] = cells;
    cells += count_[i] * static_cast<std::size_t>(microbatches);
  }
  for (Table* t : {&fwd_first, &fwd_last, &bwd_first, &bwd_last}) t->assign(cells, kNoTask);
}

int StepBuilder::local_of(int global) const {
  const auto it = local_of_.find(global);
  return it == local_of_.end() ? -1 : it->second;
}

std::vector<int> StepBuilder::simulated(const std::vector<int>& group) const {
  std::vector<int> out;
  for (int g : group)
    if (auto it = local_of_.find(g); it != local_of_.end()) out.push_back(it->second);
  return out;
}

void StepBuilder::add_compute_streams() {
  data_name_ = w_.sink.intern_name("input batch");
  for (int r : ranks_) streams_.push_back(graph_.add_stream("rank" + std::to_string(r) + "/compute"));
}

TaskId StepBuilder::compute(int local, EventKind kind, const TimedOps& ops, std::uint32_t name) {
  // The launch captures only `this` (held inside std::function, no allocation per task: a
  // step holds millions of them); rank and work are read back from the task's meta.
  const TaskId id = graph_.add_task(
      [this](TaskGraph& g, TaskId self) {
        const TaskMeta& m = meta_[self];
        const auto rank = static_cast<std::size_t>(m.local);
        const double factor = slowdown_[rank];
        const TimedOps& timed = *m.what.ops;
        const auto scaled = [factor](Time t) { return factor == 1.0 ? t : Time::from_seconds(t.seconds() * factor); };
        sms_[rank].start(scaled(timed.total), scaled(timed.memory_bound), scaled(timed.host_wait),
                         [&g, self] { g.complete(self); });
      },
      streams_[static_cast<std::size_t>(local)]);
  remember(id, TaskMeta{ranks_[static_cast<std::size_t>(local)], kind, false, name, local, {.ops = &ops}, 0, 0});
  return id;
}

namespace {

/// The algorithm NCCL's rule picks for a collective and its closed-form time with nothing else
/// on the network (Communicator::choose, Communicator::predict): what both the HBM rate and the
/// CPU bound's floor read, worked out once per launch.
struct Forecast {
  comm::Algorithm algorithm;
  Time time;
};

Forecast forecast(const comm::Communicator& comm, comm::CollectiveOp op, const std::vector<int>& group, double bytes) {
  const comm::Algorithm algorithm = comm.choose(op, group, bytes);
  return {algorithm, comm.predict(op, group, bytes, algorithm)};
}

/// The CPU bound's projection (run/cpu_budget.hpp) learns that the step lasts at least until
/// this collective could end: a share of its closed form, which only reads the topology
/// (`known`: its forecast, when already worked out).
void raise_cpu_floor(const comm::Communicator& comm, const engine::Simulator& sim, comm::CollectiveOp op,
                     const std::vector<int>& group, double bytes, const Forecast* known = nullptr) {
  if (group.size() < kCollectiveFloorMinRanks || !cpu_budget_wants_floor()) return;
  const Time predicted = known ? known->time : forecast(comm, op, group, bytes).time;
  if (predicted == Time::max()) return;
  raise_cpu_budget_floor(sim.now(), sim.now() + Time::from_seconds(kCollectiveFloorFraction * predicted.seconds()));
}

/// The bytes per second a collective's kernels move through each member's HBM
/// (gpu_sms.hpp): comm::hbm_bytes_per_rank over its forecast time (other traffic only
/// lengthens it, so this is the collective's highest rate). 0 where the forecast does not apply.
double hbm_rate(comm::CollectiveOp op, const std::vector<int>& group, double bytes, const Forecast& f) {
  if (group.empty() || !(bytes > 0)) return 0.0;
  if (f.time == Time::max() || f.time <= Time::zero()) return 0.0;
  return comm::hbm_bytes_per_rank(op, f.algorithm, static_cast<int>(group.size()), bytes) / f.time.seconds();
}

}  // namespace

TaskId StepBuilder::collective(comm::CollectiveOp op, std::vector<int> group, double bytes, std::uint32_t name,
                               const std::vector<int>& participants, StreamId stream) {
  const TaskId id = graph_.add_task(
      [this, op, group = std::move(group), bytes](TaskGraph& g, TaskId self) {
        const Forecast f = forecast(w_.comm, op, group, bytes);
        const double hbm = hbm_rate(op, group, bytes, f);
        const int sms = kernel_sms(spans_nodes(group));
        comm_begin(self, hbm, sms);
        raise_cpu_floor(w_.comm, w_.sim, op, group, bytes, &f);
        w_.comm.start(op, group, bytes, comm::Algorithm::automatic,
                      [this, &g, self, hbm, sms] { comm_end(g, self, hbm, sms); });
      },
      stream);
  remember_comm(id, name, bytes, participants);
  return id;
}

TaskId StepBuilder::collectives(comm::CollectiveOp op, std::vector<std::vector<int>> groups, double bytes,
                                std::uint32_t name, const std::vector<int>& participants, int kernel_sms_given) {
  const TaskId id = graph_.add_task([this, op, groups = std::move(groups), bytes, kernel_sms_given](TaskGraph& g,
                                                                                                     TaskId self) {
    // The groups are instances of one collective (the same size and bytes): one rate for all,
    // from the first group's forecast, which its floor reuses.
    double hbm = 0.0;
    int sms = 0;
    if (!groups.empty()) {
      const Forecast f = forecast(w_.comm, op, groups.front(), bytes);
      hbm = hbm_rate(op, groups.front(), bytes, f);
      sms = kernel_sms_given >= 0 ? kernel_sms_given : kernel_sms(spans_nodes(groups.front()));
      raise_cpu_floor(w_.comm, w_.sim, op, groups.front(), bytes, &f);
    }
    comm_begin(self, hbm, sms);
    auto left = std::make_shared<std::size_t>(groups.size());
    for (std::size_t i = 1; i < groups.size(); ++i) raise_cpu_floor(w_.comm, w_.sim, op, groups[i], bytes);
    for (const auto& members : groups)
      w_.comm.start(op, members, bytes, comm::Algorithm::automatic, [this, &g, self, left, hbm, sms] {
        if (--*left == 0) comm_end(g, self, hbm, sms);
      });
  });
  remember_comm(id, name, bytes, participants);
  return id;
}

TaskId StepBuilder::send(int src, int dst, double bytes, std::uint32_t name, const std::vector<int>& participants) {
  return sends({{src, dst}}, bytes, name, participants);
}

TaskId StepBuilder::sends(std::vector<std::pair<int, int>> hops, double bytes, std::uint32_t name,
                          const std::vector<int>& participants) {
  const TaskId id = graph_.add_task([this, hops = std::move(hops), bytes](TaskGraph& g, TaskId self) {
    bool spans = false;  // each hop is its own pair of ranks: across nodes if its ends are
    for (const auto& [src, dst] : hops) spans = spans || w_.cluster.node_of(src) != w_.cluster.node_of(dst);
    const int sms = kernel_sms(spans);
    comm_begin(self, 0.0, sms);  // the HBM traffic of point-to-point sends is not counted (gpu_sms.hpp)
    send_all(hops, bytes, [this, &g, self, sms] { comm_end(g, self, 0.0, sms); });
  });
  remember_comm(id, name, bytes, participants);
  return id;
}

TaskId StepBuilder::copies(std::vector<std::pair<int, int>> hops, double bytes, std::uint32_t name,
                           const std::vector<int>& participants) {
  const TaskId id = sends(std::move(hops), bytes, name, participants);
  meta_[id].copy_engine = true;
  return id;
}

void StepBuilder::send_all(const std::vector<std::pair<int, int>>& hops, double bytes, std::function<void()> done) {
  auto left = std::make_shared<std::size_t>(hops.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (const auto& [src, dst] : hops) {
    w_.comm.send(src, dst, bytes, [left, finish] {
      if (--*left == 0) (*finish)();
    });
  }
}

TaskId StepBuilder::data(int local) {
  const int gpu = ranks_[static_cast<std::size_t>(local)];
  const TaskId id = graph_.add_task(
      [this, gpu](TaskGraph& g, TaskId self) { w_.data.request(gpu, [&g, self] { g.complete(self); }); },
      streams_[static_cast<std::size_t>(local)]);
  remember(id, TaskMeta{gpu, EventKind::data, false, data_name_, local, {.bytes = w_.data.batch_bytes(gpu)}, 0, 0});
  return id;
}

TaskId StepBuilder::shared(const SharedTaskKey& key, const std::function<TaskId()>& make) {
  auto it = shared_.find(key);
  if (it == shared_.end()) it = shared_.emplace(key, make()).first;
  return it->second;
}

/// The SMs one collective's kernels take on each member: its communicator's channel count,
/// which differs for a communicator within one node (NVLink only) and one spanning nodes
/// (config::CommSpec::sms_of).
int StepBuilder::kernel_sms(bool spans_nodes) const {
  const auto& topo = w_.scenario.topology;
  return topo.comm.sms_of(spans_nodes, topo.node.nics);
}

bool StepBuilder::spans_nodes(const std::vector<int>& gpus) const {
  for (int g : gpus)
    if (w_.cluster.node_of(g) != w_.cluster.node_of(gpus.front())) return true;
  return false;
}

/// A communication task's kernels occupy SMs on its simulated participants from launch to
/// completion.
void StepBuilder::comm_begin(TaskId id, double hbm_rate, int sms) {
  const TaskMeta& m = meta_[id];
  if (m.copy_engine) return;
  for (std::uint32_t i = 0; i < m.participant_count; ++i)
    sms_[static_cast<std::size_t>(participants_[m.first_participant + i])].comm_begin(hbm_rate, sms);
}

void StepBuilder::comm_end(TaskGraph& g, TaskId id, double hbm_rate, int sms) {
  const TaskMeta& m = meta_[id];
  if (m.copy_engine) {
    g.complete(id);
    return;
  }
  for (std::uint32_t i = 0; i < m.participant_count; ++i)
    sms_[static_cast<std::size_t>(participants_[m.first_participant + i])].comm_end(hbm_rate, sms);
  g.complete(id);
}

void StepBuilder::remember(TaskId id, TaskMeta meta) {
  if (meta_.size() <= id) meta_.resize(static_cast<std::size_t>(id) + 1);
  meta_[id] = meta;
}

void StepBuilder::remember_comm(TaskId id, std::uint32_t name, double bytes, const std::vector<int>& participants) {
  TaskMeta m;
  m.kind = EventKind::collective;
  m.name = name;
  m.what.bytes = bytes;
  m.first_participant = static_cast<std::uint32_t>(participants_.size());
  m.participant_count = static_cast<std::uint32_t>(participants.size());
  participants_.insert(participants_.end(), participants.begin(), participants.end());
  remember(id, m);
}

StepMeasurement StepBuilder::run() {
  const Time start = w_.sim.now();
  graph_.set_observer([this](TaskId id, Time s, Time e) {
    observe(id, s, e);
    poll_cpu_budget(e);  // CPU bound of the simulation (run/cpu_budget.hpp)
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
  return measure_step(timeline_, index_, start, w_.sim.now(), w_.layout.pp > 1);
}

void StepBuilder::observe(TaskId id, Time s, Time e) {
  const TaskMeta& m = meta_[id];
  if (m.kind == EventKind::collective) {
    for (std::uint32_t i = 0; i < m.participant_count; ++i) {
      const int local = participants_[m.first_participant + i];
      timeline_[static_cast<std::size_t>(local)].comm.add(s, e);
    }
  } else if (m.kind == EventKind::data) {
    timeline_[static_cast<std::size_t>(m.local)].data.add(s, e);
  } else {
    auto& t = timeline_[static_cast<std::size_t>(m.local)];
    t.compute.add(s, e);
    if (m.kind == EventKind::backward || m.kind == EventKind::recompute) t.last_backward_end = std::max(t.last_backward_end, e);
    if (m.kind == EventKind::optimizer) t.optimizer += e - s;
  }
  if (w_.trace == TraceLevel::none || w_.trace == TraceLevel::step) return;
  if (m.kind == EventKind::data) {
    w_.sink.on_event(EventRecord{m.rank, data_resource_, m.kind, m.name, s.count_ns(), e.count_ns(), 0, m.what.bytes});
    return;
  }
  if (m.kind == EventKind::collective) {
    for (std::uint32_t i = 0; i < m.participant_count; ++i) {
      const int rank = ranks_[static_cast<std::size_t>(participants_[m.first_participant + i])];
      w_.sink.on_event(EventRecord{rank, comm_resource_, m.kind, m.name, s.count_ns(), e.count_ns(), 0, m.what.bytes});
    }
    return;
  }
  // Compute: one record per op inside the task, laid end to end, each stretched by the
  // slowdown the task met (SMs shared with communication kernels).
  const double stretch = m.what.ops->total.count_ns() > 0
                             ? static_cast<double>((e - s).count_ns()) / static_cast<double>(m.what.ops->total.count_ns())
                             : 1.0;
  Time cumulative;
  Time t = s;
  for (std::size_t i = 0; i < m.what.ops->ops.size(); ++i) {
    cumulative += m.what.ops->times[i];
    const Time end = i + 1 == m.what.ops->ops.size()
                         ? e
                         : s + Time::ns(static_cast<std::int64_t>(static_cast<double>(cumulative.count_ns()) * stretch));
    w_.sink.on_event(EventRecord{m.rank, compute_resource_, m.kind, m.what.ops->name_ids[i], t.count_ns(), end.count_ns(),
                                 m.what.ops->ops[i].flops, m.what.ops->ops[i].bytes});
    t = end;
  }
}

}  // namespace ironlaw::run::detail
