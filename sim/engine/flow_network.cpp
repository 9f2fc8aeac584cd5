#include "engine/flow_network.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <memory>
#include <optional>
#include <utility>

#include "core/flat_map.hpp"

namespace ironlaw::engine {

namespace {

constexpr std::uint32_t kMaxGeneration = 0xffffffffu;
constexpr std::uint32_t kNoBatch = 0xffffffffu;

// A re-solved rate within this relative distance of the current one keeps the current rate and
// its drain event: the drain then moves by at most 1e-9 of the flow's duration (1 ns per
// second), below the engine's whole-ns resolution for any flow shorter than a second.
constexpr double kRateTolerance = 1e-9;

// A link counts as saturated when its unused capacity is at most this fraction of its bandwidth.
// A true bottleneck is left with rounding noise (~1e-15 relative, or up to kRateTolerance where
// a re-solve kept a rate); a link with more room is not the bottleneck of any flow. Erring
// towards "saturated" only sends a change to the full re-solve, never skips one it needs.
constexpr double kSaturated = 1e-6;

// Bytes moved at `rate` [B/s] during `dt` (exact when rate·ns fits a double's mantissa).
double drained_bytes(double rate, Time dt) {
  return rate * static_cast<double>(dt.count_ns()) / 1e9;
}

}  // namespace

// Time buckets (≥ 0) to the first pending instant of each: a FlatMap at most three quarters
// full (half full took 3 % more memory on a plan layout, no less time).
struct BucketHash {
  std::uint64_t operator()(std::int64_t bucket) const { return static_cast<std::uint64_t>(bucket); }
};
using BucketMap = FlatMap<std::int64_t, BucketHash, 75>;

struct FlowNetwork::Impl {
  enum class State : std::uint8_t { free, draining, tail };

  // One entry of a link's active-flow list: which flow, and which hop of its path this is,
  // with copies of what a re-solve reads of the flow for each of its links (its mark, its
  // members on this link, its rate), kept equal to the flow's (mirror_mark, mirror_rate): a
  // scan of a link's flows then reads the link's own array, not every flow's record.
  struct Hop {
    std::uint32_t flow;
    std::uint32_t hop;
    std::uint32_t mark;    // == the flow's mark
    std::uint32_t weight;  // == the flow's path[hop].weight
    double rate;           // == the flow's rate
  };

  // What a re-solve touches, kept small so that a component's links share few cache lines;
  // the rest of a link (latency, counters) lives in LinkInfo, its name in names.
  // One hop of a flow's path: the link, and the index of this flow in that link's list.
  // `weight`: the members of the flow that cross this link (all of them, but on a hop of a
  // multi-route group, the members of the routes in `routes`, a bit per route).
  struct PathHop {
    LinkId link;
    std::uint32_t pos;
    std::uint32_t weight = 1;
    std::uint32_t routes = 1;
  };

  // One cache line (64 bytes, aligned): a re-solve's scans of a component's links then touch
  // one line per link.
  struct alignas(64) Link {
    double bandwidth = 0;
    std::vector<Hop> flows;   // active (draining) flows; swap-remove
    // Re-solve scratch.
    double cap_left = 0;
    double max_new = 0;           // lazy partial re-solve: the fastest new rate of its re-solved flows
    std::uint32_t load = 0;       // the active flows' total weight
    std::uint32_t mark = 0;       // == epoch when in the current component
    std::uint32_t unfrozen = 0;   // weight of the flows not yet frozen in this filling
    bool dirty = false;
    // As of the last re-solve that covered it: no room left (kSaturated), i.e. possibly the
    // bottleneck of one of its flows.
    bool saturated = false;
  };
  static_assert(sizeof(Link) == 64);

  // The part of a link no re-solve reads but every flow start (latency) and end (counters)
  // does: 32 bytes, two links a cache line; the names, read only by reports, apart.
  struct LinkInfo {
    Time latency;
    mutable LinkStats stats;
    mutable Time busy_since;  // while busy: the time up to which stats.busy has been counted
  };
  static_assert(sizeof(LinkInfo) == 32);

  // Fields a re-solve reads come first (the first cache line); callbacks and removal
  // bookkeeping after them.
  struct Flow {
    std::vector<PathHop> path;      // capacity kept across reuse of the slot
    std::uint32_t mark = 0;         // == epoch when in the current component
    std::uint32_t frozen = 0;       // == epoch when its rate is fixed in this filling
    double new_rate = 0;
    double rate = 0;
    double remaining = 0;
    Time last_update;
    std::uint32_t weight = 1;       // members of the group this flow stands for
    std::uint32_t routes = 1;       // > 1: a multi-route group (start_flow_routes), not yet split
    State state = State::free;
    std::uint32_t generation = 0;
    double bytes = 0;
    EventId event = kNoEvent;       // pending completion event
    std::uint32_t drain_token = 0;  // identifies its latest drain entry (see DrainInstant)
    bool drain_pending = false;     // whether that entry is live
    bool fresh = false;             // started since the last re-solve (rate not yet solved)
    std::uint32_t bottleneck = 0;   // partial re-solve: the link that froze it
    Time latency;                   // sum of the path's latencies
    std::uint32_t drain_instant = 0;  // while drain_pending: the DrainInstant holding its entry
                                      // (kNoInstant once that instant's event has begun to run)
    std::vector<std::uint32_t> route_members;  // multi-route group: members per route
    std::uint32_t tail_batch = kNoBatch;         // the TailBatch holding its completion
    OnDone on_done;
    OnDone on_drained;              // optional
  };

  // Every flow due to drain at one instant, drained by one event (drain coalescing): flows
  // that end together, e.g. the connections of a symmetric collective, cost one heap entry.
  // An entry whose flow was re-rated, cancelled or freed since is skipped (its token moved on).
  struct DrainInstant {
    Time at;
    EventId event = kNoEvent;
    std::uint32_t next = kNoInstant;  // the next pending instant of its time bucket
    std::uint32_t live = 0;           // entries still live (their flow's drain_pending)
    std::vector<std::pair<std::uint32_t, std::uint32_t>> flows;  // (slot, drain token)
  };
  static constexpr std::uint32_t kNoInstant = 0xffffffffu;
  static_assert(kNoInstant == BucketMap::kAbsent);

