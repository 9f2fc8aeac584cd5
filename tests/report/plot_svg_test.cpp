// The SVG figures of `ironlaw plot` (report/plot_svg.hpp), from small hand-made inputs: each
// figure parses as XML, holds one element per datum with the geometry computed here by hand
// (plot area 400 px high; axis maxima from the 1-2-5 tick rule), has a title, axis labels with
// units and a legend, refers to nothing outside itself, and renders with rsvg-convert.
#include <set>
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "plot_xml.hpp"
#include "report/plot_svg.hpp"

using namespace ironlaw;
using ironlaw::plot_test::parse_xml;
using ironlaw::plot_test::XmlElement;

namespace {

constexpr double kPlotHeight = 400;  // Frame::height in plot_svg.cpp
constexpr double kPlotTop = 60;

StepRecord step(std::int64_t index, double compute_ms, double comm_ms, double bubble_ms, double stall_ms, double other_ms) {
  StepRecord s;
  s.step = index;
  s.compute_s = compute_ms / 1e3;
  s.exposed_comm_s = comm_ms / 1e3;
  s.bubble_s = bubble_ms / 1e3;
  s.data_stall_s = stall_ms / 1e3;
  s.other_s = other_ms / 1e3;
  s.start_ns = index * 1'000'000'000;
  s.end_ns = s.start_ns + static_cast<std::int64_t>((compute_ms + comm_ms + bubble_ms + stall_ms + other_ms) * 1e6);
  return s;
}

/// Every figure: an <svg> root with a <title>, a legend with entries, labelled axes, and no
/// scripts or references to anything outside the document.
void check_self_contained(const XmlElement& root) {
  CHECK(root.name == "svg");
  CHECK(root.attr("xmlns") == "http://www.w3.org/2000/svg");
  CHECK(root.find_all("title").size() == 1);
  CHECK(root.find_all("g", "legend").size() == 1);
  CHECK(!root.find_all("g", "legend-entry").empty());
  CHECK(root.find_all("text", "axis-label").size() >= 1);
  CHECK(root.find_all("script").empty());
  CHECK(root.find_all("image").empty());
  CHECK(root.find_all("foreignObject").empty());
  root.walk([](const XmlElement& e) {
    for (const auto& [key, value] : e.attributes) {
      INFO(e.name << " " << key << "=" << value);
      CHECK(key.find("href") == std::string::npos);
      CHECK(value.find("url(") == std::string::npos);
      CHECK(key.rfind("on", 0) != 0);  // no event handlers
    }
  });
}

std::vector<std::string> legend_labels(const XmlElement& root) {
  std::vector<std::string> out;
  for (const auto* e : root.find_all("g", "legend-entry")) out.push_back(e->attr("data-label"));
  return out;
}

void check_renders(const std::string& svg, const std::string& name) {
  if (!plot_test::have_rsvg_convert()) {
    WARN("rsvg-convert not found: rendering of " << name
                                                 << " not checked (install librsvg2-bin; scripts/setup.sh does)");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ironlaw-plot-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "f.svg", std::ios::binary) << svg;
  }
  CHECK(plot_test::render_with_rsvg(dir / "f.svg", dir / "f.png") == 0);
  CHECK(plot_test::is_png(dir / "f.png"));
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST_CASE("the breakdown draws one stacked bar per step, heights proportional to the seconds", "[plot]") {
  // Largest step 120 ms: ticks of 50 ms (120/5 = 24 → 50), axis to 150 ms, so 1 ms = 400/150 px.
  const std::vector<StepRecord> steps = {step(0, 60, 10, 0, 25, 5), step(1, 60, 30, 20, 0, 10), step(2, 50, 10, 0, 0, 20)};
  const std::string svg = report::plot_breakdown(steps, "breakdown & <test>");
  const auto root = parse_xml(svg);
  check_self_contained(*root);
  CHECK(root->find_all("title")[0]->text == "breakdown & <test>");
  const auto bars = root->find_all("rect", "bar");
  REQUIRE(bars.size() == 15);
  const double px_per_ms = kPlotHeight / 150.0;
  const double ms[3][5] = {{60, 10, 0, 25, 5}, {60, 30, 20, 0, 10}, {50, 10, 0, 0, 20}};
  for (std::size_t i = 0; i < 3; ++i) {
    double base = kPlotTop + kPlotHeight;  // bottom of the plot area
    for (std::size_t p = 0; p < 5; ++p) {
      const XmlElement& b = *bars[i * 5 + p];
      INFO("step " << i << " part " << p);
      CHECK(b.attr("data-part") == report::kBreakdownParts[p]);
      CHECK(b.attr("data-step") == std::to_string(i));
      CHECK(b.number("data-value") == Approx(ms[i][p] / 1e3));
      CHECK(b.number("height") == Approx(ms[i][p] * px_per_ms).margin(0.006));
      CHECK(b.number("y") + b.number("height") == Approx(base).margin(0.011));  // stacked on the one below
      base = b.number("y");
    }
  }
  // 60 ms of compute is 160 px high (60 × 400 / 150).
  CHECK(bars[0]->number("height") == Approx(160.0));
  CHECK(legend_labels(*root) ==
        std::vector<std::string>{"compute", "exposed communication", "pipeline bubble", "data stall", "other (idle gaps)"});
  CHECK(root->find_all("text", "axis-label")[0]->text.find("[ms]") != std::string::npos);
  CHECK(svg == report::plot_breakdown(steps, "breakdown & <test>"));  // deterministic
  check_renders(svg, "breakdown");
}

TEST_CASE("the timeline draws one rect per event and the idle time split at the pipeline's end", "[plot]") {
  report::TimelineInput in;
  in.resources = {"compute", "comm", "data"};
  in.ranks = {0, 3};
  in.start_ns = 1000;
  in.end_ns = 2000;
  in.pipeline_end_ns = 1700;
  in.events = {
      {0, 0, EventKind::forward, 0, 1000, 1400, 1e9, 0},
      {0, 1, EventKind::collective, 0, 1300, 1600, 0, 1e6},
      {3, 0, EventKind::backward, 0, 1100, 1500, 2e9, 0},
      {3, 2, EventKind::data, 0, 900, 1050, 0, 4096},  // starts before the window: clipped
  };
  const std::string svg = report::plot_timeline(in, "timeline");
  const auto root = parse_xml(svg);
  check_self_contained(*root);
  const auto events = root->find_all("rect", "event");
  REQUIRE(events.size() == in.events.size());
  // Plot area 1000 − 170 − 250 − 20 = 560 px wide for 1000 ns.
  const double px_per_ns = 560.0 / 1000.0;
  CHECK(events[0]->number("width") == Approx(400 * px_per_ns).margin(0.006));
  CHECK(events[0]->number("x") == Approx(170.0));
  CHECK(events[3]->number("x") == Approx(170.0));                               // clipped at the start
  CHECK(events[3]->number("width") == Approx(50 * px_per_ns).margin(0.006));   // 1000..1050
  CHECK(events[0]->attr("data-kind") == "forward");
  CHECK(events[2]->attr("data-rank") == "3");
  // Rank 0 is covered 1000..1600: idle 1600..2000, bubble before 1700, other idle after.
  // Rank 3 is covered 1000..1050 and 1100..1500: bubbles 1050..1100 and 1500..1700, idle 1700..2000.
  const auto bubbles = root->find_all("rect", "bubble");
  const auto idle = root->find_all("rect", "idle");
  REQUIRE(bubbles.size() == 3);
  REQUIRE(idle.size() == 2);
  CHECK(bubbles[0]->number("data-value") == Approx(100e-9));
  CHECK(bubbles[1]->number("data-value") == Approx(50e-9));
  CHECK(bubbles[2]->number("data-value") == Approx(200e-9));
  CHECK(idle[0]->number("data-value") == Approx(300e-9));
  CHECK(idle[1]->number("data-value") == Approx(300e-9));
  const auto labels = legend_labels(*root);
  CHECK(labels == std::vector<std::string>{"compute: forward", "compute: backward", "communication: collective",
                                           "data: load / host-to-device", "idle: pipeline bubble",
                                           "idle: other (waiting)"});
  // Lanes: rank 0 comm, compute, idle; rank 3 compute, data, idle.
  CHECK(root->find_all("text", "lane-label").size() == 6);
  check_renders(svg, "timeline");
  CHECK_THROWS_AS(report::plot_timeline(report::TimelineInput{}, "empty"), std::invalid_argument);
}

TEST_CASE("past the palette's ten colours, series differ by dash and marker, in the legend as on the plot", "[plot]") {
  // 25 series (one point each, parallel.tp = 1..25): series i and i + 10 share a colour; the
  // dash (none, "6,3", "2,3" by i / 10) and the marker (filled, hollow, filled) tell them apart.
  output::SweepTable t;
  t.varied_keys = {"cluster.nodes", "parallel.tp"};
  t.metric_names = {"step_time_s"};
  t.metric_units = {"s"};
  for (int tp = 1; tp <= 25; ++tp) t.rows.push_back({{"4", std::to_string(tp)}, {1.0 + tp}, "ok"});
  const std::string svg = report::plot_sweep(t, "cluster.nodes", "step_time_s", "many series");
  const auto root = parse_xml(svg);
  const auto entries = root->find_all("g", "legend-entry");
  const auto lines = root->find_all("polyline", "line");
  const auto points = root->find_all("circle", "point");
  REQUIRE(entries.size() == 25);
  REQUIRE(lines.size() == 25);
  REQUIRE(points.size() == 25);  // the legend's markers are not data points
  std::set<std::string> looks;
  for (std::size_t i = 0; i < 25; ++i) {
    const XmlElement* swatch_line = entries[i]->find_all("line", "swatch-line").at(0);
    const XmlElement* swatch_point = entries[i]->find_all("circle", "swatch-point").at(0);
    const std::string dash = swatch_line->has("stroke-dasharray") ? swatch_line->attr("stroke-dasharray") : "";
    const std::string expected_dash = i < 10 ? "" : i < 20 ? "6,3" : "2,3";
    CHECK(dash == expected_dash);
    // The plotted series looks as its legend entry does.
    CHECK(lines[i]->attr("stroke") == swatch_line->attr("stroke"));
    CHECK((lines[i]->has("stroke-dasharray") ? lines[i]->attr("stroke-dasharray") : "") == dash);
    CHECK(points[i]->attr("fill") == swatch_point->attr("fill"));
    const bool hollow = points[i]->attr("fill") == "#ffffff";
    CHECK(hollow == (i >= 10 && i < 20));
    looks.insert(swatch_line->attr("stroke") + " " + dash + " " + swatch_point->attr("fill"));
  }
  CHECK(looks.size() == 25);
  CHECK(entries[0]->find_all("line", "swatch-line")[0]->attr("stroke") ==
        entries[10]->find_all("line", "swatch-line")[0]->attr("stroke"));
  check_renders(svg, "many-series");
}

TEST_CASE("a sweep curve has one line per combination of the other keys and one point per simulated row", "[plot]") {
  output::SweepTable t;
  t.varied_keys = {"cluster.nic_bandwidth", "parallel.tp"};
  t.metric_names = {"step_time_s", "mfu"};
  t.metric_units = {"s", "1"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  t.rows = {{{"400 Gbit/s", "1"}, {2.0, 0.40}, "ok"},
            {{"100 Gbit/s", "1"}, {4.0, 0.20}, "ok"},
            {{"200 Gbit/s", "1"}, {3.0, 0.30}, "ok"},
            {{"100 Gbit/s", "2"}, {nan, nan}, "out of memory"},
            {{"200 Gbit/s", "2"}, {2.5, 0.35}, "ok"}};
  const std::string svg = report::plot_sweep(t, "cluster.nic_bandwidth", "step_time_s", "sweep");
  const auto root = parse_xml(svg);
  check_self_contained(*root);
  const auto points = root->find_all("circle", "point");
  REQUIRE(points.size() == 4);  // the out-of-memory row has no point
  REQUIRE(root->find_all("text", "note").size() == 1);
  CHECK(root->find_all("text", "note")[0]->text.rfind("4 of 5 rows drawn", 0) == 0);
  CHECK(root->find_all("polyline", "line").size() == 2);
  CHECK(legend_labels(*root) == std::vector<std::string>{"parallel.tp=1", "parallel.tp=2"});
  // The tp=1 line in x order: 100, 200, 400 Gbit/s.
  CHECK(points[0]->number("data-x") == 100);
  CHECK(points[0]->number("data-y") == 4.0);
  CHECK(points[1]->number("data-x") == 200);
  CHECK(points[2]->number("data-x") == 400);
  CHECK(points[2]->number("data-y") == 2.0);
  CHECK(points[3]->attr("data-series") == "parallel.tp=2");
  // y axis 0..4 s (4 / 5 = 0.8 → ticks of 1 s): 4 s at the top, 3 s 300 px above the bottom.
  CHECK(points[0]->number("cy") == Approx(kPlotTop));
  CHECK(points[1]->number("cy") == Approx(kPlotTop + kPlotHeight - 3.0 / 4.0 * kPlotHeight));
  const auto axis_labels = root->find_all("text", "axis-label");
  CHECK(axis_labels[0]->text == "step_time_s [s]");
  CHECK(axis_labels[1]->text == "cluster.nic_bandwidth [Gbit/s]");
  check_renders(svg, "sweep");

  // Categorical x (values that are not numbers) keeps their order of appearance.
  output::SweepTable c;
  c.varied_keys = {"parallel.pp_schedule"};
  c.metric_names = {"mfu"};
  c.metric_units = {"1"};
  c.rows = {{{"1f1b"}, {0.4}, "ok"}, {{"gpipe"}, {0.3}, "ok"}, {{"zb-h1 <&>"}, {0.45}, "ok"}};
  const auto cat = parse_xml(report::plot_sweep(c, "parallel.pp_schedule", "mfu", "categories"));
  const auto cat_points = cat->find_all("circle", "point");
  REQUIRE(cat_points.size() == 3);
  CHECK(cat_points[2]->number("data-x") == 2);
  bool escaped_label = false;
  cat->walk([&](const XmlElement& e) { escaped_label = escaped_label || (e.name == "text" && e.text == "zb-h1 <&>"); });
  CHECK(escaped_label);

  CHECK_THROWS_WITH(report::plot_sweep(t, "parallel.pp", "mfu", "x"), Catch::Contains("no varied key \"parallel.pp\""));
  CHECK_THROWS_WITH(report::plot_sweep(t, "parallel.tp", "days", "x"), Catch::Contains("no metric \"days\""));
}

TEST_CASE("a plan curve follows each layout across GPU counts", "[plot]") {
  output::SweepTable p;
  p.varied_keys = {"layout", "schedule"};
  p.metric_names = {"gpus", "days"};
  p.metric_units = {"1", "d"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  p.rows = {{{"tp8 pp4 cp1 dp32 ep1 z1 mb1 1f1b sp full bf16", "1f1b"}, {1024, 60}, "ok"},
            {{"tp8 pp4 cp1 dp64 ep1 z1 mb1 1f1b sp full bf16", "1f1b"}, {2048, 31}, "ok"},
            {{"tp8 pp8 cp1 dp32 ep1 z1 mb1 1f1b sp full bf16", "1f1b"}, {2048, 33}, "ok"},
            {{"tp4 pp8 cp1 dp32 ep1 z1 mb1 1f1b sp full bf16", "1f1b"}, {1024, nan}, "predicted"}};
  const auto root = parse_xml(report::plot_plan(p, "days", "plan"));
  check_self_contained(*root);
  CHECK(root->find_all("circle", "point").size() == 3);
  CHECK(root->find_all("polyline", "line").size() == 2);
  CHECK(legend_labels(*root) == std::vector<std::string>{"tp8 pp4 cp1 ep1 z1 mb1 1f1b sp full bf16",
                                                         "tp8 pp8 cp1 ep1 z1 mb1 1f1b sp full bf16"});
  CHECK_THROWS_AS(report::plot_plan(p, "mfu", "plan"), std::invalid_argument);
}

TEST_CASE("the links figure draws the busiest links with widths proportional to their busy share", "[plot]") {
  const std::vector<std::string> names = {"a->b", "b->c", "c->d", "d->e"};
  const std::vector<double> bytes = {1e9, 2e9, 3e9, 4e9};
  const std::vector<double> busy = {0.5, 1.5, 0.25, 2.0};
  const std::string svg = report::plot_links(names, bytes, busy, 2.0, 3, "links");
  const auto root = parse_xml(svg);
  check_self_contained(*root);
  const auto bars = root->find_all("rect", "bar");
  REQUIRE(bars.size() == 3);
  // Busiest first: d->e (2.0 s of 2.0 s), b->c (0.75), a->b (0.25); plot area 1000 − 250 − 250 − 20 = 480 px.
  CHECK(bars[0]->attr("data-link") == "d->e");
  CHECK(bars[0]->number("data-value") == 1.0);
  CHECK(bars[0]->number("width") == Approx(480.0));
  CHECK(bars[1]->attr("data-link") == "b->c");
  CHECK(bars[1]->number("width") == Approx(0.75 * 480.0));
  CHECK(bars[2]->attr("data-link") == "a->b");
  CHECK(bars[2]->number("data-bytes") == 1e9);
  check_renders(svg, "links");
  CHECK_THROWS_AS(report::plot_links(names, bytes, {1.0}, 2.0, 3, "x"), std::invalid_argument);
  CHECK_THROWS_AS(report::plot_links(names, bytes, busy, 0.0, 3, "x"), std::invalid_argument);
}

TEST_CASE("the link utilisation figure draws one line per link, a point per bin at its middle", "[plot]") {
  // Two links, bins of 2 ms from t = 1 s, the last bin 1 ms: link 0 busy 50 %, 100 %, 0 %;
  // link 1 busy 25 % in each. With --top 1 only link 0 is drawn.
  const std::vector<std::string> names = {"a->b", "b->c"};
  const std::vector<std::int64_t> link = {0, 0, 0, 1, 1, 1};
  const std::vector<double> start = {1.000, 1.002, 1.004, 1.000, 1.002, 1.004};
  const std::vector<double> end = {1.002, 1.004, 1.005, 1.002, 1.004, 1.005};
  const std::vector<double> share = {0.5, 1.0, 0.0, 0.25, 0.25, 0.25};
  const std::string svg = report::plot_link_series(names, link, start, end, share, 2, "links over time");
  const auto root = parse_xml(svg);
  check_self_contained(*root);
  CHECK(root->find_all("polyline", "line").size() == 2);
  CHECK(legend_labels(*root) == names);
  const auto points = root->find_all("circle", "point");
  REQUIRE(points.size() == 6);
  const std::vector<double> mid_ms = {1, 3, 4.5};  // from the first bin's start
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(points[i]->attr("data-series") == "a->b");
    CHECK(points[i]->number("data-x") == Approx(mid_ms[i]).epsilon(1e-9));
    CHECK(points[i]->number("data-y") == Approx(100 * share[i]).epsilon(1e-9));
  }
  check_renders(svg, "link-series");
  CHECK(parse_xml(report::plot_link_series(names, link, start, end, share, 1, "x"))->find_all("circle", "point").size() == 3);
  CHECK_THROWS_AS(report::plot_link_series(names, {0, 2}, {0, 1}, {1, 2}, {0, 0}, 2, "x"), std::invalid_argument);
  CHECK_THROWS_AS(report::plot_link_series(names, {0}, {1}, {1}, {0}, 2, "x"), std::invalid_argument);
  CHECK_THROWS_AS(report::plot_link_series(names, {0}, {0, 1}, {1}, {0}, 2, "x"), std::invalid_argument);
}

TEST_CASE("the XML checker of the plot tests rejects malformed documents", "[plot]") {
  CHECK_NOTHROW(parse_xml("<?xml version=\"1.0\"?><a x='1'><b/>t &amp; u<!-- c --></a>"));
  CHECK_THROWS(parse_xml("<a><b></a>"));
  CHECK_THROWS(parse_xml("<a x=\"1\" x=\"2\"/>"));
  CHECK_THROWS(parse_xml("<a>&nbsp;</a>"));
  CHECK_THROWS(parse_xml("<a>1 < 2</a>"));
  CHECK_THROWS(parse_xml("<a/><b/>"));
  CHECK_THROWS(parse_xml("<a>"));
}
