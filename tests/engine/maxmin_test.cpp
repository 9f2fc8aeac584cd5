// FlowNetwork's rates against an independent global water-filling and against the definition of
// max-min fairness, on small random graphs; and the on_drained callback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
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

/// The shape of a random max-min problem that evolves in time: `links` + below(`link_spread`)
/// links of 1e9 · (1 + below(`capacity_steps`)) B/s; `flows` + below(`flow_spread`) flows, each
/// over 1 + below(min(links, `max_path`)) distinct links in random order, starting at a whole
/// microsecond below `start_us` with 1 + below(`kilobytes`) kB; `checks` instants checked.
struct RandomProblem {
  std::size_t links, link_spread, capacity_steps, flows, flow_spread, max_path, start_us, kilobytes;
  int checks;
};

/// Runs one random problem of `shape` on `net` (drawing from `below`) and checks, half-way
/// between whole microseconds, each active flow's rate against the water-filling of the flows
/// active then — what a fresh global solve gives — and at the end that every flow finished.
void check_random_max_min(Simulator& sim, FlowNetwork& net, const RandomProblem& shape,
                          const std::function<std::size_t(std::uint64_t)>& below, int trial) {
  const std::size_t links = shape.links + below(shape.link_spread);
  std::vector<double> capacity(links);
  for (std::size_t l = 0; l < links; ++l) {
    capacity[l] = 1e9 * static_cast<double>(1 + below(shape.capacity_steps));
    net.add_link(capacity[l], Time::zero());
  }
  const std::size_t flows = shape.flows + below(shape.flow_spread);
  std::vector<std::vector<LinkId>> paths(flows);
  std::vector<FlowId> ids(flows, 0);
  std::vector<char> done(flows, 0);
  for (std::size_t f = 0; f < flows; ++f) {
    std::vector<LinkId> all(links);
    for (std::size_t l = 0; l < links; ++l) all[l] = static_cast<LinkId>(l);
    for (std::size_t l = links; l > 1; --l) std::swap(all[l - 1], all[below(l)]);
    paths[f].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(1 + below(std::min(links, shape.max_path))));
    const Time at = Time::us(static_cast<std::int64_t>(below(shape.start_us)));
    const double bytes = 1e3 * static_cast<double>(1 + below(shape.kilobytes));
    sim.schedule_at(at, [&, f, bytes] { ids[f] = net.start_flow(paths[f], bytes, [&, f](FlowId) { done[f] = 1; }); });
  }
  for (int k = 0; k < shape.checks; ++k) {
    sim.run_until(Time::ns(1000 * k + 500));
    std::vector<std::size_t> active;
    std::vector<std::vector<LinkId>> active_paths;
    for (std::size_t f = 0; f < flows; ++f) {
      if (ids[f] != 0 && !done[f]) {  // zero latency: started and not done = draining
        active.push_back(f);
        active_paths.push_back(paths[f]);
      }
    }
    const auto expected = water_fill(capacity, active_paths);
    for (std::size_t i = 0; i < active.size(); ++i) {
      INFO("trial " << trial << ", t = " << 1000 * k + 500 << " ns, flow " << active[i]);
      CHECK(net.rate(ids[active[i]]) == Approx(expected[i]).epsilon(1e-9));
    }
  }
  sim.run();
  for (std::size_t f = 0; f < flows; ++f) CHECK(done[f]);
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

TEST_CASE("flow rates stay the global max-min allocation as flows start and end at random times", "[flow]") {
  // Starts at whole microseconds and checks half-way between them, against the water-filling of
  // the flows active at that instant: every local re-solve (and every fall-back to the full
  // one) must leave the allocation a fresh global solve would give.
  std::mt19937_64 rng(20261201);
  auto below = [&](std::uint64_t n) { return static_cast<std::size_t>(rng() % n); };
  // Lazy rounds on (the default) and off (the closed partial re-solve and its fall-back).
  std::uint64_t resolves = 0, full = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Simulator sim;
    FlowNetwork net(sim);
    const bool lazy = trial % 2 == 0;
    if (!lazy) net.set_lazy_rounds(0);
    // 1–40 kB each: flows end while others start.
    check_random_max_min(sim, net, RandomProblem{1, 8, 20, 1, 16, 4, 40, 40, 60}, below, trial);
    if (!lazy) {
      resolves += net.resolves();
      full += net.full_resolves();
    }
  }
  // Without lazy rounds, both kinds of re-solve ran (the comparison above covers each).
  CHECK(full > 0);
  CHECK(full < resolves);
}

