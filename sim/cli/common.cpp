#include "cli/common.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <typeinfo>

#include "config/units.hpp"
#include "core/time.hpp"
#include "output/atomic_file.hpp"
#include "output/h5_reader.hpp"
#include "run/cpu_budget.hpp"
#include "run/resource_estimate.hpp"

namespace ironlaw::cli {

namespace {

/// A count for messages: digits up to 1e15, %g beyond (never an out-of-range integer cast).
std::string count(double v) {
  char buf[64];
  if (v < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

/// nccl-tests size syntax (K/M/G = 2^10/2^20/2^30); nullopt when unreadable (the command
/// reports that itself).
std::optional<double> size_of(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  const std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1048576.0;
  else if (suffix == "G" || suffix == "g") mult = 1073741824.0;
  else if (!suffix.empty()) return std::nullopt;
  return v * mult;
}

}  // namespace

void check_argument_count(const Args& args) {
  if (args.size() > kMaxArguments) {
    throw InputError({}, "ARGUMENTS", std::to_string(args.size()) + " command-line words; at most " +
                                          std::to_string(kMaxArguments) + " are read in one command");
  }
}

bool parse_command_line(const Args& args, const boost::program_options::options_description& opts,
                        const char* positional, boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  check_argument_count(args);
  po::positional_options_description pos;
  if (positional != nullptr) pos.add(positional, 1);
  const po::parsed_options parsed = po::command_line_parser(args).options(opts).positional(pos).run();
  po::store(parsed, vm);
  // Boost converts "-1" to an unsigned option as 2^64 - 1 (a count or a limit that silently
  // becomes unbounded): a negative value for any unsigned option is refused here, for every
  // command at once.
  for (const auto& o : parsed.options) {
    const auto it = vm.find(o.string_key);
    if (it == vm.end() || it->second.empty()) continue;
    const auto& v = it->second.value();
    const bool is_unsigned = v.type() == typeid(unsigned) || v.type() == typeid(unsigned long) ||
                             v.type() == typeid(unsigned long long) || v.type() == typeid(unsigned short);
    if (!is_unsigned) continue;
    for (const auto& text : o.value) {
      const auto first = text.find_first_not_of(" \t");
      if (first != std::string::npos && text[first] == '-') {
        throw InputError({}, "--" + o.string_key, "expected a whole number >= 0, got \"" + text + "\"");
      }
    }
  }
  for (const auto& [name, value] : vm) {
    const auto* list = boost::any_cast<std::vector<std::string>>(&value.value());
    if (list != nullptr && list->size() > kMaxRepeatedOption) {
      throw InputError({}, "--" + name,
                       "given " + std::to_string(list->size()) + " times; at most " +
                           std::to_string(kMaxRepeatedOption) + " are accepted in one command");
    }
  }
  if (vm.count("help")) {
    std::cout << opts;
    return false;
  }
  po::notify(vm);
  return true;
}

std::string data_dir() {
  if (const char* home = std::getenv("IRONLAW_HOME"); home && *home) return home;
  return IRONLAW_SOURCE_DIR;
}

std::string default_topology_path() { return data_dir() + "/topologies/dgx-h100-leaf-spine.yaml"; }

void add_limit_options(boost::program_options::options_description& opts, Limits& limits, bool sweep) {
  namespace po = boost::program_options;
  opts.add_options()
      ("max-steps", po::value(&limits.max_steps)->default_value(limits.max_steps), "refuse run.steps above this")
      ("step-cpu-limit", po::value(&limits.step_cpu_limit_s)->default_value(limits.step_cpu_limit_s),
       "CPU seconds one step simulation may use; past it (or once its pace projects past it) the simulation stops "
       "with exit 2 (a sweep point, plan layout or search point: a row saying so)")
      ("max-memory", po::value(&limits.max_memory),
       "refuse a scenario whose estimated memory exceeds this, e.g. \"32 GiB\" (default: half of this machine's RAM)");
  add_cpu_limit_option(opts, limits.cpu_limit_s);
  if (sweep) {
    opts.add_options()("max-points", po::value(&limits.max_points)->default_value(limits.max_points),
                       "refuse a sweep of more points than this");
  }
}

void check_step_limit(const config::Scenario& s, const Limits& limits) {
  if (limits.max_steps < 1) throw InputError({}, "--max-steps", "expected at least 1");
  if (s.run.steps > limits.max_steps) {
    throw InputError(s.where("run.steps"), "run.steps",
                     std::to_string(s.run.steps) + " steps exceed the limit of " + std::to_string(limits.max_steps) +
                         " (raise it with --max-steps)");
  }
}

void apply_step_cpu_limit(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw InputError({}, "--step-cpu-limit", "expected a number of CPU seconds >= 0");
  run::set_step_cpu_limit(seconds);
}

namespace {

std::atomic<double> g_command_cpu_limit_s{kDefaultCommandCpuLimitS};
// Held by the watchdog while it is awake (reading the clock, or ending the process) and by a
// thread that forks, from just before the fork to just after (pthread_atfork): a child is never
// forked while the watchdog is inside the C library or a sanitizer's runtime, so the child
// inherits no lock the watchdog held (the HDF5 probe child of analyze and plot hung under ASan
// when forked beside a running watchdog). The watchdog sleeps without it.
pthread_mutex_t g_watchdog_gate = PTHREAD_MUTEX_INITIALIZER;
// Set by the watchdog once it runs its own code: start_command_cpu_watchdog returns only then,
// so no fork can overlap the thread's start-up inside the C library or a sanitizer's runtime
// (under ASan the probe child of `plot` hung in the allocator's lock about one run in ten when
// forked a few milliseconds after the thread was created).
std::atomic<bool> g_watchdog_running{false};
char g_command_name[96] = "";
// Written once by the command's own thread before it loads anything, read by the watchdog.
std::mutex g_input_mutex;
char g_command_input[256] = "";

double process_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

[[noreturn]] void end_past_command_cpu_limit(double used, double limit) {
  output::remove_tracked_temporaries();
  char last[512];
  run::last_simulation(last, sizeof last);
  char input[sizeof g_command_input];
  {
    const std::lock_guard<std::mutex> lock(g_input_mutex);
    std::memcpy(input, g_command_input, sizeof input);
  }
  char text[1400];
  std::snprintf(text, sizeof text,
                "%s%s%s: --cpu-limit: the command used %.2f s of CPU (user + system, all threads), past its limit of "
                "%.2f s%s%s; no output file was committed; reduce the scenario, or raise --cpu-limit to wait longer\n",
                g_command_name, input[0] ? " " : "", input, used, limit,
                last[0] ? "; the simulation begun last: " : "; no simulation had begun", last);
  const std::string shown = printable(text);
  std::fflush(stdout);
  std::size_t off = 0;
  while (off < shown.size()) {
    const ssize_t n = ::write(2, shown.data() + off, shown.size() - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::_exit(kExitBadInput);
}

}  // namespace

void start_command_cpu_watchdog(const std::string& who) {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  const std::size_t n = std::min(who.size(), sizeof g_command_name - 1);
  std::memcpy(g_command_name, who.data(), n);
  g_command_name[n] = '\0';
  // Registered before the thread exists, so no fork can come between them. The child unlocks
  // its copy of the gate: it is the forking thread's, and the child has no watchdog.
  const int registered = ::pthread_atfork([] { ::pthread_mutex_lock(&g_watchdog_gate); },
                                          [] { ::pthread_mutex_unlock(&g_watchdog_gate); },
                                          [] { ::pthread_mutex_unlock(&g_watchdog_gate); });
  if (registered != 0) {
    throw InputError({}, "--cpu-limit",
                     std::string("cannot make the command's CPU bound safe to fork beside: ") + std::strerror(registered));
  }
  std::thread watchdog;
  try {
    watchdog = std::thread([] {
      g_watchdog_running.store(true);
      g_watchdog_running.notify_all();
      for (;;) {
        const timespec pause{0, 20'000'000};
        ::nanosleep(&pause, nullptr);
        ::pthread_mutex_lock(&g_watchdog_gate);
        const double limit = g_command_cpu_limit_s.load();
        const double used = process_cpu_s();
        if (used > limit) end_past_command_cpu_limit(used, limit);  // ends the process, gate held
        ::pthread_mutex_unlock(&g_watchdog_gate);
      }
    });
  } catch (const std::system_error& e) {
    // No thread, no bound: the command is refused rather than run unbounded.
    throw InputError({}, "--cpu-limit", std::string("cannot start the thread that bounds the command's CPU time: ") + e.what());
  }
  watchdog.detach();
  g_watchdog_running.wait(false);
}

void apply_command_cpu_limit(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw InputError({}, "--cpu-limit", "expected a number of CPU seconds >= 0");
  g_command_cpu_limit_s.store(seconds);
}

void note_command_input(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_input_mutex);
  const std::size_t n = std::min(path.size(), sizeof g_command_input - 1);
  std::memcpy(g_command_input, path.data(), n);
  g_command_input[n] = '\0';
}

void add_cpu_limit_option(boost::program_options::options_description& opts, double& seconds, const char* covers) {
  namespace po = boost::program_options;
  opts.add_options()("cpu-limit", po::value(&seconds)->default_value(seconds),
                     (std::string("CPU seconds (user + system, all threads) the whole command may use, ") + covers +
                      "; past it the command stops with exit 2 and commits no output file")
                         .c_str());
}

void check_limit_options(const Limits& limits) {
  apply_step_cpu_limit(limits.step_cpu_limit_s);
  apply_command_cpu_limit(limits.cpu_limit_s);
  if (limits.max_steps < 1) throw InputError({}, "--max-steps", "expected at least 1");
  if (limits.max_points < 1) throw InputError({}, "--max-points", "expected at least 1");
  memory_limit(limits);
}

double memory_limit(const Limits& limits) {
  if (limits.max_memory.empty()) return run::default_memory_limit();
  std::string error;
  const auto v = config::parse_quantity(limits.max_memory, config::Dimension::bytes, &error);
  if (!v || !(*v > 0) || !std::isfinite(*v))
    throw InputError({}, "--max-memory", error.empty() ? "expected a positive size like \"32 GiB\"" : error);
  return *v;
}

namespace {

/// The first limit a scenario breaks, in the order the checks report them: run.steps against
/// --max-steps, then the estimated memory against --max-memory, then the simulated clock's range.
struct LimitVerdict {
  enum class Kind { within, steps, memory, clock };
  Kind kind = Kind::within;
  run::ResourceEstimate estimate;  ///< filled unless kind == steps
  double memory_limit = 0;         ///< bytes; filled unless kind == steps
};

LimitVerdict judge_limits(const config::Scenario& s, const run::Layout& layout, const Limits& limits) {
  LimitVerdict v;
  if (s.run.steps > limits.max_steps) {
    v.kind = LimitVerdict::Kind::steps;
    return v;
  }
  v.memory_limit = memory_limit(limits);
  v.estimate = run::estimate_resources(s, layout);
  if (v.estimate.bytes > v.memory_limit) v.kind = LimitVerdict::Kind::memory;
  else if (v.estimate.min_simulated_s >= Time::kMaxSeconds) v.kind = LimitVerdict::Kind::clock;
  return v;
}

}  // namespace

void check_scenario_limits(const config::Scenario& s, const run::Layout& layout, const Limits& limits) {
  const LimitVerdict v = judge_limits(s, layout, limits);
  const run::ResourceEstimate& e = v.estimate;
  switch (v.kind) {
    case LimitVerdict::Kind::within:
      return;
    case LimitVerdict::Kind::steps:
      check_step_limit(s, limits);  // throws, naming run.steps and --max-steps
      return;
    case LimitVerdict::Kind::memory:
      throw InputError(s.where("cluster.nodes"), "",
                       "the simulation would need about " + gib(e.bytes) + " of memory (" + count(e.tasks) +
                           " tasks per step, " + count(e.live_flows) + " flows in flight, " + count(e.fabric_links) +
                           " links, " + count(e.loader_slots) + " loader slots), above the limit of " +
                           gib(v.memory_limit) + "; mostly " + e.driver +
                           ". Reduce it, or raise the limit with --max-memory");
    case LimitVerdict::Kind::clock: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g s", e.min_simulated_s);
      throw InputError(s.where("run.steps"), "",
                       std::string("the run would simulate at least ") + buf + ", beyond the simulated clock's range (" +
                           Time::kRangeText + "); it is driven by " + e.time_driver);
    }
  }
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
        escape(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, the range of its second byte (no
    // overlong forms, no surrogates, nothing above U+10FFFF), continuation bytes after it.
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    }
    bool valid = len > 0 && i + len <= n;
    for (std::size_t k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      valid = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xbf;
    }
    if (!valid) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text, i, len);
    i += len;
  }
  return out;
}

std::string limits_refusal(const config::Scenario& s, const run::Layout& layout, const Limits& limits) {
  const LimitVerdict v = judge_limits(s, layout, limits);
  switch (v.kind) {
    case LimitVerdict::Kind::within:
      return "";
    case LimitVerdict::Kind::steps:
      return std::to_string(s.run.steps) + " steps, above --max-steps " + std::to_string(limits.max_steps);
    case LimitVerdict::Kind::memory:
      return "would need about " + gib(v.estimate.bytes) + " of memory, above --max-memory " + gib(v.memory_limit);
    case LimitVerdict::Kind::clock:
      return "its simulated time would pass the clock's range";
  }
  return "";
}

void probe_output_path(const std::string& path, const SourceLoc& where, const std::string& key) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(where, key, "the output path is empty");
  const fs::path target(path);
  try {
    if (target.has_parent_path()) {
      std::error_code ec;
      fs::create_directories(target.parent_path(), ec);
      if (ec) {
        throw InputError(where, key,
                         "cannot create the folder \"" + target.parent_path().string() + "\": " + ec.message());
      }
    }
    output::probe_output(target);
  } catch (const IoError& e) {
    throw InputError(where, key, e.what());
  }
}

void check_collective_args(const Args& args) {
  std::string min_s = "8M", max_s = "8G", factor_s = "2", nodes_s = "1";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto take = [&](const std::string& shortf, const std::string& longf, std::string& out) {
      if (a == shortf || a == longf) {
        if (i + 1 < args.size()) out = args[i + 1];
        return true;
      }
      if (!longf.empty() && a.rfind(longf + "=", 0) == 0) {
        out = a.substr(longf.size() + 1);
        return true;
      }
      if (!shortf.empty() && a.size() > shortf.size() && a.rfind(shortf, 0) == 0 && a[1] != '-') {
        out = a.substr(shortf.size());
        return true;
      }
      return false;
    };
    if (take("-b", "--minbytes", min_s) || take("-e", "--maxbytes", max_s) || take("-f", "--stepfactor", factor_s) ||
        take("", "--nodes", nodes_s)) {
      continue;
    }
  }
  char* end = nullptr;
  const double nodes = std::strtod(nodes_s.c_str(), &end);
  if (end != nodes_s.c_str() && nodes > 1'048'576) {
    throw InputError({}, "--nodes", "expected at most 1048576 nodes (the cluster.nodes bound), got " + nodes_s);
  }
  const double factor = std::strtod(factor_s.c_str(), &end);
  const auto lo = size_of(min_s), hi = size_of(max_s);
  if (!lo || !hi || !(*lo > 0) || !(*hi >= *lo) || !(factor > 1) || !std::isfinite(*hi)) return;
  const double rows = std::floor(std::log(*hi / *lo) / std::log(factor)) + 1;
  if (!(rows <= kMaxCollectiveRows)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.3g", rows);
    throw InputError({}, "-f", std::string("the step factor ") + factor_s + " gives " + buf + " sizes from -b " + min_s +
                                   " to -e " + max_s + "; at most " + std::to_string(static_cast<int>(kMaxCollectiveRows)) +
                                   " are simulated (raise -f or narrow -b/-e)");
  }
  if (*hi > 1e15) throw InputError({}, "-e", "expected at most 1e15 bytes (1 PB), got " + max_s);
}

