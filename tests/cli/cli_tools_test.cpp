// The calculators and tables that need no scenario: `budget` (seed 003's figures), `collective`
// (an nccl-tests table checked against its own definitions), `validate`, and `--help`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

namespace {

/// The budget line whose label starts with `label`, e.g. "MFU (6ND)".
std::string line_starting(const std::string& text, const std::string& label) {
  for (const auto& line : lines_of(text)) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, label.size(), label) == 0) return line;
  }
  return "(no line \"" + label + "\")";
}

struct CollectiveRow {
  double bytes, count, time_us, algbw, busbw;
};

/// The data rows of an nccl-tests-style table: size count type redop root time algbw busbw.
std::vector<CollectiveRow> collective_rows(const std::string& text) {
  std::vector<CollectiveRow> rows;
  for (const auto& line : lines_of(text)) {
    const auto w = words_of(line);
    if (w.empty() || w[0][0] == '#') continue;
    REQUIRE(w.size() == 8);
    rows.push_back({number(w[0]), number(w[1]), number(w[5]), number(w[6]), number(w[7])});
  }
  return rows;
}

double average_bus_bandwidth(const std::string& text) {
  const std::string label = "# Avg bus bandwidth    : ";
  const auto at = text.find(label);
  REQUIRE(at != std::string::npos);
  return number(words_of(text.substr(at + label.size()))[0]);
}

/// Checks a collective table for n ranks: the sizes doubling from 8 MiB to 64 MiB, four-byte
/// floats, algbw = size / time (GB/s, 1e9), busbw = algbw x factor, and the average line; every
/// printed figure to its printed rounding.
void check_table(const std::string& text, int n, double factor) {
  INFO(text);
  CHECK(text.find("over " + std::to_string(n) + " ranks") != std::string::npos);
  const auto rows = collective_rows(text);
  REQUIRE(rows.size() == 4);
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CollectiveRow& r = rows[i];
    INFO("row " << i);
    CHECK(r.bytes == 8388608.0 * std::pow(2.0, static_cast<double>(i)));
    CHECK(r.count == r.bytes / 4);
    // time printed to 0.1 us, algbw to 0.01 GB/s.
    const double algbw = r.bytes / (r.time_us * 1e3);
    CHECK(r.algbw == Approx(algbw).margin(0.005 + algbw * 0.05 / r.time_us + 1e-9));
    CHECK(r.busbw == Approx(r.algbw * factor).margin(0.005 + 0.005 * factor + 1e-9));
    // A ring moves factor x size over each GPU's link, which carries 360 GB/s of payload per
    // direction in topologies/dgx-h100-leaf-spine.yaml: the bus bandwidth cannot exceed it.
    CHECK(r.busbw <= 360.0);
    if (i > 0) CHECK(r.algbw >= rows[i - 1].algbw);  // latency amortised over larger messages
    sum += r.busbw;
  }
  CHECK(average_bus_bandwidth(text) == Approx(sum / 4).margin(0.01));
}

}  // namespace

TEST_CASE("budget --preset llama3-8b prints seed 003's figures", "[cli][budget]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"budget", "--preset", "llama3-8b"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(line_starting(r.out, "6ND ").find("722.7 ZFLOP") != std::string::npos);
  CHECK(line_starting(r.out, "attention that 6ND omits").find("96.65 ZFLOP") != std::string::npos);
  CHECK(line_starting(r.out, "GPU-hours ").find("507,201 h") != std::string::npos);
  CHECK(line_starting(r.out, "wall-clock").find("20.6 days") != std::string::npos);
  CHECK(line_starting(r.out, "cost ").find("$1,268,002") != std::string::npos);
  // MFU implied by the model card's 1.3M GPU-hours.
  CHECK(line_starting(r.out, "MFU (6ND)").find("15.6 %") != std::string::npos);
  CHECK(r.out.find("MFU 0.40 is an ASSUMPTION") != std::string::npos);
}

TEST_CASE("budget --preset llama3-70b implies 27.9 % MFU from the published hours", "[cli][budget]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"budget", "--preset", "llama3-70b"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(line_starting(r.out, "MFU (6ND)").find("27.9 %") != std::string::npos);
}