TEST_CASE("a re-solve touches only the flows whose rate can move, and falls back where an older flow must slow", "[flow]") {
  // Without lazy rounds the older flow that must slow is found by the full re-solve; with them,
  // by a second lazy round (the first one's check fails on d, so d's flows join).
  const int rounds = GENERATE(0, FlowNetwork::kLazyRounds);
  Simulator sim;
  FlowNetwork net(sim);
  net.set_lazy_rounds(rounds);
  const LinkId a = net.add_link(1e9, Time::zero());
  const LinkId b = net.add_link(4e9, Time::zero());
  const LinkId c = net.add_link(1e9, Time::zero());
  const LinkId d = net.add_link(2e9, Time::zero());
  const LinkId e = net.add_link(1.5e9, Time::zero());
  const std::array<LinkId, 2> ab{a, b};
  const std::array<LinkId, 2> cb{c, b};
  const std::array<LinkId, 1> only_a{a};
  const std::array<LinkId, 2> de{d, e};
  const std::array<LinkId, 1> only_d{d};
  const FlowId first = net.start_flow(ab, 1e9, [](FlowId) {});
  sim.run_until(Time::zero());
  CHECK(net.rate(first) == Approx(1e9));  // a saturates; b keeps 3 GB/s of room
  // Over c and b: b has room, c is empty; no other rate moves.
  sim.run_until(Time::us(1));
  const FlowId second = net.start_flow(cb, 1e9, [](FlowId) {});
  sim.run_until(Time::us(1));
  CHECK(net.rate(second) == Approx(1e9));
  CHECK(net.rate(first) == Approx(1e9));
  // Over a alone: a is saturated, so the first flow is re-solved with it (b's room is what the
  // second flow leaves): 0.5 GB/s each, the second flow untouched. Still partial.
  sim.run_until(Time::us(2));
  const FlowId third = net.start_flow(only_a, 1e9, [](FlowId) {});
  sim.run_until(Time::us(2));
  CHECK(net.rate(third) == Approx(0.5e9));
  CHECK(net.rate(first) == Approx(0.5e9));
  CHECK(net.rate(second) == Approx(1e9));
  CHECK(net.full_resolves() == 0);
  // d has room (the fourth flow is held to 1.5 GB/s by e), but a fifth flow over d must take an
  // equal share of it, 1 GB/s each: the older flow slows on a link that was not saturated, which
  // the closed partial re-solve cannot see, so the full one runs (without lazy rounds).
  sim.run_until(Time::us(3));
  const FlowId fourth = net.start_flow(de, 1e9, [](FlowId) {});
  sim.run_until(Time::us(3));
  CHECK(net.rate(fourth) == Approx(1.5e9));
  CHECK(net.full_resolves() == 0);
  sim.run_until(Time::us(4));
  const FlowId fifth = net.start_flow(only_d, 1e9, [](FlowId) {});
  sim.run_until(Time::us(4));
  CHECK(net.full_resolves() == (rounds == 0 ? 1u : 0u));
  CHECK(net.rate(fourth) == Approx(1e9));
  CHECK(net.rate(fifth) == Approx(1e9));
  CHECK(net.resolves() == 5);
}

TEST_CASE("lazy partial re-solves stay the global max-min allocation on larger random graphs", "[flow]") {
  // More links and flows than above, so that a lazy round's check fails and later rounds (or the
  // closed re-solve) take more flows in: every instant checked against a fresh water-filling.
  std::mt19937_64 rng(20261202);
  auto below = [&](std::uint64_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int trial = 0; trial < 40; ++trial) {
    Simulator sim;
    FlowNetwork net(sim);
    check_random_max_min(sim, net, RandomProblem{12, 13, 8, 20, 41, 5, 30, 60, 80}, below, trial);
  }
}

