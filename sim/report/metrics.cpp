#include "report/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "config/failures.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::report {

double utilisation(double flops_per_step, double step_time_s, double peak_flops_per_gpu, int gpus) {
  if (step_time_s <= 0 || peak_flops_per_gpu <= 0 || gpus <= 0) return 0;
  return flops_per_step / (peak_flops_per_gpu * gpus * step_time_s);
}

double steps_for_tokens(double tokens, double tokens_per_step) {
  return tokens_per_step > 0 ? std::ceil(tokens / tokens_per_step) : 0;
}

double wall_seconds(double steps, double step_time_s) { return steps * step_time_s; }

double gpu_hours(double steps, double step_time_s, int gpus) { return wall_seconds(steps, step_time_s) / 3600.0 * gpus; }

double implied_utilisation(double total_flops, double peak_flops_per_gpu, double gpu_hours) {
  if (peak_flops_per_gpu <= 0 || gpu_hours <= 0) return 0;
  return total_flops / (peak_flops_per_gpu * gpu_hours * 3600.0);
}

namespace {

/// What a 6ND calculator would claim at 100 % of peak, for one step.
struct Baselines {
  double six_n_s = 0;          ///< 6·N·tokens / (GPUs × peak), N as mfu_6nd counts it (metrics.hpp)
  double six_n_attention_s = 0;///< (6·N + attention) · tokens / (GPUs × peak), PaLM attention term
};

Baselines baselines(const config::Scenario& s, const run::SimulationResult& r) {
  Baselines b;
  const double denom = r.peak_flops_per_gpu * r.gpus;
  if (denom <= 0) return b;
  if (s.model.layer_list) {  // no attention term: both baselines are the model's own FLOPs
    b.six_n_s = r.model_flops_6n_per_step / denom;
    b.six_n_attention_s = r.model_flops_per_step / denom;
    return b;
  }
  const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
  b.six_n_s = r.model_flops_6n_per_step / denom;
  b.six_n_attention_s = (fpt.six_n_active + fpt.attention_palm) * r.tokens_per_step / denom;
  return b;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string bytes_gib(double b) { return fmt("%.2f GiB", b / (1024.0 * 1024.0 * 1024.0)); }

std::string seconds(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.2f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}

/// The whole run's measured metrics (training/whole_run.hpp defines each).
void append_whole_run(std::vector<Metric>& m, const config::Scenario& s, const run::SimulationResult& r,
                      const training::WholeRunResult* whole) {
  training::WholeRunResult simulated;
  if (!whole) {
    simulated = training::simulate_whole_run(s, &r);
    whole = &simulated;
  }
  const auto& w = *whole;
  m.push_back({"steps", static_cast<double>(w.steps), "1"});
  m.push_back({"wall_days", w.wall_s / 86400.0, "d"});
  m.push_back({"gpu_hours", w.allocated_gpu_hours, "h"});
  m.push_back({"productive_gpu_hours", w.productive_gpu_hours, "h"});
  m.push_back({"interruptions", static_cast<double>(w.interruptions), "1"});
  // Every cause, so rows of a sweep have the same fields whatever failed in each.
  for (const auto& cause : config::kFailureCauses) {
    auto it = w.interruptions_by_cause.find(cause);
    const int n = it == w.interruptions_by_cause.end() ? 0 : it->second;
    m.push_back({"interruptions_" + cause, static_cast<double>(n), "1"});
  }
  m.push_back({"lost_work_s", w.lost_work_s, "s"});
  m.push_back({"checkpoint_pause_s", w.checkpoint_pause_s, "s"});
  m.push_back({"down_s", w.down_s, "s"});
  m.push_back({"evaluation_s", w.evaluation_s, "s"});
  m.push_back({"elastic_shrinks", static_cast<double>(w.elastic_shrinks), "1"});
  m.push_back({"shrunk_idle_gpu_hours", w.shrunk_idle_gpu_hours, "h"});
  m.push_back({"ettr", w.ettr, "1"});
  m.push_back({"goodput", w.goodput, "1"});
  m.push_back({"mfu_productive", w.mfu_productive, "1"});
  m.push_back({"mfu_allocated", w.mfu_allocated, "1"});
  m.push_back({"checkpoint_interval_s", w.checkpoint_interval_s, "s"});
  m.push_back({"young_daly_interval_s", w.young_daly_interval_s, "s"});
}

}  // namespace

double model_tflops_per_gpu(const run::SimulationResult& r) {
  const double t = r.step_time_s;
  return (t > 0 && r.gpus > 0) ? r.model_flops_per_step / t / r.gpus / 1e12 : 0;
}

std::vector<Metric> summary_metrics(const config::Scenario& s, const run::SimulationResult& r,
                                    const training::WholeRunResult* whole) {
  std::vector<Metric> m;
  const double t = r.step_time_s;
  const double tokens_per_s = t > 0 ? r.tokens_per_step / t : 0;
  m.push_back({"step_time_s", t, "s"});
  m.push_back({"tokens_per_s_per_gpu", r.gpus > 0 ? tokens_per_s / r.gpus : 0, "tokens/s"});
  m.push_back({"model_tflops_per_gpu", model_tflops_per_gpu(r), "TFLOP/s"});
  m.push_back({"mfu", utilisation(r.model_flops_per_step, t, r.peak_flops_per_gpu, r.gpus), "1"});
  m.push_back({"mfu_6nd", utilisation(r.model_flops_6n_per_step, t, r.peak_flops_per_gpu, r.gpus), "1"});
  m.push_back({"hfu", utilisation(r.hardware_flops_per_step, t, r.peak_flops_per_gpu, r.gpus), "1"});
  m.push_back({"compute_s", r.compute_s, "s"});
  m.push_back({"exposed_comm_s", r.exposed_comm_s, "s"});
  m.push_back({"comm_s", r.comm_s, "s"});
  m.push_back({"bubble_s", r.bubble_s, "s"});
  m.push_back({"data_stall_s", r.data_stall_s, "s"});
  m.push_back({"other_s", r.other_s, "s"});
  m.push_back({"peak_memory_bytes", r.memory.total(), "B"});
  m.push_back({"peak_memory_reserved_bytes", r.memory_reserved, "B"});
  m.push_back({"memory_weights_bytes", r.memory.weights, "B"});
  m.push_back({"memory_gradients_bytes", r.memory.gradients, "B"});
  m.push_back({"memory_optimizer_bytes", r.memory.optimizer, "B"});
  m.push_back({"memory_activations_bytes", r.memory.activations, "B"});
  m.push_back({"gpus", static_cast<double>(r.gpus), "1"});
  m.push_back({"tokens_per_step", r.tokens_per_step, "tokens"});
  m.push_back({"model_flops_per_step", r.model_flops_per_step, "FLOP"});
  const Baselines b = baselines(s, r);
  m.push_back({"baseline_6nd_step_time_s", b.six_n_s, "s"});
  m.push_back({"baseline_6nd_attention_step_time_s", b.six_n_attention_s, "s"});
  if (s.run.mode == "full" && t > 0) append_whole_run(m, s, r, whole);
  return m;
}

double metric(const std::vector<Metric>& metrics, const std::string& name) {
  for (const auto& m : metrics)
    if (m.name == name) return m.value;
  throw std::out_of_range("no metric named " + name);
}

std::string format_memory_table(const run::SimulationResult& r) {
  std::string out;
  auto row = [&](const char* what, double bytes) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %-12s %12s\n", what, bytes_gib(bytes).c_str());
    out += buf;
  };
  out += "memory per GPU:\n";
  row("weights", r.memory.weights);
  row("gradients", r.memory.gradients);
  row("optimizer", r.memory.optimizer);
  row("activations", r.memory.activations);
  // Around one layer (its backward's gradients, recomputed activations, gathered parameters) and,
  // under FSDP with pipeline parallelism, the stage's gathered weights and accumulated gradients:
  // shown so that the rows add up to the total.
  if (r.memory.transient > 0) row("transient", r.memory.transient);
  if (r.memory.unsharded > 0) row("unsharded", r.memory.unsharded);
  if (r.memory.weight_cache > 0) row("fp8 cache", r.memory.weight_cache);
  if (r.memory.autocast_copies > 0) row("cast copies", r.memory.autocast_copies);
  row("total", r.memory.total());
  row("reserved", r.memory_reserved);
  row("HBM", r.hbm_bytes);
  if (r.allocator_capacity > 0 && r.allocator_capacity < r.hbm_bytes) row("allocatable", r.allocator_capacity);
  if (r.memory_alloc_retries > 0) {
    out += "  allocator retries per step: " + std::to_string(r.memory_alloc_retries) +
           " (cudaMalloc failed, the cache was freed and the request retried; their time is not simulated)\n";
  }
  if (r.memory_peak_stage >= 0 && !r.memory_peak_ledger.empty()) {
    // The terms above are each at its own peak; the replay's ledger is what is alive together.
    double live = 0;
    for (const auto& [kind, bytes] : r.memory_peak_ledger) live += bytes;
    out += "live at the replay's peak (pipeline stage " + std::to_string(r.memory_peak_stage) + " of " +
           std::to_string(r.layout.pp) + ", " + bytes_gib(live) + "):\n";
    for (const auto& [kind, bytes] : r.memory_peak_ledger) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "  %-26s %12s\n", kind.c_str(), bytes_gib(bytes).c_str());
      out += buf;
    }
  }
  out += format_stage_memory(r);
  return out;
}

