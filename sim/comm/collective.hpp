#pragma once
/// \file Collectives expanded into flows on the cluster: ring all-reduce = reduce-scatter +
/// all-gather, 2(n−1) steps of S/n bytes per ring; hierarchical (NVLink inside the node, then
/// the network across nodes, then NVLink again); NCCL's double binary tree; all-to-all;
/// point-to-point sends; NVLink SHARP (NVLS) in-switch reduction. Knows GPUs and links, not
/// models. Layout: this header is the API (Communicator, the nccl-tests table); each algorithm
/// is a unit of the registry in algorithms.hpp (applies / predict / build); the executor that
/// turns a built collective into flows is executor.hpp; the table is nccl_bench.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "hardware/cluster.hpp"

namespace ironlaw::comm {

struct CollectiveCall;  // comm/algorithms.hpp

namespace detail {
class RouteCache;
class Collective;
}

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, all_to_all };
enum class Algorithm { ring, hierarchical, automatic, tree, nvls, all_to_all };

const char* op_name(CollectiveOp op);
CollectiveOp parse_op(const std::string& name);  ///< throws std::invalid_argument
const char* algorithm_name(Algorithm algorithm);
/// The algorithm named `name` (algorithm_name's spelling, or "auto" for automatic); throws
/// std::invalid_argument otherwise.
Algorithm parse_algorithm(const std::string& name);

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw × factor.
/// all_reduce 2(n−1)/n; reduce_scatter, all_gather and all_to_all (n−1)/n.
double bus_factor(CollectiveOp op, int ranks);

/// Bytes one rank's own HBM moves for a collective of `bytes` (nccl-tests' size: the whole
/// buffer; all_to_all: one rank's send buffer) over `ranks` ranks, counted from the steps of
/// NCCL's ring kernels (src/device/all_reduce.h, reduce_scatter.h, all_gather.h: send,
/// recvReduceSend, recvReduceCopySend, recvCopySend, recv) with the Simple protocol's staging:
/// every chunk a peer sends lands in this rank's HBM (written by the peer's NVLink or NIC DMA)
/// and is read back by the kernel; the kernel reads its own input and writes its output.
/// With S = bytes and n = ranks:
/// - all_reduce 6S − 4S/n: the input read once (S), n − 1 incoming chunks of the reduce-scatter
///   written and read (2(n−1)S/n), its reduced chunk written (S/n), n − 1 incoming chunks of
///   the all-gather written, read and copied to the output (3(n−1)S/n);
/// - reduce_scatter 3S − S/n: input S, incoming 2(n−1)S/n, output S/n;
/// - all_gather 3S − S/n: its own chunk read and written (2S/n), incoming 3(n−1)S/n;
/// - all_to_all 4S − 2S/n: the n − 1 outgoing blocks read, its own block copied (2S/n), the
///   n − 1 incoming blocks written, read and copied (3(n−1)S/n).
/// The tree and hierarchical algorithms are counted as the ring (each rank still reads its
/// input, stages what it receives and writes its output: the same order of traffic). NVLS
/// all_reduce reduces in the switch: each rank's HBM serves its input once (the switch's
/// multimem loads) and takes the result once, 2S. One rank: a local copy, 2S.
/// Throws std::invalid_argument for ranks < 1 or negative bytes. O(1).
double hbm_bytes_per_rank(CollectiveOp op, Algorithm algorithm, int ranks, double bytes);

/// Observes each flow a collective starts (for flow-level traces). Optional. The switch end of
/// an in-switch reduction flow (NVLS) is reported as GPU -1.
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

/// Pipeline slices of a hierarchical collective of `bytes` over `nodes` nodes × `local` ranks:
/// as many as `comm.channels` (0 → `nics`), but only as deep as the data allows — every
/// inter-node ring step of a slice (slice / (local · nodes) bytes) carries at least one
/// `comm.chunk_bytes` step buffer, so a small buffer runs one slice. chunk_bytes = 0 → channels.
/// Always ≥ 1. O(1).
int hierarchical_slices(const config::CommSpec& comm, int nics, double bytes, int nodes, int local);

