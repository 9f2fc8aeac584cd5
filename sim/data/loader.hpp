#pragma once
/// \file The input pipeline of every GPU: storage reads, CPU loader workers, a bounded
/// prefetch queue and host-to-device copies (DESIGN.md "Data pipeline").
///
/// Mechanism, per node and per GPU:
/// - Each node has one storage read channel: a FlowNetwork link of
///   `storage_bandwidth_per_node` named "node<N>/storage". Every read of every worker of the
///   node's GPUs is a flow on it, so concurrent reads share it max-min fairly.
/// - Each GPU has `workers_per_gpu` workers. A worker loads one batch at a time: it takes the
///   GPU's next batch index, reads `sequences_per_batch × sample_bytes` from storage (one
///   flow), then decodes the batch's samples one after another (one decode time drawn per
///   sample from `decode_time`, on the worker's stream "node<N>/gpu<G>/loader/worker<W>";
///   the draws are summed into one event per batch), then offers the batch to the GPU's
///   prefetch queue.
/// - The prefetch queue holds at most `prefetch_batches` ready batches and hands them out in
///   batch-index order. Batch j may enter it once batch j − prefetch_batches has been handed
///   out; a worker whose finished batch may not enter yet holds it and idles (back-pressure)
///   until a slot frees, then starts its next batch. The batch the GPU needs next can always
///   enter, so the pipeline cannot deadlock.
/// - `request(gpu, cb)` asks for the GPU's next batch. When it is ready it is popped (freeing
///   a slot), copied host→device (bytes / host_to_device_bandwidth; copies of one GPU run one
///   after another on its copy engine) and then `cb()` runs.
/// - With `workers_per_gpu == 0` batches are loaded in the training process itself, as a
///   PyTorch DataLoader with num_workers = 0: nothing is prefetched, a load starts only when
///   a request waits for it (stream "node<N>/gpu<G>/loader/main").
///
/// The data stall is measured, never assumed (DESIGN.md principle 1): it is the time during
/// which a GPU has a request waiting and its next batch is not ready.
///
/// Determinism: events are created in an order fixed by the inputs; every random draw comes
/// from the worker's own stream, keyed by its path and the seed.
///
/// The Simulator and the FlowNetwork must outlive the pipeline; destroying the pipeline
/// cancels its pending events and flows (pending callbacks never run).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "core/records.hpp"
#include "core/rng.hpp"
#include "core/time.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::data {

/// What the pipeline measured for one GPU, current as of Simulator::now().
struct GpuStats {
  /// Total data-stall time: a request waiting while the next batch was not ready. An ongoing
  /// stall counts up to now().
  Time stall;
  /// Stall episodes: times a waiting request found no batch ready (ongoing one included).
  std::uint64_t stalls = 0;
  /// Longest finished stall episode.
  Time max_stall;
  /// Batches handed to the GPU (popped from the prefetch queue).
  std::uint64_t batches_popped = 0;
  /// Batches whose host→device copy finished and whose callback ran.
  std::uint64_t batches_delivered = 0;
  /// Batches that entered the prefetch queue.
  std::uint64_t batches_loaded = 0;
  /// Summed host→device copy time of delivered batches.
  Time h2d;
  /// Summed over the GPU's workers: time spent holding a finished batch because the prefetch
  /// queue was full (back-pressure); ongoing waits count up to now().
  Time worker_blocked;
  /// Most ready batches the prefetch queue ever held at once (≤ prefetch_batches).
  int max_ready = 0;
};

/// Turns a DistributionSpec into draws [s]. `constant` returns the mean; `exponential`
/// ignores cv (its cv is 1); `lognormal` uses (mean, cv). O(1).
/// Throws std::invalid_argument for an unknown distribution name or a negative mean or cv.
class Distribution {
 public:
  explicit Distribution(const config::DistributionSpec& spec);
  /// One draw [s], ≥ 0. Draws nothing from `rng` for `constant`.
  double draw_seconds(RngStream& rng) const;
  /// Sum of `n` draws, each rounded up to whole ns (as Time::from_seconds). O(n).
  Time draw_sum(RngStream& rng, int n) const;

 private:
  enum class Kind : std::uint8_t { constant, exponential, lognormal };
  Kind kind_ = Kind::constant;
  double mean_ = 0;
  double cv_ = 0;
};

class DataPipeline {
 public:
  using Callback = std::function<void()>;

