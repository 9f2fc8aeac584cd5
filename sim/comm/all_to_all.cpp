#include "comm/all_to_all.hpp"

namespace ironlaw::comm {

bool all_to_all_relays(const CollectiveCall& call) { return call.op == CollectiveOp::all_to_all && call.layered(); }

std::vector<DirectSend> all_to_all_sends(const CollectiveCall& call, bool aggregate) {
  std::vector<DirectSend> out;
  const int n = call.size();
  if (n < 2) return out;
  const double share = call.bytes / n;
  if (!all_to_all_relays(call)) {
    out.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
    std::uint64_t hash = 0;
    for (int src : call.ranks) {
      for (int dst : call.ranks) {
        if (src != dst) out.push_back({src, dst, share, 1, hash++});
      }
    }
    return out;
  }
  // Relay: groups[m][l] is the rank of local index l on node m (every node holds g ranks).
  const auto& groups = call.groups;
  const int nodes = call.nodes();
  const int g = static_cast<int>(groups.front().size());
  auto add = [&](int src, int dst, std::uint32_t messages, std::uint64_t hash) {
    if (aggregate) {
      out.push_back({src, dst, share, messages, hash});
      return;
    }
    for (std::uint32_t k = 0; k < messages; ++k) out.push_back({src, dst, share, 1, hash});
  };
  std::uint64_t hash = 0;
  for (int a = 0; a < nodes; ++a) {
    for (int i = 0; i < g; ++i) {
      const int src = groups[static_cast<std::size_t>(a)][static_cast<std::size_t>(i)];
      // Network legs: to the same-index GPU of every other node, one message per GPU there.
      for (int b = 0; b < nodes; ++b) {
        if (b != a) add(src, groups[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)], static_cast<std::uint32_t>(g), hash++);
      }
      // NVLink legs: its own message to each GPU of its node, plus the N − 1 it forwards there
      // from the GPUs of index i on the other nodes.
      for (int j = 0; j < g; ++j) {
        if (j != i) add(src, groups[static_cast<std::size_t>(a)][static_cast<std::size_t>(j)], static_cast<std::uint32_t>(nodes), hash++);
      }
    }
  }
  return out;
}

}  // namespace ironlaw::comm