TEST_CASE("budget --preset gpt3-175b prints 6ND next to the published 314.5 ZFLOP", "[cli][budget]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"budget", "--preset", "gpt3-175b"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(line_starting(r.out, "6ND ").find("315.0 ZFLOP") != std::string::npos);
  CHECK(line_starting(r.out, "published  ").find("314.5 ZFLOP") != std::string::npos);
}

TEST_CASE("budget takes an MFU as a fraction or a percentage with %, and rejects one outside 0 to 1",
          "[cli][budget]") {
  TempDir dir;
  // At 100 % of the 989.5 TFLOP/s peak: 722.7 ZFLOP / (989.5e12 x 3600) = 202,880 GPU-hours.
  for (const char* full : {"1", "100%", "100 %"}) {
    const Outcome r = run_ironlaw({"budget", "--preset", "llama3-8b", "--mfu", full}, dir.path());
    INFO(full << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("MFU 1.00 is an ASSUMPTION") != std::string::npos);
    CHECK(line_starting(r.out, "GPU-hours ").find("202,880 h") != std::string::npos);
  }
  // 40 without % was once read as 40 and clamped to 1 with exit 0.
  const Outcome pct = run_ironlaw({"budget", "--preset", "llama3-8b", "--mfu", "40"}, dir.path());
  CHECK(pct.exit_code == 2);
  CHECK(pct.err.find("--mfu 40%") != std::string::npos);
  for (const char* bad : {"1.5", "0", "150%", "0%", "abc%"}) {
    const Outcome r = run_ironlaw({"budget", "--preset", "llama3-8b", "--mfu", bad}, dir.path());
    INFO(bad << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--mfu") != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("budget --params without a preset demands the shape instead of keeping the 8B one", "[cli][budget]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"budget", "--params", "70e9", "--tokens", "15 T"}, dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--layers, --width, --seq") != std::string::npos);
  CHECK(r.out.empty());
  const Outcome ok = run_ironlaw({"budget", "--params", "70e9", "--tokens", "15 T", "--layers", "80", "--width", "8192",
                                  "--seq", "8192"}, dir.path());
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.out.find("L = 80, d = 8,192, s = 8,192") != std::string::npos);
}

TEST_CASE("budget rejects an unknown preset and a malformed number", "[cli][budget][errors]") {
  TempDir dir;
  const Outcome preset = run_ironlaw({"budget", "--preset", "llama9"}, dir.path());
  CHECK(preset.exit_code == 2);
  CHECK(preset.err.find("unknown preset \"llama9\"") != std::string::npos);
  const Outcome mfu = run_ironlaw({"budget", "--params", "8e9", "--tokens", "15 T", "--mfu", "abc"}, dir.path());
  CHECK(mfu.exit_code == 2);
  CHECK(mfu.err.find("--mfu") != std::string::npos);
}

TEST_CASE("collective all_reduce on one node prints an nccl-tests table with busbw = algbw x 2(n-1)/n",
          "[cli][collective]") {
  TempDir dir;
  // --algo ring: the check below bounds busbw by a ring's traffic over one NVLink; on one DGX
  // H100 the default is NVLS (in-switch reduction), whose busbw exceeds that bound by design.
  const Outcome r = run_ironlaw(
      {"collective", "--op", "all_reduce", "-b", "8M", "-e", "64M", "-f", "2", "--nodes", "1", "--algo", "ring"},
      dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_table(r.out, 8, 2.0 * 7 / 8);
}

TEST_CASE("collective reduce_scatter on one node has busbw = algbw x (n-1)/n", "[cli][collective]") {
  TempDir dir;
  const Outcome r = run_ironlaw(
      {"collective", "--op", "reduce_scatter", "-b", "8M", "-e", "64M", "-f", "2", "--nodes", "1"}, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_table(r.out, 8, 7.0 / 8);
}

TEST_CASE("collective all_gather on two nodes counts 16 ranks", "[cli][collective]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"collective", "--op", "all_gather", "-b", "8M", "-e", "64M", "-f", "2", "--nodes", "2"},
                                dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_table(r.out, 16, 15.0 / 16);
}

TEST_CASE("collective rejects sizes and factors that make no table", "[cli][collective][errors]") {
  TempDir dir;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"-b", "0", "-e", "8M", "-f", "2"},
                                               std::vector<std::string>{"-b", "64M", "-e", "8M", "-f", "2"},
                                               std::vector<std::string>{"-b", "8M", "-e", "64M", "-f", "1"},
                                               std::vector<std::string>{"-b", "abc", "-e", "64M", "-f", "2"},
                                               std::vector<std::string>{"-b", "8M", "-e", "64M", "--nodes", "0"},
                                               std::vector<std::string>{"--op", "broadcast"}}) {
    std::vector<std::string> full{"collective"};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome r = run_ironlaw(full, dir.path());
    INFO(args[0] << " " << args[1] << ": " << r.err);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
  }
}

