#pragma once
/// \file Parameter-server training, in the style of TensorFlow's ParameterServerStrategy: a run
/// mode of its own, beside the data-parallel step simulation (run/simulation.hpp).
///
/// What is simulated, on the same engine, cluster and flow network as every other mode:
/// - Servers. `parameter_server.servers` server tasks, each a process on one node that sends and
///   receives through one NIC of that node. `dedicated`: the last `server_nodes` nodes hold
///   servers only, server s on node (first server node + s mod server_nodes), NIC
///   ⌊s / server_nodes⌋; `colocated`: server s on node s mod nodes, NIC ⌊s / nodes⌋, beside workers.
/// - Sharding by size, as TensorFlow's MinSizePartitioner does: every variable (a layer's
///   weights; for a transformer the embedding, each block, the final norm and the LM head) is
///   cut into k = min(servers, max(1, ⌊bytes / min_shard_bytes⌋)) equal shards along its first
///   axis, and the shards go to servers round-robin, continuing from where the previous
///   variable stopped. Variables are float32 on the servers (TensorFlow keeps variables in
///   float32 under mixed precision), so 4 bytes per parameter cross the wire.
/// - Workers. Every GPU outside the server nodes is one worker. An iteration: pull every server's
///   shards (one flow per server, server NIC → worker GPU, all at once), compute a forward and
///   backward pass of the worker's batch (global_batch_tokens / workers; its duration is a
///   one-GPU step of the same workload cost model that times the data-parallel path, without
///   the optimizer step), push the gradient (one flow per server, GPU → server NIC), and wait
///   until every server has applied it (TensorFlow's apply op returns). A worker and a server on
///   the same node exchange through the PCIe links only: host memory → the worker's PCIe switch
///   → GPU and back.
/// - The PCIe hop at the server. A server's weights and gradients live in its host memory: a
///   pull leaves host memory through the upstream port of the PCIe switch that holds the
///   server's NIC (link "nodeN/host->nodeN/pcieK", the node's pcie bandwidth and latency:
///   assumed as wide as the switch's GPU port, x16 on DGX H100 and DGX A100), then switch →
///   NIC; a push comes back NIC → switch → host. Every NIC and GPU on the switch shares that
///   port: on a DGX A100 (two NICs per switch, 25 GB/s PCIe Gen4 against 2 × 24 GB/s of NIC)
///   two servers on one switch get half the port each, below their NICs' rate.
/// - Sparse embeddings (layer-list `embedding` layers): a worker pulls and pushes only the rows
///   its batch touches (values plus an 8-byte row id each), sparse_rows_per_batch or, when 0,
///   every lookup of the batch a distinct row (an upper bound), capped at the table; the rows
///   spread over the table's shards by their share of the table. The server's update touches
///   those rows only (the sparse apply kernels of SGD, momentum and Adagrad; plain Adam's moment
///   decay over the whole table is not modelled).
/// - Updates. Each server applies updates one at a time, in arrival order, at the node's
///   host_memory_bandwidth: bytes per parameter = fp32 weights read + written 8, gradient read
///   4, each optimizer state tensor read + written 8 (sgd 12, momentum and rmsprop 20, adam 28).
///   async: every gradient is applied as it arrives, no barrier. sync (SyncReplicasOptimizer):
///   each arriving gradient is added to an accumulator (read + read + write fp32, 12 B per
///   parameter), and once all workers' gradients of the step are in, one update is applied;
///   workers pull again when every server has applied the step.
/// - Staleness of a gradient on a shard: updates the shard applied after the worker's pull
///   started and before this gradient's update = (updates queued before it) − (updates applied
///   when the pull started). The statistics leave out each worker's first gradient (the warm-up
///   round, whose staleness only reflects the start order) unless run.steps is 1. In steady
///   state N equal workers give N − 1: between a worker's pull and its own update every other
///   worker's update lands once.
///
/// Not simulated: the input pipeline (refused by config), failures, the CPU ↔ CPU (socket)
/// link between a switch's root port and the memory that holds the shard, request/RPC latency
/// beyond the links' latencies.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "core/time.hpp"
#include "run/simulation.hpp"
#include "run/trace_level.hpp"

