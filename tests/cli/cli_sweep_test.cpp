// `ironlaw sweep` as a planning tool: points that cannot be simulated become rows with their
// reason and the sweep goes on (exit status 10 + the number of such points), values may be
// ranges or `auto`, and every point carries days and GPU-hours. The expected values are derived
// by hand from the scenario (model card, topology) or from the file's other columns.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "output/h5_reader.hpp"

using namespace ironlaw::cli_test;
using ironlaw::output::H5Reader;

namespace {

std::vector<std::string> column(const ironlaw::output::SweepTable& t, std::size_t key) {
  std::vector<std::string> out;
  for (const auto& r : t.rows) out.push_back(r.values.at(key));
  return out;
}

double metric(const ironlaw::output::SweepTable& t, std::size_t row, const std::string& name) {
  for (std::size_t m = 0; m < t.metric_names.size(); ++m)
    if (t.metric_names[m] == name) return t.rows.at(row).metrics.at(m);
  FAIL("no metric " << name);
  return 0;
}

}  // namespace

TEST_CASE("a sweep with an invalid point completes, lists it with its reason and counts it in the exit status",
          "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  // GPT-2 small has 12 layers: pp 5 divides neither them nor the node's 8 GPUs; pp 1 and 2 do.
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.pp=1,5,2", "-o", "s.h5", "--no-progress"},
                                dir.path());
  INFO(r.out << r.err);
  CHECK(r.signal == 0);
  CHECK(r.exit_code == 11);  // 10 + one failed point
  CHECK(r.err.find("point parallel.pp=5") != std::string::npos);
  CHECK(r.err.find("1 of 3 points failed") != std::string::npos);
  CHECK(r.err.find("parallel.pp") != std::string::npos);
  const auto t = H5Reader(dir / "s.h5").sweep();
  REQUIRE(t.rows.size() == 3);
  CHECK(column(t, 0) == std::vector<std::string>{"1", "5", "2"});
  CHECK(t.rows[0].status == "ok");
  CHECK(t.rows[2].status == "ok");
  CHECK(t.rows[1].status.rfind("invalid: ", 0) == 0);
  CHECK(std::isnan(metric(t, 1, "step_time_s")));
  CHECK(metric(t, 0, "step_time_s") > 0);
}

TEST_CASE("a sweep value out of its key's range is a row, not an abort", "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=1,7", "-o", "s.h5"}, dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 11);
  CHECK(r.err.find("point parallel.zero=7") != std::string::npos);
  CHECK(r.err.find("parallel.zero: expected 0, 1, 2 or 3, got 7") != std::string::npos);
  CHECK(r.out.find("invalid: parallel.zero: expected 0, 1, 2 or 3, got 7") != std::string::npos);
}

TEST_CASE("sweep ranges A..B:STEP expand and mix with single values", "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=0..3:2,3", "-o", "s.h5"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = H5Reader(dir / "s.h5").sweep();
  CHECK(column(t, 0) == std::vector<std::string>{"0", "2", "3"});
  SECTION("a range that runs backwards or has a zero step is bad input before anything runs") {
    for (const char* bad : {"parallel.zero=3..1", "parallel.zero=0..3:0", "parallel.zero=a..3"}) {
      const Outcome b = run_ironlaw({"sweep", file.string(), "--vary", bad, "-o", "b.h5"}, dir.path());
      INFO(bad << ": " << b.err);
      CHECK(b.exit_code == 2);
      CHECK(b.err.find("parallel.zero") != std::string::npos);
      CHECK_FALSE(fs::exists(dir / "b.h5"));
    }
  }
}

