// Benchmark of the nccl-tests table (issue 6's first speed target): one 1 GiB all-reduce over
// the 512 GPUs of 64 DGX H100 nodes, as `ironlaw collective --op all_reduce -b 1G -e 1G
// --nodes 64` runs it (fluid rings), and stepped for comparison.
#include <string>

#include "bench.hpp"
#include "comm/collective.hpp"
#include "config/load.hpp"

namespace {

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
  const std::string base = std::string("comm.all_reduce_1g_512gpu_") + label;
  ironlaw::bench::report((base + ".cpu").c_str(), cpu, "s (user+sys)");
  ironlaw::bench::report((base + ".wall").c_str(), wall, "s");
  ironlaw::bench::report((base + ".busbw").c_str(), rows.front().busbw_gbs, "GB/s");
}

void bench_fluid() { run_all_reduce("fluid", true); }
void bench_stepped() { run_all_reduce("stepped", false); }

const ironlaw::bench::Register reg_fluid("comm.all_reduce_1g_512gpu_fluid", bench_fluid);
const ironlaw::bench::Register reg_stepped("comm.all_reduce_1g_512gpu_stepped", bench_stepped);

}  // namespace
