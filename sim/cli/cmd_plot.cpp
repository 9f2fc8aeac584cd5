// `ironlaw plot`: draw a recorded run, sweep or plan as a self-contained SVG figure
// (report/plot_svg.hpp): the per-step breakdown, a timeline of chosen ranks, a sweep or plan
// curve, the links' busy shares. The file is read through output::H5Reader only, after the
// child-process probe analyze uses (a damaged file is exit 2, not a crash).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "output/chrome_trace.hpp"
#include "output/h5_reader.hpp"
#include "report/plot_svg.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// Most event rects in one timeline: beyond this an SVG viewer crawls; choose fewer ranks or
/// a shorter run instead.
constexpr std::size_t kMaxTimelineEvents = 200'000;
/// Most ranks in one timeline: each is a group of lanes (its resources and its idle lane), and
/// drawing scans the window's events once per rank, so the work is ranks x events.
constexpr std::size_t kMaxTimelineRanks = 256;

std::string file_label(const output::H5Reader& reader) {
  std::string name = reader.path().filename().string();
  if (reader.has("/scenario")) {
    const std::string scenario = reader.scenario().name;
    if (!scenario.empty()) name = scenario + " (" + name + ")";
  }
  return name;
}

std::string plot_timeline_of(const output::H5Reader& reader, const std::string& ranks_text, const std::string& step_text,
                             const po::variables_map& vm) {
  const std::string path = reader.path().string();
  if (!reader.has("/steps")) throw InputError({}, "OUT.h5", path + " holds no /steps: it is not the output of `ironlaw run`");
  if (reader.event_count() == 0)
    throw InputError({}, "--kind", path + " holds no events: run it with --trace op (or flow) to record a timeline");
  const std::vector<StepRecord> steps = reader.steps();
  if (steps.empty()) throw InputError({}, "OUT.h5", path + " holds no recorded step");
  const StepRecord* step = &steps.back();
  if (vm.count("step")) {
    std::int64_t wanted = -1;
    try {
      std::size_t used = 0;
      wanted = std::stoll(step_text, &used);
      if (used != step_text.size()) wanted = -1;
    } catch (const std::exception&) {
      wanted = -1;
    }
    const auto it = std::find_if(steps.begin(), steps.end(), [&](const StepRecord& s) { return s.step == wanted; });
    if (it == steps.end()) {
      throw InputError({}, "--step", "expected a recorded step, " + std::to_string(steps.front().step) + ".." +
                                         std::to_string(steps.back().step) + ", got \"" + step_text + "\"");
    }
    step = &*it;
  }
  const std::vector<int> present = output::recorded_ranks(reader);
  std::vector<int> ranks = present;
  if (vm.count("ranks")) {
    ranks = parse_rank_set(ranks_text, "--ranks");
    std::vector<int> missing;
    std::set_difference(ranks.begin(), ranks.end(), present.begin(), present.end(), std::back_inserter(missing));
    if (!missing.empty()) {
      throw InputError({}, "--ranks",
                       "rank(s) " + output::format_rank_set(missing) + " have no events in " + path +
                           ", which holds rank(s) " + output::format_rank_set(present) +
                           " (run.detail: symmetric simulates one data-parallel replica op by op, run.detail: full "
                           "every rank)");
    }
  }
  if (ranks.empty()) throw InputError({}, "OUT.h5", path + " holds no events of any rank");
  if (ranks.size() > kMaxTimelineRanks) {
    throw InputError({}, "--ranks",
                     std::to_string(ranks.size()) + " ranks to draw" +
                         (vm.count("ranks") ? std::string() : " (every rank with events in " + path + ")") +
                         "; a timeline draws at most " + std::to_string(kMaxTimelineRanks) +
                         ": choose them with --ranks, e.g. --ranks " + std::to_string(ranks.front()) + "-" +
                         std::to_string(ranks[std::min(ranks.size(), std::size_t{8}) - 1]));
  }
  bool pipelined = false;
  for (const auto& s : steps) pipelined = pipelined || s.bubble_s > 0;

  report::TimelineInput in;
  in.ranks = ranks;
  in.start_ns = step->start_ns;
  in.end_ns = step->end_ns;
  in.pipeline_end_ns = in.start_ns;
  in.resources = reader.event_resources();
  std::int64_t last_backward = in.start_ns;
  reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const EventRecord& e : batch) {
      if (e.end_ns <= in.start_ns || e.start_ns >= in.end_ns) continue;
      if (e.kind == EventKind::backward || e.kind == EventKind::recompute)
        last_backward = std::max(last_backward, std::min(e.end_ns, in.end_ns));
      if (!std::binary_search(ranks.begin(), ranks.end(), e.rank)) continue;
      if (in.events.size() == kMaxTimelineEvents) {
        throw InputError({}, "--ranks",
                         "more than " + std::to_string(kMaxTimelineEvents) + " events of rank(s) " +
                             output::format_rank_set(ranks) + " in step " + std::to_string(step->step) +
                             ": choose fewer ranks");
      }
      in.events.push_back(e);
    }
  });
  if (pipelined) in.pipeline_end_ns = last_backward;
  const std::string title = "Timeline of step " + std::to_string(step->step) + ", rank(s) " +
                            output::format_rank_set(ranks) + ": " + file_label(reader);
  return report::plot_timeline(in, title);
}

