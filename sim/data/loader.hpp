#pragma once
/// \file The input pipeline of every GPU: storage reads, CPU loader workers, a bounded
/// prefetch queue and host-to-device copies (DESIGN.md "Data pipeline").
///
/// Mechanism, per node and per GPU:
/// - Each node has one storage read channel: a FlowNetwork link of
///   `storage_bandwidth_per_node` named "node<N>/storage". Every read of every worker of the
///   node's GPUs is a flow on it, so concurrent reads share it max-min fairly. With
///   `shared_fs_bandwidth` > 0 every read also crosses one cluster-wide link "storage/shared_fs"
///   (a parallel file system's aggregate limit), shared by all nodes.
/// - Each GPU has `workers_per_gpu` workers. A worker loads one batch at a time: it takes the
///   GPU's next batch index, reads the batch's bytes from storage (one flow), then decodes the
///   batch's samples one after another (one decode time drawn per sample from `decode_time`,
///   or from the slow loader's distribution on that GPU; the draws are summed into one piece
///   of work per batch), then offers the batch to the GPU's prefetch queue.
/// - Decoding runs on CPU cores. Without a core budget (Resources::cpu_cores_per_node == 0)
///   each worker has a core of its own: a decode of d seconds is one event d later. With a
///   budget of C cores per node, a decode is a flow of d of core time (in core-ns) over the
///   worker's own "core" link (capacity 1 core) and the node's "node<N>/cpu" link (C cores): with
///   W workers decoding at once each runs at min(1, C / W) of a core (processor sharing), so
///   more workers than cores slow each other down.
/// - The prefetch queue holds at most `prefetch_batches` ready batches and hands them out in
///   batch-index order. Batch j may enter it once batch j − prefetch_batches has been handed
///   out; a worker whose finished batch may not enter yet holds it and idles (back-pressure)
///   until a slot frees, then starts its next batch. The batch the GPU needs next can always
///   enter, so the pipeline cannot deadlock.
/// - Storage reads carry `sample_bytes` per sample; the host→device copy carries
///   `decoded_bytes` per sample (sample_bytes when 0), e.g. a decoded float32 image crop.
/// - With `decode_device: gpu` (DALI's "mixed" decoder on the hardware JPEG engine, NVJPG) a
///   worker's decode is a flow of the batch's images over the GPU's engine link
///   "node<N>/gpu<G>/jpeg" (capacity DeviceSpec::jpeg_decode_rate, images/s), shared max-min by
///   the GPU's workers; no host core decodes, and the host→device copy carries the stored
///   sample_bytes (the engine writes the decoded image in device memory). The engine runs
///   beside the SMs, so training kernels are not slowed. Simplifications, stated: the copy of
///   the encoded batch is timed at hand-out as the decoded copy is (in DALI it precedes the
///   decode; inside a prefetching pipeline only the first batch's latency differs), and the
///   GPU-side resize/crop/normalize kernels of such a pipeline are not simulated.
/// - `request(gpu, cb)` asks for the GPU's next batch. When it is ready it is popped (freeing
///   a slot), copied host→device (copies of one GPU run one after another) and then `cb()`
///   runs. Without an H2D path a copy takes bytes / host_to_device_bandwidth. With one
///   (Resources::h2d_paths, e.g. the PCIe switch → GPU link the GPU shares with its NIC), the
///   copy is a flow over the GPU's copy-engine link "node<N>/gpu<G>/h2d" (capacity
///   host_to_device_bandwidth) and that path, so it shares PCIe with GPUDirect RDMA traffic.
/// - Roles (Resources::roles): a GPU with role `inputs` loads sample_bytes (+ label_bytes when
///   it also holds the labels) per sample and decodes them; `labels` loads label_bytes per
///   sample and decodes nothing (the last pipeline stage); `none` runs no loader and may not
///   request.
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

/// What a GPU's loader does (see the file comment).
enum class GpuRole : std::uint8_t { inputs, labels, none };

