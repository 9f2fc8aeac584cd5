// Tests of the algorithm registry, the in-switch (NVLS) all-reduce and the fluid ring model.
// Specs are built in C++ with the DGX H100 numbers of topologies/dgx-h100-leaf-spine.yaml
// (sources there), plus the NVSwitch reduction rate of that file.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/collective.hpp"
#include "comm_world.hpp"

using namespace ironlaw;
using comm::Algorithm;
using comm::CollectiveOp;

using test::CommWorld;
using test::dgx_h100_nvls;
using test::GiB;
using test::iota;
using World = CommWorld;

TEST_CASE("the registry holds each algorithm once, and names round-trip") {
  std::set<Algorithm> seen;
  for (const auto* unit : comm::algorithm_registry()) {
    CHECK(seen.insert(unit->id()).second);
    CHECK(&comm::algorithm_unit(unit->id()) == unit);
    CHECK(comm::parse_algorithm(comm::algorithm_name(unit->id())) == unit->id());
  }
  CHECK(seen == std::set<Algorithm>{Algorithm::ring, Algorithm::hierarchical, Algorithm::tree, Algorithm::nvls,
                                    Algorithm::all_to_all});
  CHECK(comm::parse_algorithm("auto") == Algorithm::automatic);
  CHECK_THROWS_AS(comm::parse_algorithm("sharp"), std::invalid_argument);
  CHECK_THROWS_AS(comm::algorithm_unit(Algorithm::automatic), std::invalid_argument);
}

TEST_CASE("which algorithms apply follows the ranks' placement and the switch") {
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  hardware::Cluster cluster(dgx_h100_nvls(), 2, net);
  const auto one_node = iota(0, 8), two_nodes = iota(0, 16), ragged = std::vector<int>{0, 1, 8};
  auto applies = [&](Algorithm a, CollectiveOp op, const std::vector<int>& ranks) {
    return comm::algorithm_unit(a).applies(comm::CollectiveCall(op, ranks, 1e6, cluster, net));
  };
  CHECK(applies(Algorithm::nvls, CollectiveOp::all_reduce, one_node));
  CHECK_FALSE(applies(Algorithm::nvls, CollectiveOp::all_reduce, two_nodes));  // NVLS_TREE: not modelled
  // NCCL runs NVLS for reduce-scatter and all-gather too (nvls_rs_ag_test.cpp), not all-to-all.
  CHECK(applies(Algorithm::nvls, CollectiveOp::all_gather, one_node));
  CHECK_FALSE(applies(Algorithm::nvls, CollectiveOp::all_to_all, one_node));
  CHECK(applies(Algorithm::hierarchical, CollectiveOp::all_reduce, two_nodes));
  CHECK_FALSE(applies(Algorithm::hierarchical, CollectiveOp::all_reduce, ragged));
  CHECK_FALSE(applies(Algorithm::hierarchical, CollectiveOp::all_reduce, one_node));
  CHECK(applies(Algorithm::tree, CollectiveOp::all_reduce, ragged));
  CHECK_FALSE(applies(Algorithm::tree, CollectiveOp::reduce_scatter, two_nodes));
  CHECK(applies(Algorithm::all_to_all, CollectiveOp::all_to_all, two_nodes));
  CHECK_FALSE(applies(Algorithm::ring, CollectiveOp::all_to_all, two_nodes));
  // A switch without reduction (DGX A100's second-generation NVSwitch) has no NVLS.
  engine::FlowNetwork net2(sim);
  hardware::Cluster plain(test::dgx_h100(), 1, net2);
  CHECK_FALSE(comm::algorithm_unit(Algorithm::nvls).applies(comm::CollectiveCall(CollectiveOp::all_reduce, one_node, 1e6, plain, net2)));
  // Asking for NVLS where it does not apply is refused, never silently replaced.
  World w(dgx_h100_nvls(), 2);
  CHECK_THROWS_AS(w.comm.start(CollectiveOp::all_reduce, two_nodes, 1e6, Algorithm::nvls, [] {}), std::invalid_argument);
  CHECK(w.comm.predict(CollectiveOp::all_reduce, two_nodes, 1e6, Algorithm::nvls) == Time::max());
}

TEST_CASE("automatic picks the registry unit with the lowest prediction") {
  World w(dgx_h100_nvls(), 2);
  for (const auto& ranks : {iota(0, 8), iota(0, 16), std::vector<int>{0, 1, 8}}) {
    for (double bytes : {64e3, 8e6, 1e9}) {
      const comm::CollectiveCall call(CollectiveOp::all_reduce, ranks, bytes, w.cluster, w.net);
      Time best = Time::max();
      for (const auto* unit : comm::algorithm_registry()) {
        if (unit->eligible(call)) best = std::min(best, unit->predict(call));
      }
      const Algorithm chosen = w.comm.choose(CollectiveOp::all_reduce, ranks, bytes);
      CHECK(w.comm.predict(CollectiveOp::all_reduce, ranks, bytes, chosen) == best);
    }
  }
}

