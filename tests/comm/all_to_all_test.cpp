// The all-to-all across nodes: rail relay through the same-index GPU (DeepEP), and identical
// messages merged into weighted flow groups, checked against one flow per message and leg.
// Topology numbers: support/dgx_h100.hpp (DGX H100, 4 nodes per leaf).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/all_to_all.hpp"
#include "config/load.hpp"
#include "comm_world.hpp"

using namespace ironlaw;
using comm::Algorithm;
using comm::CollectiveOp;
using test::iota;

namespace {

/// Completion [ns] of an all-to-all of `bytes` per rank over `ranks` on `nodes` DGX H100, alone
/// or beside a ring all-reduce of 1 GB over `ring` (empty: alone), and the flow records started.
struct Outcome {
  std::int64_t end_ns = 0;
  std::uint64_t records = 0;
  std::uint64_t flows = 0;
};

Outcome run_all_to_all(const config::TopologySpec& spec, int nodes, const std::vector<int>& ranks, double bytes,
                       bool aggregate, const std::vector<int>& ring = {}) {
  test::CommWorld w(spec, nodes);
  w.comm.set_aggregate_all_to_all(aggregate);
  Time end = Time::max();
  int calls = 0;
  w.comm.start(CollectiveOp::all_to_all, ranks, bytes, Algorithm::automatic, [&] {
    end = w.sim.now();
    ++calls;
  });
  if (!ring.empty()) w.comm.start(CollectiveOp::all_reduce, ring, 1e9, Algorithm::ring, [] {});
  w.sim.run();
  CHECK(calls == 1);
  return {end.count_ns(), w.net.records_started(), w.net.flows_started()};
}

}  // namespace

TEST_CASE("an all-to-all across nodes sends N(N-1)g network and Ng(g-1) NVLink groups, weights summing to every message leg") {
  // 8 nodes × 8 GPUs (DeepSeek-V3's 64-way expert parallelism over 8 nodes).
  const auto spec = test::dgx_h100();
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  hardware::Cluster cluster(spec, 8, net);
  const auto ranks = iota(0, 64);
  const comm::CollectiveCall call(CollectiveOp::all_to_all, ranks, 64e6, cluster, net);
  REQUIRE(comm::all_to_all_relays(call));
  const auto sends = comm::all_to_all_sends(call);
  CHECK(sends.size() == 8 * 7 * 8 + 8 * 8 * 7);  // 896 against 64 × 63 = 4,032 messages
  std::uint64_t network = 0, nvlink = 0;
  for (const auto& s : sends) {
    CHECK(s.bytes == Approx(1e6));
    if (cluster.node_of(s.src) == cluster.node_of(s.dst)) {
      CHECK(s.weight == 8);  // its own message and the 7 it forwards
      nvlink += s.weight;
    } else {
      CHECK(s.src % 8 == s.dst % 8);  // the same-index GPU of the other node
      CHECK(s.weight == 8);           // one message per GPU of the destination node
      network += s.weight;
    }
  }
  CHECK(network == 64u * 56u);       // every inter-node message crosses the network once
  CHECK(nvlink == 64u * 7u + 64u * 49u);  // 7 own in-node messages per GPU, 49 forwarded to it
  const auto unmerged = comm::all_to_all_sends(call, false);
  CHECK(unmerged.size() == network + nvlink);
}

TEST_CASE("one node, one rank per node and uneven nodes keep one direct send per message") {
  const auto spec = test::dgx_h100();
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  hardware::Cluster cluster(spec, 4, net);
  for (const auto& ranks : {iota(0, 8), std::vector<int>{0, 8, 16, 24}, std::vector<int>{0, 1, 8}}) {
    const comm::CollectiveCall call(CollectiveOp::all_to_all, ranks, 1e6, cluster, net);
    CHECK_FALSE(comm::all_to_all_relays(call));
    const auto n = ranks.size();
    CHECK(comm::all_to_all_sends(call).size() == n * (n - 1));
  }
}

TEST_CASE("a small relayed all-to-all takes the network leg's closed form") {
  // 2 nodes × 2 GPUs (ranks 0, 1, 8, 9), S = 400 MB per rank, S/n = 1e8 B per message.
  // GPU 0 sends two messages (for GPUs 8 and 9) to GPU 8 over PCIe → NIC → leaf → NIC → PCIe:
  // a group of weight 2 alone on NIC 0's 47 GB/s, 23.5 GB/s each: ⌈1e8 / 23.5e9 s⌉ = 4,255,320 ns,
  // plus the path's 4 × 250 + 2 × 500 + 300 = 2,300 ns. Its NVLink send to GPU 1 (its own
  // message and the one forwarded from GPU 8) runs at once, 180 GB/s each: 555,556 + 1,000 ns.
  // Λ = 8,400, σ = 3,400 before the sends.
  const std::int64_t expected = 8400 + 3400 + 4'255'320 + 2300;
  const std::vector<int> ranks{0, 1, 8, 9};
  CHECK(run_all_to_all(test::dgx_h100(), 2, ranks, 4e8, true).end_ns == expected);
  test::CommWorld w(test::dgx_h100(), 2);
  CHECK(w.comm.predict(CollectiveOp::all_to_all, ranks, 4e8, Algorithm::all_to_all).count_ns() ==
        Approx(expected).epsilon(1e-4));
}

