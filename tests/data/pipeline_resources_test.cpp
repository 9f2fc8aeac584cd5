// The input pipeline on cluster resources: CPU cores shared by the loader workers, a shared
// file system, host→device copies as flows on a PCIe link other traffic also uses, roles of
// pipeline stages, a slow loader, and the decode distributions. Every expected figure is a
// hand calculation written next to it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/records.hpp"
#include "core/rng.hpp"
#include "data/loader.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

using ironlaw::MemorySink;
using ironlaw::RngStream;
using ironlaw::Time;
using ironlaw::config::DataSpec;
using ironlaw::config::DeviceSpec;
using ironlaw::config::DistributionSpec;
using ironlaw::data::DataPipeline;
using ironlaw::data::Distribution;
using ironlaw::data::GpuRole;
using ironlaw::data::Resources;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::LinkId;
using ironlaw::engine::Simulator;

namespace {

constexpr std::int64_t kMs = 1'000'000;  // ns
constexpr std::int64_t kUs = 1'000;      // ns

// batch = 4 sequences; decode 1 ms per sample → 4 core-ms per batch.
DataSpec cpu_bound_data(int workers, int prefetch) {
  DataSpec d;
  d.storage_bandwidth_per_node = 1e10;
  d.sample_bytes = 0;  // reads take no time: only the CPU matters
  d.workers_per_gpu = workers;
  d.prefetch_batches = prefetch;
  d.decode_time.distribution = "constant";
  d.decode_time.mean = 1e-3;
  return d;
}

// Asks for `n` batches of `gpu` at t = 0 and records when each arrived.
std::vector<std::int64_t> arrivals(Simulator& sim, DataPipeline& pipe, int gpu, int n) {
  auto out = std::make_shared<std::vector<std::int64_t>>();
  sim.schedule_at(Time::zero(), [&pipe, &sim, gpu, n, out] {
    for (int i = 0; i < n; ++i) pipe.request(gpu, [&sim, out] { out->push_back(sim.now().count_ns()); });
  });
  sim.run();
  return *out;
}

}  // namespace

TEST_CASE("loader workers share the node's CPU cores: more workers than cores slow each other", "[data][cpu]") {
  // 4 workers, each decoding one batch of 4 core-ms at once. With C cores each runs at
  // min(1, C/4) of a core: C = 2 → 8 ms; C = 4 → 4 ms; C = 16 → still 4 ms (one core each).
  for (const auto& [cores, expected_ms] : std::vector<std::pair<int, std::int64_t>>{{2, 8}, {4, 4}, {16, 4}, {0, 4}}) {
    Simulator sim;
    FlowNetwork net(sim);
    Resources res;
    res.cpu_cores_per_node = cores;
    DataPipeline pipe(sim, net, cpu_bound_data(4, 4), DeviceSpec{}, 1, 1, 4, 1, res);
    pipe.start();
    const auto got = arrivals(sim, pipe, 0, 4);
    INFO("cores " << cores);
    REQUIRE(got.size() == 4);
    for (auto t : got) CHECK(t == expected_ms * kMs);
  }
}

TEST_CASE("two GPUs' workers on 2 cores: throughput is cores / decode time, whatever the worker count", "[data][cpu]") {
  // 2 GPUs × 3 workers = 6 workers on 2 cores; each batch costs 4 core-ms, so the node makes
  // 2 / 4 ms = one batch per 2 ms. Twelve batches (6 per GPU) take 24 ms.
  Simulator sim;
  FlowNetwork net(sim);
  Resources res;
  res.cpu_cores_per_node = 2;
  DataPipeline pipe(sim, net, cpu_bound_data(3, 6), DeviceSpec{}, 1, 2, 4, 1, res);
  pipe.start();
  auto last = std::make_shared<std::int64_t>(0);
  auto count = std::make_shared<int>(0);
  sim.schedule_at(Time::zero(), [&] {
    for (int gpu = 0; gpu < 2; ++gpu)
      for (int i = 0; i < 6; ++i)
        pipe.request(gpu, [&sim, last, count] {
          *last = std::max(*last, sim.now().count_ns());
          ++*count;
        });
  });
  sim.run_until(Time::ns(30 * kMs));
  CHECK(*count == 12);
  CHECK(*last == 24 * kMs);
}