TEST_CASE("NVLS all-reduce time is its closed form: (n+1)/n S per GPU each way through the reducer port") {
  // 8 GPUs, S = 1 GiB, 8 channels × 512 KiB = 4 MiB per chunk → k = 256 chunks; per GPU and
  // direction a chunk carries 4 MiB · 9/8 = 4,718,592 B; at min(360, 306) GB/s that drains in
  // 15,420.2 ns → 15,421 ns (whole ns). The first chunk climbs alone, then one chunk per period
  // comes back: Λ + σ + (k + 1) · 15,421 + 2 · 500 ns of NVLink latency (the reducer port adds none).
  const std::int64_t expected = 8400 + 3400 + 257 * 15'421 + 1000;
  World stepped(dgx_h100_nvls(), 1);
  CHECK(stepped.time(CollectiveOp::all_reduce, iota(0, 8), GiB, Algorithm::nvls) == expected);
  CHECK(stepped.comm.predict(CollectiveOp::all_reduce, iota(0, 8), GiB, Algorithm::nvls).count_ns() ==
        Approx(expected).epsilon(1e-4));
  // Flows: 2 per GPU and chunk.
  CHECK(stepped.net.flows_started() == 2u * 8 * 256);
}

TEST_CASE("NVLS on 8 H100 reaches the published busbw, above the ring's, and is NCCL's default there") {
  // Published (NVIDIA maintainer, nccl-tests issue #212): 8 × H100 SXM, all_reduce_perf busbw
  // ≈ 480 GB/s with NVLink SHARP, ≈ 370 GB/s with NCCL_ALGO=RING, at large sizes.
  const auto spec = dgx_h100_nvls();
  const auto nvls = comm::bench_collective(spec, 1, CollectiveOp::all_reduce, 8 * GiB, 8 * GiB, 2, Algorithm::nvls);
  const auto ring = comm::bench_collective(spec, 1, CollectiveOp::all_reduce, 8 * GiB, 8 * GiB, 2, Algorithm::ring);
  INFO("nvls busbw " << nvls[0].busbw_gbs << " GB/s, algbw " << nvls[0].algbw_gbs << "; ring busbw " << ring[0].busbw_gbs);
  CHECK(nvls[0].busbw_gbs == Approx(480).epsilon(0.05));
  CHECK(nvls[0].algbw_gbs == Approx(275).epsilon(0.05));
  CHECK(ring[0].busbw_gbs == Approx(370).epsilon(0.05));
  // The gain is the traffic ratio 2(n−1)/n : (n+1)/n = 14 : 9 at the port rate 306 against the ring at 360.
  CHECK(nvls[0].busbw_gbs / ring[0].busbw_gbs == Approx(14.0 / 9 * 306 / 360).epsilon(0.01));
  // NCCL enables NVLS on one node of NVLink-SHARP GPUs and picks the fastest: NVLS here.
  World w(spec, 1);
  for (double bytes : {1e6, 1e8, 8 * GiB}) CHECK(w.comm.choose(CollectiveOp::all_reduce, iota(0, 8), bytes) == Algorithm::nvls);
  CHECK(w.comm.choose(CollectiveOp::all_gather, iota(0, 8), 1e8) == Algorithm::ring);
}

TEST_CASE("NVLS shares the NVLink with a ring running at the same time") {
  // A ring over GPUs 0..3 and NVLS over 4..7 touch disjoint links: each runs as alone. A second
  // NVLS over 0..3 shares GPUs 0..3's NVLinks with the ring and slows it.
  const auto spec = dgx_h100_nvls();
  World alone(spec, 1);
  const auto t_ring = alone.time(CollectiveOp::all_reduce, iota(0, 4), 1e9, Algorithm::ring);
  World both(spec, 1);
  Time ring_end, nvls_end;
  both.comm.start(CollectiveOp::all_reduce, iota(0, 4), 1e9, Algorithm::ring, [&] { ring_end = both.sim.now(); });
  both.comm.start(CollectiveOp::all_reduce, iota(4, 4), 1e9, Algorithm::nvls, [&] { nvls_end = both.sim.now(); });
  both.sim.run();
  CHECK(ring_end.count_ns() == t_ring);
  World shared(spec, 1);
  shared.comm.start(CollectiveOp::all_reduce, iota(0, 4), 1e9, Algorithm::ring, [&] { ring_end = shared.sim.now(); });
  shared.comm.start(CollectiveOp::all_reduce, iota(0, 4), 1e9, Algorithm::nvls, [] {});
  shared.sim.run();
  CHECK(ring_end.count_ns() > t_ring * 1.2);
}

