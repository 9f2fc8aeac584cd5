// `ironlaw plot` and `run --chrome-trace-ranks` end to end: each figure of a real run, sweep
// and plan parses as XML and its series match the HDF5 file read back through H5Reader (bar
// values and heights, one timeline rect per event of the chosen ranks, one curve point per
// simulated row, one bar per link); each renders with rsvg-convert; bad input exits 2; the
// Chrome trace holds exactly the chosen ranks as processes and link counters within [0, 1].
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cli_harness.hpp"
#include "output/h5_reader.hpp"
#include "report/plot_svg.hpp"
#include "report/plot_xml.hpp"

using namespace ironlaw;
using namespace ironlaw::cli_test;
using ironlaw::plot_test::parse_xml;
using ironlaw::plot_test::XmlElement;

namespace {

const std::string kGpt2 = repo_path("scenarios/gpt2-ddp-1node.yaml");  // 2 steps, 8 GPUs, ~0.1 s

std::unique_ptr<XmlElement> plot(const TempDir& dir, std::vector<std::string> args, const std::string& svg_name) {
  args.insert(args.begin(), "plot");
  args.push_back("-o");
  args.push_back(svg_name);
  const Outcome r = run_ironlaw(args, dir.path());
  INFO(r.all());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote " + svg_name) != std::string::npos);
  const std::string svg = read_file(dir / svg_name);
  REQUIRE(!svg.empty());
  if (plot_test::have_rsvg_convert()) {
    CHECK(plot_test::render_with_rsvg(dir / svg_name, dir / (svg_name + ".png")) == 0);
    CHECK(plot_test::is_png(dir / (svg_name + ".png")));
  } else {
    WARN("rsvg-convert not found: " << svg_name << " not rendered (install librsvg2-bin; scripts/setup.sh does)");
  }
  auto root = parse_xml(svg);
  CHECK(root->find_all("script").empty());
  CHECK(root->find_all("g", "legend-entry").size() >= 1);
  CHECK(root->find_all("text", "axis-label").size() >= 1);
  return root;
}

/// Number of occurrences of `needle` in `text`.
std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("plot --kind breakdown draws each /steps row with heights proportional to its parts", "[cli][plot]") {
  TempDir dir;
  const Outcome run = run_ironlaw({"run", kGpt2, "-o", "run.h5", "--trace", "op", "-q"}, dir.path());
  INFO(run.all());
  REQUIRE(run.exit_code == 0);
  const auto root = plot(dir, {"run.h5"}, "breakdown.svg");  // breakdown is the default for a run file
  const auto steps = output::H5Reader(dir / "run.h5").steps();
  const auto bars = root->find_all("rect", "bar");
  REQUIRE(bars.size() == steps.size() * 5);
  double px_per_s = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const double parts[] = {steps[i].compute_s, steps[i].exposed_comm_s, steps[i].bubble_s, steps[i].data_stall_s,
                            steps[i].other_s};
    for (std::size_t p = 0; p < 5; ++p) {
      const XmlElement& b = *bars[i * 5 + p];
      INFO("step " << i << " " << report::kBreakdownParts[p]);
      CHECK(b.number("data-value") == Approx(parts[p]).epsilon(1e-8));
      if (parts[p] > 1e-3) {  // ≥ 1 ms: the 0.01 px rounding is below 1e-3 of the height
        if (px_per_s == 0) px_per_s = b.number("height") / parts[p];
        CHECK(b.number("height") / parts[p] == Approx(px_per_s).epsilon(1e-3));
      }
    }
  }
  CHECK(px_per_s > 0);
}

TEST_CASE("plot --kind timeline draws one rect per event of the chosen ranks in the step", "[cli][plot]") {
  TempDir dir;
  // run.detail full records all 8 ranks (symmetric mode records one data-parallel replica: rank 0 here).
  const Outcome run = run_ironlaw({"run", kGpt2, "-o", "run.h5", "--trace", "op", "-q", "--set", "run.detail=full"},
                                  dir.path());
  INFO(run.all());
  REQUIRE(run.exit_code == 0);
  const output::H5Reader reader(dir / "run.h5");
  const auto steps = reader.steps();
  REQUIRE(steps.size() == 2);
  const std::set<int> chosen = {0, 5, 6, 7};
  std::size_t expected = 0;
  std::set<int> seen;
  reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const auto& e : batch) {
      if (e.end_ns <= steps[0].start_ns || e.start_ns >= steps[0].end_ns) continue;
      if (chosen.count(e.rank)) {
        ++expected;
        seen.insert(e.rank);
      }
    }
  });
  CHECK(seen == chosen);
  const auto root = plot(dir, {"run.h5", "--kind", "timeline", "--ranks", "0,5-7", "--step", "0"}, "timeline.svg");
  const auto rects = root->find_all("rect", "event");
  CHECK(rects.size() == expected);
  std::set<std::string> ranks_drawn;
  for (const auto* r : rects) ranks_drawn.insert(r->attr("data-rank"));
  CHECK(ranks_drawn == std::set<std::string>{"0", "5", "6", "7"});

  // A rank with no events is refused, naming the ranks the file holds.
  const Outcome bad = run_ironlaw({"plot", "run.h5", "--kind", "timeline", "--ranks", "3,8-9"}, dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("rank(s) 8-9 have no events") != std::string::npos);
  CHECK(bad.err.find("holds rank(s) 0-7") != std::string::npos);
}

