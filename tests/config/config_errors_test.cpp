#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::errors_of;
using Errors = std::vector<std::string>;

namespace {

Errors scenario_errors(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return errors_of([&] { load_scenario(data(file), overrides); });
}

const std::string kNeedsSource = "expected { value, source } \xE2\x80\x94 every hardware constant needs its source";

}  // namespace

TEST_CASE("every problem in a scenario is reported, each at its key", "[errors]") {
  CHECK(scenario_errors("bad_values.yaml") ==
        Errors{"bad_values.yaml:3:1: cluster.nodes: missing required key",
               "bad_values.yaml:5:3: cluster.nodez: unknown key; did you mean \"nodes\"?",
               "bad_values.yaml:9:16: parallel.bucket_size: expected a size like \"80 GiB\", got \"25 MB/s\", which is "
               "a bandwidth",
               "bad_values.yaml:11:20: training.sequence_length: must be positive, got \"-1024\""});
}

TEST_CASE("the error message reads file:line:column: key: message", "[errors]") {
  try {
    load_scenario(data("bad_values.yaml"));
    FAIL("no error");
  } catch (const InputError& e) {
    const Diagnostic& d = e.diagnostics().at(2);
    CHECK(d.where.file == data("bad_values.yaml"));
    CHECK(d.where.line == 9);
    CHECK(d.where.column == 16);
    CHECK(d.key == "parallel.bucket_size");
    CHECK(std::string(e.what()).find(data("bad_values.yaml") + ":11:20: training.sequence_length: ") !=
          std::string::npos);
  }
}

TEST_CASE("a layout that does not divide the GPUs is an error at the layout key", "[errors][layout]") {
  CHECK(scenario_errors("layout.yaml") ==
        Errors{"layout.yaml:9:7: parallel.dp: tp*pp*cp*dp = 2*3*1*3 = 18 does not equal the 16 GPUs (2 nodes x 8 "
               "GPUs per node)"});
  CHECK(scenario_errors("basic.yaml", {"parallel.tp=3"}) ==
        Errors{"--set: parallel.tp: tp*pp*cp = 3*2*1 = 6 does not divide the 16 GPUs (2 nodes x 8 GPUs per node)",
               "--set: parallel.tp: must divide model.heads (8), got 3"});
  CHECK(scenario_errors("basic.yaml", {"parallel.pp=4", "parallel.tp=1"}) == Errors{"(no error)"});
  CHECK(scenario_errors("basic.yaml", {"parallel.pp=8", "parallel.tp=1"}) ==
        Errors{"--set: parallel.pp: must not exceed model.layers + 2 (6: the first and last stage may hold only the "
               "embedding and only the LM head), got 8"});
}

TEST_CASE("a global batch that does not split into sequences and microbatches is an error", "[errors][layout]") {
  CHECK(scenario_errors("batch.yaml") ==
        Errors{"batch.yaml:7:24: training.global_batch_tokens: 12000 tokens = 12 sequences of 1000, not a multiple "
               "of dp*microbatch_size = 4*2 = 8"});
  CHECK(scenario_errors("batch.yaml", {"training.global_batch_tokens=12500"}) ==
        Errors{"--set: training.global_batch_tokens: must be a multiple of training.sequence_length (1000), got "
               "12500"});
}

TEST_CASE("model shape checks against the layout", "[errors][layout]") {
  CHECK(scenario_errors("basic.yaml", {"model.hidden=250"}) ==
        Errors{"--set: model.hidden: must be a multiple of heads (8), got 250"});
  CHECK(scenario_errors("basic.yaml", {"model.kv_heads=3"}) ==
        Errors{"--set: model.kv_heads: must divide heads (8), got 3"});
  CHECK(scenario_errors("basic.yaml", {"parallel.zero=4", "parallel.pp_schedule=2f2b"}) ==
        Errors{"--set: parallel.zero: expected 0, 1, 2 or 3, got 4",
               "--set: parallel.pp_schedule: expected one of gpipe, 1f1b, interleaved, zb-h1; got \"2f2b\"; did you mean "
               "\"1f1b\"?"});
  CHECK(scenario_errors("basic.yaml", {"training.precision=fp8"}) ==
        Errors{"--set: training.precision: the device Test GPU gives no peak_flops for fp8"});
}

TEST_CASE("a pipeline runtime is megatron, torch or deepspeed, and needs pipeline parallelism", "[errors][layout]") {
  CHECK(scenario_errors("basic.yaml", {"parallel.pp_runtime=torch"}) == Errors{"(no error)"});
  CHECK(scenario_errors("basic.yaml", {"parallel.pp_runtime=deepspeed"}) == Errors{"(no error)"});
  CHECK(scenario_errors("basic.yaml", {"parallel.pp_runtime=gpipe"}) ==
        Errors{"--set: parallel.pp_runtime: expected one of megatron, torch, deepspeed; got \"gpipe\""});
  CHECK(scenario_errors("basic.yaml", {"parallel.pp=1", "parallel.pp_runtime=torch"}) ==
        Errors{"--set: parallel.pp_runtime: a pipeline runtime needs pipeline parallelism; expected parallel.pp > 1, "
               "got 1"});
}

