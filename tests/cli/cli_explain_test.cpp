// `ironlaw explain` guards: a step simulation that runs past its CPU budget ends with a message
// and exit 2, never an endless run (DeepSeek-V3's step, until its all-to-alls are cheaper).
#include <catch2/catch.hpp>

#include <string>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

TEST_CASE("explain stops a step simulation past --step-cpu-limit with exit 2 and says where it was", "[cli][explain]") {
  TempDir dir;
  // A limit of 0 CPU seconds is spent by the time the first records arrive, whatever the
  // machine's speed: the outcome does not depend on it.
  const Outcome r = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "100",
                                 "--no-search", "--step-cpu-limit", "0"},
                                dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--step-cpu-limit") != std::string::npos);
  CHECK(r.err.find("gpt2-ddp-1node: the step simulation did not finish within") != std::string::npos);
  CHECK(r.out.find("GPU-hours waterfall") == std::string::npos);
  const Outcome bad = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "100",
                                   "--step-cpu-limit", "-1"},
                                  dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--step-cpu-limit") != std::string::npos);
}
