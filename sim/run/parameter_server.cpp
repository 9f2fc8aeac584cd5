#include "run/parameter_server.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "hardware/cluster.hpp"
#include "hardware/gpu_speed.hpp"
#include "run/cpu_budget.hpp"
#include "run/simulation.hpp"
#include "workload/layer_list.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run {

namespace {

/// A variable before sharding.
struct Variable {
  std::string name;
  double params = 0;
  bool sparse = false;
  double rows = 0;
  double touched_rows = 0;  ///< per worker batch
};

std::vector<Variable> variables_of(const config::Scenario& sc, double samples_per_worker) {
  std::vector<Variable> vars;
  const config::ModelSpec& m = sc.model;
  if (m.layer_list) {
    const config::LayerModelSpec& list = *m.layer_list;
    const auto cost = workload::layer_model_cost(list, 1, sc.training.precision);
    double vocab = 0;
    for (const auto& l : list.layers) {
      if (l.kind == "embedding") vocab = l.vocab;
    }
    const double lookups = list.input_kind == "tokens" && !list.input.empty() ? list.input[0] : 1;
    for (const auto& l : cost.layers) {
      if (!(l.params > 0)) continue;
      Variable v{l.name, l.params, false, 0, 0};
      if (l.kind == "embedding" && vocab > 0) {
        v.sparse = true;
        v.rows = vocab;
        v.touched_rows = std::min(vocab, samples_per_worker * lookups);
      }
      vars.push_back(v);
    }
    if (sc.parameter_server.sparse_rows_per_batch > 0) {
      double all_rows = 0;
      for (const auto& v : vars) all_rows += v.sparse ? v.rows : 0;
      for (auto& v : vars) {
        if (v.sparse) v.touched_rows = std::min(v.rows, sc.parameter_server.sparse_rows_per_batch * v.rows / all_rows);
      }
    }
    return vars;
  }
  const auto p = workload::count_params(m);
  if (p.embedding > 0) vars.push_back({"embedding", p.embedding, false, 0, 0});
  if (p.position > 0) vars.push_back({"position", p.position, false, 0, 0});
  const double per_layer = (p.attention + p.mlp + p.norm) / std::max(1, m.layers);
  for (int i = 0; i < m.layers; ++i) vars.push_back({"layer" + std::to_string(i), per_layer, false, 0, 0});
  if (p.lm_head > 0) vars.push_back({"lm_head", p.lm_head, false, 0, 0});
  return vars;
}

/// Nearest-rank percentile of sorted values (q in (0, 1]).
double percentile(const std::vector<std::int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1]);
}

}  // namespace

double ps_update_bytes_per_param(const std::string& optimizer) {
  // fp32 weights read + written (8), the fp32 gradient read (4), each fp32 state tensor read +
  // written (8): adam 2 tensors, momentum and rmsprop 1, sgd none.
  if (optimizer == "sgd") return 12;
  if (optimizer == "momentum" || optimizer == "rmsprop") return 20;
  if (optimizer == "adam") return 28;
  throw std::invalid_argument("optimizer must be sgd, momentum, rmsprop or adam, got \"" + optimizer + "\"");
}

