// `ironlaw keys` and docs/scenario-keys.md: the reference of the scenario keys comes from the
// loader's own reading code, covers every key the loader accepts, and the checked-in document
// is the one the binary generates today.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"

using namespace ironlaw::cli_test;
using ironlaw::config::KeyInfo;

namespace {

const KeyInfo& find_key(const std::vector<KeyInfo>& table, const std::string& key) {
  const auto it = std::find_if(table.begin(), table.end(), [&](const KeyInfo& k) { return k.key == key; });
  REQUIRE(it != table.end());
  return *it;
}

}  // namespace

TEST_CASE("ironlaw keys lists exactly the keys the loader accepts", "[cli][keys]") {
  // The loader's list (what --set and --vary accept) against the binary's CSV, row by row.
  std::vector<std::string> accepted = ironlaw::config::scenario_keys();
  std::sort(accepted.begin(), accepted.end());
  REQUIRE(accepted.size() > 100);

  TempDir tmp;
  const Outcome o = run_ironlaw({"keys", "--csv"}, tmp.path());
  REQUIRE(o.exit_code == 0);
  const auto lines = lines_of(o.out);
  REQUIRE(lines.front() == "key,type,unit,default,bounds,choices,required,meaning");
  std::vector<std::string> listed;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string key = lines[i].substr(0, lines[i].find(','));
    const std::string type = csv_fields(lines[i]).at(1);
    if (type != "section") listed.push_back(key);  // sections hold keys; they are not values
  }
  std::sort(listed.begin(), listed.end());
  CHECK(listed == accepted);
}

TEST_CASE("every scenario key has a meaning and every documented pattern names a key", "[cli][keys]") {
  const auto table = ironlaw::config::scenario_key_table();
  for (const auto& k : table) {
    INFO(k.key);
    CHECK_FALSE(k.meaning.empty());
    CHECK_FALSE(k.type.empty());
  }
  for (const auto& pattern : ironlaw::config::documented_key_patterns()) {
    INFO(pattern);
    const bool used = std::any_of(table.begin(), table.end(), [&](const KeyInfo& k) {
      return k.key == pattern || (k.key.size() > pattern.size() &&
                                  k.key.compare(k.key.size() - pattern.size(), pattern.size(), pattern) == 0 &&
                                  k.key[k.key.size() - pattern.size() - 1] == '.');
    });
    CHECK(used);
  }
}

TEST_CASE("key types, defaults, units and bounds are the loader's", "[cli][keys]") {
  const auto table = ironlaw::config::scenario_key_table();
  // Defaults of config/spec.hpp, bounds of key_bounds() (validate.cpp), units of the dimension
  // each key is read with.
  const KeyInfo& tp = find_key(table, "parallel.tp");
  CHECK(tp.type == "integer");
  CHECK(tp.default_value == "1");
  CHECK(tp.bounds == "1 to 1.04858e+06");
  const KeyInfo& seq = find_key(table, "training.sequence_length");
  CHECK(seq.default_value == "2048");
  const KeyInfo& bucket = find_key(table, "parallel.bucket_size");
  CHECK(bucket.type == "number");
  CHECK(bucket.unit == "B");
  CHECK(bucket.default_value == "2.62144e+07");  // 25 MiB, PyTorch's default bucket
  const KeyInfo& nodes = find_key(table, "cluster.nodes");
  CHECK(nodes.required);
  const KeyInfo& collectives = find_key(table, "run.collectives");
  CHECK(collectives.choices == std::vector<std::string>{"fluid", "stepped"});
  CHECK(collectives.default_value == "fluid");
  const KeyInfo& nic = find_key(table, "cluster.topology.node.nic.bandwidth");
  CHECK(nic.unit == "B/s");
  CHECK(nic.sourced);
  const KeyInfo& storage = find_key(table, "data.storage_bandwidth_per_node");
  CHECK(storage.bounds == "0 or 1e+06 to 1e+20");
  const KeyInfo& interval = find_key(table, "reliability.checkpoint.interval");
  CHECK(interval.type == "duration");
  CHECK(interval.unit == "s");
  CHECK(find_key(table, "data.loader.decode_time.mean").unit == "s");
}

TEST_CASE("docs/scenario-keys.md is what ironlaw keys --markdown generates today", "[cli][keys][docs]") {
  TempDir tmp;
  const Outcome o = run_ironlaw({"keys", "--markdown"}, tmp.path());
  REQUIRE(o.exit_code == 0);
  const std::string checked_in = read_file(repo_path("docs/scenario-keys.md"));
  INFO("regenerate with: build/ironlaw keys --markdown > docs/scenario-keys.md");
  CHECK(checked_in == o.out);
}

TEST_CASE("ironlaw keys PREFIX lists the keys under it and refuses an unknown prefix", "[cli][keys]") {
  TempDir tmp;
  const Outcome o = run_ironlaw({"keys", "parallel"}, tmp.path());
  REQUIRE(o.exit_code == 0);
  CHECK(o.out.find("parallel.pp_schedule\n") != std::string::npos);
  CHECK(o.out.find("training.") == std::string::npos);
  const Outcome bad = run_ironlaw({"keys", "paralel"}, tmp.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("did you mean \"parallel") != std::string::npos);
}
