// Transformer Engine's fp8 weight cache in the schedule (run/pipeline_wiring.cpp, LayerCosts::
// first_forward): Megatron-style code casts each linear weight to fp8 on the step's first
// microbatch and reuses it for the others; PyTorch model code (torchao Float8) casts per use.
// Timelines of tests/run/data/timeline.yaml (tiny-dense, 3 layers, on the launch-bound node, see
// timeline_test.cpp) with an fp8 peak added to the fixture's device.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

constexpr int kLayers = 3;  // tiny-dense

std::unique_ptr<run_test::Trace> fp8_trace(const std::string& framework, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"cluster.topology.device.peak_flops.fp8=1e19 FLOPS", "training.precision=fp8",
                                "training.framework=" + framework,
                                // dp 2, 2 × 512 tokens per rank: two microbatches per step.
                                "training.global_batch_tokens=2048"};
  o.insert(o.end(), more.begin(), more.end());
  return run_test::simulate_timeline(o);
}

}  // namespace

TEST_CASE("Transformer Engine casts each weight once per step, on the first microbatch", "[run][precision]") {
  const auto t = fp8_trace("fused");
  for (const std::string lin : {"qkv", "attn_out", "mlp_up", "mlp_down"}) {
    INFO(lin);
    // The input is cast for every microbatch of every layer; the weight once per layer.
    const auto inputs = t->named(lin + "_cast");
    const auto weights = t->named(lin + "_weight_cast");
    CHECK(inputs.size() == 2 * kLayers);
    REQUIRE(weights.size() == kLayers);
    // Every weight cast belongs to microbatch 0: it starts before the second microbatch's first
    // cast of that linear (the inputs sorted by start, the first kLayers are microbatch 0's).
    for (const auto& w : weights) CHECK(w.start_ns < inputs[kLayers].start_ns);
    // 6 B per weight element in bytes touched (amax, cast with transpose); tiny-dense's qkv is
    // 64 × 192, the others as built.
    CHECK(weights[0].bytes == weights[1].bytes);
  }
  CHECK(t->named("qkv_weight_cast").at(0).bytes == 64.0 * 192 * 6);
  // Nothing survives into the steady microbatch, and no weight transpose is made (no fp8 params).
  CHECK(t->named("qkv_weight_transpose").empty());
}

TEST_CASE("torchao Float8 (PyTorch model code) casts per use: no weight cache", "[run][precision]") {
  const auto t = fp8_trace("compile");
  CHECK(t->named("qkv_weight_cast").empty());
  CHECK(t->named("qkv_cast").size() == 2 * kLayers);
  // The per-use cast carries the weight: input 512 × 64 and weight 64 × 192, 5 B each.
  CHECK(t->named("qkv_cast").at(0).bytes == (512.0 * 64 + 64.0 * 192) * 5);
}
