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
using ironlaw::data::GpuStats;
using ironlaw::engine::FlowNetwork;
using ironlaw::engine::Simulator;

namespace {

// The reference world of these tests:
//   batch = 4 sequences × 1e6 B = 4e6 B
//   read alone R = 4e6 B / 1e10 B/s = 0.4 ms
//   decode D = 4 samples × 1 ms (constant) = 4 ms
//   host→device H = 4e6 B / 4e10 B/s = 0.1 ms
constexpr int kSequences = 4;
constexpr std::int64_t kMs = 1'000'000;  // ns
constexpr std::int64_t kUs = 1'000;      // ns

DataSpec reference_data(int workers, int prefetch) {
  DataSpec d;
  d.storage_bandwidth_per_node = 1e10;
  d.sample_bytes = 1e6;
  d.workers_per_gpu = workers;
  d.prefetch_batches = prefetch;
  d.decode_time.distribution = "constant";
  d.decode_time.mean = 1e-3;
  return d;
}

DeviceSpec reference_device() {
  DeviceSpec dev;
  dev.host_to_device_bandwidth = 4e10;
  return dev;
}

// A training loop on one GPU: requests a batch, "computes" for `compute` once it arrives,
// requests the next, `batches` times. Records when each batch arrived and the GPU's
// cumulative stall at that moment.
struct Consumer {
  Simulator& sim;
  DataPipeline& pipe;
  int gpu;
  Time compute;
  int batches;
  std::vector<std::int64_t> delivered;        // ns
  std::vector<std::int64_t> cumulative_stall; // ns

  void begin_at(Time at) {
    sim.schedule_at(at, [this] { ask(); });
  }
  void ask() {
    pipe.request(gpu, [this] { on_batch(); });
  }
  void on_batch() {
    delivered.push_back(sim.now().count_ns());
    cumulative_stall.push_back(pipe.stats(gpu).stall.count_ns());
    if (static_cast<int>(delivered.size()) < batches) sim.schedule_in(compute, [this] { ask(); });
  }
  // Stall of the k-th batch alone.
  std::int64_t stall_of(std::size_t k) const {
    return cumulative_stall[k] - (k == 0 ? 0 : cumulative_stall[k - 1]);
  }
};

}  // namespace

