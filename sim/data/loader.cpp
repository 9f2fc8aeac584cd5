#include "data/loader.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <span>
#include <stdexcept>
#include <utility>

namespace ironlaw::data {

namespace {

bool finite_non_negative(double x) { return x >= 0 && std::isfinite(x); }

/// A core's decoding rate in the flow network's units: core-nanoseconds of work per second.
constexpr double kCoreNsPerSecond = 1e9;

}  // namespace

Distribution::Distribution(const config::DistributionSpec& spec) : mean_(spec.mean), cv_(spec.cv) {
  if (spec.distribution == "constant" || spec.distribution == "fixed") {
    kind_ = Kind::constant;
  } else if (spec.distribution == "normal") {
    kind_ = Kind::normal;
  } else if (spec.distribution == "exponential") {
    kind_ = Kind::exponential;
  } else if (spec.distribution == "lognormal") {
    kind_ = Kind::lognormal;
  } else if (spec.distribution == "empirical") {
    kind_ = Kind::empirical;
    samples_ = spec.samples;
    if (samples_.empty()) throw std::invalid_argument("data::Distribution: an empirical distribution needs samples");
    for (double v : samples_) {
      if (!finite_non_negative(v)) throw std::invalid_argument("data::Distribution: samples must be finite and >= 0");
    }
  } else {
    throw std::invalid_argument("data::Distribution: unknown distribution \"" + spec.distribution +
                                "\" (expected constant, fixed, normal, exponential, lognormal or empirical)");
  }
  if (!finite_non_negative(mean_) || !finite_non_negative(cv_)) {
    throw std::invalid_argument("data::Distribution: mean and cv must be finite and >= 0");
  }
}

double Distribution::draw_seconds(RngStream& rng) const {
  switch (kind_) {
    case Kind::constant: return mean_;
    case Kind::normal: return cv_ > 0 ? std::max(0.0, mean_ * (1.0 + cv_ * rng.normal())) : mean_;
    case Kind::exponential: return rng.exponential(mean_);
    case Kind::lognormal: return rng.lognormal(mean_, cv_);
    case Kind::empirical: return samples_[static_cast<std::size_t>(rng.uniform_below(samples_.size()))];
  }
  return mean_;
}

Time Distribution::draw_sum(RngStream& rng, int n) const {
  if (n <= 0) return Time::zero();
  if (kind_ == Kind::constant) return Time::from_seconds(mean_) * n;
  Time total;
  for (int i = 0; i < n; ++i) total += Time::from_seconds(draw_seconds(rng));
  return total;
}

DataPipeline::DataPipeline(engine::Simulator& sim, engine::FlowNetwork& net, const config::DataSpec& data,
                           const config::DeviceSpec& device, int nodes, int gpus_per_node,
                           int sequences_per_batch, std::uint64_t seed, const Resources& resources)
    : sim_(sim),
      net_(net),
      decode_(data.storage_bandwidth_per_node > 0 ? config::DistributionSpec(data.decode_time)
                                                  : config::DistributionSpec{}),
      slow_decode_(data.storage_bandwidth_per_node > 0 && data.slow_loader.gpu >= 0
                       ? config::DistributionSpec(data.slow_loader.decode_time)
                       : config::DistributionSpec{}),
      enabled_(data.storage_bandwidth_per_node > 0),
      gpus_per_node_(gpus_per_node),
      sequences_(sequences_per_batch) {
  if (nodes < 1 || gpus_per_node < 1 || sequences_per_batch < 1) {
    throw std::invalid_argument("DataPipeline: nodes, gpus_per_node and sequences_per_batch must be >= 1");
  }
  if (!finite_non_negative(data.storage_bandwidth_per_node)) {
    throw std::invalid_argument("DataPipeline: storage_bandwidth_per_node must be finite and >= 0");
  }
  gpu_count_ = nodes * gpus_per_node;
  if (!enabled_) return;
  if (!finite_non_negative(data.sample_bytes) || !finite_non_negative(data.label_bytes)) {
    throw std::invalid_argument("DataPipeline: sample_bytes and label_bytes must be finite and >= 0");
  }
  if (!finite_non_negative(data.shared_fs_bandwidth)) {
    throw std::invalid_argument("DataPipeline: shared_fs_bandwidth must be finite and >= 0");
  }
  if (data.workers_per_gpu < 0 || data.prefetch_batches < 1) {
    throw std::invalid_argument("DataPipeline: workers_per_gpu must be >= 0 and prefetch_batches >= 1");
  }
  if (!finite_non_negative(device.host_to_device_bandwidth)) {
    throw std::invalid_argument("DataPipeline: host_to_device_bandwidth must be finite and >= 0");
  }
  if (data.slow_loader.gpu >= gpu_count_) {
    throw std::invalid_argument("DataPipeline: slow_loader.gpu " + std::to_string(data.slow_loader.gpu) +
                                " is not a GPU index below " + std::to_string(gpu_count_));
  }
  if (resources.cpu_cores_per_node < 0) throw std::invalid_argument("DataPipeline: cpu_cores_per_node must be >= 0");
  const auto gpu_count = static_cast<std::size_t>(gpu_count_);
  if ((!resources.h2d_paths.empty() && resources.h2d_paths.size() != gpu_count) ||
      (!resources.roles.empty() && resources.roles.size() != gpu_count)) {
    throw std::invalid_argument("DataPipeline: h2d_paths and roles must be empty or have one entry per GPU");
  }
  on_demand_ = data.workers_per_gpu == 0;
  workers_per_gpu_ = on_demand_ ? 1u : static_cast<std::uint32_t>(data.workers_per_gpu);
  prefetch_ = static_cast<std::uint32_t>(data.prefetch_batches);
  const double sequences = static_cast<double>(sequences_per_batch);
  h2d_bandwidth_ = device.host_to_device_bandwidth;
  if (!finite_non_negative(data.decoded_bytes)) throw std::invalid_argument("DataPipeline: decoded_bytes must be >= 0");
  const double labels = resources.inputs_carry_labels ? data.label_bytes : 0.0;
  const double decoded = data.decoded_bytes > 0 ? data.decoded_bytes : data.sample_bytes;
  gpu_decode_ = data.decode_device == "gpu";
  if (gpu_decode_ && !(device.jpeg_decode_rate > 0 && std::isfinite(device.jpeg_decode_rate))) {
    throw std::invalid_argument("DataPipeline: decode_device gpu needs the device's jpeg_decode_rate > 0");
  }
  if (data.decode_device != "cpu" && !gpu_decode_) {
    throw std::invalid_argument("DataPipeline: decode_device must be cpu or gpu, got " + data.decode_device);
  }
  // Decoding on the GPU, the copy carries the stored (encoded) bytes; the engine writes the
  // decoded image into device memory.
  batch_bytes_ = sequences * ((gpu_decode_ ? data.sample_bytes : decoded) + labels);
  const double read_bytes = sequences * (data.sample_bytes + labels);
  h2d_time_ = device.host_to_device_bandwidth > 0 ? transfer_time(batch_bytes_, device.host_to_device_bandwidth)
                                                  : Time::zero();

  storage_links_.reserve(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    storage_links_.push_back(
        net_.add_link(data.storage_bandwidth_per_node, Time::zero(), "node" + std::to_string(n) + "/storage"));
  }
  if (data.shared_fs_bandwidth > 0) {
    shared_fs_ = net_.add_link(data.shared_fs_bandwidth, Time::zero(), "storage/shared_fs");
    has_shared_fs_ = true;
  }
  if (resources.cpu_cores_per_node > 0) {
    for (int n = 0; n < nodes; ++n) {
      cpu_links_.push_back(net_.add_link(static_cast<double>(resources.cpu_cores_per_node) * kCoreNsPerSecond, Time::zero(),
                                         "node" + std::to_string(n) + "/cpu"));
    }
  }
  gpus_.resize(gpu_count);
  for (std::size_t gi = 0; gi < gpu_count; ++gi) {
    Gpu& g = gpus_[gi];
    // Batches in flight: next_hand … next_load − 1, at most prefetch + workers of them.
    g.phases.resize(static_cast<std::size_t>(prefetch_) + workers_per_gpu_ + 1);
    g.role = resources.roles.empty() ? GpuRole::inputs : resources.roles[gi];
    switch (g.role) {
      case GpuRole::inputs:
        g.bytes = batch_bytes_;
        g.read_bytes = read_bytes;
        g.decode = static_cast<int>(gi) == data.slow_loader.gpu ? &slow_decode_ : &decode_;
        if (gpu_decode_) {
          g.jpeg_engine = net_.add_link(device.jpeg_decode_rate, Time::zero(),
                                        "node" + std::to_string(gi / static_cast<std::size_t>(gpus_per_node)) + "/gpu" +
                                            std::to_string(gi % static_cast<std::size_t>(gpus_per_node)) + "/jpeg");
        }
        break;
      case GpuRole::labels: g.bytes = g.read_bytes = sequences * data.label_bytes; break;
      case GpuRole::none: break;
    }
    if (!resources.h2d_paths.empty() && device.host_to_device_bandwidth > 0) {
      const std::string name = "node" + std::to_string(gi / static_cast<std::size_t>(gpus_per_node)) + "/gpu" +
                               std::to_string(gi % static_cast<std::size_t>(gpus_per_node)) + "/h2d";
      g.copy_path.push_back(net_.add_link(device.host_to_device_bandwidth, Time::zero(), name));
      const auto& extra = resources.h2d_paths[gi];
      g.copy_path.insert(g.copy_path.end(), extra.begin(), extra.end());
    }
  }
  ready_flags_.assign(gpu_count * prefetch_, 0);
  workers_.reserve(gpu_count * workers_per_gpu_);
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < gpus_per_node; ++g) {
      const std::string prefix = "node" + std::to_string(n) + "/gpu" + std::to_string(g) + "/loader/";
      for (std::uint32_t w = 0; w < workers_per_gpu_; ++w) {
        const std::string path = on_demand_ ? prefix + "main" : prefix + "worker" + std::to_string(w);
        Worker& worker = workers_.emplace_back(RngStream(seed, path));
        if (resources.cpu_cores_per_node > 0) worker.core = net_.add_link(kCoreNsPerSecond, Time::zero(), path + "/core");
      }
    }
  }
}