PsPlan plan_parameter_servers(const config::Scenario& sc) {
  const config::ParameterServerSpec& ps = sc.parameter_server;
  if (!ps.enabled) throw std::invalid_argument("the scenario has no parameter_server section");
  PsPlan plan;
  const int gpn = sc.topology.node.gpus;
  const int nics = sc.topology.node.nics;
  const bool dedicated = ps.placement == "dedicated";
  const int worker_nodes = dedicated ? sc.nodes - ps.server_nodes : sc.nodes;
  for (int g = 0; g < worker_nodes * gpn; ++g) plan.worker_gpus.push_back(g);
  const int workers = static_cast<int>(plan.worker_gpus.size());
  const double sequences = sc.training.global_batch_tokens / sc.training.sequence_length;
  plan.samples_per_worker = sequences / workers;
  plan.tokens_per_worker = sc.training.global_batch_tokens / workers;
  plan.update_bytes_per_param = ps_update_bytes_per_param(sc.training.optimizer);

  // Which GPU shares the PCIe switch of NIC k: the cluster puts gpus_per_pcie_switch GPUs and
  // one NIC on each switch; nic_of() is the authority.
  plan.servers.resize(static_cast<std::size_t>(ps.servers));
  for (int s = 0; s < ps.servers; ++s) {
    auto& server = plan.servers[static_cast<std::size_t>(s)];
    const int host_nodes = dedicated ? ps.server_nodes : sc.nodes;
    const int first = dedicated ? sc.nodes - ps.server_nodes : 0;
    server.node = first + s % host_nodes;
    server.nic = (s / host_nodes) % nics;
    server.anchor_gpu = -1;
  }

  for (const Variable& v : variables_of(sc, plan.samples_per_worker)) {
    plan.params += v.params;
  }
  int next = 0;
  for (const Variable& v : variables_of(sc, plan.samples_per_worker)) {
    const double bytes = v.params * PsPlan::kWireBytesPerParam;
    const int k = std::clamp(static_cast<int>(std::min<double>(ps.servers, std::floor(bytes / ps.min_shard_bytes))), 1,
                             ps.servers);
    for (int i = 0; i < k; ++i) {
      PsShard shard;
      shard.variable = k == 1 ? v.name : v.name + "/part_" + std::to_string(i);
      shard.server = next;
      shard.params = v.params / k;
      shard.sparse = v.sparse;
      if (v.sparse) {
        shard.rows = v.rows / k;
        shard.row_params = v.params / v.rows;
      }
      auto& server = plan.servers[static_cast<std::size_t>(next)];
      if (v.sparse) {
        server.sparse_rows += shard.rows;
        server.touched_rows += v.touched_rows / k;
        server.touched_params += v.touched_rows / k * shard.row_params;
      } else {
        server.dense_params += shard.params;
      }
      plan.shards.push_back(shard);
      next = (next + 1) % ps.servers;
    }
  }
  for (auto& server : plan.servers) {
    server.pull_bytes = (server.dense_params + server.touched_params) * PsPlan::kWireBytesPerParam +
                        server.touched_rows * PsPlan::kRowIdBytes;
    server.push_bytes = server.pull_bytes;
  }
  return plan;
}

PsWorkerCost ps_worker_cost(const config::Scenario& sc, const PsPlan& plan) {
  config::Scenario one = sc;
  one.parameter_server = config::ParameterServerSpec{};
  one.nodes = 1;
  one.topology.node.gpus = 1;
  one.topology.node.nics = 1;
  one.topology.node.gpus_per_pcie_switch = 1;
  one.topology.comm.channels = 0;
  one.parallel.dp = 1;
  one.training.global_batch_tokens = plan.tokens_per_worker;
  one.data = config::DataSpec{};
  one.reliability = config::ReliabilitySpec{};
  one.run.steps = 1;
  one.run.mode = "steps";
  one.run.detail = "symmetric";
  // The nominal GPU: each worker's own speed factor is applied per worker (simulate_parameter_server).
  one.topology.device.speed_variation_cv = 0;
  NullSink sink;
  const SimulationResult r = simulate(one, sink, TraceLevel::none);
  PsWorkerCost cost;
  cost.out_of_memory = r.out_of_memory;
  cost.hbm_bytes = r.hbm_bytes;
  cost.peak_memory = r.memory.total() - r.memory.optimizer;
  if (r.out_of_memory) return cost;
  const auto& step = r.steps.front();
  // The GPU's own optimizer step is not the worker's: the server applies the update.
  cost.compute = Time::ns(step.end_ns - step.start_ns) - Time::from_seconds(r.optimizer_s);
  cost.model_flops = r.model_flops_per_step;
  cost.peak_flops_per_gpu = r.peak_flops_per_gpu;
  return cost;
}

