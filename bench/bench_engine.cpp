// Engine benchmarks: the event queue under a PHOLD load, and the flow network under
// collective-like traffic.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "core/rng.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

namespace {

using ironlaw::Time;
using ironlaw::bench::report;
using ironlaw::bench::wall_seconds;
using ironlaw::engine::FlowId;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;

// PHOLD: every event, on arrival at its logical process, sends one new event to a random LP
// after an exponential delay (mean 1 µs, at least 1 ns). The event population stays constant.
struct Phold {
  Simulator sim;
  ironlaw::RngStream rng{12345, "bench/phold"};
  std::vector<std::uint64_t> received;
  std::uint64_t limit = 0;

  void arrive(std::uint32_t lp) {
    ++received[lp];
    if (sim.events_executed() >= limit) {
      sim.stop();
      return;
    }
    const std::uint32_t dst = static_cast<std::uint32_t>(rng.uniform_below(received.size()));
    const Time delay = Time::ns(1 + static_cast<std::int64_t>(rng.exponential(1000.0)));
    sim.schedule_in(delay, [this, dst] { arrive(dst); });
  }
};

void run_phold(const char* name, std::uint32_t lps, std::uint32_t per_lp, std::uint64_t events) {
  Phold w;
  w.received.assign(lps, 0);
  w.limit = events;
  for (std::uint32_t lp = 0; lp < lps; ++lp) {
    for (std::uint32_t k = 0; k < per_lp; ++k) {
      const Time at = Time::ns(static_cast<std::int64_t>(w.rng.exponential(1000.0)));
      w.sim.schedule_at(at, [&w, lp] { w.arrive(lp); });
    }
  }
  const double s = wall_seconds([&] { w.sim.run(); });
  const std::string n = name;
  report((n + ".events").c_str(), static_cast<double>(w.sim.events_executed()), "events");
  report((n + ".pending").c_str(), static_cast<double>(w.sim.pending()), "events");
  report((n + ".events_per_s").c_str(), static_cast<double>(w.sim.events_executed()) / s, "events/s");
}

void bench_phold() { run_phold("engine.phold_1k", 1024, 1, 2'000'000); }
void bench_phold_deep() { run_phold("engine.phold_1k_x1k", 1024, 1024, 2'000'000); }

// Cancel churn: every event reschedules four random timers (cancel + schedule), the pattern
// of flows whose rates change. Stresses lazy deletion and heap compaction.
struct CancelChurn {
  Simulator sim;
  ironlaw::RngStream rng{99, "bench/cancel_churn"};
  std::vector<ironlaw::engine::EventId> timers;
  std::uint64_t fired = 0;
  std::uint64_t limit = 0;
  std::uint64_t cancels = 0;

  Time delay() { return Time::ns(1 + static_cast<std::int64_t>(rng.exponential(1e5))); }
  void tick() {
    if (++fired >= limit) {
      sim.stop();
      return;
    }
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t i = static_cast<std::uint32_t>(rng.uniform_below(timers.size()));
      cancels += sim.cancel(timers[i]) ? 1 : 0;
      timers[i] = sim.schedule_in(delay(), [this] { tick(); });
    }
  }
};

