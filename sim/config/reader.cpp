#include "config/reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string_view>

#include "config/input_file.hpp"
#include "config/load.hpp"
#include "config/validate.hpp"
#include "core/text.hpp"

namespace ironlaw::config::detail {

namespace {

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

const char* node_kind(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "a value";
}

/// First tab in the leading whitespace of a line, at or before `last_line` (0-based); YAML
/// indents with spaces only and yaml-cpp's message for a tab is rarely about the tab.
std::optional<std::pair<int, int>> indentation_tab(const std::string& text, int last_line) {
  int line = 0;
  std::size_t start = 0;
  while (start <= text.size() && line <= last_line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    for (std::size_t i = start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i) {
      if (text[i] == '\t') return std::make_pair(line, static_cast<int>(i - start));
    }
    start = end + 1;
    ++line;
  }
  return std::nullopt;
}

/// Where each line of a text starts: built once in O(size), then a (line, column) → offset
/// lookup is O(1), so locating every scalar of a file stays linear in its size.
class LineIndex {
 public:
  explicit LineIndex(const std::string& text) : size_(text.size()) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  /// Offset of the 0-based `line` and `column`, clamped to the end of the text.
  std::size_t offset(int line, int column) const {
    if (line < 0) line = 0;
    if (static_cast<std::size_t>(line) >= starts_.size()) return size_;
    return std::min(size_, starts_[static_cast<std::size_t>(line)] + static_cast<std::size_t>(std::max(column, 0)));
  }

 private:
  std::size_t size_;
  std::vector<std::size_t> starts_;
};

/// Offset in `text` of the 0-based `line` and `column`, clamped to the end of the text. O(size).
std::size_t offset_of(const std::string& text, int line, int column) { return LineIndex(text).offset(line, column); }

/// Offset of the quote closing the quoted scalar opened at `open`, npos when the text ends first.
std::size_t closing_quote(const std::string& text, std::size_t open) {
  const char quote = text[open];
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;
      } else {
        return i;
      }
    }
  }
  return std::string::npos;
}

/// True when `line` reads like a block mapping entry "key:" (optionally a list item's).
bool looks_like_key(std::string_view line) {
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) return false;
  if (line.substr(i, 2) == "- ") i = line.find_first_not_of(' ', i + 2);
  if (i == std::string_view::npos) return false;
  const std::size_t start = i;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' ||
                             line[i] == '-' || line[i] == '.')) {
    ++i;
  }
  return i > start && i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ');
}

/// True when the quoted scalar opened at `open` has lost its closing quote: it runs to the end
/// of the text, or over the line break into lines that read like further keys.
bool runaway_quote(const std::string& text, std::size_t open) {
  const std::size_t close = closing_quote(text, open);
  const std::size_t stop = close == std::string::npos ? text.size() : close;
  std::size_t line = text.find('\n', open);
  if (line == std::string::npos || line > stop) return false;
  if (close == std::string::npos) return true;
  while (line != std::string::npos && line < stop) {
    const std::size_t end = std::min(text.find('\n', line + 1), stop);
    if (looks_like_key(std::string_view(text).substr(line + 1, end - line - 1))) return true;
    line = text.find('\n', line + 1);
  }
  return false;
}

/// A place in the text, 0-based.
struct Spot {
  int line = 0;
  int column = 0;
  char what = 0;  ///< the bracket or quote found there
};

/// What a rough scan of YAML text up to offset `end` finds: the flow brackets still open there
/// (innermost last) and the first quoted scalar that lost its closing quote. Comments and quoted
/// scalars are skipped; a bracket or quote counts only where a value can start.
struct Scan {
  std::vector<Spot> open;
  std::optional<Spot> runaway;
};