TEST_CASE("fluid and stepped collectives agree (run.collectives: fluid is the run layer's default)") {
  // Uncontended: a fluid ring sends all its steps as one flow after the steps' latencies; with
  // steady shares that is the stepped time up to the per-step rounding to whole ns (≤ 1 ns a
  // step: 2(n−1) ring steps; NVLS: k + 1 chunk periods, k = ⌈1e9 / 4 MiB⌉ = 239). Contended (two all-reduces over the same GPUs, or a hierarchical collective whose
  // slices overlap): the shares change mid-collective and the two differ; the stated tolerance
  // is 5 %.
  const auto spec = dgx_h100_nvls();
  struct Case {
    int nodes;
    std::vector<int> ranks;
    double bytes;
    Algorithm algorithm;
    std::int64_t steps;  // roundings to whole ns on the stepped path
  };
  const std::vector<Case> alone_cases{{1, iota(0, 8), 1e9, Algorithm::ring, 2 * 7},
                                      {1, iota(0, 8), 1e9, Algorithm::nvls, 239 + 1},
                                      {2, iota(0, 16), 1e9, Algorithm::ring, 2 * 15}};
  for (const auto& c : alone_cases) {
    World stepped(spec, c.nodes, false), fluid(spec, c.nodes, true);
    const auto ts = stepped.time(CollectiveOp::all_reduce, c.ranks, c.bytes, c.algorithm);
    const auto tf = fluid.time(CollectiveOp::all_reduce, c.ranks, c.bytes, c.algorithm);
    INFO(comm::algorithm_name(c.algorithm) << " on " << c.nodes << " node(s): stepped " << ts << " ns, fluid " << tf);
    CHECK(std::llabs(ts - tf) <= c.steps + 2);
  }
  // Uncontended hierarchical all-gather and reduce-scatter, whose fluid form is one connection
  // per GPU and phase carrying all 8 slices (1e9 / (16 · 512 KiB) ≥ 8 = channels), pipelined:
  // the slices' steady pipeline Σ d + 7·max d, as the stepped slices give it, up to whole-ns
  // rounding on each of the stepped form's 8 · (7 + 1) steps and the fluid form's per-slice
  // estimates (a few ns each).
  for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    World stepped(spec, 2, false), fluid(spec, 2, true);
    const auto ts = stepped.time(op, iota(0, 16), 1e9, Algorithm::hierarchical);
    const auto tf = fluid.time(op, iota(0, 16), 1e9, Algorithm::hierarchical);
    INFO(comm::op_name(op) << " hierarchical on 2 nodes: stepped " << ts << " ns, fluid " << tf);
    CHECK(std::llabs(ts - tf) <= 8 * 8 + 16);
  }
  // Two collectives over the same 16 GPUs, 1e9 and 5e8 bytes: when each ends.
  auto contended = [&](bool fluid, Algorithm a, CollectiveOp first_op, CollectiveOp second_op) {
    World w(spec, 2, fluid);
    Time first, second;
    w.comm.start(first_op, iota(0, 16), 1e9, a, [&] { first = w.sim.now(); });
    w.comm.start(second_op, iota(0, 16), 5e8, a, [&] { second = w.sim.now(); });
    w.sim.run();
    return std::pair{first.count_ns(), second.count_ns()};
  };
  for (Algorithm a : {Algorithm::ring, Algorithm::hierarchical}) {
    const auto s = contended(false, a, CollectiveOp::all_reduce, CollectiveOp::all_reduce);
    const auto f = contended(true, a, CollectiveOp::all_reduce, CollectiveOp::all_reduce);
    INFO(comm::algorithm_name(a) << ": stepped " << s.first << "/" << s.second << " ns, fluid " << f.first << "/" << f.second);
    CHECK(f.first == Approx(s.first).epsilon(0.05));
    CHECK(f.second == Approx(s.second).epsilon(0.05));
  }
  // ZeRO-3's pair: an all-gather and a reduce-scatter over the same GPUs (the next layer's
  // prefetch beside this layer's gradients), both hierarchical, which fluid pipelines.
  for (const auto& [first_op, second_op] : {std::pair{CollectiveOp::all_gather, CollectiveOp::reduce_scatter},
                                            std::pair{CollectiveOp::all_gather, CollectiveOp::all_gather},
                                            std::pair{CollectiveOp::reduce_scatter, CollectiveOp::all_reduce}}) {
    const auto s = contended(false, Algorithm::hierarchical, first_op, second_op);
    const auto f = contended(true, Algorithm::hierarchical, first_op, second_op);
    INFO(comm::op_name(first_op) << " + " << comm::op_name(second_op) << ": stepped " << s.first << "/" << s.second
                                 << " ns, fluid " << f.first << "/" << f.second);
    CHECK(f.first == Approx(s.first).epsilon(0.05));
    CHECK(f.second == Approx(s.second).epsilon(0.05));
  }
}