TEST_CASE("malformed YAML is an error at its position", "[errors][yaml]") {
  CHECK(scenario_errors("malformed_bracket.yaml") ==
        Errors{"malformed_bracket.yaml:3:10: invalid YAML: unclosed '[' (flow sequence): expected ']'"});
  CHECK(scenario_errors("malformed_indent.yaml") ==
        Errors{"malformed_indent.yaml:4:2: invalid YAML: end of map not found"});
  CHECK(scenario_errors("malformed_tab.yaml") ==
        Errors{"malformed_tab.yaml:4:1: invalid YAML: tab character in indentation (YAML indents with spaces only)"});
}

TEST_CASE("an unclosed flow bracket is an error at the bracket, not where the parser gave up", "[errors][yaml]") {
  CHECK(scenario_errors("malformed_nested_bracket.yaml") ==
        Errors{"malformed_nested_bracket.yaml:3:10: invalid YAML: unclosed '[' (flow sequence): expected ']'"});
  CHECK(scenario_errors("malformed_brace.yaml") ==
        Errors{"malformed_brace.yaml:4:11: invalid YAML: unclosed '{' (flow mapping): expected '}'"});
}

TEST_CASE("an unterminated quote is an error at the opening quote, and the only one", "[errors][yaml]") {
  CHECK(scenario_errors("malformed_quote.yaml") ==
        Errors{"malformed_quote.yaml:4:14: training.precision: invalid YAML: unterminated quoted string (a closing \" "
               "is missing)"});
  CHECK(scenario_errors("malformed_quote_closed_later.yaml") ==
        Errors{"malformed_quote_closed_later.yaml:1:7: invalid YAML: unterminated quoted string (a closing ' is "
               "missing)"});
}

TEST_CASE("a quoted value continued on the next line is valid YAML", "[errors][yaml]") {
  CHECK(scenario_errors("multiline_quote.yaml") == Errors{"(no error)"});
}

TEST_CASE("a missing file is an error naming it", "[errors]") {
  CHECK(scenario_errors("missing_include.yaml") ==
        Errors{"missing_include.yaml:2:8: model: cannot read \"" + data("no_such_model.yaml") + "\": no such file"});
  CHECK(scenario_errors("no_such_scenario.yaml") ==
        Errors{"no_such_scenario.yaml: cannot read \"" + data("no_such_scenario.yaml") + "\": no such file"});
  CHECK(scenario_errors("basic.yaml", {"reliability.failures=nope.yaml"}) ==
        Errors{"--set: reliability.failures: cannot read \"" + data("nope.yaml") + "\": no such file"});
}

TEST_CASE("a hardware constant without a source is an error", "[errors][topology]") {
  CHECK(scenario_errors("bare_scenario.yaml") ==
        Errors{"topo_bare.yaml:4:9: cluster.topology.node.gpus: " + kNeedsSource,
               "topo_bare.yaml:8:9: cluster.topology.node.nics.source: missing required key",
               "topo_bare.yaml:9:75: cluster.topology.node.nic.latency: must not be negative, got \"-2 us\"",
               "topo_bare.yaml:12:37: cluster.topology.fabric.leaf_spine.bandwidth: expected a bandwidth like \"400 "
               "Gbit/s\", got \"400 GB\", which is a size"});
  CHECK(errors_of([] { load_topology(data("topo_bare.yaml")); }).front() ==
        "topo_bare.yaml:4:9: node.gpus: " + kNeedsSource);
}

TEST_CASE("override keys are checked against the scenario keys", "[errors][overrides]") {
  CHECK(scenario_errors("basic.yaml", {"cluster.nodez=4", "nodes=4", "parallel.tpp=2", "frobnicate=1"}) ==
        Errors{"--set: cluster.nodez: unknown key; did you mean \"cluster.nodes\"?",
               "--set: nodes: unknown key; did you mean \"cluster.nodes\"?",
               "--set: parallel.tpp: unknown key; did you mean \"parallel.tp\"?", "--set: frobnicate: unknown key"});
  CHECK(scenario_errors("basic.yaml", {"cluster.nodes"}) == Errors{"--set: expected KEY=VALUE, got \"cluster.nodes\""});
  CHECK(scenario_errors("basic.yaml", {"parallel.order=[tp, cp"}) ==
        Errors{"--set: parallel.order: invalid value: end of sequence flow not found"});
  CHECK(scenario_errors("basic.yaml", {"cluster.nodes=-1", "cluster.topology.node.nic.bandwidth=400 GB"}) ==
        Errors{"--set: cluster.topology.node.nic.bandwidth: expected a bandwidth like \"400 Gbit/s\", got \"400 "
               "GB\", which is a size",
               "--set: cluster.nodes: must be positive, got \"-1\""});
  CHECK(scenario_errors("basic.yaml", {"parallel.order=[tp, pp, pp, xp]"}) ==
        Errors{"--set: parallel.order: pp appears twice",
               "--set: parallel.order: unknown dimension \"xp\"; expected tp, cp, pp or dp"});
}

