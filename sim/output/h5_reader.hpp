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
#include "core/sanitizer.hpp"
#include "output/h5_handle.hpp"
#include "output/tables.hpp"

namespace ironlaw::output {

/// An open ironlaw output file, read-only. Every failure (missing file, not HDF5, not written
/// by ironlaw, missing or malformed dataset) throws std::runtime_error naming the file and the
/// object; nothing is printed.
class H5Reader;

/// Bounds on the child process of probe_h5_file. A legitimate ironlaw file is read by the probe
/// in milliseconds of CPU and a few MiB; the bounds are what a damaged file may cost at most.
struct H5ProbeLimits {
  /// CPU seconds of the child (RLIMIT_CPU: counts only the child's own CPU time, so a loaded
  /// machine does not make a good file fail).
  /// Sanitizer builds: kSanitizerSlowdown times larger (core/sanitizer.hpp), or an op-level trace
  /// of the test suite, read under ASan on a loaded 2-core machine, reads as damaged.
  int cpu_seconds = kSanitizerSlowdown * 10;
  /// Bytes by which the child's address space may grow past its size at the fork (RLIMIT_AS).
  std::uint64_t memory_bytes = std::uint64_t{512} << 20;
  /// Wall-clock seconds the parent waits for the child before killing it: a backstop for a child
  /// that sleeps in the kernel instead of using CPU (a stalled disk).
  int wall_seconds = kSanitizerSlowdown * 25;
};

/// How the child of run_h5_probe ended.
struct H5ProbeOutcome {
  enum class Kind {
    clean,    ///< read without error
    error,    ///< the reader threw: `message` is its text (names the file)
    crashed,  ///< died of SIGSEGV, SIGBUS, SIGFPE or SIGILL (inside libhdf5 on a damaged file)
    limited,  ///< exceeded its CPU time (SIGXCPU) or the wall-clock backstop
    failed,   ///< anything else: another signal (SIGABRT: a sanitizer report) or exit status
  };
  Kind kind = Kind::clean;
  std::string message;      ///< for every kind but clean: one line naming the file and what happened
  std::string diagnostics;  ///< what the child wrote to stderr (a sanitizer's report), up to 64 KiB
};

/// Reads `path` in a forked child process exactly as `ironlaw analyze` does (read_all_tables),
/// within `limits`, and says how the child ended. Debian 12's libhdf5 1.10.8 can crash on a
/// damaged file (a zero chunk dimension divides by zero in H5Dopen) or loop without end (a local
/// heap whose free list is a cycle allocates 32-byte nodes until memory runs out, in H5Lexists);
/// neither can be checked through HDF5's API before it happens. The child's stderr comes back as
/// `diagnostics` (libhdf5 is silenced; only a sanitizer writes there), its crash signals have
/// their default action (no handler of a sanitizer or fuzzer turns a crash into something else),
/// and it leaves with _exit. A sanitizer's "out of memory" death counts as the memory bound
/// (`limited`): its allocator dies where glibc's malloc returns NULL. Nothing is printed. Throws
/// std::runtime_error only when no child can be started. Linux/POSIX only; O(file metadata).
H5ProbeOutcome run_h5_probe(const std::filesystem::path& path, const H5ProbeLimits& limits = {});

/// What the probe child does first: every signal a sanitizer or libFuzzer may have caught in
/// the parent (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGXCPU, SIGXFSZ, SIGALRM,
/// SIGINT, SIGTERM, SIGUSR1, SIGUSR2) gets its default action back, and a sanitizer's death
/// callback (libFuzzer's, which writes a crash-* artifact of the parent's current input) is
/// cleared. A death of the child that the probe contains (libhdf5 crashing, a bound) then
/// leaves no trace outside the outcome. Async-signal-safe calls only (after fork).
void reset_inherited_death_handlers() noexcept;

/// run_h5_probe, throwing std::runtime_error(outcome.message) unless the child read the file
/// cleanly: the caller then never reads a failing file in its own process.
void probe_h5_file(const std::filesystem::path& path, const H5ProbeLimits& limits = {});

/// Reads through `reader` every object `ironlaw analyze` may read (the probe's work, also the
/// fuzz target's): /scenario, /steps, /summary, /links and /link_names, /event_names,
/// /event_resources, /sweep, /plan, the /run tables, the /events row count (which walks its chunk
/// index) and the first `event_rows` events. Throws what the reader throws.
void read_all_tables(const H5Reader& reader, std::size_t event_rows = 65536);

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
  /// Calls `visit` with consecutive batches of at most `batch_rows` events, in file order, for
  /// the first `max_rows` events (all by default). O(batch_rows) memory. A batch size that is a
  /// multiple of the file's chunk size (65536 by default) decompresses each chunk once.
  void for_each_event_batch(const std::function<void(const std::vector<EventRecord>&)>& visit,
                            std::size_t batch_rows = 65536,
                            std::uint64_t max_rows = UINT64_MAX) const;

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
  /// /link_series_names and /link_series (H5Writer::write_link_series); throw if absent.
  std::vector<std::string> link_series_names() const;
  std::vector<TableColumn> link_series() const;

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
