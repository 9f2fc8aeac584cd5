// `ironlaw validate`: published figures, ironlaw's prediction for the published configuration,
// and the error, case by case.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "report/validation.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

int cmd_validate(const Args& args) {
  po::options_description opts("ironlaw validate [--case NAME]");
  std::string name;
  opts.add_options()("help,h", "show this help")("case", po::value(&name), "one case (default: all)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts;
    std::cout << "cases:";
    for (const auto& n : report::validation_case_names()) std::cout << " " << n;
    std::cout << "\n";
    return kExitOk;
  }
  po::notify(vm);
  std::vector<std::string> names = report::validation_case_names();
  if (!name.empty()) {
    bool known = false;
    for (const auto& n : names) known = known || n == name;
    if (!known) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw InputError({}, "--case", "unknown case \"" + name + "\"; known: " + list);
    }
    names = {name};
  }
  for (const auto& n : names) {
    const auto c = report::run_validation(n, data_dir());
    std::printf("case %s: %s\n", c.name.c_str(), c.description.c_str());
    std::printf("  %-46s %14s %14s %9s  %s\n", "figure", "published", "predicted", "error", "unit");
    for (const auto& r : c.rows) {
      std::printf("  %-46s %14.6g %14.6g %8.2f%%  %s\n", r.label.c_str(), r.published, r.predicted, 100 * r.error(),
                  r.unit.c_str());
    }
    std::printf("  sources:\n");
    std::string last;
    for (const auto& r : c.rows)
      if (r.source != last) {
        std::printf("    %s\n", r.source.c_str());
        last = r.source;
      }
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace ironlaw::cli
