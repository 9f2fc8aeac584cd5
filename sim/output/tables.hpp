#pragma once
/// \file Plain data exchanged with the HDF5 writer and reader besides the streamed records
/// (core/records.hpp): scenario identity, generic columns for /run tables, sweep rows. The file
/// layout they map to is documented in outputs/README.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ironlaw::output {

/// Version string of the program written to /scenario@version when the caller gives none.
inline constexpr std::string_view kIronlawVersion = "0.1.0";
/// Root attributes that mark an ironlaw output file: /@format == kFileFormat and
/// /@format_version == kFileFormatVersion (bumped on an incompatible layout change).
inline constexpr std::string_view kFileFormat = "ironlaw";
inline constexpr std::int64_t kFileFormatVersion = 1;

/// The contents of /scenario.
struct ScenarioInfo {
  std::string yaml;        ///< resolved scenario, YAML text
  std::uint64_t seed = 0;  ///< root seed of the run
  std::string name;        ///< scenario name
  std::string version;     ///< ironlaw version that wrote the file
};

/// One column of a table under /run (failures, checkpoints, restarts, ...). All columns of a
/// table have the same length. Float columns are stored as IEEE float64, integer ones as int64.
struct TableColumn {
  std::string name;  ///< column (compound field) name
  std::string unit;  ///< e.g. "s", "ns", "B"; "1" for counts and fractions; "" for labels/ids
  std::variant<std::vector<double>, std::vector<std::int64_t>> values;

  /// Number of rows in this column.
  std::size_t size() const;
};

/// One point of a sweep: the values of the varied keys as the user wrote them (e.g. "8",
/// "400 Gbit/s") and the summary metrics, both in the order given to write_sweep; `status` is
/// "ok" for a simulated point, else why it was not (e.g. "out of memory", "invalid: KEY: ...").
/// The metrics of a point that is not "ok" are NaN.
struct SweepRow {
  std::vector<std::string> values;
  std::vector<double> metrics;
  std::string status = "ok";
};

/// The name of /sweep's status field (SweepRow::status).
inline constexpr const char* kSweepStatusField = "status";

/// The contents of /sweep.
struct SweepTable {
  std::vector<std::string> varied_keys;   ///< dotted scenario keys, e.g. "parallel.tp"
  std::vector<std::string> metric_names;  ///< e.g. "step_time_s", "mfu"
  std::vector<std::string> metric_units;  ///< one per metric
  std::vector<SweepRow> rows;
};

/// The unit written for a summary or sweep metric that is given without one: known metric
/// names of INTERFACE.md first (mfu → "1", step_time_s → "s", model_tflops_per_gpu →
/// "TFLOP/s", ...), then the name's suffix (_s → "s", _ns → "ns", _bytes → "B", _days → "d",
/// _hours → "h", _flops → "FLOP"), else "".
std::string default_metric_unit(std::string_view metric_name);

/// One sentence on what a summary or sweep metric measures (outputs/README.md says the same),
/// written beside the units as the `descriptions` attribute; "" for a name it does not know.
/// interruptions_<cause> is described by its cause. O(table size).
std::string metric_description(std::string_view metric_name);

}  // namespace ironlaw::output
