#pragma once
/// \file The collective algorithm registry. Each algorithm is one unit that says whether it
/// applies to a call, predicts its time in closed form from the topology constants, and builds
/// the collective's rings, trees or switch reductions for the executor. `automatic` is one loop
/// over the registry: the fastest prediction among the units eligible for it, earlier units
/// winning ties.
///
/// Protocols (ring and hierarchical): NCCL runs each collective with one of its protocols, LL,
/// LL128 or Simple, trading latency per step against bytes on the wire (LL: 8-byte lines of
/// 4 B data + 4 B flag; LL128: 128-byte lines with 8 B of flags; Simple: payload only, a fence
/// per step), and its tuner (src/graph/tuning.cc) takes the one with the lowest predicted
/// time. The ring-family units do the same over topology.comm.protocols: predict() is the
/// minimum over the protocols of the closed form with the protocol's base latency (once per
/// call, NCCL's baseLat, in place of comm.launch_latency), its step latency (NVLink for a ring
/// inside one node and for the intra-node phases of the hierarchical form, the network's for
/// rings that cross nodes) and wire_bytes_per_byte × the payload; build() runs the chosen
/// protocol's rings with those latencies and wire bytes. NCCL's ring latency is the same sum,
/// baseLat + Σ over steps of hwLat (tuning.cc). Not modelled: NCCL's per-SM bandwidth caps of
/// LL and LL128, and protocols for the tree and NVLS (they run at comm.launch_latency and
/// comm.step_latency, Simple's).
#include <cstdint>
#include <vector>

#include "comm/collective.hpp"

namespace ironlaw::comm {

namespace detail {
class Collective;
}

/// A send not tied to a ring or tree (an all-to-all's messages, a point-to-point send): `weight`
/// identical messages of `bytes` each from GPU `src` to GPU `dst`, all on one connection (ECMP
/// hash `hash`), run as one flow group. `via`: a link every flow of the send crosses before its
/// route (a sending kernel's own rate: CollectiveCall::kernel_rdma_links, kernel_forward_links),
/// or kNoVia; with one, src == dst is a send too (a copy inside the GPU at the kernel's rate),
/// else it moves nothing.
struct DirectSend {
  static constexpr engine::LinkId kNoVia = ~engine::LinkId{0};
  int src = 0;
  int dst = 0;
  double bytes = 0;
  std::uint32_t weight = 1;
  std::uint64_t hash = 0;
  engine::LinkId via = kNoVia;
};

/// One collective call as the algorithms see it. `groups`: the ranks by node (nodes in order of
/// first appearance, ranks in their given order).
struct CollectiveCall {
  CollectiveOp op;
  const std::vector<int>& ranks;
  double bytes = 0;
  const hardware::Cluster& cluster;
  const engine::FlowNetwork& net;
  std::vector<std::vector<int>> groups;
  /// All-to-all: merge identical messages into weighted sends (comm/all_to_all.hpp).
  bool aggregate = true;
  /// All-to-all of routed tokens, deduplicated as DeepEP sends them (comm/all_to_all.hpp):
  /// `bytes` holds every token copy, each token choosing `route_picks` distinct targets of
  /// `route_targets`, spread evenly over the ranks; 0 (the default): every copy a message.
  int route_targets = 0;
  int route_picks = 0;
  /// The all-to-all kernels' own rates on the relay (config::CommSpec::EpKernels, bytes/s; 0:
  /// none): each GPU's network legs together at most `kernel_rdma_rate`, its NVLink legs and its
  /// delivery to itself together at most `kernel_forward_rate` (comm/all_to_all.hpp).
  double kernel_rdma_rate = 0;
  double kernel_forward_rate = 0;
  /// The links that carry those rates, by GPU id (build() only; predict() needs the rates
  /// alone): null where the rate is 0.
  const std::vector<engine::LinkId>* kernel_rdma_links = nullptr;
  const std::vector<engine::LinkId>* kernel_forward_links = nullptr;

  CollectiveCall(CollectiveOp o, const std::vector<int>& r, double b, const hardware::Cluster& c,
                 const engine::FlowNetwork& n);
  int size() const { return static_cast<int>(ranks.size()); }
  int nodes() const { return static_cast<int>(groups.size()); }
  /// Ranks on several nodes, the same count g > 1 on each.
  bool layered() const;
};

/// One algorithm. Implementations are stateless singletons owned by the registry.
class AlgorithmUnit {
 public:
  virtual ~AlgorithmUnit() = default;
  virtual Algorithm id() const = 0;
  /// Whether build() can run `call` when the algorithm is asked for by name. O(ranks).
  virtual bool applies(const CollectiveCall& call) const = 0;
  /// Whether `automatic` considers it for `call` (default: applies()). O(ranks).
  virtual bool eligible(const CollectiveCall& call) const { return applies(call); }
  /// Closed-form time with nothing else on the network (see Communicator::predict); only
  /// called where applies(). O(ranks).
  virtual Time predict(const CollectiveCall& call) const = 0;
  /// Adds the rings, trees, switch reductions or sends of `call` to `out` and returns the
  /// latency before the first of them may start (the base latency of the protocol it chose, else
  /// comm.launch_latency); only called where applies() and the call has at least two ranks.
  /// O(flows of the first step).
  virtual Time build(const CollectiveCall& call, detail::Collective& out) const = 0;
};

/// Every algorithm, in tie-break order: hierarchical, ring, tree, nvls, all_to_all. O(1).
const std::vector<const AlgorithmUnit*>& algorithm_registry();

/// The unit of `algorithm`; throws std::invalid_argument for Algorithm::automatic. O(units).
const AlgorithmUnit& algorithm_unit(Algorithm algorithm);

/// The eligible unit with the lowest prediction (ties: the earlier one). A call with one rank
/// runs the ring (nothing moves). O(units · ranks).
Algorithm choose_algorithm(const CollectiveCall& call);

}  // namespace ironlaw::comm
