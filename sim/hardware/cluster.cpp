#include "hardware/cluster.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "core/error.hpp"

namespace ironlaw::hardware {

namespace {

struct EdgeInfo {
  engine::LinkId link = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexInfo, EdgeInfo>;
using Vertex = std::size_t;

/// splitmix64 (Steele, Lea, Flood 2014): a fixed, portable mixing function for ECMP hashing.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Every problem with `t` for `nodes` nodes, each pointing at the topology file.
std::vector<Diagnostic> validate(const config::TopologySpec& t, int nodes) {
  std::vector<Diagnostic> out;
  const SourceLoc where{t.file.empty() ? t.name : t.file, 0, 0};
  auto fail = [&](const std::string& key, const std::string& message) { out.push_back({where, key, message}); };
  const auto& n = t.node;
  const auto& f = t.fabric;
  if (nodes < 1) fail("nodes", "expected at least 1 node, got " + std::to_string(nodes));
  if (n.gpus < 1) fail("node.gpus", "expected at least 1 GPU per node, got " + std::to_string(n.gpus));
  if (n.gpus > 1 && !(n.nvlink.bandwidth > 0)) fail("node.nvlink.bandwidth", "expected a positive bandwidth");
  if (n.gpus_per_pcie_switch < 1) {
    fail("node.gpus_per_pcie_switch", "expected at least 1, got " + std::to_string(n.gpus_per_pcie_switch));
  } else if (n.gpus >= 1 && n.gpus % n.gpus_per_pcie_switch != 0) {
    fail("node.gpus_per_pcie_switch", "must divide node.gpus (" + std::to_string(n.gpus) + "), got " +
                                          std::to_string(n.gpus_per_pcie_switch));
  }
  if (!(n.pcie.bandwidth > 0)) fail("node.pcie.bandwidth", "expected a positive bandwidth");
  if (n.nics < 1) {
    fail("node.nics", "every GPU must reach a NIC: expected at least 1 NIC per node, got " + std::to_string(n.nics));
  } else if (n.gpus_per_pcie_switch >= 1 && n.gpus >= 1 && n.gpus % n.gpus_per_pcie_switch == 0) {
    const int switches = n.gpus / n.gpus_per_pcie_switch;
    if (n.nics % switches != 0) {
      fail("node.nics", "every PCIe switch must hold a NIC: expected a multiple of the " + std::to_string(switches) +
                            " PCIe switches, got " + std::to_string(n.nics));
    }
  }
  if (!(n.nic.bandwidth > 0)) fail("node.nic.bandwidth", "expected a positive bandwidth");
  const bool rails = f.kind == "rail_optimized";
  if (f.kind != "leaf_spine" && !rails) {
    fail("fabric.kind", "expected \"leaf_spine\" or \"rail_optimized\", got \"" + f.kind + "\"");
  }
  if (rails && n.nics >= 1 && n.gpus >= 1 && n.nics != n.gpus) {
    fail("node.nics", "a rail-optimized fabric needs one NIC per GPU (one rail per local GPU index): expected " +
                          std::to_string(n.gpus) + ", got " + std::to_string(n.nics));
  }
  if (f.nodes_per_leaf < 1) fail("fabric.nodes_per_leaf", "expected at least 1, got " + std::to_string(f.nodes_per_leaf));
  if (!(f.oversubscription >= 1.0)) fail("fabric.oversubscription", "expected a ratio of at least 1");
  if (f.spines < 0) fail("fabric.spines", "expected 0 (automatic) or a positive count");
  // Rails: one leaf tier per NIC index, so several NICs per node already mean several leaves.
  const bool multi_leaf = f.nodes_per_leaf >= 1 && (nodes > f.nodes_per_leaf || (rails && n.nics > 1));
  if (multi_leaf && f.spines == 0 && !(f.leaf_spine.bandwidth > 0)) {
    fail("fabric.leaf_spine.bandwidth", "expected a positive bandwidth (needed to size the spine tier)");
  }
  if (multi_leaf && f.leaf_spine.bandwidth < 0) fail("fabric.leaf_spine.bandwidth", "expected a positive bandwidth");
  const std::pair<const char*, Time> latencies[] = {{"node.nvlink.latency", n.nvlink.latency},
                                                     {"node.pcie.latency", n.pcie.latency},
                                                     {"node.nic.latency", n.nic.latency},
                                                     {"fabric.leaf_spine.latency", f.leaf_spine.latency},
                                                     {"fabric.switch_latency", f.switch_latency}};
  for (const auto& [key, latency] : latencies) {
    if (latency < Time::zero()) fail(key, "expected a non-negative latency");
  }
  const auto& pod = f.pod;
  if (pod.nodes < 0) fail("fabric.pod.nodes", "expected a positive node count, got " + std::to_string(pod.nodes));
  if (pod.nodes > 0 && f.nodes_per_leaf >= 1) {
    if (pod.nodes % f.nodes_per_leaf != 0) {
      fail("fabric.pod.nodes", "must be a multiple of fabric.nodes_per_leaf (" + std::to_string(f.nodes_per_leaf) +
                                   "): a leaf cannot straddle two pods, got " + std::to_string(pod.nodes));
    } else if (nodes > pod.nodes) {
      const int leaves_per_pod = pod.nodes / f.nodes_per_leaf * (rails ? std::max(1, n.nics) : 1);
      if (leaves_per_pod < 2) {
        fail("fabric.pod.nodes", "a pod of one leaf has no spines to reach the core tier: expected more than " +
                                     std::to_string(f.nodes_per_leaf) + " nodes per pod, got " + std::to_string(pod.nodes));
      }
      if (!(pod.oversubscription >= 1.0)) fail("fabric.pod.oversubscription", "expected a ratio of at least 1");
      if (!(pod.spine_core.bandwidth > 0)) {
        fail("fabric.pod.spine_core.bandwidth", "expected a positive bandwidth (needed to size the core tier)");
      }
      if (pod.spine_core.latency < Time::zero()) fail("fabric.pod.spine_core.latency", "expected a non-negative latency");
    }
  }
  return out;
}

/// Largest leaf × spine link count a cluster may ask for (2 links each): a model-size bound,
/// far above any real two-level fabric (64-port switches give at most 64 × 32 leaf-spine links).
constexpr double kMaxLeafSpineLinks = 1 << 26;

/// Throws InputError naming `key` when `spines` spines above `leaves` leaves do not fit an int or
/// exceed kMaxLeafSpineLinks; `what` says where the count came from.
void check_spine_tier(const config::TopologySpec& t, double spines, int leaves, const std::string& key,
                      const std::string& what) {
  if (spines * leaves <= kMaxLeafSpineLinks) return;
  throw InputError({{SourceLoc{t.file.empty() ? t.name : t.file, 0, 0}, key,
                     what + " needs " + std::to_string(spines) + " spines for " + std::to_string(leaves) +
                         " leaves, more than the model's limit of " + std::to_string(static_cast<long>(kMaxLeafSpineLinks)) +
                         " leaf-spine links; expected a leaf_spine bandwidth comparable to the NIC bandwidth"}});
}

}  // namespace

struct Cluster::Impl {
  config::TopologySpec topology;
  int nodes = 0;
  int gpus_per_node = 0;
  int pcie_switches = 0;  // per node
  int nics = 0;           // per node
  int rails = 1;            // leaf groups: one per NIC index on a rail fabric, else one
  int leaves_per_rail = 0;  // ⌈nodes / nodes_per_leaf⌉
  int leaves = 0;           // rails · leaves_per_rail
  int spines = 0;           // per pod
  int pods = 1;
  int leaves_per_pod_rail = 0;  // leaves of one rail in one pod (= leaves_per_rail with one pod)
  int cores_per_plane = 0;      // core switches above spine s of every pod (0 with one pod)
  bool has_nvswitch = false;
  Vertex block = 0;  // vertices per node
  Graph graph;

