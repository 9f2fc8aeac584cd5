#pragma once
// Helpers for the end-to-end tests of the `ironlaw` binary: run it as a child process in a
// fresh temporary folder, capture stdout, stderr and the exit status separately, and write
// small scenario files that point at the repository's models and topologies by absolute path.
// Paths come from CMake (IRONLAW_SOURCE_DIR, IRONLAW_BINARY), never from the working directory.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ironlaw::cli_test {

namespace fs = std::filesystem;

/// What one run of the binary left behind.
struct Outcome {
  int exit_code = -1;  ///< the status passed to exit(); -1 when the process did not exit
  int signal = 0;      ///< the signal that ended the process; 0 when it exited
  std::string out;     ///< everything written to stdout
  std::string err;     ///< everything written to stderr

  /// stdout followed by stderr, for checks that do not care which stream a line went to.
  std::string all() const { return out + err; }
  /// True when the process ended on its own with one of the documented statuses 0..3.
  bool exited_cleanly() const { return signal == 0 && exit_code >= 0 && exit_code <= 3; }
};

/// A uniquely named folder under the system temporary directory, removed with everything in
/// it when the object goes out of scope. One per test case: every test is a world of its own.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  /// path() / name.
  fs::path operator/(const std::string& name) const { return path_ / name; }
  /// Writes `text` to path()/name (creating folders on the way) and returns the full path.
  fs::path write(const std::string& name, const std::string& text) const;

 private:
  fs::path path_;
};

/// Runs IRONLAW_BINARY with `args` in the folder `cwd`, stdin from /dev/null. No wall-clock
/// limit (tests must not depend on machine speed): a hang is caught by ctest's TIMEOUT. A
/// non-zero `memory_limit_bytes` bounds the process's memory, so that an input that makes it
/// allocate without end fails the test instead of exhausting the machine: its address space
/// (RLIMIT_AS) in a normal build, its resident size (ASan's hard_rss_limit_mb) under
/// AddressSanitizer, whose shadow memory needs terabytes of address space.
/// A non-zero `file_size_limit_bytes` is the child's RLIMIT_FSIZE (ulimit -f: a write past it
/// fails with EFBIG, or kills with SIGXFSZ a process that does not ignore it); it bounds the
/// captured stdout and stderr too, so keep it above their few kilobytes.
Outcome run_ironlaw(const std::vector<std::string>& args, const fs::path& cwd, std::uint64_t memory_limit_bytes = 0,
                    std::uint64_t file_size_limit_bytes = 0);

/// As run_ironlaw, but the child's stderr is the slave side of a fresh pseudo-terminal, so that
/// what the binary shows only on a terminal (isatty(stderr): progress lines) can be checked.
/// Outcome::err holds every byte read from the master side until the child closed it.
Outcome run_ironlaw_on_terminal(const std::vector<std::string>& args, const fs::path& cwd);

/// IRONLAW_SOURCE_DIR / relative.
std::string repo_path(const std::string& relative);

/// The whole file as bytes; "" when it cannot be read.
std::string read_file(const fs::path& path);

/// The names of the entries of `dir`, sorted; empty when `dir` does not exist.
std::vector<std::string> entries_of(const fs::path& dir);

/// `text` split at '\n' (no trailing empty line for a final '\n').
std::vector<std::string> lines_of(const std::string& text);

/// `line` split at runs of blanks.
std::vector<std::string> words_of(const std::string& line);

/// `line` split at commas (no quoting: the CSV the tool writes has none).
std::vector<std::string> csv_fields(const std::string& line);

/// The number the whole of `text` spells (strtod), or throws std::invalid_argument.
double number(const std::string& text);

/// True when `text` is a whole number, e.g. a rank or step index.
bool is_integer(const std::string& text);

/// `text` with the first occurrence of `from` replaced by `to`; `from` must occur exactly
/// once (the test's edit would be ambiguous otherwise).
std::string replace_once(const std::string& text, const std::string& from, const std::string& to);

/// A 1-based position as editors show it.
struct Position {
  int line = 0;
  int column = 0;
};

/// The position of text[context + offset], where `context` occurs exactly once in `text`: how
/// a test names the line and column at which it planted an error.
Position position_of(const std::string& text, const std::string& context, std::size_t offset = 0);

/// "FILE:LINE:COLUMN: KEY: " — the prefix of a diagnostic (STYLE.md §6).
std::string diagnostic_prefix(const fs::path& file, Position at, const std::string& key);

/// A small valid scenario (GPT-2 124M, DDP on one 8-GPU DGX H100 node, one step) whose
/// model and topology are absolute paths into the repository and whose output.path is
/// `output_path`. Every line is distinct, so tests can edit one with replace_once.
std::string tiny_scenario(const fs::path& output_path);

}  // namespace ironlaw::cli_test