void bench_cancel_churn() {
  CancelChurn w;
  w.limit = 1'000'000;
  w.timers.resize(100'000);
  for (auto& t : w.timers) t = w.sim.schedule_in(w.delay(), [&w] { w.tick(); });
  const double s = wall_seconds([&] { w.sim.run(); });
  // Operations: events run + events scheduled (4 per event) + successful cancels.
  const auto ops = static_cast<double>(w.fired * 5 + w.cancels);
  report("engine.cancel_churn.ops_per_s", ops / s, "ops/s");
}

// Ring all-reduce over n GPUs, link i: GPU i → GPU i+1. 2(n−1) steps (or the first
// `max_steps`); GPU i sends its step-k chunk as soon as it received step k−1 from its
// predecessor (pipelined, no global barrier).
void run_ring(const char* name, std::uint32_t n, int repeats, double bytes, std::uint32_t max_steps) {
  Simulator sim;
  FlowNetwork net(sim);
  std::vector<LinkId> links;
  for (std::uint32_t i = 0; i < n; ++i) links.push_back(net.add_link(50e9, Time::ns(700)));
  const std::uint32_t steps = std::min(2 * (n - 1), max_steps);
  const double chunk = bytes / n;
  struct Sender {
    FlowNetwork* net;
    std::vector<LinkId>* links;
    std::vector<Sender>* all;
    std::uint32_t gpu;
    std::uint32_t steps;
    double chunk;
    std::uint32_t step = 0;
    void send() {
      const std::array<LinkId, 1> path{(*links)[gpu]};
      net->start_flow(path, chunk, [this](FlowId) {
        Sender& next = (*all)[(gpu + 1) % all->size()];
        if (++next.step < steps) next.send();
      });
    }
  };
  std::vector<Sender> senders;
  for (std::uint32_t i = 0; i < n; ++i) senders.push_back(Sender{&net, &links, &senders, i, steps, chunk});
  const double s = wall_seconds([&] {
    for (int r = 0; r < repeats; ++r) {
      for (Sender& g : senders) g.step = 0;
      for (Sender& g : senders) g.send();
      sim.run();
    }
  });
  const std::string p = name;
  const auto flows = static_cast<double>(net.flows_started());
  report((p + ".flows").c_str(), flows, "flows");
  report((p + ".resolves").c_str(), static_cast<double>(net.resolves()), "resolves");
  report((p + ".sim_time_per_repeat").c_str(), sim.now().seconds() / repeats, "s");
  report((p + ".flows_per_s").c_str(), flows / s, "flows/s");
}

// A full 1 GB all-reduce on 128 GPUs, 20 times: 20 · 254 · 128 = 650,240 flows.
void bench_ring128() { run_ring("flow.ring128", 128, 20, 1e9, 254); }
// The first 64 steps of a 16 GB all-reduce on 16,384 GPUs: 64 · 16,384 = 1,048,576 flows.
void bench_ring16k() { run_ring("flow.ring16k", 16384, 1, 16384.0 * 1e6, 64); }

// Shifted traffic on a 128-link ring: GPU i sends to GPU i+8 over 8 links, a closed loop of
// random-sized flows. Every link carries 8 flows and all flows form one connected component,
// so each drain re-solves the whole network: a worst case for incremental re-solving.
void bench_shift128() {
  Simulator sim;
  FlowNetwork net(sim);
  ironlaw::RngStream rng(7, "bench/shift128_8hop");
  constexpr std::uint32_t kN = 128;
  constexpr std::uint32_t kHops = 8;
  constexpr std::uint64_t kFlows = 100'000;
  std::vector<LinkId> links;
  for (std::uint32_t i = 0; i < kN; ++i) links.push_back(net.add_link(50e9, Time::ns(700)));
  std::function<void(std::uint32_t)> send = [&](std::uint32_t gpu) {
    if (net.flows_started() >= kFlows) return;
    std::array<LinkId, kHops> path{};
    for (std::uint32_t h = 0; h < kHops; ++h) path[h] = links[(gpu + h) % kN];
    net.start_flow(path, 1e5 + rng.exponential(1e6), [&send, gpu](FlowId) { send(gpu); });
  };
  const double s = wall_seconds([&] {
    for (std::uint32_t g = 0; g < kN; ++g) send(g);
    sim.run();
  });
  report("flow.shift128_8hop.flows", static_cast<double>(net.flows_started()), "flows");
  report("flow.shift128_8hop.resolves", static_cast<double>(net.resolves()), "resolves");
  report("flow.shift128_8hop.flows_per_s", static_cast<double>(net.flows_started()) / s, "flows/s");
  report("flow.shift128_8hop.resolves_per_s", static_cast<double>(net.resolves()) / s, "resolves/s");
}

const ironlaw::bench::Register reg_phold("engine.phold_1k", bench_phold);
const ironlaw::bench::Register reg_phold_deep("engine.phold_1k_x1k", bench_phold_deep);
const ironlaw::bench::Register reg_churn("engine.cancel_churn", bench_cancel_churn);
const ironlaw::bench::Register reg_ring128("flow.ring128", bench_ring128);
const ironlaw::bench::Register reg_ring16k("flow.ring16k", bench_ring16k);
const ironlaw::bench::Register reg_shift128("flow.shift128_8hop", bench_shift128);

}  // namespace
