#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::errors_of;

TEST_CASE("a topology file loads on its own, its device included by path", "[topology]") {
  const TopologySpec t = load_topology(data("topo.yaml"));
  CHECK(t.name == "test-leaf-spine");
  CHECK(t.file == data("topo.yaml"));
  CHECK(t.device.name == "Test GPU");
  CHECK(t.device.hbm_bandwidth == 3e12);
  CHECK(t.node.pcie.bandwidth == 64e9);
  CHECK(t.node.pcie.latency == Time::us(1));
  CHECK(t.node.nics == 8);
  CHECK(t.fabric.leaf_spine.latency == Time::us(1));
  CHECK(t.comm.launch_latency == Time::us(5));
}

TEST_CASE("a model card loads on its own with its published facts and sources", "[model]") {
  const ModelSpec m = load_model(data("model.yaml"));
  CHECK(m.name == "tiny");
  CHECK(m.source == "made up for the config tests");
  CHECK(m.layers == 4);
  CHECK(m.experts == 1);
  CHECK(m.position_embedding == "rope");
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.published.sources.size() == 5);
  CHECK(m.published.sources.at("training_flops") == "test card");
}

TEST_CASE("a device file is not a topology", "[topology]") {
  const auto errors = errors_of([] { load_topology(data("device.yaml")); });
  REQUIRE(errors.size() > 3);
  CHECK(errors[0] == "device.yaml:1:1: device: missing required key: a path to a YAML file or an inline mapping");
  CHECK(errors[1] == "device.yaml:1:1: node: missing required key");
  CHECK(errors[2] == "device.yaml:1:1: fabric: missing required key");
  CHECK(errors[3] ==
        "device.yaml:3:1: peak_flops: unknown key; expected one of name, source, device, node, fabric, "
        "comm");
}

TEST_CASE("duplicate keys are errors at the second one", "[errors]") {
  CHECK(errors_of([] { load_model(data("duplicate.yaml")); }) ==
        std::vector<std::string>{"duplicate.yaml:4:1: layers: duplicate key (first set at line 2)"});
}
