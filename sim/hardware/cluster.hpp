#pragma once
/// \file The modelled cluster: DGX-style nodes (GPUs on an NVSwitch, each GPU behind a PCIe
/// switch shared with its NIC) joined by a two-level fat tree, either leaf/spine (a node's NICs
/// share one leaf) or rail-optimized (NIC i of every node hangs off a leaf of rail i), as a
/// Boost.Graph whose directed edges are links of the engine's FlowNetwork.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "engine/flow_network.hpp"

namespace ironlaw::hardware {

/// switch_reducer: the NVSwitch's in-network reduction and multicast engine (NVLink SHARP), one
/// per node, present only when node.nvswitch_reduce_bandwidth is set. core: a switch of the
/// third tier joining pods (fabric.pod), present only when the cluster spans several pods.
enum class VertexKind { gpu, nvswitch, pcie_switch, nic, leaf, spine, switch_reducer, core };

struct VertexInfo {
  VertexKind kind;
  int node = -1;     ///< -1 for fabric switches
  int index = 0;     ///< index within its node (or within its tier)
  std::string name;  ///< stable path, e.g. "node3/gpu5", "leaf2" ("rail5/leaf2" on rails), "spine0"
                     ///< ("pod1/spine0" when there are several pods), "core7"
};

class Cluster {
 public:
  /// Builds `nodes` nodes of `topology` and its fabric, adding every link to `net` (one engine
  /// link per direction, named "from->to" by vertex paths, e.g. "node3/gpu5->node3/nvswitch").
  ///
  /// Per node: GPU ↔ NVSwitch (NVLink; the NVSwitch chips are one non-blocking crossbar vertex),
  /// GPU ↔ PCIe switch ↔ NIC, NIC ↔ leaf. leaf_spine: a leaf serves `nodes_per_leaf` nodes (all
  /// their NICs), ⌈nodes / nodes_per_leaf⌉ leaves. rail_optimized: rail i is NIC i of every node;
  /// each rail has ⌈nodes / nodes_per_leaf⌉ leaves of nodes_per_leaf NICs, rails · that many
  /// leaves in all, numbered rail-major. A leaf's uplink capacity is its downlink capacity
  /// (nodes_per_leaf · NICs per node on it · nic bandwidth) / oversubscription, split evenly over
  /// the spines (fabric.spines, or when 0, ⌈uplink / leaf_spine bandwidth⌉), which every leaf of
  /// every rail reaches. One leaf → no spines. `switch_latency` is added to every link that
  /// enters a leaf, spine or core switch.
  ///
  /// Pods (fabric.pod.nodes > 0, and more nodes than one pod): pod p holds nodes
  /// [p · pod.nodes, (p + 1) · pod.nodes) and their leaves, and has its own spines, sized as
  /// above, which only its leaves reach. Spine s of every pod belongs to plane s; each plane has
  /// ⌈U / pod.spine_core bandwidth⌉ core switches, U = a spine's leaf-facing capacity /
  /// pod.oversubscription, and every spine of the plane has one link of U / cores-per-plane to
  /// each of them. With one pod (or no pod key) the fabric is exactly the two-level one.
  ///
  /// Validates first (nodes ≥ 1, positive bandwidths, every PCIe switch holds a NIC, one NIC
  /// per GPU on rails, every GPU reaches a NIC by breadth-first search) and throws InputError
  /// listing every problem, each pointing at the topology file. O(vertices + links).
  Cluster(const config::TopologySpec& topology, int nodes, engine::FlowNetwork& net);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int nodes() const;
  int gpus_per_node() const;
  int gpus() const { return nodes() * gpus_per_node(); }
  int node_of(int gpu) const { return gpu / gpus_per_node(); }
  const config::TopologySpec& topology() const;
  const config::DeviceSpec& device() const { return topology().device; }

  /// Directed links from GPU `src` to GPU `dst` (src ≠ dst): NVLink via the NVSwitch inside
  /// a node; otherwise GPU → PCIe switch → NIC → leaf [→ spine → leaf] → NIC → PCIe switch → GPU,
  /// through a spine exactly when the two NICs hang off different leaves (on rails: different
  /// rails, or one rail's nodes under different leaves of it); between pods GPU → … → leaf →
  /// spine s → core → spine s of the other pod → leaf → … → GPU. Among equal-cost spines (and
  /// cores of a plane) the choice is a deterministic hash of (src, dst, flow_hash) (ECMP,
  /// splitmix64), so flows of different pairs may collide on a spine link as they do in a real
  /// hashed fabric. Computed structurally: O(path length), no tables. src == dst → empty path.
  /// Throws std::out_of_range for a GPU index outside [0, gpus()).
  std::vector<engine::LinkId> route(int src, int dst, std::uint64_t flow_hash = 0) const;
  /// As above, into `path` (cleared first): no allocation once `path` has grown to 10 links.
  void route(int src, int dst, std::uint64_t flow_hash, std::vector<engine::LinkId>& path) const;

  /// True when a route from `src` to `dst` climbs to the spine tier (GPUs of different nodes
  /// whose NICs sit under different leaves), i.e. when its path depends on the ECMP choice. O(1).
  bool crosses_spine(int src, int dst) const;

  /// True when the node's NVSwitch can reduce in the switch (node.nvswitch_reduce_bandwidth > 0
  /// and more than one GPU per node). Then every node has a switch_reducer vertex "nodeN/nvls"
  /// (numbered after the spines) joined to the NVSwitch by two links per GPU port, named
  /// "nodeN/nvswitch->nodeN/nvls[gpuG]" and back, each of nvswitch_reduce_bandwidth and no
  /// latency. O(1).
  bool switch_reduces() const;
  /// The path of GPU `gpu`'s data into the switch's reducer (to_switch: GPU → NVSwitch →
  /// reducer port) or of results multicast back to it (reducer port → NVSwitch → GPU).
  /// Throws std::logic_error unless switch_reduces(), std::out_of_range for a bad GPU. O(1).
  std::vector<engine::LinkId> switch_route(int gpu, bool to_switch) const;

  /// Leaf switches (⌈nodes / nodes_per_leaf⌉, times the NICs per node on rails) and spine
  /// switches of all pods (0 when one leaf suffices).
  int leaves() const;
  int spines() const;
  /// Pods (1 without a pod tier or when the cluster fits in one) and core switches of all
  /// planes (0 with one pod).
  int pods() const;
  int cores() const;
  /// The leaf above `gpu`'s NIC (its node's leaf; on rails, a leaf of the GPU's rail). O(1).
  int leaf_of(int gpu) const;
  /// The global index (node · nics + local) of the NIC on `gpu`'s PCIe switch, which carries
  /// all of `gpu`'s inter-node traffic. O(1).
  int nic_of(int gpu) const;
  /// The link PCIe switch → `gpu`: host→device copies and inbound GPUDirect RDMA traffic of
  /// the NIC on the same switch both cross it. Throws std::out_of_range for a bad gpu. O(1).
  engine::LinkId pcie_to_gpu(int gpu) const;
  /// The graph vertex of `gpu`. O(1).
  std::size_t gpu_vertex(int gpu) const;

  std::size_t vertex_count() const;
  /// Directed edges = links this cluster added to the FlowNetwork.
  std::size_t edge_count() const;
  const VertexInfo& vertex(std::size_t v) const;
  /// The vertex ids at both ends of a link.
  std::pair<std::size_t, std::size_t> link_ends(engine::LinkId link) const;
  /// Shortest hop count between two GPUs by breadth-first search on the graph (for checks).
  /// O(vertices + edges).
  int hop_distance(int src, int dst) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ironlaw::hardware
