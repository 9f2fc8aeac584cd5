#pragma once
/// \file Machine-readable output of the subcommands (--csv, --json): RFC 4180 CSV and JSON text
/// built from names, values and units. Numbers are written with 17 significant digits, so they
/// read back to the same double; NaN and infinities are empty CSV fields and JSON null.
#include <string>
#include <vector>

namespace ironlaw::cli {

/// How a command prints its result on stdout.
enum class OutputFormat { text, csv, json };

/// `text` quoted for CSV when it holds a comma, a quote or a line break. O(size).
std::string csv_field(const std::string& text);
/// `text` as a JSON string literal (quotes, backslashes and control characters escaped). O(size).
std::string json_string(const std::string& text);
/// `v` as a JSON number (17 significant digits), "null" when not finite.
std::string json_number(double v);
/// `v` as a CSV field (17 significant digits), "" when not finite.
std::string csv_number(double v);

/// One named value with its unit (a summary metric).
struct NamedValue {
  std::string name;
  double value = 0;
  std::string unit;
};

/// "name,value,unit" then one line per value.
std::string values_csv(const std::vector<NamedValue>& values);
/// {"scenario": NAME, "metrics": {"name": {"value": v, "unit": "u"}, ...}} and a newline;
/// `members`, when not empty, is appended inside the object after "metrics" (", \"key\": ...").
std::string values_json(const std::string& scenario, const std::vector<NamedValue>& values,
                        const std::string& members = "");

}  // namespace ironlaw::cli
