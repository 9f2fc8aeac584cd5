// The training loop's metrics (training.logit_metrics) run in the step: each metric's kernels
// after every microbatch's backward on every simulated rank, for the time the roofline gives
// their bytes (tests/workload/logit_metrics_test.cpp counts them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"
#include "workload/model_cost.hpp"

using namespace ironlaw;

TEST_CASE("every microbatch runs the loop's metrics after its backward", "[run][loss]") {
  // MPT-125M on 8 A100 80GB, FSDP: 2 microbatches of 32 × 2,048 tokens per rank, 2 metrics.
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-125m-8gpu-a100-80gb.yaml";
  const auto s = config::load_scenario(file);
  REQUIRE(s.training.logit_metrics == 2);
  MemorySink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::op);
  REQUIRE(r.steps.size() == 1);
  const auto ops = workload::logit_metric_ops(s.model, s.training, 32, 1);
  REQUIRE(ops.size() == 2);
  const auto one = workload::op_time(ops[0], s.topology.device, s.training.precision);
  std::map<std::string, int> count;
  std::map<std::string, std::int64_t> total_ns;
  std::int64_t first_metric_start = -1, first_embedding_backward_end = -1;
  auto earliest = [](std::int64_t& slot, std::int64_t t) { slot = slot < 0 ? t : std::min(slot, t); };
  for (const auto& e : sink.events) {
    if (e.rank != 0) continue;
    const std::string& name = sink.names[e.name];
    if (name.rfind("logit_metric_", 0) == 0) {
      ++count[name];
      total_ns[name] += e.end_ns - e.start_ns;
      earliest(first_metric_start, e.start_ns);
    } else if (name == "embedding_bwd") {
      earliest(first_embedding_backward_end, e.end_ns);  // the last kernel of a microbatch's backward
    }
  }
  for (const char* name : {"logit_metric_1", "logit_metric_2"}) {
    CHECK(count[name] == 2);
    // At least each kernel's time (the host's dispatch may stretch a kernel's record).
    CHECK(total_ns[name] >= 2 * one.count_ns());
  }
  // The first microbatch's metrics start only once its backward has run to the embedding.
  REQUIRE(first_embedding_backward_end >= 0);
  CHECK(first_metric_start >= first_embedding_backward_end);
}
