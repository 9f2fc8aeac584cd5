#include <hdf5.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "output/chrome_trace.hpp"
#include "output/h5_reader.hpp"
#include "output/h5_writer.hpp"

using ironlaw::EventKind;
using ironlaw::EventRecord;
using ironlaw::StepRecord;
using ironlaw::output::ChromeTraceWriter;
using ironlaw::output::H5Reader;
using ironlaw::output::H5Writer;
using ironlaw::output::H5WriterOptions;
using ironlaw::output::SweepRow;
using ironlaw::output::TableColumn;

namespace {

// A fresh directory per test case, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device entropy;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = std::filesystem::temp_directory_path() /
              ("ironlaw-output-test-" + std::to_string(entropy()));
      if (std::filesystem::create_directory(path_)) return;
    }
    throw std::runtime_error("cannot create a temporary test directory");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  /// Names of the entries in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}


const std::vector<std::pair<std::string, double>> kMetrics{
    {"step_time_s", 1.25},   {"tokens_per_s_per_gpu", 3276.8}, {"model_tflops_per_gpu", 412.5},
    {"mfu", 0.417},          {"hfu", 0.52},                    {"exposed_comm_s", 0.0625},
    {"bubble_s", 0.0},       {"data_stall_s", 1e-3},           {"peak_memory_bytes", 6.5e10},
};

EventRecord make_event(std::int64_t i) {
  EventRecord e;
  e.rank = static_cast<std::int32_t>(i % 7) - 1;
  e.resource = static_cast<std::uint32_t>(i % 3);
  e.kind = static_cast<EventKind>(i % ironlaw::kEventKindCount);
  e.name = static_cast<std::uint32_t>(i % 5);
  e.start_ns = 1000 * i + 17;
  e.end_ns = 1000 * i + 17 + (i % 11) * 37;
  e.flops = 1.5e12 + static_cast<double>(i);
  e.bytes = static_cast<double>(i) * 0.5;
  return e;
}

StepRecord make_step(std::int64_t i) {
  StepRecord s;
  s.step = i;
  s.start_ns = i * 1'000'000'000;
  s.end_ns = (i + 1) * 1'000'000'000 - 3;
  s.compute_s = 0.7 + 0.01 * static_cast<double>(i);
  s.exposed_comm_s = 0.1;
  s.bubble_s = 0.05;
  s.data_stall_s = 0.01 * static_cast<double>(i);
  s.other_s = 0.02;
  s.model_flops = 6e15;
  s.hardware_flops = 8e15;
  s.tokens = 4194304;
  return s;
}

/// Writes a small but complete run file: every dataset of the layout.
void write_run(const std::filesystem::path& path, int events, H5WriterOptions options = {}) {
  H5Writer writer(path, options);
  writer.write_scenario("name: test\nseed: 7\nparallel: {tp: 2}\n", 7, "test");
  for (const char* r : {"gpu/compute", "gpu/comm", "nic0"}) writer.intern_resource(r);
  for (const char* n : {"fwd.qkv", "bwd.qkv", "recompute", "adam", "all_reduce \"grad\""}) {
    writer.intern_name(n);
  }
  for (int i = 0; i < 3; ++i) writer.on_step(make_step(i));
  for (int i = 0; i < events; ++i) writer.on_event(make_event(i));
  writer.write_summary(kMetrics);
  writer.write_table("failures", {TableColumn{"time_s", "s", std::vector<double>{10.5, 3600.25}},
                                  TableColumn{"rank", "", std::vector<std::int64_t>{3, 1017}}});
  writer.write_table("restarts", {TableColumn{"time_s", "s", std::vector<double>{}}});
  writer.commit();
}


