#pragma once
/// \file The collective executor (internal to the comm layer): the rings, trees, in-switch
/// reductions and direct sends one collective is made of, their dependencies, and how they
/// become flows on the FlowNetwork as the simulation runs. Algorithms (algorithms.hpp) build a
/// Collective; Communicator launches it.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/collective.hpp"
#include "core/flat_map.hpp"

namespace ironlaw::comm::detail {

/// Ranks grouped by node, nodes in order of first appearance, ranks in their given order.
inline std::vector<std::vector<int>> group_by_node(const std::vector<int>& ranks, const hardware::Cluster& cluster) {
  std::vector<std::vector<int>> groups;
  if (ranks.size() <= 32) {  // a TP or EP group: scan the groups, no table over every node
    for (int gpu : ranks) {
      const int node = cluster.node_of(gpu);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return cluster.node_of(g.front()) == node; });
      if (it == groups.end()) it = groups.emplace(groups.end());
      it->push_back(gpu);
    }
    return groups;
  }
  std::vector<int> node_group;  // node → index in groups, -1 while the node has no rank
  node_group.assign(static_cast<std::size_t>(cluster.nodes()), -1);
  for (int gpu : ranks) {
    int& g = node_group[static_cast<std::size_t>(cluster.node_of(gpu))];
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<std::size_t>(g)].push_back(gpu);
  }
  return groups;
}

inline bool uniform(const std::vector<std::vector<int>>& groups) {
  return std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return g.size() == groups.front().size(); });
}

inline int channel_count(const hardware::Cluster& cluster) {
  const int c = cluster.topology().comm.channels;
  return c > 0 ? c : cluster.topology().node.nics;
}

/// The routes of GPU-to-GPU connections, computed once per (src, dst, hash, queue pairs) and
/// reused: the same pairs recur in every bucket, layer and microbatch. A connection's queue
/// pairs whose ECMP hashes give the same route are merged into one entry with their count.
/// Owned by the Communicator, shared with its collectives. Not thread-safe (one per simulation).
class RouteCache {
 public:
  /// One distinct route of a connection and the queue pairs on it.
  struct Route {
    std::vector<engine::LinkId> path;
    std::uint32_t members = 1;
  };
  /// A connection's routes as one multi-route group (FlowNetwork::start_flow_routes): every
  /// link of any route once, with the routes that cross it. Empty where they cannot be one
  /// (a single route, more than FlowNetwork::kMaxRoutes, or routes of unequal latency).
  struct Merged {
    std::vector<engine::FlowNetwork::RouteHop> hops;
  };

  RouteCache(const hardware::Cluster& cluster, const engine::FlowNetwork& net) : cluster_(cluster), net_(net) {}

  /// The distinct routes of a connection from `src` to `dst` split over `queue_pairs` flows,
  /// queue pair q hashed with hash·1024 + q (one flow: hash·1024), in order of their first
  /// queue pair. The reference is valid until the next call. O(1) amortised after the first call
  /// for a key; the first costs O(queue_pairs² · path length).
  const std::vector<Route>& connection(int src, int dst, std::uint64_t hash, int queue_pairs) {
    return entry(src, dst, hash, queue_pairs).routes;
  }
  /// The same connection's routes as one multi-route group (see Merged), computed with them.
  const Merged& merged(int src, int dst, std::uint64_t hash, int queue_pairs) {
    return entry(src, dst, hash, queue_pairs).merged;
  }

  /// The route of queue pair 0 (a one-flow connection's route).
  const std::vector<engine::LinkId>& path(int src, int dst, std::uint64_t hash) {
    return connection(src, dst, hash, 1).front().path;
  }
  /// A connection's routes, their merged form and route 0's latency, from one look-up.
  struct Entry {
    std::vector<Route> routes;
    Merged merged;
    Time latency;  // of routes.front().path (queue pair 0 is hashed as a one-flow connection)
    // The connection's rate alone on the network: over every link its queue pairs cross, the
    // link's bandwidth over the share of the connection's flows crossing it (bytes/s).
    double bandwidth = 0;
  };
  /// All of a connection's cached facts (see connection()). The reference stays valid while
  /// generation() is unchanged (the cache only ever drops entries all at once, to bound memory).
  const Entry& lookup(int src, int dst, std::uint64_t hash, int queue_pairs) {
    return entry(src, dst, hash, queue_pairs);
  }
  std::uint64_t generation() const { return generation_; }

 private:
  static constexpr std::size_t kMaxEntries = 1 << 20;