TEST_CASE("collective all_to_all of routed tokens runs the hybridep dispatch at the topology's kernel rates", "[cli][collective]") {
  // HybridEP's benchmark shape on 2 DGX H100: 4,096 tokens of 14,336 B (hidden 7,168, BF16) per
  // rank, 8 of 128 experts: the size counts every copy, 4,096 x 8 x 14,336 = 448 MiB. Bound by the
  // relay's forward rate (topologies/dgx-h100-leaf-spine.yaml comm.ep_kernels.hybridep, 222 GB/s):
  // each GPU delivers in its node 2 nodes x 4,096 x 8 GPUs x P(GPU reached) x 14,336 B, P = 1 − Π_{i<8}
  // (120 − i)/(128 − i); plus Λ 8.4 us, σ 3.4 us and the NVLink path's 1 us.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (120.0 - i) / (128.0 - i);
  const double delivered = 2 * 4096.0 * 8 * (1 - miss) * 14336;
  const double expected_us = delivered / 222e9 * 1e6 + 8.4 + 3.4 + 1.0;
  TempDir dir;
  const Outcome r = run_ironlaw({"collective", "--op", "all_to_all", "-b", "448M", "-e", "448M", "--nodes", "2",
                                 "--dispatcher", "hybridep", "--experts", "128", "--topk", "8"},
                                dir.path());
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("hybridep dispatch: tokens routed to 8 of 128 experts") != std::string::npos);
  CHECK(r.out.find("rdma 43.4 GB/s, forward 222.0 GB/s") != std::string::npos);
  const auto rows = collective_rows(r.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].bytes == 448.0 * 1024 * 1024);
  CHECK(rows[0].time_us == Approx(expected_us).margin(0.1));
  // Refused: routing without a flex dispatcher, a flex dispatcher without routing or on another
  // collective, experts the ranks do not divide, more picks than experts, an unknown dispatcher.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--op", "all_to_all", "--experts", "128", "--topk", "8"},
        std::vector<std::string>{"--op", "all_to_all", "--dispatcher", "deepep", "--experts", "128"},
        std::vector<std::string>{"--op", "all_reduce", "--dispatcher", "deepep", "--experts", "128", "--topk", "8"},
        std::vector<std::string>{"--op", "all_to_all", "--dispatcher", "deepep", "--experts", "100", "--topk", "8"},
        std::vector<std::string>{"--op", "all_to_all", "--dispatcher", "deepep", "--experts", "128", "--topk", "200"},
        std::vector<std::string>{"--op", "all_to_all", "--dispatcher", "nccl"}}) {
    std::vector<std::string> full{"collective", "-b", "8M", "-e", "8M", "--nodes", "2"};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome bad = run_ironlaw(full, dir.path());
    INFO(bad.err);
    CHECK(bad.signal == 0);
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
  }
}

TEST_CASE("collective all_to_all on one node has busbw = algbw x (n-1)/n", "[cli][collective]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"collective", "--op", "all_to_all", "-b", "8M", "-e", "64M", "-f", "2", "--nodes", "1"},
                                dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_table(r.out, 8, 7.0 / 8);
}

// nccl-tests' alltoall_perf prints redop "none": nothing is reduced.
TEST_CASE("collective all_to_all reduces nothing and is listed in --help", "[cli][collective]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"collective", "--op", "all_to_all", "-b", "8M", "-e", "8M", "-f", "2"}, dir.path());
  REQUIRE(r.exit_code == 0);
  for (const auto& line : lines_of(r.out)) {
    const auto w = words_of(line);
    if (!w.empty() && w[0][0] != '#') CHECK(w.at(3) == "none");
  }
  const Outcome help = run_ironlaw({"collective", "--help"}, dir.path());
  CHECK(help.out.find("all_to_all") != std::string::npos);
}