namespace {

/// The event-driven world of one parameter-server run.
class PsWorld {
 public:
  PsWorld(const config::Scenario& sc, PsPlan plan, std::span<const Time> compute, RecordSink& sink, TraceLevel trace)
      : sc_(sc), plan_(std::move(plan)), compute_(compute.begin(), compute.end()), sink_(sink), trace_(trace),
        net_(sim_), cluster_(sc.topology, sc.nodes, net_) {
    workers_ = static_cast<int>(plan_.worker_gpus.size());
    servers_ = static_cast<int>(plan_.servers.size());
    steps_ = sc.run.steps;
    sync_ = sc.parameter_server.mode == "sync";
    wire_paths();
    const double bw = sc.topology.node.host_memory_bandwidth;
    for (const auto& s : plan_.servers) {
      apply_async_.push_back(transfer_time((s.dense_params + s.touched_params) * plan_.update_bytes_per_param, bw));
      accumulate_.push_back(transfer_time((s.dense_params + s.touched_params) * PsPlan::kAccumulateBytesPerParam, bw));
      const double rows = std::min(s.sparse_rows, s.touched_rows * workers_);
      const double row_params = s.touched_rows > 0 ? s.touched_params / s.touched_rows : 0;
      apply_sync_.push_back(transfer_time((s.dense_params + rows * row_params) * plan_.update_bytes_per_param, bw));
    }
    const auto S = static_cast<std::size_t>(servers_);
    const auto W = static_cast<std::size_t>(workers_);
    busy_until_.assign(S, Time::zero());
    busy_total_.assign(S, Time::zero());
    enqueued_.assign(S, 0);
    applied_.assign(S, 0);
    arrived_.assign(S, 0);
    pulled_.assign(W * S, 0);
    iteration_.assign(W, 0);
    pending_.assign(W, 0);
    pull_start_.assign(W, Time::zero());
    push_done_.assign(W * S, Time::zero());
    compute_res_.resize(W);
    for (int w = 0; w < workers_; ++w) {
      compute_res_[static_cast<std::size_t>(w)] =
          sink_.intern_resource("gpu" + std::to_string(plan_.worker_gpus[static_cast<std::size_t>(w)]) + "/compute");
    }
    for (int s = 0; s < servers_; ++s) server_res_.push_back(sink_.intern_resource("ps" + std::to_string(s)));
    name_compute_ = sink_.intern_name("forward_backward");
    name_apply_ = sink_.intern_name(sync_ ? "ps_apply_sync" : "ps_apply");
    name_accumulate_ = sink_.intern_name("ps_accumulate");
    name_pull_ = sink_.intern_name("ps_pull");
    name_push_ = sink_.intern_name("ps_push");
  }

  PsResult run() {
    if (sync_) {
      sim_.schedule_at(Time::zero(), [this] { start_sync_step(); });
    } else {
      for (int w = 0; w < workers_; ++w) sim_.schedule_at(Time::zero(), [this, w] { start_iteration(w); });
    }
    // Bounded in CPU time like every simulation (run/cpu_budget.hpp): each worker runs its
    // run.steps iterations one after another, so at least steps x its compute time must pass.
    const Time longest = compute_.empty() ? Time::zero() : *std::max_element(compute_.begin(), compute_.end());
    const SimulationCpuBudget budget(sc_.name + " (parameter-server world)", longest.seconds() * steps_,
                                     "the workers (cluster.nodes x node.gpus) x parameter_server.servers x run.steps");
    CpuWatchdog watchdog(sim_);
    watchdog.resume();
    sim_.run();
    watchdog.pause();
    return finish();
  }

 private:
  std::size_t ws(int w, int s) const { return static_cast<std::size_t>(w) * static_cast<std::size_t>(servers_) + static_cast<std::size_t>(s); }

  /// The host-memory side of PCIe switch vertex `pcie` (created on first use): one link host →
  /// switch and one back, each of the node's pcie bandwidth and latency, named
  /// "nodeN/host->nodeN/pcieK" and back. A server process's weights and gradients live in host
  /// memory; every byte it sends or receives crosses its switch's upstream port, which the
  /// switch's NICs and GPUs share.
  const std::pair<engine::LinkId, engine::LinkId>& host_links(std::size_t pcie) {
    const auto it = host_links_.find(pcie);
    if (it != host_links_.end()) return it->second;
    const auto& v = cluster_.vertex(pcie);
    const std::string host = "node" + std::to_string(v.node) + "/host";
    const double bw = sc_.topology.node.pcie.bandwidth;
    const Time lat = sc_.topology.node.pcie.latency;
    const engine::LinkId down = net_.add_link(bw, lat, host + "->" + v.name);
    const engine::LinkId up = net_.add_link(bw, lat, v.name + "->" + host);
    return host_links_.emplace(pcie, std::make_pair(down, up)).first->second;
  }