TEST_CASE("a lazy pass takes up front the flows faster than a re-solved flow on its saturated links", "[flow]") {
  // By hand. Links M 1 GB/s and L 2 GB/s. X over M and L, Z over M, Y over L: X and Z share M,
  // 0.5 GB/s each; Y takes what X leaves of L, 1.5 GB/s (L saturated, Y faster there than X).
  // Z is cancelled: X, on M (changed, saturated), is re-solved, and may now take more of L, so
  // Y must slow: X and Y 1 GB/s each. X's old rate (0.5) is below Y's on L, so Y joins the
  // first pass: one pass. (Without that, the first pass froze X at L's leftover 0.5 GB/s, its
  // check failed on Y, and a second pass took Y in.)
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId m = net.add_link(1e9, Time::zero());
  const LinkId l = net.add_link(2e9, Time::zero());
  const std::array<LinkId, 2> ml{m, l};
  const std::array<LinkId, 1> only_m{m};
  const std::array<LinkId, 1> only_l{l};
  const FlowId x = net.start_flow(ml, 1e12, [](FlowId) {});
  const FlowId z = net.start_flow(only_m, 1e12, [](FlowId) {});
  const FlowId y = net.start_flow(only_l, 1e12, [](FlowId) {});
  sim.run_until(Time::zero());
  REQUIRE(net.rate(x) == Approx(0.5e9));
  REQUIRE(net.rate(z) == Approx(0.5e9));
  REQUIRE(net.rate(y) == Approx(1.5e9));
  const std::uint64_t resolves = net.resolves(), passes = net.partial_passes();
  sim.run_until(Time::us(1));
  net.cancel_flow(z);
  sim.run_until(Time::us(1));
  CHECK(net.rate(x) == Approx(1e9));
  CHECK(net.rate(y) == Approx(1e9));
  CHECK(net.resolves() == resolves + 1);
  CHECK(net.partial_passes() == passes + 1);
  CHECK(net.full_resolves() == 0);
}

TEST_CASE("a failed lazy pass hands every failing link to the next pass, not only the first", "[flow]") {
  // By hand, twice over: links d_k 2 GB/s and e_k 1.5 GB/s; an old flow o_k over d_k and e_k is
  // held to 1.5 GB/s by e_k, so d_k (0.5 GB/s of room) is not saturated. Fresh flows n_1 over d_1
  // and n_2 over d_2 start at one instant: each must have 1 GB/s of its d, and its o slows to
  // 1 GB/s. The first pass re-solves n_1 and n_2 alone (0.5 GB/s each, what the o's leave), and
  // its check fails on d_1 and on d_2; the second pass takes both o's in and holds: two passes
  // (three if each failed pass handed on only its first failing link).
  Simulator sim;
  FlowNetwork net(sim);
  std::array<FlowId, 2> old{}, fresh{};
  std::array<std::array<LinkId, 2>, 2> de{};
  std::array<std::array<LinkId, 1>, 2> only_d{};
  for (int k = 0; k < 2; ++k) {
    const LinkId d = net.add_link(2e9, Time::zero());
    const LinkId e = net.add_link(1.5e9, Time::zero());
    de[k] = {d, e};
    only_d[k] = {d};
    old[k] = net.start_flow(de[k], 1e12, [](FlowId) {});
  }
  sim.run_until(Time::zero());
  REQUIRE(net.rate(old[0]) == Approx(1.5e9));
  REQUIRE(net.rate(old[1]) == Approx(1.5e9));
  const std::uint64_t resolves = net.resolves(), passes = net.partial_passes();
  sim.run_until(Time::us(1));
  for (int k = 0; k < 2; ++k) fresh[k] = net.start_flow(only_d[k], 1e12, [](FlowId) {});
  sim.run_until(Time::us(1));
  for (int k = 0; k < 2; ++k) {
    CHECK(net.rate(old[k]) == Approx(1e9));
    CHECK(net.rate(fresh[k]) == Approx(1e9));
  }
  CHECK(net.resolves() == resolves + 1);
  CHECK(net.partial_passes() == passes + 2);
  CHECK(net.full_resolves() == 0);
}
