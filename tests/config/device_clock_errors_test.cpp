// device.sustained_gemm_clock is a fraction of the benchmark's clock: (0, 1], refused otherwise
// at its key.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::errors_of;
using Errors = std::vector<std::string>;

TEST_CASE("a sustained GEMM clock outside (0, 1] is an error at its key", "[errors][device]") {
  const std::string key = "cluster.topology.device.sustained_gemm_clock";
  const Errors expected{"--set: " + key + ": must be in (0, 1] (a fraction of the benchmark's clock)"};
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=1.2"}); }) == expected);
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=0"}); }) ==
        Errors{"--set: " + key + ": must be positive, got \"0\""});
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=0.88"}); }) == Errors{"(no error)"});
}