  struct Key {
    int src, dst;
    std::uint64_t hash;
    int queue_pairs;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {  // FlatMap finalises it
    std::uint64_t operator()(const Key& k) const {
      std::uint64_t h = k.hash * 0x9e3779b97f4a7c15ull;
      h ^= (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.src)) << 32 |
            static_cast<std::uint32_t>(k.dst)) + 0x7f4a7c15ull + (h << 6) + (h >> 2);
      h ^= static_cast<std::uint64_t>(k.queue_pairs) + (h << 6) + (h >> 2);
      return h;
    }
  };

  Entry& entry(int src, int dst, std::uint64_t hash, int queue_pairs) {
    if (entries_.size() > kMaxEntries) {  // bound memory: start over
      entries_.clear();
      index_.clear();
      ++generation_;
    }
    const Key key{src, dst, hash, queue_pairs};
    if (const std::uint32_t at = index_.find(key); at != Index::kAbsent) return entries_[at];
    index_.insert(key, static_cast<std::uint32_t>(entries_.size()));
    Entry& fresh = entries_.emplace_back();
    std::vector<Route>& routes = fresh.routes;
    std::vector<engine::LinkId> path;
    for (int q = 0; q < queue_pairs; ++q) {
      cluster_.route(src, dst, hash * 1024 + static_cast<std::uint64_t>(q), path);
      auto same = std::find_if(routes.begin(), routes.end(), [&](const Route& r) { return r.path == path; });
      if (same != routes.end()) {
        ++same->members;
      } else {
        routes.push_back(Route{path, 1});
      }
    }
    merge(routes, fresh.merged);
    for (auto link : routes.front().path) fresh.latency += net_.link_latency(link);
    fresh.bandwidth = alone_bandwidth(routes, queue_pairs);
    return fresh;
  }

  // A connection's rate with nothing else on the network: its `queue_pairs` equal flows over
  // `routes` are limited by the link where bandwidth / (flows crossing it / queue_pairs) is least.
  double alone_bandwidth(const std::vector<Route>& routes, int queue_pairs) const {
    std::vector<std::pair<engine::LinkId, std::uint32_t>> crossing;  // link, flows on it
    for (const Route& r : routes) {
      for (auto link : r.path) {
        auto it = std::find_if(crossing.begin(), crossing.end(), [&](const auto& c) { return c.first == link; });
        if (it == crossing.end()) {
          crossing.emplace_back(link, r.members);
        } else {
          it->second += r.members;
        }
      }
    }
    double rate = std::numeric_limits<double>::infinity();
    for (const auto& [link, flows] : crossing) {
      rate = std::min(rate, net_.link_bandwidth(link) * queue_pairs / flows);
    }
    return rate;
  }

  // The routes' links, each once with the routes crossing it; left empty unless 2 to
  // kMaxRoutes routes of one latency. O(routes² · path length).
  void merge(const std::vector<Route>& routes, Merged& out) const {
    if (routes.size() < 2 || routes.size() > engine::FlowNetwork::kMaxRoutes) return;
    auto latency = [&](const Route& r) {
      Time t;
      for (auto link : r.path) t += net_.link_latency(link);
      return t;
    };
    const Time first = latency(routes.front());
    for (const Route& r : routes) {
      if (r.path.empty() || latency(r) != first) return;
    }
    for (std::size_t r = 0; r < routes.size(); ++r) {
      for (auto link : routes[r].path) {
        auto hop = std::find_if(out.hops.begin(), out.hops.end(), [&](const auto& h) { return h.link == link; });
        if (hop == out.hops.end()) hop = out.hops.insert(out.hops.end(), engine::FlowNetwork::RouteHop{link, 0});
        hop->routes |= 1u << r;
      }
    }
  }

  // Keys to their entries' indices, at most half full (a look-up of a 24-byte key then rarely
  // probes a second slot). The entries live in a deque, so references stay valid while
  // entries are added.
  using Index = FlatMap<Key, KeyHash, 50>;
  const hardware::Cluster& cluster_;
  const engine::FlowNetwork& net_;
  std::deque<Entry> entries_;
  Index index_;
  std::uint64_t generation_ = 0;
};

/// One ring: position i sends `bytes` to position i+1 (mod n) in each of `steps` steps.
/// Position i starts step k when it is armed (its dependencies on earlier rings finished), its
/// own step k−1 send has completed and it has received step k−1 from position i−1.
struct Ring {
  /// One position's state, all in one array (one allocation per ring).
  struct Position {
    int started = 0, sent = 0, received = 0;
    int pending = 0;          // dependencies not yet finished
    int first_dependent = -1;  // its dependents: a list in Collective's dependency table, in
    int last_dependent = -1;   // the order they were added
    char armed = 0, done = 0;
    // Fluid pipelined dependencies (add_pipelined_dependency): the upstream completions its
    // send still waits for, and whether its own connection has completed meanwhile.
    int gates = 0;
    char flow_done = 0;
    // Fluid: its connection's cache entry, looked up when it armed, and the route cache's
    // generation then (the entry is looked up again if the cache was emptied since).
    const RouteCache::Entry* entry = nullptr;
    std::uint64_t entry_generation = 0;
  };
  std::vector<int> gpus;
  int steps = 0;            // of all its slices
  int slices = 1;           // pipeline slices it carries one after another (steps / slices each)
  double bytes = 0;
  std::uint64_t hash = 0;  // ECMP flow hash base of this ring's flows
  Time step_latency;       // before each step (the protocol's, over this ring's links)
  std::vector<Position> at;

  Ring(std::vector<int> members, int step_count, double step_bytes, std::uint64_t flow_hash)
      : gpus(std::move(members)), steps(step_count), bytes(step_bytes), hash(flow_hash), at(gpus.size()) {}
  int size() const { return static_cast<int>(gpus.size()); }
  int next(int i) const { return i + 1 == size() ? 0 : i + 1; }
};

