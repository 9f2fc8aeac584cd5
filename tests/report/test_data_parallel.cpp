// Scenario-level behaviour of the data-parallel step simulation. Each expectation is a
// direction or an identity that follows from the mechanism, not a number the code printed.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "report/metrics.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kMultinode = IRONLAW_SOURCE_DIR "/scenarios/gpt2-1.5b-ddp-multinode.yaml";
const std::string kOneNode = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";

struct Outcome {
  run::SimulationResult result;
  std::vector<report::Metric> metrics;
  double mfu() const { return report::metric(metrics, "mfu"); }
};

Outcome simulate(const std::string& path, std::vector<std::string> overrides) {
  overrides.push_back("run.steps=1");
  const auto scenario = config::load_scenario(path, overrides);
  NullSink sink;
  Outcome o{run::simulate(scenario, sink, run::TraceLevel::none), {}};
  o.metrics = report::summary_metrics(scenario, o.result);
  return o;
}

}  // namespace

TEST_CASE("halving the NIC bandwidth lowers the MFU of a multi-node DDP run", "[run][ddp]") {
  const auto full = simulate(kMultinode, {"cluster.nodes=8"});
  const auto half = simulate(kMultinode, {"cluster.nodes=8", "cluster.topology.node.nic.bandwidth=24 GB/s"});
  CHECK(half.result.comm_s > full.result.comm_s);
  CHECK(half.result.exposed_comm_s > full.result.exposed_comm_s);
  CHECK(half.mfu() < full.mfu());
  // The kernels are the same; they run longer only because the slower all-reduces hold NCCL's
  // SMs (one per channel: comm.kernel_sms, 16 of 132 on this topology's nodes) for longer: a
  // fully overlapped kernel takes 132/116 of its time, so compute can grow by at most
  // comm_s · 16/116.
  const auto topo = config::load_scenario(kMultinode, {}).topology;
  REQUIRE(topo.comm.kernel_sms == 16);
  REQUIRE(topo.device.sm_count == 132);
  CHECK(half.result.compute_s > full.result.compute_s);
  CHECK(half.result.compute_s - full.result.compute_s <= half.result.comm_s * 16.0 / 116.0);
}

TEST_CASE("compute kernels slow down while collectives hold SMs, and only then", "[run][ddp][sm]") {
  // One node, DDP: a communicator within the node takes comm.node_kernel_sms, 24 of 132 SMs, so
  // compute runs at 108/132 while an all-reduce is in flight. A single GPU with the same
  // microbatches runs the same kernels, and its one-rank "collectives" last only their launch
  // latency, so its compute is (almost) the kernels' own time; the 8-GPU run's compute exceeds it
  // by at most its communication time · 24/108. Every GPU at the profile's speed: otherwise the
  // 8-GPU replica would also wait for its slowest GPU.
  REQUIRE(config::load_scenario(kOneNode, {}).topology.comm.node_kernel_sms == 24);
  const std::string same_speed = "cluster.topology.device.speed_variation_cv=0";
  const auto shared = simulate(kOneNode, {"data.storage_bandwidth_per_node=0", same_speed});
  const auto alone = simulate(kOneNode, {"data.storage_bandwidth_per_node=0", same_speed, "cluster.topology.node.gpus=1",
                                         "cluster.topology.node.nics=1", "parallel.microbatch_size=16",
                                         "training.global_batch_tokens=64 Ki"});
  CHECK(alone.result.comm_s < 0.1 * shared.result.comm_s);
  CHECK(shared.result.compute_s > alone.result.compute_s);
  CHECK(shared.result.compute_s - alone.result.compute_s <= shared.result.comm_s * 24.0 / 108.0 + 1e-9);
}

TEST_CASE("adding nodes at a fixed global batch lowers the MFU of DDP", "[run][ddp]") {
  double previous = 1.0;
  for (const char* nodes : {"1", "2", "4", "8"}) {
    const auto o = simulate(kMultinode, {std::string("cluster.nodes=") + nodes});
    INFO("nodes " << nodes << " mfu " << o.mfu());
    CHECK(o.mfu() < previous);
    previous = o.mfu();
  }
}

TEST_CASE("adding compute-only work leaves communication time unchanged", "[run][ddp]") {
  // Full activation recomputation adds one forward per layer to backward and nothing to the
  // network: the all-reduces move the same bytes over the same links, one at a time.
  const auto plain = simulate(kMultinode, {"cluster.nodes=4", "training.activation_checkpointing=none"});
  const auto recompute = simulate(kMultinode, {"cluster.nodes=4", "training.activation_checkpointing=full"});
  CHECK(recompute.result.compute_s > plain.result.compute_s);
  CHECK(recompute.result.comm_s == Approx(plain.result.comm_s).epsilon(1e-9));
  CHECK(report::metric(recompute.metrics, "hfu") > report::metric(recompute.metrics, "mfu"));
}

TEST_CASE("a step is never shorter than its compute or the 6ND bound at peak", "[run]") {
  const auto o = simulate(kOneNode, {});
  const double t = o.result.step_time_s;
  CHECK(t >= o.result.compute_s);
  CHECK(t >= report::metric(o.metrics, "baseline_6nd_attention_step_time_s"));
  CHECK(o.mfu() > 0.0);
  CHECK(o.mfu() < 1.0);
}

TEST_CASE("a layout that does not fit in HBM is reported out of memory, not simulated", "[run][memory]") {
  // Llama 3 8B with plain DDP keeps 16 bytes per parameter on every GPU: 128 GB > 80 GB.
  const auto o = simulate(IRONLAW_SOURCE_DIR "/scenarios/llama3-8b-fsdp-128.yaml", {"parallel.zero=0"});
  CHECK(o.result.out_of_memory);
  CHECK(o.result.steps.empty());
  CHECK(o.result.memory.weights + o.result.memory.gradients + o.result.memory.optimizer ==
        Approx(16.0 * 8.03e9).epsilon(0.01));
}

TEST_CASE("ZeRO-3 shards weights, gradients and optimizer state over the DP ranks", "[run][memory]") {
  const auto z0 = simulate(kOneNode, {"parallel.zero=0"});
  const auto z3 = simulate(kOneNode, {"parallel.zero=3"});
  const double states0 = z0.result.memory.weights + z0.result.memory.gradients + z0.result.memory.optimizer;
  const double states3 = z3.result.memory.weights + z3.result.memory.gradients + z3.result.memory.optimizer;
  CHECK(states3 == Approx(states0 / 8).epsilon(1e-9));
}
