#pragma once
/// \file The HDF5 record sink: writes one run's (or one sweep's) output file. Layout, units and
/// conventions: outputs/README.md (a public interface). Identical calls give byte-identical
/// files: no timestamps, fixed library format bounds, packed rows, fixed chunk sizes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/records.hpp"
#include "output/h5_handle.hpp"
#include "output/tables.hpp"

namespace ironlaw::output {

/// Fixed storage parameters. Part of what makes output reproducible: a file depends on them.
struct H5WriterOptions {
  std::size_t event_chunk_rows = 65536;  ///< rows per /events chunk (45 B each) = rows buffered
  std::size_t step_chunk_rows = 4096;    ///< rows per /steps chunk (88 B each)
  unsigned deflate_level = 4;            ///< gzip level of /events and /steps (with shuffle)
};

/// Writes `<target>` through a temporary sibling file; only commit() makes it appear under the
/// target name (atomic rename). Destroyed without commit (an exception, an error exit), it
/// removes the temporary file, so no partial output is ever left behind.
///
/// Records stream: on_event/on_step buffer at most one chunk of rows, then append it, so
/// memory stays bounded (about 3 MB plus the name tables) for any number of events.
/// Not thread-safe: one thread drives one writer. Every failure throws std::runtime_error with
/// the target path and what failed; nothing is printed.
class H5Writer final : public RecordSink {
 public:
  /// Creates the temporary file. Throws if the directory of `target` does not exist or the file
  /// cannot be created.
  explicit H5Writer(std::filesystem::path target, H5WriterOptions options = {});
  ~H5Writer() override;
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;

  /// O(1) average (hash map). Indices are dense, in first-seen order.
  std::uint32_t intern_resource(const std::string& name) override;
  std::uint32_t intern_name(const std::string& name) override;
  /// Appends one /events row; amortised O(1), writes a compressed chunk every
  /// event_chunk_rows rows.
  void on_event(const EventRecord& record) override;
  /// Appends one /steps row; amortised O(1).
  void on_step(const StepRecord& record) override;

  /// Writes /scenario: the resolved YAML text with attributes seed, name, version. Once.
  void write_scenario(std::string_view yaml_text, std::uint64_t seed, std::string_view name,
                      std::string_view version = kIronlawVersion);

  /// Writes /summary: one row, one float64 field per metric, in the order given; the `units`
  /// attribute takes default_metric_unit(name) for each. Names must be unique. Once.
  void write_summary(const std::vector<std::pair<std::string, double>>& metrics);
  /// As above with explicit units (one per metric).
  void write_summary(const std::vector<std::pair<std::string, double>>& metrics,
                     const std::vector<std::string>& units);

  /// Writes the table /run/<name> (e.g. "failures", "checkpoints", "restarts"): a compound
  /// dataset with one field per column, float64 or int64, `units` attribute. Columns must have
  /// equal lengths (0 rows is allowed) and unique names; `name` must be new and contain no '/'.
  void write_table(const std::string& name, const std::vector<TableColumn>& columns);

  /// Writes /links (one row per link that carried traffic: bytes [B], busy_s [s], the time with
  /// at least one flow on it) and /link_names (the link's stable name, same order). Once.
  void write_links(const std::vector<std::string>& names, const std::vector<double>& bytes,
                   const std::vector<double>& busy_s);

  /// Writes /link_series_names (the links, busiest first) and /link_series: one row per link
  /// and time bin, links in name order and bins in time order, with the fields link (int64,
  /// index into /link_series_names), bin (int64), start_s, end_s [s], busy_s [s] (time with at
  /// least one flow on the link), busy_fraction [1] (busy_s / (end_s − start_s)) and
  /// bandwidth [B/s] (the link's capacity). `busy[l][b]`: link l, bin b; bin b spans
  /// [start_s + b·bin_s, min(start_s + (b+1)·bin_s, end_s)). Once.
  void write_link_series(const std::vector<std::string>& names, const std::vector<double>& bandwidth,
                         double start_s, double bin_s, double end_s, const std::vector<std::vector<double>>& busy);

  /// Sets /run@simulated ("steps": only step-level detail was simulated; "full": the whole
  /// run). Default: "full" if a /run table was written, else "steps".
  void set_run_mode(std::string_view simulated);

