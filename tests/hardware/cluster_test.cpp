// Tests of the cluster graph and its routes. Specs are built in C++ with the DGX H100 numbers of
// topologies/dgx-h100-leaf-spine.yaml (sources there; each number's origin repeated below).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "config/load.hpp"
#include "core/error.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "hardware/cluster.hpp"
#include "support/dgx_h100.hpp"

using namespace ironlaw;
using hardware::Cluster;
using hardware::VertexKind;

namespace {

constexpr double GBps = 1e9;

using test::dgx_h100;

struct World {
  engine::Simulator sim;
  engine::FlowNetwork net{sim};
};

/// True if `path` is a chain of links from GPU `src` to GPU `dst` in the cluster graph.
bool is_path(const Cluster& c, const std::vector<engine::LinkId>& path, int src, int dst) {
  std::size_t at = c.gpu_vertex(src);
  for (auto link : path) {
    const auto [from, to] = c.link_ends(link);
    if (from != at) return false;
    at = to;
  }
  return at == c.gpu_vertex(dst);
}

}  // namespace

TEST_CASE("one DGX H100 node is 8 GPUs, an NVSwitch, 8 PCIe switches and 8 NICs under one leaf") {
  World w;
  Cluster c(dgx_h100(), 1, w.net);
  CHECK(c.gpus() == 8);
  CHECK(c.leaves() == 1);
  CHECK(c.spines() == 0);
  CHECK(c.vertex_count() == 1 + 8 + 8 + 8 + 1);
  // Per GPU: NVLink up/down, GPU↔PCIe; per NIC: PCIe↔NIC, NIC↔leaf.
  CHECK(c.edge_count() == 8 * 2 + 8 * 2 + 8 * 2 + 8 * 2);
  CHECK(w.net.link_count() == c.edge_count());
  std::map<VertexKind, int> kinds;
  for (std::size_t v = 0; v < c.vertex_count(); ++v) ++kinds[c.vertex(v).kind];
  CHECK(kinds[VertexKind::gpu] == 8);
  CHECK(kinds[VertexKind::nvswitch] == 1);
  CHECK(kinds[VertexKind::pcie_switch] == 8);
  CHECK(kinds[VertexKind::nic] == 8);
  CHECK(kinds[VertexKind::leaf] == 1);
}

TEST_CASE("16 DGX H100 nodes on 4-node leaves need 4 leaves and 32 spines") {
  World w;
  Cluster c(dgx_h100(), 16, w.net);
  CHECK(c.gpus() == 128);
  CHECK(c.leaves() == 4);
  // Uplink per leaf = 4 nodes × 8 NICs × 47 GB/s; one 47 GB/s link per spine → 32 spines.
  CHECK(c.spines() == 32);
  CHECK(c.vertex_count() == 16 * 25 + 4 + 32);
  CHECK(c.edge_count() == 16 * 64 + 4 * 32 * 2);
  CHECK(w.net.link_count() == c.edge_count());
}

TEST_CASE("links are named by the stable paths of their ends") {
  World w;
  Cluster c(dgx_h100(), 16, w.net);
  const auto intra = c.route(8 * 3 + 5, 8 * 3 + 1);
  REQUIRE(intra.size() == 2);
  CHECK(w.net.link_name(intra[0]) == "node3/gpu5->node3/nvswitch");
  CHECK(w.net.link_name(intra[1]) == "node3/nvswitch->node3/gpu1");
  const auto inter = c.route(0, 8 * 15 + 7);
  REQUIRE(inter.size() == 8);
  CHECK(w.net.link_name(inter[0]) == "node0/gpu0->node0/pcie0");
  CHECK(w.net.link_name(inter[1]) == "node0/pcie0->node0/nic0");
  CHECK(w.net.link_name(inter[2]) == "node0/nic0->leaf0");
  CHECK(w.net.link_name(inter[5]) == "leaf3->node15/nic7");
  CHECK(w.net.link_name(inter[7]) == "node15/pcie7->node15/gpu7");
}

