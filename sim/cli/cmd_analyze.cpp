// `ironlaw analyze`: read a recorded run back and break its time down by kind, rank or step.
// Works batch by batch on /events, so a trace of any size fits in memory.
#include <boost/program_options.hpp>

#include <cstring>
#include <cstdio>
#include <iostream>
#include <algorithm>
#include <cmath>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "output/h5_reader.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

struct StepRange {
  std::int64_t first = 0;
  std::int64_t last = -1;  // inclusive; -1 = to the end
};

StepRange parse_steps(const std::string& text) {
  const auto colon = text.find(':');
  StepRange r;
  try {
    if (colon == std::string::npos) {
      r.first = r.last = std::stoll(text);
    } else {
      if (colon > 0) r.first = std::stoll(text.substr(0, colon));
      if (colon + 1 < text.size()) r.last = std::stoll(text.substr(colon + 1)) - 1;
    }
  } catch (const std::exception&) {
    throw InputError({}, "--steps", "expected A:B (steps A to B-1) or A, got \"" + text + "\"");
  }
  if (r.first < 0) throw InputError({}, "--steps", "steps count from 0");
  return r;
}

/// Busy seconds per (row key, kind), summed over events.
using Table = std::map<std::int64_t, std::array<double, kEventKindCount>>;

/// `--by stall`: the data-stall records (sim/data/loader.hpp) summed by cause over the window,
/// with the rank that stalled longest, and the host→device copies beside them (the GPU also
/// waits for its batch's copy once the batch is ready; that wait is not counted as a stall).
int stall_breakdown(const output::H5Reader& reader, std::int64_t window_start, std::int64_t window_end, bool csv) {
  const auto names = reader.event_names();
  struct Cause {
    const char* record;
    const char* label;
  };
  static constexpr std::array<Cause, 4> kCauses{{
      {"data_stall/storage_read", "storage read"},
      {"data_stall/decode", "decode/augment"},
      {"data_stall/no_worker", "no worker started it"},
      {"data_stall", "unattributed (older file)"},
  }};
  std::array<double, kCauses.size()> total{};
  std::map<std::int32_t, double> per_rank;
  double h2d = 0;
  std::map<std::int32_t, bool> data_ranks;
  reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const auto& e : batch) {
      if (e.end_ns <= window_start || e.start_ns >= window_end) continue;
      const double d = static_cast<double>(std::min(e.end_ns, window_end) - std::max(e.start_ns, window_start)) * 1e-9;
      const std::string& name = e.name < names.size() ? names[e.name] : std::string();
      if (e.kind == EventKind::data && name == "h2d") {
        h2d += d;
        data_ranks[e.rank] = true;
      }
      if (e.kind != EventKind::stall) continue;
      data_ranks[e.rank] = true;
      for (std::size_t c = 0; c < kCauses.size(); ++c) {
        if (name == kCauses[c].record) total[c] += d;
      }
      per_rank[e.rank] += d;
    }
  });
  double all = 0;
  for (double t : total) all += t;
  const double ranks = static_cast<double>(std::max<std::size_t>(1, data_ranks.size()));
  const double window_s = static_cast<double>(window_end - window_start) * 1e-9;
  if (csv) {
    std::printf("cause,stall_s,per_rank_s,share_of_stall,share_of_time\n");
  } else {
    std::printf("data stalls by cause, summed over %zu rank(s) that load data; window %.6f s\n", data_ranks.size(),
                window_s);
    std::printf("%-28s %14s %12s %10s %10s\n", "cause", "stall_s (all)", "per_rank_s", "of stall", "of time");
  }
  auto row = [&](const std::string& label, double t) {
    const double pr = t / ranks;
    const double of_stall = all > 0 ? t / all : 0;
    const double of_time = window_s > 0 ? pr / window_s : 0;
    if (csv) std::printf("%s,%.9g,%.9g,%.6f,%.6f\n", label.c_str(), t, pr, of_stall, of_time);
    else std::printf("%-28s %14.6f %12.6f %9.1f%% %9.1f%%\n", label.c_str(), t, pr, 100 * of_stall, 100 * of_time);
  };
  for (std::size_t c = 0; c < kCauses.size(); ++c) {
    if (total[c] > 0 || c < 3) row(kCauses[c].label, total[c]);
  }
  row("all data stalls", all);
  if (csv) {
    std::printf("h2d copy (not a stall),%.9g,%.9g,,%.6f\n", h2d, h2d / ranks, window_s > 0 ? h2d / ranks / window_s : 0);
  } else {
    std::printf("%-28s %14.6f %12.6f %10s %9.1f%%\n", "h2d copy (not in the stall)", h2d, h2d / ranks, "",
                window_s > 0 ? 100 * h2d / ranks / window_s : 0);
    if (!per_rank.empty()) {
      const auto worst = std::max_element(per_rank.begin(), per_rank.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
      std::printf("longest-stalled rank: %d (%.6f s)\n", worst->first, worst->second);
    } else {
      std::printf("no data stall was recorded in this window\n");
    }
  }
  return kExitOk;
}

