// Hostile outputs of the command line (issue 7): a standard output that cannot be written (a
// full disk, /dev/full) must not end in exit 0 with the table or JSON cut short.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/common.hpp"
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

TEST_CASE("explain keeps what-ifs and search points above the memory limit out of the simulation, as rows saying so") {
  TempDir tmp;
  const fs::path scenario = tmp.write("s.yaml", tiny_scenario(tmp / "out.h5"));
  // The tiny scenario (1 node, one microbatch per GPU) is estimated at about 0.25 MB (8 GPUs x 32
  // flows in flight at 300 B, 224 tasks at 600 B). 64 nodes of it with a 64 times larger batch
  // (still one microbatch per GPU) keep 512 GPUs x 32 flows in flight: about 5 MB, above 2 MiB.
  const Outcome r = run_ironlaw({"explain", scenario.string(), "--published-gpu-hours", "10", "--max-memory", "2 MiB",
                                 "--what-if", "cluster.nodes=64;training.global_batch_tokens=8 Mi", "--search-nodes",
                                 "1,64", "--search-batch", "1,64"},
                                tmp.path(), std::uint64_t{4} << 30);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("global_batch_tokens=8 Mi  (not simulated: would need about") != std::string::npos);
  // The search: the scenario itself simulated (1 node, 8 GPUs); 64 nodes at 64 x the batch
  // refused by the limit (the mixed pairs are a batch too small to split, or too many microbatches).
  bool refused_row = false, simulated_row = false;
  for (const auto& line : lines_of(r.out)) {
    const auto w = words_of(line);
    if (w.size() > 3 && w[1] == "64" && line.find("not simulated: would need about") != std::string::npos) refused_row = true;
    if (w.size() > 3 && w[1] == "1" && w[2] == "8" && line.find("not simulated") == std::string::npos) simulated_row = true;
  }
  CHECK(refused_row);
  CHECK(simulated_row);
  // The main scenario itself above the limit: refused before anything is simulated.
  const Outcome big = run_ironlaw({"explain", scenario.string(), "--published-gpu-hours", "10", "--max-memory", "2 MiB",
                                   "--set", "cluster.nodes=64", "--set", "training.global_batch_tokens=8 Mi",
                                   "--no-search"},
                                  tmp.path(), std::uint64_t{4} << 30);
  CHECK(big.exit_code == 2);
  CHECK(big.err.find("--max-memory") != std::string::npos);
  CHECK(big.out.empty());
}

TEST_CASE("A timeline of more ranks than one figure draws is refused, naming --ranks — a chosen few are drawn") {
  TempDir tmp;
  // 33 nodes x 8 GPUs, every rank simulated op by op: 264 ranks with events, above the 256 drawn.
  std::string text = tiny_scenario(tmp / "out.h5");
  text = replace_once(text, "nodes: 1\n", "nodes: 33\n");
  text = replace_once(text, "microbatch_size: 16\n", "microbatch_size: 1\n");
  text = replace_once(text, "global_batch_tokens: 128 Ki\n", "global_batch_tokens: 270336\n");
  text = replace_once(text, "steps: 1\n", "steps: 1\n  detail: full\n");
  text = replace_once(text, "trace: step\n", "trace: op\n");
  const fs::path scenario = tmp.write("s.yaml", text);
  const Outcome run = run_ironlaw({"run", scenario.string(), "-q"}, tmp.path());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string h5 = (tmp / "out.h5").string();
  const Outcome all = run_ironlaw({"plot", h5, "--kind", "timeline", "-o", (tmp / "t.svg").string()}, tmp.path());
  CHECK(all.exit_code == 2);
  CHECK(all.err.find("--ranks") != std::string::npos);
  CHECK(all.err.find("264 ranks") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp / "t.svg"));
  const Outcome wide = run_ironlaw({"plot", h5, "--kind", "timeline", "--ranks", "0-256", "-o", (tmp / "t.svg").string()},
                                   tmp.path());
  CHECK(wide.exit_code == 2);
  CHECK(wide.err.find("257 ranks") != std::string::npos);
  const Outcome few = run_ironlaw({"plot", h5, "--kind", "timeline", "--ranks", "0-255", "-o", (tmp / "t.svg").string()},
                                  tmp.path());
  INFO(few.err);
  CHECK(few.exit_code == 0);
  CHECK(fs::exists(tmp / "t.svg"));
}

TEST_CASE("plan prunes layouts whose simulation would need more host memory than --max-memory, before predicting them") {
  TempDir tmp;
  const std::vector<std::string> base{"plan", repo_path("models/gpt2-124m.yaml"), "--batch-tokens", "512 Ki", "--seq", "1024",
                                      "--gpus", "8", "--top", "1", "-o", (tmp / "p.h5").string()};
  // Every layout of 8 GPUs keeps at least 8 GPUs x 32 flows of 300 B in flight (77 KB): none fits in 16 KiB.
  std::vector<std::string> tight = base;
  tight.insert(tight.end(), {"--max-memory", "16 KiB"});
  const Outcome r = run_ironlaw(tight, tmp.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("0 ranked by the predictor, 0 simulated") != std::string::npos);
  CHECK(r.out.find("not simulated: host memory") != std::string::npos);
  // The default limit (half of this machine's memory) prunes none of them.
  const Outcome d = run_ironlaw(base, tmp.path());
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out.find("host memory") == std::string::npos);
  CHECK(d.out.find("1 simulated") != std::string::npos);
  // A bad limit is refused before anything is enumerated.
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--max-memory", "-1 GiB"});
  const Outcome b = run_ironlaw(bad, tmp.path());
  CHECK(b.exit_code == 2);
  CHECK(b.err.find("--max-memory") != std::string::npos);
}

TEST_CASE("printable escapes control characters, DEL and invalid UTF-8, and keeps valid UTF-8") {
  using ironlaw::cli::printable;
  CHECK(printable("plain name.h5") == "plain name.h5");
  CHECK(printable("line one\nline\ttwo") == "line one\nline\ttwo");  // the messages' own layout
  CHECK(printable("a\x1b[31mred") == "a\\x1b[31mred");               // ESC: no terminal control
  CHECK(printable(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(printable("bell\a del\x7f cr\r") == "bell\\x07 del\\x7f cr\\x0d");
  CHECK(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
  CHECK(printable("\xff") == "\\xff");                                 // never a UTF-8 byte
  CHECK(printable("cut \xc3") == "cut \\xc3");                         // a sequence cut short
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                        // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");               // a UTF-16 surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");      // above U+10FFFF
}

TEST_CASE("A path with terminal control characters is quoted escaped in the error message") {
  TempDir tmp;
  const Outcome r = run_ironlaw({"run", (tmp / "no\x1b]0;owned\x07such.yaml").string()}, tmp.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find('\x07') == std::string::npos);
  CHECK(r.err.find("no\\x1b]0;owned\\x07such.yaml") != std::string::npos);
}

TEST_CASE("A sweep value with terminal control characters is printed escaped in the table and the reasons") {
  // The reason column quotes the value raw ("got \"...\""); the table and stderr pass it through
  // cli::printable. The HDF5 /sweep keeps the bytes as data.
  TempDir tmp;
  const Outcome r = run_ironlaw({"sweep", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--vary",
                                 "parallel.pp_schedule=1f1b,\x1b[31mevil\x07", "-o", (tmp / "s.h5").string()},
                                tmp.path());
  CHECK(r.exit_code == 11);  // one point of two failed
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(r.out.find("got \"\\x1b[31mevil\\x07\"") != std::string::npos);
  CHECK(r.err.find("\\x1b[31mevil\\x07") != std::string::npos);
}
