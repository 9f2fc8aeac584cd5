// A third switch tier above the spines: pods of nodes at full bisection, joined by core
// (aggregation) switches with their own oversubscription, as in Llama 3's 24K-GPU cluster.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

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

/// One GPU and one NIC of bandwidth B per node, one node per leaf, pods of 7 nodes whose
/// uplinks to the core are 1:7 oversubscribed. Every link runs at B; no latency anywhere.
config::TopologySpec seven_node_pods() {
  config::TopologySpec t;
  t.name = "three-tier test";
  t.node.gpus = 1;
  t.node.gpus_per_pcie_switch = 1;
  t.node.nics = 1;
  t.node.pcie = {1000 * GBps, Time::zero()};
  t.node.nic = {10 * GBps, Time::zero()};
  t.fabric.nodes_per_leaf = 1;
  t.fabric.leaf_spine = {10 * GBps, Time::zero()};
  t.fabric.pod.nodes = 7;
  t.fabric.pod.oversubscription = 7;
  t.fabric.pod.spine_core = {10 * GBps, Time::zero()};
  return t;
}

/// Seconds until the last of `pairs` (src, dst GPU) flows of `bytes` each, all started at once,
/// arrives.
double all_done(const config::TopologySpec& spec, int nodes, const std::vector<std::pair<int, int>>& pairs, double bytes) {
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  Cluster c(spec, nodes, net);
  std::vector<std::vector<engine::LinkId>> paths;
  for (const auto& [src, dst] : pairs) paths.push_back(c.route(src, dst));
  for (const auto& p : paths) net.start_flow(p, bytes, [](engine::FlowId) {});
  sim.run();
  return sim.now().seconds();
}

}  // namespace

TEST_CASE("two 7-node pods count out by hand: one spine per pod, one core, 1:7 above the spines",
          "[hardware][three-tier]") {
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  Cluster c(seven_node_pods(), 14, net);
  // A leaf's uplink is its one 10 GB/s NIC port: one 10 GB/s spine per pod. The spine's 7
  // downlinks carry 70 GB/s; 1:7 leaves 10 GB/s up to the core: one core link of 10 GB/s.
  CHECK(c.pods() == 2);
  CHECK(c.leaves() == 14);
  CHECK(c.spines() == 2);
  CHECK(c.cores() == 1);
  const auto in_pod = c.route(0, 6);
  const auto across = c.route(0, 7);
  // GPU → PCIe → NIC → leaf → spine → leaf → NIC → PCIe → GPU; across pods two more hops.
  CHECK(in_pod.size() == 8u);
  REQUIRE(across.size() == 10u);
  CHECK(c.vertex(c.link_ends(across[4]).second).kind == VertexKind::core);
  CHECK(net.link_name(across[4]) == "pod0/spine0->core0");
  CHECK(net.link_name(across[5]) == "core0->pod1/spine0");
  CHECK(net.link_bandwidth(across[4]) == Approx(10 * GBps));
  CHECK(c.hop_distance(0, 7) == static_cast<int>(across.size()));
}

TEST_CASE("under load, cross-pod bandwidth is 1/7 of in-pod bandwidth at 1:7 oversubscription",
          "[hardware][three-tier]") {
  // Hand calculation. In pod: 7 flows i → (i+1) mod 7, each alone on its NIC, leaf and spine
  // ports (10 GB/s): 1 GB takes 0.1 s. Across pods: 7 flows i → 7 + i all cross pod 0's one
  // 10 GB/s core uplink: 10/7 GB/s each, 1 GB takes 0.7 s — a seventh of the in-pod rate.
  const auto spec = seven_node_pods();
  std::vector<std::pair<int, int>> ring, cross;
  for (int i = 0; i < 7; ++i) {
    ring.emplace_back(i, (i + 1) % 7);
    cross.emplace_back(i, 7 + i);
  }
  const double t_in = all_done(spec, 14, ring, 1e9);
  const double t_cross = all_done(spec, 14, cross, 1e9);
  CHECK(t_in == Approx(0.1).epsilon(1e-6));
  CHECK(t_cross == Approx(0.7).epsilon(1e-6));
  CHECK(t_in / t_cross == Approx(1.0 / 7).epsilon(1e-6));
}

TEST_CASE("a cluster within one pod is the two-level fabric it was before", "[hardware][three-tier]") {
  auto spec = test::dgx_h100();
  spec.fabric.pod.nodes = 16;
  spec.fabric.pod.oversubscription = 7;
  spec.fabric.pod.spine_core = {47 * GBps, Time::ns(100)};
  engine::Simulator sim;
  engine::FlowNetwork with_pods(sim), without(sim);
  Cluster a(spec, 16, with_pods);
  Cluster b(test::dgx_h100(), 16, without);
  CHECK(a.pods() == 1);
  CHECK(a.cores() == 0);
  CHECK(a.vertex_count() == b.vertex_count());
  REQUIRE(with_pods.link_count() == without.link_count());
  for (engine::LinkId l = 0; l < with_pods.link_count(); ++l) {
    CHECK(with_pods.link_name(l) == without.link_name(l));
    CHECK(with_pods.link_bandwidth(l) == without.link_bandwidth(l));
  }
  for (int dst : {1, 9, 127}) CHECK(a.route(0, dst, 5) == b.route(0, dst, 5));
}

