// libFuzzer target: the HDF5 reader behind `ironlaw analyze`. Each input is written to a file
// and read back through every accessor analyze uses. A damaged file must end in an exception
// (IoError or std::runtime_error: exit 2 on the command line), never a crash, a hang or a leak.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "output/h5_reader.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path file = fs::temp_directory_path() / ("ironlaw-fuzz-h5-" + std::to_string(::getpid()) + ".h5");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const ironlaw::output::H5Reader reader(file);
    (void)reader.scenario();
    if (reader.has("/summary")) (void)reader.summary();
    if (reader.has("/steps")) (void)reader.steps();
    if (reader.has("/events")) {
      (void)reader.event_names();
      (void)reader.event_resources();
      std::uint64_t rows = 0;
      reader.for_each_event_batch([&](const std::vector<ironlaw::EventRecord>& batch) { rows += batch.size(); });
    }
    if (reader.has("/sweep")) (void)reader.sweep();
    if (reader.has("/links")) (void)reader.links();
  } catch (const std::exception&) {
    // a damaged or foreign file: reported as bad input
  }
  return 0;
}
