// Queue pairs of a connection run as one multi-route group (Communicator::set_merge_routes,
// FlowNetwork::start_flow_routes) against one flow group per route: the same collective end
// instants to the ns, the same flows and link bytes (1e-9 relative), fewer flow records. Cases:
// one uncontended ring, two rings that share part of their links, a data-parallel all-reduce
// beside ZeRO-3-style all-gathers and reduce-scatters, stepped and fluid; on DGX H100 nodes
// (16 queue pairs per connection across the spine, topologies/dgx-h100-leaf-spine.yaml).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/collective.hpp"
#include "comm_world.hpp"

using namespace ironlaw;
using namespace ironlaw::test;
using comm::Algorithm;
using comm::CollectiveOp;

namespace {

struct Launch {
  CollectiveOp op;
  std::vector<int> ranks;
  double bytes = 0;
  Algorithm algorithm = Algorithm::automatic;
  Time start;
};

struct Outcome {
  std::vector<std::int64_t> end_ns;
  std::uint64_t events = 0, flows = 0, records = 0, splits = 0;
  std::vector<double> link_bytes;
};

Outcome run(int nodes, const std::vector<Launch>& launches, bool fluid, bool merge) {
  CommWorld w(dgx_h100(), nodes, fluid);
  w.comm.set_flows_per_connection(16);
  w.comm.set_merge_routes(merge);
  Outcome out;
  out.end_ns.assign(launches.size(), -1);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    w.sim.schedule_at(launches[i].start, [&, i] {
      const Launch& l = launches[i];
      w.comm.start(l.op, l.ranks, l.bytes, l.algorithm, [&, i] { out.end_ns[i] = w.sim.now().count_ns(); });
    });
  }
  w.sim.run();
  out.events = w.sim.events_executed();
  out.flows = w.net.flows_started();
  out.records = w.net.records_started();
  out.splits = w.net.route_splits();
  for (engine::LinkId l = 0; l < w.net.link_count(); ++l) out.link_bytes.push_back(w.net.link_stats(l).bytes);
  return out;
}

void check_same(int nodes, const std::vector<Launch>& launches, bool fluid) {
  const Outcome merged = run(nodes, launches, fluid, true);
  const Outcome separate = run(nodes, launches, fluid, false);
  for (auto t : merged.end_ns) CHECK(t > 0);
  CHECK(merged.end_ns == separate.end_ns);
  CHECK(merged.flows == separate.flows);
  CHECK(merged.records < separate.records);
  CHECK(merged.events <= separate.events);
  REQUIRE(merged.link_bytes.size() == separate.link_bytes.size());
  for (std::size_t l = 0; l < merged.link_bytes.size(); ++l) {
    CHECK(merged.link_bytes[l] == Approx(separate.link_bytes[l]).epsilon(1e-9));
  }
  WARN("records " << merged.records << " vs " << separate.records << ", events " << merged.events << " vs "
                  << separate.events << ", splits " << merged.splits);
}

}  // namespace

TEST_CASE("merged queue pairs: one uncontended ring over 8 nodes (two leaves)", "[comm][routes]") {
  for (bool fluid : {false, true}) {
    INFO("fluid " << fluid);
    check_same(8, {{CollectiveOp::all_reduce, iota(0, 64), 256e6, Algorithm::ring, Time::zero()}}, fluid);
    check_same(8, {{CollectiveOp::all_reduce, iota(0, 64), 256e6, Algorithm::hierarchical, Time::zero()}}, fluid);
  }
}

TEST_CASE("merged queue pairs: two rings that share part of their links", "[comm][routes]") {
  // Nodes 0–3 and nodes 2–5: the rings meet on nodes 2 and 3 (their NICs and leaves); the
  // second starts while the first runs.
  for (bool fluid : {false, true}) {
    INFO("fluid " << fluid);
    check_same(6,
               {{CollectiveOp::all_reduce, iota(0, 32), 512e6, Algorithm::ring, Time::zero()},
                {CollectiveOp::all_reduce, iota(16, 32), 256e6, Algorithm::ring, Time::us(300)}},
               fluid);
  }
}

TEST_CASE("merged queue pairs: a data-parallel all-reduce beside ZeRO-3 all-gathers and reduce-scatters",
          "[comm][routes]") {
  // 8 nodes: a gradient all-reduce over all 64 GPUs while parameter all-gathers and gradient
  // reduce-scatters of successive layers start over the same ranks, overlapping it and each other.
  for (bool fluid : {false, true}) {
    INFO("fluid " << fluid);
    std::vector<Launch> launches{{CollectiveOp::all_reduce, iota(0, 64), 400e6, Algorithm::automatic, Time::zero()}};
    for (int layer = 0; layer < 4; ++layer) {
      launches.push_back({CollectiveOp::all_gather, iota(0, 64), 96e6, Algorithm::automatic, Time::us(150 * layer)});
      launches.push_back(
          {CollectiveOp::reduce_scatter, iota(0, 64), 96e6, Algorithm::automatic, Time::us(150 * layer + 70)});
    }
    check_same(8, launches, fluid);
  }
}