  // Link ids by element, filled while building (see the layout in vertex_of_*).
  std::vector<engine::LinkId> gpu_up, gpu_down;          // per GPU: GPU → NVSwitch, NVSwitch → GPU
  std::vector<engine::LinkId> gpu_to_pcie, pcie_to_gpu;  // per GPU
  std::vector<engine::LinkId> pcie_to_nic, nic_to_pcie;  // per NIC
  std::vector<engine::LinkId> nic_up, nic_down;          // per NIC: NIC → leaf, leaf → NIC
  std::vector<engine::LinkId> leaf_up, spine_down;       // per (leaf, spine of its pod): leaf → spine, spine → leaf
  std::vector<engine::LinkId> spine_up, core_down;       // per (pod, spine, core of the plane): spine → core, core → spine
  std::vector<engine::LinkId> nvls_in, nvls_out;         // per GPU port: NVSwitch → reducer, reducer → NVSwitch
  // (link, from, to) in creation order; link ids increase, so lookups bisect.
  std::vector<std::tuple<engine::LinkId, Vertex, Vertex>> ends;

  // Vertex layout: node blocks [nvswitch?][gpus][pcie switches][nics], then leaves, then spines
  // (pod-major), then cores (plane-major).
  Vertex node_base(int node) const { return static_cast<Vertex>(node) * block; }
  Vertex nvswitch_vertex(int node) const { return node_base(node); }
  Vertex gpu_vertex(int gpu) const {
    const int node = gpu / gpus_per_node;
    return node_base(node) + (has_nvswitch ? 1 : 0) + static_cast<Vertex>(gpu % gpus_per_node);
  }
  Vertex pcie_vertex(int node, int sw) const {
    return node_base(node) + (has_nvswitch ? 1 : 0) + static_cast<Vertex>(gpus_per_node + sw);
  }
  Vertex nic_vertex(int global_nic) const {
    const int node = global_nic / nics;
    return node_base(node) + (has_nvswitch ? 1 : 0) + static_cast<Vertex>(gpus_per_node + pcie_switches + global_nic % nics);
  }
  Vertex leaf_vertex(int leaf) const { return static_cast<Vertex>(nodes) * block + static_cast<Vertex>(leaf); }
  Vertex spine_vertex(int pod, int spine) const {
    return leaf_vertex(leaves) + static_cast<Vertex>(pod) * static_cast<Vertex>(spines) + static_cast<Vertex>(spine);
  }
  Vertex core_vertex(int core) const { return spine_vertex(pods, 0) + static_cast<Vertex>(core); }
  /// The pod of leaf `leaf` (a leaf never straddles pods: pod.nodes is a multiple of nodes_per_leaf).
  int pod_of_leaf(int leaf) const { return pods > 1 ? (leaf % leaves_per_rail) / leaves_per_pod_rail : 0; }

