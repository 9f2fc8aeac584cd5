// The input pipeline inside a training step: one slow loader stalls its whole data-parallel
// group, the stalls reach the record sink with the rank that was slow, and with pipeline
// parallelism the first stage gets the inputs and the last stage the labels; the ResNet-50
// sweep over workers per GPU finds the knee the closed form predicts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "core/error.hpp"
#include "run/simulation.hpp"
#include "workload/layer_list.hpp"

using namespace ironlaw;

namespace {

const std::string kDataDp = IRONLAW_SOURCE_DIR "/tests/run/data/data-dp.yaml";
const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

std::uint32_t index_of(const std::vector<std::string>& table, const std::string& name) {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i] == name) return static_cast<std::uint32_t>(i);
  FAIL("no " << name << " in the sink's table");
  return 0;
}

/// Per rank: summed duration [ns] of the records of `kind` named `name`.
std::map<int, std::int64_t> per_rank(const MemorySink& sink, EventKind kind, const std::string& name) {
  std::map<int, std::int64_t> out;
  const std::uint32_t id = index_of(sink.names, name);
  for (const auto& e : sink.events)
    if (e.kind == kind && e.name == id) out[e.rank] += e.end_ns - e.start_ns;
  return out;
}

}  // namespace

TEST_CASE("one slow loader on one rank stalls every rank of its data-parallel group", "[run][data][acceptance]") {
  // Each rank's first batch is ready after its decode: 1 ms, or 5 ms on the slow rank 2. The
  // gradient all-reduce needs every rank's backward, so the whole step (every rank) ends
  // 5 − 1 = 4 ms later than without the slow loader (compute is the same on every rank and
  // communication costs ~0 on the ideal node).
  MemorySink fast_sink, slow_sink;
  const auto fast = run::simulate(config::load_scenario(kDataDp), fast_sink, run::TraceLevel::op);
  const auto slow = run::simulate(
      config::load_scenario(kDataDp, {"data.loader.slow_loader.gpu=2", "data.loader.slow_loader.decode_time.mean=5ms"}),
      slow_sink, run::TraceLevel::op);
  REQUIRE(fast.steps.size() == 1);
  REQUIRE(slow.steps.size() == 1);
  CHECK(slow.step_time_s - fast.step_time_s == Approx(4e-3).margin(1e-6));

  // The stall records name the slow rank: rank 2 waited 5 ms for its batch, the others 1 ms.
  std::map<int, std::int64_t> stalls;
  for (const char* cause : {"data_stall/no_worker", "data_stall/storage_read", "data_stall/decode"}) {
    for (const auto& [rank, ns] : per_rank(slow_sink, EventKind::stall, cause)) stalls[rank] += ns;
  }
  REQUIRE(stalls.size() == 4);
  CHECK(stalls.at(2) == 5'000'000);
  for (int r : {0, 1, 3}) CHECK(stalls.at(r) == 1'000'000);
  // Means over the 4 ranks: rank 2's data stall grows by 4 ms (mean + 1 ms); the three fast
  // ranks wait the same 4 ms for the all-reduce, as idle time or exposed communication
  // (mean + 3 ms).
  CHECK(slow.data_stall_s - fast.data_stall_s == Approx(1e-3).margin(1e-6));
  CHECK((slow.exposed_comm_s + slow.other_s) - (fast.exposed_comm_s + fast.other_s) == Approx(3e-3).margin(1e-6));
}

TEST_CASE("with pipeline stages the first gets the inputs and the last the labels", "[run][data]") {
  // pipeline.yaml: pp 4 on the ideal node, 8 microbatches of one sequence.
  MemorySink sink;
  const auto s = config::load_scenario(kPipeline, {"data.storage_bandwidth_per_node=1e18 B/s", "data.sample_bytes=8KiB",
                                                   "data.label_bytes=8KiB", "data.loader.workers_per_gpu=2"});
  run::simulate(s, sink, run::TraceLevel::op);
  const std::uint32_t input = index_of(sink.names, "input batch");
  std::map<int, int> batches;
  std::map<int, double> bytes;
  for (const auto& e : sink.events)
    if (e.kind == EventKind::data && e.name == input) {
      ++batches[e.rank];
      bytes[e.rank] = e.bytes;
    }
  const int microbatches = 16 * 1024 / 2048;
  CHECK(batches[0] == microbatches);
  CHECK(batches[3] == microbatches);
  CHECK(batches.count(1) == 0);
  CHECK(batches.count(2) == 0);
  CHECK(bytes[0] == 8 * 1024);  // inputs only: the labels go to the last stage
  CHECK(bytes[3] == 8 * 1024);
}

