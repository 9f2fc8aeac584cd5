// The hostile-input regression corpus (tests/corpus/*.case): every input of issue 7 that once
// hung, overflowed, crashed or clobbered a file, each with the exit status and the words its
// message must contain. A case file holds one directive per line:
//   setup: fifo NAME | loop NAME | dir NAME | file NAME | symlink NAME TARGET
//          | text NAME WORDS... | keys NAME COUNT       (prepared in the case's temporary folder)
//   arg: ARGUMENT                  (one per line; @REPO@, @CORPUS@, @TMP@ substituted)
//   exit: STATUS                   stderr: WORDS (each must appear)
//   absent: NAME                   (no such file, nor a temporary of it, after the run)
//   fifo: NAME                     (still a FIFO after the run: never replaced)
//   file_size_limit: BYTES         (the run's RLIMIT_FSIZE, as ulimit -f: a full disk's EFBIG)
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

namespace {

/// Each case runs with at most this much memory: every input here once allocated without end
/// (24 GB before the OOM killer), and a regression must fail its case, not exhaust the machine.
/// Each ends in milliseconds to seconds of CPU; no wall-clock limit (ctest's TIMEOUT is the net).
constexpr std::uint64_t kCaseMemoryBytes = std::uint64_t{4} << 30;

std::string substitute(std::string text, const fs::path& tmp) {
  const std::pair<std::string, std::string> vars[] = {
      {"@REPO@", repo_path("")}, {"@CORPUS@", repo_path("tests/corpus")}, {"@TMP@", tmp.string()}};
  for (const auto& [from, to] : vars) {
    std::string target = to;
    while (!target.empty() && target.back() == '/') target.pop_back();
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + target.size())) {
      text.replace(at, from.size(), target);
    }
  }
  return text;
}

bool still_fifo(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

void prepare(const std::vector<std::string>& words, const TempDir& tmp) {
  REQUIRE(words.size() >= 2);
  const fs::path at = tmp / words[1];
  if (words[0] == "fifo") {
    REQUIRE(::mkfifo(at.c_str(), 0600) == 0);
  } else if (words[0] == "loop") {
    fs::create_symlink(words[1] + ".b", at);
    fs::create_symlink(words[1], tmp / (words[1] + ".b"));
  } else if (words[0] == "dir") {
    fs::create_directories(at);
  } else if (words[0] == "file") {
    tmp.write(words[1], "a regular file\n");
  } else if (words[0] == "symlink") {
    REQUIRE(words.size() == 3);
    fs::create_symlink(words[2], at);
  } else if (words[0] == "text") {
    std::string text;
    for (std::size_t i = 2; i < words.size(); ++i) text += words[i] + " ";
    tmp.write(words[1], text);
  } else if (words[0] == "keys") {
    REQUIRE(words.size() == 3);
    std::string text;
    const int count = std::stoi(words[2]);
    for (int i = 0; i < count; ++i) text += "key_" + std::to_string(i) + ": " + std::to_string(i) + "\n";
    tmp.write(words[1], text);
  } else {
    FAIL("unknown setup " << words[0]);
  }
}

std::vector<fs::path> case_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(repo_path("tests/corpus"))) {
    if (e.path().extension() == ".case") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("Every hostile input of the corpus ends with its exit status and a message naming the key or path") {
  const auto files = case_files();
  REQUIRE(files.size() >= 40);  // the inputs of issue 7
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.stem().string()) {
      TempDir tmp;
      std::vector<std::string> args, expect_err, absent, fifos;
      int expect_exit = -1;
      std::uint64_t file_size_limit = 0;
      std::ifstream in(file);
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto colon = line.find(": ");
        const std::string key = line.substr(0, colon);
        const std::string value = colon == std::string::npos ? "" : substitute(line.substr(colon + 2), tmp.path());
        if (key == "setup") prepare(words_of(value), tmp);
        else if (key == "arg") args.push_back(value);
        else if (key == "exit") expect_exit = std::stoi(value);
        else if (key == "stderr") expect_err.push_back(value);
        else if (key == "absent") absent.push_back(value);
        else if (key == "fifo") fifos.push_back(value);
        else if (key == "file_size_limit") file_size_limit = std::stoull(value);
        else if (line == "arg:") args.emplace_back();
        else FAIL("unknown directive in " << file << ": " << line);
      }
      const Outcome r = run_ironlaw(args, tmp.path(), kCaseMemoryBytes, file_size_limit);
      INFO(r.err);
      CHECK(r.signal == 0);
      CHECK(r.exit_code == expect_exit);
      for (const auto& words : expect_err) CHECK(r.err.find(words) != std::string::npos);
      for (const auto& name : absent) {
        CHECK_FALSE(fs::exists(tmp / name));
        for (const auto& entry : entries_of(tmp.path())) CHECK(entry.rfind(name + ".tmp-", 0) != 0);
      }
      for (const auto& name : fifos) CHECK(still_fifo(tmp / name));
    }
  }
}

TEST_CASE("A run removes the temporaries of dead processes beside its output and keeps everything else") {
  TempDir tmp;
  // pid_max is at most 2^22 on Linux, so 2^22 + 7 names a process that cannot exist.
  const fs::path stale = tmp.write("out.h5.tmp-4194311-1", "left by a killed run");
  const fs::path live = tmp.write("out.h5.tmp-" + std::to_string(::getpid()) + "-1", "our own process");
  const fs::path other = tmp.write("notes.tmp-x-1", "not a temporary name");
  const fs::path scenario = tmp.write("s.yaml", tiny_scenario(tmp / "out.h5"));
  const Outcome r = run_ironlaw({"run", scenario.string(), "-q"}, tmp.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  CHECK(fs::is_regular_file(tmp / "out.h5"));
}
