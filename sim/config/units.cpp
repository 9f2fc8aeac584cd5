#include "config/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

namespace ironlaw::config {

namespace {

struct Unit {
  std::string name;
  double factor;  ///< multiply the written number by this to get SI base units
};

struct Prefix {
  const char* name;
  double factor;
};

constexpr std::array<Prefix, 8> kDecimal{
    {{"", 1.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18}}};

constexpr std::array<Prefix, 6> kBinary{{{"Ki", 1024.0},
                                         {"Mi", 1048576.0},
                                         {"Gi", 1073741824.0},
                                         {"Ti", 1099511627776.0},
                                         {"Pi", 1125899906842624.0},
                                         {"Ei", 1152921504606846976.0}}};

constexpr std::array<Dimension, 7> kAllDimensions{Dimension::count, Dimension::bytes, Dimension::bandwidth,
                                                  Dimension::time,  Dimension::flops, Dimension::flop_rate,
                                                  Dimension::price};

/// Sizes: B with decimal and binary prefixes, and bits (b, bit) at 1/8 byte.
std::vector<Unit> size_units() {
  std::vector<Unit> units;
  auto add = [&](const std::string& prefix, double factor) {
    units.push_back({prefix + "B", factor});
    units.push_back({prefix + "b", factor / 8});
    units.push_back({prefix + "bit", factor / 8});
  };
  for (const auto& p : kDecimal) add(p.name, p.factor);
  for (const auto& p : kBinary) add(p.name, p.factor);
  return units;
}

/// The units `d` accepts; the empty unit (a plain number) is always accepted and means SI base.
std::vector<Unit> units_of(Dimension d) {
  std::vector<Unit> units;
  switch (d) {
    case Dimension::count:
      for (const auto& p : kDecimal) units.push_back({p.name, p.factor});
      for (const auto& p : kBinary) units.push_back({p.name, p.factor});
      break;
    case Dimension::bytes:
      units = size_units();
      units.push_back({"", 1.0});
      break;
    case Dimension::bandwidth:
      units.push_back({"", 1.0});
      for (const auto& u : size_units()) {
        units.push_back({u.name + "/s", u.factor});
        if (u.name.back() != 't') units.push_back({u.name + "ps", u.factor});
      }
      break;
    case Dimension::time:
      units = {{"", 1.0},    {"ns", 1e-9}, {"us", 1e-6},  {"\xC2\xB5s", 1e-6}, {"\xCE\xBCs", 1e-6},
               {"ms", 1e-3}, {"s", 1.0},   {"min", 60.0}, {"h", 3600.0},       {"d", 86400.0}};
      break;
    case Dimension::flops:
      for (const auto& p : kDecimal) {
        units.push_back({std::string(p.name) + "FLOP", p.factor});
        units.push_back({std::string(p.name) + "FLOPs", p.factor});
      }
      units.push_back({"ZFLOP", 1e21});
      units.push_back({"ZFLOPs", 1e21});
      units.push_back({"", 1.0});
      break;
    case Dimension::flop_rate:
      for (const auto& p : kDecimal) {
        units.push_back({std::string(p.name) + "FLOPS", p.factor});
        units.push_back({std::string(p.name) + "FLOP/s", p.factor});
      }
      units.push_back({"", 1.0});
      break;
    case Dimension::price:
      units = {{"", 1.0}, {"USD/h", 1.0}, {"$/h", 1.0}};
      break;
  }
  return units;
}

std::optional<double> factor_of(std::string_view unit, Dimension d) {
  for (const auto& u : units_of(d)) {
    if (u.name == unit) return u.factor;
  }
  return std::nullopt;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Length of the decimal number at the start of `s` ([+-]digits[.digits][e[+-]digits]), 0 if none.
std::size_t number_length(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    std::size_t exp_digits = 0;
    while (j < s.size() && is_digit(s[j])) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;
  }
  return i;
}

std::string expected_message(Dimension d, const std::string& text) {
  return std::string("expected a ") + dimension_name(d) + " like \"" + dimension_example(d) + "\", got \"" + text +
         "\"";
}

/// The base unit of `d` as written in a file ("B/s"), and the prefixed units a readable value
/// may use, smallest first.
struct Scale {
  const char* base;
  std::vector<Unit> units;
  std::vector<Unit> binary;  ///< used when the value is a whole number of them and not of decimal ones
};

Scale scale_of(Dimension d) {
  auto sizes = [](const std::string& suffix) {
    Scale s{"", {}, {}};
    for (const char* p : {"", "k", "M", "G", "T", "P", "E"}) {
      s.units.push_back({std::string(p) + "B" + suffix, 0});
    }
    double f = 1;
    for (auto& u : s.units) {
      u.factor = f;
      f *= 1e3;
    }
    for (const auto& p : kBinary) s.binary.push_back({std::string(p.name) + "B" + suffix, p.factor});
    return s;
  };
  switch (d) {
    case Dimension::bytes: {
      Scale s = sizes("");
      s.base = "B";
      return s;
    }
    case Dimension::bandwidth: {
      Scale s = sizes("/s");
      s.base = "B/s";
      return s;
    }
    case Dimension::time:
      return {"s", {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}}, {}};
    case Dimension::flops:
      return {"FLOP",
              {{"FLOP", 1}, {"kFLOP", 1e3}, {"MFLOP", 1e6}, {"GFLOP", 1e9}, {"TFLOP", 1e12}, {"PFLOP", 1e15},
               {"EFLOP", 1e18}, {"ZFLOP", 1e21}},
              {}};
    case Dimension::flop_rate:
      return {"FLOPS",
              {{"FLOPS", 1}, {"kFLOPS", 1e3}, {"MFLOPS", 1e6}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
               {"EFLOPS", 1e18}},
              {}};
    case Dimension::count:
    case Dimension::price:
      break;
  }
  return {"", {}, {}};
}

std::string g6(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// The largest of `units` not above |si| (the smallest when |si| is below all of them).
const Unit* readable_unit(const std::vector<Unit>& units, double si) {
  const Unit* best = units.empty() ? nullptr : &units.front();
  for (const auto& u : units) {
    if (std::fabs(si) >= u.factor) best = &u;
  }
  return best;
}

bool whole(double v) { return v == std::floor(v) && std::fabs(v) < 1e15; }

}  // namespace

bool needs_unit(Dimension d) {
  switch (d) {
    case Dimension::bytes:
    case Dimension::bandwidth:
    case Dimension::time:
    case Dimension::flops:
    case Dimension::flop_rate:
      return true;
    case Dimension::count:
    case Dimension::price:
      return false;
  }
  return false;
}

bool is_bare_number(const std::string& text) {
  std::string_view s(text);
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  const std::size_t n = number_length(s);
  return n > 0 && n == s.size();
}

std::vector<std::string> unit_suggestions(const std::string& text, double si, Dimension d) {
  std::string written(text);
  while (!written.empty() && is_space(written.front())) written.erase(written.begin());
  while (!written.empty() && is_space(written.back())) written.pop_back();
  const Scale scale = scale_of(d);
  std::vector<std::string> out{written + " " + scale.base};
  const Unit* unit = readable_unit(scale.units, si);
  const Unit* binary = readable_unit(scale.binary, si);
  if (binary && si != 0 && whole(si / binary->factor) && unit && !whole(si / unit->factor)) unit = binary;
  if (unit && unit->name != scale.base) out.push_back(g6(si / unit->factor) + " " + unit->name);
  return out;
}

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::count:
      return "number";
    case Dimension::bytes:
      return "size";
    case Dimension::bandwidth:
      return "bandwidth";
    case Dimension::time:
      return "time";
    case Dimension::flops:
      return "FLOP count";
    case Dimension::flop_rate:
      return "FLOP rate";
    case Dimension::price:
      return "price in USD per hour";
  }
  return "value";
}