Scan scan_flow(const std::string& text, std::size_t end) {
  Scan scan;
  int line = 0;
  std::size_t line_start = 0;
  char prev = 0;  // last non-blank character of the line, 0 at its start
  const auto spot = [&](std::size_t i) { return Spot{line, static_cast<int>(i - line_start), text[i]}; };
  const auto value_starts = [&](std::size_t i) {
    const bool after_indicator = prev == 0 || std::string_view(":-?,[{").find(prev) != std::string_view::npos;
    const bool separated = i == line_start || std::string_view(" \t,[{").find(text[i - 1]) != std::string_view::npos;
    return after_indicator && separated;
  };
  for (std::size_t i = 0; i < end && i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      prev = 0;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '#' && (i == line_start || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      while (i + 1 < end && i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if ((c == '"' || c == '\'') && value_starts(i)) {
      if (!scan.runaway && runaway_quote(text, i)) scan.runaway = spot(i);
      const std::size_t close = std::min(closing_quote(text, i), text.size() - 1);
      for (std::size_t j = i + 1; j <= close; ++j) {
        if (text[j] == '\n') {
          ++line;
          line_start = j + 1;
        }
      }
      i = close;
    } else if ((c == '[' || c == '{') && (!scan.open.empty() || value_starts(i))) {
      scan.open.push_back(spot(i));
    } else if ((c == ']' || c == '}') && !scan.open.empty()) {
      scan.open.pop_back();
    }
    prev = text[i];
  }
  return scan;
}

/// The message and place for a yaml-cpp parse error: at the quote that was never closed, or at
/// the flow bracket that was never closed, rather than where the parser gave up.
std::optional<std::pair<Spot, std::string>> parse_error_cause(const std::string& text, const YAML::Exception& e) {
  if (e.mark.line < 0) return std::nullopt;
  const Scan scan = scan_flow(text, offset_of(text, e.mark.line, e.mark.column));
  if (scan.runaway) {
    return std::make_pair(*scan.runaway, std::string("unterminated quoted string (a closing ") + scan.runaway->what +
                                             " is missing)");
  }
  const bool sequence = e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW;
  if (!sequence && e.msg != YAML::ErrorMsg::END_OF_MAP_FLOW) return std::nullopt;
  const char open = sequence ? '[' : '{';
  for (auto it = scan.open.rbegin(); it != scan.open.rend(); ++it) {
    if (it->what != open) continue;
    return std::make_pair(*it, std::string("unclosed '") + open + "' (flow " + (sequence ? "sequence" : "mapping") +
                                   "): expected '" + (sequence ? ']' : '}') + "'");
  }
  return std::nullopt;
}

/// The first quoted scalar under `node` (dotted key `key`) that lost its closing quote and
/// swallowed the lines after it, which yaml-cpp accepts.
std::optional<std::pair<Spot, std::string>> runaway_scalar(const std::string& text, const LineIndex& lines,
                                                           const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) {
    const YAML::Mark mark = node.Mark();
    if (mark.line < 0) return std::nullopt;
    const std::size_t at = lines.offset(mark.line, mark.column);
    if (at >= text.size() || (text[at] != '"' && text[at] != '\'') || !runaway_quote(text, at)) return std::nullopt;
    return std::make_pair(Spot{mark.line, mark.column, text[at]}, key);
  }
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (auto found = runaway_scalar(text, lines, item, key)) return found;
    }
  }
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      if (auto found = runaway_scalar(text, lines, entry.second, key.empty() ? name : key + "." + name)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

/// Thrown by ShapeCheck to stop the event parser at the first limit passed.
struct ShapeProblem {
  YAML::Mark mark;
  std::string message;
};

/// A streaming pass over the YAML events (no tree is built) that bounds what a tree built from
/// the text may cost: nesting depth, nodes after alias expansion, alias count and alias nesting
/// (an alias inside an anchored node that itself holds aliases). O(events), O(depth + anchors)
/// memory. A 2 KB "billion laughs" file stops here at its first alias past the node limit.
class ShapeCheck : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    // Keys and values are UTF-8 text (YAML 1.2 §5.2): they reach the SVG, JSON and HDF5 outputs.
    if (value.find('\0') != std::string::npos) {
      // Valid UTF-8, but a C string ends there: a path "a\0b" would name the file "a".
      throw ShapeProblem{mark, "a key or value holds a NUL character (an escape such as \\0 or \\x00); "
                               "no key or value may contain one"};
    }
    check_tag(mark, tag);
    if (first_invalid_utf8(value) != std::string::npos || first_invalid_utf8(tag) != std::string::npos) {
      const std::size_t bad = first_invalid_utf8(value);
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X",
                    bad == std::string::npos ? 0u : static_cast<unsigned>(static_cast<unsigned char>(value[bad])));
      throw ShapeProblem{mark, std::string("a key or value is not UTF-8 text") +
                                   (bad == std::string::npos ? "" : std::string(" (byte ") + byte + ")") +
                                   "; YAML is UTF-8"};
    }
    leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (++aliases_ > kMaxYamlAliases) {
      throw ShapeProblem{mark, "more than " + std::to_string(kMaxYamlAliases) + " aliases (*name)"};
    }
    // yaml-cpp registers an anchor when its node opens, so an alias inside the anchored node
    // itself (`&a [1, *a]`) makes the tree a cycle that every later walk would follow forever.
    for (const Frame& f : stack_) {
      if (f.anchor != 0 && f.anchor == anchor) {
        throw ShapeProblem{mark, "an alias refers to a node that contains it (a cycle, e.g. &a [1, *a])"};
      }
    }
    const auto it = anchors_.find(anchor);
    const Size size = it == anchors_.end() ? Size{1, 0} : it->second;
    if (size.alias_depth + 1 > kMaxYamlAliasDepth) {
      throw ShapeProblem{mark, "aliases nested more than " + std::to_string(kMaxYamlAliasDepth) +
                                   " deep (an alias of a node that holds aliases of nodes that hold aliases...)"};
    }
    add(mark, Size{size.nodes, size.alias_depth + 1});
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    check_tag(mark, tag);
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    check_tag(mark, tag);
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  /// Explicit tags (`!!binary`, `!!float`, `!foo`) would change how a value is read, and no key
  /// is read by its tag: every one is refused rather than silently ignored. yaml-cpp reports a
  /// node without a tag as "?" (plain) or "!" (quoted).
  static void check_tag(const YAML::Mark& mark, const std::string& tag) {
    if (tag.empty() || tag == "?" || tag == "!") return;
    std::string shown = tag;
    constexpr std::string_view kCore = "tag:yaml.org,2002:";
    if (shown.rfind(kCore, 0) == 0) shown = "!!" + shown.substr(kCore.size());
    if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
    throw ShapeProblem{mark, "YAML tags (here " + shown + ") are not read: write the value without a tag"};
  }

  struct Size {
    std::uint64_t nodes = 0;  ///< nodes of the subtree once every alias is expanded
    int alias_depth = 0;
  };
  struct Frame {
    YAML::anchor_t anchor;
    YAML::Mark mark;
    Size size;
  };

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != 0) anchors_[anchor] = Size{1, 0};
    add(mark, Size{1, 0});
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (stack_.size() >= kMaxYamlDepth) {
      throw ShapeProblem{mark, "mappings and lists nested more than " + std::to_string(kMaxYamlDepth) + " deep"};
    }
    stack_.push_back(Frame{anchor, mark, Size{1, 0}});
  }
  void close() {
    const Frame done = stack_.back();
    stack_.pop_back();
    if (done.anchor != 0) anchors_[done.anchor] = done.size;
    if (stack_.empty()) {
      total_ += done.size.nodes;
    } else {
      Size& parent = stack_.back().size;
      parent.nodes += done.size.nodes;
      parent.alias_depth = std::max(parent.alias_depth, done.size.alias_depth);
    }
  }
  void add(const YAML::Mark& mark, Size size) {
    // Nodes are capped as they are added, so no count can overflow whatever the nesting.
    if (stack_.empty()) {
      total_ += size.nodes;
    } else {
      Size& top = stack_.back().size;
      top.nodes += size.nodes;
      top.alias_depth = std::max(top.alias_depth, size.alias_depth);
    }
    std::uint64_t open_nodes = total_;
    for (const auto& f : stack_) open_nodes += f.size.nodes;
    if (open_nodes > kMaxYamlNodes || size.nodes > kMaxYamlNodes) {
      throw ShapeProblem{mark, "more than " + std::to_string(kMaxYamlNodes) +
                                   " values once aliases are expanded (an alias bomb, or a file too large to read)"};
    }
  }

  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Size> anchors_;
  std::uint64_t total_ = 0;
  std::size_t aliases_ = 0;
};