/// A minimal JSON syntax checker (RFC 8259 grammar, no semantic checks): true if `text` is one
/// well-formed JSON value surrounded by optional whitespace.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool valid() {
    skip_space();
    if (!value()) return false;
    skip_space();
    return i_ == s_.size();
  }

 private:
  void skip_space() {
    while (i_ < s_.size() && std::string(" \n\r\t").find(s_[i_]) != std::string::npos) ++i_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool string() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          if (i_ + 4 >= s_.size()) return false;
          for (std::size_t k = 1; k <= 4; ++k) {
            if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + k]))) return false;
          }
          i_ += 4;
        } else if (std::string("\"\\/bfnrt").find(s_[i_]) == std::string::npos) {
          return false;
        }
      } else if (c == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  bool number() {
    const std::size_t begin = i_;
    if (s_[i_] == '-') ++i_;
    const auto digits = [&] {
      const std::size_t d = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ > d;
    };
    if (!digits()) return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    return i_ > begin;
  }
  template <typename Item>
  bool sequence(char close, Item item) {
    ++i_;
    skip_space();
    if (i_ < s_.size() && s_[i_] == close) {
      ++i_;
      return true;
    }
    while (true) {
      skip_space();
      if (!item()) return false;
      skip_space();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == close) {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return false;
      ++i_;
    }
  }
  bool value() {
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{':
        return sequence('}', [&] {
          if (i_ >= s_.size() || !string()) return false;
          skip_space();
          if (i_ >= s_.size() || s_[i_] != ':') return false;
          ++i_;
          skip_space();
          return value();
        });
      case '[': return sequence(']', [&] { return value(); });
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

bool same_event(const EventRecord& a, const EventRecord& b) {
  return a.rank == b.rank && a.resource == b.resource && a.kind == b.kind && a.name == b.name &&
         a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.flops == b.flops &&
         a.bytes == b.bytes;
}

}  // namespace

TEST_CASE("a written run file reads back with every value") {
  TempDir dir;
  const auto path = dir / "run.h5";
  write_run(path, 100);
  H5Reader reader(path);

  const auto scenario = reader.scenario();
  CHECK(scenario.yaml == "name: test\nseed: 7\nparallel: {tp: 2}\n");
  CHECK(scenario.seed == 7);
  CHECK(scenario.name == "test");
  CHECK(scenario.version == "0.1.0");

  CHECK(reader.summary() == kMetrics);
  CHECK(reader.units("/summary") ==
        std::vector<std::string>{"s", "tokens/s", "TFLOP/s", "1", "1", "s", "s", "s", "B"});

  const auto steps = reader.steps();
  REQUIRE(steps.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const StepRecord want = make_step(i);
    const StepRecord& got = steps[static_cast<std::size_t>(i)];
    CHECK(got.step == want.step);
    CHECK(got.start_ns == want.start_ns);
    CHECK(got.end_ns == want.end_ns);
    CHECK(got.compute_s == want.compute_s);
    CHECK(got.exposed_comm_s == want.exposed_comm_s);
    CHECK(got.bubble_s == want.bubble_s);
    CHECK(got.data_stall_s == want.data_stall_s);
    CHECK(got.other_s == want.other_s);
    CHECK(got.model_flops == want.model_flops);
    CHECK(got.hardware_flops == want.hardware_flops);
    CHECK(got.tokens == want.tokens);
  }
  CHECK(reader.units("/steps")[1] == "ns");

  CHECK(reader.event_resources() == std::vector<std::string>{"gpu/compute", "gpu/comm", "nic0"});
  CHECK(reader.event_names() == std::vector<std::string>{"fwd.qkv", "bwd.qkv", "recompute", "adam",
                                                         "all_reduce \"grad\""});
  REQUIRE(reader.event_count() == 100);
  std::vector<EventRecord> events;
  reader.for_each_event_batch(
      [&](const std::vector<EventRecord>& batch) {
        events.insert(events.end(), batch.begin(), batch.end());
      });
  REQUIRE(events.size() == 100);
  for (std::size_t i = 0; i < 100; ++i) {
    CHECK(same_event(events[i], make_event(static_cast<std::int64_t>(i))));
  }
  CHECK(reader.units("/events") ==
        std::vector<std::string>{"", "", "", "", "ns", "ns", "FLOP", "B"});

  CHECK(reader.run_mode() == "full");
  CHECK(reader.run_tables() == std::vector<std::string>{"failures", "restarts"});
  const auto failures = reader.read_table("failures");
  REQUIRE(failures.size() == 2);
  CHECK(failures[0].name == "time_s");
  CHECK(failures[0].unit == "s");
  CHECK(std::get<std::vector<double>>(failures[0].values) == std::vector<double>{10.5, 3600.25});
  CHECK(failures[1].name == "rank");
  CHECK(std::get<std::vector<std::int64_t>>(failures[1].values) ==
        std::vector<std::int64_t>{3, 1017});
  const auto restarts = reader.read_table("restarts");
  REQUIRE(restarts.size() == 1);
  CHECK(restarts[0].size() == 0);
  CHECK_FALSE(reader.has("/sweep"));
  CHECK(reader.has("/run/failures"));
  CHECK_FALSE(reader.has("/run/nothing/here"));
}

TEST_CASE("a run file with no records still has the whole layout") {
  TempDir dir;
  const auto path = dir / "empty.h5";
  {
    H5Writer writer(path);
    writer.write_scenario("", 0, "");
    writer.commit();
  }
  H5Reader reader(path);
  CHECK(reader.scenario().yaml.empty());
  CHECK(reader.event_count() == 0);
  CHECK(reader.steps().empty());
  CHECK(reader.event_names().empty());
  CHECK(reader.event_resources().empty());
  CHECK(reader.run_mode() == "steps");
  CHECK(reader.run_tables().empty());
  int batches = 0;
  reader.for_each_event_batch([&](const std::vector<EventRecord>&) { ++batches; });
  CHECK(batches == 0);
  CHECK_THROWS_WITH(reader.summary(), Catch::Contains("no /summary"));
}

TEST_CASE("identical input gives byte-identical files") {
  TempDir dir;
  H5WriterOptions small_chunks;
  small_chunks.event_chunk_rows = 1000;
  write_run(dir / "a.h5", 2500, small_chunks);
  // Object timestamps have one-second resolution: a file that stored any would differ now.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  write_run(dir / "b.h5", 2500, small_chunks);
  const std::string a = read_bytes(dir / "a.h5");
  const std::string b = read_bytes(dir / "b.h5");
  REQUIRE(a.size() > 1000);
  CHECK(a == b);
}

TEST_CASE("a writer destroyed without commit leaves no file behind") {
  TempDir dir;
  const auto path = dir / "run.h5";
  SECTION("plain destruction") {
    H5Writer writer(path);
    writer.write_scenario("x: 1\n", 1, "x");
    for (int i = 0; i < 70000; ++i) writer.on_event(make_event(i));
    CHECK(dir.entries().size() == 1);  // the temporary file, not the target
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("an exception unwinds through the writer") {
    try {
      H5Writer writer(path);
      writer.on_step(make_step(0));
      throw std::runtime_error("simulated failure");
    } catch (const std::runtime_error&) {
    }
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("commit replaces an existing file atomically and then refuses more records") {
  TempDir dir;
  const auto path = dir / "run.h5";
  write_run(path, 10);
  H5Writer writer(path);
  writer.write_scenario("second: true\n", 2, "second");
  CHECK(H5Reader(path).scenario().name == "test");  // the old file is intact until commit
  writer.commit();
  CHECK(H5Reader(path).scenario().name == "second");
  CHECK(dir.entries() == std::vector<std::string>{"run.h5"});
  CHECK_THROWS_WITH(writer.on_event(make_event(0)), Catch::Contains("already committed"));
  CHECK_THROWS(writer.commit());
}

TEST_CASE("events streamed in more than one chunk read back in order") {
  TempDir dir;
  const auto path = dir / "big.h5";
  constexpr int kEvents = 200000;
  {
    H5Writer writer(path);
    writer.intern_resource("r");
    writer.intern_name("n");
    for (int i = 0; i < kEvents; ++i) writer.on_event(make_event(i));
    CHECK(writer.event_count() == kEvents);
    writer.commit();
  }
  H5Reader reader(path);
  REQUIRE(reader.event_count() == kEvents);
  for (std::size_t batch_rows : {std::size_t{65536}, std::size_t{50000}}) {
    std::int64_t next = 0;
    std::size_t batches = 0;
    bool all_equal = true;
    reader.for_each_event_batch(
        [&](const std::vector<EventRecord>& batch) {
          ++batches;
          CHECK(batch.size() <= batch_rows);
          for (const EventRecord& e : batch) {
            all_equal = all_equal && same_event(e, make_event(next++));
          }
        },
        batch_rows);
    CHECK(next == kEvents);
    CHECK(all_equal);
    CHECK(batches == (kEvents + batch_rows - 1) / batch_rows);
  }
}

TEST_CASE("a sweep file holds one row per point and no event datasets") {
  TempDir dir;
  const auto path = dir / "sweep.h5";
  {
    H5Writer writer(path);
    writer.write_scenario("name: base\n", 1, "base");
    writer.write_sweep({"parallel.tp", "cluster.nic_bandwidth"}, {"step_time_s", "mfu"},
                       {SweepRow{{"1", "400 Gbit/s"}, {2.5, 0.41}},
                        SweepRow{{"8", "200 Gbit/s"}, {1.75, 0.385}},
                        SweepRow{{"16", "200 Gbit/s"}, {std::nan(""), std::nan("")}, "invalid: parallel.tp: too big"}});
    writer.commit();
  }
  H5Reader reader(path);
  const auto sweep = reader.sweep();
  CHECK(sweep.varied_keys == std::vector<std::string>{"parallel.tp", "cluster.nic_bandwidth"});
  CHECK(sweep.metric_names == std::vector<std::string>{"step_time_s", "mfu"});
  CHECK(sweep.metric_units == std::vector<std::string>{"s", "1"});
  REQUIRE(sweep.rows.size() == 3);
  CHECK(sweep.rows[0].status == "ok");
  CHECK(sweep.rows[2].status == "invalid: parallel.tp: too big");
  CHECK(std::isnan(sweep.rows[2].metrics[0]));
  CHECK(sweep.rows[1].values == std::vector<std::string>{"8", "200 Gbit/s"});
  CHECK(sweep.rows[1].metrics == std::vector<double>{1.75, 0.385});
  CHECK(sweep.rows[0].values == std::vector<std::string>{"1", "400 Gbit/s"});
  CHECK_FALSE(reader.has("/events"));
  CHECK_FALSE(reader.has("/steps"));
  CHECK_FALSE(reader.has("/run"));
  CHECK(reader.event_count() == 0);
}

TEST_CASE("interning returns dense indices in first-seen order") {
  TempDir dir;
  H5Writer writer(dir / "x.h5");
  CHECK(writer.intern_name("a") == 0);
  CHECK(writer.intern_name("b") == 1);
  CHECK(writer.intern_name("a") == 0);
  CHECK(writer.intern_resource("b") == 0);
}

TEST_CASE("bad writer calls throw with the path and the problem") {
  TempDir dir;
  const auto path = dir / "x.h5";
  CHECK_THROWS_WITH(H5Writer(dir / "missing" / "x.h5"), Catch::Contains("does not exist") &&
                                                            Catch::Contains("missing"));
  H5Writer writer(path);
  CHECK_THROWS_WITH(writer.write_summary({{"mfu", 0.5}, {"mfu", 0.4}}),
                    Catch::Contains("duplicate name 'mfu'") && Catch::Contains(path.string()));
  CHECK_THROWS_WITH(
      writer.write_table("failures", {TableColumn{"a", "", std::vector<double>{1.0}},
                                      TableColumn{"b", "", std::vector<double>{}}}),
      Catch::Contains("column 'b' has 0 rows"));
  CHECK_THROWS_WITH(writer.write_table("a/b", {TableColumn{"a", "", std::vector<double>{}}}),
                    Catch::Contains("invalid /run table name"));
  CHECK_THROWS_WITH(writer.write_sweep({"k"}, {"m"}, {SweepRow{{"1"}, {}}}),
                    Catch::Contains("/sweep row 0"));
  CHECK_THROWS(writer.set_run_mode("partial"));
  writer.write_scenario("", 0, "");
  CHECK_THROWS_WITH(writer.write_scenario("", 0, ""), Catch::Contains("written twice"));
}

TEST_CASE("reading a file that is not an ironlaw HDF5 file throws a clear error") {
  TempDir dir;
  CHECK_THROWS_WITH(H5Reader(dir / "absent.h5"), Catch::Contains("no such file"));
  const auto text = dir / "text.h5";
  std::ofstream(text) << "this is not HDF5\n";
  CHECK_THROWS_WITH(H5Reader(text), Catch::Contains("not an HDF5 file") &&
                                        Catch::Contains(text.string()));
  const auto foreign = dir / "foreign.h5";
  const hid_t file = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  H5Fclose(file);
  CHECK_THROWS_WITH(H5Reader(foreign), Catch::Contains("not an ironlaw output file"));
}

TEST_CASE("damaged run files found by fuzzing are refused with a named error, never read out of bounds") {
  // Each was a crash or an abort under ASan in fuzz_h5_reader; the files are kept in tests/corpus.
  const std::filesystem::path corpus = std::filesystem::path(IRONLAW_SOURCE_DIR) / "tests/corpus/inputs";
  // /summary's stored compound layout sent libhdf5's conversion past its buffer (SEGV).
  const H5Reader summary_layout(corpus / "h5_summary_layout.h5");
  CHECK_THROWS_WITH(summary_layout.summary(), Catch::Contains("h5_summary_layout.h5") &&
                                                   Catch::Contains("damaged file"));
  // /steps declared 541,165,879,297 rows of 88 bytes in a 19 KB file (a 47 TB allocation).
  const H5Reader steps_rows(corpus / "h5_steps_rows_huge.h5");
  CHECK_THROWS_WITH(steps_rows.steps(), Catch::Contains("/steps") && Catch::Contains("damaged file"));
  // /steps' stored row type had a field past its 88-byte row; libhdf5 sized a 3.3 GB conversion buffer.
  const H5Reader steps_member(corpus / "h5_steps_member_outside_row.h5");
  CHECK_THROWS_WITH(steps_member.steps(), Catch::Contains("/steps") && Catch::Contains("damaged file"));
}

TEST_CASE("summary units default from the metric name and can be given") {
  using ironlaw::output::default_metric_unit;
  CHECK(default_metric_unit("mfu") == "1");
  CHECK(default_metric_unit("gpu_hours") == "h");
  CHECK(default_metric_unit("checkpoint_s") == "s");
  CHECK(default_metric_unit("offset_ns") == "ns");
  CHECK(default_metric_unit("weights_bytes") == "B");
  CHECK(default_metric_unit("speedup") == "");
  TempDir dir;
  const auto path = dir / "x.h5";
  {
    H5Writer writer(path);
    writer.write_summary({{"a", 1.0}, {"b", 2.0}}, {"m", "kg"});
    writer.commit();
  }
  CHECK(H5Reader(path).units("/summary") == std::vector<std::string>{"m", "kg"});
}

TEST_CASE("microseconds are written exactly with nanosecond precision") {
  using ironlaw::output::format_microseconds;
  CHECK(format_microseconds(0) == "0.000");
  CHECK(format_microseconds(1) == "0.001");
  CHECK(format_microseconds(1234567) == "1234.567");
  CHECK(format_microseconds(-5) == "-0.005");
  CHECK(format_microseconds(9'000'000'000'000'000'010) == "9000000000000000.010");
  CHECK(format_microseconds(std::numeric_limits<std::int64_t>::min()) ==
        "-9223372036854775.808");
}

TEST_CASE("a Chrome trace is valid JSON with one complete event per record") {
  TempDir dir;
  const auto path = dir / "trace.json";
  std::vector<EventRecord> events;
  for (int i = 0; i < 50; ++i) events.push_back(make_event(i));
  ironlaw::output::write_chrome_trace(path, events, {"gpu/compute", "gpu/comm", "nic\t0"},
                                      {"fwd", "bwd", "re\"compute", "adam\\", "x\x01y"});
  CHECK(dir.entries() == std::vector<std::string>{"trace.json"});
  const std::string json = read_bytes(path);
  CHECK(JsonChecker(json).valid());
  CHECK(count_of(json, "\"ph\":\"X\"") == 50);
  CHECK(count_of(json, "\"name\":\"thread_name\"") == 7 * 3);  // (rank, resource) pairs
  CHECK(count_of(json, "\"name\":\"process_name\"") == 7);     // ranks -1..5
  CHECK(json.find("\"name\":\"fabric\"") != std::string::npos);
  CHECK(json.find("\"ts\":1.017,\"dur\":0.037") != std::string::npos);  // event 1
  CHECK(json.find("re\\\"compute") != std::string::npos);
  CHECK(json.find("x\\u0001y") != std::string::npos);
  CHECK(json.find("\"cat\":\"recompute\"") != std::string::npos);
}

TEST_CASE("a Chrome trace exported from an HDF5 file matches the in-memory export") {
  TempDir dir;
  write_run(dir / "run.h5", 300);
  ironlaw::output::export_chrome_trace(H5Reader(dir / "run.h5"), dir / "from_h5.json");
  std::vector<EventRecord> events;
  for (int i = 0; i < 300; ++i) events.push_back(make_event(i));
  ironlaw::output::write_chrome_trace(
      dir / "direct.json", events, {"gpu/compute", "gpu/comm", "nic0"},
      {"fwd.qkv", "bwd.qkv", "recompute", "adam", "all_reduce \"grad\""});
  const std::string json = read_bytes(dir / "from_h5.json");
  CHECK(JsonChecker(json).valid());
  CHECK(json == read_bytes(dir / "direct.json"));
}

TEST_CASE("an uncommitted Chrome trace leaves no file and bad indices throw") {
  TempDir dir;
  {
    ChromeTraceWriter writer(dir / "t.json");
    writer.add(make_event(1), "r", "n");
  }
  CHECK(dir.entries().empty());
  CHECK_THROWS_WITH(
      ironlaw::output::write_chrome_trace(dir / "t.json", {make_event(5)}, {"r"}, {"n"}),
      Catch::Contains("resource index 2"));
  CHECK(dir.entries().empty());
  CHECK_THROWS_WITH(ChromeTraceWriter(dir / "no" / "t.json"), Catch::Contains("does not exist"));
}
