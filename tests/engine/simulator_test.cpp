#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/simulator.hpp"

using ironlaw::Time;
using ironlaw::engine::EventId;
using ironlaw::engine::kNoEvent;
using ironlaw::engine::Simulator;

TEST_CASE("events at the same time run in the order they were scheduled", "[simulator]") {
  Simulator sim;
  std::string log;
  sim.schedule_at(Time::ns(5), [&] { log += 'a'; });
  sim.schedule_at(Time::ns(5), [&] { log += 'b'; });
  sim.schedule_at(Time::ns(3), [&] { log += 'x'; });
  sim.schedule_at(Time::ns(5), [&] { log += 'c'; });
  CHECK(sim.run() == 4);
  CHECK(log == "xabc");
  CHECK(sim.now() == Time::ns(5));
  CHECK(sim.events_executed() == 4);
}

TEST_CASE("an event scheduled for the current instant runs after those already queued for it",
          "[simulator]") {
  Simulator sim;
  std::string log;
  sim.schedule_at(Time::ns(7), [&] {
    log += '1';
    sim.schedule_in(Time::zero(), [&] { log += '3'; });
  });
  sim.schedule_at(Time::ns(7), [&] { log += '2'; });
  sim.run();
  CHECK(log == "123");
}

TEST_CASE("an event scheduled in place runs before every event already queued for the instant",
          "[simulator]") {
  Simulator sim;
  std::string log;
  sim.schedule_at(Time::ns(7), [&] {
    log += '1';
    sim.schedule_in(Time::zero(), [&] { log += '4'; });
    sim.schedule_in_place([&] { log += '2'; });
    sim.stop();
  });
  sim.schedule_at(Time::ns(7), [&] { log += '3'; });
  sim.run();
  CHECK(log == "1");
  CHECK(sim.scheduled() == 3);  // the in-place event took the running one's place
  sim.run();
  CHECK(log == "1234");
  CHECK(sim.now() == Time::ns(7));
  CHECK_THROWS_AS(sim.schedule_in_place([] {}), std::logic_error);  // not inside an action
}

TEST_CASE("a cancelled event does not run", "[simulator]") {
  Simulator sim;
  std::string log;
  sim.schedule_at(Time::ns(1), [&] { log += 'a'; });
  const EventId b = sim.schedule_at(Time::ns(2), [&] { log += 'b'; });
  sim.schedule_at(Time::ns(3), [&] { log += 'c'; });
  CHECK(sim.pending() == 3);
  CHECK(sim.cancel(b));
  CHECK(sim.pending() == 2);
  CHECK(sim.run() == 2);
  CHECK(log == "ac");
  CHECK(sim.events_executed() == 2);
}