TEST_CASE("an intra-node route uses only the NVLink links of its two GPUs") {
  World w;
  const auto spec = dgx_h100();
  Cluster c(spec, 2, w.net);
  for (int src = 8; src < 16; ++src) {
    for (int dst = 8; dst < 16; ++dst) {
      if (src == dst) continue;
      const auto path = c.route(src, dst);
      REQUIRE(path.size() == 2);
      CHECK(c.vertex(c.link_ends(path[0]).second).kind == VertexKind::nvswitch);
      for (auto link : path) CHECK(w.net.link_bandwidth(link) == spec.node.nvlink.bandwidth);
      CHECK(is_path(c, path, src, dst));
    }
  }
  CHECK(c.route(3, 3).empty());
}

TEST_CASE("every route is a path in the graph and a shortest one") {
  World w;
  Cluster c(dgx_h100(), 16, w.net);
  for (int src = 0; src < c.gpus(); src += 5) {
    for (int dst = 0; dst < c.gpus(); dst += 3) {
      if (src == dst) continue;
      const auto path = c.route(src, dst, static_cast<std::uint64_t>(src * 7 + dst));
      INFO("src " << src << " dst " << dst);
      CHECK(is_path(c, path, src, dst));
      CHECK(static_cast<int>(path.size()) == c.hop_distance(src, dst));
    }
  }
}

TEST_CASE("inter-node traffic leaves through the source GPU's NIC and arrives at the destination GPU's NIC") {
  World w;
  Cluster c(dgx_h100(), 2, w.net);
  const auto path = c.route(3, 8 + 6);
  REQUIRE(path.size() == 6);  // same leaf: GPU → PCIe → NIC → leaf → NIC → PCIe → GPU
  CHECK(c.vertex(c.link_ends(path[1]).second).name == "node0/nic3");
  CHECK(c.vertex(c.link_ends(path[3]).second).name == "node1/nic6");
  CHECK(c.nic_of(3) == 3);
  CHECK(c.nic_of(8 + 6) == 8 + 6);
}

TEST_CASE("ECMP spreads different GPU pairs over the spines, deterministically") {
  World w;
  Cluster c(dgx_h100(), 16, w.net);
  std::set<std::size_t> spines_used;
  for (int src = 0; src < 32; ++src) {      // leaf 0
    for (int dst = 96; dst < 128; ++dst) {  // leaf 3
      REQUIRE(c.crosses_spine(src, dst));
      const auto path = c.route(src, dst);
      REQUIRE(path.size() == 8);
      spines_used.insert(c.link_ends(path[3]).second);
      CHECK(path == c.route(src, dst));  // same inputs, same route
    }
  }
  // 1,024 pairs hashed over 32 spines: every spine is used.
  CHECK(spines_used.size() == 32);
  // The flow hash moves one pair's flows over several spines.
  std::set<std::size_t> by_hash;
  for (std::uint64_t h = 0; h < 64; ++h) by_hash.insert(c.link_ends(c.route(0, 127, h)[3]).second);
  CHECK(by_hash.size() > 16);
  CHECK_FALSE(c.crosses_spine(0, 31));
}

TEST_CASE("an oversubscription of 2 halves a leaf's uplink capacity") {
  auto uplink = [](double oversubscription) {
    World w;
    auto spec = dgx_h100();
    spec.fabric.oversubscription = oversubscription;
    Cluster c(spec, 16, w.net);
    double total = 0;
    for (engine::LinkId l = 0; l < w.net.link_count(); ++l) {
      const auto [from, to] = c.link_ends(l);
      if (c.vertex(from).name == "leaf0" && c.vertex(to).kind == VertexKind::spine) total += w.net.link_bandwidth(l);
    }
    return total;
  };
  const double full = uplink(1);
  CHECK(full == Approx(4 * 8 * 47 * GBps).epsilon(1e-12));
  CHECK(uplink(2) == Approx(full / 2).epsilon(1e-12));
}

TEST_CASE("a given spine count splits the uplink capacity evenly") {
  World w;
  auto spec = dgx_h100();
  spec.fabric.spines = 8;
  spec.fabric.leaf_spine.bandwidth = 0;  // not needed when the count is given
  Cluster c(spec, 8, w.net);
  CHECK(c.spines() == 8);
  const auto path = c.route(0, 63);
  REQUIRE(path.size() == 8);
  CHECK(w.net.link_bandwidth(path[3]) == Approx(4 * 8 * 47 * GBps / 8));
}

