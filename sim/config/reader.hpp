#pragma once
/// \file Private to config/: reading YAML mappings key by key, remembering where every key came
/// from and collecting every problem instead of stopping at the first (STYLE.md §6).
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/units.hpp"
#include "core/error.hpp"
#include "core/time.hpp"

namespace ironlaw::config::detail {

/// Bounds on what one input file may cost to read (README, "Limits"). Each is far above any
/// real scenario, topology or model card (the largest shipped file is under 4 KB, ~300 values).
inline constexpr std::uint64_t kMaxInputFileBytes = 16u << 20;  ///< bytes of one YAML file
inline constexpr std::uint64_t kMaxYamlNodes = 1'000'000;       ///< values, aliases expanded
inline constexpr std::size_t kMaxYamlAliases = 10'000;          ///< `*name` occurrences
inline constexpr int kMaxYamlAliasDepth = 8;                     ///< aliases within aliased nodes
inline constexpr std::size_t kMaxYamlDepth = 64;                 ///< nested mappings and lists
/// Problems kept per load; the rest are counted ("... and N more").
inline constexpr std::size_t kMaxDiagnostics = 100;

/// What a key holds, as the schema sees it.
enum class KeyKind {
  value,    ///< a plain scalar (or, for model shapes, optionally { value, source })
  sourced,  ///< a hardware constant: { value, source } required
  include,  ///< a path to another YAML file or an inline mapping
  section,  ///< a mapping of further keys
  list,     ///< a sequence
};

/// What the schema records of one key besides its kind, when collecting (`ironlaw keys`,
/// config/schema.hpp): filled by the accessor that reads the key, so the reference is the
/// loader's own reading code.
struct KeyTraits {
  std::string type;                  ///< text, choice, flag, integer, number, duration, list, section, include
  std::optional<Dimension> dimension;  ///< number and duration keys
  std::vector<std::string> choices;  ///< choice keys: every accepted value
  std::string default_value;         ///< the value when the key is absent ("" when none or required)
  bool required = false;
  std::string sign;                  ///< "> 0", ">= 0" or "" (any)
  bool sourced = false;              ///< { value, source } required (a hardware constant)
};

/// A parsed YAML file.
struct Document {
  YAML::Node root;
  std::string file;  ///< as it is to appear in messages (cwd-relative or absolute)
};

/// Everything one load shares: problems found, key positions, which keys `--set` wrote, the
/// included files already read. In `collecting` mode nothing is read: every key the parsers ask
/// for is recorded with its kind, which yields the schema (scenario_keys()).
struct LoadState {
  std::string root_file;
  std::vector<Diagnostic> diagnostics;
  std::size_t dropped = 0;  ///< problems found beyond kMaxDiagnostics
  std::map<std::string, SourceLoc> locations;  ///< full dotted key → where its value is
  std::set<std::string> overridden;            ///< full keys written by --set
  std::set<std::string> bad;                   ///< keys whose value was missing or invalid
  std::map<std::string, Document> includes;    ///< include key → the file it names
  bool collecting = false;
  std::vector<std::pair<std::string, KeyKind>> schema;  ///< filled when collecting
  std::map<std::string, KeyTraits> traits;               ///< filled when collecting, by full key

