// Benchmark of the nccl-tests table (issue 6's first speed target): one 1 GiB all-reduce over
// the 512 GPUs of 64 DGX H100 nodes, as `ironlaw collective --op all_reduce -b 1G -e 1G
// --nodes 64` runs it (fluid rings), and stepped for comparison. The timed part is
// bench_collective itself; one more run of the same collective on a cluster of its own counts
// the events and re-solves it takes (bench_collective returns only the table).
#include <sys/resource.h>

#include <string>

#include "bench.hpp"
#include "comm/collective.hpp"
#include "config/load.hpp"

namespace {

struct Counts {
  std::uint64_t events = 0;
  std::uint64_t resolves = 0;
  std::uint64_t records = 0;
  std::uint64_t splits = 0;
};

// The engine counters of one all-reduce of `bytes` over every GPU of `nodes` nodes.
Counts count_all_reduce(const ironlaw::config::TopologySpec& topology, int nodes, double bytes, bool fluid) {
  ironlaw::engine::Simulator sim;
  ironlaw::engine::FlowNetwork net(sim);
  ironlaw::hardware::Cluster cluster(topology, nodes, net);
  ironlaw::comm::Communicator comm(sim, net, cluster);
  comm.set_flows_per_connection(topology.comm.flows_per_connection);
  comm.set_fluid_rings(fluid);
  std::vector<int> ranks(static_cast<std::size_t>(cluster.gpus()));
  for (int i = 0; i < cluster.gpus(); ++i) ranks[static_cast<std::size_t>(i)] = i;
  comm.start(ironlaw::comm::CollectiveOp::all_reduce, ranks, bytes, ironlaw::comm::Algorithm::automatic, [] {});
  sim.run();
  return Counts{sim.events_executed(), net.resolves(), net.records_started(), net.route_splits()};
}

void run_all_reduce(const char* label, bool fluid) {
  const auto topology = ironlaw::config::load_topology(IRONLAW_SOURCE_DIR "/topologies/dgx-h100-leaf-spine.yaml");
  ironlaw::comm::BenchOptions options;
  options.fluid = fluid;
  std::vector<ironlaw::comm::BenchRow> rows;
  const double gib = 1024.0 * 1024 * 1024;
  double cpu = 0;
  const double wall = ironlaw::bench::wall_seconds([&] {
    cpu = ironlaw::bench::cpu_seconds([&] {
      rows = ironlaw::comm::bench_collective(topology, 64, ironlaw::comm::CollectiveOp::all_reduce, gib, gib, 2, options);
    });
  });
  const Counts counts = count_all_reduce(topology, 64, gib, fluid);
  auto per_cpu_s = [&](std::uint64_t n) { return cpu > 0 ? static_cast<double>(n) / cpu : 0.0; };
  const std::string base = std::string("comm.all_reduce_1g_512gpu_") + label;
  ironlaw::bench::report((base + ".cpu").c_str(), cpu, "s (user+sys)");
  ironlaw::bench::report((base + ".wall").c_str(), wall, "s");
  ironlaw::bench::report((base + ".busbw").c_str(), rows.front().busbw_gbs, "GB/s");
  ironlaw::bench::report((base + ".events").c_str(), static_cast<double>(counts.events), "events");
  ironlaw::bench::report((base + ".resolves").c_str(), static_cast<double>(counts.resolves), "re-solves");
  ironlaw::bench::report((base + ".flow_records").c_str(), static_cast<double>(counts.records), "records");
  ironlaw::bench::report((base + ".route_splits").c_str(), static_cast<double>(counts.splits), "splits");
  ironlaw::bench::report((base + ".events_per_cpu_s").c_str(), per_cpu_s(counts.events), "events/s");
  ironlaw::bench::report((base + ".resolves_per_cpu_s").c_str(), per_cpu_s(counts.resolves), "re-solves/s");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // peak so far in this process
  ironlaw::bench::report((base + ".peak_rss_so_far").c_str(), static_cast<double>(usage.ru_maxrss) / 1024.0, "MiB");
}

void bench_fluid() { run_all_reduce("fluid", true); }
void bench_stepped() { run_all_reduce("stepped", false); }

const ironlaw::bench::Register reg_fluid("comm.all_reduce_1g_512gpu_fluid", bench_fluid);
const ironlaw::bench::Register reg_stepped("comm.all_reduce_1g_512gpu_stepped", bench_stepped);

}  // namespace