namespace ironlaw::run {

/// One shard of one variable, as placed on a server.
struct PsShard {
  std::string variable;  ///< "dense1", "embedding", "layer7", ...
  int server = 0;
  double params = 0;     ///< parameters of this shard
  bool sparse = false;   ///< an embedding table: pulled and pushed by touched rows
  double rows = 0;       ///< sparse: table rows in this shard
  double row_params = 0; ///< sparse: parameters per row (the embedding width)
};

/// Where the servers and workers are, what each server holds, what one worker moves.
struct PsPlan {
  struct Server {
    int node = 0;
    int nic = 0;             ///< NIC index within the node
    int anchor_gpu = 0;      ///< the GPU on that NIC's PCIe switch (routes are cut at the NIC)
    double dense_params = 0; ///< parameters moved whole every pull and push
    double sparse_rows = 0;  ///< embedding rows held
    double touched_rows = 0; ///< embedding rows of this server one worker batch touches
    double touched_params = 0; ///< parameters of those rows
    double pull_bytes = 0;   ///< one worker's pull [B]
    double push_bytes = 0;   ///< one worker's push [B]
  };
  std::vector<Server> servers;
  std::vector<PsShard> shards;
  std::vector<int> worker_gpus;     ///< global GPU index of each worker, in worker order
  double params = 0;                ///< all parameters (dense + embedding tables)
  double samples_per_worker = 0;    ///< sequences (samples) per worker iteration
  double tokens_per_worker = 0;     ///< tokens per worker iteration
  double update_bytes_per_param = 0;      ///< optimizer update on the server [B/param]
  static constexpr double kWireBytesPerParam = 4;        ///< float32 variables
  static constexpr double kRowIdBytes = 8;               ///< int64 row index per touched row
  static constexpr double kAccumulateBytesPerParam = 12; ///< sync: accumulator read + gradient read + write
};

/// The plan of a validated scenario with parameter_server.enabled. Throws std::invalid_argument
/// if it is not enabled. O(variables · servers + GPUs).
PsPlan plan_parameter_servers(const config::Scenario& scenario);

/// Server-side optimizer update bytes per parameter for `optimizer` (sgd 12, momentum 20,
/// rmsprop 20, adam 28). Throws std::invalid_argument for another name.
double ps_update_bytes_per_param(const std::string& optimizer);

/// One gradient as one server applied it.
struct PsGradient {
  int worker = 0;
  int iteration = 0;
  int server = 0;
  std::int64_t staleness = 0;   ///< updates applied to the shard between pull and this update (sync: 0)
  Time pull_start;
  Time push_done;               ///< the push's last byte arrived at the server
  Time applied;                 ///< the server finished applying it (sync: the step's update)
};

/// What a parameter-server run produced. Times in seconds unless a Time.
struct PsResult {
  PsPlan plan;
  bool out_of_memory = false;     ///< one worker's batch does not fit its GPU: nothing was simulated
  double hbm_bytes = 0;           ///< capacity per GPU
  Time worker_compute;            ///< forward + backward of one worker batch, on the slowest worker's GPU
  double worker_peak_memory = 0;  ///< bytes per worker GPU (the one-GPU step's breakdown)
  double worker_model_flops = 0;  ///< PaLM-convention model FLOPs of one worker iteration
  double peak_flops_per_gpu = 0;
  int steps = 0;                  ///< iterations per worker (run.steps)
  Time makespan;                  ///< from the first pull to the last update
  double step_time_s = 0;         ///< makespan / steps: one gradient per worker
  double worker_iteration_s = 0;  ///< mean over workers and iterations, pull start to update applied
  double worker_wait_s = 0;       ///< mean per iteration of the part not spent computing
  double gradients_per_s = 0;     ///< gradients applied per second (all servers count one gradient once)
  double tokens_per_s = 0;        ///< tokens of all applied gradients / makespan
  double server_nic_out_utilisation = 0;  ///< max over servers: bytes NIC→fabric / (bandwidth · makespan)
  double server_nic_in_utilisation = 0;   ///< max over servers: bytes fabric→NIC / (bandwidth · makespan)
  double server_nic_out_bytes = 0;        ///< on that busiest server NIC
  double server_nic_in_bytes = 0;
  /// max over servers: bytes host memory → the server's PCIe switch (pulls; the switch's
  /// upstream port, shared by its NICs and by pulls of workers on the same switch) / (pcie
  /// bandwidth · makespan); in: the other direction (pushes)
  double server_pcie_out_utilisation = 0;
  double server_pcie_in_utilisation = 0;
  double server_pcie_out_bytes = 0;       ///< on that busiest server uplink
  double server_pcie_in_bytes = 0;
  double server_busy_utilisation = 0;     ///< max over servers: time applying / makespan
  double staleness_mean = 0, staleness_p50 = 0, staleness_p99 = 0, staleness_max = 0;
  std::size_t staleness_samples = 0;
  /// Learning progress per second under one published model of what staleness costs, reported
  /// beside the throughput and never folded into it: Zhang, Gupta, Lian, Liu, "Staleness-aware
  /// Async-SGD for Distributed Deep Learning" (IJCAI 2016, arXiv 1511.05950) apply a gradient
  /// of staleness τ at learning rate α0 / τ (α0 when τ = 0) and show convergence like
  /// synchronous SGD whose step averages the learners' gradients at α0. Counted in such
  /// α0-steps: gradients_per_s × the mean discount of a gradient, 1 / max(1, τ) per server
  /// weighted by the share of the gradient's parameters that server holds (async; the updates
  /// of the staleness statistics), 1 / N (sync: N gradients averaged into one step). N equal
  /// async workers (τ = N − 1) give gradients_per_s / (N − 1); sync gives steps/s. What it
  /// assumes: that rule, and that an α0-step is worth the same in both modes (same α0, same
  /// global batch); nothing about accuracy per step.
  double staleness_aware_steps_per_s = 0;
  std::vector<PsGradient> gradients;  ///< every (gradient, server) update, in application order
  std::vector<StepRecord> steps_records;
  std::vector<LinkUsage> links;       ///< every link that carried traffic, in link order
  std::uint64_t events_executed = 0;
  std::uint64_t flows_started = 0;
};

/// The forward + backward time of one worker's batch, its peak memory and its model FLOPs: a
/// one-GPU, one-node copy of `scenario` (batch global / workers, no optimizer step on the GPU:
/// the server applies it) simulated by run::simulate. O(one step simulation).
struct PsWorkerCost {
  Time compute;
  double peak_memory = 0;
  double model_flops = 0;
  double peak_flops_per_gpu = 0;
  bool out_of_memory = false;
  double hbm_bytes = 0;
};
PsWorkerCost ps_worker_cost(const config::Scenario& scenario, const PsPlan& plan);

/// Simulates run.steps iterations of every worker, each worker's compute taking
/// `worker_compute[w]` (one per worker; tests give unequal ones). Records go to `sink` at
/// `trace` (step: /steps rows; op: compute and update intervals; flow: also every pull and push).
/// Deterministic: no random draws. Cost: O(workers · servers · steps) flows and events.
PsResult simulate_parameter_server(const config::Scenario& scenario, std::span<const Time> worker_compute,
                                   RecordSink& sink, TraceLevel trace);
/// As above with every worker's compute from ps_worker_cost(); fills the FLOP and memory fields.
/// When a worker's batch does not fit its GPU, returns at once with out_of_memory set.
PsResult simulate_parameter_server(const config::Scenario& scenario, RecordSink& sink, TraceLevel trace);

/// One named figure of a parameter-server run for /summary (name, value, unit).
struct PsMetric {
  std::string name;
  double value = 0;
  std::string unit;
};
/// The /summary row of a parameter-server run: the contract's names (step_time_s,
/// tokens_per_s_per_gpu per worker GPU, mfu over worker GPUs, ...) and the ps_* figures.
std::vector<PsMetric> ps_summary_metrics(const config::Scenario& scenario, const PsResult& result);

}  // namespace ironlaw::run