  /// Writes /sweep: one row per point; first one fixed-length string field per varied key (the
  /// value as written), then the string field "status" (SweepRow::status), then one float64
  /// field per metric. Attributes varied_keys, metrics and units. Every row must have one value per key and one number per metric. Once. A file with
  /// a sweep gets /steps, /events and /run only if records or tables were written to it.
  void write_sweep(const std::vector<std::string>& varied_keys,
                   const std::vector<std::string>& metric_names, const std::vector<SweepRow>& rows);

  /// Writes /plan (ironlaw plan): one row per layout; one fixed-length string field per name in
  /// `text_fields` (SweepRow::values), the string field "status", then one float64 field per
  /// metric with its unit and description (attributes units, descriptions); `counts` become
  /// float64 attributes of the dataset (layouts enumerated, pruned, ...). Once.
  void write_plan(const std::vector<std::string>& text_fields, const std::vector<std::string>& metric_names,
                  const std::vector<std::string>& metric_units, const std::vector<std::string>& metric_descriptions,
                  const std::vector<SweepRow>& rows, const std::vector<std::pair<std::string, double>>& counts);

  /// Flushes buffered rows, writes the name tables, closes the file and renames it onto the
  /// target. After commit the writer accepts nothing more. Same as finish() then publish().
  void commit();
  /// commit()'s first half: the file is complete and closed, still under temporary() (readable
  /// there, e.g. to export a Chrome trace from it), not yet under the target name. Destroyed
  /// before publish(), the writer removes it.
  void finish();
  /// commit()'s second half: renames the finished file onto the target.
  void publish();
  /// Where the file is until it is published.
  const std::filesystem::path& temporary() const { return temporary_; }

  const std::filesystem::path& target() const { return target_; }
  /// Events received so far.
  std::uint64_t event_count() const { return events_written_ + event_rows_buffered_; }
  /// Steps received so far.
  std::uint64_t step_count() const { return steps_written_ + step_rows_buffered_; }

 private:
  void require_open(std::string_view what) const;
  H5Handle create_group_plist() const;
  H5Handle create_dataset_plist(std::size_t chunk_rows, bool compress) const;
  H5Handle create_extendible(const char* path, hid_t type, std::size_t chunk_rows);
  void append_rows(hid_t dataset, hid_t type, std::uint64_t& written, const unsigned char* rows,
                   std::size_t count, const char* what);
  void flush_events();
  void flush_steps();
  void ensure_run_layout();
  void write_string_table(const char* path, const std::vector<std::string>& values);
  /// The table of write_sweep and write_plan at `path`; returns the open dataset.
  H5Handle write_labelled_rows(const char* path, const std::vector<std::string>& text_fields,
                            const std::vector<std::string>& metric_names, const std::vector<std::string>& metric_units,
                            const std::vector<std::string>& descriptions, const std::vector<SweepRow>& rows);
  void write_numeric_table(const std::string& path, const std::vector<TableColumn>& columns);
  void close_all() noexcept;

  std::filesystem::path target_;
  std::filesystem::path temporary_;
  std::string label_;  ///< target path as text, for error messages
  H5WriterOptions options_;
  bool committed_ = false;
  bool finished_ = false;  ///< closed under temporary_, not yet renamed
  bool scenario_written_ = false;
  bool summary_written_ = false;
  bool sweep_written_ = false;
  bool plan_written_ = false;
  bool links_written_ = false;
  bool link_series_written_ = false;
  std::string run_mode_;
  std::vector<std::string> run_tables_;

  std::unordered_map<std::string, std::uint32_t> resource_index_;
  std::vector<std::string> resources_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
  std::vector<std::string> names_;

  std::vector<unsigned char> event_buffer_;
  std::size_t event_rows_buffered_ = 0;
  std::uint64_t events_written_ = 0;
  std::vector<unsigned char> step_buffer_;
  std::size_t step_rows_buffered_ = 0;
  std::uint64_t steps_written_ = 0;

  // Declared first-to-last in the order they must close in reverse: file last.
  H5Handle file_;
  H5Handle event_type_;
  H5Handle step_type_;
  H5Handle events_;
  H5Handle steps_;
};

}  // namespace ironlaw::output
