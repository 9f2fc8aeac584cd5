#include "comm/collective.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

namespace ironlaw::comm {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_gather: return "all_gather";
  }
  return "?";
}

CollectiveOp parse_op(const std::string& name) {
  for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    if (name == op_name(op)) return op;
  }
  throw std::invalid_argument("unknown collective \"" + name +
                              "\" (expected all_reduce, reduce_scatter or all_gather)");
}

double bus_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_factor: ranks must be ≥ 1");
  const double n = ranks;
  return op == CollectiveOp::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

namespace {

/// Ranks grouped by node, nodes in order of first appearance, ranks in their given order.
std::vector<std::vector<int>> group_by_node(const std::vector<int>& ranks, const hardware::Cluster& cluster) {
  std::vector<std::vector<int>> groups;
  std::vector<int> node_group;  // node → index in groups, -1 while the node has no rank
  node_group.assign(static_cast<std::size_t>(cluster.nodes()), -1);
  for (int gpu : ranks) {
    int& g = node_group[static_cast<std::size_t>(cluster.node_of(gpu))];
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<std::size_t>(g)].push_back(gpu);
  }
  return groups;
}

bool uniform(const std::vector<std::vector<int>>& groups) {
  return std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return g.size() == groups.front().size(); });
}

/// One ring: position i sends `bytes` to position i+1 (mod n) in each of `steps` steps.
/// Position i starts step k when it is armed (its dependencies on earlier rings finished), its
/// own step k−1 send has completed and it has received step k−1 from position i−1.
struct Ring {
  std::vector<int> gpus;
  int steps = 0;
  double bytes = 0;
  std::uint64_t hash = 0;  // ECMP flow hash base of this ring's flows
  std::vector<int> started, sent, received, pending, subflows_left;
  std::vector<char> armed, done;
  std::vector<std::vector<std::pair<int, int>>> dependents;  // per position: (ring, position)

  Ring(std::vector<int> members, int step_count, double step_bytes, std::uint64_t flow_hash)
      : gpus(std::move(members)), steps(step_count), bytes(step_bytes), hash(flow_hash) {
    const std::size_t n = gpus.size();
    started.assign(n, 0);
    sent.assign(n, 0);
    received.assign(n, 0);
    pending.assign(n, 0);
    subflows_left.assign(n, 0);
    armed.assign(n, 0);
    done.assign(n, 0);
    dependents.resize(n);
  }
  int size() const { return static_cast<int>(gpus.size()); }
  int next(int i) const { return i + 1 == size() ? 0 : i + 1; }
};

/// A collective in flight: its rings, their dependencies and the completion callback. Owned by
/// the callbacks it has scheduled; freed after the last one ran.
class Collective : public std::enable_shared_from_this<Collective> {
 public:
  Collective(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster, FlowTrace trace,
             Time step_latency, int flows_per_connection, std::function<void()> on_done)
      : sim_(sim), net_(net), cluster_(cluster), trace_(std::move(trace)), step_latency_(step_latency),
        flows_per_connection_(flows_per_connection), on_done_(std::move(on_done)) {}

  int add_ring(std::vector<int> gpus, int steps, double bytes, std::uint64_t hash) {
    rings_.emplace_back(std::move(gpus), steps, bytes, hash);
    positions_left_ += rings_.back().gpus.size();
    return static_cast<int>(rings_.size()) - 1;
  }
  /// Position (after_ring, after_pos) may start only once (before_ring, before_pos) finished.
  void add_dependency(int before_ring, int before_pos, int after_ring, int after_pos) {
    rings_[before_ring].dependents[before_pos].emplace_back(after_ring, after_pos);
    ++rings_[after_ring].pending[after_pos];
  }
  /// Arms every position without dependencies. Call at the collective's start time.
  void launch() {
    if (positions_left_ == 0) {
      finish();
      return;
    }
    for (int r = 0; r < static_cast<int>(rings_.size()); ++r) {
      for (int i = 0; i < rings_[r].size(); ++i) {
        if (rings_[r].pending[i] == 0) arm(r, i);
      }
    }
  }

 private:
  void arm(int r, int i) {
    rings_[r].armed[i] = 1;
    advance(r, i);
  }

  void advance(int r, int i) {
    Ring& ring = rings_[r];
    const int k = ring.started[i];
    if (!ring.armed[i] || k >= ring.steps || ring.sent[i] != k || ring.received[i] < k) return;
    ++ring.started[i];
    if (step_latency_ == Time::zero()) {
      send(r, i);
    } else {
      sim_.schedule_in(step_latency_, [self = shared_from_this(), r, i] { self->send(r, i); });
    }
  }

