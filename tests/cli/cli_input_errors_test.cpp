// Bad input through the real binary: every kind of malformed scenario or option ends with exit
// status 2, a diagnostic "FILE:LINE:COLUMN: KEY: message" at the exact place the test planted
// the error, and no output file — neither the target .h5 nor a temporary beside it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

namespace {

/// A temporary world with an empty out/ folder that the scenario's output.path points into.
struct World {
  TempDir dir;
  fs::path out_dir = dir / "out";
  fs::path target = out_dir / "result.h5";
  std::string valid = tiny_scenario(target);

  World() { fs::create_directories(out_dir); }

  /// Writes `text` as bad.yaml and runs `ironlaw run` on it, plus `extra` arguments.
  Outcome run_text(const std::string& text, std::vector<std::string> extra = {}) const {
    const fs::path file = dir.write("bad.yaml", text);
    std::vector<std::string> args{"run", file.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ironlaw(args, dir.path());
  }
  fs::path scenario_file() const { return dir / "bad.yaml"; }
};

/// What every rejected input has in common: exit 2 (not a crash, not an internal error), and
/// nothing written into the output folder.
void check_rejected(const Outcome& r, const World& w) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.signal == 0);
  CHECK(r.exit_code == 2);
  CHECK(entries_of(w.out_dir).empty());
  CHECK(entries_of(w.dir.path()) == std::vector<std::string>{"bad.yaml", "out"});
}

}  // namespace

TEST_CASE("the tiny scenario the error tests start from is valid and writes its output", "[cli][errors]") {
  World w;
  const Outcome r = w.run_text(w.valid, {"--quiet"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());  // --quiet
  CHECK(entries_of(w.out_dir) == std::vector<std::string>{"result.h5"});
}

TEST_CASE("an unknown key is reported at the key with a did-you-mean suggestion", "[cli][errors]") {
  World w;
  const std::string text = replace_once(w.valid, "  nodes: 1\n", "  nodez: 1\n");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "nodez"), "cluster.nodez") +
                   "unknown key; did you mean \"nodes\"?") != std::string::npos);
}

TEST_CASE("a quantity of the wrong dimension names the dimension it got", "[cli][errors]") {
  World w;
  const std::string text = replace_once(w.valid, "global_batch_tokens: 128 Ki", "global_batch_tokens: 4 GB/s");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "4 GB/s"), "training.global_batch_tokens") +
                   "expected a number like \"15 T\", got \"4 GB/s\", which is a bandwidth") != std::string::npos);
}

TEST_CASE("a negative node count is reported at its value", "[cli][errors]") {
  World w;
  const std::string text = replace_once(w.valid, "  nodes: 1\n", "  nodes: -2\n");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "nodes: -2", 7), "cluster.nodes") +
                   "must be positive, got \"-2\"") != std::string::npos);
}

TEST_CASE("a data-parallel degree that does not divide the GPUs is reported at parallel.dp", "[cli][errors]") {
  World w;
  const std::string text = replace_once(w.valid, "  dp: auto\n", "  dp: 3\n");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  const std::string prefix = diagnostic_prefix(w.scenario_file(), position_of(text, "dp: 3", 4), "parallel.dp");
  CHECK(r.err.find(prefix) != std::string::npos);
  CHECK(r.err.find("= 3 does not equal the 8 GPUs") != std::string::npos);
}

TEST_CASE("an unknown enumeration value is reported at the value", "[cli][errors]") {
  World w;
  SECTION("zero: 5") {
    const std::string text = replace_once(w.valid, "  zero: 0\n", "  zero: 5\n");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "zero: 5", 6), "parallel.zero") +
                     "expected 0, 1, 2 or 3, got 5") != std::string::npos);
  }
  SECTION("precision: fp7 suggests fp8") {
    const std::string text = replace_once(w.valid, "precision: bf16", "precision: fp7");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    const std::string prefix = diagnostic_prefix(w.scenario_file(), position_of(text, "fp7"), "training.precision");
    CHECK(r.err.find(prefix) != std::string::npos);
    CHECK(r.err.find("got \"fp7\"; did you mean \"fp8\"?") != std::string::npos);
  }
}

