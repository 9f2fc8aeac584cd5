// NCCL's protocols for the ring family: each call takes LL, LL128 or Simple, whichever the
// closed form predicts fastest, and then runs with that protocol's base latency (once per call),
// step latency and wire bytes. Constants as in topologies/dgx-h100-leaf-spine.yaml
// (NVIDIA/nccl src/graph/tuning.cc ncclTunerConstantsDefaults: baseLatencies and hwLatencies,
// Ring row).
#include <catch2/catch.hpp>

#include <vector>

#include "comm_world.hpp"

using namespace ironlaw;
using comm::Algorithm;
using comm::CollectiveOp;
using test::iota;

namespace {

config::CommSpec::Protocol protocol(const char* name, std::int64_t base_ns, std::int64_t nvlink_ns, std::int64_t net_ns,
                                    double wire) {
  config::CommSpec::Protocol p;
  p.name = name;
  p.base_latency = Time::ns(base_ns);
  p.nvlink_step_latency = Time::ns(nvlink_ns);
  p.net_step_latency = Time::ns(net_ns);
  p.wire_bytes_per_byte = wire;
  return p;
}

/// DGX H100 with NCCL's three ring protocols (tuning.cc baseLatencies and hwLatencies, Ring).
config::TopologySpec with_protocols() {
  auto t = test::dgx_h100();
  t.comm.channels = 1;
  t.comm.protocols = {protocol("ll", 6600, 600, 2700, 2.0), protocol("ll128", 14000, 1900, 4000, 128.0 / 120.0),
                      protocol("simple", 8400, 3400, 14000, 1.0)};
  return t;
}

/// Runs one ring collective alone on `nodes` nodes of `spec` [ns].
std::int64_t ring_time(const config::TopologySpec& spec, int nodes, CollectiveOp op, const std::vector<int>& ranks,
                       double bytes) {
  test::CommWorld w(spec, nodes);
  return w.time(op, ranks, bytes, Algorithm::ring);
}

constexpr std::int64_t kLaunch = 8400;  // comm.launch_latency = Simple's base latency
constexpr std::int64_t kBaseLL = 6600, kBaseLL128 = 14000;
constexpr std::int64_t kNvlinkPath = 2 * 500;  // GPU → NVSwitch → GPU, 0.5 us per hop

}  // namespace

