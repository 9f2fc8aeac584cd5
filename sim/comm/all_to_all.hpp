#pragma once
/// \file The all-to-all's messages, their routes, and their aggregation into weighted sends.
///
/// An all-to-all of S bytes per rank over n ranks sends one message of S/n bytes from every rank
/// to every other (NCCL: an ncclGroup of one ncclSend/ncclRecv per peer). Routes:
/// - Ranks on several nodes, the same count g > 1 on each (CollectiveCall::layered()): rail
///   relay, as DeepSeek's DeepEP dispatches and combines (DeepSeek-V3 report §3.2.2: tokens go
///   over InfiniBand to the GPU of the same in-node index on the target node, then over NVLink
///   to their destination GPU). Message A.i → B.j (node A, local index i) crosses the network
///   A.i → B.i, then NVLink B.i → B.j (no NVLink leg when j = i); a message inside a node is one
///   NVLink send. NCCL's PXN relays on the sender's side instead (NVLink A.i → A.j, network
///   A.j → B.j); in a symmetric all-to-all it loads each NIC and NVLink with the same bytes.
///   The two legs of a relayed message run at once, as a pipelined relay streams in steady
///   state (the fluid limit of DeepEP's chunked forwarding): a message ends when both have
///   drained, so it takes the longer of the two, not their sum.
/// - Otherwise (one node, one rank per node, or ranks spread unevenly): every message on the
///   cluster's direct route.
///
/// The kernels' own rates (CollectiveCall::kernel_rdma_rate, kernel_forward_rate; topology
/// comm.ep_kernels, measured from the libraries' benchmarks): DeepEP's and HybridEP's kernels
/// move tokens with a few SMs' warps that copy each token into send buffers, post its RDMA write
/// and, on the relaying GPU, copy it on to every GPU of the node that holds one of its experts,
/// itself included. Their benchmarks reach ≈ 43.5 GB/s of token payload per 400 Gb/s NIC where
/// NCCL reaches 46–48, and, where few nodes make the relay the bottleneck (two nodes: ≈ 6 bytes
/// delivered in the node per byte received over the network), fewer bytes per second than the
/// NVLinks carry. Each rate is one link per GPU that its sends cross before their route: the
/// network legs of a GPU through its rdma link; its NVLink legs, and its delivery to itself (N
/// messages: its own and the N − 1 it relays), through its forward link. All-to-alls that run at
/// once on a GPU (a dispatch beside another microbatch's combine under parallel.moe_a2a_overlap)
/// share its links: assumed, as the benchmarks time one kernel alone; whether two kernels on
/// their own SMs would reach more together is not known.
///
/// Aggregation: messages whose legs have the same endpoints follow the same route and start
/// together with the same bytes, so they are identical flows, and one weighted send of weight w
/// (FlowNetwork::start_flow_group) is exactly w of them. With relay that makes one network send
/// per (source GPU, destination node), of weight g, and one NVLink send per ordered pair of GPUs
/// in a node, of weight N (its own message and the N − 1 it forwards): N(N − 1)·g + N·g(g − 1)
/// sends instead of n(n − 1) flows, 896 instead of 4,032 for DeepSeek-V3's 64-way expert
/// parallelism over 8 nodes. Direct routes share no endpoints, so nothing merges there.
#include <vector>

#include "comm/algorithms.hpp"

namespace ironlaw::comm {

/// The sends of the all-to-all `call` (see the file comment). `aggregate` false: one send of
/// weight 1 per message and leg, with the hash its aggregate would have (the same routes), for
/// checking the aggregation against. Sends are in a fixed order (source rank, then destination
/// rank). O(n²) time without aggregation; with relay O(N²·g + N·g²) sends after an O(n) scan.
std::vector<DirectSend> all_to_all_sends(const CollectiveCall& call, bool aggregate = true);

/// Whether `call` relays its inter-node messages through the same-index GPU (layered()).
bool all_to_all_relays(const CollectiveCall& call);

/// Deduplicated dispatch (CollectiveCall::route_targets > 0: DeepSeek's DeepEP, whose kernels send
/// a token once to each GPU that holds any of its experts, is_token_in_rank, and between nodes
/// once to each node with the bitmap of its GPUs there, SourceMeta; Megatron-core's flex
/// dispatcher "removes redundant tokens during cross-node communication"): each message of the
/// copy-per-target all-to-all scaled by the expected share of the copies that remain. A token
/// choosing k of E targets spread evenly over d destinations hits a given destination with
/// probability 1 − C(E − E/d, k)/C(E, k), i.e. d·(1 − C(E − E/d, k)/C(E, k)) distinct ones where
/// the copies count k: the factor is that over k, ≤ 1. O(k).
double all_to_all_distinct_share(int targets, int picks, int destinations);

}  // namespace ironlaw::comm