TEST_CASE("the timeline's bubbles add up to the pipeline bubble /steps measured", "[cli][plot]") {
  TempDir dir;
  const Outcome run = run_ironlaw(
      {"run", kGpt2, "-o", "pp.h5", "--trace", "op", "-q", "--set", "parallel.pp=2"},
      dir.path());
  INFO(run.all());
  REQUIRE(run.exit_code == 0);
  const auto steps = output::H5Reader(dir / "pp.h5").steps();
  REQUIRE(steps.back().bubble_s > 0);
  // Symmetric mode records one data-parallel replica: the two pipeline stages, ranks 0 and 1.
  const auto root = plot(dir, {"pp.h5", "--kind", "timeline"}, "pp.svg");
  double bubble_s = 0;
  std::set<std::string> ranks;
  for (const auto* b : root->find_all("rect", "bubble")) {
    bubble_s += b->number("data-value");
    ranks.insert(b->attr("data-rank"));
  }
  CHECK(ranks == std::set<std::string>{"0", "1"});
  // /steps holds the mean over the simulated ranks; the figure draws every rank's bubbles.
  CHECK(bubble_s / 2 == Approx(steps.back().bubble_s).epsilon(1e-6));
}

TEST_CASE("plot --kind links draws one bar per link, its busy share of the simulated time", "[cli][plot]") {
  TempDir dir;
  const Outcome run = run_ironlaw({"run", kGpt2, "-o", "run.h5", "--trace", "none", "-q"}, dir.path());
  REQUIRE(run.exit_code == 0);
  const output::H5Reader reader(dir / "run.h5");
  const auto names = reader.link_names();
  const auto columns = reader.links();
  const auto& busy = std::get<std::vector<double>>(columns.at(1).values);
  const auto steps = reader.steps();
  const double span = static_cast<double>(steps.back().end_ns - steps.front().start_ns) * 1e-9;
  const auto root = plot(dir, {"run.h5", "--kind", "links", "--top", "5"}, "links.svg");
  const auto bars = root->find_all("rect", "bar");
  REQUIRE(bars.size() == std::min<std::size_t>(5, names.size()));
  const double busiest = *std::max_element(busy.begin(), busy.end());
  CHECK(bars[0]->number("data-value") == Approx(busiest / span).epsilon(1e-8));
  for (const auto* b : bars) {
    const auto it = std::find(names.begin(), names.end(), b->attr("data-link"));
    REQUIRE(it != names.end());
    CHECK(b->number("data-value") == Approx(busy[static_cast<std::size_t>(it - names.begin())] / span).epsilon(1e-8));
  }
}

