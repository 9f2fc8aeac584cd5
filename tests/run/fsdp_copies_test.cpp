// FSDP2's memory-bound copies around its collectives (run/model_parallel.hpp, FsdpCopies):
// the copy-out after each all-gather reads and writes the gathered bytes; the reduce-scatter
// copy-in reads the unsharded gradients and writes them in the reduce dtype; under pipeline
// parallelism the unsharded gradients are accumulated per microbatch. Timelines on the
// launch-bound node of tests/run/data/timeline.yaml (see timeline_test.cpp) with ideal NVLink
// (1e18 B/s) and, where a copy's duration is checked, HBM at 1 TB/s: a copy of B bytes then takes
// its 1 us launch plus B / 1e12 s.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {


using run_test::Trace;

std::unique_ptr<Trace> trace(std::vector<std::string> overrides) {
  overrides.push_back("cluster.topology.node.nvlink.bandwidth=1e18 B/s");
  overrides.push_back("parallel.zero=3");
  overrides.push_back("training.framework=eager");  // PyTorch's FSDP (Megatron-FSDP copies nothing)
  return run_test::simulate_timeline(overrides);
}

}  // namespace

TEST_CASE("FSDP copies each gathered unit out of the gather buffer before forward and before backward",
          "[run][zero3][fsdp-copy]") {
  const auto t = trace({"training.reduce_dtype=fp32", "cluster.topology.device.hbm_bandwidth=1 TB/s"});
  // One microbatch, 5 units (embedding, 3 layers, head), each gathered before its forward and
  // again before its backward: 10 copy-outs on rank 0, each of twice its gather's bytes.
  const auto copies = t->named("fsdp_copy_out");
  CHECK(copies.size() == 10);
  const auto gathers = t->named("dp all_gather layer1");
  REQUIRE(gathers.size() == 2);
  double layer1_copies = 0;
  for (const auto& c : copies)
    if (c.bytes == 2 * gathers[0].bytes) ++layer1_copies;
  CHECK(layer1_copies >= 2);
  // Duration: 1 us launch + 2·G / 1 TB/s, G = the gather's bytes (no collective beside it: NVLink is ideal).
  const double expected_ns = 1000.0 + 2 * gathers[0].bytes / 1e12 * 1e9;
  for (const auto& c : copies) {
    if (c.bytes != 2 * gathers[0].bytes) continue;
    CHECK(static_cast<double>(c.end_ns - c.start_ns) == Approx(expected_ns).margin(2));
  }
}

TEST_CASE("FSDP's reduce-scatter copy-in reads bf16 gradients and writes them in the reduce dtype",
          "[run][zero3][fsdp-copy]") {
  for (const char* dtype : {"bf16", "fp32"}) {
    INFO(dtype);
    const auto t = trace({std::string("training.reduce_dtype=") + dtype});
    const auto rs = t->named("dp reduce_scatter layer1");
    REQUIRE(rs.size() == 1);
    // The reduce-scatter moves P·rb bytes; the copy-in reads P·2 and writes P·rb: 2 × RS in
    // bf16 (rb = 2), 1.5 × RS in fp32 (rb = 4). One copy-in per unit with gradients: 5.
    const double ratio = std::string(dtype) == "bf16" ? 2.0 : 1.5;
    const auto copy_in = t->named("fsdp_copy_in");
    CHECK(copy_in.size() == 5);
    int matching = 0;
    for (const auto& c : copy_in)
      if (c.bytes == Approx(ratio * rs[0].bytes)) ++matching;
    CHECK(matching >= 1);
    // The reduce-scatter starts as its copy-in ends (layers 0–2 have copy-ins of this size:
    // the one that ends last before the reduce-scatter is layer 1's).
    std::int64_t gap = -1;
    for (const auto& c : copy_in)
      if (c.bytes == Approx(ratio * rs[0].bytes) && c.end_ns <= rs[0].start_ns)
        gap = gap < 0 ? rs[0].start_ns - c.end_ns : std::min(gap, rs[0].start_ns - c.end_ns);
    CHECK(gap >= 0);
    CHECK(gap <= 5);
  }
}

