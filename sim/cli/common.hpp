#pragma once
/// \file Helpers shared by the subcommands.
#include <boost/program_options.hpp>
#include <string>

#include "cli/commands.hpp"

namespace ironlaw::cli {

/// Parses `args` against `opts`, the first positional argument going to the option named
/// `positional` (none if null). Prints the help and returns false when --help was given (the
/// command then exits 0); Boost errors propagate (main turns them into exit 2).
bool parse_command_line(const Args& args, const boost::program_options::options_description& opts,
                        const char* positional, boost::program_options::variables_map& vm);

/// The repository's data directory (topologies/, models/, scenarios/): $IRONLAW_HOME if set,
/// else the source tree the binary was built from.
std::string data_dir();
/// topologies/dgx-h100-leaf-spine.yaml under data_dir().
std::string default_topology_path();

}  // namespace ironlaw::cli