std::string format_stage_memory(const run::SimulationResult& r) {
  const auto& stages = r.memory_by_stage;
  if (stages.size() < 2) return {};
  constexpr std::size_t kPerLine = 8;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  bool over = false;
  std::string out = "reserved by pipeline stage (GiB):\n";
  for (std::size_t first = 0; first < stages.size(); first += kPerLine) {
    const std::size_t last = std::min(stages.size(), first + kPerLine) - 1;
    char buf[48];
    std::snprintf(buf, sizeof buf, "  stages %3zu-%-3zu", first, last);
    out += buf;
    for (std::size_t i = first; i <= last; ++i) {
      const bool full = r.allocator_capacity > 0 && stages[i].reserved > r.allocator_capacity;
      over = over || full;
      std::snprintf(buf, sizeof buf, " %7.2f%s", stages[i].reserved / kGiB, full ? "*" : " ");
      out += buf;
    }
    while (out.back() == ' ') out.pop_back();
    out += "\n";
  }
  if (over) out += "  * over the " + bytes_gib(r.allocator_capacity) + " the allocator may reserve\n";
  return out;
}

std::string format_summary(const config::Scenario& s, const run::SimulationResult& r,
                           const training::WholeRunResult* whole) {
  const auto m = summary_metrics(s, r, whole);
  const double t = r.step_time_s;
  std::string out;
  auto line = [&](const std::string& k, const std::string& v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-30s %s\n", k.c_str(), v.c_str());
    out += buf;
  };
  auto share = [&](double part) { return t > 0 ? fmt(" (%5.1f %%)", 100.0 * part / t) : std::string(); };

  out += "scenario " + s.name + ": " + s.model.name + " on " + std::to_string(r.gpus) + " GPUs (" +
         std::to_string(s.nodes) + " x " + s.topology.node.name + ", " + s.topology.device.name + ")\n";
  out += "layout: dp " + std::to_string(r.layout.dp) + ", tp " + std::to_string(r.layout.tp) + ", pp " +
         std::to_string(r.layout.pp) + (r.layout.pp > 1 ? " (" + s.parallel.pp_schedule + ")" : "") + ", cp " +
         std::to_string(r.layout.cp) + ", ep " + std::to_string(r.layout.ep) + ", ZeRO " + std::to_string(s.parallel.zero) + ", " +
         std::to_string(r.layout.microbatches) + " microbatch(es) of " +
         std::to_string(r.layout.microbatch_sequences) + " x " + std::to_string(s.training.sequence_length) +
         " tokens per rank, " + s.training.precision + "\n";
  out += "simulated " + std::to_string(r.steps.size()) + " step(s): " + std::to_string(r.events_executed) +
         " events, " + std::to_string(r.flows_started) + " flows\n\n";
  line("step time", seconds(t));
  line("tokens/s per GPU", fmt("%.1f", metric(m, "tokens_per_s_per_gpu")));
  line("model TFLOP/s per GPU", fmt("%.1f", metric(m, "model_tflops_per_gpu")));
  line(s.model.layer_list ? "MFU (model FLOPs: 3 x forward)" : "MFU (PaLM: 6N + 12LHQT)",
       fmt("%.1f %%", 100 * metric(m, "mfu")));
  line("MFU (6N only)", fmt("%.1f %%", 100 * metric(m, "mfu_6nd")));
  line("HFU (with recomputation)", fmt("%.1f %%", 100 * metric(m, "hfu")));
  out += "\ntime per step (mean over the " + std::to_string(r.ranks_simulated) + " rank(s) simulated op by op" +
         (s.run.detail == "symmetric" && r.ranks_simulated < r.gpus ? ": one data-parallel replica" : "") + "):\n";
  line("compute", seconds(r.compute_s) + share(r.compute_s));
  line("exposed communication", seconds(r.exposed_comm_s) + share(r.exposed_comm_s));
  line("pipeline bubble", seconds(r.bubble_s) + share(r.bubble_s));
  line("data stall", seconds(r.data_stall_s) + share(r.data_stall_s));
  line("other (gaps)", seconds(r.other_s) + share(r.other_s));
  line("optimizer step (in compute)", seconds(r.optimizer_s));
  line("all communication (hidden + exposed)", seconds(r.comm_s));
  out += "\nbaselines (a calculator at 100 % of peak):\n";
  line("6ND step time", seconds(metric(m, "baseline_6nd_step_time_s")));
  line("6ND + attention step time", seconds(metric(m, "baseline_6nd_attention_step_time_s")));
  line("simulated / 6ND+attention", fmt("%.2f x", t / metric(m, "baseline_6nd_attention_step_time_s")));
  out.append("\n").append(format_memory_table(r));
  if (s.run.mode == "full") {
    out.append("\nwhole run to ").append(fmt("%.3g", s.training.tokens)).append(" tokens (simulated):\n");
    line("steps", fmt("%.0f", metric(m, "steps")));
    line("wall-clock", fmt("%.1f days", metric(m, "wall_days")));
    line("allocated GPU-hours", fmt("%.0f", metric(m, "gpu_hours")));
    line("productive GPU-hours", fmt("%.0f", metric(m, "productive_gpu_hours")));
    line("interruptions", fmt("%.0f", metric(m, "interruptions")));
    for (const auto& x : m) {
      if (x.name.starts_with("interruptions_") && x.value > 0) line("  " + x.name.substr(14), fmt("%.0f", x.value));
    }
    line("lost work", fmt("%.2f h", metric(m, "lost_work_s") / 3600));
    line("checkpoint pauses", fmt("%.2f h", metric(m, "checkpoint_pause_s") / 3600));
    line("down (detect, restart, load)", fmt("%.2f h", metric(m, "down_s") / 3600));
    if (metric(m, "evaluation_s") > 0) line("evaluation pauses", fmt("%.2f h", metric(m, "evaluation_s") / 3600));
    if (metric(m, "elastic_shrinks") > 0) {
      line("elastic shrinks", fmt("%.0f", metric(m, "elastic_shrinks")));
      line("GPU-hours idle, shrunk", fmt("%.0f", metric(m, "shrunk_idle_gpu_hours")));
    }
    line("ETTR", fmt("%.1f %%", 100 * metric(m, "ettr")));
    line("goodput", fmt("%.1f %%", 100 * metric(m, "goodput")));
    line("MFU per step (scenario batch)", fmt("%.1f %%", 100 * metric(m, "mfu")));
    line("MFU over productive time", fmt("%.1f %%", 100 * metric(m, "mfu_productive")));
    line("MFU over allocated GPU-hours", fmt("%.1f %%", 100 * metric(m, "mfu_allocated")));
    if (metric(m, "checkpoint_interval_s") > 0) {
      line("checkpoint interval", fmt("%.1f min", metric(m, "checkpoint_interval_s") / 60));
      if (metric(m, "young_daly_interval_s") > 0) {
        line("Young/Daly interval", fmt("%.1f min", metric(m, "young_daly_interval_s") / 60));
      }
    }
  }
  out += "\nnot simulated by this version: ";
  if (!(s.data.storage_bandwidth_per_node > 0)) out += "data loading (data.storage_bandwidth_per_node unset), ";
  out += s.run.mode == "full" ? "evaluation passes under ZeRO 3 (refused), work outside pre-training (ablations, post-training).\n"
                              : "failures, checkpoints and restarts (they are simulated with run.mode: full).\n";
  return out;
}

}  // namespace ironlaw::report