TEST_CASE("model card problems are all reported", "[errors][model]") {
  CHECK(errors_of([] { load_model(data("bad_model.yaml")); }) ==
        Errors{"bad_model.yaml:1:1: layers: missing required key",
               "bad_model.yaml:8:13: activation: expected one of gelu, swiglu, squared_relu; got \"relu\"; did you mean \"gelu\"?",
               "bad_model.yaml:10:11: published.params: " + kNeedsSource,
               "bad_model.yaml:2:1: layres: unknown key; did you mean \"layers\"?",
               "bad_model.yaml:3:9: hidden: must be a multiple of heads (8), got 250",
               "bad_model.yaml:6:11: kv_heads: must divide heads (8), got 3"});
}

TEST_CASE("input pipeline keys: a decode time needs its unit — empirical needs samples — a slow loader needs full detail",
          "[errors][data]") {
  // basic.yaml line 26: "    decode_time: { distribution: lognormal, mean: 2 ms, cv: 0.5 }"
  const auto bare = scenario_errors("basic.yaml", {"data.loader.decode_time.mean=0.002"});
  REQUIRE(bare.size() == 1);
  // 0.002 read as seconds is 2 ms: both forms are suggested, as --set takes them.
  CHECK(bare[0].find("--set: data.loader.decode_time.mean: 0.002 has no unit; write "
                     "--set 'data.loader.decode_time.mean=0.002 s' or --set 'data.loader.decode_time.mean=2 ms'") !=
        std::string::npos);
  CHECK(scenario_errors("basic.yaml", {"data.loader.decode_time.mean=2 ms"}) == Errors{"(no error)"});

  const auto empirical = scenario_errors("basic.yaml", {"data.loader.decode_time.distribution=empirical"});
  REQUIRE(empirical.size() == 1);
  CHECK(empirical[0].find("an empirical distribution needs samples") != std::string::npos);
  CHECK(scenario_errors("basic.yaml", {"data.loader.decode_time.distribution=empirical",
                                       "data.loader.decode_time.samples=[1 ms, 3 ms]"}) == Errors{"(no error)"});
  const auto bare_sample = scenario_errors(
      "basic.yaml", {"data.loader.decode_time.distribution=empirical", "data.loader.decode_time.samples=[1 ms, 3]"});
  REQUIRE(bare_sample.size() == 1);
  CHECK(bare_sample[0].find("samples: 3 has no unit; write 3 s") != std::string::npos);

  const auto slow = scenario_errors("basic.yaml", {"data.loader.slow_loader.gpu=1"});
  REQUIRE(slow.size() == 1);
  CHECK(slow[0].find("data.loader.slow_loader.gpu: one slow loader makes the data-parallel replicas differ; it "
                     "needs run.detail: full") != std::string::npos);
  CHECK(scenario_errors("basic.yaml", {"data.loader.slow_loader.gpu=1", "run.detail=full"}) == Errors{"(no error)"});
  const auto outside = scenario_errors("basic.yaml", {"data.loader.slow_loader.gpu=100000", "run.detail=full"});
  REQUIRE(outside.size() == 1);
  CHECK(outside[0].find("must be a GPU index below") != std::string::npos);
}

TEST_CASE("a dimensioned number without its unit is refused where it is written, with the forms that would be read",
          "[errors][units]") {
  // no_units.yaml: a bare 26214400 for a size (25 MiB exactly), 0.5 for a time, 1800 for an
  // interval; 0 needs no unit (storage_bandwidth_per_node: 0), nor do counts (cv: 0.5).
  CHECK(scenario_errors("no_units.yaml") ==
        Errors{"no_units.yaml:8:16: parallel.bucket_size: 26214400 has no unit; write 26214400 B or 25 MiB",
               "no_units.yaml:15:51: data.loader.decode_time.mean: 0.5 has no unit; write 0.5 s or 500 ms",
               "no_units.yaml:17:27: reliability.checkpoint.interval: 1800 has no unit; write 1800 s or 30 min"});
  // From the command line the message shows the --set that would be read; hardware constants
  // ({ value, source }) take the same check.
  const auto set = scenario_errors("basic.yaml", {"cluster.topology.node.nvlink.bandwidth=1e18"});
  REQUIRE(set.size() == 1);
  CHECK(set[0] ==
        "--set: cluster.topology.node.nvlink.bandwidth: 1e18 has no unit; write "
        "--set 'cluster.topology.node.nvlink.bandwidth=1e18 B/s' or --set 'cluster.topology.node.nvlink.bandwidth=1 EB/s'");
  CHECK(scenario_errors("basic.yaml", {"cluster.topology.node.nvlink.bandwidth=1e18 B/s"}) == Errors{"(no error)"});
  CHECK(scenario_errors("basic.yaml", {"data.storage_bandwidth_per_node=0"}) == Errors{"(no error)"});
}