  // Completions due at one instant whose events would have been scheduled one right after
  // another (tail coalescing): one event completes them in that order. (slot, generation):
  // a flow cancelled or freed since is skipped.
  struct TailBatch {
    Time at;
    EventId event = kNoEvent;
    std::uint64_t scheduled = 0;  // Simulator::scheduled() right after its event was
    std::uint32_t live = 0;       // members not cancelled: at 0 the event is cancelled too
    std::vector<std::pair<std::uint32_t, std::uint32_t>> flows;
  };

  // A link and its fair share in the filling's heap, ordered by (share, link). Shares are
  // non-negative and never NaN, and made +0 for -0 (make_share), so their bit patterns order
  // as the doubles do: integer compares joined without branches (a heap's compares are
  // data-dependent, so branches on them mispredict).
  struct Share {
    double share;
    LinkId link;
    bool operator>(const Share& o) const {
      const auto a = std::bit_cast<std::uint64_t>(share), b = std::bit_cast<std::uint64_t>(o.share);
      return (a > b) | ((a == b) & (link > o.link));
    }
  };
  static Share make_share(double share, LinkId link) { return Share{share + 0.0, link}; }

  explicit Impl(Simulator& s) : sim(s) {}

  Simulator& sim;
  std::vector<Link> links;
  std::vector<LinkInfo> infos;      // parallel to links
  std::vector<std::string> names;  // parallel to links
  std::vector<Flow> flows;
  std::vector<std::uint32_t> free_flows;
  std::vector<LinkId> dirty_links;
  std::vector<DrainInstant> instants;
  std::vector<std::uint32_t> free_instants;
  // The pending instants by time bucket (their time / bucket_ns, bucket_ns = max(drain_epsilon,
  // 1 ns)) → the first of the bucket's instants, chained by DrainInstant::next, in no order.
  // A drain due at t joins the first instant at or after t within drain_epsilon (drain
  // coalescing); that instant, if any, is the earliest at or after t in t's bucket, else the
  // earliest of the next bucket: any later one is at least two buckets on, past t + epsilon.
  // Where an ordered map walked a tree of all pending instants (log n cache misses; on a plan
  // layout with ~1.4 M flow records a quarter of the step's time), this reads one or two
  // slots of a flat table.
  BucketMap instant_buckets;
  Time drain_epsilon = FlowNetwork::kDrainEpsilon;
  std::int64_t bucket_ns = std::max<std::int64_t>(FlowNetwork::kDrainEpsilon.count_ns(), 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> draining_now;  // scratch of run_instant
  std::vector<TailBatch> tails;
  std::vector<std::uint32_t> free_tails;
  std::int64_t open_tail = -1;  // the batch the next completion may join
  std::vector<std::pair<std::uint32_t, std::uint32_t>> completing_now;  // scratch of run_tail
  bool coalesce_tails = true;
  bool resolve_pending = false;
  bool resolving = false;  // inside resolve(): a split's links join the re-solve under way
  EventId resolve_event = kNoEvent;
  std::size_t active = 0;
  std::uint64_t started = 0;
  std::uint64_t records = 0;
  std::uint64_t resolve_count = 0;
  std::uint64_t full_count = 0;
  std::uint64_t partial_count = 0;  // partial_resolve passes
  // The flows started since the last re-solve.
  std::vector<std::uint32_t> fresh_slots;
  std::uint32_t epoch = 0;
  // Re-solve scratch, reused across calls.
  std::vector<LinkId> comp_links;
  // Lazy partial re-solve: links whose every flow joins the next round (a round's check failed
  // there).
  std::vector<LinkId> expand_links;
  int lazy_rounds = FlowNetwork::kLazyRounds;
  // Per link (parallel to links): the partial re-solve's check of its freezing links.
  struct LinkCheck {
    std::uint32_t mark = 0;  // == epoch once in check_links this pass
    double rate = 0;         // then: the slowest rate frozen there
  };
  std::vector<LinkCheck> checks;
  std::vector<LinkId> check_links;         // this pass's freezing links, each once
  std::vector<std::uint32_t> comp_flows;
  std::vector<Share> fill_heap;
  std::uint64_t split_count = 0;

  static FlowId make_id(std::uint32_t slot, std::uint32_t generation) {
    return (static_cast<FlowId>(generation) << 32) | slot;
  }

  // The slot of a live flow, or nullptr.
  Flow* find(FlowId id) {
    const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
    if (slot >= flows.size()) return nullptr;
    Flow& f = flows[slot];
    if (f.state == State::free || f.generation != static_cast<std::uint32_t>(id >> 32)) return nullptr;
    return &f;
  }

  bool is_drained(const Flow& f) const {
    return f.remaining <= std::max(1e-6 * f.bytes, 1e-3);
  }

  void mark_dirty(LinkId l) {
    Link& link = links[l];
    if (!link.dirty) {
      link.dirty = true;
      dirty_links.push_back(l);
    }
    if (!resolve_pending && !resolving) {  // inside a re-solve: it covers the link itself
      resolve_pending = true;
      resolve_event = sim.schedule_in(Time::zero(), [this] { resolve(); });
    }
  }

  std::uint32_t allocate_slot() {
    std::uint32_t slot;
    if (!free_flows.empty()) {
      slot = free_flows.back();
      free_flows.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(flows.size());
      flows.emplace_back();
    }
    ++flows[slot].generation;
    return slot;
  }

  /// Arms a freshly allocated record that carries `weight` flows of `bytes` each, `latency`
  /// after its last byte leaves: rates unset until the next fill, counted as started.
  void arm(Flow& f, double bytes, Time latency, std::uint32_t weight) {
    f.bytes = bytes;
    f.remaining = bytes;
    f.rate = 0;
    f.new_rate = 0;
    f.last_update = sim.now();
    f.latency = latency;
    f.event = kNoEvent;
    f.drain_pending = false;  // a fresh slot: its previous occupant's entry was dropped when it was freed
    f.weight = weight;
    ++active;
    started += weight;
    ++records;
  }

  void free_slot(std::uint32_t slot) {
    Flow& f = flows[slot];
    f.state = State::free;
    drop_drain(f);
    f.fresh = false;
    f.path.clear();
    f.on_done = nullptr;
    f.on_drained = nullptr;
    f.event = kNoEvent;
    f.tail_batch = kNoBatch;
    f.rate = 0;
    --active;
    if (f.generation != kMaxGeneration) free_flows.push_back(slot);  // else retired: ids stay unique
  }

  // Copies a flow's mark / rate into its entries in its links' lists. O(path length).
  void mirror_mark(const Flow& f) {
    for (const PathHop& ph : f.path) links[ph.link].flows[ph.pos].mark = f.mark;
  }
  void mirror_rate(const Flow& f) {
    for (const PathHop& ph : f.path) links[ph.link].flows[ph.pos].rate = f.rate;
  }

  // Puts a flow on its links. `fresh`: started now, its rate not yet solved.
  void add_to_links(std::uint32_t slot, bool fresh = true) {
    Flow& f = flows[slot];
    if (fresh) {
      f.fresh = true;
      fresh_slots.push_back(slot);
    }
    for (std::uint32_t h = 0; h < f.path.size(); ++h) {
      const LinkId l = f.path[h].link;
      Link& link = links[l];
      if (link.flows.empty()) infos[l].busy_since = sim.now();
      f.path[h].pos = static_cast<std::uint32_t>(link.flows.size());
      link.flows.push_back(Hop{slot, h, f.mark, f.path[h].weight, f.rate});
      link.load += f.path[h].weight;
      mark_dirty(l);
    }
  }

  // Removes a flow from its links' lists; marks them dirty unless inside a re-solve.
  void remove_from_links(std::uint32_t slot, double bytes_carried, bool dirty) {
    Flow& f = flows[slot];
    for (std::uint32_t h = 0; h < f.path.size(); ++h) {
      const LinkId l = f.path[h].link;
      Link& link = links[l];
      LinkInfo& info = infos[l];
      info.stats.bytes += bytes_carried * f.path[h].weight;
      const std::uint32_t p = f.path[h].pos;
      const Hop moved = link.flows.back();
      link.flows[p] = moved;
      flows[moved.flow].path[moved.hop].pos = p;
      link.flows.pop_back();
      link.load -= f.path[h].weight;
      if (link.flows.empty()) info.stats.busy += sim.now() - info.busy_since;
      if (dirty) mark_dirty(l);
    }
  }

  // Delivers a flow's on_drained callback from an event at now (never inside a re-solve).
  void notify_drained(std::uint32_t slot) {
    Flow& f = flows[slot];
    if (!f.on_drained) return;
    OnDone cb = std::move(f.on_drained);
    f.on_drained = nullptr;
    const FlowId id = make_id(slot, f.generation);
    sim.schedule_in(Time::zero(), [cb = std::move(cb), id] { cb(id); });
  }

  // The completion of a flow in its tail, `delay` from now. It joins the open batch when that
  // batch is due at the same instant and its event is the last one scheduled: the separate
  // events would have run back to back, so running them from one event keeps the order (a
  // stop() between them leaves the rest pending in place: run_tail).
  void schedule_completion(std::uint32_t slot, Time delay) {
    Flow& f = flows[slot];
    if (!coalesce_tails) {
      f.event = sim.schedule_in(delay, [this, slot] { complete(slot); });
      return;
    }
    const Time at = sim.now() + delay;
    f.event = kNoEvent;  // cancel_flow frees the slot; the batch then skips it
    if (open_tail >= 0) {
      TailBatch& b = tails[static_cast<std::size_t>(open_tail)];
      if (b.at == at && b.scheduled == sim.scheduled()) {
        b.flows.emplace_back(slot, f.generation);
        ++b.live;
        f.tail_batch = static_cast<std::uint32_t>(open_tail);
        return;
      }
    }
    std::uint32_t index;
    if (!free_tails.empty()) {
      index = free_tails.back();
      free_tails.pop_back();
    } else {
      index = static_cast<std::uint32_t>(tails.size());
      tails.emplace_back();
    }
    TailBatch& b = tails[index];
    b.at = at;
    b.flows.emplace_back(slot, f.generation);
    b.live = 1;
    f.tail_batch = index;
    b.event = sim.schedule_at(at, [this, index] { run_tail(index); });
    b.scheduled = sim.scheduled();
    open_tail = index;
  }

  // A cancelled flow leaves its batch; the batch's event goes with its last member, as the
  // flow's own event would have.
  void leave_tail_batch(Flow& f) {
    const std::uint32_t index = std::exchange(f.tail_batch, kNoBatch);
    TailBatch& b = tails[index];
    if (--b.live > 0) return;
    sim.cancel(b.event);
    b.event = kNoEvent;
    b.flows.clear();
    free_tails.push_back(index);
    if (open_tail == static_cast<std::int64_t>(index)) open_tail = -1;
  }

  // A batch's event: completes its live flows in order; after a stop() the rest stay pending
  // in this event's place (Simulator::schedule_in_place), as their own events would have.
  void run_tail(std::uint32_t index) {
    if (open_tail == static_cast<std::int64_t>(index)) open_tail = -1;
    TailBatch& b = tails[index];
    b.event = kNoEvent;
    completing_now.swap(b.flows);
    b.flows.clear();
    free_tails.push_back(index);
    for (const auto& [slot, generation] : completing_now) {
      if (flows[slot].generation == generation) flows[slot].tail_batch = kNoBatch;
    }
    for (std::size_t i = 0; i < completing_now.size(); ++i) {
      if (!complete_tail(completing_now[i])) continue;
      if (sim.stop_requested() && i + 1 < completing_now.size()) {
        auto rest = std::make_shared<std::vector<std::pair<std::uint32_t, std::uint32_t>>>(
            completing_now.begin() + static_cast<std::ptrdiff_t>(i + 1), completing_now.end());
        sim.schedule_in_place([this, rest] { complete_rest(rest, 0); });
        break;
      }
    }
    completing_now.clear();
  }

  // The deferred rest of a batch, from `from` on (the same rule).
  void complete_rest(const std::shared_ptr<std::vector<std::pair<std::uint32_t, std::uint32_t>>>& rest,
                     std::size_t from) {
    for (std::size_t i = from; i < rest->size(); ++i) {
      if (!complete_tail((*rest)[i])) continue;
      if (sim.stop_requested() && i + 1 < rest->size()) {
        sim.schedule_in_place([this, rest, i] { complete_rest(rest, i + 1); });
        return;
      }
    }
  }

  // Completes a batch member that is still in its tail; false if it was cancelled or freed.
  bool complete_tail(std::pair<std::uint32_t, std::uint32_t> member) {
    const Flow& f = flows[member.first];
    if (f.state != State::tail || f.generation != member.second) return false;
    complete(member.first);
    return true;
  }

  void complete(std::uint32_t slot) {
    Flow& f = flows[slot];
    OnDone done = std::move(f.on_done);
    const FlowId id = make_id(slot, f.generation);
    free_slot(slot);
    if (done) done(id);
  }

  // Drain event: the last byte has left the source.
  void on_drained(std::uint32_t slot) {
    Flow& f = flows[slot];
    f.remaining = 0;
    remove_from_links(slot, f.bytes, true);
    f.state = State::tail;
    f.rate = 0;
    notify_drained(slot);
    if (f.latency == Time::zero()) {
      complete(slot);
    } else {
      schedule_completion(slot, f.latency);
    }
  }

  // The flow's drain entry (if any) is no longer live: its instant loses one live entry, and an
  // instant left with none is withdrawn (its event cancelled, its slot freed), so that it is
  // neither joined by later drains nor kept in the event heap. Without this, every re-rate
  // left an instant pending until its time: on a 8,192-GPU plan layout, 2.3 M instants
  // pending at once, for 0.1 M flows, and a heap of as many events. O(1), plus the
  // instant's time-bucket chain when it is withdrawn.
  void drop_drain(Flow& f) {
    if (!f.drain_pending) return;
    f.drain_pending = false;
    if (f.drain_instant != kNoInstant) release_entry(f.drain_instant);
  }

  // One live entry of instant `index` is gone; see drop_drain.
  void release_entry(std::uint32_t index) {
    DrainInstant& d = instants[index];
    if (--d.live > 0) return;
    sim.cancel(d.event);
    d.event = kNoEvent;
    unlink_instant(index);
    d.flows.clear();
    free_instants.push_back(index);
  }

  // Takes instant `index` out of its time bucket's chain.
  void unlink_instant(std::uint32_t index) {
    DrainInstant& d = instants[index];
    const std::int64_t bucket = d.at.count_ns() / bucket_ns;
    std::uint32_t& head = instant_buckets.at(bucket);
    if (head == index) {
      if (d.next == kNoInstant) {
        instant_buckets.erase(bucket);
      } else {
        head = d.next;
      }
    } else {
      std::uint32_t i = head;
      while (instants[i].next != index) i = instants[i].next;
      instants[i].next = d.next;
    }
    d.next = kNoInstant;
  }

  void schedule_drain(std::uint32_t slot) {
    Flow& f = flows[slot];
    // Due when its last byte leaves at the current rate; it drains from the first pending
    // instant in [due, due + drain_epsilon] (never earlier than due), else from a new one at due.
    const Time due = sim.now() + transfer_time(f.remaining, f.rate);
    ++f.drain_token;
    f.drain_pending = true;
    const std::int64_t t = due.count_ns(), bucket = t / bucket_ns;
    std::uint32_t index = first_instant_from(bucket, t);
    if (index == kNoInstant) index = first_instant_from(bucket + 1, t);
    if (index == kNoInstant || instants[index].at.count_ns() - t > drain_epsilon.count_ns()) {
      if (!free_instants.empty()) {
        index = free_instants.back();
        free_instants.pop_back();
      } else {
        index = static_cast<std::uint32_t>(instants.size());
        instants.emplace_back();
      }
      const std::uint32_t head = instant_buckets.find(bucket);
      if (head == BucketMap::kAbsent) {
        instant_buckets.insert(bucket, index);
        instants[index].next = kNoInstant;
      } else {
        instants[index].next = std::exchange(instant_buckets.at(bucket), index);
      }
      instants[index].at = due;
      instants[index].live = 0;
      instants[index].event = sim.schedule_at(due, [this, index] { run_instant(index); });
    }
    DrainInstant& d = instants[index];
    f.drain_instant = index;
    ++d.live;
    d.flows.emplace_back(slot, f.drain_token);
  }

  // The earliest pending instant of time bucket `bucket` at or after `t` [ns], or kNoInstant.
  std::uint32_t first_instant_from(std::int64_t bucket, std::int64_t t) const {
    const std::uint32_t head = instant_buckets.find(bucket);
    std::uint32_t best = kNoInstant;
    for (std::uint32_t i = head; i != kNoInstant; i = instants[i].next) {
      const std::int64_t at = instants[i].at.count_ns();
      if (at >= t && (best == kNoInstant || at < instants[best].at.count_ns())) best = i;
    }
    return best;
  }

  // The drain event of one instant: drains its live entries in the order they were scheduled.
  void run_instant(std::uint32_t index) {
    DrainInstant& d = instants[index];
    unlink_instant(index);
    d.event = kNoEvent;
    d.live = 0;
    draining_now.swap(d.flows);
    d.flows.clear();
    free_instants.push_back(index);
    // The slot may be reused by a drain scheduled from a callback below: the live entries no
    // longer point at it, so that a cancel in between releases nothing.
    for (const auto& [slot, token] : draining_now) {
      Flow& f = flows[slot];
      if (f.drain_pending && f.drain_token == token) f.drain_instant = kNoInstant;
    }
    for (const auto& [slot, token] : draining_now) {
      Flow& f = flows[slot];
      if (f.state == State::draining && f.drain_pending && f.drain_token == token) {
        f.drain_pending = false;
        on_drained(slot);
      }
    }
    draining_now.clear();
  }

  // Progressive filling over the links seeded in fill_heap (each with its cap_left and
  // unfrozen weight set): the link with the smallest fair share first freezes its unfrozen
  // flows of this epoch at that share (new_rate) and records itself as their bottleneck. Each
  // loaded link sits in the heap once, keyed by a lower bound of its share (shares only grow
  // as flows freeze elsewhere); a popped link whose share has grown is re-queued with its
  // current share instead of being re-pushed at every change. Only flows marked with this
  // epoch are frozen: the partial re-solve's others keep their rates (a full re-solve marks
  // every flow on its links). O((F·P + L) log L) for F flows of P hops over L links.
  // A multi-route group is frozen whole, on a link all its routes cross; where the filling
  // reaches it first on a link that only some of its routes cross (those would freeze there,
  // the others not), it splits there into its routes (split_in_fill) and the filling goes on
  // with them: exactly the filling those parts would have had from the start, since an
  // unfrozen group and its unfrozen parts weigh the same on every link (the same cap_left,
  // unfrozen weights and heap), so no re-solve is run again for a split.
  // The filling ends once no seeded link has an unfrozen flow left (every later pop would be
  // skipped): `left` is the links' unfrozen weights summed, which a freeze lowers by its path's
  // weights and a split leaves as it is (its parts weigh what the group weighed on every link).
  void fill() {
    std::uint64_t left = 0;
    for (const Share& s : fill_heap) left += links[s.link].unfrozen;
    std::make_heap(fill_heap.begin(), fill_heap.end(), std::greater<>{});
    while (left > 0 && !fill_heap.empty()) {
      std::pop_heap(fill_heap.begin(), fill_heap.end(), std::greater<>{});
      const Share top = fill_heap.back();
      fill_heap.pop_back();
      Link& link = links[top.link];
      if (link.unfrozen == 0) continue;
      const double share = std::max(link.cap_left, 0.0) / link.unfrozen;
      if (share > top.share * (1 + 1e-12)) {  // grew since queued: not the minimum yet
        fill_heap.push_back(make_share(share, top.link));
        std::push_heap(fill_heap.begin(), fill_heap.end(), std::greater<>{});
        continue;
      }
      // By index: a split swaps another entry into position i and appends its parts.
      for (std::size_t i = 0; i < link.flows.size(); ++i) {
        const Hop hop = link.flows[i];
        if (hop.mark != epoch) continue;
        Flow& f = flows[hop.flow];
        if (f.frozen == epoch) continue;
        if (f.routes > 1 && f.path[hop.hop].weight != f.weight) {
          split(hop.flow, true);
          --i;  // position i now holds another entry (unsigned wrap-around is undone by ++i)
          continue;
        }
        f.frozen = epoch;
        f.new_rate = share;
        f.bottleneck = top.link;
        for (const PathHop& ph : f.path) {
          Link& k = links[ph.link];
          k.cap_left -= share * ph.weight;
          k.unfrozen -= ph.weight;
          left -= ph.weight;
        }
        if (link.unfrozen == 0) break;  // the rest of its flows are frozen or not re-solved
      }
    }
  }

  // Splits the multi-route group in `slot` into one flow group per route, each in the group's
  // state (bytes left, rate, drain entry), so that the re-solve can give the routes their own
  // rates. Its on_done runs once the last of them has completed. O(hops · routes). Called from
  // fill() (`in_fill`), on an unfrozen group of the re-solve under way: the parts join it,
  // unfrozen, in comp_flows (the group's slot there is then free, skipped by the callers).
  void split(std::uint32_t slot, bool in_fill) {
    ++split_count;
    Flow& g = flows[slot];
    const std::vector<PathHop> hops = g.path;
    const std::vector<std::uint32_t> members = g.route_members;
    const double bytes = g.bytes, remaining = g.remaining, rate = g.rate;
    const Time last_update = g.last_update, latency = g.latency;
    const bool pending = g.drain_pending;
    // A pending drain is in a pending instant here: drain_instant is kNoInstant only while its
    // instant's event runs, and a split runs in a re-solve, which is an event of its own.
    const std::uint32_t instant = g.drain_instant;
    g.drain_pending = false;  // released below, once the parts hold entries of that instant
    const FlowId id = make_id(slot, g.generation);
    auto left = std::make_shared<std::pair<std::size_t, OnDone>>(members.size(), std::move(g.on_done));
    remove_from_links(slot, 0.0, true);  // the parts credit the bytes when they drain
    free_slot(slot);
    for (std::uint32_t r = 0; r < members.size(); ++r) {
      const std::uint32_t s = allocate_slot();
      Flow& f = flows[s];
      f.path.clear();
      for (const PathHop& ph : hops) {
        if ((ph.routes >> r) & 1u) f.path.push_back(PathHop{ph.link, 0, members[r], 1});
      }
      f.bytes = bytes;
      f.remaining = remaining;
      f.rate = rate;
      f.new_rate = rate;
      f.last_update = last_update;
      f.latency = latency;
      f.weight = members[r];
      f.routes = 1;
      f.route_members.clear();
      f.event = kNoEvent;
      f.drain_pending = false;
      f.state = State::draining;
      f.on_done = [left, id](FlowId) {
        if (--left->first == 0 && left->second) left->second(id);
      };
      f.on_drained = nullptr;
      ++active;
      ++records;
      if (in_fill) {
        f.mark = epoch;
        f.frozen = epoch - 1;
        comp_flows.push_back(s);
      }
      add_to_links(s, true);
      if (pending) {  // the group's drain entry, kept while the re-solve leaves the rate
        Flow& h = flows[s];
        ++h.drain_token;
        h.drain_pending = true;
        h.drain_instant = instant;
        ++instants[instant].live;
        instants[instant].flows.emplace_back(s, h.drain_token);
      }
    }
    if (pending) release_entry(instant);  // the group's own entry; the parts keep the instant
  }

  // The batched re-solve: the partial one, else the connected component.
  void resolve() {
    resolve_pending = false;
    resolve_event = kNoEvent;
    ++resolve_count;
    resolving = true;
    // A multi-route group whose routes part splits inside the filling (fill()); the component
    // is re-solved only where the partial check fails.
    // Lazy rounds first (no closure through saturated links; each failed check adds its link's
    // flows), then the closed partial re-solve, then the component.
    expand_links.clear();
    bool local = false;
    for (int round = 0; round < lazy_rounds && !local; ++round) {
      const std::size_t before = expand_links.size();
      local = partial_resolve(true);
      if (!local && expand_links.size() == before) break;  // not a check on a link: no use
    }
    if (!local) local = partial_resolve(false);
    if (local) {
      for (LinkId l : dirty_links) {
        Link& link = links[l];
        link.dirty = false;
        if (link.flows.empty()) link.saturated = false;
      }
      dirty_links.clear();
    } else {
      full_resolve();
    }
    for (std::uint32_t slot : fresh_slots) flows[slot].fresh = false;
    fresh_slots.clear();
    resolving = false;
  }

  // Partial re-solve: only the flows whose rate can move are re-solved, the others keep theirs.
  // Those that can move: the flows started since the last re-solve, the flows on a changed link
  // that was saturated (a flow that ended there may have been their bottleneck), and, closed
  // transitively, every flow sharing a saturated link with one of them (one that changes rate
  // there pushes or pulls the others). The set is filled progressively over what the other
  // flows leave of each of its links. The result is the max-min allocation itself — unique, so
  // the one a full re-solve gives, up to rounding — when every re-solved flow ends frozen on a
  // link on which no other flow is faster: then every re-solved flow has a bottleneck (a
  // saturated link on which no flow is faster), and every other flow keeps its own, which is
  // saturated, so it carries no re-solved flow (the closure would have taken the flow in) and
  // nothing on it changed. Returns false, having changed nothing, where that check fails or a
  // re-solved flow is drained up to rounding (the full re-solve finishes those). Cost: O(F·P +
  // k + F log F) for the F re-solved flows, their P hops each and the k flows on their links.
  bool partial_resolve(bool lazy) {
    ++epoch;
    ++partial_count;
    comp_links.clear();
    comp_flows.clear();
    const Time now = sim.now();
    auto take = [&](std::uint32_t slot) {
      Flow& f = flows[slot];
      if (f.mark == epoch || f.state != State::draining) return;
      f.mark = epoch;
      mirror_mark(f);
      comp_flows.push_back(slot);
    };
    for (std::uint32_t slot : fresh_slots) {
      if (flows[slot].fresh) take(slot);
    }
    for (LinkId l : dirty_links) {
      if (!links[l].saturated) continue;
      for (const Hop& hop : links[l].flows) {
        if (hop.mark != epoch) take(hop.flow);
      }
    }
    if (lazy) {
      for (LinkId l : expand_links) {
        for (const Hop& hop : links[l].flows) {
          if (hop.mark != epoch) take(hop.flow);
        }
      }
    }
    // Lazy: a re-solved flow whose rate moves changes what the other flows of its saturated
    // links may have, and the check after the filling fails where one of those is faster than
    // it ends. Taking now the flows faster than it was on each of its saturated links (and,
    // closed, those faster than them on theirs) saves most of those failed rounds; slower flows
    // there are bottlenecked elsewhere and stay. On a plan layout's step (8,192 GPUs) this cut
    // the hops and link-list entries the passes read by a quarter against taking a whole link
    // wherever one flow there is faster (406 M against 541 M), and passes per re-solve from 1.30
    // to 1.15.
    for (std::size_t i = 0; i < comp_flows.size(); ++i) {
      const Flow& f = flows[comp_flows[i]];
      if (!f.fresh && f.remaining - drained_bytes(f.rate, now - f.last_update) <= std::max(1e-6 * f.bytes, 1e-3)) {
        return false;
      }
      for (const PathHop& ph : f.path) {
        Link& link = links[ph.link];
        if (link.mark == epoch) continue;
        link.mark = epoch;
        comp_links.push_back(ph.link);
        if (lazy && link.saturated && !f.fresh) {
          const double faster_than = f.rate * (1 + kRateTolerance);
          for (const Hop& hop : link.flows) {
            if (hop.mark != epoch && hop.rate > faster_than) take(hop.flow);
          }
        }
        if (link.saturated && !lazy) {
          for (const Hop& hop : link.flows) {
            if (hop.mark != epoch) take(hop.flow);
          }
        }
      }
    }
    // What the other flows leave of each link.
    fill_heap.clear();
    for (LinkId l : comp_links) {
      Link& link = links[l];
      double used = 0;
      std::uint32_t weight = 0;
      for (const Hop& hop : link.flows) {
        if (hop.mark == epoch) {
          weight += hop.weight;
        } else {
          used += hop.rate * hop.weight;
        }
      }
      link.cap_left = link.bandwidth - used;
      link.unfrozen = weight;
      fill_heap.push_back(make_share(std::max(link.cap_left, 0.0) / weight, l));
    }
    fill();
    // The check: no other flow is faster on a re-solved flow's freezing link (a group split by
    // the filling has left a free slot in comp_flows).
    // A lazy round collects every link where the check fails, so that the next round covers
    // them all (one failed link per round took ~1.8 rounds per re-solve on a plan layout).
    // Every flow frozen on one link has that link's share, so each freezing link is checked
    // once, against the slowest of its flows (the same verdict as checking each flow there).
    bool failed = false;
    check_links.clear();
    for (std::uint32_t slot : comp_flows) {
      const Flow& f = flows[slot];
      if (f.state != State::draining) continue;
      LinkCheck& c = checks[f.bottleneck];
      if (c.mark != epoch) {
        c.mark = epoch;
        c.rate = f.new_rate;
        check_links.push_back(f.bottleneck);
      } else {
        c.rate = std::min(c.rate, f.new_rate);
      }
    }
    for (LinkId l : check_links) {  // each once, so each failing link joins expand_links once
      const double faster_than = checks[l].rate * (1 + kRateTolerance);
      for (const Hop& hop : links[l].flows) {
        if (hop.mark != epoch && hop.rate > faster_than) {
          if (!lazy) return false;
          expand_links.push_back(l);
          failed = true;
          break;
        }
      }
    }
    if (failed) return false;
    // Lazy: a flow kept at its rate may have had its bottleneck on a re-solved flow's link; it
    // still has it where that link is still saturated and no re-solved flow there is now faster.
    if (lazy && !lazy_check()) return false;
    for (LinkId l : comp_links) {
      Link& link = links[l];
      link.saturated = link.cap_left <= kSaturated * link.bandwidth;
    }
    // As the full re-solve's step 4: a rate that moved by rounding only keeps its drain event.
    for (std::uint32_t slot : comp_flows) {
      Flow& f = flows[slot];
      if (f.state != State::draining) continue;
      f.remaining -= drained_bytes(f.rate, now - f.last_update);
      f.last_update = now;
      if (f.drain_pending && std::abs(f.new_rate - f.rate) <= kRateTolerance * f.rate) continue;
      drop_drain(f);
      f.rate = f.new_rate;
      mirror_rate(f);
      if (f.rate > 0) schedule_drain(slot);
    }
    return true;
  }

  // The lazy partial re-solve's second check (after the filling, before any rate moves): every
  // flow not re-solved whose bottleneck (the link that froze it last) is one of the re-solved
  // flows' links keeps it: the link is still saturated and no re-solved flow is faster there
  // than it. A flow whose bottleneck is elsewhere keeps it untouched (every flow on a changed
  // saturated link is re-solved). With the first check, every flow then has a bottleneck: the
  // max-min allocation. Where it fails, the link joins expand_links. O(k) for the k flows on
  // the re-solved flows' links, plus O(F·P).
  bool lazy_check() {
    bool ok = true;
    for (LinkId l : comp_links) links[l].max_new = 0;
    for (std::uint32_t slot : comp_flows) {
      const Flow& f = flows[slot];
      if (f.state != State::draining) continue;
      for (const PathHop& ph : f.path) {
        Link& link = links[ph.link];
        link.max_new = std::max(link.max_new, f.new_rate);
      }
    }
    for (LinkId l : comp_links) {
      const Link& link = links[l];
      if (!link.saturated) continue;  // as of the last re-solve: nobody's bottleneck
      const bool still = link.cap_left <= kSaturated * link.bandwidth;
      for (const Hop& hop : link.flows) {
        if (hop.mark == epoch) continue;
        if (still && hop.rate * (1 + kRateTolerance) >= link.max_new) continue;
        if (flows[hop.flow].bottleneck == l) {
          expand_links.push_back(l);
          ok = false;
          break;
        }
      }
    }
    return ok;
  }

  // Full re-solve of the connected component of the changed links.
  void full_resolve() {
    ++full_count;
    const Time now = sim.now();
    ++epoch;

    // 1. The connected component of the dirty links (flows ↔ links), breadth first.
    comp_links.clear();
    comp_flows.clear();
    for (LinkId l : dirty_links) {
      links[l].dirty = false;
      if (links[l].mark != epoch) {
        links[l].mark = epoch;
        comp_links.push_back(l);
      }
    }
    dirty_links.clear();
    for (std::size_t i = 0; i < comp_links.size(); ++i) {
      for (const Hop& hop : links[comp_links[i]].flows) {
        if (hop.mark == epoch) continue;
        Flow& f = flows[hop.flow];
        f.mark = epoch;
        mirror_mark(f);
        comp_flows.push_back(hop.flow);
        for (const PathHop& ph : f.path) {
          const LinkId l = ph.link;
          if (links[l].mark != epoch) {
            links[l].mark = epoch;
            comp_links.push_back(l);
          }
        }
      }
    }

    // 2. Bring remaining bytes up to now; flows drained up to rounding finish here.
    for (std::uint32_t slot : comp_flows) {
      Flow& f = flows[slot];
      f.remaining -= drained_bytes(f.rate, now - f.last_update);
      f.last_update = now;
      if (is_drained(f)) {
        drop_drain(f);
        f.remaining = 0;
        remove_from_links(slot, f.bytes, false);
        f.state = State::tail;
        f.rate = 0;
        notify_drained(slot);
        schedule_completion(slot, f.latency);
      }
    }

    // 3. Progressive filling of every flow of the component (all are marked) from whole links.
    fill_heap.clear();
    for (LinkId l : comp_links) {
      Link& link = links[l];
      link.cap_left = link.bandwidth;
      link.unfrozen = link.load;
      if (link.unfrozen > 0) fill_heap.push_back(make_share(link.bandwidth / link.unfrozen, l));
    }
    fill();

    for (LinkId l : comp_links) {
      Link& link = links[l];
      link.saturated = link.cap_left <= kSaturated * link.bandwidth;
    }

    // 4. Reschedule the drain of every flow whose rate changed by more than kRateTolerance:
    //    the filling recomputes unchanged shares with rounding noise (other flows' shares are
    //    subtracted in another order), and moving a drain event for that churns the event heap.
    for (std::uint32_t slot : comp_flows) {
      Flow& f = flows[slot];
      if (f.state != State::draining) continue;
      if (f.drain_pending && std::abs(f.new_rate - f.rate) <= kRateTolerance * f.rate) continue;
      drop_drain(f);
      f.rate = f.new_rate;
      mirror_rate(f);
      if (f.rate > 0) schedule_drain(slot);
    }
    // A split in the filling marked the group's links changed; this re-solve covered them.
    for (LinkId l : dirty_links) {
      Link& link = links[l];
      link.dirty = false;
      if (link.flows.empty()) link.saturated = false;
    }
    dirty_links.clear();
  }
};

FlowNetwork::FlowNetwork(Simulator& sim) : impl_(std::make_unique<Impl>(sim)) {}

FlowNetwork::~FlowNetwork() {
  // Pending events capture this network; they must not outlive it.
  for (Impl::Flow& f : impl_->flows) {
    if (f.state != Impl::State::free) impl_->sim.cancel(f.event);
  }
  for (Impl::DrainInstant& d : impl_->instants) impl_->sim.cancel(d.event);
  for (Impl::TailBatch& b : impl_->tails) impl_->sim.cancel(b.event);
  impl_->sim.cancel(impl_->resolve_event);
}

LinkId FlowNetwork::add_link(double bandwidth, Time latency, std::string name) {
  if (!(bandwidth > 0) || !std::isfinite(bandwidth)) {
    throw std::invalid_argument("FlowNetwork::add_link: bandwidth must be positive and finite");
  }
  if (latency < Time::zero()) throw std::invalid_argument("FlowNetwork::add_link: negative latency");
  Impl::Link link;
  link.bandwidth = bandwidth;
  impl_->links.push_back(std::move(link));
  Impl::LinkInfo info;
  info.latency = latency;
  impl_->infos.push_back(info);
  impl_->names.push_back(std::move(name));
  impl_->checks.emplace_back();
  return static_cast<LinkId>(impl_->links.size() - 1);
}

std::size_t FlowNetwork::link_count() const { return impl_->links.size(); }

const std::string& FlowNetwork::link_name(LinkId id) const { return impl_->names.at(id); }

double FlowNetwork::link_bandwidth(LinkId id) const { return impl_->links.at(id).bandwidth; }

Time FlowNetwork::link_latency(LinkId id) const { return impl_->infos.at(id).latency; }

const LinkStats& FlowNetwork::link_stats(LinkId id) const {
  const Impl::Link& link = impl_->links.at(id);
  const Impl::LinkInfo& info = impl_->infos[id];
  if (!link.flows.empty()) {
    const Time now = impl_->sim.now();
    info.stats.busy += now - info.busy_since;
    info.busy_since = now;
  }
  return info.stats;
}

FlowId FlowNetwork::start_flow(std::span<const LinkId> path, double bytes, OnDone on_done) {
  return start_flow(path, bytes, std::move(on_done), nullptr);
}

FlowId FlowNetwork::start_flow(std::span<const LinkId> path, double bytes, OnDone on_done, OnDone on_drained) {
  return start_flow_group(path, bytes, 1, std::move(on_done), std::move(on_drained));
}

FlowId FlowNetwork::start_flow_group(std::span<const LinkId> path, double bytes, std::uint32_t members, OnDone on_done,
                                     OnDone on_drained) {
  Impl& m = *impl_;
  if (members < 1) throw std::invalid_argument("FlowNetwork::start_flow_group: members must be ≥ 1");
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::start_flow: bytes must be finite and ≥ 0");
  }
  Time latency;
  for (LinkId l : path) {
    if (l >= m.links.size()) throw std::invalid_argument("FlowNetwork::start_flow: unknown link");
    latency += m.infos[l].latency;
  }
  const std::uint32_t slot = m.allocate_slot();
  Impl::Flow& f = m.flows[slot];
  f.path.resize(path.size());
  for (std::size_t h = 0; h < path.size(); ++h) f.path[h] = Impl::PathHop{path[h], 0, members, 1};
  f.routes = 1;
  f.route_members.clear();
  f.on_done = std::move(on_done);
  f.on_drained = std::move(on_drained);
  m.arm(f, bytes, latency, members);
  const FlowId id = Impl::make_id(slot, f.generation);
  if (path.empty()) {
    f.state = Impl::State::tail;
    m.notify_drained(slot);
    m.schedule_completion(slot, Time::zero());
  } else if (m.is_drained(f)) {
    f.state = Impl::State::tail;
    f.remaining = 0;
    m.notify_drained(slot);
    m.schedule_completion(slot, latency);
  } else {
    f.state = Impl::State::draining;
    m.add_to_links(slot);
  }
  return id;
}

void FlowNetwork::start_flow_routes(std::span<const RouteHop> hops, std::span<const std::uint32_t> members,
                                    double bytes, OnDone on_done) {
  Impl& m = *impl_;
  const std::size_t routes = members.size();
  if (routes < 1 || routes > kMaxRoutes) {
    throw std::invalid_argument("FlowNetwork::start_flow_routes: between 1 and 32 routes");
  }
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::start_flow_routes: bytes must be finite and ≥ 0");
  }
  const std::uint32_t all = routes == kMaxRoutes ? ~0u : (1u << routes) - 1;
  std::uint32_t total = 0;
  for (std::uint32_t w : members) {
    if (w < 1) throw std::invalid_argument("FlowNetwork::start_flow_routes: members must be ≥ 1");
    total += w;
  }
  // Every route's latency, and that every route crosses at least one link.
  std::uint32_t seen = 0;
  Time latency[kMaxRoutes];  // Time() is zero
  for (const RouteHop& h : hops) {
    if (h.link >= m.links.size()) throw std::invalid_argument("FlowNetwork::start_flow_routes: unknown link");
    if (h.routes == 0 || (h.routes & ~all) != 0) {
      throw std::invalid_argument("FlowNetwork::start_flow_routes: a hop's routes must be some of the routes");
    }
    seen |= h.routes;
    const Time l = m.infos[h.link].latency;
    for (std::uint32_t bits = h.routes; bits != 0; bits &= bits - 1) latency[std::countr_zero(bits)] += l;
  }
  if (seen != all) throw std::invalid_argument("FlowNetwork::start_flow_routes: a route crosses no link");
  for (std::size_t r = 1; r < routes; ++r) {
    if (latency[r] != latency[0]) throw std::invalid_argument("FlowNetwork::start_flow_routes: routes of unequal latency");
  }
  const std::uint32_t slot = m.allocate_slot();
  Impl::Flow& f = m.flows[slot];
  f.path.resize(hops.size());
  for (std::size_t h = 0; h < hops.size(); ++h) {
    std::uint32_t w = 0;
    for (std::uint32_t bits = hops[h].routes; bits != 0; bits &= bits - 1) w += members[std::countr_zero(bits)];
    f.path[h] = Impl::PathHop{hops[h].link, 0, w, hops[h].routes};
  }
  f.route_members.assign(members.begin(), members.end());
  f.routes = static_cast<std::uint32_t>(routes);
  f.on_done = std::move(on_done);
  f.on_drained = nullptr;
  m.arm(f, bytes, latency[0], total);
  if (m.is_drained(f)) {
    f.state = Impl::State::tail;
    f.remaining = 0;
    m.schedule_completion(slot, f.latency);
  } else {
    f.state = Impl::State::draining;
    m.add_to_links(slot);
  }
}