DataPipeline::~DataPipeline() {
  for (const Worker& w : workers_) {
    if (w.flow != 0) net_.cancel_flow(w.flow);
    sim_.cancel(w.event);
  }
  for (const Gpu& g : gpus_) {
    sim_.cancel(g.copy_event);
    if (g.copy_flow != 0) net_.cancel_flow(g.copy_flow);
  }
}

void DataPipeline::set_sink(RecordSink* sink) {
  sink_ = sink;
  if (sink_ == nullptr) return;
  sink_resource_ = sink_->intern_resource("data");
  sink_stall_no_worker_ = sink_->intern_name("data_stall/no_worker");
  sink_stall_read_ = sink_->intern_name("data_stall/storage_read");
  sink_stall_decode_ = sink_->intern_name("data_stall/decode");
  sink_h2d_name_ = sink_->intern_name("h2d");
}

void DataPipeline::check_gpu(int gpu) const {
  if (gpu < 0 || gpu >= gpu_count_) {
    throw std::out_of_range("DataPipeline: gpu " + std::to_string(gpu) + " out of range [0, " +
                            std::to_string(gpu_count_) + ")");
  }
}

std::size_t DataPipeline::slot_of(std::size_t gpu, std::int64_t batch) const {
  return gpu * prefetch_ + static_cast<std::size_t>(batch % static_cast<std::int64_t>(prefetch_));
}

