#pragma once
/// \file The SMs and the HBM of one GPU shared between compute kernels and collective kernels.
#include <algorithm>
#include <functional>

#include "core/time.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::run::detail {

/// One GPU as its compute stream sees it. Kernels of the compute stream run one task at a
/// time. While collective kernels are resident (NCCL runs one thread block, on one SM, per
/// channel) they take two things from compute, each from the topology and the collective, not
/// from an overlap factor:
/// - SMs: compute-bound execution gets the remaining SMs and slows in proportion,
///   `sm_share` = (sm − Σ resident collectives' SMs) / sm, each collective taking its
///   communicator's channel count (config::CommSpec::sms_of: within a node or across nodes);
/// - HBM bandwidth: the collectives' kernels read and write this GPU's memory at `hbm_rate`
///   B/s (comm::hbm_bytes_per_rank over the collective's time). Memory-bound execution gets
///   what is left of the HBM bandwidth, max-min fair: BW − Σ rate, but never less than an equal
///   share BW / (collectives + 1), and also no more than its SMs can issue (Little's law: the
///   bytes in flight scale with the SMs issuing them), so it runs at min(sm_share, hbm_share).
/// Point-to-point sends (pipeline activations) take SMs but are given no HBM rate (their
/// staging traffic is not counted), and copy-engine copies take neither. The gaps in which the
/// GPU waits for the host thread do not slow. A task's work is given as
/// its time alone on the GPU, split into those three parts; its speed beside communication is
/// work / (compute / sm_share + memory / min(sm_share, hbm_share) + host), applied evenly over
/// the task (the parts interleave op by op). A running task is re-timed whenever that changes.
class GpuSms {
 public:
  /// `sm_count`: the GPU's SMs (≤ 0: SMs are not shared);
  /// `hbm_bandwidth`: the GPU's achievable HBM bandwidth [B/s] (≤ 0: HBM is not shared).
  GpuSms(engine::Simulator& sim, int sm_count, double hbm_bandwidth)
      : sim_(sim), sm_count_(sm_count), hbm_bandwidth_(hbm_bandwidth) {}

  /// Runs a task of `work` at full speed, of which `memory` is memory-bound execution and
  /// `host` waits for the host; `done` when it finished at the speeds it got.
  void start(Time work, Time memory, Time host, std::function<void()> done) {
    remaining_ns_ = static_cast<double>(work.count_ns());
    const double w = remaining_ns_ > 0 ? remaining_ns_ : 1.0;
    memory_fraction_ = std::clamp(static_cast<double>(memory.count_ns()) / w, 0.0, 1.0);
    host_fraction_ = std::clamp(static_cast<double>(host.count_ns()) / w, 0.0, 1.0 - memory_fraction_);
    done_ = std::move(done);
    busy_ = true;
    schedule();
  }
  /// A collective whose kernels occupy `sms` SMs and move `hbm_rate` B/s of this GPU's memory
  /// starts / ends.
  void comm_begin(double hbm_rate, int sms) { change(+1, hbm_rate, sms); }
  void comm_end(double hbm_rate, int sms) { change(-1, -hbm_rate, -sms); }

  /// The speed of compute-bound kernels now: the SMs the resident collectives leave (at least
  /// one: the block scheduler still interleaves them).
  double sm_share() const {
    if (comm_ == 0 || sm_count_ <= 0) return 1.0;
    return static_cast<double>(std::max(1, sm_count_ - sms_taken_)) / sm_count_;
  }
  /// The speed of the current task (1 alone), for tests.
  double rate() const {
    if (comm_ == 0) return 1.0;
    const double share = sm_share();
    const double compute = 1.0 - memory_fraction_ - host_fraction_;
    const double memory_speed = std::min(share, hbm_share());
    return 1.0 / (compute / share + memory_fraction_ / memory_speed + host_fraction_);
  }
  /// The share of the HBM bandwidth memory-bound compute gets now (1 alone).
  double hbm_share() const {
    if (comm_ == 0 || !(hbm_bandwidth_ > 0)) return 1.0;
    const double left = 1.0 - hbm_rate_ / hbm_bandwidth_;
    return std::max(left, 1.0 / (comm_ + 1));
  }

 private:
  void change(int delta, double rate_delta, int sms_delta) {
    if (busy_) {  // bank the work done at the old speed
      remaining_ns_ -= static_cast<double>((sim_.now() - since_).count_ns()) * rate();
      if (remaining_ns_ < 0) remaining_ns_ = 0;
      sim_.cancel(event_);
    }
    comm_ += delta;
    hbm_rate_ = comm_ == 0 ? 0.0 : std::max(0.0, hbm_rate_ + rate_delta);  // no drift once idle
    sms_taken_ = comm_ == 0 ? 0 : std::max(0, sms_taken_ + sms_delta);
    if (busy_) schedule();
  }

  void schedule() {
    since_ = sim_.now();
    const Time left = Time::from_seconds(remaining_ns_ / rate() * 1e-9);
    event_ = sim_.schedule_in(left, [this] {
      busy_ = false;
      auto done = std::move(done_);
      done();
    });
  }

  engine::Simulator& sim_;
  int sm_count_;
  double hbm_bandwidth_;
  int comm_ = 0;
  int sms_taken_ = 0;  // SMs the resident collectives' kernels occupy
  double hbm_rate_ = 0;  // B/s the resident collectives move through this GPU's HBM
  bool busy_ = false;
  double remaining_ns_ = 0;
  double memory_fraction_ = 0;
  double host_fraction_ = 0;
  Time since_;
  engine::EventId event_ = 0;
  std::function<void()> done_;
};

}  // namespace ironlaw::run::detail
