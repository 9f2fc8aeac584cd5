#include "run/cpu_budget.hpp"

#include "engine/simulator.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>

namespace ironlaw::run {

namespace {

std::atomic<double> g_limit_s{kDefaultStepCpuLimitS};
thread_local SimulationCpuBudget* t_budget = nullptr;

double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The simulation begun last (last_simulation): a fixed buffer, so that reading it from the
// command's watchdog thread never allocates and never sees a string being destroyed.
std::mutex g_last_mutex;
char g_last[512] = "";

void note_simulation(const std::string& what, const std::string& driver) {
  std::string text = what;
  if (!driver.empty()) text += " (its size is mostly " + driver + ")";
  const std::lock_guard<std::mutex> lock(g_last_mutex);
  const std::size_t n = std::min(text.size(), sizeof g_last - 1);
  std::memcpy(g_last, text.data(), n);
  g_last[n] = '\0';
}

}  // namespace

void last_simulation(char* out, std::size_t size) {
  if (size == 0) return;
  const std::lock_guard<std::mutex> lock(g_last_mutex);
  const std::size_t n = std::min(std::strlen(g_last), size - 1);
  std::memcpy(out, g_last, n);
  out[n] = '\0';
}

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
  note_simulation(what_, driver_);
}

SimulationCpuBudget::~SimulationCpuBudget() { t_budget = previous_; }

