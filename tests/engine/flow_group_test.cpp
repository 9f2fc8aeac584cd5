// Flow groups (FlowNetwork::start_flow_group): a group of w identical flows, run as one weighted
// flow, against the same w flows run separately. Tolerance: completion times within 1 ns (the
// engine rounds drain instants up to whole ns, and the folded filling subtracts w·share once
// where the unfolded one subtracts share w times: float rounding only), rates and link bytes
// within 1e-9 relative.
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

/// `members` identical flows of `bytes` over `path`, started at `start`.
struct Kind {
  std::vector<LinkId> path;
  double bytes = 0;
  std::uint32_t members = 1;
  Time start;
};

struct Outcome {
  std::vector<Time> done;            // per kind: when its (last) member completed
  std::vector<double> rate_at_probe;  // per kind: a member's rate at the probe instant
  std::vector<double> link_bytes;
  std::uint64_t flows = 0, records = 0;
};

/// Runs `kinds` on links of `capacity` (latency 1 µs each), folded (one group per kind) or not
/// (each member its own flow); probes rates at `probe`.
Outcome simulate(const std::vector<double>& capacity, const std::vector<Kind>& kinds, bool folded, Time probe) {
  Simulator sim;
  FlowNetwork net(sim);
  for (double c : capacity) net.add_link(c, Time::us(1));
  Outcome out;
  out.done.assign(kinds.size(), Time::zero());
  out.rate_at_probe.assign(kinds.size(), -1);
  std::vector<std::vector<FlowId>> ids(kinds.size());
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    sim.schedule_at(kinds[k].start, [&, k] {
      const Kind& kind = kinds[k];
      auto done = [&, k](FlowId) { out.done[k] = std::max(out.done[k], sim.now()); };
      if (folded) {
        ids[k].push_back(net.start_flow_group(kind.path, kind.bytes, kind.members, done));
      } else {
        for (std::uint32_t m = 0; m < kind.members; ++m) ids[k].push_back(net.start_flow(kind.path, kind.bytes, done));
      }
    });
  }
  sim.schedule_at(probe, [&] {
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      for (FlowId id : ids[k]) {
        const double r = net.rate(id);
        if (out.rate_at_probe[k] >= 0 && !folded) {
          INFO("unfolded members of one kind must share a rate");
          CHECK(r == Approx(out.rate_at_probe[k]).epsilon(1e-12));
        }
        out.rate_at_probe[k] = r;
      }
    }
  });
  sim.run();
  for (LinkId l = 0; l < capacity.size(); ++l) out.link_bytes.push_back(net.link_stats(l).bytes);
  out.flows = net.flows_started();
  out.records = net.records_started();
  return out;
}

void check_same(const std::vector<double>& capacity, const std::vector<Kind>& kinds, Time probe) {
  const Outcome a = simulate(capacity, kinds, false, probe);
  const Outcome b = simulate(capacity, kinds, true, probe);
  std::uint64_t members = 0;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    INFO("kind " << k);
    members += kinds[k].members;
    const double ta = static_cast<double>(a.done[k].count_ns()), tb = static_cast<double>(b.done[k].count_ns());
    CHECK(std::abs(ta - tb) <= 1 + 1e-9 * ta);
    CHECK(b.rate_at_probe[k] == Approx(a.rate_at_probe[k]).epsilon(1e-9).margin(1e-6));
  }
  for (std::size_t l = 0; l < capacity.size(); ++l) CHECK(b.link_bytes[l] == Approx(a.link_bytes[l]).epsilon(1e-9));
  CHECK(a.flows == members);
  CHECK(b.flows == members);
  CHECK(a.records == members);
  CHECK(b.records == kinds.size());
}

}  // namespace

TEST_CASE("a flow group takes one share per member on every link it crosses", "[flow][group]") {
  // 3 members on a 12 GB/s link beside one lone flow: 4 shares of 3 GB/s.
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(12e9, Time::zero());
  const std::vector<LinkId> path{l};
  const FlowId g = net.start_flow_group(path, 3e9, 3, [](FlowId) {});
  const FlowId f = net.start_flow(path, 3e9, [](FlowId) {});
  sim.run_until(Time::zero());
  CHECK(net.rate(g) == Approx(3e9));
  CHECK(net.rate(f) == Approx(3e9));
  sim.run();
  // All four drain together after 3 GB at 3 GB/s; the link carried 4 × 3 GB.
  CHECK(sim.now() == Time::s(1));
  CHECK(net.link_stats(l).bytes == Approx(12e9));
  CHECK(net.flows_started() == 4);
  CHECK(net.records_started() == 2);
  CHECK_THROWS_AS(net.start_flow_group(path, 1, 0, [](FlowId) {}), std::invalid_argument);
}

