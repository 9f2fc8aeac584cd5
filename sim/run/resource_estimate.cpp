#include "run/resource_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "workload/layer_list.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::run {

namespace {

// Bytes per object, measured on the Release build of the 405B/16K bench (README "Scale") and
// rounded up: a task with its edges and closures, a flow with its path and event, a link or
// switch with its name, a loader worker with its random stream.
constexpr double kBytesPerTask = 600;
constexpr double kBytesPerFlow = 300;
constexpr double kBytesPerLink = 300;
constexpr double kBytesPerWorker = 128;
constexpr double kBytesPerSlot = 16;
/// Kernels and collectives per layer per microbatch on one rank (forward, backward,
/// recomputation, TP collectives), an upper bound of the op lists of sim/workload.
constexpr double kTasksPerLayer = 16;
/// Flows one GPU keeps in flight at once (ring positions of its channels, pipeline sends).
constexpr double kFlowsPerGpu = 16;

}  // namespace

ResourceEstimate estimate_resources(const config::Scenario& s, const Layout& l) {
  ResourceEstimate e;
  const double gpus = static_cast<double>(s.nodes) * s.topology.node.gpus;
  const double ranks = s.run.detail == "full" ? gpus : static_cast<double>(l.tp) * l.pp * l.cp;
  const double layers_per_rank = std::ceil(static_cast<double>(s.model.layers) / l.pp) + 2;
  e.tasks = ranks * std::max(1, l.microbatches) * layers_per_rank * kTasksPerLayer;
  e.live_flows = gpus * (kFlowsPerGpu + std::max(1, s.topology.comm.flows_per_connection));
  const auto& n = s.topology.node;
  e.fabric_links = static_cast<double>(s.nodes) * (2.0 * n.gpus + 2.0 * n.nics + 4) +
                   std::max(0, s.topology.fabric.spines) * (static_cast<double>(s.nodes) + 1);
  const double workers = std::max(1, s.data.workers_per_gpu);
  e.loader_slots = gpus * (workers + s.data.prefetch_batches);
  const double task_bytes = e.tasks * kBytesPerTask;
  const double flow_bytes = e.live_flows * kBytesPerFlow;
  const double fabric_bytes = e.fabric_links * kBytesPerLink;
  const double loader_bytes = gpus * (workers * kBytesPerWorker + s.data.prefetch_batches * kBytesPerSlot);
  e.bytes = task_bytes + flow_bytes + fabric_bytes + loader_bytes;
  const double largest = std::max({task_bytes, flow_bytes, fabric_bytes, loader_bytes});
  if (largest == task_bytes) {
    e.driver = "the task graph: " + std::string(s.run.detail == "full" ? "run.detail full, " : "") +
               "microbatches per step (training.global_batch_tokens / (sequence_length x dp x microbatch_size)) "
               "x model.layers";
  } else if (largest == loader_bytes) {
    e.driver = "the data loaders: data.loader.workers_per_gpu and data.loader.prefetch_batches over every GPU";
  } else {
    e.driver = "the cluster: cluster.nodes x node.gpus";
  }

  const auto peak = s.topology.device.peak_flops.find(s.training.precision);
  if (peak != s.topology.device.peak_flops.end() && peak->second > 0 && s.topology.device.max_gemm_fraction > 0) {
    // A layer-list model has no transformer shape: its training FLOPs per sample, per token.
    const double per_token =
        s.model.layer_list
            ? workload::layer_model_cost(*s.model.layer_list, 1, s.training.precision).model_flops_per_sample() /
                  s.training.sequence_length
            : workload::flops_per_token(s.model, s.training.sequence_length).six_n_active;
    const double rate = s.topology.device.chip_peak_flops(s.training.precision) * s.topology.device.max_gemm_fraction;
    e.min_simulated_s = per_token * l.tokens_per_step / gpus / rate * s.run.steps;
    e.time_driver = "cluster.topology.device.peak_flops." + s.training.precision +
                    " x cluster.topology.device.max_gemm_fraction against the step's FLOPs "
                    "(training.global_batch_tokens, the model) and run.steps";
  }
  return e;
}

double default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 8.0 * (1u << 30);
  return 0.5 * static_cast<double>(pages) * static_cast<double>(page);
}

}  // namespace ironlaw::run
