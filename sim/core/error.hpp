#pragma once
/// \file Errors that cross layers: bad user input (exit 2) with its position in a file.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ironlaw {

/// A position in an input file, 1-based as editors show it. line == 0 means "no position"
/// (e.g. a value that came from `--set` on the command line).
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  /// "file:line:column", or "file" alone when there is no line.
  std::string str() const;
};

/// The position `locations` records for `key` (a dotted path), else for its nearest recorded
/// ancestor ("a.b" for "a.b.c"), else `fallback`.
SourceLoc nearest_location(const std::map<std::string, SourceLoc>& locations, std::string key, SourceLoc fallback);

/// One problem with the input: where, which key, what was expected.
struct Diagnostic {
  SourceLoc where;
  std::string key;      ///< dotted path, e.g. "cluster.nodes"
  std::string message;  ///< e.g. "expected a bandwidth like \"400 Gbit/s\", got \"400\""

  /// "file:line:col: key: message"
  std::string str() const;
};

/// Bad input. Carries *all* problems found, not just the first; the CLI prints each on its own
/// line and exits with status 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics);
  InputError(SourceLoc where, std::string key, std::string message);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// A file that cannot be read or written as asked: the message names the path and gives the
/// system's reason (errno text). The CLI reports it with exit status 2, like bad input: the
/// remedy lies with the user (a path, a permission, a full disk), not in the simulator.
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ironlaw