  void send(int r, int i) {
    Ring& ring = rings_[r];
    const int src = ring.gpus[i];
    const int dst = ring.gpus[ring.next(i)];
    const int flows = cluster_.crosses_spine(src, dst) ? flows_per_connection_ : 1;
    ring.subflows_left[i] = flows;
    const double bytes = ring.bytes / flows;
    const Time start = sim_.now();
    for (int q = 0; q < flows; ++q) {
      const auto path = cluster_.route(src, dst, ring.hash * 1024 + static_cast<std::uint64_t>(q));
      net_.start_flow(path, bytes, [self = shared_from_this(), r, i, src, dst, bytes, start](engine::FlowId) {
        self->flow_done(r, i, src, dst, bytes, start);
      });
    }
  }

  void flow_done(int r, int i, int src, int dst, double bytes, Time start) {
    if (trace_.on_flow) trace_.on_flow(src, dst, bytes, start, sim_.now());
    Ring& ring = rings_[r];
    if (--ring.subflows_left[i] > 0) return;
    const int j = ring.next(i);
    ++ring.sent[i];
    ++ring.received[j];
    check_done(r, i);
    check_done(r, j);
    advance(r, i);
    advance(r, j);
  }

  void check_done(int r, int i) {
    Ring& ring = rings_[r];
    if (ring.done[i] || ring.sent[i] != ring.steps || ring.received[i] != ring.steps) return;
    ring.done[i] = 1;
    --positions_left_;
    for (const auto& [dr, di] : ring.dependents[i]) {
      if (--rings_[dr].pending[di] == 0) arm(dr, di);
    }
    if (positions_left_ == 0) finish();
  }

  void finish() {
    auto done = std::move(on_done_);
    on_done_ = nullptr;
    if (done) done();
  }

  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  const hardware::Cluster& cluster_;
  FlowTrace trace_;
  Time step_latency_;
  int flows_per_connection_;
  std::function<void()> on_done_;
  std::vector<Ring> rings_;
  std::size_t positions_left_ = 0;
};

int channel_count(const hardware::Cluster& cluster) {
  const int c = cluster.topology().comm.channels;
  return c > 0 ? c : cluster.topology().node.nics;
}

/// Flat ring: one ring per channel over all ranks, the buffer split evenly over the channels.
void build_ring(Collective& c, CollectiveOp op, const std::vector<int>& ranks, double bytes,
                const hardware::Cluster& cluster) {
  const int n = static_cast<int>(ranks.size());
  const int channels = channel_count(cluster);
  const int steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  const double step_bytes = bytes / (static_cast<double>(channels) * n);
  for (int ch = 0; ch < channels; ++ch) {
    c.add_ring(channel_ring(ranks, cluster, ch), steps, step_bytes, static_cast<std::uint64_t>(ch));
  }
}