/// The analysis itself; cmd_analyze turns what a damaged file makes the reader throw into an
/// input error.
int analyze(const Args& args) {
  po::options_description opts("ironlaw analyze OUT.h5 [options]");
  std::string path, by = "kind", steps_text;
  opts.add_options()
      ("help,h", "show this help")
      ("file", po::value(&path), "HDF5 output of ironlaw run")
      ("by", po::value(&by)->default_value(by), "kind | rank | step | link | stall (data stalls by cause)")
      ("steps", po::value(&steps_text), "only steps A..B-1 (A:B), or one step (A)")
      ("csv", "comma-separated output");
  po::variables_map vm;
  if (!parse_command_line(args, opts, "file", vm)) return kExitOk;
  if (path.empty()) throw InputError({}, "OUT.h5", "an HDF5 file written by `ironlaw run` is required");
  if (by != "kind" && by != "rank" && by != "step" && by != "link" && by != "stall") {
    throw InputError({}, "--by", "expected kind, rank, step, link or stall, got \"" + by + "\"");
  }
  const bool csv = vm.count("csv") > 0;

  const std::unique_ptr<output::H5Reader> reader = open_user_h5(path);
  if (!reader->has("/steps"))
    throw InputError({}, "OUT.h5", path + " holds no /steps: it is not the output of `ironlaw run` (a sweep file?)");
  const auto info = reader->scenario();
  const auto steps = reader->steps();
  StepRange range;
  if (!steps_text.empty()) range = parse_steps(steps_text);
  std::vector<StepRecord> chosen;
  for (const auto& s : steps)
    if (s.step >= range.first && (range.last < 0 || s.step <= range.last)) chosen.push_back(s);
  if (chosen.empty()) throw InputError({}, "--steps", "no recorded step in that range");
  const std::int64_t window_start = chosen.front().start_ns;
  const std::int64_t window_end = chosen.back().end_ns;

  if (!csv) {
    std::printf("%s (%s, seed %llu, ironlaw %s): steps %lld..%lld\n", path.c_str(), info.name.c_str(),
                static_cast<unsigned long long>(info.seed), info.version.c_str(),
                static_cast<long long>(chosen.front().step), static_cast<long long>(chosen.back().step));
  }

  if (by == "link") {
    // Totals over the whole run (links are not split by step): bytes carried, time busy, and
    // the busy share of the simulated time, busiest links first.
    if (!reader->has("/links")) throw InputError({}, "--by", path + " holds no /links (written by ironlaw run)");
    const auto names = reader->link_names();
    const auto columns = reader->links();
    // A damaged or crafted file: every column present, numeric, as long as the names and finite
    // (a NaN would break the ordering below, a short column would be read past its end).
    const auto* bytes_p = columns.size() >= 2 ? std::get_if<std::vector<double>>(&columns[0].values) : nullptr;
    const auto* busy_p = columns.size() >= 2 ? std::get_if<std::vector<double>>(&columns[1].values) : nullptr;
    if (bytes_p == nullptr || busy_p == nullptr || bytes_p->size() != names.size() || busy_p->size() != names.size())
      throw InputError({}, "OUT.h5", path + ": /links lacks its bytes and busy_s columns, one per /link_names entry");
    const auto& bytes = *bytes_p;
    const auto& busy = *busy_p;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!std::isfinite(bytes[i]) || bytes[i] < 0 || !std::isfinite(busy[i]) || busy[i] < 0)
        throw InputError({}, "OUT.h5", path + ": /links row " + std::to_string(i) + " is not a finite number >= 0");
    }
    const double span = static_cast<double>(steps.back().end_ns - steps.front().start_ns) * 1e-9;
    std::vector<std::size_t> order(names.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] > bytes[b]; });
    if (!csv) std::printf("whole run (%.6f s simulated), %zu links carried traffic, busiest first\n", span, names.size());
    std::printf(csv ? "link,bytes,busy_s,busy_share\n" : "%-44s %14s %12s %10s\n", "link", "GB", "busy_s", "busy");
    const std::size_t shown = csv ? order.size() : std::min<std::size_t>(order.size(), 25);
    for (std::size_t k = 0; k < shown; ++k) {
      const std::size_t i = order[k];
      const double share = span > 0 ? busy[i] / span : 0;
      if (csv) std::printf("%s,%.9g,%.9g,%.6f\n", names[i].c_str(), bytes[i], busy[i], share);
      else std::printf("%-44s %14.3f %12.6f %9.1f%%\n", names[i].c_str(), bytes[i] / 1e9, busy[i], 100 * share);
    }
    return kExitOk;
  }

  if (by == "step") {
    std::printf(csv ? "step,time_s,compute_s,exposed_comm_s,bubble_s,data_stall_s,other_s\n"
                    : "%6s %12s %12s %14s %10s %12s %10s\n",
                "step", "time_s", "compute_s", "exposed_comm_s", "bubble_s", "data_stall_s", "other_s");
    for (const auto& s : chosen) {
      const double t = static_cast<double>(s.end_ns - s.start_ns) * 1e-9;
      std::printf(csv ? "%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n" : "%6lld %12.6f %12.6f %14.6f %10.6f %12.6f %10.6f\n",
                  static_cast<long long>(s.step), t, s.compute_s, s.exposed_comm_s, s.bubble_s, s.data_stall_s,
                  s.other_s);
    }
    return kExitOk;
  }

  if (reader->event_count() == 0) {
    throw InputError({path, 0, 0}, "--by", "the file holds no /events (it was run with --trace none or step); rerun with --trace op");
  }
  if (by == "stall") return stall_breakdown(*reader, window_start, window_end, csv);
  Table table;
  std::int64_t ranks_seen = 0;
  std::map<std::int32_t, bool> ranks;
  reader->for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const auto& e : batch) {
      if (e.end_ns <= window_start || e.start_ns >= window_end) continue;
      const std::int64_t a = std::max(e.start_ns, window_start), b = std::min(e.end_ns, window_end);
      const std::int64_t key = by == "rank" ? e.rank : 0;
      auto [it, fresh] = table.try_emplace(key);
      if (fresh) it->second.fill(0);
      it->second[static_cast<int>(e.kind)] += static_cast<double>(b - a) * 1e-9;
      ranks[e.rank] = true;
    }
  });
  ranks_seen = static_cast<std::int64_t>(ranks.size());
  const double window_s = static_cast<double>(window_end - window_start) * 1e-9;

  if (by == "kind") {
    const auto& row = table.begin()->second;
    if (!csv) {
      std::printf("busy time summed over %lld rank(s); a rank's share is busy time / (ranks x %.6f s)\n",
                  static_cast<long long>(ranks_seen), window_s);
      std::printf("%-12s %16s %14s %10s\n", "kind", "busy_s (all)", "per_rank_s", "share");
    } else {
      std::printf("kind,busy_s,per_rank_s,share\n");
    }
    for (int k = 0; k < kEventKindCount; ++k) {
      if (row[k] == 0) continue;
      const double per_rank = row[k] / static_cast<double>(ranks_seen);
      std::printf(csv ? "%s,%.9g,%.9g,%.6f\n" : "%-12s %16.6f %14.6f %9.1f%%\n", event_kind_name(static_cast<EventKind>(k)),
                  row[k], per_rank, (csv ? 1.0 : 100.0) * per_rank / window_s);
    }
    return kExitOk;
  }

  // by rank
  std::printf(csv ? "rank" : "%6s", "rank");
  for (int k = 0; k < kEventKindCount; ++k) std::printf(csv ? ",%s_s" : " %12s", event_kind_name(static_cast<EventKind>(k)));
  std::printf("\n");
  for (const auto& [rank, row] : table) {
    std::printf(csv ? "%lld" : "%6lld", static_cast<long long>(rank));
    for (int k = 0; k < kEventKindCount; ++k) std::printf(csv ? ",%.9g" : " %12.6f", row[k]);
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace

int cmd_analyze(const Args& args) {
  try {
    return analyze(args);
  } catch (const InputError&) {
    throw;
  } catch (const IoError&) {
    throw;
  } catch (const std::runtime_error& e) {
    // Every runtime error past option parsing comes from reading the file: a damaged or foreign
    // HDF5 file is bad input (exit 2), not an internal error.
    throw IoError(std::string("cannot analyze the file: ") + e.what());
  }
}

}  // namespace ironlaw::cli