double DataPipeline::batch_bytes(int gpu) const {
  check_gpu(gpu);
  return enabled_ ? gpus_[static_cast<std::size_t>(gpu)].bytes : 0.0;
}

GpuRole DataPipeline::role(int gpu) const {
  check_gpu(gpu);
  return enabled_ ? gpus_[static_cast<std::size_t>(gpu)].role : GpuRole::inputs;
}

void DataPipeline::start() {
  if (started_) return;
  started_ = true;
  if (!enabled_ || on_demand_) return;
  for (std::uint32_t w = 0; w < workers_.size(); ++w) {
    if (gpus_[w / workers_per_gpu_].role != GpuRole::none) begin_load(w);
  }
}

void DataPipeline::request(int gpu, Callback on_ready) {
  check_gpu(gpu);
  if (!on_ready) throw std::invalid_argument("DataPipeline::request: empty callback");
  if (!enabled_) {
    sim_.schedule_in(Time::zero(), std::move(on_ready));
    return;
  }
  const auto gi = static_cast<std::size_t>(gpu);
  if (gpus_[gi].role == GpuRole::none) {
    throw std::logic_error("DataPipeline::request: gpu " + std::to_string(gpu) + " loads no data (role none)");
  }
  start();
  Gpu& g = gpus_[gi];
  g.requests.push_back(std::move(on_ready));
  serve(gi);
  if (on_demand_) {
    const auto w = static_cast<std::uint32_t>(gi);  // one worker per GPU
    if (workers_[w].state == WorkerState::idle && g.requests.size() > g.popped) begin_load(w);
  }
}