  void error(SourceLoc where, std::string key, std::string message);
  /// Reports an error at `key`'s position and marks it bad (its value is unusable).
  void fail(const std::string& key, std::string message);
  /// Reports an error at `key`'s position; the value stays usable for other checks.
  void report(const std::string& key, std::string message);
  /// True when none of `keys` nor their ancestors is bad: checks between keys run only then,
  /// so one mistake is not reported again as a cascade of consequences.
  bool ok(std::initializer_list<std::string> keys) const;
  /// Position of `key`, else of its nearest recorded ancestor, else the root file.
  SourceLoc where(const std::string& key) const;
};

/// The scenario schema: a LoadState in collecting mode after the scenario reader ran over
/// nothing, so `schema` holds every key in reading order and `traits` what each accessor knows
/// of it (defined in load.cpp, beside the reader).
LoadState collect_scenario_schema();

/// Reads `path` (the name used in messages) as YAML. Problems — missing file, malformed YAML,
/// a top level that is not a mapping — become diagnostics, located at `referenced_at` for an
/// unreadable file, and nullopt is returned.
std::optional<Document> load_document(const std::string& path, LoadState& state, const SourceLoc& referenced_at,
                                      const std::string& key);

/// Streams over `text` without building a tree and returns the first problem: a key or value
/// that is not UTF-8 text (YAML 1.2 §5.2; comments may hold any bytes), or a bound passed (nesting
/// deeper than kMaxYamlDepth, more than kMaxYamlNodes values once aliases are expanded, too many
/// or too deeply nested aliases), with its position in `*where` (file kept, line and column
/// 1-based). nullopt when within bounds or malformed (the real parse reports that). O(size).
std::optional<std::string> check_yaml_shape(const std::string& text, SourceLoc* where);

/// Parses a `--set` value or any YAML text; throws nothing.
std::optional<YAML::Node> parse_yaml_value(const std::string& text, std::string* error);

/// `relative` resolved against the folder of `file`, lexically normalised.
std::string resolve_path(const std::string& file, const std::string& relative);

/// The problem with a bare number `text` (read as `si` in SI base units) given to a key of
/// dimension `d` that needs a unit (needs_unit): "0.5 has no unit; write 0.5 s or 500 ms", or
/// for a value from the command line "... write --set 'KEY=0.5 s' or --set 'KEY=500 ms'".
/// Empty when the value is fine: `d` needs no unit, `text` carries one, or the value is 0.
std::string missing_unit_problem(const std::string& key, const std::string& text, double si, Dimension d, bool cli);

enum class Sign { any, non_negative, positive };
enum class Form { plain, sourced, either };

/// How one key is read.
struct Rule {
  Sign sign = Sign::any;
  bool required = false;
  Form form = Form::plain;
  std::string* source = nullptr;  ///< receives the `source:` of a { value, source } value
};

/// A YAML mapping being read: each accessor reads one key (registering it as known), records its
/// position, and reports a problem rather than throwing; `out` is only written on success.
/// finish() reports the keys nobody asked for, with a "did you mean".
class Section {
 public:
  Section(LoadState& state, YAML::Node node, std::string file, std::string prefix, SourceLoc at, bool from_cli,
          bool report_missing = true);

  /// Dotted key of `key` inside this section.
  std::string full(const std::string& key) const;
  const std::string& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }
  LoadState& state() const { return *state_; }
  bool has(const std::string& key) const;
  /// Whether `key` is present with a sequence as its value (registers nothing).
  bool is_list(const std::string& key) const;

  bool text(const std::string& key, std::string& out, const Rule& rule = {});
  bool choice(const std::string& key, std::string& out, const std::vector<std::string>& choices, const Rule& rule = {});
  bool flag(const std::string& key, bool& out, const Rule& rule = {});
  bool integer(const std::string& key, int& out, const Rule& rule = {});
  bool number(const std::string& key, double& out, Dimension dimension, const Rule& rule = {});
  bool duration(const std::string& key, Time& out, const Rule& rule = {});
  /// The raw value of `key` (for lists and special forms); records its position.
  std::optional<YAML::Node> raw(const std::string& key, KeyKind kind, const Rule& rule = {});
  /// Position of `node` (a value inside this section), "--set" when it came from the command line.
  SourceLoc position(const std::string& key, const YAML::Node& node) const;

  /// A nested mapping (absent or empty: a section with no keys).
  Section section(const std::string& key, const Rule& rule = {});
  /// A path to another YAML file (relative to this file) or an inline mapping.
  Section include(const std::string& key, const Rule& rule = {});

  /// Reports every key of this mapping that no accessor asked for.
  void finish();

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
    bool used = false;
  };
  struct Leaf {
    YAML::Node node;
    SourceLoc where;
    std::string text;  ///< the scalar as written ("" for null)
  };

  Entry* find(const std::string& key);
  bool from_cli(const std::string& key) const;
  SourceLoc loc_of(const YAML::Node& node, const YAML::Node& key_node, bool cli) const;
  /// Registers `key`, finds it, unwraps { value, source }; nullopt when absent or invalid.
  std::optional<Leaf> leaf(const std::string& key, KeyKind kind, const Rule& rule);
  /// Requires a scalar: reports "expected <what>" otherwise.
  std::optional<Leaf> scalar_leaf(const std::string& key, KeyKind kind, const Rule& rule, const std::string& what);
  bool check_sign(const std::string& key, const Leaf& leaf, double value, Sign sign);
  /// When collecting: records `key`'s traits (type, default, rule). No-op otherwise.
  void note(const std::string& key, const char* type, const Rule& rule, std::string default_value,
            std::optional<Dimension> dimension = std::nullopt, std::vector<std::string> choices = {});
  void missing(const std::string& key);

  LoadState* state_;
  YAML::Node node_;
  std::string file_;
  std::string prefix_;
  SourceLoc at_;
  bool from_cli_;
  bool report_missing_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  ///< key → position in entries_
  std::vector<std::string> known_;
};

}  // namespace ironlaw::config::detail