void SimulationCpuBudget::check(Time reached) const {
  if (!(limit_s_ < std::numeric_limits<double>::infinity())) return;
  const double used = thread_cpu_s() - start_cpu_s_;
  const double at = reached.seconds();
  char text[800];
  if (used > limit_s_) {
    std::snprintf(text, sizeof text,
                  "%s: the step simulation did not finish within %.0f s of CPU: stopped at %.3g s of simulated time%s%s; "
                  "raise --step-cpu-limit to wait longer",
                  what_.c_str(), used, at, driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
    throw CpuLimitReached(text);
  }
  if (lower_bound_s_ <= 0) return;
  if (!(at > 0)) {
    // Every event so far at time 0 (a collective's launch over every rank, flows that all start
    // at one instant): the pace is no simulated time per CPU second, which projects without end.
    // Measured from the first event, so that building a large task graph is not taken for it.
    if (first_event_cpu_s_ < 0 || used - first_event_cpu_s_ < kProjectAfterCpuS) return;
    std::snprintf(text, sizeof text,
                  "%s: the step simulation spent %.1f CPU s of events without simulated time passing (it must reach "
                  "at least %.3g s), so it cannot finish within the limit of %.0f s%s%s; reduce it, or raise "
                  "--step-cpu-limit",
                  what_.c_str(), used - first_event_cpu_s_, lower_bound_s_, limit_s_,
                  driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
    throw CpuLimitReached(text);
  }
  if (span_end_s_ > at && at > span_at_s_ && used - span_cpu_s_ >= kProjectAfterCpuS) {
    // A span the simulation must run through (a collective's floor), at its own pace.
    const double projected = projected_step_cpu_s(used, span_cpu_s_, span_at_s_, at, span_end_s_);
    if (projected > limit_s_) {
      std::snprintf(text, sizeof text,
                    "%s: the step simulation would need about %.3g s of CPU, above the limit of %.0f s: a collective "
                    "that started at %.3g s of simulated time lasts until at least %.3g s, and its events took %.1f CPU "
                    "s to reach %.3g s%s%s; reduce it, or raise --step-cpu-limit",
                    what_.c_str(), projected, limit_s_, span_at_s_, span_end_s_, used - span_cpu_s_, at,
                    driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
      throw CpuLimitReached(text);
    }
  }
  if (ref_cpu_s_ < 0) {
    ref_cpu_s_ = used;
    ref_at_s_ = at;
    return;
  }
  if (used - ref_cpu_s_ < kProjectAfterCpuS) return;
  const double projected = projected_step_cpu_s(used, ref_cpu_s_, ref_at_s_, at, lower_bound_s_);
  if (projected > limit_s_) {
    std::snprintf(text, sizeof text,
                  "%s: the step simulation would need about %.3g s of CPU, above the limit of %.0f s: %.1f CPU s "
                  "(%.1f of them before %.3g s of simulated time) brought it to %.3g s of the at least %.3g s it must "
                  "reach%s%s; reduce it, or raise --step-cpu-limit",
                  what_.c_str(), projected, limit_s_, used, ref_cpu_s_, ref_at_s_, at, lower_bound_s_,
                  driver_.empty() ? "" : "; its size is mostly ", driver_.c_str());
    throw CpuLimitReached(text);
  }
}

double projected_step_cpu_s(double used, double ref_cpu, double ref_at, double at, double must_reach) {
  if (!(at > ref_at)) return std::numeric_limits<double>::quiet_NaN();
  if (at >= must_reach) return used;
  return used + (must_reach - at) * (used - ref_cpu) / (at - ref_at);
}

void poll_cpu_budget(Time reached) {
  SimulationCpuBudget* b = t_budget;
  if (b == nullptr || (++b->polls_ & 63u) != 0) return;
  b->check(reached);
}

void check_cpu_budget(Time reached) {
  if (t_budget != nullptr) t_budget->check(reached);
}

bool cpu_budget_wants_floor() {
  const SimulationCpuBudget* b = t_budget;
  return b != nullptr && b->lower_bound_s_ > 0 && b->limit_s_ < std::numeric_limits<double>::infinity();
}

void raise_cpu_budget_floor(Time now, Time must_reach) {
  SimulationCpuBudget* b = t_budget;
  if (b == nullptr || b->lower_bound_s_ <= 0) return;  // no projection for it: nothing to sharpen
  const double start = now.seconds(), end = must_reach.seconds();
  if (!std::isfinite(end) || !(end > start)) return;
  if (end > b->lower_bound_s_) b->lower_bound_s_ = end;
  if (b->span_end_s_ <= start) {  // no span open (or it has been run through): open one here
    b->span_cpu_s_ = thread_cpu_s() - b->start_cpu_s_;
    b->span_at_s_ = start;
    b->span_end_s_ = end;
  } else if (end > b->span_end_s_) {
    b->span_end_s_ = end;
  }
}

CpuWatchdog::~CpuWatchdog() { pause(); }

void CpuWatchdog::resume() {
  if (armed_ || t_budget == nullptr) return;
  if (!(t_budget->limit_s_ < std::numeric_limits<double>::infinity())) return;  // no limit: no checks
  armed_ = true;
  since_ = 0;
  every_ = 1;  // grows while events are cheap, so even the first stretch is bounded
  last_cpu_s_ = thread_cpu_s();
  sim_.set_tick(1, [this] { on_event(); });
}

void CpuWatchdog::on_event() {
  if (++since_ < every_) return;
  since_ = 0;
  const double now = thread_cpu_s();
  // resume() starts every_ at 1, so the first event of a step always reaches this read.
  if (t_budget != nullptr && t_budget->first_event_cpu_s_ < 0) t_budget->first_event_cpu_s_ = now - t_budget->start_cpu_s_;
  const double stretch = now - last_cpu_s_;
  last_cpu_s_ = now;
  if (stretch > kWatchdogStretchCpuS) {
    // Down in proportion to the overrun, so the next stretch costs about kWatchdogStretchCpuS.
    const double scaled = static_cast<double>(every_) * kWatchdogStretchCpuS / stretch;
    every_ = scaled >= 1 ? static_cast<std::uint64_t>(scaled) : 1;
  } else if (stretch < 0.1 * kWatchdogStretchCpuS && every_ < kWatchdogEvents) {
    every_ *= 2;
  }
  check_cpu_budget(sim_.now());
}

void CpuWatchdog::pause() {
  if (!armed_) return;
  armed_ = false;
  sim_.set_tick(0, nullptr);
}

}  // namespace ironlaw::run