TEST_CASE("validate prints every case with published, predicted and error columns", "[cli][validate]") {
  // A data directory with the topologies and models and one scenario per simulated case, so
  // that the run's length does not depend on how slow the large published rows are on this
  // machine: the rows without a scenario print "no scenario" and no prediction.
  TempDir dir;
  const fs::path data = dir.path() / "data";
  fs::create_directories(data / "scenarios" / "megatron-2021");
  fs::create_directories(data / "scenarios" / "validation");
  fs::create_directory_symlink(repo_path("topologies"), data / "topologies");
  fs::create_directory_symlink(repo_path("models"), data / "models");
  fs::copy_file(repo_path("scenarios/megatron-2021/01-gpt-1.7b.yaml"), data / "scenarios/megatron-2021/01-gpt-1.7b.yaml");
  fs::copy_file(repo_path("scenarios/validation/tt-8b-8gpu-eager.yaml"), data / "scenarios/validation/tt-8b-8gpu-eager.yaml");
  ::setenv("IRONLAW_HOME", data.c_str(), 1);
  const Outcome r = run_ironlaw({"validate"}, dir.path());
  ::unsetenv("IRONLAW_HOME");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("case seed003:") != std::string::npos);
  CHECK(r.out.find("case nccl-h100:") != std::string::npos);
  CHECK(r.out.find("case megatron-2021:") != std::string::npos);
  CHECK(r.out.find("case torchtitan:") != std::string::npos);
  CHECK(r.out.find("case korthikanti-2022:") != std::string::npos);
  CHECK(r.out.find("case bigscience:") != std::string::npos);
  CHECK(r.out.find("case bigscience-prequel:") != std::string::npos);
  CHECK(r.out.find("case mt-nlg:") != std::string::npos);
  CHECK(r.out.find("case nemo-h100:") != std::string::npos);
  CHECK(r.out.find("case torchtitan-2025:") != std::string::npos);
  CHECK(r.out.find("case mosaic-mpt:") != std::string::npos);
  CHECK(r.out.find("case mosaic-mpt-h100:") != std::string::npos);
  CHECK(r.out.find("case mosaic-mpt-a100-torch2:") != std::string::npos);
  CHECK(r.out.find("case flash-attn-gpt3:") != std::string::npos);
  CHECK(r.out.find("case flash-attn-gpt2:") != std::string::npos);
  CHECK(r.out.find("case llama1:") != std::string::npos);
  CHECK(r.out.find("case nemo-h100-2407:") != std::string::npos);
  CHECK(r.out.find("case olmo-core:") != std::string::npos);
  CHECK(r.out.find("case megatron-2024:") != std::string::npos);
  CHECK(r.out.find("case megatron-moe:") != std::string::npos);
  CHECK(r.out.find("case torchao-float8:") != std::string::npos);
  CHECK(r.out.find("case mbridge-cards:") != std::string::npos);
  CHECK(r.out.find("median |error|") != std::string::npos);
  // The rows without a scenario here have no prediction: counted apart from the median.
  CHECK(r.out.find("beyond the bounds: ") != std::string::npos);
  CHECK(r.out.find("rows without a prediction") != std::string::npos);
  CHECK(r.out.find(" 0 rows without a prediction") == std::string::npos);
  // Jobs: seed003 1, nccl 2, megatron-2021 10, korthikanti-2022 8, torchtitan 18, bigscience 1,
  // bigscience-prequel 21, mt-nlg 3, nemo-h100 8, torchtitan-2025 12, mosaic-mpt 66, mosaic-mpt-h100 38,
  // mosaic-mpt-a100-torch2 9, flash-attn-gpt3 5, flash-attn-gpt2 3, llama1 4, nemo-h100-2407 12,
  // olmo-core 8, megatron-2024 9, megatron-moe 1 (two rows from one step); nemo-h100 6 since round 33;
  // torchao-float8 3 (round 34); nemo-h100 8 since round 35; mbridge-cards 1 (round 37); torchtitan-2025
  // 14 since round 40 (its two rowwise files, TP and AsyncTP each, where one unpredicted job was).
  CHECK(r.err.find("validate: 245/245 done") != std::string::npos);
  int headers = 0, rows = 0;
  bool in_case = false;
  for (const auto& line : lines_of(r.out)) {
    const auto w = words_of(line);
    if (w.size() == 5 && w[0] == "figure" && w[1] == "published" && w[2] == "predicted" && w[3] == "error") {
      ++headers;
      in_case = true;
      continue;
    }
    if (!in_case) continue;
    if (w.empty() || w[0] == "sources:") {
      in_case = false;
      continue;
    }
    // ... LABEL  PUBLISHED  PREDICTED  ERROR%  UNIT: error = (predicted - published) / published.
    INFO(line);
    const std::string& error_text = w[w.size() - 2];
    REQUIRE(error_text.back() == '%');
    if (w[w.size() - 3] == "nan") continue;  // no scenario in this data directory
    const double published = number(w[w.size() - 4]);
    const double predicted = number(w[w.size() - 3]);
    const double error_pct = number(error_text.substr(0, error_text.size() - 1));
    CHECK(error_pct == Approx(100 * (predicted - published) / published).margin(0.006));
    ++rows;
  }
  CHECK(headers == 22);  // seed003, nccl-h100, megatron-2021, korthikanti-2022, bigscience, bigscience-prequel, mt-nlg, nemo-h100, torchtitan-2025, mosaic-mpt, mosaic-mpt-h100, mosaic-mpt-a100-torch2, flash-attn-gpt3, flash-attn-gpt2, llama1, nemo-h100-2407, olmo-core, megatron-2024, megatron-moe, torchao-float8 and mbridge-cards (no scenario here), torchtitan
  CHECK(rows == 8 + 3 + 1 + 2);  // seed003's 8, nccl's 3 (1 node ring and NVLS, 16 nodes), Megatron row 1, torchtitan 8B eager (tokens/s, memory)
}

