#pragma once
/// \file Chrome Trace Event JSON export of the event timeline (opens in Perfetto and
/// chrome://tracing). One "X" (complete) event per EventRecord: pid = rank (fabric-level
/// records, rank -1, go to pid kFabricPid), tid = resource index, named by "M" metadata events
/// (process_name "rank N", thread_name = resource name); ts and dur in microseconds written as
/// exact decimals with nanosecond precision; cat = kind; args = flops, bytes.
///
/// export_chrome_trace() can keep a chosen set of ranks only, and adds counter tracks ("C"
/// events) for the links under the process kLinksPid: one track per link, its busy share (time
/// with at least one flow, 0..1) per time bin of /link_series when the run recorded it (a value
/// at each bin's start, 0 at the last bin's end), else the whole-run share of /links, constant
/// over the simulated span.
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
/// Process id of the link counter tracks.
inline constexpr std::int64_t kLinksPid = 2147483646;
/// Most link counter tracks written (the busiest links first), so a large cluster's trace
/// stays readable in Perfetto.
inline constexpr std::size_t kMaxLinkCounters = 64;

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
  /// Appends a counter sample: track `track` of process `pid` holds `value` from `ts_ns` on.
  void add_counter(std::int64_t pid, std::string_view process_name, std::string_view track, std::int64_t ts_ns,
                   double value);
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

/// Converts the /events of an ironlaw HDF5 file to a Chrome trace at `target`, batch by batch
/// (O(batch) memory): the events of `ranks` (ascending; empty = every rank in the file) and
/// the fabric's (rank −1), then the link counter tracks: the kMaxLinkCounters busiest links of
/// /link_series, one value per bin, or else of /links, sampled at the first step's start and
/// the last step's end. A rank of `ranks` with
/// no event in the file is an InputError naming `key` and the ranks the file holds (nothing is
/// written). Throws std::runtime_error on a malformed file, IoError on I/O errors. Messages name
/// the file as `file_label`, or the reader's path when it is empty (a temporary that becomes
/// `file_label` once the trace is complete).
void export_chrome_trace(const H5Reader& reader, const std::filesystem::path& target,
                         const std::vector<int>& ranks = {}, const std::string& key = "--chrome-trace-ranks",
                         const std::string& file_label = "");

/// The ranks that have at least one /events row, ascending (fabric records, rank −1, left out).
/// One pass over /events, O(batch + ranks) memory.
std::vector<int> recorded_ranks(const H5Reader& reader);

/// `ranks` (ascending, unique) written compactly: {0,1,2,3,8} → "0-3,8"; {} → "none".
std::string format_rank_set(const std::vector<int>& ranks);

/// `ns` nanoseconds as microseconds, exact: 1234567 → "1234.567", -5 → "-0.005".
std::string format_microseconds(std::int64_t ns);

}  // namespace ironlaw::output