void check_collective_memory(bool all_to_all, double ranks, double limit_bytes) {
  constexpr double kBytesPerRank = 32 * 1024.0, kBytesPerPair = 8 * 1024.0;
  const double bytes = ranks * kBytesPerRank + (all_to_all ? ranks * (ranks - 1) * kBytesPerPair : 0.0);
  if (bytes > limit_bytes) {
    throw InputError({}, "--nodes",
                     "the collective over " + count(ranks) + " ranks would need about " + gib(bytes) +
                         " of memory (" + (all_to_all ? "one flow per pair of ranks" : "the ranks' devices, links and flows") +
                         "), above the limit of " + gib(limit_bytes) + "; use fewer nodes, or raise the limit with --max-memory");
  }
}

std::vector<int> parse_rank_set(const std::string& text, const std::string& key) {
  const auto fail = [&](const std::string& why) -> InputError {
    return InputError({}, key, "expected ranks like \"0,8-15\" (ranks ≥ 0, ranges A-B with A ≤ B), got \"" + text +
                                   "\": " + why);
  };
  const auto rank_of = [&](const std::string& word) {
    if (word.empty() || word.size() > 9 || word.find_first_not_of("0123456789") != std::string::npos)
      throw fail("\"" + word + "\" is not a rank");
    return std::stoi(word);
  };
  std::vector<int> ranks;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const int first = rank_of(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : rank_of(item.substr(dash + 1));
    if (last < first) throw fail("the range " + item + " is reversed");
    if (ranks.size() + static_cast<std::size_t>(last - first) + 1 > kMaxRankSet)
      throw fail("more than " + std::to_string(kMaxRankSet) + " ranks");
    for (int r = first; r <= last; ++r) ranks.push_back(r);
    pos = comma + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

int finish_stdout(int status, const std::string& command) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return status;
  std::cerr << "ironlaw" << (command.empty() ? "" : " " + command) << ": cannot write to standard output: "
            << (err != 0 ? std::strerror(err) : "a write failed") << "\n";
  return kExitBadInput;
}

std::unique_ptr<output::H5Reader> open_user_h5(const std::string& path) {
  try {
    output::probe_h5_file(path);
    return std::make_unique<output::H5Reader>(path);
  } catch (const std::runtime_error& e) {
    throw InputError({}, "OUT.h5", e.what());
  }
}

}  // namespace ironlaw::cli