TEST_CASE("aggregated and per-message all-to-alls end within 1 ns, alone and beside a ring, with fewer flow records") {
  // 8 nodes × 8 GPUs on two leaves (4 nodes per leaf): network legs cross the spine. With one
  // and with four queue pairs per connection (ECMP-hashed apart), alone and while a ring
  // all-reduce over GPUs 0–15 shares NVLinks and NICs with it.
  for (int qps : {1, 4}) {
    auto spec = test::dgx_h100();
    spec.comm.flows_per_connection = qps;
    for (bool contended : {false, true}) {
      const std::vector<int> ring = contended ? iota(0, 16) : std::vector<int>{};
      const auto merged = run_all_to_all(spec, 8, iota(0, 64), 64e6, true, ring);
      const auto single = run_all_to_all(spec, 8, iota(0, 64), 64e6, false, ring);
      INFO("queue pairs " << qps << ", contended " << contended);
      CHECK(std::llabs(merged.end_ns - single.end_ns) <= 1);
      CHECK(merged.flows == single.flows);
      // 896 weighted sends against 7,168 message legs (the ring's own records come on top).
      CHECK(merged.records * (contended ? 1 : 4) < single.records);
    }
  }
}

TEST_CASE("a token choosing k of E experts reaches d·(1 − C(E − E/d, k)/C(E, k)) distinct destinations", "[comm][deepep]") {
  // By hand: E = 8, k = 2 over d = 4 GPUs (2 experts each): a GPU is missed by both picks with
  // C(6, 2)/C(8, 2) = 15/28, so 4·13/28 = 13/7 distinct GPUs per token against 2 copies: 13/14.
  // Over d = 2 nodes (4 experts each): C(4, 2)/C(8, 2) = 6/28, 2·22/28 = 11/7 nodes: 11/14.
  CHECK(comm::all_to_all_distinct_share(8, 2, 4) == Approx(13.0 / 14.0));
  CHECK(comm::all_to_all_distinct_share(8, 2, 2) == Approx(11.0 / 14.0));
  // One expert per destination: every pick a destination of its own, nothing to remove.
  CHECK(comm::all_to_all_distinct_share(8, 2, 8) == Approx(1.0));
  // Every pick on one destination: one copy of k.
  CHECK(comm::all_to_all_distinct_share(8, 2, 1) == Approx(0.5));
  // Qwen3 30B-A3B over 2 nodes: 8 of 128 experts, 64 per node: a node is missed with
  // C(64, 8)/C(128, 8) = Π_{i<8} (64 − i)/(128 − i) = 0.003036, so 2·0.996964/8 = 0.24924.
  CHECK(comm::all_to_all_distinct_share(128, 8, 2) == Approx(0.24924).epsilon(1e-4));
  // Not routed (0 targets): every copy stays.
  CHECK(comm::all_to_all_distinct_share(0, 0, 4) == 1.0);
}

TEST_CASE("DeepEP's dispatch sends each token once per GPU and, between nodes, once per node", "[comm][deepep]") {
  // 2 nodes × 2 GPUs (ranks 0, 1, 8, 9), S = 400 MB per rank of token copies (E = 8 experts,
  // top-2: 2 experts per GPU, 4 per node), S/n = 1e8 B per message before deduplication.
  // Per destination GPU 1e8·13/14; per remote node's network message 1e8·11/14 (test above).
  const auto spec = test::dgx_h100();
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  hardware::Cluster cluster(spec, 2, net);
  const std::vector<int> ranks{0, 1, 8, 9};
  comm::CollectiveCall call(CollectiveOp::all_to_all, ranks, 4e8, cluster, net);
  call.route_targets = 8;
  call.route_picks = 2;
  REQUIRE(comm::all_to_all_relays(call));
  for (const auto& s : comm::all_to_all_sends(call)) {
    INFO(s.src << " -> " << s.dst);
    if (cluster.node_of(s.src) == cluster.node_of(s.dst)) {
      CHECK(s.bytes == Approx(1e8 * 13.0 / 14.0));
    } else {
      CHECK(s.bytes == Approx(1e8 * 11.0 / 14.0));
    }
  }
  // The relayed network leg binds as in the closed form above: GPU 0's group of weight 2 on NIC
  // 0's 47 GB/s, 23.5 GB/s each: ⌈1e8·11/14 / 23.5e9 s⌉ = 3,343,466 ns, plus the path's 2,300,
  // Λ = 8,400 and σ = 3,400 (its NVLink leg, 1e8·13/14 at 180 GB/s, 515,873 ns, ends first).
  const std::int64_t expected = 8400 + 3400 + 3'343'466 + 2300;
  test::CommWorld w(spec, 2);
  w.comm.set_all_to_all_routing(8, 2);
  Time end = Time::max();
  w.comm.start(CollectiveOp::all_to_all, ranks, 4e8, Algorithm::automatic, [&] { end = w.sim.now(); });
  w.sim.run();
  CHECK(end.count_ns() == expected);
  CHECK(w.comm.predict(CollectiveOp::all_to_all, ranks, 4e8, Algorithm::all_to_all).count_ns() ==
        Approx(expected).epsilon(1e-4));
}

TEST_CASE("parallel.moe_dispatcher deepep is refused without experts or expert parallelism", "[config][deepep]") {
  const std::string dense = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_THROWS_WITH(config::load_scenario(dense, {"parallel.moe_dispatcher=deepep"}),
                    Catch::Contains("parallel.moe_dispatcher") && Catch::Contains("needs a MoE model"));
  const std::string moe = IRONLAW_SOURCE_DIR "/scenarios/validation/megatron-moe/mixtral-8x7b-64gpu.yaml";
  CHECK_NOTHROW(config::load_scenario(moe, {"parallel.moe_dispatcher=deepep"}));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"parallel.moe_dispatcher=deepep", "parallel.ep=1"}),
                    Catch::Contains("parallel.moe_dispatcher") && Catch::Contains("ep 1"));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"parallel.moe_dispatcher=nccl"}), Catch::Contains("parallel.moe_dispatcher"));
}
