// NCCL's protocols for the ring family: each call takes LL, LL128 or Simple, whichever the
// closed form predicts fastest, and then runs with that protocol's step latency and wire bytes.
// Constants as in topologies/dgx-h100-leaf-spine.yaml (NVIDIA/nccl src/graph/tuning.cc).
#include <catch2/catch.hpp>

#include <vector>

#include "comm/collective.hpp"
#include "support/dgx_h100.hpp"

using namespace ironlaw;
using comm::Algorithm;
using comm::CollectiveOp;

namespace {

std::vector<int> iota(int first, int count) {
  std::vector<int> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = first + i;
  return v;
}

config::CommSpec::Protocol protocol(const char* name, std::int64_t nvlink_ns, std::int64_t net_ns, double wire) {
  config::CommSpec::Protocol p;
  p.name = name;
  p.nvlink_step_latency = Time::ns(nvlink_ns);
  p.net_step_latency = Time::ns(net_ns);
  p.wire_bytes_per_byte = wire;
  return p;
}

/// DGX H100 with NCCL's three ring protocols (tuning.cc hwLatencies, Ring row).
config::TopologySpec with_protocols() {
  auto t = test::dgx_h100();
  t.comm.channels = 1;
  t.comm.protocols = {protocol("ll", 600, 2700, 2.0), protocol("ll128", 1900, 4000, 128.0 / 120.0),
                      protocol("simple", 3400, 14000, 1.0)};
  return t;
}

struct World {
  World(const config::TopologySpec& spec, int nodes) : cluster(spec, nodes, net), comm(sim, net, cluster) {}
  engine::Simulator sim;
  engine::FlowNetwork net{sim};
  hardware::Cluster cluster;
  comm::Communicator comm;
  std::int64_t time(CollectiveOp op, const std::vector<int>& ranks, double bytes) {
    Time end = Time::max();
    comm.start(op, ranks, bytes, Algorithm::ring, [&] { end = sim.now(); });
    sim.run();
    return end.count_ns();
  }
};

constexpr std::int64_t kLaunch = 8400;
constexpr std::int64_t kNvlinkPath = 2 * 500;  // GPU → NVSwitch → GPU, 0.5 us per hop

}  // namespace

TEST_CASE("a small ring all-reduce in one node runs LL: 0.6 us steps, twice the bytes on the wire") {
  // 8 KiB over 8 GPUs: S/n = 1,024 B of payload per step.
  // LL:     14 × (600 + ⌈2,048 B / 360 GB/s⌉ = 6 ns + 1,000) = 14 × 1,606 = 22,484 ns
  // LL128:  14 × (1,900 + ⌈1,092.3 B / 360 GB/s⌉ = 4 + 1,000) = 14 × 2,904 = 40,656 ns
  // Simple: 14 × (3,400 + ⌈1,024 / 360e9⌉ = 3 + 1,000) = 14 × 4,403 = 61,642 ns
  World w(with_protocols(), 1);
  CHECK(w.time(CollectiveOp::all_reduce, iota(0, 8), 8192) == kLaunch + 14 * (600 + 6 + kNvlinkPath));
}

TEST_CASE("a large ring all-reduce in one node runs Simple: payload only") {
  // 800 MB: S/n = 1e8 B per step. Simple: 14 × (3,400 + 277,778 + 1,000); LL would move 2e8 B
  // per step (555,556 ns) and LL128 1.0667e8 (296,296 ns): both slower despite shorter steps.
  World w(with_protocols(), 1);
  CHECK(w.time(CollectiveOp::all_reduce, iota(0, 8), 8e8) == kLaunch + 14 * (3400 + 277'778 + kNvlinkPath));
}

TEST_CASE("a medium message takes LL128 where its shorter step outweighs its flag bytes") {
  // 8 MiB over 8 GPUs, S/n = 1,048,576 B:
  //   LL:     14 × (600 + 5,825 + 1,000) = 103,950 (2,097,152 B / 360 GB/s = 5,825.4 → 5,826: 14 × 7,426)
  //   LL128:  14 × (1,900 + ⌈1,118,481 B / 360e9⌉ = 3,107 + 1,000) = 14 × 6,007 = 84,098
  //   Simple: 14 × (3,400 + 2,913 + 1,000) = 14 × 7,313 = 102,382
  World w(with_protocols(), 1);
  CHECK(w.time(CollectiveOp::all_reduce, iota(0, 8), 8.0 * 1048576) == kLaunch + 14 * (1900 + 3107 + kNvlinkPath));
}

TEST_CASE("rings across nodes pay the network step latency of their protocol") {
  // Two nodes, one GPU each (GPU 0 and GPU 8): a 2-rank ring, 2 steps of S/2 over the network.
  // Path GPU → PCIe → NIC → leaf → NIC → PCIe → GPU: 4 × 250 + 2 × 500 + 300 = 2,300 ns latency,
  // bottleneck 47 GB/s (NIC). 64 MiB: S/2 = 33,554,432 B → 713,924.09 → 713,925 ns at 47 GB/s; Simple wins
  // (LL128 would add 6.67 % = 47,595 ns per step, more than its 10 us shorter step).
  World w(with_protocols(), 2);
  const std::int64_t step = 14000 + 713'925 + 2300;
  CHECK(w.time(CollectiveOp::all_reduce, {0, 8}, 64.0 * 1048576) == kLaunch + 2 * step);
}

TEST_CASE("without protocols a ring keeps comm.step_latency and payload-only steps") {
  auto t = test::dgx_h100();
  t.comm.channels = 1;
  World w(t, 1);
  CHECK(w.time(CollectiveOp::all_reduce, iota(0, 8), 8192) == kLaunch + 14 * (3400 + 3 + kNvlinkPath));
}
