#include "report/plot_svg.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "output/atomic_file.hpp"

namespace ironlaw::report {

namespace {

constexpr double kWidth = 1000;
constexpr double kLegendWidth = 250;  // right of the plot area
constexpr const char* kFont = "sans-serif";

/// Coordinates: two decimals, never "-0.00".
std::string px(double v) {
  if (std::fabs(v) < 0.005) return "0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// A data value: 9 significant digits (reads back within 1e-9 relative).
std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// A tick label: up to 6 significant digits, no trailing zeros.
std::string tick_label(double v) {
  if (std::fabs(v) < 1e-12) return "0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string escape(const std::string& raw) {
  // Labels may quote bytes of a file or path ironlaw did not write: the SVG stays UTF-8.
  const std::string text = valid_utf8(raw);
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') out += ' ';
        else out += ch;
    }
  }
  return out;
}

/// The plot area inside the figure.
struct Frame {
  double left = 90, top = 60, width = kWidth - 90 - kLegendWidth - 20, height = 400;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

/// An SVG document under construction.
class Svg {
 public:
  Svg(double width, double height, const std::string& title) : width_(width), height_(height) {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(width) + "\" height=\"" +
            px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" font-family=\"" + kFont + "\">\n";
    out_ += "<title>" + escape(title) + "</title>\n";
    out_ += "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" + px(width) + "\" height=\"" + px(height) +
            "\" fill=\"#ffffff\"/>\n";
    text(width / 2, 28, title, "middle", 16, "class=\"figure-title\" font-weight=\"bold\"");
  }

  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& attrs) {
    out_ += "<rect " + attrs + (attrs.empty() ? "" : " ") + "x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" +
            px(std::max(w, 0.0)) + "\" height=\"" + px(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"/>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double stroke_width,
            const std::string& attrs = {}) {
    out_ += "<line " + attrs + (attrs.empty() ? "" : " ") + "x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" +
            px(x2) + "\" y2=\"" + px(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + px(stroke_width) +
            "\"/>\n";
  }
  void text(double x, double y, const std::string& content, const char* anchor, double size,
            const std::string& attrs = {}) {
    out_ += "<text " + attrs + (attrs.empty() ? "" : " ") + "x=\"" + px(x) + "\" y=\"" + px(y) +
            "\" text-anchor=\"" + anchor + "\" font-size=\"" + px(size) + "\">" + escape(content) + "</text>\n";
  }
  void raw(const std::string& element) { out_ += element; }

  /// A legend at the right of `frame`: one swatch and label per entry (class "legend-entry").
  void legend(const Frame& frame, const std::vector<std::pair<std::string, std::string>>& entries,
              const std::string& heading) {
    const double x = frame.right() + 20;
    double y = frame.top;
    out_ += "<g class=\"legend\">\n";
    text(x, y + 4, heading, "start", 12, "font-weight=\"bold\"");
    y += 18;
    for (const auto& [label, colour] : entries) {
      out_ += "<g class=\"legend-entry\" data-label=\"" + escape(label) + "\">\n";
      rect(x, y - 9, 12, 12, colour, "class=\"swatch\"");
      text(x + 18, y + 1, label, "start", 11);
      out_ += "</g>\n";
      y += 17;
    }
    out_ += "</g>\n";
  }

  /// A legend of line series at the right of `frame`: per entry a short line in the series'
  /// stroke and dash with its marker (class "legend-entry", its parts "swatch-line" and
  /// "swatch-point", so that they never count as data points).
  struct SeriesEntry {
    std::string label, colour, dash, marker_fill;
  };
  void series_legend(const Frame& frame, const std::vector<SeriesEntry>& entries, const std::string& heading) {
    const double x = frame.right() + 20;
    double y = frame.top;
    out_ += "<g class=\"legend\">\n";
    text(x, y + 4, heading, "start", 12, "font-weight=\"bold\"");
    y += 18;
    for (const SeriesEntry& e : entries) {
      out_ += "<g class=\"legend-entry\" data-label=\"" + escape(e.label) + "\">\n";
      line(x, y - 3, x + 16, y - 3, e.colour, 2,
           "class=\"swatch-line\"" + (e.dash.empty() ? std::string() : " stroke-dasharray=\"" + e.dash + "\""));
      out_ += "<circle class=\"swatch-point\" cx=\"" + px(x + 8) + "\" cy=\"" + px(y - 3) + "\" r=\"3.5\" fill=\"" +
              e.marker_fill + "\" stroke=\"" + e.colour + "\" stroke-width=\"1.5\"/>\n";
      text(x + 22, y + 1, e.label, "start", 11);
      out_ += "</g>\n";
      y += 17;
    }
    out_ += "</g>\n";
  }

  std::string finish() {
    out_ += "</svg>\n";
    return std::move(out_);
  }
  double height() const { return height_; }
  double width() const { return width_; }

 private:
  double width_, height_;
  std::string out_;
};

/// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` intervals up to `max`.
double nice_step(double max, int target) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double raw = max / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double m = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
  return m * magnitude;
}

/// Axis maximum: the smallest multiple of the tick step ≥ max (max > 0), or 1 when max ≤ 0.
double axis_max(double max, int target) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double step = nice_step(max, target);
  return std::ceil(max / step - 1e-9) * step;
}

/// Horizontal gridlines with labels on the left, from 0 to `top_value`.
void y_axis(Svg& svg, const Frame& f, double lo, double hi, const std::string& label) {
  const double step = nice_step(hi - lo, 5);
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-6; v += step) {
    const double y = f.bottom() - (v - lo) / (hi - lo) * f.height;
    svg.line(f.left, y, f.right(), y, "#e0e0e0", 1, "class=\"grid\"");
    svg.text(f.left - 6, y + 4, tick_label(std::fabs(v) < step * 1e-9 ? 0 : v), "end", 11, "class=\"tick\"");
  }
  svg.line(f.left, f.top, f.left, f.bottom(), "#333333", 1, "class=\"axis\"");
  svg.text(0, 0, label, "middle", 12,
           "class=\"axis-label\" transform=\"translate(" + px(f.left - 58) + "," + px(f.top + f.height / 2) +
               ") rotate(-90)\"");
}