std::string plot_curve_of(const output::H5Reader& reader, std::string metric, const std::string& x_key) {
  const std::string path = reader.path().string();
  try {
    if (reader.has("/plan")) {
      if (!x_key.empty()) throw InputError({}, "--x", "a plan is drawn against its GPU count; --x is for sweeps");
      if (metric.empty()) metric = "days";
      return report::plot_plan(reader.plan(), metric, "Plan: " + metric + " against GPUs, " + file_label(reader));
    }
    if (!reader.has("/sweep")) throw InputError({}, "--kind", path + " holds neither /sweep nor /plan (written by ironlaw sweep or plan)");
    const output::SweepTable table = reader.sweep();
    if (table.varied_keys.empty()) throw InputError({}, "OUT.h5", path + ": /sweep has no varied key");
    if (metric.empty()) metric = "step_time_s";
    const std::string x = x_key.empty() ? table.varied_keys.front() : x_key;
    return report::plot_sweep(table, x, metric, "Sweep: " + metric + " against " + x + ", " + file_label(reader));
  } catch (const std::invalid_argument& e) {
    const bool about_x = std::string(e.what()).find("varied key") != std::string::npos;
    throw InputError({}, about_x ? "--x" : "--metric", e.what());
  }
}

/// /link_series as utilisation over time, the `top` busiest links.
std::string plot_link_series_of(const output::H5Reader& reader, std::size_t top) {
  const std::string path = reader.path().string();
  const auto names = reader.link_series_names();
  const auto columns = reader.link_series();
  const auto column = [&](const char* name) -> const output::TableColumn& {
    for (const auto& c : columns)
      if (c.name == name) return c;
    throw InputError({}, "OUT.h5", path + ": /link_series lacks its field " + name);
  };
  const auto* link = std::get_if<std::vector<std::int64_t>>(&column("link").values);
  const auto* start = std::get_if<std::vector<double>>(&column("start_s").values);
  const auto* end = std::get_if<std::vector<double>>(&column("end_s").values);
  const auto* busy = std::get_if<std::vector<double>>(&column("busy_fraction").values);
  if (!link || !start || !end || !busy) throw InputError({}, "OUT.h5", path + ": /link_series has a field of the wrong type");
  if (names.empty()) throw InputError({}, "--kind", path + ": no link carried traffic in this run");
  try {
    const std::size_t drawn = std::min(top, names.size());
    return report::plot_link_series(names, *link, *start, *end, *busy, top,
                                    "Link utilisation over time (" + std::to_string(drawn) + " busiest of the " +
                                        std::to_string(names.size()) + " recorded): " + file_label(reader));
  } catch (const std::invalid_argument& e) {
    throw InputError({}, "OUT.h5", path + ": " + e.what());
  }
}

std::string plot_links_of(const output::H5Reader& reader, std::size_t top, bool top_given) {
  const std::string path = reader.path().string();
  // Over time when the run recorded it (a trace level other than none), else whole-run shares.
  if (reader.has("/link_series")) return plot_link_series_of(reader, top_given ? top : 8);
  if (!reader.has("/links")) throw InputError({}, "--kind", path + " holds no /links (written by ironlaw run)");
  if (!reader.has("/steps")) throw InputError({}, "OUT.h5", path + " holds no /steps");
  const std::vector<StepRecord> steps = reader.steps();
  if (steps.empty()) throw InputError({}, "OUT.h5", path + " holds no recorded step");
  const double span_s = static_cast<double>(steps.back().end_ns - steps.front().start_ns) * 1e-9;
  const auto names = reader.link_names();
  const auto columns = reader.links();
  const auto* bytes = columns.size() >= 2 ? std::get_if<std::vector<double>>(&columns[0].values) : nullptr;
  const auto* busy = columns.size() >= 2 ? std::get_if<std::vector<double>>(&columns[1].values) : nullptr;
  if (bytes == nullptr || busy == nullptr) throw InputError({}, "OUT.h5", path + ": /links lacks its bytes and busy_s columns");
  if (names.empty()) throw InputError({}, "--kind", path + ": no link carried traffic in this run");
  try {
    return report::plot_links(names, *bytes, *busy, span_s, top,
                              "Link busy share over the whole run (" + std::to_string(std::min(top, names.size())) +
                                  " busiest of " + std::to_string(names.size()) + "): " + file_label(reader));
  } catch (const std::invalid_argument& e) {
    throw InputError({}, "OUT.h5", path + ": " + e.what());
  }
}

}  // namespace