/// Reads `path` whole, only when it is a regular file no larger than kMaxInputFileBytes; the
/// problem in words otherwise (a symbolic-link loop, a device or FIFO, a folder, errno text).
std::string read_regular_file(const std::string& path, std::string& text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ELOOP) return "a loop of symbolic links";
    if (err == ENOENT) {
      struct stat lst {};
      if (::lstat(path.c_str(), &lst) == 0) return "a symbolic link to a file that does not exist";
      return "no such file";
    }
    return std::strerror(err);
  }
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode)) {
    return S_ISFIFO(st.st_mode)   ? "it is a FIFO, not a regular file"
           : S_ISCHR(st.st_mode)  ? "it is a character device, not a regular file"
           : S_ISBLK(st.st_mode)  ? "it is a block device, not a regular file"
           : S_ISSOCK(st.st_mode) ? "it is a socket, not a regular file"
                                  : "it is not a regular file";
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxInputFileBytes) {
    return "it is " + std::to_string(st.st_size) + " bytes; input files are limited to " +
           std::to_string(kMaxInputFileBytes) + " bytes";
  }
  // O_NONBLOCK: should the path have been swapped for a FIFO since stat, open does not block.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat fst {};
  if (::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    ::close(fd);
    return "it is not a regular file";
  }
  text.clear();
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return std::strerror(err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxInputFileBytes) {
      ::close(fd);
      return "it is larger than the limit of " + std::to_string(kMaxInputFileBytes) + " bytes for input files";
    }
  }
  ::close(fd);
  return "";
}

}  // namespace