/// Vertical gridlines with labels below, from lo to hi.
void x_axis(Svg& svg, const Frame& f, double lo, double hi, const std::string& label) {
  const double step = nice_step(hi - lo, 8);
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-6; v += step) {
    const double x = f.left + (v - lo) / (hi - lo) * f.width;
    svg.line(x, f.top, x, f.bottom(), "#e0e0e0", 1, "class=\"grid\"");
    svg.text(x, f.bottom() + 16, tick_label(std::fabs(v) < step * 1e-9 ? 0 : v), "middle", 11, "class=\"tick\"");
  }
  svg.line(f.left, f.bottom(), f.right(), f.bottom(), "#333333", 1, "class=\"axis\"");
  svg.text(f.left + f.width / 2, f.bottom() + 38, label, "middle", 12, "class=\"axis-label\"");
}

/// Ten colours that stay apart for readers with the common colour-vision deficiencies
/// (Okabe & Ito 2008, "Color Universal Design", plus greys).
const char* palette(std::size_t i) {
  static constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                             "#56B4E9", "#F0E442", "#000000", "#999999", "#7F3C8D"};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

/// The look of line series i: the palette's colour, and past its ten colours a dash pattern
/// (solid, dashed, dotted) and a hollow or filled marker, so that 60 series stay apart.
struct SeriesStyle {
  std::string colour, dash, marker_fill;
};
SeriesStyle series_style(std::size_t i) {
  static constexpr const char* kDashes[] = {"", "6,3", "2,3"};
  const std::size_t cycle = i / 10;
  const std::string colour = palette(i);
  return {colour, kDashes[cycle % 3], cycle % 2 == 1 ? std::string("#ffffff") : colour};
}

const char* breakdown_colour(std::size_t part) {
  static constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#999999", "#D55E00", "#dddddd"};
  return kColours[part];
}