TEST_CASE("ECMP spreads cross-pod traffic over the spines and the cores of a plane", "[hardware][three-tier]") {
  auto spec = test::dgx_h100();
  spec.fabric.pod.nodes = 8;  // 2 leaves of 4 nodes per pod
  spec.fabric.pod.oversubscription = 2;
  spec.fabric.pod.spine_core = {47 * GBps, Time::ns(100)};
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  Cluster c(spec, 32, net);
  // Leaf uplink 4 × 8 × 47 GB/s = 32 spine links per pod; a spine's 2 leaf ports carry 94 GB/s,
  // 1:2 leaves 47 GB/s up: one core per plane, 32 planes.
  CHECK(c.pods() == 4);
  CHECK(c.spines() == 4 * 32);
  CHECK(c.cores() == 32);
  std::set<std::string> cores;
  for (std::uint64_t h = 0; h < 64; ++h) {
    const auto path = c.route(0, 255, h);
    REQUIRE(path.size() == 10u);
    cores.insert(c.vertex(c.link_ends(path[4]).second).name);
    // The spine of the destination pod is the same plane as the source's.
    const auto up = c.vertex(c.link_ends(path[3]).second).name;
    const auto down = c.vertex(c.link_ends(path[6]).first).name;
    CHECK(up.substr(up.find('/')) == down.substr(down.find('/')));
  }
  CHECK(cores.size() > 16);
}

TEST_CASE("a pod that splits a leaf, or a core tier without links, is refused naming the key", "[hardware][three-tier]") {
  auto spec = test::dgx_h100();
  spec.fabric.pod.nodes = 6;  // leaves of 4 nodes
  spec.fabric.pod.oversubscription = 1;
  spec.fabric.pod.spine_core = {47 * GBps, Time::zero()};
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  try {
    Cluster c(spec, 12, net);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("fabric.pod.nodes") != std::string::npos);
  }
  spec.fabric.pod.nodes = 8;
  spec.fabric.pod.spine_core.bandwidth = 0;
  CHECK_THROWS_AS(Cluster(spec, 16, net), InputError);
}

TEST_CASE("Llama 3's 24K-GPU topology: pods of 3,072 GPUs, 1:7 between them", "[hardware][three-tier]") {
  const auto spec = config::load_topology(IRONLAW_SOURCE_DIR "/topologies/llama3-24k-3tier.yaml");
  CHECK(spec.node.gpus * spec.fabric.pod.nodes == 3072);
  CHECK(spec.fabric.pod.oversubscription == 7);
  CHECK(spec.node.gpus * spec.fabric.nodes_per_leaf == 16);
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  Cluster c(spec, 3072, net);
  CHECK(c.gpus() == 24576);
  CHECK(c.pods() == 8);
  // Per pod: 192 ToRs of 16 × 47 GB/s = 16 spines; a spine's 192 ports carry 9,024 GB/s, 1:7
  // leaves 1,289 GB/s up: ⌈1289 / 47⌉ = 28 cores per plane, 16 planes.
  CHECK(c.spines() == 8 * 16);
  CHECK(c.cores() == 16 * 28);
  double up = 0, down = 0;
  for (engine::LinkId l = 0; l < net.link_count(); ++l) {
    const auto [from, to] = c.link_ends(l);
    if (c.vertex(from).name == "pod0/spine0" && c.vertex(to).kind == VertexKind::core) up += net.link_bandwidth(l);
    if (c.vertex(from).name == "pod0/spine0" && c.vertex(to).kind == VertexKind::leaf) down += net.link_bandwidth(l);
  }
  CHECK(up == Approx(down / 7).epsilon(1e-9));
}

TEST_CASE("pod keys in a scenario are read with their bounds", "[hardware][three-tier][config]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  const auto s = config::load_scenario(scenario, {"cluster.topology=../topologies/llama3-24k-3tier.yaml"});
  CHECK(s.topology.fabric.pod.nodes == 384);
  CHECK(s.topology.fabric.pod.spine_core.bandwidth == Approx(47e9));
  try {
    config::load_scenario(scenario, {"cluster.topology=../topologies/llama3-24k-3tier.yaml",
                                     "cluster.topology.fabric.pod.oversubscription=0.5"});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    REQUIRE_FALSE(e.diagnostics().empty());
    CHECK(e.diagnostics()[0].key == "cluster.topology.fabric.pod.oversubscription");
  }
}
