// The SMs and HBM of one GPU shared between a compute task and collective kernels
// (run/gpu_sms.hpp): compute-bound work slows with the SMs NCCL takes, memory-bound work with
// the HBM bandwidth its kernels move, host waits not at all. Times are hand computed.
#include <catch2/catch.hpp>

#include "engine/simulator.hpp"
#include "run/gpu_sms.hpp"

using namespace ironlaw;
using run::detail::GpuSms;

namespace {

constexpr double kBandwidth = 1000.0;  // B/s: the shares below are fractions of it
constexpr double kNs = 2e-3;           // µs: event times are whole ns, rounded up

/// Runs one task of `work` µs (`memory` and `host` µs of it) with collectives of the given HBM
/// rates resident from `comm_from` to `comm_to` µs; returns when the task ended [µs].
double finish_us(double sm_share, double work, double memory, double host, std::vector<double> rates,
                 double comm_from = 0, double comm_to = 1e9) {
  engine::Simulator sim;
  GpuSms gpu(sim, sm_share, kBandwidth);
  double end = -1;
  sim.schedule_in(Time::from_seconds(comm_from * 1e-6), [&] {
    for (double r : rates) gpu.comm_begin(r);
  });
  sim.schedule_in(Time::from_seconds(comm_to * 1e-6), [&] {
    for (double r : rates) gpu.comm_end(r);
  });
  gpu.start(Time::from_seconds(work * 1e-6), Time::from_seconds(memory * 1e-6), Time::from_seconds(host * 1e-6),
            [&] { end = sim.now().seconds() * 1e6; });
  sim.run();
  return end;
}

}  // namespace

TEST_CASE("compute-bound work slows with the SMs the collectives take", "[run][sms]") {
  CHECK(finish_us(0.75, 100, 0, 0, {}) == Approx(100).margin(kNs));         // alone: its own time
  CHECK(finish_us(0.75, 100, 0, 0, {400}) == Approx(100 / 0.75).margin(kNs));  // HBM traffic is no matter
  // A collective from 40 to 100 µs at half the SMs: 40 done, 30 more by 100, 30 left → 130.
  CHECK(finish_us(0.5, 100, 0, 0, {400}, 40, 100) == Approx(130).margin(kNs));
}

TEST_CASE("memory-bound work gets the HBM bandwidth the collectives leave", "[run][sms][hbm]") {
  // 400 B/s of 1,000 taken: 0.6 of the bandwidth left, fewer than the 0.9 of the SMs.
  CHECK(finish_us(0.9, 100, 100, 0, {400}) == Approx(100 / 0.6).margin(kNs));
  // 700 B/s taken: an equal share (1/2) is the least a saturating kernel keeps (max-min).
  CHECK(finish_us(0.9, 100, 100, 0, {700}) == Approx(200).margin(kNs));
  // Two collectives of 200 B/s each: 0.6 left (their equal shares, 1/3, would be less).
  CHECK(finish_us(0.9, 100, 100, 0, {200, 200}) == Approx(100 / 0.6).margin(kNs));
  // Little traffic: the kernel is held by the SMs it keeps (0.8), not by the bandwidth (0.95).
  CHECK(finish_us(0.8, 100, 100, 0, {50}) == Approx(125).margin(kNs));
}

TEST_CASE("a task of mixed parts slows part by part, and host waits not at all", "[run][sms][hbm]") {
  CHECK(finish_us(0.5, 100, 0, 100, {900}) == Approx(100).margin(kNs));  // waiting for the host
  // 50 compute at 0.8, 30 memory-bound at min(0.8, 0.5), 20 host: 62.5 + 60 + 20.
  CHECK(finish_us(0.8, 100, 30, 20, {500}) == Approx(142.5).margin(kNs));
  // Once the collective ends the task goes on at full speed: 50 µs at 1/1.425 of it, then the rest.
  const double done_by_50 = 50 / 1.425;
  CHECK(finish_us(0.8, 100, 30, 20, {500}, 0, 50) == Approx(50 + (100 - done_by_50)).margin(kNs));
}
