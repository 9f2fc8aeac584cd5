// Decoding on the GPU's hardware JPEG engine (data.loader.decode_device: gpu): the engine's
// images/s, not host cores, bound the loader; the copy carries the stored bytes. Every
// expected figure is a hand calculation written next to it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/records.hpp"
#include "data/loader.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

using ironlaw::MemorySink;
using ironlaw::Time;
using ironlaw::config::DataSpec;
using ironlaw::config::DeviceSpec;
using ironlaw::data::DataPipeline;
using ironlaw::data::Resources;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::Simulator;

namespace {

constexpr std::int64_t kMs = 1'000'000;  // ns

// Batches of 10 images of 100 kB stored, 600 kB decoded; storage fast enough not to matter.
DataSpec jpeg_data(int workers, const char* device) {
  DataSpec d;
  d.storage_bandwidth_per_node = 1e15;
  d.sample_bytes = 100e3;
  d.decoded_bytes = 600e3;
  d.workers_per_gpu = workers;
  d.prefetch_batches = 4;
  d.decode_device = device;
  d.decode_time.distribution = "constant";
  d.decode_time.mean = 1e-3;  // 1 ms per image on one host core
  return d;
}

DeviceSpec engine(double images_per_s) {
  DeviceSpec dev;
  dev.jpeg_decode_rate = images_per_s;
  return dev;
}

std::vector<std::int64_t> arrivals(Simulator& sim, DataPipeline& pipe, int n) {
  auto out = std::make_shared<std::vector<std::int64_t>>();
  sim.schedule_at(Time::zero(), [&pipe, &sim, n, out] {
    for (int i = 0; i < n; ++i) pipe.request(0, [&sim, out] { out->push_back(sim.now().count_ns()); });
  });
  sim.run();
  return *out;
}

}  // namespace

TEST_CASE("a GPU's JPEG engine decodes a batch in images / rate, and more workers add no rate", "[data][gpu_decode]") {
  // Engine 1,000 images/s, batches of 10 images: 10 ms of engine time per batch. One worker:
  // batch k is ready at 10·k ms. Four workers start four batches at once and share the engine
  // max-min (250 images/s each): all four finish together at 40 ms, then the next four at 80 ms.
  // Either way 4 batches take 40 ms: the engine, not the worker count, sets the rate. Each read
  // (1 MB at 1e15 B/s) rounds up to 1 ns, the four concurrent reads share the link: 4 ns.
  for (const auto& [workers, expected] : std::vector<std::pair<int, std::vector<std::int64_t>>>{
           {1, {10 * kMs + 1, 20 * kMs + 2, 30 * kMs + 3, 40 * kMs + 4}},
           {4, {40 * kMs + 4, 40 * kMs + 4, 40 * kMs + 4, 40 * kMs + 4}}}) {
    Simulator sim;
    FlowNetwork net(sim);
    DataPipeline pipe(sim, net, jpeg_data(workers, "gpu"), engine(1000), 1, 1, 10, 1);
    pipe.start();
    const auto got = arrivals(sim, pipe, 4);
    INFO("workers " << workers);
    REQUIRE(got.size() == 4);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == expected[i]);
  }
}

TEST_CASE("GPU decode moves the knee: one worker keeps up where CPU decode needs one core per image-ms", "[data][gpu_decode]") {
  // CPU decode: 1 ms per image, 10 images per batch = 10 core-ms per batch; with 2 workers (one
  // core each) 8 batches need 4 rounds of 10 ms = 40 ms. GPU decode at 5,000 images/s: 2 ms per
  // batch on the engine with one worker: 8 batches in 16 ms, whatever the host has. (Reads of
  // 1 MB at 1e15 B/s round up to 1 ns; two at once share the link: 2 ns per round.)
  Simulator sim_cpu;
  FlowNetwork net_cpu(sim_cpu);
  DataPipeline cpu(sim_cpu, net_cpu, jpeg_data(2, "cpu"), engine(5000), 1, 1, 10, 1);
  cpu.start();
  const auto got_cpu = arrivals(sim_cpu, cpu, 8);
  REQUIRE(got_cpu.size() == 8);
  CHECK(got_cpu.back() == 40 * kMs + 4 * 2);

  Simulator sim_gpu;
  FlowNetwork net_gpu(sim_gpu);
  DataPipeline gpu(sim_gpu, net_gpu, jpeg_data(1, "gpu"), engine(5000), 1, 1, 10, 1);
  gpu.start();
  const auto got_gpu = arrivals(sim_gpu, gpu, 8);
  REQUIRE(got_gpu.size() == 8);
  CHECK(got_gpu.back() == 16 * kMs + 8 * 1);
}

TEST_CASE("with GPU decode the host-to-device copy carries the stored bytes, not the decoded ones", "[data][gpu_decode]") {
  // 10 images: 10 × 100 kB = 1 MB stored against 10 × 600 kB = 6 MB decoded. At 1 GB/s of H2D
  // the copy takes 1 ms (GPU decode) instead of 6 ms (CPU decode).
  for (const auto& [device, bytes, copy_ms] : std::vector<std::tuple<const char*, double, std::int64_t>>{
           {"gpu", 1e6, 1}, {"cpu", 6e6, 6}}) {
    Simulator sim;
    FlowNetwork net(sim);
    DeviceSpec dev = engine(1e6);
    dev.host_to_device_bandwidth = 1e9;
    DataPipeline pipe(sim, net, jpeg_data(1, device), dev, 1, 1, 10, 1);
    MemorySink sink;
    pipe.set_sink(&sink);
    INFO(device);
    CHECK(pipe.batch_bytes() == bytes);
    pipe.start();
    arrivals(sim, pipe, 1);
    CHECK(pipe.stats(0).h2d.count_ns() == copy_ms * kMs);
  }
}

TEST_CASE("GPU decode on a device without a JPEG engine is refused", "[data][gpu_decode]") {
  Simulator sim;
  FlowNetwork net(sim);
  CHECK_THROWS_AS(DataPipeline(sim, net, jpeg_data(1, "gpu"), DeviceSpec{}, 1, 1, 10, 1), std::invalid_argument);
  CHECK_THROWS_AS(DataPipeline(sim, net, jpeg_data(1, "fpga"), engine(1000), 1, 1, 10, 1), std::invalid_argument);
}
