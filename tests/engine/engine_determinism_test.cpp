#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "engine/task_graph.hpp"

using ironlaw::Time;
using ironlaw::engine::FlowId;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;
using ironlaw::engine::StreamId;
using ironlaw::engine::TaskGraph;
using ironlaw::engine::TaskId;

namespace {

// FNV-1a over 64-bit words.
struct Fingerprint {
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::uint64_t records = 0;
  void add(std::uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      h ^= (word >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  void add(Time t, std::uint64_t id) {
    add(static_cast<std::uint64_t>(t.count_ns()));
    add(id);
    ++records;
  }
};

// A small deterministic generator, so the workload does not depend on the standard library.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// Streams of timed tasks whose completions start flows over a random two-link path of a small
// shared network, plus flows cancelled at random times. Records every (time, id) completion.
Fingerprint run_world(std::uint64_t seed) {
  Simulator sim;
  FlowNetwork net(sim);
  TaskGraph graph(sim);
  SplitMix rng{seed};
  Fingerprint fp;
  std::vector<LinkId> links;
  for (int i = 0; i < 8; ++i) {
    links.push_back(net.add_link(1e9 * static_cast<double>(1 + i % 3), Time::ns(100 * (i + 1))));
  }
  std::vector<FlowId> started;
  for (int s = 0; s < 4; ++s) {
    const StreamId stream = graph.add_stream("s");
    for (int k = 0; k < 50; ++k) {
      graph.add_timed(Time::ns(1 + static_cast<std::int64_t>(rng.next() % 5'000)), stream);
    }
  }
  graph.set_observer([&](TaskId id, Time, Time end) {
    fp.add(end, id);
    const std::vector<LinkId> path{links[rng.next() % links.size()], links[rng.next() % links.size()]};
    const double bytes = static_cast<double>(1 + rng.next() % 1'000'000);
    started.push_back(net.start_flow(path, bytes, [&](FlowId f) { fp.add(sim.now(), f); }));
    if (rng.next() % 7 == 0) {
      const FlowId victim = started[rng.next() % started.size()];
      sim.schedule_in(Time::ns(static_cast<std::int64_t>(rng.next() % 10'000)), [&net, victim] { net.cancel_flow(victim); });
    }
  });
  graph.start();
  sim.run();
  fp.add(sim.now(), sim.events_executed());
  return fp;
}

}  // namespace

TEST_CASE("two identical runs produce identical event sequences", "[determinism]") {
  const Fingerprint first = run_world(2024);
  const Fingerprint second = run_world(2024);
  CHECK(first.records > 200);  // 200 tasks, their flows (less cancellations), the final line
  CHECK(first.records == second.records);
  CHECK(first.h == second.h);
  const Fingerprint other = run_world(7);
  CHECK(other.h != first.h);
}