void FlowNetwork::cancel_flow(FlowId id) {
  Impl& m = *impl_;
  Impl::Flow* f = m.find(id);
  if (f == nullptr) return;
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
  m.sim.cancel(f->event);
  if (f->tail_batch != kNoBatch) m.leave_tail_batch(*f);
  m.drop_drain(*f);
  if (f->state == Impl::State::draining) {
    const double left = f->remaining - drained_bytes(f->rate, m.sim.now() - f->last_update);
    m.remove_from_links(slot, std::max(f->bytes - left, 0.0), true);
  }
  m.free_slot(slot);
}

double FlowNetwork::rate(FlowId id) const {
  const Impl::Flow* f = impl_->find(id);
  return f != nullptr && f->state == Impl::State::draining ? f->rate : 0.0;
}

std::size_t FlowNetwork::active_flows() const { return impl_->active; }

std::uint64_t FlowNetwork::flows_started() const { return impl_->started; }

std::uint64_t FlowNetwork::records_started() const { return impl_->records; }

std::uint64_t FlowNetwork::resolves() const { return impl_->resolve_count; }

std::uint64_t FlowNetwork::full_resolves() const { return impl_->full_count; }

std::uint64_t FlowNetwork::partial_passes() const { return impl_->partial_count; }

std::uint64_t FlowNetwork::route_splits() const { return impl_->split_count; }

void FlowNetwork::set_coalesce_tails(bool coalesce) { impl_->coalesce_tails = coalesce; }

void FlowNetwork::set_drain_epsilon(Time epsilon) {
  if (epsilon < Time::zero()) throw std::invalid_argument("FlowNetwork::set_drain_epsilon: negative epsilon");
  impl_->drain_epsilon = epsilon;
  impl_->bucket_ns = std::max<std::int64_t>(epsilon.count_ns(), 1);
}

Time FlowNetwork::drain_epsilon() const { return impl_->drain_epsilon; }

void FlowNetwork::set_lazy_rounds(int rounds) {
  if (rounds < 0) throw std::invalid_argument("FlowNetwork::set_lazy_rounds: negative rounds");
  impl_->lazy_rounds = rounds;
}

}  // namespace ironlaw::engine
