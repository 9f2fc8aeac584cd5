#include "cli/common.hpp"

#include <cstdlib>

namespace ironlaw::cli {

std::string data_dir() {
  if (const char* home = std::getenv("IRONLAW_HOME"); home && *home) return home;
  return IRONLAW_SOURCE_DIR;
}

std::string default_topology_path() { return data_dir() + "/topologies/dgx-h100-leaf-spine.yaml"; }

}  // namespace ironlaw::cli
