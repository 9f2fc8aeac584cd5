#pragma once
// A small, strict XML reader for the plot tests: elements, attributes (single or double
// quotes), character data, the five predefined entities and numeric character references,
// comments and the XML declaration. Anything malformed (an unclosed or mismatched tag, a
// duplicate attribute, an unknown entity, a raw '<' or '&' in text, a second root) throws
// std::runtime_error with the offset. Enough to prove an SVG well-formed and to read its
// elements back; no DTDs or namespaces processing (names keep their prefix).
//
// Also: render_with_rsvg(), which renders an SVG to PNG with librsvg's rsvg-convert.
#include <sys/wait.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ironlaw::plot_test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<std::unique_ptr<XmlElement>> children;
  std::string text;  ///< character data directly inside this element, entities resolved

  bool has(const std::string& key) const { return attributes.count(key) > 0; }
  const std::string& attr(const std::string& key) const {
    const auto it = attributes.find(key);
    if (it == attributes.end()) throw std::runtime_error("<" + name + "> has no attribute " + key);
    return it->second;
  }
  double number(const std::string& key) const { return std::stod(attr(key)); }
  /// Every element below (and including) this one, depth first, in document order.
  void walk(const std::function<void(const XmlElement&)>& visit) const {
    visit(*this);
    for (const auto& c : children) c->walk(visit);
  }
  /// Every element with `element_name` whose class is `cls` ("" = any class).
  std::vector<const XmlElement*> find_all(const std::string& element_name, const std::string& cls = {}) const {
    std::vector<const XmlElement*> out;
    walk([&](const XmlElement& e) {
      if (e.name != element_name) return;
      if (!cls.empty() && (!e.has("class") || e.attr("class") != cls)) return;
      out.push_back(&e);
    });
    return out;
  }
  /// All text below this element, concatenated.
  std::string all_text() const {
    std::string out = text;
    for (const auto& c : children) out += c->all_text();
    return out;
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string text) : s_(std::move(text)) {}

  std::unique_ptr<XmlElement> parse() {
    skip_misc();
    if (starts("<?xml")) {
      const auto end = s_.find("?>", pos_);
      if (end == std::string::npos) fail("unterminated XML declaration");
      pos_ = end + 2;
    }
    skip_misc();
    if (pos_ >= s_.size() || s_[pos_] != '<') fail("expected the root element");
    auto root = element();
    skip_misc();
    if (pos_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("XML offset " + std::to_string(pos_) + ": " + why);
  }
  bool starts(const char* prefix) const { return s_.compare(pos_, std::char_traits<char>::length(prefix), prefix) == 0; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        const auto end = s_.find("-->", pos_ + 4);
        if (end == std::string::npos) fail("unterminated comment");
        pos_ = end + 3;
      } else {
        return;
      }
    }
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  }
  std::string name() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }
  std::string entity() {  // at '&'
    const auto end = s_.find(';', pos_);
    if (end == std::string::npos || end - pos_ > 10) fail("unterminated entity");
    const std::string body = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    if (body == "amp") return "&";
    if (body == "lt") return "<";
    if (body == "gt") return ">";
    if (body == "quot") return "\"";
    if (body == "apos") return "'";
    if (body.size() > 1 && body[0] == '#') {
      const long code = body[1] == 'x' ? std::strtol(body.c_str() + 2, nullptr, 16) : std::strtol(body.c_str() + 1, nullptr, 10);
      if (code <= 0 || code > 0x7f) fail("numeric reference outside ASCII (not needed here)");
      return std::string(1, static_cast<char>(code));
    }
    fail("unknown entity &" + body + ";");
  }
  std::unique_ptr<XmlElement> element() {
    ++pos_;  // '<'
    auto e = std::make_unique<XmlElement>();
    e->name = name();
    for (;;) {
      skip_space();
      if (pos_ >= s_.size()) fail("unterminated start tag <" + e->name + ">");
      if (starts("/>")) {
        pos_ += 2;
        return e;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      const std::string key = name();
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '=') fail("expected '=' after attribute " + key);
      ++pos_;
      skip_space();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail("expected a quoted value for " + key);
      const char quote = s_[pos_++];
      std::string value;
      while (pos_ < s_.size() && s_[pos_] != quote) {
        if (s_[pos_] == '<') fail("'<' in attribute " + key);
        if (s_[pos_] == '&') value += entity();
        else value += s_[pos_++];
      }
      if (pos_ >= s_.size()) fail("unterminated attribute " + key);
      ++pos_;
      if (!e->attributes.emplace(key, value).second) fail("duplicate attribute " + key + " on <" + e->name + ">");
    }
    for (;;) {
      if (pos_ >= s_.size()) fail("unclosed element <" + e->name + ">");
      if (starts("</")) {
        pos_ += 2;
        const std::string closing = name();
        if (closing != e->name) fail("</" + closing + "> closes <" + e->name + ">");
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '>') fail("expected '>'");
        ++pos_;
        return e;
      }
      if (starts("<!--")) {
        skip_misc();
        continue;
      }
      if (s_[pos_] == '<') {
        e->children.push_back(element());
        continue;
      }
      if (s_[pos_] == '&') {
        e->text += entity();
        continue;
      }
      e->text += s_[pos_++];
    }
  }

  std::string s_;
  std::size_t pos_ = 0;
};

inline std::unique_ptr<XmlElement> parse_xml(const std::string& text) { return XmlReader(text).parse(); }

/// True when rsvg-convert (Debian package librsvg2-bin, installed by scripts/setup.sh) is on
/// the PATH.
inline bool have_rsvg_convert() { return std::system("command -v rsvg-convert >/dev/null 2>&1") == 0; }

/// Renders `svg_path` to `png_path` with rsvg-convert; returns its exit status (0 = rendered).
inline int render_with_rsvg(const std::filesystem::path& svg_path, const std::filesystem::path& png_path) {
  const std::string command = "rsvg-convert -f png -o '" + png_path.string() + "' '" + svg_path.string() + "' 2>/dev/null";
  const int status = std::system(command.c_str());
  return status == -1 ? -1 : WEXITSTATUS(status);
}

/// True when `path` starts with the PNG signature (the renderer produced an image).
inline bool is_png(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, 8);
  return in.gcount() == 8 && std::string(head, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

}  // namespace ironlaw::plot_test