/// Hierarchical: per slice, phases alternate between intra-node rings (one per node, over
/// NVLink) and inter-node rings (one per local index, each over its own NIC).
void build_hierarchical(Collective& c, CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                        const hardware::Cluster& cluster) {
  struct Phase {
    bool intra;
    int steps;
    double step_bytes;
  };
  const int nodes = static_cast<int>(groups.size());
  const int local = static_cast<int>(groups.front().size());
  const int slices = channel_count(cluster);
  const double slice = bytes / slices;
  const double intra_chunk = slice / local;                 // a 1/g shard of the slice
  const double inter_chunk = slice / (static_cast<double>(local) * nodes);
  std::vector<Phase> phases;
  switch (op) {
    case CollectiveOp::all_reduce:
      phases = {{true, local - 1, intra_chunk}, {false, 2 * (nodes - 1), inter_chunk}, {true, local - 1, intra_chunk}};
      break;
    case CollectiveOp::reduce_scatter:
      phases = {{true, local - 1, intra_chunk}, {false, nodes - 1, inter_chunk}};
      break;
    case CollectiveOp::all_gather:
      phases = {{false, nodes - 1, inter_chunk}, {true, local - 1, intra_chunk}};
      break;
  }
  // first_ring[s][p]: index of the first ring of phase p of slice s; intra rings are indexed by
  // node m (position = local index l), inter rings by local index l (position = node m).
  std::vector<std::vector<int>> first_ring(static_cast<std::size_t>(slices));
  auto where = [&](int s, int p, int m, int l) -> std::pair<int, int> {
    const int base = first_ring[s][p];
    return phases[p].intra ? std::pair{base + m, l} : std::pair{base + l, m};
  };
  std::uint64_t hash = 0;
  for (int s = 0; s < slices; ++s) {
    for (std::size_t p = 0; p < phases.size(); ++p) {
      first_ring[s].push_back(-1);
      const Phase& ph = phases[p];
      const int count = ph.intra ? nodes : local;
      for (int k = 0; k < count; ++k) {
        std::vector<int> members;
        if (ph.intra) {
          members = groups[k];
        } else {
          for (int m = 0; m < nodes; ++m) members.push_back(groups[m][k]);
        }
        const int id = c.add_ring(std::move(members), ph.steps, ph.step_bytes, hash++);
        if (k == 0) first_ring[s][p] = id;
      }
    }
  }
  for (int s = 0; s < slices; ++s) {
    for (int p = 0; p < static_cast<int>(phases.size()); ++p) {
      for (int m = 0; m < nodes; ++m) {
        for (int l = 0; l < local; ++l) {
          const auto [r, i] = where(s, p, m, l);
          if (p > 0) {
            const auto [br, bi] = where(s, p - 1, m, l);
            c.add_dependency(br, bi, r, i);
          }
          if (s > 0) {
            const auto [br, bi] = where(s - 1, p, m, l);
            c.add_dependency(br, bi, r, i);
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<int> channel_ring(const std::vector<int>& ranks, const hardware::Cluster& cluster, int channel) {
  const auto groups = group_by_node(ranks, cluster);
  if (!uniform(groups)) return ranks;
  const int g = static_cast<int>(groups.front().size());
  std::vector<int> order;
  order.reserve(ranks.size());
  for (const auto& group : groups) {
    for (int j = 0; j < g; ++j) order.push_back(group[static_cast<std::size_t>((channel + j) % g)]);
  }
  return order;
}

Communicator::Communicator(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster)
    : sim_(sim), net_(net), cluster_(cluster), flows_per_connection_(cluster.topology().comm.flows_per_connection) {}

void Communicator::set_flows_per_connection(int flows) {
  if (flows < 1) throw std::invalid_argument("Communicator: flows per connection must be ≥ 1");
  flows_per_connection_ = flows;
}

void Communicator::start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
                         std::function<void()> on_done) {
  if (ranks.empty()) throw std::invalid_argument("Communicator::start: no ranks");
  if (!(bytes >= 0)) throw std::invalid_argument("Communicator::start: bytes must be ≥ 0");
  std::vector<char> seen(static_cast<std::size_t>(cluster_.gpus()), 0);
  for (int gpu : ranks) {
    if (gpu < 0 || gpu >= cluster_.gpus()) throw std::invalid_argument("Communicator::start: GPU out of range");
    if (seen[static_cast<std::size_t>(gpu)]++) throw std::invalid_argument("Communicator::start: repeated GPU");
  }
  const auto& comm = cluster_.topology().comm;
  auto collective = std::make_shared<Collective>(sim_, net_, cluster_, trace_, comm.step_latency,
                                                 flows_per_connection_, std::move(on_done));
  if (ranks.size() > 1) {
    const auto groups = group_by_node(ranks, cluster_);
    const bool spans_nodes = groups.size() > 1;
    const bool layered = spans_nodes && uniform(groups) && groups.front().size() > 1;
    if (algorithm == Algorithm::hierarchical && spans_nodes && !uniform(groups)) {
      throw std::invalid_argument("Communicator::start: hierarchical needs the same number of ranks on every node");
    }
    const bool hierarchical = layered && algorithm != Algorithm::ring;
    if (hierarchical) {
      build_hierarchical(*collective, op, groups, bytes, cluster_);
    } else {
      build_ring(*collective, op, ranks, bytes, cluster_);
    }
  }
  sim_.schedule_in(comm.launch_latency, [collective] { collective->launch(); });
}

std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm) {
  return bench_collective(topology, nodes, op, min_bytes, max_bytes, factor, algorithm,
                          topology.comm.flows_per_connection);
}

std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm,
                                       int flows_per_connection) {
  if (!(min_bytes > 0) || !(factor > 1) || !(max_bytes >= min_bytes)) {
    throw std::invalid_argument("bench_collective: need 0 < min_bytes ≤ max_bytes and factor > 1");
  }
  std::vector<BenchRow> rows;
  for (double size = min_bytes; size <= max_bytes * (1 + 1e-12); size *= factor) {
    engine::Simulator sim;
    engine::FlowNetwork net(sim);
    hardware::Cluster cluster(topology, nodes, net);
    Communicator comm(sim, net, cluster);
    comm.set_flows_per_connection(flows_per_connection);
    std::vector<int> ranks(static_cast<std::size_t>(cluster.gpus()));
    for (int i = 0; i < cluster.gpus(); ++i) ranks[static_cast<std::size_t>(i)] = i;
    Time end;
    comm.start(op, ranks, size, algorithm, [&] { end = sim.now(); });
    sim.run();
    BenchRow row;
    row.bytes = size;
    row.time_us = end.seconds() * 1e6;
    if (end > Time::zero()) {
      row.algbw_gbs = size / end.seconds() / 1e9;
      row.busbw_gbs = row.algbw_gbs * bus_factor(op, cluster.gpus());
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace ironlaw::comm