  /// The leaf that NIC `global_nic` hangs off: rail r's leaves are [r · leaves_per_rail,
  /// (r + 1) · leaves_per_rail), and its node picks one of them by node / nodes_per_leaf.
  int leaf_of_nic(int global_nic) const {
    const int node = global_nic / nics;
    const int rail = rails > 1 ? global_nic % nics : 0;
    return rail * leaves_per_rail + node / topology.fabric.nodes_per_leaf;
  }
  /// The NIC (global index) on the PCIe switch of `gpu`.
  int nic_of_gpu(int gpu) const {
    const int node = gpu / gpus_per_node;
    const int local = gpu % gpus_per_node;
    const int per_switch_gpus = topology.node.gpus_per_pcie_switch;
    const int per_switch_nics = nics / pcie_switches;
    const int sw = local / per_switch_gpus;
    return node * nics + sw * per_switch_nics + (local % per_switch_gpus) % per_switch_nics;
  }
  std::uint64_t ecmp_hash(int src, int dst, std::uint64_t flow_hash) const {
    std::uint64_t h = splitmix64(static_cast<std::uint64_t>(src));
    h = splitmix64(h ^ static_cast<std::uint64_t>(dst));
    return splitmix64(h ^ flow_hash);
  }
  int spine_for(std::uint64_t hash) const { return static_cast<int>(hash % static_cast<std::uint64_t>(spines)); }
  /// The core of the plane: a second hash of the same flow, independent of the spine choice.
  int core_for(std::uint64_t hash) const {
    return static_cast<int>(splitmix64(hash) % static_cast<std::uint64_t>(cores_per_plane));
  }

  bool switch_reduces() const { return has_nvswitch && topology.node.nvswitch_reduce_bandwidth > 0; }

  engine::LinkId link(engine::FlowNetwork& net, Vertex from, Vertex to, double bandwidth, Time latency,
                      const std::string& suffix = {}) {
    const std::string name = graph[from].name + "->" + graph[to].name + suffix;
    const engine::LinkId id = net.add_link(bandwidth, latency, name);
    boost::add_edge(from, to, EdgeInfo{id}, graph);
    ends.emplace_back(id, from, to);
    return id;
  }

