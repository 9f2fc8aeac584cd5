// The nccl-tests-style table: one collective over every GPU of a fresh cluster per size.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "comm/collective.hpp"

namespace ironlaw::comm {

std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm) {
  return bench_collective(topology, nodes, op, min_bytes, max_bytes, factor, algorithm,
                          topology.comm.flows_per_connection);
}

std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, Algorithm algorithm,
                                       int flows_per_connection) {
  BenchOptions options;
  options.algorithm = algorithm;
  options.flows_per_connection = flows_per_connection;
  return bench_collective(topology, nodes, op, min_bytes, max_bytes, factor, options);
}

std::vector<BenchRow> bench_collective(const config::TopologySpec& topology, int nodes, CollectiveOp op,
                                       double min_bytes, double max_bytes, double factor, const BenchOptions& options) {
  if (!(min_bytes > 0) || !(factor > 1) || !(max_bytes >= min_bytes)) {
    throw std::invalid_argument("bench_collective: need 0 < min_bytes ≤ max_bytes and factor > 1");
  }
  std::vector<BenchRow> rows;
  for (double size = min_bytes; size <= max_bytes * (1 + 1e-12); size *= factor) {
    engine::Simulator sim;
    engine::FlowNetwork net(sim);
    hardware::Cluster cluster(topology, nodes, net);
    Communicator comm(sim, net, cluster);
    comm.set_flows_per_connection(options.flows_per_connection > 0 ? options.flows_per_connection
                                                                   : topology.comm.flows_per_connection);
    comm.set_fluid_rings(options.fluid);
    comm.set_all_to_all_routing(options.route_targets, options.route_picks);
    comm.set_all_to_all_kernels(options.kernel_rdma_rate, options.kernel_forward_rate);
    std::vector<int> ranks(static_cast<std::size_t>(cluster.gpus()));
    for (int i = 0; i < cluster.gpus(); ++i) ranks[static_cast<std::size_t>(i)] = i;
    Time end;
    comm.start(op, ranks, size, options.algorithm, [&] { end = sim.now(); });
    if (options.run) {
      Time floor = Time::zero();
      const Algorithm chosen = options.algorithm == Algorithm::automatic ? comm.choose(op, ranks, size) : options.algorithm;
      const Time predicted = comm.predict(op, ranks, size, chosen);
      if (predicted != Time::max()) floor = Time::from_seconds(0.5 * predicted.seconds());
      char what[160];
      std::snprintf(what, sizeof what, "collective %s of %.0f B over %d ranks", op_name(op), size, cluster.gpus());
      options.run(sim, floor, what);
    } else {
      sim.run();
    }
    BenchRow row;
    row.bytes = size;
    row.time_us = end.seconds() * 1e6;
    if (end > Time::zero()) {
      row.algbw_gbs = size / end.seconds() / 1e9;
      row.busbw_gbs = row.algbw_gbs * bus_factor(op, cluster.gpus());
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace ironlaw::comm