/// One pipelined reduce-then-broadcast tree over GPUs (position 0 need not be the root).
/// Connection "up i" is position i → parent(i); connection "down i" is parent(i) → i. Each
/// carries `chunks` chunks of `chunk_bytes`, one after another.
struct Tree {
  std::vector<int> gpus;
  std::vector<int> parent;  // -1 at the root
  std::vector<std::vector<int>> children;
  int chunks = 1;
  double chunk_bytes = 0;
  std::uint64_t hash = 0;
  std::vector<int> up_started, up_done, down_started, down_done;

  void reset_counters() {
    const std::size_t n = gpus.size();
    up_started.assign(n, 0);
    up_done.assign(n, 0);
    down_started.assign(n, 0);
    down_done.assign(n, 0);
  }
  /// Chunks position i holds reduced over its whole subtree.
  int reduced(int i) const {
    int m = chunks;
    for (int c : children[static_cast<std::size_t>(i)]) m = std::min(m, up_done[static_cast<std::size_t>(c)]);
    return m;
  }
  /// Chunks position i holds fully reduced (the root: its reduction; others: from the parent).
  int final_chunks(int i) const {
    return parent[static_cast<std::size_t>(i)] < 0 ? reduced(i) : down_done[static_cast<std::size_t>(i)];
  }
};

/// In-switch reduction (NVLS): every GPU streams its data to the switch's reducer port in
/// `chunks` chunks of `chunk_bytes`, one after another; once the switch holds chunk j from every
/// GPU it multicasts the reduced chunk j back, to each GPU one chunk after another.
/// `chunk_bytes` is what one GPU moves per chunk into the switch, `down_chunk_bytes` what the
/// switch sends it back per chunk (0: chunk_bytes). All-reduce moves the same both ways;
/// reduce-scatter sends the whole chunk up and gets its reduced 1/n back; all-gather sends its
/// 1/n up and gets every GPU's share back (multicast).
struct Nvls {
  std::vector<int> gpus;
  int chunks = 1;
  double chunk_bytes = 0;
  double down_chunk_bytes = 0;
  double down_bytes() const { return down_chunk_bytes > 0 ? down_chunk_bytes : chunk_bytes; }
  std::vector<int> up_started, up_done, down_started, down_drained, down_done;
};

/// A collective in flight: its rings, trees and direct sends, their dependencies and the
/// completion callback. Owned by the callbacks it has scheduled; freed after the last one ran.
class Collective : public std::enable_shared_from_this<Collective> {
 public:
  Collective(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster,
             std::shared_ptr<RouteCache> routes, FlowTrace trace, Time step_latency, int flows_per_connection,
             std::function<void()> on_done)
      : sim_(sim), net_(net), cluster_(cluster), routes_(std::move(routes)), trace_(std::move(trace)),
        step_latency_(step_latency), flows_per_connection_(flows_per_connection), on_done_(std::move(on_done)) {}

  /// Fluid rings: each ring position sends all its steps' bytes as one connection, after the
  /// latency of all its steps (see RingModel::fluid).
  void set_fluid(bool fluid) { fluid_ = fluid; }
  bool fluid() const { return fluid_; }
  /// Whether a connection's queue pairs on several routes run as one multi-route group
  /// (FlowNetwork::start_flow_routes: exact, it splits where their rates part) instead of one
  /// flow group per route. Not while a flow trace is on, which records every queue pair's flow
  /// as the separate groups end.
  void set_merge_routes(bool merge) { merge_routes_ = merge; }

  /// The list in which a launched collective keeps its owning pointer until it finishes (the
  /// Communicator's; its collectives left unfinished go with it). The fluid rings' callbacks
  /// then hold a plain pointer, small enough for std::function's inline buffer: no heap
  /// allocation per connection. Without one, they hold the owning pointer as the other
  /// callbacks do.
  void set_registry(std::vector<std::shared_ptr<Collective>>* live) { live_ = live; }

  /// A ring whose steps each wait the collective's step latency.
  int add_ring(std::vector<int> gpus, int steps, double bytes, std::uint64_t hash) {
    return add_ring(std::move(gpus), steps, bytes, hash, step_latency_);
  }
  /// A ring whose steps each wait `step_latency` (a protocol's, over the ring's kind of link);
  /// it carries `slices` pipeline slices of steps / slices steps each, one after another
  /// (fluid only, for add_pipelined_dependency; `steps` a multiple of `slices`).
  int add_ring(std::vector<int> gpus, int steps, double bytes, std::uint64_t hash, Time step_latency, int slices = 1) {
    if (slices < 1 || steps % slices != 0 || (slices > 1 && !fluid_)) {
      throw std::invalid_argument("Collective::add_ring: slices must be ≥ 1, divide the steps, and be fluid");
    }
    rings_.emplace_back(std::move(gpus), steps, bytes, hash);
    rings_.back().step_latency = step_latency;
    rings_.back().slices = slices;
    units_left_ += rings_.back().gpus.size();
    return static_cast<int>(rings_.size()) - 1;
  }
  /// Position (after_ring, after_pos) may start only once (before_ring, before_pos) finished.
  void add_dependency(int before_ring, int before_pos, int after_ring, int after_pos) {
    link_dependency(before_ring, before_pos, after_ring, after_pos, false);
  }
  /// Fluid slices pipelined through two phases of one GPU (both rings carry the same number S
  /// of slices): (after_ring, after_pos) carries slice k once (before_ring, before_pos) has
  /// passed it on. With d_b and d_a the times one slice takes at each position alone on the
  /// network (steps per slice × (step latency + path latency + step bytes / the connection's
  /// rate alone, RouteCache::Entry::bandwidth)):
  /// - the after position is armed d_b + (S − 1)·max(0, d_b − d_a) after the before position
  ///   was armed: once the first slice has come through, and, behind a slower phase, as late as
  ///   still lets it finish with the last slice, so that its one connection never runs ahead
  ///   of the slices reaching it (taking link share that the sliced form leaves to others);
  /// - its connection, though it may drain sooner, completes no earlier than d_a after the
  ///   before position completed (the last slice still has to pass).
  /// With steady durations both give the pipeline's exact Σ d + (S − 1)·max d. While other
  /// traffic changes the shares, d_b and d_a are the uncontended estimates, as the fluid ring's
  /// steps are one flow: the fluid-vs-stepped test bounds the difference (5 %).
  void add_pipelined_dependency(int before_ring, int before_pos, int after_ring, int after_pos) {
    if (!fluid_ || rings_[before_ring].slices != rings_[after_ring].slices) {
      throw std::invalid_argument("Collective::add_pipelined_dependency: fluid rings of equal slices only");
    }
    link_dependency(before_ring, before_pos, after_ring, after_pos, true);
    ++rings_[after_ring].at[after_pos].gates;
  }