TEST_CASE("an impossible topology is rejected with every problem, naming the file and key") {
  World w;
  auto spec = dgx_h100();
  spec.node.nics = 0;
  spec.node.nvlink.bandwidth = 0;
  try {
    Cluster c(spec, 0, w.net);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    std::set<std::string> keys;
    for (const auto& d : e.diagnostics()) {
      CHECK(d.where.file == "topologies/dgx-h100-leaf-spine.yaml");
      keys.insert(d.key);
    }
    CHECK(keys == std::set<std::string>{"nodes", "node.nics", "node.nvlink.bandwidth"});
    CHECK(std::string(e.what()).find("topologies/dgx-h100-leaf-spine.yaml: node.nics: every GPU must reach a NIC") !=
          std::string::npos);
  }
}

TEST_CASE("a NIC count that leaves a PCIe switch without a NIC is rejected") {
  World w;
  auto spec = dgx_h100();
  spec.node.nics = 4;  // 8 PCIe switches, 4 NICs
  CHECK_THROWS_AS(Cluster(spec, 1, w.net), InputError);
  spec.node.nics = 8;
  spec.node.gpus_per_pcie_switch = 3;  // does not divide 8 GPUs
  CHECK_THROWS_AS(Cluster(spec, 1, w.net), InputError);
}

TEST_CASE("DGX A100-style PCIe switches with two GPUs and two NICs give each GPU its own NIC") {
  World w;
  auto spec = dgx_h100();
  spec.node.gpus_per_pcie_switch = 2;
  Cluster c(spec, 2, w.net);
  CHECK(c.vertex_count() == 2 * (1 + 8 + 4 + 8) + 1);
  for (int g = 0; g < 16; ++g) CHECK(c.nic_of(g) == g);
  const auto path = c.route(5, 8 + 2);
  CHECK(c.vertex(c.link_ends(path[0]).second).name == "node0/pcie2");
  CHECK(is_path(c, path, 5, 10));
}

TEST_CASE("a 2,048-node cluster builds and routes without all-pairs tables") {
  World w;
  Cluster c(dgx_h100(), 2048, w.net);
  CHECK(c.gpus() == 16384);
  CHECK(c.leaves() == 512);
  CHECK(c.spines() == 32);
  CHECK(c.edge_count() == 2048u * 64 + 512u * 32 * 2);
  const auto path = c.route(0, 16383, 42);
  CHECK(path.size() == 8);
  CHECK(is_path(c, path, 0, 16383));
}

TEST_CASE("the shipped DGX topologies load and build 16 nodes") {
  for (const char* file : {"/topologies/dgx-h100-leaf-spine.yaml", "/topologies/dgx-a100-leaf-spine.yaml"}) {
    INFO(file);
    const auto spec = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + file);
    World w;
    Cluster c(spec, 16, w.net);
    CHECK(c.gpus() == 128);
    CHECK(spec.comm.channels == 8);
    for (int dst = 1; dst < 128; dst += 9) CHECK(static_cast<int>(c.route(0, dst).size()) == c.hop_distance(0, dst));
  }
}

namespace {

/// The DGX H100 node on a rail-optimized fabric: NIC i of every node on a leaf of rail i.
config::TopologySpec dgx_h100_rails(int nodes_per_leaf) {
  auto t = dgx_h100();
  t.fabric.kind = "rail_optimized";
  t.fabric.nodes_per_leaf = nodes_per_leaf;
  return t;
}

/// The kinds of the vertices a path enters, in order.
std::vector<VertexKind> kinds_along(const Cluster& c, const std::vector<engine::LinkId>& path) {
  std::vector<VertexKind> out;
  for (auto link : path) out.push_back(c.vertex(c.link_ends(link).second).kind);
  return out;
}

/// The names of the leaves a path enters, in order.
std::vector<std::string> leaves_along(const Cluster& c, const std::vector<engine::LinkId>& path) {
  std::vector<std::string> out;
  for (auto link : path) {
    const auto& v = c.vertex(c.link_ends(link).second);
    if (v.kind == VertexKind::leaf) out.push_back(v.name);
  }
  return out;
}

long spine_visits(const Cluster& c, const std::vector<engine::LinkId>& path) {
  const auto kinds = kinds_along(c, path);
  return std::count(kinds.begin(), kinds.end(), VertexKind::spine);
}

}  // namespace

