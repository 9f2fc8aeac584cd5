#pragma once
/// \file Figures of a recorded run, as self-contained SVG 1.1 text for `ironlaw plot`: the
/// per-step time breakdown, a timeline of chosen ranks, a sweep or plan curve, and the links'
/// busy shares over the whole run or over time. Each figure has a title, axis labels with units
/// and a legend.
///
/// Self-contained: no scripts, no external references (no href, no web fonts, no CSS
/// imports); text uses the generic "sans-serif" family. Deterministic: coordinates are written
/// with a fixed number of decimals through snprintf in the "C" locale, so the same input gives
/// byte-identical text.
///
/// Every drawn datum is one element with a class naming its series and data-* attributes
/// holding the number it stands for (`data-value`, `data-x`, `data-y`, in the axis's unit), so
/// tests and scripts can read a figure back and check it against the HDF5 file. Geometry is
/// exact: a bar's height is value × (plot height / axis maximum), to 0.01 px.
///
/// Nothing here prints; write_svg() is the only function that touches a file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "output/tables.hpp"

namespace ironlaw::report {

/// The parts of a step stacked by plot_breakdown, bottom to top; each bar element has class
/// "bar" and data-part set to one of these names (the /steps field without "_s").
inline constexpr const char* kBreakdownParts[] = {"compute", "exposed_comm", "bubble", "data_stall", "other"};

/// Stacked bars, one per /steps row: compute, exposed communication, pipeline bubble, data
/// stall and other, in milliseconds (data-value in seconds, as in /steps). The y axis starts at
/// 0; a bar's total height is the step's duration. O(steps).
std::string plot_breakdown(const std::vector<StepRecord>& steps, const std::string& title);

/// What plot_timeline draws.
struct TimelineInput {
  std::vector<EventRecord> events;       ///< the chosen ranks' events overlapping the window
  std::vector<std::string> resources;    ///< the file's /event_resources (EventRecord::resource)
  std::vector<int> ranks;                ///< the chosen ranks, ascending, unique
  std::int64_t start_ns = 0;             ///< the window [start_ns, end_ns), e.g. one step
  std::int64_t end_ns = 0;
  /// End of the last backward or recompute kernel of any simulated rank in the window when
  /// the run is pipelined (its idle time before that instant is the pipeline bubble, as
  /// run/step_metrics measures it); start_ns otherwise.
  std::int64_t pipeline_end_ns = 0;
};

/// One lane per (rank, resource) with one rect (class "event", data-rank, data-kind) per event,
/// clipped to the window, coloured by kind: compute (forward, backward, recompute, optimizer),
/// communication (collective, flow), data and stall. Below each rank's lanes an "idle" lane
/// shows the time none of its compute, collective or data events covers: class "bubble" before
/// pipeline_end_ns, class "idle" after. x in milliseconds from the window's start.
/// O(events log events). Throws std::invalid_argument for an empty window or rank list.
std::string plot_timeline(const TimelineInput& in, const std::string& title);

/// One line (class "line", a polyline) per group and one marker (class "point", data-x,
/// data-y) per row whose status is "ok" and whose metric is finite.
///
/// Sweep: x is the value of `x_key` (one of table.varied_keys): numbers when every value reads
/// as a number followed by the same unit ("400 Gbit/s"), else the values as categories in
/// order of first appearance; one group per combination of the other varied keys.
/// Throws std::invalid_argument naming the key or metric when the table lacks it.
std::string plot_sweep(const output::SweepTable& table, const std::string& x_key, const std::string& metric,
                       const std::string& title);

/// Plan (/plan of `ironlaw plan`): x = the metric "gpus", one group per layout with its
/// data-parallel degree left out ("tp8 pp4 cp1 ep1 z1 mb1 1f1b sp full bf16"), so each line
/// follows one layout across cluster sizes. Same markers and errors as plot_sweep.
std::string plot_plan(const output::SweepTable& plan, const std::string& metric, const std::string& title);

/// Horizontal bars (class "bar", data-link, data-value = busy share 0..1) for the `top`
/// links with the most busy time, busiest first: each link's time with at least one flow as a
/// share of `span_s`, the simulated time. /links holds whole-run totals, so this is the
/// utilisation over the whole run, not a time series. Throws std::invalid_argument when the
/// columns differ in length or span_s ≤ 0. O(links log links).
std::string plot_links(const std::vector<std::string>& names, const std::vector<double>& bytes,
                       const std::vector<double>& busy_s, double span_s, std::size_t top, const std::string& title);

/// Most time bins of one drawn link: `ironlaw run` writes at most 256; each is a marker in the SVG.
inline constexpr std::size_t kMaxLinkSeriesBins = 4096;

/// Link utilisation over time (/link_series of `ironlaw run`): one line (class "line",
/// data-series = the link's name) per link and one marker per time bin (class "point", data-x =
/// the bin's middle in ms from the first bin's start, data-y = the share of the bin with at
/// least one flow on the link, in %), for the first `top` links of `names` (the file lists them
/// busiest first). Rows: link (index into names), start_s, end_s, busy_fraction (0..1), as in the
/// file. Throws std::invalid_argument when the columns differ in length, a link index is out of
/// range, a bin is empty or outside 0..Time::kMaxSeconds, a share is not finite and >= 0, or a
/// drawn link has more than kMaxLinkSeriesBins bins. O(rows).
std::string plot_link_series(const std::vector<std::string>& names, const std::vector<std::int64_t>& link,
                             const std::vector<double>& start_s, const std::vector<double>& end_s,
                             const std::vector<double>& busy_fraction, std::size_t top, const std::string& title);

/// Writes `svg` to `target` atomically (a temporary sibling renamed onto it; see
/// output/atomic_file.hpp). Throws IoError naming the path.
void write_svg(const std::filesystem::path& target, const std::string& svg);

}  // namespace ironlaw::report
