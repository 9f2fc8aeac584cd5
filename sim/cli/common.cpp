#include "cli/common.hpp"

#include <cstdlib>
#include <iostream>

namespace ironlaw::cli {

bool parse_command_line(const Args& args, const boost::program_options::options_description& opts,
                        const char* positional, boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  if (positional != nullptr) pos.add(positional, 1);
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
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

}  // namespace ironlaw::cli
