#include "comm/algorithms.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "comm/all_to_all.hpp"
#include "comm/executor.hpp"

namespace ironlaw::comm {

using detail::channel_count;
using detail::Collective;
using detail::group_by_node;
using detail::Nvls;
using detail::Tree;
using detail::uniform;

namespace {

/// Flat ring: one ring per channel over all ranks, the buffer split evenly over the channels;
/// on one node a single ring (see collective.hpp: the channels' rings coincide there).
void build_ring(Collective& c, CollectiveOp op, const CollectiveCall& call, double bytes, bool one_node,
                Time step_latency) {
  const std::vector<int>& ranks = call.ranks;
  const int n = static_cast<int>(ranks.size());
  // Channels differ only in where each ring enters and leaves a node. Inside one node (the
  // NVSwitch is non-blocking) or with one rank per node (every channel ring is the same ring,
  // through that rank's own NIC) they carry the same traffic over the same links: one ring.
  const bool one_per_node = call.groups.size() == ranks.size();
  const int channels = one_node || one_per_node ? 1 : channel_count(call.cluster);
  const int steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  const double step_bytes = bytes / (static_cast<double>(channels) * n);
  for (int ch = 0; ch < channels; ++ch) {
    // One ring: channel 0 of a one-per-node or one-node call is the ranks in their order
    // wherever channel_ring would rotate within a node (one rank per node: nothing to rotate).
    std::vector<int> order = one_per_node ? ranks : channel_ring(ranks, call.cluster, ch);
    c.add_ring(std::move(order), steps, step_bytes, static_cast<std::uint64_t>(ch), step_latency);
  }
}

/// Hierarchical: per slice, phases alternate between intra-node rings (one per node, over
/// NVLink) and inter-node rings (one per local index, each over its own NIC). Fluid, one ring
/// per phase and node (or local index) carries every slice, the phases pipelined
/// (Collective::add_pipelined_dependency) rather than one ring per slice and phase.
void build_hierarchical(Collective& c, CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                        const hardware::Cluster& cluster, Time intra_latency, Time inter_latency) {
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
  // Fluid, one ring per phase carries every slice (see the function's comment) where the two
  // phases run on different links (NVLink, then the NICs, or back). Not all-reduce: its first
  // and last phases share the NVLinks, and a pipelined last phase, one connection that the
  // slices coming through do not pace, takes NVLink share from the first while it still has
  // slices to send (+5.7 % against the stepped form on the fluid-vs-stepped test's two
  // contended all-reduces, where per-slice rings give −0.2 %).
  const bool pipelined = c.fluid() && slices > 1 && phases.size() == 2;
  const int built = pipelined ? 1 : slices;  // slices built as rings of their own
  std::vector<std::vector<int>> first_ring(static_cast<std::size_t>(built));
  auto where = [&](int s, int p, int m, int l) -> std::pair<int, int> {
    const int base = first_ring[s][p];
    return phases[p].intra ? std::pair{base + m, l} : std::pair{base + l, m};
  };
  std::uint64_t hash = 0;
  for (int s = 0; s < built; ++s) {
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
        const int id = c.add_ring(std::move(members), ph.steps * (pipelined ? slices : 1), ph.step_bytes, hash++,
                                  ph.intra ? intra_latency : inter_latency, pipelined ? slices : 1);
        if (k == 0) first_ring[s][p] = id;
      }
    }
  }
  for (int s = 0; s < built; ++s) {
    for (int p = 0; p < static_cast<int>(phases.size()); ++p) {
      for (int m = 0; m < nodes; ++m) {
        for (int l = 0; l < local; ++l) {
          const auto [r, i] = where(s, p, m, l);
          if (p > 0) {
            const auto [br, bi] = where(s, p - 1, m, l);
            if (pipelined) {
              c.add_pipelined_dependency(br, bi, r, i);
            } else {
              c.add_dependency(br, bi, r, i);
            }
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


/// The constants every closed form uses (see Communicator::predict): α–β of the NVLink path
/// and of the route between the first ranks of the first two nodes.
struct Costs {
  double launch = 0, sigma = 0;
  PathCost intra{0, std::numeric_limits<double>::infinity()};
  PathCost inter{0, std::numeric_limits<double>::infinity()};
  std::size_t widest = 0;  // most ranks on one node
  int channels = 1, nics = 1;
  double alpha_intra = 0, alpha_inter = 0;

  explicit Costs(const CollectiveCall& call) {
    const auto& comm = call.cluster.topology().comm;
    launch = comm.launch_latency.seconds();
    sigma = comm.step_latency.seconds();
    for (const auto& g : call.groups) {
      widest = std::max(widest, g.size());
      if (g.size() > 1 && intra.bandwidth == std::numeric_limits<double>::infinity()) {
        intra = path_cost(call.cluster, call.net, g[0], g[1]);
      }
    }
    if (call.nodes() > 1) inter = path_cost(call.cluster, call.net, call.groups[0][0], call.groups[1][0]);
    channels = channel_count(call.cluster);
    nics = call.cluster.topology().node.nics;
    alpha_intra = sigma + intra.latency_s;
    alpha_inter = sigma + inter.latency_s;
  }
};

bool reduces_all(const CollectiveCall& call) { return call.op == CollectiveOp::all_reduce; }
bool moves_data(const CollectiveCall& call) { return call.op != CollectiveOp::all_to_all; }

/// The protocols of the ring family (config::CommSpec::protocols), or the one implicit
/// protocol at comm.step_latency with payload-only wire bytes.
std::vector<config::CommSpec::Protocol> ring_protocols(const config::CommSpec& comm) {
  if (!comm.protocols.empty()) return comm.protocols;
  config::CommSpec::Protocol simple;
  simple.name = "simple";
  simple.base_latency = comm.launch_latency;
  simple.nvlink_step_latency = comm.step_latency;
  simple.net_step_latency = comm.step_latency;
  return {simple};
}

/// The protocol with the lowest `time_of(protocol)` [s] (ties: the earlier one) and that time.
template <class F>
std::pair<config::CommSpec::Protocol, double> fastest_protocol(const CollectiveCall& call, F time_of) {
  const auto protocols = ring_protocols(call.cluster.topology().comm);
  std::size_t best = 0;
  double best_s = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < protocols.size(); ++i) {
    const double t = time_of(protocols[i]);
    if (t < best_s) {
      best = i;
      best_s = t;
    }
  }
  return {protocols[best], best_s};
}

/// Flat ring time under `p` [s] (see Communicator::predict): the protocol's base latency once,
/// then every step pays its step latency over the ring's slowest kind of link and moves
/// wire_bytes_per_byte × payload.
double ring_seconds(const CollectiveCall& call, const Costs& k, const config::CommSpec::Protocol& p) {
  const int n = call.size();
  const double s = call.bytes * p.wire_bytes_per_byte;
  const int steps = reduces_all(call) ? 2 * (n - 1) : n - 1;
  if (call.nodes() == 1) {
    return p.base_latency.seconds() + steps * (p.nvlink_step_latency.seconds() + k.intra.latency_s + s / n / k.intra.bandwidth);
  }
  const double per_channel = std::min(k.intra.bandwidth / k.channels,
                                      k.inter.bandwidth * std::min(1.0, static_cast<double>(k.nics) / k.channels));
  return p.base_latency.seconds() + steps * (p.net_step_latency.seconds() + k.inter.latency_s +
                             s / (static_cast<double>(k.channels) * n) / per_channel);
}

/// The latency of the NVLink hops of NCCL's flat ring that the hierarchical stand-in does not
/// step through [s]. NCCL's ring visits every GPU of a node before it crosses to the next, so a
/// reduce-scatter or all-gather over `nodes` × `local` ranks makes n − 1 hops, nodes − 1 of them
/// over the network, and an all-reduce twice as many; its latency is base + (hops − network
/// hops)·intra + network hops·inter (NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel: nsteps,
/// nInterSteps). The hierarchical phases step through local − 1 NVLink hops per intra-node phase
/// and every network hop, so the flat ring's remaining (nodes − 1)·(local − 1) NVLink hops per
/// pass (two passes for an all-reduce) are paid here, once per call, as the pipeline's fill.
double flat_ring_hop_latency(const CollectiveCall& call, const Costs& k, const config::CommSpec::Protocol& p) {
  const int nodes = call.nodes();
  const int local = static_cast<int>(call.groups.front().size());
  const double hops = (reduces_all(call) ? 2.0 : 1.0) * (nodes - 1) * (local - 1);
  return hops * (p.nvlink_step_latency.seconds() + k.intra.latency_s);
}

/// Hierarchical time under `p` [s]: its base latency, intra-node phases at the NVLink step
/// latency, the inter-node phase at the network's, and the NVLink hops of the flat ring it
/// stands in for (flat_ring_hop_latency).
double hierarchical_seconds(const CollectiveCall& call, const Costs& k, const config::CommSpec::Protocol& p) {
  const auto& comm = call.cluster.topology().comm;
  const int nodes = call.nodes();
  const int local = static_cast<int>(call.groups.front().size());
  const double s = call.bytes * p.wire_bytes_per_byte;
  const int slices = hierarchical_slices(comm, k.nics, s, nodes, local);
  const double slice = s / slices;
  const double alpha_intra = p.nvlink_step_latency.seconds() + k.intra.latency_s;
  const double alpha_inter = p.net_step_latency.seconds() + k.inter.latency_s;
  const double nic_share = k.inter.bandwidth * std::min(1.0, static_cast<double>(k.nics) / local);
  const double intra_phase = (local - 1) * (alpha_intra + slice / local / k.intra.bandwidth);
  const double inter_step = alpha_inter + slice / (static_cast<double>(local) * nodes) / nic_share;
  std::vector<double> phases;
  if (call.op == CollectiveOp::all_reduce) phases = {intra_phase, 2 * (nodes - 1) * inter_step, intra_phase};
  if (call.op == CollectiveOp::reduce_scatter) phases = {intra_phase, (nodes - 1) * inter_step};
  if (call.op == CollectiveOp::all_gather) phases = {(nodes - 1) * inter_step, intra_phase};
  double sum = 0, longest = 0;
  for (double ph : phases) {
    sum += ph;
    longest = std::max(longest, ph);
  }
  return p.base_latency.seconds() + flat_ring_hop_latency(call, k, p) + sum + (slices - 1) * longest;
}

class RingUnit final : public AlgorithmUnit {
 public:
  Algorithm id() const override { return Algorithm::ring; }
  bool applies(const CollectiveCall& call) const override { return moves_data(call); }
  /// `automatic` runs the hierarchical form where it applies (see collective.hpp).
  bool eligible(const CollectiveCall& call) const override { return moves_data(call) && !call.layered(); }
  Time predict(const CollectiveCall& call) const override {
    const Costs k(call);
    return Time::from_seconds(fastest_protocol(call, [&](const auto& p) { return ring_seconds(call, k, p); }).second);
  }
  Time build(const CollectiveCall& call, Collective& out) const override {
    const Costs k(call);
    const auto p = fastest_protocol(call, [&](const auto& q) { return ring_seconds(call, k, q); }).first;
    const bool one_node = call.nodes() == 1;
    build_ring(out, call.op, call, call.bytes * p.wire_bytes_per_byte, one_node,
               one_node ? p.nvlink_step_latency : p.net_step_latency);
    return p.base_latency;
  }
};

class HierarchicalUnit final : public AlgorithmUnit {
 public:
  Algorithm id() const override { return Algorithm::hierarchical; }
  bool applies(const CollectiveCall& call) const override { return moves_data(call) && call.layered(); }
  Time predict(const CollectiveCall& call) const override {
    return Time::from_seconds(
        fastest_protocol(call, [&, k = Costs(call)](const auto& p) { return hierarchical_seconds(call, k, p); }).second);
  }
  Time build(const CollectiveCall& call, Collective& out) const override {
    const Costs k(call);
    const auto p = fastest_protocol(call, [&](const auto& q) { return hierarchical_seconds(call, k, q); }).first;
    build_hierarchical(out, call.op, call.groups, call.bytes * p.wire_bytes_per_byte, call.cluster,
                       p.nvlink_step_latency, p.net_step_latency);
    return p.base_latency + Time::from_seconds(flat_ring_hop_latency(call, k, p));
  }
};

class TreeUnit final : public AlgorithmUnit {
 public:
  Algorithm id() const override { return Algorithm::tree; }
  bool applies(const CollectiveCall& call) const override { return reduces_all(call); }
  /// NCCL's tree pipelines step buffers; without a chunk size there is nothing to pipeline.
  bool eligible(const CollectiveCall& call) const override {
    return reduces_all(call) && call.cluster.topology().comm.chunk_bytes > 0;
  }
  Time predict(const CollectiveCall& call) const override {
    const Costs k(call);
    const auto& comm = call.cluster.topology().comm;
    std::vector<int> unused;
    const int inter_depth = node_tree(call.nodes(), 0, unused);
    const int chain_depth = static_cast<int>(k.widest) - 1;
    const TreeChunks chunks = tree_chunks(comm, call.bytes / k.channels, chain_depth + inter_depth);
    const double c = chunks.bytes;
    const double fill = 2 * (chain_depth * (k.alpha_intra + c / k.intra.bandwidth) +
                             inter_depth * (k.alpha_inter + c / k.inter.bandwidth));
    const double loaded_intra = k.alpha_intra + 2.0 * k.channels * c / k.intra.bandwidth;
    const double loaded_inter = k.alpha_inter + 3.0 * k.channels / std::min(k.channels, k.nics) * c / k.inter.bandwidth;
    const double period = std::max(chain_depth > 0 ? loaded_intra : 0.0, inter_depth > 0 ? loaded_inter : 0.0);
    return Time::from_seconds(k.launch + fill + (chunks.count - 1) * period);
  }
  Time build(const CollectiveCall& call, Collective& out) const override {
    build_tree(out, call.groups, call.bytes, call.cluster);
    return call.cluster.topology().comm.launch_latency;
  }
};

/// Per-GPU NVLS traffic of `call`: nvls_chunks()'s chunk count; per chunk, the bytes a GPU
/// sends into the switch (`up`) and receives from it (`down`). all_reduce: (n+1)/n · S/k both
/// ways (nvls_chunks); reduce_scatter (multimem load-reduce): the whole chunk S/k up, its
/// reduced 1/n share down; all_gather (multimem store, S the output): its 1/n share up, every
/// share down.
struct NvlsTraffic {
  int chunks = 1;
  double up = 0, down = 0;
};

NvlsTraffic nvls_traffic(const CollectiveCall& call) {
  const auto& comm = call.cluster.topology().comm;
  const NvlsChunks c = nvls_chunks(comm, channel_count(call.cluster), call.bytes, call.size());
  NvlsTraffic t;
  t.chunks = c.count;
  const double chunk = call.bytes / c.count;
  const double n = call.size();
  switch (call.op) {
    case CollectiveOp::reduce_scatter: t.up = chunk; t.down = chunk / n; break;
    case CollectiveOp::all_gather: t.up = chunk / n; t.down = chunk; break;
    default: t.up = t.down = c.bytes; break;
  }
  return t;
}

/// In-switch reduction (NVLink SHARP) inside one node: see collective.hpp. NCCL runs NVLS for
/// all-reduce, reduce-scatter and all-gather (src/graph/tuning.cc admits NVLS for
/// ncclFuncReduceScatter and ncclFuncAllGather, at a bus bandwidth × (ppn − 1)/ppn).
class NvlsUnit final : public AlgorithmUnit {
 public:
  Algorithm id() const override { return Algorithm::nvls; }
  bool applies(const CollectiveCall& call) const override {
    return moves_data(call) && call.nodes() == 1 && call.cluster.switch_reduces();
  }
  /// Λ + σ + λ + min(up, down)/B + k · max(up, down)/B: the first chunk's shorter leg, then the
  /// longer leg of every chunk back to back (see Communicator::predict for all-reduce).
  Time predict(const CollectiveCall& call) const override {
    const auto& comm = call.cluster.topology().comm;
    const NvlsTraffic t = nvls_traffic(call);
    const int gpu = call.ranks.front();
    double bandwidth = std::numeric_limits<double>::infinity(), latency = 0;
    for (bool to_switch : {true, false}) {
      for (auto link : call.cluster.switch_route(gpu, to_switch)) {
        bandwidth = std::min(bandwidth, call.net.link_bandwidth(link));
        latency += call.net.link_latency(link).seconds();
      }
    }
    return Time::from_seconds(comm.launch_latency.seconds() + comm.step_latency.seconds() + latency +
                              (std::min(t.up, t.down) + t.chunks * std::max(t.up, t.down)) / bandwidth);
  }
  Time build(const CollectiveCall& call, Collective& out) const override {
    const NvlsTraffic t = nvls_traffic(call);
    Nvls nvls;
    nvls.gpus = call.ranks;
    nvls.chunks = t.chunks;
    nvls.chunk_bytes = t.up;
    nvls.down_chunk_bytes = t.down;
    out.add_nvls(std::move(nvls));
    return call.cluster.topology().comm.launch_latency;
  }
};

/// All-to-all (comm/all_to_all.hpp): direct routes, or the rail relay across nodes.
class AllToAllUnit final : public AlgorithmUnit {
 public:
  Algorithm id() const override { return Algorithm::all_to_all; }
  bool applies(const CollectiveCall& call) const override { return call.op == CollectiveOp::all_to_all; }
  /// Λ + σ + the longest path latency + the busiest GPU link's bytes / its bandwidth: per GPU
  /// (n − w)·S/n over the network (w = most ranks on a node) and over NVLink (w − 1)·S/n, or
  /// with the relay N·(g − 1)·S/n (its own messages and those it forwards), legs at once. The
  /// kernels' own rates on the relay (CollectiveCall::kernel_rdma_rate, kernel_forward_rate)
  /// bound a GPU's network legs' rate and the N·g·S/n it delivers in its node.
  Time predict(const CollectiveCall& call) const override {
    const Costs k(call);
    const int n = call.size();
    // Messages per destination GPU, and per GPU of a remote node on the relay's network leg,
    // deduplicated as all_to_all_sends deduplicates them.
    const double to_gpu = call.bytes / n * all_to_all_distinct_share(call.route_targets, call.route_picks, n);
    const bool relays = all_to_all_relays(call);
    const double to_remote =
        relays ? call.bytes / n * all_to_all_distinct_share(call.route_targets, call.route_picks, call.nodes()) : to_gpu;
    const bool spans = call.nodes() > 1;
    const double widest = static_cast<double>(k.widest);
    const double nvlink_messages = relays ? call.nodes() * (widest - 1) : widest - 1;
    const double nvlink = k.widest > 1 ? nvlink_messages * to_gpu / k.intra.bandwidth : 0;
    double per_gpu_net = k.inter.bandwidth * std::min(1.0, static_cast<double>(k.nics) / widest);
    if (relays && call.kernel_rdma_rate > 0) per_gpu_net = std::min(per_gpu_net, call.kernel_rdma_rate);
    const double network = spans ? (n - widest) * to_remote / per_gpu_net : 0;
    const double forward =
        relays && call.kernel_forward_rate > 0 ? call.nodes() * widest * to_gpu / call.kernel_forward_rate : 0;
    const double latency = std::max(spans ? k.inter.latency_s : 0.0, k.widest > 1 ? k.intra.latency_s : 0.0);
    return Time::from_seconds(k.launch + k.sigma + latency + std::max({nvlink, network, forward}));
  }
  Time build(const CollectiveCall& call, Collective& out) const override {
    for (const DirectSend& s : all_to_all_sends(call, call.aggregate)) out.add_direct(s);
    return call.cluster.topology().comm.launch_latency;
  }
};

}  // namespace

NvlsChunks nvls_chunks(const config::CommSpec& comm, int channels, double bytes, int ranks) {
  if (ranks < 1 || channels < 1) throw std::invalid_argument("nvls_chunks: need at least one rank and one channel");
  NvlsChunks out;
  const double per_chunk = static_cast<double>(channels) * comm.chunk_bytes;
  if (per_chunk > 0 && bytes > 0) {
    const double count = std::ceil(bytes / per_chunk * (1 - 1e-12));
    if (count > std::numeric_limits<int>::max()) throw std::invalid_argument("nvls_chunks: buffer too large to chunk");
    out.count = std::max(1, static_cast<int>(count));
  }
  out.bytes = bytes / out.count * (ranks + 1.0) / ranks;
  return out;
}

CollectiveCall::CollectiveCall(CollectiveOp o, const std::vector<int>& r, double b, const hardware::Cluster& c,
                               const engine::FlowNetwork& n)
    : op(o), ranks(r), bytes(b), cluster(c), net(n), groups(group_by_node(r, c)) {}

bool CollectiveCall::layered() const { return groups.size() > 1 && uniform(groups) && groups.front().size() > 1; }

const std::vector<const AlgorithmUnit*>& algorithm_registry() {
  static const HierarchicalUnit hierarchical;
  static const RingUnit ring;
  static const TreeUnit tree;
  static const NvlsUnit nvls;
  static const AllToAllUnit all_to_all;
  static const std::vector<const AlgorithmUnit*> units{&hierarchical, &ring, &tree, &nvls, &all_to_all};
  return units;
}

const AlgorithmUnit& algorithm_unit(Algorithm algorithm) {
  for (const AlgorithmUnit* unit : algorithm_registry()) {
    if (unit->id() == algorithm) return *unit;
  }
  throw std::invalid_argument(std::string("no algorithm unit for ") + algorithm_name(algorithm));
}

Algorithm choose_algorithm(const CollectiveCall& call) {
  if (call.size() < 2) return Algorithm::ring;
  const AlgorithmUnit* best = nullptr;
  Time best_time = Time::max();
  for (const AlgorithmUnit* unit : algorithm_registry()) {
    if (!unit->eligible(call)) continue;
    const Time t = unit->predict(call);
    if (best == nullptr || t < best_time) {
      best = unit;
      best_time = t;
    }
  }
  return best == nullptr ? Algorithm::ring : best->id();
}

}  // namespace ironlaw::comm