TEST_CASE("validate --case runs one case and rejects an unknown one", "[cli][validate]") {
  TempDir dir;
  const Outcome one = run_ironlaw({"validate", "--case", "nccl-h100"}, dir.path());
  CHECK(one.exit_code == 0);
  CHECK(one.out.find("case nccl-h100:") != std::string::npos);
  CHECK(one.out.find("case seed003:") == std::string::npos);
  // The case's summary line: its rows' median and maximum |error|, from the errors its table prints.
  std::vector<double> errors;
  double case_median = -1, case_max = -1;
  for (const auto& line : lines_of(one.out)) {
    const auto w = words_of(line);
    if (w.size() >= 3 && w[w.size() - 1] == "GB/s" && w[w.size() - 2].back() == '%')
      errors.push_back(std::abs(number(w[w.size() - 2].substr(0, w[w.size() - 2].size() - 1))));
    if (line.rfind("  case summary: 3 rows with a prediction, median |error| ", 0) == 0) {
      const auto at = line.find("median |error| ") + 15;
      case_median = number(line.substr(at, line.find('%', at) - at));
      const auto max_at = line.find("max |error| ") + 12;
      case_max = number(line.substr(max_at, line.find('%', max_at) - max_at));
    }
  }
  REQUIRE(errors.size() == 3);
  std::sort(errors.begin(), errors.end());
  CHECK(case_median == Approx(errors[1]).margin(0.006));
  CHECK(case_max == Approx(errors[2]).margin(0.006));
  const Outcome unknown = run_ironlaw({"validate", "--case", "nope"}, dir.path());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown case \"nope\"") != std::string::npos);
}

TEST_CASE("explain compares simulated with published GPU-hours", "[cli][explain]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "100"},
                                dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(line_starting(r.out, "published GPU-hours").find("100") != std::string::npos);
  CHECK(r.out.find("simulated MFU") != std::string::npos);
  CHECK(r.out.find("= simulated steps") != std::string::npos);
  CHECK(r.out.find("unexplained (published - simulated)") != std::string::npos);
  CHECK(r.out.find("Which cluster and batch") != std::string::npos);
}

