#include "cli/machine_output.hpp"

#include <cmath>
#include <cstdio>

#include "core/text.hpp"

namespace ironlaw::cli {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string json_string(const std::string& raw) {
  const std::string text = valid_utf8(raw);  // JSON is UTF-8 (RFC 8259 §8.1)
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {
std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

std::string json_number(double v) { return std::isfinite(v) ? g17(v) : "null"; }
std::string csv_number(double v) { return std::isfinite(v) ? g17(v) : ""; }

std::string values_csv(const std::vector<NamedValue>& values) {
  std::string out = "name,value,unit\n";
  for (const auto& v : values) out += csv_field(v.name) + "," + csv_number(v.value) + "," + csv_field(v.unit) + "\n";
  return out;
}

std::string values_json(const std::string& scenario, const std::vector<NamedValue>& values,
                        const std::string& members) {
  std::string out = "{\"scenario\": " + json_string(scenario) + ", \"metrics\": {";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += json_string(values[i].name) + ": {\"value\": " + json_number(values[i].value) +
           ", \"unit\": " + json_string(values[i].unit) + "}";
  }
  return out + "}" + members + "}\n";
}

}  // namespace ironlaw::cli
