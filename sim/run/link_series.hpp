#pragma once
/// \file Link utilisation over time: the busy time of every link of a flow network per time
/// bin, recorded while steps run (run::simulate with a trace level other than none).
///
/// Mechanism: sampler events of the recorder's own read each link's cumulative busy time
/// (engine::FlowNetwork::link_stats, the time with at least one flow on the link, exact in
/// integer ns) at every bin boundary and at the end of each step; the difference between two
/// samples is the busy time of that bin. The samplers only read, so no step time changes (a
/// golden test holds it); the events they execute are left out of events_executed.
///
/// Bins: they start at the first step's start, kLinkSeriesFirstBin wide. At most
/// kLinkSeriesBins are kept: when a sample falls beyond the last, adjacent pairs merge and the
/// width doubles, so the final width W satisfies T / kLinkSeriesBins ≤ W < 2·T / kLinkSeriesBins
/// for a recording of T (≥ kLinkSeriesBins·kLinkSeriesFirstBin): the bins are sized from the
/// steps simulated, whatever their length. Merging sums busy times, so it is exact.
///
/// Bounds: memory O(links that carried traffic × kLinkSeriesBins) int64s while recording (a
/// link gets its bins when it is first seen busy); the result keeps the `top` busiest links.
/// Cost: O(links) per sample, about kLinkSeriesBins · (1 + log2(T / (kLinkSeriesBins ·
/// kLinkSeriesFirstBin)) / 2) samples per recording.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/flow_network.hpp"
#include "engine/simulator.hpp"

namespace ironlaw::run {

/// Bins a recording keeps at most (even).
inline constexpr int kLinkSeriesBins = 256;
/// Width of the bins a recording starts with.
inline constexpr Time kLinkSeriesFirstBin = Time::ns(1000);
/// Links SimulationResult::link_series keeps (the busiest over the recording).
inline constexpr std::size_t kLinkSeriesLinks = 32;

/// Busy time per link per bin. Bin b covers [start_s + b·bin_s, start_s + (b+1)·bin_s), the
/// last one ending at end_s (it may be shorter).
struct LinkSeries {
  double start_s = 0;  ///< start of bin 0 (the first recorded step's start) [s]
  double bin_s = 0;    ///< bin width [s]; 0 when nothing was recorded
  double end_s = 0;    ///< end of the recording [s]
  std::vector<std::string> names;      ///< links, busiest first (ties: link order)
  std::vector<double> bandwidth;       ///< capacity of each link [B/s]
  /// busy[l][b]: time link l had at least one flow during bin b [s]; ≤ the bin's width.
  std::vector<std::vector<double>> busy;

  std::size_t bins() const { return busy.empty() ? 0 : busy.front().size(); }
  /// Width of bin `b` [s] (the last one may be shorter). O(1).
  double width(std::size_t b) const;
};

/// Samples the busy time of every link of `net` per bin while resumed. Not copyable; keeps
/// references to `sim` and `net`, which must outlive it.
class LinkSeriesRecorder {
 public:
  /// `first_bin` > 0; `max_bins` ≥ 2 and even.
  LinkSeriesRecorder(engine::Simulator& sim, const engine::FlowNetwork& net, Time first_bin = kLinkSeriesFirstBin,
                     int max_bins = kLinkSeriesBins);
  ~LinkSeriesRecorder();
  LinkSeriesRecorder(const LinkSeriesRecorder&) = delete;
  LinkSeriesRecorder& operator=(const LinkSeriesRecorder&) = delete;

  /// Starts recording at sim.now() (the first call fixes bin 0's start), scheduling the next
  /// bin-boundary sample. A sample reschedules itself only while other events are pending, so a
  /// simulation that runs dry still stops. O(1).
  void resume();
  /// Takes a sample at sim.now() (closing part of the current bin) and cancels the pending
  /// sample event. Call when a step has ended, before anything else runs. O(links).
  void pause();

  /// Sampler events executed so far (to leave out of an event count).
  std::uint64_t events() const { return events_; }

  /// The recording: the `top` links with the most busy time (links never busy left out).
  /// O(links · bins).
  LinkSeries series(std::size_t top) const;

 private:
  void sample();
  void schedule_next();

  engine::Simulator& sim_;
  const engine::FlowNetwork& net_;
  Time width_;
  int max_bins_;
  bool started_ = false;
  Time origin_;
  Time last_sample_;
  engine::EventId pending_ = engine::kNoEvent;
  std::uint64_t events_ = 0;
  int bins_used_ = 0;                              ///< bins touched so far (≤ max_bins_)
  std::vector<std::int64_t> last_busy_ns_;         ///< per link, at the last sample
  std::vector<std::vector<std::int64_t>> busy_ns_; ///< per link (empty until first busy), per bin
};

}  // namespace ironlaw::run