TEST_CASE("queue pairs folded by route on a rail fabric match the separate flows", "[flow][group]") {
  // Rail-optimised: 4 nodes × 2 rails. Links: per node and rail a NIC up and a NIC down (50 GB/s);
  // per rail a leaf with 2 uplinks and 2 downlinks to 2 spines (100 GB/s each). A connection of
  // 8 queue pairs from node 0 to node 1 on rail 0 hashes 5 of them to spine 0 and 3 to spine 1:
  // two groups (5 and 3 members).
  std::vector<double> cap;
  auto link = [&](double c) {
    cap.push_back(c);
    return static_cast<LinkId>(cap.size() - 1);
  };
  LinkId nic_up[4][2], nic_down[4][2], up[2][2], down[2][2];
  for (auto& node : nic_up)
    for (auto& x : node) x = link(50e9);
  for (auto& node : nic_down)
    for (auto& x : node) x = link(50e9);
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < 2; ++s) {
      up[r][s] = link(100e9);
      down[r][s] = link(100e9);
    }
  }
  auto qp = [&](int from, int to, int rail, int spine, double bytes, std::uint32_t members, Time start) {
    return Kind{{nic_up[from][rail], up[rail][spine], down[rail][spine], nic_down[to][rail]}, bytes, members, start};
  };
  SECTION("alone") {
    check_same(cap, {qp(0, 1, 0, 0, 1e8, 5, Time::zero()), qp(0, 1, 0, 1, 1e8, 3, Time::zero())}, Time::us(10));
  }
  SECTION("with contending traffic on the same rail, started earlier and later") {
    check_same(cap,
               {qp(0, 1, 0, 0, 1e8, 5, Time::zero()), qp(0, 1, 0, 1, 1e8, 3, Time::zero()),
                qp(2, 1, 0, 0, 3e8, 1, Time::us(5)), qp(3, 2, 0, 0, 2e8, 4, Time::zero()),
                qp(2, 3, 1, 1, 1e8, 2, Time::us(100))},
               Time::us(200));
  }
}

TEST_CASE("flow groups on an oversubscribed leaf-spine match the separate flows", "[flow][group]") {
  // 2 leaves × 4 nodes, one NIC each (50 GB/s up and down); each leaf has 2 uplinks of 50 GB/s
  // to 2 spines (2:1 oversubscribed) and 2 downlinks back.
  std::vector<double> cap;
  auto link = [&](double c) {
    cap.push_back(c);
    return static_cast<LinkId>(cap.size() - 1);
  };
  LinkId nic_up[8], nic_down[8], up[2][2], down[2][2];
  for (auto& x : nic_up) x = link(50e9);
  for (auto& x : nic_down) x = link(50e9);
  for (int leaf = 0; leaf < 2; ++leaf) {
    for (int s = 0; s < 2; ++s) {
      up[leaf][s] = link(50e9);
      down[leaf][s] = link(50e9);
    }
  }
  auto flow = [&](int from, int to, int spine, double bytes, std::uint32_t members, Time start) {
    return Kind{{nic_up[from], up[from / 4][spine], down[to / 4][spine], nic_down[to]}, bytes, members, start};
  };
  SECTION("one connection, uncontended") {
    check_same(cap, {flow(0, 4, 0, 4e8, 6, Time::zero()), flow(0, 4, 1, 4e8, 2, Time::zero())}, Time::us(50));
  }
  SECTION("every node of leaf 0 sends across, some connections folded, staggered starts") {
    std::vector<Kind> kinds;
    for (int n = 0; n < 4; ++n) {
      kinds.push_back(flow(n, 4 + n, n % 2, 2e8 + 5e7 * n, static_cast<std::uint32_t>(1 + n), Time::us(7 * n)));
      kinds.push_back(flow(n, 4 + (n + 1) % 4, (n + 1) % 2, 1e8, 3, Time::us(3 * n)));
    }
    kinds.push_back(flow(5, 1, 0, 5e8, 1, Time::zero()));  // contending traffic the other way
    check_same(cap, kinds, Time::us(30));
  }
}

TEST_CASE("random flow groups match the separate flows", "[flow][group]") {
  std::mt19937_64 rng(6042026);  // fixed seed: the same cases on every run
  auto below = [&](std::uint64_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int trial = 0; trial < 100; ++trial) {
    INFO("trial " << trial);
    const std::size_t links = 1 + below(8);
    std::vector<double> cap(links);
    for (double& c : cap) c = 1e9 * static_cast<double>(1 + below(100));
    std::vector<Kind> kinds(1 + below(8));
    for (Kind& k : kinds) {
      std::vector<LinkId> all(links);
      for (std::size_t l = 0; l < links; ++l) all[l] = static_cast<LinkId>(l);
      for (std::size_t l = links; l > 1; --l) std::swap(all[l - 1], all[below(l)]);
      k.path.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(1 + below(std::min<std::size_t>(links, 4))));
      k.bytes = 1e6 * static_cast<double>(1 + below(1000));
      k.members = static_cast<std::uint32_t>(1 + below(6));
      k.start = Time::us(static_cast<std::int64_t>(below(3)) * 100);
    }
    check_same(cap, kinds, Time::us(150));
  }
}
