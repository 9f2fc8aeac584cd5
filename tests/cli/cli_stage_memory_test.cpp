// `ironlaw run` with pipeline parallelism: every stage's memory peaks in the text summary, in
// --json ("memory_by_stage") and in the HDF5 file (/run/memory_by_stage), the same numbers.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "cli_harness.hpp"
#include "output/h5_reader.hpp"

using namespace ironlaw::cli_test;
using ironlaw::output::H5Reader;

TEST_CASE("run reports every pipeline stage's memory in its text, JSON and HDF5 outputs alike",
          "[cli][run][memory][pipeline]") {
  TempDir dir;
  // tests/run/data/pipeline.yaml (pp 4, 1F1B) with PyTorch's allocator rules, so that each
  // stage's step is replayed.
  const std::vector<std::string> common{"run", repo_path("tests/run/data/pipeline.yaml"), "--set",
                                        "cluster.topology.device.memory_allocator=" +
                                            repo_path("topologies/pytorch-caching-allocator.yaml")};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const Outcome text = run_ironlaw(with({"-o", "t.h5"}), dir.path());
  const Outcome json = run_ironlaw(with({"-o", "j.h5", "--json"}), dir.path());
  INFO(text.out << text.err << json.out << json.err);
  REQUIRE(text.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  CHECK(text.out.find("reserved by pipeline stage (GiB):\n  stages   0-3  ") != std::string::npos);

  const auto table = H5Reader(dir.path() / "t.h5").read_table("memory_by_stage");
  REQUIRE(table.size() == 3);
  CHECK(table[0].name == "stage");
  CHECK(std::get<std::vector<std::int64_t>>(table[0].values) == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(table[1].name == "reserved_bytes");
  CHECK(table[1].unit == "B");
  CHECK(table[2].name == "allocated_bytes");
  const auto& reserved = std::get<std::vector<double>>(table[1].values);
  const auto& allocated = std::get<std::vector<double>>(table[2].values);
  // JSON numbers carry 17 significant digits: each reads back to the file's double.
  std::size_t at = json.out.find("\"memory_by_stage\": [");
  REQUIRE(at != std::string::npos);
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    at = json.out.find("{\"reserved\": ", at) + 13;
    CHECK(number(json.out.substr(at, json.out.find(',', at) - at)) == reserved[s]);
    at = json.out.find("\"allocated\": ", at) + 13;
    CHECK(number(json.out.substr(at, json.out.find('}', at) - at)) == allocated[s]);
    CHECK(reserved[s] >= allocated[s]);
  }
  // Without a pipeline there is one stage and no table.
  const Outcome flat = run_ironlaw(with({"-o", "f.h5", "--set", "parallel.pp=1", "--set", "parallel.dp=4"}), dir.path());
  REQUIRE(flat.exit_code == 0);
  CHECK(flat.out.find("reserved by pipeline stage") == std::string::npos);
  CHECK_FALSE(H5Reader(dir.path() / "f.h5").has("/run/memory_by_stage"));
}