const char* kind_colour(EventKind kind) {
  switch (kind) {
    case EventKind::forward: return "#0072B2";
    case EventKind::backward: return "#004c7a";
    case EventKind::recompute: return "#56B4E9";
    case EventKind::optimizer: return "#7F3C8D";
    case EventKind::collective: return "#E69F00";
    case EventKind::flow: return "#F0E442";
    case EventKind::data: return "#009E73";
    case EventKind::stall: return "#D55E00";
  }
  return "#000000";
}

const char* kind_label(EventKind kind) {
  switch (kind) {
    case EventKind::forward: return "compute: forward";
    case EventKind::backward: return "compute: backward";
    case EventKind::recompute: return "compute: recompute";
    case EventKind::optimizer: return "compute: optimizer";
    case EventKind::collective: return "communication: collective";
    case EventKind::flow: return "communication: network flow";
    case EventKind::data: return "data: load / host-to-device";
    case EventKind::stall: return "data stall (loader)";
  }
  return "?";
}

constexpr const char* kBubbleColour = "#bdbdbd";
constexpr const char* kIdleColour = "#f1e3c8";

/// The value's number and unit: "400 Gbit/s" → (400, "Gbit/s"); "8" → (8, ""); not a
/// number → nullopt-like (false).
bool split_number(const std::string& text, double& value, std::string& unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  value = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(value)) return false;
  std::string rest(end);
  const auto first = rest.find_first_not_of(' ');
  unit = first == std::string::npos ? "" : rest.substr(first);
  return true;
}

struct Curve {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
};

/// A line chart: one polyline and its markers per curve, x and y axes from the data.
std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                       const std::vector<Curve>& curves, const std::vector<std::string>& categories,
                       const std::string& legend_heading, const std::string& note) {
  const double legend_rows = static_cast<double>(curves.size()) * 17 + 40;
  // The legend widens the figure for long labels (about 6.5 px per character at 11 px).
  std::size_t longest = legend_heading.size();
  for (const auto& c : curves) longest = std::max(longest, c.label.size());
  const double legend_width = std::clamp(6.5 * static_cast<double>(longest) + 40, kLegendWidth, 700.0);
  const Frame f;
  Svg svg(f.right() + 20 + legend_width, std::max(f.bottom() + 60, f.top + legend_rows), title);
  double x_lo = 0, x_hi = 1, y_hi = 0;
  bool any = false;
  for (const auto& c : curves)
    for (const auto& [x, y] : c.points) {
      if (!any) x_lo = x_hi = x;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_hi = std::max(y_hi, y);
      any = true;
    }
  if (!categories.empty()) {
    x_lo = -0.5;
    x_hi = static_cast<double>(categories.size()) - 0.5;
  } else if (x_hi - x_lo <= 0) {
    const double pad = x_lo == 0 ? 1 : std::fabs(x_lo) * 0.1;
    x_lo -= pad;
    x_hi += pad;
  } else {
    const double pad = (x_hi - x_lo) * 0.04;
    x_lo -= pad;
    x_hi += pad;
  }
  double y_lo = 0;
  for (const auto& c : curves)
    for (const auto& p : c.points) y_lo = std::min(y_lo, p.second);
  const double y_top = axis_max(y_hi, 5);
  if (y_lo < 0) y_lo = -axis_max(-y_lo, 5);
  y_axis(svg, f, y_lo, y_top, y_label);
  if (categories.empty()) {
    x_axis(svg, f, x_lo, x_hi, x_label);
  } else {
    for (std::size_t i = 0; i < categories.size(); ++i) {
      const double x = f.left + (static_cast<double>(i) - x_lo) / (x_hi - x_lo) * f.width;
      svg.line(x, f.top, x, f.bottom(), "#e0e0e0", 1, "class=\"grid\"");
      svg.text(x, f.bottom() + 16, categories[i], "middle", 11, "class=\"tick\"");
    }
    svg.line(f.left, f.bottom(), f.right(), f.bottom(), "#333333", 1, "class=\"axis\"");
    svg.text(f.left + f.width / 2, f.bottom() + 38, x_label, "middle", 12, "class=\"axis-label\"");
  }
  const auto to_x = [&](double x) { return f.left + (x - x_lo) / (x_hi - x_lo) * f.width; };
  const auto to_y = [&](double y) { return f.bottom() - (y - y_lo) / (y_top - y_lo) * f.height; };
  std::vector<Svg::SeriesEntry> legend;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const Curve& c = curves[i];
    const SeriesStyle style = series_style(i);
    const std::string& colour = style.colour;
    const std::string dash = style.dash.empty() ? "" : " stroke-dasharray=\"" + style.dash + "\"";
    std::string points;
    for (const auto& [x, y] : c.points) points += (points.empty() ? "" : " ") + px(to_x(x)) + "," + px(to_y(y));
    svg.raw("<polyline class=\"line\" data-series=\"" + escape(c.label) + "\" points=\"" + points +
            "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\"" + dash + "/>\n");
    for (const auto& [x, y] : c.points) {
      svg.raw("<circle class=\"point\" data-series=\"" + escape(c.label) + "\" data-x=\"" + num(x) +
              "\" data-y=\"" + num(y) + "\" cx=\"" + px(to_x(x)) + "\" cy=\"" + px(to_y(y)) + "\" r=\"3.5\" fill=\"" +
              style.marker_fill + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>\n");
    }
    legend.push_back({c.label, colour, style.dash, style.marker_fill});
  }
  svg.series_legend(f, legend, legend_heading);
  svg.text(f.right() + 20, f.top + 40 + 17 * static_cast<double>(curves.size()), note, "start", 10, "class=\"note\"");
  return svg.finish();
}

