// The bounded child-process probe that `ironlaw analyze` runs before it reads a file itself
// (output::run_h5_probe): a good file reads cleanly, and each damaged file that once crashed or
// hung libhdf5 ends as a named outcome instead, within the probe's bounds. The damaged files
// are in tests/corpus/inputs (found by fuzz_h5_reader). No wall-clock assertion: the bounds are
// the product's own (CPU seconds and memory of the child).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/records.hpp"
#include "output/h5_reader.hpp"
#include "output/h5_writer.hpp"

using ironlaw::output::H5ProbeLimits;
using ironlaw::output::H5ProbeOutcome;
using ironlaw::output::run_h5_probe;
using Kind = H5ProbeOutcome::Kind;

namespace {

const std::filesystem::path kInputs = std::filesystem::path(IRONLAW_SOURCE_DIR) / "tests/corpus/inputs";

std::filesystem::path fresh_path(const std::string& name) {
  std::random_device entropy;
  return std::filesystem::temp_directory_path() / ("ironlaw-probe-test-" + std::to_string(entropy()) + "-" + name);
}

}  // namespace

TEST_CASE("the probe child reads a complete run file cleanly, and the file stays readable here") {
  const auto path = fresh_path("run.h5");
  {
    ironlaw::output::H5Writer writer(path);
    writer.write_scenario("name: probe\n", 3, "probe");
    writer.intern_resource("gpu/compute");
    writer.intern_name("fwd");
    for (std::int64_t i = 0; i < 3; ++i) {
      ironlaw::StepRecord s;
      s.step = i;
      s.start_ns = i * 1000;
      s.end_ns = (i + 1) * 1000;
      writer.on_step(s);
      ironlaw::EventRecord e;
      e.start_ns = i * 1000;
      e.end_ns = i * 1000 + 500;
      writer.on_event(e);
    }
    writer.write_summary({{"step_time_s", 1e-6}});
    writer.write_links({"a->b"}, {2048.0}, {0.5});
    writer.write_table("failures", {ironlaw::output::TableColumn{"time_s", "s", std::vector<double>{1.5}}});
    writer.commit();
  }
  const H5ProbeOutcome outcome = run_h5_probe(path);
  INFO(outcome.message);
  CHECK(outcome.kind == Kind::clean);
  CHECK(outcome.message.empty());
  CHECK_NOTHROW(ironlaw::output::probe_h5_file(path));
  const ironlaw::output::H5Reader reader(path);
  CHECK(reader.steps().size() == 3);
  CHECK(reader.event_count() == 3);
  std::filesystem::remove(path);
}

TEST_CASE("the probe reports the reader's own error on a file that is not HDF5, by name") {
  const auto path = fresh_path("text.h5");
  std::ofstream(path) << "not an HDF5 file\n";
  const H5ProbeOutcome outcome = run_h5_probe(path);
  CHECK(outcome.kind == Kind::error);
  CHECK_THAT(outcome.message, Catch::Contains(path.string()) && Catch::Contains("not an HDF5 file"));
  CHECK_THROWS_WITH(ironlaw::output::probe_h5_file(path), Catch::Contains("not an HDF5 file"));
  std::filesystem::remove(path);
}

TEST_CASE("a chunk dimension of zero that makes libhdf5 divide by zero kills only the probe child") {
  const auto path = kInputs / "h5_chunk_dim_sigfpe.h5";
  const H5ProbeOutcome outcome = run_h5_probe(path);
  CHECK(outcome.kind == Kind::crashed);
  CHECK_THAT(outcome.message, Catch::Contains("h5_chunk_dim_sigfpe.h5") && Catch::Contains("damaged HDF5 file") &&
                                  Catch::Contains("Floating point exception"));
}

TEST_CASE("a local heap whose free list is a cycle ends at the probe's memory bound, not with the machine's memory") {
  // libhdf5 1.10.8 appends a 32-byte node per free block while walking the list (H5HL__fl_deserialize),
  // so the walk only ends when an allocation fails: here after 64 MiB more than at the fork. The
  // failed lookup is an error of the reader (never retried; glibc), a bound (a sanitizer's
  // allocator dies at it), or a crash of libhdf5 on the NULL it was given (a sanitizer's
  // allocator_may_return_null); never a clean read, never a hang.
  const auto path = kInputs / "h5_probe_slow.h5";
  H5ProbeLimits limits;
  limits.memory_bytes = std::uint64_t{64} << 20;
  const H5ProbeOutcome outcome = run_h5_probe(path, limits);
  INFO(outcome.message);
  CHECK((outcome.kind == Kind::error || outcome.kind == Kind::limited || outcome.kind == Kind::crashed));
  CHECK_THAT(outcome.message, Catch::Contains("h5_probe_slow.h5"));
}

namespace {

// A handler as libFuzzer installs one (its crash handler writes the current input to a
// crash-* file): here it creates the marker file, so a child that ran it leaves the marker.
char g_marker[512];
extern "C" void write_marker(int) {
  const int fd = ::open(g_marker, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0) ::close(fd);
  ::_exit(77);
}

}  // namespace

TEST_CASE("a contained death of the probe child runs none of the parent's death handlers", "[hostile]") {
  const auto marker = fresh_path("marker");
  std::snprintf(g_marker, sizeof g_marker, "%s", marker.c_str());
  const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGXCPU, SIGXFSZ, SIGALRM, SIGINT, SIGTERM,
                         SIGUSR1, SIGUSR2};
  struct sigaction before[sizeof signals / sizeof signals[0]];
  for (std::size_t i = 0; i < std::size(signals); ++i) {
    struct sigaction handler {};
    handler.sa_handler = write_marker;
    sigemptyset(&handler.sa_mask);
    ::sigaction(signals[i], &handler, &before[i]);
  }
  // Each signal in a child that reset the handlers first: killed by that signal, no marker.
  for (const int sig : signals) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ironlaw::output::reset_inherited_death_handlers();
      ::raise(sig);
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(std::filesystem::exists(marker));
  }
  // The probe itself, on the file whose chunk dimension of zero makes libhdf5 raise SIGFPE.
  const H5ProbeOutcome outcome = run_h5_probe(kInputs / "h5_chunk_dim_sigfpe.h5");
  CHECK(outcome.kind == Kind::crashed);
  CHECK_FALSE(std::filesystem::exists(marker));
  // And without the reset the marker does appear (the test can fail).
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::raise(SIGABRT);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(std::filesystem::exists(marker));
  std::filesystem::remove(marker);
  for (std::size_t i = 0; i < std::size(signals); ++i) ::sigaction(signals[i], &before[i], nullptr);
}