TEST_CASE("a shared file system limit is shared by the reads of every node", "[data][storage]") {
  // 2 nodes × 1 GPU × 1 worker, batch 4 × 1e6 B = 4e6 B, no decode. Each node link 1e10 B/s;
  // a shared FS of 1e10 B/s carries both reads → 5e9 B/s each → 0.8 ms (0.4 ms without it).
  for (const auto& [fs, expected] : std::vector<std::pair<double, std::int64_t>>{{1e10, 800 * kUs}, {0, 400 * kUs}}) {
    Simulator sim;
    FlowNetwork net(sim);
    DataSpec d;
    d.storage_bandwidth_per_node = 1e10;
    d.shared_fs_bandwidth = fs;
    d.sample_bytes = 1e6;
    d.workers_per_gpu = 1;
    d.prefetch_batches = 1;
    DataPipeline pipe(sim, net, d, DeviceSpec{}, 2, 1, 4, 1);
    pipe.start();
    std::vector<std::int64_t> got(2, -1);
    sim.schedule_at(Time::zero(), [&] {
      for (int gpu = 0; gpu < 2; ++gpu) pipe.request(gpu, [&got, &sim, gpu] { got[static_cast<std::size_t>(gpu)] = sim.now().count_ns(); });
    });
    sim.run_until(Time::ns(10 * kMs));
    INFO("shared fs " << fs);
    CHECK(got[0] == expected);
    CHECK(got[1] == expected);
  }
}

TEST_CASE("infinite storage and zero decode: the GPU never stalls", "[data][acceptance]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d;
  d.storage_bandwidth_per_node = 1e300;
  d.sample_bytes = 1e6;
  d.workers_per_gpu = 2;
  d.prefetch_batches = 2;  // decode_time: constant 0
  DeviceSpec dev;          // host_to_device_bandwidth 0: no copy time
  DataPipeline pipe(sim, net, d, dev, 1, 2, 8, 1);
  pipe.start();
  int delivered = 0;
  std::function<void(int)> ask = [&](int gpu) {
    pipe.request(gpu, [&, gpu] {
      if (++delivered < 200) sim.schedule_in(Time::ns(3 * kMs), [&, gpu] { ask(gpu); });
    });
  };
  // The first request comes after the loaders have started (t = 1 ms), as the first step does.
  sim.schedule_at(Time::ns(kMs), [&] { ask(0); ask(1); });
  sim.run();
  CHECK(delivered >= 200);
  for (int gpu = 0; gpu < 2; ++gpu) {
    CHECK(pipe.stats(gpu).stall == Time::zero());
    CHECK(pipe.stats(gpu).stalls == 0);
  }
}

TEST_CASE("host-to-device copies slow down by the share a busy NIC takes of the PCIe link", "[data][pcie][acceptance]") {
  // Copy engine 4e10 B/s, PCIe switch → GPU link 4e10 B/s. A batch of 4 × 1e6 B alone takes
  // 4e6 / 4e10 = 100 us. With one RDMA flow (NIC → PCIe switch → GPU) on the same link the
  // max-min share of each is 2e10 B/s: the copy takes 4e6 / 2e10 = 200 us. With two RDMA
  // flows: 4e10 / 3 each → 300 us.
  for (const auto& [rdma_flows, expected] :
       std::vector<std::pair<int, std::int64_t>>{{0, 100 * kUs}, {1, 200 * kUs}, {2, 300 * kUs}}) {
    Simulator sim;
    FlowNetwork net(sim);
    const LinkId pcie = net.add_link(4e10, Time::zero(), "pcie->gpu");
    const LinkId nic = net.add_link(1e12, Time::zero(), "nic->pcie");
    DataSpec d;
    d.storage_bandwidth_per_node = 1e300;
    d.sample_bytes = 1e6;
    d.workers_per_gpu = 1;
    d.prefetch_batches = 1;
    DeviceSpec dev;
    dev.host_to_device_bandwidth = 4e10;
    Resources res;
    res.h2d_paths = {{pcie}};
    DataPipeline pipe(sim, net, d, dev, 1, 1, 4, 1, res);
    pipe.start();
    const std::vector<LinkId> rdma{nic, pcie};
    for (int i = 0; i < rdma_flows; ++i) net.start_flow(rdma, 1e9, [](auto) {});  // busy far beyond the copy
    std::int64_t requested = -1, got = -1;
    sim.schedule_at(Time::ns(kMs), [&] {  // the batch is long ready: only the copy remains
      requested = sim.now().count_ns();
      pipe.request(0, [&] { got = sim.now().count_ns(); });
    });
    sim.run_until(Time::ns(2 * kMs));
    INFO("rdma flows " << rdma_flows);
    CHECK(got - requested == expected);
    CHECK(pipe.stats(0).h2d == Time::ns(expected));
  }
}

