#pragma once
/// \file Reading a user's input file the way the loader reads every YAML file.
#include <string>

namespace ironlaw::config {

/// The text of the file at `path`: a regular file only (never a device, FIFO or socket, which
/// could block or never end) of at most 16 MiB (config/reader.hpp, kMaxInputFileBytes).
/// Anything else is an InputError naming `path` and the reason (exit 2). O(size).
std::string read_input_text(const std::string& path);

}  // namespace ironlaw::config
