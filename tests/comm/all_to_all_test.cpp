// The all-to-all across nodes: rail relay through the same-index GPU (DeepEP), and identical
// messages merged into weighted flow groups, checked against one flow per message and leg.
// Topology numbers: support/dgx_h100.hpp (DGX H100, 4 nodes per leaf).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/all_to_all.hpp"
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