TEST_CASE("a rail fabric of 4 DGX H100 nodes on 2-node rail leaves counts out by hand") {
  World w;
  Cluster c(dgx_h100_rails(2), 4, w.net);
  // 8 rails × ⌈4 / 2⌉ leaves; a leaf's uplink is 2 NICs × 47 GB/s → 2 spines of 47 GB/s links.
  CHECK(c.leaves() == 16);
  CHECK(c.spines() == 2);
  CHECK(c.vertex_count() == 4u * (1 + 8 + 8 + 8) + 16 + 2);
  // Per node: 8 × (NVLink up/down + GPU↔PCIe + PCIe↔NIC + NIC↔leaf); per leaf: 2 spines × 2.
  CHECK(c.edge_count() == 4u * 8 * 2 * 4 + 16u * 2 * 2);
  CHECK(w.net.link_count() == c.edge_count());
  std::map<VertexKind, int> kinds;
  for (std::size_t v = 0; v < c.vertex_count(); ++v) ++kinds[c.vertex(v).kind];
  CHECK(kinds[VertexKind::leaf] == 16);
  CHECK(kinds[VertexKind::spine] == 2);
  CHECK(c.leaf_of(3) == 3 * 2);
  CHECK(c.leaf_of(3 * 8 + 5) == 5 * 2 + 1);
  CHECK(c.vertex(c.link_ends(c.route(3 * 8 + 5, 5)[2]).second).name == "rail5/leaf1");
  const auto path = c.route(0, 2 * 8 + 1);
  REQUIRE(path.size() == 8);
  CHECK(w.net.link_bandwidth(path[3]) == Approx(47 * GBps));
}

TEST_CASE("a two-GPU rail fabric counts out by hand") {
  World w;
  auto spec = dgx_h100_rails(2);
  spec.node.gpus = 2;
  spec.node.nics = 2;
  Cluster c(spec, 3, w.net);
  // 2 rails × ⌈3 / 2⌉ leaves; uplink 2 × 47 GB/s → 2 spines.
  CHECK(c.leaves() == 4);
  CHECK(c.spines() == 2);
  CHECK(c.vertex_count() == 3u * (1 + 2 + 2 + 2) + 4 + 2);
  CHECK(c.edge_count() == 3u * 2 * 2 * 4 + 4u * 2 * 2);
}

TEST_CASE("same-rail traffic under one rail leaf never touches a spine") {
  World w;
  Cluster c(dgx_h100_rails(2), 4, w.net);
  for (int g = 0; g < 8; ++g) {
    INFO(g);
    const auto path = c.route(g, 8 + g, 7);
    CHECK(path.size() == 6);
    CHECK(is_path(c, path, g, 8 + g));
    CHECK(spine_visits(c, path) == 0);
    CHECK(leaves_along(c, path) == std::vector<std::string>{"rail" + std::to_string(g) + "/leaf0"});
    CHECK_FALSE(c.crosses_spine(g, 8 + g));
  }
}

TEST_CASE("same-rail traffic across rail leaves goes through exactly one spine, chosen by ECMP") {
  World w;
  Cluster c(dgx_h100_rails(2), 4, w.net);
  const int src = 3;
  const int dst = 2 * 8 + 3;
  CHECK(c.crosses_spine(src, dst));
  std::set<std::size_t> spines_used;
  for (std::uint64_t h = 0; h < 32; ++h) {
    const auto path = c.route(src, dst, h);
    REQUIRE(path.size() == 8);
    CHECK(is_path(c, path, src, dst));
    CHECK(spine_visits(c, path) == 1);
    CHECK(leaves_along(c, path) == std::vector<std::string>{"rail3/leaf0", "rail3/leaf1"});
    spines_used.insert(c.link_ends(path[3]).second);
    CHECK(c.route(src, dst, h) == path);
  }
  CHECK(spines_used.size() == 2);
}

