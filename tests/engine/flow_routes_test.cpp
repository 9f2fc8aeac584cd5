// Multi-route groups (FlowNetwork::start_flow_routes): a connection's queue pairs on several
// routes as one record, against the same routes run as separate flow groups
// (start_flow_group). Expected: the same completion instants to the ns, the same link bytes
// within 1e-9 relative (the group credits bytes × members once per link where the separate
// groups add them route by route), and hand-computed instants where the shares are simple.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

using ironlaw::Time;
using ironlaw::engine::FlowId;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;

namespace {

/// A connection: `members[r]` flows of `bytes` over route r, started at `start`.
struct Connection {
  std::vector<std::vector<LinkId>> routes;
  std::vector<std::uint32_t> members;
  double bytes = 0;
  Time start;
};

struct Outcome {
  std::vector<Time> done;  // per connection: when its last member completed
  std::vector<double> link_bytes;
  std::uint64_t flows = 0, records = 0, splits = 0;
};

/// Runs `connections` on links of `capacity` (latency 1 µs each), merged (one multi-route
/// group each) or not (one flow group per route).
Outcome simulate(const std::vector<double>& capacity, const std::vector<Connection>& connections, bool merged) {
  Simulator sim;
  FlowNetwork net(sim);
  for (double c : capacity) net.add_link(c, Time::us(1));
  Outcome out;
  out.done.assign(connections.size(), Time::zero());
  for (std::size_t k = 0; k < connections.size(); ++k) {
    sim.schedule_at(connections[k].start, [&, k] {
      const Connection& c = connections[k];
      if (merged && c.routes.size() > 1) {
        std::vector<FlowNetwork::RouteHop> hops;
        for (std::size_t r = 0; r < c.routes.size(); ++r) {
          for (LinkId l : c.routes[r]) {
            auto it = std::find_if(hops.begin(), hops.end(), [&](const auto& h) { return h.link == l; });
            if (it == hops.end()) it = hops.insert(hops.end(), FlowNetwork::RouteHop{l, 0});
            it->routes |= 1u << r;
          }
        }
        net.start_flow_routes(hops, c.members, c.bytes, [&, k](FlowId) {
          CHECK(out.done[k] == Time::zero());  // once
          out.done[k] = sim.now();
        });
        return;
      }
      auto left = std::make_shared<std::size_t>(c.routes.size());
      for (std::size_t r = 0; r < c.routes.size(); ++r) {
        net.start_flow_group(c.routes[r], c.bytes, c.members[r], [&, k, left](FlowId) {
          if (--*left == 0) out.done[k] = sim.now();
        });
      }
    });
  }
  sim.run();
  for (LinkId l = 0; l < capacity.size(); ++l) out.link_bytes.push_back(net.link_stats(l).bytes);
  out.flows = net.flows_started();
  out.records = net.records_started();
  out.splits = net.route_splits();
  return out;
}

void check_same(const Outcome& a, const Outcome& b) {
  CHECK(a.done == b.done);
  CHECK(a.flows == b.flows);
  REQUIRE(a.link_bytes.size() == b.link_bytes.size());
  for (std::size_t l = 0; l < a.link_bytes.size(); ++l) CHECK(a.link_bytes[l] == Approx(b.link_bytes[l]).epsilon(1e-9));
}

}  // namespace

// Links: 0 = the connection's NIC (400 B/s), 1 and 2 = two spine links, 3 = the receiving NIC.
TEST_CASE("a multi-route group whose routes share their bottleneck stays one record", "[flow][routes]") {
  const std::vector<double> capacity{400, 1000, 1000, 400};
  const std::vector<Connection> one{{{{0, 1, 3}, {0, 2, 3}}, {3, 1}, 1000, Time::zero()}};
  const Outcome merged = simulate(capacity, one, true);
  const Outcome separate = simulate(capacity, one, false);
  // Hand: 4 members share the 400 B/s NIC, 100 B/s each; 1000 B drain in 10 s, then 3 × 1 µs.
  CHECK(merged.done[0] == Time::from_seconds(10) + Time::us(3));
  CHECK(merged.records == 1);
  CHECK(merged.splits == 0);
  CHECK(separate.records == 2);
  CHECK(merged.link_bytes[1] == Approx(3000));  // 3 members on spine 1
  CHECK(merged.link_bytes[2] == Approx(1000));
  check_same(merged, separate);
}

TEST_CASE("a multi-route group splits where a spine link is its routes' bottleneck", "[flow][routes]") {
  // Spine 1 has 150 B/s: route 0's 3 members get 50 each there; route 1's member takes what the
  // NIC leaves, 400 − 150 = 250 B/s. Route 1 drains in 4 s, then route 0 is still spine-bound:
  // it drains at 20 s. Done at 20 s + 3 µs.
  const std::vector<double> capacity{400, 150, 1000, 400};
  const std::vector<Connection> one{{{{0, 1, 3}, {0, 2, 3}}, {3, 1}, 1000, Time::zero()}};
  const Outcome merged = simulate(capacity, one, true);
  CHECK(merged.done[0] == Time::from_seconds(20) + Time::us(3));
  CHECK(merged.splits == 1);
  CHECK(merged.records == 3);  // the group, then its two routes
  check_same(merged, simulate(capacity, one, false));
}