 private:
  void link_dependency(int before_ring, int before_pos, int after_ring, int after_pos, bool pipelined) {
    const int index = static_cast<int>(dependencies_.size());
    dependencies_.push_back(Dependency{after_ring, after_pos, -1, pipelined});
    Ring::Position& before = rings_[before_ring].at[before_pos];
    if (before.last_dependent < 0) {
      before.first_dependent = index;
    } else {
      dependencies_[static_cast<std::size_t>(before.last_dependent)].next = index;
    }
    before.last_dependent = index;
    ++rings_[after_ring].at[after_pos].pending;
  }

 public:
  void add_tree(Tree tree) {
    if (tree.gpus.size() < 2) return;
    tree.reset_counters();
    if (fluid_) {
      units_left_ += tree.chunks > 1 ? 2 * (tree.gpus.size() - 1) : 1;
    } else {
      units_left_ += 2 * (tree.gpus.size() - 1) * static_cast<std::size_t>(tree.chunks);
    }
    trees_.push_back(std::move(tree));
  }
  /// An NVLS reduction over `gpus` (see Nvls). Stepped: one unit per GPU (its last chunk
  /// back). Fluid: one unit per GPU and direction.
  void add_nvls(Nvls nvls) {
    if (nvls.gpus.size() < 2) return;
    const std::size_t n = nvls.gpus.size();
    for (auto* counter : {&nvls.up_started, &nvls.up_done, &nvls.down_started, &nvls.down_drained, &nvls.down_done}) {
      counter->assign(n, 0);
    }
    units_left_ += fluid_ ? 2 * n : n;
    nvls_.push_back(std::move(nvls));
  }
  /// A send that starts at launch, after the step latency when `stepped`.
  void add_direct(DirectSend d) {
    directs_.push_back(d);
    ++units_left_;
  }
  void set_direct_step_latency(bool stepped) { direct_stepped_ = stepped; }

  /// Arms every ring position without dependencies, starts the leaves of every tree and every
  /// direct send. Call at the collective's start time.
  void launch() {
    if (units_left_ == 0) {
      finish();
      return;
    }
    if (live_ != nullptr) {
      live_index_ = live_->size();
      live_->push_back(shared_from_this());
    }
    for (int r = 0; r < static_cast<int>(rings_.size()); ++r) {
      for (int i = 0; i < rings_[r].size(); ++i) {
        if (rings_[r].at[i].pending == 0) arm(r, i);
      }
    }
    for (int t = 0; t < static_cast<int>(trees_.size()); ++t) {
      if (fluid_) {
        launch_fluid_tree(t);
        continue;
      }
      for (int i = 0; i < static_cast<int>(trees_[t].gpus.size()); ++i) try_up(t, i);
    }
    for (int v = 0; v < static_cast<int>(nvls_.size()); ++v) {
      after(true, [self = shared_from_this(), v] { self->launch_nvls(v); });
    }
    for (int d = 0; d < static_cast<int>(directs_.size()); ++d) {
      after(direct_stepped_, [self = shared_from_this(), d] {
        const DirectSend& x = self->directs_[static_cast<std::size_t>(d)];
        if (x.src == x.dst) {
          // A delivery to itself through its kernel's link (DirectSend: only sends with a `via`
          // have src == dst), untraced: no GPU-to-GPU flow.
          const engine::LinkId via[1] = {x.via};
          self->net_.start_flow_group(via, x.bytes, x.weight, [self](engine::FlowId) { self->unit_done(); });
        } else {
          self->connect(x.src, x.dst, x.bytes, x.hash, [self] { self->unit_done(); }, x.weight, x.via);
        }
      });
    }
  }

 private:
  /// Runs `f` after the step latency (or now, without one, when `stepped` is false or σ = 0).
  template <class F>
  void after(bool stepped, F f) {
    if (!stepped || step_latency_ == Time::zero()) {
      f();
    } else {
      sim_.schedule_in(step_latency_, std::move(f));
    }
  }

