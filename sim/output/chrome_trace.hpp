#pragma once
/// \file Chrome Trace Event JSON export of the event timeline (opens in Perfetto and
/// chrome://tracing). One "X" (complete) event per EventRecord: pid = rank (fabric-level
/// records, rank -1, go to pid kFabricPid), tid = resource index, named by "M" metadata events
/// (process_name "rank N", thread_name = resource name); ts and dur in microseconds written as
/// exact decimals with nanosecond precision; cat = kind; args = flops, bytes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/records.hpp"

namespace ironlaw::output {

class H5Reader;

/// Process id used for records with rank -1 (fabric, switches, storage).
inline constexpr std::int64_t kFabricPid = 2147483647;

/// Streams a trace to a temporary sibling of `target`; commit() completes the JSON and renames
/// it onto the target. Destroyed without commit, it removes the temporary file. O(1) memory per
/// event (plus the set of (rank, resource) pairs seen). Throws std::runtime_error on I/O errors.
class ChromeTraceWriter {
 public:
  explicit ChromeTraceWriter(std::filesystem::path target);
  ~ChromeTraceWriter();
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  /// Appends one event; `resource` and `name` are the strings its indices refer to.
  void add(const EventRecord& record, std::string_view resource, std::string_view name);
  /// Closes the JSON, flushes, renames onto the target.
  void commit();

 private:
  void begin_record();
  void check_stream(std::string_view what);

  std::filesystem::path target_;
  std::filesystem::path temporary_;
  std::ofstream out_;
  bool first_ = true;
  bool committed_ = false;
  std::unordered_set<std::int64_t> processes_seen_;
  std::unordered_set<std::uint64_t> threads_seen_;
};

/// Writes `events` (indices into `resources` and `names`) as a Chrome trace at `target`.
void write_chrome_trace(const std::filesystem::path& target, const std::vector<EventRecord>& events,
                        const std::vector<std::string>& resources,
                        const std::vector<std::string>& names);

/// Converts the /events of an ironlaw HDF5 file to a Chrome trace at `target`, batch by batch.
void export_chrome_trace(const H5Reader& reader, const std::filesystem::path& target);

/// `ns` nanoseconds as microseconds, exact: 1234567 → "1234.567", -5 → "-0.005".
std::string format_microseconds(std::int64_t ns);

}  // namespace ironlaw::output
