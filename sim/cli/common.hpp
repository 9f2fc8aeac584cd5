#pragma once
/// \file Helpers shared by the subcommands.
#include <string>

namespace ironlaw::cli {

/// The repository's data directory (topologies/, models/, scenarios/): $IRONLAW_HOME if set,
/// else the source tree the binary was built from.
std::string data_dir();
/// topologies/dgx-h100-leaf-spine.yaml under data_dir().
std::string default_topology_path();

}  // namespace ironlaw::cli
