#pragma once
/// \file The modelled cluster: DGX-style nodes (GPUs on an NVSwitch, each GPU behind a PCIe
/// switch shared with its NIC) joined by a two-level leaf/spine fabric, as a Boost.Graph whose
/// directed edges are links of the engine's FlowNetwork.
#include <cstdint>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "engine/flow_network.hpp"

namespace ironlaw::hardware {

enum class VertexKind { gpu, nvswitch, pcie_switch, nic, leaf, spine };

struct VertexInfo {
  VertexKind kind;
  int node = -1;     ///< -1 for fabric switches
  int index = 0;     ///< index within its node (or within its tier)
  std::string name;  ///< stable path, e.g. "node3/gpu5", "leaf2", "spine0"
};

class Cluster {
 public:
  /// Builds `nodes` nodes of `topology` and its fabric, adding every link to `net`.
  /// Throws InputError (pointing at the topology file) for an impossible topology.
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
  /// a node; otherwise GPU → PCIe switch → NIC → leaf [→ spine → leaf] → NIC → PCIe switch → GPU.
  /// Among equal-cost spines the choice is a deterministic hash of (src, dst, flow_hash) (ECMP).
  std::vector<engine::LinkId> route(int src, int dst, std::uint64_t flow_hash = 0) const;

  std::size_t vertex_count() const;
  const VertexInfo& vertex(std::size_t v) const;
  /// The vertex ids at both ends of a link.
  std::pair<std::size_t, std::size_t> link_ends(engine::LinkId link) const;
  /// Shortest hop count between two GPUs by breadth-first search on the graph (for checks).
  int hop_distance(int src, int dst) const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace ironlaw::hardware