  void wire_paths() {
    const int gpn = sc_.topology.node.gpus;
    // Each GPU's uplink (GPU → its PCIe switch) and switch; each server NIC's links to and from
    // its leaf and to and from its PCIe switch.
    const auto G = static_cast<std::size_t>(cluster_.gpus());
    std::vector<engine::LinkId> gpu_up(G, 0);
    std::vector<std::size_t> gpu_switch(G, 0);
    constexpr engine::LinkId kNone = ~engine::LinkId{0};
    const std::size_t S = plan_.servers.size();
    nic_out_.assign(S, kNone);
    nic_in_.assign(S, kNone);
    std::vector<engine::LinkId> switch_to_nic(S, kNone), nic_to_switch(S, kNone);
    std::vector<std::size_t> server_switch(S, 0);
    const std::size_t cluster_links = net_.link_count();
    for (engine::LinkId l = 0; l < cluster_links; ++l) {
      const auto [a, b] = cluster_.link_ends(l);
      const auto& va = cluster_.vertex(a);
      const auto& vb = cluster_.vertex(b);
      if (va.kind == hardware::VertexKind::gpu && vb.kind == hardware::VertexKind::pcie_switch) {
        gpu_up[static_cast<std::size_t>(va.node * gpn + va.index)] = l;
        gpu_switch[static_cast<std::size_t>(va.node * gpn + va.index)] = b;
      }
      for (std::size_t s = 0; s < S; ++s) {
        const auto& server = plan_.servers[s];
        const auto is_nic = [&](const hardware::VertexInfo& v) {
          return v.kind == hardware::VertexKind::nic && v.node == server.node && v.index == server.nic;
        };
        if (is_nic(va) && vb.kind == hardware::VertexKind::leaf) nic_out_[s] = l;
        if (is_nic(vb) && va.kind == hardware::VertexKind::leaf) nic_in_[s] = l;
        if (is_nic(vb) && va.kind == hardware::VertexKind::pcie_switch) {
          switch_to_nic[s] = l;
          server_switch[s] = a;
        }
        if (is_nic(va) && vb.kind == hardware::VertexKind::pcie_switch) nic_to_switch[s] = l;
      }
    }
    for (std::size_t s = 0; s < S; ++s) {
      if (nic_out_[s] == kNone || nic_in_[s] == kNone) throw std::logic_error("parameter server: its NIC has no leaf link");
      if (switch_to_nic[s] == kNone || nic_to_switch[s] == kNone) {
        throw std::logic_error("parameter server: its NIC has no PCIe switch link");
      }
      const auto& [down, up] = host_links(server_switch[s]);
      server_host_down_.push_back(down);
      server_host_up_.push_back(up);
    }
    const int nics = sc_.topology.node.nics;
    for (auto& server : plan_.servers) {
      for (int g = server.node * gpn; g < (server.node + 1) * gpn; ++g) {
        if (cluster_.nic_of(g) == server.node * nics + server.nic) {
          server.anchor_gpu = g;
          break;
        }
      }
      if (server.anchor_gpu < 0) throw std::logic_error("parameter server: no GPU shares the server's NIC");
    }
    pull_path_.resize(static_cast<std::size_t>(workers_ * servers_));
    push_path_.resize(pull_path_.size());
    for (int w = 0; w < workers_; ++w) {
      const int g = plan_.worker_gpus[static_cast<std::size_t>(w)];
      const auto gi = static_cast<std::size_t>(g);
      for (int s = 0; s < servers_; ++s) {
        const auto si = static_cast<std::size_t>(s);
        const auto& server = plan_.servers[si];
        auto& pull = pull_path_[ws(w, s)];
        auto& push = push_path_[ws(w, s)];
        if (cluster_.node_of(g) == server.node) {
          // Host memory → the worker's own PCIe switch → GPU, and back: no NIC.
          const auto& [down, up] = host_links(gpu_switch[gi]);
          pull = {down, cluster_.pcie_to_gpu(g)};
          push = {gpu_up[gi], up};
          continue;
        }
        const auto hash = static_cast<std::uint64_t>(ws(w, s));
        const auto from_server = cluster_.route(server.anchor_gpu, g, hash);
        const auto out = std::find(from_server.begin(), from_server.end(), switch_to_nic[si]);
        const auto to_server = cluster_.route(g, server.anchor_gpu, hash);
        const auto in = std::find(to_server.begin(), to_server.end(), nic_to_switch[si]);
        if (out == from_server.end() || in == to_server.end() ||
            std::find(out, from_server.end(), nic_out_[si]) == from_server.end() ||
            std::find(to_server.begin(), in, nic_in_[si]) == in) {
          throw std::logic_error("parameter server: a route misses the server's NIC");
        }
        // Host memory → the server's PCIe switch → NIC → fabric → worker, and the reverse.
        pull.assign(1, server_host_down_[si]);
        pull.insert(pull.end(), out, from_server.end());
        push.assign(to_server.begin(), in + 1);
        push.push_back(server_host_up_[si]);
      }
    }
  }