TEST_CASE("cross-rail traffic goes through a spine even between nodes under the same leaves") {
  World w;
  Cluster c(dgx_h100_rails(2), 4, w.net);
  const auto path = c.route(0, 8 + 5, 1);
  REQUIRE(path.size() == 8);
  CHECK(is_path(c, path, 0, 8 + 5));
  CHECK(kinds_along(c, path) == std::vector<VertexKind>{VertexKind::pcie_switch, VertexKind::nic, VertexKind::leaf,
                                                        VertexKind::spine, VertexKind::leaf, VertexKind::nic,
                                                        VertexKind::pcie_switch, VertexKind::gpu});
  CHECK(leaves_along(c, path) == std::vector<std::string>{"rail0/leaf0", "rail5/leaf0"});
  CHECK(c.crosses_spine(0, 8 + 5));
  // Inside a node, GPUs of different rails still talk over NVLink.
  CHECK(c.route(0, 5).size() == 2);
  CHECK_FALSE(c.crosses_spine(0, 5));
}

TEST_CASE("every rail route on 64 nodes is a path in the graph and a shortest one") {
  World w;
  Cluster c(dgx_h100_rails(32), 64, w.net);
  CHECK(c.leaves() == 8 * 2);
  CHECK(c.spines() == 32);  // 32 NICs × 47 GB/s up per leaf over 47 GB/s links
  for (int src : {0, 7, 8 * 31 + 2, 8 * 40 + 6}) {
    for (int dst = 1; dst < c.gpus(); dst += 37) {
      if (dst == src) continue;
      INFO(src << " -> " << dst);
      const auto path = c.route(src, dst, static_cast<std::uint64_t>(src * 131 + dst));
      CHECK(is_path(c, path, src, dst));
      CHECK(static_cast<int>(path.size()) == c.hop_distance(src, dst));
    }
  }
}

TEST_CASE("a rail fabric needs one NIC per GPU") {
  World w;
  auto spec = dgx_h100_rails(32);
  spec.node.gpus_per_pcie_switch = 2;
  spec.node.nics = 4;  // one per PCIe switch, but two GPUs share each
  try {
    Cluster c(spec, 2, w.net);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    std::set<std::string> keys;
    for (const auto& d : e.diagnostics()) keys.insert(d.key);
    CHECK(keys == std::set<std::string>{"node.nics"});
  }
  spec = dgx_h100_rails(32);
  spec.fabric.leaf_spine.bandwidth = 0;  // several rails need spines, so their links need a rate
  CHECK_THROWS_AS(Cluster(spec, 1, w.net), InputError);
  spec = dgx_h100_rails(32);
  spec.fabric.kind = "torus";
  CHECK_THROWS_AS(Cluster(spec, 1, w.net), InputError);
}

TEST_CASE("the shipped rail topologies build 128 and 2,048 nodes and route without tables") {
  {
    const auto spec = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + "/topologies/dgx-h100-rail-1k.yaml");
    CHECK(spec.fabric.kind == "rail_optimized");
    World w;
    Cluster c(spec, 128, w.net);
    CHECK(c.gpus() == 1024);
    CHECK(c.leaves() == 8 * 4);
    CHECK(c.spines() == 32);
    for (int dst = 1; dst < 1024; dst += 61) CHECK(static_cast<int>(c.route(0, dst).size()) == c.hop_distance(0, dst));
  }
  const auto spec = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + "/topologies/dgx-h100-rail-16k.yaml");
  World w;
  Cluster c(spec, 2048, w.net);
  CHECK(c.gpus() == 16384);
  CHECK(c.leaves() == 8 * 64);
  CHECK(c.spines() == 32);
  // The H100 NVSwitch reduces (node.nvswitch_reduce_bandwidth): one reducer vertex per node
  // and two port links per GPU on top of the nodes, leaves and spines.
  CHECK(c.vertex_count() == 2048u * 25 + 512 + 32 + 2048);
  CHECK(c.edge_count() == 2048u * 64 + 512u * 32 * 2 + 2048u * 8 * 2);
  const std::pair<int, int> pairs[] = {{0, 8}, {0, 16383}, {5, 2047 * 8 + 5}, {3, 31 * 8 + 3}, {3, 32 * 8 + 3}};
  for (const auto& [src, dst] : pairs) {
    INFO(src << " -> " << dst);
    const auto path = c.route(src, dst, 9);
    CHECK(is_path(c, path, src, dst));
    CHECK(path.size() == (c.crosses_spine(src, dst) ? 8u : 6u));
  }
  CHECK_FALSE(c.crosses_spine(3, 31 * 8 + 3));
  CHECK(c.crosses_spine(3, 32 * 8 + 3));
}
