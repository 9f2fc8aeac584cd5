// `ironlaw explain` guards: a step simulation that runs past its CPU budget ends with a message
// and exit 2, never an endless run (DeepSeek-V3's step, until its all-to-alls are cheaper).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

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

namespace {

/// The numbers on the line of `text` that starts (after spaces) with `label`, in order; the
/// label's own digits are skipped.
std::vector<double> numbers_after(const std::string& text, const std::string& label) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, label.size(), label) != 0) continue;
    std::vector<double> out;
    std::istringstream rest(line.substr(first + label.size()));
    std::string word;
    while (rest >> word) {
      try {
        std::size_t used = 0;
        const double v = std::stod(word, &used);
        if (used == word.size()) out.push_back(v);
      } catch (const std::exception&) {
      }
    }
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("explain prints naive 6ND above 100 % beside the simulated figures (seed 000's arithmetic)",
          "[cli][explain]") {
  TempDir dir;
  // GPT-2 124M (N = 124,439,808 parameters, all counted by 6N) for 10 G tokens at 512 Ki tokens
  // per step: ⌈10e9 / 524,288⌉ = 19,074 steps, D = 10,000,269,312 tokens. 6ND at the H100's bf16
  // peak (989.4 TFLOP/s) is 2.0963 GPU-hours, so one published GPU-hour implies 209.6 %.
  const Outcome r = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "1",
                                 "--no-search"},
                                dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const double six_nd_hours = 6 * 124439808.0 * 19074 * 524288 / (989.4e12 * 3600);
  CHECK(six_nd_hours == Approx(2.0963).epsilon(1e-4));
  CHECK(r.out.find("Naive 6ND over all") != std::string::npos);
  const auto hours = numbers_after(r.out, "GPU-hours of the run");
  const auto naive = numbers_after(r.out, "MFU, 6N over all parameters (naive)");
  const auto per_step = numbers_after(r.out, "MFU per simulated step (PaLM count)");
  REQUIRE(hours.size() == 2);
  REQUIRE(naive.size() == 2);
  REQUIRE(per_step.size() == 1);
  CHECK(hours[0] == 1);
  CHECK(naive[0] == Approx(100 * six_nd_hours).margin(0.05));
  // The simulated column: the same 6ND over the simulated GPU-hours (printed rounded to an hour,
  // hence the margin), and the step's MFU as the summary line above prints it.
  const auto simulated = numbers_after(r.out, "simulated GPU-hours");
  REQUIRE(simulated.size() == 1);
  CHECK(naive[1] == Approx(100 * six_nd_hours / simulated[0]).epsilon(0.5 / simulated[0] + 1e-3));
  const auto step = numbers_after(r.out, "simulated MFU per step (PaLM)");
  REQUIRE(step.size() == 1);
  CHECK(per_step[0] == Approx(step[0]).margin(0.05));
}
