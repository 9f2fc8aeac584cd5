#pragma once
/// \file Flow-level ("fluid") network: links with bandwidth and latency; a flow crosses a path
/// of links; concurrent flows share each link max-min fairly.
///
/// Timing of one flow: it consumes bandwidth from the moment it starts; once its last byte has
/// drained, its completion fires after the sum of the latencies of its path (α + S/B for a
/// lone flow). Rates are re-solved (progressive filling: the most constrained link first) for
/// the flows connected to a change, and at most once per simulated instant: all starts and
/// ends at one time are batched into a single re-solve.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::engine {

using LinkId = std::uint32_t;
using FlowId = std::uint64_t;

/// Per-link counters, for utilisation reports.
struct LinkStats {
  double bytes = 0;      ///< payload bytes carried
  Time busy;             ///< time with at least one flow on the link
};

class FlowNetwork {
 public:
  using OnDone = std::function<void(FlowId)>;

  explicit FlowNetwork(Simulator& sim);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork();

  /// Adds a one-directional link. `bandwidth` in bytes/s (> 0).
  LinkId add_link(double bandwidth, Time latency, std::string name = {});
  std::size_t link_count() const;
  const std::string& link_name(LinkId id) const;
  double link_bandwidth(LinkId id) const;
  const LinkStats& link_stats(LinkId id) const;

  /// Starts a flow of `bytes` over `path` (links in order; may be empty = local copy that takes
  /// only 0 time). `on_done` runs at completion. Amortised cost: one re-solve of the connected
  /// flows per simulated instant.
  FlowId start_flow(std::span<const LinkId> path, double bytes, OnDone on_done);
  /// Cancels a flow in progress; its callback never runs. Idempotent.
  void cancel_flow(FlowId id);

  /// Current fair-share rate of an active flow [B/s] (0 if not active).
  double rate(FlowId id) const;
  std::size_t active_flows() const;
  /// Flows started since construction.
  std::uint64_t flows_started() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace ironlaw::engine