  /// One GPU-to-GPU connection of `bytes`: one flow, or, across the spine, one flow per queue
  /// pair, each with its own ECMP hash and an equal share (see collective.hpp). Queue pairs
  /// whose hashes give the same route are identical flows (same path, bytes and start) and run
  /// as one flow group (FlowNetwork::start_flow_group), which the flow network solves exactly
  /// as the separate flows. `weight` identical connections run as one (every group `weight`
  /// times heavier). `via` (DirectSend::via): a link every flow crosses before its route.
  /// `done` runs once, after the last flow completed.
  template <class Done>
  void connect(int src, int dst, double bytes, std::uint64_t hash, Done done, std::uint32_t weight = 1,
               engine::LinkId via = DirectSend::kNoVia) {
    connect_on(routes_->lookup(src, dst, hash, queue_pairs(src, dst)), src, dst, bytes, std::move(done), weight, via);
  }

  /// connect() over the connection's cache entry `entry` (RouteCache::lookup of src, dst, its
  /// hash and queue_pairs(src, dst)). `done` is any callable; the flow's callback holds it
  /// as it is (one heap allocation at most, none where it fits std::function's inline buffer).
  template <class Done>
  void connect_on(const RouteCache::Entry& entry, int src, int dst, double bytes, Done done, std::uint32_t weight = 1,
                  engine::LinkId via = DirectSend::kNoVia) {
    const Time start = sim_.now();
    const int k = queue_pairs(src, dst);
    const auto& routes = entry.routes;
    // A route's path, behind `via` where there is one (in a scratch the flow network copies from).
    auto path_of = [&](const std::vector<engine::LinkId>& route) -> std::span<const engine::LinkId> {
      if (via == DirectSend::kNoVia) return route;
      via_path_.assign(1, via);
      via_path_.insert(via_path_.end(), route.begin(), route.end());
      return via_path_;
    };
    if (routes.size() == 1) {
      const std::uint32_t members = routes.front().members * weight;
      const double share = bytes / k;
      if (!trace_.on_flow) {  // nothing to trace
        net_.start_flow_group(path_of(routes.front().path), share, members, [done = std::move(done)](engine::FlowId) { done(); });
        return;
      }
      net_.start_flow_group(path_of(routes.front().path), share, members,
                            [self = shared_from_this(), src, dst, share, start, members, done = std::move(done)](engine::FlowId) {
                              for (std::uint32_t m = 0; m < members; ++m) self->traced(src, dst, share, start);
                              done();
                            });
      return;
    }
    const double share = bytes / k;
    if (merge_routes_ && !trace_.on_flow && via == DirectSend::kNoVia) {  // the cached merged form has no `via`
      const auto& merged = entry.merged;
      if (!merged.hops.empty()) {
        std::uint32_t members[engine::FlowNetwork::kMaxRoutes];
        for (std::size_t r = 0; r < routes.size(); ++r) members[r] = routes[r].members * weight;
        net_.start_flow_routes(merged.hops, std::span<const std::uint32_t>(members, routes.size()), share,
                               [done = std::move(done)](engine::FlowId) { done(); });
        return;
      }
    }
    auto self = shared_from_this();
    auto left = std::make_shared<std::size_t>(routes.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    for (const auto& route : routes) {
      const std::uint32_t members = route.members * weight;
      net_.start_flow_group(path_of(route.path), share, members,
                            [self, src, dst, share, start, members, left, shared_done](engine::FlowId) {
                              for (std::uint32_t m = 0; m < members; ++m) self->traced(src, dst, share, start);
                              if (--*left == 0) (*shared_done)();
                            });
    }
  }

  /// The flows of a connection from `src` to `dst`: one per queue pair across the spine, else 1.
  int queue_pairs(int src, int dst) const { return cluster_.crosses_spine(src, dst) ? flows_per_connection_ : 1; }

  void traced(int src, int dst, double bytes, Time start) const {
    if (trace_.on_flow) trace_.on_flow(src, dst, bytes, start, sim_.now());
  }

  void unit_done() {
    if (--units_left_ == 0) finish();
  }

  /// Fluid tree: the first chunk's climb to the root and descent to the deepest leaf is a
  /// fixed delay (per hop: step latency + path latency + chunk / bottleneck bandwidth); then
  /// every edge carries its remaining chunks up and down at once, as the pipelined tree does
  /// in steady state, sharing links with whatever else runs.
  void launch_fluid_tree(int t) {
    const Tree& tree = trees_[static_cast<std::size_t>(t)];
    const std::size_t n = tree.gpus.size();
    std::vector<double> to_root(n, -1.0);
    auto hop = [&](std::size_t i) {
      const int src = tree.gpus[i], dst = tree.gpus[static_cast<std::size_t>(tree.parent[i])];
      double latency = step_latency_.seconds(), bandwidth = std::numeric_limits<double>::infinity();
      for (auto link : routes_->path(src, dst, tree.hash)) {
        latency += net_.link_latency(link).seconds();
        bandwidth = std::min(bandwidth, net_.link_bandwidth(link));
      }
      return latency + tree.chunk_bytes / bandwidth;
    };
    std::function<double(std::size_t)> cost = [&](std::size_t i) -> double {
      if (tree.parent[i] < 0) return 0.0;
      if (to_root[i] < 0) to_root[i] = hop(i) + cost(static_cast<std::size_t>(tree.parent[i]));
      return to_root[i];
    };
    double deepest = 0;
    for (std::size_t i = 0; i < n; ++i) deepest = std::max(deepest, cost(i));
    const Time fill = Time::from_seconds(2 * deepest);
    sim_.schedule_in(fill, [self = shared_from_this(), t] {
      const Tree& x = self->trees_[static_cast<std::size_t>(t)];
      if (x.chunks <= 1) {
        self->unit_done();
        return;
      }
      const double rest = x.chunk_bytes * (x.chunks - 1);
      for (std::size_t i = 0; i < x.gpus.size(); ++i) {
        if (x.parent[i] < 0) continue;
        const int child = x.gpus[i], parent = x.gpus[static_cast<std::size_t>(x.parent[i])];
        self->connect(child, parent, rest, x.hash, [self] { self->unit_done(); });
        self->connect(parent, child, rest, x.hash, [self] { self->unit_done(); });
      }
    });
  }

  // In-switch reduction.
  void switch_flow(int gpu, bool to_switch, double bytes, std::function<void()> done,
                   std::function<void()> drained = nullptr) {
    const Time start = sim_.now();
    const auto path = cluster_.switch_route(gpu, to_switch);
    engine::FlowNetwork::OnDone on_drained;
    if (drained) on_drained = [drained = std::move(drained)](engine::FlowId) { drained(); };
    net_.start_flow(
        path, bytes,
        [self = shared_from_this(), gpu, to_switch, bytes, start, done = std::move(done)](engine::FlowId) {
          self->traced(to_switch ? gpu : -1, to_switch ? -1 : gpu, bytes, start);
          done();
        },
        std::move(on_drained));
  }

  void launch_nvls(int v) {
    const Nvls& x = nvls_[static_cast<std::size_t>(v)];
    if (!fluid_) {
      for (int i = 0; i < static_cast<int>(x.gpus.size()); ++i) nvls_up(v, i);
      return;
    }
    // Fluid: every GPU streams all its chunks up, and the multicast of all of them comes back
    // after the first chunk's trip into the switch (its transfer at the path's bottleneck rate
    // plus the path latency), as the chunk pipeline does in steady state.
    const auto path = cluster_.switch_route(x.gpus.front(), true);
    double bandwidth = std::numeric_limits<double>::infinity();
    Time latency;
    for (auto link : path) {
      bandwidth = std::min(bandwidth, net_.link_bandwidth(link));
      latency += net_.link_latency(link);
    }
    const double total = x.chunk_bytes * x.chunks;
    const double total_down = x.down_bytes() * x.chunks;
    for (int gpu : x.gpus) switch_flow(gpu, true, total, [self = shared_from_this()] { self->unit_done(); });
    const Time fill = latency + Time::from_seconds(x.chunk_bytes / bandwidth);
    sim_.schedule_in(fill, [self = shared_from_this(), v, total_down] {
      for (int gpu : self->nvls_[static_cast<std::size_t>(v)].gpus) {
        self->switch_flow(gpu, false, total_down, [self] { self->unit_done(); });
      }
    });
  }

  /// GPU i sends its next chunk into the switch; the one after starts once this one drained.
  void nvls_up(int v, int i) {
    Nvls& x = nvls_[static_cast<std::size_t>(v)];
    const auto u = static_cast<std::size_t>(i);
    ++x.up_started[u];
    switch_flow(
        x.gpus[u], true, x.chunk_bytes,
        [self = shared_from_this(), v, i] {
          Nvls& y = self->nvls_[static_cast<std::size_t>(v)];
          ++y.up_done[static_cast<std::size_t>(i)];
          for (int k = 0; k < static_cast<int>(y.gpus.size()); ++k) self->nvls_down(v, k);
        },
        [self = shared_from_this(), v, i] {
          const Nvls& y = self->nvls_[static_cast<std::size_t>(v)];
          if (y.up_started[static_cast<std::size_t>(i)] < y.chunks) self->nvls_up(v, i);
        });
  }

  /// The switch sends GPU i its next reduced chunk, once every GPU's copy of that chunk has
  /// arrived and the previous chunk to GPU i has drained.
  void nvls_down(int v, int i) {
    Nvls& x = nvls_[static_cast<std::size_t>(v)];
    const auto u = static_cast<std::size_t>(i);
    const int reduced = *std::min_element(x.up_done.begin(), x.up_done.end());
    if (x.down_started[u] >= reduced || x.down_drained[u] != x.down_started[u]) return;
    ++x.down_started[u];
    switch_flow(
        x.gpus[u], false, x.down_bytes(),
        [self = shared_from_this(), v, i] {
          Nvls& y = self->nvls_[static_cast<std::size_t>(v)];
          if (++y.down_done[static_cast<std::size_t>(i)] == y.chunks) self->unit_done();
        },
        [self = shared_from_this(), v, i] {
          ++self->nvls_[static_cast<std::size_t>(v)].down_drained[static_cast<std::size_t>(i)];
          self->nvls_down(v, i);
        });
  }

  // Rings.
  void arm(int r, int i) {
    Ring::Position& at = rings_[r].at[i];
    at.armed = 1;
    advance(r, i);
    // Pipelined dependents are armed once this position's first slice has come through.
    for (int d = at.first_dependent; d >= 0; d = dependencies_[static_cast<std::size_t>(d)].next) {
      const Dependency dep = dependencies_[static_cast<std::size_t>(d)];
      if (!dep.pipelined) continue;
      const Time up = slice_time(r, i), down = slice_time(dep.ring, dep.pos);
      const int more = rings_[r].slices - 1;
      later(up + (up > down ? (up - down) * more : Time::zero()), [](Collective& c, int ar, int ai) {
        if (--c.rings_[ar].at[ai].pending == 0) c.arm(ar, ai);
      }, dep.ring, dep.pos);
    }
  }

  /// One slice's time at ring r's position i alone on the network (add_pipelined_dependency).
  Time slice_time(int r, int i) {
    const Ring& ring = rings_[r];
    const int src = ring.gpus[i], dst = ring.gpus[ring.next(i)];
    const RouteCache::Entry& e = routes_->lookup(src, dst, ring.hash, queue_pairs(src, dst));
    const int steps = ring.steps / ring.slices;
    return (ring.step_latency + e.latency) * steps + Time::from_seconds(steps * ring.bytes / e.bandwidth);
  }

  /// Runs f(*this, a, b) `delay` from now. Registered (set_registry), the event holds a plain
  /// pointer: every event this schedules runs before the collective finishes (a fill before
  /// its dependent is armed, a gate before its position can be done).
  template <class F>
  void later(Time delay, F, int a, int b) {
    if (live_ != nullptr) {
      sim_.schedule_in(delay, [c = this, a, b] { F{}(*c, a, b); });
    } else {
      sim_.schedule_in(delay, [self = shared_from_this(), a, b] { F{}(*self, a, b); });
    }
  }

  void advance(int r, int i) {
    Ring& ring = rings_[r];
    Ring::Position& at = ring.at[i];
    const int k = at.started;
    if (fluid_) {
      if (!at.armed || k > 0) return;
      at.started = ring.steps;
      // steps × (step latency + path latency), less the path latency the flow itself adds.
      const int j = ring.next(i);
      Time wait = ring.step_latency * ring.steps;
      // The connection's cache entry, looked up once: route 0's latency now, its routes when
      // the connection starts (looked up again only if the cache was emptied meanwhile).
      const RouteCache::Entry* entry =
          &routes_->lookup(ring.gpus[i], ring.gpus[j], ring.hash, queue_pairs(ring.gpus[i], ring.gpus[j]));
      if (ring.steps > 1) wait += entry->latency * (ring.steps - 1);
      if (live_ == nullptr) {
        const std::uint64_t generation = routes_->generation();
        sim_.schedule_in(wait, [self = shared_from_this(), r, i, entry, generation] {
          self->start_fluid(r, i, entry, generation, [self, r, i] { self->fluid_sent(r, i); });
        });
        return;
      }
      // Registered (set_registry): plain pointers. The registry owns this collective until it
      // finishes, which is after every position's connection has completed; the completion
      // takes an owning pointer for its own duration, since it may finish the collective.
      at.entry = entry;
      at.entry_generation = routes_->generation();
      sim_.schedule_in(wait, [c = this, r, i] {
        const Ring::Position& p = c->rings_[r].at[i];
        c->start_fluid(r, i, p.entry, p.entry_generation,
                       [c, r, i] {
                         const auto hold = c->shared_from_this();
                         c->fluid_sent(r, i);
                       });
      });
      return;
    }
    if (!at.armed || k >= ring.steps || at.sent != k || at.received < k) return;
    ++at.started;
    auto step = [self = shared_from_this(), r, i] {
      const Ring& g = self->rings_[r];
      self->connect(g.gpus[i], g.gpus[g.next(i)], g.bytes, g.hash, [self, r, i] { self->ring_sent(r, i); });
    };
    if (ring.step_latency == Time::zero()) {
      step();
    } else {
      sim_.schedule_in(ring.step_latency, std::move(step));
    }
  }

  /// A fluid ring position's connection, over `entry` while the route cache is at `generation`.
  template <class Done>
  void start_fluid(int r, int i, const RouteCache::Entry* entry, std::uint64_t generation, Done done) {
    const Ring& g = rings_[r];
    const int src = g.gpus[i], dst = g.gpus[g.next(i)];
    const RouteCache::Entry& e =
        routes_->generation() == generation ? *entry : routes_->lookup(src, dst, g.hash, queue_pairs(src, dst));
    connect_on(e, src, dst, g.bytes * g.steps, std::move(done));
  }

  /// A fluid ring position's connection has completed: it has sent all its steps and its
  /// successor has received them.
  void fluid_sent(int r, int i) {
    Ring::Position& at = rings_[r].at[i];
    if (at.gates > 0) {  // the last slice has not come through upstream yet
      at.flow_done = 1;
      return;
    }
    Ring& h = rings_[r];
    const int nj = h.next(i);
    h.at[i].sent = h.steps;
    h.at[nj].received = h.steps;
    check_done(r, i);
    check_done(r, nj);
  }

  void ring_sent(int r, int i) {
    Ring& ring = rings_[r];
    const int j = ring.next(i);
    ++ring.at[i].sent;
    ++ring.at[j].received;
    check_done(r, i);
    check_done(r, j);
    advance(r, i);
    advance(r, j);
  }

  void check_done(int r, int i) {
    Ring& ring = rings_[r];
    Ring::Position& at = ring.at[i];
    if (at.done || at.sent != ring.steps || at.received != ring.steps) return;
    at.done = 1;
    for (int d = at.first_dependent; d >= 0;) {
      const Dependency dep = dependencies_[static_cast<std::size_t>(d)];
      if (dep.pipelined) {
        // The dependent's send completes no earlier than one of its slices after this.
        later(slice_time(dep.ring, dep.pos), [](Collective& c, int gr, int gi) {
          Ring::Position& p = c.rings_[gr].at[gi];
          if (--p.gates == 0 && p.flow_done) c.fluid_sent(gr, gi);
        }, dep.ring, dep.pos);
      } else if (--rings_[dep.ring].at[dep.pos].pending == 0) {
        arm(dep.ring, dep.pos);
      }
      d = dep.next;
    }
    unit_done();
  }

  // Trees.
  void try_up(int t, int i) {
    Tree& tree = trees_[t];
    const auto u = static_cast<std::size_t>(i);
    const int j = tree.up_started[u];
    if (tree.parent[u] < 0 || j >= tree.chunks || tree.up_done[u] != j || tree.reduced(i) <= j) return;
    ++tree.up_started[u];
    after(true, [self = shared_from_this(), t, i] {
      const Tree& x = self->trees_[t];
      const auto v = static_cast<std::size_t>(i);
      self->connect(x.gpus[v], x.gpus[static_cast<std::size_t>(x.parent[v])], x.chunk_bytes, x.hash,
                    [self, t, i] { self->up_sent(t, i); });
    });
  }

  void up_sent(int t, int i) {
    Tree& tree = trees_[t];
    const int p = tree.parent[static_cast<std::size_t>(i)];
    ++tree.up_done[static_cast<std::size_t>(i)];
    try_up(t, i);
    try_up(t, p);
    if (tree.parent[static_cast<std::size_t>(p)] < 0) {
      for (int c : tree.children[static_cast<std::size_t>(p)]) try_down(t, c);
    }
    unit_done();
  }

  void try_down(int t, int i) {
    Tree& tree = trees_[t];
    const auto u = static_cast<std::size_t>(i);
    const int j = tree.down_started[u];
    if (j >= tree.chunks || tree.down_done[u] != j || tree.final_chunks(tree.parent[u]) <= j) return;
    ++tree.down_started[u];
    after(true, [self = shared_from_this(), t, i] {
      const Tree& x = self->trees_[t];
      const auto v = static_cast<std::size_t>(i);
      self->connect(x.gpus[static_cast<std::size_t>(x.parent[v])], x.gpus[v], x.chunk_bytes, x.hash,
                    [self, t, i] { self->down_sent(t, i); });
    });
  }

  void down_sent(int t, int i) {
    Tree& tree = trees_[t];
    ++tree.down_done[static_cast<std::size_t>(i)];
    try_down(t, i);
    for (int c : tree.children[static_cast<std::size_t>(i)]) try_down(t, c);
    unit_done();
  }

  /// Runs the completion callback and leaves the registry; a caller that may get here holds an
  /// owning pointer of its own, so this collective outlives the call.
  void finish() {
    auto done = std::move(on_done_);
    on_done_ = nullptr;
    if (live_ != nullptr && live_index_ < live_->size() && (*live_)[live_index_].get() == this) {
      std::vector<std::shared_ptr<Collective>>& live = *live_;
      std::shared_ptr<Collective> mine = std::move(live[live_index_]);
      if (live_index_ + 1 != live.size()) {
        live[live_index_] = std::move(live.back());
        live[live_index_]->live_index_ = live_index_;
      }
      live.pop_back();
      live_ = nullptr;
      if (done) done();
      return;  // `mine` goes here; the caller's pointer keeps this alive
    }
    if (done) done();
  }

  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  const hardware::Cluster& cluster_;
  std::shared_ptr<RouteCache> routes_;
  FlowTrace trace_;
  Time step_latency_;
  int flows_per_connection_;
  bool fluid_ = false;
  bool merge_routes_ = true;
  std::function<void()> on_done_;
  std::vector<Ring> rings_;
  // Ring positions' dependents (add_dependency): (ring, position) and the next of the same
  // position's list, -1 at its end.
  struct Dependency {
    int ring, pos, next;
    bool pipelined;  // add_pipelined_dependency
  };
  std::vector<Dependency> dependencies_;
  std::vector<Tree> trees_;
  std::vector<DirectSend> directs_;
  std::vector<engine::LinkId> via_path_;  // connect_on's scratch for paths behind a `via` link
  std::vector<Nvls> nvls_;
  bool direct_stepped_ = true;
  std::size_t units_left_ = 0;
  std::vector<std::shared_ptr<Collective>>* live_ = nullptr;  // set_registry
  std::size_t live_index_ = 0;                                  // where launch() put this in *live_
};

}  // namespace ironlaw::comm::detail
