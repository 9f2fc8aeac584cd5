#pragma once
/// \file Flow-level ("fluid") network: links with bandwidth and latency; a flow crosses a path
/// of links; concurrent flows share each link max-min fairly.
///
/// Timing of one flow: it consumes bandwidth from the moment it starts; once its last byte has
/// drained, its completion fires after the sum of the latencies of its path (α + S/B for a
/// lone flow). Rates are re-solved (progressive filling: the most constrained link first) for
/// the flows connected to a change, and at most once per simulated instant: all starts and
/// ends at one time are batched into a single re-solve.
///
/// Pinned-down semantics:
/// - A re-solve is an ordinary Simulator event scheduled at the instant of the first change
///   (start, drain, cancel) after the previous re-solve, so it runs after every event already
///   queued for that instant; changes made by those events join the same batch. A change made
///   at the same instant *after* the re-solve ran (e.g. by a completion callback) gets one more.
/// - Until that re-solve has run, a new flow has rate 0 (rate() returns 0 right after
///   start_flow()); it still consumes bandwidth from its start time, since no simulated time
///   passes before the re-solve.
/// - Lazy partial re-solve first: only the flows started in the batch and those on a changed
///   link that was saturated are re-solved, with, on each saturated link of a re-solved flow,
///   the flows faster there than it (closed over those taken: the flows a failed check would
///   add), over what the other flows leave of each link; every other flow keeps its rate. The
///   result is the max-min allocation when, besides the check below, every kept flow whose
///   bottleneck (the link that froze it last) carries a re-solved flow keeps it: still
///   saturated, no re-solved flow faster there. Where a check fails, every flow on each failing
///   link joins the next round (at most kLazyRounds rounds). Then the
///   closed partial re-solve: the same seeds and transitively every flow sharing a saturated
///   link with one of them. The result is checked against the definition of
///   max-min fairness (every re-solved flow is frozen on a link where no other flow is faster;
///   the others keep their saturated, untouched bottleneck), which makes it the max-min
///   allocation itself (unique, so the one a full re-solve gives, up to rounding). Where the
///   check fails, the connected component (flows ↔ shared links) of the changed links is
///   re-solved. Flows whose rate did not change (by more than 1e-9 relative: rounding noise of
///   the filling) keep their rate and their scheduled drain event. "Saturated": less than 1e-6
///   of the link's bandwidth unused as of the last re-solve covering it.
/// - Drain coalescing within epsilon: a flow whose last byte is due to leave at t (rounded up
///   to whole ns) drains from the first pending drain instant in [t, t + epsilon] where there
///   is one, else from a new instant at t; the flows of one instant drain from one event, in
///   the order their drains were scheduled. A drain is never earlier than due and at most
///   epsilon later; an instant, once created, never moves. A pending instant is one that holds
///   a live drain: when the last of its flows is re-rated (its drain moves to another instant),
///   or cancelled, it is withdrawn at once (its event cancelled), so no later drain joins
///   it and it costs no heap entry while it waits. Epsilon (set_drain_epsilon) is
///   kDrainEpsilon = 10 ns by default: a tenth of the smallest link latency any shipped topology
///   declares (100 ns, ~20 m of cable), 1/50 of a NIC or NVLink hop (0.5 us) and 1/60 to 1/1,400
///   of NCCL's per-step latencies (0.6 to 14 us), so it is below what the model resolves. Bound:
///   each coalesced drain delays its completion by less than epsilon (the flow keeps its share
///   that long, so a flow sharing its links is delayed by at most as much), so a step moves by
///   at most (drains on its critical path) x epsilon. Epsilon 0 gives exact instants (shared,
///   never moved).
/// - Tail coalescing: completions due at one instant whose events would be scheduled one right
///   after another (the flows of one drain instant with equal path latencies) run from one
///   event, in that order; a stop() between two of them leaves the rest pending in the place
///   their events would have held. Exact: every callback runs at the same time and in the same
///   order as with one event per completion; only events_executed() falls.
///   set_coalesce_tails(false) gives one event per completion (for tests).
/// - Bytes are doubles, time is integer ns: a drain time is rounded up to whole ns, and a
///   flow with remaining ≤ max(1e-6·bytes, 1e-3 B) at a re-solve counts as drained.
/// - A flow with zero bytes drains at once; one with an empty path completes after 0 ns.
///   Completion is always delivered by an event (or inside the drain event), never
///   synchronously inside start_flow().
/// - Callbacks may start and cancel flows.
/// - A flow group of weight w (start_flow_group) stands for w identical flows: the same path,
///   the same bytes, the same start. It takes w shares on every link it crosses, so max-min
///   fairness gives each member exactly what each of the w unfolded flows would get (identical
///   flows on identical paths always receive identical rates; the filling subtracts w·share once
///   where it subtracted share w times, a difference of float rounding only). It drains,
///   completes and counts (flows_started, link bytes) as its w members.
/// - A multi-route group (start_flow_routes) stands for flow groups that start together with the
///   same bytes on routes of equal latency, which share some links (a connection's NIC) and not
///   others (its queue pairs' spine links): one record, holding on each link the members of the
///   routes that cross it. Its members all get one rate as long as the filling freezes it on a
///   link that every route crosses — then it is exactly the separate groups, which would all be
///   frozen there at that same share (float rounding aside, as for a group). At the first
///   re-solve whose filling would reach it first on a link that only some routes cross (there the
///   routes part: some freeze, others go on), it splits into one flow group per route, each in
///   the group's state (bytes left, rate, pending drain), and that re-solve runs with them.
///   From then on they are ordinary flow groups; its callback runs after the last of them.
/// - Cost model: a partial re-solve costs O(F·P + k + F log F) for the F flows it re-solves (P
///   hops each) and the k flows on their links; a full one O((F·P + L) log L) for the F flows
///   and L links of the changed component. Flows joined only through links with room (a fat
///   tree's spine under a moderate load) no longer re-solve each other; flows that end
///   together are solved once.
#include <cstdint>
#include <functional>
#include <memory>
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

  /// Adds a one-directional link. `bandwidth` in bytes/s (> 0, finite); `latency` ≥ 0.
  /// Throws std::invalid_argument otherwise. Amortised O(1).
  LinkId add_link(double bandwidth, Time latency, std::string name = {});
  /// Number of links added. O(1).
  std::size_t link_count() const;
  /// Name given to add_link (may be empty). O(1).
  const std::string& link_name(LinkId id) const;
  /// Capacity [B/s]. O(1).
  double link_bandwidth(LinkId id) const;
  /// Propagation latency added once per traversal. O(1).
  Time link_latency(LinkId id) const;
  /// Counters of a link, current as of now(): `busy` includes the ongoing busy period;
  /// `bytes` counts a flow's payload once it has drained (a cancelled flow counts the part
  /// drained before the cancel). O(1).
  const LinkStats& link_stats(LinkId id) const;

  /// Starts a flow of `bytes` over `path` (links in order; may be empty = local copy that takes
  /// only 0 time). `on_done` runs at completion. Amortised cost: one re-solve of the connected
  /// flows per simulated instant.
  /// Cost: O(path length) here, plus the batched re-solve: O((F·P + L) log L) for the F flows
  /// and L links of the touched component. No heap allocation once flow slots are warm.
  /// Throws std::invalid_argument for an unknown link or negative/non-finite bytes.
  /// FlowIds are never reused within one FlowNetwork and are never 0.
  FlowId start_flow(std::span<const LinkId> path, double bytes, OnDone on_done);
  /// As above; `on_drained` also runs, from an event at the instant the last byte has left the
  /// source (before the path latency has passed), unless the flow is cancelled before it drains. A sender
  /// that streams (keeps several steps in flight) starts its next step there.
  FlowId start_flow(std::span<const LinkId> path, double bytes, OnDone on_done, OnDone on_drained);
  /// A flow group: `members` (≥ 1) identical flows of `bytes` each over `path`, started now, as
  /// one weighted flow (see the file comment). `on_done` and `on_drained` run once, for the
  /// whole group. rate() is a member's rate. Same cost as one flow; throws as start_flow does,
  /// and for members < 1.
  FlowId start_flow_group(std::span<const LinkId> path, double bytes, std::uint32_t members, OnDone on_done,
                          OnDone on_drained = nullptr);
  /// One link of a multi-route group's routes: `routes` has bit r set when route r crosses it.
  struct RouteHop {
    LinkId link;
    std::uint32_t routes;
  };
  /// Most routes of one multi-route group.
  static constexpr std::size_t kMaxRoutes = 32;
  /// A multi-route group (see the file comment): route r stands for `members[r]` identical flows
  /// of `bytes` each over the links of `hops` whose bit r is set (each link listed once); all
  /// start now. `on_done` runs once, after every member has completed. Counts as the members
  /// in flows_started() and once in records_started() (each split part once more). No id: it
  /// cannot be cancelled. Throws std::invalid_argument for 0 or more than kMaxRoutes routes, a
  /// member count < 1, a hop naming no route or one beyond members, a route crossing no link,
  /// routes whose latencies differ, an unknown link, or bytes as start_flow. Cost: O(hops ·
  /// routes) here; the re-solves as one flow; a split O(hops · routes) once.
  void start_flow_routes(std::span<const RouteHop> hops, std::span<const std::uint32_t> members, double bytes,
                         OnDone on_done);
  /// Cancels a flow in progress (draining or in its latency tail); its callback never runs.
  /// Idempotent; unknown or finished flows are ignored. O(path length) + the batched re-solve.
  void cancel_flow(FlowId id);

  /// Current fair-share rate of an active flow [B/s] (0 if not active, in its latency tail,
  /// or not yet re-solved since it started). O(1).
  double rate(FlowId id) const;
  /// Flows started and neither completed nor cancelled (includes flows in their latency tail).
  std::size_t active_flows() const;
  /// Flows started since construction (a group counts as its members).
  std::uint64_t flows_started() const;
  /// Flow records started since construction (a group counts once): what the network simulates.
  std::uint64_t records_started() const;
  /// Re-solve passes run since construction, local and full (for benchmarks and tests).
  std::uint64_t resolves() const;
  /// Of those, the full re-solves of a connected component (the partial one did not apply).
  std::uint64_t full_resolves() const;
  /// Partial re-solve passes since construction, lazy and closed: one per re-solve where the
  /// first pass's check holds, more where a check fails and a wider pass runs (for benchmarks
  /// and tests).
  std::uint64_t partial_passes() const;
  /// Multi-route groups split into their routes since construction (for benchmarks and tests).
  std::uint64_t route_splits() const;
  /// Whether completions that would run back to back at one instant share one event (see the
  /// file comment; default true). Set before the first flow starts. O(1).
  void set_coalesce_tails(bool coalesce);
  /// Drain coalescing's epsilon (see the file comment): a drain due at t runs from a pending
  /// drain instant in [t, t + epsilon] where there is one. Default kDrainEpsilon; 0 gives
  /// every drain its own exact instant (instants are then only shared, never moved). Set
  /// before the first flow starts. Throws std::invalid_argument for a negative epsilon. O(1).
  void set_drain_epsilon(Time epsilon);
  Time drain_epsilon() const;
  /// The default drain epsilon, 10 ns (see the file comment for the argument).
  static constexpr Time kDrainEpsilon = Time::ns(10);
  /// Lazy rounds of the partial re-solve (see the file comment) before the closed one; 0 gives
  /// the closed partial re-solve only (for tests). Throws std::invalid_argument for a negative
  /// count. O(1).
  void set_lazy_rounds(int rounds);
  /// The default number of lazy rounds.
  static constexpr int kLazyRounds = 4;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ironlaw::engine
