// FlowNetwork's rates against an independent global water-filling and against the definition of
// max-min fairness, on small random graphs; and the on_drained callback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
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

/// Global water-filling, the textbook way: raise every unfrozen flow's rate together until a
/// link saturates, freeze the flows crossing it, repeat. O(F · L) per round, no shortcuts.
std::vector<double> water_fill(const std::vector<double>& capacity, const std::vector<std::vector<LinkId>>& paths) {
  const std::size_t flows = paths.size();
  std::vector<double> rate(flows, 0.0);
  std::vector<char> frozen(flows, 0);
  std::size_t left = flows;
  while (left > 0) {
    double step = -1;
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      double used = 0;
      int unfrozen = 0;
      for (std::size_t f = 0; f < flows; ++f) {
        const bool crosses = std::find(paths[f].begin(), paths[f].end(), l) != paths[f].end();
        if (!crosses) continue;
        used += rate[f];
        if (!frozen[f]) ++unfrozen;
      }
      if (unfrozen == 0) continue;
      const double room = (capacity[l] - used) / unfrozen;
      if (step < 0 || room < step) step = room;
    }
    for (std::size_t f = 0; f < flows; ++f) {
      if (!frozen[f]) rate[f] += step;
    }
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      double used = 0;
      for (std::size_t f = 0; f < flows; ++f) {
        if (std::find(paths[f].begin(), paths[f].end(), l) != paths[f].end()) used += rate[f];
      }
      if (used < capacity[l] * (1 - 1e-12)) continue;
      for (std::size_t f = 0; f < flows; ++f) {
        if (!frozen[f] && std::find(paths[f].begin(), paths[f].end(), l) != paths[f].end()) {
          frozen[f] = 1;
          --left;
        }
      }
    }
  }
  return rate;
}

}  // namespace

TEST_CASE("flow rates equal a brute-force global max-min water-filling on random graphs", "[flow]") {
  std::mt19937_64 rng(20261130);  // fixed seed: the same graphs on every run
  auto below = [&](std::uint64_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int trial = 0; trial < 300; ++trial) {
    Simulator sim;
    FlowNetwork net(sim);
    const std::size_t links = 1 + below(8);
    std::vector<double> capacity(links);
    for (std::size_t l = 0; l < links; ++l) {
      capacity[l] = 1e9 * static_cast<double>(1 + below(100));
      net.add_link(capacity[l], Time::zero());
    }
    const std::size_t flows = 1 + below(12);
    std::vector<std::vector<LinkId>> paths(flows);
    std::vector<FlowId> ids(flows);
    for (std::size_t f = 0; f < flows; ++f) {
      std::vector<LinkId> all(links);
      for (std::size_t l = 0; l < links; ++l) all[l] = static_cast<LinkId>(l);
      for (std::size_t l = links; l > 1; --l) std::swap(all[l - 1], all[below(l)]);
      paths[f].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(1 + below(std::min<std::size_t>(links, 4))));
      ids[f] = net.start_flow(paths[f], 1e12, [](FlowId) {});
    }
    sim.run_until(Time::zero());
    const auto expected = water_fill(capacity, paths);
    std::vector<double> got(flows);
    for (std::size_t f = 0; f < flows; ++f) {
      got[f] = net.rate(ids[f]);
      INFO("trial " << trial << ", flow " << f);
      CHECK(got[f] == Approx(expected[f]).epsilon(1e-9));
    }
    // The definition: feasible, and every flow crosses a saturated link on which no flow is faster.
    for (std::size_t l = 0; l < links; ++l) {
      double used = 0;
      for (std::size_t f = 0; f < flows; ++f) {
        if (std::find(paths[f].begin(), paths[f].end(), l) != paths[f].end()) used += got[f];
      }
      CHECK(used <= capacity[l] * (1 + 1e-9));
    }
    for (std::size_t f = 0; f < flows; ++f) {
      bool bottlenecked = false;
      for (LinkId l : paths[f]) {
        double used = 0, fastest = 0;
        for (std::size_t g = 0; g < flows; ++g) {
          if (std::find(paths[g].begin(), paths[g].end(), l) == paths[g].end()) continue;
          used += got[g];
          fastest = std::max(fastest, got[g]);
        }
        if (used >= capacity[l] * (1 - 1e-9) && got[f] >= fastest * (1 - 1e-9)) bottlenecked = true;
      }
      INFO("trial " << trial << ", flow " << f);
      CHECK(bottlenecked);
    }
  }
}

TEST_CASE("on_drained runs when the last byte leaves, a path latency before completion", "[flow]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::us(2));
  const std::array<LinkId, 1> path{l};
  std::int64_t drained = -1, done = -1;
  net.start_flow(
      path, 1e6, [&](FlowId) { done = sim.now().count_ns(); }, [&](FlowId) { drained = sim.now().count_ns(); });
  sim.run();
  CHECK(drained == 1'000'000);  // 1 MB at 1 GB/s
  CHECK(done == 1'002'000);     // + 2 us
  // A cancelled flow reports neither.
  drained = done = -1;
  const FlowId f = net.start_flow(
      path, 1e6, [&](FlowId) { done = 1; }, [&](FlowId) { drained = 1; });
  sim.run_until(sim.now() + Time::us(10));
  net.cancel_flow(f);
  sim.run();
  CHECK(drained == -1);
  CHECK(done == -1);
}
