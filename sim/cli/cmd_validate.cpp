// `ironlaw validate`: published figures, ironlaw's prediction for the published configuration,
// and the error, case by case; then the median and maximum |error| over the measured rows.
// The jobs of all cases run side by side on `-j` threads (default 2); what is printed does not
// depend on the thread count or on which job ends first.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/machine_output.hpp"
#include "core/error.hpp"
#include "report/validation.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

int cmd_validate(const Args& args) {
  po::options_description opts("ironlaw validate [--case NAME] [-j THREADS]");
  std::string name;
  int threads = 2;
  double step_cpu_limit = run::kDefaultStepCpuLimitS;
  double cpu_limit = kDefaultCommandCpuLimitS;
  opts.add_options()("help,h", "show this help")("case", po::value(&name), "one case (default: all)")(
      "jobs,j", po::value(&threads), "simulations run side by side (default 2)")(
      "step-cpu-limit", po::value(&step_cpu_limit)->default_value(step_cpu_limit),
      "CPU seconds one row's step simulation may use; past it (or once its pace projects past it) validate stops "
      "with exit 2 naming the row")(
      "csv", "print one CSV row per figure (case,figure,published,predicted,error,unit,source) instead of the table")(
      "json", "print the cases, their rows and the summary as JSON instead of the table");
  add_cpu_limit_option(opts, cpu_limit, "every row's simulation together");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts;
    std::cout << "cases:";
    for (const auto& n : report::validation_case_names()) std::cout << " " << n;
    std::cout << "\nlong cases (minutes of CPU; run only with --case):";
    for (const auto& n : report::validation_long_case_names()) std::cout << " " << n;
    std::cout << "\n";
    return kExitOk;
  }
  po::notify(vm);
  if (vm.count("csv") && vm.count("json")) throw InputError({}, "--csv", "give --csv or --json, not both");
  const OutputFormat format = vm.count("csv") ? OutputFormat::csv : vm.count("json") ? OutputFormat::json : OutputFormat::text;
  if (threads < 1) throw InputError({}, "--jobs", "must be at least 1, got " + std::to_string(threads));
  apply_step_cpu_limit(step_cpu_limit);
  apply_command_cpu_limit(cpu_limit);
  std::vector<std::string> names = report::validation_case_names();
  if (!name.empty()) {
    bool known = false;
    std::vector<std::string> all = names;
    for (const auto& n : report::validation_long_case_names()) all.push_back(n);
    for (const auto& n : all) known = known || n == name;
    if (!known) {
      std::string list;
      for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
      throw InputError({}, "--case", "unknown case \"" + name + "\"; known: " + list);
    }
    names = {name};
  }

  // Every job of every case in one list; results land in their own slot.
  std::vector<report::ValidationPlan> plans;
  struct Slot {
    std::size_t plan = 0, job = 0;
  };
  std::vector<Slot> slots;
  for (const auto& n : names) {
    plans.push_back(report::plan_validation(n, data_dir()));
    for (std::size_t j = 0; j < plans.back().jobs.size(); ++j) slots.push_back({plans.size() - 1, j});
  }
  std::vector<std::vector<report::ValidationRow>> results(slots.size());
  std::vector<std::exception_ptr> failures(slots.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex progress;
  // Progress on stderr with the text table: on a terminal one line that rewrites itself
  // (carriage return, erase to end of line); elsewhere (a log file) one plain line per finished
  // row, no escape codes.
  const bool show_progress = format == OutputFormat::text;
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  auto worker = [&] {
    for (std::size_t i = next++; i < slots.size(); i = next++) {
      const auto& job = plans[slots[i].plan].jobs[slots[i].job];
      try {
        results[i] = job.run();
      } catch (const run::CpuLimitReached& e) {
        // Name the row: the simulation's own message names only its scenario.
        failures[i] = std::make_exception_ptr(
            run::CpuLimitReached("validate row " + job.label + ": " + e.diagnostics().front().message));
      } catch (...) {
        failures[i] = std::current_exception();
      }
      const std::lock_guard<std::mutex> lock(progress);
      ++done;
      if (show_progress) {
        std::fprintf(stderr, terminal ? "\rvalidate: %zu/%zu done (%s)\x1b[K" : "validate: %zu/%zu done (%s)\n", done,
                     slots.size(), job.label.c_str());
        std::fflush(stderr);
      }
    }
  };
  std::vector<std::thread> pool;
  const std::size_t n_threads = std::min<std::size_t>(static_cast<std::size_t>(threads), slots.size());
  for (std::size_t t = 0; t < n_threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (!slots.empty() && show_progress && terminal) std::fprintf(stderr, "\n");
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);

  std::vector<report::ValidationCase> cases;
  for (std::size_t p = 0; p < plans.size(); ++p) cases.push_back(plans[p].header);
  for (std::size_t i = 0; i < slots.size(); ++i)
    for (auto& row : results[i]) cases[slots[i].plan].rows.push_back(std::move(row));

  const auto s = report::summarize(cases);
  if (format == OutputFormat::csv) {
    std::printf("case,figure,published,predicted,error,unit,measured,source\n");
    for (const auto& c : cases)
      for (const auto& r : c.rows)
        std::printf("%s,%s,%s,%s,%s,%s,%s,%s\n", csv_field(c.name).c_str(), csv_field(r.label).c_str(),
                    csv_number(r.published).c_str(), csv_number(r.predicted).c_str(),
                    csv_number(std::isfinite(r.predicted) ? r.error() : std::nan("")).c_str(), csv_field(r.unit).c_str(),
                    c.measured ? "true" : "false", csv_field(r.source).c_str());
    return kExitOk;
  }
  if (format == OutputFormat::json) {
    const auto summary_json = [](const report::ValidationSummary& v) {
      return "{\"rows\": " + std::to_string(v.rows) + ", \"median_abs_error\": " + json_number(v.median_abs_error) +
             ", \"max_abs_error\": " + json_number(v.max_abs_error) + ", \"too_fast\": " + std::to_string(v.positive) +
             ", \"too_slow\": " + std::to_string(v.negative) + ", \"memory_over\": " + std::to_string(v.memory_over) +
             ", \"memory_under\": " + std::to_string(v.memory_under) +
             ", \"beyond_speed_bound\": " + std::to_string(v.beyond_speed_bound) +
             ", \"beyond_memory_bound\": " + std::to_string(v.beyond_memory_bound) +
             ", \"without_prediction\": " + std::to_string(v.without_prediction) + "}";
    };
    std::string out = "{\"cases\": [";
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      out += (i ? ",\n " : "") + std::string("{\"name\": ") + json_string(c.name) + ", \"description\": " +
             json_string(c.description) + ", \"measured\": " + (c.measured ? "true" : "false") + ", \"rows\": [";
      for (std::size_t j = 0; j < c.rows.size(); ++j) {
        const auto& r = c.rows[j];
        out += (j ? ", " : "") + std::string("{\"figure\": ") + json_string(r.label) + ", \"published\": " +
               json_number(r.published) + ", \"predicted\": " + json_number(r.predicted) + ", \"error\": " +
               json_number(std::isfinite(r.predicted) ? r.error() : std::nan("")) + ", \"unit\": " +
               json_string(r.unit) + ", \"source\": " + json_string(r.source) + "}";
      }
      out += "], \"summary\": " + summary_json(report::summarize({c})) + "}";
    }
    out += "], \"summary\": " + summary_json(s) + "}\n";
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  }
  for (const auto& c : cases) {
    std::printf("case %s: %s\n", c.name.c_str(), c.description.c_str());
    // The figure column fits the case's longest label (at least 52 characters), so that the
    // numbers of a case line up.
    int width = 52;
    for (const auto& r : c.rows) width = std::max(width, static_cast<int>(r.label.size()));
    std::printf("  %-*s %14s %14s %9s  %s\n", width, "figure", "published", "predicted", "error", "unit");
    for (const auto& r : c.rows) {
      std::printf("  %-*s %14.6g %14.6g %+8.2f%%  %s\n", width, r.label.c_str(), r.published, r.predicted,
                  100 * r.error(), r.unit.c_str());
    }
    std::printf("  sources:\n");
    std::string last;
    for (const auto& r : c.rows)
      if (r.source != last) {
        std::printf("    %s\n", r.source.c_str());
        last = r.source;
      }
    // The case's own summary (a measured case with rows): what the overall one says, per case.
    const auto cs = report::summarize({c});
    if (cs.rows > 0 || cs.without_prediction > 0) {
      std::printf("  case summary: %d rows with a prediction, median |error| %.2f%%, max |error| %.2f%%; speed rows %d "
                  "too fast, %d too slow; memory rows %d over, %d under; %d beyond the bounds, %d without a prediction\n",
                  cs.rows, 100 * cs.median_abs_error, 100 * cs.max_abs_error, cs.positive, cs.negative, cs.memory_over,
                  cs.memory_under, cs.beyond_speed_bound + cs.beyond_memory_bound, cs.without_prediction);
    }
    std::printf("\n");
  }
  std::printf("summary over %d published rows with a prediction (seed003 arithmetic excluded):\n", s.rows);
  std::printf("  median |error| %.2f%%, max |error| %.2f%%; speed rows %d too fast, %d too slow; memory rows %d over, "
              "%d under\n",
              100 * s.median_abs_error, 100 * s.max_abs_error, s.positive, s.negative, s.memory_over, s.memory_under);
  std::printf("  beyond the bounds: %d rows beyond %.0f%% (memory rows beyond %.0f%%: %d); %d rows without a prediction "
              "(not simulated, or refused: see their labels)\n",
              s.beyond_speed_bound, 100 * report::ValidationSummary::kSpeedBound,
              100 * report::ValidationSummary::kMemoryBound, s.beyond_memory_bound, s.without_prediction);
  return kExitOk;
}

}  // namespace ironlaw::cli
