// device.sustained_gemm_clock is a fraction of the benchmark's clock: within its key_bounds
// entry, 0.1 to 1 (a clock of 1e-308 ran the simulated clock past 292 years), refused otherwise
// at its key.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::errors_of;
using Errors = std::vector<std::string>;

TEST_CASE("a sustained GEMM clock outside [0.1, 1] is an error at its key", "[errors][device]") {
  const std::string key = "cluster.topology.device.sustained_gemm_clock";
  const std::string bound = ": must be from 0.1 to 1 (a settled clock of 10 % to 100 % of the benchmark's), got ";
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=1.2"}); }) == Errors{"--set: " + key + bound + "1.2"});
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=1e-308"}); }) ==
        Errors{"--set: " + key + bound + "1e-308"});
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=0"}); }) ==
        Errors{"--set: " + key + ": must be positive, got \"0\""});
  CHECK(errors_of([&] { load_scenario(data("basic.yaml"), {key + "=0.88"}); }) == Errors{"(no error)"});
}
