// libFuzzer target: the HDF5 reader behind `ironlaw analyze`, used as analyze uses it. Each input
// is written to a file, read first in a bounded child process (output::probe_h5_file: libhdf5
// can crash or loop without end on a damaged file before any check can run), then, when the
// child read it cleanly, in this process through every accessor (read_all_tables), where the
// coverage is measured. A damaged file must end in an exception (exit 2 on the command line),
// never a crash, a hang or a leak here, and the child must end cleanly, with a named error, a
// crash inside libhdf5 or at a bound (all exit 2 on the command line), never with a sanitizer
// report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
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
  // analyze's bounds, smaller: the wall-clock backstop inside libFuzzer's 10 s per input
  // (-timeout), and 128 MiB of memory, since an input that loops in libhdf5 (a heap free list
  // that is a cycle) allocates to the bound at ASan's speed on every execution.
  ironlaw::output::H5ProbeLimits limits;
  limits.wall_seconds = 8;
  limits.cpu_seconds = 5;
  limits.memory_bytes = std::uint64_t{128} << 20;
  using Kind = ironlaw::output::H5ProbeOutcome::Kind;
  const auto outcome = ironlaw::output::run_h5_probe(file, limits);
  if (outcome.kind == Kind::failed) {
    // Not a crash of libhdf5 nor a bound: a sanitizer report or an abort in the child, which the
    // Release binary may not notice (a silent out-of-bounds read reads on in the parent).
    std::fprintf(stderr, "fuzz_h5_reader: the probe child failed: %s\n%s\n", outcome.message.c_str(),
                 outcome.diagnostics.c_str());
    std::abort();
  }
  if (outcome.kind != Kind::clean) return 0;  // exit 2 on the command line, the file never read here
  try {
    const ironlaw::output::H5Reader reader(file);
    ironlaw::output::read_all_tables(reader);
  } catch (const std::exception&) {
    // a damaged or foreign file: reported as bad input
  }
  return 0;
}