TEST_CASE("cancel is idempotent and false for events that ran or never existed", "[simulator]") {
  Simulator sim;
  const EventId a = sim.schedule_at(Time::ns(1), [] {});
  const EventId b = sim.schedule_at(Time::ns(2), [] {});
  CHECK(a != b);
  CHECK(a != kNoEvent);
  CHECK(sim.cancel(b));
  CHECK_FALSE(sim.cancel(b));
  CHECK(sim.pending() == 1);
  sim.run();
  CHECK_FALSE(sim.cancel(a));  // already ran
  CHECK_FALSE(sim.cancel(kNoEvent));
  CHECK_FALSE(sim.cancel(0xdead'0000'0000'0042ull));
  CHECK(sim.pending() == 0);
}

TEST_CASE("a cancelled event's id does not cancel the event that reuses its slot", "[simulator]") {
  Simulator sim;
  int runs = 0;
  const EventId first = sim.schedule_at(Time::ns(1), [&] { runs += 100; });
  CHECK(sim.cancel(first));
  const EventId second = sim.schedule_at(Time::ns(1), [&] { ++runs; });
  CHECK(second != first);
  CHECK_FALSE(sim.cancel(first));
  sim.run();
  CHECK(runs == 1);
}

TEST_CASE("an action can cancel another event due at the same instant", "[simulator]") {
  Simulator sim;
  std::string log;
  EventId victim = kNoEvent;
  sim.schedule_at(Time::ns(4), [&] {
    log += 'a';
    CHECK(sim.cancel(victim));
  });
  victim = sim.schedule_at(Time::ns(4), [&] { log += 'v'; });
  sim.run();
  CHECK(log == "a");
}

TEST_CASE("run_until runs events up to and including the limit, then sets now", "[simulator]") {
  Simulator sim;
  std::vector<std::int64_t> seen;
  for (std::int64_t t : {10, 20, 30}) {
    sim.schedule_at(Time::ns(t), [&] { seen.push_back(sim.now().count_ns()); });
  }
  CHECK(sim.run_until(Time::ns(20)) == 2);
  CHECK(sim.now() == Time::ns(20));
  CHECK(sim.run_until(Time::ns(25)) == 0);
  CHECK(sim.now() == Time::ns(25));
  CHECK(sim.pending() == 1);
  CHECK(sim.run() == 1);
  CHECK(sim.now() == Time::ns(30));
  CHECK(seen == std::vector<std::int64_t>{10, 20, 30});
  // A limit in the past changes nothing.
  CHECK(sim.run_until(Time::ns(5)) == 0);
  CHECK(sim.now() == Time::ns(30));
}

TEST_CASE("scheduling in the past is a logic error", "[simulator]") {
  Simulator sim;
  sim.run_until(Time::ns(100));
  CHECK_THROWS_AS(sim.schedule_at(Time::ns(99), [] {}), std::logic_error);
  CHECK_THROWS_AS(sim.schedule_in(Time::ns(-1), [] {}), std::logic_error);
  CHECK_NOTHROW(sim.schedule_at(Time::ns(100), [] {}));
}

TEST_CASE("running the simulator from inside an action is a logic error", "[simulator]") {
  Simulator sim;
  sim.schedule_at(Time::ns(1), [&] { sim.run(); });
  CHECK_THROWS_AS(sim.run(), std::logic_error);
  // The guard is released after the throw: the simulator is usable again.
  sim.schedule_at(Time::ns(2), [] {});
  CHECK(sim.run() == 1);
}

TEST_CASE("stop makes run return after the current action", "[simulator]") {
  Simulator sim;
  int count = 0;
  sim.schedule_at(Time::ns(1), [&] { ++count; sim.stop(); });
  sim.schedule_at(Time::ns(2), [&] { ++count; });
  CHECK(sim.run_until(Time::ns(50)) == 1);
  CHECK(sim.now() == Time::ns(1));  // stopped: now is not advanced to the limit
  CHECK(sim.run() == 1);
  CHECK(count == 2);
}

TEST_CASE("mass cancellation keeps pending exact and runs exactly the survivors", "[simulator]") {
  Simulator sim;
  std::vector<EventId> ids;
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < 10'000; ++i) {
    ids.push_back(sim.schedule_at(Time::ns(i % 97), [&sum, i] { sum += i; }));
  }
  // Cancel every index not divisible by 10 (9,000 events; forces heap compaction).
  std::int64_t expected = 0;
  for (std::int64_t i = 0; i < 10'000; ++i) {
    if (i % 10 != 0) {
      CHECK(sim.cancel(ids[static_cast<std::size_t>(i)]));
    } else {
      expected += i;
    }
  }
  CHECK(sim.pending() == 1'000);
  CHECK(sim.run() == 1'000);
  CHECK(sum == expected);  // 0 + 10 + ... + 9990 = 10·(999·1000/2) = 4,995,000
  CHECK(expected == 4'995'000);
}

TEST_CASE("random schedules and cancels execute in (time, insertion) order", "[simulator]") {
  // Reference: the surviving events sorted by (time, insertion index). Times come from a small
  // range so that ties are common; a third of the events schedule a follow-up from inside
  // their action, and every fifth event cancels an earlier one.
  Simulator sim;
  struct Planned {
    std::int64_t at;
    std::size_t index;
  };
  std::vector<Planned> planned;
  std::vector<EventId> ids;
  std::vector<bool> cancelled;
  std::vector<std::size_t> ran;
  std::uint64_t x = 88172645463325252ull;  // xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::function<void(std::int64_t)> add = [&](std::int64_t at) {
    const std::size_t index = planned.size();
    planned.push_back(Planned{at, index});
    cancelled.push_back(false);
    ids.push_back(sim.schedule_at(Time::ns(at), [&, index] {
      ran.push_back(index);
      if (next() % 3 == 0) add(sim.now().count_ns() + static_cast<std::int64_t>(next() % 50));
    }));
    if (index % 5 == 4) {
      const std::size_t victim = next() % index;
      if (sim.cancel(ids[victim])) cancelled[victim] = true;
    }
  };
  for (int i = 0; i < 5'000; ++i) add(static_cast<std::int64_t>(next() % 200));
  sim.run();
  std::vector<Planned> expected;
  for (const Planned& p : planned) {
    if (!cancelled[p.index]) expected.push_back(p);
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const Planned& a, const Planned& b) { return a.at < b.at; });
  REQUIRE(ran.size() == expected.size());
  bool same = true;
  for (std::size_t i = 0; i < ran.size(); ++i) same = same && ran[i] == expected[i].index;
  CHECK(same);
  CHECK(sim.pending() == 0);
}

TEST_CASE("a tick hook runs between events every n-th event, schedules nothing and may stop a run by throwing",
          "[simulator][tick]") {
  // 10 events at t = 1..10 µs; a hook every 3rd event sees the times of events 3, 6 and 9.
  auto schedule_ten = [](Simulator& sim, std::vector<std::int64_t>& ran) {
    for (int i = 1; i <= 10; ++i) sim.schedule_at(Time::us(i), [&sim, &ran] { ran.push_back(sim.now().count_ns()); });
  };
  Simulator sim;
  std::vector<std::int64_t> ran, ticks;
  schedule_ten(sim, ran);
  sim.set_tick(3, [&] { ticks.push_back(sim.now().count_ns()); });
  CHECK(sim.run() == 10);
  CHECK(ticks == std::vector<std::int64_t>{3000, 6000, 9000});
  CHECK(sim.events_executed() == 10);
  CHECK(sim.scheduled() == 10);  // the hook took no place in the queue

  // Without the hook: the same events in the same order.
  Simulator plain;
  std::vector<std::int64_t> plain_ran;
  schedule_ten(plain, plain_ran);
  plain.run();
  CHECK(plain_ran == ran);

  // A hook that throws ends the run after the event it followed; the rest stay pending and run
  // later once the hook is removed.
  Simulator stopped;
  std::vector<std::int64_t> stopped_ran;
  schedule_ten(stopped, stopped_ran);
  stopped.set_tick(4, [&] { throw std::runtime_error("budget"); });
  CHECK_THROWS_AS(stopped.run(), std::runtime_error);
  CHECK(stopped_ran.size() == 4);
  CHECK(stopped.pending() == 6);
  stopped.set_tick(0, nullptr);
  CHECK(stopped.run() == 6);
  CHECK(stopped_ran == ran);
}