void DataPipeline::begin_load(std::uint32_t worker) {
  Worker& w = workers_[worker];
  const std::size_t gpu = worker / workers_per_gpu_;
  w.batch = gpus_[gpu].next_load++;
  w.state = WorkerState::reading;
  phases_of(gpus_[gpu], w.batch) = Phases{sim_.now(), Time::max(), Time::max()};
  const auto node = gpu / static_cast<std::size_t>(gpus_per_node_);
  const std::array<engine::LinkId, 2> links{storage_links_[node], shared_fs_};
  const std::span<const engine::LinkId> path(links.data(), has_shared_fs_ ? 2 : 1);
  w.flow = net_.start_flow(path, gpus_[gpu].read_bytes, [this, worker](engine::FlowId) { on_read_done(worker); });
}

void DataPipeline::on_read_done(std::uint32_t worker) {
  Worker& w = workers_[worker];
  w.flow = 0;
  w.state = WorkerState::decoding;
  const std::size_t gpu = worker / workers_per_gpu_;
  phases_of(gpus_[gpu], w.batch).decode_start = sim_.now();
  if (gpu_decode_ && gpus_[gpu].role == GpuRole::inputs) {
    // The batch's images on the GPU's JPEG engine, in images: the workers of one GPU share
    // it max-min, so more workers add no decode rate. No host core is used.
    const std::array<engine::LinkId, 1> engine{gpus_[gpu].jpeg_engine};
    w.flow = net_.start_flow(engine, static_cast<double>(sequences_), [this, worker](engine::FlowId) { on_decoded(worker); });
    return;
  }
  const Distribution* dist = gpus_[gpu].decode;
  const Time decode = dist != nullptr ? dist->draw_sum(w.rng, sequences_) : Time::zero();
  if (cpu_links_.empty()) {
    w.event = sim_.schedule_in(decode, [this, worker] { on_decoded(worker); });
    return;
  }
  // d of one core's work over the worker's core (1 core) and the node's cores (C): processor
  // sharing. Work is counted in core-nanoseconds, so the flow network's completion tolerance
  // (1e-3 of a unit) is a picosecond of decoding.
  const std::array<engine::LinkId, 2> links{w.core, cpu_links_[gpu / static_cast<std::size_t>(gpus_per_node_)]};
  w.flow = net_.start_flow(links, static_cast<double>(decode.count_ns()),
                           [this, worker](engine::FlowId) { on_decoded(worker); });
}

void DataPipeline::on_decoded(std::uint32_t worker) {
  Worker& w = workers_[worker];
  w.event = engine::kNoEvent;
  w.flow = 0;
  const std::size_t gpu = worker / workers_per_gpu_;
  Gpu& g = gpus_[gpu];
  phases_of(g, w.batch).decoded = sim_.now();
  if (w.batch >= g.next_hand + static_cast<std::int64_t>(prefetch_)) {
    w.state = WorkerState::blocked;  // its slot still holds batch − prefetch: wait for the pop
    w.blocked_since = sim_.now();
    return;
  }
  admit(worker);
  if (!on_demand_) begin_load(worker);
  serve(gpu);
  if (on_demand_ && w.state == WorkerState::idle && g.requests.size() > g.popped) begin_load(worker);
}

void DataPipeline::admit(std::uint32_t worker) {
  Worker& w = workers_[worker];
  const std::size_t gpu = worker / workers_per_gpu_;
  Gpu& g = gpus_[gpu];
  ready_flags_[slot_of(gpu, w.batch)] = 1;
  ++g.ready;
  if (g.ready > g.stats.max_ready) g.stats.max_ready = g.ready;
  ++g.stats.batches_loaded;
  w.batch = -1;
  w.state = WorkerState::idle;
}

