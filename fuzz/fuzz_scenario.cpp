// libFuzzer target: the scenario loader (YAML reading, includes, units, bounds, validation).
// Each input is written as scenarios/fuzz.yaml in a private folder whose models/ and
// topologies/ link to the repository's, so the shipped scenarios (the seed corpus) load
// whole. An InputError is the expected answer to bad input; any other exception is what the
// command line would report as an internal error (exit 3) and is turned into a crash here.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace {

fs::path world() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("ironlaw-fuzz-scenario-" + std::to_string(::getpid()));
    fs::create_directories(d / "scenarios");
    std::error_code ec;
    fs::create_directory_symlink(fs::path(IRONLAW_SOURCE_DIR) / "models", d / "models", ec);
    fs::create_directory_symlink(fs::path(IRONLAW_SOURCE_DIR) / "topologies", d / "topologies", ec);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(fs::temp_directory_path() / ("ironlaw-fuzz-scenario-" + std::to_string(::getpid())), ignored);
    });
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path file = world() / "scenarios" / "fuzz.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)ironlaw::config::load_scenario(file.string());
  } catch (const ironlaw::InputError&) {
    // bad input, reported with file:line:col: the expected outcome
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_scenario: escaped the loader (exit 3 on the command line): %s\n", e.what());
    std::abort();
  }
  return 0;
}