TEST_CASE("a layer-list model trains under data parallelism with MFU from its own FLOPs", "[run][layer_list]") {
  const std::string resnet = IRONLAW_SOURCE_DIR "/scenarios/data/resnet50-imagenet-dgx.yaml";
  const auto s = config::load_scenario(resnet, {"run.steps=1", "data.storage_bandwidth_per_node=0"});
  REQUIRE(s.model.layer_list != nullptr);
  CHECK(s.model.layers == 23);  // conv1, bn1, relu, maxpool, 16 bottlenecks, avgpool, flatten, fc
  NullSink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::none);
  REQUIRE_FALSE(r.out_of_memory);
  const auto cost = workload::layer_model_cost(*s.model.layer_list, 32, "bf16");
  // 2,048 images per step, each 3 × its forward GEMM/convolution FLOPs.
  CHECK(r.model_flops_per_step == Approx(2048 * 3 * cost.matmul_flops_per_sample()));
  // No loaders: the step is compute (8 microbatches' forward + backward) plus the gradient
  // all-reduce and optimizer; compute covers at least the sum of the kernels of 8 microbatches.
  const auto timed = workload::layer_model_cost(*s.model.layer_list, 32, "bf16", &s.topology.device);
  const double kernels = 8 * workload::layer_model_step_compute(timed, s.topology.device, "bf16").seconds();
  CHECK(r.compute_s >= kernels);
  CHECK(r.data_stall_s == 0);
  // Model parallelism is refused for layer lists (exit 2 at the CLI).
  CHECK_THROWS_AS(config::load_scenario(resnet, {"parallel.tp=2", "parallel.dp=4"}), InputError);
}

namespace {

/// Mean step time [s] of the steps after the first two (the loaders' warm-up).
double steady_step_s(const run::SimulationResult& r) {
  double sum = 0;
  int n = 0;
  for (std::size_t i = 2; i < r.steps.size(); ++i, ++n) sum += (r.steps[i].end_ns - r.steps[i].start_ns) * 1e-9;
  return n > 0 ? sum / n : 0;
}

}  // namespace

TEST_CASE("the ResNet-50 sweep over workers per GPU shows the knee where the GPU stops waiting", "[run][data][acceptance][slow]") {
  // The shipped scenario (8 H100s, 112 cores, 256 images per GPU per step in 8 batches of 32)
  // with a constant decode time d = 2.4 ms per image, so that the oracle is closed-form:
  // - the GPU alone (decode 0) needs T0 per step;
  // - W workers per GPU (W <= 14: one core each, 8·W <= 112) deliver 256 images per 256·d / W;
  // - so the steady step is max(T0, 256·d / W) and the knee is W* = 256·d / T0 workers per GPU.
  const std::string resnet = IRONLAW_SOURCE_DIR "/scenarios/data/resnet50-imagenet-dgx.yaml";
  const std::vector<std::string> base{"run.steps=6", "output.path=none", "output.trace=none",
                                      "data.loader.decode_time.distribution=constant"};
  auto steady = [&](int workers, const std::string& decode) {
    auto sets = base;
    sets.push_back("data.loader.workers_per_gpu=" + std::to_string(workers));
    sets.push_back("data.loader.decode_time.mean=" + decode);
    NullSink sink;
    return steady_step_s(run::simulate(config::load_scenario(resnet, sets), sink, run::TraceLevel::none));
  };
  const double d = 2.4e-3;
  const double t0 = steady(16, "0 ms");
  const double knee = 256 * d / t0;
  INFO("T0 " << t0 << " s, knee " << knee << " workers per GPU");
  REQUIRE(knee > 4);
  REQUIRE(knee < 12);
  int first_flat = 0;
  for (int w = 1; w <= 14; ++w) {
    const double t = steady(w, "2.4 ms");
    INFO("workers " << w << ": steady step " << t << " s");
    CHECK(t == Approx(std::max(t0, 256 * d / w)).epsilon(0.03));
    if (first_flat == 0 && t < 1.03 * t0) first_flat = w;
  }
  // The sweep finds the knee where the closed form puts it (the first whole worker count at or
  // past W*).
  CHECK(first_flat == static_cast<int>(std::ceil(knee)));
}

