// Tail coalescing (flow_network.hpp): completions due at one instant whose events would run
// back to back share one event. Every check compares against one event per completion
// (set_coalesce_tails(false)) or against times worked out by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

using ironlaw::Time;
using ironlaw::engine::FlowId;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;

namespace {

// Four flows of 1,000 B on four disjoint 1 GB/s links with 10 µs latency, started at 0: each
// drains at 1 µs (one drain instant) and completes at 11 µs. `hook(i)` runs in flow i's
// callback after its completion is logged. Returns the log ("i@ns") and the events executed.
struct Run {
  std::vector<std::string> log;
  std::uint64_t events = 0;
};

template <class Hook>
Run four_flows(bool coalesce, Hook hook) {
  Simulator sim;
  FlowNetwork net(sim);
  net.set_coalesce_tails(coalesce);
  Run out;
  std::vector<FlowId> ids;
  std::vector<std::array<LinkId, 1>> paths;
  for (int i = 0; i < 4; ++i) paths.push_back({net.add_link(1e9, Time::us(10))});
  for (int i = 0; i < 4; ++i) {
    ids.push_back(net.start_flow(paths[static_cast<std::size_t>(i)], 1e3, [&, i](FlowId) {
      out.log.push_back(std::to_string(i) + "@" + std::to_string(sim.now().count_ns()));
      hook(sim, net, ids, out.log, i);
    }));
  }
  sim.run();
  while (sim.pending() > 0) sim.run();  // after a stop(): go on
  out.events = sim.events_executed();
  return out;
}

}  // namespace

TEST_CASE("tail coalescing: one event completes the flows of one instant, in order, at the same time", "[flow]") {
  auto none = [](Simulator&, FlowNetwork&, std::vector<FlowId>&, std::vector<std::string>&, int) {};
  const Run on = four_flows(true, none);
  const Run off = four_flows(false, none);
  const std::vector<std::string> expected{"0@11000", "1@11000", "2@11000", "3@11000"};  // 1 µs + 10 µs
  CHECK(on.log == expected);
  CHECK(off.log == expected);
  CHECK(off.events - on.events == 3);  // four completion events became one
}

TEST_CASE("tail coalescing: a flow cancelled in its tail by an earlier member never completes", "[flow]") {
  auto cancel_two = [](Simulator&, FlowNetwork& net, std::vector<FlowId>& ids, std::vector<std::string>&, int i) {
    if (i == 0) net.cancel_flow(ids[2]);
  };
  const Run on = four_flows(true, cancel_two);
  const Run off = four_flows(false, cancel_two);
  const std::vector<std::string> expected{"0@11000", "1@11000", "3@11000"};
  CHECK(on.log == expected);
  CHECK(off.log == expected);
}

TEST_CASE("tail coalescing: a stop() inside a batch leaves the rest pending in place", "[flow]") {
  // Flow 1's callback stops the run and schedules an event for the same instant: with one
  // event per completion, flows 2 and 3 (scheduled earlier) complete before it on the next run.
  auto stop_at_one = [](Simulator& sim, FlowNetwork&, std::vector<FlowId>&, std::vector<std::string>& log, int i) {
    if (i != 1) return;
    sim.stop();
    sim.schedule_in(Time::zero(), [&log, &sim] { log.push_back("x@" + std::to_string(sim.now().count_ns())); });
  };
  const Run on = four_flows(true, stop_at_one);
  const Run off = four_flows(false, stop_at_one);
  const std::vector<std::string> expected{"0@11000", "1@11000", "2@11000", "3@11000", "x@11000"};
  CHECK(off.log == expected);
  CHECK(on.log == expected);
}

TEST_CASE("tail coalescing: random traffic completes at the same times in the same order either way", "[flow]") {
  // 40 links, flows of 1–3 hops with latencies from a few values so that tails coincide, some
  // started by callbacks at the instant of a completion, some cancelled. The log of
  // (flow, time) must be identical with and without coalescing.
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    auto simulate = [seed](bool coalesce, std::uint64_t& events) {
      Simulator sim;
      FlowNetwork net(sim);
      net.set_coalesce_tails(coalesce);
      std::mt19937 rng(seed);
      std::vector<LinkId> links;
      for (int l = 0; l < 40; ++l) {
        links.push_back(net.add_link(1e9 * (1 + l % 3), Time::us(l % 2 == 0 ? 1 : 2)));
      }
      std::vector<std::string> log;
      std::vector<FlowId> ids;
      int next = 0;
      std::function<void(int)> start = [&](int depth) {
        std::vector<LinkId> path;
        const int hops = 1 + static_cast<int>(rng() % 3);
        for (int h = 0; h < hops; ++h) path.push_back(links[rng() % links.size()]);
        std::sort(path.begin(), path.end());
        path.erase(std::unique(path.begin(), path.end()), path.end());
        const int id = next++;
        const double bytes = 1e3 * static_cast<double>(1 + rng() % 4);
        ids.push_back(net.start_flow(path, bytes, [&, id, depth](FlowId) {
          log.push_back(std::to_string(id) + "@" + std::to_string(sim.now().count_ns()));
          if (depth < 3 && id % 3 == 0) start(depth + 1);
          if (id % 7 == 0 && !ids.empty()) net.cancel_flow(ids[static_cast<std::size_t>(id) / 2]);
        }));
      };
      for (int i = 0; i < 60; ++i) {
        sim.schedule_at(Time::ns(static_cast<std::int64_t>(rng() % 4) * 500), [&] { start(0); });
      }
      sim.run();
      events = sim.events_executed();
      return log;
    };
    std::uint64_t events_on = 0, events_off = 0;
    const auto on = simulate(true, events_on);
    const auto off = simulate(false, events_off);
    INFO("seed " << seed);
    CHECK(on == off);
    CHECK(events_on <= events_off);
  }
}
