#pragma once
/// \file Reads an ironlaw HDF5 output file (layout: outputs/README.md) back into records, for
/// `ironlaw analyze` and tests. Events are read in batches so traces of any size fit in memory.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/records.hpp"
#include "output/h5_handle.hpp"
#include "output/tables.hpp"

namespace ironlaw::output {

/// An open ironlaw output file, read-only. Every failure (missing file, not HDF5, not written
/// by ironlaw, missing or malformed dataset) throws std::runtime_error naming the file and the
/// object; nothing is printed.
class H5Reader {
 public:
  /// Opens `path` and checks the root attribute format == "ironlaw".
  explicit H5Reader(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  /// /format_version of the file.
  std::int64_t format_version() const { return format_version_; }
  /// True if the file has the object `object_path` (e.g. "/events", "/run/failures").
  bool has(const std::string& object_path) const;

  /// /scenario: YAML text, seed, name, version.
  ScenarioInfo scenario() const;
  /// /summary as (name, value) in file order; integer fields are converted to double.
  std::vector<std::pair<std::string, double>> summary() const;
  /// The `units` attribute of a compound dataset (one per field, in field order).
  std::vector<std::string> units(const std::string& dataset_path) const;
  /// The `descriptions` attribute of /summary or /sweep: one sentence per field, in field order.
  std::vector<std::string> descriptions(const std::string& dataset_path) const;

  /// All /steps rows, in order. O(steps) memory.
  std::vector<StepRecord> steps() const;
  /// /event_names and /event_resources: the tables EventRecord::name and ::resource index.
  std::vector<std::string> event_names() const;
  std::vector<std::string> event_resources() const;
  /// Number of /events rows (0 if the file has no /events).
  std::uint64_t event_count() const;
  /// Calls `visit` with consecutive batches of at most `batch_rows` events, in file order.
  /// O(batch_rows) memory. A batch size that is a multiple of the file's chunk size (65536 by
  /// default) decompresses each chunk once.
  void for_each_event_batch(const std::function<void(const std::vector<EventRecord>&)>& visit,
                            std::size_t batch_rows = 65536) const;

  /// /run@simulated: "steps" or "full".
  std::string run_mode() const;
  /// Names of the tables under /run, in creation order.
  std::vector<std::string> run_tables() const;
  /// The table /run/<name>: float fields as double columns, integer fields as int64 columns.
  std::vector<TableColumn> read_table(const std::string& name) const;

  /// /sweep: varied keys, metrics with units, rows.
  SweepTable sweep() const;
  /// /plan (ironlaw plan): its string fields but status (layout, schedule, ...) as
  /// varied_keys, status, and its numeric fields as metrics with their units, in field order.
  /// Throws when a field's length differs from the others'.
  SweepTable plan() const;
  /// /link_names and /links (columns bytes [B], busy_s [s]); throw if the file has none.
  std::vector<std::string> link_names() const;
  std::vector<TableColumn> links() const;

 private:
  H5Handle open_dataset(const std::string& dataset_path) const;
  std::vector<std::string> read_string_vector(const char* dataset_path) const;
  std::vector<TableColumn> read_numeric_table(const std::string& path) const;

  std::filesystem::path path_;
  std::string label_;
  std::int64_t format_version_ = 0;
  H5Handle file_;
};

}  // namespace ironlaw::output