/// "N of M rows drawn" and why the others are not.
std::string rows_note(std::size_t drawn, std::size_t rows) {
  std::string note = std::to_string(drawn) + " of " + std::to_string(rows) + " rows drawn";
  if (drawn < rows) note += " (the others not simulated)";
  return note;
}

/// The unit of a metric for an axis label: "" → none, "1" → "(dimensionless)".
std::string with_unit(const std::string& name, const std::string& unit) {
  if (unit.empty()) return name;
  if (unit == "1") return name + " (dimensionless)";
  return name + " [" + unit + "]";
}

std::size_t column_of(const std::vector<std::string>& names, const std::string& name, const char* what,
                      const char* table) {
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument(std::string(table) + " has no " + what + " \"" + name + "\" (it has: " + known + ")");
  }
  return static_cast<std::size_t>(it - names.begin());
}

}  // namespace

std::string plot_breakdown(const std::vector<StepRecord>& steps, const std::string& title) {
  if (steps.empty()) throw std::invalid_argument("the file holds no steps");
  const Frame f;
  Svg svg(kWidth, f.bottom() + 60, title);
  double max_ms = 0;
  for (const auto& s : steps) {
    max_ms = std::max(max_ms, (s.compute_s + s.exposed_comm_s + s.bubble_s + s.data_stall_s + s.other_s) * 1e3);
  }
  const double top_ms = axis_max(max_ms, 5);
  y_axis(svg, f, 0, top_ms, "time per step [ms]");
  const double slot = f.width / static_cast<double>(steps.size());
  const double bar = std::min(slot * 0.7, 80.0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    const double parts[] = {s.compute_s, s.exposed_comm_s, s.bubble_s, s.data_stall_s, s.other_s};
    const double x = f.left + slot * (static_cast<double>(i) + 0.5) - bar / 2;
    double base_ms = 0;
    for (std::size_t p = 0; p < 5; ++p) {
      const double ms = parts[p] * 1e3;
      const double y_top = f.bottom() - (base_ms + ms) / top_ms * f.height;
      const double h = ms / top_ms * f.height;
      svg.rect(x, y_top, bar, h, breakdown_colour(p),
               "class=\"bar\" data-step=\"" + std::to_string(s.step) + "\" data-part=\"" + kBreakdownParts[p] +
                   "\" data-value=\"" + num(parts[p]) + "\"");
      base_ms += ms;
    }
    if (steps.size() <= 40 || i % (steps.size() / 20 + 1) == 0) {
      svg.text(f.left + slot * (static_cast<double>(i) + 0.5), f.bottom() + 16, std::to_string(s.step), "middle", 11,
               "class=\"tick\"");
    }
  }
  svg.line(f.left, f.bottom(), f.right(), f.bottom(), "#333333", 1, "class=\"axis\"");
  svg.text(f.left + f.width / 2, f.bottom() + 38, "step (index in /steps)", "middle", 12, "class=\"axis-label\"");
  svg.legend(f,
             {{"compute", breakdown_colour(0)},
              {"exposed communication", breakdown_colour(1)},
              {"pipeline bubble", breakdown_colour(2)},
              {"data stall", breakdown_colour(3)},
              {"other (idle gaps)", breakdown_colour(4)}},
             "time per step");
  return svg.finish();
}