TEST_CASE("explain --what-if tabulates each change as its own explained scenario", "[cli][explain]") {
  TempDir dir;
  const std::string scenario = repo_path("scenarios/gpt2-ddp-1node.yaml");
  const Outcome r = run_ironlaw({"explain", scenario, "--published-gpu-hours", "100", "--no-search", "--what-if",
                                 "training.framework=eager", "--what-if", "parallel.zero=3"},
                                dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("all of the above together") != std::string::npos);
  // The eager row is the scenario explained with that key set: same simulated GPU-hours.
  const Outcome eager = run_ironlaw({"explain", scenario, "--published-gpu-hours", "100", "--no-search", "--set",
                                     "training.framework=eager"},
                                    dir.path());
  REQUIRE(eager.exit_code == 0);
  std::istringstream total(line_starting(eager.out, "simulated GPU-hours").substr(40));
  double hours = -1;
  total >> hours;
  std::istringstream row(line_starting(r.out, "training.framework=eager").substr(62));
  std::string mfu, mfu_unit, ettr, ettr_unit;
  double row_hours = -2;
  row >> mfu >> mfu_unit >> ettr >> ettr_unit >> row_hours;
  CHECK(row_hours == Approx(hours).margin(0.5));
  const Outcome bad = run_ironlaw({"explain", scenario, "--published-gpu-hours", "100", "--what-if", " ; "}, dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--what-if") != std::string::npos);
}

TEST_CASE("explain with a whole run ends the waterfall at the allocated GPU-hours", "[cli][explain]") {
  TempDir dir;
  const Outcome r = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "100",
                                 "--set", "run.mode=full", "--set", "training.tokens=1 G", "--no-search"},
                                dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("= simulated whole run (allocated GPU-hours)") != std::string::npos);
  CHECK(r.out.find("Which cluster and batch") == std::string::npos);
  const Outcome bad = run_ironlaw({"explain", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--published-gpu-hours", "100",
                                   "--search-nodes", "0,2"},
                                  dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--search-nodes") != std::string::npos);
}

TEST_CASE("--help of every subcommand exits 0 and documents it", "[cli][help]") {
  TempDir dir;
  for (const char* command : {"run", "sweep", "analyze", "explain", "budget", "validate", "collective"}) {
    INFO(command);
    const Outcome r = run_ironlaw({command, "--help"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("ironlaw ") + command, 0) == 0);
    CHECK(r.out.find("--help") != std::string::npos);
  }
  const Outcome top = run_ironlaw({"--help"}, dir.path());
  CHECK(top.exit_code == 0);
  for (const char* command : {"run", "sweep", "analyze", "explain", "budget", "validate", "collective"})
    CHECK(top.out.find(std::string("\n  ") + command + " ") != std::string::npos);
}

TEST_CASE("an unknown subcommand, or none, is bad input", "[cli][help]") {
  TempDir dir;
  const Outcome unknown = run_ironlaw({"simulate"}, dir.path());
  CHECK(unknown.signal == 0);
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown command \"simulate\"") != std::string::npos);
  const Outcome none = run_ironlaw({}, dir.path());
  CHECK(none.exit_code == 2);
}

TEST_CASE("ironlaw --version prints the project version of CMakeLists.txt", "[cli][help]") {
  TempDir dir;
  const std::string cmake = read_file(repo_path("CMakeLists.txt"));
  const auto at = cmake.find("project(ironlaw VERSION ");
  REQUIRE(at != std::string::npos);
  const auto start = at + std::string("project(ironlaw VERSION ").size();
  const std::string version = cmake.substr(start, cmake.find(' ', start) - start);
  const Outcome r = run_ironlaw({"--version"}, dir.path());
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ironlaw " + version + "\n");
}

TEST_CASE("help COMMAND prints what COMMAND --help prints", "[cli][help]") {
  TempDir dir;
  for (const char* command : {"run", "sweep", "budget", "collective"}) {
    INFO(command);
    const Outcome help = run_ironlaw({"help", command}, dir.path());
    const Outcome direct = run_ironlaw({command, "--help"}, dir.path());
    CHECK(help.exit_code == 0);
    CHECK(help.out == direct.out);
  }
  const Outcome unknown = run_ironlaw({"help", "simulate"}, dir.path());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown command \"simulate\"") != std::string::npos);
}
