// Bounded parsing and range checks (issue 7): every limit is an input error naming the file
// position and the key, found in one linear pass, never a hang, a wrap or a crash.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "config/reader.hpp"
#include "config/validate.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::errors_of;

namespace {

std::vector<std::string> set_errors(const std::string& set) {
  return errors_of([&] { load_scenario(data("basic.yaml"), {set}); });
}

/// Nine levels of ten aliases of the level below: 10^levels leaves once expanded.
std::string alias_levels(int levels) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  // Built with append(): GCC 12 misreports "literal" + std::string with -Wrestrict.
  for (int i = 1; i <= levels; ++i) {
    const std::string name = std::to_string(i), below = std::to_string(i - 1);
    text.append("a").append(name).append(": &a").append(name).append(" [");
    for (int j = 0; j < 10; ++j) text.append(j ? ", *a" : "*a").append(below);
    text.append("]\n");
  }
  return text;
}

}  // namespace

TEST_CASE("An alias bomb is refused at the first alias past the node limit, with its position") {
  SourceLoc at{"bomb.yaml", 0, 0};
  // 10^5 leaves + lists: 111,112 values, within 1,000,000.
  CHECK_FALSE(detail::check_yaml_shape(alias_levels(4), &at));
  // Values so far: 6 keys + 11 + 111 + 1,111 + 11,111 + 111,111 (levels 0-4) = 123,461.
  const auto problem = detail::check_yaml_shape(alias_levels(9), &at);
  REQUIRE(problem);
  CHECK(problem->find("more than 1000000 values once aliases are expanded") != std::string::npos);
  CHECK(at.file == "bomb.yaml");
  CHECK(at.line == 6);  // a5: 1,111,111 values, past the limit at its 8th alias
}

TEST_CASE("Nesting deeper than 64 levels is reported as such") {
  SourceLoc at{"deep.yaml", 0, 0};
  CHECK_FALSE(detail::check_yaml_shape("k: " + std::string(63, '[') + std::string(63, ']'), &at));
  const auto problem = detail::check_yaml_shape("k: " + std::string(65, '[') + std::string(65, ']'), &at);
  REQUIRE(problem);
  CHECK(*problem == "mappings and lists nested more than 64 deep");
  CHECK(at.line == 1);
  CHECK(at.column == 4 + 63);  // the 64th [ is the 65th level (the top mapping is the first)
}

TEST_CASE("Durations beyond the int64-nanosecond clock are refused, naming the range") {
  const auto errors = set_errors("reliability.restart.detection=300 y");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("expected a time like") != std::string::npos);  // "y" is no unit
  const auto beyond = set_errors("reliability.restart.detection=1e10 s");
  REQUIRE(beyond.size() == 1);
  CHECK(beyond[0] ==
        "--set: reliability.restart.detection: a duration must be within the simulated clock's range, 0 to 9.22e9 s "
        "(about 292 years of simulated time), got \"1e10 s\"");
}

TEST_CASE("Physical bounds: each key's range is stated once and applies to --set as to files") {
  CHECK(set_errors("cluster.topology.device.max_gemm_fraction=1e-300") ==
        std::vector<std::string>{"--set: cluster.topology.device.max_gemm_fraction: must be from 0.001 to 1 (a "
                                 "fraction of the dense peak, at least 0.1 %), got 1e-300"});
  CHECK(set_errors("cluster.topology.node.nic.bandwidth=1 B/s") ==
        std::vector<std::string>{"--set: cluster.topology.node.nic.bandwidth: must be from 1e+06 to 1e+20 (a link "
                                 "carries 1 MB/s to 1e20 B/s; ideal-system tests use 1e18), got 1"});
  CHECK(set_errors("training.global_batch_tokens=1e300") ==
        std::vector<std::string>{"--set: training.global_batch_tokens: must be from 1 to 1e+12 (tokens per step), got "
                                 "1e+300"});
  CHECK(set_errors("cluster.topology.device.kernel_launch_overhead=1e10 s").size() == 1);
  CHECK(set_errors("data.storage_bandwidth_per_node=0") == std::vector<std::string>{"(no error)"});  // 0: off
  // The table itself: one entry per key, every range non-empty.
  for (const auto& b : detail::key_bounds()) {
    CHECK(b.min <= b.max);
    int same = 0;
    for (const auto& other : detail::key_bounds()) same += std::string(other.key) == b.key;
    CHECK(same == 1);
  }
}