std::string plot_timeline(const TimelineInput& in, const std::string& title) {
  if (in.end_ns <= in.start_ns) throw std::invalid_argument("the timeline window is empty");
  if (in.ranks.empty()) throw std::invalid_argument("no rank to draw");
  // Lanes: per rank its resources in name order, then its idle lane.
  std::map<int, std::vector<std::uint32_t>> lanes_of;
  for (const int r : in.ranks) lanes_of[r];
  for (const auto& e : in.events) {
    auto it = lanes_of.find(e.rank);
    if (it == lanes_of.end()) continue;
    if (std::find(it->second.begin(), it->second.end(), e.resource) == it->second.end()) it->second.push_back(e.resource);
  }
  const auto resource_name = [&](std::uint32_t index) {
    return index < in.resources.size() ? in.resources[index] : "resource " + std::to_string(index);
  };
  for (auto& [rank, lanes] : lanes_of) {
    std::sort(lanes.begin(), lanes.end(),
              [&](std::uint32_t a, std::uint32_t b) { return resource_name(a) < resource_name(b); });
  }
  constexpr double kLane = 14, kGroupGap = 8;
  double lanes_height = 0;
  for (const auto& [rank, lanes] : lanes_of) lanes_height += kLane * static_cast<double>(lanes.size() + 1) + kGroupGap;
  Frame f;
  f.left = 170;
  f.width = kWidth - f.left - kLegendWidth - 20;
  f.height = std::max(lanes_height, 40.0);
  Svg svg(kWidth, std::max(f.bottom() + 60, f.top + 220), title);
  const double span_ms = static_cast<double>(in.end_ns - in.start_ns) * 1e-6;
  x_axis(svg, f, 0, span_ms, "time since the window's start [ms]");
  const auto to_x = [&](std::int64_t ns) {
    const std::int64_t clipped = std::clamp(ns, in.start_ns, in.end_ns);
    return f.left + static_cast<double>(clipped - in.start_ns) / static_cast<double>(in.end_ns - in.start_ns) * f.width;
  };
  bool kinds_seen[kEventKindCount] = {};
  bool bubble_seen = false, idle_seen = false;
  double y = f.top + kGroupGap / 2;
  for (const auto& [rank, lanes] : lanes_of) {
    std::map<std::uint32_t, double> lane_y;
    for (const std::uint32_t res : lanes) {
      lane_y[res] = y;
      svg.text(f.left - 6, y + kLane - 3, "rank " + std::to_string(rank) + " " + resource_name(res), "end", 10,
               "class=\"lane-label\"");
      y += kLane;
    }
    const double idle_y = y;
    svg.text(f.left - 6, y + kLane - 3, "rank " + std::to_string(rank) + " idle", "end", 10, "class=\"lane-label\"");
    y += kLane + kGroupGap;
    // Events and the union of what covers the rank (compute, collectives, data).
    std::vector<std::pair<std::int64_t, std::int64_t>> covered;
    for (const auto& e : in.events) {
      if (e.rank != rank) continue;
      const auto kind = static_cast<std::size_t>(e.kind);
      if (kind < static_cast<std::size_t>(kEventKindCount)) kinds_seen[kind] = true;
      const double x0 = to_x(e.start_ns), x1 = to_x(e.end_ns);
      svg.rect(x0, lane_y[e.resource] + 1, std::max(x1 - x0, 0.1), kLane - 2, kind_colour(e.kind),
               "class=\"event\" data-rank=\"" + std::to_string(rank) + "\" data-kind=\"" + event_kind_name(e.kind) +
                   "\" data-start-ns=\"" + std::to_string(e.start_ns) + "\" data-end-ns=\"" +
                   std::to_string(e.end_ns) + "\"");
      if (e.kind != EventKind::flow && e.kind != EventKind::stall)
        covered.emplace_back(std::max(e.start_ns, in.start_ns), std::min(e.end_ns, in.end_ns));
    }
    std::sort(covered.begin(), covered.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> gaps;
    std::int64_t at = in.start_ns;
    for (const auto& [s, e] : covered) {
      if (s > at) gaps.emplace_back(at, s);
      at = std::max(at, e);
    }
    if (at < in.end_ns) gaps.emplace_back(at, in.end_ns);
    for (const auto& [s, e] : gaps) {
      const std::int64_t split = std::clamp(in.pipeline_end_ns, s, e);
      if (split > s) {
        bubble_seen = true;
        svg.rect(to_x(s), idle_y + 1, to_x(split) - to_x(s), kLane - 2, kBubbleColour,
                 "class=\"bubble\" data-rank=\"" + std::to_string(rank) + "\" data-value=\"" +
                     num(static_cast<double>(split - s) * 1e-9) + "\"");
      }
      if (e > split) {
        idle_seen = true;
        svg.rect(to_x(split), idle_y + 1, to_x(e) - to_x(split), kLane - 2, kIdleColour,
                 "class=\"idle\" data-rank=\"" + std::to_string(rank) + "\" data-value=\"" +
                     num(static_cast<double>(e - split) * 1e-9) + "\"");
      }
    }
    svg.line(f.left, y - kGroupGap / 2, f.right(), y - kGroupGap / 2, "#cccccc", 0.5, "class=\"separator\"");
  }
  std::vector<std::pair<std::string, std::string>> legend;
  for (int k = 0; k < kEventKindCount; ++k) {
    if (kinds_seen[k]) legend.emplace_back(kind_label(static_cast<EventKind>(k)), kind_colour(static_cast<EventKind>(k)));
  }
  if (bubble_seen) legend.emplace_back("idle: pipeline bubble", kBubbleColour);
  if (idle_seen) legend.emplace_back("idle: other (waiting)", kIdleColour);
  svg.legend(f, legend, "what the rank does");
  return svg.finish();
}

std::string plot_sweep(const output::SweepTable& table, const std::string& x_key, const std::string& metric,
                       const std::string& title) {
  const std::size_t xk = column_of(table.varied_keys, x_key, "varied key", "/sweep");
  const std::size_t mk = column_of(table.metric_names, metric, "metric", "/sweep");
  // Numeric x when every value is a number with one common unit.
  bool numeric = true;
  std::string x_unit;
  bool unit_set = false;
  for (const auto& row : table.rows) {
    double v = 0;
    std::string unit;
    if (xk >= row.values.size() || !split_number(row.values[xk], v, unit) || (unit_set && unit != x_unit)) {
      numeric = false;
      break;
    }
    x_unit = unit;
    unit_set = true;
  }
  std::vector<std::string> categories;
  std::vector<Curve> curves;
  std::map<std::string, std::size_t> curve_of;
  std::size_t drawn = 0;
  for (const auto& row : table.rows) {
    if (xk >= row.values.size() || mk >= row.metrics.size()) continue;
    double x = 0;
    if (numeric) {
      std::string unit;
      split_number(row.values[xk], x, unit);
    } else {
      auto it = std::find(categories.begin(), categories.end(), row.values[xk]);
      if (it == categories.end()) it = categories.insert(categories.end(), row.values[xk]);
      x = static_cast<double>(it - categories.begin());
    }
    const double y = row.metrics[mk];
    if (row.status != "ok" || !std::isfinite(y)) continue;
    ++drawn;
    std::string label;
    for (std::size_t k = 0; k < table.varied_keys.size() && k < row.values.size(); ++k) {
      if (k == xk) continue;
      label += (label.empty() ? "" : ", ") + table.varied_keys[k] + "=" + row.values[k];
    }
    if (label.empty()) label = "all points";
    auto [it, added] = curve_of.emplace(label, curves.size());
    if (added) curves.push_back(Curve{label, {}});
    curves[it->second].points.emplace_back(x, y);
  }
  for (auto& c : curves) std::stable_sort(c.points.begin(), c.points.end());
  const std::string unit = mk < table.metric_units.size() ? table.metric_units[mk] : "";
  return line_chart(title, numeric ? with_unit(x_key, x_unit) : x_key, with_unit(metric, unit), curves, categories,
                    table.varied_keys.size() > 1 ? "other varied keys" : "series", rows_note(drawn, table.rows.size()));
}

std::string plot_plan(const output::SweepTable& plan, const std::string& metric, const std::string& title) {
  const std::size_t gk = column_of(plan.metric_names, "gpus", "metric", "/plan");
  const std::size_t mk = column_of(plan.metric_names, metric, "metric", "/plan");
  const std::size_t lk = column_of(plan.varied_keys, "layout", "field", "/plan");
  std::vector<Curve> curves;
  std::map<std::string, std::size_t> curve_of;
  std::size_t drawn = 0;
  for (const auto& row : plan.rows) {
    if (row.status != "ok" || gk >= row.metrics.size() || mk >= row.metrics.size() || lk >= row.values.size()) continue;
    const double x = row.metrics[gk], y = row.metrics[mk];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    ++drawn;
    // The layout without its data-parallel degree: one line per shape across cluster sizes.
    std::string label;
    std::size_t pos = 0;
    const std::string& layout = row.values[lk];
    while (pos <= layout.size()) {
      const std::size_t space = std::min(layout.find(' ', pos), layout.size());
      const std::string word = layout.substr(pos, space - pos);
      const bool dp_word = word.size() > 2 && word.compare(0, 2, "dp") == 0 &&
                           word.find_first_not_of("0123456789", 2) == std::string::npos;
      if (!word.empty() && !dp_word) label += (label.empty() ? "" : " ") + word;
      pos = space + 1;
    }
    auto [it, added] = curve_of.emplace(label, curves.size());
    if (added) curves.push_back(Curve{label, {}});
    curves[it->second].points.emplace_back(x, y);
  }
  for (auto& c : curves) std::stable_sort(c.points.begin(), c.points.end());
  const std::string unit = mk < plan.metric_units.size() ? plan.metric_units[mk] : "";
  return line_chart(title, "GPUs", with_unit(metric, unit), curves, {}, "layout (dp from the GPU count)",
                    rows_note(drawn, plan.rows.size()));
}

std::string plot_links(const std::vector<std::string>& names, const std::vector<double>& bytes,
                       const std::vector<double>& busy_s, double span_s, std::size_t top, const std::string& title) {
  if (names.size() != bytes.size() || names.size() != busy_s.size())
    throw std::invalid_argument("/links and /link_names differ in length");
  if (!(span_s > 0)) throw std::invalid_argument("the simulated time is not positive");
  for (std::size_t i = 0; i < names.size(); ++i) {
    // NaN would break the ordering below (no strict weak order) and reach the figure as "nan".
    if (!std::isfinite(bytes[i]) || bytes[i] < 0 || !std::isfinite(busy_s[i]) || busy_s[i] < 0)
      throw std::invalid_argument("/links: row " + std::to_string(i) + " has bytes or busy_s that is not a finite number >= 0");
  }
  std::vector<std::size_t> order(names.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return busy_s[a] != busy_s[b] ? busy_s[a] > busy_s[b] : bytes[a] > bytes[b];
  });
  order.resize(std::min(order.size(), top));
  constexpr double kRow = 16;
  Frame f;
  f.left = 250;
  f.width = kWidth - f.left - kLegendWidth - 20;
  f.height = std::max(kRow * static_cast<double>(order.size()), 60.0);
  Svg svg(kWidth, std::max(f.bottom() + 60, f.top + 120), title);
  x_axis(svg, f, 0, 100, "time with at least one flow on the link, share of the simulated time [%]");
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    const double share = std::clamp(busy_s[i] / span_s, 0.0, 1.0);
    const double y = f.top + kRow * static_cast<double>(k);
    svg.text(f.left - 6, y + kRow - 4, names[i], "end", 10, "class=\"lane-label\"");
    svg.rect(f.left, y + 2, share * f.width, kRow - 4, palette(0),
             "class=\"bar\" data-link=\"" + escape(names[i]) + "\" data-value=\"" + num(share) + "\" data-bytes=\"" +
                 num(bytes[i]) + "\"");
    char gb[64];
    std::snprintf(gb, sizeof gb, "%.3g GB", bytes[i] / 1e9);
    svg.text(f.left + share * f.width + 4, y + kRow - 4, gb, "start", 9, "class=\"value-label\"");
  }
  svg.legend(f, {{"busy share, whole run", palette(0)}}, "link (one direction)");
  svg.text(f.right() + 20, f.top + 60, "label: payload carried", "start", 10);
  return svg.finish();
}

