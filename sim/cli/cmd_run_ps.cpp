// `ironlaw run` for parameter-server scenarios (cli/run_ps.hpp).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "cli/commands.hpp"
#include "cli/machine_output.hpp"
#include "cli/run_ps.hpp"
#include "config/units.hpp"
#include "core/error.hpp"
#include "run/parameter_server.hpp"
#include "run/resource_estimate.hpp"

namespace ironlaw::cli {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string seconds_text(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.2f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}

std::string format_ps_summary(const config::Scenario& sc, const run::PsResult& r) {
  const auto& ps = sc.parameter_server;
  const auto workers = r.plan.worker_gpus.size();
  std::ostringstream o;
  o << "scenario " << sc.name << ": " << sc.model.name << " on " << workers << " worker GPU(s) + " << ps.servers
    << " parameter server(s) (" << ps.placement;
  if (ps.placement == "dedicated") o << " on " << ps.server_nodes << " node(s)";
  o << "), " << ps.mode << ", " << sc.topology.node.name << "\n";
  o << "per worker: " << r.plan.samples_per_worker << " sample(s) per iteration; model " << fmt("%.4g", r.plan.params)
    << " parameters in " << r.plan.shards.size() << " shard(s), " << sc.training.optimizer << " applied at "
    << fmt("%.0f GB/s", sc.topology.node.host_memory_bandwidth / 1e9) << " host memory bandwidth\n";
  o << "simulated " << r.steps << " iteration(s) per worker: " << r.events_executed << " events, " << r.flows_started
    << " flows\n\n";
  auto line = [&](const std::string& name, const std::string& value) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-44s %s\n", name.c_str(), value.c_str());
    o << buf;
  };
  const auto m = run::ps_summary_metrics(sc, r);
  auto metric = [&](const std::string& name) {
    for (const auto& x : m) {
      if (x.name == name) return x.value;
    }
    return 0.0;
  };
  line("step time (one gradient per worker)", seconds_text(r.step_time_s));
  line("worker compute (forward + backward)", seconds_text(r.worker_compute.seconds()));
  line("worker iteration (pull to update applied)", seconds_text(r.worker_iteration_s));
  line("  of which not computing (pull, push, wait)", seconds_text(r.worker_wait_s));
  line("samples/s, all workers", fmt("%.1f", r.tokens_per_s / sc.training.sequence_length));
  line("tokens/s per worker GPU", fmt("%.1f", metric("tokens_per_s_per_gpu")));
  line("model TFLOP/s per worker GPU", fmt("%.1f", metric("model_tflops_per_gpu")));
  line("MFU over worker GPUs", fmt("%.1f %%", 100 * metric("mfu")));
  line("gradients applied per second", fmt("%.1f", r.gradients_per_s));
  line("server NIC out (pulls), busiest", fmt("%.1f %%", 100 * r.server_nic_out_utilisation) + " of its bandwidth (" +
                                              fmt("%.3g B", r.server_nic_out_bytes) + ")");
  line("server NIC in (pushes), busiest", fmt("%.1f %%", 100 * r.server_nic_in_utilisation) + " of its bandwidth (" +
                                              fmt("%.3g B", r.server_nic_in_bytes) + ")");
  line("server PCIe out (host -> NIC), busiest", fmt("%.1f %%", 100 * r.server_pcie_out_utilisation) +
                                                     " of its bandwidth (" + fmt("%.3g B", r.server_pcie_out_bytes) + ")");
  line("server PCIe in (NIC -> host), busiest", fmt("%.1f %%", 100 * r.server_pcie_in_utilisation) +
                                                    " of its bandwidth (" + fmt("%.3g B", r.server_pcie_in_bytes) + ")");
  line("server update engine, busiest", fmt("%.1f %%", 100 * r.server_busy_utilisation) + " of the time");
  o << "\ngradient staleness (updates applied to a shard between a worker's pull and its gradient's update;\n"
    << r.staleness_samples << " gradient-shard updates" << (r.steps > 1 ? ", each worker's first left out" : "")
    << "):\n";
  line("mean", fmt("%.2f", r.staleness_mean));
  line("p50 / p99 / max", fmt("%.0f", r.staleness_p50) + " / " + fmt("%.0f", r.staleness_p99) + " / " +
                              fmt("%.0f", r.staleness_max));
  o << "\nwhat staleness costs, under one published model (Zhang et al., IJCAI 2016: a gradient of staleness\n"
       "t applied at learning rate a0 / t; not folded into the throughput above):\n";
  line("a0-steps per second (staleness-aware SGD)", fmt("%.2f", r.staleness_aware_steps_per_s) +
                                                        (sc.parameter_server.mode == "sync" ? " (sync: steps/s)" : ""));
  o << "\nnot simulated in parameter_server mode: the input pipeline, failures and checkpoints, the\n"
       "inter-socket link to the shard's memory, RPC overheads beyond the links' latencies.\n";
  return o.str();
}

}  // namespace

