// `ironlaw keys` and docs/scenario-keys.md: the reference of the scenario keys comes from the
// loader's own reading code, covers every key the loader accepts, and the checked-in document
// is the one the binary generates today.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "config/layer_model.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"

using namespace ironlaw::cli_test;
using ironlaw::config::KeyInfo;

namespace {

/// Every key path written in `node` under `prefix`, as `ironlaw keys` names them: a mapping is
/// a section and each of its keys, a { value, source } pair is the key it sits under, the
/// mappings of a list are walked as KEY[].NAME, and anything else is a value.
void written_keys(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
  const auto child = [&](const std::string& name) { return prefix.empty() ? name : prefix + "." + name; };
  if (!prefix.empty()) out.insert(prefix);
  if (node.IsMap()) {
    const YAML::Node& view = node;
    if (node.size() == 2 && view["value"] && view["source"]) return;
    for (const auto& e : node) written_keys(e.second, child(e.first.Scalar()), out);
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsMap()) continue;
      for (const auto& e : item) written_keys(e.second, prefix + "[]." + e.first.Scalar(), out);
    }
  }
}

std::vector<std::string> yaml_files(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(repo_path(folder))) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

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
    // Sections hold keys, they are not values; a list item's key is set with its list.
    if (type != "section" && key.find("[]") == std::string::npos) listed.push_back(key);
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

TEST_CASE("every key written in a shipped scenario, topology or model card is listed by ironlaw keys", "[cli][keys]") {
  // The other direction of the first test: the keys real files use, walked from the files
  // themselves (each scenario with its includes inlined as the loader resolved them, each
  // topology, device profile and model card as it would sit in a scenario), all appear in the
  // binary's listing. This covers the optional sections (fabric.pod) and the layer-list cards.
  TempDir tmp;
  const Outcome o = run_ironlaw({"keys", "--csv"}, tmp.path());
  REQUIRE(o.exit_code == 0);
  std::set<std::string> listed;
  for (const auto& line : lines_of(o.out)) listed.insert(line.substr(0, line.find(',')));

  std::set<std::string> written;
  std::size_t scenarios = 0;
  for (const auto& file : yaml_files("scenarios")) {
    INFO(file);
    const auto sc = ironlaw::config::load_scenario(file);
    written_keys(YAML::Load(sc.resolved_yaml), "", written);
    ++scenarios;
  }
  // Each file also loads on its own: its numbers carry their units.
  for (const auto& file : yaml_files("models")) {
    INFO(file);
    if (ironlaw::config::is_layer_model(file)) {
      CHECK_NOTHROW(ironlaw::config::load_layer_model(file));
    } else {
      CHECK_NOTHROW(ironlaw::config::load_model(file));
    }
    written_keys(YAML::LoadFile(file), "model", written);
  }
  for (const auto& file : yaml_files("topologies")) {
    INFO(file);
    const YAML::Node root = YAML::LoadFile(file);
    if (root["fabric"]) CHECK_NOTHROW(ironlaw::config::load_topology(file));
    if (root["fabric"]) written_keys(root, "cluster.topology", written);
    if (root["peak_flops"]) written_keys(root, "cluster.topology.device", written);
  }
  CHECK(scenarios >= 30);
  for (const char* key : {"cluster.topology.fabric.pod.nodes", "cluster.topology.fabric.pod.spine_core.bandwidth",
                          "model.architecture", "model.layers[].kind", "model.layers[].repeat"}) {
    INFO(key);
    CHECK(written.count(key) == 1);  // the files do exercise the optional sections
  }
  for (const auto& key : written) {
    INFO(key);
    CHECK(listed.count(key) == 1);
  }
}

TEST_CASE("a key of a list item is listed but cannot be set alone", "[cli][keys]") {
  const auto table = ironlaw::config::scenario_key_table();
  CHECK(find_key(table, "training.batch_ramp[].until_tokens").required);
  CHECK(find_key(table, "model.layers[].kind").choices.size() > 10);
  const auto settable = ironlaw::config::scenario_keys();
  CHECK(std::none_of(settable.begin(), settable.end(),
                     [](const std::string& k) { return k.find("[]") != std::string::npos; }));
  TempDir tmp;
  const Outcome o = run_ironlaw({"run", repo_path("scenarios/gpt2-ddp-1node.yaml"), "--set",
                                 "training.batch_ramp[].until_tokens=5"},
                                tmp.path());
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("set the whole list, e.g. --set 'training.batch_ramp=[...]'") != std::string::npos);
}