  void emit(std::int32_t rank, std::uint32_t resource, EventKind kind, std::uint32_t name, Time start, Time end,
            double flops, double bytes) {
    EventRecord e;
    e.rank = rank;
    e.resource = resource;
    e.kind = kind;
    e.name = name;
    e.start_ns = start.count_ns();
    e.end_ns = end.count_ns();
    e.flops = flops;
    e.bytes = bytes;
    sink_.on_event(e);
  }

  /// Pulls every server's shards for worker w; computes once all have arrived.
  void start_pull(int w) {
    const auto wi = static_cast<std::size_t>(w);
    pull_start_[wi] = sim_.now();
    pending_[wi] = servers_;
    for (int s = 0; s < servers_; ++s) {
      pulled_[ws(w, s)] = applied_[static_cast<std::size_t>(s)];
      const double bytes = plan_.servers[static_cast<std::size_t>(s)].pull_bytes;
      const Time started = sim_.now();
      net_.start_flow(pull_path_[ws(w, s)], bytes, [this, w, s, bytes, started](engine::FlowId) {
        if (trace_ >= TraceLevel::flow) {
          emit(plan_.worker_gpus[static_cast<std::size_t>(w)], server_res_[static_cast<std::size_t>(s)], EventKind::flow,
               name_pull_, started, sim_.now(), 0, bytes);
        }
        if (--pending_[static_cast<std::size_t>(w)] == 0) compute(w);
      });
    }
  }

  void compute(int w) {
    const auto wi = static_cast<std::size_t>(w);
    const Time start = sim_.now();
    const Time end = start + compute_[wi];
    if (trace_ >= TraceLevel::op) {
      emit(plan_.worker_gpus[wi], compute_res_[wi], EventKind::backward, name_compute_, start, end, worker_flops_, 0);
    }
    sim_.schedule_at(end, [this, w] { push(w); });
  }

  void push(int w) {
    pending_[static_cast<std::size_t>(w)] = servers_;
    for (int s = 0; s < servers_; ++s) {
      const double bytes = plan_.servers[static_cast<std::size_t>(s)].push_bytes;
      const Time started = sim_.now();
      net_.start_flow(push_path_[ws(w, s)], bytes, [this, w, s, bytes, started](engine::FlowId) {
        if (trace_ >= TraceLevel::flow) {
          emit(plan_.worker_gpus[static_cast<std::size_t>(w)], server_res_[static_cast<std::size_t>(s)], EventKind::flow,
               name_push_, started, sim_.now(), 0, bytes);
        }
        push_done_[ws(w, s)] = sim_.now();
        if (sync_) {
          accumulate(w, s);
        } else {
          apply_async(w, s);
        }
      });
    }
  }

  /// Reserves the server's (serial) update engine for `duration` from now or when it frees up.
  Time reserve(int s, Time duration, std::uint32_t name) {
    const auto si = static_cast<std::size_t>(s);
    const Time start = std::max(sim_.now(), busy_until_[si]);
    busy_until_[si] = start + duration;
    busy_total_[si] += duration;
    if (trace_ >= TraceLevel::op) emit(-1, server_res_[si], EventKind::optimizer, name, start, busy_until_[si], 0, 0);
    return busy_until_[si];
  }

  // ---- async -------------------------------------------------------------------------------
  void start_iteration(int w) {
    if (iteration_[static_cast<std::size_t>(w)] == steps_) return;
    start_pull(w);
  }

  void apply_async(int w, int s) {
    const auto si = static_cast<std::size_t>(s);
    const std::int64_t staleness = enqueued_[si] - pulled_[ws(w, s)];
    ++enqueued_[si];
    const Time end = reserve(s, apply_async_[si], name_apply_);
    const int it = iteration_[static_cast<std::size_t>(w)];
    const Time pulled_at = pull_start_[static_cast<std::size_t>(w)];
    const Time pushed_at = push_done_[ws(w, s)];
    sim_.schedule_at(end, [this, w, s, it, staleness, pulled_at, pushed_at] {
      ++applied_[static_cast<std::size_t>(s)];
      gradients_.push_back({w, it, s, staleness, pulled_at, pushed_at, sim_.now()});
      if (--pending_[static_cast<std::size_t>(w)] == 0) {
        ++iteration_[static_cast<std::size_t>(w)];
        start_iteration(w);
      }
    });
  }

  // ---- sync --------------------------------------------------------------------------------
  void start_sync_step() {
    if (sync_step_ == steps_) return;
    servers_done_ = 0;
    std::fill(arrived_.begin(), arrived_.end(), 0);
    for (int w = 0; w < workers_; ++w) {
      iteration_[static_cast<std::size_t>(w)] = sync_step_;
      start_pull(w);
    }
  }

