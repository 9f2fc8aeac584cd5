// run/link_series: link utilisation over time. A hand case on a bare flow network (one transfer
// of S bytes over a link of bandwidth B from t0 is busy exactly in [t0, t0 + S/B]), the bins
// doubling to stay within their bound, and a recording that changes no step of a simulation.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"
#include "run/link_series.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

TEST_CASE("one transfer keeps its link busy exactly from its start for S/B and idle elsewhere", "[run][links]") {
  // S = 800 kB over B = 1 GB/s from t0 = 0.4 ms: busy in [0.4, 1.2] ms. A no-op event at 1.6 ms
  // extends the recording. Bins start at 100 us; at most 8 are kept, so the 16 bins of 1.6 ms
  // merge once into 8 of 200 us: 0, 0, then 4 full bins (0.4 to 1.2 ms), then 0, 0.
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  const engine::LinkId other = net.add_link(1e9, Time::zero(), "idle");
  const engine::LinkId link = net.add_link(1e9, Time::zero(), "a->b");
  (void)other;
  run::LinkSeriesRecorder rec(sim, net, Time::us(100), 8);
  rec.resume();
  bool done = false;
  Time finished;
  sim.schedule_at(Time::us(400), [&] {
    const std::vector<engine::LinkId> path{link};
    net.start_flow(path, 8e5, [&](engine::FlowId) {
      done = true;
      finished = sim.now();
    });
  });
  sim.schedule_at(Time::us(1600), [] {});
  sim.run();
  rec.pause();
  REQUIRE(done);
  REQUIRE(finished == Time::us(1200));  // S/B = 0.8 ms after t0
  const run::LinkSeries s = rec.series(4);
  REQUIRE(s.names == std::vector<std::string>{"a->b"});  // the idle link is left out
  CHECK(s.bandwidth.front() == 1e9);
  CHECK(s.start_s == 0);
  CHECK(s.end_s == Approx(1.6e-3).epsilon(1e-12));
  CHECK(s.bin_s == Approx(200e-6).epsilon(1e-12));
  REQUIRE(s.bins() == 8);
  const std::vector<double> expected{0, 0, 1, 1, 1, 1, 0, 0};  // busy fraction per bin
  for (std::size_t b = 0; b < 8; ++b) {
    INFO(b);
    CHECK(s.busy[0][b] / s.width(b) == Approx(expected[b]).margin(1e-12));
  }
  // Exactly the link's whole-run busy time.
  CHECK(std::accumulate(s.busy[0].begin(), s.busy[0].end(), 0.0) == Approx(net.link_stats(link).busy.seconds()).epsilon(1e-12));
  CHECK(rec.events() > 0);
}

TEST_CASE("a transfer that starts and ends inside bins splits its busy time between them", "[run][links]") {
  // 250 kB at 1 GB/s from 150 us: busy in [150, 400] us. Bins of 100 us (16 kept, none merged);
  // a no-op at 500 us ends the recording: bins 0..4 hold 0, 50, 100, 100, 0 us.
  engine::Simulator sim;
  engine::FlowNetwork net(sim);
  const engine::LinkId link = net.add_link(1e9, Time::zero(), "l");
  run::LinkSeriesRecorder rec(sim, net, Time::us(100), 16);
  rec.resume();
  sim.schedule_at(Time::us(150), [&] {
    const std::vector<engine::LinkId> path{link};
    net.start_flow(path, 2.5e5, [](engine::FlowId) {});
  });
  sim.schedule_at(Time::us(500), [] {});
  sim.run();
  rec.pause();
  const run::LinkSeries s = rec.series(1);
  REQUIRE(s.bins() == 5);
  CHECK(s.busy[0][4] == 0);
  CHECK(s.busy[0][0] == 0);
  CHECK(s.busy[0][1] == Approx(50e-6).epsilon(1e-12));
  CHECK(s.busy[0][2] == Approx(100e-6).epsilon(1e-12));
  CHECK(s.busy[0][3] == Approx(100e-6).epsilon(1e-12));
  CHECK(s.width(3) == Approx(100e-6).epsilon(1e-12));
}

TEST_CASE("recording link utilisation changes no step, and keeps its bins within the bound", "[run][links]") {
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-1.5b-ddp-multinode.yaml",
                                       {"run.steps=2", "output.path=none"});
  NullSink sink;
  const auto plain = run::simulate(s, sink, run::TraceLevel::none);
  const auto recorded = run::simulate(s, sink, run::TraceLevel::step);
  REQUIRE(plain.link_series.names.empty());
  REQUIRE(plain.steps.size() == recorded.steps.size());
  for (std::size_t i = 0; i < plain.steps.size(); ++i) {
    CHECK(plain.steps[i].start_ns == recorded.steps[i].start_ns);
    CHECK(plain.steps[i].end_ns == recorded.steps[i].end_ns);
    CHECK(plain.steps[i].exposed_comm_s == recorded.steps[i].exposed_comm_s);
  }
  CHECK(plain.events_executed == recorded.events_executed);  // the samplers are left out
  const auto& ls = recorded.link_series;
  REQUIRE_FALSE(ls.names.empty());
  CHECK(ls.names.size() <= run::kLinkSeriesLinks);
  CHECK(ls.bins() <= static_cast<std::size_t>(run::kLinkSeriesBins));
  CHECK(ls.bins() > static_cast<std::size_t>(run::kLinkSeriesBins) / 2);  // sized from the steps
  CHECK(ls.end_s == Approx(recorded.steps.back().end_ns * 1e-9).epsilon(1e-12));
  // Each link's bins add up to its whole-run busy time (/links).
  for (std::size_t l = 0; l < ls.names.size(); ++l) {
    INFO(ls.names[l]);
    double whole = -1;
    for (const auto& u : recorded.links)
      if (u.name == ls.names[l]) whole = u.busy_s;
    CHECK(std::accumulate(ls.busy[l].begin(), ls.busy[l].end(), 0.0) == Approx(whole).epsilon(1e-9));
    for (std::size_t b = 0; b < ls.bins(); ++b) CHECK(ls.busy[l][b] <= ls.width(b) * (1 + 1e-12));
  }
}