/// What would make yaml-cpp read `text` as something else than UTF-8, before it sees it: it
/// guesses the encoding from the first bytes (FF FE, FE FF: UTF-16 or UTF-32 byte-order marks;
/// a NUL among the first four: UTF-16 or UTF-32 without one) and converts, silently turning
/// bytes that are not UTF-8 into other text. So a leading FF or FE (never UTF-8) and a NUL
/// anywhere (not YAML text, §5.1) are refused with their line and column. Other ill-formed
/// bytes are found where they matter, in keys and values (ShapeCheck); a comment may hold any.
static std::optional<std::string> not_utf8_text(const std::string& text, SourceLoc* where) {
  std::size_t bad = text.find('\0');
  const bool bom = !text.empty() && (text[0] == '\xFF' || text[0] == '\xFE');
  if (bom) bad = 0;
  if (bad == std::string::npos) return std::nullopt;
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < bad; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  if (where) *where = SourceLoc{where->file, line, static_cast<int>(bad - line_start) + 1};
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
  const bool utf16 = bom || (text.size() >= 2 && (text[0] == '\0' || text[1] == '\0'));
  return std::string("not UTF-8 text (byte ") + byte + " at offset " + std::to_string(bad) +
         (text[bad] == '\0' ? " is a NUL)" : " is never UTF-8)") +
         (utf16 ? "; it looks like UTF-16 or UTF-32 (a byte-order mark or NUL bytes): save it as UTF-8" : "") +
         "; YAML input is UTF-8";
}

std::optional<std::string> check_yaml_shape(const std::string& text, SourceLoc* where) {
  if (auto encoding = not_utf8_text(text, where)) return encoding;
  std::istringstream in(text);
  try {
    YAML::Parser parser(in);
    ShapeCheck check;
    parser.HandleNextDocument(check);
    // One document per file: yaml-cpp reads the first and ignores what follows a `---` or `...`.
    class FirstMark : public YAML::EventHandler {
     public:
      void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
      void OnDocumentEnd() override {}
      void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
      void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
      void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
      void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
      void OnSequenceEnd() override {}
      void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
      void OnMapEnd() override {}
      YAML::Mark mark = YAML::Mark::null_mark();
    };
    FirstMark second;
    bool more = false;
    YAML::Mark at = YAML::Mark::null_mark();
    try {
      more = parser.HandleNextDocument(second);
      at = second.mark;
    } catch (const YAML::Exception& e) {
      more = true;
      at = e.mark;
    }
    if (more) {
      throw ShapeProblem{at.line < 0 ? YAML::Mark{} : at,
                         "a second YAML document (after --- or ...): a file holds one document, and nothing "
                         "after it would be read"};
    }
  } catch (const ShapeProblem& p) {
    if (where) *where = SourceLoc{where->file, p.mark.line + 1, p.mark.column + 1};
    return p.message;
  } catch (const YAML::Exception&) {
    return std::nullopt;  // malformed YAML: the full parse reports it with its own diagnosis
  }
  return std::nullopt;
}

std::string missing_unit_problem(const std::string& key, const std::string& text, double si, Dimension d,
                                 bool cli) {
  if (!needs_unit(d) || si == 0 || !is_bare_number(text)) return "";
  const auto forms = unit_suggestions(text, si, d);
  std::string out = forms.front().substr(0, forms.front().rfind(' ')) + " has no unit; write ";
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (i) out += " or ";
    out += cli ? "--set '" + key + "=" + forms[i] + "'" : forms[i];
  }
  return out;
}

void LoadState::error(SourceLoc where_at, std::string key, std::string message) {
  if (collecting) return;
  if (diagnostics.size() >= kMaxDiagnostics) {
    ++dropped;
    return;
  }
  diagnostics.push_back(Diagnostic{std::move(where_at), std::move(key), std::move(message)});
}

void LoadState::fail(const std::string& key, std::string message) {
  error(where(key), key, std::move(message));
  bad.insert(key);
}

void LoadState::report(const std::string& key, std::string message) { error(where(key), key, std::move(message)); }