/// Chunking of one tree channel carrying `channel_bytes` through a tree `depth` hops deep:
/// the chunk starts at comm.chunk_bytes and is halved while the channel holds fewer than
/// `depth` chunks and the chunk exceeds comm.tree_min_chunk_bytes (NCCL src/enqueue.cc does the
/// same for Tree/Simple, in three stages whose last floor, 32 KiB, is the one used here).
/// The channel is then cut into ⌈channel_bytes / chunk⌉ equal chunks (at least 1).
struct TreeChunks {
  int count = 1;
  double bytes = 0;  ///< per chunk
};
TreeChunks tree_chunks(const config::CommSpec& comm, double channel_bytes, int depth);

/// Chunking of an in-switch (NVLS) all-reduce of `bytes` over `ranks` GPUs: the buffer is cut
/// into ⌈bytes / (channels · comm.chunk_bytes)⌉ chunks (one step buffer per channel, as NCCL's
/// channels each pipeline their own step buffers; 1 when chunk_bytes = 0). Each GPU moves, per
/// chunk and direction, (bytes / count) · (n + 1) / n: the whole chunk into the switch to be
/// reduced plus its 1/n share of the results it multicasts, and the same back (its reduced
/// share, then every share multicast). Throws std::invalid_argument for ranks or channels < 1
/// or a chunk count beyond an int. O(1).
struct NvlsChunks {
  int count = 1;
  double bytes = 0;  ///< per GPU, per chunk, per direction
};
NvlsChunks nvls_chunks(const config::CommSpec& comm, int channels, double bytes, int ranks);