void check_ps_limits(const config::Scenario& s, const Limits& limits) {
  check_step_limit(s, limits);
  const double limit = memory_limit(limits);
  // Two paths of up to ~12 links per (worker, server) pair, and one 56-byte record per
  // (gradient, server); the cluster's own links are small beside them.
  const double workers = static_cast<double>(s.gpus());
  const double pairs = workers * s.parameter_server.servers;
  const double bytes = pairs * (2 * 12 * 4 + 64) + pairs * s.run.steps * 56;
  if (bytes > limit) {
    throw InputError(s.where("parameter_server.servers"), "parameter_server",
                     "the simulation would need about " + fmt("%.1f GiB", bytes / (1024.0 * 1024 * 1024)) +
                         " of memory (workers x servers x run.steps gradient records), above the limit of " +
                         fmt("%.1f GiB", limit / (1024.0 * 1024 * 1024)) + "; raise it with --max-memory");
  }
}

void refuse_parameter_server(const config::Scenario& s, const std::string& command) {
  if (!s.parameter_server.enabled) return;
  throw InputError(s.where("parameter_server"), "parameter_server",
                   "`ironlaw " + command + "` does not simulate parameter-server training; use `ironlaw run`");
}

int run_parameter_server(const config::Scenario& sc, output::H5Writer& writer, run::TraceLevel trace, PsPrint print,
                         const std::string& target, const std::string& chrome_path) {
  const run::PsResult r = run::simulate_parameter_server(sc, writer, trace);
  if (r.out_of_memory) {
    std::cerr << "ironlaw run: " << sc.name << ": out of memory: one worker's batch needs "
              << r.worker_peak_memory / (1024.0 * 1024 * 1024) << " GiB, the " << sc.topology.device.name << " has "
              << r.hbm_bytes / (1024.0 * 1024 * 1024) << " GiB; nothing was simulated and no output written.\n";
    return kExitJobFailed;  // the writer's temporary file is removed on destruction
  }
  const auto metrics = run::ps_summary_metrics(sc, r);
  std::vector<std::pair<std::string, double>> row;
  std::vector<std::string> units;
  for (const auto& m : metrics) {
    row.emplace_back(m.name, m.value);
    units.push_back(m.unit);
  }
  writer.write_summary(row, units);
  using output::TableColumn;
  std::vector<std::int64_t> g_worker, g_it, g_server, g_stale;
  std::vector<double> g_pull, g_push, g_applied;
  for (const auto& g : r.gradients) {
    g_worker.push_back(g.worker);
    g_it.push_back(g.iteration);
    g_server.push_back(g.server);
    g_stale.push_back(g.staleness);
    g_pull.push_back(g.pull_start.seconds());
    g_push.push_back(g.push_done.seconds());
    g_applied.push_back(g.applied.seconds());
  }
  writer.write_table("ps_gradients", {TableColumn{"worker", "1", g_worker}, TableColumn{"iteration", "1", g_it},
                                      TableColumn{"server", "1", g_server}, TableColumn{"staleness", "1", g_stale},
                                      TableColumn{"pull_start_s", "s", g_pull}, TableColumn{"push_done_s", "s", g_push},
                                      TableColumn{"applied_s", "s", g_applied}});
  std::vector<std::int64_t> s_node, s_nic;
  std::vector<double> s_dense, s_rows, s_touched, s_pull, s_push;
  for (const auto& s : r.plan.servers) {
    s_node.push_back(s.node);
    s_nic.push_back(s.nic);
    s_dense.push_back(s.dense_params);
    s_rows.push_back(s.sparse_rows);
    s_touched.push_back(s.touched_rows);
    s_pull.push_back(s.pull_bytes);
    s_push.push_back(s.push_bytes);
  }
  writer.write_table("ps_servers", {TableColumn{"node", "1", s_node}, TableColumn{"nic", "1", s_nic},
                                    TableColumn{"dense_params", "1", s_dense}, TableColumn{"sparse_rows", "1", s_rows},
                                    TableColumn{"touched_rows", "1", s_touched},
                                    TableColumn{"pull_bytes", "B", s_pull}, TableColumn{"push_bytes", "B", s_push}});
  writer.set_run_mode("steps");
  commit_run_outputs(writer, r.links, target, chrome_path);

  if (print == PsPrint::csv || print == PsPrint::json) {
    std::vector<NamedValue> values;
    for (const auto& m : metrics) values.push_back({m.name, m.value, m.unit});
    std::cout << (print == PsPrint::csv ? values_csv(values) : values_json(sc.name, values));
  } else if (print == PsPrint::text) {
    std::cout << format_ps_summary(sc, r);
    std::cout << "\nwrote " << printable(target);
    if (!chrome_path.empty()) std::cout << " and " << printable(chrome_path);
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace ironlaw::cli