/// Where the pipeline's work runs on the cluster. Every field is optional: the defaults give
/// a self-contained pipeline (a private copy engine per GPU, one core per worker, every GPU
/// loading inputs).
struct Resources {
  /// CPU cores per node the loader workers share; 0 = one dedicated core per worker.
  int cpu_cores_per_node = 0;
  /// Per GPU (global index): links a host→device copy crosses after the GPU's copy engine,
  /// e.g. {PCIe switch → GPU}. Empty vector: no flows, copies are timed alone.
  std::vector<std::vector<engine::LinkId>> h2d_paths;
  /// Per GPU; empty = all `inputs`.
  std::vector<GpuRole> roles;
  /// Whether an `inputs` GPU also loads the labels (true when it is also the last stage).
  bool inputs_carry_labels = true;
};

/// Turns a DistributionSpec into draws [s]. `constant` (alias `fixed`) returns the mean;
/// `normal` draws mean·(1 + cv·Z) truncated at 0; `exponential` ignores cv (its cv is 1);
/// `lognormal` uses (mean, cv); `empirical` picks one of `samples` uniformly. O(1).
/// Throws std::invalid_argument for an unknown distribution name, a negative mean or cv, or
/// an empirical distribution without samples (or with a negative one).
class Distribution {
 public:
  explicit Distribution(const config::DistributionSpec& spec);
  /// One draw [s], ≥ 0. Draws nothing from `rng` for `constant`.
  double draw_seconds(RngStream& rng) const;
  /// Sum of `n` draws, each rounded up to whole ns (as Time::from_seconds). O(n).
  Time draw_sum(RngStream& rng, int n) const;

 private:
  enum class Kind : std::uint8_t { constant, normal, exponential, lognormal, empirical };
  Kind kind_ = Kind::constant;
  double mean_ = 0;
  double cv_ = 0;
  std::vector<double> samples_;
};

class DataPipeline {
 public:
  using Callback = std::function<void()>;

  /// Builds the pipeline of `nodes × gpus_per_node` GPUs (global index
  /// node·gpus_per_node + local). Adds to `net`, when enabled, one storage link per node, the
  /// shared-FS link, the CPU links of a core budget and one copy-engine link per GPU with an
  /// H2D path. Throws std::invalid_argument for nodes, gpus_per_node or sequences_per_batch
  /// < 1, workers_per_gpu < 0, prefetch_batches < 1, negative bandwidths or sizes, a bad
  /// decode distribution, a slow loader outside the GPUs, `resources` vectors of a size
  /// other than 0 or the GPU count, a decode_device other than cpu or gpu, or gpu on a device
  /// whose jpeg_decode_rate is not > 0. With decode_device gpu it also adds one JPEG-engine
  /// link per GPU that loads inputs. Memory O(GPUs·(workers + prefetch_batches)); builds no
  /// events.
  DataPipeline(engine::Simulator& sim, engine::FlowNetwork& net, const config::DataSpec& data,
               const config::DeviceSpec& device, int nodes, int gpus_per_node, int sequences_per_batch,
               std::uint64_t seed, const Resources& resources = {});
  DataPipeline(const DataPipeline&) = delete;
  DataPipeline& operator=(const DataPipeline&) = delete;
  ~DataPipeline();

  /// False when storage_bandwidth_per_node == 0: data loading is not modelled, requests are
  /// answered after 0 ns and nothing is measured.
  bool enabled() const { return enabled_; }
  /// Number of GPUs.
  int gpus() const { return gpu_count_; }
  /// Bytes one input batch copies to the device: sequences_per_batch × (decoded_bytes, or
  /// sample_bytes when 0, [+ label_bytes]) [B].
  double batch_bytes() const { return batch_bytes_; }
  /// Bytes one batch of `gpu` copies to the device, by its role (0 for `none`). O(1).
  double batch_bytes(int gpu) const;
  /// The role of `gpu`. O(1).
  GpuRole role(int gpu) const;
  /// Host→device copy time of one input batch alone on its path (0 if
  /// host_to_device_bandwidth is 0; link latencies of an H2D path not included).
  Time h2d_time() const { return h2d_time_; }
  /// The storage link of `node` (only when enabled). O(1).
  engine::LinkId storage_link(int node) const { return storage_links_.at(static_cast<std::size_t>(node)); }