std::string plot_link_series(const std::vector<std::string>& names, const std::vector<std::int64_t>& link,
                             const std::vector<double>& start_s, const std::vector<double>& end_s,
                             const std::vector<double>& busy_fraction, std::size_t top, const std::string& title) {
  const std::size_t rows = link.size();
  if (start_s.size() != rows || end_s.size() != rows || busy_fraction.size() != rows)
    throw std::invalid_argument("/link_series: its columns differ in length");
  const std::size_t drawn = std::min(top, names.size());
  std::vector<Curve> curves(drawn);
  for (std::size_t l = 0; l < drawn; ++l) curves[l].label = names[l];
  double origin = 0;
  bool first = true;
  for (std::size_t r = 0; r < rows; ++r) {
    if (first || start_s[r] < origin) origin = start_s[r];
    first = false;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    if (link[r] < 0 || static_cast<std::size_t>(link[r]) >= names.size())
      throw std::invalid_argument("/link_series: row " + std::to_string(r) + " names link " + std::to_string(link[r]) +
                                  ", /link_series_names has " + std::to_string(names.size()));
    if (!(end_s[r] > start_s[r])) throw std::invalid_argument("/link_series: row " + std::to_string(r) + " has an empty bin");
    // Bins lie within the simulated clock's range, and a share is a finite non-negative number:
    // anything else would reach the figure as "nan" or "inf" coordinates.
    if (!(start_s[r] >= 0) || !(end_s[r] <= Time::kMaxSeconds) || !std::isfinite(busy_fraction[r]) ||
        busy_fraction[r] < 0) {
      throw std::invalid_argument("/link_series: row " + std::to_string(r) + " has a bin outside 0.." +
                                  num(Time::kMaxSeconds) + " s or a busy_fraction that is not a finite share >= 0");
    }
    const auto l = static_cast<std::size_t>(link[r]);
    if (l >= drawn) continue;
    if (curves[l].points.size() == kMaxLinkSeriesBins) {
      throw std::invalid_argument("/link_series: link " + names[l] + " has more than " +
                                  std::to_string(kMaxLinkSeriesBins) + " bins (ironlaw run writes at most 256)");
    }
    const double mid_ms = ((start_s[r] + end_s[r]) / 2 - origin) * 1e3;
    curves[l].points.emplace_back(mid_ms, 100 * busy_fraction[r]);
  }
  for (auto& c : curves) std::stable_sort(c.points.begin(), c.points.end());
  return line_chart(title, "time from the first step's start [ms] (bin middles)",
                    "time with at least one flow on the link, share of the bin [%]", curves, {},
                    "link (one direction)", std::to_string(drawn) + " of " + std::to_string(names.size()) + " links drawn");
}

void write_svg(const std::filesystem::path& target, const std::string& svg) {
  output::check_output_location(target);
  const std::filesystem::path temporary = output::temporary_sibling(target);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(target.string() + ": cannot create '" + temporary.string() + "': " + std::strerror(errno));
    out.write(svg.data(), static_cast<std::streamsize>(svg.size()));
    out.flush();
    if (!out) {
      const std::string reason = std::strerror(errno);
      out.close();
      output::discard_temporary(temporary);
      throw IoError(target.string() + ": cannot write '" + temporary.string() + "': " + reason);
    }
  }
  output::commit_rename(temporary, target);
}

}  // namespace ironlaw::report