TEST_CASE("decoding on the GPU's JPEG engine moves the ResNet-50 knee from ten host cores per GPU to one worker", "[run][data][gpu_decode][slow]") {
  // The same node and batches as above; with decode_device gpu a batch of 32 images takes
  // 32 / R on the GPU's JPEG engine (R images/s) and no host core. One worker per GPU then
  // gives a steady step of max(T0, 256 / R): at the H100's R = 7,000 (36.6 ms per step) the GPU
  // is the limit (T0 ≈ 61 ms); an engine of R = 2,000 (128 ms per step) would be.
  const std::string cpu = IRONLAW_SOURCE_DIR "/scenarios/data/resnet50-imagenet-dgx.yaml";
  const std::string gpu = IRONLAW_SOURCE_DIR "/scenarios/data/resnet50-imagenet-dgx-gpu-decode.yaml";
  const std::vector<std::string> base{"run.steps=6", "output.path=none", "output.trace=none"};
  auto steady = [&](const std::string& scenario, std::vector<std::string> sets) {
    sets.insert(sets.end(), base.begin(), base.end());
    NullSink sink;
    return steady_step_s(run::simulate(config::load_scenario(scenario, sets), sink, run::TraceLevel::none));
  };
  // T0: the GPU-decoding pipeline with an engine too fast to matter (its copies carry the
  // stored bytes, so T0 is a little shorter than the CPU pipeline's).
  const double t0 = steady(gpu, {"data.loader.workers_per_gpu=1", "cluster.topology.device.jpeg_decode_rate=1e9"});
  INFO("T0 " << t0 << " s");
  REQUIRE(t0 > 256.0 / 7000);
  REQUIRE(t0 < 256.0 / 2000);
  CHECK(steady(gpu, {"data.loader.workers_per_gpu=1"}) == Approx(t0).epsilon(0.03));
  // One worker reads a batch (32 × 110 KB over the node's 55 GB/s shared by 8 readers: 0.51 ms)
  // and then waits for its decode: 8 × (0.51 + 16) = 132 ms. With reads that take no time the
  // engine alone sets the step: 256 / 2,000 = 128 ms.
  CHECK(steady(gpu, {"data.loader.workers_per_gpu=1", "cluster.topology.device.jpeg_decode_rate=2000"}) ==
        Approx(8 * (32 * 110008 / (55e9 / 8) + 32.0 / 2000)).epsilon(0.01));
  CHECK(steady(gpu, {"data.loader.workers_per_gpu=1", "cluster.topology.device.jpeg_decode_rate=2000",
                     "data.storage_bandwidth_per_node=1e18 B/s"}) == Approx(256.0 / 2000).epsilon(0.01));
  // The CPU-decoding pipeline with one worker per GPU: 256 × 2.4 ms per step.
  CHECK(steady(cpu, {"data.loader.workers_per_gpu=1", "data.loader.decode_time.distribution=constant"}) ==
        Approx(256 * 2.4e-3).epsilon(0.03));
}

TEST_CASE("GPU decode is refused where the device has no JPEG engine or a CPU decode time is given", "[run][data][gpu_decode]") {
  const std::string gpu = IRONLAW_SOURCE_DIR "/scenarios/data/resnet50-imagenet-dgx-gpu-decode.yaml";
  const std::string v100 = IRONLAW_SOURCE_DIR "/scenarios/data/mohan-resnet50-v100.yaml";
  CHECK_THROWS_AS(config::load_scenario(gpu, {"cluster.topology.device.jpeg_decode_rate=0"}), InputError);
  CHECK_THROWS_AS(config::load_scenario(v100, {"data.loader.decode_device=gpu"}), InputError);
}