  void accumulate(int w, int s) {
    (void)w;
    const auto si = static_cast<std::size_t>(s);
    const Time end = reserve(s, accumulate_[si], name_accumulate_);
    sim_.schedule_at(end, [this, s] {
      const auto si2 = static_cast<std::size_t>(s);
      if (++arrived_[si2] < workers_) return;
      const Time applied = reserve(s, apply_sync_[si2], name_apply_);
      sim_.schedule_at(applied, [this, s] {
        const auto si3 = static_cast<std::size_t>(s);
        ++applied_[si3];
        for (int w2 = 0; w2 < workers_; ++w2) {
          gradients_.push_back({w2, sync_step_, s, 0, pull_start_[static_cast<std::size_t>(w2)], push_done_[ws(w2, s)],
                                sim_.now()});
        }
        if (++servers_done_ == servers_) {
          ++sync_step_;
          start_sync_step();
        }
      });
    });
  }

  PsResult finish() {
    PsResult r;
    r.plan = plan_;
    r.steps = steps_;
    r.makespan = sim_.now();
    r.gradients = gradients_;
    r.events_executed = sim_.events_executed();
    r.flows_started = net_.flows_started();
    const double span = r.makespan.seconds();
    // Per worker iteration: from its pull to the last server's update of its gradient.
    std::vector<Time> it_start(static_cast<std::size_t>(workers_ * steps_), Time::max());
    std::vector<Time> it_end(it_start.size(), Time::zero());
    for (const auto& g : gradients_) {
      const auto i = static_cast<std::size_t>(g.worker * steps_ + g.iteration);
      it_start[i] = std::min(it_start[i], g.pull_start);
      it_end[i] = std::max(it_end[i], g.applied);
    }
    double iter_sum = 0, wait_sum = 0;
    for (std::size_t i = 0; i < it_start.size(); ++i) {
      const double d = (it_end[i] - it_start[i]).seconds();
      iter_sum += d;
      wait_sum += d - compute_[i / static_cast<std::size_t>(steps_)].seconds();
    }
    const auto n_it = static_cast<double>(it_start.size());
    r.worker_iteration_s = iter_sum / n_it;
    r.worker_wait_s = wait_sum / n_it;
    r.step_time_s = span / steps_;
    r.gradients_per_s = span > 0 ? workers_ * steps_ / span : 0;
    r.tokens_per_s = span > 0 ? plan_.tokens_per_worker * workers_ * steps_ / span : 0;
    for (int s = 0; s < servers_; ++s) {
      const auto si = static_cast<std::size_t>(s);
      const auto out = net_.link_stats(nic_out_[si]);
      const auto in = net_.link_stats(nic_in_[si]);
      // Keeps the busiest server's share of a link's capacity over the span, and its bytes.
      const auto keep_busiest = [](double bytes, double cap, double& utilisation, double& kept_bytes) {
        if (cap > 0 && bytes / cap > utilisation) {
          utilisation = bytes / cap;
          kept_bytes = bytes;
        }
      };
      const double cap = sc_.topology.node.nic.bandwidth * span;
      keep_busiest(out.bytes, cap, r.server_nic_out_utilisation, r.server_nic_out_bytes);
      keep_busiest(in.bytes, cap, r.server_nic_in_utilisation, r.server_nic_in_bytes);
      const double pcie_cap = sc_.topology.node.pcie.bandwidth * span;
      keep_busiest(net_.link_stats(server_host_down_[si]).bytes, pcie_cap, r.server_pcie_out_utilisation,
                   r.server_pcie_out_bytes);
      keep_busiest(net_.link_stats(server_host_up_[si]).bytes, pcie_cap, r.server_pcie_in_utilisation,
                   r.server_pcie_in_bytes);
      if (span > 0) r.server_busy_utilisation = std::max(r.server_busy_utilisation, busy_total_[si].seconds() / span);
    }
    for (engine::LinkId l = 0; l < net_.link_count(); ++l) {
      const auto& st = net_.link_stats(l);
      if (st.bytes > 0) r.links.push_back({net_.link_name(l), st.bytes, st.busy.seconds()});
    }
    // Staleness-aware step rate (Zhang et al., IJCAI 2016): a gradient of staleness τ is applied
    // at learning rate α0 / max(1, τ); a synchronous step averages the N workers' gradients at
    // α0, i.e. each at α0 / N. The discount of one gradient is the mean of its servers' factors
    // weighted by the share of its parameters each server holds, over the same updates as the
    // staleness statistics (each worker's first gradient left out unless run.steps is 1).
    double moved = 0;
    for (const auto& s : plan_.servers) moved += s.dense_params + s.touched_params;
    double weighted = 0, weights = 0;
    for (const auto& g : gradients_) {
      if (g.iteration == 0 && steps_ > 1) continue;
      const auto& s = plan_.servers[static_cast<std::size_t>(g.server)];
      const double share = moved > 0 ? (s.dense_params + s.touched_params) / moved : 0;
      weighted += share * (sync_ ? 1.0 / workers_ : 1.0 / static_cast<double>(std::max<std::int64_t>(1, g.staleness)));
      weights += share;
    }
    r.staleness_aware_steps_per_s = weights > 0 ? r.gradients_per_s * weighted / weights : 0;
    std::vector<std::int64_t> stale;
    for (const auto& g : gradients_) {
      if (g.iteration > 0 || steps_ == 1) stale.push_back(g.staleness);
    }
    std::sort(stale.begin(), stale.end());
    r.staleness_samples = stale.size();
    if (!stale.empty()) {
      double sum = 0;
      for (auto v : stale) sum += static_cast<double>(v);
      r.staleness_mean = sum / static_cast<double>(stale.size());
      r.staleness_p50 = percentile(stale, 0.5);
      r.staleness_p99 = percentile(stale, 0.99);
      r.staleness_max = static_cast<double>(stale.back());
    }
    // /steps: step k spans the k-th iteration of every worker.
    for (int k = 0; k < steps_; ++k) {
      Time start = Time::max(), end = Time::zero();
      double compute = 0;
      for (int w = 0; w < workers_; ++w) {
        const auto i = static_cast<std::size_t>(w * steps_ + k);
        start = std::min(start, it_start[i]);
        end = std::max(end, it_end[i]);
        compute = std::max(compute, compute_[static_cast<std::size_t>(w)].seconds());
      }
      StepRecord rec;
      rec.step = k;
      rec.start_ns = start.count_ns();
      rec.end_ns = end.count_ns();
      rec.compute_s = compute;
      rec.exposed_comm_s = std::max(0.0, (end - start).seconds() - compute);
      rec.tokens = plan_.tokens_per_worker * workers_;
      rec.model_flops = worker_flops_ * workers_;
      rec.hardware_flops = rec.model_flops;
      r.steps_records.push_back(rec);
      if (trace_ >= TraceLevel::step) sink_.on_step(rec);
    }
    return r;
  }