TEST_CASE("with one worker and constant decode the steady batch interval is read plus decode", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 1, kSequences, 1);
  REQUIRE(pipe.enabled());
  CHECK(pipe.batch_bytes() == 4e6);
  CHECK(pipe.h2d_time() == Time::us(100));
  pipe.start();
  Consumer gpu{sim, pipe, 0, Time::zero(), 6, {}, {}};
  gpu.begin_at(Time::zero());
  sim.run();

  // The worker never idles: batch k is ready at (k+1)·(R + D) = (k+1)·4.4 ms and arrives
  // H = 0.1 ms later.
  REQUIRE(gpu.delivered.size() == 6);
  for (std::size_t k = 0; k < 6; ++k) {
    CHECK(gpu.delivered[k] == static_cast<std::int64_t>(k + 1) * 4'400 * kUs + 100 * kUs);
  }
  // First request at 0 waits the whole first load: 4.4 ms. Every later request is issued at
  // an arrival, (k·4.4 + 0.1) ms, and waits for (k+1)·4.4 ms: R + D − H = 4.3 ms.
  CHECK(gpu.stall_of(0) == 4'400 * kUs);
  for (std::size_t k = 1; k < 6; ++k) CHECK(gpu.stall_of(k) == 4'300 * kUs);
  const GpuStats s = pipe.stats(0);
  CHECK(s.stalls == 6);
  CHECK(s.stall == Time::us(4'400 + 5 * 4'300));
  CHECK(s.max_stall == Time::us(4'400));
  CHECK(s.batches_delivered == 6);
  CHECK(s.h2d == Time::us(600));
}

TEST_CASE("a GPU faster than the pipeline stalls by exactly the difference once the queue drains", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 1, kSequences, 1);
  pipe.start();
  // Compute C = 3 ms, so the GPU asks every C + H = 3.1 ms; the worker delivers every 4.4 ms.
  Consumer gpu{sim, pipe, 0, Time::ms(3), 15, {}, {}};
  gpu.begin_at(Time::ms(20));
  sim.run();

  // Warm-up: b0 ready at 4.4 ms, b1 at 8.8 ms (queue full), b2 done at 13.2 ms and held.
  // At 20 ms b0 is popped, b2 enters, the worker starts b3: b_n ready at 20 + 4.4·(n − 2) ms
  // for n ≥ 3 (24.4, 28.8, 33.2, 37.6, 42.0, 46.4, ...).
  // Requests: r0 = 20, then r_k = arrival_{k−1} + 3 ms:
  //   r0..r6 = 20, 23.1, 26.2, 29.3, 32.4, 35.5, 38.6 find their batch ready: no stall;
  //   r7 = 41.7 waits for b7 at 42.0: 0.3 ms;
  //   from then on r_k = ready_{k−1} + 3.1, ready_k = ready_{k−1} + 4.4: 1.3 ms = 4.4 − 3.1.
  REQUIRE(gpu.delivered.size() == 15);
  for (std::size_t k = 0; k < 7; ++k) CHECK(gpu.stall_of(k) == 0);
  CHECK(gpu.stall_of(7) == 300 * kUs);
  for (std::size_t k = 8; k < 15; ++k) CHECK(gpu.stall_of(k) == 1'300 * kUs);
  CHECK(gpu.delivered[7] == 42'100 * kUs);
  CHECK(gpu.delivered[14] == 42'100 * kUs + 7 * 4'400 * kUs);
  CHECK(pipe.stats(0).stalls == 8);
}

TEST_CASE("with enough workers the GPU stalls only during warm-up", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(2, 2), reference_device(), 1, 1, kSequences, 1);
  pipe.start();
  Consumer gpu{sim, pipe, 0, Time::ms(3), 40, {}, {}};
  gpu.begin_at(Time::zero());
  sim.run();

  // Both workers read their first batch at once, each at 1e10/2 B/s: 0.8 ms, then decode
  // 4 ms: b0 and b1 are ready at 4.8 ms, the only stall. Afterwards two workers produce at
  // least 2 batches per 4.8 ms (2.4 ms each) while the GPU takes one per 3.1 ms.
  REQUIRE(gpu.delivered.size() == 40);
  CHECK(gpu.stall_of(0) == 4'800 * kUs);
  CHECK(gpu.delivered[0] == 4'900 * kUs);
  for (std::size_t k = 1; k < 40; ++k) CHECK(gpu.stall_of(k) == 0);
  CHECK(pipe.stats(0).stalls == 1);
  CHECK(pipe.stats(0).max_ready <= 2);
}

TEST_CASE("the GPUs of a node share its storage bandwidth max-min fairly", "[data]") {
  SECTION("eight GPUs reading at once get an eighth each") {
    Simulator sim;
    FlowNetwork net(sim);
    DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 8, kSequences, 1);
    CHECK(net.link_count() == 1);
    CHECK(net.link_name(pipe.storage_link(0)) == "node0/storage");
    pipe.start();
    std::vector<std::unique_ptr<Consumer>> gpus;
    for (int g = 0; g < 8; ++g) {
      gpus.push_back(std::make_unique<Consumer>(Consumer{sim, pipe, g, Time::zero(), 1, {}, {}}));
      gpus.back()->begin_at(Time::zero());
    }
    sim.run_until(Time::ms(8));
    // Read: 4e6 B at 1e10/8 B/s = 3.2 ms; + D 4 ms + H 0.1 ms = 7.3 ms.
    for (const auto& c : gpus) {
      REQUIRE(c->delivered.size() == 1);
      CHECK(c->delivered[0] == 7'300 * kUs);
    }
  }
  SECTION("GPUs of different nodes do not share") {
    Simulator sim;
    FlowNetwork net(sim);
    DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 2, 1, kSequences, 1);
    CHECK(net.link_count() == 2);
    pipe.start();
    Consumer a{sim, pipe, 0, Time::zero(), 1, {}, {}};
    Consumer b{sim, pipe, 1, Time::zero(), 1, {}, {}};
    a.begin_at(Time::zero());
    b.begin_at(Time::zero());
    sim.run_until(Time::ms(5));
    // Each alone on its node's link: R + D + H = 0.4 + 4 + 0.1 ms.
    CHECK(a.delivered == std::vector<std::int64_t>{4'500 * kUs});
    CHECK(b.delivered == std::vector<std::int64_t>{4'500 * kUs});
  }
  SECTION("two GPUs reading at once get half each; alone, the full rate") {
    Simulator sim;
    FlowNetwork net(sim);
    DataPipeline pipe(sim, net, reference_data(1, 1), reference_device(), 1, 2, kSequences, 1);
    pipe.start();
    // GPU 0 consumes 3 batches back to back; GPU 1 never asks, so with one prefetch slot its
    // worker stops after its second batch.
    Consumer gpu0{sim, pipe, 0, Time::zero(), 3, {}, {}};
    gpu0.begin_at(Time::zero());
    sim.run();
    // b0 (both GPUs): read at 5e9 B/s = 0.8 ms, decode → ready 4.8 ms, arrives 4.9 ms.
    // b1 (both GPUs): both read again at once from 4.8 ms: 0.8 ms, decode → 9.6, arrives 9.7.
    //   GPU 1's b1 finds its slot held by b0: its worker blocks from 9.6 ms.
    // b2 (GPU 0): reads alone at 1e10 B/s: 0.4 ms → 10.0, decode → 14.0, arrives 14.1.
    // b3 (GPU 0): 14.0 + 4.4 = 18.4 ms into the free slot; b4 done at 22.8 ms finds it full:
    //   nothing is left to happen, the run ends at 22.8 ms.
    CHECK(gpu0.delivered == std::vector<std::int64_t>{4'900 * kUs, 9'700 * kUs, 14'100 * kUs});
    CHECK(sim.now() == Time::us(22'800));
    const GpuStats idle = pipe.stats(1);
    CHECK(idle.worker_blocked == Time::us(22'800 - 9'600));
    CHECK(idle.batches_loaded == 1);
    CHECK(idle.max_ready == 1);
    CHECK(pipe.ready(1) == 1);
    CHECK(idle.stall == Time::zero());
    CHECK(pipe.stats(0).worker_blocked == Time::zero());  // b4 blocked just now: 0 so far
  }
}

TEST_CASE("prefetch back-pressure bounds the queue and idles the workers", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 1, kSequences, 1);
  pipe.start();
  // b0 ready at 4.4 ms, b1 at 8.8 ms: queue full. b2 done at 13.2 ms: the worker holds it.
  sim.run_until(Time::ms(15));
  CHECK(pipe.ready(0) == 2);
  CHECK(pipe.stats(0).worker_blocked == Time::us(15'000 - 13'200));
  CHECK(pipe.stats(0).batches_loaded == 2);

  Consumer gpu{sim, pipe, 0, Time::zero(), 1, {}, {}};
  gpu.begin_at(Time::ms(20));
  sim.run();
  // At 20 ms b0 is popped (no stall), b2 enters after 20 − 13.2 = 6.8 ms held, the worker
  // loads b3 until 24.4 ms and finds the queue (b1, b2) full again; nothing else happens.
  CHECK(gpu.delivered == std::vector<std::int64_t>{20'100 * kUs});
  CHECK(sim.now() == Time::us(24'400));
  const GpuStats s = pipe.stats(0);
  CHECK(s.stall == Time::zero());
  CHECK(s.stalls == 0);
  CHECK(s.worker_blocked == Time::us(6'800));
  CHECK(s.batches_loaded == 3);
  CHECK(s.batches_popped == 1);
  CHECK(s.max_ready == 2);
  CHECK(pipe.ready(0) == 2);
}

TEST_CASE("the queue never holds more than prefetch_batches, with many random workers", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d = reference_data(8, 3);
  d.decode_time.distribution = "lognormal";
  d.decode_time.mean = 1e-3;
  d.decode_time.cv = 1.0;
  DataPipeline pipe(sim, net, d, reference_device(), 1, 2, kSequences, 9);
  pipe.start();
  Consumer gpu{sim, pipe, 0, Time::ms(2), 200, {}, {}};
  gpu.begin_at(Time::zero());
  sim.run();
  REQUIRE(gpu.delivered.size() == 200);
  CHECK(pipe.stats(0).max_ready == 3);
  CHECK(pipe.stats(1).max_ready == 3);
  CHECK(pipe.stats(1).batches_loaded == 3);  // GPU 1 never asked
  CHECK(pipe.stats(0).batches_loaded <= 200 + 3);
  CHECK(pipe.stats(0).worker_blocked > Time::zero());  // 8 workers outrun a 2.1 ms step
}

namespace {

// Per-GPU arrival and stall times of a small random world.
std::vector<std::int64_t> random_world(std::uint64_t seed) {
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d = reference_data(3, 2);
  d.decode_time.distribution = "lognormal";
  d.decode_time.mean = 1e-3;
  d.decode_time.cv = 0.8;
  DataPipeline pipe(sim, net, d, reference_device(), 2, 2, kSequences, seed);
  pipe.start();
  std::vector<std::unique_ptr<Consumer>> gpus;
  for (int g = 0; g < 4; ++g) {
    gpus.push_back(std::make_unique<Consumer>(Consumer{sim, pipe, g, Time::ms(1), 20, {}, {}}));
    gpus.back()->begin_at(Time::zero());
  }
  sim.run();
  std::vector<std::int64_t> out;
  for (const auto& c : gpus) {
    out.insert(out.end(), c->delivered.begin(), c->delivered.end());
    out.insert(out.end(), c->cumulative_stall.begin(), c->cumulative_stall.end());
  }
  return out;
}

}  // namespace

TEST_CASE("the same seed gives the same stalls, another seed other stalls", "[data]") {
  const auto a = random_world(1);
  const auto b = random_world(1);
  const auto c = random_world(2);
  REQUIRE(a.size() == 4 * 40);
  CHECK(a == b);
  CHECK(a != c);
  // 3 workers at ≈ 4.4 ms a batch against a 1.1 ms step: the GPUs do stall.
  CHECK(a[39] > 0);
}

TEST_CASE("a disabled pipeline answers at once, through an event, and measures nothing", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataSpec d;  // storage_bandwidth_per_node = 0: not modelled
  DataPipeline pipe(sim, net, d, reference_device(), 2, 8, kSequences, 1);
  CHECK_FALSE(pipe.enabled());
  CHECK(pipe.gpus() == 16);
  CHECK(net.link_count() == 0);
  pipe.start();
  int calls = 0;
  sim.schedule_at(Time::ms(3), [&] { pipe.request(15, [&] { ++calls; }); });
  sim.run_until(Time::ms(3) - Time::ns(1));
  pipe.request(0, [&] { ++calls; });
  CHECK(calls == 0);  // never synchronously
  sim.run();
  CHECK(calls == 2);
  CHECK(sim.now() == Time::ms(3));
  CHECK(pipe.stats(0).stall == Time::zero());
  CHECK(pipe.stats(15).stalls == 0);
  CHECK(pipe.ready(0) == 0);
}

TEST_CASE("without workers every batch is loaded on demand and stalls the GPU", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(0, 2), reference_device(), 1, 1, kSequences, 1);
  pipe.start();
  sim.run_until(Time::ms(10));
  CHECK(pipe.stats(0).batches_loaded == 0);  // nothing prefetched
  Consumer gpu{sim, pipe, 0, Time::ms(3), 3, {}, {}};
  gpu.begin_at(Time::ms(10));
  sim.run();
  // Each request waits for a full load, R + D = 4.4 ms, then H = 0.1 ms:
  // 10 → 14.5, +3 → 17.5 → 22.0, +3 → 25.0 → 29.5.
  CHECK(gpu.delivered == std::vector<std::int64_t>{14'500 * kUs, 22'000 * kUs, 29'500 * kUs});
  CHECK(pipe.stats(0).stall == Time::us(3 * 4'400));
  CHECK(pipe.stats(0).stalls == 3);
}

TEST_CASE("stalls and host-to-device copies are emitted as records", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  MemorySink sink;
  DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 2, kSequences, 1);
  pipe.set_sink(&sink);
  pipe.start();
  Consumer gpu{sim, pipe, 1, Time::zero(), 3, {}, {}};
  gpu.begin_at(Time::zero());
  sim.run_until(Time::ms(20));
  // Two GPUs share the link: each batch of GPU 1 is read at 5e9 B/s while GPU 0's worker
  // reads too (0.8 ms) until GPU 0's queue fills; stall records must add up to the stats.
  std::int64_t stall_ns = 0;
  int stalls = 0;
  int copies = 0;
  for (const auto& e : sink.events) {
    CHECK(e.rank == 1);
    CHECK(sink.resources[e.resource] == "data");
    if (e.kind == ironlaw::EventKind::stall) {
      CHECK(sink.names[e.name] == "data_stall");
      stall_ns += e.end_ns - e.start_ns;
      ++stalls;
    } else {
      CHECK(e.kind == ironlaw::EventKind::data);
      CHECK(sink.names[e.name] == "h2d");
      CHECK(e.end_ns - e.start_ns == 100 * kUs);
      CHECK(e.bytes == 4e6);
      ++copies;
    }
  }
  CHECK(copies == 3);
  CHECK(stalls == static_cast<int>(pipe.stats(1).stalls));
  CHECK(stall_ns == pipe.stats(1).stall.count_ns());
  CHECK(stall_ns == gpu.cumulative_stall.back());
  // First batch: read 0.8 ms (shared with GPU 0's worker) + 4 ms decode.
  CHECK(gpu.stall_of(0) == 4'800 * kUs);
}

TEST_CASE("several outstanding requests of one GPU are served in order, copies one at a time", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  DataPipeline pipe(sim, net, reference_data(1, 2), reference_device(), 1, 1, kSequences, 1);
  pipe.start();
  std::vector<std::pair<int, std::int64_t>> order;
  sim.schedule_at(Time::ms(10), [&] {
    for (int i = 0; i < 3; ++i) pipe.request(0, [&, i] { order.emplace_back(i, sim.now().count_ns()); });
  });
  sim.run_until(Time::ms(20));
  // b0, b1 ready (4.4, 8.8 ms): popped at 10 ms, copied 10.0–10.1 and 10.1–10.2 ms.
  // b2 is still loading at 10 ms (8.8 → 13.2 ms): it enters the emptied queue at 13.2 ms and
  // is copied until 13.3 ms. The third request stalled 10 → 13.2 ms.
  REQUIRE(order.size() == 3);
  CHECK(order[0] == std::pair<int, std::int64_t>{0, 10'100 * kUs});
  CHECK(order[1] == std::pair<int, std::int64_t>{1, 10'200 * kUs});
  CHECK(order[2] == std::pair<int, std::int64_t>{2, 13'300 * kUs});
  CHECK(pipe.stats(0).stall == Time::us(3'200));
  CHECK(pipe.stats(0).stalls == 1);
}

TEST_CASE("destroying a pipeline cancels its pending work", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  int calls = 0;
  {
    DataPipeline pipe(sim, net, reference_data(2, 2), reference_device(), 1, 2, kSequences, 1);
    pipe.start();
    pipe.request(0, [&] { ++calls; });
    sim.run_until(Time::us(200));  // reads in flight
    CHECK(net.active_flows() == 4);
  }
  CHECK(net.active_flows() == 0);
  sim.run();
  CHECK(calls == 0);
}

TEST_CASE("bad pipeline arguments are rejected", "[data]") {
  Simulator sim;
  FlowNetwork net(sim);
  const DeviceSpec dev = reference_device();
  CHECK_THROWS_AS(DataPipeline(sim, net, reference_data(1, 2), dev, 0, 8, kSequences, 1), std::invalid_argument);
  CHECK_THROWS_AS(DataPipeline(sim, net, reference_data(1, 2), dev, 1, 8, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(DataPipeline(sim, net, reference_data(-1, 2), dev, 1, 8, kSequences, 1), std::invalid_argument);
  CHECK_THROWS_AS(DataPipeline(sim, net, reference_data(1, 0), dev, 1, 8, kSequences, 1), std::invalid_argument);
  DataSpec bad = reference_data(1, 2);
  bad.decode_time.distribution = "weibull";
  CHECK_THROWS_AS(DataPipeline(sim, net, bad, dev, 1, 8, kSequences, 1), std::invalid_argument);
  DataPipeline pipe(sim, net, reference_data(1, 2), dev, 1, 8, kSequences, 1);
  CHECK_THROWS_AS(pipe.request(8, [] {}), std::out_of_range);
  CHECK_THROWS_AS(pipe.request(0, {}), std::invalid_argument);
  CHECK_THROWS_AS(pipe.stats(-1), std::out_of_range);
}
