#pragma once
// The fixture the comm tests share: a fresh simulation of a cluster with its Communicator, the
// rank lists they run collectives over, and the DGX H100 whose NVSwitch reduces. Topology
// numbers come from support/dgx_h100.hpp (sources there).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "comm/collective.hpp"
#include "support/dgx_h100.hpp"

namespace ironlaw::test {

constexpr double GiB = 1024.0 * 1024 * 1024;

/// The GPUs first, first + 1, …, first + count − 1.
inline std::vector<int> iota(int first, int count) {
  std::vector<int> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = first + i;
  return v;
}

/// DGX H100 whose NVSwitch reduces: topologies/dgx-h100-leaf-spine.yaml,
/// node.nvswitch_reduce_bandwidth = 306 GB/s (NCCL tuning.cc nvlsEfficiency 0.85 × 360 GB/s).
inline config::TopologySpec dgx_h100_nvls() {
  auto t = dgx_h100();
  t.node.nvswitch_reduce_bandwidth = 306e9;
  return t;
}

/// A fresh simulation of `nodes` nodes of `spec`, stepped or fluid rings.
struct CommWorld {
  CommWorld(const config::TopologySpec& spec, int nodes, bool fluid = false)
      : cluster(spec, nodes, net), comm(sim, net, cluster) {
    comm.set_fluid_rings(fluid);
  }
  engine::Simulator sim;
  engine::FlowNetwork net{sim};
  hardware::Cluster cluster;
  comm::Communicator comm;

  /// Runs one collective alone; checks that it completes once and returns its duration [ns].
  std::int64_t time(comm::CollectiveOp op, const std::vector<int>& ranks, double bytes, comm::Algorithm algorithm) {
    Time end = Time::max();
    int calls = 0;
    comm.start(op, ranks, bytes, algorithm, [&] {
      end = sim.now();
      ++calls;
    });
    sim.run();
    CHECK(calls == 1);
    return end.count_ns();
  }
};

}  // namespace ironlaw::test
