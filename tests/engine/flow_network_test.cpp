#include <catch2/catch.hpp>

#include <array>
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

// Completion time of each flow, in ns; -1 while not completed.
struct Done {
  std::vector<std::int64_t> at;
  explicit Done(std::size_t n) : at(n, -1) {}
  FlowNetwork::OnDone on(Simulator& sim, std::size_t i) {
    return [this, &sim, i](FlowId) { at[i] = sim.now().count_ns(); };
  }
};

}  // namespace

TEST_CASE("one flow on one link takes bytes over bandwidth plus latency", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(10e9, Time::us(1), "nvlink");
  Done done(1);
  const std::array<LinkId, 1> path{l};
  const FlowId f = net.start_flow(path, 1e6, done.on(sim, 0));
  CHECK(net.rate(f) == 0.0);  // not re-solved yet
  CHECK(net.active_flows() == 1);
  sim.run_until(Time::zero());
  CHECK(net.rate(f) == 10e9);
  sim.run();
  // 1e6 B / 1e10 B/s = 1e-4 s = 100,000 ns; + 1,000 ns latency.
  CHECK(done.at[0] == 101'000);
  CHECK(net.active_flows() == 0);
  CHECK(net.flows_started() == 1);
  CHECK(net.link_name(l) == "nvlink");
  CHECK(net.link_stats(l).bytes == 1e6);
  CHECK(net.link_stats(l).busy == Time::ns(100'000));  // latency is not link occupancy
}

TEST_CASE("two flows sharing a link get half each, then the survivor speeds up", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::ns(500));
  Done done(2);
  const std::array<LinkId, 1> path{l};
  const FlowId a = net.start_flow(path, 1e6, done.on(sim, 0));
  const FlowId b = net.start_flow(path, 3e6, done.on(sim, 1));
  sim.run_until(Time::zero());
  CHECK(net.rate(a) == 5e8);
  CHECK(net.rate(b) == 5e8);
  // a drains at 1e6 / 5e8 = 2 ms; b has 3e6 − 1e6 = 2e6 B left and now gets 1e9 B/s:
  // 2e6 / 1e9 = 2 ms more, so it drains at 4 ms. Each completes 500 ns after draining.
  sim.run_until(Time::ms(2));
  CHECK(net.rate(a) == 0.0);
  CHECK(net.rate(b) == 1e9);
  sim.run();
  CHECK(done.at[0] == 2'000'500);
  CHECK(done.at[1] == 4'000'500);
  CHECK(net.link_stats(l).bytes == 4e6);
  CHECK(net.link_stats(l).busy == Time::ms(4));
}

TEST_CASE("a flow over a fast link then a slow link runs at the slow link's rate", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId fast = net.add_link(1e10, Time::ns(100));
  const LinkId slow = net.add_link(1e9, Time::ns(200));
  Done done(1);
  const std::array<LinkId, 2> path{fast, slow};
  const FlowId f = net.start_flow(path, 1e6, done.on(sim, 0));
  sim.run_until(Time::zero());
  CHECK(net.rate(f) == 1e9);
  sim.run();
  // 1e6 / 1e9 = 1 ms = 1,000,000 ns; + 100 + 200 ns of latency.
  CHECK(done.at[0] == 1'000'300);
  CHECK(net.link_stats(fast).busy == Time::ms(1));
}

TEST_CASE("max-min fairness: equal capacities give every flow the same share", "[flow]") {
  // Links A and B, 10 GB/s each. Flow 1 crosses A and B, flow 2 only A, flow 3 only B.
  // Both links split two ways: every flow gets 5e9 B/s.
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId a = net.add_link(10e9, Time::zero());
  const LinkId b = net.add_link(10e9, Time::zero());
  const std::array<LinkId, 2> ab{a, b};
  const std::array<LinkId, 1> only_a{a};
  const std::array<LinkId, 1> only_b{b};
  Done done(3);
  const FlowId f1 = net.start_flow(ab, 5e6, done.on(sim, 0));
  const FlowId f2 = net.start_flow(only_a, 10e6, done.on(sim, 1));
  const FlowId f3 = net.start_flow(only_b, 2.5e6, done.on(sim, 2));
  sim.run_until(Time::zero());
  CHECK(net.rate(f1) == 5e9);
  CHECK(net.rate(f2) == 5e9);
  CHECK(net.rate(f3) == 5e9);
  // f3 drains at 2.5e6 / 5e9 = 0.5 ms. Then f1 has 2.5e6 left, f2 7.5e6; A is still shared
  // two ways (5e9 each) and binds f1 before B does, so rates do not change. f1 drains at
  // 0.5 + 2.5e6/5e9 = 1 ms; f2 then has 7.5e6 − 2.5e6 = 5e6 left alone on A at 1e10:
  // 0.5 ms more → 1.5 ms.
  sim.run_until(Time::us(500));
  CHECK(net.rate(f1) == 5e9);
  CHECK(net.rate(f2) == 5e9);
  sim.run();
  CHECK(done.at[2] == 500'000);
  CHECK(done.at[0] == 1'000'000);
  CHECK(done.at[1] == 1'500'000);
}

TEST_CASE("max-min fairness: the most constrained link is filled first", "[flow]") {
  // A = 10 GB/s, B = 4 GB/s. B's fair share 4/2 = 2 is the smallest: flows 1 and 3 are
  // frozen at 2e9. A has 10 − 2 = 8 left for flow 2 alone: 8e9.
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId a = net.add_link(10e9, Time::zero());
  const LinkId b = net.add_link(4e9, Time::zero());
  const std::array<LinkId, 2> ab{a, b};
  const std::array<LinkId, 1> only_a{a};
  const std::array<LinkId, 1> only_b{b};
  Done done(3);
  const FlowId f1 = net.start_flow(ab, 2e6, done.on(sim, 0));
  const FlowId f2 = net.start_flow(only_a, 8e6, done.on(sim, 1));
  const FlowId f3 = net.start_flow(only_b, 4e6, done.on(sim, 2));
  sim.run_until(Time::zero());
  CHECK(net.rate(f1) == 2e9);
  CHECK(net.rate(f2) == 8e9);
  CHECK(net.rate(f3) == 2e9);
  // f1: 2e6 / 2e9 = 1 ms; f2: 8e6 / 8e9 = 1 ms. f3 has 4e6 − 2e6 = 2e6 left at 1 ms and then
  // gets all of B: 2e6 / 4e9 = 0.5 ms → 1.5 ms.
  sim.run_until(Time::ms(1));
  CHECK(net.rate(f3) == 4e9);
  sim.run();
  CHECK(done.at[0] == 1'000'000);
  CHECK(done.at[1] == 1'000'000);
  CHECK(done.at[2] == 1'500'000);
  CHECK(net.resolves() == 3);  // t = 0 (starts), t = 1 ms (two drains batched), t = 1.5 ms
}

TEST_CASE("cancelling a flow speeds up the others and its callback never runs", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::zero());
  const std::array<LinkId, 1> path{l};
  Done done(2);
  const FlowId a = net.start_flow(path, 2e6, done.on(sim, 0));
  const FlowId b = net.start_flow(path, 2e6, done.on(sim, 1));
  sim.schedule_at(Time::ms(1), [&] {
    net.cancel_flow(b);
    net.cancel_flow(b);  // idempotent
  });
  sim.run_until(Time::ms(1));
  CHECK(net.rate(b) == 0.0);
  CHECK(net.active_flows() == 1);
  sim.run();
  // Both at 5e8 for 1 ms: a has 2e6 − 5e5 = 1.5e6 left, then alone at 1e9: 1.5 ms more.
  CHECK(done.at[0] == 2'500'000);
  CHECK(done.at[1] == -1);
  CHECK(net.active_flows() == 0);
  // Carried: all of a plus the 5e5 B of b drained before the cancel.
  CHECK(net.link_stats(l).bytes == 2.5e6);
  CHECK(net.link_stats(l).busy == Time::us(2'500));
  net.cancel_flow(a);  // already completed: ignored
}

TEST_CASE("a flow cancelled during its latency tail never completes", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::us(10));
  const std::array<LinkId, 1> path{l};
  bool called = false;
  // Drains at 1e3 / 1e9 = 1 µs; would complete at 11 µs.
  const FlowId f = net.start_flow(path, 1e3, [&](FlowId) { called = true; });
  sim.schedule_at(Time::us(5), [&] { net.cancel_flow(f); });
  sim.run();
  CHECK_FALSE(called);
  CHECK(sim.now() == Time::us(5));
  CHECK(net.active_flows() == 0);
}

TEST_CASE("a flow with an empty path completes after 0 ns, but not inside start_flow", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  sim.run_until(Time::ns(42));
  bool called = false;
  FlowId reported = 0;
  const FlowId f = net.start_flow({}, 1e9, [&](FlowId id) { called = true; reported = id; });
  CHECK_FALSE(called);
  sim.run();
  CHECK(called);
  CHECK(reported == f);
  CHECK(sim.now() == Time::ns(42));
}

TEST_CASE("a zero-byte flow completes after its path latency", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId a = net.add_link(1e9, Time::ns(300));
  const LinkId b = net.add_link(1e9, Time::ns(400));
  const std::array<LinkId, 2> path{a, b};
  Done done(1);
  net.start_flow(path, 0, done.on(sim, 0));
  sim.run();
  CHECK(done.at[0] == 700);
  CHECK(net.resolves() == 0);
}

TEST_CASE("flows started at one instant are solved in one batch", "[flow]") {
  // 100 flows of 1e6 B on one 1e9 B/s link: each gets 1e7 B/s and all drain together at
  // 1e6 / 1e7 = 0.1 s. One re-solve for the starts, one for the 100 simultaneous drains.
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::zero());
  const std::array<LinkId, 1> path{l};
  Done done(100);
  for (std::size_t i = 0; i < 100; ++i) net.start_flow(path, 1e6, done.on(sim, i));
  sim.run();
  CHECK(net.resolves() == 2);
  for (std::int64_t t : done.at) CHECK(t == 100'000'000);
}

TEST_CASE("a callback can start the next flow: transfers chain back to back", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::ns(250));
  const std::array<LinkId, 1> path{l};
  std::vector<std::int64_t> ends;
  std::function<void(FlowId)> next = [&](FlowId) {
    ends.push_back(sim.now().count_ns());
    if (ends.size() < 3) net.start_flow(path, 1e6, next);
  };
  net.start_flow(path, 1e6, next);
  sim.run();
  // Each hop: 1e6 / 1e9 = 1 ms + 250 ns latency, started when the previous one completed.
  CHECK(ends == std::vector<std::int64_t>{1'000'250, 2'000'500, 3'000'750});
}

TEST_CASE("flows on disjoint links do not disturb each other", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId x = net.add_link(1e9, Time::zero());
  const LinkId y = net.add_link(2e9, Time::zero());
  const std::array<LinkId, 1> px{x};
  const std::array<LinkId, 1> py{y};
  Done done(3);
  net.start_flow(px, 1e6, done.on(sim, 0));  // 1 ms
  net.start_flow(py, 4e6, done.on(sim, 1));  // 4e6 / 2e9 = 2 ms
  sim.schedule_at(Time::ms(1), [&] { net.start_flow(py, 1e6, done.on(sim, 2)); });
  sim.run();
  // At 1 ms the second flow on y has 2e6 B left; y is then shared: 1e9 each.
  // Flow 2 (1e6 B) drains at 1 ms + 1 ms = 2 ms; flow 1 has 1e6 left, then alone at 2e9:
  // 0.5 ms more → 2.5 ms.
  CHECK(done.at[0] == 1'000'000);
  CHECK(done.at[2] == 2'000'000);
  CHECK(done.at[1] == 2'500'000);
}

TEST_CASE("invalid links and byte counts are rejected", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  CHECK_THROWS_AS(net.add_link(0, Time::zero()), std::invalid_argument);
  CHECK_THROWS_AS(net.add_link(1e9, Time::ns(-1)), std::invalid_argument);
  const LinkId l = net.add_link(1e9, Time::zero());
  const std::array<LinkId, 1> bad{l + 1};
  const std::array<LinkId, 1> good{l};
  CHECK_THROWS_AS(net.start_flow(bad, 1, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(net.start_flow(good, -1, nullptr), std::invalid_argument);
  CHECK(net.active_flows() == 0);
}

TEST_CASE("destroying a network cancels its pending events", "[flow]") {
  Simulator sim;
  {
    FlowNetwork net(sim);
    const LinkId l = net.add_link(1e9, Time::zero());
    const std::array<LinkId, 1> path{l};
    net.start_flow(path, 1e6, nullptr);
    CHECK(sim.pending() == 1);  // the re-solve
  }
  CHECK(sim.pending() == 0);
  CHECK(sim.run() == 0);
}

TEST_CASE("a shared link is work-conserving whatever the flow sizes", "[flow]") {
  // 50 flows of awkward sizes (thirds of bytes, primes) on one 3e9 B/s link, all started at 0.
  // Whatever the order of drains, the link is never idle while a flow remains, so the last
  // drain is at Σbytes / bandwidth, late only by the per-drain rounding up to whole ns
  // (at most 1 ns per drain, 50 drains).
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(3e9, Time::zero());
  const std::array<LinkId, 1> path{l};
  double total = 0;
  std::int64_t last = 0;
  for (int i = 1; i <= 50; ++i) {
    const double bytes = 1e6 / 3.0 * i + 7919.0 * (i % 7);
    total += bytes;
    net.start_flow(path, bytes, [&](FlowId) { last = sim.now().count_ns(); });
  }
  sim.run();
  const double ideal_ns = total / 3e9 * 1e9;
  CHECK(static_cast<double>(last) >= ideal_ns - 1.0);
  CHECK(static_cast<double>(last) <= ideal_ns + 50.0);
  CHECK(net.active_flows() == 0);
  CHECK(net.link_stats(l).bytes == Approx(total));
}
