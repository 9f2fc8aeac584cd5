#include "run/cpu_budget.hpp"

#include "engine/simulator.hpp"
#include "run/link_series.hpp"

#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ironlaw::run {

namespace {

std::atomic<double> g_limit_s{kDefaultStepCpuLimitS};
thread_local SimulationCpuBudget* t_budget = nullptr;

double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

void set_step_cpu_limit(double seconds) { g_limit_s.store(seconds); }
double step_cpu_limit() { return g_limit_s.load(); }

SimulationCpuBudget::SimulationCpuBudget(std::string what, double lower_bound_s, std::string driver)
    : what_(std::move(what)),
      lower_bound_s_(std::isfinite(lower_bound_s) && lower_bound_s > 0 ? lower_bound_s : 0),
      driver_(std::move(driver)),
      limit_s_(g_limit_s.load()),
      start_cpu_s_(thread_cpu_s()),
      previous_(t_budget) {
  t_budget = this;
}

SimulationCpuBudget::~SimulationCpuBudget() { t_budget = previous_; }

void SimulationCpuBudget::check(Time reached) const {
  if (!(limit_s_ < std::numeric_limits<double>::infinity())) return;
  const double used = thread_cpu_s() - start_cpu_s_;
  const double at = reached.seconds();
  char text[600];
  if (used > limit_s_) {
    std::snprintf(text, sizeof text,
                  "%s: the step simulation did not finish within %.0f s of CPU: stopped at %.3g s of simulated time%s%s; "
                  "raise --step-cpu-limit to wait longer",
                  what_.c_str(), used, at, driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
    throw CpuLimitReached(text);
  }
  if (used < kProjectAfterCpuS || lower_bound_s_ <= 0 || !(at > 0)) return;
  const double projected = used * lower_bound_s_ / at;
  if (projected > limit_s_) {
    std::snprintf(text, sizeof text,
                  "%s: the step simulation would need about %.3g s of CPU, above the limit of %.0f s: %.1f CPU s "
                  "brought it to %.3g s of the at least %.3g s of simulated time it must reach%s%s; reduce it, or raise "
                  "--step-cpu-limit",
                  what_.c_str(), projected, limit_s_, used, at, lower_bound_s_,
                  driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
    throw CpuLimitReached(text);
  }
}

void poll_cpu_budget(Time reached) {
  SimulationCpuBudget* b = t_budget;
  if (b == nullptr || (++b->polls_ & 63u) != 0) return;
  b->check(reached);
}

void check_cpu_budget(Time reached) {
  if (t_budget != nullptr) t_budget->check(reached);
}

CpuWatchdog::CpuWatchdog(engine::Simulator& sim, const LinkSeriesRecorder* sampler)
    : sim_(sim), sampler_(sampler), pending_(engine::kNoEvent) {}

CpuWatchdog::~CpuWatchdog() { pause(); }

void CpuWatchdog::resume() {
  if (t_budget == nullptr || pending_ != engine::kNoEvent) return;
  if (!(t_budget->limit_s_ < std::numeric_limits<double>::infinity())) return;  // no limit: no checks
  last_cpu_s_ = thread_cpu_s();
  schedule_next();
}

void CpuWatchdog::pause() {
  if (pending_ == engine::kNoEvent) return;
  sim_.cancel(pending_);
  pending_ = engine::kNoEvent;
}

void CpuWatchdog::schedule_next() {
  constexpr std::int64_t kMaxIntervalNs = std::int64_t{1} << 60;  // doubling stays far from overflow
  const Time at = sim_.now();
  if (at > Time::max() - Time::ns(interval_ns_)) return;  // never near the clock's end
  pending_ = sim_.schedule_at(at + Time::ns(interval_ns_), [this] {
    pending_ = engine::kNoEvent;
    ++events_;
    const double cpu = thread_cpu_s();
    const double spent = cpu - last_cpu_s_;
    last_cpu_s_ = cpu;
    if (spent < 0.002 && interval_ns_ < kMaxIntervalNs) interval_ns_ *= 2;
    if (spent > 0.020 && interval_ns_ > 1) interval_ns_ /= 2;
    check_cpu_budget(sim_.now());
    // Only the link sampler besides: the step has run dry; let the simulation stop.
    const std::size_t others = sim_.pending() - (sampler_ != nullptr && sampler_->scheduled() ? 1 : 0);
    if (others > 0) schedule_next();
  });
}

}  // namespace ironlaw::run