TEST_CASE("the labels stage loads label bytes without decoding — a none stage loads nothing", "[data][roles]") {
  // 3 GPUs: inputs, none, labels. Batch 4 sequences; samples 1e6 B, labels 1e3 B; decode 1 ms
  // per sample; storage 1e10 B/s; copies 4e10 B/s. inputs_carry_labels = false (pp > 1).
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d;
  d.storage_bandwidth_per_node = 1e10;
  d.sample_bytes = 1e6;
  d.label_bytes = 1e3;
  d.workers_per_gpu = 1;
  d.prefetch_batches = 1;
  d.decode_time.mean = 1e-3;
  DeviceSpec dev;
  dev.host_to_device_bandwidth = 4e10;
  Resources res;
  res.roles = {GpuRole::inputs, GpuRole::none, GpuRole::labels};
  res.inputs_carry_labels = false;
  DataPipeline pipe(sim, net, d, dev, 1, 3, 4, 1, res);
  CHECK(pipe.batch_bytes(0) == 4e6);
  CHECK(pipe.batch_bytes(1) == 0);
  CHECK(pipe.batch_bytes(2) == 4e3);
  CHECK_THROWS_AS(pipe.request(1, [] {}), std::logic_error);
  pipe.start();
  std::int64_t inputs = -1, labels = -1;
  sim.schedule_at(Time::zero(), [&] {
    pipe.request(0, [&] { inputs = sim.now().count_ns(); });
    pipe.request(2, [&] { labels = sim.now().count_ns(); });
  });
  sim.run_until(Time::ns(20 * kMs));
  // Labels: 4e3 B reads at the 5e9 B/s share take 0.8 us each; the labels worker reads batch
  // 0 (handed out at once), batch 1 (fills the one prefetch slot) and batch 2 (then holds it):
  // three reads, 0 – 2.4 us. Inputs: 2.4 us at 5e9 B/s = 12e3 B, the remaining 3.988e6 B at
  // 1e10 B/s = 398.8 us → read done at 401.2 us; decode 4 ms; copy 4e6 / 4e10 = 100 us.
  CHECK(inputs == 4501 * kUs + 200);
  // Labels batch 0: read 0.8 us, no decode, copy 4e3 / 4e10 = 0.1 us → 0.9 us.
  CHECK(labels == 900);
}

TEST_CASE("a slow loader decodes from its own distribution", "[data][slow]") {
  DataSpec d = cpu_bound_data(1, 1);
  d.slow_loader.gpu = 1;
  d.slow_loader.decode_time.mean = 5e-3;
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, d, DeviceSpec{}, 1, 2, 4, 1);
  pipe.start();
  std::vector<std::int64_t> got(2, -1);
  sim.schedule_at(Time::zero(), [&] {
    for (int gpu = 0; gpu < 2; ++gpu) pipe.request(gpu, [&got, &sim, gpu] { got[static_cast<std::size_t>(gpu)] = sim.now().count_ns(); });
  });
  sim.run_until(Time::ns(30 * kMs));
  CHECK(got[0] == 4 * kMs);   // 4 samples × 1 ms
  CHECK(got[1] == 20 * kMs);  // 4 samples × 5 ms
  d.slow_loader.gpu = 2;
  CHECK_THROWS_AS(DataPipeline(sim, net, d, DeviceSpec{}, 1, 2, 4, 1), std::invalid_argument);
}

