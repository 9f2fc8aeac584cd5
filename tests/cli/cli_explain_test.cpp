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

TEST_CASE("explain prints the GPU-hours waterfall of the published runs, each bar adding up to the whole run",
          "[cli][explain][slow]") {
  // The shipped explain scenarios and their published hours (model cards: Llama 3 8B 1.3M and
  // 70B 6.4M H100-hours; Llama 3.1 405B 30.84M; GPT-3 175B 10,000 V100 x 14.8 days = 3.552M,
  // Patterson et al. 2021). DeepSeek-V3's step takes minutes of CPU (README "Explaining
  // published GPU-hours"), too long for a test; its scenario loads in the golden test.
  const std::pair<const char*, double> runs[] = {{"scenarios/explain/llama3-8b.yaml", 1.3e6},
                                                 {"scenarios/explain/llama3-70b.yaml", 6.4e6},
                                                 {"scenarios/explain/llama3-405b.yaml", 30.84e6},
                                                 {"scenarios/explain/gpt3-175b.yaml", 3.552e6}};
  for (const auto& [scenario, published] : runs) {
    TempDir dir;
    const Outcome r = run_ironlaw({"explain", repo_path(scenario), "--no-search"}, dir.path());
    INFO(scenario << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    // Walk the waterfall: "+ bar" and "- bar" lines move a running total, printed in whole
    // GPU-hours; every "= subtotal" is that total (to the rounding of the bars above it).
    std::istringstream lines(r.out.substr(r.out.find("GPU-hours waterfall")));
    std::string line;
    double total = 0, whole_run = -1;
    int bars = 0, subtotals = 0;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line) && !line.empty()) {
      const auto at = line.find_first_not_of(' ');
      REQUIRE(at != std::string::npos);
      const char sign = line[at];
      REQUIRE((sign == '+' || sign == '-' || sign == '='));
      // The figure: the first number after the label's run of two or more spaces.
      const auto gap = line.find("  ", at + 2);
      REQUIRE(gap != std::string::npos);
      const std::vector<std::string> words = words_of(line.substr(gap));
      REQUIRE(!words.empty());
      const double value = number(words.front());
      if (sign == '=') {
        ++subtotals;
        CHECK(value == Approx(total).margin(bars));
        total = value;
        if (line.find("simulated whole run") != std::string::npos) whole_run = value;
      } else {
        ++bars;
        CHECK((sign == '-') == (value < 0));
        total += value;
      }
    }
    CHECK(subtotals == 3);  // model FLOPs at peak, simulated steps, simulated whole run
    REQUIRE(whole_run > 0);
    CHECK(numbers_after(r.out, "simulated GPU-hours") == std::vector<double>{whole_run});
    const std::vector<double> published_line = numbers_after(r.out, "published GPU-hours");
    REQUIRE(published_line.size() == 1);
    CHECK(published_line.front() == Approx(published));
  }
}
