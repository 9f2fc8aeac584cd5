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

/// The ring order of channel `channel` over `ranks`. When the ranks fill every node they touch
/// with the same count g (nodes in order of first appearance, ranks within a node in their given
/// order), channel c visits each node's ranks starting at local index c mod g and leaves the node
/// from local index (c − 1) mod g. With g = 8 GPUs and one NIC per GPU, channel c's inter-node
/// traffic thus leaves every node through the NIC of local GPU c − 1 and enters through the NIC
/// of local GPU c, so 8 channels load every NIC with exactly one channel in each direction
/// (NCCL's rings do the same: each channel enters and leaves a node through different GPUs).
/// Otherwise the ranks in their given order. O(ranks).
std::vector<int> channel_ring(const std::vector<int>& ranks, const hardware::Cluster& cluster, int channel);

/// Runs collectives as flows on a cluster. `bytes` is the buffer size S as nccl-tests counts
/// it: all-reduce and reduce-scatter input size, all-gather output size.
///
/// Timing model (topology.comm): a collective starts `launch_latency` after start(). A ring
/// position starts step k once (a) its own step k−1 send completed, (b) it received step k−1 from
/// its predecessor, (c) any earlier phase it depends on finished on that rank; the send itself
/// begins `step_latency` later and takes the flow network's time (drain + path latencies).
///
/// Algorithms:
/// - ring: C = comm.channels rings (0 → one per NIC), each over all ranks in channel_ring order,
///   each moving S/(C·n) bytes per step: all_reduce 2(n−1) steps, reduce_scatter and all_gather
///   n−1 steps.
/// - hierarchical (ranks on several nodes, the same count g > 1 on each): intra-node ring
///   reduce-scatter over NVLink, inter-node ring all-reduce of the 1/g shards among the GPUs of
///   equal local index (g rings in parallel, each through its own NIC), intra-node all-gather.
///   (reduce_scatter: the first two phases with an inter-node reduce-scatter; all_gather: an
///   inter-node then an intra-node all-gather.) The buffer is cut into C slices that pipeline
///   through the phases: on each rank slice s+1 enters a phase after slice s left it, so the
///   network phase of one slice overlaps the NVLink phases of the next, as NCCL pipelines
///   chunks. With C = 1 it is the textbook three-phase algorithm.
/// - automatic: ring inside one node; hierarchical across nodes when it applies (else ring).
///   Why: an all-reduce over n = N·g ranks starts C·n·2(n−1) flows as a flat ring but
///   C·n·2(g−1 + N−1) hierarchically — about g× fewer (8× for 8-GPU nodes: 5.4e8 instead of
///   4.3e9 flows at 16,384 GPUs), which keeps large collectives tractable — while its bus
///   bandwidth stays close to NCCL's 8-channel ring, because either way each NIC carries one
///   ring (16 DGX H100 nodes, 8 GB: 342 vs 362 GB/s simulated).
///
/// Many collectives may run at once on one FlowNetwork; links they share slow them all.
class Communicator {
 public:
  Communicator(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster);

  /// Starts a collective over `ranks` (global GPU ids; their order is the logical rank order).
  /// `on_done` runs once, when every rank has finished (one rank: after the launch latency).
  /// Returns immediately. Throws std::invalid_argument for no ranks, a repeated or unknown GPU,
  /// negative bytes, or `hierarchical` over nodes holding different numbers of ranks.
  /// Cost: O(ranks · channels) setup, then one flow per rank, channel and step.
  void start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
             std::function<void()> on_done);

  void set_flow_trace(FlowTrace trace) { trace_ = std::move(trace); }

  /// Splits every send whose route crosses the spine tier into `flows` equal flows with distinct
  /// ECMP hashes (default 1), as NCCL does with several queue pairs per connection
  /// (NCCL_IB_QPS_PER_CONNECTION) and Llama 3's Enhanced-ECMP with 16 flows per GPU pair.
  /// With 1, hashed ECMP collisions on spine links emerge at full strength.
  void set_flows_per_connection(int flows);
  int flows_per_connection() const { return flows_per_connection_; }

 private:
  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  const hardware::Cluster& cluster_;
  FlowTrace trace_;
  int flows_per_connection_ = 1;
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
/// Throws std::invalid_argument unless 0 < min_bytes ≤ max_bytes and factor > 1.
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor,
                                       Algorithm algorithm = Algorithm::automatic);
/// As above, with Communicator::set_flows_per_connection(flows_per_connection).
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm,
                                       int flows_per_connection);

}  // namespace ironlaw::comm