 public:
  double worker_flops_ = 0;  ///< model FLOPs of one worker iteration, for the records

 private:
  const config::Scenario& sc_;
  PsPlan plan_;
  std::vector<Time> compute_;
  RecordSink& sink_;
  TraceLevel trace_;
  engine::Simulator sim_;
  engine::FlowNetwork net_;
  hardware::Cluster cluster_;
  int workers_ = 0, servers_ = 0, steps_ = 0;
  bool sync_ = false;
  int sync_step_ = 0;
  int servers_done_ = 0;
  std::vector<std::vector<engine::LinkId>> pull_path_, push_path_;
  std::vector<engine::LinkId> nic_out_, nic_in_;
  std::vector<engine::LinkId> server_host_down_, server_host_up_;  ///< per server: host → its switch, back
  std::map<std::size_t, std::pair<engine::LinkId, engine::LinkId>> host_links_;  ///< by PCIe switch vertex
  std::vector<Time> apply_async_, accumulate_, apply_sync_;
  std::vector<Time> busy_until_, busy_total_;
  std::vector<std::int64_t> enqueued_, applied_;
  std::vector<int> arrived_;
  std::vector<std::int64_t> pulled_;
  std::vector<int> iteration_, pending_;
  std::vector<Time> pull_start_, push_done_;
  std::vector<PsGradient> gradients_;
  std::vector<std::uint32_t> compute_res_, server_res_;
  std::uint32_t name_compute_ = 0, name_apply_ = 0, name_accumulate_ = 0, name_pull_ = 0, name_push_ = 0;
};

}  // namespace

