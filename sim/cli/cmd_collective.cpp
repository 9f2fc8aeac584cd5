// `ironlaw collective`: a simulated nccl-tests table (all_reduce_perf and friends), so users
// can hold the model against their own measurements. Columns and busbw as nccl-tests defines
// them (doc/PERFORMANCE.md).
#include <boost/program_options.hpp>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <cmath>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "cli/common.hpp"
#include "comm/collective.hpp"
#include "config/load.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// nccl-tests size syntax: an integer with an optional K, M or G suffix (powers of 1024).
double parse_size(const std::string& text, const std::string& option) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw InputError({option, 0, 0}, option, "expected a size like 8M or 8G (nccl-tests syntax), got \"" + text + "\"");
  }
  std::string suffix = text.substr(pos);
  double mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024.0;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024.0 * 1024.0;
  else if (!suffix.empty())
    throw InputError({option, 0, 0}, option, "expected a size like 8M or 8G (nccl-tests syntax), got \"" + text + "\"");
  if (!(v > 0) || !std::isfinite(v * mult)) {
    throw InputError({option, 0, 0}, option, "expected a positive, finite size, got \"" + text + "\"");
  }
  return v * mult;
}

}  // namespace

int cmd_collective(const Args& args) {
  po::options_description opts("ironlaw collective --op all_reduce|reduce_scatter|all_gather|all_to_all -b MIN -e MAX -f FACTOR [options]");
  std::string op_name = "all_reduce", min_s = "8M", max_s = "8G", topology_path;
  double factor = 2;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string algorithm = "auto";
  std::string granularity = "fluid";
  std::string dispatcher = "alltoall";
  int experts = 0;
  int topk = 0;
  Limits limits;
  opts.add_options()
      ("help,h", "show this help")
      ("op", po::value(&op_name)->default_value(op_name), "all_reduce | reduce_scatter | all_gather | all_to_all")
      ("minbytes,b", po::value(&min_s)->default_value(min_s), "smallest size (K/M/G = 2^10/2^20/2^30)")
      ("maxbytes,e", po::value(&max_s)->default_value(max_s), "largest size")
      ("stepfactor,f", po::value(&factor)->default_value(factor), "multiply the size by this between rows")
      ("nodes", po::value(&nodes)->default_value(nodes), "nodes in the job (all their GPUs take part)")
      ("gpus-per-node", po::value(&gpus_per_node), "GPUs per node (default: the topology's)")
      ("algo", po::value(&algorithm), "ring | hierarchical | tree | nvls | auto (default: auto, NCCL's choice)")
      ("algorithm", po::value(&algorithm), "same as --algo")
      ("granularity", po::value(&granularity)->default_value(granularity),
       "fluid (each ring position one flow, as run.collectives: fluid) | stepped (every ring step a flow)")
      ("topology", po::value(&topology_path), "topology YAML (default: topologies/dgx-h100-leaf-spine.yaml)")
      ("dispatcher", po::value(&dispatcher)->default_value(dispatcher),
       "all_to_all of MoE tokens: alltoall (NCCL's: one message per token copy) | deepep | hybridep "
       "(each token once per GPU holding any of its experts and once per node, forwarded over NVLink, "
       "at the topology's comm.ep_kernels rates; need --experts and --topk). Sizes count every token "
       "copy per rank (tokens x topk x token bytes)")
      ("experts", po::value(&experts), "experts the tokens are routed over (--dispatcher deepep or hybridep; "
       "a multiple of the ranks)")
      ("topk", po::value(&topk), "experts each token picks (--dispatcher deepep or hybridep)")
      ("max-memory", po::value(&limits.max_memory),
       "refuse a collective whose estimated memory exceeds this, e.g. \"32 GiB\" (default: half of this machine's RAM)");
  opts.add_options()("step-cpu-limit", po::value(&limits.step_cpu_limit_s)->default_value(limits.step_cpu_limit_s),
                     "CPU seconds one size's simulation may use; past it (or once its pace projects past it: half "
                     "the collective's closed-form time is a lower bound of its simulated time) exit 2");
  add_cpu_limit_option(opts, limits.cpu_limit_s);
  po::variables_map vm;
  if (!parse_command_line(args, opts, nullptr, vm)) return kExitOk;
  apply_step_cpu_limit(limits.step_cpu_limit_s);
  apply_command_cpu_limit(limits.cpu_limit_s);

  comm::CollectiveOp op;
  try {
    op = comm::parse_op(op_name);
  } catch (const std::invalid_argument&) {
    throw InputError({}, "--op", "expected all_reduce, reduce_scatter, all_gather or all_to_all, got \"" + op_name + "\"");
  }
  const double min_bytes = parse_size(min_s, "-b");
  const double max_bytes = parse_size(max_s, "-e");
  if (max_bytes < min_bytes) throw InputError({}, "-e", "the largest size is below the smallest (-b)");
  if (!(factor > 1) || !std::isfinite(factor)) {
    throw InputError({}, "-f", "the step factor must be a finite number greater than 1");
  }
  if (nodes < 1) throw InputError({}, "--nodes", "expected at least 1 node");
  const std::string algo_expected = "expected ring, hierarchical, tree, nvls or auto, got \"" + algorithm + "\"";
  comm::Algorithm alg = comm::Algorithm::automatic;
  try {
    alg = comm::parse_algorithm(algorithm);
  } catch (const std::invalid_argument&) {
    throw InputError({}, "--algo", algo_expected);
  }
  if (alg == comm::Algorithm::all_to_all) throw InputError({}, "--algo", algo_expected);

  if (granularity != "fluid" && granularity != "stepped")
    throw InputError({}, "--granularity", "expected fluid or stepped, got \"" + granularity + "\"");
  const bool flex = config::is_flex_dispatcher(dispatcher);
  if (!flex && dispatcher != "alltoall")
    throw InputError({}, "--dispatcher", "expected alltoall, deepep or hybridep, got \"" + dispatcher + "\"");
  if (dispatcher != "alltoall" && op != comm::CollectiveOp::all_to_all)
    throw InputError({}, "--dispatcher", "routes the tokens of an all_to_all: needs --op all_to_all, got " + op_name);
  if (!flex && (vm.count("experts") || vm.count("topk")))
    throw InputError({}, vm.count("experts") ? "--experts" : "--topk",
                     "routes tokens for --dispatcher deepep or hybridep (NCCL's all-to-all sends every copy: "
                     "the routing changes nothing), got --dispatcher " + dispatcher);
  comm::BenchOptions options;
  options.algorithm = alg;
  options.fluid = granularity == "fluid";
  // Each size's simulation is bounded in CPU like every step simulation (run/cpu_budget.hpp):
  // a ring over tens of thousands of ranks stops within seconds once its pace projects past
  // --step-cpu-limit, naming --nodes.
  options.run = [](engine::Simulator& sim, Time floor, const std::string& what) {
    const run::SimulationCpuBudget budget(what, floor.seconds(), "--nodes");
    run::CpuWatchdog watchdog(sim);
    watchdog.resume();
    sim.run();
  };

  if (topology_path.empty()) topology_path = default_topology_path();
  config::TopologySpec topo = config::load_topology(topology_path);
  if (vm.count("gpus-per-node")) {
    if (gpus_per_node < 1 || gpus_per_node > topo.node.gpus)
      throw InputError({}, "--gpus-per-node",
                       "expected 1.." + std::to_string(topo.node.gpus) + " (the node has " +
                           std::to_string(topo.node.gpus) + " GPUs)");
    topo.node.gpus = gpus_per_node;
    topo.node.nics = std::min(topo.node.nics, gpus_per_node);
  }
  const int ranks = nodes * topo.node.gpus;
  if (flex) {
    if (!vm.count("experts") || !vm.count("topk"))
      throw InputError({}, vm.count("experts") ? "--topk" : "--experts",
                       "--dispatcher " + dispatcher + " routes tokens: give --experts and --topk");
    if (experts < 1 || experts > 1'000'000 || experts % ranks != 0)
      throw InputError({}, "--experts", "expected a positive multiple of the " + std::to_string(ranks) +
                                            " ranks (experts spread evenly), at most 1,000,000, got " +
                                            std::to_string(experts));
    if (topk < 1 || topk > experts)
      throw InputError({}, "--topk", "expected 1.." + std::to_string(experts) + " (the experts), got " +
                                         std::to_string(topk));
    options.route_targets = experts;
    options.route_picks = topk;
    const auto kernels = topo.comm.ep_kernels(dispatcher);
    options.kernel_rdma_rate = kernels.rdma_rate;
    options.kernel_forward_rate = kernels.forward_rate;
  }
  check_collective_memory(op == comm::CollectiveOp::all_to_all, static_cast<double>(nodes) * topo.node.gpus,
                          memory_limit(limits));
  std::vector<comm::BenchRow> rows;
  try {
    rows = comm::bench_collective(topo, nodes, op, min_bytes, max_bytes, factor, options);
  } catch (const std::invalid_argument& e) {
    // The algorithm asked for does not run this collective here (e.g. nvls across nodes).
    throw InputError({}, "--algo", std::string(comm::algorithm_name(alg)) + " cannot run " + comm::op_name(op) +
                                       " on " + std::to_string(nodes) + " node(s) of " + topo.name + ": " + e.what());
  }

  std::printf("# ironlaw collective (simulated): %s over %d ranks (%d node(s) x %d GPUs), topology %s\n",
              comm::op_name(op), ranks, nodes, topo.node.gpus, topo.name.c_str());
  std::printf("# busbw as nccl-tests defines it: algbw x %s\n",
              op == comm::CollectiveOp::all_reduce ? "2(n-1)/n" : "(n-1)/n");
  if (flex) {
    char rates[96] = "none in this topology (the links alone)";
    if (options.kernel_rdma_rate > 0 || options.kernel_forward_rate > 0) {
      char forward[32] = "none";
      if (options.kernel_forward_rate > 0) std::snprintf(forward, sizeof forward, "%.1f GB/s", options.kernel_forward_rate / 1e9);
      std::snprintf(rates, sizeof rates, "rdma %.1f GB/s, forward %s", options.kernel_rdma_rate / 1e9, forward);
    }
    std::printf("# %s dispatch: tokens routed to %d of %d experts, sent once per GPU and node (size: every copy);"
                " kernel rates %s (comm.ep_kernels)\n",
                dispatcher.c_str(), topk, experts, rates);
  }
  std::printf("#\n#%12s %14s %8s %6s %6s %10s %8s %8s\n", "size", "count", "type", "redop", "root", "time",
              "algbw", "busbw");
  std::printf("#%12s %14s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  double sum_busbw = 0;
  for (const auto& r : rows) {
    std::printf(" %12.0f %14.0f %8s %6s %6d %10.1f %8.2f %8.2f\n", r.bytes, r.bytes / 4, "float",
                op == comm::CollectiveOp::all_gather || op == comm::CollectiveOp::all_to_all ? "none" : "sum", -1, r.time_us, r.algbw_gbs, r.busbw_gbs);
    sum_busbw += r.busbw_gbs;
  }
  std::printf("# Avg bus bandwidth    : %g\n", rows.empty() ? 0.0 : sum_busbw / static_cast<double>(rows.size()));
  return kExitOk;
}

}  // namespace ironlaw::cli
