#include "comm/all_to_all.hpp"

#include <algorithm>
#include <stdexcept>

namespace ironlaw::comm {

bool all_to_all_relays(const CollectiveCall& call) { return call.op == CollectiveOp::all_to_all && call.layered(); }

double all_to_all_distinct_share(int targets, int picks, int destinations) {
  if (targets <= 0 || picks <= 0 || destinations <= 0) return 1.0;
  if (picks > targets || targets % destinations != 0) {
    throw std::invalid_argument("all_to_all_distinct_share: needs picks <= targets and targets divisible by destinations");
  }
  // P(no pick lands on one destination) = C(E − E/d, k)/C(E, k) = Π_i (E − E/d − i)/(E − i).
  const double per = static_cast<double>(targets) / destinations;
  double miss = 1.0;
  for (int i = 0; i < picks; ++i) miss *= std::max(0.0, targets - per - i) / (targets - i);
  return destinations * (1.0 - miss) / picks;
}

std::vector<DirectSend> all_to_all_sends(const CollectiveCall& call, bool aggregate) {
  std::vector<DirectSend> out;
  const int n = call.size();
  if (n < 2) return out;
  // Per message: a source's copies for one destination GPU, fewer once deduplicated per GPU
  // (to_gpu) and, on the network leg of the relay, per node (to_node).
  const double to_gpu = call.bytes / n * all_to_all_distinct_share(call.route_targets, call.route_picks, n);
  if (!all_to_all_relays(call)) {
    out.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
    std::uint64_t hash = 0;
    for (int src : call.ranks) {
      for (int dst : call.ranks) {
        if (src != dst) out.push_back({src, dst, to_gpu, 1, hash++});
      }
    }
    return out;
  }
  // Relay: groups[m][l] is the rank of local index l on node m (every node holds g ranks).
  const auto& groups = call.groups;
  const int nodes = call.nodes();
  const int g = static_cast<int>(groups.front().size());
  // The network leg to a node carries g messages, one per GPU there: a source's copies for that
  // node, t·k·h·g/n bytes; deduplicated, each token once per node, t·P_node·h, which is g
  // messages of (S/n)·(N·P_node/k) with S = t·k·h and n = N·g.
  const double to_node = call.bytes / n * all_to_all_distinct_share(call.route_targets, call.route_picks, nodes);
  // The kernels' own links (CollectiveCall::kernel_rdma_links, kernel_forward_links): one per
  // GPU for its network legs, one for its deliveries inside its node, the one to itself included.
  auto via = [](const std::vector<engine::LinkId>* links, int gpu) {
    return links != nullptr ? (*links)[static_cast<std::size_t>(gpu)] : DirectSend::kNoVia;
  };
  auto add = [&](int src, int dst, std::uint32_t messages, std::uint64_t hash, double bytes, engine::LinkId through) {
    if (aggregate) {
      out.push_back({src, dst, bytes, messages, hash, through});
      return;
    }
    for (std::uint32_t k = 0; k < messages; ++k) out.push_back({src, dst, bytes, 1, hash, through});
  };
  std::uint64_t hash = 0;
  for (int a = 0; a < nodes; ++a) {
    for (int i = 0; i < g; ++i) {
      const int src = groups[static_cast<std::size_t>(a)][static_cast<std::size_t>(i)];
      // Network legs: to the same-index GPU of every other node, one message per GPU there.
      const engine::LinkId rdma = via(call.kernel_rdma_links, src);
      for (int b = 0; b < nodes; ++b) {
        if (b != a) add(src, groups[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)], static_cast<std::uint32_t>(g), hash++, to_node, rdma);
      }
      // NVLink legs: its own message to each GPU of its node, plus the N − 1 it forwards there
      // from the GPUs of index i on the other nodes; with a forwarding rate, also the N messages
      // it delivers to itself, which cross no NVLink but pass through its kernel.
      const engine::LinkId forward = via(call.kernel_forward_links, src);
      for (int j = 0; j < g; ++j) {
        if (j != i || forward != DirectSend::kNoVia) {
          add(src, groups[static_cast<std::size_t>(a)][static_cast<std::size_t>(j)], static_cast<std::uint32_t>(nodes), hash++, to_gpu, forward);
        }
      }
    }
  }
  return out;
}

}  // namespace ironlaw::comm
