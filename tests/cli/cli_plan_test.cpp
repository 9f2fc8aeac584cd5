// `ironlaw plan` end to end: one command answers a planning question on a small case, its
// machine-readable output does not depend on the thread count, /plan is written, and bad
// input is refused with exit status 2 before anything runs. Also `validate --csv/--json`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli_harness.hpp"
#include "output/h5_reader.hpp"

using namespace ironlaw::cli_test;
using ironlaw::output::H5Reader;

namespace {

/// GPT-2 124M on one or two nodes: tp 1, 2 × pp 1, 2 × ZeRO 0, 1, one of everything else.
std::vector<std::string> small_plan(const fs::path& out) {
  return {"plan", repo_path("models/gpt2-124m.yaml"), "--batch-tokens", "128 Ki", "--seq", "1024",
          "--tokens", "10 G", "--gpus", "8,16", "--space", "parallel.tp=1,2", "--space", "parallel.pp=1,2",
          "--space", "parallel.zero=0,1", "--space", "parallel.cp=1", "--space", "parallel.microbatch_size=1",
          "--space", "parallel.pp_schedule=1f1b", "--space", "training.activation_checkpointing=none",
          "--space", "training.precision=bf16", "--space", "parallel.sequence_parallel=false",
          "--top", "4", "-o", out.string()};
}

}  // namespace

TEST_CASE("plan answers the fewest GPUs within a deadline in one command", "[cli][plan]") {
  TempDir tmp;
  auto args = small_plan(tmp / "plan.h5");
  args.insert(args.end(), {"--days", "1000", "--price", "2"});
  const Outcome o = run_ironlaw(args, tmp.path());
  INFO(o.all());
  REQUIRE(o.exit_code == 0);
  // 2 GPU counts × (tp, pp) ∈ {1,2}² × ZeRO {0,1}: 16 layouts, all valid for 128 sequences.
  CHECK(o.out.find("layouts: 16 enumerated, 0 refused") != std::string::npos);
  CHECK(o.out.find("16 ranked by the predictor, 4 simulated") != std::string::npos);
  // Every layout meets 1,000 days: the answer is on the smaller cluster.
  CHECK(o.out.find("answer: 8 GPUs, ") != std::string::npos);
  CHECK(fs::exists(tmp / "plan.h5"));
}

TEST_CASE("plan's JSON is the same on one thread and on two", "[cli][plan]") {
  TempDir tmp;
  auto one = small_plan(tmp / "a.h5");
  one.insert(one.end(), {"--json", "-j", "1"});
  auto two = small_plan(tmp / "b.h5");
  two.insert(two.end(), {"--json", "-j", "2"});
  const Outcome a = run_ironlaw(one, tmp.path());
  const Outcome b = run_ironlaw(two, tmp.path());
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("\"simulated\": 4") != std::string::npos);
  CHECK(read_file(tmp / "a.h5") == read_file(tmp / "b.h5"));
}

TEST_CASE("plan's CSV has one row per simulated layout with its units' columns", "[cli][plan]") {
  TempDir tmp;
  auto args = small_plan(tmp / "plan.h5");
  args.push_back("--csv");
  const Outcome o = run_ironlaw(args, tmp.path());
  REQUIRE(o.exit_code == 0);
  const auto lines = lines_of(o.out);
  REQUIRE(lines.size() == 5);  // header + 4 simulated
  CHECK(lines[0].rfind("status,layout,precision,recompute,schedule,rank,predicted_rank,gpus,", 0) == 0);
  for (std::size_t i = 1; i < lines.size(); ++i) CHECK(lines[i].rfind("ok,", 0) == 0);
}

