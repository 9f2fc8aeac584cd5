#pragma once
// Helpers shared by the config tests: test data paths from CMake, and the diagnostics of a
// failing load as strings with the data folder stripped, so expectations read like the CLI.
#include <string>
#include <vector>

#include "core/error.hpp"

namespace ironlaw::config::testing {

inline std::string data_dir() { return IRONLAW_SOURCE_DIR "/tests/config/data/"; }
inline std::string data(const std::string& file) { return data_dir() + file; }

/// The diagnostics `load` throws, as "file:line:col: key: message" with data_dir() removed;
/// {"(no error)"} when it does not throw.
template <class Load>
std::vector<std::string> errors_of(Load&& load) {
  try {
    load();
  } catch (const InputError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) {
      std::string s = d.str();
      const std::string dir = data_dir();
      if (s.rfind(dir, 0) == 0) s = s.substr(dir.size());
      out.push_back(s);
    }
    return out;
  }
  return {"(no error)"};
}

}  // namespace ironlaw::config::testing