TEST_CASE("a dimensioned key's sweep values carry their unit — a range takes it last — a bare one is bad input",
          "[cli][sweep][units]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.bucket_size=10..30:10 MiB,64 MiB", "-o",
                                 "s.h5"},
                                dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(column(H5Reader(dir / "s.h5").sweep(), 0) ==
        std::vector<std::string>{"10 MiB", "20 MiB", "30 MiB", "64 MiB"});
  // 10485760 bytes is exactly 10 MiB: both forms are suggested.
  const Outcome bare = run_ironlaw({"sweep", file.string(), "--vary", "parallel.bucket_size=10485760", "-o", "b.h5"},
                                   dir.path());
  CHECK(bare.exit_code == 2);
  CHECK(bare.err.find("--vary: parallel.bucket_size: 10485760 has no unit; write --vary "
                      "'parallel.bucket_size=10485760 B' or --vary 'parallel.bucket_size=10 MiB'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "b.h5"));
}

TEST_CASE("auto for tp is the powers of two up to a node's GPUs that divide the heads", "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  // GPT-2 small: 12 heads; DGX H100: 8 GPUs per node. 1, 2 and 4 divide 12; 8 does not.
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.tp=auto", "-o", "s.h5"}, dir.path());
  INFO(r.out << r.err);
  const auto t = H5Reader(dir / "s.h5").sweep();
  CHECK(column(t, 0) == std::vector<std::string>{"1", "2", "4"});
  SECTION("auto for pp is the divisors of the layer count (12)") {
    const Outcome p = run_ironlaw({"sweep", file.string(), "--vary", "parallel.pp=auto", "-o", "p.h5"}, dir.path());
    INFO(p.out << p.err);
    const auto tp = H5Reader(dir / "p.h5").sweep();
    CHECK(column(tp, 0) == std::vector<std::string>{"1", "2", "3", "4", "6", "12"});
  }
  SECTION("auto elsewhere is bad input") {
    const Outcome b = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=auto", "-o", "b.h5"}, dir.path());
    CHECK(b.exit_code == 2);
    CHECK(b.err.find("parallel.tp and parallel.pp only") != std::string::npos);
  }
}

TEST_CASE("a steps-mode sweep reports days and GPU-hours for training.tokens at the simulated throughput",
          "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=0,1", "-o", "s.h5"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("days") != std::string::npos);
  CHECK(r.out.find("gpu_hours") != std::string::npos);
  CHECK(r.out.find("training.tokens / simulated tokens/s") != std::string::npos);
  const auto t = H5Reader(dir / "s.h5").sweep();
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    // The tiny scenario: 10 G tokens (10e9) in steps of 128 Ki tokens on 8 GPUs.
    const double steps = std::ceil(10e9 / (128.0 * 1024));
    CHECK(metric(t, row, "tokens_per_step") == Approx(128.0 * 1024));
    const double days = steps * metric(t, row, "step_time_s") / 86400.0;
    CHECK(metric(t, row, "ideal_wall_days") == Approx(days).epsilon(1e-9));
    CHECK(metric(t, row, "ideal_gpu_hours") == Approx(days * 24 * 8).epsilon(1e-9));
  }
}

TEST_CASE("a repeated --vary key is refused before any point runs, naming the key", "[cli][sweep]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=0", "--vary", "parallel.zero=1..2",
                                 "-o", "s.h5"}, dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("parallel.zero: varied twice") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "s.h5"));
  CHECK(r.out.empty());
}

TEST_CASE("on a terminal a sweep shows its progress with elapsed time and ETA — --no-progress and a pipe show none",
          "[cli][sweep][progress]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const std::vector<std::string> args{"sweep", file.string(), "--vary", "parallel.zero=0,1,2", "-o", "s.h5", "-j", "1"};
  const Outcome tty = run_ironlaw_on_terminal(args, dir.path());
  INFO(tty.out << tty.err);
  REQUIRE(tty.exit_code == 0);
  // One line per finished point, rewritten in place with a carriage return: [d/3] for d = 1..3,
  // each with the time so far and the estimate for the rest; the last one estimates nothing.
  for (const char* done : {"\r[1/3] points, ", "\r[2/3] points, ", "\r[3/3] points, "}) {
    CHECK(tty.err.find(done) != std::string::npos);
  }
  CHECK(tty.err.find(" elapsed, ETA ") != std::string::npos);
  const std::string last = tty.err.substr(tty.err.rfind("\r[3/3] points, "));
  CHECK(last.find(" elapsed, ETA 0 s") != std::string::npos);
  // The same sweep without the progress line: asked for, and when stderr is not a terminal.
  std::vector<std::string> quiet = args;
  quiet.push_back("--no-progress");
  quiet[5] = "q.h5";
  const Outcome asked = run_ironlaw_on_terminal(quiet, dir.path());
  REQUIRE(asked.exit_code == 0);
  CHECK(asked.err.find("ETA") == std::string::npos);
  std::vector<std::string> piped = args;
  piped[5] = "p.h5";
  const Outcome pipe = run_ironlaw(piped, dir.path());
  REQUIRE(pipe.exit_code == 0);
  CHECK(pipe.err.find("ETA") == std::string::npos);
  // The progress line goes to the terminal only: stdout is the same bytes but for the file name.
  CHECK(tty.out == replace_once(pipe.out, "wrote p.h5", "wrote s.h5"));
}

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("sweep --csv prints every row of /sweep, the same values to the last bit", "[cli][sweep][csv]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"sweep", file.string(), "--vary", "parallel.pp=1,5", "-o", "s.h5", "--csv"}, dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 11);
  const auto t = H5Reader(dir / "s.h5").sweep();
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + t.rows.size());
  const auto header = split_csv_line(lines[0]);
  REQUIRE(header.size() == 2 + t.metric_names.size());
  CHECK(header[0] == "parallel.pp");
  CHECK(header[1] == "status");
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    const auto fields = split_csv_line(lines[1 + row]);
    REQUIRE(fields.size() == header.size());
    CHECK(fields[0] == t.rows[row].values[0]);
    CHECK(fields[1] == t.rows[row].status);
    for (std::size_t m = 0; m < t.metric_names.size(); ++m) {
      INFO(t.metric_names[m]);
      CHECK(header[2 + m] == t.metric_names[m]);
      const double v = t.rows[row].metrics[m];
      if (std::isnan(v)) {
        CHECK(fields[2 + m].empty());
      } else {
        CHECK(std::stod(fields[2 + m]) == v);
      }
    }
  }
}