TEST_CASE("plot --kind links draws utilisation over time, one line per link matching /link_series", "[cli][plot]") {
  TempDir dir;
  const Outcome run = run_ironlaw({"run", kGpt2, "-o", "run.h5", "--trace", "step", "-q"}, dir.path());
  REQUIRE(run.exit_code == 0);
  const output::H5Reader reader(dir / "run.h5");
  const auto names = reader.link_series_names();
  REQUIRE(names.size() >= 3);
  const auto columns = reader.link_series();
  REQUIRE(columns.at(0).name == "link");
  REQUIRE(columns.at(2).name == "start_s");
  REQUIRE(columns.at(3).name == "end_s");
  REQUIRE(columns.at(5).name == "busy_fraction");
  CHECK(columns.at(5).unit == "1");
  CHECK(columns.at(4).unit == "s");
  const auto& link = std::get<std::vector<std::int64_t>>(columns.at(0).values);
  const auto& start = std::get<std::vector<double>>(columns.at(2).values);
  const auto& end = std::get<std::vector<double>>(columns.at(3).values);
  const auto& share = std::get<std::vector<double>>(columns.at(5).values);
  const auto steps = reader.steps();
  // The bins cover the simulated steps from the first's start to the last's end.
  CHECK(start.front() == Approx(steps.front().start_ns * 1e-9).margin(1e-12));
  CHECK(end.back() == Approx(steps.back().end_ns * 1e-9).epsilon(1e-12));

  const auto root = plot(dir, {"run.h5", "--kind", "links", "--top", "3"}, "links-time.svg");
  const auto lines = root->find_all("polyline", "line");
  REQUIRE(lines.size() == 3);
  const auto points = root->find_all("circle", "point");
  for (std::size_t l = 0; l < 3; ++l) {
    INFO(names[l]);
    CHECK(lines[l]->attr("data-series") == names[l]);
    std::vector<const XmlElement*> mine;
    for (const auto* p : points)
      if (p->attr("data-series") == names[l]) mine.push_back(p);
    std::vector<std::size_t> rows;
    for (std::size_t r = 0; r < link.size(); ++r)
      if (link[r] == static_cast<std::int64_t>(l)) rows.push_back(r);
    REQUIRE(mine.size() == rows.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::size_t r = rows[k];
      CHECK(mine[k]->number("data-x") == Approx(((start[r] + end[r]) / 2 - start.front()) * 1e3).epsilon(1e-8).margin(1e-9));
      CHECK(mine[k]->number("data-y") == Approx(100 * share[r]).epsilon(1e-8).margin(1e-9));
    }
  }
  // Some bin of the busiest link is busier than its whole-run mean: a time series, not a mean.
  double most = 0, total = 0, span = 0;
  for (std::size_t r = 0; r < link.size(); ++r) {
    if (link[r] != 0) continue;
    most = std::max(most, share[r]);
    total += share[r] * (end[r] - start[r]);
    span += end[r] - start[r];
  }
  CHECK(most > total / span);
}

TEST_CASE("plot --kind sweep draws one point per simulated row of /sweep", "[cli][plot]") {
  TempDir dir;
  const Outcome sweep = run_ironlaw(
      {"sweep", kGpt2, "--vary", "parallel.zero=0,1", "--vary", "parallel.tp=1,3", "-o", "sweep.h5", "--set", "output.trace=none"},
      dir.path());
  INFO(sweep.all());
  REQUIRE(sweep.exit_code == 12);  // tp 3 does not divide the 8 GPUs: 2 invalid points, exit 10 + 2
  const auto table = output::H5Reader(dir / "sweep.h5").sweep();
  std::size_t ok = 0;
  for (const auto& row : table.rows) ok += row.status == "ok";
  REQUIRE(ok == 2);
  const auto root = plot(dir, {"sweep.h5", "--metric", "mfu"}, "sweep.svg");  // sweep is the default for a sweep file
  const auto points = root->find_all("circle", "point");
  REQUIRE(points.size() == ok);
  const std::size_t mfu = static_cast<std::size_t>(
      std::find(table.metric_names.begin(), table.metric_names.end(), "mfu") - table.metric_names.begin());
  for (const auto* p : points) {
    const auto row = std::find_if(table.rows.begin(), table.rows.end(), [&](const auto& r) {
      return r.status == "ok" && std::stod(r.values[0]) == p->number("data-x");
    });
    REQUIRE(row != table.rows.end());
    CHECK(p->number("data-y") == Approx(row->metrics[mfu]).epsilon(1e-8));
  }
}

TEST_CASE("plot refuses bad input with exit 2", "[cli][plot]") {
  TempDir dir;
  const Outcome run = run_ironlaw({"run", kGpt2, "-o", "run.h5", "--trace", "step", "-q"}, dir.path());
  REQUIRE(run.exit_code == 0);
  dir.write("not.h5", "not an HDF5 file\n");
  const struct {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"plot"}, "OUT.h5"},
      {{"plot", "missing.h5"}, "missing.h5"},
      {{"plot", "not.h5"}, "not.h5"},
      {{"plot", "run.h5", "--kind", "pie"}, "expected breakdown, timeline, sweep or links"},
      {{"plot", "run.h5", "--kind", "timeline"}, "--trace op"},  // recorded at step level: no events
      {{"plot", "run.h5", "--kind", "sweep"}, "neither /sweep nor /plan"},
      {{"plot", "run.h5", "--ranks", "0"}, "applies to --kind timeline only"},
      {{"plot", "run.h5", "-o", "run.h5"}, "must differ from the input file"},
      {{"plot", "run.h5", "--kind", "links", "--top", "0"}, "--top"},
  };
  for (const auto& c : cases) {
    const Outcome r = run_ironlaw(c.args, dir.path());
    INFO(r.all());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  const Outcome op = run_ironlaw({"run", kGpt2, "-o", "op.h5", "--trace", "op", "-q"}, dir.path());
  REQUIRE(op.exit_code == 0);
  for (const char* ranks : {"x", "3-1", "-1", "", "1,,2"}) {
    const Outcome r = run_ironlaw({"plot", "op.h5", "--kind", "timeline", "--ranks", ranks}, dir.path());
    INFO(ranks << ": " << r.all());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--ranks") != std::string::npos);
  }
  const Outcome step = run_ironlaw({"plot", "op.h5", "--kind", "timeline", "--step", "7"}, dir.path());
  CHECK(step.exit_code == 2);
  CHECK(step.err.find("expected a recorded step, 0..1") != std::string::npos);
}

