// Tests of the NVSwitch's in-network reduction ports and of the spine-count range check.
#include <catch2/catch.hpp>

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

TEST_CASE("a reducing NVSwitch adds one reducer per node and two port links per GPU") {
  auto spec = test::dgx_h100();
  spec.node.nvswitch_reduce_bandwidth = 306e9;  // dgx-h100-leaf-spine.yaml (NCCL nvlsEfficiency 0.85 × 360 GB/s)
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  Cluster c(spec, 2, net);
  CHECK(c.switch_reduces());
  // 2 nodes × (NVSwitch + 8 GPUs + 8 PCIe + 8 NICs) + 1 leaf + 2 reducers.
  CHECK(c.vertex_count() == 2u * 25 + 1 + 2);
  CHECK(c.edge_count() == 2u * (8 * 8) + 2u * 8 * 2);
  CHECK(net.link_count() == c.edge_count());
  const auto up = c.switch_route(11, true), down = c.switch_route(11, false);
  REQUIRE(up.size() == 2);
  REQUIRE(down.size() == 2);
  CHECK(c.link_ends(up[0]).first == c.gpu_vertex(11));
  CHECK(c.vertex(c.link_ends(up[1]).second).kind == VertexKind::switch_reducer);
  CHECK(c.vertex(c.link_ends(up[1]).second).name == "node1/nvls");
  CHECK(net.link_name(up[1]) == "node1/nvswitch->node1/nvls[gpu3]");
  CHECK(net.link_bandwidth(up[1]) == 306e9);
  CHECK(c.link_ends(down[1]).second == c.gpu_vertex(11));
  // Without the key the cluster is as before and has no reducer.
  engine::FlowNetwork net2(sim);
  Cluster plain(test::dgx_h100(), 2, net2);
  CHECK_FALSE(plain.switch_reduces());
  CHECK(plain.vertex_count() == 2u * 25 + 1);
  CHECK_THROWS_AS(plain.switch_route(0, true), std::logic_error);
}

TEST_CASE("the shipped H100 topologies reduce in the switch, the A100 one does not") {
  for (const char* file : {"/topologies/dgx-h100-leaf-spine.yaml", "/topologies/dgx-h100-rail-1k.yaml",
                           "/topologies/dgx-h100-rail-16k.yaml"}) {
    const auto spec = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + file);
    CHECK(spec.node.nvswitch_reduce_bandwidth == 306e9);
  }
  const auto a100 = config::load_topology(std::string(IRONLAW_SOURCE_DIR) + "/topologies/dgx-a100-leaf-spine.yaml");
  CHECK(a100.node.nvswitch_reduce_bandwidth == 0);
}

TEST_CASE("a spine tier too large to build is refused naming the key, never wrapped around") {
  // 1 B/s leaf-spine links would need 32 × 47e9 spines per leaf (2 leaves of 4 nodes): the
  // count does not fit an int; before the check it wrapped and built a fast fabric.
  auto spec = test::dgx_h100();
  spec.fabric.leaf_spine.bandwidth = 1;
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  try {
    Cluster c(spec, 8, net);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("fabric.leaf_spine.bandwidth") != std::string::npos);
  }
  spec = test::dgx_h100();
  spec.fabric.spines = 1 << 30;
  CHECK_THROWS_AS(Cluster(spec, 8, net), InputError);
  // A slow but buildable spine tier is built with the spines it needs: 32 · 47 GB/s uplink per
  // leaf over 4.7 GB/s links = 320 spines.
  spec = test::dgx_h100();
  spec.fabric.leaf_spine.bandwidth = 4.7e9;
  Cluster slow(spec, 8, net);
  CHECK(slow.spines() == 320);
}