TEST_CASE("plan refuses bad input before anything runs", "[cli][plan]") {
  TempDir tmp;
  const std::string model = repo_path("models/gpt2-124m.yaml");
  struct Case {
    std::vector<std::string> extra;
    std::string words;
  };
  const std::vector<Case> cases{
      {{"--seq", "1024"}, "--batch-tokens"},
      {{"--batch-tokens", "128 Ki", "--seq", "1024", "--gpus", "12"}, "not a whole number of nodes"},
      {{"--batch-tokens", "128 Ki", "--seq", "1024", "--space", "parallel.pp_schedule=1f2b"}, "expected one of"},
      {{"--batch-tokens", "128 Ki", "--seq", "1024", "--space", "training.optimizer=sgd"}, "not a planned axis"},
      {{"--batch-tokens", "128 Ki", "--seq", "1024", "--days", "10"}, "training.tokens"},
      {{"--batch-tokens", "128 Ki", "--seq", "1024", "--tokens", "1 G", "--budget", "100"}, "--price"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"plan", model};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Outcome o = run_ironlaw(args, tmp.path());
    INFO(c.words << "\n" << o.all());
    CHECK(o.exit_code == 2);
    CHECK(o.err.find(c.words) != std::string::npos);
  }
}

TEST_CASE("validate --csv and --json print the seed003 case machine-readably", "[cli][validate]") {
  TempDir tmp;
  const Outcome csv = run_ironlaw({"validate", "--case", "seed003", "--csv"}, tmp.path());
  REQUIRE(csv.exit_code == 0);
  const auto lines = lines_of(csv.out);
  REQUIRE(lines.size() > 1);
  CHECK(lines[0] == "case,figure,published,predicted,error,unit,measured,source");
  CHECK(lines[1].rfind("seed003,", 0) == 0);
  const Outcome json = run_ironlaw({"validate", "--case", "seed003", "--json"}, tmp.path());
  REQUIRE(json.exit_code == 0);
  CHECK(json.out.rfind("{\"cases\": [{\"name\": \"seed003\"", 0) == 0);
  CHECK(json.out.find("\"summary\": {\"rows\": ") != std::string::npos);
  // Each case carries its own summary; seed003's arithmetic counts no measured row.
  CHECK(json.out.find("\"rows\": [") < json.out.find("], \"summary\": {\"rows\": 0,"));
  // seed003 is arithmetic, not a measurement: nothing beyond the bounds, nothing unpredicted.
  CHECK(json.out.find("\"beyond_speed_bound\": 0, \"beyond_memory_bound\": 0, \"without_prediction\": 0}") !=
        std::string::npos);
  CHECK(json.err.empty());
}

TEST_CASE("every unit a run, a sweep and a plan write is one of outputs/README.md's vocabulary", "[cli][plan][units]") {
  // The vocabulary: each "..." in backticks of the README's **Units** bullet.
  const std::string readme = read_file(repo_path("outputs/README.md"));
  const auto from = readme.find("- **Units**");
  REQUIRE(from != std::string::npos);
  const std::string bullet = readme.substr(from, readme.find("\n- ", from + 1) - from);
  std::vector<std::string> vocabulary;
  for (auto at = bullet.find("`\""); at != std::string::npos; at = bullet.find("`\"", at + 2)) {
    const auto end = bullet.find("\"`", at + 2);
    REQUIRE(end != std::string::npos);
    vocabulary.push_back(bullet.substr(at + 2, end - at - 2));
  }
  REQUIRE(vocabulary.size() >= 10);
  TempDir tmp;
  const fs::path scenario = tmp.write("s.yaml", tiny_scenario(tmp / "r.h5"));
  REQUIRE(run_ironlaw({"run", scenario.string(), "--quiet"}, tmp.path()).exit_code == 0);
  REQUIRE(run_ironlaw({"sweep", scenario.string(), "--vary", "parallel.zero=0,1", "-o", "s.h5", "--no-progress"},
                      tmp.path()).exit_code == 0);
  REQUIRE(run_ironlaw(small_plan(tmp / "p.h5"), tmp.path()).exit_code == 0);
  const std::vector<std::pair<std::string, std::string>> tables{
      {"r.h5", "/summary"}, {"r.h5", "/steps"}, {"r.h5", "/events"}, {"r.h5", "/links"}, {"s.h5", "/sweep"},
      {"p.h5", "/plan"}};
  for (const auto& [file, table] : tables) {
    const auto units = H5Reader(tmp / file).units(table);
    CHECK_FALSE(units.empty());
    for (const auto& u : units) {
      INFO(file << " " << table << ": \"" << u << "\"");
      CHECK(std::find(vocabulary.begin(), vocabulary.end(), u) != vocabulary.end());
    }
  }
}
