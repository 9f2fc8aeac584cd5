#pragma once
/// \file The SMs of one GPU shared between compute kernels and collective kernels.
#include <functional>

#include "core/time.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::run::detail {

/// The streaming multiprocessors of one GPU as compute sees them. Kernels of the compute
/// stream run one at a time; while collective kernels are resident on the GPU (NCCL runs one
/// thread block, on one SM, per channel) compute gets the remaining SMs and slows in
/// proportion — the sharing DESIGN.md asks for, from the SM and channel counts of the
/// topology, not from an overlap factor. A running kernel is re-timed whenever that changes.
class GpuSms {
 public:
  /// `shared_rate`: the speed of compute while communication runs, (sm − channels) / sm.
  GpuSms(engine::Simulator& sim, double shared_rate) : sim_(sim), shared_rate_(shared_rate) {}

  /// Runs a kernel of `work` at full speed; `done` when it finished at the speeds it got.
  void start(Time work, std::function<void()> done) {
    remaining_ns_ = static_cast<double>(work.count_ns());
    done_ = std::move(done);
    busy_ = true;
    schedule();
  }
  void comm_begin() { change(+1); }
  void comm_end() { change(-1); }

 private:
  double rate() const { return comm_ > 0 ? shared_rate_ : 1.0; }

  void change(int delta) {
    if (busy_) {  // bank the work done at the old speed
      remaining_ns_ -= static_cast<double>((sim_.now() - since_).count_ns()) * rate();
      if (remaining_ns_ < 0) remaining_ns_ = 0;
      sim_.cancel(event_);
    }
    comm_ += delta;
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
  double shared_rate_;
  int comm_ = 0;
  bool busy_ = false;
  double remaining_ns_ = 0;
  Time since_;
  engine::EventId event_ = 0;
  std::function<void()> done_;
};

}  // namespace ironlaw::run::detail