TEST_CASE("a small ring all-reduce in one node runs LL: its 6.6 us base, 0.6 us steps, twice the bytes") {
  // 8 KiB over 8 GPUs: S/n = 1,024 B of payload per step.
  // LL:     6,600 + 14 × (600 + ⌈2,048 B / 360 GB/s⌉ = 6 ns + 1,000) = 6,600 + 14 × 1,606 = 29,084 ns
  // LL128: 14,000 + 14 × (1,900 + ⌈1,092.3 B / 360 GB/s⌉ = 4 + 1,000) = 14,000 + 40,656 = 54,656 ns
  // Simple: 8,400 + 14 × (3,400 + ⌈1,024 / 360e9⌉ = 3 + 1,000) = 8,400 + 61,642 = 70,042 ns
  // (Before base latencies per protocol every call paid Simple's 8,400: LL took 30,884 ns.)
  CHECK(ring_time(with_protocols(), 1, CollectiveOp::all_reduce, iota(0, 8), 8192) == 29'084);
  CHECK(29'084 == kBaseLL + 14 * (600 + 6 + kNvlinkPath));
}

TEST_CASE("a small hierarchical all-reduce on 16 nodes runs LL and pays LL's base latency once") {
  // 16 DGX H100 under one leaf (nodes_per_leaf 16, so every inter-node hop is GPU → PCIe → NIC
  // → leaf → NIC → PCIe → GPU: 4 × 250 + 2 × 500 + 300 = 2,300 ns, 47 GB/s), S = 8 KiB, one
  // channel so one slice (8 KiB < 16 × 8 × 512 KiB). Phases: NVLink reduce-scatter (7 steps of
  // S/8), network all-reduce over the 16 nodes (30 steps of S/128), NVLink all-gather (7 steps),
  // plus the NVLink hops of NCCL's flat ring the phases do not step through: 2 × 15 × 7 = 210
  // (tuning.cc: 2·(128 − 1) − 2·(16 − 1) = 224 NVLink steps, of which the phases step through
  // 7 + 7 = 14; flat_ring_hop_latency), at the protocol's NVLink step latency plus the 1,000 ns
  // path each.
  //   LL (2 wire bytes per byte):
  //     NVLink step 600 + 1,000 + ⌈2,048 B / 360 GB/s = 5.7⌉ = 1,606; network step
  //     2,700 + 2,300 + ⌈128 B / 47 GB/s = 2.7⌉ = 5,003; hop 600 + 1,000 = 1,600:
  //     6,600 + 210 × 1,600 + 7 × 1,606 + 30 × 5,003 + 7 × 1,606 = 515,174 ns (179,174 before
  //     the flat ring's hops were charged).
  //   LL128 (×128/120): 14,000 + 210 × 2,900 + 14 × (1,900 + 1,000 + 4) + 30 × (4,000 + 2,300 + 2)
  //     = 852,716.
  //   Simple: 8,400 + 210 × 4,400 + 14 × (3,400 + 1,000 + 3) + 30 × (14,000 + 2,300 + 2) = 1,483,102.
  // NCCL's own ring model for these constants is the same shape: baseLat + Σ steps × hwLat.
  auto t = with_protocols();
  t.fabric.nodes_per_leaf = 16;
  test::CommWorld w(t, 16);
  const std::int64_t expected = kBaseLL + 210 * 1600 + 7 * 1606 + 30 * 5003 + 7 * 1606;
  CHECK(expected == 515'174);
  CHECK(w.time(CollectiveOp::all_reduce, iota(0, 128), 8192, Algorithm::hierarchical) == expected);
  CHECK(w.comm.predict(CollectiveOp::all_reduce, iota(0, 128), 8192, Algorithm::hierarchical).count_ns() ==
        Approx(expected).epsilon(1e-4));
}

TEST_CASE("a large ring all-reduce in one node runs Simple: payload only") {
  // 800 MB: S/n = 1e8 B per step. Simple: 8,400 + 14 × (3,400 + 277,778 + 1,000); LL would move
  // 2e8 B per step (555,556 ns) and LL128 1.0667e8 (296,296 ns): both slower despite shorter steps.
  CHECK(ring_time(with_protocols(), 1, CollectiveOp::all_reduce, iota(0, 8), 8e8) == kLaunch + 14 * (3400 + 277'778 + kNvlinkPath));
}

TEST_CASE("a medium message takes LL128 where its shorter step outweighs its flag bytes and base") {
  // 8 MiB over 8 GPUs, S/n = 1,048,576 B:
  //   LL:      6,600 + 14 × (600 + 5,826 + 1,000) = 6,600 + 14 × 7,426 = 110,564
  //            (2,097,152 B / 360 GB/s = 5,825.4 → 5,826)
  //   LL128:  14,000 + 14 × (1,900 + ⌈1,118,481 B / 360e9⌉ = 3,107 + 1,000) = 14,000 + 84,098 = 98,098
  //   Simple:  8,400 + 14 × (3,400 + 2,913 + 1,000) = 8,400 + 102,382 = 110,782
  CHECK(ring_time(with_protocols(), 1, CollectiveOp::all_reduce, iota(0, 8), 8.0 * 1048576) ==
        kBaseLL128 + 14 * (1900 + 3107 + kNvlinkPath));
}

TEST_CASE("rings across nodes pay the network step latency of their protocol") {
  // Two nodes, one GPU each (GPU 0 and GPU 8): a 2-rank ring, 2 steps of S/2 over the network.
  // Path GPU → PCIe → NIC → leaf → NIC → PCIe → GPU: 4 × 250 + 2 × 500 + 300 = 2,300 ns latency,
  // bottleneck 47 GB/s (NIC). 64 MiB: S/2 = 33,554,432 B → 713,924.09 → 713,925 ns at 47 GB/s; Simple wins
  // (LL128 would add 6.67 % = 47,595 ns per step, more than its 10 us shorter step).
  const std::int64_t step = 14000 + 713'925 + 2300;
  CHECK(ring_time(with_protocols(), 2, CollectiveOp::all_reduce, {0, 8}, 64.0 * 1048576) == kLaunch + 2 * step);
}

TEST_CASE("without protocols a ring keeps comm.step_latency and payload-only steps") {
  auto t = test::dgx_h100();
  t.comm.channels = 1;
  CHECK(ring_time(t, 1, CollectiveOp::all_reduce, iota(0, 8), 8192) == kLaunch + 14 * (3400 + 3 + kNvlinkPath));
}