TEST_CASE("Layout products are computed without int overflow") {
  const auto errors = errors_of([&] {
    load_scenario(data("basic.yaml"), {"parallel.pp=65536", "parallel.pp_schedule=interleaved",
                                       "parallel.virtual_stages=1024"});
  });
  bool found = false;
  for (const auto& e : errors) found |= e.find("pp*virtual_stages = 67108864") != std::string::npos;
  CHECK(found);
}

TEST_CASE("Only regular files are read") {
  const auto errors = errors_of([&] { load_scenario("/dev/zero"); });
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == "/dev/zero: cannot read \"/dev/zero\": it is a character device, not a regular file");
}

TEST_CASE("A list item's index is read as [] when its key is looked up in the bounds table") {
  CHECK(detail::list_item_key("model.layers[3].units") == "model.layers[].units");
  CHECK(detail::list_item_key("training.batch_ramp.12.until_tokens") == "training.batch_ramp[].until_tokens");
  CHECK(detail::list_item_key("x.7") == "x[]");
  CHECK(detail::list_item_key("device.peak_flops.bf16") == "device.peak_flops.bf16");  // digits inside a name stay
  CHECK(detail::list_item_key("a.b2.c") == "a.b2.c");
  REQUIRE(detail::bound_for("model.layers[41].padding") != nullptr);
  CHECK(detail::bound_for("model.layers[41].padding") == detail::bound_for("layers[].padding"));
  CHECK(detail::bound_problem("training.batch_ramp.0.global_batch_tokens", 1e300).find("from 1 to 1e+12") !=
        std::string::npos);
  CHECK(detail::bound_problem("training.batch_ramp.0.global_batch_tokens", 4e6).empty());
}

TEST_CASE("A key or value that is not UTF-8 is refused with its position — a comment may hold any bytes") {
  SourceLoc at{"f.yaml", 0, 0};
  const auto problem = detail::check_yaml_shape("a: 1\nname: x\xFFy\n", &at);
  REQUIRE(problem);
  CHECK(problem->find("not UTF-8") != std::string::npos);
  CHECK(problem->find("0xFF") != std::string::npos);
  CHECK(at.line == 2);
  CHECK(at.column == 7);
  CHECK_FALSE(detail::check_yaml_shape("# caf\xE9 in Latin-1\nname: x\n", &at));
  const auto errors = set_errors("name=a\xFE");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("name") != std::string::npos);
  CHECK(errors[0].find("not UTF-8") != std::string::npos);
}

TEST_CASE("A byte-order mark or NUL that would make yaml-cpp read UTF-16 or UTF-32 is refused at its position",
          "[hostile]") {
  // yaml-cpp guesses the encoding from the first bytes and converts: FF FE read as UTF-16LE
  // turned "n\0a\0m\0e\0:\0 \0x\0" into "name: x". Refused before the parser sees it.
  SourceLoc at{"f.yaml", 0, 0};
  const std::string utf16le("\xFF\xFEn\0a\0m\0e\0:\0 \0x\0\n\0", 18);
  const auto bom = detail::check_yaml_shape(utf16le, &at);
  REQUIRE(bom);
  CHECK(bom->find("not UTF-8 text (byte 0xFF at offset 0") != std::string::npos);
  CHECK(bom->find("UTF-16") != std::string::npos);
  CHECK(at.line == 1);
  CHECK(at.column == 1);
  CHECK(detail::check_yaml_shape("\xFE\xFFname: x\n", &at));  // UTF-16BE's mark
  // "x NUL" at the start is UTF-16LE to yaml-cpp even without a mark; a NUL anywhere is no YAML text.
  const auto nul = detail::check_yaml_shape(std::string("a: 1\nname: x\0y\n", 15), &at);
  REQUIRE(nul);
  CHECK(nul->find("is a NUL") != std::string::npos);
  CHECK(at.line == 2);
  CHECK(at.column == 8);
  CHECK(detail::check_yaml_shape(std::string("n\0a\0", 4), &at));
  // A UTF-8 byte-order mark is UTF-8: read as before.
  CHECK_FALSE(detail::check_yaml_shape("\xEF\xBB\xBFname: x\n", &at));
  // A --set value: the same check, naming its key.
  const auto errors = set_errors("run.steps=\xFF\xFE" "1");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("run.steps") != std::string::npos);
  CHECK(errors[0].find("UTF-16") != std::string::npos);
}