bool LoadState::ok(std::initializer_list<std::string> keys) const {
  for (const auto& key : keys) {
    std::string k = key;
    while (true) {
      if (bad.count(k)) return false;
      const auto dot = k.rfind('.');
      if (dot == std::string::npos) break;
      k.resize(dot);
    }
  }
  return true;
}

SourceLoc LoadState::where(const std::string& key) const { return nearest_location(locations, key, SourceLoc{root_file, 0, 0}); }

std::optional<YAML::Node> parse_yaml_value(const std::string& text, std::string* error) {
  SourceLoc at;
  if (const auto shape = check_yaml_shape(text, &at)) {
    if (error) *error = "cannot be read: " + *shape;
    return std::nullopt;
  }
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (error) *error = e.msg;
    return std::nullopt;
  }
}

std::string resolve_path(const std::string& file, const std::string& relative) {
  namespace fs = std::filesystem;
  const fs::path rel(relative);
  if (rel.is_absolute()) return rel.lexically_normal().string();
  return (fs::path(file).parent_path() / rel).lexically_normal().string();
}

}  // namespace ironlaw::config::detail

namespace ironlaw::config {

std::string read_input_text(const std::string& path) {
  std::string text;
  const std::string problem = detail::read_regular_file(path, text);
  if (!problem.empty()) throw InputError(SourceLoc{path, 0, 0}, "", "cannot read \"" + path + "\": " + problem);
  return text;
}

}  // namespace ironlaw::config

namespace ironlaw::config::detail {

std::optional<Document> load_document(const std::string& path, LoadState& state, const SourceLoc& referenced_at,
                                      const std::string& key) {
  std::string text;
  const std::string problem = read_regular_file(path, text);
  if (!problem.empty()) {
    state.error(referenced_at, key, "cannot read " + in_quotes(path) + ": " + problem);
    return std::nullopt;
  }
  SourceLoc shape_at{path, 0, 0};
  if (const auto shape = check_yaml_shape(text, &shape_at)) {
    state.error(shape_at, key, "YAML cannot be read: " + *shape);
    return std::nullopt;
  }

  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    int line = e.mark.line;
    int column = e.mark.column;
    std::string message = "invalid YAML: " + e.msg;
    if (const auto cause = parse_error_cause(text, e)) {
      line = cause->first.line;
      column = cause->first.column;
      message = "invalid YAML: " + cause->second;
    }
    if (const auto tab = indentation_tab(text, line < 0 ? std::numeric_limits<int>::max() : line)) {
      std::tie(line, column) = *tab;
      message = "invalid YAML: tab character in indentation (YAML indents with spaces only)";
    }
    if (line < 0) line = column = 0;
    state.error(SourceLoc{path, line + 1, column + 1}, "", message);
    return std::nullopt;
  }
  if (const auto runaway = runaway_scalar(text, LineIndex(text), root, key)) {
    const auto& [at, where_key] = *runaway;
    state.error(SourceLoc{path, at.line + 1, at.column + 1}, where_key,
                std::string("invalid YAML: unterminated quoted string (a closing ") + at.what + " is missing)");
    return std::nullopt;
  }
  if (!root.IsMap()) {
    const auto mark = root.Mark();
    SourceLoc at{path, mark.line < 0 ? 1 : mark.line + 1, mark.line < 0 ? 1 : mark.column + 1};
    state.error(at, "",
                root.IsNull() ? "the file is empty; expected a mapping of keys"
                              : std::string("expected a mapping of keys at the top level, got ") + node_kind(root));
    return std::nullopt;
  }
  return Document{root, path};
}

Section::Section(LoadState& state, YAML::Node node, std::string file, std::string prefix, SourceLoc at, bool from_cli,
                 bool report_missing)
    : state_(&state),
      node_(node),
      file_(std::move(file)),
      prefix_(std::move(prefix)),
      at_(std::move(at)),
      from_cli_(from_cli),
      report_missing_(report_missing) {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node key_node = it->first;
    if (!key_node.IsScalar()) {
      state_->error(loc_of(key_node, key_node, from_cli_), prefix_,
                    "a key must be a plain name, got " + std::string(node_kind(key_node)));
      continue;
    }
    const std::string key = key_node.Scalar();
    if (key == "<<" && key_node.Tag() != "!") {
      state_->error(loc_of(key_node, key_node, from_cli_), full(key),
                    "YAML merge keys (<<) are not read: write the keys out in this mapping");
      continue;
    }
    if (const auto seen = index_.find(key); seen != index_.end()) {
      const Entry& e = entries_[seen->second];
      const auto first = loc_of(e.key_node, e.key_node, from_cli_);
      state_->error(loc_of(key_node, key_node, from_cli_), full(key),
                    "duplicate key (first set at line " + std::to_string(first.line) + ")");
      state_->bad.insert(full(key));
      continue;
    }
    index_.emplace(key, entries_.size());
    entries_.push_back(Entry{key, key_node, it->second, false});
  }
}