  void build(engine::FlowNetwork& net);
  void check_connected() const;
};

void Cluster::Impl::build(engine::FlowNetwork& net) {
  const auto& n = topology.node;
  const auto& f = topology.fabric;
  gpus_per_node = n.gpus;
  pcie_switches = n.gpus / n.gpus_per_pcie_switch;
  nics = n.nics;
  has_nvswitch = n.gpus > 1;
  block = (has_nvswitch ? 1 : 0) + static_cast<Vertex>(n.gpus + pcie_switches + n.nics);
  rails = f.kind == "rail_optimized" ? nics : 1;
  leaves_per_rail = (nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
  leaves = rails * leaves_per_rail;
  pods = f.pod.nodes > 0 && nodes > f.pod.nodes ? (nodes + f.pod.nodes - 1) / f.pod.nodes : 1;
  leaves_per_pod_rail = pods > 1 ? f.pod.nodes / f.nodes_per_leaf : leaves_per_rail;

  // Spine tier: a leaf's uplink capacity is its downlink capacity (nodes_per_leaf nodes, each
  // with nics / rails NICs on it) over the oversubscription.
  double per_spine_link = 0;
  if (leaves > 1) {
    const double down_ports = static_cast<double>(f.nodes_per_leaf) * (nics / rails);
    const double uplink = down_ports * n.nic.bandwidth / f.oversubscription;
    if (f.spines > 0) {
      spines = f.spines;
      per_spine_link = uplink / spines;
      if (f.leaf_spine.bandwidth > 0) per_spine_link = std::min(per_spine_link, f.leaf_spine.bandwidth);
    } else {
      // In double first: a tiny leaf_spine bandwidth asks for more spines than an int holds.
      const double needed = std::max(std::ceil(uplink / f.leaf_spine.bandwidth * (1 - 1e-12)), 1.0);
      check_spine_tier(topology, needed, leaves, "fabric.leaf_spine.bandwidth",
                       "the leaf uplink capacity " + std::to_string(uplink) + " B/s over a leaf_spine bandwidth of " +
                           std::to_string(f.leaf_spine.bandwidth) + " B/s");
      spines = static_cast<int>(needed);
      per_spine_link = uplink / spines;
    }
    if (f.spines > 0) check_spine_tier(topology, f.spines, leaves, "fabric.spines", "the given spine count");
  }
  // Core tier: a spine's leaf-facing capacity (the leaves of a whole pod) over the pod
  // oversubscription, split evenly over the cores of its plane.
  double per_core_link = 0;
  if (pods > 1) {
    const double down = static_cast<double>(rails) * leaves_per_pod_rail * per_spine_link;
    const double up = down / f.pod.oversubscription;
    const double needed = std::max(std::ceil(up / f.pod.spine_core.bandwidth * (1 - 1e-12)), 1.0);
    check_spine_tier(topology, needed * spines, pods, "fabric.pod.spine_core.bandwidth",
                     "the spine uplink capacity " + std::to_string(up) + " B/s over a spine_core bandwidth of " +
                         std::to_string(f.pod.spine_core.bandwidth) + " B/s");
    cores_per_plane = static_cast<int>(needed);
    per_core_link = up / cores_per_plane;
  }

  const Vertex total = static_cast<Vertex>(nodes) * block + static_cast<Vertex>(leaves) +
                       static_cast<Vertex>(pods) * static_cast<Vertex>(spines) +
                       static_cast<Vertex>(spines) * static_cast<Vertex>(cores_per_plane);
  for (Vertex v = 0; v < total; ++v) boost::add_vertex(graph);
  for (int node = 0; node < nodes; ++node) {
    const std::string prefix = "node" + std::to_string(node) + "/";
    if (has_nvswitch) graph[nvswitch_vertex(node)] = {VertexKind::nvswitch, node, 0, prefix + "nvswitch"};
    for (int g = 0; g < n.gpus; ++g) {
      graph[gpu_vertex(node * n.gpus + g)] = {VertexKind::gpu, node, g, prefix + "gpu" + std::to_string(g)};
    }
    for (int s = 0; s < pcie_switches; ++s) {
      graph[pcie_vertex(node, s)] = {VertexKind::pcie_switch, node, s, prefix + "pcie" + std::to_string(s)};
    }
    for (int k = 0; k < nics; ++k) {
      graph[nic_vertex(node * nics + k)] = {VertexKind::nic, node, k, prefix + "nic" + std::to_string(k)};
    }
  }
  for (int l = 0; l < leaves; ++l) {
    const std::string rail = rails > 1 ? "rail" + std::to_string(l / leaves_per_rail) + "/" : "";
    graph[leaf_vertex(l)] = {VertexKind::leaf, -1, l, rail + "leaf" + std::to_string(l % leaves_per_rail)};
  }
  for (int p = 0; p < pods; ++p) {
    const std::string pod = pods > 1 ? "pod" + std::to_string(p) + "/" : "";
    for (int s = 0; s < spines; ++s) graph[spine_vertex(p, s)] = {VertexKind::spine, -1, s, pod + "spine" + std::to_string(s)};
  }
  for (int k = 0; k < spines * cores_per_plane; ++k) graph[core_vertex(k)] = {VertexKind::core, -1, k, "core" + std::to_string(k)};

  const int gpus_total = nodes * n.gpus;
  const int nics_total = nodes * nics;
  gpu_up.resize(has_nvswitch ? gpus_total : 0);
  gpu_down.resize(has_nvswitch ? gpus_total : 0);
  gpu_to_pcie.resize(gpus_total);
  pcie_to_gpu.resize(gpus_total);
  pcie_to_nic.resize(nics_total);
  nic_to_pcie.resize(nics_total);
  nic_up.resize(nics_total);
  nic_down.resize(nics_total);
  leaf_up.resize(static_cast<std::size_t>(leaves) * spines);
  spine_down.resize(static_cast<std::size_t>(leaves) * spines);
  const std::size_t core_links = static_cast<std::size_t>(pods > 1 ? pods : 0) * spines * cores_per_plane;
  spine_up.resize(core_links);
  core_down.resize(core_links);

  const Time sw = f.switch_latency;
  for (int node = 0; node < nodes; ++node) {
    for (int g = 0; g < n.gpus; ++g) {
      const int gpu = node * n.gpus + g;
      const Vertex gv = gpu_vertex(gpu);
      if (has_nvswitch) {
        gpu_up[gpu] = link(net, gv, nvswitch_vertex(node), n.nvlink.bandwidth, n.nvlink.latency);
        gpu_down[gpu] = link(net, nvswitch_vertex(node), gv, n.nvlink.bandwidth, n.nvlink.latency);
      }
      const Vertex pv = pcie_vertex(node, g / n.gpus_per_pcie_switch);
      gpu_to_pcie[gpu] = link(net, gv, pv, n.pcie.bandwidth, n.pcie.latency);
      pcie_to_gpu[gpu] = link(net, pv, gv, n.pcie.bandwidth, n.pcie.latency);
    }
    const int per_switch_nics = nics / pcie_switches;
    for (int k = 0; k < nics; ++k) {
      const int nic = node * nics + k;
      const Vertex nv = nic_vertex(nic);
      const Vertex pv = pcie_vertex(node, k / per_switch_nics);
      pcie_to_nic[nic] = link(net, pv, nv, n.pcie.bandwidth, n.pcie.latency);
      nic_to_pcie[nic] = link(net, nv, pv, n.pcie.bandwidth, n.pcie.latency);
      const Vertex lv = leaf_vertex(leaf_of_nic(nic));
      nic_up[nic] = link(net, nv, lv, n.nic.bandwidth, n.nic.latency + sw);  // traverses the leaf
      nic_down[nic] = link(net, lv, nv, n.nic.bandwidth, n.nic.latency);
    }
  }
  for (int l = 0; l < leaves; ++l) {
    for (int s = 0; s < spines; ++s) {
      const std::size_t i = static_cast<std::size_t>(l) * spines + s;
      const Vertex sv = spine_vertex(pod_of_leaf(l), s);
      leaf_up[i] = link(net, leaf_vertex(l), sv, per_spine_link, f.leaf_spine.latency + sw);
      spine_down[i] = link(net, sv, leaf_vertex(l), per_spine_link, f.leaf_spine.latency + sw);
    }
  }
  for (int p = 0; p < (pods > 1 ? pods : 0); ++p) {
    for (int s = 0; s < spines; ++s) {
      for (int c = 0; c < cores_per_plane; ++c) {
        const std::size_t i = (static_cast<std::size_t>(p) * spines + s) * cores_per_plane + c;
        const Vertex cv = core_vertex(s * cores_per_plane + c);
        spine_up[i] = link(net, spine_vertex(p, s), cv, per_core_link, f.pod.spine_core.latency + sw);
        core_down[i] = link(net, cv, spine_vertex(p, s), per_core_link, f.pod.spine_core.latency + sw);
      }
    }
  }
  // In-switch reduction: one reducer vertex per node after the fabric, two port links per GPU.
  if (switch_reduces()) {
    nvls_in.resize(static_cast<std::size_t>(gpus_total));
    nvls_out.resize(static_cast<std::size_t>(gpus_total));
    for (int node = 0; node < nodes; ++node) {
      const Vertex rv = boost::add_vertex(graph);
      graph[rv] = {VertexKind::switch_reducer, node, 0, "node" + std::to_string(node) + "/nvls"};
      for (int g = 0; g < n.gpus; ++g) {
        const int gpu = node * n.gpus + g;
        const std::string port = "[gpu" + std::to_string(g) + "]";
        nvls_in[gpu] = link(net, nvswitch_vertex(node), rv, n.nvswitch_reduce_bandwidth, Time::zero(), port);
        nvls_out[gpu] = link(net, rv, nvswitch_vertex(node), n.nvswitch_reduce_bandwidth, Time::zero(), port);
      }
    }
  }
}

void Cluster::Impl::check_connected() const {
  // One breadth-first search from the first GPU: links come in pairs, so every GPU that it
  // reaches reaches it back, and through it every NIC it reaches.
  std::vector<boost::default_color_type> color(boost::num_vertices(graph));
  std::vector<int> reached(boost::num_vertices(graph), 0);
  struct Mark : boost::default_bfs_visitor {
    std::vector<int>* reached;
    void discover_vertex(Vertex v, const Graph&) const { (*reached)[v] = 1; }
  };
  Mark mark;
  mark.reached = &reached;
  boost::breadth_first_search(graph, gpu_vertex(0),
                              boost::visitor(mark).color_map(boost::make_iterator_property_map(
                                  color.begin(), boost::get(boost::vertex_index, graph))));
  std::vector<Diagnostic> problems;
  const SourceLoc where{topology.file.empty() ? topology.name : topology.file, 0, 0};
  for (Vertex v = 0; v < boost::num_vertices(graph); ++v) {
    const auto& info = graph[v];
    if ((info.kind == VertexKind::gpu || info.kind == VertexKind::nic) && !reached[v]) {
      problems.push_back({where, "fabric", info.name + " is not connected to " + graph[gpu_vertex(0)].name});
    }
  }
  if (!problems.empty()) throw InputError(std::move(problems));
}

Cluster::Cluster(const config::TopologySpec& topology, int nodes, engine::FlowNetwork& net)
    : impl_(std::make_unique<Impl>()) {
  auto problems = validate(topology, nodes);
  if (!problems.empty()) throw InputError(std::move(problems));
  impl_->topology = topology;
  impl_->nodes = nodes;
  impl_->build(net);
  impl_->check_connected();
}

Cluster::~Cluster() = default;

int Cluster::nodes() const { return impl_->nodes; }
int Cluster::gpus_per_node() const { return impl_->gpus_per_node; }
const config::TopologySpec& Cluster::topology() const { return impl_->topology; }
int Cluster::leaves() const { return impl_->leaves; }
int Cluster::spines() const { return impl_->pods * impl_->spines; }
int Cluster::pods() const { return impl_->pods; }
int Cluster::cores() const { return impl_->spines * impl_->cores_per_plane; }
int Cluster::leaf_of(int gpu) const { return impl_->leaf_of_nic(impl_->nic_of_gpu(gpu)); }
int Cluster::nic_of(int gpu) const { return impl_->nic_of_gpu(gpu); }

engine::LinkId Cluster::pcie_to_gpu(int gpu) const {
  if (gpu < 0 || gpu >= gpus()) throw std::out_of_range("Cluster::pcie_to_gpu: gpu " + std::to_string(gpu));
  return impl_->pcie_to_gpu[static_cast<std::size_t>(gpu)];
}
std::size_t Cluster::gpu_vertex(int gpu) const { return impl_->gpu_vertex(gpu); }

bool Cluster::crosses_spine(int src, int dst) const {
  return impl_->spines > 0 && node_of(src) != node_of(dst) && leaf_of(src) != leaf_of(dst);
}

std::vector<engine::LinkId> Cluster::route(int src, int dst, std::uint64_t flow_hash) const {
  std::vector<engine::LinkId> path;
  route(src, dst, flow_hash, path);
  return path;
}

void Cluster::route(int src, int dst, std::uint64_t flow_hash, std::vector<engine::LinkId>& path) const {
  const Impl& m = *impl_;
  if (src < 0 || dst < 0 || src >= gpus() || dst >= gpus()) throw std::out_of_range("Cluster::route: GPU index out of range");
  path.clear();
  if (src == dst) return;
  const int src_node = node_of(src);
  const int dst_node = node_of(dst);
  if (src_node == dst_node) {
    path.push_back(m.gpu_up[src]);
    path.push_back(m.gpu_down[dst]);
    return;
  }
  const int src_nic = m.nic_of_gpu(src);
  const int dst_nic = m.nic_of_gpu(dst);
  // On a rail fabric the leaves differ for GPUs of different rails, so cross-rail traffic climbs
  // to a spine; within a rail only nodes under different leaves of the rail do.
  const int src_leaf = m.leaf_of_nic(src_nic);
  const int dst_leaf = m.leaf_of_nic(dst_nic);
  path.push_back(m.gpu_to_pcie[src]);
  path.push_back(m.pcie_to_nic[src_nic]);
  path.push_back(m.nic_up[src_nic]);
  if (src_leaf != dst_leaf) {
    const std::uint64_t hash = m.ecmp_hash(src, dst, flow_hash);
    const int spine = m.spine_for(hash);
    path.push_back(m.leaf_up[static_cast<std::size_t>(src_leaf) * m.spines + spine]);
    const int src_pod = m.pod_of_leaf(src_leaf);
    const int dst_pod = m.pod_of_leaf(dst_leaf);
    if (src_pod != dst_pod) {
      const int core = m.core_for(hash);
      const auto plane = [&](int pod) { return (static_cast<std::size_t>(pod) * m.spines + spine) * m.cores_per_plane + core; };
      path.push_back(m.spine_up[plane(src_pod)]);
      path.push_back(m.core_down[plane(dst_pod)]);
    }
    path.push_back(m.spine_down[static_cast<std::size_t>(dst_leaf) * m.spines + spine]);
  }
  path.push_back(m.nic_down[dst_nic]);
  path.push_back(m.nic_to_pcie[dst_nic]);
  path.push_back(m.pcie_to_gpu[dst]);
}

bool Cluster::switch_reduces() const { return impl_->switch_reduces(); }

std::vector<engine::LinkId> Cluster::switch_route(int gpu, bool to_switch) const {
  const Impl& m = *impl_;
  if (!m.switch_reduces()) throw std::logic_error("Cluster::switch_route: the NVSwitch of this topology cannot reduce");
  if (gpu < 0 || gpu >= gpus()) throw std::out_of_range("Cluster::switch_route: GPU index out of range");
  const auto g = static_cast<std::size_t>(gpu);
  if (to_switch) return {m.gpu_up[g], m.nvls_in[g]};
  return {m.nvls_out[g], m.gpu_down[g]};
}

std::size_t Cluster::vertex_count() const { return boost::num_vertices(impl_->graph); }
std::size_t Cluster::edge_count() const { return impl_->ends.size(); }

const VertexInfo& Cluster::vertex(std::size_t v) const {
  if (v >= vertex_count()) throw std::out_of_range("Cluster::vertex: index out of range");
  return impl_->graph[v];
}

std::pair<std::size_t, std::size_t> Cluster::link_ends(engine::LinkId link) const {
  const auto& ends = impl_->ends;
  const auto it = std::lower_bound(ends.begin(), ends.end(), link,
                                   [](const auto& e, engine::LinkId id) { return std::get<0>(e) < id; });
  if (it == ends.end() || std::get<0>(*it) != link) throw std::out_of_range("Cluster::link_ends: not a link of this cluster");
  return {std::get<1>(*it), std::get<2>(*it)};
}

int Cluster::hop_distance(int src, int dst) const {
  const Graph& g = impl_->graph;
  std::vector<int> distance(boost::num_vertices(g), -1);
  const Vertex from = impl_->gpu_vertex(src);
  distance[from] = 0;
  boost::breadth_first_search(
      g, from, boost::visitor(boost::make_bfs_visitor(boost::record_distances(distance.data(), boost::on_tree_edge()))));
  return distance[impl_->gpu_vertex(dst)];
}

}  // namespace ironlaw::hardware