  /// Builds the pipeline of `nodes × gpus_per_node` GPUs (global index
  /// node·gpus_per_node + local). Adds one storage link per node to `net` when enabled.
  /// Throws std::invalid_argument for nodes, gpus_per_node or sequences_per_batch < 1,
  /// workers_per_gpu < 0, prefetch_batches < 1, negative bandwidths or sample size, or a bad
  /// decode distribution. Memory O(GPUs·(workers + prefetch_batches)); builds no events.
  DataPipeline(engine::Simulator& sim, engine::FlowNetwork& net, const config::DataSpec& data,
               const config::DeviceSpec& device, int nodes, int gpus_per_node, int sequences_per_batch,
               std::uint64_t seed);
  DataPipeline(const DataPipeline&) = delete;
  DataPipeline& operator=(const DataPipeline&) = delete;
  ~DataPipeline();

  /// False when storage_bandwidth_per_node == 0: data loading is not modelled, requests are
  /// answered after 0 ns and nothing is measured.
  bool enabled() const { return enabled_; }
  /// Number of GPUs.
  int gpus() const { return gpu_count_; }
  /// Bytes of one batch: sequences_per_batch × sample_bytes [B].
  double batch_bytes() const { return batch_bytes_; }
  /// Host→device copy time of one batch (0 if host_to_device_bandwidth is 0).
  Time h2d_time() const { return h2d_time_; }
  /// The storage link of `node` (only when enabled). O(1).
  engine::LinkId storage_link(int node) const { return storage_links_.at(static_cast<std::size_t>(node)); }

  /// Optional record sink: each finished stall emits an EventKind::stall record
  /// (name "data_stall") and each host→device copy an EventKind::data record (name "h2d"),
  /// on resource "data", rank = global GPU index. nullptr (the default) records nothing.
  void set_sink(RecordSink* sink);

  /// Starts every worker loading at now() (warm-up before the first step, like a DataLoader
  /// created before the training loop). Idempotent; no-op when disabled or with 0 workers.
  /// O(GPUs·workers) flows started.
  void start();

  /// Asks for the next batch of `gpu` (global index); `on_ready` runs once the batch is on
  /// the device, always from an event, never inside this call. Requests of one GPU are served
  /// in order; several may be outstanding. Calls start() if it was not called (then there is
  /// no warm-up). Throws std::out_of_range for a bad gpu. O(1) amortised plus the events it
  /// causes.
  void request(int gpu, Callback on_ready);

  /// What was measured for `gpu`, as of now(). O(workers_per_gpu).
  GpuStats stats(int gpu) const;
  /// Ready batches now in `gpu`'s prefetch queue. O(1).
  int ready(int gpu) const;

 private:
  enum class WorkerState : std::uint8_t { idle, reading, decoding, blocked };

  struct Worker {
    explicit Worker(const RngStream& stream) : rng(stream) {}
    RngStream rng;
    std::int64_t batch = -1;        // batch being loaded or held
    Time blocked_since;
    engine::FlowId flow = 0;        // read in progress
    engine::EventId event = engine::kNoEvent;  // decode in progress
    WorkerState state = WorkerState::idle;
  };

  struct Gpu {
    std::vector<Callback> requests;  // FIFO; the first `popped` have their batch
    std::int64_t next_load = 0;      // next batch index a worker takes
    std::int64_t next_hand = 0;      // next batch index handed out
    engine::EventId copy_event = engine::kNoEvent;
    Time copy_start;
    Time stall_since;
    std::uint32_t popped = 0;
    int ready = 0;
    bool stalling = false;
    GpuStats stats;                  // finished intervals only
  };

  std::size_t slot_of(std::size_t gpu, std::int64_t batch) const;
  void check_gpu(int gpu) const;
  void begin_load(std::uint32_t worker);
  void on_read_done(std::uint32_t worker);
  void on_decoded(std::uint32_t worker);
  void admit(std::uint32_t worker);
  void after_admit(std::uint32_t worker);
  void serve(std::size_t gpu);
  void start_copy(std::size_t gpu);
  void on_copied(std::size_t gpu);

  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  Distribution decode_;
  bool enabled_ = false;
  bool started_ = false;
  bool on_demand_ = false;         // workers_per_gpu == 0: load in the training process
  int gpu_count_ = 0;
  int gpus_per_node_ = 0;
  int sequences_ = 0;
  std::uint32_t workers_per_gpu_ = 0;  // internal workers (1 when on demand)
  std::uint32_t prefetch_ = 0;
  double batch_bytes_ = 0;
  Time h2d_time_;
  std::vector<engine::LinkId> storage_links_;
  std::vector<Gpu> gpus_;
  std::vector<Worker> workers_;           // gpu·workers_per_gpu_ + w
  std::vector<std::uint8_t> ready_flags_; // gpu·prefetch_ + batch % prefetch_
  RecordSink* sink_ = nullptr;
  std::uint32_t sink_resource_ = 0;
  std::uint32_t sink_stall_name_ = 0;
  std::uint32_t sink_h2d_name_ = 0;
};

}  // namespace ironlaw::data
