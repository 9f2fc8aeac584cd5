#include "comm/collective.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace ironlaw::comm {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::all_to_all: return "all_to_all";
  }
  return "?";
}

CollectiveOp parse_op(const std::string& name) {
  for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                  CollectiveOp::all_to_all}) {
    if (name == op_name(op)) return op;
  }
  throw std::invalid_argument("unknown collective \"" + name +
                              "\" (expected all_reduce, reduce_scatter, all_gather or all_to_all)");
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::automatic: return "automatic";
    case Algorithm::tree: return "tree";
  }
  return "?";
}

double bus_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_factor: ranks must be ≥ 1");
  const double n = ranks;
  return op == CollectiveOp::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

int hierarchical_slices(const config::CommSpec& comm, int nics, double bytes, int nodes, int local) {
  const int channels = std::max(comm.channels > 0 ? comm.channels : nics, 1);
  if (!(comm.chunk_bytes > 0)) return channels;
  const double per_step = static_cast<double>(std::max(nodes, 1)) * std::max(local, 1) * comm.chunk_bytes;
  const double deep = std::floor(bytes / per_step);
  return deep < 1 ? 1 : static_cast<int>(std::min<double>(deep, channels));
}

TreeChunks tree_chunks(const config::CommSpec& comm, double channel_bytes, int depth) {
  TreeChunks out;
  if (!(comm.chunk_bytes > 0) || !(channel_bytes > 0)) {
    out.bytes = channel_bytes;
    return out;
  }
  const double floor_bytes = comm.tree_min_chunk_bytes > 0 ? comm.tree_min_chunk_bytes : comm.chunk_bytes;
  double chunk = comm.chunk_bytes;
  while (channel_bytes / chunk < depth && chunk / 2 >= floor_bytes) chunk /= 2;
  out.count = std::max(1, static_cast<int>(std::ceil(channel_bytes / chunk * (1 - 1e-12))));
  out.bytes = channel_bytes / out.count;
  return out;
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

int channel_count(const hardware::Cluster& cluster) {
  const int c = cluster.topology().comm.channels;
  return c > 0 ? c : cluster.topology().node.nics;
}

/// One ring: position i sends `bytes` to position i+1 (mod n) in each of `steps` steps.
/// Position i starts step k when it is armed (its dependencies on earlier rings finished), its
/// own step k−1 send has completed and it has received step k−1 from position i−1.
struct Ring {
  std::vector<int> gpus;
  int steps = 0;
  double bytes = 0;
  std::uint64_t hash = 0;  // ECMP flow hash base of this ring's flows
  std::vector<int> started, sent, received, pending;
  std::vector<char> armed, done;
  std::vector<std::vector<std::pair<int, int>>> dependents;  // per position: (ring, position)

  Ring(std::vector<int> members, int step_count, double step_bytes, std::uint64_t flow_hash)
      : gpus(std::move(members)), steps(step_count), bytes(step_bytes), hash(flow_hash) {
    const std::size_t n = gpus.size();
    started.assign(n, 0);
    sent.assign(n, 0);
    received.assign(n, 0);
    pending.assign(n, 0);
    armed.assign(n, 0);
    done.assign(n, 0);
    dependents.resize(n);
  }
  int size() const { return static_cast<int>(gpus.size()); }
  int next(int i) const { return i + 1 == size() ? 0 : i + 1; }
};

/// One pipelined reduce-then-broadcast tree over GPUs (position 0 need not be the root).
/// Connection "up i" is position i → parent(i); connection "down i" is parent(i) → i. Each
/// carries `chunks` chunks of `chunk_bytes`, one after another.
struct Tree {
  std::vector<int> gpus;
  std::vector<int> parent;  // -1 at the root
  std::vector<std::vector<int>> children;
  int chunks = 1;
  double chunk_bytes = 0;
  std::uint64_t hash = 0;
  std::vector<int> up_started, up_done, down_started, down_done;

  void reset_counters() {
    const std::size_t n = gpus.size();
    up_started.assign(n, 0);
    up_done.assign(n, 0);
    down_started.assign(n, 0);
    down_done.assign(n, 0);
  }
  /// Chunks position i holds reduced over its whole subtree.
  int reduced(int i) const {
    int m = chunks;
    for (int c : children[static_cast<std::size_t>(i)]) m = std::min(m, up_done[static_cast<std::size_t>(c)]);
    return m;
  }
  /// Chunks position i holds fully reduced (the root: its reduction; others: from the parent).
  int final_chunks(int i) const {
    return parent[static_cast<std::size_t>(i)] < 0 ? reduced(i) : down_done[static_cast<std::size_t>(i)];
  }
};

/// A send not tied to a ring or tree (all-to-all pairs, point-to-point).
struct Direct {
  int src = 0;
  int dst = 0;
  double bytes = 0;
  std::uint64_t hash = 0;
};

/// A collective in flight: its rings, trees and direct sends, their dependencies and the
/// completion callback. Owned by the callbacks it has scheduled; freed after the last one ran.
class Collective : public std::enable_shared_from_this<Collective> {
 public:
  Collective(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster, FlowTrace trace,
             Time step_latency, int flows_per_connection, std::function<void()> on_done)
      : sim_(sim), net_(net), cluster_(cluster), trace_(std::move(trace)), step_latency_(step_latency),
        flows_per_connection_(flows_per_connection), on_done_(std::move(on_done)) {}

  /// Fluid rings: each ring position sends all its steps' bytes as one connection, after the
  /// latency of all its steps (see RingModel::fluid).
  void set_fluid(bool fluid) { fluid_ = fluid; }

  int add_ring(std::vector<int> gpus, int steps, double bytes, std::uint64_t hash) {
    rings_.emplace_back(std::move(gpus), steps, bytes, hash);
    units_left_ += rings_.back().gpus.size();
    return static_cast<int>(rings_.size()) - 1;
  }
  /// Position (after_ring, after_pos) may start only once (before_ring, before_pos) finished.
  void add_dependency(int before_ring, int before_pos, int after_ring, int after_pos) {
    rings_[before_ring].dependents[before_pos].emplace_back(after_ring, after_pos);
    ++rings_[after_ring].pending[after_pos];
  }
  void add_tree(Tree tree) {
    if (tree.gpus.size() < 2) return;
    tree.reset_counters();
    if (fluid_) {
      units_left_ += tree.chunks > 1 ? 2 * (tree.gpus.size() - 1) : 1;
    } else {
      units_left_ += 2 * (tree.gpus.size() - 1) * static_cast<std::size_t>(tree.chunks);
    }
    trees_.push_back(std::move(tree));
  }
  /// A send that starts at launch, after the step latency when `stepped`.
  void add_direct(Direct d) {
    directs_.push_back(d);
    ++units_left_;
  }
  void set_direct_step_latency(bool stepped) { direct_stepped_ = stepped; }

  /// Arms every ring position without dependencies, starts the leaves of every tree and every
  /// direct send. Call at the collective's start time.
  void launch() {
    if (units_left_ == 0) {
      finish();
      return;
    }
    for (int r = 0; r < static_cast<int>(rings_.size()); ++r) {
      for (int i = 0; i < rings_[r].size(); ++i) {
        if (rings_[r].pending[i] == 0) arm(r, i);
      }
    }
    for (int t = 0; t < static_cast<int>(trees_.size()); ++t) {
      if (fluid_) {
        launch_fluid_tree(t);
        continue;
      }
      for (int i = 0; i < static_cast<int>(trees_[t].gpus.size()); ++i) try_up(t, i);
    }
    for (int d = 0; d < static_cast<int>(directs_.size()); ++d) {
      after(direct_stepped_, [self = shared_from_this(), d] {
        const Direct& x = self->directs_[static_cast<std::size_t>(d)];
        self->connect(x.src, x.dst, x.bytes, x.hash, [self] { self->unit_done(); });
      });
    }
  }

 private:
  /// Runs `f` after the step latency (or now, without one, when `stepped` is false or σ = 0).
  template <class F>
  void after(bool stepped, F f) {
    if (!stepped || step_latency_ == Time::zero()) {
      f();
    } else {
      sim_.schedule_in(step_latency_, std::move(f));
    }
  }

  /// One GPU-to-GPU connection of `bytes`: one flow, or, across the spine, one flow per queue
  /// pair, each with its own ECMP hash and an equal share (see collective.hpp). `done` runs
  /// once, after the last flow completed.
  void connect(int src, int dst, double bytes, std::uint64_t hash, std::function<void()> done) {
    const Time start = sim_.now();
    const int k = cluster_.crosses_spine(src, dst) ? flows_per_connection_ : 1;
    auto self = shared_from_this();
    if (k == 1) {
      const auto path = cluster_.route(src, dst, hash * 1024);
      net_.start_flow(path, bytes, [self, src, dst, bytes, start, done = std::move(done)](engine::FlowId) {
        self->traced(src, dst, bytes, start);
        done();
      });
      return;
    }
    auto left = std::make_shared<int>(k);
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    const double share = bytes / k;
    for (int q = 0; q < k; ++q) {
      const auto path = cluster_.route(src, dst, hash * 1024 + static_cast<std::uint64_t>(q));
      net_.start_flow(path, share, [self, src, dst, share, start, left, shared_done](engine::FlowId) {
        self->traced(src, dst, share, start);
        if (--*left == 0) (*shared_done)();
      });
    }
  }

  void traced(int src, int dst, double bytes, Time start) const {
    if (trace_.on_flow) trace_.on_flow(src, dst, bytes, start, sim_.now());
  }

  void unit_done() {
    if (--units_left_ == 0) finish();
  }

  /// Fluid tree: the first chunk's climb to the root and descent to the deepest leaf is a
  /// fixed delay (per hop: step latency + path latency + chunk / bottleneck bandwidth); then
  /// every edge carries its remaining chunks up and down at once, as the pipelined tree does
  /// in steady state, sharing links with whatever else runs.
  void launch_fluid_tree(int t) {
    const Tree& tree = trees_[static_cast<std::size_t>(t)];
    const std::size_t n = tree.gpus.size();
    std::vector<double> to_root(n, -1.0);
    auto hop = [&](std::size_t i) {
      const int src = tree.gpus[i], dst = tree.gpus[static_cast<std::size_t>(tree.parent[i])];
      double latency = step_latency_.seconds(), bandwidth = std::numeric_limits<double>::infinity();
      for (auto link : cluster_.route(src, dst, tree.hash * 1024)) {
        latency += net_.link_latency(link).seconds();
        bandwidth = std::min(bandwidth, net_.link_bandwidth(link));
      }
      return latency + tree.chunk_bytes / bandwidth;
    };
    std::function<double(std::size_t)> cost = [&](std::size_t i) -> double {
      if (tree.parent[i] < 0) return 0.0;
      if (to_root[i] < 0) to_root[i] = hop(i) + cost(static_cast<std::size_t>(tree.parent[i]));
      return to_root[i];
    };
    double deepest = 0;
    for (std::size_t i = 0; i < n; ++i) deepest = std::max(deepest, cost(i));
    const Time fill = Time::from_seconds(2 * deepest);
    sim_.schedule_in(fill, [self = shared_from_this(), t] {
      const Tree& x = self->trees_[static_cast<std::size_t>(t)];
      if (x.chunks <= 1) {
        self->unit_done();
        return;
      }
      const double rest = x.chunk_bytes * (x.chunks - 1);
      for (std::size_t i = 0; i < x.gpus.size(); ++i) {
        if (x.parent[i] < 0) continue;
        const int child = x.gpus[i], parent = x.gpus[static_cast<std::size_t>(x.parent[i])];
        self->connect(child, parent, rest, x.hash, [self] { self->unit_done(); });
        self->connect(parent, child, rest, x.hash, [self] { self->unit_done(); });
      }
    });
  }

  // Rings.
  void arm(int r, int i) {
    rings_[r].armed[i] = 1;
    advance(r, i);
  }

  void advance(int r, int i) {
    Ring& ring = rings_[r];
    const int k = ring.started[i];
    if (fluid_) {
      if (!ring.armed[i] || k > 0) return;
      ring.started[i] = ring.steps;
      // steps × (step latency + path latency), less the path latency the flow itself adds.
      const int j = ring.next(i);
      Time wait = step_latency_ * ring.steps;
      Time path;
      for (auto link : cluster_.route(ring.gpus[i], ring.gpus[j], ring.hash * 1024)) path += net_.link_latency(link);
      if (ring.steps > 1) wait += path * (ring.steps - 1);
      sim_.schedule_in(wait, [self = shared_from_this(), r, i] {
        const Ring& g = self->rings_[r];
        self->connect(g.gpus[i], g.gpus[g.next(i)], g.bytes * g.steps, g.hash, [self, r, i] {
          Ring& h = self->rings_[r];
          const int nj = h.next(i);
          h.sent[i] = h.steps;
          h.received[nj] = h.steps;
          self->check_done(r, i);
          self->check_done(r, nj);
        });
      });
      return;
    }
    if (!ring.armed[i] || k >= ring.steps || ring.sent[i] != k || ring.received[i] < k) return;
    ++ring.started[i];
    after(true, [self = shared_from_this(), r, i] {
      const Ring& g = self->rings_[r];
      self->connect(g.gpus[i], g.gpus[g.next(i)], g.bytes, g.hash, [self, r, i] { self->ring_sent(r, i); });
    });
  }

  void ring_sent(int r, int i) {
    Ring& ring = rings_[r];
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
    for (const auto& [dr, di] : ring.dependents[i]) {
      if (--rings_[dr].pending[di] == 0) arm(dr, di);
    }
    unit_done();
  }

  // Trees.
  void try_up(int t, int i) {
    Tree& tree = trees_[t];
    const auto u = static_cast<std::size_t>(i);
    const int j = tree.up_started[u];
    if (tree.parent[u] < 0 || j >= tree.chunks || tree.up_done[u] != j || tree.reduced(i) <= j) return;
    ++tree.up_started[u];
    after(true, [self = shared_from_this(), t, i] {
      const Tree& x = self->trees_[t];
      const auto v = static_cast<std::size_t>(i);
      self->connect(x.gpus[v], x.gpus[static_cast<std::size_t>(x.parent[v])], x.chunk_bytes, x.hash,
                    [self, t, i] { self->up_sent(t, i); });
    });
  }

  void up_sent(int t, int i) {
    Tree& tree = trees_[t];
    const int p = tree.parent[static_cast<std::size_t>(i)];
    ++tree.up_done[static_cast<std::size_t>(i)];
    try_up(t, i);
    try_up(t, p);
    if (tree.parent[static_cast<std::size_t>(p)] < 0) {
      for (int c : tree.children[static_cast<std::size_t>(p)]) try_down(t, c);
    }
    unit_done();
  }

  void try_down(int t, int i) {
    Tree& tree = trees_[t];
    const auto u = static_cast<std::size_t>(i);
    const int j = tree.down_started[u];
    if (j >= tree.chunks || tree.down_done[u] != j || tree.final_chunks(tree.parent[u]) <= j) return;
    ++tree.down_started[u];
    after(true, [self = shared_from_this(), t, i] {
      const Tree& x = self->trees_[t];
      const auto v = static_cast<std::size_t>(i);
      self->connect(x.gpus[static_cast<std::size_t>(x.parent[v])], x.gpus[v], x.chunk_bytes, x.hash,
                    [self, t, i] { self->down_sent(t, i); });
    });
  }

  void down_sent(int t, int i) {
    Tree& tree = trees_[t];
    ++tree.down_done[static_cast<std::size_t>(i)];
    try_down(t, i);
    for (int c : tree.children[static_cast<std::size_t>(i)]) try_down(t, c);
    unit_done();
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
  bool fluid_ = false;
  std::function<void()> on_done_;
  std::vector<Ring> rings_;
  std::vector<Tree> trees_;
  std::vector<Direct> directs_;
  bool direct_stepped_ = true;
  std::size_t units_left_ = 0;
};

/// Flat ring: one ring per channel over all ranks, the buffer split evenly over the channels;
/// on one node a single ring (see collective.hpp: the channels' rings coincide there).
void build_ring(Collective& c, CollectiveOp op, const std::vector<int>& ranks, double bytes, bool one_node,
                const hardware::Cluster& cluster) {
  const int n = static_cast<int>(ranks.size());
  // Channels differ only in where each ring enters and leaves a node. Inside one node (the
  // NVSwitch is non-blocking) or with one rank per node (every channel ring is the same ring,
  // through that rank's own NIC) they carry the same traffic over the same links: one ring.
  const bool one_per_node = group_by_node(ranks, cluster).size() == ranks.size();
  const int channels = one_node || one_per_node ? 1 : channel_count(cluster);
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
  const int slices = hierarchical_slices(cluster.topology().comm, cluster.topology().node.nics, bytes, nodes, local);
  const double slice = bytes / slices;
  const double intra_chunk = slice / local;  // a 1/g shard of the slice
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
    case CollectiveOp::all_to_all:
      throw std::invalid_argument("hierarchical: all_to_all has no hierarchical form");
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

/// Parents of an in-order balanced binary tree over positions [lo, hi): the middle position is
/// the root of the range, each half hangs below it. Returns the depth (root = 0) of the range.
int inorder_tree(int lo, int hi, int parent, std::vector<int>& parents) {
  if (lo >= hi) return -1;
  const int mid = lo + (hi - lo) / 2;
  parents[static_cast<std::size_t>(mid)] = parent;
  return 1 + std::max(inorder_tree(lo, mid, mid, parents), inorder_tree(mid + 1, hi, mid, parents));
}

/// The inter-node tree of the double binary tree: parent node of each node (-1 at the root) for
/// tree `which` (0: in-order over node positions; 1: the same over mirrored positions, or
/// positions shifted by one when the node count is odd, where the mirror keeps the leaves).
/// Returns the tree's depth in hops.
int node_tree(int nodes, int which, std::vector<int>& parent_node) {
  std::vector<int> by_position(static_cast<std::size_t>(nodes), -1);
  const int depth = std::max(inorder_tree(0, nodes, -1, by_position), 0);
  auto position_of = [&](int m) {
    if (which == 0) return m;
    return nodes % 2 == 0 ? nodes - 1 - m : (m + 1) % nodes;
  };
  auto node_at = [&](int p) {
    if (which == 0) return p;
    return nodes % 2 == 0 ? nodes - 1 - p : (p - 1 + nodes) % nodes;
  };
  parent_node.assign(static_cast<std::size_t>(nodes), -1);
  for (int m = 0; m < nodes; ++m) {
    const int pp = by_position[static_cast<std::size_t>(position_of(m))];
    parent_node[static_cast<std::size_t>(m)] = pp < 0 ? -1 : node_at(pp);
  }
  return depth;
}

int tree_depth(const std::vector<std::vector<int>>& groups) {
  std::size_t chain = 0;
  for (const auto& g : groups) chain = std::max(chain, g.size());
  std::vector<int> unused;
  return static_cast<int>(chain) - 1 + node_tree(static_cast<int>(groups.size()), 0, unused);
}

/// Double binary tree all-reduce (see collective.hpp): per channel c, node chains headed by
/// local index c, heads joined by node tree c mod 2.
void build_tree(Collective& c, const std::vector<std::vector<int>>& groups, double bytes,
                const hardware::Cluster& cluster) {
  const int nodes = static_cast<int>(groups.size());
  const int channels = channel_count(cluster);
  const TreeChunks chunks = tree_chunks(cluster.topology().comm, bytes / channels, tree_depth(groups));
  std::vector<std::vector<int>> parent_node(2);
  for (int t = 0; t < 2; ++t) node_tree(nodes, t, parent_node[static_cast<std::size_t>(t)]);
  std::vector<int> head(static_cast<std::size_t>(nodes));  // position of each node's chain head
  std::uint64_t hash = 0;
  for (int ch = 0; ch < channels; ++ch) {
    Tree tree;
    tree.chunks = chunks.count;
    tree.chunk_bytes = chunks.bytes;
    tree.hash = hash++;
    for (int m = 0; m < nodes; ++m) {
      const auto& g = groups[static_cast<std::size_t>(m)];
      const int size = static_cast<int>(g.size());
      head[static_cast<std::size_t>(m)] = static_cast<int>(tree.gpus.size());
      for (int j = 0; j < size; ++j) {
        tree.gpus.push_back(g[static_cast<std::size_t>((ch + j) % size)]);
        tree.parent.push_back(j == 0 ? -1 : static_cast<int>(tree.gpus.size()) - 2);
      }
    }
    for (int m = 0; m < nodes; ++m) {
      const int up = parent_node[static_cast<std::size_t>(ch % 2)][static_cast<std::size_t>(m)];
      if (up >= 0) tree.parent[static_cast<std::size_t>(head[static_cast<std::size_t>(m)])] = head[static_cast<std::size_t>(up)];
    }
    tree.children.resize(tree.gpus.size());
    for (std::size_t i = 0; i < tree.gpus.size(); ++i) {
      if (tree.parent[i] >= 0) tree.children[static_cast<std::size_t>(tree.parent[i])].push_back(static_cast<int>(i));
    }
    c.add_tree(std::move(tree));
  }
}

/// All-to-all: one connection per ordered pair of distinct ranks, S/n bytes each.
void build_all_to_all(Collective& c, const std::vector<int>& ranks, double bytes) {
  const double share = bytes / static_cast<double>(ranks.size());
  std::uint64_t hash = 0;
  for (int src : ranks) {
    for (int dst : ranks) {
      if (src != dst) c.add_direct({src, dst, share, hash++});
    }
  }
}

/// Latency and bottleneck bandwidth of the route between two GPUs.
struct PathCost {
  double latency_s = 0;
  double bandwidth = 0;
};

PathCost path_cost(const hardware::Cluster& cluster, const engine::FlowNetwork& net, int src, int dst) {
  PathCost out;
  out.bandwidth = std::numeric_limits<double>::infinity();
  for (auto link : cluster.route(src, dst)) {
    out.latency_s += net.link_latency(link).seconds();
    out.bandwidth = std::min(out.bandwidth, net.link_bandwidth(link));
  }
  return out;
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

void Communicator::check_ranks(const std::vector<int>& ranks) const {
  if (ranks.empty()) throw std::invalid_argument("Communicator::start: no ranks");
  std::vector<char> seen(static_cast<std::size_t>(cluster_.gpus()), 0);
  for (int gpu : ranks) {
    if (gpu < 0 || gpu >= cluster_.gpus()) throw std::invalid_argument("Communicator::start: GPU out of range");
    if (seen[static_cast<std::size_t>(gpu)]++) throw std::invalid_argument("Communicator::start: repeated GPU");
  }
}

void Communicator::start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
                         std::function<void()> on_done) {
  check_ranks(ranks);
  if (!(bytes >= 0)) throw std::invalid_argument("Communicator::start: bytes must be ≥ 0");
  if (algorithm == Algorithm::tree && op != CollectiveOp::all_reduce) {
    throw std::invalid_argument("Communicator::start: the tree algorithm runs all_reduce only");
  }
  const auto& comm = cluster_.topology().comm;
  auto collective = std::make_shared<Collective>(sim_, net_, cluster_, trace_, comm.step_latency,
                                                 flows_per_connection_, std::move(on_done));
  collective->set_fluid(fluid_rings_);
  if (ranks.size() > 1) {
    const auto groups = group_by_node(ranks, cluster_);
    const bool spans_nodes = groups.size() > 1;
    if (algorithm == Algorithm::hierarchical && spans_nodes && !uniform(groups)) {
      throw std::invalid_argument("Communicator::start: hierarchical needs the same number of ranks on every node");
    }
    const Algorithm run = algorithm == Algorithm::automatic ? choose(op, ranks, bytes) : algorithm;
    const bool layered = spans_nodes && uniform(groups) && groups.front().size() > 1;
    if (op == CollectiveOp::all_to_all) {
      build_all_to_all(*collective, ranks, bytes);
    } else if (run == Algorithm::tree) {
      build_tree(*collective, groups, bytes, cluster_);
    } else if (run == Algorithm::hierarchical && layered) {
      build_hierarchical(*collective, op, groups, bytes, cluster_);
    } else {
      build_ring(*collective, op, ranks, bytes, !spans_nodes, cluster_);
    }
  }
  sim_.schedule_in(comm.launch_latency, [collective] { collective->launch(); });
}

void Communicator::send(int src, int dst, double bytes, std::function<void()> on_done) {
  if (src < 0 || dst < 0 || src >= cluster_.gpus() || dst >= cluster_.gpus()) {
    throw std::invalid_argument("Communicator::send: GPU out of range");
  }
  if (!(bytes >= 0)) throw std::invalid_argument("Communicator::send: bytes must be ≥ 0");
  auto collective = std::make_shared<Collective>(sim_, net_, cluster_, trace_, cluster_.topology().comm.step_latency,
                                                 flows_per_connection_, std::move(on_done));
  collective->set_direct_step_latency(false);
  if (src != dst) collective->add_direct({src, dst, bytes, 0});
  sim_.schedule_in(cluster_.topology().comm.launch_latency, [collective] { collective->launch(); });
}

Time Communicator::predict(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm) const {
  check_ranks(ranks);
  const auto& comm = cluster_.topology().comm;
  const double launch = comm.launch_latency.seconds();
  const double sigma = comm.step_latency.seconds();
  const int n = static_cast<int>(ranks.size());
  if (n == 1) return comm.launch_latency;
  if (algorithm == Algorithm::automatic) algorithm = choose(op, ranks, bytes);
  const auto groups = group_by_node(ranks, cluster_);
  const int nodes = static_cast<int>(groups.size());
  const bool spans = nodes > 1;
  const int local = static_cast<int>(groups.front().size());
  const bool layered = spans && uniform(groups) && local > 1;
  const double inf = std::numeric_limits<double>::infinity();
  PathCost intra{0, inf}, inter{0, inf};
  std::size_t widest = 0;
  for (const auto& g : groups) {
    widest = std::max(widest, g.size());
    if (g.size() > 1 && intra.bandwidth == inf) intra = path_cost(cluster_, net_, g[0], g[1]);
  }
  if (spans) inter = path_cost(cluster_, net_, groups[0][0], groups[1][0]);
  const int channels = channel_count(cluster_);
  const int nics = cluster_.topology().node.nics;
  const double alpha_intra = sigma + intra.latency_s;
  const double alpha_inter = sigma + inter.latency_s;
  const double s = bytes;

  if (op == CollectiveOp::all_to_all) {
    const double share = s / n;
    const double nvlink = widest > 1 ? (static_cast<double>(widest) - 1) * share / intra.bandwidth : 0;
    const double per_gpu_net = inter.bandwidth * std::min(1.0, static_cast<double>(nics) / static_cast<double>(widest));
    const double network = spans ? (n - static_cast<double>(widest)) * share / per_gpu_net : 0;
    const double latency = std::max(spans ? inter.latency_s : 0.0, widest > 1 ? intra.latency_s : 0.0);
    return Time::from_seconds(launch + sigma + latency + std::max(nvlink, network));
  }
  const bool reduce_all = op == CollectiveOp::all_reduce;
  switch (algorithm) {
    case Algorithm::ring: {
      const int steps = reduce_all ? 2 * (n - 1) : n - 1;
      if (!spans) return Time::from_seconds(launch + steps * (alpha_intra + s / n / intra.bandwidth));
      const double per_channel = std::min(intra.bandwidth / channels,
                                          inter.bandwidth * std::min(1.0, static_cast<double>(nics) / channels));
      return Time::from_seconds(launch + steps * (alpha_inter + s / (static_cast<double>(channels) * n) / per_channel));
    }
    case Algorithm::hierarchical: {
      if (!layered) return Time::max();
      const int slices = hierarchical_slices(comm, nics, s, nodes, local);
      const double slice = s / slices;
      const double nic_share = inter.bandwidth * std::min(1.0, static_cast<double>(nics) / local);
      const double intra_phase = (local - 1) * (alpha_intra + slice / local / intra.bandwidth);
      const double inter_step = alpha_inter + slice / (static_cast<double>(local) * nodes) / nic_share;
      std::vector<double> phases;
      if (op == CollectiveOp::all_reduce) phases = {intra_phase, 2 * (nodes - 1) * inter_step, intra_phase};
      if (op == CollectiveOp::reduce_scatter) phases = {intra_phase, (nodes - 1) * inter_step};
      if (op == CollectiveOp::all_gather) phases = {(nodes - 1) * inter_step, intra_phase};
      double sum = 0, longest = 0;
      for (double p : phases) {
        sum += p;
        longest = std::max(longest, p);
      }
      return Time::from_seconds(launch + sum + (slices - 1) * longest);
    }
    case Algorithm::tree: {
      if (!reduce_all) return Time::max();
      std::vector<int> unused;
      const int inter_depth = node_tree(nodes, 0, unused);
      const int chain_depth = static_cast<int>(widest) - 1;
      const TreeChunks chunks = tree_chunks(comm, s / channels, chain_depth + inter_depth);
      const double c = chunks.bytes;
      const double fill = 2 * (chain_depth * (alpha_intra + c / intra.bandwidth) +
                               inter_depth * (alpha_inter + c / inter.bandwidth));
      const double loaded_intra = alpha_intra + 2.0 * channels * c / intra.bandwidth;
      const double loaded_inter = alpha_inter + 3.0 * channels / std::min(channels, nics) * c / inter.bandwidth;
      const double period = std::max(chain_depth > 0 ? loaded_intra : 0.0, inter_depth > 0 ? loaded_inter : 0.0);
      return Time::from_seconds(launch + fill + (chunks.count - 1) * period);
    }
    case Algorithm::automatic: break;
  }
  return Time::max();
}

Algorithm Communicator::choose(CollectiveOp op, const std::vector<int>& ranks, double bytes) const {
  if (op == CollectiveOp::all_to_all || ranks.size() < 2) return Algorithm::ring;
  const auto groups = group_by_node(ranks, cluster_);
  const bool layered = groups.size() > 1 && uniform(groups) && groups.front().size() > 1;
  Algorithm best = layered ? Algorithm::hierarchical : Algorithm::ring;
  if (op != CollectiveOp::all_reduce || !(cluster_.topology().comm.chunk_bytes > 0)) return best;
  if (predict(op, ranks, bytes, Algorithm::tree) < predict(op, ranks, bytes, best)) best = Algorithm::tree;
  return best;
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