/// Runs collectives as flows on a cluster. `bytes` is the buffer size S as nccl-tests counts
/// it: all-reduce and reduce-scatter input size, all-gather output size, all-to-all send
/// buffer per rank.
///
/// Timing model (topology.comm): a collective starts `launch_latency` after start() (a ring or
/// hierarchical one: the base latency of the protocol it runs, algorithms.hpp). Every
/// pipeline step (a ring step, a tree chunk on one edge) begins `step_latency` after its inputs
/// are ready and takes the flow network's time (drain + path latencies). A connection sends its
/// steps one after another.
///
/// Connections and flows: a GPU-to-GPU send whose route depends on the ECMP choice is spread
/// over `flows_per_connection` = k queue pairs with distinct hashes, one flow of S/k each, as
/// before. Queue pairs that hash to the same path are identical flows (same path, bytes and
/// start) and run as one flow group of weight = their count (FlowNetwork::start_flow_group),
/// which max-min shares exactly as the separate flows: every queue pair keeps its own share of a
/// shared NIC and ends when it would have (≈ 12.4 records instead of 16 over 32 spines, ≈ 10.3
/// over 16). (Merging them into one unweighted flow, tried before, gave the merged flows a
/// single share and made the simulation slower through extra re-solves.) Those groups, in turn,
/// start as one multi-route group (FlowNetwork::start_flow_routes; set_merge_routes) that splits
/// into them only at a re-solve where their rates would part (a spine link, not the NIC, becomes
/// a queue pair's bottleneck): one record per connection while the spine has room, the same
/// times. The routes of each (src, dst, hash, queue pairs) are computed once and cached.
///
/// Algorithms:
/// - ring: C = comm.channels rings (0 → one per NIC), each over all ranks in channel_ring order,
///   each moving S/(C·n) bytes per step: all_reduce 2(n−1) steps, reduce_scatter and all_gather
///   n−1 steps. When all ranks sit on one node the C rings visit the same GPU pairs in the same
///   cyclic order (channel_ring only rotates each node's ranks), so on the non-blocking NVSwitch
///   crossbar their flows would share the same two NVLinks equally and end together: one ring
///   carrying S/n per step gives the same time with C× fewer flows, and is what runs.
/// - hierarchical (ranks on several nodes, the same count g > 1 on each): intra-node ring
///   reduce-scatter over NVLink, inter-node ring all-reduce of the 1/g shards among the GPUs of
///   equal local index (g rings in parallel, each through its own NIC), intra-node all-gather.
///   (reduce_scatter: the first two phases with an inter-node reduce-scatter; all_gather: an
///   inter-node then an intra-node all-gather.) The buffer is cut into hierarchical_slices()
///   slices that pipeline through the phases: on each rank slice s+1 enters a phase after slice
///   s left it, so the network phase of one slice overlaps the NVLink phases of the next, as
///   NCCL pipelines chunks. With one slice it is the textbook three-phase algorithm. Fluid
///   (set_fluid_rings), reduce_scatter and all_gather run one ring per phase and node (or
///   local index) that carries every slice as one connection per GPU, the two phases
///   pipelined (detail::Collective::add_pipelined_dependency: the same time as the slices when
///   uncontended, 4× to 8× fewer flows); all_reduce keeps a ring per slice, since its first
///   and last phases share the NVLinks and one unpaced connection for the last would take
///   share from the first.
/// - tree (all_reduce only): NCCL's double binary tree. Two trees over the nodes: an in-order
///   balanced binary tree of the nodes and its mirror (its shift by one for an odd node count),
///   so that a node that is a leaf of one is inner in the other; channel c (S/C bytes) uses tree
///   c mod 2, as NCCL splits its channels between the two trees. Inside each node the channel's
///   ranks form a chain starting at local index c (the chain head, whose NIC talks to the node's
///   tree parent and children). Data is cut into tree_chunks(); each chunk is reduced up the
///   chains and the tree (a rank sends chunk j to its parent once it holds chunk j from all its
///   children) and broadcast down from the root (a rank forwards chunk j to each child once it
///   received it), chunks pipelined behind one another. One node: one chain per channel.
///   With one channel per NIC, the NIC of a node inner in its channel's tree sends 3 chunks per
///   chunk index (up, two children) where a leaf's sends 1; NCCL runs twice as many channels so
///   each NIC carries one channel of each tree and balances. Giving every channel both trees
///   would do the same here, at twice the flows and 4–8× the simulation time measured on 16
///   nodes (8–128 MiB), for 10–26 % less time at those sizes; one tree per channel is kept.
/// - nvls (all_reduce on one node whose NVSwitch reduces, Cluster::switch_reduces()): NVLink
///   SHARP. Every GPU streams its buffer into the switch's reducer port in nvls_chunks() chunks;
///   once the switch holds chunk j from every GPU it multicasts the reduced chunk j back to
///   every GPU. Per GPU and direction the traffic is (n+1)/n · S instead of the ring's
///   2(n−1)/n · S, at the smaller of the NVLink and the reducer port rate
///   (node.nvswitch_reduce_bandwidth). A GPU starts its next chunk once the previous one has
///   drained (NCCL keeps several steps in flight), so path latency is paid once, not per chunk.
/// - all_to_all (every algorithm): every rank sends S/n to every other rank at once, after one
///   step latency: on direct routes, or across nodes holding g > 1 ranks each through the
///   same-index GPU of the destination node (rail relay, as DeepEP); identical messages run as
///   one weighted flow group (comm/all_to_all.hpp).
/// - automatic: NCCL's rule (src/graph/tuning.cc picks the algorithm with the lowest predicted
///   latency + size/bandwidth) applied to this model's closed forms (predict()), one loop over
///   the algorithm registry (algorithms.hpp): the ring family, for all_reduce the tree and, on
///   one node whose switch reduces, NVLS (NCCL enables NVLS on one node only; across nodes it
///   runs NVLS_TREE, not modelled here). The ring family is the hierarchical algorithm
///   where it applies (ranks on several nodes, the same count g > 1 on each), else the flat
///   ring: NCCL runs a flat ring, and the hierarchical form is this simulator's stand-in for it,
///   loading every NIC with the same bytes with ≈ g× fewer flows. Simulated on 16 DGX H100
///   nodes the flat ring is at most ≈ 5 % faster (all_gather/reduce_scatter ≥ 1 GB, all_reduce
///   ≈ 512 MiB) but starts 2.2× the flows and takes 3–4× the simulation time, so it runs only
///   when asked for. The stand-in pays the flat ring's latency: the (nodes − 1)·(g − 1) NVLink
///   hops per pass that its phases do not step through (NCCL tuning.cc: nsteps − nInterSteps
///   NVLink steps) are added once per call (algorithms.cpp flat_ring_hop_latency); until round
///   36 it charged only g − 1 per phase, so a ring over 64 nodes of 8 missed 441 of its 448.
///
/// Many collectives may run at once on one FlowNetwork; links they share slow them all.
class Communicator {
 public:
  Communicator(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster);

