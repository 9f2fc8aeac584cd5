// Hostile outputs of the command line (issue 7): a standard output that cannot be written (a
// full disk, /dev/full) must not end in exit 0 with the table or JSON cut short.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

namespace {

/// Runs `ironlaw ARGS > /dev/full` through the shell; returns the exit status, stderr in `err`.
int run_to_dev_full(const std::string& args, const TempDir& tmp, std::string& err) {
  const std::string err_file = (tmp / "err.txt").string();
  const std::string command = std::string("'") + IRONLAW_BINARY + "' " + args + " > /dev/full 2> '" + err_file + "'";
  const int status = std::system(command.c_str());
  err = read_file(err_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("A standard output that cannot be written is exit 2 naming it, for short and long outputs") {
  REQUIRE(fs::exists("/dev/full"));  // Linux: writes to it fail with ENOSPC
  TempDir tmp;
  std::string err;
  // Short: the whole text sits in the stdio buffer until the final flush fails.
  CHECK(run_to_dev_full("--version", tmp, err) == 2);
  CHECK(err.find("cannot write to standard output") != std::string::npos);
  CHECK(err.find("No space left on device") != std::string::npos);
  // Long: `keys` writes far more than one buffer, so writes fail while it runs.
  CHECK(run_to_dev_full("keys", tmp, err) == 2);
  CHECK(err.find("cannot write to standard output") != std::string::npos);
  // A report of a command that computes first.
  CHECK(run_to_dev_full("budget --preset llama3-8b", tmp, err) == 2);
  CHECK(err.find("cannot write to standard output") != std::string::npos);
}