TEST_CASE("run --chrome-trace-ranks keeps exactly the chosen ranks and adds link counters in [0, 1]", "[cli][run][chrome]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"run", kGpt2, "--trace", "op", "-o", "run.h5", "--set", "run.detail=full", "-q",
                                 "--chrome-trace", "trace.json", "--chrome-trace-ranks", "0,5-6"},
                                dir.path());
  INFO(r.all());
  REQUIRE(r.exit_code == 0);
  const std::string json = read_file(dir / "trace.json");
  CHECK(json.find("\"ph\":\"X\"") != std::string::npos);
  for (int rank = 0; rank < 8; ++rank) {
    const bool chosen = rank == 0 || rank == 5 || rank == 6;
    INFO("rank " << rank);
    CHECK((json.find("\"args\":{\"name\":\"rank " + std::to_string(rank) + "\"}") != std::string::npos) == chosen);
    CHECK((count_of(json, "\"pid\":" + std::to_string(rank) + ",\"tid\"") > 0) == chosen);
  }
  // Counters over time (the run recorded /link_series): one sample per bin of each link track
  // and a 0 at its end, every busy share within [0, 1].
  const std::size_t counters = count_of(json, "\"ph\":\"C\"");
  const output::H5Reader reader(dir / "run.h5");
  const std::size_t tracks = std::min<std::size_t>(reader.link_series_names().size(), 64);
  const auto series = reader.link_series();
  const auto& link = std::get<std::vector<std::int64_t>>(series.at(0).values);
  const std::size_t bins = static_cast<std::size_t>(std::count_if(link.begin(), link.end(), [](std::int64_t l) { return l < 64; }));
  REQUIRE(tracks > 0);
  CHECK(counters == bins + tracks);
  CHECK(json.find("links: busy share per time bin") != std::string::npos);
  for (auto pos = json.find("\"busy share\":"); pos != std::string::npos; pos = json.find("\"busy share\":", pos + 1)) {
    const double v = std::stod(json.substr(pos + 13, 24));
    CHECK(v >= 0.0);
    CHECK(v <= 1.0);
  }
  CHECK(count_of(json, "\"busy share\":") == counters);

  const Outcome absent = run_ironlaw({"run", kGpt2, "--trace", "op", "-o", "sym.h5", "-q", "--chrome-trace", "t2.json",
                                      "--chrome-trace-ranks", "0-1"},
                                     dir.path());
  CHECK(absent.exit_code == 2);
  CHECK(absent.err.find("rank(s) 1 have no events") != std::string::npos);
  CHECK(absent.err.find("run.detail: full") != std::string::npos);
  const Outcome no_trace = run_ironlaw({"run", kGpt2, "-o", "x.h5", "--chrome-trace-ranks", "0"}, dir.path());
  CHECK(no_trace.exit_code == 2);
  CHECK(no_trace.err.find("needs --chrome-trace") != std::string::npos);
}

TEST_CASE("plot ends every damaged HDF5 file of the corpus with exit 2 or a figure, never a crash", "[cli][plot]") {
  TempDir dir;
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(repo_path("tests/corpus/inputs"))) {
    if (entry.path().extension() != ".h5") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    for (const char* kind : {"breakdown", "timeline", "sweep", "links"}) {
      const Outcome r = run_ironlaw({"plot", entry.path().string(), "--kind", kind, "-o", "x.svg"}, dir.path());
      INFO(name << " --kind " << kind << ": " << r.all());
      CHECK(r.signal == 0);
      // A file damaged only where the figure does not look (h5_summary_layout.h5: /summary) still draws.
      CHECK((r.exit_code == 2 || r.exit_code == 0));
      if (r.exit_code == 2) CHECK(r.err.find(name) != std::string::npos);
      // The file whose chunk-dimension message kills libhdf5 inside H5Dopen: the child probe catches it.
      if (name == "h5_chunk_dim_sigfpe.h5") CHECK(r.err.find("damaged HDF5 file") != std::string::npos);
    }
  }
  CHECK(files >= 5);
  for (const auto& left : entries_of(dir.path())) CHECK(left.find(".tmp-") == std::string::npos);
}