  /// Starts a collective over `ranks` (global GPU ids; their order is the logical rank order).
  /// `on_done` runs once, when every rank has finished (one rank: after the launch latency).
  /// Returns immediately. Throws std::invalid_argument for no ranks, a repeated or unknown GPU,
  /// negative bytes, `hierarchical` over nodes holding different numbers of ranks, `tree` for
  /// an op other than all_reduce, or `nvls` where it does not apply. (`hierarchical` where
  /// the ranks sit on one node or one per node runs the ring; all_to_all runs all_to_all
  /// whatever the algorithm.)
  /// Cost: O(ranks · channels) setup, then one flow per rank, channel and step (ring,
  /// hierarchical), per tree edge, channel and chunk (tree), per ordered pair (all_to_all).
  void start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
             std::function<void()> on_done);

  /// Point-to-point send of `bytes` from GPU `src` to GPU `dst` (a pipeline-stage activation):
  /// launch_latency, then one connection along the cluster route. `on_done` runs when the last
  /// byte has arrived; src == dst completes after the launch latency. Throws
  /// std::invalid_argument for an unknown GPU or negative bytes. O(path length).
  void send(int src, int dst, double bytes, std::function<void()> on_done);

  /// Closed-form α–β estimate of the time `algorithm` takes for `op` on `ranks` with nothing else
  /// on the network, from the same topology constants the simulation uses:
  /// α_intra = step_latency + NVLink path latency, α_inter = step_latency + the latency of the
  /// route between the first ranks of the first two nodes; B_nv = the NVLink bandwidth,
  /// B_net = the bottleneck of that route; Λ = launch_latency (ring and hierarchical: the
  /// protocol's base latency, each protocol's closed form taken with its own); n ranks, N nodes,
  /// g per node.
  /// - ring all_reduce: Λ + 2(n−1)·(α + S/(C·n) / B_channel). Across nodes α = α_inter and
  ///   B_channel = min(B_nv / C, B_net · min(1, nics / C)): a position whose neighbour is on
  ///   another node sends all its steps over the network, one after another, and the ring waits
  ///   for it (NCCL's own model charges network latency only on the 2N inter-node steps, because
  ///   its 8 step slots overlap consecutive steps; this simulation does not). On one node (one
  ///   ring, see above) α = α_intra, C = 1, B_channel = B_nv: the simulated time exactly, when
  ///   nothing shares the links. reduce_scatter/all_gather: n − 1 steps.
  /// - nvls: k chunks of c bytes per GPU and direction (nvls_chunks()), B = the bottleneck of
  ///   the GPU ↔ reducer path, λ its latency both ways: Λ + σ + λ + (k + 1)·c / B (the first
  ///   chunk climbs alone, then one chunk per period comes back): the simulated time when
  ///   nothing shares the links.
  /// - hierarchical: per slice, phase p takes t_p = steps_p·(α_p + step_bytes_p / B_p); s
  ///   slices pipelined take Λ + Σ t_p + (s − 1)·max t_p.
  /// - tree: chain depth d = g − 1, inter-node tree depth D, k chunks of c bytes. The first chunk
  ///   climbs and descends alone: fill = 2·(d·(α_intra + c/B_nv) + D·(α_inter + c/B_net)); then
  ///   one chunk leaves per period, in which every link carries its full load: an NVLink 2C
  ///   chunks (one up, one down per channel), a NIC 3C / min(C, nics) (an inner node: up and two
  ///   children): period = max(α_intra + 2C·c/B_nv, α_inter + 3C/min(C, nics)·c/B_net);
  ///   Λ + fill + (k − 1)·period.
  /// - all_to_all: Λ + step_latency + λ_max + the busiest GPU link's bytes / its bandwidth.
  /// Returns Time::max() where the algorithm does not apply. O(ranks).
  Time predict(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm) const;

  /// The algorithm `automatic` runs: choose_algorithm() over the registry, i.e. the eligible
  /// algorithm with the lowest predict() (ring family first on ties). O(units · ranks).
  Algorithm choose(CollectiveOp op, const std::vector<int>& ranks, double bytes) const;

  void set_flow_trace(FlowTrace trace) { trace_ = std::move(trace); }

  /// Ring granularity. Stepped (the default): every ring step is a flow, and a rank starts
  /// step k+1 once it has sent and received step k. Fluid: each ring position sends the bytes
  /// of all its steps as one connection, after the latency of all its steps (steps × (step
  /// latency + path latency)). With steady link shares the two give the same time — a ring
  /// step ends when its slowest flow does, and so does the whole fluid ring — with 2(n−1)×
  /// fewer flows; they differ only while other traffic changes the shares mid-collective.
  void set_fluid_rings(bool fluid) { fluid_rings_ = fluid; }
  bool fluid_rings() const { return fluid_rings_; }

  /// Splits every send whose route crosses the spine tier into `flows` equal flows with distinct
  /// ECMP hashes (default: comm.flows_per_connection), as NCCL does with several queue pairs per
  /// connection (NCCL_IB_QPS_PER_CONNECTION) and Llama 3's Enhanced-ECMP with 16 flows per GPU
  /// pair. With 1, hashed ECMP collisions on spine links emerge at full strength.
  void set_flows_per_connection(int flows);
  int flows_per_connection() const { return flows_per_connection_; }

  /// Whether an all-to-all merges its identical messages into weighted flow groups (default
  /// true; comm/all_to_all.hpp). false runs one flow per message and leg, for checking the
  /// aggregation: the same times, with more flows.
  void set_aggregate_all_to_all(bool aggregate) { aggregate_all_to_all_ = aggregate; }

  /// Every all-to-all after this call moves routed tokens deduplicated as DeepEP does: each
  /// token choosing `picks` distinct of `targets` targets spread evenly over the ranks
  /// (CollectiveCall::route_targets; comm/all_to_all.hpp). 0, 0 (the default): one message per
  /// copy, as NCCL's all-to-all of the permuted copies.
  void set_all_to_all_routing(int targets, int picks) {
    route_targets_ = targets;
    route_picks_ = picks;
  }
  /// Every all-to-all on the rail relay after this call runs at its kernels' own rates as well
  /// as its links' (bytes/s, 0: none; config::CommSpec::EpKernels, comm/all_to_all.hpp): each
  /// GPU gets one link of `rdma_rate` its network legs cross and one of `forward_rate` its
  /// deliveries inside its node cross, added to the flow network the first time a collective
  /// uses them. Throws std::invalid_argument for a negative or non-finite rate.
  void set_all_to_all_kernels(double rdma_rate, double forward_rate);

  /// Whether a connection's queue pairs on several routes run as one multi-route group
  /// (FlowNetwork::start_flow_routes) that splits into one flow group per route at the first
  /// re-solve where their rates would part — the same times as the separate groups, with one
  /// flow record instead of ≈ 12 while the spine links have room (the usual case: 16 queue pairs
  /// of a connection share its NIC, which is their bottleneck). Default true, unless the
  /// environment variable IRONLAW_NO_ROUTE_MERGE is set when the Communicator is made (a switch
  /// for benchmarks and the tests that compare both ways). Never while a flow trace is set:
  /// the trace then sees each group end as before.
  void set_merge_routes(bool merge) { merge_routes_ = merge; }
  bool merge_routes() const { return merge_routes_; }

 private:
  void check_ranks(const std::vector<int>& ranks) const;
  /// The call start, predict and choose hand the algorithms: this communicator's all-to-all
  /// settings (aggregation, routing) on every one.
  CollectiveCall call_for(CollectiveOp op, const std::vector<int>& ranks, double bytes) const;
  /// The kernels' links of `ranks` (set_all_to_all_kernels), added where missing, handed to `call`.
  void attach_kernel_links(CollectiveCall& call);

  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  const hardware::Cluster& cluster_;
  std::shared_ptr<detail::RouteCache> routes_;  // connection routes, computed once per key
  FlowTrace trace_;
  bool fluid_rings_ = false;
  int flows_per_connection_ = 1;
  bool aggregate_all_to_all_ = true;
  int route_targets_ = 0;
  int route_picks_ = 0;
  double kernel_rdma_rate_ = 0;
  double kernel_forward_rate_ = 0;
  // The kernels' links by GPU id (kNoVia until a collective first needs one).
  std::vector<engine::LinkId> kernel_rdma_links_;
  std::vector<engine::LinkId> kernel_forward_links_;
  bool merge_routes_ = true;
  mutable std::vector<char> seen_;  // check_ranks' scratch: one mark per GPU, all 0 between calls
  // The collectives launched and not finished (Collective::set_registry): they own themselves
  // through this list, so that their ring callbacks can hold plain pointers.
  std::vector<std::shared_ptr<detail::Collective>> live_;
};