int cmd_plot(const Args& args) {
  po::options_description opts("ironlaw plot OUT.h5 [options]");
  std::string path, kind, out_path, ranks_text, step_text, metric, x_key;
  std::size_t top = 30;
  opts.add_options()
      ("help,h", "show this help")
      ("file", po::value(&path), "HDF5 file written by ironlaw run, sweep or plan")
      ("kind", po::value(&kind), "breakdown | timeline | sweep | links (default: breakdown, or sweep for a sweep or plan file)")
      ("output,o", po::value(&out_path), "SVG to write (default: beside OUT.h5, named OUT-KIND.svg)")
      ("ranks", po::value(&ranks_text), "timeline: ranks to draw, e.g. 0,8-15 (default: every rank with events)")
      ("step", po::value(&step_text), "timeline: the step to draw (default: the last recorded step)")
      ("metric", po::value(&metric), "sweep: the metric on the y axis (default: step_time_s; days for a plan)")
      ("x", po::value(&x_key), "sweep: the varied key on the x axis (default: the first)")
      ("top", po::value(&top), "links: how many of the busiest links to draw (default 8 over time, 30 as whole-run bars)")
      ("quiet,q", "print nothing on success");
  po::variables_map vm;
  if (!parse_command_line(args, opts, "file", vm)) return kExitOk;
  if (path.empty()) throw InputError({}, "OUT.h5", "an HDF5 file written by ironlaw run, sweep or plan is required");
  if (vm.count("output") && out_path.empty()) throw InputError({}, "-o", "the output path is empty");
  if (vm.count("top") && (top == 0 || top > 10'000)) throw InputError({}, "--top", "expected 1 to 10000 links");

  const std::unique_ptr<output::H5Reader> reader = open_user_h5(path);
  if (kind.empty()) kind = reader->has("/sweep") || reader->has("/plan") ? "sweep" : "breakdown";
  if (kind != "breakdown" && kind != "timeline" && kind != "sweep" && kind != "links")
    throw InputError({}, "--kind", "expected breakdown, timeline, sweep or links, got \"" + kind + "\"");
  const auto only_for = [&](const char* option, const char* for_kind) {
    if (vm.count(option) && kind != for_kind)
      throw InputError({}, std::string("--") + option, std::string("applies to --kind ") + for_kind + " only");
  };
  only_for("ranks", "timeline");
  only_for("step", "timeline");
  only_for("metric", "sweep");
  only_for("x", "sweep");
  only_for("top", "links");

  if (out_path.empty()) {
    std::filesystem::path p(path);
    out_path = (p.parent_path() / (p.stem().string() + "-" + kind + ".svg")).string();
  }
  std::error_code ec;
  if (std::filesystem::path(out_path).lexically_normal() == std::filesystem::path(path).lexically_normal() ||
      std::filesystem::equivalent(out_path, path, ec)) {
    throw InputError({}, "-o", "must differ from the input file \"" + path + "\"");
  }
  probe_output_path(out_path, {}, "-o");

  std::string svg;
  try {
    if (kind == "breakdown") {
      if (!reader->has("/steps")) throw InputError({}, "--kind", path + " holds no /steps: use --kind sweep for a sweep or plan file");
      const auto steps = reader->steps();
      if (steps.empty()) throw InputError({}, "OUT.h5", path + " holds no recorded step");
      svg = report::plot_breakdown(steps, "Time per step, mean over the simulated ranks: " + file_label(*reader));
    } else if (kind == "timeline") {
      svg = plot_timeline_of(*reader, ranks_text, step_text, vm);
    } else if (kind == "sweep") {
      svg = plot_curve_of(*reader, metric, x_key);
    } else {
      svg = plot_links_of(*reader, top, vm.count("top") > 0);
    }
  } catch (const InputError&) {
    throw;
  } catch (const IoError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError({}, "OUT.h5", e.what());  // a malformed table: named by the reader
  }
  report::write_svg(out_path, svg);
  if (!vm.count("quiet")) std::cout << "wrote " << printable(out_path) << "\n";
  return kExitOk;
}

}  // namespace ironlaw::cli