TEST_CASE("every problem in a scenario is reported, not only the first", "[cli][errors]") {
  World w;
  std::string text = replace_once(w.valid, "  nodes: 1\n", "  nodes: -2\n");
  text = replace_once(text, "precision: bf16", "precision: fp7");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "nodes: -2", 7), "cluster.nodes")) != std::string::npos);
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, "fp7"), "training.precision")) !=
        std::string::npos);
}

TEST_CASE("a YAML syntax error is bad input with the file and position", "[cli][errors][yaml]") {
  World w;
  SECTION("an unclosed flow sequence") {
    const std::string text = replace_once(w.valid, "seed: 1\n", "seed: [1, 2\n");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    CHECK(r.err.find(w.scenario_file().string() + ":") == 0);
    CHECK(r.err.find("invalid YAML") != std::string::npos);
  }
  SECTION("a tab in the indentation") {
    const std::string text = replace_once(w.valid, "  zero: 0\n", "\tzero: 0\n");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    const Position at = position_of(text, "\tzero");
    CHECK(r.err.find(w.scenario_file().string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                     ": invalid YAML: tab character in indentation") != std::string::npos);
  }
  SECTION("a duplicate key, at the second occurrence") {
    const std::string text = replace_once(w.valid, "  zero: 0\n", "  zero: 0\n  zero: 1\n");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    const Position first = position_of(text, "zero: 0");
    const Position second = position_of(text, "zero: 1");
    CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), second, "parallel.zero") + "duplicate key (first set at line " +
                     std::to_string(first.line) + ")") != std::string::npos);
  }
  SECTION("an unterminated quote") {
    const std::string text = replace_once(w.valid, "precision: bf16", "precision: \"bf16");
    const Outcome r = w.run_text(text);
    check_rejected(r, w);
    CHECK(r.err.find(w.scenario_file().string() + ":") == 0);
  }
}

TEST_CASE("an unclosed flow sequence is reported at its opening bracket", "[cli][errors][yaml]") {
  World w;
  const std::string text = replace_once(w.valid, "seed: 1\n", "seed: [1, 2\n");
  const Outcome r = w.run_text(text);
  INFO(r.err);
  const Position at = position_of(text, "[1, 2");
  CHECK(r.err.find(w.scenario_file().string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                   ": ") != std::string::npos);
}

TEST_CASE("an unterminated quote is reported as such at the opening quote", "[cli][errors][yaml]") {
  World w;
  const std::string text = replace_once(w.valid, "precision: bf16", "precision: \"bf16");
  const Outcome r = w.run_text(text);
  INFO(r.err);
  const Position at = position_of(text, "\"bf16");
  CHECK(r.err.find(w.scenario_file().string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                   ": ") != std::string::npos);
  CHECK(r.err.find("quot") != std::string::npos);
  CHECK(r.err.find("missing required key") == std::string::npos);
}

TEST_CASE("a missing model file is reported at the model key", "[cli][errors]") {
  World w;
  const std::string text = replace_once(w.valid, "gpt2-124m.yaml", "no-such-model.yaml");
  const Outcome r = w.run_text(text);
  check_rejected(r, w);
  const std::string model = repo_path("models/no-such-model.yaml");
  CHECK(r.err.find(diagnostic_prefix(w.scenario_file(), position_of(text, model), "model") + "cannot read \"" + model +
                   "\": no such file") != std::string::npos);
}

TEST_CASE("an error inside a model card names the card's file and the dotted key", "[cli][errors]") {
  World w;
  const std::string card = replace_once(read_file(repo_path("models/gpt2-124m.yaml")), "\nlayers: 12\n", "\nlayerz: 12\n");
  const fs::path card_file = w.dir.write("card.yaml", card);
  const std::string text = replace_once(w.valid, repo_path("models/gpt2-124m.yaml"), card_file.string());
  const Outcome r = w.run_text(text);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(entries_of(w.out_dir).empty());
  CHECK(r.err.find(diagnostic_prefix(card_file, position_of(card, "layerz"), "model.layerz") +
                   "unknown key; did you mean \"layers\"?") != std::string::npos);
}

TEST_CASE("a --set of an unknown key is rejected with a suggestion of the dotted key", "[cli][errors][set]") {
  World w;
  const Outcome r = w.run_text(w.valid, {"--set", "cluster.nodez=2"});
  check_rejected(r, w);
  CHECK(r.err.find("--set: cluster.nodez: unknown key; did you mean \"cluster.nodes\"?") != std::string::npos);
}