TEST_CASE("sweep --json and run --json/--csv carry the names, values and units", "[cli][sweep][json]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome s = run_ironlaw({"sweep", file.string(), "--vary", "parallel.zero=0,1", "-o", "s.h5", "--json"}, dir.path());
  INFO(s.out << s.err);
  REQUIRE(s.exit_code == 0);
  CHECK(s.out.rfind("{\"scenario\": \"tiny-cli\", \"varied_keys\": [\"parallel.zero\"]", 0) == 0);
  CHECK(s.out.find("{\"name\": \"tokens_per_s_per_gpu\", \"unit\": \"tokens/s\"}") != std::string::npos);
  CHECK(s.out.find("\"values\": {\"parallel.zero\": \"1\"}, \"status\": \"ok\"") != std::string::npos);

  const Outcome csv = run_ironlaw({"run", file.string(), "-o", "r.h5", "--csv"}, dir.path());
  INFO(csv.out << csv.err);
  REQUIRE(csv.exit_code == 0);
  const auto summary = H5Reader(dir / "r.h5").summary();
  const auto lines = lines_of(csv.out);
  REQUIRE(lines.size() == 1 + summary.size());
  CHECK(lines[0] == "name,value,unit");
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const auto fields = split_csv_line(lines[1 + i]);
    REQUIRE(fields.size() == 3);
    CHECK(fields[0] == summary[i].first);
    CHECK(std::stod(fields[1]) == summary[i].second);
  }
  const Outcome json = run_ironlaw({"run", file.string(), "-o", "r2.h5", "--json"}, dir.path());
  REQUIRE(json.exit_code == 0);
  CHECK(json.out.rfind("{\"scenario\": \"tiny-cli\", \"metrics\": {\"step_time_s\": {\"value\": ", 0) == 0);
  CHECK(json.out.find("\"mfu\": {\"value\": ") != std::string::npos);
  const Outcome both = run_ironlaw({"run", file.string(), "-o", "r3.h5", "--json", "--csv"}, dir.path());
  CHECK(both.exit_code == 2);
}

TEST_CASE("/summary and /sweep describe every field beside its unit", "[cli][sweep][h5]") {
  TempDir dir;
  const fs::path file = dir.write("s.yaml", tiny_scenario(dir / "out.h5"));
  const Outcome r = run_ironlaw({"run", file.string(), "-o", "r.h5", "--quiet"}, dir.path());
  REQUIRE(r.exit_code == 0);
  const H5Reader run(dir / "r.h5");
  const auto summary = run.summary();
  const auto descriptions = run.descriptions("/summary");
  // Every metric the report layer writes has its sentence, so a new metric without one fails here.
  REQUIRE(descriptions.size() == summary.size());
  for (std::size_t i = 0; i < summary.size(); ++i) {
    INFO(summary[i].first);
    CHECK_FALSE(descriptions[i].empty());
  }
  CHECK(descriptions[0] == "simulated time of one training step (mean over the simulated steps)");

  const Outcome s = run_ironlaw({"sweep", file.string(), "--vary", "parallel.pp=1,5", "-o", "s.h5"}, dir.path());
  REQUIRE(s.exit_code == 11);
  const H5Reader sweep(dir / "s.h5");
  const auto t = sweep.sweep();
  const auto sd = sweep.descriptions("/sweep");
  REQUIRE(sd.size() == 2 + t.metric_names.size());
  CHECK(sd[0] == "the value of the scenario key parallel.pp at this point");
  CHECK(sd[1].rfind("ok, or why", 0) == 0);
  for (std::size_t m = 0; m < t.metric_names.size(); ++m) {
    INFO(t.metric_names[m]);
    CHECK_FALSE(sd[2 + m].empty());
  }
}
