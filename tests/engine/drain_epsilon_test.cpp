// Drain coalescing within epsilon (flow_network.hpp): a drain due at t runs from a pending
// drain instant in [t, t + epsilon] where there is one, so it moves later by at most epsilon,
// never earlier. Checked against times worked out by hand and against the exact engine
// (epsilon 0) with the bound the rule implies: every drain moves by at most epsilon, so a chain
// of n dependent transfers moves by at most n × epsilon.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

using ironlaw::Time;
using ironlaw::engine::FlowId;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;

namespace {

// Two flows on two disjoint 1 GB/s links without latency, started at 0 in this order: `first`
// and `second` bytes (1 B per ns). Returns their completion times [ns] and the events run.
struct Pair {
  std::int64_t first_done = -1, second_done = -1;
  std::uint64_t events = 0;
};

Pair two_flows(double first, double second, Time epsilon) {
  Simulator sim;
  FlowNetwork net(sim);
  net.set_drain_epsilon(epsilon);
  const std::array<LinkId, 1> a{net.add_link(1e9, Time::zero())};
  const std::array<LinkId, 1> b{net.add_link(1e9, Time::zero())};
  Pair out;
  net.start_flow(a, first, [&](FlowId) { out.first_done = sim.now().count_ns(); });
  net.start_flow(b, second, [&](FlowId) { out.second_done = sim.now().count_ns(); });
  sim.run();
  out.events = sim.events_executed();
  return out;
}

}  // namespace

TEST_CASE("drain epsilon: a drain due within epsilon before a pending instant runs from it", "[flow]") {
  // The first flow's drain instant is at 1,000 ns; the second is due at 995 ns, 5 ns before it.
  const Pair exact = two_flows(1000, 995, Time::zero());
  CHECK(exact.first_done == 1000);
  CHECK(exact.second_done == 995);
  const Pair joined = two_flows(1000, 995, Time::ns(10));
  CHECK(joined.first_done == 1000);
  CHECK(joined.second_done == 1000);  // moved 5 ns later, within the 10 ns epsilon
  // One drain event fewer, and the re-solve its removal would have asked for at 995 ns.
  CHECK(exact.events - joined.events == 2);
  // Exactly epsilon before it still joins; one ns more does not.
  CHECK(two_flows(1000, 990, Time::ns(10)).second_done == 1000);
  CHECK(two_flows(1000, 989, Time::ns(10)).second_done == 989);
}

TEST_CASE("drain epsilon: a drain never runs before it is due", "[flow]") {
  // The second flow is due 5 ns after the first's instant: it gets its own, at 1,005 ns.
  const Pair p = two_flows(1000, 1005, Time::ns(10));
  CHECK(p.first_done == 1000);
  CHECK(p.second_done == 1005);
  // And the first instant is not moved to join a later drain: instants are created exactly.
  const Pair q = two_flows(995, 1000, Time::ns(10));
  CHECK(q.first_done == 995);
  CHECK(q.second_done == 1000);
}

TEST_CASE("drain epsilon: an instant left without a live drain is withdrawn, so no later drain joins it", "[flow]") {
  // Links a and b, 1 GB/s (1 B/ns), no latency. By hand:
  // - A, 1,000 B on a at 0: due at 1,000 ns, an instant there.
  // - B, 100 B on a at 200: A (800 B left) and B share a at 0.5 B/ns; A's drain leaves the
  //   1,000 ns instant, which then holds no live drain. B drains at 400; A, with 700 B left,
  //   runs alone again and is due at 1,100.
  // - C, 695 B on b at 300: due at 995 ns, 5 ns before the withdrawn instant. With a 10 ns
  //   epsilon it would run from that instant (1,000 ns) if the instant were still pending.
  for (const Time epsilon : {Time::zero(), Time::ns(10)}) {
    Simulator sim;
    FlowNetwork net(sim);
    net.set_drain_epsilon(epsilon);
    const std::array<LinkId, 1> a{net.add_link(1e9, Time::zero())};
    const std::array<LinkId, 1> b{net.add_link(1e9, Time::zero())};
    std::int64_t a_done = -1, b_done = -1, c_done = -1;
    net.start_flow(a, 1000, [&](FlowId) { a_done = sim.now().count_ns(); });
    sim.schedule_at(Time::ns(200), [&] { net.start_flow(a, 100, [&](FlowId) { b_done = sim.now().count_ns(); }); });
    sim.schedule_at(Time::ns(300), [&] { net.start_flow(b, 695, [&](FlowId) { c_done = sim.now().count_ns(); }); });
    sim.run();
    CHECK(a_done == 1100);
    CHECK(b_done == 400);
    CHECK(c_done == 995);
  }
}

