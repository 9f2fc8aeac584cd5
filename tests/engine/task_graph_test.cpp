#include <catch2/catch.hpp>

#include <array>
#include <stdexcept>
#include <tuple>
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

std::int64_t start_ns(const TaskGraph& g, TaskId id) { return g.start_time(id).count_ns(); }
std::int64_t end_ns(const TaskGraph& g, TaskId id) { return g.end_time(id).count_ns(); }

}  // namespace

TEST_CASE("tasks on one stream run one after another in the order added", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  const StreamId s = g.add_stream("compute");
  const TaskId t0 = g.add_timed(Time::ns(10), s);
  const TaskId t1 = g.add_timed(Time::ns(20), s);
  const TaskId t2 = g.add_timed(Time::ns(5), s);
  g.start();
  sim.run();
  // 0–10, 10–30, 30–35.
  CHECK(start_ns(g, t0) == 0);
  CHECK(end_ns(g, t0) == 10);
  CHECK(start_ns(g, t1) == 10);
  CHECK(end_ns(g, t1) == 30);
  CHECK(start_ns(g, t2) == 30);
  CHECK(end_ns(g, t2) == 35);
  CHECK(g.completed() == 3);
  CHECK(g.stream_name(s) == "compute");
}

TEST_CASE("a task waits for both its stream and its dependencies on other streams",
          "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  const StreamId a = g.add_stream("a");
  const StreamId b = g.add_stream("b");
  const TaskId a1 = g.add_timed(Time::ns(100), a);
  const TaskId a2 = g.add_timed(Time::ns(50), a);
  const TaskId b1 = g.add_timed(Time::ns(30), b);
  const TaskId b2 = g.add_timed(Time::ns(10), b);
  g.add_dependency(a1, b1);
  g.start();
  sim.run();
  // a1 0–100; a2 100–150 (stream a); b1 waits for a1: 100–130; b2 waits for b1: 130–140.
  CHECK(std::tuple(start_ns(g, a1), end_ns(g, a1)) == std::tuple(0, 100));
  CHECK(std::tuple(start_ns(g, a2), end_ns(g, a2)) == std::tuple(100, 150));
  CHECK(std::tuple(start_ns(g, b1), end_ns(g, b1)) == std::tuple(100, 130));
  CHECK(std::tuple(start_ns(g, b2), end_ns(g, b2)) == std::tuple(130, 140));
}

TEST_CASE("a diamond DAG joins on its slowest branch", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  const TaskId a = g.add_timed(Time::ns(10));
  const TaskId b = g.add_timed(Time::ns(20));
  const TaskId c = g.add_timed(Time::ns(5));
  const TaskId d = g.add_timed(Time::ns(7));
  g.add_dependency(a, b);
  g.add_dependency(a, c);
  g.add_dependency(b, d);
  g.add_dependency(c, d);
  std::vector<std::tuple<TaskId, std::int64_t, std::int64_t>> observed;
  g.set_observer([&](TaskId id, Time s, Time e) { observed.emplace_back(id, s.count_ns(), e.count_ns()); });
  g.start();
  sim.run();
  // a 0–10; b 10–30 and c 10–15 in parallel; d after max(30, 15): 30–37.
  using Row = std::tuple<TaskId, std::int64_t, std::int64_t>;
  CHECK(observed == std::vector<Row>{{a, 0, 10}, {c, 10, 15}, {b, 10, 30}, {d, 30, 37}});
}

TEST_CASE("released tasks launch in the order their dependencies were added", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  std::vector<TaskId> launched;
  auto record = [&](TaskGraph& graph, TaskId id) {
    launched.push_back(id);
    graph.complete(id);  // completes synchronously, inside its own launch
  };
  const TaskId root = g.add_timed(Time::ns(3));
  const TaskId x = g.add_task(record);
  const TaskId y = g.add_task(record);
  const TaskId z = g.add_task(record);
  g.add_dependency(root, z);
  g.add_dependency(root, x);
  g.add_dependency(root, y);
  g.start();
  sim.run();
  CHECK(launched == std::vector<TaskId>{z, x, y});
  CHECK(start_ns(g, x) == 3);
  CHECK(end_ns(g, x) == 3);
  CHECK(g.completed() == 4);
}

TEST_CASE("a long chain of synchronously completing tasks does not recurse", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  const StreamId s = g.add_stream("s");
  constexpr TaskId kN = 200'000;
  for (TaskId i = 0; i < kN; ++i) {
    g.add_task([](TaskGraph& graph, TaskId id) { graph.complete(id); }, s);
  }
  g.start();
  CHECK(g.completed() == kN);
  CHECK(sim.pending() == 0);
}

TEST_CASE("a custom task can wrap a network flow", "[task_graph]") {
  Simulator sim;
  FlowNetwork net(sim);
  const LinkId l = net.add_link(1e9, Time::ns(500));
  TaskGraph g(sim);
  const StreamId s = g.add_stream("s");
  const TaskId compute = g.add_timed(Time::us(2), s);
  const TaskId send = g.add_task(
      [&](TaskGraph& graph, TaskId id) {
        const std::array<LinkId, 1> path{l};
        net.start_flow(path, 1e6, [&graph, id](FlowId) { graph.complete(id); });
      },
      s);
  const TaskId after = g.add_timed(Time::ns(1), s);
  g.start();
  sim.run();
  // compute 0–2,000; send 2,000 + 1e6/1e9 s (1,000,000) + 500 = 1,002,500; after +1.
  CHECK(start_ns(g, send) == 2'000);
  CHECK(end_ns(g, send) == 1'002'500);
  CHECK(end_ns(g, after) == 1'002'501);
  CHECK(end_ns(g, compute) == 2'000);
}

TEST_CASE("completing a task twice or before it launched is a logic error", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  TaskId held = 0;
  const TaskId a = g.add_task([&](TaskGraph&, TaskId id) { held = id; });
  const TaskId b = g.add_timed(Time::ns(1));
  g.add_dependency(a, b);
  CHECK_THROWS_AS(g.complete(a), std::logic_error);  // not launched
  g.start();
  CHECK(g.started(a));
  CHECK_FALSE(g.started(b));
  g.complete(held);
  CHECK_THROWS_AS(g.complete(held), std::logic_error);
  CHECK_THROWS_AS(g.add_dependency(a, b), std::logic_error);  // b already released
  CHECK_THROWS_AS(g.add_dependency(a, a), std::logic_error);
  CHECK_THROWS_AS(g.complete(99), std::out_of_range);
  sim.run();
  CHECK(g.done(b));
  CHECK(end_ns(g, b) == 1);
}

TEST_CASE("a task added after start launches at the next start", "[task_graph]") {
  Simulator sim;
  TaskGraph g(sim);
  const StreamId s = g.add_stream("s");
  const TaskId first = g.add_timed(Time::ns(10), s);
  g.start();
  sim.run();
  const TaskId second = g.add_timed(Time::ns(5), s);  // stream already idle
  const TaskId third = g.add_timed(Time::ns(1));
  g.add_dependency(first, third);  // already complete: no wait
  g.start();
  sim.run();
  CHECK(end_ns(g, first) == 10);
  CHECK(std::tuple(start_ns(g, second), end_ns(g, second)) == std::tuple(10, 15));
  CHECK(std::tuple(start_ns(g, third), end_ns(g, third)) == std::tuple(10, 11));
}
