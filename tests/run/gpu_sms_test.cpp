// The SMs and HBM of one GPU shared between a compute task and collective kernels
// (run/gpu_sms.hpp): compute-bound work slows with the SMs NCCL takes, memory-bound work with
// the HBM bandwidth its kernels move, host waits not at all. Times are hand computed.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "config/spec.hpp"
#include "engine/simulator.hpp"
#include "run/gpu_sms.hpp"

using namespace ironlaw;
using run::detail::GpuSms;

namespace {

constexpr double kBandwidth = 1000.0;  // B/s: the shares below are fractions of it
constexpr double kNs = 2e-3;           // µs: event times are whole ns, rounded up

constexpr int kSms = 100;              // the GPU's SMs: a collective of k SMs leaves (100 − k) / 100

/// Runs one task of `work` µs (`memory` and `host` µs of it) with collectives of the given HBM
/// rates resident from `comm_from` to `comm_to` µs, the SMs they take together leaving
/// `sm_share` of the GPU's (split evenly over them); returns when the task ended [µs].
double finish_us(double sm_share, double work, double memory, double host, std::vector<double> rates,
                 double comm_from = 0, double comm_to = 1e9) {
  engine::Simulator sim;
  GpuSms gpu(sim, kSms, kBandwidth);
  double end = -1;
  const int taken = static_cast<int>(std::lround((1.0 - sm_share) * kSms));
  const auto sms_of = [&](std::size_t i) {
    const int n = static_cast<int>(rates.size());
    return taken / n + (static_cast<int>(i) < taken % n ? 1 : 0);
  };
  sim.schedule_in(Time::from_seconds(comm_from * 1e-6), [&] {
    for (std::size_t i = 0; i < rates.size(); ++i) gpu.comm_begin(rates[i], sms_of(i));
  });
  sim.schedule_in(Time::from_seconds(comm_to * 1e-6), [&] {
    for (std::size_t i = 0; i < rates.size(); ++i) gpu.comm_end(rates[i], sms_of(i));
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

TEST_CASE("the SMs of resident collectives add up, each its communicator's channel count", "[run][sms]") {
  // An H100's 132 SMs: a collective across nodes with NCCL's 16 channels leaves 116, one within
  // the node with 24 leaves 108, both at once 92. Compute-only work of 132 µs takes 132 · 132 / n.
  engine::Simulator sim;
  GpuSms gpu(sim, 132, 0.0);
  CHECK(gpu.sm_share() == 1.0);
  gpu.comm_begin(0.0, 16);
  CHECK(gpu.sm_share() == Approx(116.0 / 132));
  gpu.comm_begin(0.0, 24);
  CHECK(gpu.sm_share() == Approx(92.0 / 132));
  gpu.comm_end(0.0, 16);
  CHECK(gpu.sm_share() == Approx(108.0 / 132));
  gpu.comm_end(0.0, 24);
  CHECK(gpu.sm_share() == 1.0);
}

TEST_CASE("a topology's collectives take their communicator's SMs", "[run][sms][config]") {
  // config::CommSpec::sms_of: kernel_sms across nodes, node_kernel_sms within one; each falls
  // back (node_kernel_sms to kernel_sms, kernel_sms to channels, channels to the node's NICs).
  config::CommSpec c;
  CHECK(c.sms_of(true, 8) == 8);
  c.channels = 4;
  CHECK(c.sms_of(false, 8) == 4);
  c.kernel_sms = 16;
  CHECK(c.sms_of(true, 8) == 16);
  CHECK(c.sms_of(false, 8) == 16);
  c.node_kernel_sms = 24;
  CHECK(c.sms_of(true, 8) == 16);
  CHECK(c.sms_of(false, 8) == 24);
}
