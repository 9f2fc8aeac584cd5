// `ironlaw keys` and docs/scenario-keys.md: the reference of the scenario keys comes from the
// loader's own reading code, covers every key the loader accepts, and the checked-in document
// is the one the binary generates today.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "config/failures.hpp"
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
    // Sections hold keys, they are not values; a list item's key is set with its list; the
    // failures. keys belong to the failure-rate file (their own test below).
    if (type != "section" && key.find("[]") == std::string::npos && key.rfind("failures.", 0) != 0)
      listed.push_back(key);
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

TEST_CASE("ironlaw keys failures lists the failure-rate file's keys, and every key a shipped one writes",
          "[cli][keys]") {
  TempDir tmp;
  const Outcome o = run_ironlaw({"keys", "failures", "--csv"}, tmp.path());
  REQUIRE(o.exit_code == 0);
  std::set<std::string> listed;
  const auto lines = lines_of(o.out);
  for (std::size_t i = 1; i < lines.size(); ++i) listed.insert(lines[i].substr(0, lines[i].find(',')));
  CHECK(listed.count("failures.causes.CAUSE.per_1000_node_days") == 1);
  CHECK(std::none_of(listed.begin(), listed.end(), [](const std::string& k) { return k.rfind("failures.", 0) != 0; }));

  // Every key of every shipped failure-rate file, a cause's name read as CAUSE.
  std::size_t files = 0;
  std::set<std::string> causes_seen;
  for (const auto& file : yaml_files("topologies")) {
    if (std::filesystem::path(file).filename().string().rfind("failure-rates-", 0) != 0) continue;
    INFO(file);
    CHECK_NOTHROW(ironlaw::config::load_failures(file));
    std::set<std::string> written;
    written_keys(YAML::LoadFile(file), "failures", written);
    written.erase("failures");  // the document itself, not a key
    for (std::string key : written) {
      const std::string causes = "failures.causes.";
      if (key.rfind(causes, 0) == 0) {
        const auto dot = key.find('.', causes.size());
        const std::string cause = key.substr(causes.size(), dot == std::string::npos ? std::string::npos : dot - causes.size());
        CHECK(std::count(ironlaw::config::kFailureCauses.begin(), ironlaw::config::kFailureCauses.end(), cause) == 1);
        causes_seen.insert(cause);
        key = causes + "CAUSE" + (dot == std::string::npos ? "" : key.substr(dot));
      }
      INFO(key);
      CHECK(listed.count(key) == 1);
    }
    ++files;
  }
  CHECK(files >= 2);
  CHECK(causes_seen.size() >= 5);

  const auto table = ironlaw::config::failure_key_table();
  CHECK(find_key(table, "failures.causes").choices == ironlaw::config::kFailureCauses);
  CHECK(find_key(table, "failures.source").required);
  CHECK(find_key(table, "failures.observation.duration").unit == "s");
  CHECK(find_key(table, "failures.causes.CAUSE.detection").choices == std::vector<std::string>{"crash", "hang", "planned"});
  CHECK(find_key(table, "failures.causes.CAUSE.count").sourced);
  for (const auto& k : table) {
    INFO(k.key);
    CHECK_FALSE(k.meaning.empty());
  }
}

TEST_CASE("a failure-rate file written with every listed key loads", "[cli][keys]") {
  // Each leaf of the listing once (count and per_1000_node_days on two causes: a cause takes
  // one of them), each number with the unit the listing gives it.
  TempDir tmp;
  const std::string path = (tmp.path() / "every-key.yaml").string();
  {
    std::ofstream out(path);
    out << "name: every-key\nsource: \"test\"\n"
        << "observation:\n  nodes: {value: 2048, source: \"test\"}\n  duration: {value: 54 d, source: \"test\"}\n"
        << "causes:\n"
        << "  gpu: {count: {value: 148, source: \"test\"}, detection: crash, distribution: weibull, shape: 0.8}\n"
        << "  software: {per_1000_node_days: {value: 0.5, source: \"test\"}, detection: hang, distribution: exponential}\n";
  }
  std::set<std::string> written;
  written_keys(YAML::LoadFile(path), "failures", written);
  std::set<std::string> leaves;
  for (const auto& k : ironlaw::config::failure_key_table())
    if (k.type != "section") leaves.insert(k.key);
  for (const auto& leaf : leaves) {
    INFO(leaf);
    const std::string stem = "failures.causes.CAUSE";
    std::vector<std::string> forms{leaf};
    if (leaf.rfind(stem, 0) == 0)
      forms = {"failures.causes.gpu" + leaf.substr(stem.size()), "failures.causes.software" + leaf.substr(stem.size())};
    CHECK(std::any_of(forms.begin(), forms.end(), [&](const std::string& f) { return written.count(f) == 1; }));
  }
  const auto spec = ironlaw::config::load_failures(path);
  REQUIRE(spec.causes.size() == 2);
  // 148 interruptions over 2,048 nodes × 54 days.
  CHECK(spec.causes[0].rate_per_node_s == Approx(148.0 / (2048 * 54 * 86400.0)).epsilon(1e-12));
  CHECK(spec.causes[1].rate_per_node_s == Approx(0.5 / 1000 / 86400.0).epsilon(1e-12));
}
