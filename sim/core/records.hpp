#pragma once
/// \file Typed records the simulation emits (STYLE.md §9). Components write records to a
/// RecordSink; the HDF5 writer is one sink, tests use an in-memory one. Results are never
/// parsed from logs.
#include <cstdint>
#include <string>
#include <vector>

namespace ironlaw {

/// What an event on the timeline was. Stored as an HDF5 enum; names are part of the
/// output contract (outputs/README.md).
enum class EventKind : std::uint8_t {
  forward = 0,    ///< forward compute of a layer/op
  backward = 1,   ///< backward compute
  recompute = 2,  ///< activation recomputation (counts in HFU, not MFU)
  optimizer = 3,  ///< optimizer step
  collective = 4, ///< one collective call (all-reduce, reduce-scatter, all-gather, ...)
  flow = 5,       ///< one network flow of a collective step
  data = 6,       ///< data loading / host-to-device copy
  stall = 7,      ///< time a rank waited with nothing to run
};
inline constexpr int kEventKindCount = 8;
const char* event_kind_name(EventKind kind);

/// One interval on one rank's resource.
struct EventRecord {
  std::int32_t rank = -1;        ///< global GPU rank, -1 for fabric-level records
  std::uint32_t resource = 0;    ///< index into the sink's resource name table
  EventKind kind = EventKind::forward;
  std::uint32_t name = 0;        ///< index into the sink's event name table
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  double flops = 0;              ///< model FLOPs of the op (0 for communication)
  double bytes = 0;              ///< bytes moved (communication) or touched (memory-bound op)
};

/// One simulated training step (aggregated over ranks).
struct StepRecord {
  std::int64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  double compute_s = 0;          ///< busy compute time of the critical rank
  double exposed_comm_s = 0;     ///< communication not hidden behind compute
  double bubble_s = 0;           ///< pipeline idle time
  double data_stall_s = 0;       ///< waiting for the input pipeline
  double other_s = 0;            ///< optimizer, launch gaps, ...
  double model_flops = 0;        ///< PaLM-convention model FLOPs of the step, all GPUs
  double hardware_flops = 0;     ///< including recomputation
  double tokens = 0;
};

/// Receives records while a simulation runs. String tables (resource and event names) are
/// interned by the sink so records stay small.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  /// Returns the index of `name` in the resource table, adding it if new.
  virtual std::uint32_t intern_resource(const std::string& name) = 0;
  /// Returns the index of `name` in the event-name table, adding it if new.
  virtual std::uint32_t intern_name(const std::string& name) = 0;
  virtual void on_event(const EventRecord& record) = 0;
  virtual void on_step(const StepRecord& record) = 0;
};

/// Keeps everything in memory; for tests and for `analyze` on small runs.
class MemorySink : public RecordSink {
 public:
  std::uint32_t intern_resource(const std::string& name) override;
  std::uint32_t intern_name(const std::string& name) override;
  void on_event(const EventRecord& record) override { events.push_back(record); }
  void on_step(const StepRecord& record) override { steps.push_back(record); }

  std::vector<std::string> resources;
  std::vector<std::string> names;
  std::vector<EventRecord> events;
  std::vector<StepRecord> steps;
};

/// Discards events but still answers interning; for runs with trace level "none".
class NullSink : public RecordSink {
 public:
  std::uint32_t intern_resource(const std::string&) override { return 0; }
  std::uint32_t intern_name(const std::string&) override { return 0; }
  void on_event(const EventRecord&) override {}
  void on_step(const StepRecord&) override {}
};

}  // namespace ironlaw