/// One row of an nccl-tests-style table.
struct BenchRow {
  double bytes = 0;
  double time_us = 0;
  double algbw_gbs = 0;  ///< S / t [GB/s, 1e9]
  double busbw_gbs = 0;  ///< algbw × bus_factor
};

/// Simulates `op` over all GPUs of `nodes` nodes of `topology` for sizes min_bytes,
/// min_bytes·factor, … ≤ max_bytes, each in a fresh simulation, with `algorithm` (automatic:
/// Communicator::choose() per size).
/// Throws std::invalid_argument unless 0 < min_bytes ≤ max_bytes and factor > 1.
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor,
                                       Algorithm algorithm = Algorithm::automatic);
/// As above, with Communicator::set_flows_per_connection(flows_per_connection).
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm,
                                       int flows_per_connection);

/// How bench_collective runs each size.
struct BenchOptions {
  Algorithm algorithm = Algorithm::automatic;
  int flows_per_connection = 0;  ///< 0: the topology's comm.flows_per_connection
  bool fluid = false;            ///< Communicator::set_fluid_rings (the run layer's default)
  /// Runs one row's simulation instead of sim.run() when set (the command line bounds it in CPU
  /// time, run/cpu_budget.hpp): `floor` is half the collective's closed-form time
  /// (Communicator::predict of the algorithm it runs), a lower bound of its simulated duration,
  /// or zero when none is known; `what` names the row. Only reads: no figure changes.
  std::function<void(engine::Simulator& sim, Time floor, const std::string& what)> run;
  /// all_to_all of routed tokens (Communicator::set_all_to_all_routing): each token picks
  /// `route_picks` of `route_targets` experts spread evenly over the ranks; the size counts every
  /// copy (tokens × picks × token bytes per rank), deduplicated as DeepEP sends them. 0, 0: one
  /// message per copy, as NCCL's all-to-all.
  int route_targets = 0;
  int route_picks = 0;
  /// The dispatch kernels' own rates on the relay (Communicator::set_all_to_all_kernels), B/s.
  double kernel_rdma_rate = 0;
  double kernel_forward_rate = 0;
};
/// As above, with every option.
std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, const BenchOptions& options);

}  // namespace ironlaw::comm
