// The memory table's line of per-stage peaks (report::format_stage_memory).
#include <catch2/catch.hpp>

#include <string>

#include "report/metrics.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("the stage table prints each stage's reserved peak and stars those over the allocator's capacity",
          "[report][memory][pipeline]") {
  run::SimulationResult r;
  r.allocator_capacity = 25 * kGiB;
  r.memory_by_stage = {{10 * kGiB, 9 * kGiB}, {30.5 * kGiB, 29 * kGiB}, {20.25 * kGiB, 20 * kGiB}};
  CHECK(report::format_stage_memory(r) ==
        "reserved by pipeline stage (GiB):\n"
        "  stages   0-2     10.00    30.50*   20.25\n"
        "  * over the 25.00 GiB the allocator may reserve\n");
  // Eight stages a line; no footnote when every stage fits.
  r.allocator_capacity = 100 * kGiB;
  r.memory_by_stage.assign(9, {1 * kGiB, 1 * kGiB});
  const std::string text = report::format_stage_memory(r);
  CHECK(text.find("  stages   0-7  ") != std::string::npos);
  CHECK(text.find("  stages   8-8  ") != std::string::npos);
  CHECK(text.find('*') == std::string::npos);
  // One stage (no pipeline): nothing to compare, no table.
  r.memory_by_stage.resize(1);
  CHECK(report::format_stage_memory(r).empty());
}
