#pragma once
/// \file Collectives expanded into flows on the cluster: ring all-reduce = reduce-scatter +
/// all-gather, 2(n−1) steps of S/n bytes per ring; hierarchical (NVLink inside the node, then
/// the network across nodes, then NVLink again). Knows GPUs and links, not models.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "hardware/cluster.hpp"

namespace ironlaw::comm {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather };
enum class Algorithm { ring, hierarchical, automatic };

const char* op_name(CollectiveOp op);
CollectiveOp parse_op(const std::string& name);  ///< throws std::invalid_argument

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw × factor.
/// all_reduce 2(n−1)/n; reduce_scatter and all_gather (n−1)/n.
double bus_factor(CollectiveOp op, int ranks);

/// Observes each flow a collective starts (for flow-level traces). Optional.
struct FlowTrace {
  std::function<void(int src_gpu, int dst_gpu, double bytes, Time start, Time end)> on_flow;
};

/// Runs collectives as flows on a cluster. `bytes` is the buffer size S as nccl-tests counts
/// it: all-reduce and reduce-scatter input size, all-gather output size.
class Communicator {
 public:
  Communicator(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster);

  /// Starts a collective over `ranks` (global GPU ids; their order is the logical rank order).
  /// `on_done` runs when every rank has finished. Returns immediately.
  void start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
             std::function<void()> on_done);

  void set_flow_trace(FlowTrace trace) { trace_ = std::move(trace); }

 private:
  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  const hardware::Cluster& cluster_;
  FlowTrace trace_;
};

/// One row of an nccl-tests-style table.
struct BenchRow {
  double bytes = 0;
  double time_us = 0;
  double algbw_gbs = 0;  ///< S / t [GB/s, 1e9]
  double busbw_gbs = 0;  ///< algbw × bus_factor
};

/// Simulates `op` over all GPUs of `nodes` nodes of `topology` for sizes min_bytes,
/// min_bytes·factor, … ≤ max_bytes, each in a fresh simulation. Algorithm as chosen by
/// `algorithm` (automatic: hierarchical across nodes, ring inside one).
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor,
                                       Algorithm algorithm = Algorithm::automatic);

}  // namespace ironlaw::comm