TEST_CASE("a multi-route group splits when another flow later makes a spine link its bottleneck", "[flow][routes]") {
  // From 0: 4 members at 100 B/s on the NIC (spine 1, 320 B/s, would give route 0's 3 members
  // 106.7). At 2 s (800 B left each) a lone flow of 2,000 B starts over spine 1: 4 flows there,
  // 80 B/s each, less than the NIC's share, so the group splits. Route 0: 800 B at 80 B/s, drained
  // at 12 s; route 1 takes what the NIC leaves, 400 − 240 = 160 B/s, drained at 7 s. Done at
  // 12 s + 3 µs. The separate groups give the same.
  const std::vector<double> capacity{400, 320, 1000, 400, 1000};
  const std::vector<Connection> load{{{{0, 1, 3}, {0, 2, 3}}, {3, 1}, 1000, Time::zero()},
                                     {{{4, 1}}, {1}, 2000, Time::from_seconds(2)}};
  const Outcome merged = simulate(capacity, load, true);
  CHECK(merged.splits == 1);
  CHECK(merged.done[0] == Time::from_seconds(12) + Time::us(3));
  // The lone flow: 800 B at 80 B/s until 12 s, then alone on spine 1: 1,200 B at 320 B/s.
  CHECK(merged.done[1] == Time::from_seconds(15.75) + Time::us(2));
  check_same(merged, simulate(capacity, load, false));
}

TEST_CASE("random multi-route groups on a leaf-spine match the separate flow groups", "[flow][routes]") {
  // 4 leaves × 2 NICs up and down, 4 spines; links: NIC up (8), NIC down (8), leaf→spine (16),
  // spine→leaf (16). A connection from NIC a to NIC b on other leaves spreads 16 queue pairs over
  // hashed spines; background single-route flows load random spine links at random times.
  std::mt19937_64 rng(20261201);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> capacity;
    for (int i = 0; i < 16; ++i) capacity.push_back(100);
    for (int i = 0; i < 32; ++i) capacity.push_back(std::uniform_real_distribution<double>(30, 120)(rng));
    auto up = [](int nic) { return static_cast<LinkId>(nic); };
    auto down = [](int nic) { return static_cast<LinkId>(8 + nic); };
    auto to_spine = [](int leaf, int spine) { return static_cast<LinkId>(16 + leaf * 4 + spine); };
    auto from_spine = [](int leaf, int spine) { return static_cast<LinkId>(32 + leaf * 4 + spine); };
    std::vector<Connection> connections;
    std::uniform_int_distribution<int> nic(0, 7), spine(0, 3), start_ms(0, 2000);
    for (int c = 0; c < 6; ++c) {
      const int a = nic(rng);
      int b = nic(rng);
      while (b / 2 == a / 2) b = nic(rng);
      Connection conn;
      conn.bytes = std::uniform_real_distribution<double>(50, 500)(rng);
      conn.start = Time::ms(start_ms(rng));
      std::vector<std::uint32_t> per_spine(4, 0);
      for (int q = 0; q < 16; ++q) ++per_spine[static_cast<std::size_t>(spine(rng))];
      for (int s = 0; s < 4; ++s) {
        if (per_spine[static_cast<std::size_t>(s)] == 0) continue;
        conn.routes.push_back({up(a), to_spine(a / 2, s), from_spine(b / 2, s), down(b)});
        conn.members.push_back(per_spine[static_cast<std::size_t>(s)]);
      }
      connections.push_back(conn);
    }
    for (int f = 0; f < 4; ++f) {
      const int leaf = spine(rng), s = spine(rng);
      connections.push_back(Connection{{{to_spine(leaf, s), from_spine((leaf + 1) % 4, s)}},
                                       {1},
                                       std::uniform_real_distribution<double>(20, 200)(rng),
                                       Time::ms(start_ms(rng))});
    }
    INFO("trial " << trial);
    const Outcome merged = simulate(capacity, connections, true);
    const Outcome separate = simulate(capacity, connections, false);
    check_same(merged, separate);
    // A split group counts once, then each route once: at most one record more per split.
    CHECK(merged.records <= separate.records + merged.splits);
  }
}

TEST_CASE("start_flow_routes refuses what it cannot run as one record", "[flow][routes]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId a = net.add_link(100, Time::us(1)), b = net.add_link(100, Time::us(1));
  const LinkId slow = net.add_link(100, Time::us(2));
  const std::vector<std::uint32_t> two{1, 1};
  auto none = [](FlowId) {};
  using Hops = std::vector<FlowNetwork::RouteHop>;
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 1}}, std::vector<std::uint32_t>{}, 10, none), std::invalid_argument);
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 3}}, std::vector<std::uint32_t>{1, 0}, 10, none),
                  std::invalid_argument);
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 1}}, two, 10, none), std::invalid_argument);       // route 1 crosses nothing
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 7}}, two, 10, none), std::invalid_argument);       // route 2 does not exist
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 1}, {slow, 2}}, two, 10, none), std::invalid_argument);  // 1 vs 2 µs
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{a, 1}, {b, 2}}, two, -1, none), std::invalid_argument);
  CHECK_THROWS_AS(net.start_flow_routes(Hops{{99, 1}, {b, 2}}, two, 10, none), std::invalid_argument);
  CHECK(net.records_started() == 0);
}