TEST_CASE("under pipeline parallelism FSDP accumulates fp32 gradients per microbatch and copies them in once",
          "[run][zero3][fsdp-copy][pipeline]") {
  // pp 2 × dp 2 on two nodes, two microbatches; stage 1 (rank 1) holds layers 1, 2 and the head.
  const auto t = trace({"cluster.nodes=2", "parallel.pp=2", "parallel.dp=2", "training.global_batch_tokens=2048",
                        "training.reduce_dtype=fp32"});
  const auto rs = t->named("dp reduce_scatter layer1");
  REQUIRE(rs.size() == 1);
  const double grads = rs[0].bytes;  // P·4: the layer's parameters in fp32
  // Microbatch 0 upcasts the bf16 gradient (read 2, write 4: 1.5 × P·4), microbatch 1 adds the
  // next one (read 2 + 4, write 4: 2.5 × P·4), then the copy-in (read 4, write 4: 2 × P·4).
  auto count = [&](const std::string& name, double bytes) {
    int n = 0;
    for (const auto& e : t->named(name, 1))
      if (e.bytes == Approx(bytes)) ++n;
    return n;
  };
  // Layers 1 and 2 hold the same parameters: two of each.
  CHECK(count("fsdp_grad_upcast", 1.5 * grads) == 2);
  CHECK(count("fsdp_grad_accumulate", 2.5 * grads) == 2);
  CHECK(count("fsdp_copy_in", 2.0 * grads) == 2);
  // And the head: one upcast, one accumulation and one copy-in, of other sizes.
  CHECK(t->named("fsdp_grad_upcast", 1).size() == 3);
  CHECK(t->named("fsdp_grad_accumulate", 1).size() == 3);
  CHECK(t->named("fsdp_copy_in", 1).size() == 3);
  // Gathered once: one copy-out per unit of the stage (layers 1, 2 and the head).
  CHECK(t->named("fsdp_copy_out", 1).size() == 3);
}

TEST_CASE("FSDP1 gathers into the flat parameter and prepares the flat gradient in place",
          "[run][zero3][fsdp-copy][fsdp1]") {
  // FullyShardedDataParallel (parallel.fsdp_version 1): no copy-out; after each unit's backward
  // autograd's cat of the views' gradients (read and write 2 B per parameter), the cast to the
  // reduce dtype when it differs (read 2, write rb), and the pre-divide in place (read and write
  // rb) — torch/distributed/fsdp/_runtime_utils.py _reduce_grad. The reduce-scatter moves P·rb.
  for (const char* dtype : {"bf16", "fp32"}) {
    INFO(dtype);
    const bool fp32 = std::string(dtype) == "fp32";
    const auto t = trace({"parallel.fsdp_version=1", std::string("training.reduce_dtype=") + dtype});
    CHECK(t->named("fsdp_copy_out").empty());
    CHECK(t->named("fsdp_copy_in").empty());
    const auto rs = t->named("dp reduce_scatter layer1");
    REQUIRE(rs.size() == 1);
    const double params = rs[0].bytes / (fp32 ? 4.0 : 2.0);
    auto count = [&](const std::string& name, double bytes) {
      int n = 0;
      for (const auto& e : t->named(name))
        if (e.bytes == Approx(bytes)) ++n;
      return n;
    };
    // One of each per unit with gradients (5); layers 0–2 share a size.
    CHECK(t->named("fsdp_grad_cat").size() == 5);
    CHECK(count("fsdp_grad_cat", 4.0 * params) == 3);
    CHECK(t->named("fsdp_grad_cast").size() == (fp32 ? 5u : 0u));
    if (fp32) CHECK(count("fsdp_grad_cast", 6.0 * params) == 3);
    CHECK(count("fsdp_grad_predivide", (fp32 ? 8.0 : 4.0) * params) == 3);
  }
}

TEST_CASE("Megatron-FSDP gathers into the parameters' bucket and, fusing gradient accumulation, copies nothing",
          "[run][zero3][fsdp-copy][megatron-fsdp]") {
  // ZeRO-3 under Megatron-style code: the parameters view the bucket the all-gather fills (no
  // copy-out); with gradient_accumulation_fusion TE's weight-gradient GEMMs write into the
  // bucket's main_grad (no copy-in); without it the gradients are copied in as FSDP2 does.
  for (const bool fused : {true, false}) {
    INFO("gradient_accumulation_fusion " << fused);
    const auto t = run_test::simulate_timeline({"cluster.topology.node.nvlink.bandwidth=1e18 B/s", "parallel.zero=3",
                                                "training.framework=fused",
                                                std::string("training.gradient_accumulation_fusion=") +
                                                    (fused ? "true" : "false")});
    CHECK(t->named("fsdp_copy_out").empty());
    CHECK(t->named("fsdp_copy_in").size() == (fused ? 0u : 5u));
    CHECK(t->named("dp all_gather layer1").size() == 2);  // still gathered before forward and backward
  }
}
