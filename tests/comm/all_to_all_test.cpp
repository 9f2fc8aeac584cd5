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

TEST_CASE("the dispatcher kernels' own rates bound a relayed all-to-all: network legs at rdma_rate, deliveries in the node at forward_rate", "[comm][deepep]") {
  // The routed all-to-all of the test above (2 nodes × 2 GPUs, S = 400 MB, E = 8, top-2):
  // per destination GPU 1e8·13/14 B, per remote node's network message 1e8·11/14 B.
  const std::vector<int> ranks{0, 1, 8, 9};
  auto run = [&](double rdma, double forward) {
    test::CommWorld w(test::dgx_h100(), 2);
    w.comm.set_all_to_all_routing(8, 2);
    w.comm.set_all_to_all_kernels(rdma, forward);
    Time end = Time::max();
    w.comm.start(CollectiveOp::all_to_all, ranks, 4e8, Algorithm::automatic, [&] { end = w.sim.now(); });
    w.sim.run();
    const Time predicted = w.comm.predict(CollectiveOp::all_to_all, ranks, 4e8, Algorithm::all_to_all);
    return std::pair{end.count_ns(), predicted.count_ns()};
  };
  SECTION("rdma_rate below the NIC's 47 GB/s binds the network legs") {
    // GPU 0's network group of weight 2 crosses its 20 GB/s kernel link before NIC 0: 10 GB/s
    // each, ⌈1e8·11/14 / 10e9 s⌉ = 7,857,143 ns, plus the path's 2,300, Λ = 8,400, σ = 3,400.
    const std::int64_t expected = 8400 + 3400 + 7'857'143 + 2300;
    const auto [end, predicted] = run(20e9, 0);
    CHECK(std::llabs(end - expected) <= 1);
    CHECK(predicted == Approx(expected).epsilon(1e-4));
  }
  SECTION("forward_rate binds what a GPU delivers in its node, to itself as well") {
    // GPU 0 delivers 2 messages to GPU 1 (its own and GPU 8's, relayed) and 2 to itself, each
    // 1e8·13/14 B, all 4 through its 20 GB/s kernel link: 5 GB/s each (the NVLink would give the
    // two to GPU 1 180 GB/s each), ⌈1e8·13/14 / 5e9 s⌉ = 18,571,429 ns, plus the NVLink path's
    // 1,000 for those two; the network legs (3,343,466 ns, test above) end long before.
    const std::int64_t expected = 8400 + 3400 + 18'571'429 + 1000;
    const auto [end, predicted] = run(0, 20e9);
    CHECK(std::llabs(end - expected) <= 1);
    // predict() takes the longest path latency of the call (the network's 2,300 ns).
    CHECK(predicted == Approx(expected).epsilon(1e-4));
  }
  SECTION("rates above the links' change nothing") {
    const std::int64_t expected = 8400 + 3400 + 3'343'466 + 2300;  // the test above
    CHECK(run(1e12, 1e12).first == expected);
    CHECK(run(0, 0).first == expected);
  }
}

TEST_CASE("HybridEP's FP8 dispatch on 2, 4 and 8 DGX H100 from the topology's kernel rates, measured from its BF16 runs", "[comm][deepep]") {
  // DeepEP branch hybrid-ep, docs/README_Hybrid-EP.md, H100 Platform, kernel only, 16 SMs: FP8
  // dispatch 68.48, 55.35, 46.52 GB/s at 16, 32, 64 ranks (4,096 tokens per rank, hidden 7,168,
  // top-8 of 8 experts per rank, uniform routing), counted once per node a token reaches, its
  // own included; bytes per token 7,168 × 2 × (1 + 4/128)/2 (its test's fp8_factor). The
  // topology's rates were derived from the BF16 dispatch and combine only (topologies/
  // dgx-h100-leaf-spine.yaml), so these three are a check: within 8 % (the FP8 tokens, half the
  // size, reach 4–7 % less of the NIC in the benchmark than the BF16 ones the rate is from).
  const auto topology = config::load_topology(IRONLAW_SOURCE_DIR "/topologies/dgx-h100-leaf-spine.yaml");
  REQUIRE(topology.comm.hybridep.rdma_rate == Approx(43.4e9));
  REQUIRE(topology.comm.hybridep.forward_rate == Approx(222e9));
  const double token = 7168.0 * 2 * (1 + 4.0 / 128) / 2;
  const std::pair<int, double> published[] = {{2, 68.48}, {4, 55.35}, {8, 46.52}};
  for (const auto& [nodes, gbs] : published) {
    const int n = 8 * nodes;
    const int experts = 8 * n;
    test::CommWorld w(topology, nodes);
    w.comm.set_all_to_all_routing(experts, 8);
    w.comm.set_all_to_all_kernels(topology.comm.hybridep.rdma_rate, topology.comm.hybridep.forward_rate);
    Time end = Time::max();
    w.comm.start(CollectiveOp::all_to_all, iota(0, n), 4096.0 * 8 * token, Algorithm::automatic,
                 [&] { end = w.sim.now(); });
    w.sim.run();
    // The benchmark's count: tokens × the nodes a token reaches, N·(1 − C(E − E/N, 8)/C(E, 8)),
    // which is all_to_all_distinct_share × its 8 picks.
    const double counted = 4096.0 * comm::all_to_all_distinct_share(experts, 8, nodes) * 8 * token;
    INFO(nodes << " nodes: " << counted / end.seconds() / 1e9 << " GB/s simulated against " << gbs);
    CHECK(counted / end.seconds() / 1e9 == Approx(gbs).epsilon(0.08));
  }
}