TEST_CASE("a --set value of the wrong unit is rejected like the same value in the YAML", "[cli][errors][set]") {
  World w;
  const Outcome r = w.run_text(w.valid, {"--set", "training.global_batch_tokens=4 GB/s"});
  check_rejected(r, w);
  CHECK(r.err.find("--set: training.global_batch_tokens: expected a number like \"15 T\", got \"4 GB/s\", which is a "
                   "bandwidth") != std::string::npos);
}

TEST_CASE("a --set layout that does not divide the GPUs is rejected before any file is created", "[cli][errors][set]") {
  World w;
  const Outcome r = w.run_text(w.valid, {"--set", "parallel.dp=3"});
  check_rejected(r, w);
  CHECK(r.err.find("--set: parallel.dp: ") != std::string::npos);
}

TEST_CASE("a --set without = is rejected", "[cli][errors][set]") {
  World w;
  const Outcome r = w.run_text(w.valid, {"--set", "cluster.nodes"});
  check_rejected(r, w);
  CHECK(r.err.find("expected KEY=VALUE") != std::string::npos);
}

TEST_CASE("a scenario path that does not exist is bad input naming the path", "[cli][errors]") {
  World w;
  const std::string missing = (w.dir / "nowhere.yaml").string();
  const Outcome r = run_ironlaw({"run", missing, "-o", w.target.string()}, w.dir.path());
  INFO(r.err);
  CHECK(r.signal == 0);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(missing) != std::string::npos);
  CHECK(r.err.find("no such file") != std::string::npos);
  CHECK(entries_of(w.out_dir).empty());
}

TEST_CASE("an unknown option or trace level is bad input", "[cli][errors]") {
  World w;
  const fs::path file = w.dir.write("bad.yaml", w.valid);
  SECTION("--bogus") {
    const Outcome r = run_ironlaw({"run", file.string(), "--bogus"}, w.dir.path());
    check_rejected(r, w);
    CHECK(r.err.find("--bogus") != std::string::npos);
  }
  SECTION("--trace everything") {
    const Outcome r = run_ironlaw({"run", file.string(), "--trace", "everything"}, w.dir.path());
    check_rejected(r, w);
    CHECK(r.err.find("none, step, op or flow") != std::string::npos);
  }
  SECTION("--seed abc") {
    const Outcome r = run_ironlaw({"run", file.string(), "--seed", "abc"}, w.dir.path());
    check_rejected(r, w);
    CHECK(r.err.find("--seed") != std::string::npos);
  }
}

TEST_CASE("a negative --seed is bad input", "[cli][errors]") {
  World w;
  const fs::path file = w.dir.write("bad.yaml", w.valid);
  const Outcome r = run_ironlaw({"run", file.string(), "--seed", "-1"}, w.dir.path());
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(entries_of(w.out_dir).empty());
}

TEST_CASE("an output path that is a folder is bad input, not an internal error", "[cli][errors]") {
  World w;
  const fs::path file = w.dir.write("bad.yaml", w.valid);
  const Outcome r = run_ironlaw({"run", file.string(), "-o", w.out_dir.string()}, w.dir.path());
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("internal error") == std::string::npos);
}

TEST_CASE("a sweep over an unknown key is bad input and writes nothing", "[cli][errors][sweep]") {
  World w;
  const fs::path file = w.dir.write("bad.yaml", w.valid);
  SECTION("unknown key") {
    const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zerox=1,2", "-o", w.target.string()},
                                  w.dir.path());
    check_rejected(r, w);
    CHECK(r.err.find("parallel.zerox: unknown key; did you mean \"parallel.zero\"?") != std::string::npos);
  }
  SECTION("no --vary") {
    const Outcome r = run_ironlaw({"sweep", file.string(), "-o", w.target.string()}, w.dir.path());
    check_rejected(r, w);
  }
}

TEST_CASE("a bad --vary value is reported under --vary", "[cli][errors][sweep]") {
  World w;
  const fs::path file = w.dir.write("bad.yaml", w.valid);
  const Outcome r =
      run_ironlaw({"sweep", file.string(), "--vary", "parallel.zerox=1,2", "-o", w.target.string()}, w.dir.path());
  INFO(r.err);
  CHECK(r.err.rfind("--vary", 0) == 0);
}