std::string Section::full(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

bool Section::has(const std::string& key) const { return index_.count(key) > 0; }

bool Section::is_list(const std::string& key) const {
  const auto it = index_.find(key);
  return it != index_.end() && entries_[it->second].value.IsSequence();
}

Section::Entry* Section::find(const std::string& key) {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

bool Section::from_cli(const std::string& key) const { return from_cli_ || state_->overridden.count(full(key)) > 0; }

SourceLoc Section::loc_of(const YAML::Node& node, const YAML::Node& key_node, bool cli) const {
  if (cli) return SourceLoc{"--set", 0, 0};
  YAML::Mark mark = node.Mark();
  if (node.IsNull() || mark.line < 0) mark = key_node.Mark();
  if (mark.line < 0) return at_;
  return SourceLoc{file_, mark.line + 1, mark.column + 1};
}

SourceLoc Section::position(const std::string& key, const YAML::Node& node) const {
  return loc_of(node, node, from_cli(key));
}

void Section::missing(const std::string& key) {
  if (!report_missing_) return;
  state_->error(at_, full(key), "missing required key");
  state_->bad.insert(full(key));
}

std::optional<Section::Leaf> Section::leaf(const std::string& key, KeyKind kind, const Rule& rule) {
  known_.push_back(key);
  const std::string k = full(key);
  if (state_->collecting) {
    state_->schema.emplace_back(k, kind);
    return std::nullopt;
  }
  Entry* entry = find(key);
  if (!entry) {
    if (rule.required) missing(key);
    return std::nullopt;
  }
  entry->used = true;
  const bool cli = from_cli(key);
  YAML::Node node = entry->value;
  SourceLoc where_at = loc_of(node, entry->key_node, cli);

  const bool wrapped = node.IsMap() && (rule.form == Form::sourced || rule.form == Form::either);
  if (rule.form == Form::sourced && !wrapped) {
    state_->error(where_at, k, "expected { value, source } \xE2\x80\x94 every hardware constant needs its source");
    state_->bad.insert(k);
    return std::nullopt;
  }
  if (wrapped) {
    Section inner(*state_, node, file_, k, where_at, cli);
    std::string source;
    const bool has_source = inner.text("source", source, Rule{.required = true});
    inner.known_.push_back("value");
    Entry* value = inner.find("value");
    if (value) value->used = true;
    inner.finish();
    if (!value) {
      inner.missing("value");
      state_->bad.insert(k);
      return std::nullopt;
    }
    if (has_source && source.empty()) {
      state_->error(state_->where(k + ".source"), k + ".source", "must say where the number comes from");
    }
    node.reset(value->value);
    where_at = loc_of(node, value->key_node, cli);
    if (rule.source) *rule.source = source;
  }
  state_->locations[k] = where_at;
  return Leaf{node, where_at, node.IsScalar() ? node.Scalar() : ""};
}

std::optional<Section::Leaf> Section::scalar_leaf(const std::string& key, KeyKind kind, const Rule& rule,
                                                  const std::string& what) {
  auto l = leaf(key, kind, rule);
  if (!l) return std::nullopt;
  if (!l->node.IsScalar()) {
    state_->error(l->where, full(key), "expected " + what + ", got " + node_kind(l->node));
    state_->bad.insert(full(key));
    return std::nullopt;
  }
  return l;
}

bool Section::check_sign(const std::string& key, const Leaf& l, double value, Sign sign) {
  std::string problem;
  if (sign == Sign::positive && !(value > 0)) problem = "must be positive";
  if (sign == Sign::non_negative && value < 0) problem = "must not be negative";
  if (problem.empty()) {
    problem = bound_problem(full(key), value);
    if (problem.empty()) return true;
    state_->error(l.where, full(key), problem);
    state_->bad.insert(full(key));
    return false;
  }
  state_->error(l.where, full(key), problem + ", got " + in_quotes(l.text));
  state_->bad.insert(full(key));
  return false;
}

void Section::note(const std::string& key, const char* type, const Rule& rule, std::string default_value,
                   std::optional<Dimension> dimension, std::vector<std::string> choices) {
  // The first reader of a key describes it (a key two card formats share keeps the first's).
  if (!state_->collecting || state_->traits.count(full(key))) return;
  KeyTraits& t = state_->traits[full(key)];
  t.type = type;
  t.dimension = dimension;
  t.choices = std::move(choices);
  t.required = rule.required;
  t.default_value = rule.required ? "" : std::move(default_value);
  t.sign = rule.sign == Sign::positive ? "> 0" : rule.sign == Sign::non_negative ? ">= 0" : "";
  t.sourced = rule.form == Form::sourced;
}

bool Section::text(const std::string& key, std::string& out, const Rule& rule) {
  note(key, "text", rule, out);
  auto l = leaf(key, rule.form == Form::plain ? KeyKind::value : KeyKind::sourced, rule);
  if (!l) return false;
  if (l->node.IsNull()) {
    out.clear();
    return true;
  }
  if (!l->node.IsScalar()) {
    state_->error(l->where, full(key), std::string("expected a text value, got ") + node_kind(l->node));
    state_->bad.insert(full(key));
    return false;
  }
  out = l->text;
  return true;
}

bool Section::choice(const std::string& key, std::string& out, const std::vector<std::string>& choices,
                     const Rule& rule) {
  note(key, "choice", rule, out, std::nullopt, choices);
  const std::string what = "one of " + join(choices, ", ");
  auto l = scalar_leaf(key, KeyKind::value, rule, what);
  if (!l) return false;
  for (const auto& c : choices) {
    if (c == l->text) {
      out = c;
      return true;
    }
  }
  std::string message = "expected " + what + "; got " + in_quotes(l->text);
  const std::string guess = did_you_mean(l->text, choices);
  if (!guess.empty()) message += "; did you mean " + in_quotes(guess) + "?";
  state_->error(l->where, full(key), message);
  state_->bad.insert(full(key));
  return false;
}

bool Section::flag(const std::string& key, bool& out, const Rule& rule) {
  note(key, "flag", rule, out ? "true" : "false");
  auto l = scalar_leaf(key, KeyKind::value, rule, "true or false");
  if (!l) return false;
  bool value = false;
  if (!YAML::convert<bool>::decode(l->node, value)) {
    state_->error(l->where, full(key), "expected true or false, got " + in_quotes(l->text));
    state_->bad.insert(full(key));
    return false;
  }
  out = value;
  return true;
}

bool Section::integer(const std::string& key, int& out, const Rule& rule) {
  note(key, "integer", rule, std::to_string(out));
  const KeyKind kind = rule.form == Form::plain ? KeyKind::value : KeyKind::sourced;
  auto l = scalar_leaf(key, kind, rule, "a whole number like \"8\"");
  if (!l) return false;
  std::string error;
  const auto value = parse_quantity(l->text, Dimension::count, &error);
  if (!value || *value != std::floor(*value) || std::fabs(*value) > std::numeric_limits<int>::max()) {
    state_->error(l->where, full(key),
                  "expected a whole number from " + std::to_string(std::numeric_limits<int>::min()) + " to " +
                      std::to_string(std::numeric_limits<int>::max()) + " like \"8\", got " +
                      in_quotes(l->text.size() > 40 ? l->text.substr(0, 40) + "..." : l->text));
    state_->bad.insert(full(key));
    return false;
  }
  if (!check_sign(key, *l, *value, rule.sign)) return false;
  out = static_cast<int>(*value);
  return true;
}

bool Section::number(const std::string& key, double& out, Dimension dimension, const Rule& rule) {
  if (state_->collecting) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", out);
    note(key, "number", rule, buf, dimension);
  }
  const KeyKind kind = rule.form == Form::plain ? KeyKind::value : KeyKind::sourced;
  auto l =
      scalar_leaf(key, kind, rule,
                  std::string("a ") + dimension_name(dimension) + " like \"" + dimension_example(dimension) + "\"");
  if (!l) return false;
  std::string error;
  const auto value = parse_quantity(l->text, dimension, &error);
  if (!value) {
    state_->error(l->where, full(key), error);
    state_->bad.insert(full(key));
    return false;
  }
  if (const std::string problem = missing_unit_problem(full(key), l->text, *value, dimension, from_cli(key));
      !problem.empty()) {
    state_->error(l->where, full(key), problem);
    state_->bad.insert(full(key));
    return false;
  }
  if (!check_sign(key, *l, *value, rule.sign)) return false;
  if (dimension == Dimension::time && !Time::representable(*value)) {
    state_->error(l->where, full(key),
                  std::string("a duration must be within the simulated clock's range, ") + Time::kRangeText +
                      ", got " + in_quotes(l->text));
    state_->bad.insert(full(key));
    return false;
  }
  out = *value;
  return true;
}

bool Section::duration(const std::string& key, Time& out, const Rule& rule) {
  double seconds = out.seconds();
  const bool read = number(key, seconds, Dimension::time, rule);
  if (state_->collecting) state_->traits[full(key)].type = "duration";
  if (!read) return false;
  out = Time::from_seconds(seconds);
  return true;
}

std::optional<YAML::Node> Section::raw(const std::string& key, KeyKind kind, const Rule& rule) {
  note(key, kind == KeyKind::list ? "list" : "value", rule, "");
  auto l = leaf(key, kind, rule);
  if (!l) return std::nullopt;
  return l->node;
}

Section Section::section(const std::string& key, const Rule& rule) {
  note(key, "section", rule, "");
  known_.push_back(key);
  const std::string k = full(key);
  if (state_->collecting) {
    state_->schema.emplace_back(k, KeyKind::section);
    return Section(*state_, YAML::Node(), file_, k, at_, from_cli_);
  }
  Entry* entry = find(key);
  if (!entry) {
    if (rule.required) missing(key);
    return Section(*state_, YAML::Node(), file_, k, at_, from_cli_, !rule.required && report_missing_);
  }
  entry->used = true;
  const bool cli = from_cli(key);
  const SourceLoc where_at = loc_of(entry->key_node, entry->key_node, cli);
  state_->locations[k] = where_at;
  if (!entry->value.IsMap() && !entry->value.IsNull()) {
    state_->error(loc_of(entry->value, entry->key_node, cli), k,
                  std::string("expected a mapping of keys, got ") + node_kind(entry->value));
    state_->bad.insert(k);
    return Section(*state_, YAML::Node(), file_, k, where_at, cli, false);
  }
  return Section(*state_, entry->value, file_, k, where_at, cli, report_missing_);
}

Section Section::include(const std::string& key, const Rule& rule) {
  note(key, "include", rule, "");
  known_.push_back(key);
  const std::string k = full(key);
  if (state_->collecting) {
    state_->schema.emplace_back(k, KeyKind::include);
    return Section(*state_, YAML::Node(), file_, k, at_, from_cli_);
  }
  Entry* entry = find(key);
  if (entry) entry->used = true;
  const bool cli = from_cli(key);
  if (entry) state_->locations[k] = loc_of(entry->value, entry->key_node, cli);

  if (auto it = state_->includes.find(k); it != state_->includes.end()) {
    const Document& doc = it->second;
    return Section(*state_, doc.root, doc.file, k, SourceLoc{doc.file, 1, 1}, false, report_missing_);
  }
  if (!entry) {
    if (rule.required) {
      if (report_missing_) {
        state_->error(at_, k, "missing required key: a path to a YAML file or an inline mapping");
      }
      state_->bad.insert(k);
    }
    return Section(*state_, YAML::Node(), file_, k, at_, from_cli_, false);
  }
  const SourceLoc where_at = state_->locations[k];
  if (entry->value.IsMap()) {
    return Section(*state_, entry->value, file_, k, loc_of(entry->key_node, entry->key_node, cli), cli,
                   report_missing_);
  }
  if (entry->value.IsScalar() && !entry->value.Scalar().empty()) {
    const std::string path = resolve_path(file_, entry->value.Scalar());
    if (auto doc = load_document(path, *state_, where_at, k)) {
      state_->includes[k] = *doc;
      return Section(*state_, doc->root, doc->file, k, SourceLoc{doc->file, 1, 1}, false, report_missing_);
    }
  } else {
    state_->error(where_at, k,
                  std::string("expected a path to a YAML file or an inline mapping, got ") + node_kind(entry->value));
  }
  state_->bad.insert(k);
  return Section(*state_, YAML::Node(), file_, k, where_at, cli, false);
}

void Section::finish() {
  if (state_->collecting) return;
  for (const auto& e : entries_) {
    if (e.used) continue;
    if (state_->diagnostics.size() >= kMaxDiagnostics) {  // counted only: no "did you mean" search
      ++state_->dropped;
      continue;
    }
    std::string message = "unknown key";
    const std::string guess = did_you_mean(e.key, known_);
    if (!guess.empty()) {
      message += "; did you mean " + in_quotes(guess) + "?";
    } else if (!known_.empty()) {
      message += "; expected one of " + join(known_, ", ");
    }
    state_->error(loc_of(e.key_node, e.key_node, from_cli(e.key)), full(e.key), message);
  }
}

}  // namespace ironlaw::config::detail