const char* dimension_example(Dimension d) {
  switch (d) {
    case Dimension::count:
      return "15 T";
    case Dimension::bytes:
      return "80 GiB";
    case Dimension::bandwidth:
      return "400 Gbit/s";
    case Dimension::time:
      return "5 us";
    case Dimension::flops:
      return "3.8e25 FLOP";
    case Dimension::flop_rate:
      return "989.4 TFLOPS";
    case Dimension::price:
      return "2.5";
  }
  return "";
}

std::optional<double> parse_quantity(const std::string& text, Dimension expected, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<double> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  std::string_view s(text);
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);

  const std::size_t n = number_length(s);
  if (n == 0) return fail(expected_message(expected, text));
  std::string_view digits = s.substr(0, n);
  if (digits.front() == '+') digits.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value)) {
    return fail(std::string("number out of range: \"") + text + "\"");
  }

  std::string_view unit = s.substr(n);
  while (!unit.empty() && is_space(unit.front())) unit.remove_prefix(1);

  const auto factor = factor_of(unit, expected);
  if (!factor) {
    for (Dimension other : kAllDimensions) {
      if (other != expected && !unit.empty() && factor_of(unit, other)) {
        return fail(expected_message(expected, text) + ", which is a " + dimension_name(other));
      }
    }
    return fail(expected_message(expected, text) + " (unknown unit \"" + std::string(unit) + "\")");
  }
  const double si = value * *factor;
  if (!std::isfinite(si)) return fail(std::string("number out of range: \"") + text + "\"");
  return si;
}

}  // namespace ironlaw::config