  /// Optional record sink: each finished stall emits EventKind::stall records split by what
  /// the awaited batch was doing during the stall, which together cover the stall exactly:
  /// "data_stall/no_worker" (no worker had started it yet: all were busy with earlier
  /// batches, or, with workers_per_gpu 0, the load starts only now), "data_stall/storage_read"
  /// (its storage read in progress), "data_stall/decode" (its decode/augment on the CPU in
  /// progress, including time lost to other workers on shared cores, or with decode_device
  /// gpu its decode on the GPU's JPEG engine); each host→device copy
  /// an EventKind::data record (name "h2d"), on resource "data", rank = global GPU index.
  /// nullptr (the default) records nothing.
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
    engine::FlowId flow = 0;        // read or (with a core budget) decode in progress
    engine::EventId event = engine::kNoEvent;  // decode in progress (no core budget)
    engine::LinkId core = 0;        // its core link (with a core budget)
    WorkerState state = WorkerState::idle;
  };

  /// When a batch's load phases began (Time::max() = not yet): for the stall's causes.
  struct Phases {
    Time read_start = Time::max();
    Time decode_start = Time::max();
    Time decoded = Time::max();
  };

  struct Gpu {
    std::vector<Callback> requests;  // FIFO; the first `popped` have their batch
    std::vector<Phases> phases;      // batch % phases.size(); covers every batch in flight
    std::int64_t next_load = 0;      // next batch index a worker takes
    std::int64_t next_hand = 0;      // next batch index handed out
    engine::EventId copy_event = engine::kNoEvent;
    engine::FlowId copy_flow = 0;
    std::vector<engine::LinkId> copy_path;  // empty: copies timed alone
    const Distribution* decode = nullptr;   // nullptr: no decode (labels)
    double read_bytes = 0;                  // read from storage per batch
    double bytes = 0;                       // copied to the device per batch
    GpuRole role = GpuRole::inputs;
    engine::LinkId jpeg_engine = 0;         // decode_device gpu: the GPU's JPEG decoder
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
  /// Emits the records of `gpu`'s stall [since, now) on batch `batch`, split by cause.
  void record_stall(std::size_t gpu, std::int64_t batch, Time since, Time now);
  Phases& phases_of(Gpu& g, std::int64_t batch) {
    return g.phases[static_cast<std::size_t>(batch) % g.phases.size()];
  }
  void on_copied(std::size_t gpu);
  bool copying(const Gpu& g) const { return g.copy_event != engine::kNoEvent || g.copy_flow != 0; }

  engine::Simulator& sim_;
  engine::FlowNetwork& net_;
  Distribution decode_;
  Distribution slow_decode_;
  bool enabled_ = false;
  bool started_ = false;
  bool on_demand_ = false;         // workers_per_gpu == 0: load in the training process
  bool gpu_decode_ = false;        // decode_device gpu: decode on the GPU's JPEG engine
  int gpu_count_ = 0;
  int gpus_per_node_ = 0;
  int sequences_ = 0;
  std::uint32_t workers_per_gpu_ = 0;  // internal workers (1 when on demand)
  std::uint32_t prefetch_ = 0;
  double batch_bytes_ = 0;
  double h2d_bandwidth_ = 0;
  Time h2d_time_;
  std::vector<engine::LinkId> storage_links_;
  engine::LinkId shared_fs_ = 0;
  bool has_shared_fs_ = false;
  std::vector<engine::LinkId> cpu_links_;  // per node, with a core budget
  std::vector<Gpu> gpus_;
  std::vector<Worker> workers_;           // gpu·workers_per_gpu_ + w
  std::vector<std::uint8_t> ready_flags_; // gpu·prefetch_ + batch % prefetch_
  RecordSink* sink_ = nullptr;
  std::uint32_t sink_resource_ = 0;
  std::uint32_t sink_stall_no_worker_ = 0;
  std::uint32_t sink_stall_read_ = 0;
  std::uint32_t sink_stall_decode_ = 0;
  std::uint32_t sink_h2d_name_ = 0;
};

}  // namespace ironlaw::data
