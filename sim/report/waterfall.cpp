#include "report/waterfall.hpp"

#include <cmath>
#include <cstdio>

#include "report/metrics.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::report {

Waterfall build_waterfall(const config::Scenario& s, const run::SimulationResult& r,
                          const training::WholeRunResult* whole) {
  Waterfall w;
  w.peak_flops_per_gpu = r.peak_flops_per_gpu;
  w.steps = steps_for_tokens(s.training.tokens, r.tokens_per_step);
  w.tokens = w.steps * r.tokens_per_step;
  const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
  const double peak_hours = r.peak_flops_per_gpu * 3600.0;  // FLOPs one GPU-hour delivers at peak
  auto at_peak = [&](double flops) { return peak_hours > 0 ? flops / peak_hours : 0; };
  auto add = [&](const char* section, const std::string& name, double hours) {
    w.bars.push_back({section, name, hours});
    w.simulated_hours += hours;
  };
  const double d = w.tokens;
  w.six_n_flops = fpt.six_n * d;
  w.model_flops = fpt.palm * d;
  add("flops", "6ND at peak (N = all parameters)", at_peak(fpt.six_n * d));
  if (fpt.six_n_active != fpt.six_n) add("flops", "MoE: only activated parameters compute", at_peak((fpt.six_n_active - fpt.six_n) * d));
  add("flops", "parameters outside matmuls (lookups, norms)", at_peak((fpt.palm - fpt.attention_palm - fpt.six_n_active) * d));
  add("flops", "attention FLOPs (12*L*H*Q*T)", at_peak(fpt.attention_palm * d));
  w.model_flops_hours = w.simulated_hours;

  const double per_step_to_hours = w.steps * r.gpus / 3600.0;  // seconds per step (per GPU) → GPU-hours
  const double recompute = at_peak((r.hardware_flops_per_step - r.model_flops_per_step) * w.steps);
  add("step", "recomputation FLOPs at peak", recompute);
  add("step", "kernel efficiency (compute below peak)", r.compute_s * per_step_to_hours - w.simulated_hours);
  add("step", "exposed communication", r.exposed_comm_s * per_step_to_hours);
  add("step", "pipeline bubble", r.bubble_s * per_step_to_hours);
  add("step", "data stalls", r.data_stall_s * per_step_to_hours);
  add("step", "stragglers and other waits", r.other_s * per_step_to_hours);
  w.step_hours = w.simulated_hours;

  if (whole) {
    w.whole_run = true;
    const double job_gpus = static_cast<double>(s.nodes) * s.topology.node.gpus;
    const double spare_gpus = static_cast<double>(s.reliability.hot_spares) * s.topology.node.gpus;
    const double to_hours = job_gpus / 3600.0;
    add("run", "kept steps vs this step (batch ramp, variability, async writes)",
        whole->productive_gpu_hours - w.step_hours);
    add("run", "checkpoint pauses", whole->checkpoint_pause_s * to_hours);
    add("run", "lost work (since the last checkpoint)", whole->lost_work_s * to_hours);
    add("run", "down: detection, restart, checkpoint load", whole->down_s * to_hours);
    if (whole->evaluation_s > 0) add("run", "evaluation pauses", whole->evaluation_s * to_hours);
    if (whole->elastic_shrinks > 0) add("run", "GPUs idle while shrunk (elastic)", whole->shrunk_idle_gpu_hours);
    if (spare_gpus > 0) add("run", "hot spares held", whole->wall_s * spare_gpus / 3600.0);
  }
  w.simulated_mfu = implied_utilisation(w.model_flops, r.peak_flops_per_gpu, w.simulated_hours);
  w.simulated_mfu_6n = implied_utilisation(w.six_n_flops, r.peak_flops_per_gpu, w.simulated_hours);
  return w;
}

namespace {

std::string row(const std::string& label, double hours, double total) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-64s %14.0f  %+7.1f %%\n", label.c_str(), hours,
                total > 0 ? 100.0 * hours / total : 0.0);
  return buf;
}

std::string subtotal(const std::string& label, double hours) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-64s %14.0f\n", label.c_str(), hours);
  return buf;
}

std::string pct_line(const std::string& label, double v) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-64s %13.1f %%\n", label.c_str(), 100.0 * v);
  return buf;
}

}  // namespace

std::string format_waterfall(const Waterfall& w, double published) {
  std::string out;
  char head[256];
  std::snprintf(head, sizeof head, "GPU-hours waterfall (%.4g tokens = %.0f steps; %% of the simulated total):\n",
                w.tokens, w.steps);
  out += head;
  const double total = w.simulated_hours;
  std::string section;
  for (const auto& b : w.bars) {
    if (b.section != section) {
      if (section == "flops") out += subtotal("= model FLOPs at peak (PaLM count)", w.model_flops_hours);
      if (section == "step") out += subtotal("= simulated steps (steps x step time x GPUs)", w.step_hours);
      section = b.section;
    }
    // A bar that rounds to no whole GPU-hour (a floating-point residue, such as kept steps that
    // equal this step) prints as +0, never as "- ... -0".
    const double hours = std::round(b.gpu_hours) == 0.0 ? 0.0 : b.gpu_hours;
    out += row((hours >= 0 ? "+ " : "- ") + b.name, hours, total);
  }
  if (section == "step") out += subtotal("= simulated steps (steps x step time x GPUs)", w.step_hours);
  if (w.whole_run) {
    out += subtotal("= simulated whole run (allocated GPU-hours)", total);
  } else {
    out += "  (whole run not simulated: run.mode is steps; no failures, checkpoints or restarts)\n";
  }
  out += "\n";
  out += subtotal("simulated GPU-hours", total);
  out += subtotal("published GPU-hours", published);
  out += row(published >= total ? "unexplained (published - simulated)" : "unexplained (simulated - published)",
             std::fabs(published - total), total);
  out += "\n";
  out += pct_line("MFU of the simulated hours (PaLM count)", w.simulated_mfu);
  out += pct_line("MFU of the published hours (PaLM count)",
                  implied_utilisation(w.model_flops, w.peak_flops_per_gpu, published));
  out += pct_line("MFU of the simulated hours (6N, N = all parameters)", w.simulated_mfu_6n);
  out += pct_line("MFU of the published hours (6N, N = all parameters)",
                  implied_utilisation(w.six_n_flops, w.peak_flops_per_gpu, published));
  return out;
}

}  // namespace ironlaw::report