void DataPipeline::serve(std::size_t gpu) {
  Gpu& g = gpus_[gpu];
  const Time now = sim_.now();
  while (g.popped < g.requests.size()) {
    const std::size_t slot = slot_of(gpu, g.next_hand);
    if (ready_flags_[slot] == 0) {
      if (!g.stalling) {
        g.stalling = true;
        g.stall_since = now;
      }
      return;
    }
    if (g.stalling) {
      g.stalling = false;
      const Time stall = now - g.stall_since;
      if (stall > Time::zero()) {  // a request and a batch at the same instant is no stall
        g.stats.stall += stall;
        ++g.stats.stalls;
        if (stall > g.stats.max_stall) g.stats.max_stall = stall;
        if (sink_ != nullptr) record_stall(gpu, g.next_hand, g.stall_since, now);
      }
    }
    ready_flags_[slot] = 0;
    --g.ready;
    ++g.next_hand;
    ++g.popped;
    ++g.stats.batches_popped;
    // The freed slot belongs to batch (popped + prefetch): release the worker holding it.
    const std::int64_t unblocked = g.next_hand - 1 + static_cast<std::int64_t>(prefetch_);
    const auto first = static_cast<std::uint32_t>(gpu * workers_per_gpu_);
    for (std::uint32_t wi = first; wi < first + workers_per_gpu_; ++wi) {
      Worker& w = workers_[wi];
      if (w.state == WorkerState::blocked && w.batch == unblocked) {
        g.stats.worker_blocked += now - w.blocked_since;
        admit(wi);
        begin_load(wi);
        break;
      }
    }
    if (!copying(g)) start_copy(gpu);
  }
}

void DataPipeline::record_stall(std::size_t gpu, std::int64_t batch, Time since, Time now) {
  const Phases p = phases_of(gpus_[gpu], batch);
  // The awaited batch went through: not started → read → decode → ready (= now). Each part of
  // [since, now) is charged to the phase the batch was in; a phase that had not begun by now
  // contributes nothing, so the parts cover the stall exactly.
  const Time read = std::min(p.read_start, now);
  const Time decode = std::min(std::max(p.decode_start, read), now);
  const Time done = std::min(std::max(p.decoded, decode), now);
  auto part = [&](Time a, Time b, std::uint32_t name) {
    a = std::max(a, since);
    b = std::min(b, now);
    if (b > a) {
      sink_->on_event(EventRecord{static_cast<std::int32_t>(gpu), sink_resource_, EventKind::stall, name,
                                  a.count_ns(), b.count_ns(), 0, 0});
    }
  };
  part(since, read, sink_stall_no_worker_);
  part(read, decode, sink_stall_read_);
  part(decode, done, sink_stall_decode_);
  part(done, now, sink_stall_no_worker_);
}

void DataPipeline::start_copy(std::size_t gpu) {
  Gpu& g = gpus_[gpu];
  g.copy_start = sim_.now();
  const auto gi = static_cast<std::uint32_t>(gpu);
  if (!g.copy_path.empty()) {
    g.copy_flow = net_.start_flow(g.copy_path, g.bytes, [this, gi](engine::FlowId) { on_copied(gi); });
    return;
  }
  const Time alone = h2d_bandwidth_ > 0 ? transfer_time(g.bytes, h2d_bandwidth_) : Time::zero();
  g.copy_event = sim_.schedule_in(alone, [this, gi] { on_copied(gi); });
}

void DataPipeline::on_copied(std::size_t gpu) {
  Gpu& g = gpus_[gpu];
  g.copy_event = engine::kNoEvent;
  g.copy_flow = 0;
  const Time now = sim_.now();
  g.stats.h2d += now - g.copy_start;
  ++g.stats.batches_delivered;
  if (sink_ != nullptr) {
    sink_->on_event(EventRecord{static_cast<std::int32_t>(gpu), sink_resource_, EventKind::data, sink_h2d_name_,
                                g.copy_start.count_ns(), now.count_ns(), 0, g.bytes});
  }
  Callback done = std::move(g.requests.front());
  g.requests.erase(g.requests.begin());
  --g.popped;
  if (g.popped > 0) start_copy(gpu);
  done();
}

GpuStats DataPipeline::stats(int gpu) const {
  check_gpu(gpu);
  if (!enabled_) return GpuStats{};
  const auto gi = static_cast<std::size_t>(gpu);
  const Gpu& g = gpus_[gi];
  GpuStats s = g.stats;
  const Time now = sim_.now();
  if (g.stalling && now > g.stall_since) {
    s.stall += now - g.stall_since;
    ++s.stalls;
  }
  const std::size_t first = gi * workers_per_gpu_;
  for (std::size_t wi = first; wi < first + workers_per_gpu_; ++wi) {
    if (workers_[wi].state == WorkerState::blocked) s.worker_blocked += now - workers_[wi].blocked_since;
  }
  return s;
}

int DataPipeline::ready(int gpu) const {
  check_gpu(gpu);
  return enabled_ ? gpus_[static_cast<std::size_t>(gpu)].ready : 0;
}

}  // namespace ironlaw::data