TEST_CASE("drain epsilon: a flow re-rated many times keeps one pending drain event, not one per rate", "[flow]") {
  // A long flow A (10 MB on a 1 B/ns link) shares its link with 1,000 short flows of 100 B, one
  // after another: each halves A's rate for 200 ns and gives it back, so A is re-rated 2,000
  // times and its drain moves 100 ns later each time (10 ns epsilon: a new instant each time).
  // Only its latest drain is live; the instants it left are withdrawn. Checked from the last
  // short flow's completion: pending are A's drain and at most a re-solve and a tail event.
  Simulator sim;
  FlowNetwork net(sim);
  const std::array<LinkId, 1> link{net.add_link(1e9, Time::zero())};
  std::int64_t a_done = -1;
  std::size_t pending_at_last = 0;
  net.start_flow(link, 1e7, [&](FlowId) { a_done = sim.now().count_ns(); });
  constexpr int kShort = 1000;
  std::function<void(int)> next = [&](int k) {
    net.start_flow(link, 100, [&, k](FlowId) {
      if (k + 1 < kShort) {
        sim.schedule_in(Time::ns(800), [&, k] { next(k + 1); });
      } else {
        pending_at_last = sim.pending();
      }
    });
  };
  sim.schedule_at(Time::ns(1000), [&] { next(0); });
  sim.run();
  CHECK(pending_at_last >= 1);
  CHECK(pending_at_last <= 3);
  // A sends 1 B/ns except for 1,000 × 200 ns at half rate: 1e7 + 1,000 × 100 ns.
  CHECK(a_done == 10'100'000);
}

TEST_CASE("drain epsilon: the default is kDrainEpsilon and a negative one is refused", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  CHECK(net.drain_epsilon() == FlowNetwork::kDrainEpsilon);
  CHECK(FlowNetwork::kDrainEpsilon == Time::ns(10));
  CHECK_THROWS_AS(net.set_drain_epsilon(Time::ns(-1)), std::invalid_argument);
}

namespace {

// A random scenario: `chains` chains of transfers over a few shared links; each transfer starts
// when the previous one of its chain completes (its dependency), on a random path with random
// bytes. Returns the time the last transfer completed [ns] and the transfers.
struct Outcome {
  std::int64_t makespan = 0;
  int transfers = 0;
};

Outcome random_chains(std::uint32_t seed, Time epsilon) {
  std::mt19937 rng(seed);
  Simulator sim;
  FlowNetwork net(sim);
  net.set_drain_epsilon(epsilon);
  const int links = 2 + static_cast<int>(rng() % 5);
  for (int l = 0; l < links; ++l) {
    net.add_link(1e9 * (1 + rng() % 2), Time::ns(static_cast<std::int64_t>(rng() % 300)));
  }
  const int chains = 1 + static_cast<int>(rng() % 6);
  Outcome out;
  struct Chain {
    std::vector<std::vector<LinkId>> paths;
    std::vector<double> bytes;
  };
  auto all = std::make_shared<std::vector<Chain>>(static_cast<std::size_t>(chains));
  for (Chain& c : *all) {
    const int n = 1 + static_cast<int>(rng() % 8);
    out.transfers += n;
    for (int k = 0; k < n; ++k) {
      std::vector<LinkId> path;
      for (int l = 0; l < links; ++l) {
        if (rng() % 3 == 0) path.push_back(static_cast<LinkId>(l));
      }
      if (path.empty()) path.push_back(static_cast<LinkId>(rng() % links));
      c.paths.push_back(path);
      // Sizes on a coarse grid plus a few bytes: drains of flows on equal shares fall a few
      // ns apart, where the epsilon applies.
      c.bytes.push_back(static_cast<double>(1000 * (1 + rng() % 8) + rng() % 16));
    }
  }
  std::function<void(std::size_t, std::size_t)> launch = [&](std::size_t c, std::size_t k) {
    const Chain& ch = (*all)[c];
    net.start_flow(ch.paths[k], ch.bytes[k], [&, c, k](FlowId) {
      out.makespan = std::max(out.makespan, sim.now().count_ns());
      if (k + 1 < (*all)[c].paths.size()) launch(c, k + 1);
    });
  };
  for (std::size_t c = 0; c < all->size(); ++c) launch(c, 0);
  sim.run();
  return out;
}

}  // namespace

TEST_CASE("drain epsilon: random chains move by at most their transfers x epsilon, and epsilon 0 is exact",
          "[flow]") {
  const Time eps = Time::ns(10);
  int moved = 0;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const Outcome exact = random_chains(seed, Time::zero());
    const Outcome again = random_chains(seed, Time::zero());
    const Outcome coalesced = random_chains(seed, eps);
    INFO("seed " << seed);
    CHECK(exact.makespan == again.makespan);  // deterministic
    // Every drain moves later by at most epsilon (and a flow that stays on its links that long
    // delays the others' drains by at most as much): the critical path holds at most every
    // transfer once.
    const std::int64_t budget = static_cast<std::int64_t>(exact.transfers) * eps.count_ns();
    CHECK(std::llabs(coalesced.makespan - exact.makespan) <= budget);
    if (coalesced.makespan != exact.makespan) ++moved;
  }
  // The rule is exercised: some scenarios do coalesce drains.
  CHECK(moved > 0);
}