TEST_CASE("DeepEP's 2-node dispatch on Hopper from the rate measured on H800, against a 2-node H200 run", "[comm][deepep]") {
  // The DGX H100 files' deepep rates come from DeepEP's H800 table (topologies/
  // dgx-h800-deepseek.yaml); a user's 2-node H200 run (the H100's SMs and NVLink; deepseek-ai/
  // DeepEP issue #493, 24 SMs, tests/test_internode.py: 4,096 tokens per rank, hidden 7,168,
  // 8 of 256 experts, uniform at 2 nodes) measured 133.78 GB/s for a BF16 dispatch and 145.16 for
  // a combine, counted as the bytes a GPU receives, its own included (recv_x.numel() × 2 / t).
  // By symmetry that is what each GPU delivers in its node: 2 × 4,096 × 8 × P(GPU reached) × 14,336
  // B per call. The simulated BF16 call: within 6 % of both (their mean 139.2, the rate 140.7).
  const auto topology = config::load_topology(IRONLAW_SOURCE_DIR "/topologies/dgx-h100-leaf-spine.yaml");
  REQUIRE(topology.comm.deepep.forward_rate == Approx(140.7e9));
  test::CommWorld w(topology, 2);
  w.comm.set_all_to_all_routing(256, 8);
  w.comm.set_all_to_all_kernels(topology.comm.deepep.rdma_rate, topology.comm.deepep.forward_rate);
  Time end = Time::max();
  const double token = 7168.0 * 2;
  w.comm.start(CollectiveOp::all_to_all, iota(0, 16), 4096.0 * 8 * token, Algorithm::automatic, [&] { end = w.sim.now(); });
  w.sim.run();
  // P(GPU reached) = 1 − C(240, 8)/C(256, 8): all_to_all_distinct_share × 8 picks / 16 GPUs.
  const double p_gpu = comm::all_to_all_distinct_share(256, 8, 16) * 8 / 16;
  const double delivered = 2 * 4096.0 * 8 * p_gpu * token;
  const double gbs = delivered / end.seconds() / 1e9;
  INFO(gbs << " GB/s delivered per GPU");
  CHECK(gbs == Approx(133.78).epsilon(0.06));
  CHECK(gbs == Approx(145.16).epsilon(0.06));
}

TEST_CASE("parallel.moe_dispatcher deepep and hybridep are refused without experts or expert parallelism", "[config][deepep]") {
  const std::string dense = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_THROWS_WITH(config::load_scenario(dense, {"parallel.moe_dispatcher=deepep"}),
                    Catch::Contains("parallel.moe_dispatcher") && Catch::Contains("needs a MoE model"));
  const std::string moe = IRONLAW_SOURCE_DIR "/scenarios/validation/megatron-moe/mixtral-8x7b-64gpu.yaml";
  CHECK_NOTHROW(config::load_scenario(moe, {"parallel.moe_dispatcher=deepep"}));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"parallel.moe_dispatcher=deepep", "parallel.ep=1"}),
                    Catch::Contains("parallel.moe_dispatcher") && Catch::Contains("ep 1"));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"parallel.moe_dispatcher=nccl"}), Catch::Contains("parallel.moe_dispatcher"));
  CHECK_NOTHROW(config::load_scenario(moe, {"parallel.moe_dispatcher=hybridep"}));
  CHECK_THROWS_WITH(config::load_scenario(dense, {"parallel.moe_dispatcher=hybridep"}),
                    Catch::Contains("hybridep moves the tokens") && Catch::Contains("needs a MoE model"));
}