PsResult simulate_parameter_server(const config::Scenario& sc, std::span<const Time> worker_compute, RecordSink& sink,
                                   TraceLevel trace) {
  PsPlan plan = plan_parameter_servers(sc);
  if (worker_compute.size() != plan.worker_gpus.size()) {
    throw std::invalid_argument("simulate_parameter_server: one compute time per worker is needed (" +
                                std::to_string(plan.worker_gpus.size()) + "), got " +
                                std::to_string(worker_compute.size()));
  }
  PsWorld world(sc, std::move(plan), worker_compute, sink, trace);
  PsResult r = world.run();
  r.worker_compute = *std::max_element(worker_compute.begin(), worker_compute.end());
  return r;
}

PsResult simulate_parameter_server(const config::Scenario& sc, RecordSink& sink, TraceLevel trace) {
  const PsPlan plan = plan_parameter_servers(sc);
  const PsWorkerCost cost = ps_worker_cost(sc, plan);
  if (cost.out_of_memory) {
    PsResult r;
    r.plan = plan;
    r.out_of_memory = true;
    r.hbm_bytes = cost.hbm_bytes;
    r.worker_peak_memory = cost.peak_memory;
    return r;
  }
  // Every worker runs the same batch on its own GPU, at that GPU's drawn speed (hardware/gpu_speed):
  // with no barrier, async training lets slow workers fall behind instead of waiting for them.
  const int gpus_per_node = sc.topology.node.gpus;
  std::vector<Time> compute;
  compute.reserve(plan.worker_gpus.size());
  for (const int gpu : plan.worker_gpus) {
    const double factor = hardware::kernel_time_factor(sc.topology.device.speed_variation_cv, sc.seed,
                                                       gpu / gpus_per_node, gpu % gpus_per_node);
    compute.push_back(Time::from_seconds(cost.compute.seconds() * factor));
  }
  PsWorld world(sc, plan, compute, sink, trace);
  world.worker_flops_ = cost.model_flops;
  PsResult r = world.run();
  r.worker_compute = *std::max_element(compute.begin(), compute.end());
  r.worker_peak_memory = cost.peak_memory;
  r.hbm_bytes = cost.hbm_bytes;
  r.worker_model_flops = cost.model_flops;
  r.peak_flops_per_gpu = cost.peak_flops_per_gpu;
  return r;
}

std::vector<PsMetric> ps_summary_metrics(const config::Scenario& sc, const PsResult& r) {
  (void)sc;
  const double workers = static_cast<double>(r.plan.worker_gpus.size());
  const double span = r.makespan.seconds();
  const double model_flops_per_s = span > 0 ? r.worker_model_flops * workers * r.steps / span : 0;
  const double tflops_per_gpu = model_flops_per_s / workers / 1e12;
  const double mfu = r.peak_flops_per_gpu > 0 ? model_flops_per_s / (workers * r.peak_flops_per_gpu) : 0;
  return {
      {"step_time_s", r.step_time_s, "s"},
      {"tokens_per_s_per_gpu", r.tokens_per_s / workers, "1/s"},
      {"model_tflops_per_gpu", tflops_per_gpu, "TFLOP/s"},
      {"mfu", mfu, "1"},
      {"hfu", mfu, "1"},
      {"exposed_comm_s", r.worker_wait_s, "s"},
      {"bubble_s", 0, "s"},
      {"data_stall_s", 0, "s"},
      {"peak_memory_bytes", r.worker_peak_memory, "B"},
      {"ps_workers", workers, "1"},
      {"ps_servers", static_cast<double>(r.plan.servers.size()), "1"},
      {"ps_worker_compute_s", r.worker_compute.seconds(), "s"},
      {"ps_worker_iteration_s", r.worker_iteration_s, "s"},
      {"ps_gradients_per_s", r.gradients_per_s, "1/s"},
      {"ps_tokens_per_s", r.tokens_per_s, "1/s"},
      {"ps_server_nic_out_utilisation", r.server_nic_out_utilisation, "1"},
      {"ps_server_nic_in_utilisation", r.server_nic_in_utilisation, "1"},
      {"ps_server_pcie_out_utilisation", r.server_pcie_out_utilisation, "1"},
      {"ps_server_pcie_in_utilisation", r.server_pcie_in_utilisation, "1"},
      {"ps_server_update_utilisation", r.server_busy_utilisation, "1"},
      {"ps_staleness_mean", r.staleness_mean, "1"},
      {"ps_staleness_p50", r.staleness_p50, "1"},
      {"ps_staleness_p99", r.staleness_p99, "1"},
      {"ps_staleness_max", r.staleness_max, "1"},
      {"ps_staleness_aware_steps_per_s", r.staleness_aware_steps_per_s, "1/s"},
  };
}

}  // namespace ironlaw::run