TEST_CASE("decode distributions: fixed, truncated normal, empirical", "[data][distribution]") {
  RngStream rng(42, "test");
  DistributionSpec fixed;
  fixed.distribution = "fixed";
  fixed.mean = 2e-3;
  CHECK(Distribution(fixed).draw_seconds(rng) == 2e-3);

  // Normal, cv 0.2: mean of 20000 draws within 4 standard errors (0.2·mean/√20000 each).
  DistributionSpec normal;
  normal.distribution = "normal";
  normal.mean = 1e-3;
  normal.cv = 0.2;
  const Distribution n(normal);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += n.draw_seconds(rng);
  CHECK(std::abs(sum / 20000 - 1e-3) < 4 * 0.2e-3 / std::sqrt(20000.0));
  // cv 3: a third of the mass lies below zero (P(Z < −1/3) ≈ 0.369): truncated, never negative.
  normal.cv = 3;
  const Distribution wide(normal);
  int zeros = 0;
  for (int i = 0; i < 10000; ++i) {
    const double v = wide.draw_seconds(rng);
    CHECK(v >= 0);
    zeros += v == 0 ? 1 : 0;
  }
  CHECK(zeros > 3400);
  CHECK(zeros < 4000);

  // Empirical: every draw is one of the samples, each about equally often.
  DistributionSpec emp;
  emp.distribution = "empirical";
  emp.samples = {1e-3, 2e-3, 7e-3};
  const Distribution e(emp);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 3000; ++i) {
    const double v = e.draw_seconds(rng);
    const auto it = std::find(emp.samples.begin(), emp.samples.end(), v);
    REQUIRE(it != emp.samples.end());
    ++counts[it - emp.samples.begin()];
  }
  for (int c : counts) CHECK(std::abs(c - 1000) < 4 * std::sqrt(3000 * (1.0 / 3) * (2.0 / 3)));
  emp.samples.clear();
  CHECK_THROWS_AS(Distribution(emp), std::invalid_argument);
}

TEST_CASE("storage reads the stored bytes, the copy carries the decoded bytes", "[data][decoded]") {
  // 4 samples of 1e6 B stored (JPEG-like), 4e6 B each once decoded (a float32 crop).
  // Read 4e6 B / 1e10 B/s = 0.4 ms; no decode time; copy 16e6 B / 4e10 B/s = 0.4 ms → 0.8 ms.
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d;
  d.storage_bandwidth_per_node = 1e10;
  d.sample_bytes = 1e6;
  d.decoded_bytes = 4e6;
  d.workers_per_gpu = 1;
  d.prefetch_batches = 1;
  DeviceSpec dev;
  dev.host_to_device_bandwidth = 4e10;
  DataPipeline pipe(sim, net, d, dev, 1, 1, 4, 1);
  CHECK(pipe.batch_bytes() == 16e6);
  pipe.start();
  const auto got = arrivals(sim, pipe, 0, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == 800 * kUs);
}

TEST_CASE("with more cores than workers, decoding on the core budget takes what it takes alone", "[data][cpu]") {
  // 2 GPUs × 2 workers on 112 cores: every worker has a core of its own, so the batches arrive
  // exactly when they do without a core budget (same draws, same order).
  auto run = [](int cores) {
    Simulator sim;
    FlowNetwork net(sim);
    DataSpec d = cpu_bound_data(2, 2);
    d.decode_time.distribution = "lognormal";
    d.decode_time.cv = 0.5;
    Resources res;
    res.cpu_cores_per_node = cores;
    DataPipeline pipe(sim, net, d, DeviceSpec{}, 1, 2, 16, 3, res);
    pipe.start();
    std::vector<std::int64_t> got;
    std::function<void(int, int)> ask = [&](int gpu, int left) {
      pipe.request(gpu, [&, gpu, left] {
        got.push_back(sim.now().count_ns());
        if (left > 1) sim.schedule_in(Time::ns(5 * kMs), [&, gpu, left] { ask(gpu, left - 1); });
      });
    };
    sim.schedule_at(Time::zero(), [&] { ask(0, 20); ask(1, 20); });
    sim.run_until(Time::ns(2000 * kMs));
    return got;
  };
  const auto alone = run(0);
  const auto budget = run(112);
  REQUIRE(alone.size() == 40);
  CHECK(budget == alone);
}
