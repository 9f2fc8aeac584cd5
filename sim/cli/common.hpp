#pragma once
/// \file Helpers shared by the subcommands.
#include <boost/program_options.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/spec.hpp"
#include "core/error.hpp"
#include "run/cpu_budget.hpp"
#include "run/layout.hpp"

namespace ironlaw::output {
class H5Reader;
}

namespace ironlaw::cli {

/// Most times one repeatable option (--set, --vary, --what-if, --space, ...) may be given in one
/// command: each is applied, expanded or simulated, so an unbounded count is unbounded work.
inline constexpr std::size_t kMaxRepeatedOption = 256;
/// Most command-line words one command reads: Boost's parser takes time quadratic in their count
/// (20,000 words took 4 s of CPU, 100,000 would take minutes), so a longer line is refused first.
inline constexpr std::size_t kMaxArguments = 4096;

/// Refuses (InputError, exit 2) more than kMaxArguments words before any parser sees them. O(1).
void check_argument_count(const Args& args);

/// Parses `args` against `opts`, the first positional argument going to the option named
/// `positional` (none if null). Prints the help and returns false when --help was given (the
/// command then exits 0); Boost errors propagate (main turns them into exit 2). More than
/// kMaxArguments words, or a repeatable option given more than kMaxRepeatedOption times, is an
/// InputError (exit 2) naming them.
bool parse_command_line(const Args& args, const boost::program_options::options_description& opts,
                        const char* positional, boost::program_options::variables_map& vm);

/// The repository's data directory (topologies/, models/, scenarios/): $IRONLAW_HOME if set,
/// else the source tree the binary was built from.
std::string data_dir();
/// topologies/dgx-h100-leaf-spine.yaml under data_dir().
std::string default_topology_path();

/// Default of --cpu-limit [CPU s, user + system, all threads of the process]: the bound of one
/// whole command, which every simulation it runs draws from (a scenario, its what-ifs, its
/// search, a sweep's points, a plan's layouts, a whole run's step simulations), and its setup,
/// memory replays and outputs too. Each step simulation stays bounded by --step-cpu-limit
/// (600 s); their number is what this bounds. Two CPU-hours: the costliest shipped command,
/// `explain scenarios/explain/deepseek-v3.yaml` with its search (about 569 + 8 x 285 CPU s,
/// README "Explaining published runs"), fits; `validate` (about 130 CPU s) fits many times.
/// Sanitizer builds run 5-20x slower: kSanitizerSlowdown times the default (core/sanitizer.hpp).
inline constexpr double kDefaultCommandCpuLimitS = 7200.0 * kSanitizerSlowdown;

/// Starts the command's CPU bound (once, in main, before the command runs): a watchdog thread
/// reads the process's CPU clock every 20 ms of wall time; past the limit (kDefaultCommandCpuLimitS
/// until apply_command_cpu_limit changes it) it removes the command's output temporaries
/// (nothing half-written is ever renamed into place), flushes standard output, prints on stderr
/// "WHO INPUT: --cpu-limit: ..." (WHO: "ironlaw COMMAND"; INPUT: note_command_input's file) naming
/// the simulation begun last and the keys behind its size (run::last_simulation), or that none had
/// begun, and ends the process with exit status 2. It only
/// reads: a command that finishes within the bound gives the same outputs with or without it.
/// Fork-safe: it returns once the thread runs its own code, and the thread is parked across every
/// fork (pthread_atfork), so a child (the HDF5 probe) inherits no lock it held.
void start_command_cpu_watchdog(const std::string& who);
/// --cpu-limit checked (CPU seconds, finite, >= 0) and made the bound of this command.
/// Throws InputError naming the flag. O(1).
void apply_command_cpu_limit(double seconds);
/// Names the file the command works on (its scenario or model card) in the --cpu-limit message,
/// so that a command stopped before its first simulation began still says what it was reading.
/// O(1); the name is cut at 255 bytes.
void note_command_input(const std::string& path);
/// Adds --cpu-limit bound to `seconds`; its help says what the bound `covers` in this command.
void add_cpu_limit_option(boost::program_options::options_description& opts, double& seconds,
                          const char* covers = "all its simulations, setup and outputs together");

/// Bounds on one command's work, each raisable with its flag (README, "Limits").
struct Limits {
  int max_steps = 10'000;            ///< --max-steps: run.steps at most
  std::size_t max_points = 10'000;   ///< --max-points: sweep points (product of --vary lists)
  std::string max_memory;            ///< --max-memory: estimated peak memory; "" = half of RAM
  /// --step-cpu-limit: CPU seconds one step simulation may use (run/cpu_budget.hpp).
  double step_cpu_limit_s = run::kDefaultStepCpuLimitS;
  /// --cpu-limit: CPU seconds the whole command may use (start_command_cpu_watchdog).
  double cpu_limit_s = kDefaultCommandCpuLimitS;
};

/// --step-cpu-limit checked (a number of CPU seconds ≥ 0, finite) and made the process-wide
/// bound of every simulation (run::set_step_cpu_limit). Throws InputError naming the flag.
void apply_step_cpu_limit(double seconds);

/// Adds --max-steps, --step-cpu-limit, --cpu-limit and --max-memory (and --max-points when
/// `sweep`) bound to `limits`.
void add_limit_options(boost::program_options::options_description& opts, Limits& limits, bool sweep);

/// Checks the limit flags themselves (--max-steps and --max-points at least 1, --max-memory a
/// positive size), so that a bad flag is refused once before anything is loaded, not at every
/// point of a sweep. Throws InputError naming the flag. O(1).
void check_limit_options(const Limits& limits);

/// --max-steps against run.steps (exit 2 naming the key and the flag).
void check_step_limit(const config::Scenario& scenario, const Limits& limits);
/// The memory limit in bytes: --max-memory if given, else run::default_memory_limit().
double memory_limit(const Limits& limits);
/// Refuses with InputError (exit 2), before anything is built: run.steps above --max-steps, an
/// estimated peak memory above --max-memory (the estimate and what drives it in the message),
/// or a run whose simulated time cannot fit the int64-nanosecond clock. O(1).
void check_scenario_limits(const config::Scenario& scenario, const run::Layout& layout, const Limits& limits);

/// `text` as it may be printed on a terminal: control characters (other than newline and tab),
/// DEL and bytes that are not valid UTF-8 become \xNN, so that a file name or a scenario value
/// quoted in a message cannot move the cursor, recolour the terminal or break the line
/// structure of the output. Valid UTF-8 passes unchanged. O(size).
std::string printable(const std::string& text);

/// Why `scenario` laid out as `layout` is not to be simulated under `limits`, in one short line
/// for a table row (a what-if, a point of explain's search); "" when it is within them. The same
/// verdict as check_scenario_limits (one judge_limits behind both), which throws instead. O(1).
std::string limits_refusal(const config::Scenario& scenario, const run::Layout& layout, const Limits& limits);

/// Checks an output path before simulating (regular file or absent, its folder existing and
/// writable; stale temporaries of dead runs there removed). An empty path or one the system
/// refuses is an InputError naming `key` (exit 2). The folder is created when missing.
void probe_output_path(const std::string& path, const SourceLoc& where, const std::string& key);

/// Bounds on `ironlaw collective` checked before it runs: at most kMaxCollectiveRows sizes
/// between -b and -e at step factor -f, and --nodes within the cluster.nodes bound. Throws
/// InputError; options it cannot read are left to the command itself.
void check_collective_args(const Args& args);
inline constexpr double kMaxCollectiveRows = 1000;

/// Refuses (InputError naming --nodes, exit 2) a collective whose simulation would need more
/// memory than `limit_bytes`, before the cluster is built: about 32 KiB per rank (its GPU, NIC,
/// links and ring flows; 168 MB were measured for 8,192 ranks), plus for all_to_all 8 KiB per
/// ordered pair of ranks (one flow each). O(1).
void check_collective_memory(bool all_to_all, double ranks, double limit_bytes);

/// A set of ranks as written on the command line: comma-separated ranks and inclusive ranges,
/// "0,8-15" → {0, 8, ..., 15}; returned ascending without duplicates. Anything else (a negative
/// or non-integer rank, a reversed range, more than kMaxRankSet ranks) is an InputError naming
/// `key` (exit 2). O(ranks log ranks).
std::vector<int> parse_rank_set(const std::string& text, const std::string& key);
inline constexpr std::size_t kMaxRankSet = 1 << 20;

/// Flushes standard output at the end of a command and returns `status`, or kExitBadInput with
/// a message on stderr when any write to it failed (a full disk, /dev/full, a closed stream):
/// a table or JSON cut short must not end in exit 0. O(1) plus the flush.
int finish_stdout(int status, const std::string& command);

/// Opens an HDF5 file a user names (analyze, plot). Debian 12's libhdf5 (1.10.8) can crash
/// (a zero chunk dimension divides by zero in H5Dopen) or loop without end (a local heap whose
/// free list is a cycle) on a damaged file before any check can run, so the file is first read
/// whole in a bounded child process (output::probe_h5_file) and opened here only when the child
/// read it cleanly. Any failure is an InputError (key "OUT.h5", exit 2) naming the file.
std::unique_ptr<output::H5Reader> open_user_h5(const std::string& path);

}  // namespace ironlaw::cli
