// `ironlaw keys [PREFIX]`: every scenario key with its type, unit, default, bounds and meaning,
// from the loader's own table (config/schema.hpp), then the keys of failure-rate files (prefix
// "failures."); --markdown writes docs/scenario-keys.md.
#include <boost/program_options.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/machine_output.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"
#include "core/error.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// True when `key` is `prefix` or lies under it ("parallel" matches parallel.tp, not parallelism).
bool under(const std::string& key, const std::string& prefix) {
  if (prefix.empty()) return true;
  if (key.rfind(prefix, 0) != 0) return false;
  return key.size() == prefix.size() || key[prefix.size()] == '.' || prefix.back() == '.';
}

std::string choices_text(const config::KeyInfo& k) {
  std::string out;
  for (std::size_t i = 0; i < k.choices.size(); ++i) out += (i ? "|" : "") + k.choices[i];
  return out;
}

}  // namespace

int cmd_keys(const Args& args) {
  po::options_description opts(
      "ironlaw keys [PREFIX] [options]\n"
      "  every scenario key (under PREFIX, e.g. parallel or cluster.topology.node) with its type,\n"
      "  unit, default, bounds and meaning, read from the loader's own table; then the keys of the\n"
      "  failure-rate files reliability.failures names (PREFIX failures)");
  std::string prefix;
  opts.add_options()
      ("help,h", "show this help")
      ("prefix", po::value(&prefix), "only the keys under this dotted prefix")
      ("markdown", "print docs/scenario-keys.md (all keys) instead of the listing")
      ("csv", "print the keys as CSV (key,type,unit,default,bounds,choices,required,meaning)")
      ("json", "print the keys as a JSON list of objects");
  po::variables_map vm;
  if (!parse_command_line(args, opts, "prefix", vm)) return kExitOk;
  if (vm.count("csv") + vm.count("json") + vm.count("markdown") > 1)
    throw InputError({}, "--csv", "give one of --csv, --json, --markdown");
  if (vm.count("markdown")) {
    if (!prefix.empty()) throw InputError({}, "PREFIX", "--markdown lists every key; drop the prefix");
    std::fputs(config::scenario_keys_markdown().c_str(), stdout);
    return kExitOk;
  }
  // The scenario's keys, then those of the failure-rate file it may name (prefix "failures.").
  std::vector<config::KeyInfo> all = config::scenario_key_table();
  for (auto& k : config::failure_key_table()) all.push_back(std::move(k));
  std::vector<config::KeyInfo> keys;
  for (const auto& k : all)
    if (under(k.key, prefix)) keys.push_back(k);
  if (keys.empty()) {
    std::vector<std::string> names;
    for (const auto& k : all) names.push_back(k.key);
    const std::string hint = config::did_you_mean(prefix, names);
    throw InputError({}, "PREFIX", "no scenario key under \"" + prefix + "\"" +
                                       (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
  }
  if (vm.count("csv")) {
    std::printf("key,type,unit,default,bounds,choices,required,meaning\n");
    for (const auto& k : keys) {
      std::printf("%s,%s,%s,%s,%s,%s,%s,%s\n", csv_field(k.key).c_str(), csv_field(k.type).c_str(),
                  csv_field(k.unit).c_str(), csv_field(k.default_value).c_str(), csv_field(k.bounds).c_str(),
                  csv_field(choices_text(k)).c_str(), k.required ? "true" : "false", csv_field(k.meaning).c_str());
    }
    return kExitOk;
  }
  if (vm.count("json")) {
    std::string out = "[";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto& k = keys[i];
      out += i ? ",\n " : "";
      out += "{\"key\": " + json_string(k.key) + ", \"type\": " + json_string(k.type) + ", \"unit\": " +
             json_string(k.unit) + ", \"default\": " + json_string(k.default_value) + ", \"bounds\": " +
             json_string(k.bounds) + ", \"choices\": [";
      for (std::size_t c = 0; c < k.choices.size(); ++c) out += (c ? ", " : "") + json_string(k.choices[c]);
      out += "], \"required\": " + std::string(k.required ? "true" : "false") + ", \"sourced\": " +
             (k.sourced ? "true" : "false") + ", \"meaning\": " + json_string(k.meaning) + "}";
    }
    out += "]\n";
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  }
  for (const auto& k : keys) {
    std::string type = k.type;
    if (!k.choices.empty()) type += " (" + choices_text(k) + ")";
    if (k.sourced) type += ", { value, source }";
    std::printf("%s\n  %s\n  type %s", k.key.c_str(), k.meaning.c_str(), type.c_str());
    if (!k.unit.empty() && k.unit != "1") std::printf(", unit %s", k.unit.c_str());
    if (k.required) {
      std::printf(", required");
    } else if (!k.default_value.empty()) {
      std::printf(", default %s%s", k.default_value.c_str(),
                  !k.unit.empty() && k.unit != "1" ? (" " + k.unit).c_str() : "");
    }
    if (!k.bounds.empty()) std::printf(", bounds %s", k.bounds.c_str());
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace ironlaw::cli
